"""A word-wrapped QLabel that asks its layout for the lines its text needs (a plain one asks for one line, and a
squeezed layout cut its text at the top and bottom)."""
from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QLabel


class WrappedLabel(QLabel):
    """A word-wrapped label whose minimum height is what its text needs at its present width. A plain one asks for
    one line: two lines at 1024 px squeezed the Statistics dock's histogram below its own minimum, its axis drawn
    over the NaN/Inf row; the Convert dock's output note was cut at the top and bottom (tryout 19)."""

    def minimumSizeHint(self) -> QSize:
        s = super().minimumSizeHint()
        if self.wordWrap() and self.width() > 0:
            s.setHeight(max(s.height(), self.heightForWidth(self.width())))
        return s

    def resizeEvent(self, e) -> None:
        super().resizeEvent(e)
        if e.size().width() != e.oldSize().width():
            self.updateGeometry()  # another width, another number of lines
