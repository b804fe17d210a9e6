"""QPainterPaths built from numpy arrays in one call each (no Python loop per shape).

Qt serialises a path as: int32 element count, then per element int32 type and two float64 coordinates,
then int32 fill rule (big-endian). Building those bytes with numpy and reading them back through
QDataStream turns 100k shapes into one path in milliseconds. The element arrays themselves are made
Qt-free (`*_elements` functions), so worker threads can prepare them.
"""
from __future__ import annotations

import numpy as np

MOVE, LINE, CURVE, CURVE_DATA = 0, 1, 2, 3
_ELEMENT = np.dtype([("t", ">i4"), ("x", ">f8"), ("y", ">f8")])


def path_from_elements(types: np.ndarray, xy: np.ndarray):
    """One QPainterPath (winding fill) from element types and coordinates."""
    from PySide6.QtCore import QByteArray, QDataStream, QIODevice
    from PySide6.QtGui import QPainterPath
    n = len(types)
    rec = np.empty(n, _ELEMENT)
    rec["t"] = types
    rec["x"] = xy[:, 0]
    rec["y"] = xy[:, 1]
    data = np.array([n], ">i4").tobytes() + rec.tobytes() + np.array([1], ">i4").tobytes()
    path = QPainterPath()
    buf = QByteArray(data)  # must outlive the stream that reads it
    stream = QDataStream(buf, QIODevice.ReadOnly)
    stream >> path
    del stream
    return path


def edge_elements(ptr: np.ndarray, pts: np.ndarray, curved: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Elements for every polyline pts[ptr[e]:ptr[e+1]]: a vertical S-curve (cubic) per segment, or straight
    lines. Returns (types, xy, element_ptr) so that callers can pick edges later by slicing."""
    m = len(ptr) - 1
    npts = np.diff(ptr)
    per = 1 + (npts - 1) * (3 if curved else 1)
    eptr = np.r_[0, np.cumsum(per)]
    total = int(eptr[-1])
    types = np.empty(total, np.int32)
    xy = np.empty((total, 2))
    if m == 0:
        return types, xy, eptr
    types[eptr[:-1]] = MOVE
    xy[eptr[:-1]] = pts[ptr[:-1]]
    # segments: every point except the first of each polyline ends one
    seg_end = np.ones(len(pts), bool)
    seg_end[ptr[:-1]] = False
    p1_idx = np.flatnonzero(seg_end)
    p0 = pts[p1_idx - 1]
    p1 = pts[p1_idx]
    owner = np.repeat(np.arange(m), npts - 1)
    k = p1_idx - ptr[:-1][owner] - 1  # segment index within its polyline
    if curved:
        base = eptr[:-1][owner] + 1 + 3 * k
        dy = (p1[:, 1] - p0[:, 1]) * 0.5
        types[base] = CURVE
        types[base + 1] = CURVE_DATA
        types[base + 2] = CURVE_DATA
        xy[base, 0], xy[base, 1] = p0[:, 0], p0[:, 1] + dy
        xy[base + 1, 0], xy[base + 1, 1] = p1[:, 0], p1[:, 1] - dy
        xy[base + 2] = p1
    else:
        base = eptr[:-1][owner] + 1 + k
        types[base] = LINE
        xy[base] = p1
    return types, xy, eptr


def pick(types: np.ndarray, xy: np.ndarray, eptr: np.ndarray, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The elements of the shapes `which` (indices into eptr), concatenated."""
    if len(which) == 0:
        return types[:0], xy[:0]
    lens = eptr[which + 1] - eptr[which]
    starts = np.repeat(eptr[which], lens)
    offs = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
    idx = starts + offs
    return types[idx], xy[idx]


def rounded_rect_elements(x0, y0, x1, y1, r: float) -> tuple[np.ndarray, np.ndarray]:
    """Rounded rectangles (corner radius r) as path elements, 17 per rectangle."""
    k = len(x0)
    if k == 0:
        return np.zeros(0, np.int32), np.zeros((0, 2))
    r = np.minimum(r, np.minimum(x1 - x0, y1 - y0) / 2)
    c = 0.4477 * r  # cubic approximation of a quarter circle: control points at (1 - 0.5523) r
    t = np.array([MOVE, LINE, CURVE, CURVE_DATA, CURVE_DATA, LINE, CURVE, CURVE_DATA, CURVE_DATA, LINE,
                  CURVE, CURVE_DATA, CURVE_DATA, LINE, CURVE, CURVE_DATA, CURVE_DATA], np.int32)
    X = np.stack([x0 + r, x1 - r, x1 - c, x1, x1, x1, x1, x1 - c, x1 - r, x0 + r, x0 + c, x0, x0, x0, x0,
                  x0 + c, x0 + r], axis=1)
    Y = np.stack([y0, y0, y0, y0 + c, y0 + r, y1 - r, y1 - c, y1, y1, y1, y1, y1 - c, y1 - r, y0 + r, y0 + c,
                  y0, y0], axis=1)
    return np.tile(t, k), np.stack([X.ravel(), Y.ravel()], axis=1)


def rect_elements(x0, y0, x1, y1) -> tuple[np.ndarray, np.ndarray]:
    k = len(x0)
    t = np.array([MOVE, LINE, LINE, LINE, LINE], np.int32)
    X = np.stack([x0, x1, x1, x0, x0], axis=1)
    Y = np.stack([y0, y0, y1, y1, y0], axis=1)
    return np.tile(t, k), np.stack([X.ravel(), Y.ravel()], axis=1)


def arrow_elements(tip: np.ndarray, up: np.ndarray, size: float) -> tuple[np.ndarray, np.ndarray]:
    """Small filled triangles pointing down (or up where `up`) with their tips at `tip`."""
    k = len(tip)
    s = np.where(up, -1.0, 1.0) * size
    t = np.array([MOVE, LINE, LINE, LINE], np.int32)
    X = np.stack([tip[:, 0], tip[:, 0] - size * 0.55, tip[:, 0] + size * 0.55, tip[:, 0]], axis=1)
    Y = np.stack([tip[:, 1], tip[:, 1] - s, tip[:, 1] - s, tip[:, 1]], axis=1)
    return np.tile(t, k), np.stack([X.ravel(), Y.ravel()], axis=1)
