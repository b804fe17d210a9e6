"""What the graph looks like: screenshots against approved PNGs (with tolerance, diffs saved on failure),
level of detail, and `mnnscope view` as a headless command.

Approve new images with MNNSCOPE_UPDATE_IMAGES=1; failures write actual/diff PNGs to
$MNNSCOPE_IMAGE_FAILURES (default: the test's tmp folder) and name them in the message.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI
from PySide6.QtGui import QFont, QImage  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from mnnscope.gui.graphview import GraphView  # noqa: E402
from mnnscope.inspector.formats.registry import adapter_named  # noqa: E402
from mnnscope.gui.tasks import live_tasks  # noqa: E402
from mnnscope.gui.theme import palette  # noqa: E402
from mnnscope.inspector.formats.loadproc import load_table  # noqa: E402

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[1]
IMAGES = Path(__file__).resolve().parent / "images"
BAD_LEVEL = 48          # a channel this far off marks a pixel as different
MAX_BAD_FRACTION = 0.02  # font rasterisers differ between machines: allow a little


def to_array(img: QImage) -> np.ndarray:
    img = img.convertToFormat(QImage.Format_RGB32)
    ptr = img.constBits()
    arr = np.frombuffer(ptr, np.uint8, img.sizeInBytes()).reshape(img.height(), img.bytesPerLine() // 4, 4)
    return arr[:, :img.width(), :3].copy()


def compare(name: str, img: QImage, tmp_path: Path) -> None:
    approved = IMAGES / f"{name}.png"
    if os.environ.get("MNNSCOPE_UPDATE_IMAGES"):
        IMAGES.mkdir(exist_ok=True)
        img.save(str(approved))
        return
    assert approved.is_file(), f"no approved image {approved} (run with MNNSCOPE_UPDATE_IMAGES=1 to create it)"
    want = to_array(QImage(str(approved)))
    got = to_array(img)
    out = Path(os.environ.get("MNNSCOPE_IMAGE_FAILURES", tmp_path))
    if want.shape != got.shape:
        img.save(str(out / f"{name}-actual.png"))
        pytest.fail(f"{name}: size {got.shape[1]}x{got.shape[0]} != approved {want.shape[1]}x{want.shape[0]}")
    diff = np.abs(want.astype(np.int16) - got.astype(np.int16)).max(axis=2)
    bad = float((diff > BAD_LEVEL).mean())
    if bad > MAX_BAD_FRACTION:
        out.mkdir(parents=True, exist_ok=True)
        img.save(str(out / f"{name}-actual.png"))
        d = np.zeros(want.shape[:2] + (4,), np.uint8)
        d[..., 2] = np.clip(diff * 4, 0, 255).astype(np.uint8)  # red where they differ
        d[..., 3] = 255
        QImage(d.data, d.shape[1], d.shape[0], d.shape[1] * 4, QImage.Format_ARGB32).save(str(out / f"{name}-diff.png"))
        pytest.fail(f"{name}: {bad:.1%} of pixels differ from {approved} (actual and diff in {out})")


@pytest.fixture
def render(qtbot, shared_runner):
    """A GraphView of fixed size and font showing a sample, with shapes from the runner."""
    views = []
    app = QApplication.instance()
    font = QFont("DejaVu Sans")
    font.setPixelSize(12)
    app.setFont(font)

    def make(path, theme="light", expanded=None, size=(900, 700)):
        table = load_table(str(path))
        fmt = table.format
        # Without input sizes on purpose: moe_llm.mnn's free dims stay unresolved (the detail test shows that).
        table.merge_shapes(adapter_named(fmt).tensor_shapes(shared_runner.request(
            "infer_shapes" if fmt == "onnx" else "load_structure", {"path": str(path)}, timeout=120)))
        v = GraphView(palette(theme))
        qtbot.addWidget(v)
        v.resize(*size)
        v.show()
        with qtbot.waitSignal(v.layout_ready, timeout=30000):
            v.set_table(table, expanded=expanded)
        views.append(v)
        return v

    yield make
    for v in views:
        v.shutdown()
    qtbot.waitUntil(lambda: not live_tasks(), timeout=10000)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_demo_model_overview_looks_as_approved(render, samples, tmp_path, theme):
    v = render(samples / "moe_llm.onnx", theme)
    v.canvas.repaint()
    sc = v.scene
    vx0, vy0, vx1, vy1 = v.canvas.view_rect()
    in_view = (sc.x1 >= vx0) & (sc.x0 <= vx1) & (sc.y1 >= vy0) & (sc.y0 <= vy1)  # brute force
    assert v.canvas.last_drawn == int(in_view.sum()) > 10
    compare(f"moe_llm-overview-{theme}", v.canvas.grab().toImage(), tmp_path)


def test_expanded_cnn_with_labels_and_shapes_looks_as_approved(render, samples, tmp_path):
    v = render(samples / "cnn.onnx", "light", expanded=set(range(100)))
    t = v.table
    conv = t.ids.index("/layer1/conv1/Conv")
    v.select(conv)
    sc = v.scene
    lf = int(sc.leaf_of_item[conv])
    v.canvas.center_on((sc.x0[lf] + sc.x1[lf]) / 2, sc.y1[lf] + 40, scale=2.0)  # names, shapes, edge labels
    compare("cnn-detail-light", v.canvas.grab().toImage(), tmp_path)


def test_mnn_model_expanded_looks_as_approved(render, samples, tmp_path):
    v = render(samples / "moe_llm.mnn", "dark")
    v.canvas.repaint()
    compare("moe_llm_mnn-default-dark", v.canvas.grab().toImage(), tmp_path)


def test_level_of_detail_hides_text_far_out_and_culls_to_the_view(render, samples):
    v = render(samples / "moe_llm.onnx", "light", expanded=set(range(1000)))
    c = v.canvas
    c.fit_all()
    c.repaint()
    far = c.last_drawn
    c.center_on(*(lambda sc: ((sc.x0[0] + sc.x1[0]) / 2, (sc.y0[0] + sc.y1[0]) / 2))(v.scene), scale=2.0)
    c.repaint()
    near = c.last_drawn
    assert far == len(v.scene.vg.leaves) and 0 < near < far / 5
    # at that zoom the detail lines (name, output shape) are drawn: pixels change between scales 1.0 and 2.0
    img_near = to_array(c.grab().toImage())
    assert (img_near != img_near[0, 0]).any()


def _view(*args, timeout=180):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    return subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "view", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_view_command_renders_and_reports_timing(samples, tmp_path):
    out = tmp_path / "shot.png"
    r = _view(str(samples / "moe_llm.mnn"), "--screenshot", str(out), "--size", "1200x800", "--timing",
              "--expand", "/model/layers.0")
    assert r.returncode == 0, r.stderr
    timing = json.loads(r.stdout)  # stdout holds only the JSON
    assert set(timing) == {"load_s", "layout_s", "first_paint_s", "nodes_drawn", "rss_mb"}
    assert 0 < timing["load_s"] < timing["first_paint_s"] and timing["nodes_drawn"] > 10
    assert 50 < timing["rss_mb"] < 1000
    img = QImage(str(out))
    assert (img.width(), img.height()) == (1200, 800)


def test_view_command_errors_are_one_line_with_exit_codes(samples, tmp_path):
    garbage = tmp_path / "garbage.mnn"
    garbage.write_bytes(bytes(range(256)) * 16)
    r = _view(str(garbage), "--screenshot", str(tmp_path / "x.png"))
    assert r.returncode == 1 and "garbage.mnn" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.png").exists()
    r = _view(str(samples / "cnn.onnx"), "--screenshot", str(tmp_path / "x.png"), "--size", "big")
    assert r.returncode == 2 and "--size" in r.stderr
    r = _view(str(samples / "cnn.onnx"), "--timing", "--expand", "/no/such/scope")
    assert r.returncode == 1 and "no scope '/no/such/scope'" in r.stderr
    r = _view(str(tmp_path / "missing.onnx"), "--timing")
    assert r.returncode == 1 and "no such file" in r.stderr


def _contrast(widget, background: str) -> float:
    """The largest luminance difference between what `widget` draws and the colour `background`."""
    from PySide6.QtGui import QColor
    bgr = to_array(widget.grab().toImage()).astype(np.float64)  # RGB32 bytes are B, G, R
    lum = bgr @ np.array([0.114, 0.587, 0.299])
    c = QColor(background)
    return float(np.abs(lum - (0.299 * c.red() + 0.587 * c.green() + 0.114 * c.blue())).max())


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_disabled_widgets_look_disabled_and_unchecked_boxes_show(qtbot, theme):
    from PySide6.QtGui import QPalette
    from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QPushButton

    from mnnscope.gui.theme import apply_theme, widget_colours
    app = QApplication.instance()
    apply_theme(app, theme)
    try:
        pal = app.palette()
        roles = [r for r in QPalette.ColorRole if r.name not in ("NoRole", "NColorRoles")]
        for group in (QPalette.Active, QPalette.Inactive, QPalette.Disabled):
            unset = [r.name for r in roles if not pal.isBrushSet(group, r)]
            assert not unset, f"{theme} theme leaves {group.name} {unset} to Qt's defaults"
        window = widget_colours(theme)["Window"]

        def combo():
            c = QComboBox()
            c.addItem("8-bit")
            return c

        for make in (lambda: QLineEdit("converted.mnn"), lambda: QPushButton("Convert"), combo,
                     lambda: QCheckBox("fp16 weights")):
            on, off = make(), make()
            off.setEnabled(False)
            for w in (on, off):
                qtbot.addWidget(w)
                w.resize(160, 28)
                w.show()
            assert _contrast(off, window) < 0.6 * _contrast(on, window), f"a disabled {type(on).__name__} looks usable"
        box = QCheckBox("")  # an unchecked box alone: its outline must stand out from the window
        qtbot.addWidget(box)
        box.resize(20, 20)
        box.show()
        assert _contrast(box, window) > 60
    finally:
        apply_theme(app, "light")


def test_mnn_generic_ops_are_titled_by_their_operation(render, samples, tmp_path):
    from mnnscope.gui.search import find_ops
    from mnnscope.gui.theme import CATEGORIES
    v = render(samples / "cnn.mnn", "dark", expanded=set(range(100)))
    t, sc = v.table, v.scene
    add = t.ids.index("/layer1/Add_output_0")  # the residual Add of cnn.onnx, a BinaryOp in MNN
    assert t.op_types[add] == "BinaryOp" and v.titles[add] == sc.titles[add] == "ADD"
    assert v.canvas.describe(add).startswith("ADD (BinaryOp)")  # the tooltip keeps the raw type
    assert v.op_w[add] < max(v.op_w[i] for i in range(t.node_count) if t.op_types[i] == "Convolution")
    assert add in find_ops(t, v.tree.hidden, "add", "type", v.titles).tolist()
    lf = int(sc.leaf_of_item[add])
    v.select(add)
    v.canvas.center_on((sc.x0[lf] + sc.x1[lf]) / 2, (sc.y0[lf] + sc.y1[lf]) / 2, scale=1.0)
    compare("cnn_mnn-binaryop-dark", v.canvas.grab().toImage(), tmp_path)

    m = render(samples / "moe_llm.mnn", "light", expanded=set(range(1000)))
    t, sc = m.table, m.scene
    seen = set()
    for i, op in enumerate(t.op_types):
        attrs = t.attrs(i)
        if op in ("BinaryOp", "UnaryOp"):
            assert m.titles[i] == attrs["opType"], (t.ids[i], m.titles[i])
        elif op == "Reduction":
            assert m.titles[i] == f"Reduction\u00b7{attrs['operation']}"
        else:
            assert m.titles[i] == op
        seen.add(op)
    assert {"BinaryOp", "UnaryOp", "Reduction"} <= seen
    silu = next(i for i in range(t.node_count) if m.titles[i] == "SILU")
    mul = next(i for i in range(t.node_count) if m.titles[i] == "MUL")
    cat = lambda i: CATEGORIES[int(sc.cat[sc.leaf_of_item[i]])]  # noqa: E731
    assert cat(silu) == "activation" and cat(mul) == "math"  # coloured like ONNX's SiLU and Mul
    reduce_sum = find_ops(t, m.tree.hidden, "sum", "type", m.titles)
    assert len(reduce_sum) and all(m.titles[i] == "Reduction\u00b7SUM" for i in reduce_sum)


def test_fit_shows_the_whole_graph_only_while_its_titles_are_drawn(render, samples):
    from mnnscope.gui.canvas import TEXT_MIN_PX
    v = render(samples / "moe_llm.mnn", "light")
    c = v.canvas
    x0, y0, x1, y1 = v.scene.bounds
    whole = []
    for h in range(700, 1800, 8):  # window heights around the one where the whole graph just fits (at a readable zoom)
        v.resize(900, h)
        c.fit()
        vx0, vy0, vx1, vy1 = c.view_rect()
        assert c.scale * 12 >= TEXT_MIN_PX, f"height {h}: fitted at {c.scale:.3f}, where node titles are not drawn"
        whole.append(vy0 <= y0 and vy1 >= y1)
    assert any(whole) and not all(whole)  # the sweep crossed from "starts at the top" to "whole graph"


def test_mnn_detail_without_known_shapes_looks_as_approved(render, samples, tmp_path):
    """moe_llm.mnn has dynamic shapes MNN does not resolve: titles and names, and no "?" for every shape."""
    v = render(samples / "moe_llm.mnn", "light", expanded=set(range(1000)))
    t, sc = v.table, v.scene
    silu = next(i for i in range(t.node_count) if v.titles[i] == "SILU")
    assert t.shapes[t.node_outputs(silu)[0]] is None
    lf = int(sc.leaf_of_item[silu])
    v.canvas.center_on((sc.x0[lf] + sc.x1[lf]) / 2, (sc.y0[lf] + sc.y1[lf]) / 2, scale=2.0)
    compare("moe_llm_mnn-detail-light", v.canvas.grab().toImage(), tmp_path)


def test_nested_frames_paint_over_their_ancestors(render, samples):
    """Frame colours cycle with depth; a frame deeper than the cycle must still be drawn over its ancestors."""
    from PySide6.QtGui import QColor
    v = render(samples / "moe_llm.mnn", "light", expanded=set(range(1000)))
    sc, pal = v.scene, v.pal
    depth = sc.layout.frame_depth
    n_fill = len(pal.frame_fill)
    deep = [f for f in range(len(depth)) if depth[f] >= n_fill]
    assert deep, "the sample nests deeper than the colour cycle"
    f = max(deep, key=lambda f: depth[f])
    x0, y0, x1, y1 = sc.frame_box[f]
    c = v.canvas
    c.center_on(x0 + 200, (y0 + y1) / 2, scale=1.0)
    img = c.grab().toImage()
    want = QColor(pal.frame_fill[int(depth[f]) % n_fill]).rgb() & 0xFFFFFF
    xs = int((x0 + 3) * c.scale + c.tx)
    ys = [int(y * c.scale + c.ty) for y in np.linspace(y0 + 30, y1 - 10, 25)]
    ys = [y for y in ys if 0 <= y < img.height()]
    inside = sum((img.pixel(xs, y) & 0xFFFFFF) == want for y in ys)
    assert inside >= len(ys) // 2, f"frame at depth {depth[f]} is covered by an ancestor's fill"


def test_if_and_loop_nodes_mark_their_subgraphs_without_a_font_glyph(render, samples):
    # the marker was the character U+29C9, which some fonts lack (a missing-glyph box there): it is drawn
    # as two overlapping squares now, in the node's text colour, in the node's top-right corner
    v = render(samples / "control_flow.onnx", "light", expanded=set(range(100)))
    t, sc, c = v.table, v.scene, v.canvas
    cond = next(i for i in range(t.node_count) if t.op_types[i] == "If")
    lf = int(sc.leaf_of_item[cond])
    c.center_on((sc.x0[lf] + sc.x1[lf]) / 2, (sc.y0[lf] + sc.y1[lf]) / 2, scale=4.0)
    img = to_array(c.grab().toImage())
    s = c.scale
    vx0, vy0 = int(s * (sc.x1[lf] - 11) + c.tx), int(s * (sc.y0[lf] + 2) + c.ty)
    corner = img[vy0:vy0 + int(8 * s), vx0:vx0 + int(8 * s)].astype(np.int16)
    fill = img[int(s * (sc.y0[lf] + 2) + c.ty), int(s * (sc.x0[lf] + 4) + c.tx)].astype(np.int16)
    stroke = np.abs(corner - fill).max(axis=2) > 96
    assert stroke.sum() > 4 * s  # the squares' outlines are drawn
    assert not stroke[int(1.5 * s):int(2.5 * s), int(1.5 * s):int(2.5 * s)].all()  # hollow, not a blot


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_sort_arrow_points_the_way_its_column_is_sorted(qtbot, theme):
    """The Profile dock sorts its ops slowest first, and Fusion drew an up arrow over that column (Qt hands a
    descending order to the style as "SortUp"): read as ascending. Down for descending, up for ascending."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QStandardItemModel
    from PySide6.QtWidgets import QTableView

    from mnnscope.gui.theme import apply_theme
    app = QApplication.instance()
    apply_theme(app, theme)
    try:
        view = QTableView()
        qtbot.addWidget(view)
        model = QStandardItemModel(3, 1)
        model.setHorizontalHeaderLabels(["Median ms"])
        view.setModel(model)
        view.resize(300, 150)
        view.show()
        header = view.horizontalHeader()
        header.resizeSection(0, 240)

        def arrow_rows(order):
            """Per pixel row, how many pixels the arrow adds to the header (a grab with it against one without)."""
            header.setSortIndicatorShown(False)
            plain = header.grab().toImage()
            header.setSortIndicatorShown(True)
            header.setSortIndicator(0, order)
            shown = header.grab().toImage()
            # the arrow's corner of the section (Fusion draws it at the right end; the centred title moves aside)
            a = np.array([[plain.pixel(x, y) != shown.pixel(x, y) for x in range(200, 240)]
                          for y in range(shown.height())])
            counts = a.sum(axis=1)
            return counts[counts > 0]

        down = arrow_rows(Qt.DescendingOrder)
        up = arrow_rows(Qt.AscendingOrder)
        assert len(down) >= 3 and len(up) >= 3
        assert down[0] > down[-1], f"descending: widest row at the top (a down arrow), got {down.tolist()}"
        assert up[0] < up[-1], f"ascending: widest row at the bottom (an up arrow), got {up.tolist()}"
    finally:
        apply_theme(app, "light")
