"""Room for tensor labels (inspector/model/labelroom.py): a label never runs into the next label, a node or a
frame on its line; checked on hand-placed cases and, against a brute-force count, on real models' scenes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mnnscope.inspector.model.labelroom import GAP, LABEL_H, MAX_ROOM, label_room

ROOT = Path(__file__).resolve().parents[1]
NO_FRAMES = np.zeros((0, 4))


def room(ax, ay, boxes=(), frames=NO_FRAMES, in_frame=None, frame_parent=None):
    ax, ay = np.asarray(ax, float), np.asarray(ay, float)
    boxes = np.asarray(boxes, float).reshape(-1, 4)
    in_frame = np.full(len(ax), -1) if in_frame is None else np.asarray(in_frame)
    return label_room(ax, ay, boxes, np.asarray(frames, float).reshape(-1, 4), in_frame, frame_parent)


def test_labels_on_one_line_stop_before_the_next_one():
    r = room([0, 60, 200], [10, 12, 10])
    assert r.tolist() == [60 - GAP, 140 - GAP, MAX_ROOM]


def test_labels_on_other_lines_do_not_limit_each_other():
    r = room([0, 60], [10, 10 + LABEL_H])  # the second starts where the first line ends
    assert r.tolist() == [MAX_ROOM, MAX_ROOM]


def test_a_node_to_the_right_limits_a_label_and_one_over_its_anchor_leaves_none():
    boxes = [[100, 5, 150, 30],    # right of the first label, on its line
             [-20, 40, 40, 80]]    # over the second label's anchor
    r = room([0, 10], [10, 50], boxes)
    assert r.tolist() == [100 - GAP, 0.0]


def test_a_node_wholly_left_of_a_label_does_not_limit_it():
    assert room([100], [10], [[0, 0, 90, 40]]).tolist() == [MAX_ROOM]


def test_a_label_stays_inside_its_frame_and_stops_at_a_frame_to_its_right():
    frames = [[-10, 0, 120, 200],   # the frame the first label is in
              [300, 0, 500, 200]]   # a frame right of the second label
    r = room([0, 150], [20, 20], frames=frames, in_frame=[0, -1])
    assert r.tolist() == [120 - GAP, 300 - 150 - GAP]


def test_a_frame_inside_the_labels_own_frame_limits_it_one_beyond_that_frame_is_its_side():
    frames = [[-10, 0, 400, 300],   # the label's frame
              [200, 10, 350, 100],  # inside it, right of the label
              [500, 0, 600, 300]]   # beside the label's frame (its side comes first)
    r = room([0], [20], frames=frames, in_frame=[0], frame_parent=[-1, 0, -1])
    assert r.tolist() == [200 - GAP]


def test_of_two_labels_at_one_x_on_overlapping_lines_the_lower_gives_way():
    r = room([0, 0], [10, 14])
    assert r.tolist() == [MAX_ROOM, 0.0]


def brute_force(ax, ay, boxes, frames, in_frame):
    out = np.full(len(ax), MAX_ROOM + GAP)
    for i in range(len(ax)):
        for j in range(len(ax)):
            if abs(ay[j] - ay[i]) < LABEL_H and (ax[j] > ax[i] or (ax[j] == ax[i] and ay[j] < ay[i])):
                out[i] = min(out[i], ax[j] - ax[i])
        for x0, y0, x1, y1 in boxes:
            if y1 > ay[i] and y0 < ay[i] + LABEL_H and x1 > ax[i]:
                out[i] = min(out[i], x0 - ax[i])
        for k, (x0, y0, x1, y1) in enumerate(frames):
            if k == in_frame[i]:
                out[i] = min(out[i], x1 - ax[i])
            elif x0 > ax[i] and y0 < ay[i] + LABEL_H and y1 > ay[i]:
                out[i] = min(out[i], x0 - ax[i])
    return np.clip(out - GAP, 0, MAX_ROOM)


def _models():
    out = [("moe_llm all", ROOT / "resources" / "samples" / "moe_llm.onnx", "all")]
    try:
        import rapidocr
        out.append(("PP-OCRv6 det", Path(rapidocr.__file__).parent / "models" / "PP-OCRv6_det_small.onnx", "default"))
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("name,path,how", _models(), ids=[m[0] for m in _models()])
def test_rooms_of_a_real_scene_match_a_brute_force_count(name, path, how):
    # the scene's labels as the window builds them (gui/scene.py, which imports no Qt): the windowed search
    # for what is on a label's line must find what checking every label, node and frame finds
    from mnnscope.gui.scene import build_scene
    from mnnscope.inspector.formats.loadproc import GraphTable
    from mnnscope.inspector.formats.onnx import load_onnx
    from mnnscope.inspector.model.layout import estimate_sizes, layout_visible
    from mnnscope.inspector.model.scopes import ScopeTree, visible_graph
    tree = ScopeTree(GraphTable.from_graph(load_onnx(path)))
    vg = visible_graph(tree, set(range(tree.n_scopes)) if how == "all" else tree.default_expanded())
    w, h = estimate_sizes(vg)
    sc = build_scene(vg, layout_visible(vg, w, h))
    # where each label starts right of its edges (4 right of where they leave): one moved left of them ends 8
    # units further left, one moved past an edge heading right starts `shift` further right, its room as much less
    lay = sc.layout
    anchor = np.stack([lay.edge_pts[lay.edge_ptr[:-1], 0] + 4.0, sc.edge_label_at[:, 1]], axis=1)
    places, first = np.unique(anchor, axis=0, return_index=True)
    left = sc.edge_label_left[first]
    shift = np.where(left, 0.0, sc.edge_label_at[first, 0] - places[:, 0])
    assert (shift >= -1e-9).all() and (shift > 0).any()
    fidx = np.full(tree.n_scopes, -1, np.int64)
    fidx[vg.frames] = np.arange(len(vg.frames))
    in_frame = fidx[vg.parent_of_leaf[sc.leaf_of_item[vg.edge_src[first]]]]
    assert len(vg.frames) or how != "all"
    boxes = np.stack([sc.x0, sc.y0, sc.x1, sc.y1], axis=1)
    want = brute_force(places[:, 0], places[:, 1], boxes, sc.frame_box, in_frame)
    got = sc.edge_label_room[first]
    assert len(places) > 20
    assert np.allclose(got[~left] + shift[~left], want[~left])
    # and the labels on one line never reach the next one's anchor
    right = np.flatnonzero(~left)
    for i in right.tolist():
        same_line = (np.abs(places[:, 1] - places[i, 1]) < LABEL_H) & (places[:, 0] > places[i, 0])
        if same_line.any():
            assert places[i, 0] + shift[i] + got[i] <= places[same_line, 0].min() - GAP + 1e-9
    # a label moved left of its edges: its stretch [end - room, end] meets no node, no label kept on the right
    # (as far as its room reaches) and stays inside its frame
    for i in np.flatnonzero(left).tolist():
        end, y = places[i, 0] - 8.0, places[i, 1]
        a = end - got[i]
        on_line = (boxes[:, 1] < y + LABEL_H) & (boxes[:, 3] > y)
        assert not (on_line & (boxes[:, 0] < end) & (boxes[:, 2] > a)).any()
        kept = right[np.abs(places[right, 1] - y) < LABEL_H]
        ends = places[kept, 0] + shift[kept] + got[kept]
        assert not ((places[kept, 0] < end) & (ends > a)).any()
        if in_frame[i] >= 0:
            assert a >= sc.frame_box[in_frame[i], 0] - 1e-9


def test_free_spot_finds_the_first_stretch_wide_enough():
    from mnnscope.inspector.model.labelroom import free_spot
    blocked = [(20.0, 30.0), (50.0, 60.0)]
    assert free_spot(0.0, 100.0, blocked, 15.0) == 0.0
    assert free_spot(0.0, 100.0, blocked, 10.0) == 0.0
    assert free_spot(0.0, 100.0, blocked, 21.0) == 60.0          # 0-20 and 30-50 are too short
    assert free_spot(0.0, 100.0, blocked, 35.0) == 60.0
    assert free_spot(0.0, 100.0, blocked, 45.0) is None
    assert free_spot(0.0, 100.0, blocked, 15.0, from_right=True) == 85.0


def test_header_blocks_are_where_edges_enter_a_frame_and_run_down():
    from mnnscope.inspector.model.labelroom import header_blocks
    frames = np.array([[0.0, 100.0, 200.0, 300.0], [300.0, 100.0, 400.0, 300.0]])
    # edge 0 enters frame 0 at x=50 and runs down-right to x=110 over 56 units: 30 of it in the 28-unit bar;
    # edge 1 passes frame 0's top at y=100 but outside it (x=250, in frame 1); edge 2 ends on the border
    ptr = np.array([0, 3, 5, 7])
    pts = np.array([[50.0, 40.0], [50.0, 100.0], [110.0, 156.0],
                    [250.0, 100.0], [250.0, 200.0],
                    [150.0, 20.0], [150.0, 100.0]])
    got = header_blocks(frames, ptr, pts, head=28.0, pad=4.0)
    assert got[0] == [(46.0, 84.0)]
    assert got[1] == []  # x=250 lies in neither frame
    # an edge that crosses frame 1's bar diagonally without entering at its top (an edge routed across a frame)
    ptr2 = np.array([0, 2])
    pts2 = np.array([[280.0, 86.0], [420.0, 142.0]])  # y 100..128 at x 315..385
    assert header_blocks(frames, ptr2, pts2, head=28.0, pad=4.0)[1] == [(311.0, 389.0)]
