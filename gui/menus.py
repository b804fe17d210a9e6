"""The main window's menus and toolbar: every action with its shortcut, icon and tip, found by name in
`window.actions_by_name` (the shortcuts dialog is built from these menus)."""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QAction, QActionGroup, QIcon, QKeySequence

from mnnscope.gui import settings as cfg
from mnnscope.gui.theme import ICONS


def icon(name: str) -> QIcon:
    p = ICONS / f"{name}.svg"
    return QIcon(str(p)) if p.is_file() else QIcon()


def _act(w, menu, text, slot, shortcut=None, icon_name=None, checkable=False, tip=None) -> QAction:
    a = QAction(text, w)
    if shortcut:
        a.setShortcut(QKeySequence(shortcut))
    if icon_name:
        a.setIcon(icon(icon_name))
    if tip:
        a.setStatusTip(tip)
        a.setToolTip(tip)
    a.setCheckable(checkable)
    a.triggered.connect(slot)
    menu.addAction(a)
    w.actions_by_name[text.replace("&", "").replace("\u2026", "").strip()] = a
    return a


def add_action(w, menu, text, slot, shortcut=None, icon_name=None, checkable=False, tip=None) -> QAction:
    """An action in `menu`, registered in `w.actions_by_name` (so the shortcuts dialog lists it): for docks."""
    return _act(w, menu, text, slot, shortcut, icon_name, checkable, tip)


class _EnabledMirror(QObject):
    """Keeps an action enabled exactly while a widget is (installed on the widget, owned by the action)."""

    def __init__(self, widget, action: QAction):
        super().__init__(action)
        self.action = action
        widget.installEventFilter(self)
        action.setEnabled(widget.isEnabled())

    def eventFilter(self, obj, e) -> bool:
        if e.type() == QEvent.EnabledChange:
            self.action.setEnabled(obj.isEnabled())
        return False


def follow_enabled(widget, action: QAction) -> None:
    """Enable `action` while `widget` is enabled: a menu twin of a dock's button (Cancel) shows the same state."""
    _EnabledMirror(widget, action)


def make_actions(w) -> None:
    """The menus, toolbar and `w.actions_by_name` of main window `w`."""
    w.actions_by_name: dict[str, QAction] = {}
    mb = w.menuBar()
    f = mb.addMenu("&File")
    _act(w, f, "&Open\u2026", w.ask_open, QKeySequence.Open, "open", tip="Open an .onnx or .mnn model")
    _act(w, f, "Open &Folder\u2026", w.ask_open_folder, "Ctrl+Alt+O", None,
         tip="Open a model folder: an MNN-LLM export (config.json, llm.mnn, llm.mnn.weight, tokenizer.mtok)")
    w.recent_menu = f.addMenu("Open &Recent")
    _act(w, f, "Open &Side by Side\u2026", w.ask_open_second, "Ctrl+Shift+O", "compare",
         tip="Open a second model (e.g. the .mnn conversion) beside this one, with linked selection")
    _act(w, f, "Close Side by Side", w.close_second).setEnabled(False)  # the window enables it with a pane
    _act(w, f, "&Close Model", w.close_model, "Ctrl+W", tip="Close the open model (and the one beside it)")
    f.addSeparator()
    _act(w, f, "&Export Image\u2026", lambda: _export(w), "Ctrl+E",
         tip="Save the visible area or the whole graph as PNG or SVG")
    f.addSeparator()
    # QKeySequence.Quit is empty on Linux without a desktop platform theme (and on Windows)
    _act(w, f, "&Quit", w.close, "Ctrl+Q")
    e = mb.addMenu("&Edit")
    _act(w, e, "&Find\u2026", lambda: w.view.show_search(), QKeySequence.Find, "find",
         tip="Find nodes by name, op type or tensor")
    _act(w, e, "Find &Next", lambda: w.view.search_bar.next(), "F3")
    _act(w, e, "Find &Previous", lambda: w.view.search_bar.previous(), "Shift+F3")
    _act(w, e, "Select &All Matches", lambda: w.view.search_bar.select_all(), "Ctrl+Shift+A")
    _act(w, e, "&Copy Properties", w.properties.copy, "Ctrl+Shift+C")
    v = mb.addMenu("&View")
    _act(w, v, "&Fit to Window", lambda: w.view.fit_pressed(), "Ctrl+0", "fit",
         tip="Fit the graph at a readable size (a tall, narrow one by its width, from the top); again: the whole graph")
    _act(w, v, "Zoom &In", lambda: w.view.canvas.zoom(1.25), QKeySequence.ZoomIn, "zoom-in")
    _act(w, v, "Zoom &Out", lambda: w.view.canvas.zoom(0.8), QKeySequence.ZoomOut, "zoom-out")
    _act(w, v, "Actual &Size", lambda: w.view.canvas.zoom(1.0 / w.view.canvas.scale), "Ctrl+1")
    v.addSeparator()
    _act(w, v, "&Expand All", lambda: w.view.expand_all(), "Ctrl+Shift+E", "expand",
         tip="Open every scope (large models: this is the flat graph)")
    _act(w, v, "&Collapse All", lambda: w.view.collapse_all(), "Ctrl+Shift+W", "collapse")
    _act(w, v, "Expand / Collapse Selected", lambda: w.view.activate(w.view.canvas.selected),
         tip="Enter in the graph does the same")
    v.addSeparator()
    mm = _act(w, v, "&Minimap", w.toggle_minimap, "Ctrl+M", checkable=True)
    mm.setChecked(True)
    themes = v.addMenu("&Theme")
    group = QActionGroup(w)
    for name in ("light", "dark"):
        a = _act(w, themes, name.title(), lambda _=False, n=name: w.set_theme(n), checkable=True)
        a.setChecked(name == w.theme)
        group.addAction(a)
    docks = v.addMenu("&Panels")
    for name, d in w.docks.items():
        a = d.toggleViewAction()
        a.toggled.connect(lambda on, d=d: on or w.panel_unchecked(d))  # (before Qt's own slot: a tab behind stays)
        a.triggered.connect(lambda on, d=d: on and w.panel_shown(d))  # to the front, with room
        docks.addAction(a)
    w.notices_menu = v.addMenu("Recent &Notices")  # as the status bar's Notices button lists them
    w.notices_menu.aboutToShow.connect(lambda: w.notices.fill(w.notices_menu))
    m = mb.addMenu("&Model")
    # Ctrl+Shift+C is Copy Properties already: an ambiguous shortcut would trigger neither
    _act(w, m, "&Convert to MNN\u2026", w.ask_convert, "Ctrl+Shift+M",
         tip="Convert the open .onnx model to .mnn, with a diagnosis when it fails").setEnabled(False)
    w.run_menu = mb.addMenu("&Run")  # the docks' actions (gui/panels/__init__.py: add_actions)
    for panel in getattr(w, "panels", {}).values():
        if hasattr(panel, "add_actions"):
            panel.add_actions(w.run_menu)
    w.run_menu.menuAction().setVisible(not w.run_menu.isEmpty())
    h = mb.addMenu("&Help")
    _act(w, h, "&Getting Started", w.show_guide,
         tip="The window's daily loops in eight steps: look, set inputs, profile, compare, convert, a language "
             "model's text, look back")
    _act(w, h, "&Keyboard Shortcuts", w.show_shortcuts, "F1")
    _act(w, h, "&About mnnscope", w.show_about)
    tb = w.addToolBar("Main")
    tb.setObjectName("toolbar_main")
    tb.setMovable(False)
    for name in ("Open", "Find", "Fit to Window", "Zoom In", "Zoom Out", "Expand All", "Collapse All"):
        tb.addAction(w.actions_by_name[name])
    # the toolbar's two panes are a switch: it opens a second model, and closes side by side when one is open (it
    # opened the file dialog again, and only File > Close Side by Side closed it: tryout 19)
    side = QAction(icon("compare"), "Side by Side", w)
    side.setCheckable(True)
    side.setToolTip("Open a second model (e.g. the .mnn conversion) beside this one, with linked selection")
    side.triggered.connect(lambda on: toggle_side_by_side(w, on))
    tb.addAction(side)
    w.actions_by_name["Side by Side (toolbar)"] = side
    # running the model, named on the toolbar: a new user found nothing labelled as a run and guessed that Run >
    # Profile (F5) was it (a try at 1024x700)
    runs = [(name, label, icon_name) for name, label, icon_name in
            (("Profile", "Profile", "run"), ("Compare with ONNX Runtime", "Compare", "check"))
            if name in w.actions_by_name]
    if runs:
        tb.addSeparator()
    for name, label, icon_name in runs:
        a = w.actions_by_name[name]
        a.setIcon(icon(icon_name))
        a.setIconText(label)
        tb.addAction(a)
        button = tb.widgetForAction(a)
        button.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
        keys = a.shortcut().toString(QKeySequence.NativeText)
        button.setToolTip(f"{a.toolTip()} ({keys})" if keys else a.toolTip())
    # the window rebuilds the list after each load; "Clear" is added whenever the menu opens
    w.recent_menu.aboutToShow.connect(lambda: fill_recent(w))
    fill_recent(w)


def toggle_side_by_side(w, on: bool) -> None:
    if on:
        w.ask_open_second()
    else:
        w.close_second()
    sync_side_by_side(w)  # a cancelled dialog leaves it off


def sync_side_by_side(w) -> None:
    """The toolbar switch as the window is: on with a second pane, its tooltip saying what a click does."""
    side = w.actions_by_name.get("Side by Side (toolbar)")
    if side is None:
        return
    side.setChecked(w.second is not None)
    side.setToolTip("Close side by side (File ▸ Close Side by Side)" if w.second is not None else
                    "Open a second model (e.g. the .mnn conversion) beside this one, with linked selection")


def fill_recent(w) -> None:
    """Open Recent: the recent files, then "Clear Recent Files" (disabled menu when there are none)."""
    w._refresh_recent()
    if not w.recent_menu.actions():
        return
    w.recent_menu.addSeparator()
    a = w.recent_menu.addAction("Clear Recent Files", lambda: clear_recent(w))
    a.setObjectName("clear_recent")


def clear_recent(w) -> None:
    cfg.clear_recent()
    w._refresh_recent()


def _export(w) -> None:
    from mnnscope.gui.export import ask_export
    ask_export(w)
