"""The window's notices (pytest-qt, offscreen): notes and warnings leave on their own (not while the pointer is
on them), errors and cards with buttons stay until dismissed, and however many arrive, the stack keeps to the
bottom-right quarter of the graphs, so it never covers a graph's centre; a Dismiss all clears it."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI
from PySide6.QtCore import QEvent, QPointF, Qt  # noqa: E402
from PySide6.QtGui import QEnterEvent  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401

pytestmark = pytest.mark.gui

LONG = ("conversion failed [unsupported_op]: MNN cannot convert op Hardmax (node /head/Hardmax); also "
        "unsupported_op at /act1/Mish \u2014 next step: replace Hardmax with ops MNN supports before export, or "
        "convert with --allow-custom-op and implement Hardmax as an MNN custom op; bug-report bundle: "
        "/home/someone/.local/share/mnnscope/runs/convert-20261201-105313-24017-0/bug-report")


@pytest.fixture
def fast(monkeypatch):
    from mnnscope.gui.notifications import NotificationArea
    monkeypatch.setattr(NotificationArea, "AUTO_DISMISS_MS", 50)
    monkeypatch.setattr(NotificationArea, "WARNING_DISMISS_MS", 150)


def card_of(w, n):
    return next((c for c in w.notes.cards if c.n is n), None)


def test_notes_and_warnings_leave_on_their_own_errors_stay(qtbot, window, fast):
    note = window.sink.notify("loading cancelled", "info")
    warning = window.sink.notify("shapes unavailable: the runner is busy", "warning", "cnn.onnx")
    error = window.sink.notify("cannot read garbage.mnn", "error", "garbage.mnn")
    assert all(card_of(window, n) is not None for n in (note, warning, error))
    qtbot.waitUntil(lambda: card_of(window, note) is None, timeout=3000)
    qtbot.waitUntil(lambda: card_of(window, warning) is None, timeout=3000)
    qtbot.wait(400)
    card = card_of(window, error)
    assert card is not None and card.isVisible() and window.notes.isVisible()
    qtbot.mouseClick(card.close_btn, Qt.LeftButton)
    assert not window.notes.cards and not window.notes.isVisible()


def test_a_warning_that_left_on_its_own_is_counted_and_comes_back_to_stay(qtbot, window, samples, fast):
    """Helper 112 missed the GRU warning twice before reading it: it had left after 15 s, and nothing brought it
    back. The status bar's Notices counts the warnings that left on their own; its list (and View > Recent Notices)
    shows the open model's notices, newest first, and one chosen comes back as a card that stays."""
    open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    btn = window.notices
    old = window.sink.notify("about the model before", "warning", "other.onnx")
    old.time -= 3600  # came before this model was opened, about another file: not listed
    warning = window.sink.notify("GRU kept whole: int8 leaves 97% of the weights in float32", "warning", "cnn.onnx")
    note = window.sink.notify("converted to cnn.mnn", "info")
    assert btn.isVisibleTo(window) and btn.text() == "Notices"
    qtbot.waitUntil(lambda: card_of(window, warning) is None and card_of(window, note) is None, timeout=3000)
    assert btn.text() == "Notices \u00b7 1 unread warning", btn.text()  # the note is not counted: only warnings
    window.notices_menu.aboutToShow.emit()  # View > Recent Notices lists what the button lists
    acts = window.notices_menu.actions()
    assert [a.toolTip() for a in acts] == [note.text(), warning.text()], [a.text() for a in acts]
    assert "Warning \u00b7 cnn.onnx: GRU kept whole" in acts[1].text() and btn.text() == "Notices"
    acts[1].trigger()
    card = card_of(window, warning)
    assert card is not None and card.timer is None
    qtbot.wait(400)
    assert card_of(window, warning) is card and card.isVisible()  # called back, it stays until dismissed
    btn.fill(btn.menu())
    assert btn.menu().actions()[1].text().endswith("(shown)")
    # a model opened later lists only its own
    open_and_wait(qtbot, window, samples / "encoder_block.onnx", shapes=False)
    window.notices_menu.aboutToShow.emit()
    texts = [a.text() for a in window.notices_menu.actions()]
    assert not any("GRU kept whole" in t for t in texts), texts


def test_a_note_under_the_pointer_waits_for_it_to_leave(qtbot, window, fast):
    note = window.sink.notify("converted to cnn.mnn", "info", "cnn.onnx")
    card = card_of(window, note)
    centre = QPointF(card.rect().center())
    QApplication.sendEvent(card, QEnterEvent(centre, centre, QPointF(card.mapToGlobal(card.rect().center()))))
    qtbot.wait(400)
    assert card_of(window, note) is card  # being read: it stays
    QApplication.sendEvent(card, QEvent(QEvent.Leave))
    qtbot.waitUntil(lambda: card_of(window, note) is None, timeout=3000)


@pytest.mark.parametrize("size", [(1400, 900), (900, 600)])
def test_errors_keep_to_a_corner_and_never_cover_a_graphs_centre(qtbot, window, samples, size):
    window.resize(*size)
    view = open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    for k in range(6):
        window.sink.notify(f"#{k} {LONG}", "error", "unsupported_op.onnx", actions=[("Show node", lambda: None)])
    area = window.notes
    assert len(area.cards) == area.MAX
    qtbot.waitUntil(lambda: area.isVisible())
    central = area.parentWidget()
    vp = view.canvas
    graph_centre = vp.mapTo(central, vp.rect().center())
    assert not area.geometry().contains(graph_centre), (area.geometry(), graph_centre)
    # the stack stays in the bottom-right quarter of the graph area
    g = area.geometry()
    assert g.top() >= central.height() // 2 and g.left() >= central.width() // 2 - 1, (g, central.size())
    assert g.bottom() < central.height() and g.right() < central.width()
    # the newest card shows with its buttons; the rest fold behind the header, which counts them
    shown = area.shown_cards()
    assert shown and shown[-1] is area.cards[-1] and shown[-1].buttons[0].isVisible()
    for c in shown:
        assert area.rect().contains(c.geometry())
    assert area.header.isVisible() and area.count_label.text().startswith(f"{area.MAX} notices")
    if len(shown) < len(area.cards):
        assert f"{len(area.cards) - len(shown)} older folded" in area.count_label.text()
    # a long text is cut to a few lines; "more" shows all of it, and the stack still keeps to its corner
    card = area.cards[-1]
    assert card.body.text() != card.n.text() and card.body.text().endswith("\u2026") and card.more.isVisible()
    assert " ".join(card.body.toolTip().split()) == " ".join(card.n.text().split())  # (in lines: wrap_tip)
    qtbot.mouseClick(card.more, Qt.LeftButton)
    assert card.body.text() == card.n.text() and card.more.text() == "less"
    assert not area.geometry().contains(graph_centre) or len(area.shown_cards()) == 1
    qtbot.mouseClick(area.dismiss_all_btn, Qt.LeftButton)
    assert not area.cards and not area.isVisible()


def test_a_second_graph_centre_is_not_covered_either(qtbot, window, samples):
    left = open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    right = open_and_wait(qtbot, window, samples / "cnn.mnn", second=True, shapes=False)
    for k in range(3):
        window.sink.notify(f"#{k} {LONG}", "error", "x")
    area = window.notes
    central = area.parentWidget()
    for view in (left, right):
        c = view.canvas.mapTo(central, view.canvas.rect().center())
        assert not area.geometry().contains(c), (view, area.geometry(), c)
    area.dismiss_all()
    assert not area.isVisible()


def test_a_missing_file_gets_no_advice_about_file_contents(qtbot, window, tmp_path):
    """'no such file' explains itself; the hint to check that the file is a complete model is for files that
    exist but do not parse."""
    with qtbot.waitSignal(window.load_failed, timeout=30000):
        window.open_model(str(tmp_path / "missing.onnx"))
    missing = window.notes.cards[-1].n
    assert "no such file" in missing.message and missing.hint == ""
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x01garbage" * 50)
    with qtbot.waitSignal(window.load_failed, timeout=30000):
        window.open_model(str(bad))
    assert "complete model" in window.notes.cards[-1].n.hint
    # the card's head names the file as written (a name is not markup: "bad<1>&.onnx" lost its "<1>")
    odd = tmp_path / "bad<1>&.onnx"
    odd.write_bytes(bad.read_bytes())
    with qtbot.waitSignal(window.load_failed, timeout=30000):
        window.open_model(str(odd))
    from PySide6.QtGui import QTextDocument
    doc = QTextDocument()
    doc.setHtml(window.notes.cards[-1].head.text())
    assert doc.toPlainText().endswith(" \u00b7 bad<1>&.onnx"), doc.toPlainText()
    # another model opened: the failed files' errors were about them, not about it (tryout 18 read bad.onnx's
    # error over the next model); a card about nothing in particular stays
    window.notify("a note about nothing in particular", "error")
    open_and_wait(qtbot, window, Path(__file__).resolve().parent.parent / "resources" / "samples" / "cnn.onnx",
                  shapes=False)
    assert not [c.n.subject for c in window.notes.cards if c.n.subject in ("missing.onnx", "bad.onnx")]
    assert any(c.n.message == "a note about nothing in particular" for c in window.notes.cards)


def test_an_expanded_notice_taller_than_its_room_scrolls_inside_the_graph_area(qtbot, window, samples):
    """Helper 111 at 1024x700 with the Profile dock open: the expanded GRU notice ended at "--convert-", the rest cut
    off below the graph pane. The newest card keeps within the area's parent; its body scrolls to the end."""
    from test_gui import docked_at_1024
    docked_at_1024(qtbot, window, samples / "cnn.onnx", "Profile")
    long = " ".join([LONG] * 4)
    n = window.sink.notify(long, "warning", "encoder.onnx", actions=[("Show node", lambda: None)])
    area = window.notes
    card = card_of(window, n)
    qtbot.waitUntil(lambda: card.isVisible())
    qtbot.mouseClick(card.more, Qt.LeftButton)
    assert card.body.text() == long and card.more.text() == "less"
    central = area.parentWidget()
    g = area.geometry()
    assert g.top() >= 0 and g.bottom() < central.height(), (g, central.size())
    assert area.rect().contains(card.geometry()), (card.geometry(), area.rect())
    bar = card.body_area.verticalScrollBar()
    assert bar.maximum() > 0  # taller than its room: it scrolls, and its end can be reached
    bar.setValue(bar.maximum())
    assert card.buttons[0].isVisible() and card.more.isVisible()
    # folded again, it is as short as before, without a scroll bar
    qtbot.mouseClick(card.more, Qt.LeftButton)
    qtbot.waitUntil(lambda: card.body_area.verticalScrollBar().maximum() == 0, timeout=3000)


def test_a_card_about_a_model_leaves_when_a_same_named_model_elsewhere_opens(qtbot, window, tmp_path):
    """Helper 118 opened a copy of external_data.onnx without its .data file (a missing-weights card), then the copy
    with its weights in another folder, of the same name: the card stayed over the model that has its weights (cards
    were matched to the new model by file name). A card about the open model belongs to that file."""
    import shutil
    samples = Path(__file__).resolve().parent.parent / "resources" / "samples"
    bare, whole = tmp_path / "bare", tmp_path / "whole"
    bare.mkdir()
    whole.mkdir()
    shutil.copy(samples / "external_data.onnx", bare / "external_data.onnx")
    for f in samples.glob("external_data.onnx*"):
        shutil.copy(f, whole / f.name)
    open_and_wait(qtbot, window, bare / "external_data.onnx", shapes=False)
    about = [c for c in window.notes.cards if c.n.subject == "external_data.onnx"]
    assert about and any("missing" in c.n.text() or "not found" in c.n.text() for c in about), \
        [c.n.text() for c in window.notes.cards]
    open_and_wait(qtbot, window, whole / "external_data.onnx", shapes=False)
    assert not [c.n.text() for c in window.notes.cards if c.n.subject == "external_data.onnx"]
    assert not [n.message for n in window.notices.recent() if "missing" in n.message]  # nor in the Notices list
    # a card about the model open now stays when the same file opens again
    window.notify("a warning about this file", "warning", "external_data.onnx")
    open_and_wait(qtbot, window, whole / "external_data.onnx", shapes=False)
    assert any(c.n.message == "a warning about this file" for c in window.notes.cards)
