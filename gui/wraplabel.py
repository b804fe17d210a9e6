"""A word-wrapped QLabel that asks its layout for the lines its text needs (a plain one asks for one line, and a
squeezed layout cut its text at the top and bottom)."""
from __future__ import annotations

import textwrap

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtGui import Qt as GuiQt   # (mightBeRichText is QtGui's)
from PySide6.QtWidgets import QLabel, QMenu, QSizePolicy, QTabBar, QTabWidget, QToolTip, QWidget


TIP_CHARS = 100   # characters per line of a long tooltip (wrap_tip)


def wrap_tip(text: str) -> str:
    """A plain tooltip broken into lines of about TIP_CHARS characters at spaces (its own line breaks kept): Qt shows
    a plain tooltip on one line, and the Profile headline's, the Compare status' and the Runs settings' ran off the
    right edge of a 1024 px screen (helper 107)."""
    if not text or max(len(line) for line in text.split("\n")) <= TIP_CHARS or GuiQt.mightBeRichText(text):
        return text
    return "\n".join(textwrap.fill(line, TIP_CHARS, break_long_words=False, break_on_hyphens=False) if line else ""
                     for line in text.split("\n"))


def wrap_all_tooltips() -> None:
    """From now on every tooltip the app sets on a widget, an action or a tab is wrapped (wrap_tip): helper 109 read
    the fp16c mode's, Minimal repro's and the Profile dock's Timed ops tooltips cut at the right edge of a 1024 px
    screen, one line each, as some twenty others were (set with a plain setToolTip). Qt shows what it is given, so
    the setters wrap; an event filter that wrapped tooltips as they showed cost every event of the app ~2 us."""
    for cls, name in ((QWidget, "setToolTip"), (QAction, "setToolTip"), (QTabBar, "setTabToolTip"),
                      (QTabWidget, "setTabToolTip")):
        plain = getattr(cls, name)
        if getattr(plain, "wraps_tips", False):
            continue

        def wrapped(self, *args, _plain=plain):
            *at, tip = args
            _plain(self, *at, wrap_tip(tip) if isinstance(tip, str) else tip)
        wrapped.wraps_tips = True
        wrapped.__doc__ = plain.__doc__
        setattr(cls, name, wrapped)
    # and the tooltips shown directly (the graph's node and label tooltips: helper 112 read a GRU's in one line of 960
    # px, cut at the screen's edge)
    show = QToolTip.showText
    if not getattr(show, "wraps_tips", False):
        def show_wrapped(pos, text, *args, _show=show):
            _show(pos, wrap_tip(text) if isinstance(text, str) else text, *args)
        show_wrapped.wraps_tips = True
        QToolTip.showText = staticmethod(show_wrapped)


class WrappedLabel(QLabel):
    """A word-wrapped label whose minimum height is what its text needs at its present width. A plain one asks for
    one line: two lines at 1024 px squeezed the Statistics dock's histogram below its own minimum, its axis drawn
    over the NaN/Inf row; the Convert dock's output note was cut at the top and bottom (tryout 19)."""

    def minimumSizeHint(self) -> QSize:
        s = super().minimumSizeHint()
        if self.wordWrap() and self.width() > 0:
            s.setHeight(max(s.height(), self.heightForWidth(self.width())))
        return s

    def resizeEvent(self, e) -> None:
        super().resizeEvent(e)
        if e.size().width() != e.oldSize().width():
            self.updateGeometry()  # another width, another number of lines


class ElidedLabel(QLabel):
    """A plain-text label that draws its text cut to fit (each subclass's `_fit`, which sets the drawn text with
    QLabel.setText), while text() is the whole text (what the docks and their callers read) and shown_text() what is
    drawn. Refitted when its width or font changes. Never as wide as its text: a label's full width as its minimum
    widened the whole window past a 1024 px screen after a run (seen by a tester: 1209 px). The Compare dock's status
    (compare.StatusLine) and the Profile dock's lines (profile.FoldedLine)."""

    def __init__(self, vertical: QSizePolicy.Policy = QSizePolicy.Preferred):
        super().__init__()
        self._full = ""
        self.setTextFormat(Qt.PlainText)
        self.setSizePolicy(QSizePolicy.Ignored, vertical)

    def text(self) -> str:
        return self._full

    def setToolTip(self, tip: str) -> None:
        """(its whole text, often: in lines that fit a screen, wrap_tip)"""
        QLabel.setToolTip(self, wrap_tip(tip))

    def shown_text(self) -> str:
        """What is drawn (the text cut to fit)."""
        return QLabel.text(self)

    def setText(self, text: str) -> None:
        self._full = text or ""
        self._fit()

    def _fit(self) -> None:
        raise NotImplementedError

    def resizeEvent(self, e) -> None:
        super().resizeEvent(e)
        if e.size().width() != e.oldSize().width():
            self._fit()

    def changeEvent(self, e) -> None:
        super().changeEvent(e)
        if e.type() == QEvent.FontChange:
            self.updateGeometry()
            self._fit()

    # a selectable one copies what it says, not what fits: a status copied with Ctrl+C or "Copy" ended in "…"
    def copy_text(self) -> str:
        """What a copy takes: the selection, or the whole text where the selection reaches into the cut (its "…")
        or there is none."""
        sel = self.selectedText()
        if not sel or (self.shown_text() != self._full and "\u2026" in sel):
            return self._full
        return sel

    def context_menu(self) -> QMenu:
        menu = QMenu(self)
        menu.addAction("Copy", lambda: QGuiApplication.clipboard().setText(self.copy_text()))
        menu.addAction("Copy whole text", lambda: QGuiApplication.clipboard().setText(self._full))
        return menu

    def contextMenuEvent(self, e) -> None:
        if not self.textInteractionFlags() & Qt.TextSelectableByMouse:
            return super().contextMenuEvent(e)
        self.context_menu().exec(e.globalPos())

    def keyPressEvent(self, e) -> None:
        if e.matches(QKeySequence.Copy) and self.textInteractionFlags() & Qt.TextSelectableByMouse:
            QGuiApplication.clipboard().setText(self.copy_text())
            e.accept()
            return
        super().keyPressEvent(e)


class ElidedLine(ElidedLabel):
    """One line cut with "\u2026" where it does not fit, the whole of it in the tooltip then: the status bar's model
    line ("... \u00b7 shapes computed for x=[1, 3, 640, 64" at 1024 px, the rest clipped: helper 113)."""

    def _fit(self) -> None:
        width = self.contentsRect().width() - 2 * self.margin()
        shown = self.fontMetrics().elidedText(self._full, Qt.ElideRight, width) if width > 20 else self._full
        QLabel.setText(self, shown)
        ElidedLabel.setToolTip(self, self._full if shown != self._full else "")

