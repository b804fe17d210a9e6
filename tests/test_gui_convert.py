"""Model > Convert to MNN in the window (pytest-qt, offscreen), which shows the Convert dock: every failing
conversion fixture, a converter segfault included, ends as a notification naming the failure kind and node
while the window, its loaded graph and its own runner stay as they were; a good conversion gives an .mnn and an
ok notification that opens it side by side; Cancel ends a long conversion within seconds. No worker thread or
runner outlives a test."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import onnx
import pytest

from conftest import benchmark, require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QColor, QKeySequence  # noqa: E402

from mnnscope.gui.tasks import live_tasks  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixtures_convert import cases, model_copy  # noqa: E402,F401  (shared fixtures)
from test_gui import child_processes, make_window, open_and_wait, settings_dir  # noqa: E402,F401,F811

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def window(make_window):
    """A window shut down and deleted after the test, which fails if a worker thread or child process is left."""
    return make_window()


@pytest.fixture(scope="module")
def big_model(tmp_path_factory):
    """A 3000-node decoder: the converter needs seconds for it."""
    gen = benchmark("gen_large")
    path = tmp_path_factory.mktemp("gui_convert_big") / "decoder.onnx"
    onnx.save(gen.make_decoder(3000), str(path))
    return path


def open_dialog(qtbot, w):
    """Model > Convert to MNN: the Convert dock, shown."""
    w.actions_by_name["Convert to MNN"].trigger()
    dlg = w.panels["Convert"]
    assert w.docks["Convert"].isVisible() and dlg.isVisible()
    return dlg


def side_by_side_loaded(qtbot, w, path):
    """A good conversion of the model on screen opens its .mnn beside it: wait until that pane is there."""
    qtbot.waitUntil(lambda: w.second is not None and w.second.path == str(path)
                    and w.second.main_view.scene is not None, timeout=30000)
    qtbot.waitUntil(lambda: not live_tasks(), timeout=60000)  # its shapes and node map, on a loaded machine


def convert_and_wait(qtbot, dlg, timeout=60000) -> str:
    with qtbot.waitSignal(dlg.conversion_done, timeout=timeout) as blocker:
        assert dlg.start()
    return blocker.args[0]


def only_window_runner(qtbot, w):
    """Wait until no worker thread runs and the window's runner is the only child process left."""
    keep = {w.runner.client.pid} if w.runner.alive else set()
    qtbot.waitUntil(lambda: not live_tasks() and set(child_processes()) <= keep, timeout=10000)


def test_convert_action_is_enabled_for_onnx_and_its_shortcut_is_unique(qtbot, window, samples):
    action = window.actions_by_name["Convert to MNN"]
    assert not action.isEnabled()
    open_and_wait(qtbot, window, samples / "cnn.mnn", shapes=False)
    assert not action.isEnabled()
    open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    assert action.isEnabled()
    assert action.shortcut() == QKeySequence("Ctrl+Shift+M")
    keys = [a.shortcut().toString() for a in window.actions_by_name.values() if not a.shortcut().isEmpty()]
    assert len(keys) == len(set(keys)), "two actions share a shortcut (Qt then triggers neither)"


def test_every_failing_conversion_is_a_notification_and_the_app_survives(qtbot, window, cases, model_copy):
    # the window shows the model that segfaults the converter: the conversion must not disturb it
    crashing = cases["undefined_input"]
    view = open_and_wait(qtbot, window, crashing["path"])
    table, scene, runner_pid = view.table, view.scene, window.runner.client.pid
    label = window.model_label.text()
    assert runner_pid is not None
    dlg = open_dialog(qtbot, window)
    assert dlg.src == str(crashing["path"])
    for case, expected in cases.items():
        dlg.set_source(str(expected["path"]))
        dlg.bundle.setChecked(True)
        assert convert_and_wait(qtbot, dlg) == "failed", case
        r = dlg.last_result
        assert not r.ok and r.errors[0]["kind"] == expected["kind"], (case, r.errors)
        card = window.notes.cards[-1]
        assert card.n is dlg.last_notification and card.n.severity == "error"
        text = card.n.text()
        assert expected["kind"] in text and r.errors[0]["next_step"] in text
        if expected["node"]:
            assert expected["node"] in text
        # a bug-report bundle for MNN's failures, none for the user's own files (a weights file left behind: helper 117)
        from mnnscope.inspector.convert.service import NOT_A_BUG
        user_side = expected["kind"] in NOT_A_BUG
        assert (r.bundle is None) if user_side else (r.bundle and Path(r.bundle).is_dir() and r.bundle in text), case
        assert not Path(dlg.output.text()).exists()  # a failed conversion writes nothing where asked
        only_window_runner(qtbot, window)
        # the window, its graph and its runner are untouched
        # (a failure's diagnostic may reveal its node, expanding scopes: a new layout of the same model)
        assert window.isVisible() and window.pane.table is table and view.scene.vg.tree is scene.vg.tree
        assert window.model_label.text() == label and window.runner.client.pid == runner_pid
        assert window.runner.alive
        buttons = {b.text(): b for b in card.findChildren(type(dlg.side_btn))}
        if case == "undefined_input":
            assert "SIGSEGV" in text  # the converter segfaulted in its own runner
            log = dlg.log.toPlainText()
            assert "has empty input" in log.split("before it died")[-1]  # the lines the crash cut off, from the file
            qtbot.mouseClick(buttons["Show node"], Qt.LeftButton)  # the failing node, in the window's graph
            qtbot.waitUntil(lambda: view.canvas.selected == table.ids.index(expected["node"]), timeout=20000)
            qtbot.waitUntil(lambda: not view.layout_busy, timeout=20000)
            scene = view.scene  # revealing the node opened its scope: a new layout, on purpose
        else:
            assert "Show node" not in buttons  # that model is not the one on screen
        last = [x for x in r.log_text.splitlines() if x.strip() and not x.startswith("[DumpPass]")][-1]
        assert dlg.log.toPlainText().splitlines().count(last) == 1, case  # shown, and not twice
        bar = dlg.log.verticalScrollBar()
        qtbot.waitUntil(lambda: bar.value() == bar.maximum(), timeout=2000)  # the end of the log shows
        assert ("Open bug report" in buttons) != user_side
    # and the app carries on: a good model converts
    dlg.set_source(str(model_copy))
    assert convert_and_wait(qtbot, dlg) == "ok"


def test_good_conversion_notifies_and_opens_side_by_side(qtbot, window, model_copy):
    open_and_wait(qtbot, window, model_copy, shapes=False)
    dlg = open_dialog(qtbot, window)
    assert dlg.output.text() == str(model_copy.with_suffix(".mnn"))  # beside the model by default
    dlg.fp16.setChecked(True)
    # the name says the precision (the default, fp16 and int8w conversions were cnn.mnn, cnn.1.mnn, cnn.2.mnn)
    out = model_copy.with_name("cnn.fp16.mnn")
    assert dlg.output.text() == str(out)
    assert convert_and_wait(qtbot, dlg) == "ok"
    r = dlg.last_result
    assert r.ok and out.stat().st_size > 0 and r.size_bytes == out.stat().st_size
    assert r.settings.fp16 and "--fp16" in r.argv
    assert dlg.log.toPlainText().count("\n") > 5 and "Converted Success" in dlg.log.toPlainText()
    counts = r.node_map.counts()
    note = window.notes.cards[-1].n
    assert note.severity == "info" and note.subject == "cnn.onnx"
    assert "cnn.fp16.mnn" in note.message and f"{counts['fused']} fused" in note.message
    side_by_side_loaded(qtbot, window, out)  # opened beside its model without asking, node map linked
    only_window_runner(qtbot, window)
    assert window.linker is not None
    # the pane beside shows it already: neither the notice (tryout 6) nor the dock (a new-user try, 2026-12-04)
    # offers a button to open it again; the dock's comes back after Close Side by Side
    assert "Open side by side" not in [label for label, _ in note.actions]
    assert not dlg.side_btn.isVisible()
    assert "none" in dlg.diag_head.text() and "so far" not in dlg.diag_head.text()  # a finished conversion's
    window.close_second()
    assert dlg.side_btn.isVisible()
    with qtbot.waitSignal(window.model_loaded, timeout=60000) as blocker:
        qtbot.mouseClick(dlg.side_btn, Qt.LeftButton)
    assert blocker.args[0] == str(out)
    qtbot.waitUntil(lambda: window.second is not None and window.second.main_view.scene is not None, timeout=30000)
    assert window.linker is not None and window.pane.table.path == str(model_copy)
    assert not dlg.side_btn.isVisible()
    # after the success the dialog does not warn about the file it just wrote: the next conversion gets a
    # fresh name, and replacing the written file is the user's explicit choice
    assert "exists and will be replaced" not in dlg.output_note.text()
    assert dlg.output.text() == str(model_copy.with_name("cnn.fp16.1.mnn"))
    assert "cnn.fp16.mnn was just written" in dlg.output_note.text() and dlg.replace_btn.isVisible()
    # same settings as that conversion: the note says another would be a copy (a new-user try made cnn.1.mnn so)
    assert "beside it. The settings are those it was converted with: converting again would give the same file." \
        in dlg.output_note.text(), dlg.output_note.text()
    dlg.fp16.setChecked(False)
    assert "the same file" not in dlg.output_note.text()
    assert dlg.output.text() == str(model_copy.with_name("cnn.mnn"))  # float weights again: the plain name
    dlg.fp16.setChecked(True)
    assert dlg.output.text() == str(model_copy.with_name("cnn.fp16.1.mnn"))
    # and the one after that goes on counting (cnn.fp16.2.mnn, not cnn.fp16.1.1.mnn)
    assert convert_and_wait(qtbot, dlg) == "ok" and dlg.last_result.output == str(model_copy.with_name("cnn.fp16.1.mnn"))
    assert dlg.output.text() == str(model_copy.with_name("cnn.fp16.2.mnn"))
    assert "cnn.fp16.1.mnn was just written" in dlg.output_note.text()
    assert dlg.replace_btn.text() == "Replace cnn.fp16.1.mnn"
    # an existing output is named before it is replaced, and only replaced when chosen
    dlg.set_source(str(model_copy))
    assert dlg.output.text() == str(model_copy.with_name("cnn.fp16.2.mnn"))  # never an existing file by default
    assert "cnn.fp16.mnn exists" in dlg.output_note.text() and dlg.replace_btn.text() == "Replace cnn.fp16.mnn"
    qtbot.mouseClick(dlg.replace_btn, Qt.LeftButton)
    assert dlg.output.text() == str(out) and not dlg.replace_btn.isVisible()
    assert "will be replaced" in dlg.output_note.text()


def test_side_by_side_for_a_model_without_a_conversion_offers_to_convert_it(qtbot, window, model_copy):
    """File > Open Side by Side on an .onnx with no .mnn beside it: a new-user try found a file dialog with nothing
    to choose; the conversion, opened beside with linked selection, is one click now (or a file, or nothing)."""
    from PySide6.QtCore import QTimer
    open_and_wait(qtbot, window, model_copy, shapes=False)

    def answer(text):
        def click():
            box = window.offer_box
            assert box is not None and "cnn.onnx has no .mnn beside it" in box.text()
            next(b for b in box.buttons() if b.text() == text).click()
        QTimer.singleShot(200, click)
    answer("Cancel")
    window.ask_open_second()
    assert window.second is None and not window.panels["Convert"].busy
    answer("Convert and open beside")
    window.ask_open_second()
    assert window.docks["Convert"].isVisible() and window.panels["Convert"].busy
    side_by_side_loaded(qtbot, window, model_copy.with_suffix(".mnn"))
    assert window.linker is not None
    only_window_runner(qtbot, window)
    # a conversion beside it now: the file dialog, no question (window.offer_box stays None)
    window.close_second()
    assert not window._offer_conversion() and window.offer_box is None


def test_cancel_ends_a_long_conversion_quickly(qtbot, window, model_copy, big_model):
    open_and_wait(qtbot, window, model_copy, shapes=False)
    dlg = open_dialog(qtbot, window)
    dlg.set_source(str(big_model))
    assert dlg.start()
    qtbot.waitUntil(lambda: dlg.stage.text() == "converting", timeout=30000)
    qtbot.wait(300)
    assert dlg.busy and dlg.cancel_btn.text() == "Cancel" and dlg.progress.isVisible()
    assert not dlg.convert_btn.isEnabled() and not dlg.fp16.isEnabled() and not dlg.output.isEnabled()
    assert not dlg.browse_btn.isEnabled()  # the output cannot change under a running conversion
    t0 = time.monotonic()
    with qtbot.waitSignal(dlg.conversion_done, timeout=5000) as blocker:
        qtbot.mouseClick(dlg.cancel_btn, Qt.LeftButton)
    assert blocker.args[0] == "cancelled" and not dlg.busy
    only_window_runner(qtbot, window)  # the converter's runner was ended, its thread finished
    assert time.monotonic() - t0 < 5
    assert not Path(dlg.output.text()).exists()
    assert "cancelled" in window.notes.cards[-1].n.message
    assert dlg.convert_btn.isEnabled() and dlg.browse_btn.isEnabled() and dlg.cancel_btn.text() == "Hide"
    # usable afterwards: the next conversion works
    dlg.set_source(str(model_copy))
    assert convert_and_wait(qtbot, dlg) == "ok"
    assert Path(dlg.last_result.output).stat().st_size > 0


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_model_folder_sends_the_output_to_a_run_folder(tmp_path):
    from mnnscope.gui.convertoutput import default_output
    from mnnscope.inspector.convert.service import runs_root
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "m.onnx").write_bytes(b"")
    assert default_output(str(folder / "m.onnx")) == (str(folder / "m.mnn"), "")
    folder.chmod(0o555)
    try:
        out, note = default_output(str(folder / "m.onnx"))
    finally:
        folder.chmod(0o755)
    assert Path(out).name == "m.mnn" and Path(out).parent.parent == runs_root() and "read-only" in note


def plain(label) -> str:
    """What a rich-text label reads as on screen."""
    from PySide6.QtGui import QTextDocument
    doc = QTextDocument()
    doc.setHtml(label.text())
    return doc.toPlainText()


def test_the_default_output_never_replaces_an_existing_file(tmp_path, samples):
    from mnnscope.gui.convertoutput import default_output
    src = tmp_path / "m.onnx"
    src.write_bytes(b"")
    (tmp_path / "m.mnn").write_bytes(b"old")
    assert default_output(str(src)) == (str(tmp_path / "m.1.mnn"), "")
    (tmp_path / "m.1.mnn.weight").write_bytes(b"old")  # a weight file alone takes the name too
    assert default_output(str(src))[0] == str(tmp_path / "m.2.mnn")
    # a bundled sample's .mnn ships with the app: its conversion goes to a run folder, never beside it
    out, note = default_output(str(samples / "cnn.onnx"))
    assert Path(out).parent != samples and Path(out).name == "cnn.mnn" and not Path(out).exists()
    assert "bundled sample" in note
    # a model a pip package ships: not into the package's install folder (a new-user try's default output was
    # site-packages/rapidocr/models/PP-OCRv6_rec_small.mnn)
    from mnnscope.inspector.convert.service import runs_root
    pkg = tmp_path / "lib" / "python3.11" / "site-packages" / "somepkg" / "models"
    pkg.mkdir(parents=True)
    (pkg / "det.onnx").write_bytes(b"")
    out, note = default_output(str(pkg / "det.onnx"))
    assert Path(out).name == "det.mnn" and Path(out).parent.parent == runs_root()
    assert "inside an installed Python package" in note


def test_a_new_model_opens_the_dialog_without_the_last_models_log(qtbot, window, cases, model_copy):
    open_and_wait(qtbot, window, cases["custom_domain"]["path"], shapes=False)
    dlg = open_dialog(qtbot, window)
    dlg.bundle.setChecked(False)
    assert convert_and_wait(qtbot, dlg) == "failed"
    assert dlg.log.toPlainText() and dlg.result_label.text() and dlg.node_btn.isVisible()
    window.docks["Convert"].hide()
    open_and_wait(qtbot, window, model_copy, shapes=False)
    assert open_dialog(qtbot, window) is dlg and dlg.src == str(model_copy)
    assert dlg.log.toPlainText() == "" and dlg.result_label.text() == "" and dlg.last_result is None
    assert not dlg.node_btn.isVisible() and not dlg.report_btn.isVisible()
    only_window_runner(qtbot, window)


def test_a_failure_marks_the_node_and_shows_fixes_report_and_the_whole_log(qtbot, window, samples):
    """The bundled unsupported_op sample (Hardmax, and Mish: an ONNX function that an older opset avoids)."""
    before = sorted(p.name for p in samples.iterdir())
    view = open_and_wait(qtbot, window, samples / "unsupported_op.onnx", shapes=False)
    dlg = open_dialog(qtbot, window)
    assert Path(dlg.output.text()).parent != samples and "bundled sample" in dlg.output_note.text()
    dlg.bundle.setChecked(True)
    assert convert_and_wait(qtbot, dlg, timeout=120000) == "failed"
    r = dlg.last_result
    node = next(e["node"] for e in r.errors if e.get("node"))
    # the failing node is selected and centred on the graph without asking, and the dialog can show it again
    qtbot.waitUntil(lambda: view.canvas.selected == view.table.ids.index(node), timeout=20000)
    qtbot.waitUntil(lambda: not view.layout_busy, timeout=20000)
    assert dlg.node_btn.isVisible() and dlg.report_btn.isVisible()
    view.select(-1)
    # every failing node stays outlined once the selection moves on (tryout 2026-12-04: one click on the canvas
    # and Hardmax looked like any other node; Mish was never marked)
    failing = {view.table.ids.index(e["node"]) for e in r.errors if e.get("node")}
    assert {view.table.op_types[i] for i in failing} >= {"Hardmax", "Mish"}
    assert set(view.canvas.failed.tolist()) == failing
    # red, not in the search's colour (helper 117 took Hardmax for any other node); a search leaves them red
    hard = next(i for i in failing if view.table.op_types[i] == "Hardmax")
    view.show_search()
    view.search_bar.set_query("Mish", "type")
    assert len(view.canvas.marked) > 0
    assert set(view.canvas.failed.tolist()) == failing
    view.reveal(hard)
    view.select(-1)
    qtbot.waitUntil(lambda: not view.layout_busy, timeout=20000)
    sc, c = view.scene, view.canvas
    lf = int(sc.leaf_of_item[hard])
    img = c.grab().toImage()
    dpr = img.devicePixelRatio()
    at = ((sc.x0[lf] + 4) * c.scale + c.tx, (sc.y0[lf] + sc.y1[lf]) / 2 * c.scale + c.ty)  # inside, left of its title
    # (hatched: the reddest pixel of a small patch, between the hatch's light lines)
    x, y = int(at[0] * dpr), int(at[1] * dpr)
    px = max((QColor(img.pixel(x + dx, y + dy)) for dx in range(4) for dy in range(-3, 4)),
             key=lambda q: q.red() - q.green())
    assert px.red() > 170 and px.green() < 120 and px.blue() < 120, px.getRgb()
    qtbot.mouseClick(dlg.node_btn, Qt.LeftButton)
    qtbot.waitUntil(lambda: view.canvas.selected == view.table.ids.index(node), timeout=20000)
    # every error's own next step is in the dialog: Mish's is the opset to export with
    outcome = plain(dlg.result_label)
    assert {e["op_type"] for e in r.unsupported_ops} >= {"Hardmax", "Mish"}
    for e in r.errors:
        assert e["next_step"] in outcome, e
    assert "opset 17 or lower" in outcome and r.bundle in outcome
    # the log runs to the end: every line of the log file, then how the run ended (after the reducer's probes)
    log = dlg.log.toPlainText().splitlines()
    for line in r.log_text.splitlines():
        if line.strip() and not line.startswith("[DumpPass]"):
            assert line in log, line
    probes = [k for k, x in enumerate(log) if "reducing: probe" in x]
    written = log.index(f"\u2014 bug-report bundle written: {r.bundle}")
    assert probes and written > probes[-1] and log[-1].startswith("\u2014 finished after")
    # the bug report opens inside the app, and its path can be copied
    qtbot.mouseClick(dlg.report_btn, Qt.LeftButton)
    viewer = dlg.report_viewer
    assert viewer is not None and viewer.isVisible() and viewer.bundle == r.bundle
    assert "Mish" in viewer.report.toPlainText() and "Next step" in viewer.report.toPlainText()
    assert "reduced.onnx" in viewer.files.toPlainText()
    qtbot.mouseClick(viewer.copy_path_btn, Qt.LeftButton)
    from PySide6.QtGui import QGuiApplication
    assert QGuiApplication.clipboard().text() == r.bundle
    # the notification's "Open bug report" opens the same viewer
    card = window.notes.cards[-1]
    buttons = {b.text(): b for b in card.findChildren(type(dlg.side_btn))}
    viewer.close()
    qtbot.mouseClick(buttons["Open bug report"], Qt.LeftButton)
    assert dlg.report_viewer is viewer and viewer.isVisible()
    viewer.close()
    # a later conversion that succeeds: the failed one's card still opens its own bundle (helper 117 pressed it after
    # converting with custom ops allowed: nothing opened, the last conversion had no bundle)
    from mnnscope.inspector.convert.settings import ConvertSettings
    dlg.set_settings(ConvertSettings(allow_custom_op=True))
    assert convert_and_wait(qtbot, dlg, timeout=120000) == "ok" and dlg.last_result.bundle is None
    if card in window.notes.cards:
        qtbot.mouseClick(buttons["Open bug report"], Qt.LeftButton)
    else:
        card.n.actions[[a for a, _ in card.n.actions].index("Open bug report")][1]()
    assert dlg.report_viewer.isVisible() and dlg.report_viewer.bundle == r.bundle
    dlg.report_viewer.close()
    assert sorted(p.name for p in samples.iterdir()) == before  # the samples stay as shipped
    only_window_runner(qtbot, window)


def test_the_dialog_and_its_notices_follow_the_open_model(qtbot, window, model_copy, samples):
    """A conversion's buttons act only while the window shows the model converted: opening another model
    takes its notices away, points an idle dock at the new .onnx (at nothing for an .mnn: Convert is off),
    and a button that outlived its model says so instead of pairing unrelated files."""
    open_and_wait(qtbot, window, model_copy, shapes=False)
    dlg = open_dialog(qtbot, window)
    assert convert_and_wait(qtbot, dlg) == "ok"
    done = dlg.last_result
    side_by_side_loaded(qtbot, window, done.output)
    only_window_runner(qtbot, window)
    # a notice with a button about the converted model (the conversion's own offers none: it is open beside)
    window.sink.notify("a finding", "info", model_copy.name, actions=[("Show node", lambda: None)])
    assert any(c.n.actions for c in window.notes.cards)
    other = open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)
    assert other is not None
    assert not any(c.n.actions for c in window.notes.cards), "a notice's buttons would act on the new model"
    assert dlg.isVisible() and dlg.src == str(samples / "moe_llm.onnx") and dlg.last_result is None
    assert dlg.log.toPlainText() == ""
    # a button kept from the earlier conversion (here: called directly) refuses and says why
    dlg.set_source(str(model_copy))
    dlg.last_result = done
    dlg.open_side_by_side()
    assert window.second is None
    assert any("that conversion was of" in c.n.message for c in window.notes.cards)
    open_and_wait(qtbot, window, samples / "cnn.mnn", shapes=False)
    assert dlg.src is None and not dlg.convert_btn.isEnabled() and not dlg.start()
    assert "no .onnx model to convert" in dlg.problems.text()


def test_the_dock_and_dialogs_stay_on_the_screen(qtbot, window, model_copy):
    """The Convert dock's buttons, the shortcuts dialog and the bug-report viewer fit the screen they open on
    (at 1024x700 the old convert dialog's buttons were below its bottom edge)."""
    from mnnscope.gui.shortcuts import show_shortcuts
    window.resize(1024, 700)
    open_and_wait(qtbot, window, model_copy, shapes=False)
    area = window.screen().availableGeometry()
    dock = open_dialog(qtbot, window)
    qtbot.waitUntil(lambda: dock.convert_btn.isVisible(), timeout=5000)
    for b in (dock.convert_btn, dock.cancel_btn, dock.preflight_btn, dock.rerun_btn):
        g = b.rect().translated(b.mapToGlobal(b.rect().topLeft()))
        assert area.contains(g) and b.visibleRegion().boundingRect() == b.rect(), (b.text(), g, area)
    # the middle column scrolls only when its least height does not fit: it asked its log's preferred height (293
    # px in 196) and scrolled, the log's scroll bar inside its own (helper 79's try at 1024x700)
    qtbot.wait(50)
    assert dock.mid_scroll.verticalScrollBar().maximum() == 0, dock.mid_scroll.widget().height()
    assert dock.log.visibleRegion().boundingRect() == dock.log.rect()
    dlg = show_shortcuts(window)
    assert area.contains(dlg.geometry()), (type(dlg).__name__, dlg.geometry(), area)
    dlg.hide()


def test_the_default_output_name_says_the_precision(qtbot, window, model_copy, tmp_path):
    """A new user's default, fp16 and int8w conversions were model.mnn, model.1.mnn and model.2.mnn: nothing in
    the names said which was which. The dock's own name follows the settings; a name the user chose stays."""
    from mnnscope.inspector.convert.settings import ConvertSettings, Int8Settings
    open_and_wait(qtbot, window, model_copy, shapes=False)
    dlg = open_dialog(qtbot, window)
    for settings, name in ((ConvertSettings(weight_quant_bits=8), "cnn.int8w.mnn"),
                           (ConvertSettings(weight_quant_bits=4), "cnn.int4w.mnn"),
                           (ConvertSettings(int8=Int8Settings()), "cnn.int8.mnn"),
                           (ConvertSettings(fp16=True), "cnn.fp16.mnn"), (ConvertSettings(), "cnn.mnn")):
        dlg.set_settings(settings)
        assert dlg.output.text() == str(model_copy.with_name(name)), settings
    mine = str(tmp_path / "mine.mnn")
    dlg.output.setText(mine)
    dlg.set_settings(ConvertSettings(fp16=True))
    assert dlg.output.text() == mine


def test_a_conversion_opened_beside_its_model_stays_out_of_recent_files(qtbot, make_window, model_copy,
                                                                         settings_dir):
    """Every conversion opened beside its model went into File > Open Recent and pushed the user's own models out."""
    from mnnscope.gui import settings as cfg
    w = make_window()
    open_and_wait(qtbot, w, model_copy, shapes=False)
    dlg = open_dialog(qtbot, w)
    assert convert_and_wait(qtbot, dlg) == "ok"
    written = dlg.last_result.output
    side_by_side_loaded(qtbot, w, Path(written))
    assert cfg.recent_files() == [str(model_copy)]
    # opened by the user (File > Open), it is theirs to find again
    with qtbot.waitSignal(w.model_loaded, timeout=60000):
        w.user_open(written)
    assert cfg.recent_files()[0] == written
