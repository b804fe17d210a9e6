"""The Text dock: a generation of the MoE sample through the window (a real child process, runner, MNN and ONNX
Runtime), what it shows (tokens, per-token latency, agreement per step, routing heat map) and the first
mismatching step's layerwise first divergence selected on the graph by clicking its row.

MNNSCOPE_TEXT_SCREENSHOT=PATH saves the window after the run (the README's Text dock picture)."""
from __future__ import annotations

import os

import numpy as np
import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")

from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401
from test_generate import PROMPT, STEPS, _greedy_reference  # noqa: E402

pytestmark = pytest.mark.gui


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MNNSCOPE_DATA_DIR", str(tmp_path / "data"))


def test_text_dock_generates_compares_and_opens_the_first_mismatch(qtbot, window, samples, ui_watchdog):
    # Warm-up, not what this test measures: a process's first paint builds glyph caches, a dock's first show
    # lays out its pyqtgraph plot, the first node selected fills Properties (weights) for the first time, and
    # pyqtgraph's first plot with symbols on a log axis builds its symbol atlas (a short fp32 generation).
    ui_watchdog.pause()
    warm = open_and_wait(qtbot, window, samples / "cnn.onnx")
    window.show_dock("Text")
    warm.reveal(warm.table.names.index("/layer1/conv1/Conv"))
    view = open_and_wait(qtbot, window, samples / "moe_llm.onnx")
    panel = window.panels["Text"]
    assert panel.tokenizer.text() == str(samples / "tokenizer.json")  # found beside the sample
    panel.prompt.setText(PROMPT)
    panel.steps.setValue(2)
    with qtbot.waitSignal(panel.finished, timeout=300000) as blocker:
        assert panel.run()
    assert blocker.args[0]["agreement_top1"] == 1.0 and blocker.args[0]["mode"] == "fp32"
    qtbot.wait(300)
    ui_watchdog.resume()
    panel.steps.setValue(STEPS)
    panel.mode.setCurrentText("int4w")
    assert panel.compare.isEnabled() and panel.compare.isChecked()
    with qtbot.waitSignal(panel.finished, timeout=300000) as blocker:
        assert panel.run()
    r = blocker.args[0]
    qtbot.wait(300)   # the results are painted in their own turn of the event loop, as before a user's click
    reference, _ = _greedy_reference(STEPS)
    assert r["reference"]["tokens"] == reference and r["mode"] == "int4w"
    first = r["first_mismatch_step"]
    assert first is not None and r["tokens"][:first] == reference[:first]
    # the steps table: one row per token, the mismatching ones marked
    t = panel.steps_table
    assert t.rowCount() == STEPS
    assert [int(t.item(i, 1).text()) for i in range(STEPS)] == r["tokens"]
    assert [int(t.item(i, 4).text()) for i in range(STEPS)] == reference
    assert [t.item(i, 5).text() == "yes" for i in range(STEPS)] == r["agree_per_step"]
    # "agree" compares what the row shows: MNN's teacher-forced argmax ("MNN forced") with the reference
    forced = [int(t.item(i, 7).text()) for i in range(STEPS)]
    assert forced == r["teacher_forced"]["argmax"]
    assert [f == ref for f, ref in zip(forced, reference)] == r["agree_per_step"]
    assert float(t.item(0, 3).text()) == pytest.approx(r["prefill_ms"], abs=1e-3)
    # where a prefill and a decode step spend their time, per op type, under the status line
    split = r["op_split"]
    slowest = max(split["by_type"], key=lambda t: split["by_type"][t]["decode_ms"])
    assert f"decode step {split['decode_ms']:.2f} ms" in panel.status.text() and slowest in panel.status.text()
    # the agreement plot: KL per step, mismatches marked
    xs, ys = panel.kl_curve.getOriginalDataset()  # (getData gives log10 values: the axis is logarithmic)
    assert list(xs) == list(range(STEPS))
    np.testing.assert_allclose(ys, np.maximum(r["kl_per_step"], 1e-16))
    mx, my = panel.miss_points.getOriginalDataset()
    misses = [i for i, a in enumerate(r["agree_per_step"]) if not a]
    assert list(mx) == misses and list(my) == [max(r["kl_per_step"][i], 1e-16) for i in misses]
    # the routing heat map: routers x (reference experts, MNN experts) = the loads
    rt = panel.routing
    assert rt.rowCount() == 2 and rt.columnCount() == 8
    for row, s in enumerate(r["routing"].values()):
        assert [int(rt.item(row, c).text()) for c in range(8)] == s["load"]["reference"] + s["load"]["mnn"]
    # clicking another step says only the first mismatch has a comparison; clicking it selects its node
    qtbot.wait(50)
    other = next(i for i in range(STEPS) if i != first)
    assert not panel.open_step(other)
    qtbot.wait(50)
    node = r["first_divergence"]["node"]
    ui_watchdog.check()   # the run and its results on the UI thread
    # Revealing the node expands its collapsed scopes: the graph view's relayout and scene rebuild (about
    # 100 ms of UI-thread CPU on the loaded 2-core machine), which the graph view's own tests measure.
    ui_watchdog.pause()
    panel.steps_table.cellClicked.emit(first, 0)
    want = view.table.names.index(node)
    qtbot.waitUntil(lambda: not view.layout_busy and view.canvas.selected == want, timeout=30000)
    assert node in panel.status.text()
    if os.environ.get("MNNSCOPE_TEXT_SCREENSHOT"):
        qtbot.wait(300)
        window.grab().save(os.environ["MNNSCOPE_TEXT_SCREENSHOT"])


def test_generate_text_is_greyed_for_a_model_that_is_no_decoder(qtbot, window, samples):
    """A CNN has no token ids: Generate Text (button and F6) greyed with the reason, instead of a run that fails
    in a child process; a decoder opened after it makes it available again."""
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    panel = window.panels["Text"]
    assert not panel.run_button.isEnabled() and not panel.run_action.isEnabled()
    assert "no token-id input" in panel.status.text() and "cnn.onnx" in panel.status.text()
    panel.prompt.setText(PROMPT)
    assert not panel.run()  # called directly (a script, a test): refused, nothing started
    assert not window.runner.job_busy("generate") and not panel.cancel_button.isEnabled()
    open_and_wait(qtbot, window, samples / "moe_llm.onnx")
    assert panel.run_button.isEnabled() and panel.run_action.isEnabled()
    assert "no token-id input" not in panel.status.text()
