"""A status elided to fit (the Compare dock's StatusLine, the Profile dock's lines: gui/wraplabel.ElidedLabel) can be
selected; a copy took the drawn text, ending in "…" where the cut fell (noticed in the last review: a status pasted
into a bug report lost its end). A copy now takes the whole text where the selection reaches into the cut, or the
part selected where it does not; the label's menu also copies the whole text."""
from __future__ import annotations

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication  # noqa: E402

from mnnscope.gui.panels.compare import StatusLine  # noqa: E402
from test_gui import make_window, settings_dir, window  # noqa: E402,F401

pytestmark = pytest.mark.gui
LONG = ("done in 6.2 s: over tolerance in fp32 (close); int8w is within its own, looser tolerance; fp16w first "
        "departs at /block.3/attn/MatMul_1 (rel L2 0.0131), the largest error at logits (rel L2 0.0548) (saved as "
        "run #56)")


def test_a_copy_of_an_elided_status_takes_its_whole_text(qtbot):
    line = StatusLine(LONG)
    qtbot.addWidget(line)
    line.resize(260, line.sizeHint().height())
    line.show()
    qtbot.waitExposed(line)
    shown = line.shown_text()
    assert shown != LONG and "\u2026" in shown   # (cut to two lines at 260 px)
    clip = QGuiApplication.clipboard()

    line.setSelection(0, len(shown))   # all of it, as a drag over the whole label selects
    clip.setText("")
    qtbot.keyClick(line, Qt.Key_C, Qt.ControlModifier)
    assert clip.text() == LONG

    line.setSelection(0, 7)   # a part before the cut: that part
    qtbot.keyClick(line, Qt.Key_C, Qt.ControlModifier)
    assert clip.text() == "done in"

    menu = line.context_menu()
    whole = next(a for a in menu.actions() if a.text() == "Copy whole text")
    clip.setText("")
    whole.trigger()
    assert clip.text() == LONG


def test_an_elided_status_tooltip_comes_in_lines_that_fit_a_screen(qtbot):
    """Qt shows a plain tooltip on one line: the Compare status', the Profile headline's ran off a 1024 px screen
    (helper 107). The whole text, in lines of about 100 characters, its own line breaks kept."""
    from mnnscope.gui.wraplabel import TIP_CHARS, wrap_tip
    line = StatusLine(LONG + "\n" + LONG)
    qtbot.addWidget(line)
    line.resize(260, line.sizeHint().height())
    line.show()
    qtbot.waitExposed(line)
    tip = line.toolTip()
    assert tip != LONG + "\n" + LONG and " ".join(tip.split()) == " ".join((LONG + " " + LONG).split())
    assert all(len(x) <= TIP_CHARS for x in tip.split("\n")) and tip.count("\n") >= 4
    assert wrap_tip("short\nlines") == "short\nlines" and wrap_tip("<b>rich</b> " + "x " * 80).startswith("<b>")


def test_every_tooltip_the_app_sets_comes_in_lines_that_fit_a_screen(qtbot, window):
    """Helper 109 read the fp16c mode's, Minimal repro's and Timed ops' tooltips cut at the right edge of a 1024 px
    screen: plain tooltips show on one line. With a window open, every widget, action and tab tooltip set is wrapped."""
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QCheckBox, QPushButton, QTabBar
    from mnnscope.gui.wraplabel import TIP_CHARS
    long = " ".join(f"word{i}" for i in range(80))
    for thing in (QPushButton("b"), QCheckBox("c"), QAction("a")):
        thing.setToolTip(long)
        assert 1 < len(thing.toolTip().split("\n")) and max(map(len, thing.toolTip().split("\n"))) <= TIP_CHARS
        assert thing.toolTip().replace("\n", " ") == long
    bar = QTabBar()
    bar.addTab("t")
    bar.setTabToolTip(0, long)
    assert max(map(len, bar.tabToolTip(0).split("\n"))) <= TIP_CHARS
    rich = "<b>x</b> " + long
    b = QPushButton("r")
    b.setToolTip(rich)  # rich text: Qt wraps it itself
    assert b.toolTip() == rich
    panel = window.panels["Compare"]
    for w in [panel.repro_btn] + list(panel.findChildren(QCheckBox)):
        tip = w.toolTip()
        assert not tip or max(map(len, tip.split("\n"))) <= TIP_CHARS, tip


def test_a_tooltip_shown_directly_comes_in_lines_too(qtbot, window, samples):
    """The graph shows its node tooltips itself (QToolTip.showText): helper 112 read a GRU's, 960 px on one line, cut
    at the screen's edge. With a window open, those are wrapped as the set ones are."""
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QToolTip
    from mnnscope.gui.wraplabel import TIP_CHARS
    from test_gui import open_and_wait
    open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    long = " ".join(f"word{i}" for i in range(80))
    QToolTip.showText(QPoint(10, 10), long, window)
    qtbot.waitUntil(QToolTip.isVisible, timeout=3000)
    shown = QToolTip.text()
    assert 1 < len(shown.split("\n")) and max(map(len, shown.split("\n"))) <= TIP_CHARS, shown
    assert shown.replace("\n", " ") == long
    QToolTip.hideText()
