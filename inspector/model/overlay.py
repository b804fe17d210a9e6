"""Overlays: a value per node or tensor name (timings, errors, statistics) plus a colour scale.

One object serves every kind of per-node number; the viewer colours nodes with it and it exports to
Model Explorer's node-data JSON so the same numbers can be looked at there.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# Perceptually ordered ramps (low -> high).
RAMPS = {
    "heat": ("#2c7bb6", "#abd9e9", "#ffffbf", "#fdae61", "#d7191c"),
    "error": ("#1a9850", "#a6d96a", "#fee08b", "#f46d43", "#a50026"),
    "mono": ("#f1eef6", "#bdc9e1", "#74a9cf", "#2b8cbe", "#045a8d"),
    # diverging, for signed changes on a scale symmetric about 0: blue = less (faster), grey = no change, red =
    # more (slower); mid-dark throughout, because the graph writes op names on nodes in white
    "diverge": ("#2166ac", "#5b8ec2", "#8a8a8a", "#cf6a5c", "#b2182b"),
}


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def _hex(rgb) -> str:
    return "#%02x%02x%02x" % tuple(int(round(max(0, min(255, c)))) for c in rgb)


def text_colour(bg: str) -> str:
    """Black or white, whichever reads better on `bg` (WCAG relative luminance)."""
    r, g, b = (c / 255.0 for c in _rgb(bg))
    lum = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#000000" if lum > 0.45 else "#ffffff"


@dataclass
class ColorScale:
    """Maps [vmin, vmax] (optionally on a log axis) onto a ramp of colours."""

    vmin: float
    vmax: float
    colours: tuple = RAMPS["heat"]
    log: bool = False

    def position(self, value: float) -> float:
        lo, hi, v = self.vmin, self.vmax, value
        if self.log:
            lo, hi, v = (math.log10(max(x, 1e-30)) for x in (lo, hi, v))
        if not math.isfinite(v):
            return 1.0
        if hi <= lo:
            return 1.0
        return min(1.0, max(0.0, (v - lo) / (hi - lo)))

    def colour(self, value: float) -> str:
        t = self.position(value) * (len(self.colours) - 1)
        i = min(int(t), len(self.colours) - 2)
        a, b = _rgb(self.colours[i]), _rgb(self.colours[i + 1])
        f = t - i
        return _hex(tuple(x + (y - x) * f for x, y in zip(a, b)))

    def gradient(self) -> list[dict]:
        n = len(self.colours)
        return [{"stop": i / (n - 1), "bgColor": c} for i, c in enumerate(self.colours)]


@dataclass
class Overlay:
    """`values`: node id, node name or output tensor name -> number."""

    name: str
    values: dict[str, float]
    scale: ColorScale
    unit: str = ""
    aggregate: str = "sum"   # how a collapsed scope combines its ops: sum (timings) or max (errors)
    meta: dict = field(default_factory=dict)
    # node ids drawn in a neutral grey, not in their op colour: nothing was measured there (a profile from a node
    # leaves out what comes before it)
    muted: frozenset = frozenset()
    # values keyed by node id only (not also by name or output tensor): an overlay made for one table's ops (the
    # linked pane's mirror), where an op's output tensor named like another op must not take that op's value
    by_id: bool = False

    @classmethod
    def from_values(cls, name: str, values: dict, ramp: str = "heat", log: bool = False, unit: str = "",
                    aggregate: str = "sum", vmin: float | None = None, vmax: float | None = None) -> "Overlay":
        clean = {str(k): float(v) for k, v in values.items() if v is not None}
        finite = [v for v in clean.values() if math.isfinite(v) and (v > 0 or not log)]
        lo = vmin if vmin is not None else (min(finite) if finite else 0.0)
        hi = vmax if vmax is not None else (max(finite) if finite else 1.0)
        return cls(name, clean, ColorScale(lo, hi, RAMPS.get(ramp, RAMPS["heat"]), log), unit, aggregate)

    @classmethod
    def diverging(cls, name: str, values: dict, unit: str = "") -> "Overlay":
        """Signed values (a change) on the diverging ramp, symmetric about 0 so that no change is the middle
        colour; a collapsed scope shows the sum of its ops' changes."""
        finite = [abs(float(v)) for v in values.values() if v is not None and math.isfinite(float(v))]
        m = max(finite, default=0.0) or 1.0
        return cls.from_values(name, values, ramp="diverge", unit=unit, aggregate="sum", vmin=-m, vmax=m)

    def colour_of(self, key: str) -> str | None:
        v = self.values.get(key)
        return None if v is None else self.scale.colour(v)

    def node_values(self, table) -> dict[int, float]:
        """Value per op index of a GraphTable, matched by id, then name, then first output tensor."""
        out: dict[int, float] = {}
        if self.by_id:
            return {i: self.values[k] for i, k in enumerate(table.ids) if k in self.values}
        for i in range(table.node_count):
            for key in (table.ids[i], table.names[i]):
                if key in self.values:
                    out[i] = self.values[key]
                    break
            else:
                for t in table.node_outputs(i):
                    if t >= 0 and table.tensor_names[t] in self.values:
                        out[i] = self.values[table.tensor_names[t]]
                        break
        return out

    def combine(self, values) -> float:
        arr = np.asarray(list(values), np.float64)
        if arr.size == 0:
            return float("nan")
        return float(arr.sum() if self.aggregate == "sum" else arr.max())

    def to_model_explorer(self, graph_id: str = "main") -> dict:
        """Model Explorer's node-data JSON: {graphId: {results: {key: {value, bgColor, textColor}}, gradient}}."""
        results = {}
        for k, v in self.values.items():
            bg = self.scale.colour(v)
            results[k] = {"value": v if math.isfinite(v) else str(v), "bgColor": bg, "textColor": text_colour(bg)}
        return {graph_id: {"results": results, "gradient": self.scale.gradient()}}
