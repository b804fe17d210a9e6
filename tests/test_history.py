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
    # the file it wrote: three conversions of one model read "ok 5.8 MB" alike (helper 120)
    assert headline_text(rc).startswith("ok ") and headline_text(rc).endswith("\u2192 cnn.mnn"), headline_text(rc)
    with pytest.raises(ValueError, match="same kind"):
        diff_runs(ra, rc)


def test_profiles_of_one_onnx_on_two_engines_diff_by_onnx_node(store, samples, capsys):
    """MNN names its ops after its own (fused) ops, ONNX Runtime after the ONNX nodes: by op name the two profiles
    of one .onnx share nothing (a tester's Runs-dock diff listed every op as 'only in a' or 'only in b'). Both are
    placed on the ONNX nodes (MNN's through its conversion's node map) and diffed node by node; the dock and the CLI
    agree, and the overlay is keyed by the nodes."""
    from mnnscope.inspector.formats.onnx import load_onnx
    from mnnscope.inspector.history import diff_profiles
    onnx = samples / "cnn.onnx"
    a = _json(capsys, "profile", str(onnx), "--engine", "mnn", "--runs", "2")
    b = _json(capsys, "profile", str(onnx), "--engine", "ort", "--runs", "2")
    ra, rb = store.get_run(a["run_id"]), store.get_run(b["run_id"])
    assert not diff_profiles(ra, rb)["ops"]  # by name: nothing in common
    d = diff_runs(ra, rb)
    assert d["matched_by"] == "onnx_node" and d["placed_a"] > 0.9 and d["placed_b"] > 0
    # ONNX Runtime times nodes of its own (the NCHWc reorders its optimizer inserts) that no ONNX node owns: their
    # share of a 2-run profile swings with the machine's load (12% in a CI run of 2026-12-03, 75% in one of
    # 2026-12-04), so what is checked is that they are the only ones left unplaced
    from mnnscope.inspector.model.table import GraphTable
    from mnnscope.inspector.profile.placement import place
    table = GraphTable.from_graph(load_onnx(onnx))
    onnx_names = set(table.ids) | {n for n in table.names if n} | set(table.tensor_names)
    left = [u["name"] for u in place({"ops": rb["ops"]}, table, None).unplaced]
    assert not any(n in onnx_names or any(n.startswith(t + "_") for t in table.tensor_names) for n in left), left
    nodes = {n for n, data in load_onnx(onnx).g.nodes(data=True) if data["op_type"] == "Conv"}
    both = {c["node"] for c in d["ops"]}
    assert nodes <= both, (nodes, both)  # every Conv timed on both engines, side by side
    assert all(c["ms_a"] > 0 and c["ms_b"] > 0 for c in d["ops"])
    assert set(op_deltas(d)) >= nodes
    assert json.loads(json.dumps(d)) == _json(capsys, "runs", "diff", str(a["run_id"]), str(b["run_id"]))
    assert cli.main(["runs", "diff", str(a["run_id"]), str(b["run_id"])]) == 0
    assert "matched by ONNX node" in capsys.readouterr().out


def test_a_statistics_pass_is_its_own_kind_of_run(store, samples, capsys):
    """Tryouts 10 and 11: a Statistics run was listed as a "profile" (its times include reading every tensor back)
    and diffed against a real profile as '1.38x slower'. It is a "stats" run: listed as such, diffed only with
    another statistics pass."""
    p = _json(capsys, "profile", str(samples / "cnn.mnn"), "--runs", "2")
    s1 = _json(capsys, "profile", str(samples / "cnn.mnn"), "--runs", "2", "--stats")
    s2 = _json(capsys, "profile", str(samples / "cnn.mnn"), "--runs", "2", "--stats")
    rp, r1, r2 = (store.get_run(r["run_id"]) for r in (p, s1, s2))
    assert rp["kind"] == "profile" and r1["kind"] == r2["kind"] == "stats"
    assert headline_text(r1).endswith(" ms") and "stats=True" in settings_text(r1)
    with pytest.raises(ValueError, match="same kind"):
        diff_runs(rp, r1)
    d = diff_runs(r1, r2)
    assert d["ops"] and d["total_ms_a"] == s1["total_ms"]
    assert [r["id"] for r in store.list_runs(kind="stats")] == [r2["id"], r1["id"]]


def test_a_configuration_comparisons_settings_read_as_configurations():
    """Tryout 11: the Runs dock's Settings column and its diff header showed "configs: [{'backend': 'CPU', ...}]"."""
    from mnnscope.inspector.history import value_text
    configs = [{"backend": "CPU", "precision": "high", "memory": "normal", "threads": 1},
               {"backend": "CPU", "precision": "high", "memory": "normal", "threads": 4}]
    run = {"kind": "compare", "settings": {"configs": configs, "tolerance": None}}
    assert settings_text(run) == "configs=CPU/high/normal/1t vs CPU/high/normal/4t"
    assert value_text(configs[:1]) == "CPU/high/normal/1t" and value_text([1, 2]) == "1,2"
    assert value_text({"atol": 1e-5}) == "atol=1e-05"


def test_a_close_mode_is_not_listed_as_failed():
    """Tryout 12: the Runs dock read "FAILED fp32 rel_l2 9.39e-05" for a comparison the Compare dock called close
    (over tolerance only through known approximations)."""
    def mode(name, ok, verdict, rel):
        return {"mode": name, "ok": ok, "verdict": verdict,
                "outputs": [{"name": "y", "matched": True, "rel_l2": rel, "within": ok}]}
    run = {"kind": "compare", "settings": {}, "summary": {"ok": False, "modes": [
        mode("fp32", False, "close", 9.39e-05), mode("int8w", False, "wrong", 0.142), mode("low", True, "match", 0.0)]}}
    assert headline_text(run) == "FAILED int8w rel_l2 0.142; close fp32 rel_l2 9.39e-05; passed low rel_l2 0"


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


def test_an_mnn_is_linked_to_the_onnx_a_recorded_conversion_made_it_from(store, samples, tmp_path, shared_runner):
    """Helper 113 opened the int8w .mnn it had made and read none of the .onnx's runs under "This model and its other
    versions", nor their inputs under Restore from run. A recorded conversion links its output to its source."""
    from mnnscope.inspector.convert.service import run_convert
    onnx = tmp_path / "net.onnx"
    onnx.write_bytes((samples / "cnn.onnx").read_bytes())
    mnn = tmp_path / "out" / "net.int8w.mnn"
    mnn.parent.mkdir()
    profiled = store.add_run(kind="profile", model_path=str(onnx), settings={"shapes": {"input": [1, 3, 32, 32]}})
    assert store.converted_from(mnn) is None
    result = run_convert(str(onnx), str(mnn), client=shared_runner, store=store, cache=False)
    assert result.ok and mnn.is_file()
    assert store.converted_from(mnn) == str(onnx.resolve())
    own = store.add_run(kind="profile", model_path=str(mnn))
    assert [r["id"] for r in store.lineage_runs(mnn)] == [own, result.run_id, profiled]
    assert [r["id"] for r in store.lineage_runs(mnn, kind="profile")] == [own, profiled]
    assert store.converted_from(samples / "cnn.mnn") is None  # a file no recorded conversion wrote


def test_compare_runs_say_which_modes_failed_and_a_fix_run_what_it_kept(store, tmp_path, shared_runner):
    """A real comparison where fp32 passes and 8-bit weights fail, then the Compare dock's fix (the same mode with
    the plan's ops kept in float, as gui/panels/compare.py asks it): each run's history line says what it was."""
    from test_compare_blame import build_reversed

    from mnnscope.inspector.compare.metrics import worst_output_error
    from mnnscope.inspector.compare.options import CompareOptions
    from mnnscope.inspector.compare.service import compare_model
    from mnnscope.inspector.history import headline, num

    onnx = str(build_reversed(tmp_path / "reversed.onnx"))
    first = compare_model(onnx, CompareOptions(modes=["fp32", "int8w"]), client=shared_runner, store=store)
    worst = {m["mode"]: worst_output_error(m["outputs"]) for m in first["modes"]}
    int8w = next(m for m in first["modes"] if m["mode"] == "int8w")
    assert not first["ok"] and not int8w["ok"] and next(m for m in first["modes"] if m["mode"] == "fp32")["ok"]
    text = headline_text(store.get_run(first["run_id"]))
    # not "FAILED fp32 ..., int8w ...": fp32 passed
    assert text.startswith(f"FAILED int8w rel_l2 {num(worst['int8w'])}; passed fp32 rel_l2 {num(worst['fp32'])}"), text

    keep = int8w["fix_plan"]["skip_ops"]
    assert keep
    fixed = compare_model(onnx, CompareOptions(modes=["int8w"], fix=True, fix_skip_ops=keep), client=shared_runner,
                          store=store)
    fix = fixed["fix"]
    assert fix["possible"] and fix["skip_ops"] == keep and fix["after"]["ok"]
    before, after = worst_output_error(fix["before"]["outputs"]), worst_output_error(fix["after"]["outputs"])
    assert after < before
    run = store.get_run(fixed["run_id"])
    # the fix, not "FAILED int8w rel_l2 <the error before it>"
    assert headline_text(run) == (f"fix int8w: kept {', '.join(keep)} in float: worst rel_l2 {num(before)} -> "
                                  f"{num(after)}, passed")
    h = headline(run)
    assert h["fix_run"] and h["fix"]["keep_float"] == keep and h["fix"]["ok_after"] is True
    assert h["fix"]["before"] == pytest.approx(before) and h["fix"]["after"] == pytest.approx(after)
    assert "keep_float=" + ",".join(keep) in settings_text(run)
    # the Runs dock's Repeat of the fix run is the fix again (it reran a plain comparison)
    from mnnscope.gui.panels.runs import _repeat_compare
    again = _repeat_compare(dict(run, model_path=onnx))(shared_runner, None, None)
    assert again["fix"]["skip_ops"] == keep and headline(store.get_run(again["run_id"]))["fix_run"]
    # the first comparison ran the same fix after its modes (compare's default): said after them
    assert text.endswith(f"; fix int8w: kept {', '.join(first['fix']['skip_ops'])} in float: worst rel_l2 "
                         f"{num(worst['int8w'])} -> {num(worst_output_error(first['fix']['after']['outputs']))}, "
                         f"{'passed' if first['fix']['after']['ok'] else 'still FAILED'}"), text


def test_a_profile_with_whole_run_times_only_is_diffed_by_its_totals(store, capsys):
    """arabic-name-romanizer's BiGRU encoder: MNN times the converted model only as a whole (the converter turns each
    GRU into a While loop), ONNX Runtime op by op. The diff compared every ORT op with nothing: "27 only in b", the
    graph red as "slower" under a total that fell x0.46 (tryout 14). Now: the totals, which run lacks per-op times, no
    per-op rows and no overlay values; and the profile says which setting gives MNN's per-op times."""
    from test_real_models import real_model
    onnx = real_model("arabic_name_romanizer", "resources/encoder.onnx")
    a = _json(capsys, "profile", str(onnx), "--engine", "mnn", "--runs", "2")
    assert a["timing"] == "total_only"
    assert any("2 GRU" in w and "origin_rnn" in w for w in a["warnings"]), a["warnings"]
    b = _json(capsys, "profile", str(onnx), "--engine", "ort", "--runs", "2")
    d = diff_runs(store.get_run(a["run_id"]), store.get_run(b["run_id"]))
    assert d["whole_run_only"] == ["a"] and not d["ops"] and not d["only_a"] and not d["only_b"]
    assert op_deltas(d) == {} and d["total_ratio"] == pytest.approx(d["total_ms_b"] / d["total_ms_a"])
    assert cli.main(["runs", "diff", str(a["run_id"]), str(b["run_id"])]) == 0
    out = capsys.readouterr().out
    assert f"run {a['run_id']} has whole-run times only" in out and "only in b" not in out


def test_two_mnn_conversions_of_one_onnx_are_painted_on_their_onnx_nodes(store, samples, tmp_path, capsys):
    """PP-OCRv6 det int8 against fp32, both MNN profiles of the .onnx: by MNN op name the fused "Add.1" (Conv.0 +
    Add.0) was painted on ONNX Add.0 and Conv.0 had nothing (tryout 15). The rows stay MNN's ops; the colours are
    each run's times placed on the ONNX nodes through its conversion's node map, as the Profile dock places them."""
    from mnnscope.inspector.formats.onnx import load_onnx
    onnx = samples / "cnn.onnx"
    settings = tmp_path / "w8.json"
    settings.write_text(json.dumps({"weight_quant_bits": 8}))
    a = _json(capsys, "profile", str(onnx), "--engine", "mnn", "--runs", "2")
    b = _json(capsys, "profile", str(onnx), "--engine", "mnn", "--runs", "2", "--convert-settings", str(settings))
    d = diff_runs(store.get_run(a["run_id"]), store.get_run(b["run_id"]))
    assert d["matched_by"] == "op_name" and d["ops"]  # the rows: MNN's ops, by name
    deltas = op_deltas(d)
    nodes = {n for n, data in load_onnx(onnx).g.nodes(data=True)}
    assert deltas and set(deltas) <= nodes  # keyed by ONNX node ids
    assert "/conv1/Conv" in deltas  # the fused Conv+BN+Relu's time on its Conv
    assert d["placed_a"] > 0.9 and d["placed_b"] > 0.9
    # the overlay says it is per ONNX node (the rows are per MNN op: helper 109 read two deltas for one op)
    from mnnscope.inspector.history import deltas_title
    assert deltas_title(d) == f"\u0394 ms per ONNX node, run {a['run_id']} \u2192 run {b['run_id']}"
    assert deltas_title(dict(d, node_deltas=None)) == f"\u0394 ms, run {a['run_id']} \u2192 run {b['run_id']}"
    assert json.loads(json.dumps(d)) == _json(capsys, "runs", "diff", str(a["run_id"]), str(b["run_id"]))


def test_changed_conversion_settings_read_as_what_differs_from_the_defaults():
    """A Runs diff's "changed:" line printed the conversion settings as a raw dict of every field, running off the
    screen (tryout 15)."""
    from mnnscope.inspector.convert.settings import ConvertSettings, Int8Settings
    from mnnscope.inspector.history import setting_text
    s = ConvertSettings(int8=Int8Settings(feature_method="EMA", calib_dir="/data/images", width=64, height=64))
    text = setting_text("convert_settings", s.to_json())
    assert text == "int8 (EMA/MAX_ABS, calib_dir, 64x64)" or text.startswith("int8 (EMA/MAX_ABS"), text
    assert "fp16=False" not in text and "64x64" in text
    assert setting_text("convert_settings", None) == "defaults" == setting_text("convert_settings", {})
    assert setting_text("threads", 2) == "2"
    assert setting_text("weight_quant_block", None) == "unset"  # it read "32 -> None"


def test_a_totals_ratio_in_words():
    from mnnscope.inspector.history import ratio_words
    assert ratio_words(0.857) == "b 1.17x faster" and ratio_words(2.0) == "b 2.00x slower"
    assert ratio_words(1.01) == "about the same" and ratio_words(None) == ""


def test_a_modes_time_before_and_after_says_slower_faster_or_noise():
    """Reconvert and re-run's (and runs diff's) time of a compared mode: the ratio in words, and run-to-run noise where
    the two runs' timed ranges overlap ("b 1.06x faster" on a 17 us run was noise: tryout 20)."""
    from mnnscope.inspector.history import diff_compares, mode_time_text

    def run(ms, lo, hi):
        return {"summary": {"modes": [{"mode": "fp32", "outputs": [], "timing": {"ms": ms, "ms_min": lo,
                                                                                 "ms_max": hi}}]}}
    (slower,) = diff_compares(run(7.52, 7.4, 7.7), run(16.9, 16.5, 17.3))["modes"]
    assert mode_time_text(slower) == ", MNN 7.52 -> 16.9 ms per run (2.25x slower)"
    (noise,) = diff_compares(run(0.0179, 0.0170, 0.0200), run(0.0169, 0.0160, 0.0185))["modes"]
    assert noise["ms_within_noise"] and mode_time_text(noise).endswith("(within run-to-run noise)")
    # under compare's floor (1 ms) reruns of one file move more than their own ranges say (cnn fp32: 0.044, 0.044,
    # 0.065 ms): noise too, as the Compare dock's headline says (one rule, compare.errormap.within_noise)
    (tiny,) = diff_compares(run(0.044, 0.043, 0.045), run(0.065, 0.063, 0.068))["modes"]
    assert tiny["ms_within_noise"] and mode_time_text(tiny).endswith("(within run-to-run noise)")
    (untimed,) = diff_compares(run(None, None, None), run(1.0, 1.0, 1.0))["modes"]
    assert mode_time_text(untimed) == ""


def test_a_settings_line_leaves_out_what_is_not_set():
    """An input spec read "input_spec=seed=0,shapes=,files=,text=None,..." in the Runs dock (helpers 107, 108)."""
    run = {"kind": "compare", "settings": {"modes": ["fp32"], "input_spec": {"seed": 0, "shapes": {}, "files": {},
                                                                             "text": None, "tokenizer": None}}}
    assert settings_text(run) == "modes=fp32 input_spec=seed=0"


def test_two_checks_of_converted_files_diff_by_file_size_and_the_settings_that_made_them(store, samples, tmp_path,
                                                                                         capsys):
    """Helper 120 diffed two checks, "checked rec_int8_b32.mnn as int8w" and "checked rec_int8_perch.mnn as int8w":
    the table read "fp32", the change only the two paths (not block 32 against none), no sizes; and two conversions
    selected could not be compared at all."""
    onnx = str(samples / "cnn.onnx")
    a, b = tmp_path / "cnn_b32.mnn", tmp_path / "cnn_perch.mnn"
    ca = _json(capsys, "convert", onnx, "-o", str(a), "--weight-quant-bits", "8", "--weight-quant-block", "32")
    cb = _json(capsys, "convert", onnx, "-o", str(b), "--weight-quant-bits", "8")
    ka = _json(capsys, "compare", onnx, "--mnn", str(a))
    kb = _json(capsys, "compare", onnx, "--mnn", str(b))
    d = _json(capsys, "runs", "diff", str(ka["run_id"]), str(kb["run_id"]))
    (m,) = d["modes"]
    assert (m["label_a"], m["label_b"]) == ("cnn_b32.mnn as int8w", "cnn_perch.mnn as int8w"), m
    assert (m["size_a"], m["size_b"]) == (a.stat().st_size, b.stat().st_size)
    made = d["settings_changed"]["made with"]
    assert "weight_quant_block=32" in made[0].replace(" ", "") and "block" not in made[1], made
    assert cli.main(["runs", "diff", str(ka["run_id"]), str(kb["run_id"])]) == 0
    text = capsys.readouterr().out
    assert "cnn_b32.mnn as int8w -> cnn_perch.mnn as int8w" in text and "setting made with:" in text, text
    # two conversions: the files and their sizes
    d = _json(capsys, "runs", "diff", str(ca["run_id"]), str(cb["run_id"]))
    assert d["kind"] == "convert" and (d["output_a"], d["output_b"]) == (str(a), str(b))
    assert d["size_ratio"] == pytest.approx(b.stat().st_size / a.stat().st_size)
    assert "weight_quant_block" in d["settings_changed"]
