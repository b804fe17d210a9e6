"""The docks' combo boxes and spin boxes take the mouse wheel only once clicked into (focused): a wheel over them
while scrolling a dock changed the setting under the pointer without a word (tryout 9: the Convert dock's
Optimize level went from "converter default" to 2 on the way down its form). Unfocused, the wheel scrolls the
dock around them instead."""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractScrollArea, QAbstractSpinBox, QApplication, QComboBox, QTabBar, QWidget


def _scroll_area(w: QWidget) -> QAbstractScrollArea | None:
    p = w.parentWidget()
    while p is not None:
        if isinstance(p, QAbstractScrollArea):
            return p
        p = p.parentWidget()
    return None


class WheelGuard(QObject):
    def eventFilter(self, obj, ev) -> bool:
        if ev.type() != QEvent.Wheel or not isinstance(obj, QWidget) or obj.hasFocus():
            return False
        area = _scroll_area(obj)
        if area is not None:
            QApplication.sendEvent(area.verticalScrollBar(), ev)  # the dock (or form) scrolls instead
        return True

    def guard(self, root: QWidget) -> int:
        """Guard every combo box and spin box under `root` (click or Tab gives them the wheel), and its tab bars (the
        wheel over the Compare dock's Ranking / Outputs tabs switched the table shown, helper 109: they take it only
        once Tab focused them); how many."""
        widgets = root.findChildren(QComboBox) + root.findChildren(QAbstractSpinBox)
        for w in widgets:
            w.setFocusPolicy(Qt.StrongFocus)  # not WheelFocus: the wheel must not focus them either
            w.installEventFilter(self)
        bars = root.findChildren(QTabBar)
        for w in bars:  # (their focus policy stays: a click on a tab does not give them the wheel)
            w.installEventFilter(self)
        return len(widgets) + len(bars)
