"""The run store: SQLite rows for runs and ops, tensors in folders beside the database."""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading

import numpy as np
import pytest

from mnnscope.inspector.store.runs import DB_NAME, RunStore, companion_files, data_dir


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MNNSCOPE_DATA_DIR", str(tmp_path / "data"))
    return RunStore()


def test_location_follows_env_then_xdg_then_home(tmp_path, monkeypatch):
    monkeypatch.setenv("MNNSCOPE_DATA_DIR", str(tmp_path / "a"))
    assert data_dir() == tmp_path / "a"
    monkeypatch.delenv("MNNSCOPE_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_dir() == tmp_path / "xdg" / "mnnscope"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert data_dir() == tmp_path / "home" / ".local" / "share" / "mnnscope"


def test_add_get_and_list_runs_round_trip(store, samples):
    model = samples / "cnn.mnn"
    ops = [{"index": 0, "name": "/conv1/Conv_output_0", "type": "Convolution", "ms": 0.25, "flops": 4.4e5,
            "ms_min": 0.2, "ms_max": 0.3, "outputs": [{"name": "/conv1/Conv_output_0", "mean": 0.5, "nan": 0}]},
           {"index": 1, "name": "probs", "type": "Softmax", "ms": None, "flops": None}]
    run_dir = store.new_run_dir("profile")
    assert run_dir.parent == store.path.parent / "runs" and run_dir.is_dir()
    rid = store.add_run(kind="profile", model_path=str(model), settings={"threads": 2, "precision": "low"},
                        backend_requested="OPENCL", backend_used="CPU", precision="high",
                        inputs=[{"name": "input", "shape": [1, 3, 32, 32], "dtype": "float32"}],
                        summary={"total_ms": 1.5, "warnings": ["w"], "odd": float("nan")}, ops=ops, run_dir=run_dir)
    run = store.get_run(rid)
    assert run["model_sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    assert run["kind"] == "profile" and run["backend_requested"] == "OPENCL" and run["backend_used"] == "CPU"
    assert run["settings"] == {"threads": 2, "precision": "low"} and run["precision"] == "high"
    assert run["summary"]["total_ms"] == 1.5 and np.isnan(run["summary"]["odd"])
    assert run["inputs"][0]["shape"] == [1, 3, 32, 32]
    assert run["ops"] == ops
    assert run["run_dir"] == str(run_dir)
    other = store.add_run(kind="sweep", model_path=str(samples / "cnn.onnx"), summary={"cells": []})
    assert [r["id"] for r in store.list_runs()] == [other, rid]  # newest first
    assert [r["id"] for r in store.list_runs(model_hash=run["model_sha256"])] == [rid]
    assert [r["id"] for r in store.list_runs(kind="sweep")] == [other]
    assert "ops" not in store.list_runs()[0]
    assert store.get_run(99999) is None
    assert store.delete_run(rid) and store.get_run(rid) is None
    with sqlite3.connect(store.path) as con:  # ops go with their run
        assert con.execute("SELECT COUNT(*) FROM ops WHERE run_id = ?", (rid,)).fetchone()[0] == 0


def test_model_hash_covers_external_weights_and_notices_changes(store, tmp_path):
    model, data = tmp_path / "m.onnx", tmp_path / "m.onnx.data"
    model.write_bytes(b"graph")
    data.write_bytes(b"weights-1")
    assert companion_files(model) == [model, data]
    first = store.model_hash(model)
    assert first == hashlib.sha256(b"graph" + b"weights-1").hexdigest()
    data.write_bytes(b"weights-22")  # a size change invalidates the cached hash
    assert store.model_hash(model) != first


def test_no_tensor_data_in_the_database(store, tmp_path):
    """Large arrays belong in run folders: the DB only holds what the protocol sends inline."""
    run_dir = store.new_run_dir()
    np.save(run_dir / "big.npy", np.zeros((512, 512), np.float32), allow_pickle=False)
    store.add_run(kind="profile", summary={"outputs": [{"name": "y", "path": str(run_dir / "big.npy")}]},
                  run_dir=run_dir)
    assert store.path.stat().st_size < 200_000


def test_concurrent_writers_from_threads(store):
    ids, errors = [], []

    def work(k):
        try:
            for i in range(10):
                ids.append(store.add_run(kind="profile", summary={"k": k, "i": i}, ops=[{"name": "a", "type": "t"}]))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not errors and len(set(ids)) == 40 and len(store.list_runs()) == 40


def test_a_second_store_object_sees_the_same_runs(store):
    rid = store.add_run(kind="profile", summary={"a": 1})
    again = RunStore(store.path)
    assert again.get_run(rid)["summary"] == {"a": 1}
    assert store.path.name == DB_NAME
    json.dumps(again.list_runs())  # rows are plain JSON-able dicts
