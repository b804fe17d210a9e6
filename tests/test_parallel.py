"""Conversions in parallel: each in a runner of its own (own process, own working directory, since the converter
writes scratch files into its cwd), beside the comparison's reference run; cancel stops them all."""
from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from conftest import child_pids
from mnnscope.inspector.compare.modes import CompareOptions, parallel_conversions, run_compare
from mnnscope.inspector.convert import cache as ccache
from mnnscope.inspector.convert.service import convert_model
from mnnscope.inspector.convert.settings import ConvertSettings
from mnnscope.inspector.formats.loader import load_model
from mnnscope.inspector.formats.mnn_flatbuffer import read_mnn
from mnnscope.inspector.inputs.data import make_inputs, save_inputs
from mnnscope.inspector.process.client import RunnerClient


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MNNSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("MNNSCOPE_CACHE", raising=False)
    return tmp_path / "cache"


def _convert_together(src: Path, outs: list[Path], settings: ConvertSettings, cache: bool) -> list:
    results: list = [None] * len(outs)
    start = threading.Barrier(len(outs))

    def work(i):
        with RunnerClient() as client:
            client.hello(mnn=False)  # runner up before the barrier, so the conversions really overlap
            start.wait()
            results[i] = convert_model(src, outs[i], settings, client=client, run_dir=outs[i].parent / f"run{i}",
                                       cache=cache)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(outs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return results


def test_parallel_conversions_of_one_model_do_not_interfere(samples, tmp_path, own_cache):
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("external_data.onnx", "external_data.onnx.data"):
        shutil.copy(samples / name, folder / name)
    src = folder / "external_data.onnx"
    settings = ConvertSettings(external_weights=True)  # the converter's scratch file in its cwd is in play
    outs = [tmp_path / f"o{i}" / "m.mnn" for i in range(3)]
    results = _convert_together(src, outs, settings, cache=False)
    assert all(r is not None and r.ok for r in results), [r and r.errors for r in results]
    ops = [[(op.name, op.op_type) for op in read_mnn(r.output).ops] for r in results]
    assert ops[0] == ops[1] == ops[2]
    weights = [Path(r.weight_file).read_bytes() for r in results]
    assert weights[0] == weights[1] == weights[2]
    # Three at once storing the same key: one entry, sound, and the next conversion is served from it.
    outs = [tmp_path / f"c{i}" / "m.mnn" for i in range(3)]
    stored = _convert_together(src, outs, settings, cache=True)
    assert all(r.ok for r in stored)
    assert {r.cache["key"] for r in stored} == {stored[0].cache["key"]}
    entries = [p for p in (own_cache / ccache.CONVERT).iterdir() if not p.name.startswith(".")]
    assert len(entries) == 1 and ccache.DiskCache().get(ccache.CONVERT, entries[0].name) is not None
    assert not list((own_cache / ".staging").iterdir())  # the losers' staging folders are gone
    hit = convert_model(src, tmp_path / "h" / "m.mnn", settings, run_dir=tmp_path / "h" / "run")
    assert hit.cache["state"] == "hit" and Path(hit.weight_file).read_bytes() == weights[0]


def _compare(client, graph, src: Path, work: Path, modes, events=None, **opts) -> dict:
    work.mkdir(parents=True)
    inputs = save_inputs(make_inputs(graph, seed=0), work / "inputs.npz")
    on_event = (lambda kind, body: events.append(body.get("message") or body.get("text"))) if events is not None \
        else None
    return run_compare(str(src), graph, inputs, CompareOptions(modes=list(modes), fix=False, **opts), client,
                       str(work), on_event=on_event)


def test_parallel_modes_give_the_sequential_results(shared_runner, samples, tmp_path, monkeypatch):
    src = samples / "encoder_block.onnx"
    graph = load_model(src, client=shared_runner)
    modes = ["fp32", "fp16w", "int8w"]
    monkeypatch.setenv("MNNSCOPE_CONVERT_JOBS", "1")
    sequential = _compare(shared_runner, graph, src, tmp_path / "seq", modes, cache=False)
    monkeypatch.setenv("MNNSCOPE_CONVERT_JOBS", "3")
    events: list = []
    parallel = _compare(shared_runner, graph, src, tmp_path / "par", modes, events=events, cache=False)
    assert any("3 setting(s), 3 at a time" in (e or "") for e in events), events
    for a, b in zip(sequential["modes"], parallel["modes"]):
        assert a["mode"] == b["mode"] and a["error"] is None and b["error"] is None
        assert a["conversion"]["cache"]["state"] == "off" and a["convert_s"] > 0 and b["convert_s"] > 0
        assert [o["rel_l2"] for o in a["outputs"]] == [o["rel_l2"] for o in b["outputs"]]
        assert [(t["name"], t["max_abs"]) for t in a["tensors"]] == [(t["name"], t["max_abs"]) for t in b["tensors"]]
        assert a["first_divergence"] == b["first_divergence"]
        assert a["conversion"]["size_bytes"] == b["conversion"]["size_bytes"]
    assert parallel["convert_s"] == pytest.approx(sum(m["convert_s"] for m in parallel["modes"]), abs=0.01)


class _Stop(Exception):
    pass


def _decoder(path: Path, nodes: int) -> Path:
    """benchmarks/gen_large.py's decoder: big enough that its conversions take seconds."""
    import onnx

    from conftest import benchmark
    gen = benchmark("gen_large")
    onnx.save(gen.make_decoder(nodes), str(path))
    return path


def test_cancel_stops_every_conversion_under_way(shared_runner, tmp_path, monkeypatch):
    src = _decoder(tmp_path / "decoder.onnx", 2000)  # conversions of several seconds each: still running
    graph = load_model(src, client=shared_runner)
    monkeypatch.setenv("MNNSCOPE_CONVERT_JOBS", "3")
    before = set(child_pids())
    seen: dict = {}

    def on_event(kind, body):
        # The reference run's own progress (the main thread, inside the runner request, conversions under way).
        if kind == "progress" and threading.current_thread() is threading.main_thread() and \
                (body.get("message") or "").startswith("running"):
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and len(set(child_pids()) - before) < 3:
                time.sleep(0.05)
            seen["workers"] = set(child_pids()) - before
            raise _Stop()  # what SIGTERM (the window's Cancel) or Ctrl+C does in the compare process

    work = tmp_path / "w"
    work.mkdir()
    inputs = save_inputs(make_inputs(graph, seed=0), work / "inputs.npz")
    with pytest.raises(_Stop):
        run_compare(str(src), graph, inputs, CompareOptions(modes=["fp32", "fp16w", "int8w"], fix=False, cache=False),
                    shared_runner, str(work), on_event=on_event)
    assert len(seen["workers"]) == 3, "three conversion runners were under way"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and set(child_pids()) & seen["workers"]:
        time.sleep(0.05)
    assert not set(child_pids()) & seen["workers"], "a conversion runner outlived the cancel"


def test_parallelism_is_bounded_by_cores_and_memory(samples, monkeypatch):
    monkeypatch.delenv("MNNSCOPE_CONVERT_JOBS", raising=False)
    import os
    cores = len(os.sched_getaffinity(0))
    assert parallel_conversions(1, str(samples / "cnn.onnx")) == 1
    assert 1 <= parallel_conversions(8, str(samples / "cnn.onnx")) <= min(8, cores)
    monkeypatch.setenv("MNNSCOPE_CONVERT_JOBS", "2")
    assert parallel_conversions(8, str(samples / "cnn.onnx")) == 2


def test_no_conversion_runner_starts_after_cancel(shared_runner, samples, tmp_path):
    from mnnscope.inspector.compare.modes import _Session, _WorkerClient
    from mnnscope.inspector.process.client import Cancelled
    src = samples / "cnn.onnx"
    graph = load_model(src, client=shared_runner)
    inputs = save_inputs(make_inputs(graph, seed=0), tmp_path / "inputs.npz")
    session = _Session(str(src), graph, inputs, CompareOptions(modes=["fp32"]), shared_runner, str(tmp_path), None)
    late = _WorkerClient(session)
    quantizer = late.spawn_sibling()  # an int8 mode's mnnquant runner: registered, so Cancel reaches it too
    assert quantizer in session._workers
    session.stop_conversions()
    for client in (late, quantizer):
        with pytest.raises(Cancelled):
            client.request("hello", {})
        assert not client.alive and client.pid is None


def test_stopped_conversions_write_nothing_afterwards(shared_runner, tmp_path):
    """SIGTERM during a comparison left its work folder behind in CI: the conversion workers, their runners killed,
    still wrote into it (the log, the set-aside output) after the folder was removed. A stop now returns only once
    every worker is done, so what the caller removes next stays removed."""
    import time
    from mnnscope.inspector.compare.modes import MODES, _Session
    from test_real_models import real_model
    src = real_model("rapidocr", "models/PP-OCRv6_rec_small.onnx")
    graph = load_model(src, client=shared_runner)
    inputs = save_inputs(make_inputs(graph, seed=0), tmp_path / "inputs.npz")
    work = tmp_path / "work"
    work.mkdir()
    session = _Session(str(src), graph, inputs, CompareOptions(modes=["fp16w", "int8w"], cache=False),
                       shared_runner, str(work), None)
    assert session.start_conversions([MODES["fp16w"], MODES["int8w"]]) == 2
    deadline = time.monotonic() + 60
    while not any(c.alive for c in session._workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # converting
    session.stop_conversions()
    assert all(f.done() for f in session._pending.values())
    assert not any(c.alive for c in session._workers)
    shutil.rmtree(work)
    time.sleep(1.0)
    assert not work.exists()
