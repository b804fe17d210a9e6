"""Structure requests: ONNX shape inference and the .mnn graph as MNN itself sees it."""
from __future__ import annotations

import os

from . import protocol
from .mnn_env import capture_fd1, mnn
from .protocol import RunnerError


def _require_file(path: str) -> None:
    if not path or not os.path.isfile(path):
        raise RunnerError(protocol.BAD_MODEL, f"{path}: no such file")
    if os.path.getsize(path) == 0:
        raise RunnerError(protocol.BAD_MODEL, f"{path}: the file is empty")


def _onnx_dtype(elem_type: int) -> str | None:
    from onnx import helper
    if not elem_type:
        return None
    try:
        return str(helper.tensor_dtype_to_np_dtype(elem_type))
    except Exception:
        from onnx import TensorProto
        return TensorProto.DataType.Name(elem_type).lower()


def infer_shapes(job) -> dict:
    """ONNX shape inference (native code, hence here) -> {"shapes": {tensor: {shape, dtype}}}."""
    import onnx
    from onnx import AttributeProto
    path = job.payload["path"]
    _require_file(path)
    try:
        model = onnx.load(path, load_external_data=False)
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False,
                                                     data_prop=bool(job.payload.get("data_prop", False)))
    except Exception as e:
        raise RunnerError(protocol.BAD_MODEL, f"{path}: shape inference failed: {str(e).splitlines()[0][:300]}")
    shapes: dict = {}

    def walk(g):
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
            if tt is None:
                continue
            shape = None
            if tt.HasField("shape"):
                shape = [int(d.dim_value) if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]
            shapes[vi.name] = {"shape": shape, "dtype": _onnx_dtype(tt.elem_type)}
        for node in g.node:
            for a in node.attribute:
                if a.type == AttributeProto.GRAPH:
                    walk(a.g)
                elif a.type == AttributeProto.GRAPHS:
                    for sg in a.graphs:
                        walk(sg)

    walk(inferred.graph)
    return {"shapes": shapes}


_DTYPES = {"float": "float32", "int": "int32", "int64": "int64", "uint8": "uint8", "int8": "int8",
           "double": "float64", "float16": "float16", "bfloat16": "bfloat16", "bool": "bool"}


def _dtype_name(dtype) -> str | None:
    """MNN's dtype enum as a numpy-style name; None (unknown until the shape is computed) stays None."""
    if dtype is None:
        return None
    name = str(dtype).split(".")[-1]
    return _DTYPES.get(name, name)


def var_info(v) -> dict:
    """One MNN expr Var; each attribute guarded, since some raise on unknown shapes."""
    info = {"name": None, "op_type": None, "inputs": [], "shape": None, "dtype": None, "format": None}
    for key, get in (("name", lambda: v.name), ("op_type", lambda: v.op_type),
                     ("inputs", lambda: [i.name for i in v.inputs]), ("shape", lambda: list(v.shape)),
                     ("dtype", lambda: _dtype_name(v.dtype)),
                     ("format", lambda: str(v.data_format).split(".")[-1])):
        try:
            info[key] = get()
        except Exception:
            pass
    return info


def load_vars(path: str) -> tuple[list, str]:
    """MNN.expr.load_as_list with what it prints; [] (MNN's answer to garbage) is a bad model, not an empty one."""
    _require_file(path)
    MNN = mnn()
    try:
        vars_, text = capture_fd1(MNN.expr.load_as_list, path)
    except Exception as e:
        raise RunnerError(protocol.BAD_MODEL, f"{path}: MNN could not load the model ({e})")
    if not vars_:
        raise RunnerError(protocol.BAD_MODEL, f"{path}: not a valid .mnn model (MNN found no operators)",
                          text.strip()[-2000:] or None)
    return vars_, text


def load_structure(job) -> dict:
    """The .mnn graph through MNN.expr.load_as_list: vars with op type, inputs, shape, dtype, layout."""
    vars_, text = load_vars(job.payload["path"])
    return {"vars": [var_info(v) for v in vars_], "log": text.strip()[-2000:]}
