"""The verdict of one compare mode: match, close, wrong or failed, with a cause sentence.

- `match`: every output within the mode's tolerance.
- `close`: beyond the tolerance, but every divergence that reaches the outputs was introduced (traced back to its
  source, metrics._source) by a known approximation (approximations.py) whose own error stays within its measured
  bound, and the worst output stays within CLOSE_BOUND (relative L2).
- `wrong`: a real divergence: an op whose introduced error is no known approximation (or one beyond its bound),
  a shape divergence, or outputs beyond CLOSE_BOUND.
- `failed`: the conversion or the run failed (MNN's own message, and the ONNX node when the message names
  it), MNN gave an empty tensor where ONNX Runtime has values, or an output has no MNN value at all.

`failed_node`: the ONNX node where it failed, when it can be known (named in MNN's message, the first empty
tensor's node, the node of the first shape divergence); else None. `blamed_node` (a `wrong` mode whose error
an op introduced that no known approximation explains): that op; it differs from `first_divergence` when the
first divergence is a known approximation within its bound and the real loss comes later.
"""
from __future__ import annotations

import math
import re

from mnnscope.inspector.compare.approximations import find, within_bound
from mnnscope.inspector.compare.errormap import ranking_label
from mnnscope.inspector.compare.metrics import worst_output_error
from mnnscope.inspector.compare.tolerance import Tolerance, criterion
from mnnscope.inspector.model.graph import ModelGraph

VERDICTS = ("match", "close", "wrong", "failed")
# The worst output relative L2 within which divergences made only by known approximations are called close:
# the measured GELU kernel adds 1e-4 relative; beyond 1e-2 the model amplifies it into a result a user
# would not accept as the same, whatever made it.
CLOSE_BOUND = 1e-2

_NAMED = (re.compile(r"during op `([^`]+)`"), re.compile(r"Compute Shape Error for (\S+)"),
          re.compile(r"node '([^']+)'"), re.compile(r"\bnode ([^\s,;:()]+)"))
_NOT_NODES = {"module.run", "module", "load", "run"}


def onnx_node_for(name: str | None, graph: ModelGraph | None) -> str | None:
    """The ONNX node a name in MNN's words refers to: a node name, or an output tensor's name (MNN names ops after
    ONNX output tensors), tried whole and then without its trailing '/part's."""
    if not name or graph is None or name in _NOT_NODES:
        return None
    names = {(d.get("name") or n): n for n, d in graph.g.nodes(data=True)}
    producer = graph.producers()
    probe = name.strip("'\"`.,;:")
    while probe:
        if probe in names:
            return probe
        if probe in producer:
            d = graph.g.nodes[producer[probe]]
            return d.get("name") or producer[probe]
        if "/" not in probe:
            break
        probe = probe.rsplit("/", 1)[0]
    return None


def node_in_message(text: str | None, graph: ModelGraph | None) -> str | None:
    for pattern in _NAMED:
        for found in pattern.findall(text or ""):
            node = onnx_node_for(found, graph)
            if node:
                return node
    return None


def _g(v) -> str:
    return "-" if v is None else f"{v:.3g}"


def judge(row: dict, graph: ModelGraph | None = None) -> dict:
    """{verdict, cause, failed_node, approximations} for one mode row (modes._run_mode's, compare_mode's
    fields merged in)."""
    run = row.get("run") or {}
    fallback = run.get("fallback_reason")
    if row.get("error"):
        message = row["error"]
        node = node_in_message(message, graph) or node_in_message(fallback, graph)
        # an emulated mode's run is ONNX Runtime's on the emulated copy, not MNN's (an fp16c that ONNX Runtime could not
        # load read "MNN could not run the model")
        what = ("the conversion failed" if message.startswith("conversion failed") else
                "ONNX Runtime could not run the emulated copy" if row.get("emulated") else "MNN could not run the model")
        cause = f"{what}: {message}" if not message.startswith("conversion failed") else message
        if fallback and fallback not in cause:
            cause += f"; before that: {fallback}"
        return {"verdict": "failed", "cause": cause + (f" (at ONNX node {node})" if node and node not in cause else ""),
                "failed_node": node, "approximations": []}
    tensors = row.get("tensors") or []
    empty = next((t for t in tensors if t.get("shape_mismatch") and _size(t.get("mnn_shape")) == 0
                  and _size(t.get("ref_shape")) > 0), None)
    if empty is not None:
        node = empty.get("onnx_node")
        cause = (f"MNN produced an empty tensor {empty['name']} at ONNX node {node} ({empty['op_type']}) where "
                 f"ONNX Runtime has shape {empty['ref_shape']}")
        return {"verdict": "failed", "cause": _with_run_notes(cause, fallback, run), "failed_node": node,
                "approximations": []}
    missing = [o for o in row.get("outputs", []) if not o.get("matched")]
    if missing:
        o = missing[0]
        cause = f"output {o['name']} has no MNN value: {o.get('reason') or 'not read back'}"
        node = node_in_message(" ".join(run.get("problems") or []), graph) or node_in_message(fallback, graph)
        return {"verdict": "failed", "cause": _with_run_notes(cause, fallback, run), "failed_node": node,
                "approximations": []}
    rule = (row.get("tolerance") or {}).get("rule", "the tolerance")
    worst = worst_output_error(row.get("outputs", []))
    if row.get("ok"):
        note = "" if not (row.get("effect") or "").startswith("no effect") else "; " + row["effect"]
        return {"verdict": "match", "cause": f"every output within tolerance ({rule}){note}", "failed_node": None,
                "approximations": []}
    shape = next((t for t in tensors if t.get("shape_mismatch")), None)
    if shape is not None:
        return {"verdict": "wrong", "cause": (f"shape divergence at ONNX node {shape.get('onnx_node')} "
                                              f"({shape['op_type']}): MNN gives {shape['mnn_shape']}, ONNX Runtime "
                                              f"{shape['ref_shape']}"),
                "failed_node": shape.get("onnx_node"), "approximations": []}
    sources = row.get("sources") or ([row["first_divergence"]] if row.get("first_divergence") else [])
    integer = {d["tensor"]: d for d in row.get("integer_differences") or []}
    if not sources:
        out = next((d for d in integer.values() if d.get("output")), None)
        if out is not None:  # an integer output (indices, a mask) differs while every float tensor stays within
            return {"verdict": "wrong", "cause": (f"output {out['tensor']} (integer) differs in {out['mismatch']} of "
                                                  f"{out['size']} elements: {out['why']}"),
                    "failed_node": None, "approximations": []}
        return {"verdict": "wrong", "cause": f"outputs over tolerance ({rule}; worst rel L2 {_g(worst)}) with no "
                                             f"single operator to blame (error spread over many small steps)",
                "failed_node": None, "approximations": []}
    tol = row.get("tolerance") or {}
    found, unexplained = [], []
    for s in sources:
        entry = find([n["op_type"] for n in s.get("region", [])], s.get("mnn_types") or [])
        axis = axis_length(s, graph)
        if entry is not None and within_bound(entry, s.get("max_abs"), tol.get("atol") or 0.0, tol.get("rtol") or 0.0,
                                              s.get("ref_max_abs"), axis):
            found.append({"onnx_node": s["onnx_node"], "op_type": s["op_type"], "id": entry.id,
                          "description": entry.description,
                          "typical_max_abs": entry.bound(axis, s.get("ref_max_abs")),
                          "axis_length": axis if entry.per_axis_element else None,
                          "max_abs": s.get("max_abs"), "setting": entry.setting,
                          "setting_effect": entry.setting_effect, "convert_fields": dict(entry.convert_fields),
                          "setting_cost": entry.setting_cost})
        else:
            unexplained.append(s)
    fd = sources[0]
    chain = fd.get("chain") or [fd["onnx_node"]]
    carried = f", carried through {' -> '.join(chain)}" if len(chain) > 1 else ""
    if not unexplained and worst <= CLOSE_BOUND:
        settings = sorted({a["setting"] for a in found if a["setting"]})
        costs = list(dict.fromkeys(a["setting_cost"] for a in found if a["setting"] and a.get("setting_cost")))
        fix = (f"reconvert with {' '.join(settings)} to compute it exactly"
               + (f" ({'; '.join(costs)})" if costs else "") if settings else "no converter setting avoids it")
        names = ", ".join(dict.fromkeys(f"{a['onnx_node']} ({a['op_type']})" for a in found))
        cause = (f"beyond the tolerance only through known approximations: {names}: "
                 f"{found[0]['description']} (own max abs error {_g(found[0]['max_abs'])}, "
                 f"{_bound_words(found[0])}){carried}; worst output rel L2 {_g(worst)} <= {CLOSE_BOUND:g}; "
                 f"{fix}")
        return {"verdict": "close", "cause": cause, "failed_node": None, "approximations": found}
    if not unexplained:
        cause = (f"only known approximations introduce error ({', '.join(a['onnx_node'] for a in found)}), but the "
                 f"model amplifies it to output rel L2 {_g(worst)}, beyond the {CLOSE_BOUND:g} bound of close{carried}")
        return {"verdict": "wrong", "cause": cause, "failed_node": None, "approximations": found}
    u = unexplained[0]
    chain = u.get("chain") or [u["onnx_node"]]
    carried = f", carried through {' -> '.join(chain)}" if len(chain) > 1 else ""
    judged = row.get("judged_as") or row.get("mode")  # a given .mnn with fp16 weights is judged as fp16w
    # where two regions start at this op (full int8: det's Conv.0 heads the block to its Add and the one to its
    # MaxPool) the region is named as the Ranking names it: the headline's 0.407 beside the graph's 0.784 for "Conv.0"
    # read as two figures for one thing (a new-user try)
    shared = sum(1 for e in row.get("ranking") or [] if e.get("onnx_node") == u["onnx_node"]) > 1
    name = ranking_label(u, shared)
    who = (f"MNN computes {name} ({u['op_type']}) differently" if judged in (None, "fp32") else
           f"{name} ({u['op_type']}) loses accuracy under {row.get('description') or row['mode']}")
    reads = [integer[t] for t in u.get("integer_inputs_differ") or [] if t in integer]
    reads = (f" (it reads {reads[0]['tensor']}, an integer tensor that differs: {reads[0]['why']})"
             if reads else "")
    came = max((i.get("rel_l2") or 0.0 for i in u.get("inputs") or [] if not i.get("exact")), default=0.0)
    if judged in (None, "fp32") and not reads and came and (u.get("introduced") or 0.0) < came:
        # it adds less than what reached it, and every tensor before it is within the tolerance (it is the first
        # over): rounding built up over the ops before it, and this one only takes it over (helper, PP-OCRv6 det at
        # 640x480 with exact GELU: "MNN computes Conv.82 differently" for an op adding 1.33e-05 to the 3.76e-05 its
        # inputs carried)
        who = (f"the error builds up over the ops before {u['onnx_node']} ({u['op_type']}), each within the "
               "tolerance; it adds less than what reaches it and takes it over")
    # the number the graph's overlay, Properties and the Ranking show for the op ("error introduced", the scaled error
    # it adds beyond what its inputs carried), then its output tensor's whole error, named as such: "rel L2 0.0436 made
    # there" beside Properties' "error introduced: 0.0114" read as two measures of one thing (tryout, PP-OCRv6 int8w)
    cause = (f"{who}: error introduced {_g(u.get('introduced'))} (its output's rel L2 {_g(u.get('rel_l2'))}"
             + (f", its inputs' already {_g(came)}" if came else "")
             + f"; max abs {_g(u.get('max_abs'))}){reads}{carried}; worst model output rel L2 {_g(worst)} ({rule})")
    before = [a for a in found if a["onnx_node"] == fd["onnx_node"]] if u is not fd else []
    if before:  # the headline's first divergence is not the op blamed: say why, or the two read as a contradiction
        cause += (f"; the first divergence, {fd['onnx_node']} ({fd['op_type']}), is a known approximation within its "
                  f"bound ({before[0]['description']})")
    weights = region_weights(u, graph)
    if judged in WEIGHT_ONLY and weights is not None and not weights:
        cause = cause.replace(who, f"the error over the tolerance starts at {u['onnx_node']} ({u['op_type']}) under "
                                   f"{row.get('description') or row['mode']}", 1)
        # a weight-only mode changes weights only: an op with none to change is no op to keep in float (tryout:
        # fp16w blamed a GELU's Div, its only weight the scalar 1.414, and the fix button greyed out without a word)
        top = [e for e in row.get("ranking") or [] if region_weights(e, graph)][:3]
        cause += (f"; {u['onnx_node']} ({u['op_type']}) has no weight tensor for {row['mode']} to store differently "
                  "(at most a scalar constant), so it cannot be kept in float: what it adds is its MNN kernel's own "
                  "error, the rest of its output's error came from "
                  + ("fp16-stored" if row["mode"] == "fp16w" else "quantized") + " weights upstream"
                  + ("; the ops with weights that add the most: "
                     + ", ".join(f"{e['onnx_node']} ({e['op_type']}, error introduced {_g(e.get('introduced'))})"
                                 for e in top) if top else ""))
    return {"verdict": "wrong", "cause": cause, "failed_node": None, "approximations": found,
            "blamed_node": u["onnx_node"], "blamed_has_weights": weights}


# The modes that change weights only: an op without weights computes as in fp32 there.
WEIGHT_ONLY = ("fp16w", "int8w", "int4w")


def region_weights(entry: dict, graph: ModelGraph | None) -> bool | None:
    """Whether an op (a ranking entry or source: its region of ONNX nodes) reads a weight tensor, an initializer of
    more than one element (a scalar constant such as a GELU's 1.414 is no layer's weights); None without the graph."""
    if graph is None:
        return None
    names = {r.get("name") if isinstance(r, dict) else r for r in entry.get("region") or []} or {entry.get("onnx_node")}
    for _, d in graph.g.nodes(data=True):
        if (d.get("name") or "") not in names:
            continue
        for i in d.get("inputs") or []:
            t = graph.tensors.get(i) if i else None
            if t is not None and t.is_initializer and _size(t.shape) > 1:
                return True
    return False


def _bound_words(found: dict) -> str:
    if found.get("axis_length"):
        return f"at most {_g(found['typical_max_abs'])} over its {found['axis_length']:,} classes"
    return f"typical {_g(found['typical_max_abs'])}"


def axis_length(source: dict, graph: ModelGraph | None) -> int | None:
    """The length of the axis a Softmax-like source op works along (its output's reference shape, the node's `axis`;
    before opset 13 Softmax works on the flattened dims from `axis` on, default 1), else None."""
    shape = source.get("ref_shape")
    if not shape or source.get("op_type") not in ("Softmax", "LogSoftmax"):
        return None
    opset = 13
    attrs: dict = {}
    if graph is not None:
        opset = graph.opset.get("ai.onnx", graph.opset.get("", 13))
        attrs = next((d.get("attrs") or {} for _, d in graph.g.nodes(data=True)
                      if d.get("name") == source.get("onnx_node")), {})
    axis = int(attrs.get("axis", -1 if opset >= 13 else 1))
    if not -len(shape) <= axis < len(shape):
        return None
    dims = shape[axis:] if opset < 13 else [shape[axis]]
    return _size(dims)


def _size(shape) -> int:
    if shape is None:
        return -1
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _with_run_notes(cause: str, fallback: str | None, run: dict) -> str:
    notes = []
    if fallback:
        notes.append(f"MNN: {fallback}")
    problems = run.get("problems") or []
    if problems:
        notes.append("; ".join(problems[:3]))
    return cause + (" (" + "; ".join(notes) + ")" if notes else "")


# ----- the figure a tolerance is judged on --------------------------------------------------------------------
def judged_figure(output: dict, tolerance: dict | None) -> dict:
    """What the tolerance (tolerance.py's rule, as a mode row's `tolerance`) judges one output row on: {output,
    figure (its name in words), value, limit, op ("<=" or ">="), within, limit_words}. rel L2 is shown everywhere but
    the default rule is on max abs error against atol + rtol x max|reference| (a fix read "rel L2 0.142 FAIL ->
    0.135 pass" and the flip looked arbitrary, new users 2026-12). `value` None: nothing finite to compare (a
    shape, non-finite or missing-value mismatch, said in `figure`)."""
    tol = tolerance or {}
    rule = Tolerance(float(tol.get("atol") or 0.0), float(tol.get("rtol") or 0.0), tol.get("metric"),
                     tol.get("threshold"))
    ref = output.get("ref_max_abs")
    out = {"output": output.get("name"), "within": bool(output.get("within")), "op": "<="}
    if not output.get("matched", True):
        return dict(out, figure="no MNN value", value=None, limit=None, limit_words=None)
    if output.get("shape_mismatch"):
        return dict(out, figure="shape differs", value=None, limit=None, limit_words=None)
    if output.get("max_abs") is None:
        return dict(out, figure="no finite elements", value=None, limit=None, limit_words=None)
    # (a row without its reference's max: no rtol term, and a metric judged as such)
    known = ref if ref is not None else (0.0 if rule.metric is None else math.inf)
    key, value, limit, op = criterion(dict(output, ref_max_abs=known), rule)
    if rule.metric is None and ref is not None:
        words = f"{_n(rule.atol)} + {_n(rule.rtol)} x max|reference| {_n(ref)}"
    elif rule.metric is None or known <= rule.atol:
        words = f"atol {_n(rule.atol)}, its reference being at most {_n(ref)}"
    else:
        words = f"--metric {rule.metric}"
    name = {"sqnr_db": "SQNR dB", "rel_l2": "rel L2", "max_abs": "max abs error"}.get(key, key)
    return dict(out, figure=name, value=value, limit=limit, op=op, limit_words=words)


def judged_change(before: list[dict], after: list[dict], tolerance: dict | None) -> dict:
    """The tolerance's own figure per output before and after a change (a fix): {rule, flipped (the mode's pass/fail
    changed), outputs: [{output, figure, before, after, limit, op, within_before, within_after, flipped}], text}.
    `text` names the outputs whose verdict flipped (else the one furthest over its limit), "hidden_out: max abs error
    0.417 -> 0.151 against its limit 0.195 (0.001 + 0.2 x max|reference| 0.971)"."""
    after_by = {o.get("name"): o for o in after}
    rows = []
    for o in before:
        a = after_by.get(o.get("name"))
        if a is None:
            continue
        jb, ja = judged_figure(o, tolerance), judged_figure(a, tolerance)
        rows.append({"output": jb["output"], "figure": ja["figure"] if jb["value"] is None else jb["figure"],
                     "before": jb["value"], "after": ja["value"], "limit": ja["limit"] if ja["limit"] is not None
                     else jb["limit"], "op": jb["op"], "limit_words": ja["limit_words"] or jb["limit_words"],
                     "within_before": jb["within"], "within_after": ja["within"],
                     "flipped": jb["within"] != ja["within"]})
    ok_before = all(o.get("within") for o in before)
    ok_after = all(o.get("within") for o in after)
    shown = [r for r in rows if r["flipped"]] or sorted(
        (r for r in rows if not r["within_after"]), key=lambda r: -_over(r["after"], r["limit"], r["op"]))[:1]
    return {"rule": (tolerance or {}).get("rule"), "flipped": ok_before != ok_after, "outputs": rows,
            "text": "; ".join(judged_text(r) for r in shown) or None}


def decisive(judged: dict | None) -> dict | None:
    """The output row of judged_change that decides the mode's verdict: the first whose verdict flipped, else the one
    furthest over its limit after, else the one closest to it; None without rows."""
    rows = (judged or {}).get("outputs") or []
    if not rows:
        return None
    flipped = [r for r in rows if r["flipped"]]
    if flipped:
        return flipped[0]
    over = [r for r in rows if not r["within_after"]]
    return max(over or rows, key=lambda r: _over(r["after"], r["limit"], r["op"]))


def judged_cell(row: dict, when: str) -> str:
    """One side ("before" or "after") of a judged row in a table cell: "hidden_out: max abs error 0.417 > 0.195"."""
    value, ok = row[when], row[f"within_{when}"]
    if value is None:
        return f"{row['output']}: {row['figure']}"
    sign = row["op"] if ok else (">" if row["op"] == "<=" else "<")
    return f"{row['output']}: {row['figure']} {_n(value)} {sign} {_n(row['limit'])}" + (
        f" ({row['limit_words']})" if row.get("limit_words") and when == "after" else "")


def judged_text(row: dict) -> str:
    """"hidden_out: max abs error 0.417 -> 0.151 against its limit 0.195 (0.001 + 0.2 x max|reference| 0.971)"."""
    limit = "" if row.get("limit") is None else (
        f" against its {'floor' if row['op'] == '>=' else 'limit'} {_n(row['limit'])}"
        + (f" ({row['limit_words']})" if row.get("limit_words") else ""))
    return f"{row['output']}: {row['figure']} {_n(row['before'])} -> {_n(row['after'])}{limit}"


def _over(value, limit, op: str) -> float:
    """How far past its limit a figure is (a ratio; 0 when unknown), to pick the output furthest over."""
    if value is None or limit is None or limit == 0:
        return 0.0
    return value / limit if op == "<=" else limit / value if value else 0.0


def _n(v) -> str:
    return "-" if v is None else f"{v:.3g}"
