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

from PySide6.QtCore import Qt  # noqa: E402

from test_gui import docked_at_1024, make_window, open_and_wait, settings_dir, window  # noqa: E402,F401
from test_generate import MASK_ROWS, PROMPT, STEPS, _greedy_reference, _prompt_ids, hidden_limit_model  # noqa: E402
from mnnscope.inspector.generate.summary import headline, verdict  # noqa: E402

pytestmark = pytest.mark.gui


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MNNSCOPE_DATA_DIR", str(tmp_path / "data"))


def modes_offered(panel) -> list[str]:
    return [panel.mode.itemText(i) for i in range(panel.mode.count())]


def other_step(step: int, steps: int) -> int:
    return next(i for i in range(steps) if i != step)


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
    assert not panel.plot.getAxis("left").isVisible()   # before a run: the plot's title alone
    assert panel.routing.isHidden()   # and no empty routing table (an empty white box: helper 102's try)
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
    # why int8 is not offered beside compare's (helper 105 met both names, neither explained)
    assert "int8w keeps the weights in 8 bits" in panel.mode.toolTip() and "int8" not in modes_offered(panel)
    with qtbot.waitSignal(panel.finished, timeout=300000) as blocker:
        assert panel.run()
    r = blocker.args[0]
    qtbot.wait(300)   # the results are painted in their own turn of the event loop, as before a user's click
    reference, _ = _greedy_reference(STEPS)
    assert r["reference"]["tokens"] == reference and r["mode"] == "int4w"
    first = r["first_mismatch_step"]
    assert first is not None and r["tokens"][:first] == reference[:first]
    # the answer first in the dock's status (it was mid-sentence: helper 105's try)
    assert panel.status.text().startswith(f"\u2717 MNN picks another token than the reference's at step {first} "
                                          "(teacher-forced): "), panel.status.text()
    # ONNX Runtime's own speed beside MNN's (helper 115 found it nowhere)
    ref_ms = r["reference"]["decode_ms_per_token"]
    assert f"ONNX Runtime (the reference, KV cache off): prefill {r['reference']['prefill_ms']:.2f} ms, decode " \
        f"{ref_ms:.2f} ms/token (median)" in panel.status.text()
    # the steps table: one row per token, the mismatching ones marked
    t = panel.steps_table
    assert t.rowCount() == STEPS
    assert [int(t.item(i, 1).text()) for i in range(STEPS)] == r["tokens"]
    assert [int(t.item(i, 4).text()) for i in range(STEPS)] == reference
    assert [t.item(i, 6).text() == "yes" for i in range(STEPS)] == r["agree_per_step"]
    # "agree" compares what the row shows: MNN's teacher-forced argmax ("MNN forced", between the reference and
    # agree: after KL, a new user read "agree yes" beside token 77 and reference 41 as a wrong comparison) with the
    # reference
    assert [t.horizontalHeaderItem(c).text() for c in (4, 5, 6)] == ["reference", "MNN forced", "agree"]
    forced = [int(t.item(i, 5).text()) for i in range(STEPS)]
    assert forced == r["teacher_forced"]["argmax"]
    assert [f == ref for f, ref in zip(forced, reference)] == r["agree_per_step"]
    # MNN's own tokens that are not the reference's, on steps that agree, say why (its text left the reference's)
    apart = [i for i in range(STEPS) if r["tokens"][i] != reference[i] and r["agree_per_step"][i]]
    assert apart, "int4w's text leaves the reference's on agreeing steps (the case the try met)"
    for i in apart:
        assert f"left the reference's at step {r['free_run_mismatch_step']}" in t.item(i, 1).toolTip()
    assert not any(t.item(i, 1).toolTip() for i in range(STEPS) if r["tokens"][i] == reference[i])
    assert "ONNX Runtime" in t.horizontalHeaderItem(4).toolTip()
    # the two free-run texts one under the other, MNN's and the reference's, from where they part in red
    parts = r["free_run_mismatch_step"]
    assert parts is not None and f"MNN's own text leaves the reference's at step {parts}" in panel.status.text()
    shown = panel.text.text()
    assert f"ONNX Runtime: <b>{PROMPT}</b> " in shown and f"MNN int4w: <b>{PROMPT}</b> " in shown
    tail = r["reference"]["text"][len(r["common_text"]):]
    assert f"{r['common_text']}<span style='color:#cc3311'>{tail}</span>" in shown
    assert float(t.item(0, 3).text()) == pytest.approx(r["prefill_ms"], abs=1e-3)
    # where a prefill and a decode step spend their time, per op type, under the status line
    split = r["op_split"]
    slowest = max(split["by_type"], key=lambda t: split["by_type"][t]["decode_ms"])
    assert f"decode step {split['decode_ms']:.2f} ms" in panel.status.text() and slowest in panel.status.text()
    # the agreement plot: KL per step, mismatches marked, on axes that come with the curve (none before a run)
    assert panel.plot.getAxis("left").isVisible() and panel.plot.getAxis("bottom").isVisible()
    xs, ys = panel.kl_curve.getOriginalDataset()  # (getData gives log10 values: the axis is logarithmic)
    assert list(xs) == list(range(STEPS))
    np.testing.assert_allclose(ys, np.maximum(r["kl_per_step"], 1e-16))
    mx, my = panel.miss_points.getOriginalDataset()
    misses = [i for i, a in enumerate(r["agree_per_step"]) if not a]
    assert list(mx) == misses and list(my) == [max(r["kl_per_step"][i], 1e-16) for i in misses]
    # its axis in powers of ten: whole decades at both ends, no SI multiplier (tryout 66 read KL of 1e-14 as
    # "8·10¹ (x1e-15)")
    axis = panel.plot.getAxis("left")
    lo, hi = panel.plot.getViewBox().viewRange()[1]
    assert not axis.autoSIPrefix and axis.autoSIPrefixScale == 1.0
    assert lo <= np.floor(np.log10(min(ys))) + 1e-9 and hi >= np.ceil(np.log10(max(ys))) - 1e-9 and hi - lo >= 1
    # every step in view, after a run of fewer (helper 105: after a run of 10 steps, 16 ran off the plot's right edge)
    x0, x1 = panel.plot.getViewBox().viewRange()[0]
    assert x0 <= 0 and x1 >= STEPS - 1, (x0, x1, STEPS)
    # the routing heat map: routers x (reference experts, MNN experts) = the loads
    rt = panel.routing
    assert not rt.isHidden()
    assert rt.rowCount() == 2 and rt.columnCount() == 8
    for row, s in enumerate(r["routing"].values()):
        assert [int(rt.item(row, c).text()) for c in range(8)] == s["load"]["reference"] + s["load"]["mnn"]
        label = rt.verticalHeaderItem(row).text()  # "(1 flip)", "(0 flips)" (tryout 66 read "1 flips")
        assert label.endswith(f"({s['flips']} flip{'' if s['flips'] == 1 else 's'})"), label
        # what a flip is, said (helper 105 read "(2 flips)" unexplained)
        assert f"{s['flips']} of {s['tokens']} tokens flipped: MNN chose another set of experts" in \
            rt.verticalHeaderItem(row).toolTip()
        # where, and whether before the tokens parted (helper 115 could not tell)
        tip = " ".join(rt.verticalHeaderItem(row).toolTip().split())
        if s["flips"]:
            p, n = s["flipped_tokens"][0], len(r["prompt_ids"])
            assert f"at position{'s' if s['flips'] > 1 else ''} {p} (" in tip and \
                f"the first flip feeds step {max(0, p - n + 1)}'s prediction" in tip
            # wrapped into lines a screen holds (a header item's tooltip was one line of ~1540 px: helper 116)
            assert max(len(x) for x in rt.verticalHeaderItem(row).toolTip().split("\n")) <= 120
            assert str(p) in s["flipped_pieces"], s
    assert any(s["flips"] for s in r["routing"].values()), "int4w flips a router here (the case the try met)"
    # the row a click opens on the graph says so (nothing said the rows are clickable: helper 105's try)
    assert r["first_divergence"]["step"] == first
    assert "click: this step's first divergence on the graph" in t.item(first, 0).toolTip()
    assert not t.item(other_step(first, STEPS), 0).toolTip()
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
    # the line the step's note takes is there before the click: the table does not move under the pointer (a note
    # added by the first click of a double click pushed it down, and the second opened another step: helper 115)
    panel.show_result(r)
    qtbot.wait(50)
    assert f"Click step {first}'s row: its first divergence on the graph." in panel.status.text()
    top = t.mapTo(panel, t.rect().topLeft()).y()
    panel.steps_table.cellClicked.emit(first, 0)
    want = view.table.names.index(node)
    qtbot.waitUntil(lambda: not view.layout_busy and view.canvas.selected == want, timeout=30000)
    assert node in panel.status.text() and "Click step" not in panel.status.text()
    qtbot.wait(50)
    assert t.mapTo(panel, t.rect().topLeft()).y() == top
    # the graph in the step's error colours (it stayed in its op colours, a new-user try): the first divergence's
    # op has the error it introduces, as the layerwise comparison ranked it
    ov = view.overlay
    assert ov is not None and ov.meta["mode"] == "int4w" and ov.name.startswith(f"step {first}, ")
    ranked = {e["onnx_node"]: e["introduced"] for e in r["first_divergence"]["errors"]["ranking"]}
    assert view._overlay_values[want] == pytest.approx(max(ranked[node], 1e-12))
    assert "coloured by the error each op introduces at this step" in panel.status.text()
    # at 1024x700 the dock is short: the status keeps its headline and the step's note, the per-op split and notes go
    # to its tooltip, and the steps table shows rows to read (it showed a row and a half under six lines of text)
    window.resize(1024, 700)
    area = panel.parentWidget()  # the dock's scroll area's viewport: what the dock shows of the panel
    qtbot.waitUntil(lambda: area.height() < 300, timeout=5000)
    qtbot.wait(100)
    top = t.mapTo(panel, t.rect().topLeft()).y() + t.horizontalHeader().height()
    assert panel.status.text().startswith(headline(r)) and node in panel.status.text()
    assert "decode step" not in panel.status.text() and "(per-op times: hover)" in panel.status.text()
    assert f"decode step {split['decode_ms']:.2f} ms" in panel.status.toolTip()
    assert area.height() - top >= 3 * t.rowHeight(0)  # three rows in view without scrolling the dock
    if os.environ.get("MNNSCOPE_TEXT_SCREENSHOT"):
        qtbot.wait(300)
        window.grab().save(os.environ["MNNSCOPE_TEXT_SCREENSHOT"])
    # a new run takes that step's colours off the graph (helper 115 read an int8w run that matched at every step
    # beside the gate MatMul still red, "step 2, int4w: error introduced 0.0711" in Properties)
    assert view.overlay is ov and len(view.canvas.marked)
    dock = window.docks["Text"]
    window.resizeDocks([dock], [200], Qt.Vertical)
    qtbot.waitUntil(lambda: dock.height() < window.bottom_dock_cap(dock) - 40, timeout=5000)
    panel.mode.setCurrentText("fp32")
    with qtbot.waitSignal(panel.finished, timeout=300000):
        assert panel.run()
        assert view.overlay is None and not len(view.canvas.marked)
    assert view.overlay is None
    # at 1024x700 the results to read: the dock grows to the most the graph leaves it (helper 116 read a step row or
    # two of the table a hint told it to click)
    qtbot.waitUntil(lambda: dock.height() >= window.bottom_dock_cap(dock) - 8, timeout=5000)
    # another model: the KL plot back on its empty axes (the last run's log axis stayed: helper 115)
    assert panel.plot.getAxis("left").logMode
    open_and_wait(qtbot, window, samples / "moe_llm_kv.onnx")
    assert not panel.plot.getAxis("left").logMode and panel.steps_table.rowCount() == 0
    assert panel.routing.columnCount() == 0 and panel.routing.isHidden()  # no expert columns of the last model


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
    # Generate with no prompt asks for one; typing it takes the request back (it stayed: helper 116)
    panel.prompt.setText("")
    assert not panel.run() and panel.status.text() == "Give a prompt."
    panel.prompt.setText(PROMPT)
    assert panel.status.text() == "Generate when ready."


def test_steps_past_the_model_s_positions_are_refused_with_the_limit(qtbot, window, samples):
    """moe_llm_kv holds 64 positions (its causal mask table): the dock says so on Steps and refuses a run that
    would feed more, before anything runs, instead of MNN's broadcast error and its control-flow hint."""
    panel = docked_at_1024(qtbot, window, samples / "moe_llm_kv.onnx", "Text")
    assert f"this model holds at most {MASK_ROWS} positions" in panel.steps.toolTip()
    assert "model.causal_mask" in panel.steps.toolTip()
    prompt = len(_prompt_ids())
    panel.prompt.setText(PROMPT)
    panel.steps.setValue(100)
    assert not panel.run()
    status = panel.status.text()
    assert (f"this model holds at most {MASK_ROWS} positions: prompt {prompt} + steps 100 would feed "
            f"{prompt + 99} positions") in status
    assert f"at most {MASK_ROWS - prompt + 1} steps with this prompt" in status and "control flow" not in status
    assert not window.runner.job_busy("generate") and panel.run_button.isEnabled()


def test_a_failed_run_keeps_its_tokens_and_never_shows_the_last_run_s(qtbot, window, samples, tmp_path):
    """A model whose graph does not prove its limit fails mid-way: the tokens before the failing step are shown
    with the error naming it; a run that fails outright leaves no table, text or plot of the run before it."""
    hidden = hidden_limit_model(tmp_path)
    (tmp_path / "tokenizer.json").write_bytes((samples / "tokenizer.json").read_bytes())
    panel = docked_at_1024(qtbot, window, hidden, "Text")
    assert "positions" not in panel.steps.toolTip()  # nothing proven, nothing claimed
    panel.prompt.setText(PROMPT)
    panel.steps.setValue(4)
    with qtbot.waitSignal(panel.finished, timeout=300000):
        assert panel.run()
    assert panel.steps_table.rowCount() == 4 and panel.text.text()
    prompt = len(_prompt_ids())
    fails_at = MASK_ROWS - prompt + 1
    panel.steps.setValue(100)
    with qtbot.waitSignal(panel.finished, timeout=300000) as blocker:
        assert panel.run()
    r = blocker.args[0]
    assert r["error"]["step"] == fails_at
    tokens, _ = _greedy_reference(fails_at)
    t = panel.steps_table
    assert t.rowCount() == fails_at and [int(t.item(i, 1).text()) for i in range(fails_at)] == tokens
    status = panel.status.text()
    assert status.startswith(f"\u26a0 {fails_at} of 100 tokens, kept: step {fails_at} failed (it fed "
                             f"{MASK_ROWS + 1} positions")
    assert f"this model holds at most {MASK_ROWS} positions" in status and "control flow" not in status
    assert panel.kl_curve.getOriginalDataset()[0] is not None and len(panel.kl_curve.getOriginalDataset()[0])
    # a prompt longer than the model holds fails at step 0: nothing of the last run stays on screen
    panel.prompt.setText(" ".join([PROMPT] * 8))
    panel.steps.setValue(3)
    with qtbot.waitSignal(panel.failed, timeout=300000) as blocker:
        assert panel.run()
    assert panel.status.text().startswith("Generate failed: step 0 failed") and "control flow" not in blocker.args[0]
    assert panel.steps_table.rowCount() == 0 and panel.routing.rowCount() == 0 and panel.text.text() == ""
    assert panel.routing.isHidden()
    xs, _ = panel.kl_curve.getOriginalDataset()
    assert xs is None or len(xs) == 0
    assert panel.plot.viewRange()[1] == [0, 1]  # not the last run's log axis over an empty plot
    # nor any axes: the plot's title says what will be there (empty 0-1 axes before a run: helper 101's try)
    assert not panel.plot.getAxis("left").isVisible() and not panel.plot.getAxis("bottom").isVisible()
    assert panel.plot.getPlotItem().titleLabel.text.startswith("Generate: KL per step")
    assert panel.result is None and not panel.open_step(0)


def test_low_mode_names_its_mode_and_says_the_precision_had_no_effect(qtbot, window, samples):
    """Mode low on a CPU without fp16 arithmetic ran as high: the headline names the mode and says so, as the
    Profile dock does; each mode carries the Compare dock's words in its tooltip."""
    from mnnscope.inspector.compare.options import MODES
    panel = docked_at_1024(qtbot, window, samples / "moe_llm_kv.onnx", "Text")
    for i in range(panel.mode.count()):
        name = panel.mode.itemText(i)
        assert panel.mode.itemData(i, Qt.ToolTipRole) == f"{name}: {MODES[name].description}"
    panel.mode.setCurrentText("low")
    assert MODES["low"].description in panel.mode.toolTip()
    panel.prompt.setText(PROMPT)
    panel.steps.setValue(4)
    with qtbot.waitSignal(panel.finished, timeout=300000) as blocker:
        assert panel.run()
    r = blocker.args[0]
    status = panel.status.text()
    first = verdict(r)   # the answer first, where the run was compared (helper 105's try)
    assert first.startswith(("\u2713 MNN picks", "\u2717 MNN picks")) if r.get("agreement_top1") is not None else \
        first == ""
    if r["precision_effective"] == "low":  # MNN reports fp16 arithmetic here: low ran as low
        assert status.startswith(first + "4 tokens on mnn low (CPU, KV cache on): ") and "no effect" not in status
        return
    assert status.startswith(first + "4 tokens on mnn low (CPU, KV cache on; precision low ran as high on this CPU): ")
    assert "\u26a0 Precision 'low' had no effect on this CPU: the logits of every step are bit-identical" in status
    assert panel.text.text().startswith(f"MNN low: <b>{PROMPT}</b>")


def test_a_short_text_dock_scrolls_its_results_into_view(qtbot, window, samples):
    """At 1500x950 a new user's Text dock showed the KL plot's top edge and one tick under the tokenizer and prompt
    rows: the panel asked its scroll area for its tables' and plot's preferred height (~600 px in a 230 px dock);
    with its least height they share what the dock shows, and where it still scrolls the run's summary goes to its
    top."""
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QScrollArea
    panel = docked_at_1024(qtbot, window, samples / "moe_llm.onnx", "Text")
    window.resizeDocks([window.docks["Text"]], [230], Qt.Vertical)
    area = panel.parentWidget()
    while not isinstance(area, QScrollArea):
        area = area.parentWidget()
    panel.prompt.setText(PROMPT)
    panel.steps.setValue(4)
    with qtbot.waitSignal(panel.finished, timeout=300000):
        assert panel.run()

    def shown(w) -> int:  # how many of its pixels the dock shows
        top = w.mapTo(area.widget(), QPoint(0, 0)).y() - area.verticalScrollBar().value()
        return max(0, min(top + w.height(), area.viewport().height()) - max(top, 0))
    qtbot.waitUntil(lambda: shown(panel.status) == panel.status.height()
                    and shown(panel.plot) >= 0.8 * panel.plot.height() >= 100, timeout=5000)
    # the plot's axis title and its top decade read whole at that height ("KL(reference || MN" and a "10⁻¹³" cut
    # at the plot's top edge: helper 79's try at 1500x950); what KL compares is in the tooltip
    from PySide6.QtGui import QFontMetricsF
    axis = panel.plot.getAxis("left")
    label = axis.label
    assert label.boundingRect().width() <= axis.boundingRect().height(), (label.toPlainText(), axis.boundingRect())
    assert "KL(reference || MNN)" in panel.plot.toolTip()
    # the plot inside its widget, every step in view (the empty plot's hidden title kept it 384 px wide in a 322 px
    # widget: the last steps ran off its right edge, helper 105's try)
    vb = panel.plot.getViewBox()
    assert vb.sceneBoundingRect().right() <= panel.plot.width(), (vb.sceneBoundingRect(), panel.plot.width())
    assert vb.viewRange()[0][1] >= 3
    top = axis.mapToScene(axis.boundingRect()).boundingRect().top()
    vb_top = panel.plot.getViewBox().sceneBoundingRect().top()
    assert vb_top - top >= 0 and vb_top >= QFontMetricsF(axis.style["tickFont"] or panel.plot.font()).height() / 2, \
        (vb_top, top)
