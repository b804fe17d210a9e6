"""Every kind of run lands in the run store: conversions and comparisons beside profiles."""
from __future__ import annotations

import json

from mnnscope.inspector.cli import app as cli
from mnnscope.inspector.store.runs import RunStore


def test_convert_and_compare_are_recorded(samples, tmp_path, capsys):
    assert cli.main(["convert", str(samples / "cnn.onnx"), "-o", str(tmp_path / "cnn.mnn"), "--json"]) == 0
    conv = json.loads(capsys.readouterr().out)
    assert cli.main(["compare", str(samples / "cnn.onnx"), "--modes", "fp32", "--json"]) == 0
    comp = json.loads(capsys.readouterr().out)
    store = RunStore()
    got = store.get_run(conv["run_id"])
    assert got["kind"] == "convert" and got["model_path"].endswith("cnn.onnx")
    assert got["summary"]["ok"] is True and got["summary"]["output"].endswith("cnn.mnn")
    back = store.get_run(comp["run_id"])
    assert back["kind"] == "compare"
    assert back["summary"]["modes"][0]["mode"] == "fp32"
    assert "tensors" not in back["summary"]["modes"][0]  # per-tensor tables stay out of the database
    # Both runs share the model hash, so a history filtered by model finds them together.
    kinds = {r["kind"] for r in store.list_runs(model_hash=got["model_sha256"])}
    assert {"convert", "compare"} <= kinds
