"""The `sweep` request: one model timed under a matrix of settings (the benchmark users ask for).

`sweep` payload: path, engine, inputs, runs, warmup, run_dir, check_precision as for `profile`
    (runner/profile.py), plus
    cells [{backend, precision, memory, threads}]. Every cell is timed with plain runs (no callbacks).
`sweep` result: {engine, path, runs, warmup, cells: [{backend_requested, backend_used, precision_requested,
    precision_effective, memory_mode, threads, threads_used, api, total_ms, total_ms_min, total_ms_max,
    memory_mb, rss_peak_mb, warnings, error}]}; one failing cell does not stop the others.
"""
from __future__ import annotations

from mnnscope.runner import protocol
from mnnscope.runner.mnn_backend import MnnInterpreterRun, NeedsModule, backend_loads
from mnnscope.runner.mnn_module import MnnModuleRun
from mnnscope.runner.profile import backend_facts, precision_effect, read_inputs, read_settings
from mnnscope.runner.protocol import RunnerError
from mnnscope.runner.stats import median_spread, peak_rss_mb, reset_peak_rss


def _sweep_cell(job, p: dict, inputs: dict, cell: dict, references: dict) -> dict:
    c = dict(p)
    c.update({k: cell[k] for k in ("backend", "precision", "memory", "threads") if cell.get(k) is not None})
    c["backend"] = str(c["backend"])
    c["threads"] = int(c["threads"])
    out = {"backend_requested": c["backend"].upper(), "precision_requested": c["precision"],
           "memory_mode": c["memory"], "threads": c["threads"], "warnings": [], "error": None}
    reset_peak_rss()
    if c["engine"] == "ort":
        from mnnscope.runner.ort_backend import OrtRun
        run = OrtRun(job, c["path"], backend=c["backend"], threads=c["threads"], optimization=c["optimization"],
                     run_dir=c["run_dir"] or "", profile=False)
        out["warnings"] += run.feed(inputs) + ([run.note] if run.note else [])
        run.warmup(c["warmup"])
        walls, _ = run.timed(c["runs"])
        out.update(api="onnxruntime", backend_used=run.backend_used, precision_effective="high",
                   threads_used=c["threads"], memory_mb=None)
    else:
        loads = backend_loads(c["backend"])
        run = MnnInterpreterRun(job, c["path"], backend=c["backend"], precision=c["precision"], memory=c["memory"],
                                threads=c["threads"])
        try:
            out["warnings"] += run.feed(inputs)
            run.discover()
            if c["warmup"] > 1:
                run.plain(c["warmup"] - 1)
            walls = run.plain(c["runs"])
            outputs = run.outputs()
            used = run.backend_used
            out.update(api="interpreter", backend_used=used, threads_used=run.threads_used, memory_mb=run.memory_mb)
        except NeedsModule as e:
            run.close()
            mod = MnnModuleRun(job, c["path"], backend=c["backend"], precision=c["precision"], memory=c["memory"],
                               threads=c["threads"])
            for _ in range(c["warmup"]):
                mod.run(inputs)
            walls = []
            for _ in range(c["runs"]):
                job.check_cancel()
                ms, outputs = mod.run(inputs)
                walls.append(ms)
            used = c["backend"].upper() if loads else "CPU"
            out.update(api="module", backend_used=used, threads_used=None, memory_mb=None)
            out["warnings"].append(f"{e}: timed with the Module API")
        finally:
            run.close()
        out["warnings"] += backend_facts(c["backend"], used, loads)[1]
        key = (used, c["memory"], c["threads"])
        if c["precision"] in ("high", "normal"):
            references[key] = outputs
        if out["api"] == "interpreter":
            effective, _, extra = precision_effect(job, c, used, outputs, inputs, reference=references.get(key))
        elif c["precision"] not in ("high", "normal"):
            effective, extra = c["precision"], ["precision effect not checked under the Module API"]
        else:
            effective, extra = c["precision"], []
        out["precision_effective"] = effective
        out["warnings"] += extra
    total, lo, hi = median_spread(walls)
    out.update(total_ms=total, total_ms_min=lo, total_ms_max=hi, rss_peak_mb=peak_rss_mb())
    return out


def sweep(job) -> dict:
    p = read_settings(dict(job.payload, save="none"))
    cells = job.payload.get("cells") or []
    if not cells:
        raise RunnerError(protocol.BAD_REQUEST, "a sweep needs at least one cell")
    inputs = read_inputs(p["inputs"])
    references: dict = {}
    # High-precision cells first, so low-precision cells compare against outputs already computed.
    order = sorted(range(len(cells)), key=lambda i: cells[i].get("precision", p["precision"]) not in ("high", "normal"))
    results: list = [None] * len(cells)
    for done, i in enumerate(order):
        job.check_cancel()
        cell = cells[i]
        job.progress(done / len(cells), f"cell {done + 1}/{len(cells)}: " +
                     ", ".join(f"{k}={cell[k]}" for k in ("backend", "precision", "memory", "threads") if k in cell))
        try:
            results[i] = _sweep_cell(job, p, inputs, cell, references)
        except RunnerError as e:
            if e.kind == protocol.CANCELLED:
                raise
            results[i] = {"backend_requested": str(cell.get("backend", p["backend"])).upper(),
                          "precision_requested": cell.get("precision", p["precision"]),
                          "memory_mode": cell.get("memory", p["memory"]), "threads": cell.get("threads", p["threads"]),
                          "error": e.message, "warnings": []}
    job.progress(1.0, "done")
    return {"engine": p["engine"], "path": p["path"], "runs": p["runs"], "warmup": p["warmup"], "cells": results}
