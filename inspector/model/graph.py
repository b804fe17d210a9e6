"""The one graph model behind every view and command: operators as nodes, tensors as edges."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

import networkx as nx


@dataclass
class TensorInfo:
    name: str
    shape: list | None = None  # ints for known dims, strings for symbolic ones, None for unknown
    dtype: str | None = None
    is_initializer: bool = False
    bytes: int | None = None
    elements: int | None = None
    external: bool = False  # stored in an external data file

    def to_dict(self) -> dict:
        return {
            "name": self.name, "shape": self.shape, "dtype": self.dtype,
            "is_initializer": self.is_initializer, "bytes": self.bytes,
            "elements": self.elements, "external": self.external,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "TensorInfo":
        return cls(**d)


def scope_of(name: str) -> str:
    """Scope path of an operator from its exporter name: "/model/layers.0/attn/MatMul" -> "/model/layers.0/attn"."""
    if not name or "/" not in name.strip("/"):
        return ""
    parts = [p for p in name.split("/") if p]
    return "/" + "/".join(parts[:-1])


@dataclass
class ModelGraph:
    """A model as a networkx MultiDiGraph plus its tensor table.

    Node ids are unique strings (the operator name, or a generated id when the name is empty or repeated).
    Node data: name, op_type, domain, attrs, inputs, outputs, scope, source, and `subgraphs` (attribute name
    -> ModelGraph) for control-flow bodies. Edges: producer -> consumer, key = tensor name; graph inputs and
    initializers have no producer node and appear only in the tensor table.
    """

    format: str
    path: str
    g: nx.MultiDiGraph = field(default_factory=nx.MultiDiGraph)
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    opset: dict[str, int] = field(default_factory=dict)
    version: str | None = None
    producer: str | None = None
    warnings: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    # ----- building -------------------------------------------------------------------------
    def add_op(self, node_id: str, *, name: str, op_type: str, inputs: list[str], outputs: list[str],
               attrs: dict | None = None, domain: str = "", subgraphs: dict | None = None,
               scope: str | None = None) -> None:
        """`scope`: the op's scope path when the file records one (ONNX node metadata); else from its name."""
        self.g.add_node(node_id, name=name, op_type=op_type, domain=domain, attrs=attrs or {},
                        inputs=list(inputs), outputs=list(outputs),
                        scope=scope_of(name) if scope is None else scope,
                        source=self.format, subgraphs=subgraphs or {})

    def connect(self) -> None:
        """Add an edge per (tensor, consumer) from the producers recorded in the nodes."""
        producer = self.producers()
        add_edge = self.g.add_edge  # add_edges_from re-reads every edge through views: 4x slower at 100k
        for nid, data in self.g.nodes(data=True):
            for t in data["inputs"]:
                src = producer.get(t)
                if src is not None:
                    add_edge(src, nid, key=t)

    # ----- queries ----------------------------------------------------------------------------
    @property
    def node_count(self) -> int:
        return self.g.number_of_nodes()

    def op_types(self) -> dict[str, int]:
        return dict(Counter(d["op_type"] for _, d in self.g.nodes(data=True)).most_common())

    def subgraphs(self) -> Iterable[tuple[str, str, "ModelGraph"]]:
        """(owner node id, attribute name, subgraph) for every nested graph, recursively."""
        for nid, data in self.g.nodes(data=True):
            for attr, sub in data.get("subgraphs", {}).items():
                yield nid, attr, sub
                yield from sub.subgraphs()

    def producers(self) -> dict[str, str]:
        """{tensor name: id of the node that writes it} over this graph's own nodes (the one producer map
        every module uses; build it once per use site: the graph may still be growing while it loads)."""
        return {t: nid for nid, data in self.g.nodes(data=True) for t in data["outputs"] if t}

    def outputs_by_op_name(self) -> dict[str, list[str]]:
        """{op name: its output tensor names} for named ops that write something."""
        return {d["name"]: list(d["outputs"]) for _, d in self.g.nodes(data=True) if d["name"] and d["outputs"]}

    def producer_of(self, tensor: str) -> str | None:
        for nid, data in self.g.nodes(data=True):
            if tensor in data["outputs"]:
                return nid
        return None

    def topological_order(self) -> list[str]:
        try:
            return list(nx.topological_sort(self.g))
        except nx.NetworkXUnfeasible:  # cyclic graphs exist in broken files; keep file order
            return list(self.g.nodes)

    def params(self) -> int:
        return sum(t.elements or 0 for t in self.tensors.values() if t.is_initializer)

    def weight_bytes(self) -> int:
        return sum(t.bytes or 0 for t in self.tensors.values() if t.is_initializer)

    def top_scopes(self) -> list[str]:
        """Distinct first-level scopes, e.g. "/model" or "/encoder" when names look like "/model/layers.0/..."."""
        tops = set()
        for _, d in self.g.nodes(data=True):
            parts = [p for p in d["scope"].split("/") if p]
            if parts:
                tops.add(parts[0] if len(parts) < 2 else parts[0] + "/" + parts[1])
        return sorted(tops)

    def io_signature(self, names: list[str]) -> list[dict]:
        out = []
        for n in names:
            t = self.tensors.get(n)
            out.append({"name": n, "shape": t.shape if t else None, "dtype": t.dtype if t else None})
        return out

    # ----- serialisation (the app receives graphs parsed in a child process as JSON) ----------
    def to_dict(self) -> dict:
        nodes = []
        for nid, d in self.g.nodes(data=True):
            node = {
                "id": nid, "name": d["name"], "op_type": d["op_type"], "domain": d["domain"],
                "attrs": d["attrs"], "inputs": d["inputs"], "outputs": d["outputs"],
                "subgraphs": {k: v.to_dict() for k, v in d.get("subgraphs", {}).items()},
            }
            if d["scope"] != scope_of(d["name"]):  # a scope from metadata, not from the name
                node["scope"] = d["scope"]
            nodes.append(node)
        return {
            "format": self.format, "path": self.path, "nodes": nodes,
            "tensors": [t.to_dict() for t in self.tensors.values()],
            "inputs": self.inputs, "outputs": self.outputs, "opset": self.opset,
            "version": self.version, "producer": self.producer, "warnings": self.warnings,
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "ModelGraph":
        mg = cls(format=d["format"], path=d["path"], inputs=d["inputs"], outputs=d["outputs"],
                 opset=d.get("opset", {}), version=d.get("version"), producer=d.get("producer"),
                 warnings=d.get("warnings", []), meta=d.get("meta", {}))
        mg.tensors = {t["name"]: TensorInfo.from_dict(t) for t in d["tensors"]}
        for n in d["nodes"]:
            mg.add_op(n["id"], name=n["name"], op_type=n["op_type"], inputs=n["inputs"],
                      outputs=n["outputs"], attrs=n["attrs"], domain=n.get("domain", ""), scope=n.get("scope"),
                      subgraphs={k: cls.from_dict(v) for k, v in n.get("subgraphs", {}).items()})
        mg.connect()
        return mg


def unique_id(name: str, op_type: str, index: int, taken: set[str]) -> str:
    """A stable id: the name when it is free, else a name derived from the op type and file position."""
    base = name or f"{op_type}_{index}"
    nid = base
    k = 1
    while nid in taken:
        nid = f"{base}#{k}"
        k += 1
    taken.add(nid)
    return nid
