"""Where a profile's time goes on the graph being viewed: per-op times placed on the view's nodes.

Same model (an .mnn profiled on MNN, an .onnx on ONNX Runtime): an op lands on the node of its name (or id,
or the node writing a tensor of that name: MNN names fused ops after a tensor). ONNX Runtime renames what its
optimizer fuses ("<node>/SimplifiedLayerNormFusion/", "<tensor>_nchwc"); such an op lands on that node and
the nodes before it that no timed op claims (the pattern it fused); its inserted layout reorders stay
unplaced.

An .onnx profiled on MNN (converted first): through the conversion's node map (inspector/model/nodemap.py).
An MNN op that owns several ONNX nodes (Conv+BN+Relu fused into one Convolution) spreads its time over that
region in proportion to each node's estimated FLOPs (output elements where FLOPs are unknown), so the
Conv carries the weight and the Relu a sliver, and the region as a whole carries the op's time. An op the
converter inserted (a layout converter, a shape op) is charged to the ONNX nodes it serves.

`coverage` = placed time / measured time (the sum of the op medians): the view says how much of the time it
could put on nodes. Pure Python: no Qt, no runner.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from mnnscope.inspector.model.flops import op_flops
from mnnscope.inspector.model.table import GraphTable

# ONNX Runtime's optimizer names the nodes it makes after the node they replace, plus one of these.
_ORT_SUFFIXES = re.compile(r"(_token_\d+|_fusion|_fused|_nchwc|/?FusedConv|/?FusedMatMul|_kernel_time)$")
# Without shapes, a fused region's time goes mostly to its matrix products.
HEAVY_OPS = {"Conv", "ConvTranspose", "MatMul", "Gemm", "FusedConv", "FusedMatMul", "LSTM", "GRU", "RNN",
             "Attention", "MultiHeadAttention", "Einsum", "Convolution", "ConvolutionDepthwise", "Deconvolution"}
_HEAVY_WEIGHT = 20.0
_ATTR_OPS = {"Gemm", "Conv", "ConvTranspose", "Convolution", "ConvolutionDepthwise", "Deconvolution"}


@dataclass
class Placement:
    values: dict[str, float]                 # node id -> ms placed on it
    measured_ms: float                       # sum of the op medians
    placed_ms: float                         # how much of it landed on nodes
    how: str                                 # "name" | "node_map" | "none"
    op_nodes: dict[str, list[str]] = field(default_factory=dict)   # op name -> the node ids it landed on
    unplaced: list[dict] = field(default_factory=list)            # [{name, type, ms}], largest first
    note: str = ""

    @property
    def coverage(self) -> float | None:
        """Share of the measured time placed on nodes (None when nothing was measured)."""
        return self.placed_ms / self.measured_ms if self.measured_ms > 0 else None

    def to_json(self) -> dict:
        return {"values": self.values, "coverage": self.coverage, "measured_ms": self.measured_ms,
                "placed_ms": self.placed_ms, "how": self.how, "op_nodes": self.op_nodes,
                "unplaced": self.unplaced, "note": self.note}


def timed_ops(result: dict) -> list[dict]:
    """The result's ops that have a finite median time."""
    out = []
    for op in result.get("ops") or []:
        ms = op.get("ms")
        if isinstance(ms, (int, float)) and math.isfinite(ms):
            out.append(op)
    return out


def load_node_map(result: dict) -> dict | None:
    """The node map the profile service saved beside the run (result["node_map_path"]), or None."""
    path = result.get("node_map_path")
    if not path:
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def needs_node_map(result: dict, table: GraphTable) -> bool:
    """Whether the result ran another file than the viewed one (an .onnx converted for MNN)."""
    return bool(result.get("converted_from")) and table.format == "onnx"


def place(result: dict, table: GraphTable, node_map: dict | None = None) -> Placement:
    """Place the per-op median times of profile `result` on the nodes of `table` (the viewed model).
    `node_map` (NodeMap.to_json()) is needed when the result profiled the .onnx's MNN conversion."""
    ops = timed_ops(result)
    measured = float(sum(op["ms"] for op in ops))
    if needs_node_map(result, table):
        if node_map is None:
            return Placement({}, measured, 0.0, "none", unplaced=_largest(ops),
                             note="no node map of the conversion: MNN's op times cannot be placed on the ONNX nodes")
        return _through_map(ops, table, node_map, measured)
    return _by_name(ops, table, measured, _outside_cut(result, table))


def _outside_cut(result: dict, table: GraphTable) -> set[int]:
    """The nodes a profile from a node never ran (those before its cut): no fused op's region reaches back into them
    (ORT's first kernel of a cut at Conv.30 was spread over the 167 nodes before it, tryout 18)."""
    ids = set((result.get("from_node") or {}).get("ids") or [])
    return {i for i in range(table.node_count) if table.ids[i] not in ids} if ids else set()


def _largest(ops: list[dict], limit: int = 20) -> list[dict]:
    top = sorted(ops, key=lambda op: -op["ms"])[:limit]
    return [{"name": op.get("name"), "type": op.get("type"), "ms": op["ms"]} for op in top if op["ms"] > 0]


_ORT_FUSION = re.compile(r"/[A-Za-z0-9_]*Fusion/?$")
# MNN splits some ops at run time (geometry computing): their pieces run as "<op or tensor>_raster_N".
RASTER_SUFFIX = re.compile(r"_raster_\d+$")


def _strip(name: str) -> str:
    return _ORT_SUFFIXES.sub("", RASTER_SUFFIX.sub("", name))


def _by_name(ops: list[dict], table: GraphTable, measured: float, outside: set[int] = frozenset()) -> Placement:
    """Same model: each op on its node (by id or name), or on the region computing the tensor it is named
    after (a fused op named after its last output: the nodes before it whose outputs no timed op wrote)."""
    index: dict[str, int] = {}
    for i in range(table.node_count):   # later keys never replace earlier ones: ids win over names
        for key in (table.ids[i], table.names[i]):
            if key:
                index.setdefault(key, i)
    by_tensor: dict[str, int] = {}
    for i in range(table.node_count):
        for t in table.node_outputs(i):
            if t >= 0:
                by_tensor.setdefault(table.tensor_names[t], i)
    # first pass: the node each op names (directly, or through the tensor it is named after)
    hits: list[tuple[dict, int, bool]] = []   # (op, node index, matched by tensor name)
    missing = []
    for op in ops:
        name = str(op.get("name") or "")
        i, via_tensor = index.get(name), False
        if i is None and name in by_tensor:
            i, via_tensor = by_tensor[name], True
        if i is None:
            base = _strip(name)
            if base != name:
                i = index.get(base)
                if i is None and base in by_tensor:
                    i, via_tensor = by_tensor[base], True
        if i is None:   # ORT's fusions: "<last node of the pattern>/<Name>Fusion/": the pattern ends there
            base = _ORT_FUSION.sub("", name)
            if base != name and base in index:
                i, via_tensor = index[base], True
        if i is None:
            missing.append(op)
        else:
            hits.append((op, i, via_tensor))
    direct = {i for _, i, _ in hits}
    claimed: set[int] = set(direct) | set(outside)
    regions: dict[int, list[int]] = {}
    for _, i, via_tensor in hits:
        if via_tensor and i not in regions:
            regions[i] = _region_back(table, i, claimed)
    values: dict[str, float] = {}
    op_nodes: dict[str, list[str]] = {}
    placed = 0.0
    weights: dict[int, float | None] = {}
    for op, i, _ in hits:
        idx = regions.get(i, [i])
        _spread(values, table, idx, float(op["ms"]), weights)
        op_nodes[str(op.get("name") or "")] = [table.ids[k] for k in idx]
        placed += float(op["ms"])
    return Placement(values, measured, placed, "name", op_nodes, _largest(missing))


def _region_back(table: GraphTable, i: int, claimed: set[int]) -> list[int]:
    """Node i and the nodes upstream of it that no timed op claims (fused into the op that wrote i's output);
    stops at weights, graph inputs, and nodes another op claims. Adds what it takes to `claimed`."""
    region, stack = [i], [i]
    while stack:
        k = stack.pop()
        for t in table.node_inputs(k):
            if t < 0 or table.is_init[t]:
                continue
            p = int(table.producer[t])
            if p < 0 or p in claimed or table.op_types[p] == "Constant":
                continue
            claimed.add(p)
            region.append(p)
            stack.append(p)
    return region


def _spread(values: dict, table: GraphTable, idx: list[int], ms: float, weights: dict) -> None:
    """Add `ms` over nodes `idx` in proportion to their estimated cost."""
    need = [k for k in idx if k not in weights]
    if need:
        weights.update(node_weights(table, need))
    w = [weights[k] for k in idx]
    if any(x is None for x in w):   # no shapes for some: by kind of op, a matrix product outweighs what follows it
        w = [_HEAVY_WEIGHT if table.op_types[k] in HEAVY_OPS else 1.0 for k in idx]
    total = sum(w)
    for k, wk in zip(idx, w):
        nid = table.ids[k]
        values[nid] = values.get(nid, 0.0) + ms * (wk / total if total > 0 else 1.0 / len(idx))


def node_weights(table: GraphTable, indices) -> dict[int, float | None]:
    """A relative cost per node, for spreading a fused op's time: estimated FLOPs, else output elements, else
    None (no shapes known)."""
    class _T:
        def __init__(self, shape):
            self.shape = shape

    class _Shapes:
        tensors = None

        def get(self, name):
            k = table.tensor_index(name)
            return _T(table.shapes[k]) if k is not None else None

    mg = _Shapes()
    mg.tensors = mg
    names = table.tensor_names
    out: dict[int, float | None] = {}
    for i in indices:
        op = table.op_types[i]
        data = {"op_type": op, "inputs": [names[k] if k >= 0 else "" for k in table.node_inputs(i)],
                "outputs": [names[k] if k >= 0 else "" for k in table.node_outputs(i)],
                "attrs": _attrs(table, i) if op in _ATTR_OPS else {}}
        try:
            f = op_flops(mg, data)
        except (TypeError, ValueError, IndexError, KeyError):
            f = None
        if not f:
            f = 0
            for k in table.node_outputs(i):
                shape = table.shapes[k] if k >= 0 else None
                if shape and all(isinstance(d, int) and d >= 0 for d in shape):
                    f += math.prod(shape)
        out[i] = float(f) if f else None
    return out


def _attrs(table: GraphTable, i: int) -> dict:
    try:
        return json.loads(table.attrs_json[i])
    except ValueError:
        return {}


def _through_map(ops: list[dict], table: GraphTable, node_map: dict, measured: float) -> Placement:
    regions = node_map.get("mnn_to_onnx") or {}
    served = node_map.get("inserted_for") or {}
    onnx_to_mnn = node_map.get("onnx_to_mnn") or {}
    by_tensor: dict[str, int] = {}
    for i in range(table.node_count):
        for t in table.node_outputs(i):
            if t >= 0:
                by_tensor.setdefault(table.tensor_names[t], i)

    def nodes_of(name: str) -> list[str]:
        nodes = regions.get(name) or served.get(name)
        if nodes:
            return nodes
        base = RASTER_SUFFIX.sub("", name)   # a piece MNN split off an op at run time: the op's region
        nodes = regions.get(base) or served.get(base)
        if nodes:
            return nodes
        i = by_tensor.get(base)            # named after an ONNX tensor: its producer's region
        if i is None:
            return []
        owners = (onnx_to_mnn.get(table.ids[i]) or {}).get("mnn_ops") or []
        out = [n for o in owners for n in regions.get(o, [])]
        return list(dict.fromkeys(out)) or [table.ids[i]]

    values: dict[str, float] = {}
    op_nodes: dict[str, list[str]] = {}
    placed, missing = 0.0, []
    weights: dict[int, float | None] = {}
    for op in ops:
        name = str(op.get("name") or "")
        idx = [i for i in (table.index_of(n) for n in nodes_of(name)) if i is not None]
        if not idx:
            missing.append(op)
            continue
        _spread(values, table, idx, float(op["ms"]), weights)
        op_nodes[name] = [table.ids[i] for i in idx]
        placed += float(op["ms"])
    return Placement(values, measured, placed, "node_map", op_nodes, _largest(missing))


def by_type(ops: list[dict]) -> list[dict]:
    """Per op type: count, total ms, share of the measured time, FLOPs (None when no op of the type has a count,
    as in ONNX Runtime's profiles: unknown, not zero); largest total first."""
    total = sum(op["ms"] for op in timed_ops({"ops": ops}))
    agg: dict[str, dict] = {}
    for op in timed_ops({"ops": ops}):
        t = op.get("type") or "?"
        a = agg.setdefault(t, {"type": t, "count": 0, "ms": 0.0, "flops": None})
        a["count"] += 1
        a["ms"] += op["ms"]
        if isinstance(op.get("flops"), (int, float)):  # None while no op of the type has a count (ONNX Runtime's)
            a["flops"] = (a["flops"] or 0) + op["flops"]
    rows = sorted(agg.values(), key=lambda a: -a["ms"])
    for a in rows:
        a["share"] = a["ms"] / total if total > 0 else 0.0
        a["gflops"] = (a["flops"] / (a["ms"] * 1e6)) if a["ms"] > 0 and a["flops"] else None
    return rows


def throughput(op: dict) -> float | None:
    """GFLOP/s of one op (FLOPs as MNN counts them over its median time), None when unknown."""
    ms, flops = op.get("ms"), op.get("flops")
    if not isinstance(ms, (int, float)) or not isinstance(flops, (int, float)) or ms <= 0 or not flops:
        return None
    return flops / (ms * 1e6)


def overlay_values(kind: str, placement: Placement, result: dict) -> dict[str, float]:
    """The per-node values an overlay of `kind` shows: time (ms), share (of the measured time, 0..1) or
    throughput (GFLOP/s of the ops that landed on a node; a node shares its op's figure)."""
    if kind == "time":
        return dict(placement.values)
    if kind == "share":
        m = placement.measured_ms
        return {k: v / m for k, v in placement.values.items()} if m > 0 else {}
    if kind == "throughput":
        out: dict[str, float] = {}
        by_name = {str(op.get("name")): op for op in timed_ops(result)}
        for name, nodes in placement.op_nodes.items():
            g = throughput(by_name.get(name, {}))
            if g is None:
                continue
            for nid in nodes:
                out[nid] = max(out.get(nid, 0.0), g)
        return out
    raise ValueError(f"overlay kind must be time, share or throughput, not '{kind}'")
