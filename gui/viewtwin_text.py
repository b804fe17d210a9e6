"""The Text dock's headless twin: `mnnscope view MODEL --generate --prompt TEXT [--gen-tokenizer FILE]
[--gen-steps N] [--gen-mode M] [--gen-compare] --screenshot OUT.png [--json]`, and for an MNN-LLM export folder
`mnnscope view DIR --llm-sweep [--prompt TEXT] [--gen-steps N] --json`.

It drives the window's own TextPanel offscreen (the same child processes, tables and status lines as a click on
Generate or Sweep exports) and reports what the dock shows: {"status" (the dock's status lines), "text", "tokens",
"prefill_ms", "decode_ms_per_token", "tokens_per_s", "agreement_top1", "first_mismatch_step", "steps_shown" (rows
of the steps table), "run_id", "screenshot"}; with --llm-sweep {"status", "reference", "rows" (the result's),
"table" (the cells the dock's table shows), "run_id", "screenshot"}. Exit 0 when the dock ran, 1 when the run
failed, 2 on a usage error.
"""
from __future__ import annotations

import json
import os
import sys

from mnnscope.gui.viewtwin_compare import _clean, _wait

DEFAULT_PROMPT = "The model runs on the phone"


def add_arguments(p) -> None:
    g = p.add_argument_group("text (the Text dock, offscreen)")
    g.add_argument("--generate", action="store_true", help="generate with the Text dock")
    g.add_argument("--llm-sweep", action="store_true", help="an export folder: the Text dock's Sweep exports")
    g.add_argument("--prompt", help=f"the Text dock's prompt (default {DEFAULT_PROMPT!r})")
    g.add_argument("--gen-tokenizer", metavar="FILE", help="the Text dock's tokenizer.json (a model file needs one; "
                                                          "default: tokenizer.json beside the model)")
    g.add_argument("--gen-steps", type=int, default=16, help="tokens to generate (default 16)")
    g.add_argument("--gen-mode", help="how an .onnx is converted for MNN (fp32, int4w, ...)")
    g.add_argument("--gen-compare", action="store_true", help="compare with ONNX Runtime (an .onnx model)")


def wanted(args) -> bool:
    return bool(getattr(args, "generate", False) or getattr(args, "llm_sweep", False))


def check(args) -> str | None:
    if not wanted(args):
        for flag in ("prompt", "gen_tokenizer", "gen_mode"):
            if getattr(args, flag, None) is not None:
                return f"--{flag.replace('_', '-')} goes with --generate or --llm-sweep"
        if getattr(args, "gen_compare", False):
            return "--gen-compare goes with --generate"
        return None
    if args.generate and args.llm_sweep:
        return "give --generate or --llm-sweep, not both"
    from mnnscope.gui import viewtwin_compare
    if viewtwin_compare.wanted(args) or getattr(args, "profile", False):
        return "the Text dock's twin runs alone: --generate/--llm-sweep without --compare/--profile"
    if args.gen_steps < 1:
        return "--gen-steps must be at least 1"
    folder = os.path.isdir(args.model)
    if args.llm_sweep and not folder:
        return "--llm-sweep needs an MNN-LLM export folder as MODEL"
    if folder and (args.gen_tokenizer or args.gen_mode or args.gen_compare):
        return "an export folder brings its own tokenizer and conversion: --gen-tokenizer/--gen-mode/--gen-compare " \
               "go with a model file"
    if args.gen_compare and not args.model.lower().endswith(".onnx"):
        return "--gen-compare needs the .onnx model (ONNX Runtime is the reference)"
    if args.gen_tokenizer and not os.path.isfile(args.gen_tokenizer):
        return f"--gen-tokenizer: no such file: {args.gen_tokenizer}"
    from mnnscope.gui.panels.text import MODES
    if args.gen_mode and args.gen_mode not in MODES:
        return f"--gen-mode: one of {', '.join(MODES)}"
    return None


def drive(win, app, args) -> tuple[int, dict | None, str | None]:
    """Run the Text dock as a user would; (exit code, the twin's JSON without 'screenshot', error)."""
    from mnnscope.gui.panels.text import JOB
    panel = win.panels.get("Text")
    if panel is None:
        return 1, None, "the Text dock is not built"
    win.show_dock("Text")
    panel.prompt.setText(args.prompt or DEFAULT_PROMPT)
    panel.steps.setValue(args.gen_steps)
    if args.gen_tokenizer:
        panel.tokenizer.setText(os.path.abspath(args.gen_tokenizer))
    if args.gen_mode:
        panel.mode.setCurrentText(args.gen_mode)
    panel.compare.setChecked(bool(args.gen_compare))
    got: dict = {}
    panel.finished.connect(lambda r: got.setdefault("result", r))
    panel.failed.connect(lambda msg: got.setdefault("failed", msg))
    started = panel.sweep() if args.llm_sweep else panel.run()
    if not started:
        return 1, None, panel.status.text()
    if not _wait(app, lambda: bool(got), 3_600_000):
        win.runner.cancel_job(JOB)
        return 1, None, "the Text dock's run timed out"
    if "result" not in got:
        return 1, None, f"the Text dock's run failed: {got['failed']}"
    app.processEvents()
    r = got["result"]
    if args.llm_sweep:
        t = panel.sweep_table
        table = [[t.item(i, j).text() for j in range(t.columnCount())] for i in range(t.rowCount())]
        return 0, {"status": panel.status.text(), "reference": r["reference"], "rows": r["rows"], "table": table,
                   "run_id": r.get("run_id")}, None
    out = {"status": panel.status.text(), "steps_shown": panel.steps_table.rowCount(), "run_id": r.get("run_id")}
    for k in ("text", "tokens", "prefill_ms", "decode_ms_per_token", "tokens_per_s", "agreement_top1",
              "first_mismatch_step", "op_split"):
        out[k] = r.get(k)
    return 0, out, None


def emit(args, out: dict | None, screenshot: str | None) -> None:
    if out is not None and getattr(args, "json", False):
        sys.stdout.write(json.dumps(_clean(dict(out, screenshot=screenshot)), default=str) + "\n")
        sys.stdout.flush()
