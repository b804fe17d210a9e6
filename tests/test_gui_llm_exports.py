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
    view = open_and_wait(qtbot, window, FOLDER)
    assert "/layers.0/self_attn/FusedAttention" in view.table.names
    window.show_dock("Text")
    panel = window.panels["Text"]
    assert not panel.tokenizer.isEnabled() and not panel.compare.isEnabled()
    panel.prompt.setText("The model runs on the phone")
    panel.steps.setValue(6)
    with qtbot.waitSignal(panel.finished, timeout=300000) as blocker:
        assert panel.run()
    r = blocker.args[0]
    assert r["engine"] == "mnn-llm" and 1 <= len(r["tokens"]) <= 6
    qtbot.wait(200)
    t = panel.steps_table
    assert t.rowCount() == len(r["tokens"])
    assert [int(t.item(i, 1).text()) for i in range(t.rowCount())] == r["tokens"]
    assert [t.item(i, 2).text() for i in range(t.rowCount())] == r["pieces"]
    assert r["text"] in panel.text.text()
