"""A pyqtgraph axis whose tick labels never overlap: on a short plot (a dock at its default height at 1024x700)
pyqtgraph still labels at least two major ticks plus minor ones, and the labels ran into each other ("10^-1" over
"10^-10" on the compare error plot, "0.2 0.4 0.6 0.8" on the Statistics histogram's count axis; tryout 8)."""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtGui import QFontMetrics


def nice_step(step: float) -> float:
    """The smallest 1, 2 or 5 x 10^k not below `step` (> 0)."""
    p = 10.0 ** math.floor(math.log10(step))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * p >= step * (1 - 1e-9):
            return m * p
    return 10.0 * p


class FittedAxis(pg.AxisItem):
    """A vertical axis whose labelled ticks are never closer than a label's height and a gap (fewer ticks on a
    short plot); horizontal axes, and vertical ones with room, behave as pyqtgraph's own."""

    def label_room(self) -> float:
        """The least distance between two labelled ticks: a label's height as pyqtgraph lays it out (0.8 of the
        font's line) and a small gap."""
        font = self.style.get("tickFont")
        return 0.8 * QFontMetrics(font if font is not None else self.font()).height() + 2

    def tickSpacing(self, minVal: float, maxVal: float, size: float):
        levels = super().tickSpacing(minVal, maxVal, size)
        if self.orientation not in ("left", "right") or not levels or self._tickSpacing is not None:
            return levels
        span, room = abs(maxVal - minVal), self.label_room()
        if span <= 0 or size <= 0 or levels[0][0] * size / span >= room:
            # the major labels fit; minor ones are labelled only where pyqtgraph finds room (textFillLimits)
            return levels
        step = nice_step(span * room / size)  # adjacent labels at least `room` apart
        if self.logMode:
            step = float(math.ceil(step))  # whole decades: 10^-10, 10^-5, 10^0
        return [(step, 0)]

    def logTickValues(self, minVal, maxVal, size, stdTicks):
        """A vertical log axis: whole decades only. pyqtgraph adds ticks at 2..9 x 10^k when fewer than three decades
        are in view and labels them over each other on a short plot ("10^-9 9·10^-10 8·10^-10..."; tryout 11)."""
        ticks = super().logTickValues(minVal, maxVal, size, stdTicks)
        if self.orientation not in ("left", "right"):
            return ticks
        whole = [(spacing, t) for spacing, t in ticks if spacing is not None]
        if whole:
            return whole
        decades = [float(v) for v in range(math.ceil(minVal), math.floor(maxVal) + 1)]
        return [(1.0, decades)] if decades else ticks
