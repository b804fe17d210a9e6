"""The Convert dock at 1024x700 (pytest-qt, offscreen, real conversions of the bundled samples): a Diagnostics list
with nothing in it is not drawn (before a conversion it was an empty box, after a clean one a thin empty bar under
"Diagnostics none"), and after a conversion, successful or failed, the log still shows several lines (under the
output's note and its Replace button it shrank to one line of height, the column scrolling: a new user's try under a
virtual display), with nothing else in the dock cut."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_gui import (docked_at_1024, drag_bottom_separator, make_window, open_and_wait, settings_dir,  # noqa: E402,F401
                      window)

pytestmark = pytest.mark.gui
LOG_LINES = 4  # lines of the log readable after a conversion, at least
SHOTS = os.environ.get("MNNSCOPE_TEST_SHOTS")  # a folder: the window's screenshots before and after, to look at


def shot(window, name: str) -> None:
    if SHOTS:
        os.makedirs(SHOTS, exist_ok=True)
        window.grab().save(os.path.join(SHOTS, f"{name}.png"))


def whole(w) -> bool:
    """The widget is drawn whole: shown and nothing of it clipped by a scroll area or the dock."""
    return w.isVisible() and w.visibleRegion().boundingRect() == w.rect()


def log_lines(dock) -> float:
    """How many lines of the log its viewport shows."""
    return dock.log.viewport().height() / dock.log.fontMetrics().lineSpacing()


def nothing_cut(dock) -> list[str]:
    """What of the dock's middle column is cut or scrolled away (empty: nothing)."""
    cut = [w.objectName() or type(w).__name__ + ":" + (getattr(w, "text", lambda: "")() or "")[:20]
           for w in (dock.title, dock.output, dock.browse_btn, dock.bundle, dock.preflight_btn, dock.convert_btn,
                     dock.rerun_btn, dock.cancel_btn, dock.log, dock.diag_head)
           if not whole(w)]
    for w in (dock.output_note, dock.replace_btn, dock.problems):
        if not w.isHidden() and not whole(w):
            cut.append(type(w).__name__ + ":" + w.text()[:20])
    note = dock.output_note
    if not note.isHidden() and note.height() < note.heightForWidth(note.width()) - 1:
        cut.append(f"note {note.height()} px of {note.heightForWidth(note.width())}")
    if dock.mid_scroll.verticalScrollBar().maximum():
        cut.append(f"the middle column scrolls ({dock.mid_scroll.widget().height()} px in "
                   f"{dock.mid_scroll.viewport().height()})")
    return cut


@pytest.mark.parametrize("name, how", [("external_data.onnx", "ok"), ("cnn.onnx", "ok"),
                                       ("unsupported_op.onnx", "failed")])
def test_no_empty_diagnostics_and_a_readable_log_at_1024x700(qtbot, window, samples, name, how):
    dock = docked_at_1024(qtbot, window, samples / name, "Convert")
    qtbot.waitUntil(lambda: dock.convert_btn.isVisible() and dock.log.height() > 0, timeout=5000)
    qtbot.wait(200)
    shot(window, f"{name}.before")
    # nothing to say yet: the header says so, no empty list drawn under it
    assert "none so far" in dock.diag_head.text()
    assert not dock.diagnostics.isVisible() and dock.diagnostics.visibleRegion().isEmpty()
    assert not nothing_cut(dock), nothing_cut(dock)

    with qtbot.waitSignal(dock.conversion_done, timeout=120000) as done:
        assert dock.convert()
    assert done.args[0] == how
    # the log keeps several lines in view (after the dock made room, as far as the graph can spare it), and
    # nothing else is cut for it
    qtbot.waitUntil(lambda: log_lines(dock) >= LOG_LINES and not nothing_cut(dock), timeout=5000)
    qtbot.wait(300)  # (and stays so once the pane beside and the notice have settled)
    shot(window, f"{name}.after")
    assert log_lines(dock) >= LOG_LINES, (dock.log.height(), dock.log.fontMetrics().lineSpacing())
    assert not nothing_cut(dock), nothing_cut(dock)
    d = window.docks["Convert"]
    assert d.height() <= window.bottom_dock_cap(d) + 2  # the graph keeps its share of the height
    assert not dock.result_label.visibleRegion().isEmpty()  # the outcome in view
    if how == "ok":
        # nothing to diagnose: no list, not even a sliver of one, and the outcome has the column
        assert dock.diagnostics.count() == 0 and "none" in dock.diag_head.text()
        assert not dock.diagnostics.isVisible() and dock.diagnostics.visibleRegion().isEmpty()
        assert dock.outcome_scroll.verticalScrollBar().maximum() == 0  # the outcome whole
        assert dock.outcome_scroll.height() > 3 * dock.diagnostics.height()
    else:
        # the failure's diagnostics are listed, several lines of them in view
        assert dock.diagnostics.count() > 0 and dock.diagnostics.isVisible()
        assert dock.diagnostics.viewport().height() >= 3 * dock.diagnostics.fontMetrics().lineSpacing()
        # another model: its dock has nothing to diagnose yet, the list goes again
        open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
        qtbot.waitUntil(lambda: dock.src == str(samples / "cnn.onnx"), timeout=10000)
        qtbot.waitUntil(lambda: not dock.diagnostics.isVisible(), timeout=5000)
        assert dock.diagnostics.count() == 0 and "none so far" in dock.diag_head.text()


def test_a_dock_dragged_shorter_stays_so_over_the_next_conversion(qtbot, window, samples):
    """The dock grows after a conversion until its log shows (above); a user who then drags it shorter (for more
    graph) got it back at that height after every conversion (a new-user try). It grows again only after the
    window's height changed."""
    dock = docked_at_1024(qtbot, window, samples / "cnn.onnx", "Convert")
    d = window.docks["Convert"]
    qtbot.waitUntil(lambda: dock.convert_btn.isVisible() and dock.log.height() > 0, timeout=5000)
    qtbot.wait(200)
    with qtbot.waitSignal(dock.conversion_done, timeout=120000):
        assert dock.convert()
    qtbot.waitUntil(lambda: log_lines(dock) >= LOG_LINES, timeout=5000)
    qtbot.wait(300)
    grown = d.height()
    drag_bottom_separator(qtbot, window, d, 60)   # the user's drag
    qtbot.waitUntil(lambda: d.height() < grown - 40, timeout=5000)
    dragged = d.height()
    with qtbot.waitSignal(dock.conversion_done, timeout=120000):
        assert dock.convert()
    qtbot.wait(500)
    assert abs(d.height() - dragged) <= 2, (dragged, d.height(), grown)
