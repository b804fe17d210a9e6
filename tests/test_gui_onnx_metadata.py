"""A dynamo-style PyTorch export in the window (pytest-qt, offscreen) and in its headless twin: the scopes come
from the node metadata, and the residual stream is labelled with the model's own dim names at every layer
(issue 19, items 3 and 4; the headless checks are in test_onnx_metadata.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import onnx
import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI
from onnx_dynamo import dynamo_encoder  # noqa: E402
from test_gui import child_processes, open_and_wait, settings_dir  # noqa: E402,F401
from tests.conftest import ROOT  # noqa: E402

from mnnscope.gui.tasks import live_tasks  # noqa: E402

pytestmark = pytest.mark.gui
RESIDUAL = ["l0_add", "l0_add_1", "l1_add", "l1_add_1", "y"]


@pytest.fixture
def window(qtbot, settings_dir):  # noqa: F811
    from mnnscope.gui.window import MainWindow
    w = MainWindow(theme="light")
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    yield w
    w.shutdown()
    qtbot.waitUntil(lambda: not live_tasks(), timeout=10000)
    qtbot.waitUntil(lambda: not child_processes(), timeout=10000)
    assert not child_processes(), "a test left child processes running"


def test_window_shows_metadata_scopes_and_the_residual_streams_dim_names(qtbot, window, tmp_path):
    path = tmp_path / "dynamo.onnx"
    onnx.save(dynamo_encoder(), path)
    with qtbot.waitSignal(window.shapes_loaded, timeout=60000):
        view = open_and_wait(qtbot, window, path, shapes=False)
    tree = window.pane.tree
    assert {"/encoder/layers.0/self_attn", "/encoder/layers.1/mlp"} <= set(tree.path)
    # the first view opens the layers (not one flat tangle of 58 ops): their scopes are on screen
    shown = {tree.path[s] for s in view.expanded}
    assert {"/encoder", "/encoder/layers.0", "/encoder/layers.1"} <= shown
    from mnnscope.gui.canvas import fmt_shape
    t = view.table
    labels = [fmt_shape(t.shapes[t.tensor_index(name)]) for name in RESIDUAL]
    assert labels == ["batch\u00d7seq\u00d732"] * len(RESIDUAL)  # one name through every layer, no unk__N
    add = int(t.producer[t.tensor_index("l1_add")])
    assert t.op_types[add] == "Add" and view.scene.vg.rep[add] == add  # drawn as itself in the first view
    # the tooltip says the same, and what it is at the Inputs dock's sizes
    assert "\u2192 batch\u00d7seq\u00d732 = 1\u00d78\u00d732 at the input sizes" in view.canvas.describe(add)


def test_view_headless_twin_renders_the_scoped_model(tmp_path):
    path = tmp_path / "dynamo.onnx"
    onnx.save(dynamo_encoder(), path)
    out = tmp_path / "dynamo.png"
    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen")
    r = subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "view", str(path), "--screenshot", str(out),
                        "--size", "1200x900", "--timing", "--expand", "/encoder/layers.0/self_attn"],
                       capture_output=True, text=True, timeout=180, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    timing = json.loads(r.stdout.strip().splitlines()[-1])
    assert timing["nodes_drawn"] > 15  # the attention's own ops, not one box
    assert out.stat().st_size > 10_000
