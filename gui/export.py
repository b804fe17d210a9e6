"""File > Export Image and `mnnscope view --screenshot OUT.png|svg [--whole]`: the visible area or the whole
graph, as PNG or SVG, painted by the canvas's own layers (frames, edges, nodes, highlights, labels)."""
from __future__ import annotations

import html
import os
from pathlib import Path

import numpy as np
from PySide6.QtCore import QRectF, QSize, QStandardPaths, Qt
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import (QButtonGroup, QDialog, QDialogButtonBox, QHBoxLayout, QLabel,
                               QLineEdit, QPushButton, QRadioButton, QVBoxLayout)

from mnnscope.gui import canvas as canvas_mod
from mnnscope.gui import filedialog
from mnnscope.gui import settings as settings_mod
from mnnscope.gui.convertoutput import is_sample

try:  # QtSvg ships in PySide6-Essentials; without it exports are PNG only
    from PySide6.QtSvg import QSvgGenerator
except ImportError:  # pragma: no cover - depends on the PySide6 build
    QSvgGenerator = None

FORMATS = ("png", "svg") if QSvgGenerator is not None else ("png",)
MAX_PIXELS = 60_000_000   # a whole-graph PNG bigger than this is drawn smaller (~240 MB of image memory)
MAX_SIDE = 32_000         # and so is one longer than this (a 20k-op graph laid out as one column: 387k px
                          # took 95 s to paint and save, for an image no viewer opens)
MARGIN = 24.0
LEGEND_PAD = 8            # around the legend in the strip under an exported graph with colours


class ExportError(Exception):
    """The image could not be written (the message says why)."""


def image_format(path: str) -> str:
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in ("png", "svg"):
        raise ExportError(f"'{path}': export wants a .png or .svg file name")
    if ext not in FORMATS:
        raise ExportError("SVG export needs PySide6's QtSvg module, which this installation lacks; save as .png")
    return ext


def _paint(c, p: QPainter, rect, scale: float) -> None:
    """Draw the canvas's scene region `rect` (scene units) at `scale` onto painter `p`, labels included
    wherever their size is readable (no on-screen text budget: an export is read at leisure)."""
    sc = c.scene
    x0, y0, x1, y1 = rect
    saved = (c.scale, c.tx, c.ty, c._cache_key, c._cache)
    c.scale, c.tx, c.ty = scale, -x0 * scale, -y0 * scale
    c._cache_key = c._cache = None
    c.draw_glyphs = False  # the +/- of boxes and frames are buttons: nothing to press on an image
    try:
        p.fillRect(QRectF(0, 0, (x1 - x0) * scale, (y1 - y0) * scale), QColor(c.pal.background))
        p.translate(c.tx, c.ty)
        p.scale(scale, scale)
        c._paint_detail(p, sc, rect)
        if scale >= canvas_mod.TITLE_SCALE and c.last_drawn > canvas_mod.MAX_TEXT_ITEMS:
            # the screen's text budget skipped the labels: an export is read at leisure, draw them all
            c._paint_frame_titles(p, sc, sc.frames_in(*rect))
            c._paint_labels(p, sc, sc.leaves_in(*rect))
    finally:
        c.scale, c.tx, c.ty, c._cache_key, c._cache = saved
        c.draw_glyphs = True
        c.update()


def drawn_bounds(c) -> tuple:
    """The scene's bounds widened to the tensor labels written beside the nodes: a label starts right of the edges
    leaving its node and may run up to labelroom's MAX_ROOM beyond the boxes (or end left of them), while the
    scene's bounds hold boxes and edges only (a whole-graph PNG cut "DynamicDimension.0\u00d748\u00d724\u00d7(floor(DynamicDim"
    at its right side; tryout 8)."""
    sc = c.scene
    x0, y0, x1, y1 = sc.bounds
    at = sc.edge_label_at
    if not len(at) or len(at) > canvas_mod.EDGE_LABELS_MAX:  # none written (_paint_edge_labels)
        return x0, y0, x1, y1
    placed = c.placed_labels(np.arange(len(at)))
    if placed:
        lx = np.array([(x, y, x + w) for _, _, x, y, w, _ in placed])
        x0, x1 = min(x0, float(lx[:, 0].min())), max(x1, float(lx[:, 2].max()))
        y1 = max(y1, float(lx[:, 1].max()) + 10.0)  # a label's line is 10 units tall (labelroom.LABEL_H)
    return x0, y0, x1, y1


def _legend_of(view):
    """(title, unit, note) of the legend for the colours the graph shows: the canvas's own legend where a dock put
    one (Profile's "Time per node", the Runs diff's), else the overlay's name (Compare's, Statistics': their keys sit
    in their docks); None without an overlay."""
    from mnnscope.gui.legend import Legend
    ov = view.overlay
    if ov is None:
        return None
    for lg in view.canvas.findChildren(Legend):
        if lg.owner is ov:
            return lg.title or str(ov.name), lg.unit, lg.note
    return str(ov.name), ov.unit or "", ""


def export_image(view, path: str, whole: bool) -> dict:
    """Write the view's graph to `path` (.png or .svg): the visible area, or the whole graph. Returns
    {path, format, area, width, height, scale}; raises ExportError."""
    fmt = image_format(path)
    c = view.canvas
    if c.scene is None:
        raise ExportError("no graph to export: open a model first")
    if whole:
        for bx0, by0, bx1, by1 in (drawn_bounds(c), c.scene.bounds):
            rect = (bx0 - MARGIN, by0 - MARGIN, bx1 + MARGIN, by1 + MARGIN)
            scale = 1.0
            w, h = rect[2] - rect[0], rect[3] - rect[1]
            if fmt == "png":
                scale = min(1.0, (MAX_PIXELS / (w * h)) ** 0.5, MAX_SIDE / max(w, h))
            if scale >= canvas_mod.EDGE_LABEL_SCALE:
                break  # the labels are written at this scale: their room is in the image (else not needed)
    else:
        rect, scale = c.view_rect(), c.scale
    W = max(1, int(round((rect[2] - rect[0]) * scale)))
    H = max(1, int(round((rect[3] - rect[1]) * scale)))
    legend = _legend_of(view)
    graph_h = H
    if legend is not None:  # the colours' key in a strip under the graph (tryout 11: an exported heat map had none)
        from mnnscope.gui.legend import Legend
        H += Legend.H + 2 * LEGEND_PAD
        W = max(W, int(Legend.W + 2 * LEGEND_PAD))  # a narrow graph (one column) must not cut the legend

    def paint(p: QPainter) -> None:
        if legend is not None:
            p.fillRect(QRectF(0, 0, W, H), QColor(c.pal.background))  # under and beside the graph
        _paint(c, p, rect, scale)
        if legend is not None:
            from mnnscope.gui.legend import paint_legend
            p.resetTransform()
            p.translate(LEGEND_PAD, graph_h + LEGEND_PAD)
            paint_legend(p, view.overlay, *legend)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if fmt == "png":
        img = QImage(W, H, QImage.Format_ARGB32_Premultiplied)
        if img.isNull():
            raise ExportError(f"an image of {W}\u00d7{H} pixels is too large for memory")
        p = QPainter(img)
        paint(p)
        p.end()
        if not img.save(path):
            raise ExportError(f"cannot write {path}")
    else:
        gen = QSvgGenerator()
        gen.setFileName(path)
        gen.setSize(QSize(W, H))
        gen.setViewBox(QRectF(0, 0, W, H))
        gen.setTitle(Path(view.table.path).name if view.table is not None else "graph")
        gen.setDescription("mnnscope graph export")
        p = QPainter()
        if not p.begin(gen):
            raise ExportError(f"cannot write {path}")
        paint(p)
        p.end()
        if not Path(path).is_file():
            raise ExportError(f"cannot write {path}")
    return {"path": str(Path(path).resolve()), "format": fmt, "area": "whole" if whole else "visible",
            "width": W, "height": H, "scale": round(scale, 4), "labels": scale >= canvas_mod.TITLE_SCALE,
            "legend": legend[0] if legend is not None else None}


def export_folder(model: str | None, last: str) -> str:
    """Where Export Image suggests saving: the folder last exported to, else the model's folder, else the user's
    Pictures folder (or home) for a bundled sample or a folder that takes no new file. It suggested the folder
    the app was started from (a tester's checkout) and forgot where the last image went (tryout 2026-12-04)."""
    if last and os.path.isdir(last) and os.access(last, os.W_OK):
        return last
    if model:
        folder = Path(model).resolve().parent
        if not is_sample(Path(model)) and os.access(folder, os.W_OK):
            return str(folder)
    pictures = QStandardPaths.writableLocation(QStandardPaths.PicturesLocation)
    return pictures if pictures and os.path.isdir(pictures) else str(Path.home())


class ExportDialog(QDialog):
    """Area (visible / whole graph), format (PNG / SVG) and file; Export writes it and notifies with the path."""

    def __init__(self, window, view):
        super().__init__(window)
        self.window_, self.view = window, view
        self.result_info: dict | None = None
        self.setWindowTitle("Export image")
        lay = QVBoxLayout(self)
        # which graph: with side by side open the focused pane's, and an .onnx and its .mnn share a stem (tryout 10
        # exported the .mnn pane to "PP-OCRv6_det_small.png", read as the .onnx's)
        name = Path(view.table.path).name if view.table is not None else "graph"
        second = getattr(window, "second", None)
        beside = second is not None and view in second.views()
        self.which = QLabel(f"<b>{html.escape(name)}</b>" + (" (the pane beside the model)" if beside else "")
                            + (" &nbsp;<small>side by side: click into the other pane to export its graph</small>"
                               if second is not None else ""))
        lay.addWidget(self.which)
        lay.addWidget(QLabel("Area"))
        self.visible = QRadioButton("Visible area (as on screen)")
        # as shown: collapsed scopes stay boxes ("every node" read as every op of the model: tryout 2026-12-04)
        self.whole = QRadioButton("Whole graph as shown (all of it, at full size; collapsed scopes stay collapsed)")
        self.whole.setChecked(True)
        area = QButtonGroup(self)
        for b in (self.visible, self.whole):
            area.addButton(b)
            lay.addWidget(b)
        lay.addWidget(QLabel("Format"))
        self.png = QRadioButton("PNG (image)")
        self.svg = QRadioButton("SVG (vector, scales without blur)")
        self.png.setChecked(True)
        if "svg" not in FORMATS:
            self.svg.setEnabled(False)
            self.svg.setToolTip("needs PySide6's QtSvg module")
        fmt = QButtonGroup(self)
        for b in (self.png, self.svg):
            fmt.addButton(b)
            lay.addWidget(b)
        row = QHBoxLayout()
        base = Path(view.table.path).stem if view.table is not None else "graph"
        if view.table is not None and Path(view.table.path).suffix.lower() == ".mnn":
            base += "_mnn"  # not the .onnx's name: the two export side by side to different files
        self.path = QLineEdit(str(Path(export_folder(view.table.path if view.table is not None else None,
                                                     settings_mod.export_dir())) / f"{base}.png"))
        self.path.setMinimumWidth(420)
        browse = QPushButton("Browse\u2026")
        browse.clicked.connect(self._browse)
        row.addWidget(self.path, 1)
        row.addWidget(browse)
        lay.addLayout(row)
        self.exists_note = QLabel("")
        self.exists_note.setWordWrap(True)
        lay.addWidget(self.exists_note)
        self.error = QLabel("")
        self.error.setStyleSheet("color: #c0392b")
        self.error.setWordWrap(True)
        lay.addWidget(self.error)
        buttons = QDialogButtonBox(QDialogButtonBox.Cancel)
        self.export_btn = buttons.addButton("Export", QDialogButtonBox.AcceptRole)
        buttons.accepted.connect(self.export)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        self.png.toggled.connect(self._suffix)
        self.path.textChanged.connect(self._note_existing)
        self._note_existing()

    def _note_existing(self, *_) -> None:
        """An existing file is named and the button says Replace: exporting twice overwrote it unasked."""
        p = Path(self.path.text().strip())
        exists = bool(self.path.text().strip()) and p.is_file()
        self.exists_note.setText(f"{p.name} exists: Export replaces it" if exists else "")
        self.exists_note.setVisible(exists)
        self.export_btn.setText("Replace" if exists else "Export")

    def _suffix(self, *_):
        p = Path(self.path.text())
        self.path.setText(str(p.with_suffix("." + self.fmt)))

    @property
    def fmt(self) -> str:
        return "svg" if self.svg.isChecked() else "png"

    def _browse(self) -> None:
        filt = "SVG (*.svg)" if self.fmt == "svg" else "PNG (*.png)"
        path = filedialog.ask_save_file(self, "Export image", self.path.text(), filt)
        if path:
            self.path.setText(path)
            if path.lower().endswith(".svg") and "svg" in FORMATS:
                self.svg.setChecked(True)
            elif path.lower().endswith(".png"):
                self.png.setChecked(True)

    def export(self) -> None:
        path = self.path.text().strip()
        if Path(path).suffix.lower() not in (".png", ".svg"):
            path = str(Path(path).with_suffix("." + self.fmt))
        try:
            self.result_info = export_image(self.view, path, self.whole.isChecked())
        except (ExportError, OSError) as e:
            self.error.setText(str(e))
            return
        r = self.result_info
        settings_mod.set_export_dir(str(Path(r["path"]).parent))  # the next export starts there
        from mnnscope.gui.notify import INFO, saved_message
        self.window_.notify(saved_message(f"the {r['area']} graph as", r["path"], r["width"], r["height"]), INFO,
                            "Export image",
                            "" if r["labels"] else "too large for readable labels at this size: export SVG, or "
                                                   "the visible area zoomed in")
        self.accept()


def ask_export(window) -> ExportDialog | None:
    """File > Export Image: the dialog, not modal (tests and users can keep looking at the graph)."""
    view = window.view
    if view is None or view.canvas.scene is None:
        window.notify("nothing to export: open a model first", "info", "Export image")
        return None
    d = ExportDialog(window, view)
    window.export_dialog = d
    d.setAttribute(Qt.WA_DeleteOnClose, False)
    d.open()
    return d
