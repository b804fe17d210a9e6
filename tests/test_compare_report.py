"""What a comparison records so that it can be run again, and what its figures can and cannot say (new users of the
Compare dock, 2026-12): the report named the inputs only by shape ("prefix int64[1, 8], memory float32[1, 8, 256]"),
not where their data came from, nor how each mode was converted, nor the keep-in-float fix; a fix that turned FAIL into
pass on a small change of rel L2 did not show the figure the tolerance judges (max abs error against its limit); and
times under a millisecond, which move between reruns more than modes differ, read as a ranking. Real MNN and ONNX
Runtime runs (the bundled samples, the romanizer's decoder)."""
from __future__ import annotations

import html as htmllib
import json
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np

from mnnscope.inspector.cli.app import main
from mnnscope.inspector.compare import errormap, service, verdict
from mnnscope.inspector.compare.errormap import mode_headline
from mnnscope.inspector.compare.options import CompareOptions
from mnnscope.inspector.formats.loader import load_model
from mnnscope.inspector.inputs.data import make_inputs

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "resources" / "samples"


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def _worst(result: dict) -> dict:
    return {m["mode"]: [o["rel_l2"] for o in m["outputs"]] for m in result["modes"]}


def _rerun(argv: list[str], cwd: Path) -> dict:
    """A command line as a colleague runs it: its own process, in the folder that holds the settings file."""
    assert argv[:2] == ["mnnscope", "compare"]
    r = subprocess.run([sys.executable, "-m", "mnnscope.gui.main", *argv[1:], "--json"], cwd=cwd,
                       capture_output=True, text=True, timeout=900)
    assert r.stdout.strip(), r.stderr[-2000:]
    return json.loads(r.stdout)


def test_the_report_says_where_the_inputs_came_from_how_each_mode_converted_and_how_to_run_it_again(capsys, tmp_path):
    """cnn.onnx on a .npy input, with conversion settings of the user's, a tolerance of theirs and full int8: the report
    lists each input's source, each mode's conversion (its flags; int8's calibration data), the keep-in-float fix, and
    a command line that, run in a folder of its own with the settings file it names, gives the same figures."""
    settings = tmp_path / "mine.json"
    settings.write_text(json.dumps({"optimize_level": 2, "convert_matmul_to_conv": False}))
    data = tmp_path / "x.npy"
    np.save(data, np.random.default_rng(5).standard_normal((1, 3, 32, 32)).astype(np.float32))
    report = tmp_path / "r.html"
    main(["compare", str(SAMPLES / "cnn.onnx"), "--modes", "fp32,fp16w,int8", "--convert-settings", str(settings),
          "--input", f"input={data}", "--seed", "3", "--atol", "1e-4", "--rtol", "1e-3", "--report", str(report),
          "--json"])
    out = _json(capsys)
    assert out["input_sources"] == [{"name": "input", "kind": "file", "path": str(data), "text": f"file {data}"}]
    rep = out["reproduce"]
    assert rep["argv"] == ["mnnscope", "compare", str(SAMPLES / "cnn.onnx"), "--modes", "fp32,fp16w,int8",
                           "--convert-settings", "convert-settings.json", "--atol", "0.0001", "--rtol", "0.001",
                           "--seed", "3", "--input", f"input={data}"]
    assert rep["command"] == shlex.join(rep["argv"]) and rep["not_carried"] == []
    assert rep["convert_settings"]["optimize_level"] == 2 and rep["convert_settings"]["convert_matmul_to_conv"] is False
    fix = out["fix"]
    assert fix["mode"] == "int8" and fix["possible"]
    assert fix["command"] == shlex.join(rep["argv"][:3] + ["--modes", "int8"] + rep["argv"][5:11]
                                        + ["--fix-keep", ",".join(fix["skip_ops"])] + rep["argv"][11:])

    html = report.read_text(encoding="utf-8")
    assert f"<td class='mono'>input</td><td>float32[1, 3, 32, 32]</td><td>file {data}</td>" in html
    assert "Inputs: input float32[1, 3, 32, 32]" not in html  # (the shape alone: what could not be rerun)
    # each mode's conversion: what differs from the defaults, the converter's flags, int8's calibration data
    assert "fp16=True, optimize_level=2, convert_matmul_to_conv=False" in html
    assert "--fp16 --optimizeLevel 2 --convertMatmulToConv 0 --dumpPass" in html
    assert "--optimizeLevel 2 --convertMatmulToConv 0 --dumpPass; then mnnquant" in html
    assert ("full int8, calibrated on the compared input and 4 random samples of its shapes, seeds 4..7 (made by "
            "this comparison) (KL/MAX_ABS, 8 bits)") in html
    assert "which differ from the defaults in: optimize_level=2, convert_matmul_to_conv=False" in html
    # the fix that ran: by its ONNX nodes and MNN ops, before and after, and the command that runs it again
    nodes = ", ".join(e["onnx_node"] for e in fix["onnx_nodes"])
    assert f"Reconverted with {nodes} (MNN ops <span class='mono'>{', '.join(fix['skip_ops'])}</span>) kept" in html
    assert f"<pre class='mono'>{htmllib.escape(fix['command'])}</pre>" in html
    assert f"<pre class='mono'>{htmllib.escape(rep['command'])}</pre>" in html
    assert "&quot;optimize_level&quot;: 2" in html  # the settings file's JSON, to save beside it

    # a colleague's rerun: the settings file written as the report shows it, the command run in its folder
    again = tmp_path / "colleague"
    again.mkdir()
    (again / rep["settings_file"]).write_text(json.dumps(rep["convert_settings"]))
    other = _rerun(rep["argv"], again)
    assert _worst(other) == _worst(out)
    assert other["fix"]["after"]["outputs"] == out["fix"]["after"]["outputs"]


def test_generated_inputs_name_the_rule_that_filled_them():
    """The romanizer decoder's inputs as a comparison makes them by default: ids bounded by the embedding table, a
    padding mask where True masks out filled all False, floats uniform; the report says which (what the user's bug
    report lacked), and what it says is what the arrays hold."""
    from test_real_models import real_model
    decoder = load_model(real_model("arabic_name_romanizer", "resources/decoder.onnx"))
    spec = {"seed": 0}
    arrays = make_inputs(decoder, **spec)
    words = {s["name"]: s for s in service.input_sources(decoder, spec, arrays)}
    assert words["prefix"]["text"] == ("random, seed 0: integers in [0, 160) (the rows of the embedding table it "
                                       "indexes)")
    assert 0 <= arrays["prefix"].min() and arrays["prefix"].max() < 160
    assert words["src_mask"]["text"] == ("filled by rule: all False (True masks out: a Where puts -1e+09 where it is "
                                         "True)")
    assert words["src_mask"]["kind"] == "rule" and not arrays["src_mask"].any()
    assert words["memory"]["text"] == "random, seed 0: uniform in [-1, 1)" and words["hidden"]["range"] == [-1.0, 1.0]
    assert -1 <= arrays["memory"].min() and arrays["memory"].max() < 1
    # a range set in the Inputs dock is said, and the command line says it cannot carry it
    spec = {"seed": 2, "ranges": {"prefix": [5, 9]}}
    arrays = make_inputs(decoder, **spec)
    prefix = service.input_sources(decoder, spec, arrays)[0]
    assert prefix["text"] == "random, seed 2: integers in [5, 9) (a range set for it)"
    assert 5 <= arrays["prefix"].min() and arrays["prefix"].max() < 9
    rep = service.reproduce(str(decoder.path), CompareOptions(modes=["fp32"], fix=False), spec)
    assert rep["argv"][-3:] == ["--no-fix", "--seed", "2"]
    assert rep["not_carried"] == ["input prefix's random values were drawn from [5, 9) (set in the Inputs dock); the "
                                  "command line draws them from the default range"]


def test_text_and_image_inputs_are_named_with_their_files(tmp_path):
    """Text through a tokenizer and an image (mean/std, BGR as the Inputs dock sets them): named with their files; the
    image goes on the command line as --input NAME=FILE with --mean/--std, and BGR, which it cannot say, is noted."""
    from PIL import Image
    llm = load_model(SAMPLES / "moe_llm.onnx")
    spec = {"seed": 0, "text": "hello world", "tokenizer": str(SAMPLES / "tokenizer.json")}
    (ids,) = service.input_sources(llm, spec, make_inputs(llm, **spec))
    assert ids["kind"] == "text"
    assert ids["text"] == f"text 'hello world' through {SAMPLES / 'tokenizer.json'}: its token ids"
    assert service.reproduce(str(SAMPLES / "moe_llm.onnx"), CompareOptions(modes=["fp32"]), spec)["argv"][-4:] == \
        ["--text", "hello world", "--tokenizer", str(SAMPLES / "tokenizer.json")]
    picture = tmp_path / "p.png"
    Image.fromarray(np.random.default_rng(1).integers(0, 255, (40, 50, 3), dtype=np.uint8)).save(picture)
    cnn = load_model(SAMPLES / "cnn.onnx")
    spec = {"seed": 0, "image": {"path": str(picture), "input": "input", "mean": [0.5, 0.5, 0.5], "std": [0.25],
                                 "bgr": True}}
    (image,) = service.input_sources(cnn, spec, make_inputs(cnn, **spec))
    assert image["text"] == f"image {picture} (resized to the input's size, mean 0.5,0.5,0.5, std 0.25, BGR)"
    rep = service.reproduce(str(SAMPLES / "cnn.onnx"), CompareOptions(modes=["fp32"], fix=False), spec)
    assert rep["argv"][-7:] == ["--no-fix", "--input", f"input={picture}", "--mean", "0.5,0.5,0.5", "--std", "0.25"]
    assert rep["not_carried"] == ["the image was fed in BGR order (the Inputs dock's BGR); the command line feeds RGB"]


def test_a_fix_that_flips_the_verdict_shows_the_figure_the_tolerance_judges(capsys, tmp_path):
    """The romanizer decoder in int4w: keeping three Gemms in float turns FAIL into pass. The verdict is on max abs
    error against 0.001 + 0.2 x max|reference| per output, not on the worst rel L2 the line shows; the fix's JSON
    gives that figure before and after against its limit, and the command that runs the fix again."""
    from test_real_models import real_model
    onnx = real_model("arabic_name_romanizer", "resources/decoder.onnx")
    main(["compare", str(onnx), "--modes", "int4w", "--json"])
    out = _json(capsys)
    fix, mode = out["fix"], out["modes"][0]
    judged = fix["judged"]
    assert not fix["before"]["ok"] and fix["after"]["ok"] and judged["flipped"]
    assert judged["rule"] == mode["tolerance"]["rule"] == "max abs error <= 0.001 + 0.2 x max|reference|"
    row = verdict.decisive(judged)
    before = {o["name"]: o for o in fix["before"]["outputs"]}[row["output"]]
    after = {o["name"]: o for o in fix["after"]["outputs"]}[row["output"]]
    limit = 0.001 + 0.2 * before["ref_max_abs"]
    assert row["figure"] == "max abs error" and row["flipped"] and abs(row["limit"] - limit) < 1e-12
    assert (row["before"], row["after"]) == (before["max_abs"], after["max_abs"])
    assert row["before"] > row["limit"] >= row["after"] and not before["within"] and after["within"]
    assert judged["text"] == (f"{row['output']}: max abs error {row['before']:.3g} -> {row['after']:.3g} against its "
                              f"limit {limit:.3g} (0.001 + 0.2 x max|reference| {before['ref_max_abs']:.3g})")
    assert verdict.judged_cell(row, "before") == f"{row['output']}: max abs error {row['before']:.3g} > {limit:.3g}"
    # the outputs that stayed within are listed too, unflipped
    assert all(not r["flipped"] and r["within_before"] for r in judged["outputs"] if r is not row)
    # the CLI's text says it too, under the rel L2 line
    from mnnscope.inspector.cli.compare_cmd import print_text
    print_text(out, 5)
    assert f"    the tolerance judges {judged['text']}" in capsys.readouterr().out
    # the command that runs this fix again gives the same after
    again = _rerun(shlex.split(fix["command"]), tmp_path)
    assert again["fix"]["after"]["outputs"] == fix["after"]["outputs"] and again["fix"]["judged"] == judged


def test_times_under_the_floor_are_no_ranking(capsys, tmp_path):
    """cnn.onnx's modes run in a few hundredths of a millisecond, and one model's median moves between reruns by more
    than its modes differ: each timing says it is under the floor and which modes it cannot be told from, the
    headline says so, and the report ranks no mode by time."""
    report = tmp_path / "r.html"
    main(["compare", str(SAMPLES / "cnn.onnx"), "--modes", "fp32,low,int8w", "--no-fix", "--report", str(report),
          "--json"])
    out = _json(capsys)
    for m in out["modes"]:
        t = m["timing"]
        assert t["ms"] < 1.0 and t["below_floor"] and t["noise_floor_ms"] == 1.0
        assert sorted(t["within_noise_of"]) == sorted(o["mode"] for o in out["modes"] if o is not m)
        assert mode_headline(m).endswith(f"MNN {t['ms']:.4g} ms per run (under 1 ms per run, timings are noise: "
                                         "reruns vary more than modes differ)")
    (group,) = errormap.speed_groups(out["modes"])
    assert [m["mode"] for m in group] == ["fp32", "low", "int8w"]  # the comparison's order, not the times'
    text = errormap.speed_text(out["modes"])
    assert text.endswith("all under 1 ms, where the same model's time moves between reruns by more than modes "
                         "differ: no mode is faster than another here")
    html = report.read_text(encoding="utf-8")
    assert htmllib.escape(text) in html and html.count("<br><b>noise: under 1 ms</b>") == 3


def test_modes_are_ranked_by_time_only_beyond_the_noise():
    """Above the floor, history's rule for two timings (their runs' min..max overlap, or medians within 2%) keeps
    modes together; only groups apart from each other are ranked. A mode that runs the fp32 file and gives its
    results bit for bit (low with no effect on this CPU) is one computation with fp32 whatever its time says.
    (Timings as PP-OCRv6 rec's, measured 2026-12 on the 2-core CI machine.)"""
    def row(mode, ms, lo, hi, key="a", effect=None):
        return {"mode": mode, "timing": {"ms": ms, "ms_min": lo, "ms_max": hi, "runs": 5},
                "conversion": {"key": key}, "effect": effect}
    fp32, int8w = row("fp32", 8.18, 7.30, 8.44), row("int8w", 4.1, 3.9, 4.3, key="b")
    low = row("low", 7.30, 7.09, 7.25, effect="no effect on this CPU: outputs bit-identical to fp32")
    fp16w = row("fp16w", 8.3, 8.25, 8.4, key="c")
    assert errormap.within_noise(fp32["timing"], fp16w["timing"])
    assert not errormap.within_noise(fp32["timing"], low["timing"])
    groups = errormap.speed_groups([fp32, low, fp16w, int8w])
    assert [[m["mode"] for m in g] for g in groups] == [["int8w"], ["fp32", "low", "fp16w"]]
    assert errormap.speed_text([fp32, low, fp16w, int8w]) == (
        "MNN time per run (median of 5 runs), fastest first: int8w 4.1 ms < fp32 8.18 ms \u2248 low 7.3 ms \u2248 "
        "fp16w 8.3 ms (within run-to-run noise of each other)")
    # a mode's headline says the spread that makes it noise (17.7 ms and 42.1 ms "within noise" of each other read as
    # a contradiction to a new user on a loaded machine)
    slow, fast = row("int8", 42.14, 12.0, 60.5, key="d"), row("fp32", 17.72, 16.9, 45.0)
    errormap.annotate_speed([slow, fast])
    assert errormap.speed_caveat(slow) == " (within run-to-run noise of fp32: its runs took 12-60.5 ms)"
    assert errormap.within_noise(row("x", 0.044, 0.0435, 0.0463)["timing"], row("y", 0.065, 0.0639, 0.0667)["timing"])
    assert not slow.get("warnings")  # within noise of fp32: no slowdown said


def test_a_mode_far_slower_than_fp32_is_warned_about():
    """PP-OCRv6 det at 640x640, MNN 3.6.1 CPU (measured 2026-12-06): int8w 425 ms per run, fp16w 217 ms; one 1x1 conv
    179 ms against 18. A new user shipping int8w for speed read "MNN 350.4 ms per run" and nothing said it was
    2.3x fp32's (helper 113)."""
    def row(mode, ms, lo, hi, key):
        return {"mode": mode, "timing": {"ms": ms, "ms_min": lo, "ms_max": hi, "runs": 5}, "conversion": {"key": key}}
    fp32, fp16w, int8w = row("fp32", 153.6, 150, 158, "a"), row("fp16w", 160, 155, 166, "b"), row("int8w", 353, 340, 361,
                                                                                                   "c")
    errormap.annotate_speed([fp32, fp16w, int8w])
    (w,) = int8w["warnings"]
    assert w.startswith("int8w runs 2.3x slower than fp32 here (353 ms against 154 ms per run)"), w
    assert not fp16w.get("warnings") and not fp32.get("warnings")  # 1.04x: no word
    tiny_fp32, tiny = row("fp32", 0.4, 0.38, 0.42, "a"), row("int8w", 0.9, 0.85, 0.95, "c")
    errormap.annotate_speed([tiny_fp32, tiny])
    assert not tiny.get("warnings")  # under 1 ms: timings are noise


def test_report_of_a_result_without_the_new_fields_still_renders():
    """A comparison stored before these fields (the Runs dock's, or a JSON file) still makes a report."""
    from mnnscope.inspector.compare.report import render_report
    r = {"model": str(SAMPLES / "cnn.onnx"), "reference": {"version": "1", "tensors": 1}, "ok": True,
         "inputs": [{"name": "input", "shape": [1, 3, 32, 32], "dtype": "float32"}],
         "modes": [{"mode": "fp32", "ok": True, "outputs": [], "tolerance": {"rule": "r"},
                    "timing": {"ms": 0.05, "ms_min": 0.04, "ms_max": 0.06, "runs": 5}}]}
    html = render_report(r)
    assert "not recorded" in html and "Run it again" not in html
