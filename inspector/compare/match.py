"""Which MNN tensor holds the value of which ONNX tensor, after the converter renamed, fused and moved things.

A name is evidence, not proof. MNN's optimizer keeps ONNX tensor names but moves them: an activation
fused into a MatMul or swapped ahead of a layout op leaves the ONNX name of the *pre*-activation tensor on
a tensor that holds the *post*-activation value (e.g. `ffn/dense/Add_output_0` holding GELU(dense)), and a
fused Conv+BN+Relu op carries the name of the Conv output while it computes the Relu output. Comparing such
a pair would report a divergence that does not exist. So every candidate pair is checked structurally:

- candidates for an ONNX tensor X, in order: the node map's MNN tensors (when a conversion node map is
  given), the MNN tensor named X, the outputs of the MNN op named X (op names are ONNX output names), and the
  tensor of a renamed op `X__<suffix>` (e.g. `X__matmul_converted`, MatMul + bias turned into a Convolution);
- a candidate found through an op name is refused when its own name is another ONNX tensor's name (it
  belongs to that one: the fused Conv op `conv1/Conv_output_0` writes `relu/Relu_output_0`);
- the compute between the candidate and its nearest ancestors that are matched or carry an ONNX name must
  be explainable by the ONNX ops between X and its matched ancestors: an MNN GELU/SILU/Relu/Softmax/
  LayerNorm/Convolution needs an ONNX op of the same family there (HardSigmoid, which MNN builds from
  Mul/Add/ReLU6, explains a ReLU6). Layout ops (ConvertTensor, Reshape, Permute...) carry values and
  are skipped; shape computations (Shape, Rank) are not followed.

ONNX tensors are processed in topological order, so "already matched" is known when a tensor is checked.
Layouts are NCHW on both sides (the runner copies MNN tensors into Caffe host tensors). Dtypes int64/bool
(ONNX) vs int32 (MNN) are aligned by the comparison. TopK with sorted=0 gets an alignment note: its slots
are compared after sorting both sides by index.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from mnnscope.inspector.model.graph import ModelGraph
from mnnscope.inspector.model.nodemap import NodeMap

# MNN op types that only move or relabel values.
LAYOUT_OPS = {"ConvertTensor", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "ExpandDims", "Permute",
              "Transpose", "Identity", "Cast", "Raster", "Copy"}
# MNN op types whose inputs are shapes, not values: never followed upstream.
SHAPE_OPS = {"Shape", "Rank", "Size", "Const", "Input"}

# MNN effective op type -> family.
MNN_FAMILY = {
    "GELU": "gelu", "GELU_STANDARD": "gelu", "SILU": "silu", "SWISH": "silu", "SIGMOID": "sigmoid",
    "Sigmoid": "sigmoid", "TANH": "tanh", "TanH": "tanh", "ReLU": "relu", "ReLU6": "relu", "PReLU": "relu",
    "ELU": "elu", "Selu": "elu", "HARDSWISH": "hardswish", "ERF": "erf", "EXP": "exp", "LOG": "log",
    "Softmax": "softmax", "LayerNorm": "norm", "Convolution": "conv", "ConvolutionDepthwise": "conv",
    "Deconvolution": "conv", "DeconvolutionDepthwise": "conv", "ConvInt8": "conv", "DepthwiseConvInt8": "conv",
    "MatMul": "conv", "BatchMatMul": "conv",
}
# ONNX op type -> the families it can explain on the MNN side.
ONNX_FAMILIES = {
    "Gelu": {"gelu"}, "FastGelu": {"gelu"}, "BiasGelu": {"gelu"}, "QuickGelu": {"gelu", "sigmoid", "silu"},
    "Erf": {"gelu", "erf"}, "Tanh": {"tanh", "gelu"}, "Sigmoid": {"sigmoid", "silu"},
    "HardSigmoid": {"sigmoid", "hardswish", "relu"}, "HardSwish": {"hardswish", "relu"}, "Swish": {"silu"}, "Silu": {"silu"},
    "Relu": {"relu"}, "LeakyRelu": {"relu"}, "PRelu": {"relu"}, "Clip": {"relu"}, "ThresholdedRelu": {"relu"},
    "Elu": {"elu"}, "Selu": {"elu"}, "Celu": {"elu"}, "Exp": {"exp", "softmax"}, "Log": {"log"},
    "Softmax": {"softmax", "exp"}, "LogSoftmax": {"softmax", "exp", "log"},
    "LayerNormalization": {"norm"}, "SimplifiedLayerNormalization": {"norm"}, "RMSNormalization": {"norm"},
    "SkipLayerNormalization": {"norm"}, "SkipSimplifiedLayerNormalization": {"norm"},
    "InstanceNormalization": {"norm"}, "GroupNormalization": {"norm"}, "MeanVarianceNormalization": {"norm"},
    "ReduceMean": {"norm"}, "Sqrt": {"norm"},
    "Conv": {"conv"}, "ConvTranspose": {"conv"}, "MatMul": {"conv"}, "Gemm": {"conv"}, "MatMulInteger": {"conv"},
    "ConvInteger": {"conv"}, "QLinearConv": {"conv"}, "QLinearMatMul": {"conv"}, "FusedMatMul": {"conv"},
    "Einsum": {"conv"}, "Attention": {"conv", "softmax"}, "MultiHeadAttention": {"conv", "softmax"},
    # Recurrent layers become a Convolution (input projection) plus a While body of gates.
    "LSTM": {"conv", "sigmoid", "tanh", "relu"}, "GRU": {"conv", "sigmoid", "tanh", "relu"},
    "RNN": {"conv", "sigmoid", "tanh", "relu"},
}
# Ops whose bodies (subgraphs) may compute anything: they explain every family.
ANY_FAMILY = {"If", "Loop", "Scan"}
# Known converter renames: ONNX name + suffix.
RENAME_SEPARATOR = "__"
WALK_LIMIT = 400  # ops visited per candidate check; past it the structure is not judged


@dataclass
class Pair:
    """One ONNX tensor and its MNN counterpart (mnn is None when there is none)."""

    onnx: str
    mnn: str | None
    how: str | None  # exact | op_name | renamed | node_map
    reason: str | None = None  # why there is no counterpart
    mnn_ops: list[dict] = field(default_factory=list)  # MNN ops between the matched ancestors and this tensor
    align: dict | None = None  # {"kind": "topk", ...}


@dataclass
class Match:
    pairs: dict[str, Pair]  # every ONNX tensor produced by a top-level node (and every graph input)
    mnn_only: list[str]  # dumped MNN tensors no ONNX tensor maps to (inserted by the converter)
    order: list[str]  # ONNX tensors in topological order

    def matched(self) -> list[Pair]:
        return [self.pairs[t] for t in self.order if self.pairs[t].mnn is not None]

    def unmatched(self) -> list[Pair]:
        return [self.pairs[t] for t in self.order if self.pairs[t].mnn is None]


def effective_type(data: dict) -> str:
    """An MNN op's type, with the sub-type of UnaryOp/BinaryOp/Eltwise/Reduction ops spelled out."""
    op = data.get("op_type") or ""
    sub = (data.get("attrs") or {}).get("opType")
    if op in ("UnaryOp", "BinaryOp", "Eltwise", "Reduction") and isinstance(sub, str):
        return sub
    return op


def _families(data: dict) -> set[str]:
    out = set()
    fam = MNN_FAMILY.get(effective_type(data))
    if fam:
        out.add(fam)
    attrs = data.get("attrs") or {}
    if attrs.get("relu") or attrs.get("relu6"):
        out.add("relu")  # an activation fused into the Convolution
    return out


class _Index:
    """Producers and op names of a graph, built once."""

    def __init__(self, graph: ModelGraph):
        self.graph = graph
        self.producer: dict[str, str] = graph.producers()
        self.by_name: dict[str, list[str]] = {}
        for nid, data in graph.g.nodes(data=True):
            if data.get("name"):
                self.by_name.setdefault(data["name"], []).append(nid)

    def data(self, nid: str) -> dict:
        return self.graph.g.nodes[nid]


def match_tensors(onnx_graph: ModelGraph, mnn_graph: ModelGraph | None, mnn_tensors: dict,
                  onnx_tensors: dict | None = None, node_map=None) -> Match:
    """Pair every ONNX tensor with the MNN tensor that holds its value.

    `mnn_tensors` / `onnx_tensors`: the dump manifests (tensor -> {shape, dtype, ...}); only dumped tensors
    can be matched. `mnn_graph`: the converted model's structure (op names, types, inputs); without it only
    exact names are used, unchecked. `node_map`: the conversion's ONNX-to-MNN map, when there is one.
    """
    onnx_idx = _Index(onnx_graph)
    order = _tensor_order(onnx_graph)
    initializers = {n for n, t in onnx_graph.tensors.items() if t.is_initializer}
    onnx_names = set(order) | set(onnx_graph.tensors)
    mnn_idx = _Index(mnn_graph) if mnn_graph is not None else None
    pairs: dict[str, Pair] = {}
    onnx_anchor: set[str] = set(initializers)
    mnn_anchor: set[str] = set()
    claimed: set[str] = set()
    hints = _node_map_hints(node_map)
    # Where the walk up an MNN tensor stops: matched MNN tensors and every ONNX name. A view, not
    # `mnn_anchor | onnx_names` per candidate: copying the union for each one made matching quadratic
    # (5.2 s of a 5,000-node decoder's comparison; milliseconds now).
    stops = _Union(mnn_anchor, onnx_names)

    for x in order:
        if onnx_tensors is not None and x not in onnx_tensors:
            pairs[x] = Pair(x, None, None, "ONNX Runtime did not return this tensor")
            continue
        pair = None
        rejected = None
        for m, how in _candidates(x, mnn_idx, mnn_tensors, hints):
            if how != "exact" and m in onnx_names and m != x:
                continue  # that MNN tensor is another ONNX tensor's counterpart
            if m in claimed and how != "exact":
                continue
            if getattr(onnx_graph, "format", None) == "mnn":  # an .mnn reference (compare A.mnn B.mnn)
                verdict = _check_mnn_reference(x, m, onnx_idx, mnn_idx, onnx_anchor, mnn_anchor)
            else:
                verdict = _check(x, m, onnx_idx, mnn_idx, onnx_anchor, stops, onnx_graph)
            if verdict is None:
                ops = _mnn_segment(m, mnn_idx, mnn_anchor)[0] if mnn_idx is not None else []
                pair = Pair(x, m, how, None, ops)
                break
            rejected = rejected or verdict
        if pair is None:
            reason = rejected or (_missing_reason(x, onnx_idx, mnn_idx, node_map)
                                  if x not in onnx_graph.inputs else "not an input of the MNN model")
            pair = Pair(x, None, None, reason)
        else:
            onnx_anchor.add(x)
            mnn_anchor.add(pair.mnn)
            claimed.add(pair.mnn)
        pairs[x] = pair
    _align_topk(onnx_graph, pairs)
    mnn_only = [t for t in mnn_tensors if t not in claimed]
    return Match(pairs, mnn_only, order)


class _Union:
    """Membership in either of two sets that keep growing (only `in` is needed)."""

    __slots__ = ("a", "b")

    def __init__(self, a: set, b: set):
        self.a, self.b = a, b

    def __contains__(self, item) -> bool:
        return item in self.a or item in self.b


def _missing_reason(x: str, onnx_idx: _Index, mnn_idx: _Index | None, node_map) -> str:
    """Why ONNX tensor x has no MNN counterpart, from evidence only: "fused" or "removed" when the conversion's
    node map says so, "computed no value" when the MNN model has the tensor but the run gave none back."""
    if mnn_idx is not None and x in mnn_idx.producer:
        return (f"MNN's model has the tensor '{x}' but its run gave no value for it (not read back: the run "
                f"failed or stopped before it)")
    if mnn_idx is not None and x in mnn_idx.by_name:
        # MNN names an op after its first ONNX output; fused, the op writes the last fused op's tensor instead (a
        # Conv with its BatchNormalization and Relu: op '/conv1/Conv_output_0' writes '/relu/Relu_output_0'). Said
        # as "the run failed or stopped before it" on every such Conv of a run that had not failed.
        outs = [t for nid in mnn_idx.by_name[x] for t in mnn_idx.data(nid).get("outputs", []) if t and t != x]
        if outs:
            return (f"no MNN tensor: the converter fused the ops after it into its MNN op '{x}', which writes "
                    f"'{', '.join(outs[:3])}' instead (compared there)")
    if isinstance(node_map, dict) and "onnx_to_mnn" in node_map:
        node_map = NodeMap.from_json(node_map)
    nid = onnx_idx.producer.get(x)
    status = node_map.status(nid) if nid is not None and hasattr(node_map, "status") else None
    if status == "fused":
        ops = node_map.mnn_ops(nid)
        return ("no MNN tensor: the converter fused the op that makes it"
                + (f" into {', '.join(ops[:3])}" if ops else ""))
    if status == "eliminated":
        return "no MNN tensor: the converter removed the op that makes it (a no-op, constant-folded or dead)"
    if status in ("kept", "renamed"):
        ops = node_map.mnn_ops(nid)
        return ("no MNN tensor read back for it, although the node map keeps its op"
                + (f" ({', '.join(ops[:3])})" if ops else ""))
    if node_map is None:
        return ("no MNN tensor of this name (no conversion node map here to tell whether the converter fused it, "
                "removed it, or the run lost it)")
    return "no MNN tensor of this name, and the node map does not place its op"


def _tensor_order(g: ModelGraph) -> list[str]:
    """Graph inputs, then every node output in topological order."""
    out = [i for i in g.inputs]
    seen = set(out)
    for nid in g.topological_order():
        for t in g.g.nodes[nid]["outputs"]:
            if t and t not in seen:
                seen.add(t)
                out.append(t)
    return out


def _node_map_hints(node_map) -> dict[str, list[str]]:
    """ONNX tensor -> MNN tensors from a conversion node map (duck-typed: onnx_to_mnn of tensors or ops)."""
    if node_map is None:
        return {}
    if hasattr(node_map, "tensor_pairs"):
        return {k: [v] for k, v in node_map.tensor_pairs().items()}
    mapping = getattr(node_map, "onnx_to_mnn", None)
    if mapping is None and isinstance(node_map, dict):
        mapping = node_map.get("onnx_to_mnn")
    hints: dict[str, list[str]] = {}
    for key, value in (mapping or {}).items():
        targets = value if isinstance(value, (list, tuple)) else [value]
        hints[key] = [t if isinstance(t, str) else (t.get("tensor") or t.get("name")) for t in targets
                      if isinstance(t, (str, dict))]
    return hints


def _candidates(x: str, mnn_idx: _Index | None, dumped: dict, hints: dict):
    seen = set()

    def emit(m, how):
        if m and m in dumped and m not in seen:
            seen.add(m)
            return [(m, how)]
        return []

    out = []
    if x in dumped:
        out += emit(x, "exact")
    for m in hints.get(x, []):
        out += emit(m, "node_map")
    if mnn_idx is not None:
        for nid in mnn_idx.by_name.get(x, []):
            outs = [t for t in mnn_idx.data(nid)["outputs"] if t]
            if len(outs) == 1:
                out += emit(outs[0], "op_name")
        prefix = x + RENAME_SEPARATOR
        for t in _prefixed(mnn_idx, prefix):
            out += emit(t, "renamed")
    return out


def _prefixed(mnn_idx: _Index, prefix: str) -> list[str]:
    cache = getattr(mnn_idx, "_renamed", None)
    if cache is None:
        cache = {}
        for t in mnn_idx.producer:
            base, sep, _ = t.partition(RENAME_SEPARATOR)
            if sep and base and "___" not in t:  # "x___tr4y" marks inserted layout ops, not renames
                cache.setdefault(base + RENAME_SEPARATOR, []).append(t)
        for name in mnn_idx.by_name:
            base, sep, _ = name.partition(RENAME_SEPARATOR)
            if sep and base and "___" not in name:
                for nid in mnn_idx.by_name[name]:
                    outs = [t for t in mnn_idx.data(nid)["outputs"] if t]
                    if len(outs) == 1 and outs[0] not in cache.get(base + RENAME_SEPARATOR, []):
                        cache.setdefault(base + RENAME_SEPARATOR, []).append(outs[0])
        mnn_idx._renamed = cache
    return cache.get(prefix, [])


def _check(x, m, onnx_idx, mnn_idx, onnx_anchor, mnn_stops, onnx_graph):
    """None when m may hold x's value, else why not.

    `mnn_stops`: MNN tensors where the walk up from m ends (matched ones and every ONNX-named one).
    """
    if mnn_idx is None:
        return None
    mnn_ops, mnn_fams, mnn_complete = _mnn_segment(m, mnn_idx, mnn_stops)
    onnx_ops, onnx_complete = _onnx_segment(x, onnx_idx, onnx_anchor, onnx_graph)
    if not (mnn_complete and onnx_complete):
        return None  # too far from any matched tensor to judge: trust the name
    if ANY_FAMILY & set(onnx_ops):
        return None
    explained = set()
    for op_type in onnx_ops:
        explained |= ONNX_FAMILIES.get(op_type, set())
    missing = sorted(f for f in mnn_fams if f not in explained)
    if missing:
        what = ", ".join(o["type"] for o in mnn_ops if _families_of(o) & set(missing))
        return (f"the MNN tensor '{m}' holds a value computed by {what or missing[0]}, which the ONNX ops "
                f"before this tensor do not compute (the converter moved or fused it)")
    return None


def _check_mnn_reference(x, m, ref_idx: _Index, mnn_idx: _Index | None, ref_anchor: set[str], mnn_anchor: set[str]):
    """None when MNN tensor m may hold the value of tensor x of a reference that is itself an .mnn, else why not.

    Both sides are MNN ops, so the check is symmetric: the families computed between each tensor and its
    side's nearest matched ancestors must be the same (a name the converter moved onto a layout copy of
    another op's output, or an activation fused on one side only, is refused). Layout ops carry values."""
    if mnn_idx is None:
        return None
    ref_ops, ref_fams, ref_complete = _mnn_segment(x, ref_idx, ref_anchor)
    ops, fams, complete = _mnn_segment(m, mnn_idx, mnn_anchor)
    if not (ref_complete and complete):
        return None
    if {"While", "If"} & {o["type"] for o in ref_ops + ops}:
        return None  # bodies may compute anything
    if ref_fams != fams:
        what = ", ".join(sorted(fams ^ ref_fams))
        return (f"the tensor '{m}' and the reference's '{x}' are computed by different ops since their matched "
                f"ancestors ({what} on one side only: the converter moved the name or fused differently)")
    return None


def _families_of(op: dict) -> set[str]:
    return set(op.get("families", []))


def _mnn_segment(m, mnn_idx: _Index, stops: set[str]):
    """The MNN ops between tensor m and its nearest ancestors in `stops`: (ops, families, complete).

    The check stops at every ONNX-named tensor, matched or not, which keeps it local (names move by one
    or two ops, and one refused tensor must not make every tensor after it look wrong); the ops reported
    for a pair run back to the matched tensors, so a refused name in between does not hide the op.
    """
    ops, fams, seen = [], set(), set()
    stack = [m]
    while stack:
        t = stack.pop()
        nid = mnn_idx.producer.get(t)
        if nid is None or nid in seen:
            continue
        seen.add(nid)
        if len(seen) > WALK_LIMIT:
            return ops, fams, False
        data = mnn_idx.data(nid)
        op_type = effective_type(data)
        if data["op_type"] in SHAPE_OPS:
            continue
        f = _families(data)
        fams |= f
        ops.append({"name": data.get("name") or nid, "type": op_type, "families": sorted(f),
                    "layout": data["op_type"] in LAYOUT_OPS})
        inputs = [i for i in data["inputs"] if i]
        if data["op_type"] in LAYOUT_OPS:
            inputs = inputs[:1]  # a Reshape's second input is a shape
        for i in inputs:
            if i not in stops:
                stack.append(i)
    ops.reverse()  # execution order, roughly: ancestors first
    return ops, fams, True


def _onnx_segment(x, onnx_idx: _Index, anchors: set[str], g: ModelGraph):
    ops, seen = [], set()
    stack = [x]
    while stack:
        t = stack.pop()
        nid = onnx_idx.producer.get(t)
        if nid is None or nid in seen:
            continue
        seen.add(nid)
        if len(seen) > WALK_LIMIT:
            return ops, False
        data = onnx_idx.data(nid)
        ops.append(data["op_type"])
        for i in data["inputs"]:
            if i and i not in anchors:
                stack.append(i)
    return ops, True


def _align_topk(g: ModelGraph, pairs: dict[str, Pair]) -> None:
    """TopK with sorted=0: ORT and MNN order the k slots differently; compare after sorting by index."""
    for nid, data in g.g.nodes(data=True):
        if data["op_type"] != "TopK" or int(data["attrs"].get("sorted", 1)) != 0:
            continue
        outs = data["outputs"]
        if len(outs) < 2:
            continue
        values, indices = pairs.get(outs[0]), pairs.get(outs[1])
        if not values or not indices or values.mnn is None or indices.mnn is None:
            continue
        note = {"kind": "topk", "axis": int(data["attrs"].get("axis", -1)),
                "values": [values.onnx, values.mnn], "indices": [indices.onnx, indices.mnn]}
        values.align = dict(note, role="values")
        indices.align = dict(note, role="indices")
