"""`mnnscope compare MODEL.onnx`: every tensor of MNN against ONNX Runtime, per precision mode.

Exit 0 when every output of every mode is within tolerance, 1 otherwise (the result is still printed), when
a mode could not be converted or run, or when a model file is missing; 2 for usage and input errors.
"""
from __future__ import annotations

import math
import os

from mnnscope.inspector.cli.app import eprint, print_json
from mnnscope.inspector.cli.convert_cmd import settings_file
from mnnscope.inspector.cli.outpaths import check_output
from mnnscope.inspector.compare.errormap import extra_cause, failed_word
from mnnscope.inspector.compare.metrics import worst_output, worst_output_error
from mnnscope.inspector.compare.mnnpair import DEFAULT_TIME_RUNS, compare_configs, compare_mnn_pair, parse_configs
from mnnscope.inspector.compare.options import DEFAULT_MODES, MODES, CompareOptions, parse_modes
from mnnscope.inspector.compare.service import compare_model
from mnnscope.inspector.compare.tolerance import DEFAULT_TOLERANCES, Tolerance, parse_metric
from mnnscope.inspector.convert.settings import FEATURE_METHODS, INT8_HELP
from mnnscope.inspector.errors import UsageError
from mnnscope.inspector.inputs.options import add_input_arguments, add_python_argument, input_spec
from mnnscope.inspector.process.client import RunnerClient


def add_parser(sub) -> None:
    modes = ", ".join(f"{m.name} ({m.description})" for m in MODES.values())
    p = sub.add_parser("compare", help="find the first operator where MNN departs from ONNX Runtime, per precision",
                       description="Run the ONNX model in ONNX Runtime (every node output kept) and its MNN "
                                   "conversion in each precision mode (every tensor read back), match the tensors "
                                   "and name the operator where the error is introduced. Modes: " + modes)
    p.add_argument("model", help="the ONNX model (the reference), or an .mnn (side A: with a second .mnn, or with "
                                 "--backends/--precisions/--memory/--threads-list), or an MNN-LLM export folder")
    p.add_argument("other", nargs="?", metavar="B.mnn|DIR_B",
                   help="a second .mnn of the same network: every tensor of B against A (MODEL), no ONNX needed; "
                        "or, with an export folder as MODEL, a second export folder compared with it")
    p.add_argument("--steps", type=int, default=16, help="two export folders: tokens compared (default 16)")
    p.add_argument("--mnn", metavar="FILE.mnn", help="an existing conversion, run by the runtime-only modes "
                                                   "(fp32, low, bf16, memlow) instead of converting")
    p.add_argument("--convert-settings", metavar="FILE.json",
                   help="conversion settings every mode starts from (a settings file as `mnnscope convert --settings` "
                        "reads; GELU, optimize level, fusions...): each mode sets its own fp16/quantization fields")
    p.add_argument("--modes", help=f"comma-separated modes (default: {','.join(DEFAULT_MODES)}; "
                                   f"with --mnn: fp32); fp16c and bf16c are emulated: ONNX Runtime on a copy of the "
                                   f"model rounded to fp16/bf16 at every operator boundary, no MNN (a prediction of "
                                   f"fp16/bf16 compute on a device, labelled emulated)")
    add_input_arguments(p)
    p.add_argument("--atol", type=float, help="absolute tolerance (default per mode; fp32: 1e-5)")
    p.add_argument("--rtol", type=float, help="tolerance relative to the tensor's max |value| (fp32 default 1e-4)")
    p.add_argument("--metric", metavar="NAME:X", help="judge by a statistic instead: cosine:0.999, rel_l2:0.01, "
                                                     "sqnr:30 (dB) or max_abs:0.001")
    p.add_argument("--weight-quant-block", type=int, metavar="N", help="block size for int8w/int4w/memlow")
    p.add_argument("--weight-quant-asymmetric", choices=["0", "1"], help="asymmetric (1) or symmetric (0) weights")
    p.add_argument("--feature-method", choices=FEATURE_METHODS,
                   help="int8: " + INT8_HELP["feature_method"] + " (default: --convert-settings', else KL)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--no-fix", action="store_true", help="do not try the reconversion that keeps the worst ops in float")
    p.add_argument("--fix-ops", type=int, default=3, metavar="N", help="ops kept in float by the fix (default 3)")
    p.add_argument("--fix-keep", metavar="OP1,OP2", help="the fix keeps exactly these MNN ops in float (as a fix's "
                   "'next' names them) instead of the top-ranked --fix-ops")
    p.add_argument("--fix-out", metavar="FILE.mnn", help="write the fix's conversion (the mode with the ops it kept in "
                   "float) to FILE.mnn; it is made in the comparison's temporary folder otherwise")
    p.add_argument("--report", metavar="OUT.html", help="write a self-contained HTML report")
    p.add_argument("--work-dir", metavar="DIR", help="keep conversions and tensors here (default: a temporary folder)")
    p.add_argument("--top", type=int, default=5, help="ranked ops listed per mode in the text output")
    p.add_argument("--repro", metavar="DIR", help="write a minimal, verified repro of the mode's first divergence "
                                                 "to DIR (repro.onnx, inputs.npz, repro.py, README.md); one mode")
    p.add_argument("--repro-random-weights", action="store_true",
                   help="with --repro: the repro's float weights replaced by random ones of the same shapes and range")
    g = p.add_argument_group("one .mnn under several configurations (the first is side A)")
    g.add_argument("--backends", metavar="B1,B2", help="MNN backends, e.g. cpu,opencl (refused when the runner's "
                                                       "MNN does not load one)")
    g.add_argument("--precisions", metavar="P1,P2", help="runtime precisions, e.g. high,low")
    g.add_argument("--memory", metavar="M1,M2", help="memory modes, e.g. normal,low")
    g.add_argument("--threads-list", metavar="N1,N2", help="thread counts, e.g. 1,4")
    p.add_argument("--time-runs", type=int, default=DEFAULT_TIME_RUNS, metavar="N",
                   help=f"timed runs of each mode's MNN model (its `timing`: median ms per run), or of each side "
                        f"of an .mnn comparison (the per-op time deltas) (default {DEFAULT_TIME_RUNS}; 0: no timing)")
    add_python_argument(p, "the runner's Python")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-cache", action="store_true", help="convert and run the reference again even when the "
                                                           "cache holds identical ones (and store nothing)")
    p.set_defaults(func=run)


def options_from_args(args) -> CompareOptions:
    try:
        modes = parse_modes(args.modes) if args.modes or not args.mnn else ["fp32"]
    except ValueError as e:
        raise UsageError(f"--modes: {e}")
    if args.metric and (args.atol is not None and args.rtol is not None):
        raise UsageError("--metric replaces --atol/--rtol: give one or the other (--atol alone sets the floor "
                         "for tiny references)")
    tolerance = only = None
    if args.metric:
        try:
            metric, threshold = parse_metric(args.metric)
        except ValueError as e:
            raise UsageError(str(e))
        tolerance = Tolerance(atol=args.atol if args.atol is not None else DEFAULT_TOLERANCES["fp32"].atol,
                              rtol=0.0, metric=metric, threshold=threshold)
    elif args.atol is not None or args.rtol is not None:
        for flag, v in (("--atol", args.atol), ("--rtol", args.rtol)):
            if v is not None and (v < 0 or not math.isfinite(v)):
                raise UsageError(f"{flag} must be a finite number >= 0")
        if args.atol is not None and args.rtol is not None:
            tolerance = Tolerance(atol=args.atol, rtol=args.rtol)
        else:  # one part alone: the other stays each mode's default
            only = {"atol": args.atol} if args.atol is not None else {"rtol": args.rtol}
    if getattr(args, "repro", None) and len(modes) != 1:
        raise UsageError("--repro makes the repro of one mode: give one with --modes")
    if getattr(args, "repro_random_weights", False) and not getattr(args, "repro", None):
        raise UsageError("--repro-random-weights goes with --repro DIR")
    asym = None if args.weight_quant_asymmetric is None else args.weight_quant_asymmetric == "1"
    time_runs = getattr(args, "time_runs", DEFAULT_TIME_RUNS)
    if time_runs < 0:
        raise UsageError("--time-runs must be at least 0")
    if args.mnn:  # a given .mnn is what the runtime-only modes run; the others convert their own
        converting = [m for m in modes if not MODES[m].runtime_only and not MODES[m].emulate]
        if converting:
            raise UsageError(f"--mnn {args.mnn} is run by the runtime-only modes (fp32, low, bf16, memlow); "
                             f"{', '.join(converting)} convert{'s' if len(converting) == 1 else ''} the .onnx "
                             f"themselves and would not test it. A shipped quantized .mnn is checked with --mnn FILE "
                             f"--modes fp32 (its quantization is in the file)")
    return CompareOptions(modes=modes, tolerance=tolerance, tolerance_only=only, threads=args.threads, mnn_path=args.mnn,
                          weight_quant_block=args.weight_quant_block, weight_quant_asymmetric=asym,
                          feature_method=getattr(args, "feature_method", None),
                          fix=not args.no_fix, fix_ops=args.fix_ops, seed=args.seed, keep=bool(args.work_dir),
                          fix_skip_ops=_fix_keep(getattr(args, "fix_keep", None), args.no_fix),
                          fix_out=_fix_out(getattr(args, "fix_out", None), args.no_fix),
                          cache=not getattr(args, "no_cache", False), repro=getattr(args, "repro", None),
                          repro_random_weights=bool(getattr(args, "repro_random_weights", False)),
                          convert_settings=settings_file(getattr(args, "convert_settings", None)),
                          time_runs=time_runs)


def _fix_keep(text: str | None, no_fix: bool) -> list[str] | None:
    if text is None:
        return None
    ops = [o.strip() for o in text.split(",") if o.strip()]
    if not ops:
        raise UsageError("--fix-keep wants MNN op names, comma-separated")
    if no_fix:
        raise UsageError("--fix-keep names what the fix keeps in float: it does not go with --no-fix")
    return ops


def _fix_out(path: str | None, no_fix: bool) -> str | None:
    if path is None:
        return None
    if no_fix:
        raise UsageError("--fix-out writes the fix's conversion: it does not go with --no-fix")
    if not path.lower().endswith(".mnn"):
        raise UsageError(f"--fix-out {path}: give a file ending in .mnn")
    check_output("--fix-out", path)
    return os.path.abspath(path)


CONFIG_FLAGS = ("backends", "precisions", "memory", "threads_list")


def comparison_kind(args) -> str:
    """Which comparison the paths ask for: "onnx" (MODEL.onnx against ONNX Runtime), "mnn_pair" (A.mnn B.mnn) or
    "mnn_configs" (one .mnn, --backends/--precisions/--memory/--threads-list). Other kinds (two folders...) hook in
    here; RUNNERS maps each kind to its function."""
    configs = any(getattr(args, f, None) for f in CONFIG_FLAGS)
    other = getattr(args, "other", None)
    is_mnn = str(args.model).lower().endswith(".mnn")
    if other is not None:
        if not (is_mnn and str(other).lower().endswith(".mnn")):
            raise UsageError(f"compare A B compares two .mnn files or two MNN-LLM export folders; got {args.model} "
                             f"and {other}")
        if configs:
            raise UsageError("--backends/--precisions/--memory/--threads-list compare one .mnn; give one model")
        return "mnn_pair"
    if configs:
        if not is_mnn:
            raise UsageError("--backends/--precisions/--memory/--threads-list compare one .mnn under several "
                             "configurations; give an .mnn model")
        return "mnn_configs"
    if is_mnn:
        raise UsageError(f"{args.model}: compare needs the ONNX model as the reference (give a .mnn with --mnn), "
                         f"a second .mnn (compare A.mnn B.mnn), or configurations (--backends cpu,opencl ...)")
    return "onnx"


def _mnn_tolerance(args) -> Tolerance | None:
    """--atol/--rtol/--metric for an .mnn comparison (None: the defaults)."""
    for flag in ("modes", "mnn", "repro", "fix_out"):
        if getattr(args, flag, None):
            raise UsageError(f"--{flag.replace('_', '-')} belongs to the comparison against ONNX Runtime, not to an "
                             ".mnn comparison")
    if args.time_runs < 0:
        raise UsageError("--time-runs must be at least 0")
    opts = options_from_args(args)
    return opts.tolerance or opts.tolerance_only


def _run_mnn(args, kind: str) -> int:
    tolerance = _mnn_tolerance(args)
    common = dict(tolerance=tolerance, inputs=input_spec(args), work_dir=args.work_dir, keep=bool(args.work_dir),
                  time_runs=args.time_runs, on_event=_progress(args))
    with RunnerClient(python=args.python) as client:
        if kind == "mnn_pair":
            result = compare_mnn_pair(args.model, args.other, threads=args.threads, client=client, **common)
        else:
            configs = parse_configs(args.backends, args.precisions, args.memory, args.threads_list, args.threads)
            result = compare_configs(args.model, configs, client=client, **common)
    _show(args, result)
    return _exit_code(result)


def _show(args, result: dict) -> None:
    if args.json:
        print_json(result)
    else:
        print_text(result, args.top)
    for w in result.get("warnings") or []:
        eprint(f"warning: {w}")


def _exit_code(result: dict) -> int:
    """0 when every side is within tolerance; else 1 with the one-line reason every exit 1 gives on stderr."""
    if result["ok"]:
        return 0
    failing = [m for m in result.get("modes") or [] if not m.get("ok")]
    parts = []
    for m in failing:
        fd = m.get("first_divergence") or {}
        blamed = m.get("blamed_node")
        where = m.get("error") or (
            f"at {blamed}, first divergence at {fd['onnx_node']} (a known approximation)"
            if blamed and fd.get("onnx_node") and blamed != fd["onnx_node"] else
            f"first divergence at {fd['onnx_node']}" if fd.get("onnx_node") else "outputs over tolerance")
        parts.append(f"{m['mode']} ({m.get('verdict') or 'failed'}: {where})")
    eprint("mnnscope compare: over tolerance or failed in " + ("; ".join(parts) if parts else "a mode"))
    return 1


def _progress(args):
    def progress(kind, body):
        if not args.json and kind == "progress" and body.get("message"):
            eprint(f"  {body['message']}")
    return progress


def run(args) -> int:
    if getattr(args, "other", None) and os.path.isdir(args.model):
        return run_exports(args)
    kind = comparison_kind(args)
    check_output("--report", args.report)
    check_output("--work-dir", args.work_dir, folder=True)
    check_output("--repro", getattr(args, "repro", None), folder=True)
    if kind != "onnx":
        return _run_mnn(args, kind)
    options = options_from_args(args)
    with RunnerClient(python=args.python) as client:
        result = compare_model(args.model, options, inputs=input_spec(args), client=client, work_dir=args.work_dir,
                               report=args.report, on_event=_progress(args))
    _show(args, result)
    if options.repro and result.get("repro_problem"):
        eprint(f"error: --repro: {result['repro_problem']}")
        return 1
    return _exit_code(result)


def _g(v, fmt="{:.3g}") -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return fmt.format(v)


def print_text(r: dict, top: int) -> None:
    ref = r["reference"]
    if ref.get("kind") == "mnn":
        print(f"{r['model']}: side A ({ref['backend'].lower()}/{ref['precision']}/{ref['memory']}/{ref['threads']}t, "
              f"MNN {ref.get('version')}, {ref['tensors']} tensors) against "
              + ", ".join(f"{m['mode']} ({m['description']})" for m in r["modes"]))
    else:
        print(f"{r['model']}: MNN against ONNX Runtime {ref.get('version')} (fp32, optimisations off, "
              f"{ref['tensors']} tensors)")
    w = max([7] + [len(_mode_label(m)) for m in r["modes"]])  # .mnn comparisons name modes by file or configuration
    timed = any(m.get("timing") for m in r["modes"])  # (each mode's MNN model timed: `timing`)
    ms_col = f" {'MNN ms':>9}" if timed else ""
    print(f"  {'mode':<{w}} {'outputs':<8} {'verdict':<7} {'rel L2':>9} {'cosine':>10}{ms_col} {'matched':>8}  "
          "first divergence")
    for m in r["modes"]:
        if m.get("error"):
            print(f"  {_mode_label(m):<{w}} {'ERROR':<8} {m.get('verdict') or 'failed':<7} {m['error']}")
            continue
        worst = worst_output(m["outputs"])
        fd = m.get("first_divergence")
        where = (f"{fd['onnx_node']} ({fd['op_type']}) rel L2 {_g(fd['rel_l2'])}"
                 + (f", region of {len(fd['region'])} nodes" if len(fd.get("region", [])) > 1 else "")) if fd else "-"
        if m.get("effect") and m["effect"].startswith("no effect"):
            where = f"no effect on this CPU (bit-identical to {'A' if ref.get('kind') == 'mnn' else 'fp32'})"
        ms = f" {_g((m.get('timing') or {}).get('ms'), '{:.4g}'):>9}" if timed else ""
        print(f"  {_mode_label(m):<{w}} {'ok' if m['ok'] else failed_word(m, 'over'):<8} {m.get('verdict') or '-':<7} {_g(worst.get('rel_l2')):>9} "
              f"{_g(worst.get('cosine'), '{:.6f}'):>10}{ms} {m['summary']['matched']:>8}  {where}")
    for m in r["modes"]:
        for w in m.get("warnings") or []:  # (a quantizing conversion that left weights in float32)
            print(f"  {m['mode']}: warning: {w}")
    for m in r["modes"]:
        extra = extra_cause(m)  # (a failed mode's cause is the error its row already gave)
        if extra:
            print(f"\n  {m['mode']}: {m['verdict']}: {extra}")
            if m.get("failed_node") and m["failed_node"] not in extra:
                print(f"    failed at ONNX node: {m['failed_node']}")
        if m.get("error") or m["ok"] and not m.get("harmless"):
            continue
        print(f"\n  {m['mode']}: {m['tolerance']['rule']}")
        if m.get("first_divergence"):
            fd = m["first_divergence"]
            if len(fd.get("chain") or []) > 1:
                print(f"    error introduced at {fd['onnx_node']}, carried through {' -> '.join(fd['chain'])} "
                      f"(over tolerance at {fd['over_tolerance_at']['tensor']})")
            ins = ", ".join(f"{i['tensor']} {_g(i.get('rel_l2'))}" for i in fd["inputs"][:3])
            side = "B" if ref.get("kind") == "mnn" else "emulated" if m.get("emulated") else "MNN"
            print(f"    first divergence: {fd['tensor']} ({side} {fd.get('mnn_op') or fd.get('mnn_tensor')}) "
                  f"rel L2 {_g(fd['rel_l2'])}, max abs {_g(fd['max_abs'])}; inputs: {ins or '-'}")
            if len(fd["region"]) > 1:
                print("    region: " + ", ".join(f"{n['name']} ({n['op_type']})" for n in fd["region"][:8])
                      + (" ..." if len(fd["region"]) > 8 else ""))
        for h in m.get("harmless", [])[:3]:
            print(f"    harmless: {h['onnx_node']} ({h['op_type']}) rel L2 {_g(h['rel_l2'])}: its error does not "
                  f"reach the outputs")
        if m.get("ranking"):
            print("    ops adding the most error: " + "; ".join(
                f"{e['onnx_node']} ({e['op_type']}) +{_g(e['introduced'])}" for e in m["ranking"][:top]))
    for m in r["modes"]:
        rp = m.get("repro")
        if rp:
            print(f"\n  {m['mode']}: repro in {rp['dir']}: {len(rp['nodes'])} node(s) ({', '.join(rp['op_types'])}), "
                  f"rel L2 {_g(rp['rel_l2'])}, max abs {_g(rp.get('max_abs'))}, "
                  + ("verified (converted and run on its own, still over tolerance)" if rp["verified"]
                     else f"NOT verified: {rp['note']}"))
    for m in r["modes"]:
        t = m.get("time")
        if t and t.get("error"):
            print(f"\n  {m['mode']}: no per-op times: {t['error']}")
        elif t:
            noise = " (within run-to-run noise: the timed runs' ranges overlap)" if t.get("within_noise") else ""
            print(f"\n  {m['mode']}: time A {_g(t['a_ms'])} ms -> {_g(t['b_ms'])} ms ({_g(t['ratio'], '{:.2f}')}x)"
                  f"{noise}, session memory {_g(t['a_memory_mb'])} -> {_g(t['b_memory_mb'])} MB")
            grew = [d for d in m.get("op_time_delta") or [] if d["delta_ms"] > 0][:top]
            if grew:
                print("    ops that grew most: " + "; ".join(
                    f"{d['op']} ({d['type']}) {_g(d['a_ms'])} -> {_g(d['b_ms'])} ms" for d in grew))
    _print_emulated(r)
    fix = r.get("fix")
    if fix:
        print(f"\n  fix for {fix['mode']}: ", end="")
        if fix.get("possible"):
            b, a = worst_output_error(fix["before"]["outputs"]), worst_output_error(fix["after"]["outputs"])
            print(f"keeping {', '.join(fix['skip_ops'])} in float ({fix['how']}): output rel L2 "
                  f"{_g(b)} -> {_g(a)} ({_g(fix['gain'], '{:.1f}')}x), "
                  f"{'within' if fix['after']['ok'] else 'still over'} tolerance")
            judged = fix.get("judged") or {}
            if judged.get("flipped") and judged.get("text"):  # the figure the verdict turned on, not rel L2
                print(f"    the tolerance judges {judged['text']}")
            if fix.get("emulated"):
                print(f"    {fix['note']}")
            if (fix.get("next") or {}).get("text"):
                print(f"    {fix['next']['text']}")
            if fix.get("better"):
                print(f"    {fix['better']}")
            if fix.get("saved"):
                print(f"    the fixed conversion: {fix['saved']}")
        else:
            print(fix.get("note") or "not possible")
    if r.get("report"):
        print(f"\n  report: {r['report']}")


def _mode_label(m: dict) -> str:
    if m.get("judged_as"):  # a given .mnn with fp16 or quantized weights, judged as that mode (modes.stored_weights)
        return f"{m['mode']} (as {m['judged_as']})"
    return f"{m['mode']} (emulated)" if m.get("emulated") else m["mode"]


def _print_emulated(r: dict) -> None:
    """What an emulated mode is, whether this machine has the real arithmetic, and the ops to keep in fp32."""
    for m in r["modes"]:
        if not m.get("emulated"):
            continue
        real = m.get("real_mode") or {}
        print(f"\n  {m['mode']} (emulated): ONNX Runtime on a copy rounded to {m['mode'][:4]} at every operator "
              f"boundary (weights, inputs, outputs); accumulation inside each op stays fp32, fused kernels are not modelled")
        if real:
            print(f"    real {m['mode'][:4]} arithmetic (mode {real.get('mode')}): "
                  f"{'available' if m.get('real_low_precision') else 'not available here'}: {real.get('reason')}")
            cmp = real.get("compared")
            if cmp:
                print(f"    emulated vs real: worst output rel L2 {_g(cmp['emulated_worst_rel_l2'])} vs "
                      f"{_g(cmp['real_worst_rel_l2'])}; first divergence {cmp['emulated_first_divergence'] or '-'} vs "
                      f"{cmp['real_first_divergence'] or '-'}")
        if m.get("keep_fp32"):
            print("    keep in fp32 on the device: " + ", ".join(f"{e['onnx_node']} ({e['op_type']})"
                                                           for e in m["keep_fp32"]))


def run_exports(args) -> int:
    """Two MNN-LLM export folders: B teacher-forced on A's greedy tokens (inspector/llm/service.py)."""
    from mnnscope.inspector.llm.service import compare_exports
    with RunnerClient(python=args.python) as client:
        r = compare_exports(args.model, args.other, args.text, args.steps, args.threads, client=client)
    if args.json:
        print_json(r)
    else:
        m = r["modes"][0]
        first = m["first_mismatch_step"]
        print(f"{m['dir']} against {r['model']} ({r['steps']} steps, teacher-forced on the reference's tokens)")
        print(f"  agreement top-1 {m['agreement_top1']:.3f}; first mismatch: "
              f"{'none' if first is None else f'step {first}'}; KL mean {_g(m['kl_mean'])}, max {_g(m['kl_max'])}; "
              f"cosine min {_g(min(m['cosine_per_step']), '{:.6f}')}")
        ld = m.get("layer_divergence")
        if ld and ld.get("layers"):
            print(f"  step {ld['step']} hidden states (rel L2): "
                  + ", ".join(f"{x['layer']} {_g(x['rel_l2'])}" for x in ld["layers"])
                  + f"; most error added by {ld['added_most']}")
        elif ld:
            print(f"  step {ld['step']} hidden states: {ld.get('error')}")
    for w in r.get("warnings") or []:
        eprint(f"warning: {w}")
    return 0
