"""The desktop app, offscreen (pytest-qt): open every sample, expand/collapse, search, select, navigate,
side by side, bad files and a dying runner, settings, and what is actually drawn. (One module past 400
lines: the tests share the window fixtures and open_and_wait, which test_gui_convert imports too.)"""
from __future__ import annotations

import json
import stat
from pathlib import Path

import numpy as np
import pytest

from conftest import child_pids, require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI
from PySide6.QtCore import QMimeData, QObject, QPoint, QPointF, Qt, QUrl  # noqa: E402
from PySide6.QtGui import QDropEvent, QGuiApplication  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from mnnscope.gui import settings as cfg  # noqa: E402
from mnnscope.gui.tasks import live_tasks  # noqa: E402

pytestmark = pytest.mark.gui
SAMPLE_FILES = ["cnn.onnx", "cnn.mnn", "encoder_block.onnx", "encoder_block.mnn", "moe_llm.onnx", "moe_llm.mnn",
                "control_flow.onnx", "control_flow.mnn", "external_data.onnx", "external_data.mnn",
                "unsupported_op.onnx"]


def child_processes() -> list[int]:
    """Live (not zombie) child processes of this test process: runners, loaders."""
    return child_pids()


@pytest.fixture
def settings_dir(tmp_path):
    folder = tmp_path / "settings"
    cfg.use_folder(folder)
    return folder


@pytest.fixture
def make_window(qtbot, settings_dir):
    """Windows that are shut down after the test, which fails if a worker thread or child process is left."""
    from mnnscope.gui.window import MainWindow
    made = []

    def make(**kw):
        w = MainWindow(theme=kw.pop("theme", "light"), **kw)
        qtbot.addWidget(w)
        w.resize(1400, 900)
        w.show()
        made.append(w)
        return w

    yield make
    for w in made:
        w.shutdown()
    qtbot.waitUntil(lambda: not live_tasks(), timeout=10000)
    assert not live_tasks(), "a test left worker threads running"
    qtbot.waitUntil(lambda: not child_processes(), timeout=10000)
    assert not child_processes(), "a test left child processes running"


@pytest.fixture
def window(make_window):
    return make_window()


def open_and_wait(qtbot, w, path, second=False, shapes=True):
    with qtbot.waitSignal(w.model_loaded, timeout=60000):
        assert w.open_model(str(path), second=second)
    pane = w.second if second else w.pane
    qtbot.waitUntil(lambda: pane.main_view.scene is not None and not pane.main_view.layout_busy, timeout=30000)
    if shapes:
        qtbot.waitUntil(lambda: not w.runner.state.startswith("busy"), timeout=60000)
    return pane.main_view


def docked_at_1024(qtbot, w, path, dock: str):
    """The window at 1024x700 (the smallest size the app is looked at) with `path` open and the dock `dock` shown;
    its panel."""
    w.resize(1024, 700)
    qtbot.waitUntil(lambda: w.width() == 1024)
    open_and_wait(qtbot, w, path, shapes=False)
    w.show_dock(dock)
    return w.panels[dock]


def drag_bottom_separator(qtbot, window, dock, dy: int) -> None:
    """The user's drag of the separator between the graph and the bottom docks, by `dy` px (down: shorter docks)."""
    from PySide6.QtTest import QTest
    y = (window.centralWidget().geometry().bottom() + dock.geometry().top()) // 2
    x = window.centralWidget().geometry().center().x()
    QTest.mousePress(window, Qt.LeftButton, Qt.NoModifier, QPoint(x, y))
    for k in range(1, 11):
        QTest.mouseMove(window, QPoint(x, y + dy * k // 10))
        qtbot.wait(10)
    QTest.mouseRelease(window, Qt.LeftButton, Qt.NoModifier, QPoint(x, y + dy))
    qtbot.wait(200)


class _Catcher(QObject):
    """wait_for_emission's receiver: a QObject, so that Qt drops the calls still queued for it when it is deleted."""

    def __init__(self, check):
        super().__init__()
        self.check, self.args = check, None

    def take(self, *args):
        if self.args is None and self.check(*args):
            self.args = args


def wait_for_emission(qtbot, signal, check=lambda *args: True, timeout: int = 5000) -> tuple:
    """Wait until `signal` is emitted with arguments that pass `check`; those arguments. For signals emitted on other
    threads (RunnerHost.job_event) in place of qtbot.waitSignal: its receiver is a bound method of a plain Python
    object, and PySide6 6.11 still calls it with the emissions queued before the disconnect after the object is
    freed: a segfault (clean-clone CI, 2026-12-05; test_a_signal_from_another_thread_is_waited_for_safely)."""
    catcher = _Catcher(check)
    signal.connect(catcher.take)
    try:
        qtbot.waitUntil(lambda: catcher.args is not None, timeout=timeout)
        return catcher.args
    finally:
        signal.disconnect(catcher.take)


def relaid(qtbot, view, action):
    with qtbot.waitSignal(view.layout_ready, timeout=30000):
        action()


def screen_pos(view, item) -> QPoint:
    sc = view.scene
    lf = int(sc.leaf_of_item[item])
    x, y = (sc.x0[lf] + sc.x1[lf]) / 2, (sc.y0[lf] + sc.y1[lf]) / 2
    c = view.canvas
    return QPoint(int(x * c.scale + c.tx), int(y * c.scale + c.ty))


def drawn_items(view) -> set[int]:
    """Items whose boxes intersect the canvas (what a user sees)."""
    c = view.canvas
    c.repaint()
    sc = view.scene
    lf = sc.leaves_in(*c.view_rect())
    return {int(sc.vg.leaves[k]) for k in lf}


def test_every_sample_opens_in_both_formats(qtbot, window, samples):
    for name in SAMPLE_FILES:
        view = open_and_wait(qtbot, window, samples / name, shapes=False)
        t = view.table
        assert Path(t.path).name == name
        hidden = int(view.tree.hidden.sum())
        assert f"{t.node_count - hidden:,} ops" in window.model_label.text()
        drawn = drawn_items(view)
        assert drawn and view.canvas.last_drawn == len(drawn)
        # what is drawn is exactly what the visible graph holds: every op is shown by one leaf
        assert drawn <= set(view.scene.vg.leaves.tolist())
        assert np.isin(view.scene.vg.rep[~view.tree.hidden], view.scene.vg.leaves).all()
    assert window.windowTitle().startswith("unsupported_op.onnx")


def test_shapes_arrive_from_the_runner_and_label_the_graph(qtbot, window, samples):
    with qtbot.waitSignal(window.shapes_loaded, timeout=60000) as blocker:
        view = open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)
    assert blocker.args[0] > 0
    t = view.table
    gather = t.ids.index("/model/embed_tokens/Gather")
    out = t.node_outputs(gather)[0]
    assert t.shapes[out] == [1, "seq", 32]  # ONNX shape inference in the runner, merged into the table
    from mnnscope.gui.canvas import fmt_shape
    assert fmt_shape(t.shapes[out]) == "1\u00d7seq\u00d732"


def test_mnn_with_dynamic_inputs_gets_shapes_and_says_for_which_sizes(qtbot, window, samples):
    with qtbot.waitSignal(window.shapes_loaded, timeout=60000):
        view = open_and_wait(qtbot, window, samples / "moe_llm.mnn", shapes=False)
    t = view.table
    assert t.shapes[t.tensor_index("logits")] == [1, 8, 96]  # computed by MNN at the default sequence length
    assert "shapes computed for input_ids=[1, 8]" in window.model_label.text()
    # a narrow window cuts the line with an ellipsis, the whole of it in the tooltip (at 1024 px the note was clipped
    # mid-number, "x=[1, 3, 640, 64": helper 113)
    window.resize(560, 600)
    qtbot.waitUntil(lambda: window.model_label.shown_text().endswith("\u2026"), timeout=5000)
    assert " ".join(window.model_label.toolTip().split()) == " ".join(window.model_label.text().split())
    # the input itself says the sizes those shapes hold for, its own free form after them (Properties read
    # "1×? · int32" beside edges of 1×8: tryout 2026-12-04): in the summary, and with the input selected
    qtbot.waitUntil(lambda: "1\u00d78 at the input sizes (1\u00d7?)" in window.properties.text(), timeout=10000)
    view.select(view.tree.n_ops + next(s for s in range(view.tree.n_scopes) if view.tree.is_io(s)
                                       and view.tree.label[s] == "input_ids"))
    qtbot.waitUntil(lambda: "Graph input" in window.properties.title.text(), timeout=5000)
    assert "1\u00d78 at the input sizes (1\u00d7?)" in window.properties.text()
    view = open_and_wait(qtbot, window, samples / "cnn.mnn")  # fixed inputs: no note
    assert "shapes computed" not in window.model_label.text()
    assert "at the input sizes" not in window.properties.text()
    # the same .mnn beside its .onnx: its input says the sizes too (a new-user try read "1x3x48x?" there)
    open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)
    with qtbot.waitSignal(window.shapes_loaded, timeout=60000):
        right = open_and_wait(qtbot, window, samples / "moe_llm.mnn", second=True, shapes=False)
    right.select(right.tree.n_ops + next(s for s in range(right.tree.n_scopes) if right.tree.is_io(s)
                                         and right.tree.label[s] == "input_ids"))
    qtbot.waitUntil(lambda: window.properties.table is right.table
                    and "1\u00d78 at the input sizes (1\u00d7?)" in window.properties.text(), timeout=10000)


def test_expand_and_collapse_by_mouse(qtbot, window, samples):
    view = open_and_wait(qtbot, window, samples / "moe_llm.onnx")
    tree = view.tree
    attn = tree.index["/model/layers.0/self_attn"]
    box = tree.n_ops + attn
    assert box in view.scene.vg.leaves
    view.canvas.center_on(*_centre(view, box), scale=1.0)
    relaid(qtbot, view, lambda: qtbot.mouseDClick(view.canvas, Qt.LeftButton, pos=screen_pos(view, box)))
    assert attn in view.expanded and box not in view.scene.vg.leaves
    inside = [i for i in range(tree.n_ops) if tree.node_parent[i] == attn]
    assert set(inside) <= set(view.scene.vg.leaves.tolist())
    assert attn in view.scene.vg.frames
    softmax = view.table.ids.index("/model/layers.0/self_attn/Softmax")
    view.canvas.center_on(*_centre(view, softmax), scale=1.2)
    assert softmax in drawn_items(view)
    # the frame's collapse glyph (top right of its title bar) closes it again
    f = list(view.scene.vg.frames).index(attn)
    x0, y0, x1, _ = view.scene.frame_box[f]
    c = view.canvas
    c.center_on((x0 + x1) / 2, y0 + 100, scale=1.0)
    gx = c.frame_title(f)[2]  # top right of the title bar, or where no edge passes there
    glyph = QPoint(int((gx + 7) * c.scale + c.tx), int((y0 + 13) * c.scale + c.ty))
    relaid(qtbot, view, lambda: qtbot.mouseClick(c, Qt.LeftButton, pos=glyph))
    assert attn not in view.expanded and box in view.scene.vg.leaves
    assert c.selected == box  # the collapsed scope stays selected
    relaid(qtbot, view, view.expand_all)
    leaves = view.scene.vg.leaves
    assert len(leaves[leaves < tree.n_ops]) == view.table.node_count  # every op (beside the input/output nodes)
    relaid(qtbot, view, view.collapse_all)
    leaves = view.scene.vg.leaves
    leaves = leaves[leaves < tree.n_ops + tree.n_real_scopes].tolist()  # the input/output nodes aside
    assert leaves == [tree.n_ops + tree.index["/model"], view.table.ids.index("/lm_head/MatMul")] or len(leaves) <= 3


def _centre(view, item):
    sc = view.scene
    lf = int(sc.leaf_of_item[item])
    return (sc.x0[lf] + sc.x1[lf]) / 2, (sc.y0[lf] + sc.y1[lf]) / 2


def test_search_next_previous_and_select_all(qtbot, window, samples):
    view = open_and_wait(qtbot, window, samples / "moe_llm.onnx")
    window.actions_by_name["Find"].trigger()
    bar = view.search_bar
    assert bar.isVisible()
    from mnnscope.gui.search import MODES
    bar.mode.setCurrentIndex(MODES.index("all"))  # tensor names are an explicit choice (default: type or name)
    qtbot.keyClicks(bar.edit, "softmax")
    t = view.table
    softmaxes = [i for i in range(t.node_count) if t.op_types[i] == "Softmax"]
    named = [i for i in range(t.node_count) if "softmax" in t.names[i].lower()]
    touching = [i for i in range(t.node_count)
                if any("softmax" in t.tensor_names[k].lower() for k in t.node_inputs(i) + t.node_outputs(i) if k >= 0)]
    assert sorted(bar.matches.tolist()) == sorted(set(softmaxes) | set(named) | set(touching))
    assert len(softmaxes) >= 2 and set(touching) - set(softmaxes)  # readers of a Softmax output match too
    assert bar.count.text() == f"{len(bar.matches)} matches"
    relaid(qtbot, view, lambda: qtbot.keyClick(bar.edit, Qt.Key_Return))  # opens the scopes holding it
    first = int(bar.matches[0])
    assert view.canvas.selected == first and first in drawn_items(view)
    assert "Softmax" in window.properties.text() and bar.count.text().startswith("1 of")
    bar.previous()  # wraps to the last match
    qtbot.waitUntil(lambda: view.canvas.selected == int(bar.matches[-1]), timeout=20000)
    bar.set_query("MatMul", "type")
    assert all(t.op_types[i] == "MatMul" for i in bar.matches) and len(bar.matches) > 10
    bar.select_all()
    assert view.canvas.marked.tolist() == sorted(bar.matches.tolist())
    bar.set_query("/model/layers.1/mlp/Softmax_output_0", "tensor")
    assert {t.ids[i] for i in bar.matches} >= {"/model/layers.1/mlp/Softmax"}
    bar.set_query("no-such-thing-anywhere", "all")
    assert len(bar.matches) == 0 and bar.count.text() == "no matches"
    # a query with one match shows it at once ("1 match", and nothing moved until Return: a new-user try)
    (concat,) = [i for i in range(t.node_count) if t.op_types[i] == "Concat"]
    relaid(qtbot, view, view.collapse_all)
    view.select(-1)
    bar.set_query("Concat", "type")
    qtbot.waitUntil(lambda: view.canvas.selected == concat and concat in drawn_items(view), timeout=20000)
    assert bar.count.text() == "1 of 1"


def test_selection_shows_properties_with_weight_statistics(qtbot, window, samples):
    import onnx
    from onnx import numpy_helper
    view = open_and_wait(qtbot, window, samples / "external_data.onnx")
    t = view.table
    mm = next(i for i in range(t.node_count) if t.op_types[i] == "MatMul")
    relaid(qtbot, view, lambda: view.reveal(mm)) if mm not in view.scene.vg.leaves else view.select(mm, center=True)
    view.canvas.center_on(*_centre(view, mm), scale=1.0)
    qtbot.mouseClick(view.canvas, Qt.LeftButton, pos=screen_pos(view, mm))
    assert view.canvas.selected == mm
    weight = next(t.tensor_names[k] for k in t.node_inputs(mm) if k >= 0 and t.is_init[k])
    props = window.properties
    qtbot.waitUntil(lambda: "mean" in props.text(), timeout=30000)  # computed in a child process
    model = onnx.load(str(samples / "external_data.onnx"))
    arr = numpy_helper.to_array(next(i for i in model.graph.initializer if i.name == weight),
                                base_dir=str(samples))
    text = props.text()
    assert weight in text and "MatMul" in text
    assert f"mean {arr.astype(np.float64).mean():.4g}" in text and f"max {arr.max():.4g}" in text
    assert f"{arr.nbytes / 1000:.1f} kB" in text   # decimal, as every view writes sizes (it was KiB called kB)
    props.copy()
    copied = json.loads(QGuiApplication.clipboard().text())
    assert copied["op_type"] == "MatMul" and copied["weights"][0]["name"] == weight


def test_a_small_weight_shows_its_values(qtbot, window, samples):
    """A new-user try read a Reshape's target shape as "min -1, max 16, mean 5, std 6.595": a weight of a few
    numbers shows the numbers."""
    import onnx
    from onnx import numpy_helper
    view = open_and_wait(qtbot, window, samples / "encoder_block.onnx")
    t = view.table
    model = onnx.load(str(samples / "encoder_block.onnx"))
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    op = next(i for i in range(t.node_count) if t.op_types[i] == "Reshape"
              and any(k >= 0 and t.tensor_names[k] in inits for k in t.node_inputs(i)))
    shape = next(inits[t.tensor_names[k]] for k in t.node_inputs(op) if k >= 0 and t.tensor_names[k] in inits)
    view.select(op)
    props = window.properties
    qtbot.waitUntil(lambda: "values [" in props.text() or "mean" in props.text(), timeout=30000)  # (child process)
    assert "values [" + ", ".join(str(int(v)) for v in shape) + "]" in props.text()
    assert "mean" not in props.text()


def test_mnn_properties_show_attributes_and_const_weights(qtbot, window, samples):
    view = open_and_wait(qtbot, window, samples / "cnn.mnn")
    t = view.table
    conv = t.ids.index("/conv1/Conv_output_0")
    view.select(conv)
    text = window.properties.text()
    assert "Convolution" in text and "Attributes" in text and "Weights" in text
    assert "weight" in text and "float32" in text
    assert "/relu/Relu_output_0" in text  # MNN fused the Relu: the op writes the Relu's tensor
    assert window.properties.title.text() == "<b>Convolution</b>"
    # a BinaryOp is drawn as its operation ("ADD"): Properties leads with that too, its op type beside it (a new
    # user clicked ADD and read "BinaryOp")
    add = next(i for i in range(t.node_count) if t.op_types[i] == "BinaryOp" and t.attrs(i).get("opType") == "ADD")
    view.select(add)
    assert window.properties.title.text() == "<b>ADD</b> <small>(BinaryOp)</small>"
    assert "BinaryOp" in window.properties.text()
    # and what reads it names it as drawn: "from ADD", not "from BinaryOp" (a new-user try, on Pooling3D)
    (reader,) = t.consumers_of(add)
    view.select(reader)
    assert "from ADD" in window.properties.text() and "from BinaryOp" not in window.properties.text()
    # and which of the model's Convolutions: the name the canvas writes under it ("from Convolution" alone could be
    # any of four, a new-user try)
    conv = next(s for s in t.producers_of(add) if t.op_types[s] == "Convolution")
    assert view.short[conv], "the canvas names this Convolution"
    view.select(add)
    assert f"from Convolution {view.short[conv]}" in window.properties.text()


def test_keyboard_goes_to_producer_and_consumer(qtbot, window, samples):
    view = open_and_wait(qtbot, window, samples / "cnn.onnx")
    t = view.table
    relaid(qtbot, view, view.expand_all)
    add = next(i for i in range(t.node_count) if t.op_types[i] == "Add")
    view.select(add, center=True)
    view.canvas.setFocus()
    qtbot.keyClick(view.canvas, Qt.Key_Up)
    assert view.canvas.selected in t.producers_of(add)
    qtbot.keyClick(view.canvas, Qt.Key_Down)
    assert add in t.consumers_of(view.canvas.selected) or view.canvas.selected == add
    view.select(add)
    qtbot.keyClick(view.canvas, Qt.Key_Down)
    assert view.canvas.selected in t.consumers_of(add)


def test_control_flow_bodies_open_as_tabs(qtbot, window, samples):
    for name, attr in (("control_flow.onnx", "then_branch"), ("control_flow.mnn", "then_graph")):
        view = open_and_wait(qtbot, window, samples / name, shapes=False)
        t = view.table
        node = next(i for i in t.subgraphs if attr in t.subgraphs[i])
        view.select(node)
        assert f"open {attr}" in window.properties.text()
        sub = window.pane.open_subgraph(view, node, attr)
        qtbot.waitUntil(lambda: sub.scene is not None, timeout=20000)
        assert window.pane.tabs.count() >= 2 and window.pane.tabs.currentWidget() is sub
        assert sub.table is t.subgraphs[node][attr] and drawn_items(sub)
        window.pane._close_tab(window.pane.tabs.indexOf(sub))


def test_side_by_side_selection_is_linked(qtbot, window, samples):
    onnx_view = open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)
    mnn_view = open_and_wait(qtbot, window, samples / "moe_llm.mnn", second=True, shapes=False)
    assert window.linker is not None
    assert window.split.count() == 2 and mnn_view.canvas.width() > 300 and onnx_view.canvas.width() > 300
    assert drawn_items(mnn_view)
    t, m = onnx_view.table, mnn_view.table
    soft = t.ids.index("/model/layers.0/self_attn/Softmax")
    # linked once the node map proves the pair (never by names alone: test_gui_side_by_side)
    qtbot.waitUntil(lambda: window.linker.state == "linked", timeout=60000)
    onnx_view.select(soft)
    found = window.linker.counterparts(onnx_view, soft)
    assert found, "the MNN op computing the ONNX Softmax is linked"
    assert any("/model/layers.0/self_attn/Softmax_output_0" in [m.names[j]] + [m.tensor_names[k] for k in m.node_outputs(j)]
               for j in found)
    qtbot.waitUntil(lambda: mnn_view.canvas.marked.tolist() == sorted(found), timeout=20000)
    # and back: the MNN op leads to the ONNX node
    back = window.linker.counterparts(mnn_view, found[0])
    assert soft in back
    window.close_second()
    assert window.second is None


def test_bad_files_are_reported_and_the_app_stays_usable(qtbot, window, samples, tmp_path):
    view = open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    garbage = tmp_path / "garbage.mnn"
    garbage.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    bad_onnx = tmp_path / "broken.onnx"
    bad_onnx.write_bytes(b"\x08\x07\x12\x04oops" * 10)
    for path in (garbage, bad_onnx):
        with qtbot.waitSignal(window.load_failed, timeout=60000) as blocker:
            window.open_model(str(path))
        assert path.name in blocker.args[0]
        assert "\n" not in blocker.args[0] and "Traceback" not in blocker.args[0]
    for path in (empty, text, tmp_path / "missing.onnx"):
        with qtbot.waitSignal(window.load_failed, timeout=5000):
            assert not window.open_model(str(path))
    cards = window.notes.texts()
    assert len(cards) == window.notes.MAX
    assert any("empty" in c for c in cards) and any("unsupported file type" in c for c in cards)
    assert view.table.path.endswith("cnn.onnx") and view.scene is not None  # the open model is kept
    open_and_wait(qtbot, window, samples / "moe_llm.mnn", shapes=False)


def test_runner_crash_while_loading_shapes_is_reported(qtbot, make_window, samples, tmp_path):
    """The runner dies (SIGSEGV) while computing shapes: the graph still opens, a notification names the
    file and the crash, and the next request starts a fresh runner."""
    crash = tmp_path / "crashing-python"
    crash.write_text("#!/bin/sh\nkill -SEGV $$\n")
    crash.chmod(crash.stat().st_mode | stat.S_IEXEC)
    w = make_window(runner_python=str(crash))
    with qtbot.waitSignal(w.shapes_failed, timeout=60000) as blocker:
        view = open_and_wait(qtbot, w, samples / "cnn.onnx", shapes=False)
    assert "SIGSEGV" in blocker.args[0]
    assert view.scene is not None and drawn_items(view)
    card = w.notes.cards[-1]
    assert card.n.severity == "error" and card.n.subject == "cnn.onnx" and "runner died" in card.n.message
    assert "runner: died" in w.runner_label.text()
    w.runner.set_python(None)  # a working runner: the app carries on
    with qtbot.waitSignal(w.shapes_loaded, timeout=60000):
        open_and_wait(qtbot, w, samples / "moe_llm.onnx", shapes=False)


def test_settings_theme_and_recent_files_persist(qtbot, make_window, samples, settings_dir):
    w = make_window()
    open_and_wait(qtbot, w, samples / "cnn.onnx", shapes=False)
    w.set_theme("dark")
    assert QApplication.instance().palette().base().color().name() == "#1f232a"
    assert w.pane.main_view.canvas.pal.name == "dark"
    w.close()
    assert (settings_dir / "mnnscope" / "mnnscope.ini").is_file()
    assert cfg.theme() == "dark" and cfg.recent_files()[0] == str(samples / "cnn.onnx")
    w2 = make_window(theme=None)
    assert w2.theme == "dark"
    assert [a.text() for a in w2.recent_menu.actions()][0] == str(samples / "cnn.onnx")
    w2.set_theme("light")


def test_drop_a_file_to_open_it(qtbot, window, samples):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(samples / "encoder_block.onnx"))])
    ev = QDropEvent(QPointF(200, 200), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    with qtbot.waitSignal(window.model_loaded, timeout=60000):
        window.dropEvent(ev)
    assert window.pane.table.path.endswith("encoder_block.onnx")


def test_layout_runs_off_the_ui_thread(qtbot, window, tmp_path):
    """Expanding every scope of a 20k-node model: the UI thread keeps serving events meanwhile, and a new
    request replaces a stale one (only the last layout is shown)."""
    import onnx
    from PySide6.QtCore import QTimer

    from conftest import benchmark
    gen = benchmark("gen_large")
    path = tmp_path / "d20k.onnx"
    onnx.save(gen.make_decoder(20000), path)
    view = open_and_wait(qtbot, window, path, shapes=False)
    ticks = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start(10)
    layers = view.tree.index["/model/layers.3"]
    view.relayout(set(range(view.tree.n_scopes)))   # stale: replaced at once
    with qtbot.waitSignal(view.layout_ready, timeout=60000):
        view.relayout(view.tree.default_expanded() | {layers})
    timer.stop()
    assert layers in view.expanded and len(view.expanded) < 10
    assert len(view.scene.vg.leaves) < 1000
    with qtbot.waitSignal(view.layout_ready, timeout=60000):
        timer.start(10)
        view.expand_all()
    timer.stop()
    assert (view.scene.vg.leaves < view.tree.n_ops).sum() == 20000  # every op, beside the input/output nodes
    assert len(ticks) >= 3, "the UI thread was blocked during layout"
    view.canvas.fit_all()
    assert view.canvas._use_overview()  # far out, the pre-rendered overview stands in
    view.canvas.center_on(*_centre(view, 100), scale=1.0)
    assert 0 < len(drawn_items(view)) < 200


def test_notification_actions_are_buttons_and_keep_their_card(qtbot, window, monkeypatch):
    from mnnscope.gui.notifications import NotificationArea
    monkeypatch.setattr(NotificationArea, "AUTO_DISMISS_MS", 50)
    clicked = []
    plain = window.sink.notify("a plain note", "info", "x")
    acting = window.sink.notify("a note with a button", "info", "x",
                                actions=[("Do it", lambda: clicked.append("done"))])
    card = next(c for c in window.notes.cards if c.n is acting)
    assert [b.text() for b in card.buttons] == ["Do it"] and acting.actions[0][0] == "Do it"
    # a plain note leaves on its own; a card with a button waits for the user
    qtbot.waitUntil(lambda: all(c.n is not plain for c in window.notes.cards), timeout=5000)
    qtbot.wait(300)
    assert card in window.notes.cards and card.buttons[0].isVisible()
    assert window.notes.rect().contains(card.geometry())  # the area grew to hold the button row
    qtbot.mouseClick(card.buttons[0], Qt.LeftButton)
    assert clicked == ["done"] and card in window.notes.cards
    window.notes.dismiss(card)
    assert not window.notes.cards and not window.notes.isVisible()


def test_shortcuts_list_every_action_read_from_the_menus(qtbot, window):
    from PySide6.QtGui import QAction, QKeySequence
    window.actions_by_name["Keyboard Shortcuts"].trigger()
    dlg = window.shortcuts_dialog
    assert dlg is not None and dlg.isVisible()
    text = dlg.plain_text()
    with_keys = {name: a for name, a in window.actions_by_name.items() if not a.shortcut().isEmpty()}
    assert len(with_keys) >= 15 and {"Quit", "Convert to MNN"} <= set(with_keys)  # Quit had none on Linux
    for name, a in with_keys.items():
        assert name in text and a.shortcut().toString(QKeySequence.NativeText) in text, name
    assert "Convert to MNN" in text and "Ctrl+Shift+M" in text
    assert "producer / consumer" in text  # the graph's own keys, which are not actions
    # derived, not a table: an action added later shows up the next time
    extra = QAction("Profile Model", window)
    extra.setShortcut(QKeySequence("F5"))
    window.menuBar().actions()[-1].menu().addAction(extra)
    window.show_shortcuts()
    assert window.shortcuts_dialog is dlg and "Profile Model" in dlg.plain_text() and "F5" in dlg.plain_text()


def test_getting_started_names_the_menu_commands_as_they_are(qtbot, window):
    """Help had only Keyboard Shortcuts and About (a new-user try). Help > Getting Started walks the daily loops,
    naming each command by its menu path and shortcut as the menus have them now."""
    window.actions_by_name["Getting Started"].trigger()
    dlg = window.guide_dialog
    assert dlg is not None and dlg.isVisible()
    text = dlg.plain_text()
    for wanted in ("File \u203a Open (Ctrl+O)", "Run \u203a Profile (F5)",
                   "Run \u203a Compare with ONNX Runtime (Ctrl+F5)", "Model \u203a Convert to MNN (Ctrl+Shift+M)", "Run \u203a Reconvert and Re-run",
                   "Run \u203a Run Statistics (F7)", "Edit \u203a Find (Ctrl+F)",
                   "Run \u203a Generate Text (F6)"):  # the LLM loop too (tryout 66: the guide never named it)
        assert wanted in text, wanted
    assert "{" not in text and "}" not in text  # every placeholder replaced
    # a command the guide names that the menus lost breaks the guide, not silently
    from mnnscope.gui.guide import guide_html
    action = window.actions_by_name.pop("Run Statistics")
    try:
        with pytest.raises(KeyError):
            guide_html(window)
    finally:
        window.actions_by_name["Run Statistics"] = action


def test_mnn_conv_properties_show_weight_statistics(qtbot, window, samples):
    """.mnn weights get statistics like ONNX initializers: read from the file in a child process. The
    sample's layer1.conv1 has no BatchNorm to fold, so MNN keeps the ONNX weights verbatim."""
    import onnx
    from onnx import numpy_helper
    view = open_and_wait(qtbot, window, samples / "cnn.mnn")
    conv = view.table.ids.index("/layer1/conv1/Conv_output_0")
    view.select(conv)
    props = window.properties
    qtbot.waitUntil(lambda: "mean" in props.text() and "values [" in props.text(), timeout=30000)
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(samples / "cnn.onnx")).graph.initializer}
    text = props.text()
    arr = inits["layer1.conv1.weight"].astype(np.float64)
    assert f"min {arr.min():.4g}, max {arr.max():.4g}, mean {arr.mean():.4g}, std {arr.std():.4g}" in text
    bias = inits["layer1.conv1.bias"]  # a few numbers: shown as they are
    assert "values [" + ", ".join(f"{v:.6g}" for v in bias.tolist()) + "]" in text
    assert "statistics unavailable" not in text
