"""Parsing an .mnn file into a ModelGraph (the format's adapter, registered in registry.py, is mnn_adapter.py).

Structure and attributes come from the project's own FlatBuffer reader (pure Python, safe in-process);
tensor shapes and dtypes come from MNN itself (`load_structure` in the runner), since the file stores
only the input shapes.
"""
from __future__ import annotations

import os
from pathlib import Path

from mnnscope.inspector.errors import ModelError

from mnnscope.inspector.model.graph import ModelGraph, TensorInfo, unique_id
from mnnscope.inspector.formats.mnn_flatbuffer import MnnFormatError, read_mnn


def load_mnn(path: str | os.PathLike, structure: dict | None = None) -> ModelGraph:
    """Build the graph; `structure` is the runner's load_structure result (shapes), when available."""
    p = Path(path)
    try:
        model = read_mnn(p)
    except MnnFormatError as e:
        raise ModelError(str(e))
    except (OSError, ValueError) as e:
        raise ModelError(f"{p}: not a readable .mnn model ({e})")
    if not model.ops:
        raise ModelError(f"{p}: not a valid .mnn model (no operators)")
    mg = ModelGraph(format="mnn", path=str(p), version=model.version,
                    producer=" ".join(x for x in (model.source, model.biz_code) if x) or None)
    mg.meta["external_weights"] = model.external_weights
    mg.meta["params"] = model.params
    subgraphs = {sub.name: sub for sub in getattr(model, "subgraphs", None) or []}
    _fill(mg, model.ops, model.inputs, model.outputs, subgraphs)
    if structure:
        merge_structure(mg, structure)
    return mg


def _fill(mg: ModelGraph, ops, inputs, outputs, subgraphs: dict, prefix: str = "", depth: int = 0) -> None:
    """Operators, tensors and nested control-flow bodies (If/While name their graphs in attributes)."""
    tensors = mg.tensors
    for spec in inputs:
        if isinstance(spec, dict):
            tensors[spec["name"]] = TensorInfo(spec["name"], spec.get("shape"), spec.get("dtype"))
        else:
            tensors.setdefault(spec, TensorInfo(spec))
    taken: set[str] = set()
    for i, op in enumerate(ops):
        nid = unique_id(prefix + op.name, op.op_type, i, taken)
        attrs = dict(op.attrs)
        if op.weights:
            attrs["weights"] = op.weights
        nested = {}
        for key, value in op.attrs.items():
            if key.endswith("_graph") and isinstance(value, str) and value in subgraphs and depth < 16:
                sub = subgraphs[value]
                child = ModelGraph(format="mnn", path=mg.path, version=mg.version)
                _fill(child, sub.ops, sub.inputs, sub.outputs, subgraphs, prefix=f"{nid}/{key}/", depth=depth + 1)
                nested[key] = child
        mg.add_op(nid, name=op.name, op_type=op.op_type, inputs=op.inputs, outputs=op.outputs, attrs=attrs,
                  subgraphs=nested)
        for t in op.outputs:
            tensors.setdefault(t, TensorInfo(t))
        for w in op.weights:
            # Weights live inside the op in .mnn; record them as initializer-like tensors for params/bytes.
            wname = f"{nid}:{w['name']}"
            tensors[wname] = TensorInfo(wname, w.get("shape"), w.get("dtype"), True, w.get("bytes"), w.get("elements"))
    mg.inputs = [s["name"] if isinstance(s, dict) else s for s in inputs]
    mg.outputs = list(outputs)
    mg.connect()


def merge_structure(mg: ModelGraph, structure: dict) -> None:
    """Shapes/dtypes/layouts that MNN computed, keyed by output tensor name. When MNN computed them for
    concrete input sizes (the file's inputs have free dims), those sizes go to meta["shapes_for_inputs"]:
    the shapes hold for these sizes only. The inputs keep the file's own (free) shapes."""
    if structure.get("shapes_for_inputs"):
        mg.meta["shapes_for_inputs"] = dict(structure["shapes_for_inputs"])
    for w in structure.get("warnings") or []:
        mg.warnings.append(f"shapes: {w}")
    for v in structure.get("vars", []):
        name = v.get("name")
        t = mg.tensors.get(name)
        if t is None:
            continue
        if v.get("shape") is not None and (t.shape is None or not t.shape):
            t.shape = v["shape"]
        if v.get("dtype") and not t.dtype:
            t.dtype = v["dtype"]
        if v.get("format"):
            mg.meta.setdefault("layouts", {})[name] = v["format"]

