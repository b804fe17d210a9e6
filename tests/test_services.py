"""The services (profile, convert, compare) and what they share: one recording rule (a store that cannot
take the run costs the record, never the result), one place that picks the runner's Python, one child-process
supervisor, one worst-output rule."""
from __future__ import annotations

import json
import math
import sys
import tempfile

import pytest

from mnnscope.inspector.cli.app import main
from mnnscope.inspector.compare.metrics import worst_output, worst_output_error
from mnnscope.inspector.convert.service import run_convert
from mnnscope.inspector.errors import ExternalDataOutside, ModelError, USER_ERRORS
from mnnscope.inspector.process.child import RUNNER_PYTHON_ENV, runner_python
from mnnscope.inspector.process.childjob import ChildJob
from mnnscope.inspector.process.client import RunnerClient
from mnnscope.inspector.store.runs import DB_NAME, RunStore, open_run, record
from mnnscope.runner.protocol import RunnerError

BOGUS_PYTHON = "/nonexistent/mnnscope-test-python"


@pytest.fixture
def broken_store(tmp_path, monkeypatch):
    """A data folder whose database is not a database: every store call fails with sqlite3.DatabaseError.
    The run folders that fall back to the system's temporary folder (kept for the user) land under tmp_path."""
    folder = tmp_path / "broken-data"
    folder.mkdir()
    (folder / DB_NAME).write_bytes(b"this is not an SQLite file" * 100)
    monkeypatch.setenv("MNNSCOPE_DATA_DIR", str(folder))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return folder


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


# ----- the recording rule -----------------------------------------------------------------------------------
def test_record_turns_a_store_error_into_a_warning(tmp_path):
    good = RunStore(tmp_path / "ok" / DB_NAME)
    run_id, problem = record(good, kind="convert", model_path=None, summary={"ok": True})
    assert isinstance(run_id, int) and problem is None and good.get_run(run_id)["summary"] == {"ok": True}
    for extra in ("-wal", "-shm"):  # WAL journaling: the recent rows live beside the file
        (tmp_path / "ok" / (DB_NAME + extra)).unlink(missing_ok=True)
    (tmp_path / "ok" / DB_NAME).write_bytes(b"garbage" * 1000)
    run_id, problem = record(good, kind="convert", summary={"ok": True})
    assert run_id is None and "not recorded in the run store" in problem


def test_open_run_falls_back_to_a_temporary_folder(broken_store):
    store, folder, warnings = open_run(None, "profile")
    assert store is None and folder.is_dir() and str(broken_store) not in str(folder)
    assert folder.parent == broken_store.parent / "tmp"  # the system's temporary folder (the fixture's, here)
    assert len(warnings) == 1 and "run store is unavailable" in warnings[0] and str(folder) in warnings[0]


def test_profile_keeps_its_result_when_the_store_is_broken(broken_store, samples, capsys):
    assert main(["profile", str(samples / "cnn.mnn"), "--runs", "1", "--warmup", "1", "--json"]) == 0
    out = _json(capsys)
    assert out["total_ms"] > 0 and out["run_id"] is None
    assert any("run store" in w for w in out["warnings"])


def test_convert_keeps_its_result_when_the_store_is_broken(broken_store, samples, tmp_path, capsys):
    dst = tmp_path / "cnn.mnn"
    assert main(["convert", str(samples / "cnn.onnx"), "-o", str(dst), "--run-dir", str(tmp_path / "run"),
                 "--json"]) == 0
    out = _json(capsys)
    assert out["ok"] and dst.is_file() and out["run_id"] is None
    assert any("not recorded in the run store" in w for w in out["warnings"])


def test_compare_keeps_its_result_when_the_store_is_broken(broken_store, samples, capsys):
    assert main(["compare", str(samples / "cnn.onnx"), "--modes", "fp32", "--no-fix", "--json"]) == 0
    out = _json(capsys)
    assert out["ok"] and out["run_id"] is None
    assert any("not recorded in the run store" in w for w in out["warnings"])


def test_the_convert_service_records_and_says_so(samples, tmp_path):
    store = RunStore(tmp_path / "data" / DB_NAME)
    with RunnerClient() as client:
        result = run_convert(str(samples / "cnn.onnx"), str(tmp_path / "cnn.mnn"), client=client, store=store,
                             run_dir=tmp_path / "run")
    assert result.ok and isinstance(result.run_id, int) and result.to_json()["run_id"] == result.run_id
    row = store.get_run(result.run_id)
    assert row["kind"] == "convert" and row["summary"]["ok"] and "run_id" not in row["summary"]
    with pytest.raises(ModelError, match="no such file"):
        run_convert(str(tmp_path / "missing.onnx"), str(tmp_path / "x.mnn"), store=store)


# ----- which Python runs the runner ---------------------------------------------------------------------------
def test_runner_python_is_the_flag_then_the_environment_then_ours(monkeypatch):
    monkeypatch.delenv(RUNNER_PYTHON_ENV, raising=False)
    assert runner_python() == sys.executable and RunnerClient().python == sys.executable
    monkeypatch.setenv(RUNNER_PYTHON_ENV, BOGUS_PYTHON)
    assert runner_python() == BOGUS_PYTHON and RunnerClient().python == BOGUS_PYTHON
    assert runner_python("/given/python") == "/given/python"


@pytest.mark.parametrize("argv", [
    ["convert", "{samples}/cnn.onnx", "-o", "{tmp}/out.mnn", "--run-dir", "{tmp}/run"],
    ["convert", "{samples}/cnn.onnx", "--preflight"],
    ["inspect", "{samples}/cnn.onnx"],
    ["profile", "{samples}/cnn.mnn", "--runs", "1"],
    ["compare", "{samples}/cnn.onnx", "--modes", "fp32", "--no-fix"],
])
def test_every_command_runs_the_runner_under_MNNSCOPE_RUNNER_PYTHON(argv, samples, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(RUNNER_PYTHON_ENV, BOGUS_PYTHON)
    args = [a.format(samples=samples, tmp=tmp_path) for a in argv]
    main(args + ["--json"])
    captured = capsys.readouterr()
    assert f"cannot start the runner with '{BOGUS_PYTHON}'" in captured.out + captured.err


def test_convert_takes_python_from_the_flag_too(samples, tmp_path, capsys):
    code = main(["convert", str(samples / "cnn.onnx"), "-o", str(tmp_path / "o.mnn"), "--run-dir",
                 str(tmp_path / "run"), "--python", BOGUS_PYTHON, "--json"])
    assert code == 1
    assert f"cannot start the runner with '{BOGUS_PYTHON}'" in json.dumps(_json(capsys)["errors"])


# ----- the supervisor and the errors --------------------------------------------------------------------------
def test_a_child_job_that_dies_is_reported_with_its_last_words(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00not a model")
    job = ChildJob([str(bad)])
    with pytest.raises(ModelError):
        list(job.messages())
    assert not job.child.alive


def test_user_errors_are_recognised_by_type():
    assert isinstance(ExternalDataOutside("x"), ModelError)
    for e in (ModelError("m"), ExternalDataOutside("x"), RunnerError("died", "gone")):
        assert isinstance(e, USER_ERRORS)
    assert not isinstance(ValueError("bug"), USER_ERRORS)


# ----- one worst-output rule ----------------------------------------------------------------------------------
def test_worst_output_counts_unmeasured_and_nan_outputs_as_infinitely_wrong():
    rows = [{"name": "a", "rel_l2": 0.1}, {"name": "b", "rel_l2": 0.3}]
    assert worst_output(rows)["name"] == "b" and worst_output_error(rows) == 0.3
    assert worst_output(rows + [{"name": "c", "matched": False}])["name"] == "c"
    assert worst_output(rows + [{"name": "n", "rel_l2": math.nan}])["name"] == "n"
    assert worst_output_error(rows + [{"name": "n", "rel_l2": math.nan}]) == math.inf
    assert worst_output([]) == {} and worst_output_error([]) == 0.0
