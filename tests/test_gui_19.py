"""Issue 19, what a first-time user tripped over: graph inputs and outputs drawn as nodes, same-titled ops told
apart, fit on a tall graph, a multi-selection and a body tab in Properties and the status bar, the convert
dialog's default button, a garbage .onnx's message, image exports without the +/- glyphs."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")
from PySide6.QtCore import QRectF, Qt, QUrl  # noqa: E402
from PySide6.QtGui import QColor, QImage  # noqa: E402
from PySide6.QtWidgets import QTextBrowser  # noqa: E402

from mnnscope.gui.panels.properties import describe  # noqa: E402
from mnnscope.gui.theme import CATEGORIES  # noqa: E402

from test_gui import make_window, open_and_wait, relaid, settings_dir, window  # noqa: E402,F401

pytestmark = pytest.mark.gui


def opened(qtbot, window, path, dog):
    """Open a model with the watchdog paused: the end of a load under a loaded 2-core machine (the loader's
    result crossing threads) is not what these tests measure; what the user does next is."""
    dog.pause()
    view = open_and_wait(qtbot, window, path, shapes=False)
    qtbot.wait(300)
    dog.resume()
    return view


def io_items(view) -> tuple[list[int], list[int]]:
    """(input node items, output node items) drawn in a view."""
    tree, vg = view.tree, view.scene.vg
    base = tree.n_ops + tree.n_real_scopes
    ins = [base + k for k in range(len(tree.io_tensor)) if tree.io_input[k]]
    outs = [base + k for k in range(len(tree.io_tensor)) if not tree.io_input[k]]
    assert set(ins + outs) <= set(vg.leaves.tolist())
    return ins, outs


@pytest.mark.parametrize("name", ["cnn.onnx", "cnn.mnn"])
def test_graph_inputs_and_outputs_are_nodes_wired_to_their_ops(qtbot, window, samples, ui_watchdog, name):
    view = opened(qtbot, window, samples / name, ui_watchdog)
    t, tree, sc = view.table, view.tree, view.scene
    ins, outs = io_items(view)
    assert [tree.label[i - tree.n_ops] for i in ins] == t.inputs and [tree.label[i - tree.n_ops] for i in outs] == t.outputs
    vg = sc.vg
    (x,), (y,) = ins, outs
    first = vg.edge_dst[vg.edge_src == x].tolist()
    assert first and all(d < tree.n_ops or not vg.is_io(d) for d in first)  # the input feeds ops (or boxes of them)
    assert len(vg.edge_src[vg.edge_dst == y]) == 1                           # the output is fed by its producer
    lf_in, lf_out = int(sc.leaf_of_item[x]), int(sc.leaf_of_item[y])
    ops = ~sc.is_io
    assert sc.is_io[lf_in] and sc.y1[lf_in] <= sc.y0[ops].min() and sc.y0[lf_out] >= sc.y1[ops].max()  # top, bottom
    # not ops: the status bar's count is the ops' alone, search and linking see ops only
    hidden = int(tree.hidden.sum())
    assert f"{t.node_count - hidden:,} ops" in window.model_label.text()
    assert vg.is_io(x) and not vg.is_scope(x)
    # Properties: name, shape, dtype and the consumers, which link to the ops
    view.select(x)
    props = window.properties
    assert props.title.text() == "<b>Graph input</b>"
    text = props.text()
    readers = describe(t, tree, x)["consumers"]
    assert t.inputs[0] in text and "1\u00d73\u00d732\u00d732" in text and "float32" in text
    assert readers and f"Consumers ({len(readers)})" in text
    with qtbot.waitSignal(props.navigate_to) as nav:
        props._link(QUrl(props.browser.toHtml().split("href=\"")[1].split("\"")[0]))
    assert nav.args[0] == readers[0] and t.op_types[nav.args[0]] in ("Conv", "ConvertTensor")
    view.select(y)
    assert props.title.text() == "<b>Graph output</b>" and "Producer" in props.text()
    assert "graph output" in view.canvas.describe(y)
    # double click / Enter on an I/O node opens nothing, the context menu offers no Expand
    view.activate(x)
    assert not view.layout_busy
    offered = [a.text() for a in view.context_menu(x).actions() if a.text()]
    assert offered == ["Copy Name", "Show in Other Pane (no other pane open)"]
    ui_watchdog.check()  # what the test did; the window's close at teardown is not its work


def test_subgraph_tabs_show_their_inputs_outputs_and_describe_themselves(qtbot, window, samples, ui_watchdog):
    view = opened(qtbot, window, samples / "control_flow.onnx", ui_watchdog)
    main_text = window.model_label.text()
    loop = view.table.op_types.index("Loop")
    (body,) = window.pane.open_bodies(view, loop)
    qtbot.waitUntil(lambda: body.scene is not None and not body.layout_busy, timeout=30000)
    ins, outs = io_items(body)
    assert len(ins) == 3 and len(outs) == 2  # iter, cond_in, acc_in -> cond_out, acc_out
    status = window.model_label.text()
    assert status != main_text and "\u25b8 body" in status and f"{body.table.node_count} ops" in status
    props = window.properties
    qtbot.waitUntil(lambda: props.summary is not None, timeout=10000)
    assert props.title.text() == "<b>Subgraph</b>" and "body" in props.text()
    assert props.summary["ops"] == body.table.node_count
    # what each input of a Loop's body is (a new-user try read only "Graph input" on iter, cond_in and acc_in)
    t = body.table
    roles = {}
    for x in ins + outs:
        body.select(x)
        roles[body.tree.label[x - t.node_count]] = props.text()
    assert "body input 1: the iteration number" in roles["iter"]
    assert "body input 2: the condition the iteration starts with: the Loop's input 2" in roles["cond_in"]
    assert "body input 3: loop-carried value 1 of 1: the Loop's input 3 (/If_output_0) on the first iteration" \
        in roles["acc_in"]
    assert "body output 1: the condition for the next iteration" in roles["cond_out"]
    assert "body output 2: loop-carried value 1 of 1" in roles["acc_out"]
    # the numbers refer to the Loop op's own, which its Properties give (a second try found them shown nowhere)
    window.pane.tabs.setCurrentIndex(0)
    view.select(loop)
    text = props.text()
    assert "input 1: the trip count" in text and "input 2: the starting condition" in text
    assert "input 3: the first value of loop-carried value 1" in text and "output 1: loop-carried value 1" in text
    view.select(-1)
    window.pane.tabs.setCurrentWidget(body)
    body.select(-1)  # the body's summary gives the roles too
    qtbot.waitUntil(lambda: props.summary is not None and props.title.text() == "<b>Subgraph</b>", timeout=10000)
    qtbot.waitUntil(lambda: "body input 1: the iteration number" in props.text(), timeout=10000)
    cast = t.op_types.index("Cast")
    body.select(cast)
    assert "1 (float32)" in props.text() and "op type" in props.text()  # Cast's "to" named, not only "1"
    body.select(-1)
    window.pane.tabs.setCurrentWidget(body)
    window.pane.tabs.setCurrentIndex(0)  # back to the main graph: the model again
    assert window.model_label.text() == main_text and props.title.text() == "<b>Model</b>"
    ui_watchdog.check()  # what the test did; the window's close at teardown is not its work


def test_an_if_branch_draws_the_value_it_reads_from_the_enclosing_graph(qtbot, window, samples, ui_watchdog):
    """A new-user try (2026-12-04): the If branches of control_flow.onnx multiply the outer graph's `x`, read by name;
    the body tab drew their Mul with no edge into it. The value is drawn as an input node of the body, with its
    edge, and says where it comes from."""
    view = opened(qtbot, window, samples / "control_flow.onnx", ui_watchdog)
    node = view.table.op_types.index("If")
    bodies = window.pane.open_bodies(view, node)
    assert len(bodies) == 2
    for body in bodies:
        qtbot.waitUntil(lambda body=body: body.scene is not None and not body.layout_busy, timeout=30000)
        ins, outs = io_items(body)
        assert len(ins) == 1 and len(outs) == 1, (ins, outs)
        (x,) = ins
        vg, t = body.scene.vg, body.table
        assert body.tree.label[x - vg.n_ops] == "x"
        readers = [int(d) for s_, d in zip(vg.edge_src.tolist(), vg.edge_dst.tolist()) if s_ == x]
        assert readers and all("x" in [t.tensor_names[i] for i in t.node_inputs(r)] for r in readers), readers
        window.pane.tabs.setCurrentWidget(body)
        body.select(x)
        props = window.properties
        assert props.title.text() == "<b>Outer-scope input</b>", props.title.text()
        assert "Consumers (1)" in props.text() and "outer-scope input" in body.canvas.describe(x)
        (reader,) = readers
        body.select(reader)
        assert "outer-scope input" in props.text()  # where its input comes from
        body.select(-1)  # the body's summary lists it (it said "Inputs: none" while x was drawn)
        qtbot.waitUntil(lambda: props.summary is not None and bool(props.summary.get("outer_inputs")), timeout=10000)
        assert [i["name"] for i in props.summary["outer_inputs"]] == ["x"] and "Outer-scope inputs" in props.text()
        (out,) = outs  # a branch's output: what it becomes
        body.select(out)
        when = "true" if "then" in body.table.outputs[0] else "false"
        assert f"becomes the If's output 1 (/If_output_0) when its condition is {when}" in props.text(), props.text()
    # the main graph's own input is still a graph input
    window.pane.tabs.setCurrentIndex(0)
    (x0,) = [i for i in io_items(view)[0]]
    view.select(x0)
    assert window.properties.title.text() == "<b>Graph input</b>"
    ui_watchdog.check()


def test_select_all_matches_lists_them_in_properties(qtbot, window, samples, ui_watchdog):
    view = opened(qtbot, window, samples / "encoder_block.onnx", ui_watchdog)
    bar = view.search_bar
    view.show_search()
    bar.edit.setText("MatMul")
    qtbot.waitUntil(lambda: len(bar.matches) > 2, timeout=5000)
    bar.select_all()
    qtbot.waitUntil(lambda: not view.layout_busy, timeout=30000)
    props = window.properties
    n = len(bar.matches)
    assert props.title.text() == f"<b>{n:,} ops selected</b>" and props.many["op_types"] == {"MatMul": n}
    names = [view.table.names[i] for i in bar.matches.tolist()]
    assert all(nm in props.text() for nm in names)
    with qtbot.waitSignal(props.navigate_to) as nav:
        props._link(QUrl(f"node:{int(bar.matches[1])}"))
    assert nav.args[0] == int(bar.matches[1])
    view.select(int(bar.matches[0]))  # one click: one op again
    assert props.title.text() == "<b>MatMul</b>"
    ui_watchdog.check()  # what the test did; the window's close at teardown is not its work


def test_same_titled_ops_show_a_short_distinguishing_name(qtbot, window, samples, ui_watchdog):
    view = opened(qtbot, window, samples / "moe_llm.onnx", ui_watchdog)
    t, tree = view.table, view.tree
    expert = tree.index["/model/layers.0/mlp/experts.0"]
    mm = [i for i in range(t.node_count) if t.op_types[i] == "MatMul" and tree.node_parent[i] == expert]
    relaid(qtbot, view, lambda: view.reveal(mm[0]))
    sc = view.scene
    # three MatMul boxes in one frame say which projection each is (not the frame's path again, nor "MatMul")
    assert sorted(sc.short[i] for i in mm) == ["down_proj", "gate_proj", "up_proj"]
    assert sc.short[t.ids.index("/model/layers.0/self_attn/q_proj/MatMul")] == "q_proj"
    assert sc.short[t.ids.index("/model/layers.0/mlp/experts.0/Mul_1")] == "Mul_1"
    assert sc.short[t.ids.index("/model/layers.0/mlp/experts.0/Mul")] == ""  # the title says it all
    # drawn under the title when zoomed in enough
    c = view.canvas
    lf = int(sc.leaf_of_item[mm[0]])
    c.center_on((sc.x0[lf] + sc.x1[lf]) / 2, (sc.y0[lf] + sc.y1[lf]) / 2, scale=1.2)
    img = c.grab().toImage()
    s = c.scale
    row = int((sc.y0[lf] + 23) * s + c.ty)  # the short name's line
    x0, x1 = int(sc.x0[lf] * s + c.tx) + 4, int(sc.x1[lf] * s + c.tx) - 4
    fill = QColor(view.pal.categories["layer"]).rgb() & 0xFFFFFF
    assert sum((img.pixel(x, row) & 0xFFFFFF) != fill for x in range(x0, x1)) > 3
    ui_watchdog.check()  # what the test did; the window's close at teardown is not its work
    # zoomed in further, the name under the title leaves out the frame's path and never just repeats the title
    # (tryout 16: "MatMul" under MatMul in the query frame)
    assert {c.detail_name(sc, i) for i in mm} == {"down_proj/MatMul", "gate_proj/MatMul", "up_proj/MatMul"}
    view = opened(qtbot, window, samples / "encoder_block.onnx", ui_watchdog)
    t, tree = view.table, view.tree
    qkv = [t.ids.index(f"/encoder/layer.0/attention/self/{k}/MatMul") for k in ("query", "key", "value")]
    for scope in {int(tree.node_parent[i]) for i in qkv} - set(view.expanded):  # (open at first on a graph this size)
        relaid(qtbot, view, lambda scope=scope: view.expand(scope))
    assert all(view.scene.vg.rep[i] == i for i in qkv)  # each drawn in its own frame
    assert [view.canvas.detail_name(view.scene, i) for i in qkv] == ["", "", ""]  # the frames say query/key/value
    scores = t.ids.index("/encoder/layer.0/attention/self/MatMul_1")
    assert view.canvas.detail_name(view.scene, scores) == "MatMul_1"


def test_fit_on_a_tall_graph_fills_the_width_from_the_top(qtbot, window, samples, ui_watchdog):
    from mnnscope.gui.canvas import READABLE_SCALE, TITLE_SCALE
    view = opened(qtbot, window, samples / "moe_llm.mnn", ui_watchdog)
    c = view.canvas
    x0, y0, x1, y1 = view.scene.bounds
    # a window where the whole graph would just fit at a small zoom, with two thirds of the width empty
    want = int(0.55 * (y1 - y0) + 48)
    window.resize(1500, window.height() + want - c.height())
    qtbot.waitUntil(lambda: abs(c.height() - want) < 4)
    s_all = min((c.width() - 48) / (x1 - x0), (c.height() - 48) / (y1 - y0))
    assert TITLE_SCALE <= s_all < READABLE_SCALE and (x1 - x0) * s_all < c.width() / 2
    view.fit()
    vx0, vy0, vx1, vy1 = c.view_rect()
    assert (y1 - y0) * c.scale > c.height()  # no longer all of it ...
    assert vx0 <= x0 and vx1 >= x1  # its whole width ...
    assert (x1 - x0) * c.scale > 0.5 * c.width() or c.scale == 1.0  # ... filling the view, not a third of it
    assert c.scale * 12 >= 9  # titles at a readable size
    ins, _ = io_items(view)
    lf = int(view.scene.leaf_of_item[ins[0]])
    assert vy0 <= view.scene.y0[lf] < vy1  # it starts at the top: the inputs
    ui_watchdog.check()  # what the test did; the window's close at teardown is not its work


def test_image_exports_leave_out_the_expand_glyphs(qtbot, window, samples, tmp_path, ui_watchdog):
    from mnnscope.gui.canvas import GLYPH
    from mnnscope.gui.export import MARGIN, export_image
    view = opened(qtbot, window, samples / "moe_llm.onnx", ui_watchdog)
    relaid(qtbot, view, view.collapse_all)
    sc = view.scene
    boxes = np.flatnonzero(sc.is_box)
    assert len(boxes)
    r = export_image(view, str(tmp_path / "g.png"), whole=True)
    assert r["scale"] == 1.0
    img = QImage(r["path"])
    bx0, by0 = sc.bounds[0] - MARGIN, sc.bounds[1] - MARGIN
    fill = QColor(view.pal.categories["scope"]).rgb() & 0xFFFFFF
    for lf in boxes.tolist():
        gx, gy = sc.x1[lf] - GLYPH - 6 - bx0, sc.y0[lf] + 6 - by0
        centre = img.pixel(int(gx + GLYPH / 2), int(gy + GLYPH / 2)) & 0xFFFFFF
        assert centre == fill, "the +/- glyph was drawn into the export"
    assert view.canvas.draw_glyphs  # the screen keeps them
    ui_watchdog.check()  # what the test did; the window's close at teardown is not its work


def test_a_garbage_onnx_is_named_and_called_not_a_valid_model(qtbot, window, tmp_path, ui_watchdog):
    bad = tmp_path / "garbage.onnx"
    bad.write_bytes(b"\x08\x07\x12\x04oops" * 10 + bytes(range(256)))
    with qtbot.waitSignal(window.load_failed, timeout=60000) as blocker:
        window.open_model(str(bad))
    msg = blocker.args[0]
    assert "garbage.onnx" in msg and "not a valid ONNX model" in msg
    assert "ModelProto" not in msg and "Wire format" not in msg and "\n" not in msg
    ui_watchdog.check()  # what the test did; the window's close at teardown is not its work


def test_tensor_labels_on_one_line_are_cut_before_they_run_into_each_other(qtbot, window, tmp_path, ui_watchdog):
    # two ops side by side make tensors whose shapes have long symbolic dimension names: each label written
    # whole would run over the other's (and over the node beside it); cut to its room it ends before them
    import onnx
    from onnx import TensorProto, helper
    from PySide6.QtGui import QFontMetricsF
    dims = ["batch_size_of_the_request", "sequence_length_after_padding", 64]
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["a"], name="relu"), helper.make_node("Sigmoid", ["x"], ["b"], name="sig"),
         helper.make_node("Tanh", ["x"], ["c"], name="tanh"), helper.make_node("Sum", ["a", "b", "c"], ["y"], name="sum")],
        "side", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)])
    path = tmp_path / "side.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    ui_watchdog.pause()
    view = open_and_wait(qtbot, window, path)  # with the runner's shapes
    ui_watchdog.resume()
    sc, canvas = view.scene, view.canvas
    canvas.dim_values = {}  # long names written out (at the Inputs dock's sizes they read as their numbers)
    fm = QFontMetricsF(canvas.font_edge)
    drawn = [(x, y, w, whole) for _, _, x, y, w, whole in canvas.placed_labels(np.arange(len(sc.vg.edge_src)))]
    lines = [d for d in drawn if "batch_size" in d[3]]
    assert len(lines) >= 3
    assert any(fm.horizontalAdvance(d[3]) > d[2] for d in lines)  # some were cut ...
    for i, (x, y, wd, _) in enumerate(drawn):                     # ... and none reaches another on its line
        for x2, y2, wd2, _ in drawn[i + 1:]:
            if abs(y2 - y) < 10:
                assert x + wd <= x2 or x2 + wd2 <= x
    # nor a node's box
    for x, y, wd, _ in drawn:
        over = (sc.x0 < x + wd) & (sc.x1 > x) & (sc.y0 < y + 10) & (sc.y1 > y)
        assert not over.any()
    # hovering a cut label tells the whole shape
    from PySide6.QtCore import QPointF
    x, y, wd, whole = next(d for d in lines if fm.horizontalAdvance(d[3]) > d[2])
    canvas.set_view(1.0, canvas.tx, canvas.ty)
    at = QPointF(x * canvas.scale + canvas.tx + wd / 2, (y + 5) * canvas.scale + canvas.ty)
    tip = canvas.label_text_at(at)  # the tensor by name, its whole shape and its type
    assert whole in tip and tip.split(":")[0] in {"a", "b", "c"} and tip.endswith(" \u00b7 float32"), tip
    empty = QPointF((sc.bounds[2] + 450) * canvas.scale + canvas.tx, at.y())  # right of every label's room
    assert canvas.label_text_at(empty) == ""


def test_a_dimension_that_is_an_expression_reads_as_one_and_a_cut_label_keeps_the_numbers():
    # ONNX Runtime's symbolic shapes: "DynamicDimension.0x24xfloor(DynamicDimension.1/2 - 1/2) + 1x..." read as
    # a sum; bracketed, each dimension is one. A label cut short keeps numbers and short names, not the start
    # of the first long symbol
    from mnnscope.gui.canvas import fmt_shape
    assert fmt_shape(["N", 24, "floor(H/2 - 1/2) + 1", "H*W + 1"]) == "N\u00d724\u00d7ceil(H/2)\u00d7(H*W + 1)"
    assert fmt_shape(["DynamicDimension.0", 24, "floor(x) + 1", 7], compact=True) == "?\u00d724\u00d7?\u00d77"
    assert fmt_shape(["batch", "seq", 256], compact=True) == "batch\u00d7seq\u00d7256"
    assert fmt_shape([1, -1, None]) == "1\u00d7?\u00d7?"
    # at the sizes the inputs run at, long names and expressions are their numbers, short names stay names
    at = {"DynamicDimension.0": 1, "DynamicDimension.1": 64, "batch": 2}
    assert fmt_shape(["DynamicDimension.0", 48, "floor(DynamicDimension.1/2 - 1/2) + 1"], values=at) == \
        "1\u00d748\u00d732"
    assert fmt_shape(["batch", "seq", 256], values=at) == "batch\u00d7seq\u00d7256"
    assert fmt_shape(["DynamicDimension.0", "floor(q) + 1"], compact=True, values=at) == "1\u00d7?"
    # a size inference made up a name for (it could not compute it) reads as unknown, not as 24 characters
    assert fmt_shape(["ConvTranspose_453_o0__d0", 24, "unk__7"], values=at) == "?\u00d724\u00d7?"
    assert fmt_shape(["ConvTranspose_453_o0__d0", 24, "unk__7"]) == "?\u00d724\u00d7?"  # without sizes too
    # and the PyTorch exporter's, op type then output name (the romanizer decoder's hidden_out: helper 111); a model's
    # own names with "_dim_" in them stay
    assert fmt_shape(["batch", 2, "Concathidden_out_dim_2"], values=at) == "batch\u00d72\u00d7?"
    assert fmt_shape(["seq_dim_1", "batch"]) == "seq_dim_1\u00d7batch"


def test_pp_ocr_labels_read_as_numbers_at_the_inputs_docks_sizes_the_symbols_on_hover(qtbot, window,
                                                                                       ui_watchdog):
    """Tryout 16: PP-OCRv6 rec's labels read "DynamicDimension.0x48x24x(floor(DynamicDimension.1/2 - 1/2) + 1)"
    where they had room and "?x24x24x?" where they had not. At the Inputs dock's sizes they are numbers (1x48x24x32
    at width 64), they follow a size typed there, and the symbolic form stays in the tooltip and Properties."""
    from test_real_models import real_model
    view = open_and_wait(qtbot, window, real_model("rapidocr", "models/PP-OCRv6_rec_small.onnx"))
    canvas = view.canvas
    qtbot.waitUntil(lambda: canvas.dim_values.get("DynamicDimension.1") == 64, timeout=20000)
    sc = view.scene
    texts = [t for _, ts, _ in canvas._label_texts(sc, np.arange(len(sc.vg.edge_src))) for t in ts]
    assert "1\u00d748\u00d724\u00d732" in texts and not any("floor" in t or "Dynamic" in t for t in texts), texts[:8]
    conv = view.table.index_of("Conv.0")
    assert "ceil(DynamicDimension.1/2)" in canvas.describe(conv)  # its "floor(DynamicDimension.1/2 - 1/2) + 1"
    assert "= 1\u00d748\u00d724\u00d732 at the input sizes" in canvas.describe(conv)
    row = window.panels["Inputs"].row("x")
    row.dims[3].setValue(128)  # typed in the dock: the labels follow
    qtbot.waitUntil(lambda: canvas.dim_values.get("DynamicDimension.1") == 128, timeout=20000)
    texts = [t for _, ts, _ in canvas._label_texts(sc, np.arange(len(sc.vg.edge_src))) for t in ts]
    assert "1\u00d748\u00d724\u00d764" in texts


@pytest.mark.parametrize("name", ["Compare", "Profile", "Statistics", "Convert"])
def test_a_bottom_dock_leaves_the_graph_its_room_at_1024x700(qtbot, window, samples, ui_watchdog, name):
    # left to Qt, a bottom dock came up at its size hint: the Compare dock took 467 of 700 px and left the graph
    # 134 (found by a new user); it comes up at about a third of the height, or its minimum
    window.resize(1024, 700)
    opened(qtbot, window, samples / "cnn.onnx", ui_watchdog)
    graph = window.centralWidget()
    window.show_dock(name)
    dock = window.docks[name]
    qtbot.waitUntil(lambda: dock.isVisible() and abs(dock.height() - max(dock.minimumSizeHint().height(), 252)) <= 8,
                    timeout=5000)
    assert graph.height() >= 250
    # and the user can make it shorter still: its contents scroll (with a real font the Compare dock's own
    # minimum left the graph ~110 px)
    from PySide6.QtCore import Qt
    window.resizeDocks([dock], [130], Qt.Vertical)
    qtbot.waitUntil(lambda: dock.height() <= 140, timeout=5000)


def test_fit_keeps_a_tall_graph_clear_of_the_minimap(qtbot, window, samples, ui_watchdog):
    # at 1024x700 a fit by width left the minimap over the model frame's collapse glyph (new-user tryout)
    window.resize(1024, 700)
    view = opened(qtbot, window, samples / "moe_llm.onnx", ui_watchdog)
    relaid(qtbot, view, view.expand_all)  # as wide as the pane: fitted to the whole width it ran under the map
    view.fit()
    qtbot.waitUntil(lambda: view.minimap.isVisible(), timeout=5000)
    c, sc = view.canvas, view.scene
    right = max(float(sc.x1.max()), float(sc.frame_box[:, 2].max()) if len(sc.frame_box) else -1e9)
    assert right * c.scale + c.tx <= view.minimap.x()  # everything drawn ends left of the minimap
    assert c.scale >= 0.5  # and titles stay readable


def _band_crossings(view, f: int, y: float) -> list[float]:
    """Where the drawn edges cross the horizontal line y inside frame f (from their polylines, counted here
    afresh: not from the scene's own stretches)."""
    lay = view.scene.layout
    x0, _, x1, _ = view.scene.frame_box[f]
    out = []
    for e in range(len(lay.edge_ptr) - 1):
        pts = lay.edge_pts[lay.edge_ptr[e]:lay.edge_ptr[e + 1]]
        for (ax, ay), (bx, by) in zip(pts[:-1], pts[1:]):
            if min(ay, by) <= y < max(ay, by):
                x = ax + (bx - ax) * (y - ay) / (by - ay)
                if x0 <= x <= x1:
                    out.append(float(x))
    return out


def test_frame_titles_and_glyphs_go_where_no_edge_runs(qtbot, window, samples, ui_watchdog):
    # an edge entering a frame under its title vanished under the title's fill, where one looks to see where it
    # goes; another ran through the collapse glyph (new-user tryout: "post_attention_layernorm", "combine")
    from PySide6.QtGui import QFontMetricsF
    view = opened(qtbot, window, samples / "moe_llm.onnx", ui_watchdog)
    relaid(qtbot, view, view.expand_all)
    c, sc = view.canvas, view.scene
    fm = QFontMetricsF(c.font_frame)
    clear = 0
    for f in range(len(sc.vg.frames)):
        text, tx, gx = c.frame_title(f)
        x0, y0, x1, _ = sc.frame_box[f]
        xs = _band_crossings(view, f, y0 + 14)  # the middle of the title's line
        assert x0 + 8 <= tx and tx + fm.horizontalAdvance(text) <= x1 - 6 + 1e-6
        assert not any(gx - 1 <= x <= gx + 15 for x in xs) or len(xs) > 3  # the glyph clear where it can be
        if not any(tx - 1 <= x <= tx + fm.horizontalAdvance(text) + 5 for x in xs):
            clear += 1
        else:  # crossed only where no stretch of the bar has room for even the scope's name
            name = view.tree.label[int(sc.vg.frames[f])]
            w = fm.horizontalAdvance(name) + 4
            stops = sorted(xs + [gx - 4, gx + 18])
            room = [b - a for a, b in zip([x0 + 8] + stops, stops + [x1 - 6])]
            assert max(room) < w + 12, (text, room)
    assert clear >= 0.5 * len(sc.vg.frames), clear  # 3 of 28 before


def test_the_minimap_fades_over_the_graph_until_the_pointer_is_on_it(qtbot, window, samples, ui_watchdog):
    # scrolled sideways, the minimap hid nodes and a frame's collapse glyph, with nothing to show that they
    # were there (new-user tryout): over the graph it fades so that what is under it shows through
    from PySide6.QtCore import QEvent, QPointF
    from PySide6.QtGui import QEnterEvent
    window.resize(1500, 950)
    view = opened(qtbot, window, samples / "moe_llm.onnx", ui_watchdog)
    relaid(qtbot, view, view.expand_all)
    view.fit()
    mm, c, sc = view.minimap, view.canvas, view.scene
    qtbot.waitUntil(mm.isVisible, timeout=5000)
    assert not mm.covers_graph() and not mm.faded()  # the fit keeps the graph clear of it: drawn as it is
    leaf = int(np.argmax(sc.x1 - sc.x0))  # the widest node, centred under the minimap
    g = mm.geometry()
    centre = c.mapFrom(view, g.center())
    c.set_view(1.0, centre.x() - (sc.x0[leaf] + sc.x1[leaf]) / 2, centre.y() - (sc.y0[leaf] + sc.y1[leaf]) / 2)
    qtbot.waitUntil(mm.isVisible, timeout=5000)
    assert mm.covers_graph() and mm.faded()

    def pixel():
        img = view.grab().toImage()
        return np.array(QColor(img.pixel(g.center().x(), g.center().y())).getRgb()[:3], float)

    node = np.array(QColor(c.pal.categories[CATEGORIES[int(sc.cat[leaf])]]).getRgb()[:3], float)
    ui_watchdog.pause()  # the grabs below are the test's eyes (whole-view renders), not the user's work
    faded = pixel()
    # faded, its outline of the visible part stays plain: the map still says where the view is (faded whole, a
    # narrow pane's map was "nearly invisible", no use as a map: helper 79's try)
    box = mm.view_box()
    assert box.top() > 3, box  # (its top edge inside the map, not cut to the map's own border)
    at = mm.mapTo(view, QPointF(box.center().x(), box.top()).toPoint())
    img = view.grab().toImage()
    outline = np.array(QColor(c.pal.viewport).getRgb()[:3], float)
    line = min((np.array(QColor(img.pixel(at.x(), at.y() + d)).getRgb()[:3], float) for d in (-1, 0, 1)),
               key=lambda px: np.abs(px - outline).sum())  # (the 1.5 px line's darkest row)
    assert np.abs(line - outline).sum() < 90, (line, outline)
    mm.enterEvent(QEnterEvent(QPointF(5, 5), QPointF(5, 5), QPointF(5, 5)))  # the pointer comes onto it
    assert not mm.faded()
    opaque = pixel()
    # the node's colour shows through the faded map, not through the opaque one
    assert np.abs(faded - node).sum() < np.abs(opaque - node).sum() - 30, (faded, opaque, node)
    mm.leaveEvent(QEvent(QEvent.Leave))
    assert mm.faded()


def test_zoomed_out_the_scopes_keep_their_names(qtbot, window, samples, ui_watchdog):
    # zoomed out below the node titles' size every text vanished: experts.0 could not be told from experts.3
    from mnnscope.gui.canvas import TITLE_SCALE
    window.resize(1500, 950)
    view = opened(qtbot, window, samples / "moe_llm.onnx", ui_watchdog)
    relaid(qtbot, view, view.expand_all)
    c, sc = view.canvas, view.scene
    c.set_view(0.3, 20, 20)
    assert c.scale < TITLE_SCALE
    titles = c.overview_titles()
    names = [t for t, _, _ in titles]
    assert {"model", "layers.0", "self_attn", "mlp", "experts.0"} <= set(names), names
    rects = [r for _, r, _ in titles]
    assert not any(a.intersects(b) for i, a in enumerate(rects) for b in rects[i + 1:])  # none over another
    screen = sc.frame_box * c.scale + np.array([c.tx, c.ty, c.tx, c.ty])
    for text, r, _ in titles:  # each at the top of a frame of that name (or a shortened one), inside it
        assert any((text == view.tree.label[int(s)] or "\u2026" in text) and x0 <= r.left() and r.right() <= x1 + 1
                   and y0 <= r.top() <= y0 + 4 for s, (x0, y0, x1, _) in zip(sc.vg.frames, screen)), text
    # and they are painted: the frame text colour inside "mlp"'s rectangle
    ui_watchdog.pause()
    img = c.grab().toImage()
    r = rects[names.index("mlp")]
    want = QColor(c.pal.frame_text)
    dark = [QColor(img.pixel(x, y)) for x in range(int(r.left()), int(r.right())) for y in range(int(r.top()),
                                                                                               int(r.bottom()))]
    assert sum(abs(q.red() - want.red()) + abs(q.green() - want.green()) + abs(q.blue() - want.blue()) < 60
               for q in dark) >= 10
    c.set_view(1.0, 20, 20)  # at full size the frames' own titles are drawn, not these
    ui_watchdog.resume()


def test_fit_pressed_again_shows_the_whole_graph_and_says_so(qtbot, window, samples, ui_watchdog):
    # on a tall graph Fit showed it by its width from the top; pressed again nothing happened and the button
    # seemed broken (new-user tryout): again, it shows the whole graph; again, the readable fit
    from mnnscope.gui.canvas import TITLE_SCALE
    window.resize(1500, 950)
    view = opened(qtbot, window, samples / "moe_llm.onnx", ui_watchdog)
    relaid(qtbot, view, view.expand_all)
    c = view.canvas
    act = window.actions_by_name["Fit to Window"]
    readable = (c.scale, c.tx, c.ty)  # Expand All fits at a readable size: pressing Fit now changes nothing
    assert c.scale >= TITLE_SCALE
    x0, y0, x1, y1 = view.scene.bounds
    assert (y1 - y0) * c.scale > c.height()  # too tall to show whole at that size
    act.trigger()
    vx0, vy0, vx1, vy1 = c.view_rect()
    assert vx0 <= x0 and vy0 <= y0 and vx1 >= x1 and vy1 >= y1 and c.scale < readable[0]  # all of it
    assert "whole graph" in window.statusBar().currentMessage()
    window.resize(1300, 900)  # kept whole as the window resizes
    qtbot.waitUntil(lambda: c.view_rect()[3] >= y1 and c.view_rect()[1] <= y0, timeout=5000)
    window.resize(1500, 950)
    qtbot.waitUntil(lambda: c.width() > 900, timeout=5000)
    act.trigger()
    assert c.scale >= TITLE_SCALE and "readable" in window.statusBar().currentMessage()


def _crosses(pts: np.ndarray, x0: float, y0: float, x1: float, y1: float) -> bool:
    """Whether a polyline passes through a rectangle (sampled along its segments)."""
    for (ax, ay), (bx, by) in zip(pts[:-1], pts[1:]):
        t = np.linspace(0.0, 1.0, 25)
        xs, ys = ax + (bx - ax) * t, ay + (by - ay) * t
        if ((xs > x0) & (xs < x1) & (ys > y0) & (ys < y1)).any():
            return True
    return False


def test_a_tensor_label_goes_left_of_an_edge_heading_right(qtbot, window, samples, ui_watchdog):
    # "1xseq" under input_ids was written over the edge to the embedding's Gather (new-user tryout): where an
    # edge leaves to the right and none to the left, the label ends left of where they leave
    view = opened(qtbot, window, samples / "moe_llm.onnx", ui_watchdog)
    qtbot.waitUntil(lambda: view.table.shapes[view.table.tensor_index("input_ids")] is not None, timeout=60000)
    relaid(qtbot, view, view.expand_all)
    c, sc = view.canvas, view.scene
    lay = sc.layout
    placed = c.placed_labels(np.arange(len(sc.vg.edge_src)))
    assert sc.edge_label_left.any()
    leaf = {int(it): k for k, it in enumerate(sc.vg.leaves)}
    ids = leaf[view.tree.n_ops + view.tree.n_real_scopes +
               list(view.tree.io_tensor).index(view.table.tensor_index("input_ids"))]
    mine = [pl for pl in placed if leaf[int(sc.vg.edge_src[pl[0]])] == ids]
    assert mine and all(sc.edge_label_left[e] and x + w <= (sc.x0[ids] + sc.x1[ids]) / 2 for e, _, x, _, w, _ in mine)
    for e, _, x, y, w, _ in placed:
        if not sc.edge_label_left[e]:
            continue
        same = np.flatnonzero(np.all(np.isclose(sc.edge_label_at, sc.edge_label_at[e]), axis=1))
        for k in same.tolist():  # no edge leaving there runs through the label moved to the left
            assert not _crosses(lay.edge_pts[lay.edge_ptr[k]:lay.edge_ptr[k + 1]], x, y + 1, x + w, y + 9)
    for i, (_, _, x, y, w, _) in enumerate(placed):  # and labels still never overlap one another
        for _, _, x2, y2, w2, _ in placed[i + 1:]:
            assert abs(y2 - y) >= 10 or x + w <= x2 + 0.5 or x2 + w2 <= x + 0.5


def test_a_shape_in_a_node_is_cut_as_the_labels_are(qtbot, window):
    # an input's subtitle was cut in its middle ("DynamicDimension.0x3xDynami...ension.1xDynamicDimension.2")
    # right above its own label "?x3x?x?": whole if it fits, else the compact form, else that cut at its end
    c = window.pane.main_view.canvas
    shape = ["DynamicDimension.0", 3, "DynamicDimension.1", "DynamicDimension.2"]
    assert c._shape_in([1, 3, 224, 224], 200) == "1\u00d73\u00d7224\u00d7224"
    assert c._shape_in(shape, 120) == "?\u00d73\u00d7?\u00d7?"
    cut = c._shape_in(["batch", 3, 224, 224, 7, 7, 7, 7, 7, 7, 7, 7], 40)
    assert cut.startswith("batch\u00d7") and cut.endswith("\u2026")


def test_a_scope_opened_wider_than_the_pane_is_brought_into_view(qtbot, window, samples, ui_watchdog):
    # double-clicking a scope in a narrow pane: the frame spilled past both sides, its title cut at the left
    # edge (new-user tryout, the .mnn pane at 1024x700)
    from PySide6.QtCore import Qt
    from test_gui import screen_pos
    window.resize(1024, 700)
    view = opened(qtbot, window, samples / "moe_llm.onnx", ui_watchdog)
    tree, c = view.tree, view.canvas
    mlp = tree.index["/model/layers.0/mlp"]
    box = tree.n_ops + mlp
    lf = int(view.scene.leaf_of_item[box])
    sc = view.scene
    c.center_on(sc.x1[lf] - 10, (sc.y0[lf] + sc.y1[lf]) / 2, scale=1.5)  # the box at the pane's left side
    relaid(qtbot, view, lambda: qtbot.mouseDClick(c, Qt.LeftButton, pos=screen_pos(view, box)))
    assert mlp in view.expanded
    f = list(view.scene.vg.frames).index(mlp)
    x0, y0, x1, y1 = view.scene.frame_box[f]
    left, right = x0 * c.scale + c.tx, x1 * c.scale + c.tx
    assert left >= 0  # its title's side in view
    top, bottom = y0 * c.scale + c.ty, y1 * c.scale + c.ty
    assert top >= 0 and (bottom <= c.height() or top <= 25)  # and as much of it as fits below its title
    from mnnscope.gui.canvas import TITLE_SCALE
    assert right <= c.width() or abs(c.scale - TITLE_SCALE) < 1e-9  # whole, or as small as readable titles allow
    assert c.scale < 1.5  # zoomed out for it


def test_fit_on_a_graph_too_wide_to_read_whole_shows_its_top_readable(qtbot, window, tmp_path, ui_watchdog):
    # a wide decoder fitted whole had 5-pixel titles, and in a narrow side-by-side pane no Fit was readable
    # (second new-user tryout): its top at a readable size, around its first ops; Fit again: all of it
    import onnx
    from onnx import TensorProto, helper
    from mnnscope.gui.canvas import FIT_MIN_SCALE, READABLE_SCALE
    nodes = [helper.make_node("Relu", ["x"], [f"r{i}"], name=f"relu_{i}") for i in range(40)]
    nodes.append(helper.make_node("Sum", [f"r{i}" for i in range(40)], ["y"], name="sum"))
    g = helper.make_graph(nodes, "wide", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    path = tmp_path / "wide.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    window.resize(1024, 700)
    view = opened(qtbot, window, path, ui_watchdog)
    c, sc = view.canvas, view.scene
    view.fit()
    x0, y0, x1, y1 = sc.bounds
    assert (x1 - x0) * FIT_MIN_SCALE > c.width()  # too wide to show whole at a readable size
    assert c.scale == READABLE_SCALE
    vx0, vy0, vx1, vy1 = c.view_rect()
    assert vy0 <= y0 and vx1 < x1  # its top, a part of its width ...
    ins, _ = io_items(view)
    lf = int(sc.leaf_of_item[ins[0]])
    assert vx0 <= sc.x0[lf] and sc.x1[lf] <= vx1  # ... around its input
    act = window.actions_by_name["Fit to Window"]
    act.trigger()  # the same fit: pressed again, all of it
    vx0, vy0, vx1, vy1 = c.view_rect()
    assert vx0 <= x0 and vx1 >= x1 and vy0 <= y0 and vy1 >= y1


def test_properties_wraps_long_names_between_their_parts_and_copies_them_clean(qtbot, window, samples, ui_watchdog):
    """A narrow Properties dock wrapped "model.embed_tokens.weight" mid-word ("...we" / "ight"): Qt breaks only at
    spaces, '/' and '-'. Names now break after '.', '_' and ':' too, and the text copied has no trace of it."""
    import re

    from mnnscope.gui.panels.properties import ZWSP

    view = opened(qtbot, window, samples / "moe_llm.onnx", ui_watchdog)
    props = window.properties
    view.select(view.table.ids.index("/model/embed_tokens/Gather"))
    qtbot.waitUntil(lambda: "model.embed_tokens.weight" in props.text())
    browser = props.browser
    browser.setFixedWidth(150)  # narrower than the name
    qtbot.wait(50)
    doc = browser.document()
    doc.setTextWidth(browser.viewport().width())
    lines, block = [], doc.begin()
    while block.isValid():
        lay, text = block.layout(), block.text()
        lines += [text[ln.textStart():ln.textStart() + ln.textLength()].replace(ZWSP, "")
                  for ln in (lay.lineAt(i) for i in range(lay.lineCount()))]
        block = block.next()
    name = "model.embed_tokens.weight"
    found = re.search("\n?".join(map(re.escape, name)), "\n".join(line.strip() for line in lines))
    assert found, lines
    cuts = [i for i, ch in enumerate(found.group()) if ch == "\n"]
    assert cuts, "the dock was wide enough for the whole name: this test checks nothing"
    assert all(found.group()[i - 1] in "._:/" for i in cuts), found.group()
    browser.selectAll()
    copied = browser.createMimeDataFromSelection().text()
    assert name in copied and ZWSP not in copied and ZWSP not in props.text()


def test_a_narrow_properties_dock_stacks_each_value_under_its_name(qtbot, window, samples, ui_watchdog):
    """Side by side at 1024x700 the dock is ~200 px: its name and value columns wrapped "moe_llm." / "onnx" and the
    FLOPs note one word per line. Narrow, each row is one cell, the value under its name; wide, two columns again."""
    from mnnscope.gui.panels.properties import ZWSP

    view = opened(qtbot, window, samples / "moe_llm.onnx", ui_watchdog)
    props = window.properties
    view.select(-1)
    qtbot.waitUntil(lambda: "FLOPs" in props.text() and "estimate" in props.text())
    browser = props.browser

    def shown(width):
        browser.setFixedWidth(width)
        qtbot.waitUntil(lambda: browser.viewport().width() < width)
        doc = browser.document()
        table = doc.rootFrame().childFrames()[0]
        flops = doc.find("estimate over")
        return table.columns(), flops.block().layout().lineCount(), doc.find(f"moe_{ZWSP}llm.{ZWSP}onnx").block().layout()

    cols, flops_lines, file_lay = shown(200)
    assert cols == 1 and file_lay.lineCount() == 2, "not the name's line and the value's, whole"
    QTextBrowser.setHtml(browser, browser.source_html)  # the two columns, as before, at the same width
    side = browser.document().find("estimate over").block().layout().lineCount()
    assert flops_lines < side, (flops_lines, side)  # stacked, the note takes fewer lines
    browser.setHtml(browser.source_html)
    cols, _, _ = shown(420)
    assert cols == 2
    assert "file" in props.text() and "moe_llm.onnx" in props.text()
    # the title too narrow for it ("HardSigmoi" at 1024x700 side by side): cut with an ellipsis, whole in its tooltip
    view.select(view.table.ids.index("/model/layers.0/self_attn/Softmax"))
    title = props.title
    assert title.text() == "<b>Softmax</b>" and title.shown_text() is None
    title.setFixedWidth(title.sizeHint().width() - 12)
    cut = title.shown_text()
    assert cut and cut.endswith("\u2026") and "Softmax".startswith(cut[:-1]) and len(cut) > 2, cut
    assert not title.grab().isNull() and title.toolTip() == "Softmax"


def test_a_notice_never_covers_the_selected_node(qtbot, window, samples, ui_watchdog):
    """Tryout 16 at 1024x700: a failed conversion's error notice, opened with "more", lay over the Hardmax it was
    about. The graph moves the selected node out from under the notices (left of them, else above)."""
    window.resize(1024, 700)
    qtbot.waitUntil(lambda: window.width() == 1024)
    view = opened(qtbot, window, samples / "unsupported_op.onnx", ui_watchdog)
    window.show_dock("Convert")  # as after a conversion: the graph gets what the dock leaves
    qtbot.wait(200)
    hardmax = view.table.index_of("/Hardmax")
    view.select(hardmax, center=True)
    window.notify("conversion failed [unsupported_op]: MNN cannot convert op Hardmax (node /Hardmax); " * 6,
                  subject="unsupported_op.onnx")
    card = window.notes.shown_cards()[-1]
    card.toggle_more()  # the whole text: a tall card
    qtbot.wait(100)

    def covered() -> bool:
        c, sc = view.canvas, view.scene
        lf = c._leaf_showing(sc, hardmax)
        s = c.scale
        node = QRectF(sc.x0[lf] * s + c.tx, sc.y0[lf] * s + c.ty, (sc.x1[lf] - sc.x0[lf]) * s,
                      (sc.y1[lf] - sc.y0[lf]) * s)
        area = window.notes.geometry()
        tl = c.mapFrom(window.centralWidget(), area.topLeft())
        return node.intersects(QRectF(tl.x(), tl.y(), area.width(), area.height()))
    qtbot.waitUntil(lambda: not covered(), timeout=5000)
    view.select(view.table.index_of("/fc/Gemm"), center=True)  # a node shown from elsewhere (Diagnostics)
    qtbot.wait(100)
    view.select(hardmax, center=True)
    qtbot.waitUntil(lambda: not covered(), timeout=5000)


def test_a_window_on_screen_fits_the_screen_the_headless_twin_keeps_its_size(qtbot, make_window, samples):
    """A new-user try at 1024x700 (2026-12-04): `mnnscope view MODEL` opened at 1600x1000 whatever the screen, with
    Properties, the docks and the status bar off it. Only an asked-for --size (or the headless twin) fixes it."""
    from PySide6.QtWidgets import QApplication

    from mnnscope.gui.app import place_window
    from mnnscope.gui.viewcmd import HEADLESS_SIZE, build_parser
    assert build_parser().parse_args([str(samples / "cnn.onnx")]).size is None
    assert build_parser().parse_args([str(samples / "cnn.onnx"), "--size", "900x600"]).size == (900, 600)
    screen = QApplication.primaryScreen().availableGeometry()
    assert HEADLESS_SIZE[0] > screen.width() or HEADLESS_SIZE[1] > screen.height()  # (so the test can fail)
    w = make_window()
    assert not w.geometry_restored
    place_window(w, QApplication.instance())
    assert w.width() <= screen.width() and w.height() <= screen.height(), (w.size(), screen)
    w.geometry_restored = True  # its size restored: it was closed last on a larger screen
    w.resize(*HEADLESS_SIZE)
    place_window(w, QApplication.instance())
    assert w.width() <= screen.width() and w.height() <= screen.height(), (w.size(), screen)
    place_window(w, QApplication.instance(), (700, 500))  # --size: as asked
    assert (w.width(), w.height()) == (700, 500)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_two_panes_side_by_side_have_a_drawn_divider(qtbot, window, samples, theme):
    """Without a drawn divider, a node cut at the left pane's edge ran into the right pane's graph ("Constan|rted", a
    new-user try): the splitter's handle is a band of its own colour, unlike either pane's background."""
    window.set_theme(theme)
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    open_and_wait(qtbot, window, samples / "cnn.mnn", second=True, shapes=False)
    handle = window.split.handle(1)
    assert window.split.handleWidth() >= 3 and handle.isVisible()
    img = window.grab().toImage()
    mid = handle.mapTo(window, handle.rect().center())
    band = QColor(img.pixel(mid.x(), mid.y()))
    left = window.pane.main_view.canvas
    right = window.second.main_view.canvas
    for canvas in (left, right):
        p = canvas.mapTo(window, canvas.rect().bottomLeft())  # the bottom left corner: the pane's background
        bg = QColor(img.pixel(p.x() + 2, p.y() - 2))
        assert abs(band.lightness() - bg.lightness()) >= 12, (theme, band.name(), bg.name())
    window.set_theme("light")


def test_properties_fitted_on_a_small_screen_grows_back_after_a_restart(qtbot, make_window):
    """A window closed at 1024x700 (Properties fitted to ~300 px there) came back at 1500x950 with Properties at that
    width, names wrapped word by word: the restored width was not the fit's to grow any more. One the user dragged
    stays theirs."""
    small = make_window()
    small.resize(1024, 700)
    qtbot.waitUntil(lambda: small.docks["Properties"].width() <= 0.3 * 1024 + 2, timeout=5000)
    narrow = small.docks["Properties"].width()
    small.close()  # saves the window's state
    big = make_window()
    big.resize(1500, 950)
    qtbot.waitUntil(lambda: big.docks["Properties"].width() >= 370, timeout=5000)
    assert big.docks["Properties"].width() > narrow
    # dragged by the user: kept, at any size
    d = big.docks["Properties"]
    big.resizeDocks([d], [250], Qt.Horizontal)
    qtbot.waitUntil(lambda: abs(d.width() - 250) <= 2, timeout=5000)
    big.close()
    again = make_window()
    again.resize(1500, 950)
    qtbot.wait(200)
    assert abs(again.docks["Properties"].width() - 250) <= 4, again.docks["Properties"].width()
