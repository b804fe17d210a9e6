"""Side by side: selecting an op in one model highlights its counterparts in the other.

The map comes from inspector/model/nodemap.py (computed in a child process from both files); until it arrives, or
if it cannot be built, ops are linked through tensor names: MNN names its ops and tensors after the ONNX
output tensors they compute, so an MNN op whose name or outputs are ONNX tensors belongs to their
producers.
"""
from __future__ import annotations

from collections import defaultdict

from mnnscope.inspector.formats.loadproc import GraphTable, load_node_map

from mnnscope.gui.tasks import TaskSlot


def tensor_links(a: GraphTable, b: GraphTable) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Op links a -> b and b -> a through shared tensor names (b's op names count as tensor names)."""
    a_to_b: dict[int, list[int]] = defaultdict(list)
    b_to_a: dict[int, list[int]] = defaultdict(list)
    for j in range(b.node_count):
        names = [b.tensor_names[t] for t in b.node_outputs(j) if t >= 0] + [b.names[j]]
        for name in names:
            t = a.tensor_index(name) if name else None
            p = int(a.producer[t]) if t is not None else -1
            if p >= 0:
                if p not in b_to_a[j]:
                    b_to_a[j].append(p)
                if j not in a_to_b[p]:
                    a_to_b[p].append(j)
    return dict(a_to_b), dict(b_to_a)


def map_links(nm: dict, onnx: GraphTable, mnn: GraphTable) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Op links from NodeMap JSON (keys are node ids / op names)."""
    o_to_m: dict[int, list[int]] = {}
    m_to_o: dict[int, list[int]] = {}
    for nid, entry in nm.get("onnx_to_mnn", {}).items():
        i = onnx.index_of(nid)
        ops = [mnn.index_of(m) for m in entry.get("mnn_ops", [])]
        ops = [j for j in ops if j is not None]
        if i is not None and ops:
            o_to_m[i] = ops
    for name, nids in nm.get("mnn_to_onnx", {}).items():
        j = mnn.index_of(name)
        found = [onnx.index_of(n) for n in nids]
        found = [i for i in found if i is not None]
        if j is not None and found:
            m_to_o[j] = found
    return o_to_m, m_to_o


class Linker:
    """Links the main views of two panes; `follow(view)` mirrors that view's selection in the other."""

    def __init__(self, left, right):
        self.left, self.right = left, right
        a, b = left.table, right.table
        self.links = {}
        self.source = "tensor names"
        self._set(*tensor_links(a, b))
        self._map_task = TaskSlot(left)
        self._following = False
        if {a.format, b.format} == {"onnx", "mnn"}:
            onnx, mnn = (a, b) if a.format == "onnx" else (b, a)

            def run(cancelled=None):
                return load_node_map(onnx.path, mnn.path, job_sink=lambda job: cancelled.set_hook(job.cancel))

            self._map_task.start(run, on_done=lambda nm: self._use_map(nm, onnx, mnn), on_fail=lambda m: None,
                                 name="nodemap")

    def _set(self, a_to_b, b_to_a) -> None:
        self.links = {id(self.left.main_view): (self.right.main_view, a_to_b),
                      id(self.right.main_view): (self.left.main_view, b_to_a)}

    def _use_map(self, nm: dict, onnx, mnn) -> None:
        o_to_m, m_to_o = map_links(nm, onnx, mnn)
        if not o_to_m:
            return
        if self.left.table is onnx:
            self._set(o_to_m, m_to_o)
        else:
            self._set(m_to_o, o_to_m)
        self.source = "node map"
        self.node_map = nm

    def counterparts(self, view, item: int) -> list[int]:
        entry = self.links.get(id(view))
        if entry is None or item < 0 or item >= view.table.node_count:
            return []
        return list(entry[1].get(item, []))

    def follow(self, view) -> None:
        if self._following:
            return
        entry = self.links.get(id(view))
        if entry is None:
            return
        other, _ = entry
        found = self.counterparts(view, view.canvas.selected)
        self._following = True
        try:
            other.canvas.set_marked(found)
            if found:
                other.reveal(found[0], select=False)
                other.canvas.selected = found[0]
                other.canvas.update()
        finally:
            self._following = False
