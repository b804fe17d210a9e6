"""The status bar's Notices button: the notices of the open model, newest first, each brought back as a card that
stays until dismissed. Warnings leave on their own after 15 s; helper 112 missed the GRU warning twice before reading
it, and nothing brought a notice back (the sink kept them, nothing showed them)."""
from __future__ import annotations

import time

from PySide6.QtWidgets import QMenu, QToolButton

from mnnscope.gui.notifications import TITLES
from mnnscope.gui.notify import Notification

LISTED = 15   # the newest notices listed


def menu_text(n: Notification, width: int = 80) -> str:
    """One line of the list: the time, what kind, what about, the message cut to `width` characters."""
    about = f" \u00b7 {n.subject}" if n.subject else ""
    msg = " ".join(n.message.split())
    if len(msg) > width:
        msg = msg[:width - 1].rstrip() + "\u2026"
    return f"{time.strftime('%H:%M:%S', time.localtime(n.time))}  {TITLES.get(n.severity, 'Note')}{about}: {msg}"


class NoticesButton(QToolButton):
    """Hidden until a notice arrives; says how many warnings left on their own since the list was last opened."""

    def __init__(self, window):
        super().__init__()
        self.window = window
        self.unread: list[Notification] = []
        self.model = ""                       # the open model's file name
        self.path = ""                        # and its path (a same-named file elsewhere is another model)
        self.opened_at = time.time()          # when it was opened: what came since is about it
        self.setPopupMode(QToolButton.InstantPopup)
        self.setAutoRaise(True)
        self.menu_ = QMenu(self)
        self.menu_.aboutToShow.connect(lambda: self.fill(self.menu_))
        self.setMenu(self.menu_)
        self.setObjectName("NoticesButton")
        self._label()
        self.hide()

    def recent(self) -> list[Notification]:
        """The open model's notices, newest first: those that came since it was opened, and those about it by name."""
        return [n for n in self.window.sink.history if self.about_model(n)][::-1][:LISTED]

    def about_model(self, n: Notification) -> bool:
        return n.time >= self.opened_at or bool(self.model and n.subject == self.model and
                                                 (not n.model or not self.path or n.model == self.path))

    def fill(self, menu: QMenu) -> None:
        """The list, in `menu` (this button's or View > Recent Notices): choosing one shows its card again."""
        self.unread.clear()
        self._label()
        menu.clear()
        shown = {id(c.n) for c in self.window.notes.shown_cards()}
        items = self.recent()
        for n in items:
            a = menu.addAction(menu_text(n) + ("  (shown)" if id(n) in shown else ""))
            a.setToolTip(n.text())
            a.triggered.connect(lambda _=False, n=n: self.window.notes.show_notification(n, keep=True))
        if not items:
            menu.addAction("No notices about this model").setEnabled(False)
        menu.setToolTipsVisible(True)

    def arrived(self, n: Notification) -> None:
        self.show()
        self._label()

    def left_unread(self, n: Notification) -> None:
        if n not in self.unread and self.about_model(n):
            self.unread.append(n)
        self._label()

    def model_opened(self, name: str, path: str = "") -> None:
        self.model, self.path, self.opened_at = name, path, time.time()
        self.unread = [n for n in self.unread if self.about_model(n)]
        self._label()

    def _label(self) -> None:
        k = len(self.unread)
        # "1 missed" read unexplained until the list was opened (helper 118): what was missed, in words
        self.setText(f"Notices \u00b7 {k} unread warning{'s' if k != 1 else ''}" if k else "Notices")
        self.setStyleSheet("#NoticesButton { color: #b07f00; font-weight: bold; }" if k else "")
        self.setToolTip(f"{k} warning{'s' if k != 1 else ''} left on {'their' if k != 1 else 'its'} own after 15 s: "
                        "click to read again" if k else "The notices about this model, newest first: click one to "
                        "show it again (it stays until dismissed)")


def notices_json(window) -> list[dict]:
    """The headless twin's `notices`: what the Notices list gives, newest first."""
    return [{"severity": n.severity, "subject": n.subject, "message": n.message, "hint": n.hint}
            for n in window.notices.recent()]
