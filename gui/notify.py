"""Notifications as data (Qt-free): what went wrong, about which file/op, and what to do next.

Everything that can fail reports here; the window's notification area only shows what arrives. A
notification may carry actions, (label, callable) pairs that the area shows as buttons ("Show node").
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable

INFO, WARNING, ERROR = "info", "warning", "error"


@dataclass
class Notification:
    message: str
    severity: str = ERROR
    subject: str = ""        # the file, op or tensor it concerns
    hint: str = ""           # what to do next
    detail: str = ""         # for the log / bug reports
    actions: list[tuple[str, Callable[[], object]]] = field(default_factory=list)  # buttons: (label, callable)
    time: float = field(default_factory=time.time)
    model: str = ""          # where the subject is a model open in the window: that model's path (set by the window)

    def text(self) -> str:
        parts = [self.message]
        if self.hint:
            parts.append(self.hint)
        return " \u2014 ".join(parts)


def saved_message(what: str, path: str, width: int | None = None, height: int | None = None) -> str:
    """The note a save leaves (INFO: it leaves on its own): what was saved, the file by name, an image's size in
    pixels, then the whole path. Export Image and the Compare dock's exports said nothing on screen or too little
    to find the file again (tryout 8)."""
    size = f" ({width:,}\u00d7{height:,} px)" if width is not None and height is not None else ""
    return f"saved {what} {os.path.basename(path)}{size} to {path}"


class NotificationSink:
    """Collects notifications and tells subscribers; keeps a bounded history."""

    def __init__(self, keep: int = 200):
        self.history: list[Notification] = []
        self.keep = keep
        self._subscribers: list[Callable[[Notification], None]] = []

    def subscribe(self, fn: Callable[[Notification], None]) -> None:
        self._subscribers.append(fn)

    def notify(self, message: str, severity: str = ERROR, subject: str = "", hint: str = "",
               detail: str = "", actions=()) -> Notification:
        n = Notification(message, severity, subject, hint, detail, list(actions))
        self.history.append(n)
        del self.history[:-self.keep]
        for fn in list(self._subscribers):
            fn(n)
        return n
