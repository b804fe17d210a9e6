"""The Compare dock with an .mnn open (compare/mnnpair.py through the dock's child process): against its own 4-bit
weight version, the error each op introduces coloured on the open .mnn's graph and the first divergence selected;
precision high vs low reports "no effect" on a CPU without fp16 arithmetic; a backend the runner lacks is refused."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")

from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401

from mnnscope.gui.panels.compare import MNN_CONFIG_PAIRS  # noqa: E402
from mnnscope.inspector.compare import errormap  # noqa: E402
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
    # held to int4w's tolerance by default, the 4-bit file passes: over fp32's, its error is on the graph
    panel.set_tolerance(atol=1e-5, rtol=1e-4)
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
    # the tables name side A's ops, not ONNX nodes (tryout 11 read "ONNX node" comparing two .mnn files)
    header = panel.unmatched_table.horizontalHeaderItem
    assert header(1).text() == "op (A)" and header(3).text() == "why no counterpart in B"
    assert panel.ranking_table.horizontalHeaderItem(1).text() == "op (A)"
    assert panel.plot.getAxis("bottom").labelText == "depth (op of A)"
    # the same graph coloured by how much slower (or faster) each op runs in B: the per-op deltas of the result
    assert panel.graph_shows.isVisibleTo(panel) and mode["op_time_delta"]
    panel.graph_shows.setCurrentIndex(1)
    qtbot.waitUntil(lambda: view.overlay is panel.overlay and panel.overlay.meta["kind"] == errormap.TIME_KIND,
                    timeout=10000)
    want = {d["op"]: d["delta_ms"] for d in mode["op_time_delta"] if d["only_in"] is None}
    # (the profile also times ops MNN makes at run time, e.g. `..._raster_0`, which the graph does not draw)
    assert panel.overlay.values == pytest.approx(want) and len(set(want) & names) >= len(want) // 2
    assert panel.legend.overlay is panel.overlay
    slowest = max(want, key=want.get)
    assert panel.overlay.colour_of(slowest) == panel.overlay.scale.colour(max(want.values()))
    panel.graph_shows.setCurrentIndex(0)
    qtbot.waitUntil(lambda: view.overlay is panel.overlay and panel.overlay.meta["kind"] == errormap.OVERLAY_KIND,
                    timeout=10000)
    # the legend marks the mode's tolerance on the ramp, red from there on (tryout 20: a passing mode was red)
    level = panel.overlay.meta["tolerance_at"]
    assert level == pytest.approx(mode["tolerance"]["rtol"]) and f"{level:.3g}" in panel.legend.toolTip()
    legend = panel.legend
    fm = legend.fontMetrics()
    sc = panel.overlay.scale
    x = 4 + fm.horizontalAdvance("error introduced per node (log):") + 8 + fm.horizontalAdvance(f"{sc.vmin:.3g}") + 4
    img = legend.grab().toImage()
    dpr = img.devicePixelRatio()
    tick = img.pixelColor(int((x + sc.position(level) * 160) * dpr), int(2 * dpr))
    assert tick.name() == "#1d2430", tick.name()


def test_view_twin_compares_with_another_mnn_and_shows_the_time_change(samples, tmp_path, runner_client):
    # `mnnscope view A.mnn --compare-with B.mnn --graph-shows time`: the dock's own path, offscreen
    conv = convert_model(samples / "cnn.onnx", tmp_path / "cnn_int8w.mnn", ConvertSettings(weight_quant_bits=8),
                         client=runner_client, run_dir=tmp_path / "run")
    assert conv.ok
    env = dict(os.environ, MNNSCOPE_DATA_DIR=str(tmp_path / "data"), QT_QPA_PLATFORM="offscreen")
    shot = tmp_path / "time.png"
    r = subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "view", str(samples / "cnn.mnn"),
                        "--compare-with", conv.output, "--graph-shows", "time", "--json", "--screenshot", str(shot)],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["mode"] == "cnn_int8w" and out["overlay"]["kind"] == errormap.TIME_KIND and out["screenshot"]
    top = [d["delta_ms"] for d in out["overlay"]["top"]]
    assert top and top == sorted(top, reverse=True) and top[0] == max(out["overlay"]["values"].values())
    assert out["overlay"]["time"]["timing"] == "per_op" and shot.stat().st_size > 10_000
    # usage: the .mnn twin needs an .mnn model, and --graph-shows an .mnn comparison
    for args in (["--compare-with", conv.output], ["--compare-config", "no such pair"]):
        model = samples / ("cnn.onnx" if args[0] == "--compare-with" else "cnn.mnn")
        bad = subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "view", str(model), *args, "--json"],
                             capture_output=True, text=True, timeout=120, env=env)
        assert bad.returncode == 2 and "--compare-" in bad.stderr, bad.stderr
        assert json.loads(bad.stdout)["error"]["kind"] == "usage"  # with --json, the JSON error (tryout 17)


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
        # both sides are the open file: nothing to open beside it (tryout 11 got a copy and a "not linked" warning)
        assert not panel.side_btn.isEnabled() and "nothing to open beside it" in panel.side_btn.toolTip()
    available = [b.upper() for b in runner_client.hello()["backends"]]
    # the pairs list says which backend this runner's MNN lacks before anyone picks it
    opencl = labels.index("backend CPU vs OpenCL")
    qtbot.waitUntil(lambda: window.panels["Profile"].hello is not None, timeout=120000)
    item = panel.config_pair.model().item(opencl)
    assert item.isEnabled() == ("OPENCL" in available)
    assert item.text().endswith("(unavailable)") == ("OPENCL" not in available)
    if "OPENCL" not in available:
        got = _wait(qtbot, panel, lambda: panel.compare_configurations(labels.index("backend CPU vs OpenCL")))
        assert "OPENCL" in got.get("failed", "") and "not available" in got["failed"]
        assert "not available" in panel.status.text()


def test_the_mnn_row_reads_as_a_condition_with_an_onnx_open(qtbot, window, samples):
    """Tryout 20 read "An .mnn open:" beside greyed buttons, with an .onnx open, as a claim: the row says when it
    applies, and its greyed buttons say how to use them."""
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    window.show_dock("Compare")
    panel = window.panels["Compare"]
    assert panel.mnn_row_label.text() == "With an .mnn open:"
    for b in (panel.mnn_pair_btn, panel.config_btn):
        assert not b.isEnabled() and "open the .mnn first" in b.toolTip()
    open_and_wait(qtbot, window, samples / "cnn.mnn")
    for b in (panel.mnn_pair_btn, panel.config_btn):
        assert b.isEnabled() and "open the .mnn first" not in b.toolTip() and b.toolTip()
