"""The fix suggestion: reconvert the worst quantized mode with its top-ranked operators kept in float.

Which operators: fix_plan, computed once per failing mode (its row's `fix_plan`, which the Compare dock's button
names) from the ranking, keeping only ops the conversion really quantized. When the mode stays over tolerance,
`next` says what to try: the next ranked ops, or a milder mode (next_step).

What the tools allow, per mode: full int8 (mnnquant) takes `skip_quant_op_names`; weight-only quantization
(int8w, int4w, memlow) takes the converter's per-layer compression file (`--compressionParamsFile`: a first
conversion writes every quantized layer into it; a layer whose `bits` is 0 is then left in float); fp16
weight storage (`--fp16`) has no per-layer switch, which is said instead. The gain is measured with one
more run, against the same reference.
"""
from __future__ import annotations

import json
import math
import os
import shutil
from itertools import islice

from mnnscope.runner.protocol import ENGINE_MNN, RunnerError

from mnnscope.inspector.compare.match import match_tensors
from mnnscope.inspector.compare.metrics import compare_mode, plain_outputs, worst_output_error
from mnnscope.inspector.compare.options import DUMP_TIMEOUT, MODES, QUANTIZED
from mnnscope.inspector.convert.service import convert_model
from mnnscope.inspector.convert.settings import ConvertSettings
from mnnscope.inspector.inputs.data import RANDOM_INPUTS
from mnnscope.inspector.model.graph import ModelGraph

SKIPPABLE_TYPES = {"Convolution", "ConvolutionDepthwise", "Deconvolution", "DeconvolutionDepthwise", "ConvInt8",
                   "DepthwiseConvInt8", "MatMul", "LSTM", "RNN", "GRU", "Attention"}


# What to try when keeping the top-ranked ops in float is not enough: the milder modes, mildest last.
MILDER = {"int8": ("int8w", "fp16w"), "memlow": ("int8w", "fp16w"), "int4w": ("int8w", "fp16w"), "int8w": ("fp16w",)}
HELPED = 2.0  # a fix that divides the worst output error by less than this did not help


def quantized_ops(mnn_graph: ModelGraph | None) -> set[str] | None:
    """The MNN ops whose weights the conversion quantized (the `quant` attribute the .mnn reader gives; fp16
    storage is not quantization), or None when the model says nothing about it."""
    if mnn_graph is None:
        return None
    ops = {d.get("name") for _, d in mnn_graph.g.nodes(data=True)
           if isinstance((d.get("attrs") or {}).get("quant"), dict) and d["attrs"]["quant"].get("kind") != "fp16"}
    return ops or None


def _worth_fixing(ranking: list[dict]):
    """The ranking's entries from the top down to the first within tolerance that adds less than a tenth of the
    worst one's error (such ops are not worth their float weights)."""
    top = ranking[0]["introduced"] if ranking else 0.0
    for entry in ranking:
        if entry["within"] and entry["introduced"] < 0.1 * top:
            return
        yield entry


def _fixable(entry: dict, quantized: set[str] | None) -> list[str]:
    """An entry's MNN ops a fix can keep in float: those the quantization touched (`quantized`, from the .mnn's
    quant attributes), or without them, ops of SKIPPABLE_TYPES."""
    types = dict(zip(entry.get("mnn_ops", []), entry.get("mnn_types") or []))
    return [n for n in entry.get("mnn_ops", [])
            if (n in quantized if quantized is not None else types.get(n, "Convolution") in SKIPPABLE_TYPES)]


def fix_plan(mode_row: dict, limit: int, mnn_graph: ModelGraph | None = None,
             exclude=()) -> tuple[list[str], list[dict]]:
    """The ops the fix keeps in float: MNN ops from the top of the ranking that the quantization touched, at most
    `limit` (none of `exclude`). The one rule for what the fix does and what the dock's button says it will do.

    An op the conversion left in float (mnnquant quantizes only convolutions; an LSTM's Gemms stay float) is no
    candidate: keeping it "in float" changes nothing. Without quant attributes, ops of SKIPPABLE_TYPES count.
    """
    quantized = quantized_ops(mnn_graph)
    ops, picked = [], []
    for entry in _worth_fixing(mode_row.get("ranking", [])):
        new = [n for n in _fixable(entry, quantized) if n not in ops and n not in exclude]
        if not new:
            continue
        ops.extend(new)
        picked.append({"onnx_node": entry["onnx_node"], "op_type": entry["op_type"], "mnn_ops": new,
                       "introduced": entry["introduced"]})
        if len(ops) >= limit:
            break
    return ops[:limit], picked


def out_of_reach(mode_row: dict, limit: int, mnn_graph: ModelGraph | None) -> list[dict]:
    """The top-ranked ops (as many as the fix looks at) that no fix can keep in float, each with `why`:

    - "int8" (full int8): mnnquant quantizes the feature maps of far more than convolutions (captcha_crnn: the
      outputs of 143 of 144 Mul, 110 of 158 Add, every Sigmoid, Tanh and MatMul carry int8 quant info in the .mnn),
      but its `skip_quant_op_names` keeps only convolutions in float (a Mul named there keeps its quant info;
      measured with MNN 3.6.1);
    - "loop" (weight quantization): an LSTM/GRU the converter turned into While loops, whose recurrent weights sit
      in the loops' subgraphs, quantized with the rest, where the fix (top-level op names) cannot name them
      (tryout 14: the romanizer's BiGRU encoder in int4w, 562 kB against fp32's 2.8 MB; the fix kept the GRUs' input
      convolutions and gained 1.7x)."""
    name = mode_row.get("mode")
    if name == "int8":
        quantized = quantized_ops(mnn_graph)
        out = []
        for entry in islice(_worth_fixing(mode_row.get("ranking", [])), 3 * limit):
            if not (entry.get("mnn_ops") and entry.get("mnn_types")) or _fixable(entry, quantized):
                continue  # a fix candidate, or an op with no MNN counterpart to speak of
            out.append({"onnx_node": entry["onnx_node"], "op_type": entry["op_type"],
                        "introduced": entry["introduced"], "why": "int8"})
        return out
    if name not in QUANTIZED or name == "fp16w":
        return []
    return [{"onnx_node": e["onnx_node"], "op_type": e["op_type"], "introduced": e["introduced"], "why": "loop"}
            for e in islice(_worth_fixing(mode_row.get("ranking", [])), 3 * limit) if "While" in (e.get("mnn_types") or [])]


def reach_text(plan: dict | None) -> str | None:
    """One line on the top-ranked ops a fix cannot keep in float (a fix_plan's or a fix result's `out_of_reach`),
    or None when there are none."""
    far = (plan or {}).get("out_of_reach") or []
    if not far:
        return None
    parts = []
    for why in ("int8", "loop"):
        some = [e for e in far if e.get("why", "int8") == why]
        if not some:
            continue
        types = ", ".join(dict.fromkeys(e["op_type"] for e in some))
        names = f"{', '.join(e['onnx_node'] for e in some[:3])}{', ...' if len(some) > 3 else ''}"
        if why == "int8":
            parts.append(f"{len(some)} of the top-ranked ops ({types}: {names}) compute on int8 activations that "
                         "mnnquant cannot keep in float (its skip list takes convolutions only)")
        else:
            parts.append(f"{len(some)} of the top-ranked ops ({types}: {names}) run as While loops the converter made "
                         "of them, whose recurrent weights are quantized inside the loops, out of the fix's reach (it "
                         "names top-level ops); converting with 'keep LSTM/GRU ops' (origin_rnn) runs each as one op "
                         "with its weights in float32")
    return "; ".join(parts)


def plan_for(mode_row: dict, limit: int, mnn_graph: ModelGraph | None) -> dict | None:
    """A failing quantized mode row's `fix_plan` ({skip_ops, onnx_nodes, out_of_reach}: what its fix would keep
    in float, and for full int8 the top-ranked ops it cannot), or None where no fix applies (a mode within
    tolerance, fp16 storage, not a quantized mode)."""
    if mode_row.get("mode") not in QUANTIZED or mode_row["mode"] == "fp16w" or mode_row.get("ok") \
            or mode_row.get("error"):
        return None
    skip, picked = fix_plan(mode_row, limit, mnn_graph)
    return {"skip_ops": skip, "onnx_nodes": picked, "out_of_reach": out_of_reach(mode_row, limit, mnn_graph),
            "first_divergence": _divergence_in_plan(mode_row, picked, mnn_graph)}


def _divergence_in_plan(mode_row: dict, picked: list[dict], mnn_graph: ModelGraph | None) -> dict | None:
    """Where the headline's first divergence stands against the plan: {onnx_node, op_type, introduced, rank (in the
    ranking, 1-based, or None), in_plan, why, rel_l2, inputs_rel_l2 (what reached it)}; why: "in_plan",
    "not_quantized" (a weight-only mode left it in float: no weights to keep, its error comes from the quantized ops
    upstream), "int8_activations" (full int8: no weights, but it computes on int8 activations, which mnnquant cannot
    keep in float) or "adds_less" (ranked below the ops kept).
    The plan follows the ranking, the headline the first op over tolerance: a user read "first divergence Conv.18"
    and a button keeping three other ops, with nothing saying why (tryout, PP-OCRv6 int8w)."""
    fd = mode_row.get("first_divergence")
    if not fd:
        return None
    ranking = mode_row.get("ranking") or []
    rank = next((k for k, e in enumerate(ranking, 1) if e.get("tensor") == fd.get("tensor")), None)
    if rank is None:
        rank = next((k for k, e in enumerate(ranking, 1) if e["onnx_node"] == fd["onnx_node"]), None)
    in_plan = any(e["onnx_node"] == fd["onnx_node"] for e in picked)
    why = "in_plan" if in_plan else "adds_less" if _fixable(fd, quantized_ops(mnn_graph)) else \
        "int8_activations" if mode_row.get("mode") == "int8" else "not_quantized"
    # what reached it (its inputs' worst rel L2, as the verdict's cause gives it) beside what it adds
    came = max((i.get("rel_l2") or 0.0 for i in fd.get("inputs") or [] if not i.get("exact")), default=None)
    return {"onnx_node": fd["onnx_node"], "op_type": fd["op_type"], "introduced": fd.get("introduced"), "rank": rank,
            "in_plan": in_plan, "why": why, "rel_l2": fd.get("rel_l2"), "inputs_rel_l2": came}


def divergence_text(plan: dict | None) -> str | None:
    """One line on why the plan does not keep the first divergence in float (None when it does, or without one)."""
    d = (plan or {}).get("first_divergence")
    if not d or d.get("in_plan"):
        return None
    name = f"{d['onnx_node']} ({d['op_type']})"
    if d["why"] == "int8_activations":
        return _int8_activations_text(d, name)
    if d["why"] == "not_quantized":
        return (f"the first divergence, {name}, has no quantized weights to keep in float (the conversion left it as "
                "it was): its error comes from the quantized layers upstream, which the plan keeps instead")
    rank = f"#{d['rank']} in the ranking" if d.get("rank") else "not in the ranking"
    return (f"the first divergence, {name}, is where the error first goes over the tolerance, but it adds less "
            f"(error introduced {d['introduced']:.3g}, {rank}) than the ops the fix would keep in float, which add the "
            "most")  # ("than the ops kept" read as ops already kept, before any fix ran: helper 102's try)


def _int8_activations_text(d: dict, name: str) -> str:
    """Full int8: an op without weights still computes on int8 activations (mnnquant gives its inputs and output int8
    scales: the romanizer decoder's /Softmax reads and writes DT_INT8 tensors in its int8 .mnn, measured), and its
    skip list cannot keep it in float. Whether its error is its own or came from upstream: what it adds against what
    reached it, the verdict's numbers (a user read "left it as it was ... comes from the quantized layers upstream"
    for a Softmax adding 0.92 to the 0.0158 its inputs carried)."""
    came, added, out = d.get("inputs_rel_l2"), d.get("introduced"), d.get("rel_l2")
    head = (f"the first divergence, {name}, has no weights, but under full int8 it computes on int8 activations "
            "(mnnquant quantizes its inputs and output), which mnnquant cannot keep in float (its skip list takes "
            "convolutions only)")
    figures = (f"error introduced {_g(added)}, its output's rel L2 {_g(out)}"
               + (f", its inputs' {_g(came)}" if came is not None else ""))
    if added is not None and (came is None or added > came):
        return (f"{head}; it adds most of its error itself ({figures}): keeping the quantized layers upstream in "
                "float, as the plan does, cannot remove that; a mode with float activations (int8w) avoids it")
    return (f"{head}; most of its error reached it from upstream ({figures}): the plan keeps the quantized layers "
            "that add the most instead")


def _g(v) -> str:
    return "-" if v is None else f"{v:.3g}"


def next_step(fix: dict, modes: list[dict] | None = None, command: bool = True,
              inputs_random: bool | None = None) -> str | None:
    """What to try after a fix that left the mode over tolerance: the next ranked ops, and the milder modes (with
    their result where `modes`, the comparison's rows, measured them). None when the fix worked. `command`: the next
    ops named with the command that keeps them (the Compare dock's button does it, and there the list and the command
    took three of the fix line's seven lines: helper 107). `inputs_random`: whether the compared inputs were
    generated (None: not known)."""
    if not fix.get("possible"):
        return None
    if fix["after"]["ok"]:
        return better_mode(fix, modes)
    nxt = fix.get("next") or {}
    gain = fix.get("gain")
    helped = gain is not None and gain >= HELPED
    far = reach_text(fix)
    # (where ops are out of reach, that is why: "the error comes from more layers than these" sent a tester looking
    # for layers when the error sat in the GRUs' loops, tryout 14)
    head = ("it helped, not enough" + (f"; {far}" if far else "")) if helped else \
        (f"keeping {len(fix['skip_ops'])} op(s) in float "
         + (f"gained only {gain:.1f}x" if gain is not None and gain > 1.05 else "did not help"
            + (f" ({gain:.1f}x)" if gain is not None else ""))
         + f": {far or 'the error comes from more layers than these'}")
    spread = spread_text(fix, modes, inputs_random) if not helped else None
    if spread:
        head += f"; {spread}"
    # (the dock's fix runs one mode: the comparison's rows say which milder mode beats it)
    beat = nxt.get("beaten") or (beaten(fix, modes) or (None, None))[1]
    if beat:
        return f"{head}; {beat}"
    tries = []
    if nxt.get("ops") and not command:
        tries.append(f"keep the next {len(nxt['ops'])} ranked ops in float too")
    elif nxt.get("ops"):
        how = f"--fix-keep {','.join(nxt['keep'])}" if nxt.get("keep") else f"--fix-ops {nxt['fix_ops']}"
        tries.append(f"keep the next ranked ops in float too ({', '.join(nxt['ops'])}; "
                     f"mnnscope compare --modes {fix['mode']} {how})")
    milder = milder_text(fix, modes)
    if milder:
        tries.append(milder)
    if not tries:
        return head
    return f"{head}; next: " + "; or ".join(tries)


def inputs_random(result: dict | None) -> bool | None:
    """Whether a comparison result's inputs were generated (its `inputs_from`), None where it does not say."""
    said = (result or {}).get("inputs_from")
    return said.startswith(RANDOM_INPUTS) if isinstance(said, str) and said else None


def spread_text(fix: dict, modes: list[dict] | None, inputs_random: bool | None = None) -> str | None:
    """Where every milder mode this comparison measured is over tolerance too: the model amplifies any change of its
    weights on these inputs, which no op kept in float undoes (a new-user try kept 3, then 6, then 9 ops of
    PP-OCRv6 det's int8w at 640x480 in float, 0.369 -> 0.343, while fp16w stood at 0.0957). None otherwise. Real
    inputs are advised only where the compared ones were generated (helper 113 had given an image)."""
    milder = _milder(fix, modes)
    if not milder or any(m is None or m.get("ok") for _, m in milder):
        return None
    name, m = milder[-1]  # the mildest
    return (f"even {name} is over tolerance here (worst output rel L2 "
            f"{worst_output_error(m.get('outputs', [])):.3g}): this model amplifies any change of its weights on "
            f"these inputs, so keeping ops in float is unlikely to bring {fix['mode']} within tolerance"
            + ("" if inputs_random is False else "; random inputs can exaggerate it: check with real ones (the Inputs "
               "dock: an image, .npy or .npz)"))


def milder_text(fix: dict, modes: list[dict] | None) -> str | None:
    """The milder modes to try instead of `fix`'s, with what this comparison measured of them ("fp16w (fp16 weight
    storage (--fp16)): passes in this comparison, worst output rel L2 0.00123"); None where there is none."""
    out = []
    for name, m in _milder(fix, modes):
        what = f"{name} ({MODES[name].description})"
        if m is not None:
            what += (f": {'passes' if m.get('ok') else 'also over tolerance'} in this comparison, worst output rel L2 "
                     f"{worst_output_error(m.get('outputs', [])):.3g}")
        out.append(what)
    return "; or ".join(out) or None


def _milder(fix: dict, modes: list[dict] | None):
    """(mode name, its row in `modes` or None when this comparison did not measure it) of the modes milder than the
    fixed one, in MILDER's order."""
    measured = {m["mode"]: m for m in modes or [] if not m.get("error")}
    return [(name, measured.get(name)) for name in MILDER.get(fix["mode"], ())]


def _mb(b: int) -> str:
    return f"{b / 1e6:.2f} MB" if b >= 1e5 else f"{b / 1e3:.0f} kB"


def _beating(fix: dict, modes: list[dict] | None, passing: bool):
    """The first milder mode this comparison measured with less error than `fix` after it, in a file no larger
    (`passing`: one within tolerance only), as (name, its error, the fix's error, its size, the fix's size), or None."""
    size = (fix.get("size_bytes") or {}).get("after")
    err = worst_output_error(fix["after"]["outputs"])
    for name, m in _milder(fix, modes):
        other = ((m or {}).get("conversion") or {}).get("size_bytes")
        if m is None or (passing and not m.get("ok")) or not size or not other or other > size:
            continue
        e = worst_output_error(m.get("outputs", []))
        if e < err:
            return name, e, err, other, size
    return None


def better_mode(fix: dict, modes: list[dict] | None) -> str | None:
    """A fix that passes, beaten on both counts by a milder mode this comparison measured: that mode passes with
    less error in a file no larger (tryout 14: the romanizer decoder's int4w fix passed at rel L2 0.0443 in 2.26 MB
    while int8w passed at 0.00302 in 1.27 MB, and the dock said nothing of it). None otherwise."""
    beat = _beating(fix, modes, passing=True)
    if beat is None:
        return None
    name, e, err, other, size = beat
    return (f"but {name} ({MODES[name].description}) passes too, with less error (worst output rel L2 {e:.3g} "
            f"against {err:.3g}) in a file no larger ({_mb(other)} against {_mb(size)}): it beats this fix on both")


def beaten(fix: dict, modes: list[dict] | None) -> tuple[str, str] | None:
    """A fix still over tolerance whose file is already as large as a milder mode's that does better: keeping more ops
    in float only grows it further past that mode (helper 111: the romanizer decoder's int8 kept 3, 6, then 7 ops in
    float, worst output rel L2 0.0265 -> 0.0258 -> 0.0252 -> 0.0255, its file 1.26 -> 4.31 MB, the fp32 file's size,
    while int8w passed at 0.0076 in 1.27 MB). (That mode's name, the words that say so), or None."""
    beat = _beating(fix, modes, passing=False)
    if beat is None:
        return None
    name, e, err, other, size = beat
    m = {r["mode"]: r for r in modes or []}.get(name) or {}
    return name, (f"{name} ({MODES[name].description}) {'passes' if m.get('ok') else 'does better'} in this "
                  f"comparison with less error in a smaller file (worst output rel L2 {e:.3g} in {_mb(other)} "
                  f"against this fix's {err:.3g} in {_mb(size)}): keeping more ops in float only makes "
                  f"{fix['mode']}'s file larger; use {name}")


def suggest_fix(s, modes: list[dict], ref_dir: str, ref_manifest: dict, outputs: list[str]) -> dict | None:
    """Reconvert the worst failing quantized mode with its top-ranked ops kept in float; report the gain."""
    failing = [m for m in modes if m["mode"] in QUANTIZED and not m.get("ok") and not m.get("error")]
    if not failing:
        return _setting_fix(modes)
    worst = max(failing, key=lambda m: worst_output_error(m.get("outputs", [])))
    mode = MODES[worst["mode"]]
    out = {"mode": mode.name, "possible": False, "how": None, "skip_ops": [], "onnx_nodes": [], "before": None,
           "after": None, "gain": None, "size_bytes": None, "note": None, "next": None, "out_of_reach": []}
    if mode.name == "fp16w":
        out["note"] = ("the converter's --fp16 stores every weight as fp16, with no per-layer switch; "
                       "use 8-bit weight quantization with the top-ranked layers kept in float instead")
        return out
    mnn_graph, _ = s.structure(worst.get("mnn_model", ""))
    plan = worst.get("fix_plan") or plan_for(worst, s.options.fix_ops, mnn_graph) or {}
    skip, picked = list(plan.get("skip_ops") or []), list(plan.get("onnx_nodes") or [])
    if s.options.fix_skip_ops:  # the ops a plan shown earlier named: do exactly what was said
        skip = list(dict.fromkeys(s.options.fix_skip_ops))
        picked = [{"onnx_node": e["onnx_node"], "op_type": e["op_type"], "introduced": e["introduced"],
                   "mnn_ops": [n for n in e.get("mnn_ops", []) if n in skip]}
                  for e in worst.get("ranking", []) if set(e.get("mnn_ops", [])) & set(skip)]
    out["out_of_reach"] = plan["out_of_reach"] if "out_of_reach" in plan else \
        out_of_reach(worst, s.options.fix_ops, mnn_graph)
    if not skip:
        far = reach_text(out)
        out["note"] = "the top-ranked operators have no quantized weights to keep in float" + (f": {far}" if far else "")
        return out
    out.update(skip_ops=skip, onnx_nodes=picked)
    s.emit(f"fix: reconverting {mode.name} with {', '.join(skip)} kept in float")
    folder = os.path.join(s.work, "fix")
    os.makedirs(folder, exist_ok=True)
    dst = os.path.join(folder, "model.mnn")
    try:
        if mode.int8:
            settings = s.settings_for(mode)
            settings.int8.skip_ops = list(skip)
            out["how"] = "mnnquant skip_quant_op_names"
            # with the feature method the mode's own conversion quantized with: where nobody chose one and the first
            # crashed mnnquant, the mode was made with the other, and so is its fix (moe_llm's int8 fix said
            # "reconversion failed: mnnquant crashed (SIGSEGV) with KL ...; with EMA ... it quantized": helper 101)
            res = convert_model(s.onnx_path, dst, settings, client=s.client, run_dir=folder, reduce=False,
                                node_map=False, int8_fallback=not s.options.feature_method)
            if not res.ok:
                out["note"] = "reconversion failed: " + "; ".join(e.get("message", "") for e in res.errors)
                return out
        else:
            out["how"] = "converter --compressionParamsFile with bits 0 for these layers"
            found = _reconvert_weight_quant(s, s.settings_for(mode), dst, folder, skip)
            missing = [n for n in skip if n not in found]
            if not found:
                out["note"] = "none of these ops is in the converter's list of quantized layers"
                return out
            if missing:
                out["note"] = f"not quantized by the converter, left as they were: {', '.join(missing)}"
        s.emit(f"fix: running the reconverted {mode.name} model and reading every tensor")
        dump = s.dump(ENGINE_MNN, dst, os.path.join(folder, "run"), mode.precision, mode.memory)
    except RunnerError as e:
        out["note"] = f"reconversion or rerun failed: {e.message}"
        return out
    mnn_graph, _ = s.structure(dst)
    match = match_tensors(s.graph, mnn_graph, dump["manifest"], ref_manifest)
    tol = s.options.tolerance_for(mode.name)
    after = compare_mode(s.graph, match, ref_dir, ref_manifest, os.path.join(folder, "run"), dump["manifest"], tol, outputs,
                         plain=plain_outputs(dump))
    out["possible"] = True
    out["mnn_model"] = dst  # the fixed conversion (the window's side-by-side pane follows it there)
    if s.options.fix_out:  # kept where asked: the work folder is temporary
        os.makedirs(os.path.dirname(s.options.fix_out) or ".", exist_ok=True)
        shutil.copyfile(dst, s.options.fix_out)
        out["saved"] = s.options.fix_out
    out["before"] = {"outputs": worst["outputs"], "ok": worst["ok"]}
    out["after"] = {"outputs": after["outputs"], "ok": after["summary"]["outputs_within"],
                    "first_divergence": after["first_divergence"]}
    b, a = worst_output_error(worst["outputs"]), worst_output_error(after["outputs"])
    out["gain"] = (b / a) if a > 0 and math.isfinite(a) else (math.inf if a == 0 else None)
    out["size_bytes"] = {"before": (worst.get("conversion") or {}).get("size_bytes"), "after": os.path.getsize(dst)}
    if not out["after"]["ok"]:
        # the next ops from the fixed model's own ranking: in a chain of equally bad layers the first one's error
        # hid the others' (each measured against what it received: a gain of 1.0x and no next ops, tryout 12's six
        # outlier blocks); with it in float the next one ranks first. The first ranking where that finds none.
        more, _ = fix_plan(after, s.options.fix_ops, mnn_graph, exclude=skip)
        if not more:
            more, _ = fix_plan(worst, s.options.fix_ops, mnn_graph, exclude=skip)
        by, why = beaten(out, modes) or (None, None)
        if by:
            more = []  # no more ops: a milder mode already does better in a file no larger than this one
        out["next"] = {"ops": more, "fix_ops": len(skip) + len(more) if more else None,
                       "keep": list(skip) + list(more) if more else None,
                       "modes": list(MILDER.get(mode.name, ())), "text": None, "beaten": why, "beaten_by": by}
        out["next"]["text"] = next_step(out, modes, inputs_random=s.inputs_random)
    else:
        out["better"] = better_mode(out, modes)
    if not s.options.keep:
        shutil.rmtree(os.path.join(folder, "run"), ignore_errors=True)
    return out


def _setting_fix(modes: list[dict]) -> dict | None:
    """For a mode that is `close` (over tolerance only through known approximations, verdict.py): the converter
    setting the approximations table (approximations.py) names as avoiding them, when there is one. Not run:
    the table's entries were measured with it."""
    for m in modes:
        if m.get("verdict") != "close":
            continue
        found = [a for a in m.get("approximations", []) if a.get("setting")]
        if not found:
            continue
        settings = sorted({a["setting"] for a in found})
        nodes = list(dict.fromkeys(a["onnx_node"] for a in found))
        return {"mode": m["mode"], "possible": False, "kind": "setting", "how": None, "settings": settings,
                "skip_ops": [], "onnx_nodes": nodes, "before": None, "after": None, "gain": None, "size_bytes": None,
                "note": (f"{found[0]['description']} at {', '.join(nodes)}: reconvert with {' '.join(settings)}"
                         + (f" = mnnscope convert {found[0]['option']}" if found[0].get("option") else "")
                         + f" ({found[0]['setting_effect']})")}
    return None


def _reconvert_weight_quant(s, settings: ConvertSettings, dst: str, folder: str, skip: list[str]) -> list[str]:
    """Weight quantization with the layers in `skip` left in float, through the converter's compression file."""
    params = os.path.join(folder, "compression.json")
    if os.path.exists(params):
        os.remove(params)
    args = settings.to_args() + ["--compressionParamsFile", params]
    payload = {"src": s.onnx_path, "dst": dst, "args": args, "log_path": os.path.join(folder, "guide.log")}
    first = s.client.request("convert", payload, timeout=DUMP_TIMEOUT)
    if not first.get("ok") or not os.path.isfile(params):
        raise RunnerError("run_failed", "the converter wrote no per-layer compression file")
    with open(params, encoding="utf-8") as f:
        config = json.load(f)
    found = []
    for algo in config.get("algo", []):
        for layer in (algo.get("quantParams") or {}).get("layer", []):
            if layer.get("opName") in skip:
                for w in layer.get("weight", []):
                    w["bits"] = 0
                found.append(layer["opName"])
    with open(params, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=1)
    payload["log_path"] = os.path.join(folder, "convert.log")
    second = s.client.request("convert", payload, timeout=DUMP_TIMEOUT)
    if not second.get("ok"):
        raise RunnerError("run_failed", "the converter failed with the per-layer compression file")
    return found
