"""The notification area: a compact stack of non-modal cards in the bottom-right corner of the graphs.

Notes and warnings leave on their own after a few seconds (not while the pointer is on them); errors, and
any card with actions (its buttons must stay clickable), stay until dismissed, one by one or all at once.
The stack keeps to the bottom-right quarter of the graph area, so it never covers a graph's centre: long
texts are cut to a few lines (the card's "more" shows the rest, over the graph's height if need be, scrolling where
even that is short) and older cards that do not fit wait folded behind the newest, counted in the stack's header.
"""
from __future__ import annotations

import html

from PySide6.QtCore import QRect, Qt, QTimer, Signal
from PySide6.QtWidgets import (QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea, QToolButton, QVBoxLayout,
                               QWidget)

from mnnscope.gui.notify import ERROR, INFO, WARNING, Notification

_ACCENT = {ERROR: "#d64545", WARNING: "#d9a400", INFO: "#3f75ad"}
TITLES = {ERROR: "Error", WARNING: "Warning", INFO: "Note"}
BODY_CHARS = 180   # a card's text beyond this is behind its "more" button
MARGIN = 12


def _cut(text: str, limit: int = BODY_CHARS) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] if " " in text[limit // 2:limit] else text[:limit]
    return cut.rstrip(" ,;\u2014") + " \u2026"


class NotificationCard(QFrame):
    def __init__(self, n: Notification, area: "NotificationArea", keep: bool = False):
        super().__init__(area)
        self.n = n
        self.area = area
        self.setObjectName("NotificationCard")
        self.setProperty("severity", n.severity)
        self.setStyleSheet(f"#NotificationCard {{ border-left: 4px solid {_ACCENT.get(n.severity, '#888')}; }}")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 6, 4, 6)
        text = QVBoxLayout()
        text.setSpacing(2)
        about = f" \u00b7 {html.escape(n.subject)}" if n.subject else ""  # a file name is not markup
        self.head = head = QLabel(f"<b>{TITLES.get(n.severity, 'Note')}</b>{about}")
        head.setTextFormat(Qt.RichText)
        head.setWordWrap(True)
        self.full_text = n.text()
        self.short_text = _cut(self.full_text)
        self.body = QLabel(self.short_text)
        self.body.setWordWrap(True)
        self.body.setTextFormat(Qt.PlainText)
        self.body.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.body.setObjectName("NotificationBody")
        self.body.setToolTip(self.full_text if self.short_text != self.full_text else "")
        text.addWidget(head)
        # the body scrolls where the whole text is taller than the graph leaves the stack: expanded over a 1024x700
        # window's short graph pane, a GRU notice ended at "--convert-" with the rest cut off (helper 111)
        self.body_area = QScrollArea(self)
        self.body_area.setWidget(self.body)
        self.body_area.setWidgetResizable(True)
        self.body_area.setFrameShape(QFrame.NoFrame)
        self.body_area.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.body_area.viewport().setAutoFillBackground(False)
        self.body.setAutoFillBackground(False)
        text.addWidget(self.body_area)
        self.buttons: list[QPushButton] = []
        row = QHBoxLayout()
        row.setContentsMargins(0, 2, 0, 0)
        self.more = QToolButton(self)
        self.more.setText("more")
        self.more.setAutoRaise(True)
        self.more.setToolTip("show the whole text")
        self.more.clicked.connect(self.toggle_more)
        self.more.setVisible(self.short_text != self.full_text)
        row.addWidget(self.more)
        row.addStretch(1)
        for label, fn in n.actions:
            btn = QPushButton(label, self)
            btn.setObjectName("NotificationAction")
            btn.clicked.connect(lambda _=False, fn=fn: fn())
            row.addWidget(btn)
            self.buttons.append(btn)
        if self.buttons or self.more.isVisibleTo(self):
            text.addLayout(row)
        lay.addLayout(text, 1)
        close = QToolButton(self)
        close.setText("\u2715")
        close.setToolTip("Dismiss")
        close.setAutoRaise(True)
        close.clicked.connect(lambda: area.dismiss(self))
        self.close_btn = close
        lay.addWidget(close, 0, Qt.AlignTop)
        # Leaving on its own: a child timer, so that it dies with the card.
        self.timer: QTimer | None = None
        wait = None if keep else area.dismiss_after(n)  # one called back from the Notices list stays to be read
        if wait is not None:
            self.timer = QTimer(self)
            self.timer.setSingleShot(True)
            self.timer.setInterval(wait)
            self.timer.timeout.connect(lambda: area.expire(self))
            self.timer.start()

    def expanded(self) -> bool:
        return self.short_text != self.full_text and self.body.text() == self.full_text

    def toggle_more(self) -> None:
        expanded = self.body.text() == self.full_text
        self.body.setText(self.short_text if expanded else self.full_text)
        self.more.setText("more" if expanded else "less")
        self.area._place()

    # the pointer on a card keeps it: it is being read
    def enterEvent(self, e) -> None:
        if self.timer is not None:
            self.timer.stop()
        super().enterEvent(e)

    def leaveEvent(self, e) -> None:
        if self.timer is not None:
            self.timer.start()
        super().leaveEvent(e)

    def fit(self, width: int, room: int | None = None) -> int:
        """The card `width` wide, its body as tall as its text, or (given `room`) shorter and scrolling where the card
        would be taller than that (three lines at least); returns the card's height."""
        self.setFixedWidth(width)
        self.body_area.setMinimumHeight(0)
        self.body_area.setMaximumHeight(16777215)
        self.layout().activate()
        frame = self.body_area.frameWidth() * 2
        need = self.body.heightForWidth(max(40, self.body_area.width() - frame)) + frame
        self.body_area.setFixedHeight(need)
        h = self._height(width)
        if room is not None and h > room:
            self.body_area.setFixedHeight(max(3 * self.body.fontMetrics().lineSpacing(), need - (h - room)))
            h = self._height(width)
        return h

    def _height(self, width: int) -> int:
        """The card's height at `width` with its body area as tall as it is set: the layout's height-for-width takes
        the scroll area's (its whole text) instead, so the head's and the button row's are added up here."""
        lay = self.layout()
        lay.invalidate()
        m = lay.contentsMargins()
        col = lay.itemAt(0).layout()  # the text column: head, body area, button row
        inner = width - m.left() - m.right() - self.close_btn.sizeHint().width() - lay.spacing()
        h = self.head.heightForWidth(inner) + self.body_area.minimumHeight() + col.spacing()
        if col.count() > 2:
            h += col.itemAt(2).layout().sizeHint().height() + col.spacing()
        return max(h, self.close_btn.sizeHint().height()) + m.top() + m.bottom()


class NotificationArea(QWidget):
    """Lives over the central widget's bottom-right quarter; passes clicks through where it has no cards. `placed`
    is emitted with its geometry (in its parent) whenever it moves or grows: the window keeps the selected node out
    from under it."""

    placed = Signal(QRect)
    unread = Signal(object)  # a warning that left on its own, unread perhaps (the status bar's Notices counts it)

    MAX = 4
    AUTO_DISMISS_MS = 6000       # a note without buttons
    WARNING_DISMISS_MS = 15000   # a warning without buttons: longer, it may need reading

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.setAttribute(Qt.WA_TransparentForMouseEvents, False)
        self.cards: list[NotificationCard] = []
        self.header = QWidget(self)
        self.header.setObjectName("NotificationHeader")
        self.header.setAutoFillBackground(True)  # over the graph: its labels must not show through
        hl = QHBoxLayout(self.header)
        hl.setContentsMargins(6, 0, 0, 0)
        self.count_label = QLabel(self.header)
        self.dismiss_all_btn = QToolButton(self.header)
        self.dismiss_all_btn.setText("Dismiss all")
        self.dismiss_all_btn.setAutoRaise(True)
        self.dismiss_all_btn.clicked.connect(self.dismiss_all)
        hl.addWidget(self.count_label, 1)
        hl.addWidget(self.dismiss_all_btn)
        self.header.hide()
        parent.installEventFilter(self)
        self.hide()

    def dismiss_after(self, n: Notification) -> int | None:
        """Milliseconds until `n` leaves on its own; None: it stays until dismissed."""
        if n.actions or n.severity == ERROR:
            return None
        return self.WARNING_DISMISS_MS if n.severity == WARNING else self.AUTO_DISMISS_MS

    def show_notification(self, n: Notification, keep: bool = False) -> NotificationCard:
        """A card for `n` (newest at the bottom); `keep`: it stays until dismissed. A notice already up is not shown
        twice: called back from the Notices list, its card stays and moves to the bottom."""
        for card in self.cards:
            if card.n is n:
                self.cards.remove(card)
                if keep and card.timer is not None:
                    card.timer.stop()
                    card.timer = None
                break
        else:
            card = NotificationCard(n, self, keep)
        self.cards.append(card)
        while len(self.cards) > self.MAX:
            self.dismiss(self.cards[0])
        self._place()
        self.show()
        self.raise_()
        return card

    def expire(self, card: NotificationCard) -> None:
        """A card's time is up: it leaves; a warning is counted as perhaps unread (helper 112 missed a GRU warning
        twice before reading it: it had left after 15 s, and nothing brought it back)."""
        if card in self.cards:
            self.dismiss(card)
            if card.n.severity == WARNING:
                self.unread.emit(card.n)

    def dismiss(self, card: NotificationCard) -> None:
        if card in self.cards:
            self.cards.remove(card)
            card.hide()
            card.deleteLater()
        if not self.cards:
            self.hide()
        self._place()

    def dismiss_notification(self, n) -> None:
        """The card of notification `n`, if it is still up (an outcome it reported has been replaced)."""
        for card in list(self.cards):
            if card.n is n:
                self.dismiss(card)

    def dismiss_all(self) -> None:
        for card in list(self.cards):
            self.dismiss(card)

    def dismiss_not_about(self, subject: str, path: str = "") -> None:
        """Dismiss the cards that concern another file (or its ops): a new model is open; their buttons (Show node,
        Open side by side) would act on it, and their words read as its own (tryout 18 read bad.onnx's load error
        over the next model). A card about a model that was open goes too where that model was another file of the
        same name (`path`: the new model's; helper 118 read a copy's missing-weights card over the model with its
        weights). Cards without a subject stay."""
        for card in list(self.cards):
            n = card.n
            if n.subject and (n.subject != subject or (path and n.model and n.model != path)):
                self.dismiss(card)

    def texts(self) -> list[str]:
        return [c.n.text() for c in self.cards]

    def shown_cards(self) -> list[NotificationCard]:
        return [c for c in self.cards if not c.isHidden()]

    def _place(self) -> None:
        """Newest card at the bottom, older ones above while they fit in the bottom-right quarter."""
        par = self.parentWidget()
        if par is None or not self.cards:
            return
        w = max(220, min(384, par.width() // 2 - 2 * MARGIN))
        room = par.height() // 2 - 2 * MARGIN
        left = par.width() - w - MARGIN
        for c in self._graph_centres(par):  # below every graph centre the stack would reach across
            if c.x() >= left - MARGIN:
                room = min(room, par.height() - c.y() - 2 * MARGIN)
        room = max(0, room)
        gap = 6
        header_h = self.header.sizeHint().height() if len(self.cards) > 1 else 0
        used = header_h
        placed: list[tuple[NotificationCard, int]] = []
        for card in reversed(self.cards):
            # the newest card always shows, its body scrolling where it is taller than the room left; opened with
            # "more" (to be read) it may take the graph area's height, over the graph's centre
            own = max(room, par.height() - 2 * MARGIN) if card.expanded() else room
            h = card.fit(w, None if placed else max(0, own - header_h))
            if placed and used + h + gap > room:
                break  # the newest card always shows, even in a window too small for it
            placed.append((card, h))
            used += h + gap
        shown = {id(c) for c, _ in placed}
        for card in self.cards:
            card.setVisible(id(card) in shown)
        folded = len(self.cards) - len(placed)
        self.header.setVisible(len(self.cards) > 1)
        self.count_label.setText(f"{len(self.cards)} notices" + (f" ({folded} older folded)" if folded else ""))
        total = used
        self.setGeometry(par.width() - w - MARGIN, max(0, par.height() - total - MARGIN), w, min(total, par.height()))
        y = total
        for card, h in placed:
            y -= h
            card.setGeometry(0, y, w, h)
            y -= gap
        if header_h:
            self.header.setGeometry(0, 0, w, header_h)
        self.placed.emit(self.geometry())

    @staticmethod
    def _graph_centres(par: QWidget) -> list:
        """The centre of every graph shown under the area (a tab bar or a second model moves them)."""
        from mnnscope.gui.canvas import GraphCanvas
        return [cv.mapTo(par, cv.rect().center()) for cv in par.findChildren(GraphCanvas) if cv.isVisible()]

    def eventFilter(self, obj, e) -> bool:
        if e.type() == e.Type.Resize:
            self._place()
        return False
