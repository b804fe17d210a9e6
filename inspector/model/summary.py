"""A model at a glance, from its GraphTable: inputs and outputs with shapes, opset, producer, op counts,
parameters and a FLOP estimate (model/flops.py's per-operator rules)."""
from __future__ import annotations

import json
import math
from collections import Counter

from mnnscope.inspector.model.flops import BoundShapes, has_rule, op_flops, total_or_unknown
from mnnscope.inspector.model.table import GraphTable

_ATTR_OPS = {"Gemm", "Conv", "ConvTranspose", "Convolution", "ConvolutionDepthwise", "Deconvolution"}


def _table_shape(table: GraphTable, name: str):
    t = table.tensor_index(name)
    return table.shapes[t] if t is not None else False


def table_flops(table: GraphTable, dims: dict | None = None) -> tuple[int | None, int]:
    """(estimated FLOPs over the operators that can be counted, None when unknown (flops.total_or_unknown), how
    many could be counted); `dims`: the sizes of named free dimensions the shapes are counted at."""
    return table_flops_detail(table, dims)[:2]


def table_flops_detail(table: GraphTable, dims: dict | None = None) -> tuple[int | None, int, int]:
    """table_flops and how many operators with a counting rule were left out for want of shapes."""
    mg = BoundShapes(lambda n: _table_shape(table, n), dims or {})
    names = table.tensor_names
    per, unknown = [], 0
    for i, op in enumerate(table.op_types):
        data = {"op_type": op,
                "inputs": [names[k] if k >= 0 else "" for k in table.node_inputs(i)],
                "outputs": [names[k] if k >= 0 else "" for k in table.node_outputs(i)],
                "attrs": json.loads(table.attrs_json[i]) if op in _ATTR_OPS else {}}
        try:
            f = op_flops(mg, data)
        except (TypeError, ValueError, IndexError, KeyError):  # odd attributes in a damaged file: not counted
            f = None
        if f is not None:
            per.append(int(f))
        elif has_rule(op):
            unknown += 1
    shapes = [_table_shape(table, n) or None for n in table.inputs]  # (unbound: see flops.estimate_flops)
    return total_or_unknown(per, unknown, shapes), len(per), unknown


def table_params(table: GraphTable) -> tuple[int | None, int | None]:
    """(parameters, weight bytes): ONNX initializers; an .mnn's own count from the file when it has one."""
    meta = table.info.get("meta") or {}
    params, nbytes, known = 0, 0, False
    for k in range(len(table.tensor_names)):
        if not table.is_init[k]:
            continue
        shape = table.shapes[k]
        if shape is not None and all(isinstance(d, int) and d >= 0 for d in shape):
            params += math.prod(shape)
            known = True
        if table.nbytes[k] >= 0:
            nbytes += int(table.nbytes[k])
    if isinstance(meta.get("params"), int) and meta["params"] > params:
        params, known = meta["params"], True
    return (params if known else None), (nbytes or None)


def model_summary(table: GraphTable, hidden=None, dims: dict | None = None) -> dict:
    """Everything the Properties panel shows when nothing is selected, as plain data; FLOPs counted at `dims` (the
    sizes of the inputs' named free dimensions: the Inputs dock's), which `flops_at` repeats when they were used."""
    def tensor(name):
        t = table.tensor_index(name)
        return {"name": name, "shape": table.shapes[t] if t is not None else None,
                "dtype": table.dtypes[t] if t is not None else None}

    shown = [i for i in range(table.node_count) if hidden is None or not hidden[i]]
    types = Counter(table.op_types[i] for i in shown)
    flops, counted, uncounted = table_flops_detail(table, dims)
    free = {str(d) for n in table.inputs for d in (_table_shape(table, n) or []) if isinstance(d, str)}
    used = {k: v for k, v in (dims or {}).items() if k in free}
    params, nbytes = table_params(table)
    info = table.info or {}
    return {"kind": "model", "path": table.path, "format": table.format,
            "producer": info.get("producer"), "opset": info.get("opset") or {}, "version": info.get("version"),
            "inputs": [tensor(n) for n in table.inputs], "outputs": [tensor(n) for n in table.outputs],
            # a control-flow body's values from its outer scope (drawn as its inputs; "Inputs: none" read wrong)
            "outer_inputs": [tensor(table.tensor_names[k]) for k in table.outer_inputs()],
            "ops": len(shown), "op_types": dict(types.most_common()), "params": params, "weight_bytes": nbytes,
            "flops": flops, "flops_ops": counted, "flops_at": used if flops is not None and used else None,
            # why an unknown is unknown: the ops left out, and the sizes they were left out at
            "flops_uncounted": uncounted, "sizes": used,
            # every dim size known at those sizes (the inputs' names, and what the model's other symbolic dims come
            # to there): what its inputs' and outputs' shapes read at
            "dims": dict(dims or {})}
