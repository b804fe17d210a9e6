"""The `generate` request: greedy decoding of a decoder-only LM for N steps, timed per step.

Engine-agnostic (runner/engine.py): one engine is loaded once and fed step after step. Step 0 (prefill)
feeds the prompt, every later step the token the previous step chose. With a KV cache (`kv`: pairs of
past input -> present output) a decode step feeds one token and the previous step's present tensors;
without one it feeds the whole sequence again. Timing of a step = feed (MNN resizes the session when the
shapes change) + one uninstrumented run + reading the logits and taking the argmax: what a caller waits for
that token. Prefill is step 0 (time to first token); decode figures are over steps 1..N-1.

Payload:
    path, engine (default from the suffix), backend, precision, memory, threads   as for `profile`
    prompt      [int]   token ids of the prompt (>= 1)
    steps       int     tokens to generate (>= 1)
    ids_input   str     the token-id input (default "input_ids"); logits_output: the logits output
                        (default "logits", [1, seq, vocab] or [1, vocab])
    kv          [[past input, present output], ...] or null: with a cache. `kv_shapes` {past input:
                dims} gives each past input's shape at length 0 (the growing axis given as 0); past inputs
                in kv_shapes but not in kv are fed empty at every step (a cache model run without its cache)
    force       [int]   teacher forcing: the token fed after step i is force[i] (argmax still recorded)
    eos         int     stop after a step that chose this id (ignored with `force`)
    read        [str]   tensors read at every step, e.g. the routers' TopK indices (ONNX Runtime: as extra
                        graph outputs of the timed run, from a copy of the model in out_dir; MNN: kept with
                        saveTensors and read in one more, untimed run); the rows of the new tokens are kept
                        (a tensor whose first axis is the fed sequence length keeps its last rows, one per
                        new token)
    out_dir     str     where logits.npy ([steps, vocab], fp32), read_<i>.npy and step inputs go
    save_inputs bool    write each step's inputs as step<k>.npz (for a layerwise comparison of a step)
    warmup      int     untimed one-token runs first (default 1): the first run of a session pays one-off
                        costs (ONNX Runtime: about 50 ms on moe_llm) that are not the model's prefill; the
                        timed prefill still pays for sizing the session to the prompt
    op_split    bool    (default true) after the timed loop, per-op times of one prefill-shaped run (the
                        prompt) and one decode-shaped run (one token, with the cache after the prompt), in an
                        engine of their own with per-op timing on (it would slow the loop's own runs)

Result: {engine, version, api, fallback_reason, backend_requested, backend_used, precision, memory, threads, kv_cache,
steps, prompt_tokens, tokens (the fed/chosen ids), argmax (each step's argmax), prefill_ms, decode_ms
[per decode step], decode_ms_per_token (median), tokens_per_s (decode steps / their total time; prefill
alone when steps == 1), total_ms, memory_mb (MNN session memory at the end), logits_path, read
{tensor: path}, step_inputs [paths], op_split (see _op_split; null where the engine cannot time ops),
warnings}.
"""
from __future__ import annotations

import os
import time
from dataclasses import replace

import numpy as np

from mnnscope.runner import protocol
from mnnscope.runner.engine import Settings, engine_class, engine_for_path, with_fallback
from mnnscope.runner.protocol import RunnerError


def _ints(values, what: str) -> list[int]:
    try:
        out = [int(v) for v in values or []]
    except (TypeError, ValueError):
        raise RunnerError(protocol.BAD_REQUEST, f"generate: {what} must be a list of integers")
    return out


def _with_outputs(path: str, names: list[str], out_dir: str) -> str:
    """A copy of an ONNX model (no external data) with `names` as extra graph outputs: ORT then returns the
    routers' tensors from the same run instead of a second session per step."""
    import onnx
    model = onnx.load(path, load_external_data=False)
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer):
        return path
    known = {o.name for o in model.graph.output}
    for n in names:
        if n not in known:
            model.graph.output.append(onnx.ValueInfoProto(name=n))
    dst = os.path.join(out_dir, "with_read_outputs.onnx")
    onnx.save(model, dst)
    return dst


def generate(job) -> dict:
    p = job.payload
    path = p.get("path")
    if not path or not os.path.isfile(path):
        raise RunnerError(protocol.BAD_MODEL, f"{path}: no such model file")
    name = engine_for_path(path, p.get("engine"))
    cls = engine_class(name)
    prompt = _ints(p.get("prompt"), "prompt")
    steps = int(p.get("steps") or 0)
    if not prompt or steps < 1:
        raise RunnerError(protocol.BAD_REQUEST, "generate needs a prompt of at least one token and steps >= 1")
    force = _ints(p.get("force"), "force") if p.get("force") is not None else None
    if force is not None and len(force) < steps - 1:
        raise RunnerError(protocol.BAD_REQUEST, f"generate: force holds {len(force)} tokens, {steps - 1} needed")
    ids_input = p.get("ids_input") or "input_ids"
    logits_output = p.get("logits_output") or "logits"
    kv = [tuple(pair) for pair in p.get("kv") or []]
    kv_shapes = {k: [int(d) for d in v] for k, v in (p.get("kv_shapes") or {}).items()}
    read = list(p.get("read") or [])
    out_dir = p.get("out_dir")
    if not out_dir:
        raise RunnerError(protocol.BAD_REQUEST, "generate needs out_dir")
    os.makedirs(out_dir, exist_ok=True)
    eos = p.get("eos")
    model_path = path
    if read and name == protocol.ENGINE_ORT:
        model_path = _with_outputs(path, read, out_dir)
    read_by_outputs = model_path != path
    settings = Settings(backend=str(p.get("backend") or protocol.DEFAULT_BACKEND),
                        precision=p.get("precision") or protocol.PRECISION_HIGH,
                        memory=p.get("memory") or protocol.MEMORY_NORMAL, threads=int(p.get("threads") or 1),
                        op_timing=False, keep=tuple(read) if read and not read_by_outputs else None)

    feeds: dict[str, dict] = {}

    def use(engine, reason):
        warnings = [f"ran with the {engine.title}: {reason}"] if reason else []
        seq: list[int] = list(prompt)
        # Every past input starts empty; without `kv` pairs (cache off on a model that has one) it stays empty
        # and the whole sequence is fed at every step.
        past = {k: np.zeros(shape, np.float32) for k, shape in kv_shapes.items()}
        past.update({k: np.zeros(kv_shapes.get(k, [1, 1, 0, 1]), np.float32) for k, _ in kv if k not in past})
        chosen, argmax, step_ms, logits_rows = [], [], [], []
        rows: dict[str, list[np.ndarray]] = {n: [] for n in read}
        step_inputs = []
        feeds["prefill"] = dict(past, **{ids_input: np.array([seq], np.int64)})
        for _ in range(max(0, int(p.get("warmup", 1)))):  # one token: the timed prefill still resizes
            engine.feed(dict(past, **{ids_input: np.array([seq[:1]], np.int64)}))
            engine.run()
        for step in range(steps):
            job.check_cancel()
            new = seq if (step == 0 or not kv) else seq[-1:]
            feed = {ids_input: np.array([new], np.int64)}
            feed.update(past)
            t0 = time.perf_counter()
            problems = engine.feed(feed)
            engine.timed_run(per_op=False)
            outs = engine.outputs()
            if logits_output not in outs:
                raise RunnerError(protocol.BAD_MODEL, f"{path}: no output '{logits_output}' "
                                                      f"(outputs: {', '.join(outs)})")
            logits = np.asarray(outs[logits_output], np.float32)
            last = logits.reshape(-1, logits.shape[-1])[-1]
            top = int(np.argmax(last))
            step_ms.append((time.perf_counter() - t0) * 1e3)
            if step == 0:
                warnings.extend(problems)
            if p.get("save_inputs"):
                dst = os.path.join(out_dir, f"step{step}.npz")
                np.savez(dst, **feed)
                step_inputs.append(dst)
            logits_rows.append(last.copy())
            argmax.append(top)
            if read:
                got = outs if read_by_outputs else {}
                if not read_by_outputs:
                    engine.read_tensors(lambda op, n, v: got.__setitem__(n, v), read)
                for n in read:
                    value = got.get(n)
                    if value is None or isinstance(value, Exception):
                        raise RunnerError(protocol.RUN_FAILED, f"{path}: tensor '{n}' could not be read ({value})")
                    arr = np.asarray(value)
                    fresh = len(prompt) if step == 0 else 1  # tokens this step adds to the sequence
                    if arr.ndim > 1 and arr.shape[0] == len(new):
                        arr = arr[-fresh:]
                    rows[n].append(arr.reshape(fresh, -1) if arr.size % fresh == 0 else arr.reshape(1, -1))
            token = force[step] if (force is not None and step < len(force)) else top
            chosen.append(token)
            if kv:
                for past_name, present_name in kv:
                    if present_name not in outs:
                        raise RunnerError(protocol.BAD_MODEL, f"{path}: no output '{present_name}' for the cache")
                    past[past_name] = np.array(outs[present_name], np.float32, copy=True)
            seq.append(token)
            if step == 0:
                feeds["decode"] = dict(past, **{ids_input: np.array([seq if not kv else seq[-1:]], np.int64)})
            if eos is not None and force is None and top == int(eos):
                break
        facts = engine.facts()
        logits_path = os.path.join(out_dir, "logits.npy")
        np.save(logits_path, np.stack(logits_rows).astype(np.float32), allow_pickle=False)
        read_paths = {}
        for i, n in enumerate(read):
            dst = os.path.join(out_dir, f"read_{i}.npy")
            np.save(dst, np.concatenate(rows[n], axis=0), allow_pickle=False)
            read_paths[n] = dst
        decode = step_ms[1:]
        return {"engine": name, "version": cls.version(), "api": engine.api, "fallback_reason": reason,
                "backend_requested": settings.backend.upper(), "backend_used": facts.get("backend_used"),
                "precision": settings.precision if "precision" in engine.honours else None,
                "memory": settings.memory if "memory" in engine.honours else None, "threads": settings.threads,
                "kv_cache": bool(kv), "steps": len(step_ms), "prompt_tokens": len(prompt), "tokens": chosen,
                "argmax": argmax, "prefill_ms": step_ms[0], "decode_ms": decode,
                "decode_ms_per_token": float(np.median(decode)) if decode else None,
                "tokens_per_s": (len(decode) / (sum(decode) / 1e3)) if decode else 1e3 / step_ms[0],
                "total_ms": sum(step_ms), "memory_mb": facts.get("memory_mb"), "logits_path": logits_path,
                "read": read_paths, "step_inputs": step_inputs,
                "warnings": warnings + list(facts.get("warnings") or [])}

    result = with_fallback(job, name, model_path, settings, use)
    result["op_split"] = None
    if p.get("op_split", True) and "decode" in feeds:
        try:
            result["op_split"] = with_fallback(job, name, path, replace(settings, op_timing=True, keep=None),
                                               lambda engine, reason: _op_split(engine, feeds))
        except RunnerError as e:
            if e.kind == protocol.CANCELLED:
                raise
            result["warnings"].append(f"per-op split of prefill and decode not measured: {e.message}")
    return result


SPLIT_TOP = 15  # ops listed per phase (every op type is in by_type)
SPLIT_RUNS = 3  # timed runs per phase; each op's time is its median over them (one run is noisy)


def _op_split(engine, feeds: dict[str, dict]) -> dict | None:
    """Per-op ms of one prefill-shaped and one decode-shaped run: {prefill_ms, decode_ms (the two runs'
    per-op totals), by_type {op type: {prefill_ms, decode_ms}} (slowest in decode first), ops [{name, type,
    prefill_ms, decode_ms}] (the SPLIT_TOP slowest of either phase)}; None where the engine has no per-op
    times (the MNN Module API). MNN needs an instrumented run first (it lists the ops the timed run then
    times); ONNX Runtime profiles every run of the session and reports them when profiling ends."""
    per_phase: dict[str, list[tuple[str, str, float]]] = {}
    if engine.name == protocol.ENGINE_MNN:
        for phase in ("prefill", "decode"):
            engine.feed(feeds[phase])
            engine.run(events=True)
            for _ in range(SPLIT_RUNS):
                engine.timed_run(per_op=True)
            ops, runs = engine.op_table()
            if not ops or not runs:
                return None
            per_phase[phase] = _median_rows(ops, runs[-SPLIT_RUNS:])
    else:
        for phase in ("prefill", "decode"):
            engine.feed(feeds[phase])
            for _ in range(SPLIT_RUNS):
                engine.timed_run(per_op=True)
        ops, runs = engine.op_table()
        if not ops or not runs or len(runs) < 2 * SPLIT_RUNS:
            return None
        per_phase["prefill"] = _median_rows(ops, runs[-2 * SPLIT_RUNS:-SPLIT_RUNS])
        per_phase["decode"] = _median_rows(ops, runs[-SPLIT_RUNS:])
    by_type: dict[str, dict] = {}
    by_op: dict[str, dict] = {}
    for rows in per_phase.values():
        if not rows:
            return None
    for phase, rows in per_phase.items():
        for op_name, op_type, ms in rows:
            t = by_type.setdefault(op_type, {"prefill_ms": 0.0, "decode_ms": 0.0})
            t[f"{phase}_ms"] += float(ms)
            o = by_op.setdefault(op_name, {"name": op_name, "type": op_type, "prefill_ms": 0.0, "decode_ms": 0.0})
            o[f"{phase}_ms"] += float(ms)
    top = sorted(by_op.values(), key=lambda o: -max(o["prefill_ms"], o["decode_ms"]))[:SPLIT_TOP]
    return {"prefill_ms": sum(ms for _, _, ms in per_phase["prefill"]),
            "decode_ms": sum(ms for _, _, ms in per_phase["decode"]),
            "by_type": dict(sorted(by_type.items(), key=lambda kv: -kv[1]["decode_ms"])), "ops": top,
            "op_count": {phase: len(rows) for phase, rows in per_phase.items()}}


def _median_rows(ops: list[dict], runs: list[list[float]]) -> list[tuple[str, str, float]]:
    times = np.median(np.array([[0.0 if ms is None else ms for ms in run[:len(ops)]] for run in runs]), axis=0)
    return [(o["name"], o["type"], float(ms)) for o, ms in zip(ops, times)]
