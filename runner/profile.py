"""The `profile` request: run a model, time it per operator, read its tensors.

`profile` payload (every key but `path` and `inputs` optional):
    path            str   absolute path of the model: .mnn (engine "mnn") or .onnx (engine "ort")
    engine          str   a registered engine (runner/engine.py: "mnn", "ort", or one a plugin registers);
                          default from the suffix (.onnx -> "ort")
    inputs          str   .npz file holding every model input, arrays named by input (any int/bool dtype:
                          the MNN side casts int64/bool to int32)
    backend         str   MNN backend (CPU, OPENCL, VULKAN, CUDA, METAL, ...) or ORT provider ("CPU",
                          "CUDA" or a full provider name); default "CPU"
    precision       str   "high" | "low" | "low_bf16" (MNN only); default "high"
    memory          str   "normal" | "low" (MNN only); default "normal"
    threads         int   >= 1; default 1
    runs            int   timed runs, >= 1; default 10
    warmup          int   untimed runs first, >= 1 (the first one sends op_begin/op_end events, so a crash
                          names its operator; timed runs send no per-op events); default 2
    stats           bool  one more run reading every op output: statistics per tensor; default false
    stats_outputs_per_run int  ORT: node outputs held at once in the statistics run (more means more
                          memory, fewer recomputations); default 256
    save            str   which tensors become .npy files in run_dir: "outputs" (model outputs), "all"
                          (every tensor of the stats run too), "none"; default "outputs"
    run_dir         str   folder for .npy files and ORT's profile (created); required unless save is "none"
    optimization    str   ORT graph optimization "all" | "extended" | "basic" | "none"; default "all"
    check_precision bool  decide whether a low precision had any effect (see below); default true
    plain           bool  MNN: also time runSession without callbacks, interleaved; default true
    tensor_names    dict  MNN: {op name in the .mnn: [its output tensor names]}, so that statistics are
                          keyed by tensor name even where the converter fused ops and the op name is
                          another tensor's (inspector reads it from the file); without it, outputs
                          are named after their op (right for unfused ops only)

`profile` result:
    engine, path, api ("interpreter" | "module" | "onnxruntime"), backend_requested, backend_used,
    backend_note (why they differ, or null), precision_requested, precision_effective, precision_check
    ({compared_with, identical, max_abs_diff} or null), memory_mode, threads, threads_used, runs, warmup,
    total_ms / total_ms_min / total_ms_max (wall time of the timed runs: median, min, max), first_run_ms,
    stats_ms (wall time of the statistics run, tensor reading and saving included; null without stats),
    plain_ms (median runSession without callbacks; MNN Interpreter only), ops_sum_ms (sum of op medians),
    timing_inflated (the timed runs took INFLATED times the plain runs or more: a warning says so),
    runs_ms / runs_ops_sum_ms / plain_runs_ms (MNN Interpreter: each timed run's wall time and sum of its op
    times, each plain run's wall time, in run order),
    timing ("per_op" | "total_only"), timing_unavailable (the reason, or null), flops (total, as MNN counts),
    ops [{index, name, type, ms, ms_min, ms_max, flops, outputs (with stats): [{name, shape, dtype, min, max,
    mean, std, nan, inf, zero_fraction, hist, path?}]}], nodes (ORT with stats: every ONNX node and its
    outputs, unoptimized), outputs [model outputs: {name, shape, dtype, path, stats...}], inputs
    [{name, shape, dtype}], memory_mb (MNN session memory), rss_peak_mb (runner peak RSS during the job),
    warnings [str].

Precision: when the CPU has no fp16 arithmetic (MNN's banner, fp16:0) a "low" request, and any
"low_bf16" request (no reliable flag), is checked by running a "high" session on the same inputs: bit-
identical outputs mean it had no effect, precision_effective is then "high" and a warning says so.

`sweep` (runner/sweep.py) takes the same payload plus a matrix of cells.

This handler is engine-agnostic: it drives an engine (runner/engine.py) through load, feed, run, timed
runs, op_table, read_tensors and facts; which result fields an engine fills follows from its class
attributes (plain_runs, honours, reads_run_ops) and from what op_table returns.
"""
from __future__ import annotations

import os
import re
import time

import numpy as np

from mnnscope.runner import protocol
from mnnscope.runner.engine import Settings, engine_class, engine_for_path, read_inputs, with_fallback
from mnnscope.runner.protocol import RunnerError
from mnnscope.runner.stats import median_spread, peak_rss_mb, reset_peak_rss, tensor_stats

DEFAULTS = {"engine": None, "backend": protocol.DEFAULT_BACKEND, "precision": protocol.PRECISION_HIGH,
            "memory": protocol.MEMORY_NORMAL, "threads": 1, "runs": 10, "warmup": 2, "stats": False,
            "save": "outputs", "run_dir": None, "optimization": "all", "check_precision": True, "plain": True}
_FULL_PRECISION = (protocol.PRECISION_HIGH, protocol.PRECISION_NORMAL)
PROGRESS_RUN_MS = 100.0  # timed runs at least this long say their progress run by run (shorter ones: one event)
# per-op timed runs this many times slower than the plain runs interleaved with them (and by this many ms) say so
INFLATED, INFLATED_MS = 1.5, 0.05


def inflated_timing(total: float | None, plain: float | None, ops: list[dict]) -> str | None:
    """A warning where the per-op timed runs took far longer than the plain runs beside them (same session, same
    inputs, interleaved): the op times then hold time a plain run does not spend, the callbacks' own cost over many
    tiny ops or something else busy during those runs. A new user's decoder read 0.83 ms per run in the Profile dock
    with /Gemm at 0.62 ms (80%, ten runs alike), 0.03 ms in every other profile; its plain runs took 0.167 ms."""
    if not total or not plain or total < INFLATED * plain or total - plain < INFLATED_MS:
        return None
    excess = total - plain
    text = (f"per-op timing inflated: the timed runs took {total:.3g} ms each, the plain runs beside them "
            f"{plain:.3g} ms ({total / plain:.1f}x), so the op times hold {excess:.3g} ms per run that the model "
            "does not spend")
    top = max(ops, key=lambda o: o.get("ms") or 0.0, default=None)
    if top and (top.get("ms") or 0.0) > excess / 2:
        text += (f", most of it in one op, {top['name']} ({top['ms']:.3g} ms): something else was busy during "
                 "those runs; profile again")
    else:
        text += (f" (the timing callbacks' own cost, {excess / max(len(ops), 1) * 1e3:.2g} \u00b5s per op over "
                 f"{len(ops)} ops, or something else busy during those runs)")
    return text + f"; {plain:.3g} ms is the run's time"


def read_settings(payload: dict) -> dict:
    p = dict(DEFAULTS)
    p.update({k: v for k, v in (payload or {}).items() if v is not None})
    path = p.get("path")
    if not path or not os.path.isfile(path):
        raise RunnerError(protocol.BAD_MODEL, f"{path}: no such file")
    if not p.get("inputs") or not os.path.isfile(p["inputs"]):
        raise RunnerError(protocol.BAD_REQUEST, f"inputs file missing: {p.get('inputs')}")
    p["engine"] = engine_for_path(path, p["engine"])
    cls = engine_class(p["engine"])
    suffix = os.path.splitext(path)[1].lower()
    if cls.suffixes and suffix not in cls.suffixes:
        hint = "; convert the ONNX model first" if suffix == ".onnx" else ""
        raise RunnerError(protocol.BAD_REQUEST, f"{path}: {cls.title} runs {', '.join(cls.suffixes)} files{hint}")
    for key in ("threads", "runs", "warmup"):
        try:
            p[key] = int(p[key])
        except (TypeError, ValueError):
            raise RunnerError(protocol.BAD_REQUEST, f"'{key}' must be an integer")
    if p["threads"] < 1 or p["runs"] < 1:
        raise RunnerError(protocol.BAD_REQUEST, "threads and runs must be at least 1")
    p["warmup"] = max(1, p["warmup"])
    if p["save"] not in protocol.SAVE_MODES:
        raise RunnerError(protocol.BAD_REQUEST, f"unknown save mode '{p['save']}' ({', '.join(protocol.SAVE_MODES)})")
    if p["save"] != "none" and not p["run_dir"]:
        raise RunnerError(protocol.BAD_REQUEST, "run_dir is required to save tensors")
    if p["run_dir"]:
        os.makedirs(p["run_dir"], exist_ok=True)
    p["backend"] = str(p["backend"] or protocol.DEFAULT_BACKEND)
    return p


def engine_settings(p: dict, **changes) -> Settings:
    s = Settings(backend=p["backend"], precision=p["precision"], memory=p["memory"], threads=int(p["threads"]),
                 optimization=p["optimization"], run_dir=p.get("run_dir"), tensor_names=p.get("tensor_names"),
                 outputs_per_run=p.get("stats_outputs_per_run"))
    return s.but(**changes) if changes else s


class TensorSaver:
    """Writes tensors as .npy (allow_pickle=False) under run_dir/tensors and tells the client (tensor_ref)."""

    def __init__(self, job, run_dir: str | None, mode: str):
        self.job, self.mode = job, mode
        self.folder = os.path.join(run_dir, "tensors") if run_dir else None
        self.used: set[str] = set()

    def save(self, name: str, arr: np.ndarray) -> str | None:
        if self.folder is None or self.mode == "none":
            return None
        os.makedirs(self.folder, exist_ok=True)
        base = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[:120] or "tensor"
        stem, k = base, 1
        while stem in self.used:
            stem, k = f"{base}.{k}", k + 1
        self.used.add(stem)
        path = os.path.join(self.folder, stem + ".npy")
        np.save(path, np.ascontiguousarray(arr), allow_pickle=False)
        self.job.event("tensor_ref", {"name": name, "path": path, "shape": list(arr.shape), "dtype": str(arr.dtype)})
        return path

    def keep_all(self, name: str, arr: np.ndarray) -> str | None:
        """The stats pass's hook: only in "all" mode (model outputs are saved once, by `outputs`)."""
        return self.save(name, arr) if self.mode == "all" else None


def _output_entries(outputs: dict[str, np.ndarray], saver: TensorSaver) -> list[dict]:
    entries = []
    for name, arr in outputs.items():
        entry = {"name": name}
        entry.update(tensor_stats(arr))
        entry["path"] = saver.save(name, arr)
        entries.append(entry)
    return entries


def _ops(ops: list[dict], per_run: list[list[float]] | None) -> list[dict]:
    """The op table of a result: median/min/max per op over the timed runs (None without per-op times)."""
    table = np.asarray(per_run, np.float64) if per_run else np.zeros((0, len(ops)))
    out = []
    for i, op in enumerate(ops):
        col = table[:, i].tolist() if table.size else []
        ms, lo, hi = median_spread(col)
        out.append({"index": i, "name": op["name"], "type": op["type"], "ms": ms, "ms_min": lo, "ms_max": hi,
                    "flops": op.get("flops")})
    return out


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> tuple[bool, float]:
    identical, worst = True, 0.0
    for name, x in a.items():
        y = b.get(name)
        if y is None or y.shape != x.shape:
            return False, float("inf")
        if not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            identical = False
            diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
            worst = max(worst, float(np.nanmax(diff)) if diff.size else 0.0)
    return identical, worst


def reference_outputs(job, engine, inputs: dict) -> dict[str, np.ndarray]:
    """The outputs of the same engine at precision "high" on the same inputs (one plain run)."""
    with type(engine)(job, engine.path, engine.settings.but(precision=protocol.PRECISION_HIGH, keep=None,
                                                            op_timing=False)) as ref:
        ref.load()
        ref.feed(inputs)
        ref.run()
        return ref.outputs()


def precision_effect(job, engine, backend_used: str, outputs: dict[str, np.ndarray], inputs, *,
                     check: bool = True, reference: dict | None = None) -> tuple[str, dict | None, list[str]]:
    """(precision_effective, precision_check, warnings) for a run at the engine's precision.

    When the CPU has no fp16 arithmetic (MNN's banner) a "low" request, and any "low_bf16" request, is
    checked against a "high" run of the same engine: bit-identical outputs mean it had no effect."""
    requested = engine.settings.precision
    if "precision" not in engine.honours:
        return protocol.PRECISION_HIGH, None, []
    if requested in _FULL_PRECISION or not check:
        return requested, None, []
    if backend_used != "CPU":
        return requested, None, [f"precision '{requested}' on {backend_used} was not verified"]
    from mnnscope.runner.mnn_env import device_features
    fp16 = device_features().get("fp16", False)
    if requested == protocol.PRECISION_LOW and fp16:
        return requested, None, []
    if reference is None:
        reference = reference_outputs(job, engine, inputs)
    identical, worst = _same(outputs, reference)
    result = {"compared_with": protocol.PRECISION_HIGH, "identical": identical,
              "max_abs_diff": 0.0 if identical else worst}
    if identical:
        why = "this CPU reports no fp16 arithmetic" if not fp16 else "no bf16 kernels ran"
        return protocol.PRECISION_HIGH, result, [f"precision '{requested}' had no effect here: the outputs are "
                                                 f"bit-identical to precision 'high' ({why})"]
    return requested, result, []


def ignored_settings(engine, p: dict) -> list[str]:
    """Warnings for settings this engine does not apply."""
    out = []
    for key, default in (("precision", protocol.PRECISION_HIGH), ("memory", protocol.MEMORY_NORMAL)):
        if key not in engine.honours and p[key] != default:
            out.append(f"{key} '{p[key]}' is an MNN setting: ignored by {engine.title}")
    return out


def _stats_pass(engine, saver: TensorSaver) -> list[dict]:
    """One run reading every op output: [{name, type, outputs: [{name, stats..., path?} or {name, error}]}]."""
    ops: dict[int, dict] = {}

    def sink(op, name, value):
        entry_op = ops.setdefault(op["index"], {"name": op["name"], "type": op["type"], "outputs": []})
        if name is None:
            return
        entry = {"name": name}
        try:
            if isinstance(value, Exception):
                raise value
            arr = np.asarray(value)
            entry.update(tensor_stats(arr))
            path = saver.keep_all(name, arr)
            if path:
                entry["path"] = path
        except Exception as e:  # one unreadable tensor must not end the pass
            entry["error"] = f"unreadable: {e}"
        entry_op["outputs"].append(entry)

    engine.read_tensors(sink)
    return [ops[i] for i in sorted(ops)]


def _profile(job, p: dict, engine, reason: str | None, inputs: dict, saver: TensorSaver) -> dict:
    warnings = engine.feed(inputs) + ignored_settings(engine, p)
    job.progress(0.05, "warm-up run")
    first_ms = engine.run(events=True)
    for _ in range(p["warmup"] - 1):
        engine.run()
    walls, plain = [], []
    # No event between short timed runs: each one wakes the window (its progress bar and status repaint), and on a
    # two-core machine that work landed in the timed run just after it, at the same point of every run. Measured in
    # the real window on the romanizer decoder: with an event before each run, 3 to 4 profiles of 6 read /Gemm at
    # 0.45-0.6 ms (0.03 ms otherwise) in every per-op run, the plain runs beside them untouched; without, 0 of 8.
    job.progress(0.1, f"timing {p['runs']} runs")
    for i in range(p["runs"]):  # interleaved, so drift affects both the same way
        if i and walls[-1] >= PROGRESS_RUN_MS:  # long runs: the user wants to see it move, the repaint is noise there
            job.progress(0.1 + 0.7 * i / p["runs"], f"timed run {i + 1}/{p['runs']}")
        walls.append(engine.timed_run())
        if engine.plain_runs and p["plain"]:
            plain.append(engine.timed_run(per_op=False))
    outputs = engine.outputs()
    facts = engine.facts()
    warnings += facts.pop("warnings")
    op_list, per_run = engine.op_table()
    ops = _ops(op_list, per_run)
    result = dict(facts, api=engine.api, first_run_ms=first_ms, stats_ms=None, timing="per_op",
                  timing_unavailable=None)
    if per_run is None:
        why = f"{reason}; " if reason else ""
        unavailable = f"per-op timing is unavailable: {why}the {engine.title} ran it (whole-run times only)"
        result.update(timing="total_only", timing_unavailable=unavailable)
        warnings.append(unavailable)
    if p["stats"]:
        job.progress(0.85, "statistics run")
        t0 = time.perf_counter()
        read = _stats_pass(engine, saver)
        result["stats_ms"] = (time.perf_counter() - t0) * 1e3
        if engine.reads_run_ops:
            if len(read) != len(ops):
                raise RunnerError(protocol.INTERNAL,
                                  f"the statistics run saw {len(read)} ops, the timed runs {len(ops)}")
            for op, r in zip(ops, read):
                op["outputs"] = r["outputs"]
        else:
            by_name = {r["name"]: r["outputs"] for r in read}
            for op in ops:
                if op["name"] in by_name:
                    op["outputs"] = by_name[op["name"]]
            result["nodes"] = read
    elif not engine.reads_run_ops:
        result["nodes"] = None
    effective, check, extra = precision_effect(job, engine, facts["backend_used"], outputs, inputs,
                                               check=p["check_precision"])
    warnings += extra
    total, lo, hi = median_spread(walls)
    plain_ms = median_spread(plain)[0] if engine.plain_runs and plain else None
    inflated = inflated_timing(total, plain_ms, ops) if per_run is not None else None
    if inflated:
        warnings.append(inflated)
    result.update(precision_effective=effective, precision_check=check, total_ms=total, total_ms_min=lo,
                  total_ms_max=hi, plain_ms=plain_ms, timing_inflated=bool(inflated),
                  ops_sum_ms=float(sum(op["ms"] or 0.0 for op in ops)) if per_run is not None else None,
                  ops=ops, outputs=_output_entries(outputs, saver), warnings=warnings)
    if engine.plain_runs:
        result.update(runs_ms=walls, runs_ops_sum_ms=[float(sum(r)) for r in per_run or []], plain_runs_ms=plain)
    return result


def profile(job) -> dict:
    p = read_settings(job.payload)
    reset_peak_rss()
    inputs = read_inputs(p["inputs"])
    saver = TensorSaver(job, p["run_dir"], p["save"])
    body = with_fallback(job, p["engine"], p["path"], engine_settings(p),
                         lambda engine, reason: _profile(job, p, engine, reason, inputs, saver))
    result = {"engine": p["engine"], "path": p["path"], "backend_requested": p["backend"].upper(),
              "precision_requested": p["precision"], "memory_mode": p["memory"], "threads": p["threads"],
              "runs": p["runs"], "warmup": p["warmup"],
              "inputs": [{"name": k, "shape": list(v.shape), "dtype": str(v.dtype)} for k, v in inputs.items()]}
    result.update(body)
    result["rss_peak_mb"] = peak_rss_mb()
    job.progress(1.0, "done")
    return result
