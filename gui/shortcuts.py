"""Help > Keyboard Shortcuts: every menu action's shortcut, read from the menus themselves (a hand-written list
goes stale with the next action), then the keys and gestures of the graph and the find bar."""
from __future__ import annotations

import html

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QDialog, QHBoxLayout, QPushButton, QTextBrowser, QVBoxLayout
from mnnscope.gui.placement import keep_on_screen

# Not actions, so not in any menu: the canvas handles these keys itself (gui.canvas, gui.search).
GESTURES = (
    ("Graph", "Select a node or scope", "Click"),
    ("Graph", "Expand a scope, open an If/Loop body", "Double-click, Enter, or the + glyph"),
    ("Graph", "Collapse an expanded scope", "Double-click its title, or its \u2212 glyph"),
    ("Graph", "Go to producer / consumer", "\u2191 / \u2193"),
    ("Graph", "Go to the neighbour left / right", "\u2190 / \u2192"),
    ("Graph", "Pan", "Drag, Shift+arrows, wheel (Shift+wheel: sideways)"),
    ("Graph", "Zoom", "Ctrl+wheel, + / \u2212"),
    ("Find bar", "Next / previous match", "Enter / Shift+Enter"),
    ("Find bar", "Close", "Esc"),
)


def _plain(text: str) -> str:
    """Menu text without its mnemonic marker ("&&" is a literal ampersand)."""
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&")


def menu_actions(menubar) -> list[tuple[str, object]]:
    """(menu path, action) for every action under `menubar`, in menu order (submenus walked, separators left out):
    what Help's dialogs read the menus from."""
    out: list[tuple[str, object]] = []

    def walk(menu, path: str) -> None:
        for a in menu.actions():
            if a.isSeparator():
                continue
            if a.menu() is not None:
                walk(a.menu(), f"{path} \u203a {_plain(a.text())}")
            else:
                out.append((path, a))

    for top in menubar.actions():
        if top.menu() is not None:
            walk(top.menu(), _plain(top.text()))
    return out


def shortcut_rows(menubar) -> list[tuple[str, str, str]]:
    """(menu path, action, keys) for every action with a shortcut under `menubar`, in menu order."""
    rows: list[tuple[str, str, str]] = []
    for path, a in menu_actions(menubar):
        keys = [k.toString(QKeySequence.NativeText) for k in a.shortcuts() if not k.isEmpty()]
        if keys:
            rows.append((path, _plain(a.text()), ", ".join(keys)))
    return rows


def shortcuts_html(menubar) -> str:
    e = html.escape
    out = ["<table cellspacing='0' cellpadding='3' width='100%'>"]
    last = None
    for group, what, keys in shortcut_rows(menubar) + list(GESTURES):
        if group != last:
            out.append(f"<tr><td colspan='2'><br><b>{e(group)}</b></td></tr>")
            last = group
        out.append(f"<tr><td>{e(what)}</td><td align='right'><b>{e(keys)}</b></td></tr>")
    out.append("</table>")
    return "".join(out)


class TextDialog(QDialog):
    """A non-modal dialog of one rich text and a Close button, rebuilt by `refresh` (Help's dialogs)."""

    def __init__(self, window, title: str, width: int, height: int):
        super().__init__(window)
        self.window_ = window
        self.setWindowTitle(title)
        self.setModal(False)
        lay = QVBoxLayout(self)
        self.text = QTextBrowser(self)
        self.text.setOpenLinks(False)
        lay.addWidget(self.text)
        row = QHBoxLayout()
        row.addStretch(1)
        close = QPushButton("Close", self)  # a plain one: Fusion's stock Close icon is black on the dark theme
        close.clicked.connect(self.close)
        row.addWidget(close)
        lay.addLayout(row)
        self.resize(width, height)

    def refresh(self) -> None:
        raise NotImplementedError

    def plain_text(self) -> str:
        return self.text.toPlainText()


def show_dialog(window, attr: str, make) -> TextDialog:
    """The window's one dialog kept in `window.<attr>` (made by `make(window)` the first time), refreshed, shown and
    raised."""
    dlg = getattr(window, attr, None)
    if dlg is None:
        dlg = make(window)
        setattr(window, attr, dlg)
    dlg.refresh()
    dlg.show()
    keep_on_screen(dlg, window)  # after show(): the frame's size is known then
    dlg.raise_()
    dlg.activateWindow()
    return dlg


class ShortcutsDialog(TextDialog):
    def __init__(self, window):
        super().__init__(window, "Keyboard Shortcuts", 520, 720)

    def refresh(self) -> None:
        self.text.setHtml(shortcuts_html(self.window_.menuBar()))


def show_shortcuts(window) -> ShortcutsDialog:
    """The window's one shortcuts dialog, rebuilt from its menus as they are now, shown and raised."""
    return show_dialog(window, "shortcuts_dialog", ShortcutsDialog)
