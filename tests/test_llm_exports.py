"""MNN-LLM export folders (tests/data/llm, made by scripts/make_llm_exports.py): inspect, generate through
MNN.llm in the runner, compare two exports, sweep, and an MNN.llm crash reported with the store intact."""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mnnscope.inspector.cli.app import main
from mnnscope.inspector.history import headline_text
from mnnscope.inspector.llm.service import LlmOptions, generate_export
from mnnscope.inspector.process.client import RunnerClient
from mnnscope.inspector.store.runs import RunStore
from mnnscope.runner.llm import token_times
from mnnscope.runner.protocol import RunnerError

LLM = Path(__file__).resolve().parent / "data" / "llm"
TEXT = "The model runs on the phone"


def _json(argv, capsys, code=0) -> dict:
    assert main(argv + ["--json"]) == code
    return json.loads(capsys.readouterr().out)


def test_fixtures_are_small_and_complete():
    folders = sorted(p for p in LLM.iterdir() if p.is_dir())
    assert [p.name for p in folders] == sorted(f"{m}_{v}" for m in ("qwen2", "qwen3moe")
                                               for v in ("16", "8", "4_b64", "4_b32"))
    for p in folders:
        assert {"config.json", "llm_config.json", "llm.mnn", "llm.mnn.weight", "tokenizer.mtok"} <= {
            f.name for f in p.iterdir()}
    assert sum(f.stat().st_size for f in LLM.rglob("*") if f.is_file()) < 3_000_000


@pytest.mark.parametrize("name,bits,block", [("qwen2_4_b32", 4, 32), ("qwen3moe_8", 8, None)])
def test_inspect_an_export_folder(name, bits, block, capsys):
    s = _json(["inspect", str(LLM / name)], capsys)
    assert s["format"] == "mnn-llm" and s["model_file"].endswith("llm.mnn")
    assert [i["name"] for i in s["inputs"]] == ["input_ids", "attention_mask", "position_ids", "logits_index"]
    assert [o["name"] for o in s["outputs"]] == ["logits", "hidden_states"]
    layers = json.loads((LLM / name / "llm_config.json").read_text())["layer_nums"]
    assert len(s["fused_attention"]) == layers and s["op_types"]["Attention"] == layers
    assert all(f"layers.{i}" in a for i, a in enumerate(s["fused_attention"]))
    cfg = s["llm_config"]
    assert cfg["runtime"]["sampler_type"] == "mixed" and cfg["runtime"]["precision"] == "low"
    assert (cfg["bits"], cfg["block"]) == (bits, block if block else 0)
    quantized = [q for q in s["llm_quant"] if q["bits"]]
    assert quantized and all(q["bits"] == bits for q in quantized)
    if block:
        assert all(q["block"] == block for q in quantized)
    # the projections of both layers are quantized, the MoE's experts included
    assert any("layers.1" in q["node"] for q in quantized)


def test_inspect_a_16bit_export_reports_float16_weights(capsys):
    s = _json(["inspect", str(LLM / "qwen2_16"), "--no-shapes"], capsys)
    assert s["llm_config"]["bits"] == 16 and s["llm_config"]["block"] is None
    assert s["llm_quant"] and all(q["bits"] is None and q["dtype"] == "float16" for q in s["llm_quant"])


def test_a_broken_export_folder_says_what_is_missing(tmp_path, capsys):
    broken = tmp_path / "export"
    shutil.copytree(LLM / "qwen2_8", broken)
    (broken / "llm.mnn").unlink()
    err = _json(["inspect", str(broken)], capsys, code=1)["error"]
    assert err["kind"] == "bad_model" and err["message"].endswith("an MNN-LLM export folder without the llm.mnn its "
                                                                  "config.json names")
    assert _json(["generate", str(broken), "--text", TEXT], capsys, code=1)["error"]["kind"] == "bad_model"
    plain = tmp_path / "plain"
    plain.mkdir()
    assert _json(["inspect", str(plain)], capsys, code=1)["error"]["message"].endswith(
        "plain: is a folder, not a model file")


def test_token_times_from_the_reads_of_the_stream():
    header = b"[MNNLLM] response: text=a b, stream=1\n"
    chunks = [(10.0, b"The device supports\n"), (11.0, header + b"ab"), (13.0, b" c"), (16.0, b"dd e\n")]
    begin = len(b"The device supports\n")
    # "a" also appears in the header: the pieces are looked for after MNN's own line, one after the other
    times = token_times(chunks, [b"ab", b" c", b"dd", b" e", None], begin, start=10.5, end=17.0)
    assert times == [11.0, 13.0, 14.5, 16.0, 17.0]  # dd and " e" share the third read; the unprinted one: end
    assert token_times(chunks, [b"zz"], begin, start=10.5, end=17.0) is None


def test_generate_streams_tokens_whose_times_add_up(capsys):
    t0 = time.perf_counter()
    r = _json(["generate", str(LLM / "qwen2_16"), "--text", TEXT, "--steps", "12"], capsys)
    outside_ms = (time.perf_counter() - t0) * 1e3
    for key in ("text", "tokens", "prefill_ms", "decode_ms", "decode_ms_per_token", "tokens_per_s", "run_id"):
        assert r[key] is not None, key
    n = len(r["tokens"])
    assert 1 <= n <= 12 and len(r["decode_ms"]) == n - 1 and len(r["pieces"]) == n
    assert r["text"] == "".join(r["pieces"]) and r["prompt_tokens"] >= 1
    assert not r["warnings"], r["warnings"]
    stream_ms = r["prefill_ms"] + sum(r["decode_ms"])
    # prefill + decode = stream start -> last token, inside the stream window (wall_ms), inside the request
    assert 0 < stream_ms <= r["wall_ms"] + 1e-6 < outside_ms
    assert stream_ms >= 0.5 * r["wall_ms"] - 2.0
    # MNN's own clock (inside the child) fits into the window the runner measured from outside
    assert r["mnn_prefill_ms"] + r["mnn_decode_ms"] <= r["wall_ms"] + 1e-6
    assert r["memory_mb"] > 1
    # greedy: the streamed tokens are forward()'s argmax chain (compare's reference run)
    c = _json(["compare", str(LLM / "qwen2_16"), str(LLM / "qwen2_16"), "--text", TEXT, "--steps", str(n)], capsys)
    assert c["reference"]["tokens"] == r["tokens"]
    assert RunStore().get_run(r["run_id"])["kind"] == "generate"


def test_a_16bit_export_compared_with_itself_agrees_fully(capsys):
    r = _json(["compare", str(LLM / "qwen3moe_16"), str(LLM / "qwen3moe_16"), "--text", TEXT, "--steps", "16"],
              capsys)
    (m,) = r["modes"]
    assert m["agreement_top1"] == 1.0 and m["first_mismatch_step"] is None
    assert len(m["kl_per_step"]) == len(m["cosine_per_step"]) == 16
    assert max(m["kl_per_step"]) < 1e-9 and min(m["cosine_per_step"]) > 1 - 1e-9
    assert headline_text(RunStore().get_run(r["run_id"])) == "top-1 agreement qwen3moe_16 1"


@pytest.mark.parametrize("model", ["qwen2", "qwen3moe"])
def test_sweep_4bit_agrees_less_than_8bit(model, capsys):
    folders = [str(LLM / f"{model}_{v}") for v in ("16", "8", "4_b64", "4_b32")]
    r = _json(["llm-sweep", *folders, "--text", TEXT, "--steps", "24"], capsys)
    rows = {row["name"]: row for row in r["rows"]}
    assert r["reference"] == folders[0] and rows[f"{model}_16"]["reference"]
    assert rows[f"{model}_16"]["agreement_top1"] == 1.0 and rows[f"{model}_16"]["kl_max"] < 1e-9
    a8 = rows[f"{model}_8"]["agreement_top1"]
    for v in ("4_b64", "4_b32"):
        row = rows[f"{model}_{v}"]
        assert row["agreement_top1"] < a8, (v, row["agreement_top1"], a8)
        assert row["kl_mean"] > rows[f"{model}_8"]["kl_mean"]
        assert row["first_mismatch_step"] is not None
        assert row["size_bytes"] < rows[f"{model}_8"]["size_bytes"] < rows[f"{model}_16"]["size_bytes"]
    assert [(row["bits"], row["block"]) for row in r["rows"]] == [(16, None), (8, 0), (4, 64), (4, 32)]
    assert all(row["tokens_per_s"] > 0 for row in r["rows"])
    run = RunStore().get_run(r["run_id"])
    assert run["kind"] == "sweep" and headline_text(run).startswith(f"top-1 agreement {model}_16 1, {model}_8 ")


def test_compare_finds_the_layer_where_the_hidden_states_part(capsys):
    r = _json(["compare", str(LLM / "qwen3moe_16"), str(LLM / "qwen3moe_4_b64"), "--text", TEXT, "--steps", "8"],
              capsys)
    (m,) = r["modes"]
    step = m["first_mismatch_step"]
    assert step is not None
    ld = m["layer_divergence"]
    assert ld["step"] == step
    assert [x["layer"] for x in ld["layers"]] == ["layers.0 input", "layers.1 input", "hidden_states", "logits"]
    # the same embeddings enter both; the error grows through the layers
    assert ld["layers"][0]["rel_l2"] == 0.0 and ld["layers"][1]["rel_l2"] > 0.01
    assert ld["added_most"] in ("layers.0", "layers.1") and ld["added_rel_l2"] > 0
    # the Module API's whole-sequence run gives each export's own MNN.llm choice at that step
    assert ld["argmax"] == {"a": r["reference"]["tokens"][step], "b": m["argmax"][step]}
    self_cmp = _json(["compare", str(LLM / "qwen2_16"), str(LLM / "qwen2_16"), "--text", TEXT, "--steps", "4"],
                     capsys)
    assert "layer_divergence" not in self_cmp["modes"][0]  # nothing to explain


def test_compare_two_exports_text_output(capsys):
    assert main(["compare", str(LLM / "qwen2_16"), str(LLM / "qwen2_4_b64"), "--text", TEXT, "--steps", "8"]) == 0
    out = capsys.readouterr().out
    assert "agreement top-1" in out and "first mismatch: step" in out and "most error added by layers." in out


def _poisoned(tmp_path: Path, first_token: int, piece: str) -> Path:
    """A copy of qwen2_16 whose tokenizer spells the first greedy token as bytes that are not UTF-8: MNN.llm
    (3.6.1) streams them, and reading its `context` afterwards segfaults (MNN_NOTES.md)."""
    dst = tmp_path / "poisoned"
    shutil.copytree(LLM / "qwen2_16", dst)
    mtok = dst / "tokenizer.mtok"
    raw = piece.encode()
    entry = struct.pack("<H", len(raw)) + raw + struct.pack("<I", first_token)
    data = mtok.read_bytes()
    assert data.count(entry) == 1
    mtok.write_bytes(data.replace(entry, struct.pack("<H", len(raw)) + b"\xff" * len(raw)
                                  + struct.pack("<I", first_token)))
    return dst


def test_an_mnn_llm_crash_is_reported_and_the_next_request_served(tmp_path, capsys):
    good = _json(["generate", str(LLM / "qwen2_16"), "--text", TEXT, "--steps", "4"], capsys)
    bad = _poisoned(tmp_path, good["tokens"][0], good["pieces"][0])
    proc = subprocess.run([sys.executable, "-c", "import sys; from mnnscope.inspector.cli.app import main; "
                           "sys.exit(main(sys.argv[1:]))", "generate", str(bad), "--text", TEXT, "--steps", "4",
                           "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    err = json.loads(proc.stdout)["error"]
    assert "SIGSEGV" in err["message"] and "during reading the context" in err["message"]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("mnnscope generate:")]
    assert len(lines) == 1 and "SIGSEGV" in lines[0]
    store = RunStore()
    before = len(store.list_runs(kind="generate"))
    with RunnerClient() as client:
        with pytest.raises(RunnerError) as crash:
            generate_export(LlmOptions(folder=str(bad), text=TEXT, steps=4), client=client, store=store)
        assert "SIGSEGV" in crash.value.message
        pid = client.pid
        again = generate_export(LlmOptions(folder=str(LLM / "qwen2_16"), text=TEXT, steps=4), client=client,
                                store=store)
        assert client.pid == pid  # the runner itself survived: only its MNN.llm child died
    assert again["tokens"] == good["tokens"]
    runs = store.list_runs(kind="generate")
    assert len(runs) == before + 2
    failed = store.get_run(runs[1]["id"])
    assert "SIGSEGV" in json.dumps(failed["summary"]) and runs[0]["id"] == again["run_id"]


def test_profile_on_an_export_folder_points_to_generate(capsys):
    # a tester pressed F5 on an export folder and read only "no engine for them": the message says what runs it
    assert main(["profile", str(LLM / "qwen2_8"), "--json"]) == 1
    err = capsys.readouterr().err
    assert "cannot be run here" in err and "mnnscope generate DIR" in err and "Text dock" in err
