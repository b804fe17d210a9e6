"""`mnnscope profile MODEL`: per-operator times, memory and tensor statistics on a chosen backend."""
from __future__ import annotations

import sys

from mnnscope.runner import protocol

from mnnscope.inspector.errors import UsageError

from mnnscope.inspector.cli.app import eprint, print_json
from mnnscope.inspector.cli.convert_cmd import settings_file
from mnnscope.inspector.cli.outpaths import check_output
from mnnscope.inspector.process.client import RunnerClient
from mnnscope.inspector.inputs.options import add_input_arguments, add_python_argument, input_spec
from mnnscope.inspector.profile.service import (MEMORY_MODES, PRECISIONS, ProfileOptions, parse_sweep, run_profile, run_sweep,
                      write_trace)


def add_parser(sub) -> None:
    p = sub.add_parser("profile", help="time a model per operator (MNN or ONNX Runtime) and read its tensors",
                       description="Run MODEL in a runner process: warm-up, timed runs, per-op median times, "
                                   "memory, and with --stats the statistics of every tensor.")
    p.add_argument("model", help="an .mnn file (MNN) or an .onnx file (ONNX Runtime)")
    p.add_argument("--engine", choices=list(protocol.ENGINES), help="default: mnn for .mnn, ort for .onnx (mnn with a backend only MNN has: OPENCL, VULKAN, METAL, ...); mnn on an .onnx converts it first (default settings)")
    p.add_argument("--backend", default=protocol.DEFAULT_BACKEND, help="MNN backend (CPU, OPENCL, VULKAN, CUDA, METAL, ...) or ORT "
                                                   "provider; the result says which one really ran")
    p.add_argument("--precision", default=protocol.PRECISION_HIGH, choices=PRECISIONS)
    p.add_argument("--memory", default=protocol.MEMORY_NORMAL, choices=MEMORY_MODES)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--runs", type=int, default=10, help="timed runs (median reported)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs first (0 runs one all the same: the first run of a session is never "
                        "timed)")
    add_input_arguments(p)
    p.add_argument("--stats", action="store_true", help="read every tensor in one more run: min/max/mean/std/NaN/Inf")
    p.add_argument("--save-tensors", choices=list(protocol.SAVE_MODES), default="outputs",
                   help="tensors kept as .npy in the run folder (default: model outputs)")
    p.add_argument("--ort-optimization", choices=list(protocol.ORT_OPTIMIZATIONS), default="all",
                   help="ONNX Runtime graph optimization (none: op names are the ONNX node names)")
    p.add_argument("--sweep", nargs="+", metavar="AXIS=V1,V2",
                   help="time a matrix, e.g. --sweep threads=1,2 precision=high,low memory=normal,low")
    p.add_argument("--trace", metavar="OUT.json", help="write a Chrome trace (opens in Perfetto)")
    p.add_argument("--top", type=int, default=15, help="ops listed in the text output (slowest first)")
    add_python_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-cache", action="store_true", help="convert an .onnx again even when the conversion cache "
                                                           "holds an identical conversion")
    p.add_argument("--convert-settings", metavar="FILE.json",
                   help="with --engine mnn on an .onnx: convert with these settings (a settings file as `mnnscope "
                        "convert --settings` reads) instead of the defaults")
    p.add_argument("--from", dest="from_node", metavar="NODE",
                   help="profile from this node of an .onnx on: the model cut there (the node and everything after "
                        "it), its inputs what ONNX Runtime computes for them (the window: right-click > Profile from "
                        "here)")
    p.set_defaults(func=run)


def options_from_args(args) -> ProfileOptions:
    return ProfileOptions(model=args.model, engine=args.engine, backend=args.backend, precision=args.precision,
                          memory=args.memory, threads=args.threads, runs=args.runs, warmup=args.warmup,
                          stats=args.stats, save=args.save_tensors, optimization=args.ort_optimization,
                          cache=not getattr(args, "no_cache", False),
                          convert_settings=settings_file(getattr(args, "convert_settings", None)),
                          from_node=getattr(args, "from_node", None), **input_spec(args))


def _ms(v) -> str:
    return "-" if v is None else (f"{v:.3f}" if v < 100 else f"{v:.1f}")


def _flops(v) -> str:
    if not v:
        return "-"
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= div:
            return f"{v / div:.2f}{unit}"
    return f"{v:.0f}"


def _mb(v) -> str:
    return "-" if v is None else f"{v:.1f} MB"


def print_profile(r: dict, top: int) -> None:
    cut = r.get("from_node") or {}
    head = (f"{cut.get('model')} from {cut['node']} ({cut['nodes']} of {cut['of']} nodes; the cut: "
            f"{r['path']})" if cut.get("node") else r["path"])
    print(f"{head}  ({r['engine']}, {r.get('api')})")
    print(f"  backend   {r['backend_requested']} requested, {r['backend_used']} used"
          + (f" ({r['backend_note']})" if r.get("backend_note") else ""))
    print(f"  precision {r['precision_requested']} requested, {r['precision_effective']} effective;"
          f" memory {r['memory_mode']}; threads {r['threads']}")
    line = (f"  time      {_ms(r['total_ms'])} ms median of {r['runs']} runs "
            f"(min {_ms(r['total_ms_min'])}, max {_ms(r['total_ms_max'])})")
    if r.get("plain_ms") is not None:
        line += f"; without per-op callbacks {_ms(r['plain_ms'])} ms"
    print(line)
    if r.get("ops_sum_ms") is not None:
        print(f"  ops       {len(r['ops'])} ops, sum of medians {_ms(r['ops_sum_ms'])} ms; "
              f"FLOPs {_flops(r.get('flops'))}")
    print(f"  memory    session {_mb(r.get('memory_mb'))}, runner peak RSS {_mb(r.get('rss_peak_mb'))}")
    ops = [op for op in r["ops"] if op.get("ms") is not None]
    total = sum(op["ms"] for op in ops) or 1.0
    if ops:
        print(f"\n  {'ms':>9} {'%':>6} {'FLOPs':>8}  {'type':<18} name")
        for op in sorted(ops, key=lambda o: -o["ms"])[:max(0, top)]:
            print(f"  {_ms(op['ms']):>9} {100 * op['ms'] / total:6.1f} {_flops(op.get('flops')):>8}  "
                  f"{str(op['type'])[:18]:<18} {op['name']}")
        if len(ops) > top:
            print(f"  ... {len(ops) - top} more (--top N, or --json)")
    elif r.get("timing_unavailable"):
        print(f"\n  {r['timing_unavailable']}")
    bad = [(op["name"], o) for op in r["ops"] for o in op.get("outputs") or [] if o.get("nan") or o.get("inf")]
    if any(op.get("outputs") for op in r["ops"]):
        print(f"\n  statistics of {sum(len(op.get('outputs') or []) for op in r['ops'])} tensors read; "
              f"{len(bad)} with NaN/Inf" + (":" if bad else ""))
        for op_name, o in bad[:10]:
            print(f"    {o['name']}: {o['nan']} NaN, {o['inf']} Inf")
    for o in r.get("outputs") or []:
        print(f"  output {o['name']} {o['dtype']}{o['shape']}: min {o['min']}, max {o['max']}, mean {o['mean']}")
    print(f"  run {r.get('run_id')} stored; tensors in {r.get('run_dir')}")


def print_sweep(r: dict) -> None:
    print(f"{r['path']}  ({r['engine']}), median of {r['runs']} runs per cell")
    print(f"  {'backend':<10} {'precision':<16} {'memory':<7} {'threads':>7} {'ms':>10} {'min':>10} {'max':>10} "
          f"{'RSS':>10}")
    for c in r["cells"]:
        prec = c["precision_requested"]
        if c.get("precision_effective") and c["precision_effective"] != prec:
            prec = f"{prec}->{c['precision_effective']}"
        backend = c["backend_requested"] if c.get("backend_used") in (None, c["backend_requested"]) else \
            f"{c['backend_requested']}->{c['backend_used']}"
        if c.get("error"):
            print(f"  {backend:<10} {prec:<16} {c['memory_mode']:<7} {c['threads']:>7}  failed: {c['error']}")
            continue
        print(f"  {backend:<10} {prec:<16} {c['memory_mode']:<7} {c['threads']:>7} {_ms(c['total_ms']):>10} "
              f"{_ms(c['total_ms_min']):>10} {_ms(c['total_ms_max']):>10} {_mb(c.get('rss_peak_mb')):>10}")
    print(f"  run {r.get('run_id')} stored")


def run(args) -> int:
    opts = options_from_args(args)
    if args.sweep and args.trace:
        raise UsageError("--trace writes one profile; it cannot be combined with --sweep")
    if args.sweep and args.stats:
        raise UsageError("--stats reads tensors of one profile; it cannot be combined with --sweep")
    cells = parse_sweep(args.sweep) if args.sweep else None
    check_output("--trace", args.trace)

    def on_event(kind: str, body: dict) -> None:
        if kind == "progress" and not args.json and body.get("message") and sys.stderr.isatty():
            eprint(f"  ... {body['message']}")

    client = RunnerClient(python=args.python)
    try:
        if cells is not None:
            result = run_sweep(opts, cells, client=client, on_event=on_event)
        else:
            result = run_profile(opts, client=client, on_event=on_event)
    finally:
        client.stop()
    warnings = result.get("warnings") or []
    if args.trace:
        write_trace(result, args.trace)
    if args.json:
        print_json(result)
    elif cells is not None:
        print_sweep(result)
    else:
        print_profile(result, args.top)
    for w in warnings:
        eprint(f"warning: {w}")
    for c in result.get("cells") or []:
        for w in c.get("warnings") or []:
            cell = f"{c['backend_requested']}/{c['precision_requested']}/{c['memory_mode']}/{c['threads']}"
            eprint(f"warning ({cell}): {w}")
    if cells is not None and all(c.get("error") for c in result["cells"]):
        eprint(f"mnnscope profile: every cell failed: {result['cells'][0]['error']}")
        return 1
    return 0
