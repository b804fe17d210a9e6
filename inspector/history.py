"""A stored run as a history shows it: its headline figure, its settings in brief, and the diff of two runs
(op by op for profiles, mode by mode for comparisons). Pure functions of run-store records (store.runs.RunStore
get_run / list_runs), shared by `mnnscope runs` and the window's Runs dock."""
from __future__ import annotations

import math
import os
import time
from pathlib import Path

from mnnscope.inspector.compare.errormap import within_noise
from mnnscope.inspector.compare.metrics import worst_output_error
from mnnscope.inspector.convert.settings import ConvertSettings


# Runs whose figure is a time per run (a statistics pass is a profile that also reads every tensor back), and the
# kinds `diff_runs` compares (two runs of one of them).
TIMED_KINDS = ("profile", "stats")
DIFF_KINDS = TIMED_KINDS + ("compare", "generate", "convert")


# ----- headline figures ------------------------------------------------------------------------------------
def worst_rel_l2(summary: dict) -> dict[str, float | None]:
    """{mode: worst relative L2 error over the model's outputs} of a compare run (compare.metrics'
    worst_output rule); None for a mode that compared no outputs (it failed)."""
    return {m.get("mode"): worst_output_error(m["outputs"]) if m.get("outputs") else None
            for m in (summary or {}).get("modes") or []}


def headline(run: dict) -> dict:
    s = run.get("summary") or {}
    kind = run.get("kind")
    if s.get("error"):
        err = s["error"]
        return {"error": err.get("message") if isinstance(err, dict) else str(err)}
    if kind in TIMED_KINDS:
        return {"total_ms": s.get("total_ms")}
    if kind == "convert":
        # the file written: three conversions of one model read "weight_quant_bits=8 -> ok 5.8 MB" alike, and nothing
        # said which file was which (helper 120)
        return {"ok": s.get("ok"), "size_bytes": s.get("size_bytes"), "output": s.get("output"),
                "keep_float": list(s.get("keep_float") or [])}
    if s.get("kind") in ("mnn-llm", "mnn-llm-sweep"):  # exports of an LLM (inspector/llm): token agreement
        rows = s.get("modes") or s.get("rows") or []
        return {"agreement_top1": {r.get("mode") or r.get("name"): r.get("agreement_top1") for r in rows}}
    if kind == "compare":
        modes = [m for m in s.get("modes") or [] if isinstance(m, dict)]
        return {"ok": s.get("ok"), "worst_rel_l2": worst_rel_l2(s),
                "passed": [m.get("mode") for m in modes if m.get("ok")],
                # over tolerance only through known approximations: not "FAILED" (tryout 12 read "FAILED fp32
                # rel_l2 9.39e-05" beside the dock's "close")
                "close": [m.get("mode") for m in modes if not m.get("ok") and m.get("verdict") == "close"],
                "failed": [m.get("mode") for m in modes if not m.get("ok") and m.get("verdict") != "close"],
                "fix": fix_brief(s.get("fix")),
                # a given .mnn checked as it is runs as "fp32": the file is what was checked (helper 113 read "FAILED
                # fp32 rel_l2 0.0186" for fp16.mnn's check, as if MNN's fp32 were broken)
                "labels": {m.get("mode"): label for m in modes if (label := given_label(m))},
                # the Compare dock's fix (compare.service records the ops it was asked to keep in float)
                "fix_run": bool((run.get("settings") or {}).get("keep_float"))}
    if kind == "sweep":
        cells = [c for c in s.get("cells") or [] if isinstance(c.get("total_ms"), (int, float))]
        best = min(cells, key=lambda c: c["total_ms"]) if cells else None
        # Name the best cell by the axes that vary, not by every setting it shares with the others.
        axes = [k for k in ("threads", "precision_requested", "memory_mode", "backend_requested")
                if len({str(c.get(k)) for c in s.get("cells") or []}) > 1]
        return {"cells": len(s.get("cells") or []), "best_ms": best["total_ms"] if best else None,
                "best": {k: best.get(k) for k in axes} if best else None}
    if kind == "generate":
        return {"steps": s.get("steps"), "decode_ms_per_token": s.get("decode_ms_per_token"),
                "tokens_per_s": s.get("tokens_per_s"), "agreement_top1": s.get("agreement_top1"),
                "first_mismatch_step": s.get("first_mismatch_step")}
    return {}


def given_label(mode: dict) -> str | None:
    """"model.fp16.mnn as fp16w": a compare mode row that ran a given .mnn as it is (None for a conversion of the
    comparison's own)."""
    if not (mode.get("conversion") or {}).get("given") or not mode.get("mnn_model"):
        return None
    name = os.path.basename(str(mode["mnn_model"]))
    return f"{name} as {mode['judged_as']}" if mode.get("judged_as") else name


def fix_brief(fix: dict | None) -> dict | None:
    """A compare run's fix (compare.fix.suggest_fix's result) as a history shows it: the mode, the ops kept in
    float and the worst output rel L2 before and after; or the mode and why no fix ran. None: no fix was tried."""
    if not isinstance(fix, dict) or not fix.get("mode"):
        return None
    if not fix.get("possible"):
        return {"mode": fix["mode"], "possible": False, "note": fix.get("note")}
    before, after = fix.get("before") or {}, fix.get("after") or {}
    return {"mode": fix["mode"], "possible": True, "keep_float": list(fix.get("skip_ops") or []),
            "before": worst_output_error(before.get("outputs") or []),
            "after": worst_output_error(after.get("outputs") or []),
            "ok_before": before.get("ok"), "ok_after": after.get("ok"), "gain": fix.get("gain")}


def fix_text(fix: dict) -> str:
    """fix_brief() in one line: "fix int8: kept a, b in float: worst rel_l2 0.302 -> 0.0101, passed"."""
    if not fix.get("possible"):
        return f"fix {fix['mode']}: not run ({fix.get('note') or 'nothing to keep in float'})"
    kept = ", ".join(fix["keep_float"]) or "no ops"
    return (f"fix {fix['mode']}: kept {kept} in float: worst rel_l2 {num(fix['before'])} -> "
            f"{num(fix['after'])}, {'passed' if fix['ok_after'] else 'still FAILED'}")


def _modes_text(h: dict) -> str:
    """Which modes failed and which passed, each with its worst output rel L2."""
    def mode(m):
        v, name = h["worst_rel_l2"].get(m), (h.get("labels") or {}).get(m) or m
        return f"{name} rel_l2 {num(v)}" if v is not None else f"{name} no outputs compared"
    parts = []
    if h["failed"]:
        parts.append("FAILED " + ", ".join(mode(m) for m in h["failed"]))
    if h.get("close"):
        parts.append("close " + ", ".join(mode(m) for m in h["close"]))
    if h["passed"]:
        parts.append("passed " + ", ".join(mode(m) for m in h["passed"]))
    return "; ".join(parts) or "no modes"


def pct(v) -> str:
    """A share (0..1) as a whole percentage; '?' when unknown."""
    return f"{100 * v:.0f}%" if isinstance(v, (int, float)) and math.isfinite(v) else "?"


def num(v, fmt="{:.3g}") -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return str(v)
    return fmt.format(v)


def fmt_bytes(n) -> str:
    if n is None:
        return "?"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def headline_text(run: dict) -> str:
    h = headline(run)
    if "error" in h:
        return f"error: {h['error']}"
    kind = run.get("kind")
    if "agreement_top1" in h and isinstance(h["agreement_top1"], dict):
        return "top-1 agreement " + ", ".join(f"{k} {num(v)}" for k, v in h["agreement_top1"].items())
    if kind in TIMED_KINDS:
        return f"{num(h['total_ms'], '{:.4g}')} ms"
    if kind == "convert":
        if not h["ok"]:
            return "failed"
        out = f" \u2192 {os.path.basename(h['output'])}" if isinstance(h.get("output"), str) and h["output"] else ""
        kept = len(h.get("keep_float") or [])  # a fix saved from the Compare dock
        return f"ok {fmt_bytes(h['size_bytes'])}{out}" + (f" ({kept} op{'s' if kept != 1 else ''} kept in float)"
                                                          if kept else "")
    if kind == "compare":
        fix = h["fix"]
        if h["fix_run"] and fix:  # the Compare dock's fix: its modes are the one it reconverted, before the fix
            return fix_text(fix)
        text = _modes_text(h)
        return text + (f"; {fix_text(fix)}" if fix and fix.get("possible") else "")
    if kind == "sweep":
        if h["best_ms"] is None:
            return f"{h['cells']} cells, none timed"
        cell = ", ".join(f"{k}={v}" for k, v in (h["best"] or {}).items() if v is not None)
        return f"best {num(h['best_ms'], '{:.4g}')} ms ({cell}) of {h['cells']} cells"
    if kind == "generate":
        text = f"{h['steps']} tokens, {num(h['decode_ms_per_token'])} ms/token"
        if h["agreement_top1"] is not None:
            first = h["first_mismatch_step"]
            text += f", top-1 agreement {num(h['agreement_top1'])}" + ("" if first is None else f" (step {first})")
        return text
    return ""


def when_text(t) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


def model_name(run: dict) -> str | None:
    return Path(run["model_path"]).name if run.get("model_path") else None


def brief(run: dict) -> dict:
    """A run as a list shows it (no ops, no summary)."""
    keys = ("id", "time", "kind", "model_path", "model_sha256", "backend_requested", "backend_used", "precision",
            "run_dir")
    out = {k: run.get(k) for k in keys}
    out.update(when=when_text(run.get("time")), model=model_name(run), headline=headline(run),
               headline_text=headline_text(run))
    return out


# ----- diff ----------------------------------------------------------------------------------------------
def _op_times(run: dict) -> dict[str, float]:
    """Median ms per op name; a name that occurs twice (rare: MNN's raster copies) sums its occurrences."""
    out: dict[str, float] = {}
    for op in run.get("ops") or []:
        if op.get("name") is not None and isinstance(op.get("ms"), (int, float)):
            out[op["name"]] = out.get(op["name"], 0.0) + op["ms"]
    return out


def _ratio(b, a) -> float | None:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or a == 0:
        return None
    return b / a


def _diff_times(a: dict, b: dict, ta: dict, tb: dict, type_of: dict, name_of: dict | None = None) -> dict:
    """The profile diff of two runs' times {key: ms}: changes of the keys in both (largest first), the keys on one
    side only, the totals. Keys are op names, or node ids (`name_of` then names them, and each row keeps its
    "node"). `whole_run_only`: the sides ("a", "b") without per-op times, where the diff is of the totals only."""
    def who(n) -> dict:
        return {"name": name_of.get(n, n), "node": n} if name_of is not None else {"name": n}

    total_a, total_b = (a.get("summary") or {}).get("total_ms"), (b.get("summary") or {}).get("total_ms")
    # a run with whole-run times only (MNN's per-op timing failed: a GRU the converter turned into a While loop)
    # has nothing to match op by op: every op of the other one read as "only in b, added" and the graph went red
    # under a total that fell x0.46 (tryout 14). The totals alone, and which run lacks per-op times.
    whole = [side for side, t in (("a", ta), ("b", tb)) if not t]
    if whole:
        ta = tb = {}
    changes = [{**who(n), "type": type_of.get(n), "ms_a": ta[n], "ms_b": tb[n], "delta_ms": tb[n] - ta[n],
                "ratio": _ratio(tb[n], ta[n])} for n in ta if n in tb]
    changes.sort(key=lambda c: -abs(c["delta_ms"]))
    return {"kind": "profile", "total_ms_a": total_a, "total_ms_b": total_b, "total_ratio": _ratio(total_b, total_a),
            "whole_run_only": whole, "ops": changes,
            "only_a": [{**who(n), "type": type_of.get(n), "ms": ta[n]} for n in ta if n not in tb],
            "only_b": [{**who(n), "type": type_of.get(n), "ms": tb[n]} for n in tb if n not in ta]}


def whole_run_text(d: dict) -> str | None:
    """The line a profile diff says when a run has whole-run times only (None when both have per-op times)."""
    whole = d.get("whole_run_only") or []
    if not whole:
        return None
    who = " and ".join(f"run {d[s]['id']}" if isinstance(d.get(s), dict) else s for s in whole)
    return (f"{who} {'has' if len(whole) == 1 else 'have'} whole-run times only (no per-op times): the totals are "
            "compared, not the ops")


def diff_profiles(a: dict, b: dict) -> dict:
    types = {op["name"]: op.get("type") for op in (a.get("ops") or []) + (b.get("ops") or [])}
    return _diff_times(a, b, _op_times(a), _op_times(b), types)


def _engine(run: dict) -> str | None:
    return (run.get("settings") or {}).get("engine")


def placed_times(run: dict, table) -> tuple[dict[str, float], float | None]:
    """A stored profile's op times placed on the nodes of `table` (the profiled .onnx): ONNX Runtime's by name, an
    MNN profile of the .onnx through the node map its run folder keeps (the Profile dock's placement, profile/
    placement.py). ({node id: ms}, share of the measured time placed)."""
    from mnnscope.inspector.profile.placement import load_node_map, place
    from mnnscope.inspector.profile.service import NODE_MAP_FILE
    result: dict = {"ops": run.get("ops") or []}
    node_map = None
    if _engine(run) == "mnn" and table.format == "onnx":
        result["converted_from"] = run.get("model_path")
        if run.get("run_dir"):
            node_map = load_node_map({"node_map_path": str(Path(run["run_dir"]) / NODE_MAP_FILE)})
    placed = place(result, table, node_map)
    return placed.values, placed.coverage


def diff_by_node(a: dict, b: dict, table) -> dict:
    """Two profiles of one .onnx on different engines (MNN names its ops after its own fused ops, ONNX Runtime after
    the ONNX nodes: no op name is in both): both placed on the ONNX nodes and diffed node by node."""
    ta, cov_a = placed_times(a, table)
    tb, cov_b = placed_times(b, table)
    kind = {nid: table.op_types[i] for i, nid in enumerate(table.ids)}
    name = {nid: table.names[i] or nid for i, nid in enumerate(table.ids)}
    return dict(_diff_times(a, b, ta, tb, kind, name), matched_by="onnx_node", placed_a=cov_a, placed_b=cov_b)


def _onnx_table(a: dict, b: dict, engines_differ: bool = True):
    """The GraphTable of the .onnx two profiles both ran (on different engines unless `engines_differ` is False;
    None when they ran different files, or it is gone or unreadable): a plain protobuf read, no shape inference,
    no native code."""
    path = a.get("model_path")
    if not path or path != b.get("model_path") or not str(path).lower().endswith(".onnx") or \
            (engines_differ and _engine(a) == _engine(b)) or not Path(path).is_file():
        return None
    from mnnscope.inspector.formats.onnx import load_onnx
    from mnnscope.inspector.model.table import GraphTable
    try:
        return GraphTable.from_graph(load_onnx(path))
    except Exception:  # noqa: BLE001 - the name diff stays; the model file is not this diff's to judge
        return None


def mode_ms(summary: dict) -> dict[str, float | None]:
    """{mode: median ms per run of its MNN model} of a compare run (its `timing`; None where it was not timed)."""
    return {m.get("mode"): (m.get("timing") or {}).get("ms") for m in (summary or {}).get("modes") or []}


def _mode_range(summary: dict) -> dict[str, tuple | None]:
    """{mode: (fastest, slowest) ms of its timed runs} of a compare run (None where it was not timed)."""
    out = {}
    for m in (summary or {}).get("modes") or []:
        t = m.get("timing") or {}
        lo, hi = t.get("ms_min"), t.get("ms_max")
        out[m.get("mode")] = (lo, hi) if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) else None
    return out


def diff_compares(a: dict, b: dict) -> dict:
    """Two compare runs mode by mode: each mode's worst output rel L2 and verdict in both, and its time. A fix run's
    (the Compare dock's keep-in-float) fixed mode counts with its figures after the fix (`fixed_a`/`fixed_b`): its
    modes are the ones before, and two fixes diffed read "0.102 -> 0.102" where the text above said 0.0773 and 0.0869
    (helper 107); the verdicts show a change of tolerance (two runs read b/a 1 beside "passed" -> "FAILED")."""
    (wa, va, fa), (wb, vb, fb) = _mode_outcomes(a), _mode_outcomes(b)
    ta, tb = mode_ms(a.get("summary")), mode_ms(b.get("summary"))
    ra, rb = _mode_range(a.get("summary")), _mode_range(b.get("summary"))
    modes = list(wa) + [m for m in wb if m not in wa]
    # what each row ran (a checked file: "x.mnn as int8w", not "fp32": helper 120 read two int8 checks diffed as
    # "fp32") and the size of the file it ran
    rows = [{m.get("mode"): m for m in (r.get("summary") or {}).get("modes") or [] if isinstance(m, dict)}
            for r in (a, b)]

    def label(side: int, m: str) -> str:
        row = rows[side].get(m)
        return (given_label(row) if row else None) or m

    def size(side: int, m: str):
        return ((rows[side].get(m) or {}).get("conversion") or {}).get("size_bytes")
    return {"kind": "compare", "modes": [
        {"mode": m, "label_a": label(0, m), "label_b": label(1, m), "size_a": size(0, m), "size_b": size(1, m),
         "rel_l2_a": wa.get(m), "rel_l2_b": wb.get(m), "in_a": m in wa, "in_b": m in wb,
         "verdict_a": va.get(m), "verdict_b": vb.get(m), "fixed_a": m == fa, "fixed_b": m == fb,
         "ms_a": ta.get(m), "ms_b": tb.get(m), "ms_ratio": tb[m] / ta[m] if ta.get(m) and tb.get(m) else None,
         # the difference of the medians is run-to-run noise (compare's own rule: the timed runs overlap, the
         # medians lie within 2%, or both are under the floor where reruns vary more than modes differ)
         "ms_within_noise": _within_noise(ta.get(m), tb.get(m), ra.get(m), rb.get(m))}
        for m in modes]}


def diff_row_name(m: dict, arrow: str = "\u2192") -> str:
    """A diffed compare mode's row by what each side ran ("x.mnn as int8w -> y.mnn as int8w"), one name where they
    agree."""
    a, b = m.get("label_a", m["mode"]), m.get("label_b", m["mode"])
    return a if a == b else f"{a} {arrow} {b}"


def diff_row_sizes(m: dict, arrow: str = "\u2192") -> str:
    """A diffed compare mode's file sizes ("7.3 kB -> 11 kB"), "" where neither side has one."""
    if not (m.get("size_a") or m.get("size_b")):
        return ""
    return f"{fmt_bytes(m.get('size_a'))} {arrow} {fmt_bytes(m.get('size_b'))}"


def compare_verdicts_text(m: dict) -> str:
    """A diffed mode's verdicts, "match -> wrong", or one where they agree ("match")."""
    a, b = m.get("verdict_a") if m.get("in_a") else "n/a", m.get("verdict_b") if m.get("in_b") else "n/a"
    return str(a) if a == b else f"{a} \u2192 {b}"


def _mode_outcomes(run: dict) -> tuple[dict, dict, str | None]:
    """({mode: worst output rel L2}, {mode: verdict}, the mode a fix run fixed) of a compare run, a fix run's fixed
    mode as it came out of the fix."""
    s = run.get("summary") or {}
    worst = worst_rel_l2(s)
    verdicts = {m.get("mode"): m.get("verdict") or ("match" if m.get("ok") else "wrong") for m in s.get("modes") or []}
    fix = s.get("fix")
    if not ((run.get("settings") or {}).get("keep_float") and isinstance(fix, dict) and fix.get("possible")
            and (fix.get("after") or {}).get("outputs")):
        return worst, verdicts, None
    mode = fix["mode"]
    worst[mode] = worst_output_error(fix["after"]["outputs"])
    verdicts[mode] = "match" if fix["after"].get("ok") else "wrong"
    return worst, verdicts, mode


# a generate run's figures a diff sets side by side: (label, summary key or a function of the summary)
_GENERATE_ROWS = (("mode", "mode"), ("tokens", "steps"), ("prefill ms", "prefill_ms"),
                  ("decode ms/token", "decode_ms_per_token"), ("tokens/s", "tokens_per_s"),
                  ("top-1 agreement", "agreement_top1"), ("first mismatch step", "first_mismatch_step"),
                  ("mean KL", lambda s: _kl(s, lambda v: sum(v) / len(v))), ("max KL", lambda s: _kl(s, max)),
                  ("text", "text"))


def _kl(summary: dict, how):
    v = [x for x in summary.get("kl_per_step") or [] if isinstance(x, (int, float))]
    return how(v) if v else None


def generate_value(v, what: str = "") -> str:
    """A figure of diff_generates' rows as the CLI and the Runs dock show it ("-" where a run has none; the text
    quoted, cut at 60 characters; 4 significant digits: tokens/s "1513", not "1.51e+03")."""
    if v is None:
        return "-"
    if what == "text":
        v = str(v)
        return repr(v if len(v) <= 60 else v[:59] + "\u2026")
    return num(v, "{:.4g}") if isinstance(v, float) else str(v)


def diff_generates(a: dict, b: dict) -> dict:
    """Two generate runs side by side: mode, tokens, prefill and per-token decode time, tokens/s, top-1 agreement and
    first mismatch with the reference, mean and max KL per step, the text; and how many of their tokens agree from
    the start (`same_tokens` of `tokens`). A user comparing int8w against int4w generations in the Runs dock found
    Compare greyed: it diffed profiles, statistics and comparisons only (helper 105's try)."""
    sa, sb = a.get("summary") or {}, b.get("summary") or {}
    rows = [{"what": label, "a": key(sa) if callable(key) else sa.get(key), "b": key(sb) if callable(key) else
             sb.get(key)} for label, key in _GENERATE_ROWS]
    ta, tb = list(sa.get("tokens") or []), list(sb.get("tokens") or [])
    same = next((i for i, (x, y) in enumerate(zip(ta, tb)) if x != y), min(len(ta), len(tb)))
    return {"kind": "generate", "rows": rows, "same_tokens": same, "tokens": max(len(ta), len(tb))}


def _within_noise(ms_a, ms_b, range_a, range_b) -> bool:
    if not ms_a or not ms_b:
        return False
    a, b = {"ms": ms_a}, {"ms": ms_b}
    if range_a and range_b:
        (a["ms_min"], a["ms_max"]), (b["ms_min"], b["ms_max"]) = range_a, range_b
    return within_noise(a, b)


def mode_time_text(m: dict) -> str:
    """", MNN 7.52 -> 16.9 ms per run (2.25x slower)" for a mode of diff_compares, or "" when either side was not
    timed: a reconversion that mends the accuracy can cost speed (tryout 18: exact GELU, 2.25x slower)."""
    if not m.get("ms_a") or not m.get("ms_b"):
        return ""
    r = m["ms_ratio"]
    if m.get("ms_within_noise"):  # ("b 1.06x faster" on a 17 us run was noise: tryout 20)
        words = "within run-to-run noise"
    else:
        words = f"{1 / r:.2f}x faster" if r < 1 else f"{r:.2f}x slower"
    return f", MNN {m['ms_a']:.4g} -> {m['ms_b']:.4g} ms per run ({words})"


# settings a run records only where they are not the default: what their absence means
_UNSET = {"keep_float": "none"}


def settings_changed(a: dict, b: dict) -> dict:
    sa, sb = a.get("settings") or {}, b.get("settings") or {}
    return {k: [sa.get(k, _UNSET.get(k)), sb.get(k, _UNSET.get(k))] for k in list(sa) + [k for k in sb if k not in sa]
            if sa.get(k) != sb.get(k)}




def diff_converts(a: dict, b: dict) -> dict:
    """Two conversions: the files they wrote and their sizes (helper 120 selected two and found Compare greyed)."""
    sa, sb = a.get("summary") or {}, b.get("summary") or {}
    size_a, size_b = sa.get("size_bytes"), sb.get("size_bytes")
    return {"kind": "convert", "ok_a": sa.get("ok"), "ok_b": sb.get("ok"), "output_a": sa.get("output"),
            "output_b": sb.get("output"), "size_a": size_a, "size_b": size_b,
            "size_ratio": size_b / size_a if size_a and size_b else None,
            "keep_float_a": list(sa.get("keep_float") or []), "keep_float_b": list(sb.get("keep_float") or [])}


def diff_runs(a: dict, b: dict, conversions=None) -> dict:
    """Two stored runs (get_run records, with ops) compared: a profile diff or a compare diff, with both runs in
    brief and the settings that changed; ValueError when they are not two profiles or two comparisons. Profiles
    are matched op by op (`matched_by` "op_name"), or, two engines' profiles of one .onnx, ONNX node by ONNX node
    ("onnx_node", with `placed_a`/`placed_b`: the share of each run's time placed on the nodes). `conversions`
    (RunStore.conversion_of): two checks of given .mnn files name the conversion settings that made each, where a
    recorded conversion did (the diff said only "mnn: a.mnn -> b.mnn", not "weight_quant_block=32 -> none")."""
    if a["kind"] != b["kind"]:
        raise ValueError(f"run {a['id']} is a {a['kind']} run and run {b['id']} a {b['kind']} run: diff needs two "
                         "runs of the same kind")
    if a["kind"] not in DIFF_KINDS:
        raise ValueError(f"diff compares profile, statistics, compare, generate or convert runs, not {a['kind']} "
                         "runs")
    for r in (a, b):  # a failed run has nothing to diff (its "total_ratio: null" read as a reason of its own)
        err = ((r.get("summary") or {}).get("error") or {})
        if err:
            raise RunFailed(f"run {r['id']} failed ({err.get('message') or err.get('kind') or 'no result'}): "
                            "it has no result to diff")
    if a["kind"] in TIMED_KINDS:  # two statistics passes: their times, as two profiles'
        table = _onnx_table(a, b)
        out = diff_by_node(a, b, table) if table is not None else dict(diff_profiles(a, b), matched_by="op_name")
        same = _onnx_table(a, b, engines_differ=False) if table is None and _engine(a) == _engine(b) == "mnn" \
            else None
        if same is not None and not out.get("whole_run_only"):
            # two MNN profiles of one .onnx (two conversions: int8 against fp32): the rows stay MNN's ops, the graph's
            # colours are each run's times placed on the ONNX nodes through its conversion's node map, as the Profile
            # dock places them (by op name a fused "Add.1" landed on ONNX Add.0, not its Conv.0, tryout 15)
            ta, cov_a = placed_times(a, same)
            tb, cov_b = placed_times(b, same)
            out["node_deltas"] = {n: tb.get(n, 0.0) - ta.get(n, 0.0) for n in set(ta) | set(tb)}
            out["placed_a"], out["placed_b"] = cov_a, cov_b
    elif a["kind"] == "generate":
        out = diff_generates(a, b)
    elif a["kind"] == "convert":
        out = diff_converts(a, b)
    else:
        out = diff_compares(a, b)
    out.update(a=brief(a), b=brief(b), settings_changed=settings_changed(a, b))
    files = [(r.get("settings") or {}).get("mnn") for r in (a, b)]
    if a["kind"] == "compare" and all(files) and files[0] != files[1] and conversions is not None:
        made = [conversions(f) if os.path.isfile(f) else None for f in files]
        words = [ConvertSettings.describe_json(m["settings"]) or "default settings" if m else "not recorded"
                 for m in made]
        if words[0] != words[1]:
            out["settings_changed"]["made with"] = words
    out["same_model"] = bool(a.get("model_sha256")) and a.get("model_sha256") == b.get("model_sha256")
    out["warnings"] = []
    asked = out["settings_changed"].get("precision")
    ran = [a.get("precision"), b.get("precision")]  # the precision in effect, as the run recorded it
    if asked and all(ran) and ran != asked:
        # "precision: high -> low; threads: 1 -> 2 ... b 5.44x slower" blamed a precision that never took effect
        # (low ran as high on that CPU; tryout 66)
        out["precision_ran"] = ran
        if ran[0] == ran[1]:
            rest = [k for k in out["settings_changed"] if k != "precision"]
            out["warnings"].append(f"precision {asked[0]} -> {asked[1]} changed nothing: both runs ran at {ran[0]} on "
                                   f"this machine, so the difference is "
                                   + (f"the other settings' ({', '.join(rest)})" if rest else "run-to-run noise"))
    if not out["same_model"] and a["kind"] in TIMED_KINDS and not out.get("whole_run_only"):
        n = max(len(a.get("ops") or []), len(b.get("ops") or []))
        if n and len(out.get("ops") or []) < n / 2:  # another version of one model shares most of its ops
            out["warnings"].append(f"runs {a['id']} and {b['id']} are of different models ({model_name(a)}, "
                                   f"{model_name(b)}) sharing {len(out.get('ops') or [])} of {n} ops: the totals "
                                   "compare two networks")
    return out


class RunFailed(ValueError):
    """A diff of a run that failed: nothing to compare (the CLI exits 1, as for bad data)."""


def deltas_title(diff: dict) -> str:
    """The name of a profile diff's graph overlay: "Δ ms per ONNX node, run 5 → run 11" where each run's times are
    placed on the ONNX nodes (op_deltas: the MNN ops of a node summed; the rows, per MNN op, gave /Mul_10_output_0
    +0.966 ms beside Properties' 0.930 ms for /Mul_10, and nothing said why: helper 109), else per op."""
    a, b = diff["a"]["id"], diff["b"]["id"]
    per = " per ONNX node" if diff.get("node_deltas") is not None else ""
    return f"\u0394 ms{per}, run {a} \u2192 run {b}"


def op_deltas(diff: dict) -> dict[str, float]:
    """{op name: ms of b minus ms of a} of a profile diff, an op on one side only counting in full (gone: its
    time saved; new: its time added): the values of the graph overlay."""
    if diff.get("node_deltas") is not None:  # placed on the ONNX nodes (two MNN conversions of one .onnx)
        return dict(diff["node_deltas"])
    out = {c.get("node", c["name"]): c["delta_ms"] for c in diff.get("ops") or []}
    out.update({o.get("node", o["name"]): -o["ms"] for o in diff.get("only_a") or []
                if isinstance(o.get("ms"), (int, float))})
    out.update({o.get("node", o["name"]): o["ms"] for o in diff.get("only_b") or []
                if isinstance(o.get("ms"), (int, float))})
    return out


# Settings a history line names, in this order (the rest are shown only when they are set to something).
_PROFILE_KEYS = ("engine", "backend", "precision", "memory", "threads", "runs", "stats")
_QUIET = (None, "", False, [], {})


_CONFIG_KEYS = ("backend", "precision", "memory", "threads")


def ratio_words(r) -> str:
    """A total's ratio b/a in words ("b 1.17x faster"): x0.857 alone left the reader to invert it (tryout 15)."""
    if not isinstance(r, (int, float)) or r <= 0:
        return ""
    if abs(r - 1) < 0.02:
        return "about the same"
    return f"b {1 / r:.2f}x faster" if r < 1 else f"b {r:.2f}x slower"


def setting_text(key: str, v) -> str:
    """A changed setting's value in words: conversion settings as what differs from the converter's defaults
    ("weight_quant_bits=8, int8 (EMA/MAX_ABS, ...)", "defaults"), not a raw dict of every field (tryout 15 read
    "fp16=False,weight_quant_bits=None,...,width=64,... -> None" running off the screen); others as value_text."""
    if key == "mnn" and isinstance(v, str) and v:  # a checked file: by name (its folder ran off a 1024 px dock)
        return os.path.basename(v)
    if key == "tolerance" and (v is None or isinstance(v, dict)):   # a compare run's (absent: each mode's default)
        from mnnscope.inspector.compare.options import tolerance_text
        return tolerance_text(v)
    if key == "convert_settings" and (v is None or isinstance(v, dict)):
        if not v:
            return "defaults"
        from mnnscope.inspector.convert.settings import ConvertSettings
        try:
            return ConvertSettings.describe_json(v) or "defaults"
        except (TypeError, ValueError, KeyError):
            return value_text(v)
    if v is None:  # a setting one run has and the other has not ("weight_quant_block: 32 -> None", helper 120)
        return "unset"
    return value_text(v)


def value_text(v) -> str:
    """A setting's value in words: a runtime configuration as "CPU/high/normal/1t", a list of them joined by "vs"
    (a configuration comparison's `configs` read "[{'backend': 'CPU', 'precision': 'high', ...}]"; tryout 11)."""
    if isinstance(v, dict):
        if v and set(v) <= set(_CONFIG_KEYS):
            return "/".join(f"{v[k]}t" if k == "threads" else str(v[k]) for k in _CONFIG_KEYS if k in v)
        # the keys that are set: an input spec read "text=None,tokenizer=None,..." (helper 107), "shapes=,files="
        return ",".join(f"{k}={value_text(x)}" for k, x in v.items() if x is not None and x != {} and x != [])
    if isinstance(v, (list, tuple)):
        return (" vs " if v and all(isinstance(x, dict) for x in v) else ",").join(value_text(x) for x in v)
    return str(v)


_value = value_text


def settings_text(run: dict, limit: int = 120) -> str:
    """A run's settings in one short line: "mnn CPU high normal threads=1 runs=10" for a profile, the settings
    that are set for the other kinds."""
    s = run.get("settings") or {}
    parts = []
    if run.get("kind") in TIMED_KINDS + ("sweep",):
        for k in _PROFILE_KEYS:
            v = s.get(k)
            if v in _QUIET:
                continue
            parts.append(f"{k}={_value(v)}" if k in ("threads", "runs", "stats") else _value(v))
        keys = [k for k in s if k not in _PROFILE_KEYS and k not in ("warmup", "optimization", "seed")]
    elif run.get("kind") == "convert":  # the settings that differ from the converter's defaults
        default = ConvertSettings().to_json()
        keys = [k for k in s if k not in default or s[k] != default[k]]
        if not keys:
            return "default settings"
        parts += [f"{k}={_value(s[k])}" for k in keys]
        keys = []
    elif run.get("kind") == "compare" and s.get("mnn"):
        # a check of a given .mnn: the file, as its result names it, not "modes=fp32" (helper 114 read the Settings
        # column's "modes=fp32" beside a Result "as int8w")
        summary = run.get("summary") or {}
        label = None if summary.get("error") else next(   # (headline's label of the fp32 row, without the headline)
            (lab for m in summary.get("modes") or [] if isinstance(m, dict) and m.get("mode") == "fp32"
             and (lab := given_label(m))), None)
        label = label or os.path.basename(str(s["mnn"]))
        parts.append(f"checked {label}")
        keys = [k for k in s if k not in ("modes", "mnn")]
    else:
        keys = list(s)
    parts += [f"{k}={setting_text(k, s[k])}" for k in keys if s.get(k) not in _QUIET]
    text = " ".join(parts)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"
