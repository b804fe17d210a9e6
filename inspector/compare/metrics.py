"""Layerwise comparison of one MNN run against the ONNX Runtime reference: metrics, verdicts, localisation.

The tolerance rule (when a tensor is *within*) is in tolerance.py.

Localisation: a tensor *introduces* an error when it is over tolerance while every tensor its operator
reads is within (error made there, not inherited). When the ONNX tensors between it and the nearest
measured ones have no MNN counterpart (fused, decomposed), the operator is that whole region of ONNX
nodes, reported first one first. Only divergences whose error reaches a diverged model output through
diverged or unmeasured tensors count; the others are listed as harmless (overwritten, masked, or washed out
downstream). The first divergence is not that first tensor over tolerance but the op where its error was
introduced, found by walking back through ops that only carry error (`_source`), with the chain of ops
between (an op under the tolerance whose error exact ops amplify over it is the one to blame); the verdict
of the mode (verdict.py) reads these sources. Operators are ranked by the error they add beyond what
their inputs carried: measured exactly by replaying simple ops on MNN's inputs (replay.py), else
estimated (see `_introduced`).

Integer and bool tensors (indices, shapes, Slice bounds, masks) are equal or not; one that differs is never an
accuracy divergence of its own (MNN holds int64 as int32: an INT64 "to the end" bound comes out as another
number meaning the same): `integer_differences` lists them with why and whether they matter, and a float op that
goes wrong on one is blamed with it named (`integer_inputs_differ`).
"""
from __future__ import annotations

import math
import os
import re

import numpy as np

from mnnscope.inspector.compare.match import Match
from mnnscope.inspector.compare.replay import Replayer
from mnnscope.inspector.compare.tolerance import Tolerance, scaled_error, tiny_output, within
from mnnscope.inspector.model.graph import ModelGraph
from mnnscope.inspector.store.tensors import load

# ops whose fused regions keep the subtraction estimate (see compare_mode)
REPLAY_KEEPS_ESTIMATE = {"Conv", "ConvTranspose", "MatMul", "Gemm"}

# ONNX ops that only select, reorder or relabel values: they cannot create absolute error.
MOVE_OPS = {"Gather", "GatherElements", "GatherND", "Slice", "Split", "Transpose", "Reshape", "Squeeze",
            "Unsqueeze", "Flatten", "Identity", "Concat", "Cast", "Dropout", "DepthToSpace", "SpaceToDepth"}
NOOP_OPS = {"Identity", "Dropout", "Constant"}  # compute nothing: never a region's headline
CHUNK = 1 << 20  # elements per step: big tensors are read through mmap a piece at a time
REGION_LIMIT = 500
SOURCES_LIMIT = 50  # harmful divergences walked back to their sources (the verdict reads them)
CARRY_SHARE = 0.2  # an op that adds less than this share of the error it received only carries it
# An infinity on one side and, on the other, a finite value of the same sign at least this large (half of fp16's
# largest finite value, so that a saturated mask plus ordinary scores stays saturated): what fp16
# storage makes of +-inf (measured: MNN's --fp16 stores a -inf mask constant as -65504) and what it makes of
# a -1e9 mask constant the other way round (-inf). Both mean "masked"; the element counts as equal.
SATURATED = 3.0e4


# ----- metrics -------------------------------------------------------------------------------------------
def worst_output(outputs: list[dict]) -> dict:
    """The output row with the largest relative L2 error ({} when there is none): the one rule every
    summary (CLI, report, fix suggestion) uses. An output that was not measured (unmatched: rel_l2 None)
    or whose error is NaN counts as infinitely wrong: an error we cannot bound is no better than any."""
    return max(outputs, key=worst_output_error_of, default={})


def worst_output_error_of(row: dict) -> float:
    """One output row's relative L2 error under worst_output()'s rule (None or NaN: inf)."""
    e = row.get("rel_l2")
    return math.inf if e is None or (isinstance(e, float) and math.isnan(e)) else float(e)


def worst_output_error(outputs: list[dict]) -> float:
    """worst_output()'s error; 0.0 for no outputs."""
    return max((worst_output_error_of(o) for o in outputs), default=0.0)






def _is_int(a: np.ndarray) -> bool:
    return a.dtype.kind in "biu"


def tensor_metrics(ref: np.ndarray, got: np.ndarray, saturated: float = SATURATED) -> dict:
    """Max abs, relative L2, cosine, SQNR (dB), NaN/Inf counts; read chunk by chunk in float64.

    Non-finite elements: the same non-finite value on both sides (NaN and NaN, +inf and +inf, -inf and -inf)
    is equal, and so is an infinity against a same-signed finite value of magnitude >= SATURATED (fp16's
    largest: what fp16 storage makes of an infinity, `saturated`); any other pair with a NaN or an inf on
    either side is a `nonfinite_mismatch` (the tensor is over tolerance; tolerance.scaled_error counts each
    as one element wholly wrong, so the error measure stays finite). Every statistic here is computed over
    the elements that are finite on both sides. `saturated`: the magnitude from which an infinity counts as equal
    to a same-signed finite value (math.inf: never, as for the emulated modes, where fp16 overflow is the error
    to find)."""
    out = {"ref_shape": list(ref.shape), "mnn_shape": list(got.shape), "ref_dtype": str(ref.dtype),
           "mnn_dtype": str(got.dtype), "size": int(ref.size), "shape_mismatch": ref.size != got.size,
           "max_abs": None, "rel_l2": None, "cosine": None, "sqnr_db": None, "nan": 0, "inf": 0,
           "ref_max_abs": None, "nonfinite_mismatch": 0, "saturated": 0, "mismatch": None, "integer": _is_int(ref) and _is_int(got),
           "err_l2": None, "ref_l2": None, "first_mismatch": None}
    if out["shape_mismatch"]:
        out.update(max_abs=math.inf, rel_l2=math.inf, cosine=0.0, sqnr_db=-math.inf)
        return out
    r, a = ref.reshape(-1), got.reshape(-1)
    sdd = srr = saa = sar = 0.0
    maxd = maxr = 0.0
    mismatch = 0
    for s in range(0, r.size, CHUNK):
        rc = np.asarray(r[s:s + CHUNK]).astype(np.float64)
        ac = np.asarray(a[s:s + CHUNK]).astype(np.float64)
        fr, fa = np.isfinite(rc), np.isfinite(ac)
        if not (fr.all() and fa.all()):
            out["nan"] += int(np.isnan(ac).sum())
            out["inf"] += int(np.isinf(ac).sum())
            same = (np.isnan(rc) & np.isnan(ac)) | (np.isinf(rc) & (rc == ac))
            with np.errstate(invalid="ignore"):
                sat = (np.isinf(rc) ^ np.isinf(ac)) & ~np.isnan(rc) & ~np.isnan(ac) & (np.sign(rc) == np.sign(ac)) \
                    & (np.minimum(np.abs(rc), np.abs(ac)) >= saturated)
            out["saturated"] += int(sat.sum())
            out["nonfinite_mismatch"] += int(((~fr | ~fa) & ~same & ~sat).sum())
            both = fr & fa
            rc, ac = rc[both], ac[both]
        if not rc.size:
            continue
        d = ac - rc
        sdd += float(d @ d)
        srr += float(rc @ rc)
        saa += float(ac @ ac)
        sar += float(ac @ rc)
        maxd = max(maxd, float(np.abs(d).max()))
        maxr = max(maxr, float(np.abs(rc).max()))
        if out["integer"]:
            differ = np.flatnonzero(d)
            if differ.size and out["first_mismatch"] is None:
                # from the arrays themselves: float64 rounds int64 values past 2**53 (INT64_MAX sentinels)
                k = s + int(differ[0])
                out["first_mismatch"] = {"index": k, "reference": np.asarray(r[k]).item(),
                                         "mnn": np.asarray(a[k]).item()}
            mismatch += int(differ.size)
    err, nr, na = math.sqrt(sdd), math.sqrt(srr), math.sqrt(saa)
    out["max_abs"], out["ref_max_abs"], out["err_l2"], out["ref_l2"] = maxd, maxr, err, nr
    out["rel_l2"] = err / nr if nr > 0 else (0.0 if err == 0 else math.inf)
    out["cosine"] = sar / (na * nr) if na > 0 and nr > 0 else (1.0 if na == nr else 0.0)
    out["sqnr_db"] = 10 * math.log10(srr / sdd) if sdd > 0 and srr > 0 else (math.inf if sdd == 0 else -math.inf)
    if out["integer"]:
        out["mismatch"] = mismatch
    return out


def _aligned_topk(pair, ref_dir, ref_manifest, mnn_dir, mnn_manifest):
    """Both sides of an unsorted TopK output, reordered so that slots are sorted by index."""
    note = pair.align
    axis = note["axis"]
    (rv, mv), (ri, mi) = note["values"], note["indices"]
    ref_idx = np.asarray(load(ref_dir, ref_manifest[ri])).astype(np.int64)
    mnn_idx = np.asarray(load(mnn_dir, mnn_manifest[mi])).astype(np.int64)
    if ref_idx.size != mnn_idx.size:
        return None
    mnn_idx = mnn_idx.reshape(ref_idx.shape)
    ro, mo = np.argsort(ref_idx, axis=axis, kind="stable"), np.argsort(mnn_idx, axis=axis, kind="stable")
    if note["role"] == "indices":
        return np.take_along_axis(ref_idx, ro, axis), np.take_along_axis(mnn_idx, mo, axis)
    ref_v = np.asarray(load(ref_dir, ref_manifest[rv]))
    mnn_v = np.asarray(load(mnn_dir, mnn_manifest[mv])).reshape(ref_v.shape)
    return np.take_along_axis(ref_v, ro, axis), np.take_along_axis(mnn_v, mo, axis)


# ----- one mode ------------------------------------------------------------------------------------------
def _node_label(g: ModelGraph, nid: str) -> dict:
    d = g.g.nodes[nid]
    return {"name": d.get("name") or nid, "op_type": d["op_type"]}


def _main_mnn_op(ops: list[dict]) -> str | None:
    compute = [o["name"] for o in ops if not o.get("layout")]
    return compute[-1] if compute else (ops[-1]["name"] if ops else None)


SCORE_OPS = {"Softmax", "LogSoftmax"}
SCORE_NAME = re.compile(r"logit|prob|score", re.IGNORECASE)


def _scores(g: ModelGraph, name: str, producer: dict, m: dict) -> bool:
    """An output of class scores along its last axis (a Softmax's or LogSoftmax's, or named logits, probs, scores),
    whose top-1 is what its users check: a seq2seq model's next token, a classifier's class."""
    if m.get("integer") or m.get("shape_mismatch"):
        return False
    nid = producer.get(name)
    return (nid is not None and g.g.nodes[nid]["op_type"] in SCORE_OPS) or bool(SCORE_NAME.search(name))


def top1_agreement(ref: np.ndarray, dev: np.ndarray) -> float | None:
    """The share of positions (every index but the last axis) where both sides' largest score is the same class; None
    where the shapes differ or the last axis has fewer than 2 classes. The romanizer decoder's int8 passed the default
    tolerance with its logprobs 0.185 off at most: whether the next token changed is what a seq2seq shipper asks."""
    ref, dev = np.asarray(ref), np.asarray(dev)
    if ref.shape != dev.shape or ref.ndim == 0 or ref.shape[-1] < 2 or ref.size == 0:
        return None
    return float(np.mean(ref.argmax(axis=-1) == dev.argmax(axis=-1)))


def plain_outputs(dump: dict) -> dict | None:
    """MNN's outputs from the dump's plain run (runner/dump.py), or None."""
    path = dump.get("plain_outputs")
    if not path or not os.path.isfile(path):
        return None
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def compare_mode(onnx_graph: ModelGraph, match: Match, ref_dir: str, ref_manifest: dict, mnn_dir: str,
                 mnn_manifest: dict, tol: Tolerance, outputs: list[str] | None = None,
                 saturated: float = SATURATED, plain: dict | None = None, float_weights: bool = False) -> dict:
    """Every matched tensor measured and judged; first divergence, harmless ones, ranking, unmatched list.
    `saturated`: tensor_metrics' rule for an infinity against a large finite value. `plain`: MNN's outputs from a
    run that kept no tensors ({MNN tensor: array}); the outputs are judged on them where given (keeping every tensor
    changes what MNN computes in full int8: runner/dump.py), and `plain_differs` lists the outputs where the two
    runs disagree. `float_weights`: MNN's model keeps every weight in float (fp32, low, bf16 of an unquantized
    conversion), so a region with a weighted layer is replayed too (see below)."""
    g = onnx_graph
    order = g.topological_order()
    depth = {nid: i + 1 for i, nid in enumerate(order)}
    producer = g.producers()
    consumers: dict[str, list[str]] = {}
    for nid in order:
        for t in g.g.nodes[nid]["inputs"]:
            if t:
                consumers.setdefault(t, []).append(nid)
    outputs = list(outputs or g.outputs)
    initializers = {n for n, t in g.tensors.items() if t.is_initializer}

    measured: dict[str, dict] = {}
    for pair in match.matched():
        if pair.onnx not in ref_manifest or pair.mnn not in mnn_manifest:
            continue
        aligned = None
        if pair.align:
            aligned = _aligned_topk(pair, ref_dir, ref_manifest, mnn_dir, mnn_manifest)
        if aligned is not None:
            m = tensor_metrics(*aligned, saturated=saturated)
        else:
            m = tensor_metrics(load(ref_dir, ref_manifest[pair.onnx]), load(mnn_dir, mnn_manifest[pair.mnn]),
                               saturated=saturated)
        m["ref_dtype"], m["mnn_dtype"] = ref_manifest[pair.onnx]["dtype"], mnn_manifest[pair.mnn]["dtype"]
        m["aligned"] = pair.align["kind"] if aligned is not None else None
        m["within"] = within(m, tol)
        m["error"] = scaled_error(m, tol)
        measured[pair.onnx] = m

    def differs(t: str) -> bool:
        """An integer tensor (indices, shapes, Slice bounds, masks) whose values differ: not an accuracy error."""
        m = measured.get(t)
        return m is not None and _integer_difference(m)

    def ok(t: str) -> bool:
        if t in measured:
            # an integer input that differs is no float error carried in: an op whose float output goes wrong
            # on it is where the difference shows, and is blamed with the integer input named
            return measured[t]["within"] or differs(t)
        return True  # inputs fed identically, initializers exact

    regions: dict[str, tuple[list[str], list[str]]] = {}
    for t in measured:
        nid = producer.get(t)
        if nid is None:
            continue
        region, frontier, stack, seen = [], [], [nid], set()
        while stack and len(region) < REGION_LIMIT:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            region.append(n)
            for i in g.g.nodes[n]["inputs"]:
                if not i or i in initializers:
                    continue
                if i in measured or i in g.inputs or i not in producer:
                    if i not in frontier:
                        frontier.append(i)
                else:
                    stack.append(producer[i])
        regions[t] = (sorted(region, key=depth.get), frontier)

    reaches = _reaches_diverged_output(order, g, measured, outputs, consumers)
    replay = _replayer(g, match, measured, ref_dir, ref_manifest, mnn_dir, mnn_manifest)
    tensors, introduced = [], []
    for t in match.order:
        if t not in measured:
            continue
        m = measured[t]
        region, frontier = regions.get(t, ([], []))
        # the region replayed on MNN's inputs where numpy can compute its ops (replay.py): a region of one op and
        # the Identity/Dropout nodes the converter dropped (PP-OCRv6 det's Identity -> Sigmoid: estimated by
        # subtraction, the saturated Sigmoid was credited with the relative error its near-zero outputs carry, and
        # blamed for int8w, a weight-only mode, of a weightless op), and a fused region (PP-OCRv6 rec's
        # Sigmoid+Mul SiLU ranked first in int8w the same way; a Conv and its bias Add)
        # A region with a weighted layer (Conv, MatMul, Gemm) keeps its estimate by subtraction: replayed, the
        # romanizer decoder's /combine/MatMul (+ bias) read 0.121 in int4w, the most of any op, and the fix keeping
        # it gained 1.09x where keeping /Gemm (its old first) passes, 2.6x: the error a layer adds locally is not
        # what reaches the outputs, and until the fix chooses by that, the estimate chooses better (helper's report)
        # With float weights there is no fix to choose and the estimate only misleads: PP-OCRv6 rec's fp32 ranked five
        # Convs "over" at 0.2-0.4% above the GELU its verdict blamed (a fused Conv's output error less its input's:
        # amplification counted as error added; tryout 18); replayed, a float Conv adds ~1e-7.
        weighted = any(g.g.nodes[n]["op_type"] in REPLAY_KEEPS_ESTIMATE for n in region) and len(region) > 1 \
            and not float_weights
        exact = replay.introduced_region(region, t, m["ref_l2"], tol.atol) if region and not m["integer"] \
            and not weighted and not m["nonfinite_mismatch"] and not m["shape_mismatch"] else None
        # a region that only moves values may hold the Constant its sizes/axes came from (Split's sizes): a
        # Constant computes nothing, so a Split stays a move (judged on absolute error, not on the relative error
        # of one slice, which can exceed its input's without any error being added there)
        # a tensor equal to the reference's, bit for bit, adds nothing to it: the replay (float64 against fp32)
        # still read ~1e-7 there, and a comparison of one .mnn under two configurations said "bit-identical" above
        # a Ranking of MatMuls "introducing" 8.8e-08 (tryout 18)
        identical = m["max_abs"] == 0 and not m["nonfinite_mismatch"] and not m["shape_mismatch"]
        m["introduced"] = 0.0 if _integer_difference(m) or identical else exact if exact is not None else \
            _introduced(m, [measured[f] for f in frontier if f in measured],
                        all(g.g.nodes[n]["op_type"] in MOVE_OPS or g.g.nodes[n]["op_type"] == "Constant"
                            for n in region), tol)
        pair = match.pairs[t]
        row = {"name": t, "mnn_tensor": pair.mnn, "match": pair.how,
               "onnx_node": _node_label(g, region[-1])["name"] if region else None,
               "op_type": g.g.nodes[region[-1]]["op_type"] if region else "Input",
               "depth": depth.get(producer.get(t), 0), **_public(m),
               # over tolerance: whether that error goes on to a diverged output (False: it dies out on the way)
               "reaches_output": bool(reaches.get(t))}
        tensors.append(row)
        if not m["within"] and not _integer_difference(m) and all(ok(f) for f in frontier) and region:
            introduced.append(t)

    def describe(t: str) -> dict:
        m = measured[t]
        region, frontier = regions[t]
        pair = match.pairs[t]
        # The region is listed first one first; its headline is the first node that computes something
        # (exporters put Identity nodes in front of fused patterns).
        first = _node_label(g, next((n for n in region if g.g.nodes[n]["op_type"] not in NOOP_OPS), region[0]))
        return {"onnx_node": first["name"], "op_type": first["op_type"], "tensor": t, "mnn_tensor": pair.mnn,
                "mnn_op": _main_mnn_op(pair.mnn_ops), "mnn_ops": [o["name"] for o in pair.mnn_ops if not o.get("layout")],
                "mnn_types": [o["type"] for o in pair.mnn_ops if not o.get("layout")], "within": m["within"],
                "region": [_node_label(g, n) for n in region], "depth": depth.get(producer.get(t), 0),
                "introduced": m["introduced"],
                "integer_inputs_differ": [f for f in frontier if differs(f)],
                "inputs": [{"tensor": f, **({k: measured[f][k] for k in ("max_abs", "rel_l2", "cosine", "within")}
                                            if f in measured else {"within": True, "exact": True})} for f in frontier],
                **{k: m[k] for k in ("max_abs", "rel_l2", "cosine", "sqnr_db", "nan", "inf", "ref_max_abs",
                                     "shape_mismatch", "ref_shape", "mnn_shape", "nonfinite_mismatch")}}

    def blamed(t: str) -> dict:
        """describe() of the tensor where t's error was introduced, with the chain of ops that carried it."""
        source, path = _source(t, measured, regions)
        entry = describe(source)
        entry["chain"] = [_headline(g, regions[u][0]) for u in path]
        entry["chain_tensors"] = list(path)
        entry["over_tolerance_at"] = {"tensor": t, "onnx_node": _headline(g, regions[t][0])}
        return entry

    harmful = [t for t in introduced if reaches.get(t)]
    first = blamed(harmful[0]) if harmful else None
    sources, seen_sources = [], set()
    for t in harmful[:SOURCES_LIMIT]:
        entry = blamed(t) if t != (harmful[0] if harmful else None) else first
        if entry["tensor"] not in seen_sources:
            seen_sources.add(entry["tensor"])
            sources.append(entry)
    # a divergence the blame walk makes the source of one that reaches an output is no harmless one, whatever its own
    # reach (a within-tolerance tensor between them stops `reaches`, not the walk): PP-OCRv6 rec's Conv.5 at 48x320
    # in int8w was the verdict's culprit and, in Properties, "harmless: this error reaches no output" (a new-user try)
    blamed = {e["tensor"] for e in sources}
    # an error dies out only where it stops: a tensor on a blamed path carries it on to the outputs even where it is
    # within tolerance itself (PP-OCRv6 det int8w on an image: a Concat within by max abs, at rel L2 0.034 of the
    # output's 0.062, made the first divergence's own output and every error feeding the path upstream of the Concat
    # "over (harmless)" in the ranking while the verdict blamed it: helper 113)
    through = {u for e in sources for u in e.get("chain_tensors") or []}
    if through - {t for t, m in measured.items() if not m["within"]}:
        reaches = _reaches_diverged_output(order, g, measured, outputs, consumers, through)
        for row in tensors:
            row["reaches_output"] = bool(reaches.get(row["name"]))
    harmless = [describe(t) for t in introduced if not reaches.get(t) and t not in blamed]
    # one that nothing reads (an output of an op the model does not use) is harmless for that reason, not because its
    # error dies out: the romanizer encoder's GRU Y_h, wrong in MNN's reverse direction (rel L2 1.22), read as "its
    # error dies out before the outputs" beside two red GRUs in a mode that passed (helper 111)
    graph_outputs = set(outputs)
    for h in harmless:
        h["unread"] = not consumers.get(h["tensor"]) and h["tensor"] not in graph_outputs
    integer = _integer_differences(g, measured, regions, introduced, outputs)
    # Constants that MNN stores differently (INT64_MIN as int32...) are not operators to keep in float, nor is any
    # integer tensor (introduced 0 above).
    ranked = sorted((t for t in measured if t in regions and measured[t]["introduced"] > 0
                     and not all(g.g.nodes[n]["op_type"] == "Constant" for n in regions[t][0])),
                    key=lambda t: (-measured[t]["introduced"], depth.get(producer.get(t), 0)))
    ranking = []
    for t in ranked:
        entry = describe(t)
        entry["within"] = measured[t]["within"]
        entry["inputs_error"] = sum(measured[f]["error"] for f in regions[t][1] if f in measured)
        entry["error"] = measured[t]["error"]
        ranking.append(entry)
    plain_measured, plain_differs = {}, []
    for o in outputs:
        pair = match.pairs.get(o)
        if not plain or o not in measured or pair is None or pair.mnn not in plain or pair.align:
            continue
        pm = tensor_metrics(load(ref_dir, ref_manifest[o]), np.asarray(plain[pair.mnn]), saturated=saturated)
        pm["within"] = within(pm, tol)
        plain_measured[o] = pm
        a, b = measured[o].get("rel_l2"), pm.get("rel_l2")
        if a != b and not (a is not None and b is not None and abs(a - b) <= 1e-6 * max(1.0, abs(b))):
            plain_differs.append({"output": o, "rel_l2_plain": b, "rel_l2_kept": a})
    out_rows = []
    for o in outputs:
        m = plain_measured.get(o, measured.get(o))
        row = {"name": o, "matched": m is not None}
        if m is not None:
            row.update({k: m[k] for k in ("max_abs", "rel_l2", "cosine", "sqnr_db", "nan", "inf", "within",
                                          "ref_max_abs", "shape_mismatch")})
            row["tiny_reference"] = not m["integer"] and tiny_output(m, tol)
            pair = match.pairs.get(o)
            if pair is not None and not pair.align and _scores(g, o, producer, m):
                dev = plain[pair.mnn] if o in plain_measured else load(mnn_dir, mnn_manifest[pair.mnn])
                row["top1"] = top1_agreement(load(ref_dir, ref_manifest[o]), np.asarray(dev))
        else:
            row.update(within=False, reason=(match.pairs[o].reason if o in match.pairs else "not an ONNX tensor"))
        out_rows.append(row)
    unmatched = []
    for pair in match.unmatched():
        nid = producer.get(pair.onnx)
        unmatched.append({"tensor": pair.onnx, "onnx_node": _node_label(g, nid)["name"] if nid else None,
                          "op_type": g.g.nodes[nid]["op_type"] if nid else "Input", "reason": pair.reason})
    for pair in match.matched():
        if pair.onnx not in measured:
            unmatched.append({"tensor": pair.onnx, "onnx_node": None, "op_type": None,
                              "reason": f"MNN tensor '{pair.mnn}' was not read back" if pair.mnn not in mnn_manifest
                              else "ONNX Runtime did not return it"})
    return {"tolerance": tol.to_json(), "outputs": out_rows, "first_divergence": first, "sources": sources,
            "harmless": harmless, "integer_differences": integer,
            "branches": _branches(g, order, match, ref_dir, ref_manifest, mnn_dir, mnn_manifest),
            "ranking": ranking, "tensors": tensors, "unmatched": unmatched, "plain_differs": plain_differs,
            "mnn_only": len(match.mnn_only),
            "summary": {"matched": len(measured), "unmatched": len(unmatched),
                        "over_tolerance": sum(1 for m in measured.values() if not m["within"]),
                        "introduced": len(introduced), "harmless": len(harmless),
                        "outputs_within": all(r["within"] for r in out_rows)}}


def _branches(g: ModelGraph, order: list[str], match: Match, ref_dir: str, ref_manifest: dict, mnn_dir: str,
              mnn_manifest: dict) -> list[dict]:
    """Which branch each If ran on the reference and on MNN (None: its condition was not read back), where either
    is known: an If that passed checked only the branch its inputs took (helper 117 asked which one ran), and two
    that differ ran different computations."""
    def taken(d: str, manifest: dict, t: str | None) -> str | None:
        if not t or t not in manifest:
            return None
        v = np.asarray(load(d, manifest[t])).reshape(-1)
        return None if v.size == 0 else "then_branch" if bool(v[0]) else "else_branch"

    out = []
    for nid in order:   # (compare_mode's topological order)
        node = g.g.nodes[nid]
        if node["op_type"] != "If" or not node["inputs"] or not node["inputs"][0]:
            continue
        cond = node["inputs"][0]
        pair = match.pairs.get(cond)
        ref = taken(ref_dir, ref_manifest, cond)
        dev = taken(mnn_dir, mnn_manifest, pair.mnn if pair is not None and pair.mnn else None)
        if ref is not None or dev is not None:
            out.append({"onnx_node": _node_label(g, nid)["name"], "cond": cond, "reference": ref, "mnn": dev})
    return out


def _replayer(g, match, measured, ref_dir, ref_manifest, mnn_dir, mnn_manifest):

    def read_ref(name):
        return np.asarray(load(ref_dir, ref_manifest[name])) if name in ref_manifest else None

    def read_mnn(name, ref_shape=True):
        pair = match.pairs.get(name)
        if name not in measured or pair is None or pair.align or pair.mnn not in mnn_manifest:
            return None
        arr = np.asarray(load(mnn_dir, mnn_manifest[pair.mnn]))
        shape = measured[name]["ref_shape"]
        return arr.reshape(shape) if arr.size == int(np.prod(shape)) else None

    return Replayer(g, read_ref, read_mnn)


def _headline(g: ModelGraph, region: list[str]) -> str:
    nid = next((n for n in region if g.g.nodes[n]["op_type"] not in NOOP_OPS), region[0])
    return _node_label(g, nid)["name"]


def _source(t: str, measured: dict, regions: dict) -> tuple[str, list[str]]:
    """Where the error of tensor t (the first over tolerance on its path) was introduced: (source tensor,
    path of tensors from the source to t).

    Walk back while the op only carries error: at each tensor, its own introduced error (measured by replay
    where the op allows, else estimated) against the sum of its inputs' errors; when it adds less than
    CARRY_SHARE of what it received, the error came from upstream and the walk steps to the input carrying
    the most (ties: the first). It stops at an op that adds a real share of its own, however small (an op
    whose own error is under the tolerance, carried over it by later exact ops, is the source; of ops that
    each add error, as quantized layers do, the one that took it over the tolerance stays blamed). The
    inputs' errors are measured on every run, so the answer follows the fault, not the input seed.
    """
    path, seen = [t], {t}
    while True:
        m = measured[t]
        frontier = regions.get(t, ([], []))[1]
        carried = [(measured[f]["error"], f) for f in frontier if f in measured and f in regions
                   and measured[f]["error"] > 0 and not _integer_difference(measured[f])]
        if not carried:
            break
        if m["introduced"] >= CARRY_SHARE * sum(e for e, _ in carried):
            break
        best = max(carried, key=lambda c: c[0])[1]
        if best in seen:
            break
        seen.add(best)
        path.append(best)
        t = best
    path.reverse()
    return path[0], path


INT32 = (-(1 << 31), (1 << 31) - 1)


def _integer_difference(m: dict) -> bool:
    """An integer or bool tensor whose values differ (same size): exact or not, never an accuracy error."""
    return bool(m["integer"]) and not m["within"] and not m["shape_mismatch"]


def _integer_differences(g: ModelGraph, measured: dict, regions: dict, introduced: list[str],
                         outputs: list[str]) -> list[dict]:
    """The integer tensors that differ, each with why and whether it matters.

    An integer cannot lose accuracy: MNN holds int64 as int32 (an INT64 "to the end" Slice bound comes out as
    another number meaning the same), computes an integer op differently, or a float error upstream flips a
    decision (ArgMax, a comparison). None of these is an operator to keep in float, so they are never a divergence
    of their own; one *matters* when a float tensor goes wrong where it is read (that op is then the divergence,
    with `integer_inputs_differ` naming it), when it is a model output, or when an integer difference that matters
    is computed from it.
    """
    rows = {}
    for t, m in measured.items():
        if not _integer_difference(m):
            continue
        region, frontier = regions.get(t, ([], []))
        first = m.get("first_mismatch") or {}
        ref = first.get("reference")
        reads_float = any((f in measured and not measured[f]["integer"]) or (f in g.inputs and str(
            getattr(g.tensors.get(f), "dtype", "") or "").startswith(("float", "bfloat"))) for f in frontier)
        if isinstance(ref, int) and not INT32[0] <= ref <= INT32[1]:
            why = (f"MNN holds int64 as int32: {ref} is outside int32's range (MNN has {first.get('mnn')}); a Slice "
                   f"bound or INT64 sentinel usually means the same there")
        elif reads_float:
            why = "computed from float values: a float error upstream changed it (an index, a comparison)"
        else:
            why = "integer values differ: MNN computes this integer op differently"
        rows[t] = {"tensor": t, "onnx_node": _headline(g, region) if region else None,
                   "op_type": g.g.nodes[region[-1]]["op_type"] if region else "Input",
                   "ref_dtype": m["ref_dtype"], "mnn_dtype": m["mnn_dtype"], "size": m["size"],
                   "mismatch": m["mismatch"], "first_mismatch": m.get("first_mismatch"), "why": why,
                   "read_by": [_headline(g, regions[u][0]) for u in introduced if t in regions[u][1]],
                   "output": t in outputs, "_frontier": frontier}
    matters = {t for t, r in rows.items() if r["read_by"] or r["output"]}
    grew = True
    while grew:  # upstream of an integer difference that matters
        grew = False
        for t in list(matters):
            for f in rows[t]["_frontier"]:
                if f in rows and f not in matters:
                    matters.add(f)
                    grew = True
    out = []
    for t, r in rows.items():
        r.pop("_frontier")
        r["matters"] = t in matters
        out.append(r)
    return out


def _introduced(m: dict, inputs: list[dict], moves: bool, tol: Tolerance) -> float:
    """Error an operator adds beyond what its inputs carried.

    Compute ops: its scaled relative error minus the sum of its inputs' (a product of two inputs with
    relative errors e1, e2 carries about e1 + e2 without adding any). Ops that only select or move
    values (Gather, Slice, Concat, Reshape...) cannot create absolute error: a selected slice may carry a
    larger *relative* error than the whole input, so they are judged on absolute L2 error instead.
    """
    inputs = [i for i in inputs if not i["integer"]]  # indices and bounds carry no float error (integer_differences)
    if m["integer"] or not moves or any(i["err_l2"] is None for i in inputs):
        return max(0.0, m["error"] - sum(i["error"] for i in inputs))
    carried = math.sqrt(sum(i["err_l2"] ** 2 for i in inputs if math.isfinite(i["err_l2"])))
    scale = max(m["ref_l2"] or 0.0, tol.atol * math.sqrt(max(m["size"], 1)))
    added = (m["err_l2"] or 0.0) - carried
    if added <= 1e-6 * carried:
        added = 0.0  # the same error, its norm summed in another order (a moved slice keeps its values)
    return added / scale if scale > 0 else 0.0


def _public(m: dict) -> dict:
    keys = ("max_abs", "rel_l2", "cosine", "sqnr_db", "nan", "inf", "ref_max_abs", "within", "error",
            "introduced", "shape_mismatch", "ref_shape", "mnn_shape", "ref_dtype", "mnn_dtype", "mismatch", "aligned")
    return {k: m.get(k) for k in keys}


def _reaches_diverged_output(order, g, measured, outputs, consumers, through=()) -> dict[str, bool]:
    """tensor -> whether its error can reach a diverged model output through diverged or unmeasured tensors (and
    those in `through`: the blame walk's paths).

    One pass in reverse topological order: a tensor within tolerance stops the error (whatever the
    inputs carried was masked, overwritten or washed out there).
    """
    passable = {t: not m["within"] or t in through for t, m in measured.items()}
    diverged_outputs = {o for o in outputs if o in measured and not measured[o]["within"]}
    reach: dict[str, bool] = {}
    for nid in reversed(order):
        for t in g.g.nodes[nid]["outputs"]:
            if not t or not passable.get(t, True):
                if t:
                    reach[t] = False
                continue
            hit = t in diverged_outputs
            if not hit:
                for c in consumers.get(t, []):
                    if any(reach.get(o) for o in g.g.nodes[c]["outputs"] if o):
                        hit = True
                        break
            reach[t] = hit
    return reach
