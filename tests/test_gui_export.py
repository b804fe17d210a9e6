"""File > Export Image (issue 19 item 9): the visible area or the whole graph, PNG or SVG, with a notice
naming the file; and its headless twin `mnnscope view MODEL --screenshot OUT.png|svg --whole`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI
from PySide6.QtGui import QImage  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_gui import make_window, open_and_wait, relaid, settings_dir  # noqa: E402,F401

from mnnscope.gui import export  # noqa: E402
from mnnscope.gui.export import ExportError, export_image  # noqa: E402

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def window(make_window):
    return make_window()


def _svg_texts(path: Path) -> str:
    root = ET.parse(path).getroot()
    return " ".join(t.text or "" for t in root.iter() if t.tag.endswith("text"))


def test_export_dialog_writes_the_whole_graph_and_says_where(qtbot, window, samples, tmp_path):
    view = open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)
    relaid(qtbot, view, view.expand_all)
    view.canvas.zoom(3.0)  # only part of the graph on screen
    window.actions_by_name["Export Image"].trigger()
    d = window.export_dialog
    assert d.isVisible() and d.whole.isChecked() and d.png.isChecked()
    out = tmp_path / "whole.png"
    d.path.setText(str(out))
    d.export_btn.click()
    assert not d.isVisible() and out.is_file()
    card = window.notes.cards[-1]
    assert card.n.severity == "info" and str(out) in card.n.message and "whole" in card.n.message
    img = QImage(str(out))
    x0, y0, x1, y1 = view.scene.bounds
    assert img.width() >= x1 - x0 and img.height() >= y1 - y0  # every node, at full size
    vx0, vy0, vx1, vy1 = view.canvas.view_rect()
    assert (x1 - x0) > (vx1 - vx0) or (y1 - y0) > (vy1 - vy0)  # more than the screen showed
    # visible area as SVG: the same dialog
    window.actions_by_name["Export Image"].trigger()
    d = window.export_dialog
    d.visible.setChecked(True)
    d.svg.setChecked(True)
    assert d.path.text().endswith(".svg")
    out = tmp_path / "visible.svg"
    d.path.setText(str(out))
    d.export_btn.click()
    assert out.is_file() and str(out) in window.notes.cards[-1].n.message
    ET.parse(out)  # well-formed
    # the same file again: named, and the button says what it does
    window.actions_by_name["Export Image"].trigger()
    d = window.export_dialog
    assert d.export_btn.text() == "Export" and not d.exists_note.isVisible()
    d.path.setText(str(out))
    assert d.export_btn.text() == "Replace" and "visible.svg exists" in d.exists_note.text()
    d.reject()
    # side by side, the pane beside focused: the dialog names its file, and an .mnn's default name is its own (tryout
    # 10 exported the .mnn pane to moe_llm.png, read as the .onnx's)
    open_and_wait(qtbot, window, samples / "moe_llm.mnn", second=True, shapes=False)
    window.second.main_view.canvas.setFocus()
    qtbot.waitUntil(lambda: window.view is window.second.main_view, timeout=5000)
    window.actions_by_name["Export Image"].trigger()
    d = window.export_dialog
    assert "moe_llm.mnn" in d.which.text() and "beside" in d.which.text()
    assert Path(d.path.text()).name == "moe_llm_mnn.png"
    d.reject()


def test_export_suggests_the_last_folder_else_the_models(qtbot, window, samples, tmp_path):
    """Tryout 2026-12-04: the dialog suggested the folder the app was started from (a checkout) and forgot where
    the last image went. Now: the folder last exported to, else the model's, never the bundled samples'."""
    model = tmp_path / "models" / "cnn.onnx"
    model.parent.mkdir()
    model.write_bytes((samples / "cnn.onnx").read_bytes())
    open_and_wait(qtbot, window, model, shapes=False)
    window.actions_by_name["Export Image"].trigger()
    d = window.export_dialog
    assert Path(d.path.text()) == model.parent / "cnn.png"
    out = tmp_path / "images" / "first.png"
    out.parent.mkdir()
    d.path.setText(str(out))
    d.export_btn.click()
    assert out.is_file()
    window.actions_by_name["Export Image"].trigger()
    assert Path(window.export_dialog.path.text()) == out.parent / "cnn.png"  # remembered, across models too
    window.export_dialog.reject()
    # the rule itself: a bundled sample's folder is never suggested, a folder that is gone falls back
    assert export.export_folder(str(model), str(tmp_path / "gone")) == str(model.parent)
    far = export.export_folder(str(samples / "cnn.onnx"), "")
    assert Path(far).resolve() != samples.resolve() and os.path.isdir(far)


def test_whole_graph_svg_has_every_node_title(qtbot, window, samples, tmp_path):
    view = open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    out = tmp_path / "cnn.svg"
    info = export_image(view, str(out), whole=True)
    assert info["format"] == "svg" and info["area"] == "whole"
    text = _svg_texts(out)
    sc = view.scene
    for item in sc.vg.leaves.tolist():
        if item < sc.vg.n_ops:
            assert sc.titles[item] in text
    with pytest.raises(ExportError, match=r"\.png or \.svg"):
        export_image(view, str(tmp_path / "x.jpg"), whole=True)


def _view(*args, timeout=180):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    return subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "view", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_view_command_whole_graph_png_and_svg(samples, tmp_path):
    png, svg = tmp_path / "whole.png", tmp_path / "whole.svg"
    r = _view(str(samples / "encoder_block.onnx"), "--screenshot", str(png), "--whole", "--size", "800x600",
              "--no-shapes", "--expand", "all")
    assert r.returncode == 0, r.stderr
    img = QImage(str(png))
    assert not img.isNull() and (img.width(), img.height()) != (800, 600)  # the graph, not the window
    # it says what it wrote (it printed nothing: a user could not tell a screenshot from a silent failure)
    assert r.stdout.strip() == f"wrote {png.resolve()} ({img.width()}x{img.height()}, whole)"
    r = _view(str(samples / "encoder_block.onnx"), "--screenshot", str(svg), "--whole", "--no-shapes", "--json")
    assert r.returncode == 0, r.stderr
    assert "MatMul" in _svg_texts(svg)
    out = json.loads(r.stdout)  # --json: stdout holds only the JSON (it held nothing)
    assert out["screenshot"]["path"] == str(svg.resolve()) and out["screenshot"]["format"] == "svg"
    assert out["screenshot"]["area"] == "whole" and out["nodes_drawn"] > 0
    assert out["model"] == str((samples / "encoder_block.onnx").resolve())
    r = _view(str(samples / "cnn.onnx"), "--whole", "--no-shapes")
    assert r.returncode == 2 and "--whole" in r.stderr
    r = _view(str(samples / "cnn.onnx"), "--screenshot", str(tmp_path / "x.jpg"))
    assert r.returncode == 2 and ".svg" in r.stderr


def test_a_huge_whole_graph_png_is_drawn_smaller_and_says_so(qtbot, window, samples, tmp_path, monkeypatch):
    """A 20k-op graph laid out as one column was 387k px tall: 95 s to paint for an image nobody can open."""
    import mnnscope.gui.export as export
    view = open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)
    relaid(qtbot, view, view.expand_all)
    x0, y0, x1, y1 = view.scene.bounds
    monkeypatch.setattr(export, "MAX_SIDE", 400)  # this sample stands in for a huge graph
    info = export_image(view, str(tmp_path / "small.png"), whole=True)
    assert max(info["width"], info["height"]) <= 401 and info["scale"] < 1 and not info["labels"]
    img = QImage(str(tmp_path / "small.png"))
    assert (img.width(), img.height()) == (info["width"], info["height"])
    info = export_image(view, str(tmp_path / "full.svg"), whole=True)  # vector: full size, labels kept
    assert info["scale"] == 1.0 and info["labels"] and info["height"] >= y1 - y0


def test_a_whole_graph_image_holds_the_labels_beside_the_nodes(qtbot, window, samples, tmp_path):
    """Tryout 8: the whole-graph PNG of PP-OCRv6 rec (498x28174 px) cut the tensor labels written right of the
    edges ("DynamicDimension.0x48x24x(floor(DynamicDim") at its right side: the scene's bounds hold the boxes only."""
    import onnx
    from onnx import TensorProto, helper
    dims = ["DynamicDimension.0", 3, 48, "DynamicDimension.1"]  # PP-OCR's long symbolic sizes
    nodes = [helper.make_node("Relu", [f"t{k}"], [f"t{k + 1}"], name=f"Relu.{k}") for k in range(4)]
    graph = helper.make_graph(nodes, "labels", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info("t4", TensorProto.FLOAT, dims)])
    model = tmp_path / "labels.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(model))
    view = open_and_wait(qtbot, window, model)  # with shapes: the labels are written
    c, sc = view.canvas, view.scene
    qtbot.wait(50)
    c.dim_values = {}  # the long symbols written out (at the Inputs dock's sizes they read as short numbers)
    placed = c.placed_labels(np.arange(len(sc.edge_label_at)))
    right = max(x + w for _, _, x, _, w, _ in placed)
    left = min(x for _, _, x, _, _, _ in placed)
    x0, _, x1, _ = sc.bounds
    assert right > x1, "this sample's labels must run past the node boxes"
    info = export_image(view, str(tmp_path / "whole.png"), whole=True)
    assert info["scale"] == 1.0 and info["labels"]
    assert info["width"] >= (max(right, x1) - min(left, x0)) + 2 * export.MARGIN - 1
    img = QImage(str(tmp_path / "whole.png"))
    assert img.width() == info["width"]
    # the image's right margin is background: nothing written runs into its side
    bg = img.pixelColor(img.width() - 1, 0)
    assert all(img.pixelColor(img.width() - 2, y) == bg for y in range(0, img.height(), 3))
    # the dialog's note names the file and the image's size in pixels, and leaves on its own
    window.actions_by_name["Export Image"].trigger()
    d = window.export_dialog
    out = tmp_path / "dialog.png"
    d.path.setText(str(out))
    d.export_btn.click()
    card = window.notes.cards[-1]
    r = d.result_info
    assert card.n.severity == "info" and card in window.notes.shown_cards() and card.timer is not None
    assert f"dialog.png ({r['width']:,}\u00d7{r['height']:,} px)" in card.n.message and str(out) in card.n.message


def test_an_exported_graph_with_colours_carries_their_legend(qtbot, window, samples, tmp_path):
    """Tryout 11: the whole-graph PNG of a profile's heat map had the colours and no word of what they meant. With
    an overlay on the graph, the image gets a strip under the graph with the legend (title, ramp, range); the
    canvas's own legend lends its title where a dock put one. Without one, no strip."""
    from PySide6.QtGui import QColor
    from mnnscope.gui.legend import Legend
    from mnnscope.inspector.model.overlay import Overlay
    view = open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    plain = export_image(view, str(tmp_path / "plain.png"), whole=True)
    assert plain["legend"] is None
    values = {nid: float(i) for i, nid in enumerate(view.table.ids)}
    ov = Overlay.from_values("rel L2 (test)", values, ramp="heat", unit="")
    view.set_overlay(ov)
    info = export_image(view, str(tmp_path / "coloured.png"), whole=True)
    assert info["legend"] == "rel L2 (test)"
    strip = Legend.H + 2 * export.LEGEND_PAD
    # (as wide as the legend at least: cnn's one column is narrower, and cut it off)
    assert (info["width"], info["height"]) == (max(plain["width"], Legend.W + 2 * export.LEGEND_PAD),
                                               plain["height"] + strip)
    img = QImage(info["path"])
    # the ramp's ends are in the strip, in the overlay's own colours
    y = plain["height"] + export.LEGEND_PAD + 27
    row = {img.pixel(x, y) & 0xFFFFFF for x in range(export.LEGEND_PAD, export.LEGEND_PAD + Legend.W)}
    for end in (ov.scale.vmin, ov.scale.vmax):
        want = QColor(ov.scale.colour(end))
        assert any(max(abs(((p >> s) & 255) - c) for s, c in ((16, want.red()), (8, want.green()), (0, want.blue())))
                   <= 24 for p in row), f"the ramp's colour at {end} is in the legend strip"
    # a dock's legend on the canvas lends its title (Profile's "Time per node")
    lg = Legend(view)
    lg.title, lg.unit, lg.owner = "Time per node", "ms", ov
    assert export_image(view, str(tmp_path / "t.svg"), whole=True)["legend"] == "Time per node"
    assert "Time per node" in _svg_texts(tmp_path / "t.svg")
