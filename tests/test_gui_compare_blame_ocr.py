"""The Compare dock on PP-OCRv6 rec (fp16w, int8w), real runs: a greyed-out fix button says why on the dock, not only
in its tooltip (fp16w: no per-layer switch), and an enabled one says why it keeps other ops than the headline's first
divergence (int8w); the Ranking's columns carry the cause line's metric names."""
from __future__ import annotations

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")

from test_compare_blame_ocr import _ocr_model  # noqa: E402
from test_gui import make_window, settings_dir, window  # noqa: E402,F401
from test_gui_compare import _open, _run  # noqa: E402

pytestmark = pytest.mark.gui


def test_the_fix_button_says_why_it_is_greyed_out_or_keeps_other_ops(qtbot, window, samples, ui_watchdog):
    _open(qtbot, window, _ocr_model(), ui_watchdog, samples)
    panel = window.panels["Compare"]
    _run(qtbot, panel, ["fp16w", "int8w"])
    panel.show_mode("fp16w")
    assert not panel.fix_btn.isEnabled()
    assert not panel.fix_why.isHidden() and "greyed out" in panel.fix_why.text()
    assert "no per-layer switch" in panel.fix_why.text() and "no per-layer switch" in panel.fix_btn.toolTip()
    panel.show_mode("int8w")
    m = panel.mode
    fd = m["first_divergence"]["onnx_node"]
    assert panel.fix_btn.isEnabled() and fd in panel.headline.text() and fd in panel.cause.text()
    assert "error introduced" in panel.cause.text()
    if not m["fix_plan"]["first_divergence"]["in_plan"]:
        assert fd in panel.fix_why.text() and not panel.fix_why.isHidden()
        assert fd in panel.fix_btn.toolTip()
    header = [panel.ranking_table.horizontalHeaderItem(c).text() for c in range(panel.ranking_table.columnCount())]
    assert "error\nintroduced" in header and "op's\nrel L2" in header
