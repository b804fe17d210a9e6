"""inspector/history.py: what the Runs dock and `mnnscope runs` show of stored runs, from real runs."""
from __future__ import annotations

import json

import pytest

from mnnscope.inspector.cli import app as cli
from mnnscope.inspector.history import diff_runs, headline_text, op_deltas, settings_text
from mnnscope.inspector.store.runs import RunStore


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MNNSCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MNNSCOPE_RUNS", raising=False)
    return RunStore()


def _json(capsys, *argv) -> dict:
    assert cli.main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_dock_and_the_cli_diff_two_profiles_alike(store, samples, tmp_path, capsys):
    a = _json(capsys, "profile", str(samples / "cnn.mnn"), "--runs", "2")
    b = _json(capsys, "profile", str(samples / "cnn.mnn"), "--runs", "3", "--threads", "2")
    conv = _json(capsys, "convert", str(samples / "cnn.onnx"), "-o", str(tmp_path / "cnn.mnn"), "--fp16")
    ra, rb, rc = (store.get_run(r["run_id"]) for r in (a, b, conv))

    d = diff_runs(ra, rb)
    assert json.loads(json.dumps(d)) == _json(capsys, "runs", "diff", str(a["run_id"]), str(b["run_id"]))
    deltas = op_deltas(d)
    assert set(deltas) == {op["name"] for op in a["ops"]}
    assert all(deltas[c["name"]] == pytest.approx(c["ms_b"] - c["ms_a"]) for c in d["ops"])

    assert settings_text(ra).startswith("mnn CPU high normal threads=1 runs=2")
    assert "threads=2 runs=3" in settings_text(rb)
    assert settings_text(rc) == "fp16=True"  # only what differs from the converter's defaults
    assert headline_text(rc).startswith("ok ")
    with pytest.raises(ValueError, match="same kind"):
        diff_runs(ra, rc)


def test_every_version_of_a_model_file(store, samples, tmp_path):
    model = tmp_path / "net.mnn"
    model.write_bytes((samples / "cnn.mnn").read_bytes())
    first = store.add_run(kind="profile", model_path=str(model))
    model.write_bytes((samples / "encoder_block.mnn").read_bytes())
    second = store.add_run(kind="profile", model_path=str(model))
    other = store.add_run(kind="profile", model_path=str(samples / "cnn.mnn"))  # same content as the first
    digest = store.model_hash(model)
    assert [r["id"] for r in store.list_runs(model_hash=digest)] == [second]
    assert [r["id"] for r in store.list_runs(model_hash=digest, model_path=model)] == [second, first]
    assert [r["id"] for r in store.list_runs(model_path=model)] == [second, first]
    assert other not in [r["id"] for r in store.list_runs(model_path=model)]

    removed = store.delete_runs([first, second])
    assert removed["removed"] == [first, second] and not removed["errors"]
    assert [r["id"] for r in store.list_runs()] == [other]
