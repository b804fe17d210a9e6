"""What a conversion changed: op counts before/after, the patterns MNN fused, size before/after."""
from __future__ import annotations

import os
from collections import Counter

from mnnscope.inspector.model.graph import ModelGraph


def _onnx_bytes(graph: ModelGraph) -> dict:
    path = graph.path
    model = os.path.getsize(path) if path and os.path.isfile(path) else None
    folder = os.path.dirname(os.path.abspath(path)) if path else ""
    external = 0
    locations = set()
    for t in graph.tensors.values():
        if t.external:
            external += t.bytes or 0
    # The external files themselves (what a user copies around), not only the bytes tensors use.
    try:
        import onnx
        from onnx import TensorProto
        proto = onnx.load(path, load_external_data=False)
        for init in proto.graph.initializer:
            if init.data_location == TensorProto.EXTERNAL:
                for e in init.external_data:
                    if e.key == "location":
                        locations.add(e.value)
    except Exception:
        pass
    files = sum(os.path.getsize(os.path.join(folder, loc)) for loc in locations
                if os.path.isfile(os.path.join(folder, loc)))
    return {"file_bytes": model, "external_bytes": files or external or 0,
            "total_bytes": (model or 0) + (files or external or 0), "weight_bytes": graph.weight_bytes()}


def _mnn_bytes(mnn_model) -> dict:
    path = mnn_model.path
    model = os.path.getsize(path) if os.path.isfile(path) else None
    weight = path + ".weight"
    external = os.path.getsize(weight) if os.path.isfile(weight) else 0
    stored = sum(w["bytes"] for op in mnn_model.ops for w in op.weights)
    return {"file_bytes": model, "external_bytes": external, "total_bytes": (model or 0) + external,
            "weight_bytes": stored}


def fused_patterns(graph: ModelGraph, mnn_model, node_map) -> list[dict]:
    """[{pattern: "Conv+BatchNormalization+Relu", into: "Convolution", count, examples}] from the node map."""
    if node_map is None:
        return []
    ops = {op.name: op for op in mnn_model.ops}
    seen: dict[tuple[str, str], dict] = {}
    done: set[frozenset] = set()
    for mnn_name, members in node_map.mnn_to_onnx.items():
        if len(members) < 2:
            continue
        key_set = frozenset(members)
        if key_set in done:  # the same ONNX group owned by several MNN ops (e.g. conv + its reshape)
            continue
        done.add(key_set)
        pattern = "+".join(graph.g.nodes[n]["op_type"] for n in members)
        into = ops[mnn_name].op_type if mnn_name in ops else "?"
        entry = seen.setdefault((pattern, into), {"pattern": pattern, "into": into, "count": 0, "examples": []})
        entry["count"] += 1
        if len(entry["examples"]) < 3:
            entry["examples"].append(mnn_name)
    return sorted(seen.values(), key=lambda e: (-e["count"], e["pattern"]))


def graph_diff(graph: ModelGraph, mnn_model, node_map=None, dump_log: str | None = None) -> dict:
    """Before/after summary of a conversion (JSON-ready)."""
    before = Counter(d["op_type"] for _, d in graph.g.nodes(data=True))
    after = Counter(op.op_type for op in mnn_model.ops if op.op_type != "Input")
    size_before, size_after = _onnx_bytes(graph), _mnn_bytes(mnn_model)
    out = {
        "ops_before": sum(before.values()),
        "ops_after": sum(after.values()),
        "op_types_before": dict(before.most_common()),
        "op_types_after": dict(after.most_common()),
        "fused": fused_patterns(graph, mnn_model, node_map),
        "size_before": size_before,
        "size_after": size_after,
        "size_ratio": (round(size_after["total_bytes"] / size_before["total_bytes"], 4)
                       if size_before["total_bytes"] else None),
        "params_before": graph.params(),
        "params_after": mnn_model.params,
    }
    if node_map is not None:
        out["node_map"] = node_map.counts()
        inserted_names = set(node_map.inserted)
        inserted = Counter(op.op_type for op in mnn_model.ops if op.name in inserted_names)
        out["inserted_types"] = dict(inserted.most_common())
        eliminated = Counter(e.get("reason", "?") for e in node_map.onnx_to_mnn.values() if e["status"] == "eliminated")
        out["eliminated"] = dict(eliminated)
        out["passes"] = [p for p in node_map.passes if p["ops_before"] != p["ops_after"] or p["changed"]]
    quant = Counter()
    for op in mnn_model.ops:
        q = op.attrs.get("quant")
        if isinstance(q, dict):
            kind, bits = q.get("kind", "?"), q.get("bits", "")
            if kind == "fp16" or (kind == "int8" and bits == 8):
                bits = ""  # "int8" is full int8 (int8 activations too); "weight_quant8" is weight-only
            quant[f"{kind}{bits}"] += 1
    out["quantized_ops"] = dict(quant)
    return out


def describe(diff: dict) -> list[str]:
    """A few lines for the terminal."""
    def mb(n):
        return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"
    lines = [f"ops {diff['ops_before']} -> {diff['ops_after']}; "
             f"size {mb(diff['size_before']['total_bytes'])} -> {mb(diff['size_after']['total_bytes'])}"]
    for f in diff.get("fused", [])[:6]:
        lines.append(f"fused {f['count']}x {f['pattern']} -> {f['into']}")
    if diff.get("quantized_ops"):
        said = {"int8": "int8 with int8 activations"}  # full int8 (mnnquant); the rest store only weights so
        lines.append("weights stored as " + ", ".join(f"{said.get(k, k)} ({v} ops)"
                                                      for k, v in diff["quantized_ops"].items()))
    return lines
