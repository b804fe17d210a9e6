"""Side by side: selecting an op in one model highlights its counterparts in the other.

A pair is linked only when it is a model and its own conversion, and the node map (inspector/model/nodemap.py,
computed in a child process from both files) is the proof: until it arrives the pair is "checking", and when
it cannot be built, or matches too little of either graph, the pair is "not linked" and nothing is ever
highlighted. There is no fallback to matching names: unrelated models share names (`input`, `Conv_0`, ...),
and a highlight on the wrong op is worse than none.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal

from mnnscope.inspector.formats.loadproc import GraphTable, load_node_map

from mnnscope.gui.tasks import TaskSlot

CHECKING, LINKED, NOT_LINKED = "checking", "linked", "not linked"
# In a conversion most ONNX nodes survive in some MNN op (kept, renamed or fused; the samples: all of them);
# in an unrelated pair none or a stray few do.
MIN_MATCHED = 0.5


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


def _fixed_shape(table: GraphTable, name: str) -> tuple | None:
    i = table.tensor_index(name)
    shape = table.shapes[i] if i is not None and i < len(table.shapes) else None
    if not shape or not all(isinstance(d, int) and d > 0 for d in shape):
        return None
    return tuple(shape)


def input_mismatch(onnx: GraphTable, mnn: GraphTable) -> str:
    """A graph input both files fix to different sizes ('' when none): models built alike (same op names)
    are still different models when their inputs differ."""
    for name in onnx.inputs:
        if name in mnn.inputs:
            a, b = _fixed_shape(onnx, name), _fixed_shape(mnn, name)
            if a and b and a != b:
                return (f"input '{name}' is {'x'.join(map(str, a))} in one and {'x'.join(map(str, b))} "
                        "in the other")
    return ""


def proves_pair(nm: dict, onnx: GraphTable, mnn: GraphTable) -> tuple[bool, str]:
    """(is `mnn` a conversion of `onnx`?, why not): the same fixed input sizes, and most ONNX nodes must live
    on in MNN ops."""
    differ = input_mismatch(onnx, mnn)
    if differ:
        return False, differ
    o_to_m, m_to_o = map_links(nm, onnx, mnn)
    if not o_to_m or not m_to_o:
        return False, "the node map matches none of their ops"
    share = len(o_to_m) / max(1, onnx.node_count)
    if share < MIN_MATCHED:
        return False, f"the node map finds only {len(o_to_m)} of its {onnx.node_count} ONNX nodes in it"
    return True, ""


class Linker(QObject):
    """Links the main views of two panes; `follow(view)` mirrors that view's selection in the other.
    `state` is CHECKING, LINKED or NOT_LINKED (`reason` says why); only LINKED ever highlights."""

    state_changed = Signal(str)
    # (view, item) selected with nothing linked to it in the other model (-1: a selection with counterparts again)
    unmatched = Signal(object, int)

    def __init__(self, left, right, parent=None):
        super().__init__(parent)
        self.left, self.right = left, right
        a, b = left.table, right.table
        self.links: dict = {}
        self.source = "node map"
        self.node_map: dict | None = None
        self.state, self.reason = CHECKING, ""
        self._map_task = TaskSlot(self)
        self._following = False
        self._shown: list[tuple] = []  # (view, items marked, item selected) that follows put there
        if {a.format, b.format} != {"onnx", "mnn"}:
            self._set_state(NOT_LINKED, f"{self._names()} are not an ONNX model and its .mnn conversion")
            return
        onnx, mnn = (a, b) if a.format == "onnx" else (b, a)

        def run(cancelled=None):
            return load_node_map(onnx.path, mnn.path, job_sink=lambda job: cancelled.set_hook(job.cancel))

        self._map_task.start(run, on_done=lambda nm: self._use_map(nm, onnx, mnn),
                             on_fail=lambda m: self._set_state(NOT_LINKED, f"no node map: {m}"), name="nodemap")

    def _names(self) -> str:
        return f"{Path(self.left.table.path).name} and {Path(self.right.table.path).name}"

    def _set_state(self, state: str, reason: str = "") -> None:
        self.state, self.reason = state, reason
        self.state_changed.emit(state)

    def _use_map(self, nm: dict, onnx, mnn) -> None:
        ok, why = proves_pair(nm, onnx, mnn)
        if not ok:
            self._set_state(NOT_LINKED, f"{Path(mnn.path).name} is not a conversion of {Path(onnx.path).name}: {why}")
            return
        o_to_m, m_to_o = map_links(nm, onnx, mnn)
        a_to_b, b_to_a = (o_to_m, m_to_o) if self.left.table is onnx else (m_to_o, o_to_m)
        self.links = {id(self.left.main_view): (self.right.main_view, a_to_b),
                      id(self.right.main_view): (self.left.main_view, b_to_a)}
        self.node_map = nm
        self._set_state(LINKED)
        for v in (self.left.main_view, self.right.main_view):  # a selection made while checking
            if v.canvas.selected >= 0:
                self.follow(v)
                break

    def counterparts(self, view, item: int) -> list[int]:
        """The other pane's ops linked to `item`: an op's, or for a scope (a collapsed box, a frame) those of every op
        inside it (a new user selected a collapsed MNN block and the ONNX pane kept their earlier pick outlined,
        which read as its counterpart)."""
        entry = self.links.get(id(view)) if self.state == LINKED else None
        if entry is None or view.table is None or item < 0:
            return []
        n = view.table.node_count
        if item < n:
            return list(entry[1].get(item, []))
        tree = getattr(view, "tree", None)
        s = item - n
        if tree is None or s >= tree.n_scopes:
            return []
        return sorted({o for i in tree.ops_under(s).tolist() for o in entry[1].get(i, [])})

    def other_view(self, view):
        if view is self.left.main_view:
            return self.right.main_view
        if view is self.right.main_view:
            return self.left.main_view
        return None

    def clear(self, acting=None) -> None:
        """Take back what earlier follows highlighted (only what is still as they left it). In `acting`, the view
        the user now selects in, a highlight they picked an op of stays (one of a fused group's ops)."""
        kept = []
        for view, marked, selected in self._shown:
            try:
                c = view.canvas
            except RuntimeError:  # the pane is gone
                continue
            if view is acting and c.selected in marked:
                kept.append((view, marked, -1))
                continue
            if c.marked.tolist() == marked:
                c.set_marked([])
            if view is not acting and selected >= 0 and c.selected == selected:
                c.set_selected(-1)
        self._shown = kept

    def follow(self, view) -> None:
        if self._following:
            return
        other = self.other_view(view)
        if other is None:
            return
        self._following = True
        try:
            self.clear(acting=view)  # the old counterpart goes, whichever pane it was in
            item = view.canvas.selected
            found = self.counterparts(view, item)
            if not found:
                if self.state == LINKED and item >= (view.table.node_count if view.table is not None else 0):
                    # a scope with no linked op inside: the other pane's earlier pick is no counterpart either
                    other.canvas.set_marked([])
                    other.canvas.set_selected(-1)
                    return
                if self.state == LINKED and 0 <= item < (view.table.node_count if view.table is not None else 0):
                    # an op the conversion removed or folded away: what the other pane shows selected (the user's own
                    # earlier pick) is not its counterpart, and goes (a new-user try read ONNX Identity.1 beside MNN's
                    # "Convolution Add.1", both outlined, as a pair)
                    other.canvas.set_marked([])
                    other.canvas.set_selected(-1)
                    self.unmatched.emit(view, item)
                return
            self.unmatched.emit(view, -1)
            other.canvas.set_marked(found)
            other.reveal(found[0], select=False)
            other.canvas.set_selected(found[0])
            self._shown.append((other, sorted(found), found[0]))
        finally:
            self._following = False

    def shutdown(self) -> None:
        self._map_task.shutdown()
