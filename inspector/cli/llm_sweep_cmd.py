"""`mnnscope llm-sweep DIR...`: the quantization table of several MNN-LLM exports of one model.

A command of its own rather than a flag: it takes any number of export folders (generate takes one, compare
two), and its answer is a table, one row per export, against the 16-bit export among them."""
from __future__ import annotations

from mnnscope.inspector.cli.app import eprint, print_json
from mnnscope.inspector.inputs.options import add_python_argument
from mnnscope.inspector.llm.table import SWEEP_COLUMNS, sweep_rows
from mnnscope.inspector.process.client import RunnerClient

DEFAULT_TEXT = "The model runs on the phone"


def add_parser(sub) -> None:
    p = sub.add_parser("llm-sweep", help="bits, block, size, tokens/s, agreement and KL of MNN-LLM exports",
                       description="For each MNN-LLM export folder (of the same model): its size, MNN.llm's "
                                   "greedy tokens/s, and top-1 agreement, KL and logits cosine against the 16-bit "
                                   "export among them (else the first), teacher-forced on its greedy tokens.")
    p.add_argument("folders", nargs="+", metavar="DIR", help="export folders written by llmexport")
    p.add_argument("--text", default=DEFAULT_TEXT, help=f"the prompt (default {DEFAULT_TEXT!r})")
    p.add_argument("--steps", type=int, default=16, help="tokens generated and compared (default 16)")
    p.add_argument("--threads", type=int, default=1)
    add_python_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def print_table(r: dict) -> None:
    print(f"{r['steps']} tokens of {r['prompt']!r}, against {r['reference']} (teacher-forced on its greedy tokens)")
    rows = [SWEEP_COLUMNS] + sweep_rows(r)
    widths = [max(len(row[i]) for row in rows) for i in range(len(SWEEP_COLUMNS))]
    for row in rows:
        print("  " + " ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))


def run(args) -> int:
    from mnnscope.inspector.llm.service import sweep_exports
    with RunnerClient(python=args.python) as client:
        r = sweep_exports(args.folders, args.text, args.steps, args.threads, client=client)
    if args.json:
        print_json(r)
    else:
        print_table(r)
    for w in r.get("warnings") or []:
        eprint(f"warning: {w}")
    return 0
