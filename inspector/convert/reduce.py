"""Minimal reproducer of a failing conversion: the smallest ONNX subgraph that still fails the same way.

First the nodes the diagnosis names are cut out with a growing neighbourhood; when that does not
reproduce (or nothing is named), the graph is bisected the way `polygraphy debug reduce` does: the
shortest failing prefix of the topologically ordered nodes, then its shortest failing suffix. Every
probe is a real conversion in the runner, so a crash costs only a runner restart. An unreadable file
is reduced to its shortest unreadable prefix of bytes.

Cutting is done here on the protobuf (no shape inference in this process: that is native code); the
shapes of the new graph inputs come from the runner's `infer_shapes` when it can compute them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import onnx
from onnx import TensorProto, helper

from mnnscope.runner.protocol import RunnerError

from mnnscope.inspector.convert.checks import check_model, diagnose, parse_log
from mnnscope.inspector.convert.tools import convert_once
from mnnscope.inspector.model.graph import unique_id
from mnnscope.inspector.process.client import Cancelled

_DTYPES = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "float64": TensorProto.DOUBLE,
           "int64": TensorProto.INT64, "int32": TensorProto.INT32, "int8": TensorProto.INT8,
           "uint8": TensorProto.UINT8, "bool": TensorProto.BOOL, "bfloat16": TensorProto.BFLOAT16,
           "int16": TensorProto.INT16}


@dataclass
class ReduceResult:
    path: str | None
    reproduced: bool
    nodes_before: int
    nodes_after: int
    bytes_before: int
    bytes_after: int | None
    probes: int
    method: str
    signature: list
    log_text: str = ""
    argv: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"path": self.path, "reproduced": self.reproduced, "nodes_before": self.nodes_before,
                "nodes_after": self.nodes_after, "bytes_before": self.bytes_before, "bytes_after": self.bytes_after,
                "probes": self.probes, "method": self.method, "signature": self.signature, "notes": self.notes}


# ----- cutting ----------------------------------------------------------------------------------------
def _subgraph_reads(node: onnx.NodeProto) -> set[str]:
    """Names a node's subgraphs read from the enclosing scope (they must stay defined when cutting)."""
    reads: set[str] = set()

    def visit(g: onnx.GraphProto, outer_defined: set[str]):
        defined = set(outer_defined) | {i.name for i in g.input} | {t.name for t in g.initializer}
        for n in g.node:
            defined.update(n.output)
        for n in g.node:
            for t in n.input:
                if t and t not in defined:
                    reads.add(t)
            for a in n.attribute:
                if a.HasField("g"):
                    visit(a.g, defined)
                for sg in a.graphs:
                    visit(sg, defined)

    for a in node.attribute:
        if a.HasField("g"):
            visit(a.g, set())
        for sg in a.graphs:
            visit(sg, set())
    return reads


class Cutter:
    """Builds sub-models of one ONNX model from sets of top-level node indices."""

    def __init__(self, model: onnx.ModelProto, model_dir: str, shapes: dict | None = None):
        self.model = model
        self.model_dir = model_dir
        self.shapes = shapes or {}
        g = model.graph
        self.nodes = list(g.node)
        self.reads = [[t for t in n.input if t] + sorted(_subgraph_reads(n)) for n in self.nodes]
        self.producer = {t: i for i, n in enumerate(self.nodes) for t in n.output if t}
        self.inits = {t.name: t for t in g.initializer}
        self.value_info = {v.name: v for v in list(g.input) + list(g.value_info) + list(g.output)}
        self.graph_outputs = {o.name for o in g.output}
        self.consumers: dict[str, list[int]] = {}
        for i, names in enumerate(self.reads):
            for t in names:
                self.consumers.setdefault(t, []).append(i)

    def neighbourhood(self, seeds: set[int], radius: int, way: str = "both") -> set[int]:
        """The seeds and the nodes within `radius` steps of them: through producers, consumers or "both"."""
        out = set(seeds)
        frontier = set(seeds)
        for _ in range(radius):
            nxt = set()
            for i in frontier:
                if way in ("producers", "both"):
                    nxt.update(self.producer[t] for t in self.reads[i] if t in self.producer)
                if way in ("consumers", "both"):
                    for t in self.nodes[i].output:
                        nxt.update(self.consumers.get(t, []))
            nxt -= out
            out |= nxt
            frontier = nxt
        return out

    def _value_info(self, name: str) -> onnx.ValueInfoProto:
        if name in self.value_info and self.value_info[name].type.HasField("tensor_type"):
            return self.value_info[name]
        info = self.shapes.get(name) or {}
        dtype = _DTYPES.get(info.get("dtype") or "float32", TensorProto.FLOAT)
        shape = info.get("shape")
        if shape is not None:
            shape = [d if isinstance(d, (int, str)) and d != -1 else None for d in shape]
        return helper.make_tensor_value_info(name, dtype, shape)

    def _initializer(self, name: str) -> TensorProto:
        t = TensorProto()
        t.CopyFrom(self.inits[name])
        if t.data_location == TensorProto.EXTERNAL:
            location = next((e.value for e in t.external_data if e.key == "location"), "")
            path = os.path.join(self.model_dir, location)
            if location and os.path.isfile(path):
                from onnx.external_data_helper import load_external_data_for_tensor
                load_external_data_for_tensor(t, self.model_dir)
                t.data_location = TensorProto.DEFAULT
                del t.external_data[:]
            # A missing file stays a reference: that is the failure being reproduced.
        return t

    def cut(self, keep: set[int]) -> onnx.ModelProto:
        idx = sorted(keep)
        produced = {t for i in idx for t in self.nodes[i].output if t}
        consumed: list[str] = []
        for i in idx:
            for t in self.reads[i]:
                if t not in consumed:
                    consumed.append(t)
        inputs, inits = [], []
        for t in consumed:
            if t in produced:
                continue
            if t in self.inits:
                inits.append(self._initializer(t))
            elif t in self.producer or t in self.value_info:
                inputs.append(self._value_info(t))
            # else: undefined in the original too; it stays undefined
        outputs = []
        for i in idx:
            for t in self.nodes[i].output:
                if not t:
                    continue
                outside = any(c not in keep for c in self.consumers.get(t, []))
                if outside or t in self.graph_outputs or not self.consumers.get(t):
                    outputs.append(self._value_info(t))
        if not outputs and idx:
            outputs = [self._value_info(t) for t in self.nodes[idx[-1]].output if t]
        graph = helper.make_graph([self.nodes[i] for i in idx], (self.model.graph.name or "graph") + "_reduced",
                                  inputs, outputs, initializer=inits)
        m = helper.make_model(graph, opset_imports=list(self.model.opset_import),
                              producer_name="mnnscope-reduce")
        m.ir_version = self.model.ir_version
        m.functions.extend(self.model.functions)
        return m


# ----- searching ----------------------------------------------------------------------------------------
class _Prober:
    def __init__(self, client, settings, signature: list, work: Path, timeout: float, on_event):
        self.client, self.settings, self.signature = client, settings, signature
        self.work, self.timeout, self.on_event = work, timeout, on_event
        self.count = 0
        self.last: dict | None = None

    def __call__(self, path: str) -> bool:
        self.count += 1
        if self.on_event is not None:
            self.on_event("progress", {"fraction": None, "message": f"reducing: probe {self.count}"})
        out = self.work / f"probe_{self.count}.mnn"
        log = self.work / f"probe_{self.count}.log"
        pre = check_model(path, None)
        attempt = convert_once(self.client, path, str(out), self.settings, str(log), None, self.timeout, verify=True)
        verdict = diagnose(attempt, pre, parse_log(attempt.log_text), self.settings)
        same = verdict["signature"] == self.signature
        if same:
            self.last = {"path": path, "log_text": attempt.log_text, "argv": attempt.argv}
        for f in (out, Path(str(out) + ".weight")):
            if f.exists():
                f.unlink()
        return same


def _save(model: onnx.ModelProto, path: Path) -> str:
    onnx.save(model, str(path))
    return str(path)


def reduce_failure(src: str, signature: list, settings, client, work_dir, seeds: list[str] | None = None,
                   timeout: float = 300.0, on_event=None, max_probes: int = 40) -> ReduceResult:
    """Cut `src` down to a small model whose conversion fails with the same `signature`."""
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    probe = _Prober(client, settings, signature, work, timeout, on_event)
    size = os.path.getsize(src)
    if signature and signature[0] == "unreadable_model":
        return _reduce_bytes(src, signature, probe, work, size)
    model = onnx.load(src, load_external_data=False)
    try:
        shapes = client.request("infer_shapes", {"path": os.path.abspath(src)}, timeout=120).get("shapes", {})
    except Cancelled:
        raise
    except RunnerError:
        shapes = {}  # inputs of cut models then get their dtype and shape from the file's value_info only
    cutter = Cutter(model, os.path.dirname(os.path.abspath(src)), shapes)
    n = len(cutter.nodes)
    ids = _node_ids(model)
    seed_idx = {ids[s] for s in seeds or [] if s in ids}
    best: set[int] | None = None
    method = "none"
    k = 0

    def attempt(keep: set[int]) -> bool:
        nonlocal k
        if not keep or probe.count >= max_probes:
            return False
        k += 1
        return probe(_save(cutter.cut(keep), work / f"cut_{k}.onnx"))

    if seed_idx:
        for radius in (0, 1, 2, 4, 8):
            keep = cutter.neighbourhood(seed_idx, radius)
            if attempt(keep):
                best, method = keep, f"neighbourhood (radius {radius})"
                break
            if len(keep) == n:
                break
    if best is None:
        best = _bisect(n, attempt)
        method = "bisect" if best is not None else "none"
    notes = []
    if best is None:
        notes.append("no smaller model reproduced the failure; the bundle names the original model instead")
        return ReduceResult(None, False, n, n, size, None, probe.count, method, signature, notes=notes)
    final = work.parent / "reduced.onnx"
    _save(cutter.cut(best), final)
    reproduced = probe(str(final))
    if not reproduced:
        notes.append("the reduced model did not fail the same way on its final check")
    return ReduceResult(str(final), reproduced, n, len(best), size, os.path.getsize(final), probe.count, method,
                        signature, (probe.last or {}).get("log_text", ""), (probe.last or {}).get("argv", []), notes)


def _bisect(n: int, attempt) -> set[int] | None:
    """Shortest failing prefix [0, hi), then shortest failing suffix [lo, hi) of it."""
    lo_k, hi_k = 1, n  # the full model fails: find the smallest k whose prefix fails
    found = False
    while lo_k < hi_k:
        mid = (lo_k + hi_k) // 2
        if attempt(set(range(mid))):
            hi_k, found = mid, True
        else:
            lo_k = mid + 1
    hi = hi_k
    if not found and not attempt(set(range(hi))):
        return None
    lo_s, hi_s = 0, hi - 1  # the largest start whose [start, hi) still fails
    while lo_s < hi_s:
        mid = (lo_s + hi_s + 1) // 2
        if attempt(set(range(mid, hi))):
            lo_s = mid
        else:
            hi_s = mid - 1
    return set(range(lo_s, hi))


def _node_ids(model: onnx.ModelProto) -> dict[str, int]:
    """Node id (as the graph model names nodes) -> index in the top-level graph."""
    taken: set[str] = set()
    out = {}
    for i, node in enumerate(model.graph.node):
        nid = unique_id(node.name, node.op_type, i, taken) if node.name else unique_id("", node.op_type, i, taken)
        out[nid] = i
    return out


def _reduce_bytes(src: str, signature: list, probe: _Prober, work: Path, size: int) -> ReduceResult:
    """An unreadable file: its shortest prefix that is still unreadable."""
    data = Path(src).read_bytes()
    final = work.parent / "reduced.onnx"
    length = 16
    while length < size:
        cand = work / f"prefix_{length}.onnx"
        cand.write_bytes(data[:length])
        if probe(str(cand)):
            final.write_bytes(data[:length])
            return ReduceResult(str(final), True, 0, 0, size, length, probe.count, "byte prefix", signature,
                                (probe.last or {}).get("log_text", ""), (probe.last or {}).get("argv", []),
                                [f"the first {length} bytes of the file already fail to parse"])
        length *= 4
    return ReduceResult(None, False, 0, 0, size, None, probe.count, "byte prefix", signature,
                        notes=["no shorter prefix failed the same way"])
