"""A pyqtgraph axis whose tick labels never overlap: on a short plot (a dock at its default height at 1024x700)
pyqtgraph still labels at least two major ticks plus minor ones, and the labels ran into each other ("10^-1" over
"10^-10" on the compare error plot, "0.2 0.4 0.6 0.8" on the Statistics histogram's count axis; tryout 8); a log
axis says its ticks in one format (pyqtgraph wrote "0.0001" beside "10⁻⁶" on the same axis: a new-user try)."""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtGui import QFontMetrics


SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
PLAIN_DECADES = (-3, 3)  # a log axis whose ticks all lie in 10^-3 .. 10^3 reads them plain (0.001 .. 1000)


def power_of_ten(v: float) -> str:
    """10**v as a power: "10⁻⁶", "2·10⁻⁶" (one digit before the power, as pyqtgraph's own labels)."""
    k = math.floor(v + 1e-9)
    m = round(10.0 ** (v - k))
    if m >= 10:
        k, m = k + 1, 1
    return ("" if m == 1 else f"{m}·") + "10" + str(k).translate(SUPERSCRIPT)


def plain_number(v: float) -> str:
    """10**v written out ("0.0001", "20", "1000"), one significant digit as pyqtgraph's own labels."""
    k = math.floor(v + 1e-9)
    m = round(10.0 ** (v - k))
    if m >= 10:
        k, m = k + 1, 1
    return f"{m * 10.0 ** k:.{max(0, -k)}f}"


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

    def tickValues(self, minVal, maxVal, size):
        levels = super().tickValues(minVal, maxVal, size)
        self._levels = levels  # what logTickStrings is asked to label next, level by level (generateDrawSpecs)
        return levels

    def logTickStrings(self, values, scale, spacing):
        """One format for every tick of the axis: all written out where every tick is within PLAIN_DECADES, else
        all as powers of ten. pyqtgraph formats each value on its own ("%0.1g": plain from 1e-4 up to 9), so
        1e-10..0.1 read "10⁻¹⁰ 10⁻⁸ 10⁻⁶ 0.0001 0.01". Decided on all the axis's ticks, not the values of one call:
        pyqtgraph asks for the major and the minor ticks apart."""
        if scale != 1 or not len(values):
            return super().logTickStrings(values, scale, spacing)
        ticks = [float(v) for _spacing, vs in (getattr(self, "_levels", None) or []) for v in vs]
        ticks += [float(v) for v in values]
        plain = all(PLAIN_DECADES[0] <= math.floor(v + 1e-9) <= PLAIN_DECADES[1] for v in ticks)
        return [plain_number(v) if plain else power_of_ten(v) for v in values]


def title_room(plot: pg.PlotWidget, margin: int = 16) -> int:
    """The width a plot's title may take: over the view box (its column), less `margin` for the text item's own. A
    pyqtgraph title is never narrower than its text: wider than this, it widens the plot item past its widget and
    what lies right of the widget's edge (axis, points, bars) is cut, with no scroll bar (the Compare dock's depth
    plot, the Profile dock's chart at 1024 px: new-user tries)."""
    axis = plot.getAxis("left")
    return plot.viewport().width() - max(int(axis.width()), int(axis.minimumWidth())) - margin


def show_axes(plot: pg.PlotWidget, on: bool) -> None:
    """A plot's axes shown, or hidden while it has nothing to plot: empty, it drew a 0-1 frame with ticks 0.2 ...
    1.0 under nothing (the Profile chart before a run, the Text dock's KL plot, a histogram of no values: new-user
    tries). Its title says what will be there."""
    for side in ("left", "bottom"):
        if on:
            plot.showAxis(side)
        else:
            plot.hideAxis(side)


def show_empty(plot: pg.PlotWidget, title: str | None) -> None:
    """`title` given: the plot has nothing to plot, its axes hidden and `title` saying what will be there; None: its
    axes back and no title (the Text dock's KL plot, the Sweep tab's)."""
    show_axes(plot, title is None)
    if title is None:
        # pyqtgraph hides the title but keeps its text, and with it its width as the plot's least: the empty plot's
        # title kept the Text dock's KL plot 384 px wide in a 322 px widget at 1024x700, steps 11-15 cut off
        plot.plotItem.titleLabel.setText("")
    plot.setTitle(title)
