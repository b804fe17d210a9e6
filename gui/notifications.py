"""The notification area: non-modal cards stacked in a corner of the graph. Errors, and any card with
actions (its buttons must stay clickable), stay until closed; other notes leave after a few seconds."""
from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton, QVBoxLayout, QWidget

from mnnscope.gui.notify import ERROR, INFO, WARNING, Notification

_ACCENT = {ERROR: "#d64545", WARNING: "#d9a400", INFO: "#3f75ad"}
_TITLE = {ERROR: "Error", WARNING: "Warning", INFO: "Note"}


class NotificationCard(QFrame):
    def __init__(self, n: Notification, area: "NotificationArea"):
        super().__init__(area)
        self.n = n
        self.setObjectName("NotificationCard")
        self.setProperty("severity", n.severity)
        self.setStyleSheet(f"#NotificationCard {{ border-left: 4px solid {_ACCENT.get(n.severity, '#888')}; }}")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 8, 6, 8)
        text = QVBoxLayout()
        head = QLabel(f"<b>{_TITLE.get(n.severity, 'Note')}</b>" + (f" \u00b7 {n.subject}" if n.subject else ""))
        head.setTextFormat(Qt.RichText)
        head.setWordWrap(True)
        body = QLabel(n.text())
        body.setWordWrap(True)
        body.setTextInteractionFlags(Qt.TextSelectableByMouse)
        body.setObjectName("NotificationBody")
        text.addWidget(head)
        text.addWidget(body)
        self.buttons: list[QPushButton] = []
        if n.actions:
            row = QHBoxLayout()
            row.setContentsMargins(0, 4, 0, 0)
            row.addStretch(1)
            for label, fn in n.actions:
                btn = QPushButton(label, self)
                btn.setObjectName("NotificationAction")
                btn.clicked.connect(lambda _=False, fn=fn: fn())
                row.addWidget(btn)
                self.buttons.append(btn)
            text.addLayout(row)
        lay.addLayout(text, 1)
        close = QToolButton(self)
        close.setText("\u2715")
        close.setToolTip("Dismiss")
        close.setAutoRaise(True)
        close.clicked.connect(lambda: area.dismiss(self))
        lay.addWidget(close, 0, Qt.AlignTop)
        self.setFixedWidth(380)


class NotificationArea(QWidget):
    """Lives over the central widget's bottom-right corner; passes clicks through where it has no cards."""

    MAX = 4
    AUTO_DISMISS_MS = 6000

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.setAttribute(Qt.WA_TransparentForMouseEvents, False)
        self.cards: list[NotificationCard] = []
        self.lay = QVBoxLayout(self)
        self.lay.setContentsMargins(0, 0, 0, 0)
        self.lay.setSpacing(8)
        self.lay.addStretch(1)
        parent.installEventFilter(self)
        self.hide()

    def show_notification(self, n: Notification) -> NotificationCard:
        card = NotificationCard(n, self)
        self.cards.append(card)
        self.lay.addWidget(card)
        while len(self.cards) > self.MAX:
            self.dismiss(self.cards[0])
        if n.severity == INFO and not n.actions:
            QTimer.singleShot(self.AUTO_DISMISS_MS, card, lambda c=card: self.dismiss(c))  # dropped if the card dies first
        self._place()
        self.show()
        self.raise_()
        return card

    def dismiss(self, card: NotificationCard) -> None:
        if card in self.cards:
            self.cards.remove(card)
            card.hide()
            card.deleteLater()
        if not self.cards:
            self.hide()
        self._place()

    def texts(self) -> list[str]:
        return [c.n.text() for c in self.cards]

    def _place(self) -> None:
        par = self.parentWidget()
        if par is None:
            return
        h = sum(c.sizeHint().height() + 8 for c in self.cards) + 4
        w = 384
        self.setGeometry(par.width() - w - 12, max(0, par.height() - h - 12), w, min(h, par.height()))

    def eventFilter(self, obj, e) -> bool:
        if e.type() == e.Type.Resize:
            self._place()
        return False
