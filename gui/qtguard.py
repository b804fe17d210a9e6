"""A guard against a binding bug: PySide6 6.12.0 on Python 3.11 returns None from every void method (and
True/False from some, such as Signal.emit and disconnect) without taking a reference, so each call
(QPainter.drawPath, QWidget.update, ...) lowers the singleton's reference count by one, and after some
seconds of drawing Python aborts with "deallocating None". Python 3.12 made these singletons immortal;
here, only when the bug is detected, their counts are raised far beyond reach instead.
Imported by every gui module that uses Qt, before any drawing. The proper fix is a PySide6 without the bug
(6.11.x, or a fixed 6.12), which makes this a no-op.
"""
from __future__ import annotations

import sys

GUARDED = False


def _leaks_none() -> bool:
    from PySide6.QtCore import QPointF
    p = QPointF()
    before = sys.getrefcount(None)
    for _ in range(64):
        p.setX(1.0)
    return sys.getrefcount(None) < before - 32


def guard() -> bool:
    global GUARDED
    if GUARDED or sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return GUARDED
    if _leaks_none():
        import ctypes
        for obj in (None, True, False, NotImplemented, Ellipsis):
            ctypes.c_ssize_t.from_address(id(obj)).value += 1 << 48
        GUARDED = True
    return GUARDED


guard()
