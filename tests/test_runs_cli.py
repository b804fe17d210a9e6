"""`mnnscope runs`: list, show, diff and clean real runs recorded by profile, convert and compare."""
from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from mnnscope.inspector.cli import app as cli
from mnnscope.inspector.store.runs import RunStore

DAY = 86400


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A store of its own per test, with conversions' folders inside its runs dir (as outside the tests)."""
    monkeypatch.setenv("MNNSCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MNNSCOPE_RUNS", raising=False)
    return RunStore()


def run_json(capsys, *argv):
    rc = cli.main([*argv, "--json"])
    captured = capsys.readouterr()
    return rc, json.loads(captured.out)  # exactly one JSON object, or json.loads fails


def profile(capsys, model, *flags) -> dict:
    rc, out = run_json(capsys, "profile", str(model), "--runs", "3", *flags)
    assert rc == 0, out
    return out


def test_list_newest_first_with_filters_by_model_hash_kind_and_limit(store, samples, tmp_path, capsys):
    assert cli.main(["runs"]) == 0
    assert "no runs recorded" in capsys.readouterr().out
    renamed = tmp_path / "renamed.mnn"
    shutil.copyfile(samples / "cnn.mnn", renamed)
    p_cnn = profile(capsys, renamed)
    p_enc = profile(capsys, samples / "encoder_block.mnn")
    rc, conv = run_json(capsys, "convert", str(samples / "cnn.onnx"), "-o", str(tmp_path / "cnn.mnn"))
    assert rc == 0

    rc, listed = run_json(capsys, "runs")
    assert rc == 0
    assert [r["id"] for r in listed["runs"]] == [conv["run_id"], p_enc["run_id"], p_cnn["run_id"]]
    by_id = {r["id"]: r for r in listed["runs"]}
    assert by_id[p_cnn["run_id"]]["model"] == "renamed.mnn"
    assert by_id[p_cnn["run_id"]]["headline"]["total_ms"] == pytest.approx(p_cnn["total_ms"])
    assert by_id[p_cnn["run_id"]]["backend_used"] == p_cnn["backend_used"] == "CPU"
    assert by_id[conv["run_id"]]["headline"] == {"ok": True, "size_bytes": os.path.getsize(tmp_path / "cnn.mnn"),
                                                 "output": str(tmp_path / "cnn.mnn"), "keep_float": []}

    # The original file finds the run made on its renamed copy: the filter is the content hash.
    rc, same = run_json(capsys, "runs", "list", "--model", str(samples / "cnn.mnn"))
    assert [r["id"] for r in same["runs"]] == [p_cnn["run_id"]]
    rc, kinds = run_json(capsys, "runs", "--kind", "profile", "list")  # a filter before the subcommand holds
    assert [r["id"] for r in kinds["runs"]] == [p_enc["run_id"], p_cnn["run_id"]]
    rc, one = run_json(capsys, "runs", "list", "--limit", "1")
    assert [r["id"] for r in one["runs"]] == [conv["run_id"]]

    assert cli.main(["runs", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and "renamed.mnn" in lines[3] and " ms" in lines[3] and "ok " in lines[1]
    assert cli.main(["runs", "--model", str(tmp_path / "missing.mnn")]) == 1  # a missing model: 1, as everywhere
    assert cli.main(["runs", "--limit", "0"]) == 2


def test_show_prints_the_whole_record_and_fails_cleanly_on_unknown_ids(store, samples, capsys):
    p = profile(capsys, samples / "cnn.mnn", "--threads", "2")
    rc, shown = run_json(capsys, "runs", "show", str(p["run_id"]))
    assert rc == 0
    assert shown["kind"] == "profile" and shown["settings"]["threads"] == 2
    assert shown["inputs"][0]["name"] == p["inputs"][0]["name"]
    assert shown["summary"]["total_ms"] == pytest.approx(p["total_ms"])
    assert [op["name"] for op in shown["ops"]] == [op["name"] for op in p["ops"]]
    assert cli.main(["runs", "show", str(p["run_id"])]) == 0
    text = capsys.readouterr().out
    assert f"run {p['run_id']}: profile" in text and "threads=2" in text and p["ops"][0]["name"] in text

    rc, err = run_json(capsys, "runs", "show", "9999")
    assert rc == 1 and err["error"]["kind"] == "not_found" and "9999" in err["error"]["message"]
    assert cli.main(["runs", "show", "9999"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "no run 9999" in captured.err
    assert cli.main(["runs", "show", "abc"]) == 2


def test_diff_profiles_matches_ops_by_name(store, samples, capsys):
    a = profile(capsys, samples / "cnn.mnn")
    b = profile(capsys, samples / "cnn.mnn")
    c = profile(capsys, samples / "cnn.mnn", "--threads", "2")
    rc, same = run_json(capsys, "runs", "diff", str(a["run_id"]), str(b["run_id"]))
    assert rc == 0 and same["kind"] == "profile"
    assert same["settings_changed"] == {} and same["only_a"] == [] and same["only_b"] == []
    assert {o["name"] for o in same["ops"]} == {op["name"] for op in a["ops"]}
    assert same["total_ratio"] == pytest.approx(b["total_ms"] / a["total_ms"])
    deltas = [abs(o["delta_ms"]) for o in same["ops"]]
    assert deltas == sorted(deltas, reverse=True)  # largest changes first
    ms_a = {op["name"]: op["ms"] for op in a["ops"]}
    ms_b = {op["name"]: op["ms"] for op in b["ops"]}
    for o in same["ops"]:
        assert o["ms_a"] == pytest.approx(ms_a[o["name"]])
        assert o["delta_ms"] == pytest.approx(ms_b[o["name"]] - ms_a[o["name"]])

    rc, threads = run_json(capsys, "runs", "diff", str(a["run_id"]), str(c["run_id"]))
    assert threads["settings_changed"] == {"threads": [1, 2]}
    assert threads["total_ms_b"] == pytest.approx(c["total_ms"])
    assert cli.main(["runs", "diff", str(a["run_id"]), str(c["run_id"]), "--top", "3"]) == 0
    text = capsys.readouterr().out
    assert "setting threads: 1 -> 2" in text and "total " in text

    # Different models: matched ops are the shared names; the rest are listed per side.
    e = profile(capsys, samples / "encoder_block.mnn")
    rc, other = run_json(capsys, "runs", "diff", str(a["run_id"]), str(e["run_id"]))
    names_a, names_e = {op["name"] for op in a["ops"]}, {op["name"] for op in e["ops"]}
    assert {o["name"] for o in other["only_a"]} == names_a - names_e
    assert {o["name"] for o in other["only_b"]} == names_e - names_a
    assert {o["name"] for o in other["ops"]} == names_a & names_e
    # ...and it says so: a ratio of two networks is no speed change (tryout 17 diffed cnn against PP-OCR: x163.6)
    assert same["same_model"] and same["warnings"] == []
    assert not other["same_model"] and "different models" in other["warnings"][0]
    assert cli.main(["runs", "diff", str(a["run_id"]), str(e["run_id"])]) == 0
    assert "warning: runs" in capsys.readouterr().err


def test_diff_of_a_failed_run_exits_1_saying_it_failed(store, samples, tmp_path, capsys):
    from test_profile_cli import _shape_error_model
    a = profile(capsys, samples / "cnn.mnn")
    bad = _shape_error_model(tmp_path)  # fails in the runner: recorded with its error
    assert cli.main(["profile", str(bad), "--json"]) == 1
    capsys.readouterr()
    failed = RunStore().list_runs(kind="profile")[0]
    assert failed["id"] != a["run_id"]
    rc, out = run_json(capsys, "runs", "diff", str(a["run_id"]), str(failed["id"]))
    assert rc == 1 and f"run {failed['id']} failed" in out["error"]["message"]


def test_a_compare_diff_names_a_change_of_tolerance_and_counts_a_fix_after_it(store, samples, capsys):
    """Two runs judged with different tolerances read "b/a 1" and nothing else while one passed and one failed; two
    fix runs read "0.102 -> 0.102", their figures before the fix (helper 107)."""
    model = str(samples / "cnn.onnx")
    rc, one = run_json(capsys, "compare", model, "--modes", "int8w")
    assert rc == 0
    rc, two = run_json(capsys, "compare", model, "--modes", "int8w", "--metric", "rel_l2:1e-6")
    assert rc == 1 and two["fix"]["possible"]
    rc, d = run_json(capsys, "runs", "diff", str(one["run_id"]), str(two["run_id"]))
    was, now = d["settings_changed"]["tolerance"]
    assert was is None and now["metric"] == "rel_l2" and now["threshold"] == 1e-6
    assert cli.main(["runs", "diff", str(one["run_id"]), str(two["run_id"])]) == 0
    assert ("setting tolerance: each mode's default -> rel_l2 <= 1e-06, atol 1e-05 for tiny references"
            in capsys.readouterr().out)
    (m,) = d["modes"]
    assert (m["verdict_a"], m["verdict_b"]) == ("match", "wrong") and m["rel_l2_a"] == m["rel_l2_b"]
    assert not m["fixed_a"] and not m["fixed_b"]
    keep = two["fix"]["skip_ops"][:1]
    rc, three = run_json(capsys, "compare", model, "--modes", "int8w", "--metric", "rel_l2:1e-6", "--fix-keep",
                         ",".join(keep))
    after = max(o["rel_l2"] for o in three["fix"]["after"]["outputs"])
    rc, d = run_json(capsys, "runs", "diff", str(two["run_id"]), str(three["run_id"]))
    (m,) = d["modes"]
    assert m["fixed_b"] and not m["fixed_a"] and m["rel_l2_b"] == pytest.approx(after) != m["rel_l2_a"]
    assert d["settings_changed"]["keep_float"] == ["none", keep]
    assert cli.main(["runs", "diff", str(two["run_id"]), str(three["run_id"])]) == 0
    assert "(b after its fix), wrong" in capsys.readouterr().out


def test_a_compare_diff_names_the_conversion_the_modes_started_from(store, samples, tmp_path, capsys):
    """Helper 109 diffed two comparisons of int8 whose whole difference was a calibration folder: the per-mode table
    said 0.302 -> 0.51 and no setting had changed (a diff of two profiles says it). Compare runs record the conversion
    settings they start from, where these are not the defaults."""
    model = str(samples / "cnn.onnx")
    folder = tmp_path / "calib"
    folder.mkdir()
    import numpy as np
    for k in range(2):
        np.save(folder / f"x{k}.npy", np.random.default_rng(k).random((1, 3, 32, 32), dtype=np.float32))
    (tmp_path / "s.json").write_text(json.dumps({"int8": {"calib_dir": str(folder)}}))
    rc, one = run_json(capsys, "compare", model, "--modes", "int8", "--no-fix", "--time-runs", "0")
    rc, two = run_json(capsys, "compare", model, "--modes", "int8", "--no-fix", "--time-runs", "0",
                       "--convert-settings", str(tmp_path / "s.json"))
    assert "convert_settings" not in store.get_run(one["run_id"])["settings"]  # the defaults: nothing to record
    rc, d = run_json(capsys, "runs", "diff", str(one["run_id"]), str(two["run_id"]))
    was, now = d["settings_changed"]["convert_settings"]
    assert was is None and now["int8"]["calib_dir"] == str(folder)
    assert cli.main(["runs", "diff", str(one["run_id"]), str(two["run_id"])]) == 0
    assert "setting convert_settings: defaults -> int8 (KL/MAX_ABS, calib_dir)" in capsys.readouterr().out


def test_diff_compare_runs_per_mode_and_kind_mismatch(store, samples, tmp_path, capsys):
    rc, one = run_json(capsys, "compare", str(samples / "cnn.onnx"), "--modes", "fp32")
    rc, two = run_json(capsys, "compare", str(samples / "cnn.onnx"), "--modes", "fp32,fp16w")
    rc, d = run_json(capsys, "runs", "diff", str(one["run_id"]), str(two["run_id"]))
    assert rc == 0 and d["kind"] == "compare"
    worst = {m["mode"]: max(o["rel_l2"] for o in m["outputs"]) for m in two["modes"]}
    rows = {m["mode"]: m for m in d["modes"]}
    assert set(rows) == {"fp32", "fp16w"}
    assert rows["fp32"]["rel_l2_a"] == pytest.approx(max(o["rel_l2"] for o in one["modes"][0]["outputs"]))
    assert rows["fp32"]["rel_l2_b"] == pytest.approx(worst["fp32"])
    assert rows["fp16w"]["in_a"] is False and rows["fp16w"]["rel_l2_b"] == pytest.approx(worst["fp16w"])
    rc, listed = run_json(capsys, "runs", "--kind", "compare")
    assert listed["runs"][0]["headline"]["worst_rel_l2"]["fp16w"] == pytest.approx(worst["fp16w"])

    p = profile(capsys, samples / "cnn.mnn")
    rc, err = run_json(capsys, "runs", "diff", str(p["run_id"]), str(one["run_id"]))
    assert rc == 2 and err["error"]["kind"] == "usage" and "same kind" in err["error"]["message"]
    rc, conv = run_json(capsys, "convert", str(samples / "cnn.onnx"), "-o", str(tmp_path / "c.mnn"))
    rc, d = run_json(capsys, "runs", "diff", str(conv["run_id"]), str(conv["run_id"]))  # conversions: their files
    assert rc == 0 and d["kind"] == "convert" and d["output_a"] == d["output_b"] == str(tmp_path / "c.mnn")
    assert cli.main(["runs", "diff", str(p["run_id"]), "777"]) == 1


def _size(folder) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(folder) for f in fs)


def test_clean_deletes_rows_and_owned_folders_only(store, samples, tmp_path, capsys):
    p1, p2, p3 = (profile(capsys, samples / "cnn.mnn") for _ in range(3))
    rc, conv = run_json(capsys, "convert", str(samples / "cnn.onnx"), "-o", str(tmp_path / "c.mnn"))
    folders = {r["id"]: r["run_dir"] for r in store.list_runs()}
    assert all(store.owns_folder(f) and os.path.isdir(f) for f in folders.values())

    old = time.time() - 30 * DAY
    inside = store.new_run_dir("old")
    (inside / "t.npy").write_bytes(b"x" * 1000)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "keep.npy").write_bytes(b"y" * 500)
    link = store.runs_dir / "link-to-elsewhere"
    link.symlink_to(outside, target_is_directory=True)
    old_inside = store.add_run(kind="profile", run_dir=inside, time_s=old)
    old_outside = store.add_run(kind="compare", run_dir=outside, time_s=old)
    old_link = store.add_run(kind="compare", run_dir=link, time_s=old)
    old_shared = store.add_run(kind="profile", run_dir=folders[p3["run_id"]], time_s=old)  # p3 keeps the folder

    rc, dry = run_json(capsys, "runs", "clean", "--older-than", "7", "--dry-run")
    assert rc == 0 and dry["dry_run"] is True
    assert {r["id"] for r in dry["removed"]} == {old_inside, old_outside, old_link, old_shared}
    assert dry["bytes_freed"] == 1000
    assert len(store.list_runs()) == 8 and (inside / "t.npy").is_file()  # a dry run deletes nothing

    rc, done = run_json(capsys, "runs", "clean", "--older-than", "7")
    assert rc == 0 and done["bytes_freed"] == 1000 and done["kept"] == 4
    assert {r["id"] for r in done["removed"]} == {old_inside, old_outside, old_link, old_shared}
    assert not inside.exists()
    assert (outside / "keep.npy").read_bytes() == b"y" * 500 and link.is_symlink()  # never followed outside
    assert os.path.isdir(folders[p3["run_id"]])  # shared with a run that stays
    assert [r["id"] for r in store.list_runs()] == [conv["run_id"], p3["run_id"], p2["run_id"], p1["run_id"]]

    expected = _size(folders[p1["run_id"]]) + _size(folders[p2["run_id"]])
    rc, kept = run_json(capsys, "runs", "clean", "--kind", "profile", "--keep", "1")
    assert {r["id"] for r in kept["removed"]} == {p1["run_id"], p2["run_id"]}
    assert kept["bytes_freed"] == expected > 0
    assert not os.path.exists(folders[p1["run_id"]]) and not os.path.exists(folders[p2["run_id"]])
    assert os.path.isdir(folders[p3["run_id"]]) and os.path.isdir(folders[conv["run_id"]])
    assert cli.main(["runs", "clean", "--keep", "0", "--model", str(samples / "cnn.onnx")]) == 0
    assert "removed 1 run(s)" in capsys.readouterr().out
    assert not os.path.exists(folders[conv["run_id"]])
    assert [r["id"] for r in store.list_runs()] == [p3["run_id"]]


def test_clean_usage_errors(store, capsys):
    assert cli.main(["runs", "clean"]) == 2  # never empties the store by default
    assert cli.main(["runs", "clean", "--keep", "-1"]) == 2
    assert cli.main(["runs", "clean", "--older-than", "-3"]) == 2
    rc, err = run_json(capsys, "runs", "clean")
    assert rc == 2 and "--older-than" in err["error"]["message"]
    assert cli.main(["runs", "--keep", "3"]) == 2  # clean's flags are not list's
    assert "mnnscope runs: error: " in capsys.readouterr().err


def test_store_owns_only_real_folders_inside_its_runs_dir(store, tmp_path):
    inside = store.new_run_dir("x")
    assert store.owns_folder(inside) and store.owns_folder(str(inside))
    assert not store.owns_folder(store.runs_dir)
    assert not store.owns_folder(store.runs_dir / ".." / "runs")
    assert not store.owns_folder(inside / ".." / ".." / "elsewhere")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert not store.owns_folder(outside)
    link = store.runs_dir / "link"
    link.symlink_to(outside, target_is_directory=True)
    assert not store.owns_folder(link)
    nested = tmp_path / "elsewhere" / "deep"
    nested.mkdir()
    assert not store.owns_folder(link / "deep")  # a symlinked parent leads outside too
    assert not store.owns_folder(os.path.relpath(inside)) and not store.owns_folder(None)
    assert not store.owns_folder(store.runs_dir / "gone")
    rid = store.add_run(kind="profile", run_dir=inside)
    store.add_run(kind="profile")
    assert store.run_dirs() == {rid: str(inside)}


def test_diff_two_generate_runs_side_by_side(store, samples, capsys):
    """Two generations of one LLM at two weight precisions: the diff sets their figures side by side and says how
    many tokens agree from the start (the Runs dock greyed Compare for generate runs: helper 105's try)."""
    runs = {}
    for mode in ("int8w", "int4w"):
        rc, runs[mode] = run_json(capsys, "generate", str(samples / "moe_llm.onnx"), "--text", "the cat sat on the",
                                  "--steps", "6", "--engine", "mnn", "--mode", mode, "--compare")
        assert rc == 0, runs[mode]
    a, b = runs["int8w"], runs["int4w"]
    rc, d = run_json(capsys, "runs", "diff", str(a["run_id"]), str(b["run_id"]))
    assert rc == 0 and d["kind"] == "generate", d
    rows = {r["what"]: r for r in d["rows"]}
    assert (rows["mode"]["a"], rows["mode"]["b"]) == ("int8w", "int4w")
    assert rows["tokens"]["a"] == len(a["tokens"]) and rows["top-1 agreement"]["b"] == b["agreement_top1"]
    assert rows["max KL"]["b"] == pytest.approx(max(b["kl_per_step"]))
    same = next((i for i, (x, y) in enumerate(zip(a["tokens"], b["tokens"])) if x != y),
                min(len(a["tokens"]), len(b["tokens"])))
    assert d["same_tokens"] == same and d["tokens"] == max(len(a["tokens"]), len(b["tokens"]))
    assert cli.main(["runs", "diff", str(a["run_id"]), str(b["run_id"])]) == 0
    text = capsys.readouterr().out
    assert "mode                 int8w -> int4w" in text and f"agree for the first {same} of" in text, text
