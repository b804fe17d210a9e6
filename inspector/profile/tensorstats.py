"""A statistics run read per tensor and per graph node: the rows the Statistics dock lists, a statistic per node
for overlays, and the nodes where NaN/Inf first appear.

The runner (`profile` with stats, runner/profile.py) reports statistics per tensor under the ops it ran
(`ops[].outputs`) and, for ONNX Runtime, under every ONNX node (`nodes[].outputs`); tensors are keyed by name.
A graph (inspector.model.table.GraphTable) gives each tensor's producer, so the statistics land on the nodes
the viewer draws. Runtime-only tensors (MNN's inserted Raster ops) keep their rows but map to no node.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

INT32_EDGE = 2.0 ** 31  # |INT32_MIN|; INT32_MAX rounds to it in float32 (whose spacing there is 256)
# statistic -> (label, log scale where the values spread over decades)
STATISTICS = {
    "max_abs": ("max |x|", True),
    "std": ("std", True),
    "zero_fraction": ("share of zeros", False),
}


@dataclass
class TensorRow:
    """One tensor of a statistics run: the runner's statistics plus where it sits in the graph."""

    tensor: str
    op: str               # the runtime op (or ONNX node) that wrote it
    op_type: str
    node: int             # producer's index in the graph table, -1 when the graph has no such tensor
    stats: dict           # the runner's tensor_stats entry (min, max, mean, std, nan, inf, zero_fraction, hist, ...)

    @property
    def max_abs(self) -> float | None:
        lo, hi = self.stats.get("min"), self.stats.get("max")
        if lo is None or hi is None:
            return None
        return max(abs(lo), abs(hi))

    @property
    def nonfinite(self) -> int:
        return int(self.stats.get("nan") or 0) + int(self.stats.get("inf") or 0)

    @property
    def at_int32_limit(self) -> float | None:
        """A float tensor's min or max at the int32 range's end (-2147483648 or 2147483647, as float32): what an
        integer overflow or a saturated int32 accumulator leaves (an int8 run read -2.147e9 in a BinaryOp where fp32
        gave 59; x86 turns every out-of-range float->int32 conversion into INT32_MIN). Integer tensors are not judged:
        MNN holds int64 shape bounds (INT64_MAX slice ends) as int32, at the limit by design. None if neither."""
        if not str(self.stats.get("dtype") or "").startswith(("float", "bfloat")):
            return None
        for key in ("min", "max"):
            v = self.stats.get(key)
            if isinstance(v, (int, float)) and math.isfinite(v) and abs(abs(v) - INT32_EDGE) <= 128.0:
                return float(v)
        return None

    def value(self, statistic: str) -> float | None:
        if statistic == "max_abs":
            return self.max_abs
        v = self.stats.get(statistic)
        return None if v is None else float(v)


def tensor_rows(result: dict, table=None) -> list[TensorRow]:
    """Every tensor the statistics run read, in run order, once each (ONNX Runtime's `nodes` first: they are
    the unoptimized graph the viewer shows; then the ops' outputs not seen there)."""
    rows: list[TensorRow] = []
    seen: set[str] = set()
    for group in (result.get("nodes") or [], result.get("ops") or []):
        for op in group:
            for out in op.get("outputs") or []:
                name = out.get("name")
                if not name or name in seen or "error" in out and "min" not in out:
                    continue
                seen.add(name)
                rows.append(TensorRow(name, op.get("name") or "", op.get("type") or "", _producer(table, name), out))
    return rows


def _producer(table, name: str) -> int:
    if table is None:
        return -1
    t = table.tensor_index(name)
    return int(table.producer[t]) if t is not None else -1


def node_values(rows: list[TensorRow], statistic: str) -> dict[int, float]:
    """{graph node: the statistic over its outputs} (the largest where a node has several outputs)."""
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic '{statistic}' ({', '.join(STATISTICS)})")
    out: dict[int, float] = {}
    for r in rows:
        v = r.value(statistic)
        if r.node < 0 or v is None or not math.isfinite(v):
            continue
        out[r.node] = max(out.get(r.node, v), v)
    return out


def nonfinite_producers(rows: list[TensorRow], table) -> list[int]:
    """Graph nodes that write NaN/Inf from finite inputs: the first node of each non-finite chain, in the
    graph's topological order. A node whose NaN/Inf comes from an input that already holds them is downstream
    of a producer and is not listed; an input the run did not read (a constant, a model input) counts as finite."""
    return first_producers(rows, table, lambda r: r.nonfinite > 0)


def int32_limit_producers(rows: list[TensorRow], table) -> list[int]:
    """Graph nodes that write float values at the int32 limit (TensorRow.at_int32_limit) from inputs that hold
    none: the first node of each such chain, as nonfinite_producers."""
    return first_producers(rows, table, lambda r: r.at_int32_limit is not None)


def first_producers(rows: list[TensorRow], table, bad) -> list[int]:
    """The nodes with an output that is `bad` (a predicate on a row) and no input that is: the first node of each
    bad chain, in the graph's topological order."""
    bad_tensors = {r.tensor for r in rows if bad(r)}
    bad_nodes = sorted({r.node for r in rows if bad(r) and r.node >= 0})
    first = []
    for node in bad_nodes:
        inputs = [table.tensor_names[t] for t in table.node_inputs(node) if t >= 0]
        if not any(name in bad_tensors for name in inputs):
            first.append(node)
    return sorted(first, key=lambda i: (int(table.rank[i]), i))


def rows_of_node(rows: list[TensorRow], node: int, op_nodes: dict[str, int] | None = None) -> list[TensorRow]:
    """The rows of graph node `node`: its own tensors, and with `op_nodes` ({runtime op: node}, an .onnx converted
    for MNN) those of the ops converted from it whose tensors the .onnx does not have ("key/Add_output_0__matmul_
    converted" for the key MatMul, which said "no tensor of this op was read": helper 104's try)."""
    return [r for r in rows if r.node == node or (r.node < 0 and op_nodes and op_nodes.get(r.op) == node)]
