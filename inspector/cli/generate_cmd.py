"""`mnnscope generate MODEL [--tokenizer FILE] --text TEXT`: greedy decoding, prefill/decode timing, and with
--compare where MNN stops agreeing with ONNX Runtime (token level, MoE routing, the layer at that step)."""
from __future__ import annotations

import os
import sys

from mnnscope.runner import protocol

from mnnscope.inspector.errors import UsageError

from mnnscope.inspector.cli.app import eprint, print_json
from mnnscope.inspector.generate.service import GENERATE_MODES, KV_CHOICES, GenerateOptions, run_generate
from mnnscope.inspector.generate.summary import op_split_summary, reference_speed
from mnnscope.inspector.inputs.options import add_python_argument, tokenizer_or_beside
from mnnscope.inspector.process.client import RunnerClient
from mnnscope.inspector.profile.service import MEMORY_MODES, PRECISIONS


def add_parser(sub) -> None:
    p = sub.add_parser("generate", help="generate text with a decoder LM (MNN or ONNX Runtime), timed per token",
                       description="Greedy decoding for --steps tokens from --text (through --tokenizer): "
                                   "prefill (time to first token), per-token decode latency, tokens/s; with "
                                   "--compare, MNN against ONNX Runtime per step (top-1 agreement, KL, the "
                                   "first mismatching step and its layerwise comparison, MoE routing flips).")
    p.add_argument("model", help="an .onnx (ONNX Runtime; --engine mnn or --compare converts it), an .mnn, or an "
                                 "MNN-LLM export folder (run by MNN.llm with its own tokenizer)")
    p.add_argument("--tokenizer", metavar="FILE", help="a tokenizer.json (HuggingFace tokenizers; default: the "
                   "<stem>.tokenizer.json or tokenizer.json beside the model); not for a folder")
    p.add_argument("--sampler", choices=("greedy", "config"), default="greedy",
                   help="an export folder: greedy (default) or the folder's own sampler (config.json)")
    p.add_argument("--text", required=True, help="the prompt")
    p.add_argument("--steps", type=int, default=16, help="tokens to generate (default 16)")
    p.add_argument("--engine", choices=list(protocol.ENGINES),
                   help="default: mnn for .mnn, ort for .onnx; mnn on an .onnx converts it (--mode)")
    p.add_argument("--backend", default=protocol.DEFAULT_BACKEND, help="MNN backend or ORT provider")
    p.add_argument("--precision", choices=PRECISIONS, help="MNN precision (default: the mode's, high)")
    p.add_argument("--memory", choices=MEMORY_MODES, help="MNN memory mode (default: the mode's, normal)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--kv-cache", choices=KV_CHOICES, default="auto",
                   help="auto: use the graph's past/present inputs when it has them; off: feed the whole "
                        "sequence at every step")
    p.add_argument("--mode", choices=GENERATE_MODES, default="fp32",
                   help="how an .onnx is converted for MNN (compare's modes: fp16w, int8w, int4w, ...)")
    p.add_argument("--mnn", metavar="FILE.mnn", help="with an .onnx MODEL: the MNN side's model (no conversion)")
    p.add_argument("--compare", action="store_true",
                   help="MNN against ONNX Runtime, teacher-forced on the reference tokens")
    p.add_argument("--no-layerwise", action="store_true",
                   help="with --compare: skip the layerwise comparison of the first mismatching step")
    p.add_argument("--eos", type=int, help="stop after a step that generates this token id (steps past the "
                                           "model's context limit are then capped to it, not refused)")
    p.add_argument("--partial", action="store_true",
                   help="a run that fails mid-way: print the tokens made before the failing step with the error "
                        "(exit 1) instead of the error alone")
    add_python_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def options_from_args(args) -> GenerateOptions:
    # the tokenizer.json beside the model when none is given, as profile's --text and the Inputs dock take it
    tokenizer = tokenizer_or_beside(args.tokenizer, args.model,
                                    "--tokenizer FILE is needed for an .onnx/.mnn model (no tokenizer.json beside it)")
    if not os.path.isfile(tokenizer):
        raise UsageError(f"--tokenizer: no such file: {tokenizer}")
    return GenerateOptions(model=args.model, tokenizer=tokenizer, text=args.text, steps=args.steps,
                           engine=args.engine, backend=args.backend, precision=args.precision, memory=args.memory,
                           threads=args.threads, kv=args.kv_cache, mode=args.mode, mnn=args.mnn,
                           compare=args.compare, layerwise=not args.no_layerwise, eos=args.eos,
                           partial=args.partial)


def _ms(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def print_result(r: dict) -> None:
    print(f"{r['run_model']}  ({r['engine']}, {r.get('api')}, backend {r.get('backend_used')}"
          + (f", mode {r['mode']}" if r.get("mode") else "") + f", KV cache {'on' if r['kv_cache'] else 'off'})")
    print(f"  prompt    {r['prompt']!r} ({r['prompt_tokens']} tokens)")
    print(f"  text      {r['text']!r}")
    print(f"  tokens    {r['tokens']}")
    if r.get("steps") != r.get("steps_requested"):  # stopped at --eos, capped at the context, or failed (--partial)
        print(f"  steps     {r.get('steps')} of {r.get('steps_requested')} asked for")
    print(f"  prefill   {_ms(r['prefill_ms'])} ms (time to first token)")
    print(f"  decode    {_ms(r['decode_ms_per_token'])} ms/token median, {r['tokens_per_s']:.1f} tokens/s")
    print(f"  {op_split_summary(r.get('op_split'))}")
    if "agreement_top1" in r:
        ref = r["reference"]
        print(f"  reference {ref['text']!r} (ONNX Runtime)")
        speed = reference_speed(r)
        if speed:
            print(f"  {speed}")
        first = r["first_mismatch_step"]
        print(f"  agreement top-1 {r['agreement_top1']:.3f} of {len(r['kl_per_step'])} steps; first mismatch: "
              f"{'none' if first is None else f'step {first}'}; max KL {max(r['kl_per_step']):.3g}")
        for layer, s in (r.get("routing") or {}).items():
            print(f"  routing {layer}: {s.get('flips')} flips of {s['tokens']} tokens; load ref "
                  f"{s['load']['reference']}, mnn {s['load'].get('mnn')}")
        fd = r.get("first_divergence")
        if fd:
            node = fd.get("node")
            print(f"  step {fd['step']} layerwise ({fd['mode']}): first divergence "
                  f"{node or fd.get('error') or 'none found'}")
    print(f"  run {r.get('run_id')} stored; files in {r.get('run_dir')}")


def run(args) -> int:
    if os.path.isdir(args.model):
        return run_export(args)
    opts = options_from_args(args)

    def on_event(kind: str, body: dict) -> None:
        if kind == "progress" and not args.json and body.get("message") and sys.stderr.isatty():
            eprint(f"  ... {body['message']}")

    client = RunnerClient(python=args.python)
    try:
        result = run_generate(opts, client=client, on_event=on_event)
    finally:
        client.stop()
    if args.json:
        print_json(result)
    else:
        print_result(result)
    failure = result.get("error")
    for w in result.get("warnings") or []:
        if not failure or w != failure.get("message"):
            eprint(f"warning: {w}")
    if failure:  # --partial: the tokens before the failing step are printed above, the run still failed
        eprint(f"error: {failure['message']}")
        return 1
    return 0


def run_export(args) -> int:
    """An MNN-LLM export folder: MNN.llm in the runner (inspector/llm/service.py)."""
    from mnnscope.inspector.llm.service import LlmOptions, generate_export
    opts = LlmOptions(folder=args.model, text=args.text, steps=args.steps, threads=args.threads,
                      sampler=args.sampler)
    with RunnerClient(python=args.python) as client:
        r = generate_export(opts, client=client)
    if args.json:
        print_json(r)
    else:
        block = f", block {r['block']}" if r.get("block") else ""
        print(f"{r['model']}  (MNN.llm, {r['bits']}-bit{block}, sampler {r['sampler']})")
        print(f"  prompt    {r['prompt']!r} ({r['prompt_tokens']} tokens)")
        print(f"  text      {r['text']!r}")
        print(f"  tokens    {r['tokens']}")
        print(f"  prefill   {_ms(r['prefill_ms'])} ms (time to first token; MNN's own {_ms(r['mnn_prefill_ms'])})")
        print(f"  decode    {_ms(r['decode_ms_per_token'])} ms/token median, {r['tokens_per_s']:.1f} tokens/s "
              f"(stream read {r['chunks']} times), peak memory {r['memory_mb']:.1f} MB")
        print(f"  run {r.get('run_id')} stored; files in {r.get('run_dir')}")
    for w in r.get("warnings") or []:
        eprint(f"warning: {w}")
    return 0
