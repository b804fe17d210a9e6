"""fp16/bf16 compute emulated per operator: an ONNX copy of the model whose every float tensor that crosses an
operator boundary is rounded to fp16 (or bf16) and back, run by ONNX Runtime beside the fp32 reference.

What a device's fp16 (bf16) kernels do that this reproduces:
- every float32 weight (initializer, Constant value) is rounded to the format in numpy (round to nearest even;
  fp16: magnitudes past 65504 become +-inf, as a device's fp16 weights do);
- every float32 graph input is rounded before any operator reads it (a Cast pair after the input; the input keeps
  its name and its fp32 value, the operators read the rounded copy);
- every float32 output of every top-level operator is rounded: the operator writes `<name>__emulated_raw`, a
  Cast to FLOAT16 (BFLOAT16) and a Cast back to FLOAT write `<name>`, so the tensor keeps its ONNX name and every
  consumer, graph output and comparison sees the rounded value. fp16 overflow (|x| > 65504) gives +-inf there,
  as an fp16 kernel's output would.

What is not emulated (say so wherever the figures are used):
- accumulation width: each operator computes in fp32 on the rounded values (ONNX Runtime's fp32 kernels: the
  sums inside MatMul, Conv, Softmax, LayerNormalization, ReduceSum are fp32 and rounded once, at the end).
  Device fp16 kernels that accumulate in fp16 (MNN's ARMv8.2 fp16 GEMM does) lose more: for long reductions
  the emulation is a lower bound on their error;
- fused kernels: the emulation rounds at every ONNX operator boundary; a device that fuses ops (Conv+BN+Relu,
  the five ops of an erf-GELU, a LayerNorm written out as ReduceMean/Sub/Pow/...) keeps the intermediates
  inside its kernel in registers and rounds once, so there the emulation overstates the error;
- ops a device keeps in fp32 under low precision, and the device's own approximations (MNN's GELU kernel): not
  modelled; the emulated run is ONNX Runtime's exact fp32 kernels on rounded values;
- If/Loop/Scan bodies: their outputs are rounded at the operator's boundary, the computation inside runs in fp32
  (listed as `unemulated_subgraphs`); float64 and integer tensors are left as they are; a tensor whose dtype is
  not known (neither declared in the model nor given) is not rounded (`unknown_dtype`).

Ops kept in fp32 (`keep_fp32`, to check the fix suggestion "keep these ops in fp32 on the device"): their weights
and graph inputs stay fp32 when no other op reads them, and their outputs stay fp32 when only kept ops (or nobody:
graph outputs) read them; an output that an fp16 op reads is rounded, as that op would read it in fp16 on a device.

bf16 activations: ONNX Runtime's CPU Cast takes BFLOAT16 from opset 13 on (round to nearest even, measured equal
to numpy's bit rounding, overflow to inf included). For models of an older opset the activations are rounded by
Veltkamp splitting in fp32 instead (c = x * 65537, rounded = c - (c - x): three fp32 ops), equal to round to
nearest even bit for bit for |x| < 5e33 (measured on 1e6 random values and on exact ties) and NaN beyond.
"""
from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FORMATS = {"fp16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}
SUFFIX = "__emulated"
SUBGRAPH_OPS = ("If", "Loop", "Scan")
BF16_CAST_OPSET = 13  # ONNX Runtime's Cast takes bfloat16 from this opset on
VELTKAMP = 65537.0    # 2**(24 - 8) + 1: splits a float32 into its 8 high significand bits (bf16) and the rest
EXTERNAL_OVER = 1 << 30  # weights past this many bytes are saved as external data (protobuf's 2 GB limit)


def round_array(arr: np.ndarray, fmt: str) -> np.ndarray:
    """A float32 array rounded to fp16 or bf16 (round to nearest even) and back to float32."""
    a = np.asarray(arr, dtype=np.float32)
    if fmt == "fp16":
        with np.errstate(over="ignore"):
            return a.astype(np.float16).astype(np.float32)
    if fmt == "bf16":
        bits = a.view(np.uint32).astype(np.uint64)
        rounded = ((bits + ((bits >> 16) & 1) + 0x7FFF) & 0xFFFF0000).astype(np.uint32).view(np.float32)
        return np.where(np.isnan(a), np.float32(np.nan), rounded).astype(np.float32).reshape(a.shape)
    raise ValueError(f"unknown format '{fmt}': choose from {', '.join(FORMATS)}")


def _np_name(elem_type: int) -> str | None:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).name
    except (KeyError, TypeError, ValueError):
        return None


def declared_dtypes(model: onnx.ModelProto) -> dict[str, str]:
    """Tensor name -> numpy dtype name for every tensor whose type the model declares (inputs, outputs,
    value_info, initializers)."""
    g = model.graph
    out = {}
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            name = _np_name(vi.type.tensor_type.elem_type)
            if name:
                out[vi.name] = name
    for t in g.initializer:
        name = _np_name(t.data_type)
        if name:
            out[t.name] = name
    return out


def _opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def _rename_inputs(graph: onnx.GraphProto, old: str, new: str) -> None:
    """Every read of `old` in `graph` and in the bodies of its If/Loop/Scan ops (outer-scope references) reads
    `new` instead."""
    for node in graph.node:
        for k, name in enumerate(node.input):
            if name == old:
                node.input[k] = new
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                _rename_inputs(attr.g, old, new)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    _rename_inputs(sub, old, new)


def _round_constant(node: onnx.NodeProto, fmt: str) -> bool:
    """A Constant node's float32 `value`, rounded in place; False when it holds something else."""
    for attr in node.attribute:
        if attr.name == "value" and attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type == TensorProto.FLOAT:
            arr = numpy_helper.to_array(attr.t)
            attr.t.CopyFrom(numpy_helper.from_array(round_array(arr, fmt), attr.t.name))
            return True
        if attr.name == "value_float" and attr.type == onnx.AttributeProto.FLOAT:
            attr.f = float(round_array(np.array([attr.f], np.float32), fmt)[0])
            return True
        if attr.name == "value_floats" and attr.type == onnx.AttributeProto.FLOATS:
            vals = round_array(np.array(list(attr.floats), np.float32), fmt)
            del attr.floats[:]
            attr.floats.extend(float(v) for v in vals)
            return True
    return False


class _Rounder:
    """Makes the nodes that round one float32 tensor: a Cast pair, or Veltkamp splitting (bf16, opset < 13)."""

    def __init__(self, graph: onnx.GraphProto, fmt: str, opset: int):
        self.fmt = fmt
        self.veltkamp = fmt == "bf16" and opset < BF16_CAST_OPSET
        self.splitter = None
        if self.veltkamp:
            self.splitter = f"{SUFFIX}_veltkamp"
            graph.initializer.append(numpy_helper.from_array(np.array(VELTKAMP, np.float32), self.splitter))

    def nodes(self, src: str, dst: str, tag: str) -> list[onnx.NodeProto]:
        if not self.veltkamp:
            mid = f"{dst}{SUFFIX}_{self.fmt}"
            return [helper.make_node("Cast", [src], [mid], name=f"{tag}{SUFFIX}/to_{self.fmt}", to=FORMATS[self.fmt]),
                    helper.make_node("Cast", [mid], [dst], name=f"{tag}{SUFFIX}/to_fp32", to=TensorProto.FLOAT)]
        c, d = f"{dst}{SUFFIX}_c", f"{dst}{SUFFIX}_d"
        return [helper.make_node("Mul", [src, self.splitter], [c], name=f"{tag}{SUFFIX}/split"),
                helper.make_node("Sub", [c, src], [d], name=f"{tag}{SUFFIX}/split_sub"),
                helper.make_node("Sub", [c, d], [dst], name=f"{tag}{SUFFIX}/high")]


def _node_key(node: onnx.NodeProto) -> str:
    """The name compare reports an ONNX node by (its name, else its first output)."""
    return node.name or (node.output[0] if node.output else node.op_type)


def emulate_model(src: str, dst: str, fmt: str, dtypes: dict[str, str] | None = None,
                  keep_fp32=()) -> dict:
    """Write to `dst` a copy of the ONNX model `src` with fp16 (or bf16) rounding at every operator boundary.

    `dtypes`: tensor name -> numpy dtype name of the tensors the model computes (a reference run's manifest
    gives them all); the model's own declarations fill in the rest. `keep_fp32`: top-level nodes computed in
    fp32 (see the module docstring), by name or by an output tensor's name. Returns what was done: {format, path,
    weights, inputs, tensors (rounded node outputs), constants, unknown_dtype, unemulated_subgraphs,
    activation_rounding, kept_fp32}."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format '{fmt}': choose from {', '.join(FORMATS)}")
    model = onnx.load(src)  # external data loaded: every weight is rounded and saved with the copy
    graph = model.graph
    types = declared_dtypes(model)
    types.update(dtypes or {})
    rounder = _Rounder(graph, fmt, _opset(model))
    summary = {"format": fmt, "path": os.path.abspath(dst), "weights": 0, "inputs": [], "tensors": 0,
               "constants": 0, "unknown_dtype": [], "unemulated_subgraphs": [],
               "activation_rounding": "veltkamp" if rounder.veltkamp else f"Cast to {fmt} and back", "kept_fp32": []}
    keep = set(keep_fp32)
    kept_nodes = [n for n in graph.node if _node_key(n) in keep or any(o in keep for o in n.output if o)]
    summary["kept_fp32"] = [_node_key(n) for n in kept_nodes]
    keep = set(summary["kept_fp32"])
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            if name:
                readers.setdefault(name, []).append(node)

    def kept_only(name: str) -> bool:
        return bool(keep) and all(_node_key(r) in keep for r in readers.get(name, []))

    for k, t in enumerate(graph.initializer):
        if t.data_type == TensorProto.FLOAT and t.name != rounder.splitter and not (readers.get(t.name) and
                                                                                    kept_only(t.name)):
            graph.initializer[k].CopyFrom(numpy_helper.from_array(round_array(numpy_helper.to_array(t), fmt), t.name))
            summary["weights"] += 1

    initializers = {t.name for t in graph.initializer}
    head: list[onnx.NodeProto] = []
    for vi in graph.input:
        if vi.name in initializers or types.get(vi.name) != "float32" or kept_only(vi.name):
            continue
        rounded = f"{vi.name}{SUFFIX}"
        _rename_inputs(graph, vi.name, rounded)
        head += rounder.nodes(vi.name, rounded, vi.name)
        summary["inputs"].append(vi.name)

    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        nodes.append(node)
        is_kept = _node_key(node) in keep
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and not (is_kept and kept_only(node.output[0])) \
                and _round_constant(node, fmt):
            summary["constants"] += 1
            continue
        if node.op_type in SUBGRAPH_OPS:
            summary["unemulated_subgraphs"].append(node.name or node.output[0])
        for k, out in enumerate(node.output):
            if not out:
                continue
            dtype = types.get(out)
            if dtype is None:
                summary["unknown_dtype"].append(out)
                continue
            if dtype != "float32" or is_kept and kept_only(out):
                continue
            raw = f"{out}{SUFFIX}_raw"
            node.output[k] = raw
            # each output its own rounding nodes' names: one node's outputs tagged by the node's name alone gave a GRU's
            # Y and Y_h two Casts called <GRU>__emulated/to_fp16, and ONNX Runtime refuses a model with two
            # nodes of one name (a new user's fp16c of a GRU encoder failed)
            nodes += rounder.nodes(raw, out, (node.name or out) + (f":{k}" if k else ""))
            summary["tensors"] += 1
    del graph.node[:]
    graph.node.extend(head + nodes)

    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    weight_bytes = sum(t.ByteSize() for t in graph.initializer)
    if weight_bytes > EXTERNAL_OVER:
        location = os.path.basename(dst) + ".data"
        if os.path.exists(os.path.join(os.path.dirname(os.path.abspath(dst)), location)):
            os.remove(os.path.join(os.path.dirname(os.path.abspath(dst)), location))
        onnx.save(model, dst, save_as_external_data=True, all_tensors_to_one_file=True, location=location)
    else:
        onnx.save(model, dst)
    return summary
