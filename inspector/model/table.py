"""The viewer's model: a compact table of a ModelGraph (node and tensor arrays, attributes as raw JSON).

Why a table and not the ModelGraph itself: a 100k-node ModelGraph (networkx) costs ~270 MB and ~2 s to
rebuild from JSON, and parsing a big file on a UI worker thread holds the GIL. The viewer needs arrays
(for scopes, layout and hit tests) and, for one node at a time, its attributes; so the load process
(formats/loadproc.py) parses the file with the format adapters and sends per-node strings and int arrays,
with each node's attributes as raw JSON text that is decoded only when that node is shown.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from mnnscope.inspector.model.graph import ModelGraph


@dataclass
class GraphTable:
    """One graph (or subgraph) in arrays. Node i: ids[i], names[i], op_types[i], scopes[i]; its inputs are
    tensor indices in_idx[in_ptr[i]:in_ptr[i+1]] (-1 = an omitted optional input), outputs likewise."""

    format: str
    path: str
    ids: list[str]
    names: list[str]
    op_types: list[str]
    scopes: list[str]
    attrs_json: list[str]
    in_ptr: np.ndarray
    in_idx: np.ndarray
    out_ptr: np.ndarray
    out_idx: np.ndarray
    tensor_names: list[str]
    shapes: list
    dtypes: list
    is_init: np.ndarray
    nbytes: np.ndarray        # -1 when unknown
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)   # opset, version, producer, warnings, meta
    subgraphs: dict = field(default_factory=dict)  # node index -> {attribute name: GraphTable}

    def __post_init__(self):
        self._node_index: dict | None = None
        self._tensor_index: dict | None = None
        self._consumers = None
        n = len(self.ids)
        slot_node = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.in_ptr))
        producer = np.full(len(self.tensor_names), -1, np.int64)
        out_node = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.out_ptr))
        ok = self.out_idx >= 0
        producer[self.out_idx[ok]] = out_node[ok]
        self.producer = producer
        has = self.in_idx >= 0
        src = np.full(len(self.in_idx), -1, np.int64)
        src[has] = producer[self.in_idx[has]]
        keep = src >= 0
        self.edge_src = src[keep]
        self.edge_dst = slot_node[keep]
        self.edge_tensor = self.in_idx[keep].astype(np.int64)
        self.rank = _topological_rank(n, self.edge_src, self.edge_dst)

    # ----- lookups ------------------------------------------------------------------------------
    @property
    def node_count(self) -> int:
        return len(self.ids)

    def index_of(self, node_id: str) -> int | None:
        if self._node_index is None:
            self._node_index = {nid: i for i, nid in enumerate(self.ids)}
        return self._node_index.get(node_id)

    def names_index(self) -> dict[str, int]:
        """Node id or name -> node index (a name wins over an id that equals it), as comparisons and
        generate results name ONNX nodes; built on each call (the docks keep it per model)."""
        index: dict[str, int] = {}
        for i in range(self.node_count):
            index.setdefault(self.ids[i], i)
            if self.names[i]:
                index[self.names[i]] = i
        return index

    def tensor_index(self, name: str) -> int | None:
        if self._tensor_index is None:
            self._tensor_index = {t: i for i, t in enumerate(self.tensor_names)}
        return self._tensor_index.get(name)

    def outer_inputs(self) -> list[int]:
        """Tensors read here that nothing here makes, that are no weight and no declared input: in a control-flow
        body, the values it reads by name from its outer scope (an If branch's `x`)."""
        read = np.zeros(len(self.tensor_names), bool)
        read[self.in_idx[self.in_idx >= 0]] = True
        declared = {self.tensor_index(x) for x in self.inputs}
        return [k for k in np.flatnonzero(read & (self.producer < 0) & ~self.is_init).tolist() if k not in declared]

    def node_inputs(self, i: int) -> list[int]:
        return self.in_idx[self.in_ptr[i]:self.in_ptr[i + 1]].tolist()

    def node_outputs(self, i: int) -> list[int]:
        return self.out_idx[self.out_ptr[i]:self.out_ptr[i + 1]].tolist()

    def attrs(self, i: int) -> dict:
        return json.loads(self.attrs_json[i])

    def producers_of(self, i: int) -> list[int]:
        """Nodes that feed node i, in input order, without repeats."""
        out = []
        for t in self.node_inputs(i):
            p = int(self.producer[t]) if t >= 0 else -1
            if p >= 0 and p not in out:
                out.append(p)
        return out

    def consumers_of(self, i: int) -> list[int]:
        """Nodes that read an output of node i, in file order."""
        if self._consumers is None:
            order = np.argsort(self.edge_src, kind="stable")
            self._consumers = (np.searchsorted(self.edge_src[order], np.arange(self.node_count + 1)),
                               self.edge_dst[order])
        ptr, dst = self._consumers
        return sorted(set(dst[ptr[i]:ptr[i + 1]].tolist()))

    def tensor(self, t: int) -> dict:
        nb = int(self.nbytes[t])
        return {"name": self.tensor_names[t], "shape": self.shapes[t], "dtype": self.dtypes[t],
                "is_initializer": bool(self.is_init[t]), "bytes": nb if nb >= 0 else None}

    def merge_shapes(self, shapes: dict) -> int:
        """Fill unknown shapes/dtypes from {tensor: {shape, dtype}} (shape inference, MNN); returns how many.
        A shape whose dims an earlier ONNX shape inference invented ("unk__7", saved in the file) is replaced."""
        filled = 0
        for name, info in shapes.items():
            t = self.tensor_index(name)
            if t is None:
                continue
            old, new = self.shapes[t], info.get("shape")
            invented = bool(old) and any(isinstance(d, str) and d.startswith("unk__") for d in old)
            if new is not None and (old is None or old == [] or (invented and len(new) == len(old))):
                self.shapes[t] = info["shape"]
                filled += 1
            if not self.dtypes[t] and info.get("dtype"):
                self.dtypes[t] = info["dtype"]
        for subs in self.subgraphs.values():
            for sub in subs.values():
                filled += sub.merge_shapes(shapes)
        return filled

    # ----- building -----------------------------------------------------------------------------
    @classmethod
    def from_graph(cls, mg: ModelGraph) -> "GraphTable":
        tnames = list(mg.tensors)
        tindex = {t: i for i, t in enumerate(tnames)}
        ids, names, ops, scopes, attrs = [], [], [], [], []
        in_ptr, in_idx, out_ptr, out_idx = [0], [], [0], []
        subgraphs: dict = {}
        for i, (nid, d) in enumerate(mg.g.nodes(data=True)):
            ids.append(nid)
            names.append(d["name"])
            ops.append(d["op_type"])
            scopes.append(d["scope"])
            a = d["attrs"]
            attrs.append(json.dumps(a, separators=(",", ":"), default=str) if a else "{}")
            for t in d["inputs"]:
                if t and t not in tindex:  # a tensor no table entry names (a dangling input)
                    tindex[t] = len(tnames)
                    tnames.append(t)
                in_idx.append(tindex[t] if t else -1)
            in_ptr.append(len(in_idx))
            for t in d["outputs"]:
                if t and t not in tindex:
                    tindex[t] = len(tnames)
                    tnames.append(t)
                out_idx.append(tindex[t] if t else -1)
            out_ptr.append(len(out_idx))
            subs = {k: cls.from_graph(v) for k, v in d.get("subgraphs", {}).items()}
            for k, sub in subs.items():  # what the body belongs to: its inputs' and outputs' roles follow (Loop)
                sub.info["body_of"] = {"op_type": d["op_type"], "attr": k, "inputs": list(d["inputs"]),
                                       "outputs": list(d["outputs"])}
            if subs:
                subgraphs[i] = subs
        tinfo = [mg.tensors.get(t) for t in tnames]
        info = {"opset": mg.opset, "version": mg.version, "producer": mg.producer, "warnings": list(mg.warnings),
                "meta": {k: v for k, v in mg.meta.items() if _jsonable(v)}}
        return cls(
            format=mg.format, path=mg.path, ids=ids, names=names, op_types=ops, scopes=scopes, attrs_json=attrs,
            in_ptr=np.asarray(in_ptr, np.int64), in_idx=np.asarray(in_idx, np.int64),
            out_ptr=np.asarray(out_ptr, np.int64), out_idx=np.asarray(out_idx, np.int64),
            tensor_names=tnames, shapes=[t.shape if t else None for t in tinfo],
            dtypes=[t.dtype if t else None for t in tinfo],
            is_init=np.asarray([bool(t and t.is_initializer) for t in tinfo], bool),
            nbytes=np.asarray([t.bytes if (t and t.bytes is not None) else -1 for t in tinfo], np.int64),
            inputs=list(mg.inputs), outputs=list(mg.outputs), info=info, subgraphs=subgraphs)

    # ----- wire format ----------------------------------------------------------------------------
    def sections(self) -> dict:
        return {
            "info": {"format": self.format, "path": self.path, "inputs": self.inputs, "outputs": self.outputs,
                     "info": self.info},
            "nodes": {"ids": self.ids, "names": self.names, "op_types": self.op_types, "scopes": self.scopes},
            "attrs": self.attrs_json,
            "io": {"in_ptr": self.in_ptr.tolist(), "in_idx": self.in_idx.tolist(),
                   "out_ptr": self.out_ptr.tolist(), "out_idx": self.out_idx.tolist()},
            "tensors": {"names": self.tensor_names, "shapes": self.shapes, "dtypes": self.dtypes,
                        "is_init": self.is_init.astype(np.int8).tolist(), "nbytes": self.nbytes.tolist()},
            "subgraphs": {str(i): {k: v.sections() for k, v in subs.items()} for i, subs in self.subgraphs.items()},
        }

    @classmethod
    def from_sections(cls, s: dict) -> "GraphTable":
        i, n, io, t = s["info"], s["nodes"], s["io"], s["tensors"]
        return cls(
            format=i["format"], path=i["path"], ids=n["ids"], names=n["names"], op_types=n["op_types"],
            scopes=n["scopes"], attrs_json=s["attrs"],
            in_ptr=np.asarray(io["in_ptr"], np.int64), in_idx=np.asarray(io["in_idx"], np.int64),
            out_ptr=np.asarray(io["out_ptr"], np.int64), out_idx=np.asarray(io["out_idx"], np.int64),
            tensor_names=t["names"], shapes=t["shapes"], dtypes=t["dtypes"],
            is_init=np.asarray(t["is_init"], bool), nbytes=np.asarray(t["nbytes"], np.int64),
            inputs=i["inputs"], outputs=i["outputs"], info=i["info"],
            subgraphs={int(k): {a: cls.from_sections(v) for a, v in subs.items()}
                       for k, subs in s["subgraphs"].items()})


def _jsonable(v) -> bool:
    try:
        json.dumps(v)
        return True
    except (TypeError, ValueError):
        return False


def _topological_rank(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Position of each node in a topological order that keeps file order where it can (cycles: file order)."""
    if len(src) == 0 or bool(np.all(src < dst)):  # exporters write nodes in order: the common case
        return np.arange(n, dtype=np.int64)
    import heapq
    indeg = np.bincount(dst, minlength=n).tolist()
    order = np.argsort(src, kind="stable")
    ptr = np.searchsorted(src[order], np.arange(n + 1)).tolist()
    succ = dst[order].tolist()
    heap = [i for i in range(n) if indeg[i] == 0]
    heapq.heapify(heap)
    rank = np.full(n, -1, np.int64)
    k = 0
    while heap:
        v = heapq.heappop(heap)
        rank[v] = k
        k += 1
        for j in range(ptr[v], ptr[v + 1]):
            w = succ[j]
            indeg[w] -= 1
            if indeg[w] == 0:
                heapq.heappush(heap, w)
    left = np.flatnonzero(rank < 0)  # nodes on a cycle
    rank[left] = np.arange(k, k + len(left))
    return rank
