"""The Text dock on an MNN-LLM export folder: the folder opens as a graph (llm.mnn), and Generate runs MNN.llm
with the folder's own tokenizer (no tokenizer.json), one row per token with its time."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")

from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401

pytestmark = pytest.mark.gui
FOLDER = Path(__file__).resolve().parent / "data" / "llm" / "qwen3moe_4_b32"


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MNNSCOPE_DATA_DIR", str(tmp_path / "data"))


def test_text_dock_generates_with_an_export_folder(qtbot, window):
    # File > Open Folder… is there for a model that is a folder (its dialog picks directories)
    texts = [a.text().replace("&", "") for a in window.menuBar().actions()[0].menu().actions()]
    assert "Open Folder\u2026" in texts
    view = open_and_wait(qtbot, window, FOLDER)
    assert "/layers.0/self_attn/FusedAttention" in view.table.names
    window.show_dock("Text")
    panel = window.panels["Text"]
    assert not panel.tokenizer.isEnabled() and not panel.compare.isEnabled()
    assert not panel.compare.isChecked()  # greyed and ticked would read as "it compares"
    panel.prompt.setText("The model runs on the phone")
    panel.steps.setValue(6)
    window.docks["Text"].hide()
    with qtbot.waitSignal(panel.finished, timeout=300000) as blocker:
        panel.run_action.trigger()  # F6 with the dock hidden shows the dock that runs
        assert window.docks["Text"].isVisible()
    r = blocker.args[0]
    assert r["engine"] == "mnn-llm" and 1 <= len(r["tokens"]) <= 6
    qtbot.wait(200)
    t = panel.steps_table
    assert t.rowCount() == len(r["tokens"])
    assert [int(t.item(i, 1).text()) for i in range(t.rowCount())] == r["tokens"]
    assert [t.item(i, 2).text() for i in range(t.rowCount())] == r["pieces"]
    assert r["text"] in panel.text.text()


def test_sweep_exports_fills_the_table_with_the_exports_of_the_same_model(qtbot, window):
    # the open export and its siblings of the same model (qwen3moe_*; not qwen2_*), 16-bit first as the reference
    from mnnscope.inspector.llm.table import sweep_rows
    open_and_wait(qtbot, window, FOLDER)
    window.show_dock("Text")
    panel = window.panels["Text"]
    assert panel.sweep_button.isVisibleTo(panel) and not panel.sweep_table.isVisibleTo(panel)
    panel.steps.setValue(6)
    with qtbot.waitSignal(panel.finished, timeout=600000) as blocker:
        assert panel.sweep()
    r = blocker.args[0]
    names = [row["name"] for row in r["rows"]]
    assert names[0] == "qwen3moe_16" and sorted(names) == sorted(p.name for p in FOLDER.parent.glob("qwen3moe_*"))
    assert r["rows"][0]["reference"] and r["rows"][0]["agreement_top1"] == 1.0
    by = {row["name"]: row for row in r["rows"]}
    assert by["qwen3moe_4_b64"]["agreement_top1"] < by["qwen3moe_8"]["agreement_top1"]
    qtbot.wait(100)
    t = panel.sweep_table
    assert t.isVisibleTo(panel)
    assert [[t.item(i, j).text() for j in range(t.columnCount())] for i in range(t.rowCount())] == sweep_rows(r)


def test_text_dock_twin_sweeps_and_refuses_what_does_not_fit(tmp_path):
    # `mnnscope view DIR --llm-sweep --json`: the Text dock's Sweep exports, offscreen through the same panel
    import json
    import os
    import subprocess
    import sys
    from mnnscope.inspector.llm.table import sweep_rows
    env = dict(os.environ, MNNSCOPE_DATA_DIR=str(tmp_path / "data"), QT_QPA_PLATFORM="offscreen")
    qwen2 = FOLDER.parent / "qwen2_8"
    r = subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "view", str(qwen2), "--llm-sweep",
                        "--gen-steps", "4", "--json"], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["table"] == sweep_rows(out) and out["table"][0][0] == "qwen2_16 (reference)"
    assert len(out["rows"]) == 4 and out["run_id"] and "4 exports" in out["status"]
    # Generate through the twin: the tokens the dock's table shows, MNN.llm's own timing fields
    r = subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "view", str(qwen2), "--generate", "--prompt",
                        "The model runs", "--gen-steps", "5", "--json"], capture_output=True, text=True,
                       timeout=600, env=env)
    assert r.returncode == 0, r.stderr
    gen = json.loads(r.stdout)
    assert 1 <= len(gen["tokens"]) <= 5 and gen["steps_shown"] == len(gen["tokens"]) and gen["prefill_ms"] > 0
    assert gen["text"] and gen["run_id"] and "tokens" in gen["status"]
    samples = Path(__file__).resolve().parent.parent / "resources" / "samples"
    for model, args in ((samples / "cnn.onnx", ["--llm-sweep"]), (qwen2, ["--generate", "--gen-mode", "int4w"]),
                        (qwen2, ["--prompt", "hi"])):
        bad = subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "view", str(model), *args, "--json"],
                             capture_output=True, text=True, timeout=120, env=env)
        assert bad.returncode == 2 and json.loads(bad.stdout)["error"]["kind"] == "usage", (args, bad.stderr)
