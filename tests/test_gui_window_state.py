"""What the window says matches what it does (pytest-qt, offscreen; tryout 6): Return in the Find bar goes to
the next match and never converts; Properties follows the side-by-side pane to the model it loads; the Profile
dock's "On the graph" names another dock's overlay; Run > Cancel Compare is enabled only while a comparison
runs; the Convert dock's settings fit a 1024x700 window without a horizontal scroll bar."""
from __future__ import annotations

import shutil

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI
from PySide6.QtCore import Qt  # noqa: E402

from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401

pytestmark = pytest.mark.gui


def test_return_in_the_find_bar_goes_to_the_next_match_and_never_converts(qtbot, window, samples, tmp_path):
    model = tmp_path / "cnn.onnx"
    shutil.copy(samples / "cnn.onnx", model)
    view = open_and_wait(qtbot, window, model, shapes=False)
    window.actions_by_name["Convert to MNN"].trigger()  # the dock shown, its settings ready to convert
    dock = window.panels["Convert"]
    assert window.docks["Convert"].isVisible() and dock.convert_btn.isEnabled()
    window.actions_by_name["Find"].trigger()  # Ctrl+F
    bar = view.search_bar
    qtbot.waitUntil(lambda: bar.edit.hasFocus(), timeout=5000)
    qtbot.keyClicks(bar.edit, "Conv")
    assert len(bar.matches) > 1
    qtbot.keyClick(bar.edit, Qt.Key_Return)
    assert not dock._converting and dock.last_result is None, "Return in the Find bar started a conversion"
    assert bar.current == 0 and view.canvas.selected == int(bar.matches[0])
    qtbot.keyClick(bar.edit, Qt.Key_Return)
    assert bar.current == 1 and not dock._converting
    assert not (tmp_path / "cnn.mnn").exists()


def test_properties_follow_the_side_pane_when_it_loads_another_model(qtbot, window, samples, tmp_path):
    fp16, int8w = tmp_path / "cnn_fp16.mnn", tmp_path / "cnn_int8w.mnn"
    for p in (fp16, int8w):
        shutil.copy(samples / "cnn.mnn", p)
    open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    right = open_and_wait(qtbot, window, fp16, second=True, shapes=False)
    props = window.properties
    conv = right.table.op_types.index("Convolution")
    right.select(conv)
    assert props.table is right.table and props.item == conv and "Convolution" in props.title.text()
    old = right.table
    open_and_wait(qtbot, window, int8w, second=True, shapes=False)  # the pane beside reloads another model
    assert window.second.table is not old and window.second.main_view.canvas.selected == -1
    assert props.table is window.second.table, "Properties still describes the pane's previous model"
    assert props.item == -1 and "Model" in props.title.text()
    qtbot.waitUntil(lambda: "cnn_int8w.mnn" in props.text(), timeout=30000)  # the new model's summary


def test_profile_dock_names_the_overlay_another_dock_put_on_the_graph(qtbot, window, samples):
    from mnnscope.inspector.model.overlay import Overlay
    view = open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    panel = window.panels["Profile"]
    window.show_dock("Profile")
    box = panel.overlay_box
    assert box.currentText() == "Time per node"
    # the Compare dock colours the graph by the error each node introduces (compare.py _graph: view.set_overlay)
    errors = Overlay.from_values("int8w: error introduced", {nid: 0.1 for nid in view.table.ids}, ramp="error",
                                 log=True, aggregate="max")
    view.set_overlay(errors)
    assert box.currentText() == "int8w: error introduced", "On the graph still names the profile's overlay"
    assert panel.coverage.isHidden()  # "placed 98% of the measured time" is about the profile's colours
    # choosing the profile's time with no profile to show leaves the errors on the graph: the box keeps saying so
    box.setCurrentIndex(box.findData("time"))
    assert view.overlay is errors and box.currentText() == "int8w: error introduced"
    view.set_overlay(None)  # back to op categories: the box is the dock's own choice again, the extra entry gone
    assert box.currentText() == "Time per node" and box.findData("other") < 0
    assert not panel.coverage.isHidden()


def test_cancel_compare_is_enabled_only_while_a_comparison_runs(qtbot, window, samples):
    acts = window.actions_by_name
    assert not acts["Cancel Profile"].isEnabled()
    assert not acts["Cancel Compare"].isEnabled(), "Cancel Compare enabled with nothing running"
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    panel = window.panels["Compare"]
    window.show_dock("Compare")
    panel.set_modes(["fp32"])
    assert panel.run()
    assert window.runner.job_busy("compare") and acts["Cancel Compare"].isEnabled()
    acts["Cancel Compare"].trigger()
    qtbot.waitUntil(lambda: not window.runner.job_busy("compare"), timeout=10000)
    assert panel.status.text() == "cancelled" and not acts["Cancel Compare"].isEnabled()


def test_convert_settings_fit_a_1024x700_window(qtbot, window, tmp_path):
    model = tmp_path / "captcha.onnx"
    shutil.copy(require_module("captcha_whisperer").__path__[0] + "/models/captcha_crnn.onnx", model)
    window.resize(1024, 700)
    open_and_wait(qtbot, window, model, shapes=False)
    window.ask_convert()
    dock = window.panels["Convert"]
    form = dock.form
    area = form.parentWidget().parentWidget()  # the settings column's scroll area
    qtbot.waitUntil(lambda: form.isVisible() and area.viewport().width() > 0, timeout=5000)
    qtbot.wait(100)  # the dock's size settles in the next event-loop turn (show_dock)
    window.grab().save(str(tmp_path / "convert-1024x700.png"))
    assert area.horizontalScrollBar().maximum() == 0, "the settings column scrolls sideways (clipped)"
    assert form.width() <= area.viewport().width()
    for field, note in form.help_lines.items():  # every help line and setting inside the visible column
        right = note.mapTo(form, note.rect().topRight()).x()
        assert right <= area.viewport().width(), field
        w = form.widgets[field]
        assert w.mapTo(form, w.rect().topRight()).x() <= area.viewport().width(), field


def test_properties_follows_the_window_back_up_unless_the_user_sized_it(qtbot, window, samples):
    """1500 -> 1024 -> 1500 left Properties at its 1024 width (names wrapped mid-word, tryout 7): a width the
    window set follows it back up; one the user dragged stays."""
    from PySide6.QtCore import Qt
    window.resize(1500, 950)
    qtbot.waitUntil(lambda: window.width() == 1500)
    open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    dock = window.docks["Properties"]
    window._fit_docks(force=True)
    qtbot.waitUntil(lambda: abs(dock.width() - 380) <= 4, timeout=5000)
    wide = dock.width()
    window.resize(1024, 700)
    qtbot.waitUntil(lambda: dock.width() <= 0.3 * 1024 + 2, timeout=5000)
    window.resize(1500, 950)
    qtbot.waitUntil(lambda: dock.width() >= wide - 4, timeout=5000)
    # the user drags it narrower: the window's next resize leaves it so
    window.resizeDocks([dock], [240], Qt.Horizontal)
    qtbot.waitUntil(lambda: abs(dock.width() - 240) <= 4, timeout=5000)
    window.resize(1400, 900)
    qtbot.waitUntil(lambda: window.width() == 1400)
    qtbot.wait(100)
    assert abs(dock.width() - 240) <= 4


def _graph_share(window, dock) -> float:
    central = window.centralWidget().height()
    return central / (central + dock.height())


def test_a_bottom_dock_leaves_the_graph_its_share_when_the_window_shrinks(qtbot, window, samples):
    """Tryout 8: a Compare dock that was ~520 px of a 1500x950 window kept that height at 1024x700, the graph left
    ~90 px; View > Panels showed a dock at its size hint (over a third of the window). The graph keeps at least
    ~45% of the height beside a bottom dock; the dock's contents scroll instead."""
    window.resize(1500, 950)
    qtbot.waitUntil(lambda: window.width() == 1500)
    open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    dock = window.docks["Compare"]
    window.show_dock("Compare")
    qtbot.waitUntil(dock.isVisible)
    qtbot.wait(100)
    window.resizeDocks([dock], [520], Qt.Vertical)  # as tall as the tryout's
    qtbot.waitUntil(lambda: abs(dock.height() - 520) <= 4, timeout=5000)
    window.resize(1024, 700)
    qtbot.waitUntil(lambda: window.width() == 1024)
    qtbot.wait(100)
    assert window.centralWidget().height() >= 200, window.centralWidget().height()
    assert _graph_share(window, dock) >= 0.45
    area = dock.widget()
    assert area.verticalScrollBar().maximum() > 0, "the dock's contents neither fit nor scroll"
    # shown again through View > Panels at 1024x700 (Qt sizes such a dock by its size hint)
    dock.toggleViewAction().trigger()
    qtbot.waitUntil(lambda: not dock.isVisible())
    profile = window.docks["Profile"]
    window.resizeDocks([profile], [520], Qt.Vertical)  # a height Qt remembers for it
    profile.toggleViewAction().trigger()
    qtbot.waitUntil(profile.isVisible)
    qtbot.wait(100)
    assert _graph_share(window, profile) >= 0.45, (window.centralWidget().height(), profile.height())


def _front_tab(win, dock) -> str | None:
    """The title of the tab in front of the window's tab bar that holds `dock`'s tab (None: in no tab bar)."""
    from PySide6.QtWidgets import QTabBar
    for bar in win.findChildren(QTabBar, options=Qt.FindDirectChildrenOnly):
        titles = [bar.tabText(i) for i in range(bar.count())]
        if bar.isVisible() and dock.windowTitle() in titles:
            return bar.tabText(bar.currentIndex())
    return None


def test_view_panels_brings_a_tab_behind_another_to_the_front_and_hides_only_one_in_front(qtbot, window):
    """With Convert tabbed behind Profile (Profile's tab in front), View › Panels › Convert hid the Convert dock: its
    item was checked, the dock being open. It now comes to the front and stays open; chosen again, in front, it
    hides."""
    convert, profile = window.docks["Convert"], window.docks["Profile"]
    window.show_dock("Convert")
    window.show_dock("Profile")
    assert convert in window.tabifiedDockWidgets(profile)
    qtbot.waitUntil(lambda: _front_tab(window, convert) == "Profile")
    from PySide6.QtWidgets import QMenu
    (panels,) = [m for m in window.findChildren(QMenu) if m.title() == "&Panels"]   # (View › Panels)
    (item,) = [a for a in panels.actions() if a.text() == "Convert"]
    assert item is convert.toggleViewAction() and item.isChecked()

    item.trigger()   # (as the menu does)
    qtbot.wait(50)
    assert not convert.isHidden() and item.isChecked(), "View › Panels › Convert hid the dock behind Profile's tab"
    qtbot.waitUntil(lambda: _front_tab(window, convert) == "Convert")
    assert not profile.isHidden()   # (only behind Convert's tab now)

    item.trigger()   # in front: the item hides it
    qtbot.waitUntil(convert.isHidden)
    assert not item.isChecked() and not profile.isHidden()
    item.trigger()   # and shows it again
    qtbot.waitUntil(lambda: not convert.isHidden() and _front_tab(window, convert) == "Convert")


def test_close_model_puts_the_window_back_to_no_model(qtbot, window, samples):
    """A new user found no way to close a model (no File > Close, no button on its tab, Ctrl+W did nothing)."""
    from mnnscope.inspector.convert.settings import ConvertSettings
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    profile = window.panels["Profile"]
    profile.apply_settings({"runs": 1, "warmup": 0})
    with qtbot.waitSignal(profile.finished, timeout=120000):
        window.actions_by_name["Profile"].trigger()
    window.panels["Convert"].set_settings(ConvertSettings(fp16=True))
    open_and_wait(qtbot, window, samples / "cnn.mnn", second=True)
    for name in ("Compare", "Profile", "Statistics", "Text", "Inputs", "Convert", "Runs"):
        window.show_dock(name)
    action = window.actions_by_name["Close Model"]
    assert action.shortcut().toString() == "Ctrl+W"
    window.activateWindow()
    with qtbot.waitSignal(window.model_closed, timeout=5000) as closed:
        qtbot.keyClick(window.pane.main_view.canvas, Qt.Key_W, Qt.ControlModifier)
    assert closed.args == ["cnn.onnx"]
    assert window.pane.path is None and window.pane.table is None and window.second is None
    assert window.windowTitle() == "mnnscope" and window.model_label.text() == "no model"
    assert window.pane.main_view.scene is None and window.properties.table is None
    assert window.panels["Compare"].status.text() == "Open an .onnx model, choose modes and Run."
    # the docks' last results are another model's now (they read as the open one's: a new-user try)
    assert profile.status.text() == "Profile of cnn.onnx (another model): no model is open."
    assert window.panels["Convert"].settings().to_json() == ConvertSettings().to_json()  # no model: the defaults
    qtbot.wait(200)  # nothing raised in the docks' model_changed(None) (a failure would end the test here)
    # and a model opens again as before
    view = open_and_wait(qtbot, window, samples / "encoder_block.onnx")
    assert window.pane.path == str(samples / "encoder_block.onnx") and view.scene is not None
    open_and_wait(qtbot, window, samples / "cnn.onnx")  # its own settings and profile come back with it
    assert window.panels["Convert"].settings().fp16 and profile.status.text().startswith("cnn.onnx")
