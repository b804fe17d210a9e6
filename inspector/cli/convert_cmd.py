"""`mnnscope convert MODEL.onnx -o OUT.mnn [settings]`: convert with MNN and explain the outcome."""
from __future__ import annotations

import json
import os

from mnnscope.inspector.cli.app import EXIT_FAIL, EXIT_OK, eprint, print_json
from mnnscope.inspector.cli.outpaths import check_output
from mnnscope.inspector.convert.service import preflight, run_convert
from mnnscope.inspector.convert.settings import (FEATURE_METHODS, HELP, IMAGE_FORMATS, INT8_HELP, OPTIMIZE_PREFER,
                                                 WEIGHT_METHODS, ConvertSettings, Int8Settings)
from mnnscope.inspector.errors import ModelError, UsageError
from mnnscope.inspector.inputs.options import add_python_argument
from mnnscope.inspector.model.graphdiff import describe
from mnnscope.inspector.process.client import RunnerClient


def add_parser(sub) -> None:
    p = sub.add_parser("convert", help="convert an ONNX model to MNN, explaining failures and changes",
                       description="Convert an ONNX model with MNN's converter (in a child process) and explain "
                                   "the result: unsupported ops by node, crashes, missing data, the ONNX-to-MNN "
                                   "node map and what the conversion changed.")
    p.add_argument("model", help="the .onnx model")
    p.add_argument("-o", "--output", help="the .mnn file to write")
    p.add_argument("--preflight", action="store_true", help="only check the model against this MNN (no conversion)")
    p.add_argument("--settings", metavar="FILE.json", help="settings saved from an earlier conversion; flags override")
    p.add_argument("--bundle", metavar="DIR", help="on failure, write a bug-report bundle (with a reduced model) here")
    p.add_argument("--no-reduce", action="store_true", help="write the bundle without reducing the model")
    p.add_argument("--node-map", metavar="FILE.json", help="write the full ONNX<->MNN node map here")
    p.add_argument("--diff", action="store_true", help="print the graph diff (always in --json)")
    p.add_argument("--run-dir", metavar="DIR", help="folder for the log and work files (default: a new one)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds before the converter is stopped")
    add_python_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-cache", action="store_true", help="run the converter even when the conversion cache holds "
                                                           "an identical conversion (and store nothing)")
    g = p.add_argument_group("converter settings")
    g.add_argument("--fp16", action="store_true", default=None, help=HELP["fp16"])
    g.add_argument("--weight-quant-bits", type=int, metavar="N", help=HELP["weight_quant_bits"])
    g.add_argument("--weight-quant-block", type=int, metavar="N", help=HELP["weight_quant_block"])
    g.add_argument("--weight-quant-asymmetric", dest="weight_quant_asymmetric", action="store_true", default=None,
                   help="asymmetric weight quantization (MNN 3.6.1's default)")
    g.add_argument("--weight-quant-symmetric", dest="weight_quant_asymmetric", action="store_false",
                   help="symmetric weight quantization")
    g.add_argument("--hqq", action="store_true", default=None, help=HELP["hqq"])
    g.add_argument("--optimize-level", type=int, choices=(1, 2), help=HELP["optimize_level"])
    g.add_argument("--optimize-prefer", choices=list(OPTIMIZE_PREFER), help=HELP["optimize_prefer"])
    g.add_argument("--transformer-fuse", action="store_true", default=None, help=HELP["transformer_fuse"])
    g.add_argument("--static", dest="save_static_model", action="store_true", default=None,
                   help=HELP["save_static_model"])
    g.add_argument("--no-matmul-to-conv", dest="convert_matmul_to_conv", action="store_false", default=None,
                   help="keep MatMul with constant weights as MatMul")
    g.add_argument("--matmul-to-conv", dest="convert_matmul_to_conv", action="store_true",
                   help="turn MatMul with constant weights into Convolution (the default)")
    g.add_argument("--gelu-approximation", dest="gelu_approximation", action="store_true", default=None,
                   help="fuse erf-GELU into MNN's approximate GELU kernel (the converter's default; max abs "
                        "error 4.7e-4)")
    g.add_argument("--no-gelu-approximation", dest="gelu_approximation", action="store_false",
                   help="keep a written-out erf-GELU exact (the converter otherwise approximates it)")
    g.add_argument("--origin-rnn", action="store_true", default=None, help=HELP["origin_rnn"])
    g.add_argument("--keep-input-format", dest="keep_input_format", action="store_true", default=None,
                   help="keep NCHW inputs (MNN 3.6.1's default)")
    g.add_argument("--no-keep-input-format", dest="keep_input_format", action="store_false",
                   help="let MNN use NC4HW4 inputs")
    g.add_argument("--external-weights", action="store_true", default=None, help=HELP["external_weights"])
    g.add_argument("--allow-custom-op", action="store_true", default=None, help=HELP["allow_custom_op"])
    g.add_argument("--no-dump-pass", dest="dump_pass", action="store_false", default=None,
                   help="no optimizer-pass log (the node map then relies on the graphs alone)")
    q = p.add_argument_group("int8 quantization (mnnquant)")
    q.add_argument("--int8", action="store_true", help=HELP["int8"])
    q.add_argument("--calib", metavar="DIR", help=INT8_HELP["calib_dir"])
    q.add_argument("--calib-file", action="append", metavar="FILE", help=INT8_HELP["calib_files"])
    q.add_argument("--calib-random", type=int, metavar="N", help=INT8_HELP["calib_random"])
    q.add_argument("--calib-text", metavar="FILE", help=INT8_HELP["calib_text"])
    q.add_argument("--tokenizer", metavar="FILE", help=INT8_HELP["tokenizer"])
    q.add_argument("--calib-samples", type=int, metavar="N", help=INT8_HELP["samples"])
    q.add_argument("--feature-method", choices=FEATURE_METHODS, help=INT8_HELP["feature_method"])
    q.add_argument("--weight-method", choices=WEIGHT_METHODS, help=INT8_HELP["weight_method"])
    q.add_argument("--skip-op", action="append", metavar="NAME", help=INT8_HELP["skip_ops"])
    q.add_argument("--mean", type=float, nargs="+", help=INT8_HELP["mean"])
    q.add_argument("--std", type=float, nargs="+", help=INT8_HELP["std"])
    q.add_argument("--image-format", choices=IMAGE_FORMATS, help=INT8_HELP["image_format"])
    p.set_defaults(func=run)


_FLAGS = ("fp16", "weight_quant_bits", "weight_quant_block", "weight_quant_asymmetric", "hqq", "optimize_level",
          "optimize_prefer", "transformer_fuse", "save_static_model", "convert_matmul_to_conv", "gelu_approximation",
          "origin_rnn", "keep_input_format", "external_weights", "allow_custom_op", "dump_pass")
_INT8_FLAGS = {"calib": "calib_dir", "calib_file": "calib_files", "calib_random": "calib_random",
               "calib_text": "calib_text", "tokenizer": "tokenizer", "calib_samples": "samples",
               "feature_method": "feature_method", "weight_method": "weight_method", "skip_op": "skip_ops",
               "mean": "mean", "std": "std", "image_format": "image_format"}


def _load_settings(path: str, flag: str) -> ConvertSettings:
    """A settings file read, or a usage error naming the flag, the file and what is wrong with it."""
    if not os.path.isfile(path):
        raise UsageError(f"{flag}: no such file: {path}")
    try:
        return ConvertSettings.load(path)
    except (ValueError, TypeError) as e:
        raise UsageError(f"{flag} {path}: {e}")


def settings_file(path: str | None, flag: str = "--convert-settings") -> dict | None:
    """A settings file (ConvertSettings JSON, as `mnnscope convert --json` records them) for another command's
    conversions, checked: None when no file was given; a usage error names the flag and the problem."""
    if not path:
        return None
    settings = _load_settings(path, flag)
    problems = settings.validate()
    if problems:
        raise UsageError(f"{flag} {path}: " + "; ".join(problems))
    return settings.to_json()


def settings_from_args(args) -> ConvertSettings:
    """The settings file (if any) with every flag given on the command line applied on top."""
    settings = _load_settings(args.settings, "--settings") if args.settings else ConvertSettings()
    for name in _FLAGS:
        value = getattr(args, name)
        if value is not None:
            setattr(settings, name, value)
    int8_given = {k: getattr(args, k) for k in _INT8_FLAGS if getattr(args, k) is not None}
    if args.int8 or (int8_given and settings.int8 is not None):
        int8 = settings.int8 or Int8Settings()
        for flag, value in int8_given.items():
            setattr(int8, _INT8_FLAGS[flag], value)
        settings.int8 = int8
    elif int8_given:
        raise UsageError(f"--{next(iter(int8_given)).replace('_', '-')} needs --int8")
    problems = settings.validate()
    if problems:
        raise UsageError("; ".join(problems))
    return settings


def _fmt_bytes(n) -> str:
    if n is None:
        return "?"
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def _print_preflight(report: dict) -> None:
    print(f"{report['model']}: {report['nodes']} nodes, MNN {report.get('mnn_version') or '?'}")
    if not report.get("readable", True):
        print(f"  unreadable: {report.get('parse_error')}")
    for e in report["unsupported_ops"]:
        print(f"  unsupported: {e['op_type']} ({e['domain']}) in {len(e['nodes'])} node(s): {', '.join(e['nodes'][:5])}")
    for e in report["errors"]:
        if e["kind"] != "unsupported_op":
            print(f"  {e['kind']}: {e['message']}")
    if report.get("ok"):
        print("  no problems predicted")


def run(args) -> int:
    if not os.path.isfile(args.model):
        raise ModelError(f"{args.model}: no such file")
    if str(args.model).lower().endswith(".mnn"):
        raise UsageError(f"{args.model} is an MNN model already: nothing to convert (profile it, or compare it with "
                         "the .onnx it came from: mnnscope compare MODEL.onnx --mnn FILE.mnn --modes fp32)")
    settings = settings_from_args(args)
    if args.preflight:
        with RunnerClient(python=args.python) as client:
            report = preflight(args.model, client)
        public = {k: v for k, v in report.items() if not k.startswith("_")}
        if args.json:
            print_json(public)
        else:
            _print_preflight(public)
        return EXIT_OK if report.get("ok") else EXIT_FAIL
    if not args.output:
        raise UsageError("give the output file with -o OUT.mnn (or use --preflight)")
    if os.path.abspath(args.output) == os.path.abspath(args.model):
        raise UsageError("-o must name a new file, not the input model")
    check_output("-o", args.output)
    check_output("--node-map", args.node_map)
    check_output("--bundle", args.bundle, folder=True)
    check_output("--run-dir", args.run_dir, folder=True)

    def on_event(kind, payload):
        if kind == "progress" and payload.get("message") and not args.json:
            eprint(f"... {payload['message']}")

    with RunnerClient(python=args.python) as client:
        result = run_convert(args.model, args.output, settings, client=client, on_event=on_event,
                             bundle_dir=args.bundle, run_dir=args.run_dir, timeout=args.timeout,
                             reduce=not args.no_reduce, cache=not args.no_cache)
    if args.node_map and result.node_map is not None:
        with open(args.node_map, "w", encoding="utf-8") as f:
            json.dump(result.node_map.to_json(), f, indent=1)
    if args.json:
        print_json(result.to_json())
    else:
        _print_result(result, args.diff)
    for e in result.errors:  # each reason names the model (a converter crash's own words do not)
        message = e["message"] if args.model in e["message"] else f"{args.model}: {e['message']}"
        eprint(f"mnnscope convert: {message}")
    return EXIT_OK if result.ok else EXIT_FAIL


def _print_result(result, show_diff: bool) -> None:
    if result.ok:
        print(f"converted -> {result.output} ({_fmt_bytes(result.size_bytes)}, {result.seconds:.1f} s)")
        if (result.cache or {}).get("state") == "hit":
            print(f"  from the conversion cache (an identical conversion took {result.cache['converter_s']:.1f} s; "
                  "--no-cache converts again)")
        if result.node_map is not None:
            c = result.node_map.counts()
            print("  ONNX nodes: " + ", ".join(f"{k} {c[k]}" for k in ("kept", "renamed", "fused", "eliminated"))
                  + f"; MNN ops inserted {c['inserted']}")
        if result.diff and show_diff:
            for line in describe(result.diff):
                print("  " + line)
    else:
        print("conversion failed")
        for e in result.errors:
            print(f"  {e['kind']}: {e['message']}")
            if e.get("next_step"):
                print(f"    next: {e['next_step']}")
        if result.bundle:
            print(f"  bundle: {result.bundle}")
    for w in result.warnings:
        print(f"  warning: {w}")
    print(f"  log: {result.log_path}")
