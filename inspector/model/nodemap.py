"""ONNX node <-> MNN op map of a converted model, from the two graphs and the converter's --dumpPass log.

MNN names ops after ONNX *output tensors* (node names are lost) and renames when it fuses: Conv+BN+Relu
becomes op `c1` writing tensor `r1`; MatMul+Add becomes `y__matmul_converted`. So the map is built from
tensors, not names. Each MNN op that writes (or is named after) ONNX tensors owns the ONNX nodes that
compute them, walking back from those tensors through every tensor MNN no longer has until tensors MNN
still has. One node alone in such a region is *kept* (or *renamed* when its tensors got other names);
nodes sharing a region are *fused*; nodes in no region are *eliminated* (no-op removed, constant-folded or
dead). MNN ops owning no ONNX node are *inserted* (layout converters, shape ops), or folded constants.
The --dumpPass log adds which optimizer pass touched each op.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from mnnscope.inspector.model.graph import ModelGraph

# ONNX ops that are the identity at inference: removing them is elimination, not fusion.
NOOP_TYPES = {"Identity", "Dropout"}
# ONNX ops whose output is a constant when their inputs' shapes are known (MNN folds them).
SHAPE_OPS = {"Shape", "Size"}
# MNN ops that only change the memory layout: they carry the value of their input.
LAYOUT_OPS = {"ConvertTensor"}
# MNN ops, and ONNX ops, whose output holds the same values as their first input.
VALUE_OPS = {"ConvertTensor", "Reshape", "Squeeze", "Unsqueeze", "Flatten"}
ONNX_VALUE_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"}
STATUSES = ("kept", "renamed", "fused", "eliminated")

_CHANGED = re.compile(r"\[DumpPass\]\s+Merge::(\w+) changed node: (.+)$")
_OPS = re.compile(r"\[DumpPass\]\s+(?:PostConvert::|ExtraPass::)?(.+?): ops (\d+) -> (\d+)")


@dataclass
class NodeMap:
    onnx_to_mnn: dict[str, dict] = field(default_factory=dict)
    mnn_to_onnx: dict[str, list[str]] = field(default_factory=dict)
    inserted: list[str] = field(default_factory=list)
    # inserted op -> the ONNX nodes of the op(s) it feeds (e.g. the shape ops of a MatMul lowered to Conv)
    inserted_for: dict[str, list[str]] = field(default_factory=dict)
    constants: list[str] = field(default_factory=list)
    passes: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict:
        c = {s: 0 for s in STATUSES}
        for entry in self.onnx_to_mnn.values():
            c[entry["status"]] += 1
        c["inserted"] = len(self.inserted)
        return c

    def status(self, node_id: str) -> str | None:
        entry = self.onnx_to_mnn.get(node_id)
        return entry["status"] if entry else None

    def mnn_ops(self, node_id: str) -> list[str]:
        entry = self.onnx_to_mnn.get(node_id)
        return list(entry["mnn_ops"]) if entry else []

    def tensor_pairs(self) -> dict[str, str]:
        """ONNX tensor -> MNN tensor of the same value (same name, or the output of the op it fused into)."""
        out = {}
        for entry in self.onnx_to_mnn.values():
            for onnx_t, mnn_t in entry.get("tensors", {}).items():
                if mnn_t:
                    out[onnx_t] = mnn_t
        return out

    def to_json(self) -> dict:
        return {"onnx_to_mnn": self.onnx_to_mnn, "mnn_to_onnx": self.mnn_to_onnx, "inserted": self.inserted,
                "inserted_for": self.inserted_for, "constants": self.constants, "passes": self.passes, "notes": self.notes, "counts": self.counts()}

    @classmethod
    def from_json(cls, d: dict) -> "NodeMap":
        return cls(onnx_to_mnn=d.get("onnx_to_mnn", {}), mnn_to_onnx=d.get("mnn_to_onnx", {}),
                   inserted=d.get("inserted", []), inserted_for=d.get("inserted_for", {}),
                   constants=d.get("constants", []),
                   passes=d.get("passes", []), notes=d.get("notes", []))


def parse_dump_pass(log_text: str) -> tuple[dict[str, list[str]], list[dict]]:
    """({name changed -> [merge passes]}, [{pass, ops_before, ops_after, nodes}]) from a --dumpPass log."""
    changed: dict[str, list[str]] = defaultdict(list)
    passes: list[dict] = []
    pending: list[tuple[str, str]] = []
    for line in log_text.splitlines():
        line = line.strip()
        m = _CHANGED.match(line)
        if m:
            name, node = m.group(1), m.group(2).strip()
            if name not in changed[node]:
                changed[node].append(name)
            pending.append((name, node))
            continue
        m = _OPS.match(line)
        if m and (m.group(2) != m.group(3) or pending):
            nodes: dict[str, list[str]] = defaultdict(list)
            for name, node in pending:
                nodes[name].append(node)
            passes.append({"pass": m.group(1), "ops_before": int(m.group(2)), "ops_after": int(m.group(3)),
                           "changed": {k: v for k, v in nodes.items()}})
            pending = []
    return dict(changed), passes


def _constant_nodes(graph: ModelGraph) -> set[str]:
    """Nodes whose outputs are known before run time: constants, and ops computed only from constants or
    from the shapes of tensors with static shapes."""
    const_tensors = {n for n, t in graph.tensors.items() if t.is_initializer}
    const_nodes: set[str] = set()
    for nid in graph.topological_order():
        data = graph.g.nodes[nid]
        ins = [t for t in data["inputs"] if t]
        if data["op_type"] in SHAPE_OPS and ins:
            t = graph.tensors.get(ins[0])
            static = t is not None and t.shape is not None and all(isinstance(d, int) and d > 0 for d in t.shape)
        else:
            static = all(t in const_tensors for t in ins) and not data.get("subgraphs")
        if static and data["op_type"] not in ("RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike"):
            const_nodes.add(nid)
            const_tensors.update(t for t in data["outputs"] if t)
    return const_nodes


def build_node_map(graph: ModelGraph, mnn_model, dump_log: str | None = None) -> NodeMap:
    """The map for a top-level ONNX graph and its conversion (an `mnn_format.MnnModel`)."""
    producer = graph.producers()
    mnn_producer = {t: op for op in mnn_model.ops for t in op.outputs}
    const_nodes = _constant_nodes(graph)
    order = {nid: i for i, nid in enumerate(graph.topological_order())}

    def _own_anchors(op) -> list[str]:
        """The ONNX tensors an MNN op computes: its outputs, else its name, else the base of its generated name."""
        if op.op_type in LAYOUT_OPS:
            return []
        outs = [t for t in op.outputs if t in producer]
        if outs:
            return outs
        if op.name in producer:
            return [op.name]
        base = _derived_base(op.name, producer)
        return [base] if base else []

    extra_anchors: dict[str, list[str]] = defaultdict(list)

    def anchors_of(op) -> list[str]:
        return _own_anchors(op) + extra_anchors.get(op.name, [])

    def source(t: str):
        """The op whose value tensor t holds: layout converters pass their input's value through."""
        op = mnn_producer.get(t)
        seen = 0
        while op is not None and op.op_type in LAYOUT_OPS and op.inputs and seen < 16:
            op = mnn_producer.get(op.inputs[0])
            seen += 1
        return op

    # An MNN tensor named like an ONNX tensor holds that value only if the op behind it computes it:
    # a layout converter inserted after a moved op can carry a name whose value is another op's.
    faithful = set()
    for t in mnn_producer:
        if t in producer:
            op = source(t)
            if op is not None and (op.op_type == "Input" or t in anchors_of(op)):
                faithful.add(t)

    # A value-preserving MNN op (reshape, layout change) from ONNX-named tensor a to b says a holds b's value.
    # Unless ONNX too gets b from a by such ops, MNN has fused b's producers (an activation moved into a
    # MatMul-as-Conv) into the op behind a: a's name lies, and that op also computes b.
    for op in mnn_model.ops:
        if op.op_type in VALUE_OPS and op.inputs and op.outputs:
            a, b = op.inputs[0], op.outputs[0]
            if a != b and a in producer and b in producer and not _reaches(graph, producer, b, a):
                faithful.discard(a)
                src = source(a)
                if src is not None and b not in anchors_of(src):
                    extra_anchors[src.name].append(b)

    def equivalents(t: str) -> list[str]:
        if t in faithful:
            return [t]
        op = source(t)
        return anchors_of(op) if op is not None else []

    def region_from(anchors: list[str], boundary: set[str]) -> set[str]:
        region: set[str] = set()
        stack = []
        for t in anchors:
            if t in boundary:  # the op only re-lays out a value it reads: it owns that node, nothing upstream
                region.add(producer[t])
            else:
                stack.append(producer[t])
        while stack:
            nid = stack.pop()
            if nid in region:
                continue
            region.add(nid)
            for t in graph.g.nodes[nid]["inputs"]:
                if not t or t in boundary or t in faithful or t not in producer:
                    continue
                p = producer[t]
                if p not in const_nodes:  # constants MNN absorbed became attributes or renamed Consts
                    stack.append(p)
        return region

    regions: dict[str, set[str]] = {}
    nm = NodeMap()
    anchored: dict[str, list[str]] = {}
    for op in mnn_model.ops:
        if op.op_type == "Input":
            continue
        anchors = anchors_of(op)
        boundary = {e for i in op.inputs for e in equivalents(i)}
        region = region_from(anchors, boundary) if anchors else set()
        if region:
            regions[op.name] = region
            anchored[op.name] = anchors
        elif op.op_type == "Const":
            nm.constants.append(op.name)
        else:
            nm.inserted.append(op.name)

    # Pass-through ops inside a region were removed, not fused.
    for name, region in regions.items():
        noops = {n for n in region if graph.g.nodes[n]["op_type"] in NOOP_TYPES}
        if noops and noops != region:
            region -= noops
    member_of: dict[str, list[str]] = defaultdict(list)
    for name, region in regions.items():
        for nid in region:
            member_of[nid].append(name)

    changed, passes = parse_dump_pass(dump_log or "")
    nm.passes = passes
    ops_by_name = {op.name: op for op in mnn_model.ops}
    op_index = {op.name: i for i, op in enumerate(mnn_model.ops)}
    for nid in graph.g.nodes:
        data = graph.g.nodes[nid]
        outs = [t for t in data["outputs"] if t]
        owners = sorted(member_of.get(nid, []), key=op_index.get)
        entry: dict = {"status": "eliminated", "mnn_ops": owners, "op_type": data["op_type"]}
        if not owners:
            entry["reason"] = ("no-op removed" if data["op_type"] in NOOP_TYPES else
                               "constant-folded" if nid in const_nodes else "removed by the converter")
        elif any(len(regions[o]) > 1 for o in owners):
            entry["status"] = "fused"
            partners = set().union(*(regions[o] for o in owners)) - {nid}
            entry["with"] = sorted(partners, key=lambda n: order.get(n, 0))
        elif all(t in faithful for t in outs) and any(o in outs for o in owners):
            entry["status"] = "kept"
        else:
            entry["status"] = "renamed"
        tensors = {}
        for t in outs:
            if t in faithful:
                tensors[t] = t
            else:  # the value lives on under the output name of the op that computes it, if it ends there
                op = next((ops_by_name[o] for o in owners if t in anchored.get(o, ())), None)
                inner = op is not None and any(t in graph.g.nodes[m]["inputs"] for m in regions[op.name])
                tensors[t] = op.outputs[0] if op is not None and op.outputs and not inner else None
        entry["tensors"] = tensors
        touched = []
        keys = outs + [t for partner in entry.get("with", []) for t in graph.g.nodes[partner]["outputs"]]
        for key in keys:
            for p in changed.get(key, []):
                if p not in touched:
                    touched.append(p)
        if touched:
            entry["passes"] = touched
        nm.onnx_to_mnn[nid] = entry
    # Inserted ops serve the first ops downstream that own ONNX nodes.
    consumers: dict[str, list] = defaultdict(list)
    for op in mnn_model.ops:
        for t in op.inputs:
            consumers[t].append(op)
    for name in nm.inserted:
        served: set[str] = set()
        stack, seen = list(ops_by_name[name].outputs), set()
        while stack:
            t = stack.pop()
            for c in consumers.get(t, []):
                if c.name in seen:
                    continue
                seen.add(c.name)
                if c.name in regions:
                    served |= regions[c.name]
                else:
                    stack.extend(c.outputs)
        if served:
            nm.inserted_for[name] = sorted(served, key=lambda n: order.get(n, 0))
    # A removed no-op's input and output hold one value: whichever MNN kept serves both.
    for nid in graph.g.nodes:
        data = graph.g.nodes[nid]
        if data["op_type"] not in NOOP_TYPES or not data["inputs"] or not data["outputs"]:
            continue
        a, b = data["inputs"][0], data["outputs"][0]
        if a not in producer:
            continue
        ea, eb = nm.onnx_to_mnn[producer[a]]["tensors"], nm.onnx_to_mnn[nid]["tensors"]
        if ea.get(a) is None and eb.get(b):
            ea[a] = eb[b]
        elif eb.get(b) is None and ea.get(a):
            eb[b] = ea[a]
    for name, region in regions.items():
        nm.mnn_to_onnx[name] = sorted(region, key=lambda n: order.get(n, 0))
    lying = sorted(t for t in mnn_producer if t in producer and t not in faithful)
    if lying:
        nm.notes.append(f"{len(lying)} MNN tensor(s) carry an ONNX name but another op's value "
                        f"(e.g. '{lying[0]}'): they are not matched by name")
    if mnn_model.subgraphs:
        nm.notes.append(f"ops inside {len(mnn_model.subgraphs)} control-flow subgraph(s) are not mapped")
    return nm


def _reaches(graph: ModelGraph, producer: dict, b: str, a: str) -> bool:
    """Whether ONNX computes tensor b from tensor a through value-preserving ops only."""
    t, steps = b, 0
    while t in producer and steps < 32:
        data = graph.g.nodes[producer[t]]
        if data["op_type"] not in ONNX_VALUE_OPS or not data["inputs"]:
            return False
        t = data["inputs"][0]
        if t == a:
            return True
        steps += 1
    return False


def _derived_base(name: str, producer: dict) -> str | None:
    """'y__matmul_converted' -> 'y': the ONNX tensor an MNN op's generated name starts from."""
    best = None
    start = 0
    while True:
        i = name.find("__", start)
        if i <= 0:
            break
        if name[:i] in producer:
            best = name[:i]
        start = i + 1
    return best
