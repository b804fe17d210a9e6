"""The conversion cache and the reference-run cache (inspector/convert/cache.py), with real conversions.

A hit must give what a fresh conversion gives; anything that changes the converter's input (the model's bytes,
an external data file, a setting, the MNN version) must miss; a damaged entry must be noticed and rebuilt.
Every test has a cache folder of its own (MNNSCOPE_CACHE_DIR).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from mnnscope.inspector.compare.modes import CompareOptions, run_compare
from mnnscope.inspector.convert import cache as ccache
from mnnscope.inspector.convert.service import _cache_lookup, convert_model, preflight
from mnnscope.inspector.convert.settings import ConvertSettings
from mnnscope.inspector.formats.loader import load_model
from mnnscope.inspector.formats.mnn_flatbuffer import read_mnn
from mnnscope.inspector.inputs.data import make_inputs, save_inputs


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MNNSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("MNNSCOPE_CACHE", raising=False)
    monkeypatch.delenv("MNNSCOPE_CACHE_MB", raising=False)
    return tmp_path / "cache"


def _ops(path: str) -> list[tuple]:
    model = read_mnn(path)
    return [(op.name, op.op_type) for op in model.ops]


def _entries(root: Path, ns: str = ccache.CONVERT) -> list[Path]:
    folder = root / ns
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".")) if folder.is_dir() else []


def test_a_hit_gives_what_a_fresh_conversion_gives(shared_runner, samples, tmp_path, own_cache):
    src = samples / "encoder_block.onnx"
    first = convert_model(src, tmp_path / "a" / "m.mnn", client=shared_runner, run_dir=tmp_path / "ra")
    assert first.ok and first.cache["state"] == "stored", first.cache
    assert first.convert_s > 0
    events = []
    hit = convert_model(src, tmp_path / "b" / "m.mnn", client=shared_runner, run_dir=tmp_path / "rb",
                        on_event=lambda kind, body: events.append((kind, body)))
    assert hit.ok and hit.cache["state"] == "hit" and hit.cache["key"] == first.cache["key"]
    assert hit.convert_s == 0.0 and hit.cache["converter_s"] > 0
    fresh = convert_model(src, tmp_path / "c" / "m.mnn", client=shared_runner, run_dir=tmp_path / "rc", cache=False)
    assert fresh.ok and fresh.cache["state"] == "off"
    # The hit is the stored file byte for byte; a fresh conversion differs only by the converter's random UUID,
    # so it is compared by what it holds: the same ops, node map, diagnosis and log.
    assert Path(hit.output).read_bytes() == Path(first.output).read_bytes()
    assert _ops(hit.output) == _ops(fresh.output) == _ops(first.output)
    assert hit.size_bytes == fresh.size_bytes
    assert hit.node_map.counts() == fresh.node_map.counts()
    assert hit.diff == fresh.diff
    assert hit.mnn_ops == fresh.mnn_ops
    assert (hit.errors, hit.warnings) == (fresh.errors, fresh.warnings)
    assert "Converted Success" in hit.log_text and Path(hit.log_path).read_text() == hit.log_text
    assert hit.output in hit.argv and str(src.resolve()) in hit.argv  # this run's paths, not the stored run's
    replayed = [b["text"] for k, b in events if k == "log"]
    assert replayed and "conversion cache hit" in replayed[0] and "Converted Success" in replayed[0]
    assert len(_entries(own_cache)) == 1


def test_changed_model_setting_and_version_miss(shared_runner, samples, tmp_path, own_cache):
    src = tmp_path / "cnn.onnx"
    shutil.copy(samples / "cnn.onnx", src)
    base = convert_model(src, tmp_path / "o1.mnn", client=shared_runner, run_dir=tmp_path / "r1")
    assert base.cache["state"] == "stored"
    # A different setting: another key, another entry.
    fp16 = convert_model(src, tmp_path / "o2.mnn", ConvertSettings(fp16=True), client=shared_runner,
                         run_dir=tmp_path / "r2")
    assert fp16.cache["state"] == "stored" and fp16.cache["key"] != base.cache["key"]
    assert fp16.size_bytes < base.size_bytes
    # The same file name with other weights: the content decides, not the path or the size.
    model = onnx.load(str(src))
    init = model.graph.initializer[0]
    arr = numpy_helper.to_array(init).copy()
    arr.flat[0] += 1.0
    init.CopyFrom(numpy_helper.from_array(arr, init.name))
    onnx.save(model, str(src))
    changed = convert_model(src, tmp_path / "o3.mnn", client=shared_runner, run_dir=tmp_path / "r3")
    assert changed.cache["state"] == "stored" and changed.cache["key"] != base.cache["key"]
    # Another MNN version (as the runner would report it) never gets this version's entry.
    settings = ConvertSettings()
    pre = preflight(str(src), shared_runner)
    same = _cache_lookup(str(src), str(tmp_path / "o4.mnn"), settings, pre, shared_runner,
                         str(tmp_path / "r4.log"), None)
    assert same["state"] == "hit" and same["key"] == changed.cache["key"]
    other = _cache_lookup(str(src), str(tmp_path / "o5.mnn"), settings, dict(pre, mnn_version="3.6.2"),
                          shared_runner, str(tmp_path / "r5.log"), None)
    assert other["state"] == "miss" and other["key"] != same["key"] and "attempt" not in other
    assert not (tmp_path / "o5.mnn").exists()
    assert len(_entries(own_cache)) == 3


def test_changed_external_data_misses(shared_runner, samples, tmp_path):
    folder = tmp_path / "ext"
    folder.mkdir()
    for name in ("external_data.onnx", "external_data.onnx.data"):
        shutil.copy(samples / name, folder / name)
    src = folder / "external_data.onnx"
    first = convert_model(src, tmp_path / "e1.mnn", client=shared_runner, run_dir=tmp_path / "r1")
    assert first.ok and first.cache["state"] == "stored"
    again = convert_model(src, tmp_path / "e2.mnn", client=shared_runner, run_dir=tmp_path / "r2")
    assert again.cache["state"] == "hit"
    # Same .onnx bytes, same data file size, other weights: a miss, and the new weights reach the output.
    data = bytearray((folder / "external_data.onnx.data").read_bytes())
    data[:4] = np.float32(123.25).tobytes()
    (folder / "external_data.onnx.data").write_bytes(bytes(data))
    changed = convert_model(src, tmp_path / "e3.mnn", client=shared_runner, run_dir=tmp_path / "r3")
    assert changed.ok and changed.cache["state"] == "stored" and changed.cache["key"] != first.cache["key"]
    assert Path(changed.output).read_bytes() != Path(first.output).read_bytes()
    # A data file that is gone: no key can be made, the cache is bypassed and the failure diagnosed as before.
    (folder / "external_data.onnx.data").unlink()
    missing = convert_model(src, tmp_path / "e4.mnn", client=shared_runner, run_dir=tmp_path / "r4")
    assert not missing.ok and missing.cache["state"] == "bypassed"
    assert any(e["kind"] == "missing_external_data" for e in missing.errors)


@pytest.mark.parametrize("damage", ["flip", "truncate", "meta", "delete"])
def test_a_damaged_entry_is_detected_and_rebuilt(shared_runner, samples, tmp_path, own_cache, damage):
    src = samples / "cnn.onnx"
    first = convert_model(src, tmp_path / "a.mnn", client=shared_runner, run_dir=tmp_path / "ra")
    (entry,) = _entries(own_cache)
    model = entry / "model.mnn"
    if damage == "flip":
        data = bytearray(model.read_bytes())
        data[len(data) // 2] ^= 0xFF
        model.write_bytes(bytes(data))
    elif damage == "truncate":
        model.write_bytes(model.read_bytes()[:100])
    elif damage == "meta":
        (entry / "meta.json").write_text("{not json")
    else:
        model.unlink()
    again = convert_model(src, tmp_path / "b.mnn", client=shared_runner, run_dir=tmp_path / "rb")
    assert again.ok and again.cache["state"] == "stored" and again.convert_s > 0  # converted anew, stored anew
    assert _ops(again.output) == _ops(first.output)
    third = convert_model(src, tmp_path / "c.mnn", client=shared_runner, run_dir=tmp_path / "rc")
    assert third.cache["state"] == "hit"
    assert Path(third.output).read_bytes() == Path(again.output).read_bytes()


def test_no_cache_flag_and_environment_bypass(samples, tmp_path, own_cache):
    src = samples / "cnn.onnx"
    cmd = [sys.executable, "-m", "mnnscope.gui.main", "convert", str(src), "-o", str(tmp_path / "x.mnn"), "--json"]
    out = json.loads(subprocess.run(cmd + ["--no-cache"], capture_output=True, text=True, check=True).stdout)
    assert out["ok"] and out["cache"]["state"] == "off" and not _entries(own_cache)
    out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    assert out["cache"]["state"] == "stored" and out["convert_s"] > 0
    out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    assert out["cache"]["state"] == "hit" and out["convert_s"] == 0
    text = subprocess.run(cmd[:-1], capture_output=True, text=True, check=True).stdout
    assert "from the conversion cache" in text and "--no-cache" in text
    env_off = dict(__import__("os").environ, MNNSCOPE_CACHE="0")
    out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True, env=env_off).stdout)
    assert out["cache"]["state"] == "off"


def test_runs_clean_empties_the_cache(samples, tmp_path, own_cache, shared_runner):
    convert_model(samples / "cnn.onnx", tmp_path / "a.mnn", client=shared_runner, run_dir=tmp_path / "ra")
    assert len(_entries(own_cache)) == 1
    base = [sys.executable, "-m", "mnnscope.gui.main", "runs", "clean", "--json"]
    kept = json.loads(subprocess.run(base + ["--older-than", "1"], capture_output=True, text=True,
                                     check=True).stdout)
    assert kept["cache"]["entries"] == 0 and len(_entries(own_cache)) == 1  # used just now: stays
    dry = json.loads(subprocess.run(base + ["--keep", "1000", "--dry-run"], capture_output=True, text=True,
                                    check=True).stdout)
    assert dry["cache"]["entries"] == 1 and dry["cache"]["bytes"] > 0 and len(_entries(own_cache)) == 1
    done = json.loads(subprocess.run(base + ["--keep", "1000"], capture_output=True, text=True, check=True).stdout)
    assert done["cache"]["entries"] == 1 and not _entries(own_cache)


def test_lru_bound_evicts_the_least_recently_used(tmp_path):
    blob = tmp_path / "blob"
    blob.write_bytes(b"x" * 4000)
    cache = ccache.DiskCache(tmp_path / "c", limit=10_000)
    for key in ("a", "b"):
        assert cache.put("t", key, {"f": blob}, {}) is not None
    assert cache.get("t", "a") is not None  # a is now the most recently used
    assert cache.put("t", "c", {"f": blob}, {}) is not None
    assert cache.get("t", "b") is None and cache.get("t", "a") is not None and cache.get("t", "c") is not None
    big = tmp_path / "big"
    big.write_bytes(b"y" * 6000)
    assert cache.put("t", "d", {"f": big}, {}) is None  # over half the bound: not stored, nothing pushed out
    assert cache.get("t", "a") is not None


def test_reference_run_is_cached_and_keyed_by_inputs(shared_runner, samples, tmp_path, own_cache):
    src = samples / "encoder_block.onnx"
    graph = load_model(src, client=shared_runner)

    def compare(tag, seed):
        work = tmp_path / tag
        work.mkdir()
        inputs = save_inputs(make_inputs(graph, seed=seed), work / "inputs.npz")
        return run_compare(str(src), graph, inputs, CompareOptions(modes=["fp32"], fix=False), shared_runner,
                           str(work))

    first, second, other = compare("a", 0), compare("b", 0), compare("c", 1)
    assert first["reference"]["cache"]["state"] == "stored"
    assert second["reference"]["cache"]["state"] == "hit"
    assert other["reference"]["cache"]["state"] == "stored"  # other inputs: another reference
    assert second["modes"][0]["conversion"]["cache"]["state"] == "hit" and second["convert_s"] == 0
    a, b = first["modes"][0], second["modes"][0]
    assert [o["rel_l2"] for o in a["outputs"]] == [o["rel_l2"] for o in b["outputs"]]
    assert a["first_divergence"] == b["first_divergence"]
    assert [(t["name"], t.get("max_abs")) for t in a["tensors"]] == [(t["name"], t.get("max_abs")) for t in b["tensors"]]
    assert [o["rel_l2"] for o in other["modes"][0]["outputs"]] != [o["rel_l2"] for o in a["outputs"]]
    assert len(_entries(own_cache, ccache.REFERENCE)) == 2


def test_profile_reports_convert_s_and_uses_the_cache(samples, tmp_path, own_cache):
    cmd = [sys.executable, "-m", "mnnscope.gui.main", "profile", str(samples / "cnn.onnx"), "--engine", "mnn",
           "--runs", "1", "--warmup", "1", "--json"]
    first = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    assert first["conversion"]["cache"]["state"] == "stored" and first["convert_s"] > 0
    second = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    assert second["conversion"]["cache"]["state"] == "hit" and second["convert_s"] == 0
    assert [op["name"] for op in second["ops"]] == [op["name"] for op in first["ops"]]
    off = json.loads(subprocess.run(cmd + ["--no-cache"], capture_output=True, text=True, check=True).stdout)
    assert off["conversion"]["cache"]["state"] == "off" and off["convert_s"] > 0
