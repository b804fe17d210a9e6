"""A compare result as the window shows it, Qt-free: which mode to show, the error each ONNX node introduces as an
overlay (with the nodes that have no MNN counterpart marked), the error-against-depth points, and the exports
(Model Explorer node data, CSV tables).

The overlay is keyed by ONNX node name (the name compare's rows carry: a node's name, else its id), value = the
error the node introduces (compare.metrics: its scaled error beyond what its inputs carried); a node without a
counterpart has the value NO_COUNTERPART, which the scale paints grey.
"""
from __future__ import annotations

import csv
import io
import math
import os

from mnnscope.inspector.compare.metrics import NOOP_OPS, worst_output, worst_output_error
from mnnscope.inspector.model.overlay import RAMPS, ColorScale, Overlay

NO_COUNTERPART = -1.0
NO_COUNTERPART_COLOUR = "#c8c8c8"
# ops whose every divergence is harmless (its error dies out, or nothing reads it): amber on the graph, as on the depth
# plot; painted by their error, a passing fp32's GRUs read red as the culprit (tryout 14, helpers 111 and 112)
HARMLESS_COLOUR = "#f9a825"
FLOOR = 1e-9  # the log scale's floor: errors below it are "none"
OVERLAY_KIND = "error introduced"


class ErrorScale(ColorScale):
    """The error ramp on a log axis, with NO_COUNTERPART (any negative value) in grey."""

    def colour(self, value: float) -> str:
        if value is not None and value < 0:
            return NO_COUNTERPART_COLOUR
        return super().colour(value)


def usable_modes(result: dict) -> list[dict]:
    return [m for m in result.get("modes", []) if not m.get("error")]


def worst_mode(result: dict) -> dict | None:
    """The mode whose worst output is furthest off (modes that failed to run count last)."""
    modes = usable_modes(result)
    if not modes:
        return (result.get("modes") or [None])[0]
    return max(modes, key=lambda m: (not m.get("ok"), _finite(worst_output_error(m.get("outputs", [])))))


def mode_label(mode: dict) -> str:
    """What a mode row is called where it is shown: its mode, or for a given .mnn judged as the mode its weights match
    (modes.stored_weights) "B.mnn (as fp16w)": a new-user try read "fp32 [wrong]", "over tolerance in fp32" and
    "fp32: error introduced" for an fp16-weight file the tab called "(as fp16w)"."""
    if mode.get("judged_as"):
        return f"{os.path.basename(mode.get('mnn_model') or '') or 'the given .mnn'} (as {mode['judged_as']})"
    return mode["mode"]


def find_mode(result: dict, name: str | None) -> dict | None:
    return next((m for m in result.get("modes", []) if m["mode"] == name), None)


def _finite(v) -> float:
    if v is None:
        return 0.0
    return 1e300 if math.isinf(v) else float(v)


def introduced_by_node(mode: dict) -> dict[str, float]:
    """ONNX node -> the error it introduces (the largest over its outputs)."""
    out: dict[str, float] = {}
    for t in mode.get("tensors", []):
        node = t.get("onnx_node")
        v = t.get("introduced")
        if not node or v is None:
            continue
        out[node] = max(out.get(node, 0.0), float(v))
    return out


def without_counterpart(mode: dict) -> list[str]:
    """ONNX nodes none of whose outputs has an MNN counterpart (fused away, removed, not read back)."""
    measured = {t["onnx_node"] for t in mode.get("tensors", []) if t.get("onnx_node")}
    names = []
    for u in mode.get("unmatched", []):
        n = u.get("onnx_node")
        if n and n not in measured and n not in names:
            names.append(n)
    return names


def with_regions(mode: dict, values: dict[str, float]) -> dict[str, float]:
    """`values` plus, for every ranked operator, the nodes of its region (ONNX ops fused into one MNN op) at the
    region's error: the ranking names the region's first node, which has no tensor of its own to measure, and
    painting it grey ("no counterpart") while the ranking blames it read as a contradiction."""
    out = dict(values)
    for e in mode.get("ranking", []):
        v = e.get("introduced")
        if v is None:
            continue
        for r in e.get("region") or []:
            name = r.get("name") if isinstance(r, dict) else r
            if name:
                out[name] = max(out.get(name, 0.0), float(v))
    return out


TOL_DECADES = 3  # the ramp starts this many decades below the tolerance: what adds less is green


def tolerance_level(mode: dict) -> float | None:
    """The mode's tolerance as a relative L2 error, the overlay's unit: rtol (max abs error over the reference's
    largest value, which a relative L2 error rarely exceeds), a rel_l2 threshold, a cosine c as sqrt(2 (1 - c)),
    an SQNR of d dB as 10^(-d/20); None for an absolute rule (max_abs), which has no relative level."""
    tol = mode.get("tolerance") or {}
    metric, thr = tol.get("metric"), tol.get("threshold")
    try:
        if metric is None:
            v = float(tol["rtol"])
        elif metric == "rel_l2":
            v = float(thr)
        elif metric == "cosine":
            v = math.sqrt(max(0.0, 2.0 * (1.0 - float(thr))))
        elif metric == "sqnr":
            v = 10.0 ** (-float(thr) / 20.0)
        else:
            return None
    except (KeyError, TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v > FLOOR else None


def error_overlay(mode: dict) -> Overlay:
    """The overlay of the error each node introduces (log scale, error ramp, scopes show their worst op).

    The ramp is the mode's tolerance's: red where an op adds as much as the tolerance allows (its far end the
    worst op where that adds more), green from three decades below; a passing mode's worst op is no longer red
    because it is the worst (tryout 20: int8w, passing, drew its graph red; fp32, failing, drew the same
    red). Without a relative tolerance, the ramp spans the mode's own errors."""
    values = with_regions(mode, introduced_by_node(mode))
    finite = [v for v in values.values() if math.isfinite(v) and v > FLOOR]
    level = tolerance_level(mode)
    if level is not None:
        hi = max([level] + finite)
        lo = max(level * 10.0 ** -TOL_DECADES, FLOOR)
    else:
        hi = max(finite) if finite else 1.0
        lo = max(min(finite) if finite else FLOOR, hi * 1e-6, FLOOR)
    if lo >= hi:
        lo = hi / 10
    keyed = {k: max(v, FLOOR) for k, v in values.items()}
    for n in without_counterpart(mode):
        keyed.setdefault(n, NO_COUNTERPART)
    ov = Overlay(f"{mode_label(mode)}: {OVERLAY_KIND}", keyed, ErrorScale(lo, hi, RAMPS["error"], log=True),
                 unit="rel. L2", aggregate="max")
    # grey: the nodes without a counterpart that no ranked region accounts for
    ov.meta = {"mode": mode["mode"], "kind": OVERLAY_KIND,
               # where the tolerance sits on the ramp (the legend marks it)
               "tolerance_at": level,
               "without_counterpart": [n for n in without_counterpart(mode) if n not in values],
               "via": region_owners(mode, introduced_by_node(mode)),
               # ops whose error reaches no output: painted by their error like the rest, and said so where the
               # colour is read (tryout 14: MNN's GRU final state, 68% off and never read, looked like the culprit)
               # (a node the blame walk names, as a source or on its chain, is not one, whatever its other outputs)
               "harmless": sorted({e["onnx_node"] for e in mode.get("harmless") or [] if e.get("onnx_node")}
                                  - blamed_nodes(mode)),
               # and painted amber, as the depth plot paints them: by their error they read red as the culprit in a
               # mode that passed (the romanizer encoder's GRUs, whose Y_h nothing reads: helpers 111 and 112)
               "harmless_colour": HARMLESS_COLOUR,
               # of those, the ones whose every harmless output is read by nothing (a GRU's Y_h where the model takes Y:
               # "its error dies out" read as wrong, helper 111)
               "unread": unread_nodes(mode),
               # values at the log scale's floor are no error at all: said "none", not "1e-09 rel. L2" (an If whose
               # output matched exactly read as adding an error: helper 96's try)
               "floor": FLOOR,
               # what the number is ("scaled rel. error" was never explained: tryout 18)
               "unit_help": "the relative L2 error the op adds to its output: \u2016MNN \u2212 reference\u2016 / "
                            "\u2016reference\u2016, less what its inputs carried in"}
    return ov


def blamed_nodes(mode: dict) -> set[str]:
    """The ONNX nodes the blame walk names: every source of an output's error and the ops that carried it on."""
    return {n for src in mode.get("sources") or [] for n in [src.get("onnx_node"), *(src.get("chain") or [])] if n}


def unread_nodes(mode: dict) -> list[str]:
    """The ONNX nodes whose harmless divergences are all on outputs nothing in the model reads."""
    by_node: dict[str, list[bool]] = {}
    for e in mode.get("harmless") or []:
        if e.get("onnx_node"):
            by_node.setdefault(e["onnx_node"], []).append(bool(e.get("unread")))
    return sorted(n for n, flags in by_node.items() if all(flags))


def region_owners(mode: dict, measured: dict[str, float]) -> dict[str, str]:
    """{node: the ranked op whose region's error it shows}, for nodes painted only through a region (tryout 8: an
    int64 Constant read "error introduced: 0.00399", its Gather's, with nothing saying so)."""
    out: dict[str, str] = {}
    for e in mode.get("ranking", []):
        for r in e.get("region") or []:
            name = r.get("name") if isinstance(r, dict) else r
            if name and name != e.get("onnx_node") and name not in measured:
                out.setdefault(name, e["onnx_node"])
    return out


TIME_KIND = "time change"


def has_time_delta(mode: dict | None) -> bool:
    """Whether a mode row carries per-op time changes (a comparison of two .mnn files or configurations)."""
    return bool(mode and any(d.get("only_in") is None for d in mode.get("op_time_delta") or []))


def time_delta_overlay(mode: dict) -> Overlay:
    """B's per-op time minus A's (ms) on the diverging ramp: red slower, blue faster, grey unchanged; a collapsed
    scope shows the sum of its ops' changes. Ops only one side has are left uncoloured."""
    values = {d["op"]: d["delta_ms"] for d in mode.get("op_time_delta") or [] if d.get("only_in") is None}
    ov = Overlay.diverging(f"{mode['mode']}: {TIME_KIND}", values, "ms")  # values read "-12.2 µs": no "(ms)"
    ov.meta = {"mode": mode["mode"], "kind": TIME_KIND, "time": mode.get("time"),
               "legend": f"time change per op, {mode['mode']} \u2212 A (ms):"}
    return ov


def time_overlay_summary(mode: dict, top: int = 5) -> dict:
    """{kind, values, top} of the twin's time overlay: top = the ops that grew most."""
    ov = time_delta_overlay(mode)
    grew = [{"op": d["op"], "type": d["type"], "a_ms": d["a_ms"], "b_ms": d["b_ms"], "delta_ms": d["delta_ms"]}
            for d in mode.get("op_time_delta") or [] if d.get("only_in") is None][:top]
    return {"kind": TIME_KIND, "mode": mode["mode"], "values": ov.values, "top": grew, "time": mode.get("time")}


def overlay_summary(mode: dict, top: int = 5) -> dict:
    """{kind, values, top} of the JSON twin: values per ONNX node, top = the most error-adding nodes."""
    values = introduced_by_node(mode)
    ranked = [{"onnx_node": e["onnx_node"], "op_type": e["op_type"], "introduced": _json_num(e["introduced"])}
              for e in mode.get("ranking", [])[:top]]
    return {"kind": OVERLAY_KIND, "mode": mode["mode"], "values": {k: _json_num(v) for k, v in values.items()},
            "without_counterpart": without_counterpart(mode), "top": ranked}


def _json_num(v):
    if v is None:
        return None
    return v if math.isfinite(v) else str(v)


def model_explorer_json(mode: dict, graph_id: str = "main") -> dict:
    """The overlay as Model Explorer node data; nodes without a counterpart get the text 'no MNN counterpart'."""
    data = error_overlay(mode).to_model_explorer(graph_id)
    for n in without_counterpart(mode):
        data[graph_id]["results"][n] = {"value": "no MNN counterpart", "bgColor": NO_COUNTERPART_COLOUR,
                                        "textColor": "#000000"}
    return data


def depth_points(mode: dict) -> list[dict]:
    """One point per measured tensor: depth, error (rel L2 floored for a log axis), node, verdict."""
    fd = mode.get("first_divergence") or {}
    harmless = {h["tensor"] for h in mode.get("harmless", [])}
    unread = {h["tensor"] for h in mode.get("harmless", []) if h.get("unread")}
    # an integer tensor that differs without consequence (an int64 bound MNN holds as int32) is no error curve's
    # point: amber with the harmless ones, not a red "over" at rel L2 1 ahead of the real divergence
    harmless |= {d["tensor"] for d in mode.get("integer_differences") or [] if not d.get("matters")}
    # the ops the verdict blames, and those that carried their error on: never harmless, whatever `reaches_output`
    # says (a tensor within tolerance between them stops that, not the blame)
    blamed = blamed_nodes(mode)
    pts = []
    for t in mode.get("tensors", []):
        e = t.get("rel_l2")
        e = FLOOR if e is None or not math.isfinite(e) or e < FLOOR else float(e)
        # over tolerance only by carrying a harmless divergence on (its error dies out before the outputs): amber
        # like the divergence itself; a red "over" there read as a contradiction of the verdict "match" (a new-user
        # try: int8's Reshape after a harmless Transpose, both at rel L2 0.0548, one amber, one red)
        carried = (not t.get("within") and t.get("reaches_output") is False and t.get("onnx_node") not in blamed)
        pts.append({"depth": int(t.get("depth") or 0), "error": e, "onnx_node": t.get("onnx_node"),
                    "op_type": t.get("op_type"), "rel_l2": t.get("rel_l2"),
                    "tensor": t["name"], "within": bool(t.get("within")),
                    "first": t["name"] == fd.get("tensor"), "harmless": t["name"] in harmless or carried,
                    "unread": t["name"] in unread, "carried": carried and t["name"] not in harmless})
    return pts


def point_tip(p: dict) -> str:
    """A depth plot point's tooltip: its node, what it measured and what its colour says (it read pyqtgraph's own
    "x: 19 y: -1.26 data=16", y the error's log10)."""
    e = p.get("rel_l2")
    err = "rel L2 not measured" if e is None else f"rel L2 {e:.3g}"
    state = ("the first divergence" if p["first"] else "within tolerance" if p["within"] else
             "over tolerance, harmless: nothing in the model reads it" if p["harmless"] and p.get("unread") else
             # (not on the Harmless tab, which lists where an error is made: helper 112 read "Harmless (0)" beside
             # amber points)
             "over tolerance by the error it carries from upstream, harmless: it dies out before the outputs in this "
             "run (not made here: the Harmless tab lists where errors are made)" if p.get("carried") else
             "over tolerance, harmless: its error dies out before the outputs in this run" if p["harmless"] else
             "over tolerance")
    node = p.get("onnx_node") or p["tensor"]
    kind = f" ({p['op_type']})" if p.get("op_type") else ""
    return f"{node}{kind}\ndepth {p['depth']} \u00b7 {err}\n{state}\nclick: select it on the graph"


# ----- tables (the dock's and the CSV exports) ---------------------------------------------------------
def failed_word(mode: dict, close_word: str = "over (close)") -> str:
    """What a failed check is called: a close mode is over the tolerance only through known approximations, and
    "FAIL" beside "close" read as a contradiction (tryouts 12, 13); the dock, the headline and the CLI table."""
    return close_word if mode.get("verdict") == "close" else "FAIL"


def output_rows(mode: dict) -> list[list]:
    over = failed_word(mode)
    return [[o["name"], o.get("rel_l2"), o.get("cosine"), o.get("max_abs"), o.get("top1"),
             "pass" if o.get("within") else over] for o in mode.get("outputs", [])]


# "top-1": of a scores output (logits, log-probabilities), the share of positions whose largest class is the same
OUTPUT_HEADER = ["output", "rel L2", "cosine", "max abs", "top-1", "verdict"]
# "error introduced": the overlay's, Properties' and the cause line's name for the same number
# "op's rel L2": its own output tensor's (not a model output: "output rel L2 0.345" beside the Outputs tab's 0.102 read as one)
# "its output": whether the op's output is within tolerance, the error that reached it included (as "verdict" a new
# user read /Gemm_1 "pass" under a headline blaming /Gemm_1, and ops adding 1e-7 "over")
RANKING_HEADER = ["#", "ONNX node", "type", "error introduced", "op's rel L2", "its output", "MNN ops"]
RANKING_OUTPUT_TIP = ("whether this op's output is within the mode's tolerance: its whole error, what reached it from "
                      "upstream included. An op can add much and stay within (the error grows over tolerance further "
                      "on), or add almost nothing and be over (its inputs were)")
TENSOR_HEADER = ["depth", "tensor", "ONNX node", "type", "rel L2", "max abs", "cosine", "introduced", "verdict"]


def ranking_label(entry: dict, repeated: bool) -> str:
    """A ranking row's name: its region's headline node, and where two regions start at one node (full int8 hides
    the tensors between: det's Conv.0 heads both the block to its Add and the one to its MaxPool, tryout 12 read
    "Conv.0" twice) also the region's last op: "Conv.0 \u2026 MaxPool.0"."""
    name = entry["onnx_node"]
    if not repeated:
        return name
    last = next((n["name"] for n in reversed(entry.get("region") or []) if n.get("op_type") not in NOOP_OPS), name)
    return name if last == name else f"{name} \u2026 {last}"


HARMLESS_OVER = "over (harmless)"   # a ranking row's output over tolerance, its error dying out before the outputs


def ranking_rows(mode: dict, labels: bool = False) -> list[list]:
    """The ranking's rows; `labels`: the name column told apart where two regions share a headline (the dock)."""
    ranking = mode.get("ranking", [])
    seen: dict = {}
    for e in ranking:
        seen[e["onnx_node"]] = seen.get(e["onnx_node"], 0) + 1
    # an op over tolerance whose error dies out before the outputs says so here as in the Harmless tab: encoder_block's
    # int8 ranking put Transpose_3 first, "over", while the Harmless tab listed it (helper 107 read the two as blaming
    # an op that cannot cause the error)
    harmless = {p["tensor"] for p in depth_points(mode) if p["harmless"]}   # (the depth plot's amber points)
    return [[k, ranking_label(e, seen[e["onnx_node"]] > 1) if labels else e["onnx_node"], e["op_type"],
             e["introduced"], e.get("rel_l2"), "within" if e.get("within") else
             HARMLESS_OVER if e.get("tensor") in harmless else "over", ", ".join(e.get("mnn_ops", []))]
            for k, e in enumerate(ranking, 1)]


def first_divergence_rank(mode: dict) -> int | None:
    """Where the mode's first divergence (the op the headline blames) stands in its ranking, from 0; None if not
    there. The ranking is by error introduced; the blame is the first op whose error reaches an output over
    tolerance, which need not be the largest (a new user saw /Add_4 blamed and /Mul_15 first in the ranking)."""
    fd = mode.get("first_divergence") or {}
    tensor = fd.get("tensor")
    if not tensor:
        return None
    return next((k for k, e in enumerate(mode.get("ranking") or []) if e.get("tensor") == tensor), None)


def tensor_rows(mode: dict) -> list[list]:
    return [[t["depth"], t["name"], t.get("onnx_node"), t.get("op_type"), t.get("rel_l2"), t.get("max_abs"),
             t.get("cosine"), t.get("introduced"), "pass" if t.get("within") else "over"]
            for t in mode.get("tensors", [])]


def tables_csv(mode: dict) -> str:
    """The mode's outputs, ranking and every measured tensor, as one CSV with a blank line between tables."""
    buf = io.StringIO()
    w = csv.writer(buf)
    for title, header, rows in (("outputs", OUTPUT_HEADER, output_rows(mode)),
                                ("ranking", RANKING_HEADER, ranking_rows(mode)),
                                ("tensors", TENSOR_HEADER, tensor_rows(mode))):
        w.writerow([f"# {mode['mode']} {title}"])
        w.writerow(header)
        w.writerows(rows)
        w.writerow([])
    return buf.getvalue()


def extra_cause(mode: dict) -> str:
    """The verdict's cause where it adds to the headline: a failed mode's cause is its error (and the node it failed
    at, said on its own line), which the headline already says (tryout 12 read the int8 failure twice, one line
    under the other); "" for a match."""
    cause = mode.get("cause") or ""
    if mode.get("verdict") in (None, "match"):
        return ""
    if mode.get("error") and cause.startswith(str(mode["error"]).strip()):
        return f"at ONNX node {mode['failed_node']}" if mode.get("failed_node") else ""
    return cause


def mode_headline(mode: dict) -> str:
    """One line: verdict, worst output, first divergence."""
    if mode.get("error"):
        return f"{mode_label(mode)} [{mode.get('verdict') or 'failed'}]: error: {mode['error']}"
    worst = worst_output(mode.get("outputs", []))
    fd = mode.get("first_divergence")
    where = f"first divergence {fd['onnx_node']} ({fd['op_type']})" if fd else "no divergence reaches the outputs"
    if (mode.get("effect") or "").startswith("no effect"):
        where = "no effect on this CPU (bit-identical to fp32)"
    rel = worst.get("rel_l2")
    rule = (mode.get("tolerance") or {}).get("rule")  # what pass means in this mode (each has its own default)
    tier = f" [{mode['verdict']}]" if mode.get("verdict") else ""  # match / close / wrong / failed (verdict.py)
    outcome = "pass" if mode.get("ok") else failed_word(mode, "over tolerance")
    ms = (mode.get("timing") or {}).get("ms")  # what the mode costs in speed beside accuracy (modes._time_modes)
    speed = f"; MNN {ms:.4g} ms per run{speed_caveat(mode)}" if isinstance(ms, (int, float)) else ""
    return (f"{mode_label(mode)}{tier}: {outcome}{f' ({rule})' if rule else ''}, worst output "
            f"rel L2 {'-' if rel is None else f'{rel:.3g}'}; {where}{speed}")


def fix_summary(fix: dict | None) -> dict | None:
    """Before/after worst output error and size of a fix result (compare's `fix`), or None."""
    if not fix or not fix.get("possible"):
        return None
    b, a = worst_output_error(fix["before"]["outputs"]), worst_output_error(fix["after"]["outputs"])
    return {"mode": fix["mode"], "skip_ops": fix["skip_ops"], "before": b, "after": a, "gain": fix.get("gain"),
            "ok_after": fix["after"]["ok"], "size_before": (fix.get("size_bytes") or {}).get("before"),
            "size_after": (fix.get("size_bytes") or {}).get("after"),
            # the figure the tolerance is judged on, before and after (verdict.judged_change; compare.service adds it)
            "judged": fix.get("judged")}


# ----- speed: what a mode's time says, and what it cannot --------------------------------------------------
# Below this median per run, a mode's time is no speed figure: on a desktop the same model's median moves between
# reruns by more than modes differ (measured 2026-12 on the 2-core CI machine, five timed runs each: cnn.onnx fp32
# 0.044, 0.044 and 0.065 ms over three reruns, the third's min..max clear of the first two's; the romanizer decoder's
# medians 0.079-0.107 ms for fp32 and 0.072-0.113 ms for a "low" bit-identical to it; a new user read 0.063, 0.096
# and 0.114 ms on theirs). PP-OCRv6 rec (7-11 ms) moved as much between reruns, but its runs' own min..max took it in.
TIME_FLOOR_MS = 1.0
SLOWER_WARN = 1.5  # a mode this many times fp32's run time in the same comparison is warned about
# two timings within noise (history.py's diffs use within_noise too): their runs' min..max overlap, or their
# medians lie within this share of each other
NOISE_RATIO = 0.02


def _timed(mode: dict) -> dict | None:
    t = mode.get("timing") or {}
    return t if isinstance(t.get("ms"), (int, float)) and t["ms"] > 0 else None


def within_noise(a: dict, b: dict) -> bool:
    """Whether two timings (a mode's `timing`) differ by no more than run-to-run noise: both below TIME_FLOOR_MS, or
    their runs' min..max overlap, or the medians are within NOISE_RATIO of each other."""
    if a["ms"] < TIME_FLOOR_MS and b["ms"] < TIME_FLOOR_MS:
        return True
    lo_a, hi_a, lo_b, hi_b = a.get("ms_min"), a.get("ms_max"), b.get("ms_min"), b.get("ms_max")
    if all(isinstance(v, (int, float)) for v in (lo_a, hi_a, lo_b, hi_b)) and lo_a <= hi_b and lo_b <= hi_a:
        return True
    return abs(a["ms"] / b["ms"] - 1) < NOISE_RATIO


def same_computation(a: dict, b: dict) -> bool:
    """Two modes that ran one file and gave bit-identical results ("low" with no effect on this CPU beside fp32): one
    computation, so any difference of their times is noise (a report read "low 0.07 ms, fp32 0.13 ms")."""
    ka, kb = (a.get("conversion") or {}).get("key"), (b.get("conversion") or {}).get("key")
    if not ka or ka != kb:
        return False
    quiet = [(m.get("effect") or "").startswith("no effect") for m in (a, b)]
    return all(quiet) or (quiet[0] and b.get("mode") == "fp32") or (quiet[1] and a.get("mode") == "fp32")


def annotate_speed(modes: list[dict]) -> None:
    """Each timed mode's `timing` gets `noise_floor_ms`, `below_floor` (its median is under TIME_FLOOR_MS) and
    `within_noise_of` (the other timed modes whose time it cannot be told apart from: within_noise, or the same
    computation); compare.service adds them to every comparison."""
    timed = [m for m in modes if _timed(m)]
    for m in timed:
        t = m["timing"]
        t["noise_floor_ms"] = TIME_FLOOR_MS
        t["below_floor"] = t["ms"] < TIME_FLOOR_MS
        t["within_noise_of"] = [o["mode"] for o in timed if o is not m
                                and (within_noise(t, o["timing"]) or same_computation(m, o))]
    fp32 = next((m for m in timed if m.get("mode") == "fp32" and not m.get("emulated")), None)
    for m in timed:
        t = m["timing"]
        if fp32 is None or m is fp32 or m.get("emulated") or t["below_floor"] or "fp32" in t["within_noise_of"]:
            continue
        ratio = t["ms"] / fp32["timing"]["ms"]
        if ratio >= SLOWER_WARN:
            # measured, MNN 3.6.1 on CPU, PP-OCRv6 det at 640x640: int8w 331 ms against fp32's 161 (compare: 346
            # against 157), one 1x1 conv of 768 -> 384 channels 141.5 ms against 14.5; nothing said so, and a new user
            # shipping int8w for speed read the Compare dock's "MNN 350.4 ms per run" alone (helper 113)
            m.setdefault("warnings", []).append(
                f"{m['mode']} runs {ratio:.1f}x slower than fp32 here ({t['ms']:.3g} ms against "
                f"{fp32['timing']['ms']:.3g} ms per run): quantized weights make the file smaller, not the run faster, "
                "and MNN's CPU kernels for them can be slower; profile both conversions and diff the runs (Runs dock) "
                "to see which ops")


def speed_caveat(mode: dict) -> str:
    """What a mode's time cannot say, for its headline: " (under 1 ms: ...)" or " (within run-to-run noise of fp32)";
    "" when it stands on its own (annotate_speed's fields; none: nothing said)."""
    t = _timed(mode)
    if t is None:
        return ""
    if t.get("below_floor", t["ms"] < TIME_FLOOR_MS):
        return f" (under {TIME_FLOOR_MS:g} ms per run, timings are noise: reruns vary more than modes differ)"
    others = t.get("within_noise_of") or []
    if not others:
        return ""
    # with the spread that makes it so: 17.7 ms and 42.1 ms "within noise" of each other read as a contradiction (a
    # new user on a loaded machine), the runs' ranges overlapping
    lo, hi = t.get("ms_min"), t.get("ms_max")
    spread = f": its runs took {lo:.3g}-{hi:.3g} ms" if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) \
        and hi > lo else ""
    return f" (within run-to-run noise of {', '.join(others)}{spread})"


def speed_groups(modes: list[dict]) -> list[list[dict]]:
    """The timed modes in groups, fastest group first, whose times cannot be told apart inside a group (any two
    within noise join their groups) and can between groups: the only order modes may be ranked in by time."""
    timed = sorted((m for m in modes if _timed(m)), key=lambda m: m["timing"]["ms"])
    groups: list[list[dict]] = []
    for m in timed:
        tied = [g for g in groups if any(within_noise(m["timing"], o["timing"]) or same_computation(m, o) for o in g)]
        merged = [m] + [o for g in tied for o in g]
        rest = [g for g in groups if all(g is not t for t in tied)]
        groups = rest + [sorted(merged, key=lambda x: x["timing"]["ms"])]
    groups.sort(key=lambda g: g[0]["timing"]["ms"])
    # groups whose medians interleave are one: a ranking between them would rest on the noise inside them
    out: list[list[dict]] = []
    for g in groups:
        if out and g[0]["timing"]["ms"] <= out[-1][-1]["timing"]["ms"]:
            out[-1] = sorted(out[-1] + g, key=lambda x: x["timing"]["ms"])
        else:
            out.append(g)
    # inside a group, the comparison's own order: listed by time, tied modes still read as ranked
    order = {id(m): k for k, m in enumerate(modes)}
    return [sorted(g, key=lambda m: order[id(m)]) for g in out]


def speed_text(modes: list[dict]) -> str | None:
    """The comparison's speed in one sentence that ranks modes only where their times differ beyond run-to-run
    noise; None when no mode was timed."""
    groups = speed_groups(modes)
    if not groups:
        return None
    ms = lambda m: f"{mode_label(m)} {m['timing']['ms']:.3g} ms"  # noqa: E731
    every = [m for m in modes if any(m is o for g in groups for o in g)]
    counts = sorted({m["timing"].get("runs") or 0 for m in every})
    runs = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    if all(m["timing"]["ms"] < TIME_FLOOR_MS for m in every):
        return (f"MNN time per run (median of {runs} runs): {', '.join(ms(m) for m in every)}: "
                + ("all " if len(every) > 1 else "")
                + f"under {TIME_FLOOR_MS:g} ms, where the same model's time moves between reruns by more than "
                  "modes differ: " + ("no mode is faster than another here" if len(every) > 1
                                      else "no speed figure to rely on"))
    parts = []
    for g in groups:
        if len(g) == 1:
            parts.append(ms(g[0]))
        else:
            parts.append(" \u2248 ".join(ms(m) for m in g) + " (within run-to-run noise of each other)")
    return (f"MNN time per run (median of {runs} runs), fastest first: " + " < ".join(parts)
            + ("" if len(groups) > 1 else ": no mode is faster than another here"))
