"""The height a bottom dock shows of its panel, and a call when it changes.

A bottom dock's panel sits in a scroll area (window._DockArea): the panel is as tall as its contents ask and the
dock shows part of it. A panel that says less in a short dock (1024x700: the Text dock's summary, the Compare dock's
notes) asks the viewport, not itself, how much is seen, and hears when that changes (the dock resized without the
panel: its height is its contents').
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractScrollArea, QScrollArea, QWidget

SHORT_DOCK = 290  # px of a panel seen below which docks say their secondary lines in a tooltip (1024x700: ~250-276;
# 1400x900: 300)


def grow_bottom_dock(window, name: str, panel: QWidget, need: int) -> None:
    """The bottom dock `name` (showing `panel`) grown by `need` px more of the panel in view, and by what its scroll
    area hides below the fold before that, as far as the window lets a bottom dock grow (window.bottom_dock_cap:
    the graph keeps its share); nothing for a dock floating, hidden or elsewhere (the Profile dock's rows, the
    Convert dock's log, the Statistics dock's title over its histogram). Nor for docks the user dragged to a
    height of their own (window.bottom_user_sized): they grew back after every conversion (a new-user try)."""
    dock = getattr(window, "docks", {}).get(name)
    if dock is None or not dock.isVisible() or dock.isFloating() or not hasattr(window, "bottom_dock_cap") or \
            window.dockWidgetArea(dock) != Qt.BottomDockWidgetArea:
        return
    if getattr(window, "bottom_user_sized", lambda: False)():   # the user dragged the docks' separator
        return
    area = dock.widget()
    need += max(0, panel.height() - area.viewport().height()) if isinstance(area, QScrollArea) else 0
    if need <= 0:
        return
    want = min(window.bottom_dock_cap(dock), dock.height() + need)
    if want > dock.height():
        window.resizeDocks([dock], [want], Qt.Vertical)


def seen_height(panel) -> int:
    """The height of `panel` its dock shows: its scroll area's viewport, else its own."""
    area = panel.parentWidget()
    if area is None or area is QWidget.window(panel):  # (QWidget.window: some panels keep the window under that name)
        return panel.height()
    scroll = area.parentWidget()  # the scroll area around its viewport: a scroll bar coming and going leaves it be
    return scroll.height() if isinstance(scroll, QAbstractScrollArea) else area.height()


def scroll_area_of(panel) -> QScrollArea | None:
    """The scroll area a dock shows `panel` in, None when it is in none (a floating test panel)."""
    w = panel.parentWidget()
    while w is not None and not isinstance(w, QScrollArea):
        w = w.parentWidget()
    return w


def is_short(panel) -> bool:
    return seen_height(panel) < SHORT_DOCK


class _Watcher(QObject):
    def __init__(self, panel, changed):
        super().__init__(panel)
        self.panel, self.changed = panel, changed

    def eventFilter(self, obj, e) -> bool:
        if e.type() in (QEvent.Resize, QEvent.Show) and obj in (self.panel, self.panel.parentWidget()):
            self.changed()
        return False


def watch_short(panel, changed) -> None:
    """Call `changed()` whenever the panel or the part of it its dock shows is resized or shown (the panel compares
    is_short with what it showed last: a height it was drawn at may pass without an event of its own), watching the
    panel and, once it is in its scroll area, the viewport."""
    w = getattr(panel, "_short_watcher", None)
    if w is None:
        w = panel._short_watcher = _Watcher(panel, changed)
        panel.installEventFilter(w)
    area = panel.parentWidget()
    if area is not None and getattr(w, "area", None) is not area:
        w.area = area
        area.installEventFilter(w)


def least_height_for_width(panel, width: int) -> int:
    """A panel's heightForWidth in its dock's scroll area: the least height its contents need at `width`, not their
    preferred one. A word-wrapped label makes a layout height-for-width, and the scroll area then makes the panel
    as tall as heightForWidth says: with the preferred height its tables and plots asked ~600 px in a 230 px dock,
    which scrolled through them (the Compare dock ~900 px; the Text dock's KL plot below the fold at 1500x950)."""
    lay = panel.layout()
    return lay.totalMinimumHeightForWidth(width) if lay is not None else QWidget.heightForWidth(panel, width)


class LeastHeightColumn(QWidget):
    """A column of a panel in a scroll area of its own (widgetResizable): as tall as its contents need at least,
    not as they would like (least_height_for_width), so that the area scrolls only when that does not fit. The
    Convert dock's middle column asked 293 px for its log in a 196 px area and scrolled, the log's own scroll bar
    inside the column's (helper 79's try at 1024x700)."""

    def heightForWidth(self, width: int) -> int:
        return least_height_for_width(self, width)
