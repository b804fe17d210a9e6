"""Structure requests: ONNX shape inference and the .mnn graph as MNN itself sees it."""
from __future__ import annotations

import os

from mnnscope.runner import protocol
from mnnscope.runner.mnn_env import capture_fd1, mnn
from mnnscope.runner.protocol import RunnerError


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
    from mnnscope.runner import symdims
    # Data propagation carries the model's own dim names through Shape -> Gather -> Concat -> Reshape chains
    # (a dynamo export's every view()), where plain inference invents "unk__N"; it is tried first, and plain
    # inference is the fallback should it fail on some model.
    attempts = [True, False] if job.payload.get("data_prop", True) else [False]
    for k, data_prop in enumerate(attempts):
        try:
            model = onnx.load(path, load_external_data=False)
            inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False,
                                                         data_prop=data_prop)
            break
        except Exception as e:
            if k == len(attempts) - 1:
                raise RunnerError(protocol.BAD_MODEL,
                                  f"{path}: shape inference failed: {str(e).splitlines()[0][:300]}")
    shapes: dict = {}
    nodes: list = []

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
            nodes.append((node.op_type, {a.name: a.i for a in node.attribute if a.type == AttributeProto.INT},
                          list(node.input), list(node.output)))
            for a in node.attribute:
                if a.type == AttributeProto.GRAPH:
                    walk(a.g)
                elif a.type == AttributeProto.GRAPHS:
                    for sg in a.graphs:
                        walk(sg)

    walk(inferred.graph)
    own = [d.dim_param for vi in inferred.graph.input if vi.type.HasField("tensor_type")
           for d in vi.type.tensor_type.shape.dim if d.dim_param]
    rename = symdims.unify(nodes, {t: s["shape"] for t, s in shapes.items()}, own)
    for info in shapes.values():
        info["shape"] = symdims.apply(info["shape"], rename)
    sizes = job.payload.get("input_shapes")
    if sizes:
        dims = _dims_at(model, shapes, sizes)
        return {"dims_at": dims} if job.payload.get("dims_only") else {"shapes": shapes, "dims_at": dims}
    return {"shapes": shapes}


def _dims_at(model, shapes: dict, sizes: dict) -> dict:
    """{symbolic dim: its size} at concrete input sizes (`sizes`: input -> dims): shape inference again with the
    inputs fixed, each symbolic dim of `shapes` read off the same place of the concrete shape. Names an exporter or
    shape inference made up for a size it could not express ("ConvTranspose_459_o0__d2" on PP-OCRv6 det's output)
    get the number they stand for at these sizes, as an .mnn's shapes do; a name seen at two sizes is left out."""
    import onnx
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    for vi in fixed.graph.input:
        dims = sizes.get(vi.name)
        if dims is None or not vi.type.HasField("tensor_type") or len(vi.type.tensor_type.shape.dim) != len(dims):
            continue
        for d, n in zip(vi.type.tensor_type.shape.dim, dims):
            d.dim_value = int(n)
    del fixed.graph.value_info[:]  # the file's own symbolic shapes would be kept over the numbers
    for vi in fixed.graph.output:
        if vi.type.HasField("tensor_type"):
            vi.type.tensor_type.ClearField("shape")
    try:
        inferred = onnx.shape_inference.infer_shapes(fixed, check_type=False, strict_mode=False, data_prop=True)
    except Exception:
        return {}
    # the symbolic shapes: inferred, and as the file declares them (an output declared "ConvTranspose_459_o0__d1"
    # where inference has 1: the viewer keeps the file's)
    declared = {vi.name: [d.dim_param or None for d in vi.type.tensor_type.shape.dim]
                for vi in list(model.graph.value_info) + list(model.graph.output)
                if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape")}
    found: dict = {}
    seen_twice: set = set()
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is None or not tt.HasField("shape"):
            continue
        for sym in ((shapes.get(vi.name) or {}).get("shape"), declared.get(vi.name)):
            if not sym or len(sym) != len(tt.shape.dim):
                continue
            for d, got in zip(sym, tt.shape.dim):
                if isinstance(d, str) and got.HasField("dim_value") and got.dim_value > 0:
                    if found.setdefault(d, int(got.dim_value)) != got.dim_value:
                        seen_twice.add(d)
    return {d: n for d, n in found.items() if d not in seen_twice}


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
    """The .mnn graph through MNN.expr.load_as_list: vars with op type, inputs, shape, dtype, layout.

    Payload: path; input_shapes ({input: dims}, optional: those inputs are resized to these sizes; the
    client picks sizes for free dims, so the runner holds no sizing policy of its own).
    MNN computes no shape behind an input with a -1 dim, so with sizes the result says which ones it used
    (`shapes_for_inputs`); a resize that fails costs only those shapes and adds a `warnings` line.
    """
    payload = job.payload
    vars_, text = load_vars(payload["path"])
    result: dict = {"log": text.strip()[-2000:]}
    given = payload.get("input_shapes") or {}
    if given:
        # The resize must come before any other var's shape is read: MNN caches a shape it failed to
        # compute, and a later resize of the input does not reach that var any more (measured, 3.6.1).
        (sizes, warnings), resize_text = capture_fd1(resize_inputs, vars_, given)
        if sizes:
            result["shapes_for_inputs"] = sizes
        result["warnings"] = warnings
        infos, read_text = capture_fd1(lambda: [var_info(v) for v in vars_])
        if sizes:
            unknown = sum(1 for i in infos if i["shape"] is None)
            if unknown:
                warnings.append(f"MNN could not compute {unknown} of {len(infos)} shapes for the input sizes "
                                f"{_fmt_sizes(sizes)}" + _first_line(resize_text + read_text))
    else:
        infos, _ = capture_fd1(lambda: [var_info(v) for v in vars_])
    result["vars"] = infos
    return result


def _fmt_sizes(sizes: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items())


def _first_line(text: str) -> str:
    """MNN's first complaint, if it printed one (its lines run together without newlines)."""
    text = text.replace("getshape: unable to get variable info", "").strip()
    return f" (MNN: {text.splitlines()[0][:200]})" if text else ""


def _input_spec(v) -> dict | None:
    """{name, shape, dtype} of an Input var as the file declares it (read before any resize)."""
    try:
        name = v.name
    except Exception:
        return None
    spec = {"name": name, "shape": None, "dtype": None}
    try:
        shape = v.shape
        spec["shape"] = None if shape is None else [int(d) for d in shape]
    except Exception:
        pass
    try:
        spec["dtype"] = _dtype_name(v.dtype)
    except Exception:
        pass
    return spec


def resize_inputs(vars_: list, given: dict) -> tuple[dict, list[str]]:
    """Resize the Input vars named in `given` to those dims. Returns ({input: dims used}, warnings)."""
    inputs = [(v, spec) for v in vars_ if _op_type(v) == "Input" for spec in [_input_spec(v)] if spec]
    names = [spec["name"] for _, spec in inputs]
    warnings = [f"a size is given for '{n}', which is not an input of the model (inputs: {', '.join(names)})"
                for n in given if n not in names]
    sizes: dict = {}
    for v, spec in inputs:
        shape, name = spec["shape"], spec["name"]
        if name not in given:
            continue
        dims = [int(d) for d in given[name]]
        if shape is not None and len(shape) != len(dims):
            warnings.append(f"input '{name}' has {len(shape)} dims {shape}, the size given has {len(dims)}: "
                            "ignored")
            continue
        try:
            v.resize(dims)
        except Exception as e:
            warnings.append(f"input '{name}': MNN could not resize it to {dims} ({e})")
            continue
        _write_zeros(v, dims, spec["dtype"])
        sizes[name] = dims
    return sizes, warnings


def _op_type(v) -> str | None:
    try:
        return v.op_type
    except Exception:
        return None


def _write_zeros(v, dims: list[int], dtype: str | None) -> None:
    """Zeros as the input's contents, so shapes that depend on values (a Shape feeding a Range, a NonZero)
    come from defined data rather than whatever the resize left in memory. Best effort."""
    import numpy as np
    try:
        v.write(np.zeros(dims, dtype=np.dtype(dtype or "float32")))
    except Exception:
        pass


def mnn_tensor_table(path: str) -> tuple[list[dict], list[str]]:
    """Every tensor of the .mnn file (MNN.expr's list, in file order) and the tensors no op consumes."""
    vars_, _ = load_vars(path)
    table = [{"name": info["name"], "producer": None, "op_type": info["op_type"], "inputs": info["inputs"]}
             for info in map(var_info, vars_) if info["name"]]
    used = {i for v in table for i in v["inputs"]}
    outputs = [v["name"] for v in table if v["name"] not in used and v["op_type"] not in ("Input", "Const")]
    return table, outputs
