"""The `profile` request: run a model, time it per operator, read its tensors.

`profile` payload (every key but `path` and `inputs` optional):
    path            str   absolute path of the model: .mnn (engine "mnn") or .onnx (engine "ort")
    engine          str   "mnn" | "ort"; default from the suffix (.onnx -> "ort")
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
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
import time

import numpy as np

from mnnscope.runner import protocol
from mnnscope.runner.mnn_backend import MnnInterpreterRun, NeedsModule, backend_loads
from mnnscope.runner.mnn_module import MnnModuleRun
from mnnscope.runner.mnn_env import device_features
from mnnscope.runner.protocol import RunnerError
from mnnscope.runner.stats import median_spread, peak_rss_mb, reset_peak_rss, tensor_stats

DEFAULTS = {"engine": None, "backend": "CPU", "precision": "high", "memory": "normal", "threads": 1, "runs": 10,
            "warmup": 2, "stats": False, "save": "outputs", "run_dir": None, "optimization": "all",
            "check_precision": True, "plain": True}


def read_settings(payload: dict) -> dict:
    p = dict(DEFAULTS)
    p.update({k: v for k, v in (payload or {}).items() if v is not None})
    path = p.get("path")
    if not path or not os.path.isfile(path):
        raise RunnerError(protocol.BAD_MODEL, f"{path}: no such file")
    if not p.get("inputs") or not os.path.isfile(p["inputs"]):
        raise RunnerError(protocol.BAD_REQUEST, f"inputs file missing: {p.get('inputs')}")
    if p["engine"] is None:
        p["engine"] = "ort" if path.lower().endswith(".onnx") else "mnn"
    if p["engine"] not in ("mnn", "ort"):
        raise RunnerError(protocol.BAD_REQUEST, f"unknown engine '{p['engine']}' (mnn, ort)")
    if p["engine"] == "mnn" and path.lower().endswith(".onnx"):
        raise RunnerError(protocol.BAD_REQUEST, f"{path}: MNN runs .mnn files; convert the ONNX model first")
    for key in ("threads", "runs", "warmup"):
        try:
            p[key] = int(p[key])
        except (TypeError, ValueError):
            raise RunnerError(protocol.BAD_REQUEST, f"'{key}' must be an integer")
    if p["threads"] < 1 or p["runs"] < 1:
        raise RunnerError(protocol.BAD_REQUEST, "threads and runs must be at least 1")
    p["warmup"] = max(1, p["warmup"])
    if p["save"] not in ("outputs", "all", "none"):
        raise RunnerError(protocol.BAD_REQUEST, f"unknown save mode '{p['save']}' (outputs, all, none)")
    if p["save"] != "none" and not p["run_dir"]:
        raise RunnerError(protocol.BAD_REQUEST, "run_dir is required to save tensors")
    if p["run_dir"]:
        os.makedirs(p["run_dir"], exist_ok=True)
    p["backend"] = str(p["backend"] or "CPU")
    return p


def read_inputs(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.keys()}
    except Exception as e:
        raise RunnerError(protocol.BAD_REQUEST, f"{path}: not a readable .npz of inputs ({e})")


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


def _ops(ops: list[dict], per_run: list[list[float]]) -> list[dict]:
    table = np.asarray(per_run, np.float64) if per_run else np.zeros((0, len(ops)))
    out = []
    for i, op in enumerate(ops):
        col = table[:, i].tolist() if table.size else []
        ms, lo, hi = median_spread(col)
        out.append({"index": i, "name": op["name"], "type": op["type"], "ms": ms, "ms_min": lo, "ms_max": hi,
                    "flops": op.get("flops")})
    return out


def backend_facts(requested: str, used: str, loads: bool) -> tuple[str | None, list[str]]:
    if requested.upper() in (used, "AUTO"):
        return None, []
    why = (f"the {requested.upper()} backend does not load in this MNN build (runner {sys.executable})"
           if not loads else f"MNN placed the session on {used}")
    note = f"{why}; it ran on {used}"
    return note, [f"backend {requested.upper()} requested, {used} used: {why}"]


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


def precision_effect(job, p: dict, backend_used: str, outputs: dict[str, np.ndarray], inputs, *,
                     reference: dict | None = None) -> tuple[str, dict | None, list[str]]:
    """(precision_effective, precision_check, warnings) for an MNN run at p["precision"]."""
    requested = p["precision"]
    if requested in ("high", "normal") or not p["check_precision"]:
        return requested, None, []
    if backend_used != "CPU":
        return requested, None, [f"precision '{requested}' on {backend_used} was not verified"]
    fp16 = device_features().get("fp16", False)
    if requested == "low" and fp16:
        return requested, None, []
    if reference is None:
        ref = MnnInterpreterRun(job, p["path"], backend=p["backend"], precision="high", memory=p["memory"],
                                threads=p["threads"])
        try:
            ref.feed(inputs)
            ref.plain(1)
            reference = ref.outputs()
        finally:
            ref.close()
    identical, worst = _same(outputs, reference)
    check = {"compared_with": "high", "identical": identical, "max_abs_diff": 0.0 if identical else worst}
    if identical:
        why = "this CPU reports no fp16 arithmetic" if not fp16 else "no bf16 kernels ran"
        return "high", check, [f"precision '{requested}' had no effect here: the outputs are bit-identical to "
                               f"precision 'high' ({why})"]
    return requested, check, []


# ----- MNN -----------------------------------------------------------------------------------------------
def _profile_mnn(job, p: dict, inputs: dict, saver: TensorSaver) -> dict:
    loads = backend_loads(p["backend"])
    run = MnnInterpreterRun(job, p["path"], backend=p["backend"], precision=p["precision"], memory=p["memory"],
                            threads=p["threads"])
    try:
        warnings = run.feed(inputs)
        job.progress(0.05, "warm-up run")
        first_ms = run.discover()
        if p["warmup"] > 1:
            run.plain(p["warmup"] - 1)
        walls, per_run, plain = [], [], []
        for i in range(p["runs"]):  # interleaved, so drift affects both the same way
            job.progress(0.1 + 0.7 * i / p["runs"], f"timed run {i + 1}/{p['runs']}")
            w, r = run.timed(1)
            walls += w
            per_run += r
            if p["plain"]:
                plain += run.plain(1)
        outputs = run.outputs()
        backend_used = run.backend_used
        result = {"api": "interpreter", "backend_used": backend_used, "threads_used": run.threads_used,
                  "stats_ms": None,
                  "memory_mb": run.memory_mb, "flops": run.flops_m * 1e6, "first_run_ms": first_ms,
                  "timing": "per_op", "timing_unavailable": None}
        ops = _ops(run.ops, per_run)
        if p["stats"]:
            job.progress(0.85, "statistics run")
            t0 = time.perf_counter()
            per_op = run.stats_pass(saver.keep_all, p.get("tensor_names"))
            result["stats_ms"] = (time.perf_counter() - t0) * 1e3
            if len(per_op) != len(ops):
                raise RunnerError(protocol.INTERNAL,
                                  f"the statistics run saw {len(per_op)} ops, the timed runs {len(ops)}")
            for op, outs in zip(ops, per_op):
                op["outputs"] = outs
    except NeedsModule as e:
        run.close()
        return _profile_module(job, p, inputs, saver, str(e), loads)
    finally:
        run.close()
    note, extra = backend_facts(p["backend"], backend_used, loads)
    warnings += extra
    effective, check, extra = precision_effect(job, p, backend_used, outputs, inputs)
    warnings += extra
    total, lo, hi = median_spread(walls)
    result.update(backend_note=note, precision_effective=effective, precision_check=check, total_ms=total,
                  total_ms_min=lo, total_ms_max=hi, plain_ms=median_spread(plain)[0],
                  ops_sum_ms=float(sum(op["ms"] or 0.0 for op in ops)), ops=ops,
                  runs_ms=walls, runs_ops_sum_ms=[float(sum(r)) for r in per_run], plain_runs_ms=plain,
                  outputs=_output_entries(outputs, saver), warnings=warnings)
    return result


def _profile_module(job, p: dict, inputs: dict, saver: TensorSaver, reason: str, loads: bool) -> dict:
    job.log(f"{reason}: running it with the Module API", "runner")
    mod = MnnModuleRun(job, p["path"], backend=p["backend"], precision=p["precision"], memory=p["memory"],
                       threads=p["threads"])
    # One "op" for the whole forward: the Module API has no per-op callbacks to name a crash with.
    job.event("op_begin", {"name": "module.forward", "type": "Module", "index": 0})
    try:
        first_ms, outputs = mod.run(inputs)
    except RunnerError as e:  # neither API runs it; without MNN's own words, say what the Interpreter found
        if "returned no outputs" in e.message:
            raise RunnerError(e.kind, f"{e.message}; {reason}", e.detail)
        raise
    job.event("op_end", {"name": "module.forward", "type": "Module", "ms": first_ms, "index": 0})
    for _ in range(p["warmup"] - 1):
        mod.run(inputs)
    walls = []
    for i in range(p["runs"]):
        job.check_cancel()
        job.progress(0.1 + 0.7 * i / p["runs"], f"timed run {i + 1}/{p['runs']}")
        ms, outputs = mod.run(inputs)
        walls.append(ms)
    backend_used = p["backend"].upper() if loads else "CPU"
    ops = [{"index": i, "name": v["name"], "type": v["type"], "ms": None, "ms_min": None, "ms_max": None,
            "flops": None} for i, v in enumerate(mod.tensor_ops)]
    if p["stats"]:
        job.progress(0.85, "statistics run")
        t0 = time.perf_counter()
        for op, outs in zip(ops, mod.stats_pass(inputs, saver.keep_all)):
            op["outputs"] = outs
        stats_ms = (time.perf_counter() - t0) * 1e3
    else:
        stats_ms = None
    unavailable = f"per-op timing is unavailable: {reason}; the Module API ran it (whole-run times only)"
    note, warnings = backend_facts(p["backend"], backend_used, loads)
    warnings.append(unavailable)
    effective, check, extra = (p["precision"], None, [])
    if p["precision"] not in ("high", "normal") and p["check_precision"]:
        ref = MnnModuleRun(job, p["path"], backend=p["backend"], precision="high", memory=p["memory"],
                           threads=p["threads"])
        effective, check, extra = precision_effect(job, p, backend_used, outputs, inputs,
                                                   reference=ref.run(inputs)[1])
    warnings += extra
    total, lo, hi = median_spread(walls)
    return {"api": "module", "backend_used": backend_used, "backend_note": note, "threads_used": None,
            "memory_mb": None, "flops": None, "first_run_ms": first_ms, "timing": "total_only",
            "timing_unavailable": unavailable, "precision_effective": effective, "precision_check": check,
            "stats_ms": stats_ms,
            "total_ms": total, "total_ms_min": lo, "total_ms_max": hi, "plain_ms": None, "ops_sum_ms": None,
            "ops": ops, "outputs": _output_entries(outputs, saver), "warnings": warnings}


# ----- ONNX Runtime --------------------------------------------------------------------------------------
def _profile_ort(job, p: dict, inputs: dict, saver: TensorSaver) -> dict:
    from mnnscope.runner.ort_backend import STATS_OUTPUTS_PER_RUN, OrtRun
    run_dir = p["run_dir"] or tempfile.mkdtemp(prefix="mnnscope-ort-")  # ORT writes its profile there
    run = OrtRun(job, p["path"], backend=p["backend"], threads=p["threads"], optimization=p["optimization"],
                 run_dir=run_dir)
    warnings = run.feed(inputs)
    if run.note:
        warnings.append(run.note)
    for key, default in (("precision", "high"), ("memory", "normal")):
        if p[key] != default:
            warnings.append(f"{key} '{p[key]}' is an MNN setting: ignored by ONNX Runtime")
    job.progress(0.05, "warm-up runs")
    run.warmup(p["warmup"])
    job.progress(0.1, "timed runs")
    walls, outputs = run.timed(p["runs"])
    order, per_run = run.node_times(skip_runs=p["warmup"])
    ops = _ops(order, per_run)
    nodes, stats_ms = None, None
    if p["stats"]:
        job.progress(0.85, "statistics run")
        t0 = time.perf_counter()
        nodes = run.stats_pass(inputs, saver.keep_all, p.get("stats_outputs_per_run") or STATS_OUTPUTS_PER_RUN)
        stats_ms = (time.perf_counter() - t0) * 1e3
        by_name = {n["name"]: n["outputs"] for n in nodes}
        for op in ops:
            if op["name"] in by_name:
                op["outputs"] = by_name[op["name"]]
    total, lo, hi = median_spread(walls)
    return {"api": "onnxruntime", "backend_used": run.backend_used, "backend_note": run.note,
            "threads_used": p["threads"], "memory_mb": None, "flops": None, "first_run_ms": None,
            "timing": "per_op", "timing_unavailable": None, "precision_effective": "high", "precision_check": None,
            "total_ms": total, "total_ms_min": lo, "total_ms_max": hi, "plain_ms": None,
            "ops_sum_ms": float(sum(op["ms"] or 0.0 for op in ops)), "ops": ops, "nodes": nodes,
            "outputs": _output_entries(outputs, saver), "warnings": warnings, "optimization": p["optimization"],
            "stats_ms": stats_ms}


# ----- handlers ----------------------------------------------------------------------------------------
def profile(job) -> dict:
    p = read_settings(job.payload)
    reset_peak_rss()
    inputs = read_inputs(p["inputs"])
    saver = TensorSaver(job, p["run_dir"], p["save"])
    body = _profile_ort(job, p, inputs, saver) if p["engine"] == "ort" else _profile_mnn(job, p, inputs, saver)
    result = {"engine": p["engine"], "path": p["path"], "backend_requested": p["backend"].upper(),
              "precision_requested": p["precision"], "memory_mode": p["memory"], "threads": p["threads"],
              "runs": p["runs"], "warmup": p["warmup"],
              "inputs": [{"name": k, "shape": list(v.shape), "dtype": str(v.dtype)} for k, v in inputs.items()]}
    result.update(body)
    result["rss_peak_mb"] = peak_rss_mb()
    job.progress(1.0, "done")
    return result
