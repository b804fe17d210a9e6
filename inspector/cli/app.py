"""The headless CLI: `mnnscope <command> ... [--json]`.

Every command lives in `inspector/cli/<name>_cmd.py` with `add_parser(subparsers)` and `run(args) -> int`.
Exit codes everywhere: 0 ok, 1 bad model/data or failed check (one-line reason on stderr), 2 usage error.
With --json, stdout holds exactly one JSON object (an {"error": ...} object on failure); logs go to stderr.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import signal
import sys

from mnnscope.runner.protocol import RunnerError

from mnnscope.inspector.errors import ModelError, UsageError

COMMANDS = ["inspect", "profile", "compare", "convert", "runs", "generate", "llm-sweep"]

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def _clean(obj):
    """JSON has no NaN/Inf: write them as strings so every parser reads our output."""
    if isinstance(obj, float):
        if math.isnan(obj):
            return "nan"
        if math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
        return obj
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return _clean(obj.item())
    return obj


INDENT_LIMIT = 1 << 20  # bytes of compact JSON past which the output stays compact


def print_json(obj) -> None:
    """The --json contract: one JSON object on stdout. Indented for people unless it is large: indenting makes
    json use its pure-Python encoder (3 s for the 5 MB result of a 5,000-node comparison on the 2-core
    machine, against a fraction of a second compact)."""
    clean = _clean(obj)
    text = json.dumps(clean)
    if len(text) < INDENT_LIMIT:
        text = json.dumps(clean, indent=2)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def eprint(*parts) -> None:
    print(*parts, file=sys.stderr, flush=True)


def _module(name: str):
    return importlib.import_module(f"mnnscope.inspector.cli.{name.replace('-', '_')}_cmd")


def add_commands(sub, only: str | None = None) -> None:
    for name in COMMANDS:
        if only is None or name == only:
            _module(name).add_parser(sub)


class ArgError(Exception):
    """A command line argparse refuses (unknown flag, bad value): said as every usage error is, JSON with --json."""

    def __init__(self, prog: str, message: str, usage: str):
        super().__init__(message)
        self.prog, self.message, self.usage = prog, message, usage


class Parser(argparse.ArgumentParser):
    """argparse that raises ArgError instead of printing and exiting (its subparsers too), so `--json` gets its
    JSON error object on stdout (argparse left stdout empty) and the message names the command."""

    def error(self, message):
        raise ArgError(self.prog, message, self.format_usage())


def say_arg_error(e: ArgError, argv: list[str]) -> int:
    """Print an ArgError as argparse would (usage, then the message), naming the command; JSON on stdout when the
    command line asks for --json. Returns the usage exit code."""
    top = e.prog == "mnnscope"  # the top-level parser: unknown flags of any command end up there
    command = f"mnnscope {argv[0]}" if top and argv and argv[0] in COMMANDS else e.prog
    if command == e.prog:  # (the top-level usage under a command's unknown flag named no command: --help does)
        sys.stderr.write(e.usage)
    eprint(f"{command}: error: {e.message} (see {command} --help)")
    if "--json" in argv:
        print_json({"error": {"kind": "usage", "message": f"{command}: {e.message}"}})
    return EXIT_USAGE


def build_parser(prog: str = "mnnscope", only: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser; `only` (a command name) builds that command's subparser alone, so running one
    command imports its own module and services, not every command's (onnx, networkx: ~0.2 s of start-up)."""
    parser = Parser(prog=prog, description="Inspect, profile, convert and compare MNN models.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_commands(sub, only if only in COMMANDS else None)
    return parser


def run_command(args) -> int:
    """Run a parsed command with the exit-code contract; never lets a traceback reach the user."""
    want_json = getattr(args, "json", False)

    def fail(kind: str, message: str, code: int) -> int:
        eprint(f"mnnscope {args.command}: {message}")
        if want_json:
            print_json({"error": {"kind": kind, "message": message}})
        return code

    previous = _on_sigterm()
    try:
        return int(args.func(args) or 0)
    except Terminated:  # CI's cancel, `timeout`: as Ctrl+C, runners stopped and work folders removed on the way out
        return fail("cancelled", "terminated (SIGTERM)", 128 + signal.SIGTERM)
    except UsageError as e:
        return fail("usage", str(e), EXIT_USAGE)
    except ModelError as e:
        return fail("bad_model", str(e), EXIT_FAIL)
    except RunnerError as e:
        model = getattr(args, "model", None)
        # "runner died (SIGSEGV)" says what happened, not to which model
        if e.kind in ("died", "timeout") and model and str(model) not in e.message:
            return fail(e.kind, f"{model}: {e.message}", EXIT_FAIL)
        return fail(e.kind, e.message, EXIT_FAIL)
    except KeyboardInterrupt:
        return fail("cancelled", "interrupted", 130)
    except BrokenPipeError:  # `mnnscope ... | head`: the reader left; nothing more to say
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    except Exception as e:  # a bug of ours: one line for the user, the traceback on request
        if os.environ.get("MNNSCOPE_DEBUG"):
            raise
        return fail("internal", f"internal error: {type(e).__name__}: {e} (set MNNSCOPE_DEBUG=1 for details)", EXIT_FAIL)
    finally:
        if previous is not False:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


class Terminated(KeyboardInterrupt):
    """SIGTERM in a command: unwinds like Ctrl+C (every `with RunnerClient` stops its runner, temporary folders go)."""


def _on_sigterm():
    """SIGTERM raises Terminated in the main thread while a command runs; the handler before (None: one not set from
    Python; False: not installed, off the main thread)."""
    def handler(signum, frame):
        raise Terminated()
    try:
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        return False


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(only=argv[0] if argv else None)
    try:
        args = parser.parse_args(argv)
    except ArgError as e:
        return say_arg_error(e, argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return run_command(args)
