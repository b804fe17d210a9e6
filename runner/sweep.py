"""The `sweep` request: one model timed under a matrix of settings (the benchmark users ask for).

`sweep` payload: path, engine, inputs, runs, warmup, run_dir, check_precision as for `profile`
    (runner/profile.py), plus
    cells [{backend, precision, memory, threads}]. Every cell is timed with plain runs (no callbacks).
`sweep` result: {engine, path, runs, warmup, cells: [{backend_requested, backend_used, precision_requested,
    precision_effective, memory_mode, threads, threads_used, api, total_ms, total_ms_min, total_ms_max,
    memory_mb, rss_peak_mb, warnings, error}]}; one failing cell does not stop the others.

Engine-agnostic like `profile`: each cell is one engine (runner/engine.py) under the cell's settings,
with the engines' one fallback policy.
"""
from __future__ import annotations

from mnnscope.runner import protocol
from mnnscope.runner.engine import read_inputs, with_fallback
from mnnscope.runner.profile import engine_settings, ignored_settings, precision_effect, read_settings
from mnnscope.runner.protocol import RunnerError
from mnnscope.runner.stats import median_spread, peak_rss_mb, reset_peak_rss

AXES = ("backend", "precision", "memory", "threads")
_FULL_PRECISION = (protocol.PRECISION_HIGH, protocol.PRECISION_NORMAL)


def _time_cell(job, c: dict, engine, reason: str | None, inputs: dict, references: dict) -> dict:
    out = {"warnings": engine.feed(inputs) + ignored_settings(engine, c)}
    engine.run(events=True)
    for _ in range(c["warmup"] - 1):
        engine.run()
    walls = [engine.timed_run(per_op=False) for _ in range(c["runs"])]
    outputs = engine.outputs()
    facts = engine.facts()
    out["warnings"] += facts["warnings"]
    if reason:
        out["warnings"].append(f"{reason}: timed with the {engine.title}")
    used = facts["backend_used"]
    out.update(api=engine.api, backend_used=used, threads_used=facts["threads_used"], memory_mb=facts["memory_mb"])
    key = (engine.name, used, c["memory"], c["threads"])
    if "precision" in engine.honours and c["precision"] in _FULL_PRECISION:
        references[key] = outputs
    effective, _, extra = precision_effect(job, engine, used, outputs, inputs, check=c["check_precision"],
                                           reference=references.get(key))
    out["precision_effective"] = effective
    out["warnings"] += extra
    total, lo, hi = median_spread(walls)
    out.update(total_ms=total, total_ms_min=lo, total_ms_max=hi)
    return out


def _sweep_cell(job, p: dict, inputs: dict, cell: dict, references: dict) -> dict:
    c = dict(p)
    c.update({k: cell[k] for k in AXES if cell.get(k) is not None})
    c["backend"] = str(c["backend"])
    c["threads"] = int(c["threads"])
    out = {"backend_requested": c["backend"].upper(), "precision_requested": c["precision"],
           "memory_mode": c["memory"], "threads": c["threads"], "warnings": [], "error": None}
    reset_peak_rss()
    timed = with_fallback(job, c["engine"], c["path"], engine_settings(c, op_timing=False),
                          lambda engine, reason: _time_cell(job, c, engine, reason, inputs, references))
    timed["warnings"] = out["warnings"] + timed["warnings"]
    out.update(timed)
    out["rss_peak_mb"] = peak_rss_mb()
    return out


def sweep(job) -> dict:
    p = read_settings(dict(job.payload, save="none"))
    cells = job.payload.get("cells") or []
    if not cells:
        raise RunnerError(protocol.BAD_REQUEST, "a sweep needs at least one cell")
    inputs = read_inputs(p["inputs"])
    references: dict = {}
    # High-precision cells first, so low-precision cells compare against outputs already computed.
    order = sorted(range(len(cells)), key=lambda i: cells[i].get("precision", p["precision"]) not in _FULL_PRECISION)
    results: list = [None] * len(cells)
    for done, i in enumerate(order):
        job.check_cancel()
        cell = cells[i]
        job.progress(done / len(cells), f"cell {done + 1}/{len(cells)}: " +
                     ", ".join(f"{k}={cell[k]}" for k in AXES if k in cell))
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
