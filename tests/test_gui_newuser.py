"""What the new-user try of the docks tripped over (Run button, a colouring left from the previous model, Fit to
Window on a tall graph, docks shown from View > Panels), each pinned in the real window (offscreen)."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")
from PySide6.QtCore import Qt  # noqa: E402

from mnnscope.inspector.model.overlay import Overlay  # noqa: E402
from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401

pytestmark = pytest.mark.gui


def test_a_colouring_of_the_previous_model_is_dropped_when_another_opens(qtbot, window, samples):
    view = open_and_wait(qtbot, window, samples / "encoder_block.onnx")
    t = view.table
    view.set_overlay(Overlay.from_values("max_abs", {t.ids[i]: float(i) for i in range(t.node_count)}))
    assert view.overlay is not None and view.canvas.fill_override
    # cnn has fewer nodes: the old indices used to overflow its scene (IndexError, layout left half done)
    view = open_and_wait(qtbot, window, samples / "cnn.onnx")
    assert view.overlay is None and not view.canvas.fill_override
    assert not view.layout_busy and view.scene is not None


def test_the_compare_docks_run_button_starts_a_comparison(qtbot, window, samples):
    open_and_wait(qtbot, window, samples / "encoder_block.onnx")
    panel = window.panels["Compare"]
    window.show_dock("Compare")
    for name, box in panel.mode_boxes.items():
        box.setChecked(name == "fp32")
    with qtbot.waitSignal(panel.finished, timeout=300000):
        qtbot.mouseClick(panel.run_btn, Qt.LeftButton)  # clicked(bool) used to arrive as run(inputs=False)
    assert panel.result is not None and [m["mode"] for m in panel.result["modes"]] == ["fp32"]


def test_fit_to_window_is_the_readable_fit(qtbot, window, samples):
    view = open_and_wait(qtbot, window, samples / "moe_llm.mnn")
    view.fit()
    readable = (view.canvas.scale, view.canvas.tx, view.canvas.ty)
    view.canvas.zoom(0.2)
    window.actions_by_name["Fit to Window"].trigger()
    assert (view.canvas.scale, view.canvas.tx, view.canvas.ty) == pytest.approx(readable)


def test_a_dock_shown_from_the_panels_menu_comes_to_the_front(qtbot, window):
    window.show_dock("Profile")
    runs = window.docks["Runs"]
    runs.toggleViewAction().trigger()
    qtbot.waitUntil(lambda: runs.isVisible() and not runs.visibleRegion().isEmpty(), timeout=5000)
    assert window.docks["Profile"].visibleRegion().isEmpty()  # tabbed behind Runs now


def test_a_bottom_dock_brought_to_the_front_gets_room(qtbot, window, samples):
    """Tryout 14 at 1500x950: the Inputs dock (a few rows) set the bottom area's height, and F5 brought the Profile
    dock up behind it 120 px tall, its results out of sight. A bottom dock brought to the front in a much smaller
    area gets about a third of the window."""
    from mnnscope.gui.window import BOTTOM_DOCK
    window.resize(1500, 950)
    qtbot.waitUntil(lambda: window.height() == 950)
    open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    window.show_dock("Inputs")
    inputs = window.docks["Inputs"]
    qtbot.waitUntil(lambda: inputs.isVisible())
    qtbot.wait(200)  # its own sizing as it comes up, first
    window.resizeDocks([inputs], [110], Qt.Vertical)
    qtbot.waitUntil(lambda: inputs.height() < 160, timeout=5000)
    qtbot.wait(200)
    assert inputs.height() < 160
    window.show_dock("Profile")
    prof = window.docks["Profile"]
    qtbot.waitUntil(lambda: prof.height() >= 0.75 * BOTTOM_DOCK * window.height(), timeout=5000)
    # a dock already in front keeps the size the user gave it
    window.resizeDocks([prof], [150], Qt.Vertical)
    qtbot.waitUntil(lambda: prof.height() < 200, timeout=5000)
    window.show_dock("Profile")
    qtbot.wait(100)
    assert prof.height() < 200


def test_a_bottom_dock_shown_from_the_panels_menu_gets_room_for_its_rows(qtbot, window):
    """Tryout 67 at 1500x950: View › Panels › Inputs brought the dock up two rows tall, the romanizer decoder's
    other two inputs out of sight. Shown from the menu, a bottom dock gets the room show_dock gives it."""
    from test_real_models import real_model
    window.resize(1500, 950)
    qtbot.waitUntil(lambda: window.height() == 950)
    open_and_wait(qtbot, window, real_model("arabic_name_romanizer", "resources/decoder.onnx"), shapes=False)
    dock = window.docks["Inputs"]
    dock.toggleViewAction().trigger()
    qtbot.waitUntil(dock.isVisible)
    panel = window.panels["Inputs"]
    viewport = dock.widget().viewport()

    def every_row_in_view() -> bool:
        for name in ("prefix", "memory", "src_mask", "hidden"):
            w = panel.row(name).source
            top = w.mapTo(viewport, w.rect().topLeft()).y()
            if top < 0 or top + w.height() > viewport.height():
                return False
        return True
    qtbot.waitUntil(every_row_in_view, timeout=5000)


def test_the_first_fit_leaves_no_node_under_the_minimap(qtbot, window, samples):
    """Tryout 66 at 1024x700: moe_llm_kv fitted by its width from the top put its last two input pills under the
    minimap. The fit moves the graph down below the minimap's corner where that costs under a third of the view."""
    window.resize(1024, 700)
    qtbot.waitUntil(lambda: window.width() == 1024)
    view = open_and_wait(qtbot, window, samples / "moe_llm_kv.onnx", shapes=False)
    view.fit()
    qtbot.wait(50)
    mm, c = view.minimap, view.canvas
    assert mm.isVisible()  # a tall graph, partly out of view: the map is there to navigate it
    sc = c.scene
    box = mm.geometry()
    x0, x1 = sc.x0 * c.scale + c.tx, sc.x1 * c.scale + c.tx
    y0, y1 = sc.y0 * c.scale + c.ty, sc.y1 * c.scale + c.ty
    under = (x1 > box.left()) & (x0 < box.right()) & (y1 > box.top()) & (y0 < box.bottom())
    assert not under.any(), [view.table.names[int(sc.vg.leaves[i])] if sc.vg.leaves[i] < view.table.node_count
                             else int(sc.vg.leaves[i]) for i in np.flatnonzero(under)]
    assert y0.min() < c.height() / 3  # the graph's top still near the top of the view
