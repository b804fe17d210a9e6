"""Where a dialog goes: never larger than the screen it opens on, never past its edges (at 1024x700 the
convert dialog's buttons ended below the screen)."""
from __future__ import annotations

from PySide6.QtWidgets import QWidget

MARGIN = 24


def keep_on_screen(dlg: QWidget, anchor: QWidget) -> None:
    """Shrink `dlg` to the available area of `anchor`'s screen and move it inside that area."""
    screen = anchor.screen() if anchor is not None else dlg.screen()
    if screen is None:
        return
    area = screen.availableGeometry()
    frame = dlg.frameGeometry()
    extra_w, extra_h = frame.width() - dlg.width(), frame.height() - dlg.height()  # title bar, borders
    w = min(dlg.width(), max(200, area.width() - 2 * MARGIN - extra_w))
    h = min(dlg.height(), max(200, area.height() - 2 * MARGIN - extra_h))
    if (w, h) != (dlg.width(), dlg.height()):
        dlg.resize(w, h)
    x = min(max(frame.x(), area.x()), area.x() + area.width() - (w + extra_w))
    y = min(max(frame.y(), area.y()), area.y() + area.height() - (h + extra_h))
    if (x, y) != (frame.x(), frame.y()):
        dlg.move(x, y)
