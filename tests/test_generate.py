"""`generate`: the KV-cache sample and the tokenizer, greedy decoding on both runtimes with and without a cache,
token-level comparison (clean fp32, degraded int4w), MoE routing statistics, the CLI contract.

Every expected token is computed here independently: a plain greedy loop over ONNX Runtime on the cacheless
moe_llm.onnx (the whole sequence at every step); routing from ONNX Runtime (and MNN in a child process)
with the routers' TopK indices made graph outputs.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest

from mnnscope.inspector.generate.context import context_limit
from mnnscope.inspector.generate.service import GenerateOptions, decoder_io, run_generate, token_metrics
from mnnscope.inspector.model.table import GraphTable
from mnnscope.runner.protocol import RunnerError
from mnnscope.inspector.errors import ModelError, UsageError
from mnnscope.inspector.formats.loader import load_model
from mnnscope.inspector.store.runs import RunStore
from tests.conftest import ROOT, load_script

SAMPLES = ROOT / "resources" / "samples"
TOKENIZER = SAMPLES / "tokenizer.json"
PROMPT = "The model runs on the phone"
STEPS = 12
ROUTERS = [f"/model/layers.{i}/mlp/TopK_output_1" for i in range(2)]
KV_PAIRS = [(f"past_{k}_{i}", f"present_{k}_{i}") for i in range(2) for k in ("key", "value")]


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MNNSCOPE_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def _prompt_ids() -> list[int]:
    from tokenizers import Tokenizer
    return Tokenizer.from_file(str(TOKENIZER)).encode(PROMPT).ids


def _ort(path, extra_outputs=()):
    import onnxruntime as ort
    model = onnx.load(str(path))
    for name in extra_outputs:
        model.graph.output.append(onnx.ValueInfoProto(name=name))
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _greedy_reference(steps: int) -> tuple[list[int], np.ndarray]:
    """Tokens and next-token logits of a plain greedy loop on the cacheless model (ONNX Runtime)."""
    session = _ort(SAMPLES / "moe_llm.onnx")
    seq, tokens, logits = list(_prompt_ids()), [], []
    for _ in range(steps):
        out = session.run(["logits"], {"input_ids": np.array([seq], np.int64)})[0][0, -1]
        tokens.append(int(out.argmax()))
        logits.append(out)
        seq.append(tokens[-1])
    return tokens, np.stack(logits)


@pytest.fixture(scope="module")
def reference():
    return _greedy_reference(STEPS)


# ----- samples ---------------------------------------------------------------------------------------------
def test_kv_sample_reproduces_the_cacheless_model_step_by_step():
    ids = np.array([_prompt_ids() + [5, 17, 40]], np.int64)
    full = _ort(SAMPLES / "moe_llm.onnx").run(["logits"], {"input_ids": ids})[0]
    kv = _ort(SAMPLES / "moe_llm_kv.onnx")
    names = [o.name for o in kv.get_outputs()]
    past = {p: np.zeros((1, 2, 0, 16), np.float32) for p, _ in KV_PAIRS}
    out = dict(zip(names, kv.run(None, {"input_ids": ids, **past})))
    assert np.array_equal(out["logits"], full)  # empty cache + whole sequence = the cacheless model
    n = len(_prompt_ids())
    out = dict(zip(names, kv.run(None, {"input_ids": ids[:, :n], **past})))
    for t in range(n, ids.shape[1]):  # then one token at a time through the cache
        assert out["present_key_0"].shape == (1, 2, t, 16)
        past = {p: out[q] for p, q in KV_PAIRS}
        out = dict(zip(names, kv.run(None, {"input_ids": ids[:, t:t + 1], **past})))
        np.testing.assert_allclose(out["logits"][0, 0], full[0, t], atol=1e-5)


def test_tokenizer_is_trained_from_the_shipped_text_and_fits_the_embedding(tmp_path):
    module = load_script(SAMPLES / "make_tokenizer.py")
    assert module.main(["--out", str(tmp_path / "t.json")]) == 0
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(TOKENIZER))
    # The same vocabulary and the same ids for the whole corpus (the JSON layout varies between tokenizers
    # versions; what the models see must not).
    fresh = Tokenizer.from_file(str(tmp_path / "t.json"))
    assert fresh.get_vocab() == tok.get_vocab(), "rerun resources/samples/make_tokenizer.py"
    lines = [x for x in (SAMPLES / "tokenizer_corpus.txt").read_text().splitlines() if x.strip()]
    assert [e.ids for e in fresh.encode_batch(lines)] == [e.ids for e in tok.encode_batch(lines)]
    embed = {i.name: i for i in onnx.load(str(SAMPLES / "moe_llm.onnx")).graph.initializer}
    rows = embed["model.embed_tokens.weight"].dims[0]
    assert tok.get_vocab_size() <= rows == 96
    text = (SAMPLES / "tokenizer_corpus.txt").read_text()
    ids = tok.encode(text.replace("\n", " ")).ids
    assert max(ids) < rows and tok.token_to_id("<unk>") not in ids  # the corpus needs no unknown token
    assert tok.decode(tok.encode(PROMPT).ids) == PROMPT


def test_decoder_io_is_read_from_the_graph():
    kv = decoder_io(load_model(SAMPLES / "moe_llm_kv.onnx", native=False))
    assert kv.ids_input == "input_ids" and kv.logits_output == "logits"
    assert sorted(map(tuple, kv.kv)) == sorted(KV_PAIRS)
    assert kv.kv_shapes == {p: [1, 2, 0, 16] for p, _ in KV_PAIRS}
    assert sorted(kv.routers.values()) == ROUTERS and set(kv.experts.values()) == {4}
    plain = decoder_io(load_model(SAMPLES / "moe_llm.onnx", native=False))
    assert plain.kv == [] and plain.kv_shapes == {}
    with pytest.raises(ModelError, match="token-id input"):
        decoder_io(load_model(SAMPLES / "cnn.onnx", native=False))


# ----- generation on both runtimes ----------------------------------------------------------------------------
CASES = [  # (model, engine, --kv-cache, cache used)
    ("moe_llm.onnx", "ort", "auto", False),
    ("moe_llm_kv.onnx", "ort", "auto", True),
    ("moe_llm_kv.onnx", "ort", "off", False),
    ("moe_llm.mnn", "mnn", "auto", False),
    ("moe_llm_kv.mnn", "mnn", "auto", True),
    ("moe_llm_kv.mnn", "mnn", "off", False),
]


@pytest.mark.parametrize("model,engine,kv,cached", CASES)
def test_generate_matches_a_plain_greedy_loop(shared_runner, reference, model, engine, kv, cached, tmp_path):
    store = RunStore(tmp_path / "store" / "runs.sqlite")
    r = run_generate(GenerateOptions(model=str(SAMPLES / model), tokenizer=str(TOKENIZER), text=PROMPT, steps=STEPS,
                                     kv=kv), client=shared_runner, store=store)
    assert r["engine"] == engine and r["kv_cache"] is cached
    # why it is off, said (beside KV auto, "KV cache off" read as a setting ignored: helper 82's try)
    assert r["kv_cache_why"] == (None if cached else "off as asked" if kv == "off" else
                                 "the graph has no past/present inputs")
    from mnnscope.inspector.generate.summary import headline
    assert f"KV cache {'on' if cached else 'off: ' + r['kv_cache_why']}" in headline(r)
    # each figure says what it is (helper 115 read the median step beside a rate over all steps as a contradiction)
    assert (f"prefill (time to first token) {r['prefill_ms']:.2f} ms, decode {r['decode_ms_per_token']:.2f} ms/token "
            f"(median), {r['tokens_per_s']:.0f} tokens/s over all {STEPS - 1} steps after the first") in headline(r)
    assert r["tokens"] == reference[0]
    logits = np.load(r["logits_path"])
    np.testing.assert_allclose(logits, reference[1], atol=1e-4)
    from tokenizers import Tokenizer
    assert r["text"] == Tokenizer.from_file(str(TOKENIZER)).decode(reference[0])
    assert r["prompt_tokens"] == len(_prompt_ids()) and r["steps"] == STEPS
    assert r["prefill_ms"] > 0 and len(r["decode_ms"]) == STEPS - 1 and all(ms > 0 for ms in r["decode_ms"])
    assert r["decode_ms_per_token"] == pytest.approx(float(np.median(r["decode_ms"])))
    assert r["tokens_per_s"] == pytest.approx((STEPS - 1) / (sum(r["decode_ms"]) / 1e3))
    assert (r["memory_mb"] is not None) == (engine == "mnn")
    runs = store.list_runs(kind="generate")
    assert [x["id"] for x in runs] == [r["run_id"]]
    _check_op_split(r["op_split"], engine, model, cached)


def _check_op_split(split: dict, engine: str, model: str, cached: bool) -> None:
    """Per-op time of a prefill-shaped and a decode-shaped run: every op of the model timed in each phase, the
    per-type and per-op figures add up to the phase totals, the slowest ops first."""
    assert split is not None
    graph_ops = len(onnx.load(str(SAMPLES / model.replace(".mnn", ".onnx"))).graph.node)
    if engine == "ort":
        # the nodes ORT's profiler times (constant-folded ones run nowhere), the same in both phases
        assert split["op_count"]["prefill"] == split["op_count"]["decode"]
        assert graph_ops // 2 < split["op_count"]["prefill"] <= graph_ops
    else:
        assert min(split["op_count"].values()) > 20  # MNN's own (fused, rasterised) op list
    for phase in ("prefill", "decode"):
        assert split[f"{phase}_ms"] > 0
        assert sum(t[f"{phase}_ms"] for t in split["by_type"].values()) == pytest.approx(split[f"{phase}_ms"])
    assert {"MatMul", "Softmax"} <= set(split["by_type"]) if engine == "ort" else \
        {"Softmax"} <= set(split["by_type"]) and set(split["by_type"]) & {"Convolution", "MatMul"}
    worst = [max(o["prefill_ms"], o["decode_ms"]) for o in split["ops"]]
    assert worst == sorted(worst, reverse=True) and 0 < len(worst) <= 15
    decode = [t["decode_ms"] for t in split["by_type"].values()]
    assert decode == sorted(decode, reverse=True)


def test_kv_cache_on_a_model_without_one_is_a_usage_error(shared_runner):
    with pytest.raises(UsageError, match="no past/present"):
        run_generate(GenerateOptions(model=str(SAMPLES / "moe_llm.onnx"), tokenizer=str(TOKENIZER), text=PROMPT,
                                     steps=2, kv="on"), client=shared_runner, store=None)


# ----- token-level comparison -----------------------------------------------------------------------------------
def _compare(runner, model: str, mode: str, tmp_path) -> dict:
    return run_generate(GenerateOptions(model=str(SAMPLES / model), tokenizer=str(TOKENIZER), text=PROMPT,
                                        steps=STEPS, compare=True, mode=mode), client=runner,
                        store=RunStore(tmp_path / "store" / "runs.sqlite"))


@pytest.mark.parametrize("model", ["moe_llm.onnx", "moe_llm_kv.onnx"])
def test_fp32_mnn_agrees_with_the_reference(shared_runner, reference, model, tmp_path):
    r = _compare(shared_runner, model, "fp32", tmp_path)
    assert r["reference"]["tokens"] == reference[0] == r["tokens"]
    assert r["agreement_top1"] == 1.0 and r["first_mismatch_step"] is None and r["first_divergence"] is None
    assert len(r["kl_per_step"]) == STEPS and max(r["kl_per_step"]) < 1e-6
    assert all(o == 1.0 for o in r["topk_overlap"])
    assert set(r["routing"]) == {"/model/layers.0/mlp", "/model/layers.1/mlp"}
    for layer in r["routing"].values():
        assert layer["flips"] == 0 and layer["load"]["reference"] == layer["load"]["mnn"]


@pytest.fixture(scope="module")
def int4(shared_runner, tmp_path_factory):
    return _compare(shared_runner, "moe_llm.onnx", "int4w", tmp_path_factory.mktemp("int4"))


def test_int4_weights_are_caught_at_their_first_mismatching_step(int4, reference):
    r = int4
    assert r["reference"]["tokens"] == reference[0]
    # MNN's own greedy tokens leave the reference where the teacher-forced argmax first differs.
    first = next(i for i, (a, b) in enumerate(zip(r["tokens"], reference[0])) if a != b)
    assert r["first_mismatch_step"] == first
    forced = np.load(r["teacher_forced"]["logits_path"])
    assert int(forced[first].argmax()) != reference[0][first]
    assert all(int(forced[i].argmax()) == reference[0][i] for i in range(first))
    assert r["agreement_top1"] < 1.0
    assert r["agreement_top1"] == pytest.approx(np.mean(forced.argmax(-1) == np.array(reference[0])))
    again = token_metrics(reference[1], forced)
    np.testing.assert_allclose(r["kl_per_step"], again["kl_per_step"], rtol=1e-3, atol=1e-9)
    assert r["kl_per_step"][first] > 1e-4
    fd = r["first_divergence"]
    assert fd["step"] == first and fd["mode"] == "int4w" and fd["error"] is None
    nodes = {n.name: n.op_type for n in onnx.load(str(SAMPLES / "moe_llm.onnx")).graph.node}
    assert nodes[fd["node"]] == "MatMul"  # a 4-bit weight is where the error starts
    assert not all(o["within"] for o in fd["outputs"])


_MNN_TOPK = """
import sys, json
import numpy as np
import MNN
F = MNN.expr
path, ids, names = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
module = MNN.nn.load_module_from_file(path, ["input_ids"], names)
x = F.const(np.array([ids], np.int32), [1, len(ids)], F.NCHW, F.int)
outs = module.forward([x])
print(json.dumps([np.array(o.read()).tolist() for o in outs]))
"""


def test_routing_statistics_are_what_the_topk_outputs_say(int4, reference):
    r = int4
    fed = _prompt_ids() + reference[0][:-1]  # the teacher-forced sequence both sides saw
    ref_topk = _ort(SAMPLES / "moe_llm.onnx", ROUTERS).run(ROUTERS, {"input_ids": np.array([fed], np.int64)})
    proc = subprocess.run([sys.executable, "-c", _MNN_TOPK, r["run_model"], json.dumps(fed), json.dumps(ROUTERS)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    mnn_topk = [np.array(a, np.int64) for a in json.loads(proc.stdout.strip().splitlines()[-1])]
    for i, (ref, mnn) in enumerate(zip(ref_topk, mnn_topk)):
        stats = r["routing"][f"/model/layers.{i}/mlp"]
        assert stats["tokens"] == len(fed) and stats["experts"] == 4
        assert stats["load"]["reference"] == np.bincount(ref.reshape(-1), minlength=4).tolist()
        assert stats["load"]["mnn"] == np.bincount(mnn.reshape(-1), minlength=4).tolist()
        flipped = [t for t in range(len(fed)) if set(ref[t]) != set(mnn[t])]
        assert stats["flipped_tokens"] == flipped and stats["flips"] == len(flipped)
    assert sum(s["flips"] for s in r["routing"].values()) > 0  # 4-bit weights move some tokens to other experts


def test_free_run_text_of_both_sides_and_where_they_part(int4):
    """The agreement is teacher-forced (MNN fed the reference's tokens): MNN's own text can leave the reference's
    earlier than the agreement figure suggests; the result says at which step, and the shared part of the text."""
    r = int4
    parts = next(i for i, (a, b) in enumerate(zip(r["tokens"], r["reference"]["tokens"])) if a != b)
    assert r["free_run_mismatch_step"] == parts
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(TOKENIZER))
    assert r["reference"]["text"] == tok.decode(r["reference"]["tokens"]) != r["text"]
    assert r["common_text"] == tok.decode(r["tokens"][:parts])
    assert r["text"].startswith(r["common_text"]) and r["reference"]["text"].startswith(r["common_text"])


# ----- the positions a model holds ------------------------------------------------------------------------------
MASK_ROWS = 64  # resources/samples/make_samples.py: the causal mask buffer is [max_pos, max_pos]


def hidden_limit_model(folder) -> str:
    """moe_llm_kv.onnx with its causal mask read through an Identity: the same model, whose graph no longer proves
    how many positions it holds (the table is no longer sliced directly), so a long run fails mid-way."""
    model = onnx.load(str(SAMPLES / "moe_llm_kv.onnx"))
    nodes = list(model.graph.node)
    at = next(i for i, n in enumerate(nodes) if n.name == "/model/Slice_1")
    nodes[at].input[0] = "causal_mask_read"
    model.graph.node.insert(at, onnx.helper.make_node("Identity", ["model.causal_mask"], ["causal_mask_read"],
                                                      name="/model/Identity_mask"))
    onnx.checker.check_model(model)
    path = os.path.join(str(folder), "moe_llm_kv_hidden.onnx")
    onnx.save(model, path)
    return path


def test_context_limit_is_the_causal_mask_the_graph_slices(tmp_path):
    mask = {i.name: list(i.dims) for i in onnx.load(str(SAMPLES / "moe_llm_kv.onnx")).graph.initializer}
    assert mask["model.causal_mask"] == [MASK_ROWS, MASK_ROWS]
    for name in ("moe_llm.onnx", "moe_llm_kv.onnx", "moe_llm.mnn", "moe_llm_kv.mnn"):
        limit = context_limit(GraphTable.from_graph(load_model(SAMPLES / name, native=False)))
        assert limit is not None and limit.positions == MASK_ROWS and limit.tensor == "model.causal_mask", name
    for name in ("cnn.onnx", "encoder_block.onnx", "control_flow.onnx"):
        assert context_limit(GraphTable.from_graph(load_model(SAMPLES / name, native=False))) is None, name
    # read through another op, the table proves nothing: no limit is claimed
    assert context_limit(GraphTable.from_graph(load_model(hidden_limit_model(tmp_path), native=False))) is None


def test_steps_past_the_context_limit_are_refused_before_anything_runs(shared_runner, tmp_path):
    prompt = len(_prompt_ids())
    most = MASK_ROWS - prompt + 1  # the last step feeds prompt + steps - 1 positions
    store = RunStore(tmp_path / "store" / "runs.sqlite")
    with pytest.raises(UsageError) as e:
        run_generate(GenerateOptions(model=str(SAMPLES / "moe_llm_kv.onnx"), tokenizer=str(TOKENIZER), text=PROMPT,
                                     steps=100, compare=True, mode="low"), client=shared_runner, store=store)
    assert (f"this model holds at most {MASK_ROWS} positions: prompt {prompt} + steps 100 would feed "
            f"{prompt + 99} positions") in str(e.value)
    assert f"at most {most} steps with this prompt" in str(e.value) and "model.causal_mask" in str(e.value)
    assert "typical of control flow" not in str(e.value) and store.list_runs() == []  # nothing ran
    with pytest.raises(UsageError, match=f"prompt {prompt} \\+ steps {most + 1} "):
        run_generate(GenerateOptions(model=str(SAMPLES / "moe_llm_kv.mnn"), tokenizer=str(TOKENIZER), text=PROMPT,
                                     steps=most + 1), client=shared_runner, store=None)
    # the limit is the model's: the most steps it allows run, on MNN, to the last position of the table
    r = run_generate(GenerateOptions(model=str(SAMPLES / "moe_llm_kv.mnn"), tokenizer=str(TOKENIZER), text=PROMPT,
                                     steps=most), client=shared_runner, store=None)
    assert r["steps"] == most and r["context"]["positions"] == MASK_ROWS
    assert r["error"] is None and r["steps_requested"] == most
    cli = mnnscope("generate", SAMPLES / "moe_llm_kv.onnx", "--tokenizer", TOKENIZER, "--text", PROMPT,
                   "--steps", 100, "--compare", "--json", env_data=tmp_path / "cli")
    assert cli.returncode == 2 and f"holds at most {MASK_ROWS} positions" in json.loads(cli.stdout)["error"]["message"]
    # with --eos the steps are a bound: a run that may stop early is not refused; it runs to the model's last position
    # (a token that never comes) or stops at the token, and says the cap
    never = max(r["tokens"]) + 1
    capped = run_generate(GenerateOptions(model=str(SAMPLES / "moe_llm_kv.mnn"), tokenizer=str(TOKENIZER),
                                          text=PROMPT, steps=100, eos=never), client=shared_runner, store=None)
    assert capped["steps"] == most and capped["steps_requested"] == 100 and capped["tokens"] == r["tokens"]
    assert capped["error"] is None and any(w.startswith(f"steps capped at {most} of 100: this model holds at most "
                                                        f"{MASK_ROWS} positions") for w in capped["warnings"])
    early = run_generate(GenerateOptions(model=str(SAMPLES / "moe_llm_kv.mnn"), tokenizer=str(TOKENIZER),
                                         text=PROMPT, steps=100, eos=r["tokens"][2]), client=shared_runner, store=None)
    stop = r["tokens"].index(r["tokens"][2]) + 1
    assert early["tokens"] == r["tokens"][:stop] and early["steps_requested"] == 100


def test_a_run_that_fails_mid_way_keeps_its_tokens_and_names_the_step(shared_runner, tmp_path):
    """Where the graph does not prove the limit, the run fails at the step that feeds one position too many:
    with `partial` the tokens before it are kept (a plain greedy loop's), the error names that step and no
    control-flow hint is given for a model that ran the steps before."""
    hidden = hidden_limit_model(tmp_path)
    prompt = len(_prompt_ids())
    fails_at = MASK_ROWS - prompt + 1  # step k feeds prompt + k positions
    tokens, _ = _greedy_reference(fails_at)
    for engine in ("mnn", "ort"):
        r = run_generate(GenerateOptions(model=hidden, tokenizer=str(TOKENIZER), text=PROMPT, steps=100,
                                         engine=engine, partial=True), client=shared_runner, store=None)
        assert r["error"]["step"] == fails_at and r["steps"] == fails_at and r["steps_requested"] == 100
        assert r["tokens"] == tokens, engine
        msg = r["error"]["message"]
        assert msg.startswith(f"step {fails_at} failed (it fed {MASK_ROWS + 1} positions: prompt {prompt} + "
                              f"{fails_at} tokens")
        assert f"this model holds at most {MASK_ROWS} positions" in msg and "typical of control flow" not in msg
        assert msg in r["warnings"] and r["op_split"] is not None
    # the CLI's --partial: the tokens before the failing step on stdout (the JSON), the error said, exit 1
    cli = mnnscope("generate", hidden, "--tokenizer", TOKENIZER, "--text", PROMPT, "--steps", 100, "--engine", "mnn",
                   "--partial", "--json", env_data=tmp_path / "cli")
    out = json.loads(cli.stdout)
    assert cli.returncode == 1 and out["tokens"] == tokens and out["error"]["step"] == fails_at
    assert f"error: step {fails_at} failed" in cli.stderr
    cli = mnnscope("generate", hidden, "--tokenizer", TOKENIZER, "--text", PROMPT, "--steps", 100, "--engine", "mnn",
                   "--partial", env_data=tmp_path / "cli")
    assert cli.returncode == 1 and f"steps     {fails_at} of 100 asked for" in cli.stdout, cli.stdout
    # without `partial` (the CLI's default) the failure is raised, naming the step
    with pytest.raises(RunnerError) as e:
        run_generate(GenerateOptions(model=hidden, tokenizer=str(TOKENIZER), text=PROMPT, steps=100, engine="mnn"),
                     client=shared_runner, store=None)
    assert f"step {fails_at} failed" in e.value.message and "typical of control flow" not in e.value.message
    # a prompt longer than the table fails at once: a position overflow too, not control flow
    long_prompt = " ".join([PROMPT] * 8)
    with pytest.raises(RunnerError) as e:
        run_generate(GenerateOptions(model=hidden, tokenizer=str(TOKENIZER), text=long_prompt, steps=3, engine="mnn",
                                     partial=True), client=shared_runner, store=None)
    assert e.value.message.startswith("step 0 failed") and "the prompt alone is longer" in e.value.message
    assert "typical of control flow" not in e.value.message


def test_low_precision_that_had_no_effect_is_said(shared_runner, tmp_path):
    """As the Profile dock does: a precision MNN may not run as asked is checked against precision high."""
    fp16 = bool(shared_runner.hello()["cpu"].get("fp16"))
    r = _compare(shared_runner, "moe_llm_kv.onnx", "low", tmp_path)
    assert r["mode"] == "low" and r["precision_requested"] == "low"
    said = [w for w in r["warnings"] if "had no effect on this CPU" in w]
    if fp16:  # MNN reports fp16 arithmetic: it runs as asked
        assert r["precision_effective"] == "low" and r["precision_check"] is None and not said
        return
    check = r["precision_check"]
    high = np.load(check["logits_path"])
    assert check["identical"] and np.array_equal(np.load(r["logits_path"]), high) and len(high) == STEPS
    assert r["precision_effective"] == "high"
    assert said == ["Precision 'low' had no effect on this CPU: the logits of every step are bit-identical to "
                    "precision 'high' (this CPU reports no fp16 arithmetic)"]
    plain = _compare(shared_runner, "moe_llm_kv.onnx", "fp32", tmp_path / "fp32")
    assert plain["precision_effective"] == "high" and plain["precision_check"] is None
    assert not [w for w in plain["warnings"] if "no effect" in w]


# ----- CLI ------------------------------------------------------------------------------------------------------
def mnnscope(*args, timeout=300, env_data=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if env_data is not None:
        env["MNNSCOPE_DATA_DIR"] = str(env_data)
    return subprocess.run([sys.executable, "-m", "mnnscope.gui.main", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env=env)


def test_cli_json_contract(reference):
    r = mnnscope("generate", SAMPLES / "moe_llm_kv.mnn", "--tokenizer", TOKENIZER, "--text", PROMPT,
                 "--steps", 4, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for key in ("text", "tokens", "prefill_ms", "decode_ms_per_token", "tokens_per_s", "run_id", "kv_cache"):
        assert key in out, key
    assert out["tokens"] == reference[0][:4] and out["kv_cache"] is True


def test_cli_compare_json_fields():
    r = mnnscope("generate", SAMPLES / "moe_llm_kv.onnx", "--tokenizer", TOKENIZER, "--text", PROMPT,
                 "--steps", 4, "--compare", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for key in ("agreement_top1", "first_mismatch_step", "kl_per_step", "routing", "first_divergence",
                "context", "precision_effective", "free_run_mismatch_step", "error", "steps_requested"):
        assert key in out, key
    assert out["context"]["positions"] == MASK_ROWS and out["reference"]["text"] == out["text"]
    assert out["agreement_top1"] == 1.0 and out["first_mismatch_step"] is None and len(out["kl_per_step"]) == 4
    assert set(out["routing"]["/model/layers.0/mlp"]) >= {"flips", "load"}


@pytest.mark.parametrize("args,code,message", [
    (["--steps", "0"], 2, "--steps"),
    (["--compare"], 2, "ONNX model as the reference"),  # an .mnn MODEL has no reference
    (["--kv-cache", "sometimes"], 2, "invalid choice"),
])
def test_cli_usage_errors(args, code, message):
    r = mnnscope("generate", SAMPLES / "moe_llm_kv.mnn", "--tokenizer", TOKENIZER, "--text", PROMPT, *args)
    assert r.returncode == code and message in r.stderr, r.stderr


def test_cli_missing_model_and_non_decoder_exit_1(tmp_path):
    r = mnnscope("generate", tmp_path / "none.onnx", "--tokenizer", TOKENIZER, "--text", PROMPT, "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["kind"] == "bad_model"
    r = mnnscope("generate", SAMPLES / "cnn.onnx", "--tokenizer", TOKENIZER, "--text", PROMPT)
    assert r.returncode == 1 and "token-id input" in r.stderr


def test_generate_and_its_step_comparison_are_recorded_with_a_headline(int4):
    from pathlib import Path

    from mnnscope.inspector.history import headline_text
    data = Path(int4["run_dir"]).parent.parent  # <data dir>/runs/<run folder>
    store = RunStore(data / "runs.sqlite")
    gen = store.list_runs(kind="generate")
    assert [g["id"] for g in gen] == [int4["run_id"]]
    step = int4["first_mismatch_step"]
    assert headline_text(gen[0]) == (f"{STEPS} tokens, {float(np.median(int4['decode_ms'])):.3g} ms/token, "
                                     f"top-1 agreement {int4['agreement_top1']:.3g} (step {step})")
    compares = store.list_runs(kind="compare")
    assert [c["id"] for c in compares] == [int4["first_divergence"]["compare_run_id"]]
    r = mnnscope("runs", "list", "--kind", "generate", "--json", env_data=data)
    assert r.returncode == 0, r.stderr
    assert [x["id"] for x in json.loads(r.stdout)["runs"]] == [int4["run_id"]]


def test_prompt_characters_the_tokenizer_has_no_token_for_are_said(shared_runner, tmp_path):
    """Helper 115's prompt "Explain MoE routing: 你好 🙂" lost ':', the Chinese and the emoji to the sample's 96-token
    vocabulary, and the Text dock echoed it as typed: a run says which characters were left out."""
    r = run_generate(GenerateOptions(model=str(SAMPLES / "moe_llm.onnx"), tokenizer=str(TOKENIZER),
                                     text="the cat: 你好 🙂 sat", steps=2), client=shared_runner,
                     store=RunStore(tmp_path / "runs.sqlite"))
    (w,) = [w for w in r["warnings"] if "has no token for" in w]
    assert w.startswith("tokenizer.json has no token for ':', '你', '好', '🙂': left out of the prompt, which is ") and \
        w.endswith(f"{r['prompt_tokens']} tokens"), w
    clean = run_generate(GenerateOptions(model=str(SAMPLES / "moe_llm.onnx"), tokenizer=str(TOKENIZER), text=PROMPT,
                                         steps=2), client=shared_runner, store=RunStore(tmp_path / "runs.sqlite"))
    assert not any("has no token for" in w for w in clean["warnings"])
