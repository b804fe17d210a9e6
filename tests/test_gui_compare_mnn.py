"""The Compare dock with an .mnn open (compare/mnnpair.py through the dock's child process): against its own 4-bit
weight version, the error each op introduces coloured on the open .mnn's graph and the first divergence selected;
precision high vs low reports "no effect" on a CPU without fp16 arithmetic; a backend the runner lacks is refused."""
from __future__ import annotations

import os

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")

from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401

from mnnscope.gui.panels.compare import MNN_CONFIG_PAIRS  # noqa: E402
from mnnscope.inspector.convert.service import convert_model  # noqa: E402
from mnnscope.inspector.convert.settings import ConvertSettings  # noqa: E402

pytestmark = pytest.mark.gui
RUN_TIMEOUT = int(os.environ.get("MNNSCOPE_TEST_COMPARE_MS", 600_000))


def _wait(qtbot, panel, start) -> dict:
    got = {}
    panel.finished.connect(lambda r: got.setdefault("result", r))
    panel.failed.connect(lambda msg: got.setdefault("failed", msg))
    assert start()
    qtbot.waitUntil(lambda: bool(got), timeout=RUN_TIMEOUT)
    return got


def test_an_mnn_against_its_4bit_version_is_coloured_on_its_graph(qtbot, window, samples, tmp_path, runner_client):
    conv = convert_model(samples / "cnn.onnx", tmp_path / "cnn_int4w.mnn", ConvertSettings(weight_quant_bits=4),
                         client=runner_client, run_dir=tmp_path / "run")
    assert conv.ok
    view = open_and_wait(qtbot, window, samples / "cnn.mnn")
    window.show_dock("Compare")
    panel = window.panels["Compare"]
    assert panel.mnn_pair_btn.isEnabled() and not panel.run_btn.isEnabled()
    got = _wait(qtbot, panel, lambda: panel.compare_with_mnn(conv.output))
    assert "failed" not in got, got.get("failed")
    result = got["result"]
    assert result["kind"] == "mnn_pair" and result["reference"]["kind"] == "mnn"
    mode = result["modes"][0]
    assert mode["mode"] == "cnn_int4w" and panel.mode["mode"] == "cnn_int4w" and not mode["ok"]
    fd = mode["first_divergence"]
    qtbot.waitUntil(lambda: panel.overlay is not None and view.overlay is panel.overlay, timeout=10000)
    # the overlay's nodes are the open .mnn's ops, and the first divergence is selected on its graph
    names = set(window.pane.table.names)
    assert panel.overlay.values and set(panel.overlay.values) <= names
    qtbot.waitUntil(lambda: panel.selected_node() == fd["onnx_node"], timeout=30000)
    assert not panel.fix_btn.isEnabled() and not panel.repro_btn.isEnabled()


def test_configurations_no_effect_and_a_refused_backend(qtbot, window, samples, runner_client):
    open_and_wait(qtbot, window, samples / "cnn.mnn")
    window.show_dock("Compare")
    panel = window.panels["Compare"]
    labels = [label for label, _ in MNN_CONFIG_PAIRS]
    if not runner_client.hello()["cpu"].get("fp16"):
        got = _wait(qtbot, panel, lambda: panel.compare_configurations(labels.index("precision high vs low")))
        assert "failed" not in got, got.get("failed")
        [mode] = got["result"]["modes"]
        assert mode["effect"].startswith("no effect on this CPU") and mode["ok"]
    available = [b.upper() for b in runner_client.hello()["backends"]]
    if "OPENCL" not in available:
        got = _wait(qtbot, panel, lambda: panel.compare_configurations(labels.index("backend CPU vs OpenCL")))
        assert "OPENCL" in got.get("failed", "") and "not available" in got["failed"]
        assert "not available" in panel.status.text()
