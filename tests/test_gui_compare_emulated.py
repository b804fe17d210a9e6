"""The Compare dock offers the emulated modes (fp16c, bf16c) labelled as emulated, runs them for real (ONNX Runtime
on the emulated copy, in the compare job's runner) and shows them labelled, with their first divergence selected
on the graph; the Minimal repro button stays off for them (there is no MNN conversion to cut)."""
from __future__ import annotations

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")

from test_compare_emulate import build_overflow  # noqa: E402
from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401
from test_gui_compare import _op, _run, _selected_is  # noqa: E402

pytestmark = pytest.mark.gui


def test_emulated_modes_are_offered_labelled_and_shown(qtbot, window, tmp_path):
    panel = window.panels["Compare"]
    assert panel.mode_boxes["fp16c"].text() == "fp16c (emulated)"
    assert panel.mode_boxes["bf16c"].text() == "bf16c (emulated)"
    assert "Emulated" in panel.mode_boxes["fp16c"].toolTip()
    assert panel.mode_boxes["fp32"].text() == "fp32"
    view = open_and_wait(qtbot, window, build_overflow(tmp_path / "overflow.onnx"))
    result = _run(qtbot, panel, ["fp16c"])
    mode = result["modes"][0]
    assert mode["emulated"] and mode["first_divergence"]["onnx_node"] == "/big/MatMul"
    assert panel.modes_bar.tabText(0).startswith("fp16c (emulated)")
    _selected_is(qtbot, view, _op(window, "/big/MatMul"))
    assert not panel.repro_btn.isEnabled() and not panel.fix_btn.isEnabled()
