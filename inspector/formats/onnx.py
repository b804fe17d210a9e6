"""Parsing an .onnx file (with external data beside it) into a ModelGraph; the format's adapter is onnx_adapter.py."""
from __future__ import annotations

import ast
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

import onnx
from onnx import AttributeProto, TensorProto

from mnnscope.inspector.errors import ExternalDataOutside, ModelError

from mnnscope.inspector.model.graph import ModelGraph, TensorInfo, unique_id

_DTYPE = {
    TensorProto.FLOAT: ("float32", 4), TensorProto.DOUBLE: ("float64", 8), TensorProto.FLOAT16: ("float16", 2),
    TensorProto.BFLOAT16: ("bfloat16", 2), TensorProto.INT8: ("int8", 1), TensorProto.UINT8: ("uint8", 1),
    TensorProto.INT16: ("int16", 2), TensorProto.UINT16: ("uint16", 2), TensorProto.INT32: ("int32", 4),
    TensorProto.UINT32: ("uint32", 4), TensorProto.INT64: ("int64", 8), TensorProto.UINT64: ("uint64", 8),
    TensorProto.BOOL: ("bool", 1), TensorProto.STRING: ("string", None),
    TensorProto.COMPLEX64: ("complex64", 8), TensorProto.COMPLEX128: ("complex128", 16),
}
for _name, _size in (("FLOAT8E4M3FN", 1), ("FLOAT8E5M2", 1), ("INT4", 0.5), ("UINT4", 0.5)):
    if hasattr(TensorProto, _name):
        _DTYPE[getattr(TensorProto, _name)] = (_name.lower(), _size)


def dtype_name(elem_type: int) -> str | None:
    if elem_type == TensorProto.UNDEFINED:
        return None
    return _DTYPE.get(elem_type, (TensorProto.DataType.Name(elem_type).lower(), None))[0]


def _itemsize(elem_type: int):
    return _DTYPE.get(elem_type, (None, None))[1]


def _shape_from_type(tp) -> list | None:
    if not tp.HasField("tensor_type") or not tp.tensor_type.HasField("shape"):
        return None
    dims = []
    for d in tp.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return dims


def _value_info(tensors: dict, vi) -> None:
    t = tensors.get(vi.name) or TensorInfo(vi.name)
    shape = _shape_from_type(vi.type)
    if shape is not None:
        t.shape = shape
    if vi.type.HasField("tensor_type"):
        t.dtype = dtype_name(vi.type.tensor_type.elem_type) or t.dtype
    tensors[vi.name] = t


def _initializer(t: TensorProto, model_dir: Path | None, problems: list) -> TensorInfo:
    elements = 1
    for d in t.dims:
        elements *= int(d)
    size = _itemsize(t.data_type)
    nbytes = int(elements * size) if size else None
    external = t.data_location == TensorProto.EXTERNAL
    if external:
        info = {e.key: e.value for e in t.external_data}
        if "length" in info:
            try:
                nbytes = int(info["length"])
            except ValueError:  # a damaged file: its own words, not a traceback
                raise ModelError(f"tensor '{t.name}' has an unreadable external data length {info['length']!r}") \
                    from None
        if model_dir is not None:
            try:
                end = int(info.get("offset", 0)) + (nbytes or 0)
            except ValueError:
                end = 0
            _check_external(t.name, info.get("location", ""), model_dir, problems, end)
    return TensorInfo(t.name, [int(d) for d in t.dims], dtype_name(t.data_type), True, nbytes, elements, external)


def _check_external(tensor: str, location: str, model_dir: Path, problems: list, end: int = 0) -> None:
    target = (model_dir / location).resolve()
    if not location or os.path.isabs(location) or model_dir.resolve() not in target.parents:
        raise ExternalDataOutside(f"tensor '{tensor}' points its external data outside the model's folder: '{location}'")
    if not target.is_file():
        # said once per file, with the tensors it holds (one warning a tensor made six notices: helper 117)
        seen = next((p for p in problems if isinstance(p, MissingFile) and p.file == location), None)
        if seen is None:
            problems.append(MissingFile(location, [tensor]))
        elif tensor not in seen.tensors:
            seen.tensors.append(tensor)
    elif end > target.stat().st_size:  # said once per file, at its first tensor past the end
        if not any(isinstance(p, dict) and p["file"] == location for p in problems):
            problems.append({"file": location, "size": target.stat().st_size, "tensor": tensor, "end": end})


@dataclass
class MissingFile:
    """An external data file that is not there, and the tensors whose weights it holds."""
    file: str
    tensors: list

    def __str__(self) -> str:
        names = [f"'{t}'" for t in self.tensors]
        said = " and ".join(names) if len(names) <= 2 else f"{', '.join(names[:2])} and {len(names) - 2} more"
        return (f"external data file '{self.file}' is missing: the weights of tensor{'s' if len(names) > 1 else ''} "
                f"{said} are not in the model's folder")


# A truncated external data file ({file, size, tensor, end}, kept in the graph's meta for convert's pre-flight), in words
TRUNCATED = "external data file '{file}' is truncated: {size:,} bytes, but tensor '{tensor}' is stored up to byte {end:,}"


def truncated_files(graph: ModelGraph) -> list[dict]:
    """{file, size, tensor, end} of every external data file the model's loading found too short (TRUNCATED)."""
    return list(graph.meta.get("truncated_external") or [])


def attr_value(a: AttributeProto):
    """An ONNX attribute as JSON-serialisable data (tensors summarised, graphs named)."""
    t = a.type
    if t == AttributeProto.FLOAT:
        return float(a.f)
    if t == AttributeProto.INT:
        return int(a.i)
    if t == AttributeProto.STRING:
        return a.s.decode("utf-8", "replace")
    if t == AttributeProto.FLOATS:
        return [float(x) for x in a.floats]
    if t == AttributeProto.INTS:
        return [int(x) for x in a.ints]
    if t == AttributeProto.STRINGS:
        return [s.decode("utf-8", "replace") for s in a.strings]
    if t == AttributeProto.TENSOR:
        tensor = a.t
        out = {"tensor": {"shape": [int(d) for d in tensor.dims], "dtype": dtype_name(tensor.data_type)}}
        n = 1
        for d in tensor.dims:
            n *= int(d)
        if n <= 16 and tensor.data_location != TensorProto.EXTERNAL:
            try:
                out["tensor"]["value"] = onnx.numpy_helper.to_array(tensor).tolist()
            except Exception:  # exotic dtypes: the summary is enough
                pass
        return out
    if t == AttributeProto.GRAPH:
        return {"graph": a.g.name}
    if t == AttributeProto.GRAPHS:
        return {"graphs": [g.name for g in a.graphs]}
    return {"type": AttributeProto.AttributeType.Name(t)}


# What torch.onnx.export(dynamo=True) records on every node (torch/onnx/_internal/exporter/_core.py,
# _set_node_metadata): the nn.Module stack as repr() of a list of cumulative module paths, the fx node's own
# name last ("['', 'encoder', 'encoder.layers.0', 'linear_3']"), and the same stack as one string
# (": pkg.Model/encoder: pkg.Encoder/encoder.layers.0: pkg.Layer/linear_3: aten.linear.default").
# Its node names ("node_MatMul_12") carry no scope, so without these a model is one flat tangle.
NAME_SCOPES = "pkg.torch.onnx.name_scopes"
NAMESPACE = "namespace"
_SELF = re.compile(r"^L\['self'\](\.|$)")  # how non-strict export may spell the root module


def _module_scope(paths: list[str]) -> str:
    """A scope path from cumulative module paths: ["", "encoder", "encoder.layers.0"] -> "/encoder/layers.0"."""
    parts, prev = [], ""
    for raw in paths:
        path = _SELF.sub("", str(raw).strip())
        if not path:
            continue
        rel = path[len(prev) + 1:] if prev and path.startswith(prev + ".") else path
        if rel[:1].isdigit() and prev:  # a container's child ("network.0" in "network"): "0" alone says little
            rel = prev.rsplit(".", 1)[-1] + "." + rel
        if rel:
            parts.append(rel.replace("/", "_"))
        prev = path
    return "/" + "/".join(parts) if parts else ""


_QUOTED = re.compile(r"'([^'\\]*)'|\"([^\"\\]*)\"")


def _str_list(raw: str) -> list[str] | None:
    """repr() of a list of strings, read without eval; literal_eval (20x slower) only for escapes."""
    if not (raw.startswith("[") and raw.endswith("]")):
        return None
    if "\\" not in raw:
        return [a or b for a, b in _QUOTED.findall(raw)] or None
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    ok = isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
    return list(value) or None if ok else None


def metadata_scope(props: dict[str, str]) -> str | None:
    """The scope a node's metadata_props record (dynamo exporter), "" for the model's top level, or None
    when they record none (then the scope comes from the node's name)."""
    raw = (props.get(NAME_SCOPES) or "").strip()
    if raw.endswith(("']", '"]')):
        # the last entry is the fx node itself, not a module; what precedes it is shared by every op of a
        # module, so it is parsed once per module (a 100k-node export has a few thousand)
        cut = raw.rfind(",")
        if cut < 0:
            return "" if _str_list(raw) else None
        scope = _stack_scope(raw[:cut] + "]")
        if scope is not None:
            return scope
    raw = props.get(NAMESPACE)
    if raw and ": " in raw:
        names = [seg.split(": ", 1)[0] for seg in raw.split("/")]
        return _module_scope(names[:-1])
    return None


@functools.lru_cache(maxsize=65536)
def _stack_scope(modules: str) -> str | None:
    value = _str_list(modules)
    return None if value is None else _module_scope(value)


def _node_scope(node) -> str | None:
    props = getattr(node, "metadata_props", None)  # onnx < 1.16 has no node metadata
    if not props:
        return None
    # only the two keys: the exporter's stack traces beside them run to kilobytes per node
    return metadata_scope({p.key: p.value for p in props if p.key in (NAME_SCOPES, NAMESPACE)})


def node_id(node: onnx.NodeProto, index: int, taken: set[str], prefix: str = "") -> str:
    """The id the graph gives a node (`taken`: the ids its graph gave before it): its name, else its op type and
    place; a body's nodes carry their If/Loop's path as `prefix`."""
    # ("/If/then_branch/" + "/then/Mul": one slash between them, not two; a new-user try read the id as a typo)
    name = prefix.rstrip("/") + node.name if prefix and node.name.startswith("/") else prefix + node.name
    return unique_id(name, node.op_type, index, taken) if node.name else \
        unique_id("", prefix + node.op_type, index, taken)


def _build(graph: onnx.GraphProto, fmt_path: str, model_dir: Path | None, problems: list,
           opset: dict, prefix: str = "") -> ModelGraph:
    mg = ModelGraph(format="onnx", path=fmt_path, opset=opset)
    tensors = mg.tensors
    for init in graph.initializer:
        tensors[init.name] = _initializer(init, model_dir, problems)
    for sparse in graph.sparse_initializer:
        tensors[sparse.values.name] = TensorInfo(sparse.values.name, [int(d) for d in sparse.dims],
                                                 dtype_name(sparse.values.data_type), True)
    for vi in graph.input:
        if vi.name not in tensors or not tensors[vi.name].is_initializer:
            _value_info(tensors, vi)
    for vi in list(graph.value_info) + list(graph.output):
        _value_info(tensors, vi)
    init_names = {n for n, t in tensors.items() if t.is_initializer}
    mg.inputs = [vi.name for vi in graph.input if vi.name not in init_names]
    mg.outputs = [vi.name for vi in graph.output]

    taken: set[str] = set()
    from_metadata = 0
    for i, node in enumerate(graph.node):
        nid = node_id(node, i, taken, prefix)
        attrs = {}
        subgraphs = {}
        for a in node.attribute:
            attrs[a.name] = attr_value(a)
            if a.type == AttributeProto.GRAPH:
                subgraphs[a.name] = _build(a.g, fmt_path, model_dir, problems, opset, prefix=f"{nid}/{a.name}/")
            elif a.type == AttributeProto.GRAPHS:
                for k, g in enumerate(a.graphs):
                    subgraphs[f"{a.name}[{k}]"] = _build(g, fmt_path, model_dir, problems, opset,
                                                         prefix=f"{nid}/{a.name}[{k}]/")
        scope = _node_scope(node)
        if scope is not None:
            from_metadata += 1
        mg.add_op(nid, name=node.name, op_type=node.op_type, domain=node.domain, inputs=list(node.input),
                  outputs=list(node.output), attrs=attrs, subgraphs=subgraphs, scope=scope)
        for t in node.output:
            if t and t not in tensors:
                tensors[t] = TensorInfo(t)
    # where the scopes come from, for `inspect --json` and the status line: names are the fallback
    mg.meta["scopes_from"] = "metadata" if from_metadata else "names"
    mg.connect()
    return mg


def read_model_proto(path: str | os.PathLike) -> onnx.ModelProto:
    """Parse the protobuf (no external data) with errors that name the file."""
    p = Path(path)
    if not p.is_file():
        raise ModelError(f"{p}: no such file")
    if p.stat().st_size == 0:
        raise ModelError(f"{p}: the file is empty")
    try:
        model = onnx.load(str(p), load_external_data=False)
    except OSError as e:
        raise ModelError(f"{p}: cannot read the file ({e.strerror or type(e).__name__})")
    except Exception:  # protobuf raises several exception types for garbage input; its own text
        # ("Error parsing message with type 'onnx.ModelProto': Wire format was corrupt") tells a user nothing
        raise ModelError(f"{p}: not a valid ONNX model (the file does not parse as one: {_what_instead(p)})")
    if not model.HasField("graph") or (len(model.graph.node) == 0 and len(model.graph.output) == 0):
        raise ModelError(f"{p}: not an ONNX model (no graph)")
    return model


def _what_instead(path: Path) -> str:
    """What a file that does not parse as ONNX looks like: an MNN model under the wrong name (tryout 17 read
    "DecodeError" for a .mnn named .onnx), or a damaged file."""
    from mnnscope.inspector.formats.mnn_flatbuffer import MnnFormatError, read_mnn
    try:
        if read_mnn(path).ops:
            return "it is an MNN model: name it .mnn"
    except (MnnFormatError, OSError):
        pass
    return "truncated, or not an ONNX model at all"


def load_onnx(path: str | os.PathLike, shapes: dict | None = None) -> ModelGraph:
    """Load an ONNX file; `shapes` (tensor -> {shape, dtype}) are inferred results from a child process."""
    p = Path(path)
    model = read_model_proto(p)
    problems: list = []  # warnings; a truncated external data file as its figures (dict)
    opset = {(o.domain or "ai.onnx"): int(o.version) for o in model.opset_import}
    try:
        mg = _build(model.graph, str(p), p.parent, problems, opset)
    except ModelError as e:  # the one-line reason names the file, as every other load error does
        raise (e if str(p) in str(e) else type(e)(f"{p}: {e}")) from None
    mg.version = f"ir{model.ir_version}"
    mg.producer = " ".join(x for x in (model.producer_name, model.producer_version) if x) or None
    mg.warnings.extend(TRUNCATED.format(**x) if isinstance(x, dict) else str(x) for x in problems)
    mg.meta["truncated_external"] = [x for x in problems if isinstance(x, dict)]
    if shapes:
        merge_shapes(mg, shapes)
    return mg


def invented_dims(shape) -> bool:
    """Whether a shape holds a dim that an earlier shape inference invented ("unk__7", saved into the file)."""
    return bool(shape) and any(isinstance(d, str) and d.startswith("unk__") for d in shape)


def merge_shapes(mg: ModelGraph, shapes: dict) -> None:
    """Fill unknown tensor shapes/dtypes from shape inference, recursing into subgraphs; a stored shape with
    invented dims gives way to the inferred one, whose dims the runner named after the model's own."""
    for g in [mg] + [sub for _, _, sub in mg.subgraphs()]:
        for name, info in shapes.items():
            t = g.tensors.get(name)
            if t is None:
                continue
            new = info.get("shape")
            if new is not None and (t.shape is None or (invented_dims(t.shape) and len(new) == len(t.shape))):
                t.shape = new
            if t.dtype is None and info.get("dtype"):
                t.dtype = info["dtype"]


def initializer_stats(path: str | os.PathLike, names: list[str]) -> dict:
    """Statistics of initializers by name (subgraphs and external data included), read with numpy."""
    from onnx import numpy_helper

    from mnnscope.inspector.formats.stats import array_stats
    model = read_model_proto(path)
    wanted = set(names)
    found: dict = {}
    stack = [model.graph]
    while stack:
        g = stack.pop()
        found.update({t.name: t for t in g.initializer if t.name in wanted})
        for node in g.node:
            for a in node.attribute:
                if a.HasField("g"):
                    stack.append(a.g)
                stack.extend(a.graphs)
    base = Path(path).resolve().parent
    out = {}
    for name in names:
        t = found.get(name)
        if t is None:
            raise ModelError(f"{path}: no initializer named '{name}'")
        for e in t.external_data:
            if e.key == "location":
                target = (base / e.value).resolve()
                if os.path.isabs(e.value) or base not in target.parents or not target.is_file():
                    raise ModelError(f"tensor '{name}': external data '{e.value}' is missing or outside the "
                                     "model's folder")
        out[name] = array_stats(numpy_helper.to_array(t, base_dir=str(base)))
    return out
