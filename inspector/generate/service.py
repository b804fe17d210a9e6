"""The generate service: text in, tokens out, timed per step, and (with `compare`) where MNN stops agreeing.

One `generate` request (runner/generate.py documents it) runs greedy decoding on the chosen engine. With
`compare` (an .onnx model): ONNX Runtime generates the reference tokens (saving each step's inputs and the
routers' TopK indices), MNN then runs teacher-forced on those tokens (so step k of both sides sees the same
sequence) and the per-step next-token distributions are compared: top-1 agreement, top-k overlap, KL
divergence, the first step whose argmax differs, MoE routing flips and expert load per router, and for the
first mismatching step the layerwise comparison of `mnnscope compare` on that step's (reference) inputs.

Decoder I/O is read from the graph: the token input (`input_ids`, else the first integer input), the
logits output (`logits`, else the first output), KV-cache pairs (an input named past* whose output
counterpart present* exists; their empty shape from the declared one, the sequence axis set to 0).
Routers: every TopK node; its second output (expert indices) per token.

Context: where the graph proves how many positions the model holds (generate/context.py: a causal mask or position
table sliced by the sequence length), a prompt and steps that would feed more are refused before anything runs. A
run that still fails mid-way is narrowed down to the step that failed by shorter runs (only after a failure): the
error names that step, and with `partial` the tokens made before it are returned with the error instead of raised.

Precision: as for profile (runner/profile.py precision_effect), a "low" run on a CPU without fp16 arithmetic (MNN's
banner) and any "low_bf16" run is checked against an MNN run at precision high fed the same tokens: bit-identical
logits at every step mean it had no effect (`precision_effective` "high", and a warning says so).
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace

import numpy as np

from mnnscope.runner import protocol
from mnnscope.runner.protocol import RunnerError

from mnnscope.inspector.compare.options import MODES, CompareOptions
from mnnscope.inspector.compare.service import compare_model
from mnnscope.inspector.compare.tolerance import DEFAULT_TOLERANCES
from mnnscope.inspector.convert.service import convert_model
from mnnscope.inspector.convert.settings import ConvertSettings
from mnnscope.inspector.errors import ModelError, UsageError
from mnnscope.inspector.formats.loader import detect_format, load_model
from mnnscope.inspector.generate.context import context_limit
from mnnscope.inspector.generate.decoder import not_a_decoder, token_input
from mnnscope.inspector.generate.failure import step_failure
from mnnscope.inspector.inputs.sources import encode_prompt
from mnnscope.inspector.model.graph import ModelGraph
from mnnscope.inspector.model.table import GraphTable
from mnnscope.inspector.process.client import EventHandler, RunnerClient, client_or_own
from mnnscope.inspector.profile.service import MEMORY_MODES, MNN_BACKENDS, PRECISIONS, engine_for
from mnnscope.inspector.store.runs import RunStore, open_run, record

KV_CHOICES = ("auto", "on", "off")
# Conversion modes a generation may run the MNN side in (compare's modes but full int8, which needs calibration).
GENERATE_MODES = [m for m in MODES if m != "int8"]
TOPK_OVERLAP = 5
GENERATE_TIMEOUT = 1800.0


@dataclass
class GenerateOptions:
    model: str
    tokenizer: str
    text: str
    steps: int = 16
    engine: str | None = None          # "mnn" | "ort"; None: from the file (.onnx -> ort); compare: mnn
    backend: str = protocol.DEFAULT_BACKEND
    precision: str | None = None       # None: the mode's (high for fp32)
    memory: str | None = None          # None: the mode's (normal for fp32)
    threads: int = 1
    kv: str = "auto"                   # auto (use a cache when the graph has one) | on | off
    mode: str = "fp32"                 # how an .onnx is converted for MNN (compare's modes, int8 excepted)
    mnn: str | None = None             # the MNN side's model for an .onnx MODEL (instead of converting it)
    compare: bool = False
    layerwise: bool = True             # with compare: run the layerwise comparison on the first mismatch
    eos: int | None = None             # stop after a step that chose this id
    partial: bool = False              # a run that fails mid-way: the tokens made before the failing step, with
                                       # `error` {kind, message, step}, instead of raising


@dataclass
class DecoderIO:
    ids_input: str
    logits_output: str
    kv: list                           # [[past input, present output]]
    kv_shapes: dict                    # {past input: dims at length 0}
    routers: dict                      # {router (its scope): TopK indices tensor}
    experts: dict                      # {router: number of experts, or None when the graph does not say}


def _empty_shape(shape) -> list[int]:
    """The declared shape of a past input at length 0: free dims -> 1 for the batch, 0 for the sequence."""
    dims = list(shape or [1, 1, 0, 1])
    out = []
    for i, d in enumerate(dims):
        known = isinstance(d, int) and d >= 0
        out.append(int(d) if known else (1 if i == 0 else 0))
    return out


def _present_for(past: str, outputs: list[str]) -> str | None:
    for candidate in (past.replace("past_key_values", "present"), past.replace("past", "present", 1)):
        if candidate != past and candidate in outputs:
            return candidate
    return None


def _experts(graph: ModelGraph, node: dict) -> int | None:
    """The router's expert count: the last dim of the 2-D weight of the nearest MatMul/Gemm above the TopK."""
    producers = graph.producers()
    tensor = node["inputs"][0] if node["inputs"] else None
    for _ in range(4):
        nid = producers.get(tensor) if tensor else None
        if nid is None:
            return None
        data = graph.g.nodes[nid]
        for name in data["inputs"]:
            info = graph.tensors.get(name)
            if info is not None and info.is_initializer and info.shape and len(info.shape) == 2:
                return int(info.shape[-1])
        tensor = data["inputs"][0] if data["inputs"] else None
    return None


def decoder_io(graph: ModelGraph) -> DecoderIO:
    """The decoder's token input, logits output, KV pairs and routers, from the graph (ModelError if none)."""
    inputs = list(graph.inputs)
    dtype_of = lambda n: graph.tensors[n].dtype if n in graph.tensors else None  # noqa: E731
    ids = token_input(inputs, dtype_of)
    if ids is None:
        raise ModelError(f"{graph.path}: {not_a_decoder(inputs, dtype_of)}")
    logits = "logits" if "logits" in graph.outputs else (graph.outputs[0] if graph.outputs else None)
    if logits is None:
        raise ModelError(f"{graph.path}: the model has no outputs")
    kv, shapes = [], {}
    for name in inputs:
        if name == ids or "past" not in name.lower():
            continue
        present = _present_for(name, list(graph.outputs))
        info = graph.tensors.get(name)
        shapes[name] = _empty_shape(info.shape if info else None)
        if present:
            kv.append([name, present])
    if any(n != ids and n not in shapes for n in inputs):
        raise ModelError(f"{graph.path}: {not_a_decoder(inputs, dtype_of)}")
    routers, experts = {}, {}
    for nid, data in graph.g.nodes(data=True):
        if data.get("op_type") in ("TopK", "TopKV2") and len(data.get("outputs") or []) > 1:
            key = data.get("scope") or data.get("name") or nid
            routers[key] = data["outputs"][1]
            experts[key] = _experts(graph, data)
    return DecoderIO(ids, logits, kv, shapes, routers, experts)


def check_options(opts: GenerateOptions) -> None:
    if opts.steps < 1:
        raise UsageError("--steps must be at least 1")
    if opts.threads < 1:
        raise UsageError("--threads must be at least 1")
    if opts.kv not in KV_CHOICES:
        raise UsageError(f"--kv-cache must be one of {', '.join(KV_CHOICES)}")
    if opts.mode not in GENERATE_MODES:
        raise UsageError(f"--mode must be one of {', '.join(GENERATE_MODES)}")
    if opts.precision is not None and opts.precision not in PRECISIONS:
        raise UsageError(f"--precision must be one of {', '.join(PRECISIONS)}")
    if opts.memory is not None and opts.memory not in MEMORY_MODES:
        raise UsageError(f"--memory must be one of {', '.join(MEMORY_MODES)}")
    if not os.path.isfile(opts.model):
        raise ModelError(f"{opts.model}: no such file")
    if opts.mnn is not None:
        if not os.path.isfile(opts.mnn):
            raise ModelError(f"--mnn {opts.mnn}: no such file")
        if detect_format(opts.model) != "onnx":
            raise UsageError("--mnn goes with an .onnx MODEL (the reference)")
        if not MODES[opts.mode].runtime_only:
            raise UsageError(f"--mode {opts.mode} converts the .onnx; it does not apply to a given --mnn file")
    if opts.compare and detect_format(opts.model) != "onnx":
        raise UsageError(f"{opts.model}: --compare needs the ONNX model as the reference (give the .mnn with --mnn)")


def _mnn_settings(opts: GenerateOptions) -> tuple[str, str]:
    mode = MODES[opts.mode]
    return opts.precision or mode.precision, opts.memory or mode.memory


def _mnn_model(opts: GenerateOptions, run_dir: str, client: RunnerClient, on_event) -> tuple[str, dict | None]:
    """The .mnn the MNN side runs: MODEL itself, --mnn, or MODEL converted with the mode's settings."""
    if detect_format(opts.model) == "mnn":
        return opts.model, None
    if opts.mnn:
        return opts.mnn, None
    mode = MODES[opts.mode]
    settings = ConvertSettings(**dict(mode.settings))
    if mode.weight_bits is not None:
        settings.weight_quant_bits = mode.weight_bits
    target = os.path.join(run_dir, f"{os.path.splitext(os.path.basename(opts.model))[0]}.{opts.mode}.mnn")
    conv = convert_model(opts.model, target, settings, client=client, on_event=on_event, run_dir=run_dir,
                         reduce=False)
    if not conv.ok:
        raise ModelError(conv.failure(opts.model))
    return conv.output, {"mode": opts.mode, "settings": settings.describe(), "size_bytes": conv.size_bytes}


def _request(client: RunnerClient, io: DecoderIO, path: str, engine: str, prompt: list[int], opts: GenerateOptions,
             out_dir: str, use_kv: bool, *, precision="high", memory="normal", force=None, read=False,
             save_inputs=False, on_event=None, steps: int | None = None, op_split: bool = True) -> dict:
    payload = {"path": os.path.abspath(path), "engine": engine, "backend": opts.backend, "precision": precision,
               "memory": memory, "threads": opts.threads, "prompt": prompt, "steps": steps or opts.steps,
               "op_split": op_split,
               "ids_input": io.ids_input, "logits_output": io.logits_output,
               "kv": io.kv if use_kv else None, "kv_shapes": io.kv_shapes, "out_dir": out_dir,
               "read": list(io.routers.values()) if read else [], "save_inputs": save_inputs,
               "force": force, "eos": None if force is not None else opts.eos}
    return client.request("generate", payload, on_event=on_event, timeout=GENERATE_TIMEOUT)


def _softmax(x: np.ndarray) -> np.ndarray:
    z = x.astype(np.float64) - x.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def token_metrics(ref_logits: np.ndarray, mnn_logits: np.ndarray, k: int = TOPK_OVERLAP) -> dict:
    """Per step: top-1 agreement, top-k overlap (share of the reference's top k in MNN's), KL(ref || mnn)."""
    n = min(len(ref_logits), len(mnn_logits))
    ref, got = ref_logits[:n], mnn_logits[:n]
    agree = [bool(a == b) for a, b in zip(ref.argmax(-1), got.argmax(-1))]
    p, q = _softmax(ref), _softmax(got)
    kl = np.sum(p * (np.log(np.maximum(p, 1e-300)) - np.log(np.maximum(q, 1e-300))), axis=-1)
    k = min(k, ref.shape[-1])
    overlap = [len(set(np.argsort(-r)[:k]) & set(np.argsort(-g)[:k])) / k for r, g in zip(ref, got)]
    first = next((i for i, a in enumerate(agree) if not a), None)
    return {"agree_per_step": agree, "agreement_top1": (sum(agree) / n) if n else None,
            "first_mismatch_step": first, "kl_per_step": [float(v) for v in kl], "topk_overlap": overlap,
            "topk": k}


def routing_stats(ref: dict[str, np.ndarray], mnn: dict[str, np.ndarray], experts: dict) -> dict:
    """{router: {flips, tokens, load: {reference, mnn}, experts}}: a flip is a token whose expert *set* differs."""
    out = {}
    for key, r in ref.items():
        m = mnn.get(key)
        n_exp = experts.get(key) or int(max(r.max(initial=-1), m.max(initial=-1) if m is not None else -1) + 1)
        entry = {"experts": n_exp, "tokens": int(r.shape[0]),
                 "load": {"reference": np.bincount(r.reshape(-1).astype(np.int64), minlength=n_exp).tolist()}}
        if m is not None:
            n = min(len(r), len(m))
            entry["flips"] = int(sum(set(a.tolist()) != set(b.tolist()) for a, b in zip(r[:n], m[:n])))
            entry["flipped_tokens"] = [i for i in range(n) if set(r[i].tolist()) != set(m[i].tolist())]
            entry["load"]["mnn"] = np.bincount(m.reshape(-1).astype(np.int64), minlength=n_exp).tolist()
        out[key] = entry
    return out


def _read(result: dict, io: DecoderIO) -> dict[str, np.ndarray]:
    paths = result.get("read") or {}
    return {key: np.load(paths[t], allow_pickle=False) for key, t in io.routers.items() if t in paths}


def _decode(tokenizer: str, ids: list[int]) -> str:
    from tokenizers import Tokenizer
    return Tokenizer.from_file(tokenizer).decode(list(ids))


def _public(result: dict) -> dict:
    return {k: v for k, v in result.items() if k not in ("read", "step_inputs")}


def run_generate(opts: GenerateOptions, *, client: RunnerClient | None = None, store: RunStore | None = None,
                 on_event: EventHandler | None = None) -> dict:
    """Generate (and compare); returns the JSON-ready result with `run_id` and `run_dir` (see the module doc)."""
    check_options(opts)
    fmt = detect_format(opts.model)
    engine = protocol.ENGINE_MNN if opts.compare else engine_for(opts.model, opts.engine, opts.backend)
    if opts.compare and opts.engine not in (None, protocol.ENGINE_MNN):
        raise UsageError("--compare runs MNN against ONNX Runtime: --engine must be mnn (or left out)")
    if engine == protocol.ENGINE_MNN and opts.backend.upper() not in MNN_BACKENDS:
        raise UsageError(f"--backend '{opts.backend}': MNN backends are {', '.join(MNN_BACKENDS)}")
    if engine == protocol.ENGINE_ORT and (opts.precision not in (None, protocol.PRECISION_HIGH) or
                                          opts.memory not in (None, protocol.MEMORY_NORMAL)):
        raise UsageError("--precision and --memory are MNN settings; ONNX Runtime runs the .onnx model at fp32")
    prompt, lost = encode_prompt(opts.text, opts.tokenizer)
    graph = load_model(opts.model, native=False)
    io = decoder_io(graph)
    if opts.kv == "on" and not io.kv:
        raise UsageError(f"{opts.model}: --kv-cache on, but the graph has no past/present cache pairs")
    use_kv = bool(io.kv) and opts.kv != "off"
    limit = context_limit(GraphTable.from_graph(graph))
    capped, asked = None, opts.steps
    if limit is not None and not limit.fits(len(prompt), opts.steps):
        if opts.eos is None or limit.max_steps(len(prompt)) < 1:
            raise UsageError(f"{opts.model}: {limit.refusal(len(prompt), opts.steps)}")
        # with --eos the steps are an upper bound, not a promise: a run that may stop early was refused as if every
        # step ran; it runs up to the model's last position, said
        capped = (f"steps capped at {limit.max_steps(len(prompt))} of {opts.steps}: {limit.holds()} "
                  f"({limit.why()}); the run stops there if token {opts.eos} does not come first")
        opts = replace(opts, steps=limit.max_steps(len(prompt)))
    store, run_dir, warnings = open_run(store, "generate")
    if capped:
        warnings = [capped] + list(warnings)
    if lost:
        shown = ", ".join(repr(c) for c in lost[:12]) + (f" and {len(lost) - 12} more" if len(lost) > 12 else "")
        warnings = [f"{os.path.basename(opts.tokenizer)} has no token for {shown}: left out of the prompt, which is "
                    f"{len(prompt)} tokens"] + list(warnings)
    run_dir = str(run_dir)
    precision, memory = _mnn_settings(opts)
    settings = {k: v for k, v in asdict(opts).items()}
    settings.update(engine=engine, prompt_tokens=len(prompt))
    with client_or_own(client) as client:
        try:
            conversion = None
            path = opts.model
            if engine == protocol.ENGINE_MNN and (fmt == "onnx" or opts.mnn):
                path, conversion = _mnn_model(opts, run_dir, client, on_event)
            elif engine == protocol.ENGINE_ORT:
                precision, memory = protocol.PRECISION_HIGH, protocol.MEMORY_NORMAL
            main, failure = _main_run(client, io, path, engine, prompt, opts, run_dir, use_kv, precision, memory,
                                      on_event)
            effective, check, notes = _precision_effect(client, io, path, prompt, opts, run_dir, use_kv, main,
                                                        memory, on_event)
            result = dict(_public(main), model=os.path.abspath(opts.model), run_model=os.path.abspath(path),
                          mode=opts.mode if engine == protocol.ENGINE_MNN else None, conversion=conversion,
                          text=_decode(opts.tokenizer, main["tokens"]), prompt=opts.text, prompt_ids=prompt,
                          routers=list(io.routers), steps_requested=asked,
                          context=limit.to_json() if limit is not None else None, error=failure,
                          precision_requested=main.get("precision"), precision_effective=effective,
                          precision_check=check,
                          # why it is off ("KV cache off" beside KV auto read as a setting ignored: helper 82's try)
                          kv_cache_why=None if use_kv else ("off as asked" if io.kv else
                                                            "the graph has no past/present inputs"))
            result["warnings"] = list(result.get("warnings") or []) + notes
            if failure is not None:
                result["warnings"].append(failure["message"])
            if opts.compare:
                result.update(_compare(opts, io, client, store, prompt, path, run_dir, use_kv, precision,
                                       memory, on_event, steps=main["steps"], main_tokens=main["tokens"]))
        except RunnerError as e:
            if store is not None:
                record(store, kind="generate", model_path=opts.model, settings=settings,
                       backend_requested=opts.backend.upper(), precision=precision, run_dir=run_dir,
                       summary={"error": {"kind": e.kind, "message": e.message}})
            raise
    result["run_id"], problem = record(store, kind="generate", model_path=opts.model, settings=settings,
                                       backend_requested=result.get("backend_requested"),
                                       backend_used=result.get("backend_used"), precision=result.get("precision"),
                                       summary=result, run_dir=run_dir) if store is not None else (None, None)
    result["warnings"] = list(result.get("warnings") or []) + warnings + ([problem] if problem else [])
    result["run_dir"] = run_dir
    return result


def _main_run(client, io, path, engine, prompt, opts, run_dir, use_kv, precision, memory,
              on_event) -> tuple[dict, dict | None]:
    """The generation asked for, and None; or, after a run that failed mid-way with `partial`, the longest run
    that succeeds and the failure {kind, message, step} (without `partial` the failure is raised, naming its step)."""
    try:
        return _request(client, io, path, engine, prompt, opts, os.path.join(run_dir, "main"), use_kv,
                        precision=precision, memory=memory, on_event=on_event), None
    except RunnerError as e:
        if e.kind != protocol.RUN_FAILED:
            raise
        failed = e
    good, step = (_last_good(client, io, path, engine, prompt, opts, run_dir, use_kv, precision, memory, on_event)
                  if opts.steps > 1 else (None, 0))
    message = step_failure(failed.message, step, len(prompt))
    if good is None:  # the prompt itself failed: MNN's own words stand, but for a position overflow
        if message == failed.message:
            raise failed
        raise RunnerError(failed.kind, message, failed.detail)
    if not opts.partial:
        raise RunnerError(failed.kind, message, failed.detail)
    # the per-op split is one prefill- and one decode-shaped run, whatever the steps: measured once, not per probe
    good["op_split"] = _request(client, io, path, engine, prompt, opts, os.path.join(run_dir, "main_op_split"),
                                use_kv, precision=precision, memory=memory, on_event=on_event, steps=1)["op_split"]
    return good, {"kind": failed.kind, "message": message, "step": step}


def _last_good(client, io, path, engine, prompt, opts, run_dir, use_kv, precision, memory,
               on_event) -> tuple[dict | None, int]:
    """(the longest run of fewer than opts.steps steps that succeeds, or None; the step that fails), by bisection
    over shorter runs (a failure at step k fails every run of more than k steps). Runs only after a failure."""
    lo, hi, good = 1, opts.steps, None  # every run of fewer than lo steps succeeds; a run of hi steps fails
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            good = _request(client, io, path, engine, prompt, opts, os.path.join(run_dir, f"main_{mid}_steps"),
                            use_kv, precision=precision, memory=memory, on_event=on_event, steps=mid,
                            op_split=False)
            lo = mid + 1
        except RunnerError as e:
            if e.kind != protocol.RUN_FAILED:
                raise
            hi = mid
    return (good if good is not None and good["steps"] == hi - 1 else None), hi - 1


def _precision_effect(client, io, path, prompt, opts, run_dir, use_kv, main, memory,
                      on_event) -> tuple[str | None, dict | None, list[str]]:
    """(precision_effective, precision_check, warnings) of the main run, as runner/profile.py decides them for a
    profile: a low precision MNN may not run as asked is checked against a precision-high run fed the same
    tokens (teacher-forced on the main run's own), bit-identical logits at every step meaning no effect."""
    requested = main.get("precision")
    if main.get("engine") != protocol.ENGINE_MNN or requested in (None, protocol.PRECISION_HIGH,
                                                                   protocol.PRECISION_NORMAL):
        return requested, None, []
    used = main.get("backend_used")
    if used != "CPU":
        return requested, None, [f"precision '{requested}' on {used} was not verified"]
    fp16 = bool((client.hello().get("cpu") or {}).get("fp16"))
    if requested == protocol.PRECISION_LOW and fp16:
        return requested, None, []
    high = _request(client, io, path, protocol.ENGINE_MNN, prompt, opts, os.path.join(run_dir, "precision_high"),
                    use_kv, precision=protocol.PRECISION_HIGH, memory=memory, force=main["tokens"],
                    steps=main["steps"], op_split=False, on_event=on_event)
    a = np.load(main["logits_path"], allow_pickle=False)
    b = np.load(high["logits_path"], allow_pickle=False)
    identical = a.shape == b.shape and bool(np.array_equal(a, b))
    check = {"compared_with": protocol.PRECISION_HIGH, "identical": identical, "steps": int(len(a)),
             "logits_path": high["logits_path"],
             "max_abs_diff": 0.0 if identical or a.shape != b.shape else float(np.max(np.abs(a - b)))}
    if not identical:
        return requested, check, []
    why = "this CPU reports no fp16 arithmetic" if not fp16 else "no bf16 kernels ran"
    return protocol.PRECISION_HIGH, check, [f"Precision '{requested}' had no effect on this CPU: the logits of "
                                            f"every step are bit-identical to precision 'high' ({why})"]


def _compare(opts, io, client, store, prompt, mnn_path, run_dir, use_kv, precision, memory, on_event, *,
             steps: int | None = None, main_tokens: list[int] = ()) -> dict:
    ref = _request(client, io, opts.model, protocol.ENGINE_ORT, prompt, opts, os.path.join(run_dir, "reference"),
                   use_kv, force=None, read=bool(io.routers), save_inputs=True, on_event=on_event, steps=steps)
    forced = _request(client, io, mnn_path, protocol.ENGINE_MNN, prompt, opts, os.path.join(run_dir, "forced"),
                      use_kv, precision=precision, memory=memory, force=ref["tokens"], read=bool(io.routers),
                      on_event=on_event, steps=steps)
    ref_logits = np.load(ref["logits_path"], allow_pickle=False)
    mnn_logits = np.load(forced["logits_path"], allow_pickle=False)
    out = token_metrics(ref_logits, mnn_logits)
    out["reference"] = dict(_public(ref), text=_decode(opts.tokenizer, ref["tokens"]))
    # where MNN's own (free-run) tokens leave the reference's: the texts differ from there, whatever the
    # teacher-forced agreement says about the steps after it
    parts = next((i for i, (a, b) in enumerate(zip(main_tokens, ref["tokens"])) if a != b), None)
    out["free_run_mismatch_step"] = parts
    out["common_text"] = _decode(opts.tokenizer, ref["tokens"][:parts] if parts is not None else ref["tokens"])
    out["teacher_forced"] = {k: forced.get(k) for k in ("argmax", "logits_path", "steps")}
    out["routing"] = routing_stats(_read(ref, io), _read(forced, io), io.experts) if io.routers else None
    out["first_divergence"] = None
    step = out["first_mismatch_step"]
    if step is not None and opts.layerwise:
        out["first_divergence"] = _layerwise(opts, client, store, ref["step_inputs"][step], mnn_path, step,
                                             os.path.join(run_dir, f"compare_step{step}"), on_event)
    return out


def _layerwise(opts, client, store, inputs_npz: str, mnn_path: str, step: int, work: str, on_event) -> dict:
    """compare's layerwise result for one step's inputs: the first divergence and the mode's output rows.

    Judged at the fp32 tolerance whatever the mode: the step is known to be wrong (its argmax differs), so
    the question is where the error starts, not whether it stays within what the mode usually delivers
    (int4w's own tolerance, 0.2 of the max, passes the logits that flipped the token on moe_llm)."""
    mode = MODES[opts.mode]
    options = CompareOptions(modes=[opts.mode], threads=opts.threads, fix=False, keep=True,
                             tolerance=DEFAULT_TOLERANCES["fp32"],
                             mnn_path=mnn_path if mode.runtime_only else None)
    try:
        res = compare_model(opts.model, options, inputs={"files": {"*": inputs_npz}}, client=client, store=store,
                            work_dir=work, on_event=on_event)
    except (ModelError, UsageError, RunnerError) as e:
        return {"step": step, "mode": opts.mode, "error": str(getattr(e, "message", e)), "node": None}
    row = res["modes"][0] if res.get("modes") else {}
    fd = row.get("first_divergence")
    # what colours the graph by the error each op introduces at this step (compare.errormap.error_overlay): the
    # Text dock selected the node and left the graph in its op colours (a new-user try)
    errors = {k: row.get(k) for k in ("mode", "ranking", "tensors", "unmatched", "harmless", "tolerance",
                                      "first_divergence", "verdict") if k in row}
    return {"step": step, "mode": opts.mode, "inputs": inputs_npz, "error": row.get("error"),
            "node": fd.get("onnx_node") if fd else None, "first_divergence": fd, "outputs": row.get("outputs"),
            "tolerance": row.get("tolerance"), "work_dir": res.get("work_dir"), "compare_run_id": res.get("run_id"),
            "errors": errors if row.get("ranking") is not None else None}
