"""Window problems of tryout 8 (pytest-qt, offscreen, real MNN and ONNX Runtime): Reconvert and re-run with the real
Profile and Compare docks converts with the Convert dock's settings, so the setting a verdict names really changes
the numbers; the Profile dock starts on MNN and keeps a chosen engine across models; the Compare dock's summary
tells modes that failed from modes over tolerance.

Tryout 8: on PP-OCRv6 rec a user followed the verdict ("reconvert with --useGeluApproximation 0"), set GELU to exact
erf in the Convert dock and pressed Reconvert and re-run: "fp32: worst output rel_l2 0.00333 -> 0.00333" and the
same advice again, because the repeated comparison converted with the defaults. (The Convert dock's older tests
drive the repeat through stand-ins of the two docks; these use the docks themselves.)"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI

from PySide6.QtCore import Qt  # noqa: E402

from test_compare_models import build_outlier  # noqa: E402
from test_compare_verdict import build_gelu_amplified, build_zero_trip_loop  # noqa: E402
from test_gui import make_window, open_and_wait, relaid, settings_dir, window  # noqa: E402,F401

pytestmark = pytest.mark.gui
RUN_TIMEOUT = int(os.environ.get("MNNSCOPE_TEST_COMPARE_MS", 600_000))


def _exact_gelu():
    from mnnscope.inspector.convert.settings import ConvertSettings
    return ConvertSettings(gelu_approximation=False)


def _open(qtbot, window, path):
    """Open `path` in the main pane and wait for it there (a conversion's .mnn loading beside it emits the same
    model_loaded signal)."""
    open_and_wait(qtbot, window, path)
    qtbot.waitUntil(lambda: window.pane.path == str(path) and window.pane.main_view.scene is not None
                    and not window.pane.main_view.layout_busy, timeout=30000)


def _rerun(qtbot, window) -> dict:
    dock = window.panels["Convert"]
    window.show_dock("Convert")
    dock.set_settings(_exact_gelu())
    with qtbot.waitSignal(dock.rerun_done, timeout=RUN_TIMEOUT) as done:
        assert dock.reconvert_and_rerun()
    return done.args[0]


def test_reconvert_and_rerun_compares_with_the_setting_the_verdict_names(qtbot, window, tmp_path):
    model = build_gelu_amplified(tmp_path / "erf_gelu.onnx", written_out=True)
    open_and_wait(qtbot, window, model)
    compare = window.panels["Compare"]
    window.show_dock("Compare")
    compare.set_modes(["fp32"])
    with qtbot.waitSignal(compare.finished, timeout=RUN_TIMEOUT) as first:
        assert compare.run()
    fp32 = first.args[0]["modes"][0]
    assert fp32["verdict"] == "close" and "--useGeluApproximation 0" in fp32["cause"]
    # a node painted with its region's error says whose it is (an int64 Constant read "error introduced: 0.00399")
    view = window.pane.main_view
    qtbot.waitUntil(lambda: view.overlay is compare.overlay, timeout=10000)
    relaid(qtbot, view, view.expand_all)  # every op its own box
    owner = fp32["first_divergence"]["onnx_node"]
    region = [r["name"] for r in fp32["first_divergence"]["region"] if r["name"] != owner]
    texts = {n: view.overlay_text(view.table.index_of(n)) for n in region}
    assert region and any(f"(of {owner}'s region" in (t or "") for t in texts.values()), texts
    assert f"{owner}'s region" not in (view.overlay_text(view.table.index_of(owner)) or "")
    # a conversion in the dock, then Reconvert and re-run: the comparison converts for itself, so the reconversion
    # goes where the Output field says, beside the first (tryout 10: the dock promised "the next conversion writes
    # X.1.mnn beside it" and wrote over X.mnn)
    dock = window.panels["Convert"]
    window.show_dock("Convert")
    with qtbot.waitSignal(dock.conversion_done, timeout=RUN_TIMEOUT):
        assert dock.start()
    first_out = dock.last_result.output
    stamp = Path(first_out).stat().st_mtime_ns
    promised = dock.output.text()
    assert promised != first_out
    d = _rerun(qtbot, window)
    assert dock.last_result.output == promised and Path(first_out).stat().st_mtime_ns == stamp
    (mode,) = d["modes"]
    assert d["kind"] == "compare" and mode["mode"] == "fp32"
    assert mode["rel_l2_b"] < mode["rel_l2_a"] / 10, mode  # with the defaults again it was the same number
    after = compare.result["modes"][0]
    assert after["conversion"]["settings"]["gelu_approximation"] is False
    assert after["verdict"] == "match" and "--useGeluApproximation" not in after["cause"]
    assert "fp32: worst output rel_l2" in window.panels["Convert"].deltas.text()
    # ... and what it cost in speed (the exact GELU made PP-OCRv6 rec 2.25x slower and only the Runs dock said so)
    assert mode["ms_a"] > 0 and mode["ms_b"] > 0
    assert f"MNN {mode['ms_a']:.4g} \u2192 {mode['ms_b']:.4g} ms per run" in window.panels["Convert"].deltas.text()
    # a plain Run converts with the Convert dock's settings too (tryout 12: it used the defaults, and the verdict
    # asked for the GELU setting the dock held), and says so
    with qtbot.waitSignal(compare.finished, timeout=RUN_TIMEOUT) as again:
        assert compare.run()
        assert "converting with the Convert dock's GELU: exact erf" in compare.status.text()
    plain = again.args[0]["modes"][0]
    assert plain["conversion"]["settings"]["gelu_approximation"] is False and plain["verdict"] == "match"
    # and still says so when it is done (tryout 14: the start's line was overwritten by "done in ...")
    qtbot.wait(50)
    assert compare.status.text().startswith("done in") and "Convert dock's GELU: exact erf" in \
        compare.status.text()


def test_profile_starts_on_mnn_and_its_repeat_converts_with_the_dock_settings(qtbot, window, tmp_path, samples):
    model = build_gelu_amplified(tmp_path / "erf_gelu.onnx", written_out=True)
    open_and_wait(qtbot, window, model)
    profile = window.panels["Profile"]
    # an MNN debugger: F5 on an .onnx times MNN (converting it), not ONNX Runtime
    assert profile.engine.currentData() == "mnn"
    profile.apply_settings({"runs": 2, "warmup": 1})
    with qtbot.waitSignal(profile.finished, timeout=RUN_TIMEOUT) as first:
        window.actions_by_name["Profile"].trigger()
    assert first.args[0]["engine"] == "mnn"
    assert any("with default settings" in w for w in first.args[0]["warnings"])
    d = _rerun(qtbot, window)
    assert d["kind"] == "profile" and d["run_a"] == first.args[0]["run_id"] != d["run_b"]
    # F5 with the Convert dock's settings changed says so as it starts (a new user's F5 timed a full-int8 conversion
    # left there by "Reconvert with settings…", told only by a banner afterwards)
    with qtbot.waitSignal(profile.finished, timeout=RUN_TIMEOUT):
        window.actions_by_name["Profile"].trigger()
        assert "converted with the Convert dock's settings (GELU: exact erf)" in profile.status.text()
    assert any("with the given settings (gelu_approximation=False)" in w for w in profile.result["warnings"])
    # a plain profile of the .onnx on MNN converts with the dock's settings too (tryout 12, for Compare)
    with qtbot.waitSignal(profile.finished, timeout=RUN_TIMEOUT) as plain:
        window.actions_by_name["Profile"].trigger()
    assert any("with the given settings (gelu_approximation=False)" in w for w in plain.args[0]["warnings"])
    # on ONNX Runtime a reconversion changes nothing: the repeat says so instead of timing ORT again
    profile.apply_settings({"engine": "ort"})
    with qtbot.waitSignal(profile.finished, timeout=RUN_TIMEOUT):
        window.actions_by_name["Profile"].trigger()
    dock = window.panels["Convert"]
    with qtbot.waitSignal(dock.conversion_done, timeout=RUN_TIMEOUT):
        assert dock.reconvert_and_rerun()
    qtbot.waitUntil(lambda: "ran ONNX Runtime" in dock.deltas.text(), timeout=10000)
    # a chosen engine stays when another .onnx opens (it used to reset to ONNX Runtime at every open) ...
    status = profile.status.text()
    _open(qtbot, window, samples / "cnn.onnx")
    assert profile.engine.currentData() == "ort"
    assert "(another model)" in profile.status.text()
    # its "placed N% of the measured time on the graph" is not about this graph, and a row says whose op it is
    # (tryout 2026-12-04: the line stayed, a row said only "not placed on a node of this graph")
    assert profile.coverage.text() and profile.coverage.isHidden()
    profile.reveal_op(str(profile.ops_model.rows[0]["op"]))
    assert "in the profile of erf_gelu.onnx, not of the open model" in window.notes.texts()[-1]
    # ... and the result's own line comes back with its model
    _open(qtbot, window, model)
    assert profile.status.text() == status
    qtbot.waitUntil(lambda: not profile.coverage.isHidden(), timeout=5000)
    assert "profile" in (window.pane.main_view.overlay.meta if window.pane.main_view.overlay else {})  # its colours
    # an .mnn runs on MNN only
    _open(qtbot, window, samples / "cnn.mnn")
    assert profile.engine.currentData() == "mnn"


def test_compare_summary_tells_failed_modes_from_modes_over_tolerance(qtbot, window, tmp_path):
    # MNN crashes on this Loop in every mode (a failed run, its runner restarted), while fp16c (ONNX Runtime,
    # emulated) runs: "over tolerance in fp32, fp16c" listed the crash with the modes that were measured
    model = build_zero_trip_loop(tmp_path / "loop.onnx")
    open_and_wait(qtbot, window, model)
    compare = window.panels["Compare"]
    window.show_dock("Compare")
    compare.set_modes(["fp32", "fp16c"])
    with qtbot.waitSignal(compare.finished, timeout=RUN_TIMEOUT) as done:
        assert compare.run()
    verdicts = {m["mode"]: m["verdict"] for m in done.args[0]["modes"]}
    assert verdicts["fp32"] == "failed", verdicts
    text = compare.status.text()
    assert "failed: fp32" in text and "over tolerance in fp32" not in text, text
    # a failed mode can be reconverted with other settings: that is how it gets fixed (tryout 10: int8's mnnquant
    # crash asked for EMA; the button was greyed out)
    compare.show_mode("fp32")
    assert compare.mode["mode"] == "fp32" and compare.mode.get("error")
    assert compare.settings_btn.isEnabled()
    # MNN's message is the headline's: the line under the greyed fix does not print it a second time (a mnnquant
    # crash's paragraph twice, a new-user try)
    assert compare.fix_why.text() == "Keep in float is greyed out: fp32 has no comparison to fix: it failed (why: above)"
    assert compare.mode["error"][:40] in compare.headline.text() + compare.cause.text()


def test_another_models_results_are_read_only(qtbot, window, tmp_path, samples):
    # tryout 8: with PP-OCR open, the Compare dock still showed decoder.onnx's int8 results with "Keep these
    # operators in float" enabled; clicking it re-ran the decoder's fix
    model = build_outlier(tmp_path / "outlier.onnx")
    open_and_wait(qtbot, window, model)
    compare = window.panels["Compare"]
    window.show_dock("Compare")
    compare.set_modes(["int8w"])
    with qtbot.waitSignal(compare.finished, timeout=RUN_TIMEOUT):
        assert compare.run()
    done_text = compare.status.text()
    acting = (compare.fix_btn, compare.settings_btn, compare.side_btn)
    assert all(b.isEnabled() for b in acting)
    # fp16w's fix button is greyed out: its tooltip says why (tryout 9)
    assert "no per-layer switch" in compare._fix_tip(dict(compare.mode, mode="fp16w"))
    # an export says what it wrote where (the HTML report gave no sign on screen)
    report = compare.export_report(tmp_path / "r.html")
    assert any(f"saved the compare report r.html to {report}" in t for t in window.notes.texts())
    _open(qtbot, window, samples / "cnn.onnx")
    assert "(another model)" in compare.status.text()
    # its legend offers nothing to click (it said "click here to show this comparison's colours again", which
    # cannot work on another model's graph: tryout 2026-12-04)
    assert compare.legend.elsewhere is None and compare.legend.other_model == "outlier.onnx"
    assert compare.legend.cursor().shape() != Qt.PointingHandCursor
    assert not any(b.isEnabled() for b in acting)
    assert "these results are of outlier.onnx, not the open model" in compare.repro_btn.toolTip()
    assert not compare.fix()  # nor through the menu or a shortcut
    _open(qtbot, window, model)
    assert all(b.isEnabled() for b in acting)
    assert compare.status.text() == done_text  # not "Results of outlier.onnx (another model)" (tryout 12)
    assert compare.legend.other_model is None
    # ... and its colours are back on the graph (tryout 9: the results came back, the graph stayed grey)
    assert window.pane.main_view.overlay is compare.overlay is not None
    # another dock colours the graph: Properties' "on the graph" line follows at once, and the Compare legend stops
    # showing its error scale over the other colours (tryouts 10, 11: both kept the old words until a click)
    from mnnscope.inspector.model.overlay import Overlay
    view = window.pane.main_view
    item = view.table.index_of("/l2/MatMul")
    view.select(item)
    qtbot.waitUntil(lambda: "error introduced" in window.properties.text(), timeout=10000)
    other = Overlay.from_values("\u0394 ms, run 1 \u2192 run 2", {"/l2/MatMul": 0.5}, unit="ms")
    view.set_overlay(other)
    qtbot.waitUntil(lambda: "run 1" in window.properties.text(), timeout=10000)
    assert "error introduced" not in window.properties.text()
    assert compare.legend.elsewhere and "run 1" in compare.legend.elsewhere
    qtbot.mouseClick(compare.legend, Qt.LeftButton)  # click: this comparison's colours again
    assert view.overlay is compare.overlay and compare.legend.elsewhere is None
    qtbot.waitUntil(lambda: "error introduced" in window.properties.text(), timeout=10000)


def test_the_wheel_scrolls_the_convert_settings_without_changing_them(qtbot, window, samples):
    """Tryout 9: scrolling down the Convert dock's form, the wheel landed on "Optimize level" and switched it from
    "converter default" to 2. Unfocused combo and spin boxes pass the wheel to the dock; clicked, they take it."""
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    window.show_dock("Convert")
    dock = window.panels["Convert"]
    box = dock.form.widgets["optimize_level"]
    qtbot.waitUntil(box.isVisible)
    window.activateWindow()
    dock.setFocus()

    def wheel(w, steps=-1):
        centre = QPointF(w.rect().center())
        ev = QWheelEvent(centre, QPointF(w.mapToGlobal(w.rect().center())), QPoint(0, 0), QPoint(0, 120 * steps),
                         Qt.NoButton, Qt.NoModifier, Qt.NoScrollPhase, False)
        QApplication.sendEvent(w, ev)

    before = box.currentIndex()
    wheel(box)
    assert box.currentIndex() == before and not box.hasFocus()
    box.setFocus()
    qtbot.waitUntil(box.hasFocus)
    wheel(box)
    assert box.currentIndex() != before  # once clicked into, the wheel is the box's


def test_runs_wait_while_the_inputs_dock_refuses_its_inputs(qtbot, window, samples):
    """Tryout 9: the Inputs dock refused ids past the embedding's rows ("runs refuse these inputs"), yet F5 and
    Compare ran on default random ids without a word. They wait, and say which input."""
    open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)
    inputs = window.panels["Inputs"]
    window.show_dock("Inputs")
    (row,) = inputs.rows
    row.high.setText("200")
    row.high.textEdited.emit("200")
    assert "96 rows" in row.error.text()
    profile, compare, stats = (window.panels[n] for n in ("Profile", "Compare", "Statistics"))
    window.actions_by_name["Profile"].trigger()
    assert not compare.run() and not stats.run()
    assert not window.runner.job_busy("profile") and not window.runner.job_busy("compare")
    said = [t for t in window.notes.texts() if "did not start: the Inputs dock refuses its inputs" in t]
    assert len(said) == 3 and all("96 rows" in t for t in said), said
    # the docks say it too (Profile's still read "Run ▸ Profile (F5) to profile this one": a new user's try)
    assert profile.status.text().startswith("Profile did not start: the Inputs dock refuses its inputs")
    assert compare.status.text().startswith("Compare did not start: the Inputs dock refuses its inputs")
    row.high.setText("50")
    row.high.textEdited.emit("50")
    # fixed: the notice goes (it stayed up over a dock that showed no problem any more)
    assert not [t for t in window.notes.texts() if "did not start" in t], window.notes.texts()
    with qtbot.waitSignal(profile.finished, timeout=RUN_TIMEOUT) as done:
        window.actions_by_name["Profile"].trigger()
    assert done.args[0]["engine"] == "mnn"


def test_reopening_a_bigger_coloured_model_after_a_smaller_one(qtbot, window, samples):
    """Tryout 13: compare PP-OCRv6 rec (480 ops), open det (464), open rec again: its colours were applied to the
    scene still on screen, det's, with rec's op indices ("IndexError: index 464 is out of bounds"), and the load
    stopped there ("loading ..." for good). The colours wait for the model's own layout."""
    big, small = samples / "moe_llm.mnn", samples / "cnn.onnx"
    _open(qtbot, window, big)
    profile = window.panels["Profile"]
    profile.apply_settings({"engine": "mnn", "runs": 1, "warmup": 1})
    with qtbot.waitSignal(profile.finished, timeout=RUN_TIMEOUT):
        window.actions_by_name["Profile"].trigger()
    view = window.pane.main_view
    assert view.table.node_count > 12 and view.overlay is not None
    _open(qtbot, window, small)
    _open(qtbot, window, big)  # raised in _loaded before the fix (pytest-qt fails on it)
    qtbot.waitUntil(lambda: view.overlay is not None and view.scene.vg.tree is view.tree
                    and bool(view.canvas.fill_override), timeout=30000)
    assert "loading" not in window.model_label.text()


def test_reconvert_and_rerun_leads_with_the_docks_conversion_and_claims_nothing_of_unchanged_modes(qtbot, window,
                                                                                                      samples):
    """A new-user try (2026-12-04): fp16 weights set in the Convert dock after a comparison, then Reconvert and re-run.
    Every mode re-ran its own conversion, unchanged (the modes set their own precision), and the report read "low: ...
    21.02 -> 17.9 ms per run (1.17x faster)" for the same file, with the dock's conversion only in its last line. It
    now leads with the dock's conversion (the mode that runs it, and its error) and lists the unchanged modes in one
    line, without a speed claim."""
    _open(qtbot, window, samples / "cnn.onnx")
    compare = window.panels["Compare"]
    window.show_dock("Compare")
    compare.set_modes(["fp32", "fp16w"])
    with qtbot.waitSignal(compare.finished, timeout=RUN_TIMEOUT):
        assert compare.run()
    dock = window.panels["Convert"]
    window.show_dock("Convert")
    from mnnscope.inspector.convert.settings import ConvertSettings
    dock.set_settings(ConvertSettings(fp16=True))
    with qtbot.waitSignal(dock.rerun_done, timeout=RUN_TIMEOUT) as done:
        assert dock.reconvert_and_rerun()
    d = done.args[0]
    assert [m["mode"] for m in d["modes"]] == ["fp32", "fp16w"] and all(m["same_conversion"] for m in d["modes"])
    fp16w = compare.result["modes"][1]
    assert d["yours"]["mode"] == "fp16w" and d["yours"]["in_compare"] and d["yours"]["verdict"] == fp16w["verdict"]
    lines = dock.deltas.text()
    assert lines.index("your conversion (fp16 weights) is what fp16w runs: worst output rel_l2") < \
        lines.index("converted as before")
    assert "faster" not in lines and "slower" not in lines
    assert "fp32: worst output" not in lines and "fp16w: worst output" not in lines
    dock.set_settings(ConvertSettings())


def test_each_model_gets_its_own_last_comparison_back(qtbot, window, tmp_path, samples):
    """A user going between two models (an encoder and its decoder) compared each, then reopened the first: the dock
    said "Results of the second (another model)" and the first's comparison had to run again."""
    first = build_outlier(tmp_path / "outlier.onnx")
    second = tmp_path / "cnn.onnx"
    second.write_bytes((samples / "cnn.onnx").read_bytes())
    compare = window.panels["Compare"]
    window.show_dock("Compare")
    compare.set_modes(["fp32"])
    shown = {}
    for model in (first, second):
        _open(qtbot, window, model)
        with qtbot.waitSignal(compare.finished, timeout=RUN_TIMEOUT) as done:
            assert compare.run()
        shown[str(model)] = (done.args[0], compare.status.text(), compare.modes_bar.tabText(0))
    first_dirs = list((getattr(compare, "_shelf", {}).get(os.path.abspath(first)) or {}).get("dirs") or [])
    for model in (first, second, first):
        _open(qtbot, window, model)
        result, text, tab = shown[str(model)]
        assert compare.result["model"] == os.path.abspath(model) and compare.result["run_id"] == result["run_id"]
        assert compare.status.text() == text and compare.modes_bar.tabText(0) == tab
        assert compare.legend.other_model is None and compare.side_btn.isEnabled()
        qtbot.waitUntil(lambda: window.pane.main_view.overlay is compare.overlay is not None, timeout=10000)
    assert first_dirs and all(os.path.isdir(d) for d in first_dirs)  # its conversions (Side by side) were kept
    # a model never compared shows the last comparison as another model's, as before
    _open(qtbot, window, samples / "encoder_block.onnx")
    assert "(another model)" in compare.status.text() and compare.result["run_id"] == shown[str(first)][0]["run_id"]
    # closing the window removes the kept folders
    window.close()
    assert not any(os.path.isdir(d) for d in first_dirs)


def test_each_model_gets_its_own_last_profile_back(qtbot, window, tmp_path, samples):
    """As the Compare dock: two models profiled in turn, each reopened shows its own profile and colours, not "Profile
    of the other (another model)", and its notices are not sent again."""
    first = tmp_path / "cnn.onnx"
    first.write_bytes((samples / "cnn.onnx").read_bytes())
    second = tmp_path / "encoder_block.onnx"
    second.write_bytes((samples / "encoder_block.onnx").read_bytes())
    profile = window.panels["Profile"]
    profile.apply_settings({"runs": 2, "warmup": 1})
    shown = {}
    for model in (first, second):
        _open(qtbot, window, model)
        with qtbot.waitSignal(profile.finished, timeout=RUN_TIMEOUT) as done:
            window.actions_by_name["Profile"].trigger()
        shown[str(model)] = (done.args[0]["run_id"], profile.status.text(), len(profile.ops_model.rows))
    notes = len(window.notes.texts())
    for model in (first, second, first):
        _open(qtbot, window, model)
        run_id, text, rows = shown[str(model)]
        assert profile.result["run_id"] == run_id and profile.status.text() == text, model
        assert len(profile.ops_model.rows) == rows
        qtbot.waitUntil(lambda: "profile" in (window.pane.main_view.overlay.meta if window.pane.main_view.overlay
                                              else {}), timeout=10000)
    assert len(window.notes.texts()) == notes  # shown again, not said again
    _open(qtbot, window, samples / "moe_llm.onnx")  # never profiled: the last profile, as another model's
    assert "(another model)" in profile.status.text() and profile.result["run_id"] == shown[str(first)][0]


def test_a_short_compare_dock_says_its_notes_in_a_line(qtbot, window, tmp_path):
    """At 1024x700 a mode's notes (two of two lines each) put the tables below the fold: in a short dock they are a
    line, whole on hover."""
    from test_gui import docked_at_1024
    from test_real_models import real_model
    model = tmp_path / "det.onnx"  # int4w: the converter's float-min caution and its map almost zero on random data
    model.write_bytes(real_model("rapidocr", "models/PP-OCRv6_det_small.onnx").read_bytes())
    compare = docked_at_1024(qtbot, window, model, "Compare")
    compare.set_modes(["int4w"])
    with qtbot.waitSignal(compare.finished, timeout=RUN_TIMEOUT):
        assert compare.run()
    qtbot.waitUntil(lambda: compare.parentWidget().height() < 300, timeout=5000)
    m = compare.mode
    assert len(m["warnings"]) >= 2
    n = len(m["warnings"])
    assert compare.cause.text().endswith(f"\u26a0 {n} note{'s' if n > 1 else ''} on this mode (hover to read)")
    assert all(" ".join(w.split()) in " ".join(compare.cause.toolTip().split()) for w in m["warnings"])
    # a tall dock says them in full
    window.resize(1500, 1000)
    window.resizeDocks([window.docks["Compare"]], [600], Qt.Vertical)
    qtbot.waitUntil(lambda: all(w in compare.cause.text() for w in m["warnings"]), timeout=5000)


def test_a_short_compare_dock_scrolls_its_results_into_view(qtbot, window, samples):
    """At 1024x700 the Outputs table showed its header row under the settings after a run (a new-user try): a dock
    that scrolls puts the Run row and the result's mode tabs at its top."""
    from test_gui import docked_at_1024
    compare = docked_at_1024(qtbot, window, samples / "encoder_block.onnx", "Compare")
    compare.set_modes(["fp32"])
    with qtbot.waitSignal(compare.finished, timeout=RUN_TIMEOUT):
        assert compare.run()
    area = compare.scroll_area()
    qtbot.waitUntil(lambda: area.verticalScrollBar().value() > 0, timeout=5000)
    bar = compare.modes_bar.mapTo(area.viewport(), compare.modes_bar.rect().topLeft()).y()
    run = compare.run_btn.mapTo(area.viewport(), compare.run_btn.rect().topLeft()).y()
    # the Run row at the top of what the dock shows, the tabs under it in its top half (a later try found no Run
    # button after a run, the dock scrolled past it to the tabs)
    assert 0 <= run <= 8 and run < bar <= area.viewport().height() // 2, (run, bar, area.viewport().height())
    table = compare.outputs_table.mapTo(area.viewport(), compare.outputs_table.rect().topLeft()).y()
    assert table < area.viewport().height()  # the outputs table begins in view


def test_reconvert_and_rerun_checks_the_docks_conversion_where_no_mode_ticked_runs_it(qtbot, window, samples):
    """Helper 120 converted with 8-bit weights in the Convert dock while the Compare dock had int4w ticked, pressed
    Reconvert and re-run, and read "your conversion (8-bit weights) is not among the modes compared: tick int8w in the
    Compare dock to check it" above int4w's numbers: the re-run checked everything but what was converted. The re-run
    adds the mode that runs the dock's conversion (ticked in the Compare dock too)."""
    _open(qtbot, window, samples / "cnn.onnx")
    compare = window.panels["Compare"]
    window.show_dock("Compare")
    compare.set_modes(["int4w"])
    with qtbot.waitSignal(compare.finished, timeout=RUN_TIMEOUT):
        assert compare.run()
    dock = window.panels["Convert"]
    window.show_dock("Convert")
    from mnnscope.inspector.convert.settings import ConvertSettings
    dock.set_settings(ConvertSettings(weight_quant_bits=8))
    with qtbot.waitSignal(dock.rerun_done, timeout=RUN_TIMEOUT) as done:
        assert dock.reconvert_and_rerun()
    d = done.args[0]
    assert [m["mode"] for m in compare.result["modes"]] == ["int4w", "int8w"] and "int8w" in compare.modes()
    int8w = compare.result["modes"][1]
    assert d["yours"]["mode"] == "int8w" and d["yours"]["in_compare"] and d["yours"]["verdict"] == int8w["verdict"]
    lines = dock.deltas.text()
    assert "your conversion (8-bit weights) is what int8w runs: worst output rel_l2" in lines, lines
    assert "not among the modes compared" not in lines
    dock.set_settings(ConvertSettings())
