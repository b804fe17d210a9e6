"""`mnnscope runs [list|show|diff|clean]`: the run store from the command line (the CLI twin of the Runs panel).

list: newest first, one line per run with its headline figure; show: one whole record; diff: two profile runs op
by op, two compare runs mode by mode or two generate runs figure by figure; clean: delete old runs' rows and the
folders the store owns.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import time

from mnnscope.inspector.convert.cache import DiskCache
from mnnscope.inspector.errors import ModelError, UsageError

from mnnscope.inspector.cli.app import EXIT_FAIL, EXIT_OK, eprint, print_json
from mnnscope.inspector.cli.runs_view import (brief, fmt_bytes, headline, list_line, headline_text, model_name, num,
                                              print_diff, when_text)
from mnnscope.inspector.history import RunFailed, diff_runs
from mnnscope.inspector.store.runs import RUN_KINDS, RunStore

KINDS = RUN_KINDS
ACTIONS = ("list", "show", "diff", "clean")


# ----- parser ---------------------------------------------------------------------------------------------
def _filters(p, default) -> None:
    """Filter flags, on `runs` itself and on `runs list`/`runs clean`; the subcommand's copies default to
    SUPPRESS so that `runs --kind profile list` keeps the flag given before the subcommand."""
    p.add_argument("--model", metavar="FILE", default=default, help="only runs of this model (matched by content "
                                                                   "hash, so a renamed copy matches)")
    p.add_argument("--kind", choices=KINDS, default=default)


def _json_flag(p, default) -> None:
    p.add_argument("--json", action="store_true", default=default, help="print one JSON object")


def add_parser(sub) -> None:
    p = sub.add_parser("runs", help="list, show, diff and clean the recorded runs",
                       description="The run store (every profile, sweep, conversion and comparison). "
                                   "Without a subcommand: list.")
    _filters(p, None)
    p.add_argument("--limit", type=int, metavar="N", help="list at most N runs")
    _json_flag(p, False)
    actions = p.add_subparsers(dest="action", metavar="{list,show,diff,clean}")
    s = argparse.SUPPRESS
    lp = actions.add_parser("list", help="runs newest first, one line each")
    _filters(lp, s)
    lp.add_argument("--limit", type=int, metavar="N", default=s, help="at most N runs")
    _json_flag(lp, s)
    sp = actions.add_parser("show", help="one run's whole record")
    sp.add_argument("ids", nargs=1, metavar="ID")
    _json_flag(sp, s)
    dp = actions.add_parser("diff", help="two profile runs op by op, two compare runs mode by mode, or two generate "
                                         "runs figure by figure")
    dp.add_argument("ids", nargs=2, metavar="ID")
    dp.add_argument("--top", type=int, default=15, help="op changes listed in the text output (default 15)")
    _json_flag(dp, s)
    cp = actions.add_parser("clean", help="delete old runs and their folders")
    _filters(cp, s)
    cp.add_argument("--older-than", type=float, metavar="DAYS", help="delete runs older than DAYS days")
    cp.add_argument("--keep", type=int, metavar="N", help="keep the N newest runs (of the --kind/--model filter)")
    cp.add_argument("--dry-run", action="store_true", help="report what would go, delete nothing")
    _json_flag(cp, s)
    p.set_defaults(func=run)


# ----- helpers -------------------------------------------------------------------------------------------
def _parse_id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"'{text}' is not a run id (the numbers `mnnscope runs` lists)")


def _not_found(args, message: str) -> int:
    eprint(f"mnnscope runs: {message}")
    if args.json:
        print_json({"error": {"kind": "not_found", "message": message}})
    return EXIT_FAIL


def _model_filter(store: RunStore, model: str | None) -> str | None:
    if not model:
        return None
    if not os.path.isfile(model):
        raise ModelError(f"--model {model}: no such file")
    return store.model_hash(model)


def _positive(flag: str, value, minimum=1) -> None:
    if value is not None and value < minimum:
        raise UsageError(f"{flag} must be at least {minimum}")


# ----- list and show -------------------------------------------------------------------------------------
def do_list(args, store: RunStore) -> int:
    _positive("--limit", args.limit)
    runs = [brief(r) for r in store.list_runs(model_hash=_model_filter(store, args.model), kind=args.kind,
                                              limit=args.limit)]
    if args.json:
        print_json({"runs": runs})
    elif not runs:
        print(f"no runs recorded (store: {store.path})")
    else:
        print(f"{'id':>5}  {'time':<19}  {'kind':<8} {'model':<28} {'backend':<7} {'precision':<8} headline")
        for b in runs:
            print(list_line(b))
    return EXIT_OK


def do_show(args, store: RunStore) -> int:
    run_id = _parse_id(args.ids[0])
    run = store.get_run(run_id)
    if run is None:
        return _not_found(args, f"no run {run_id} in {store.path}")
    run.update(when=when_text(run.get("time")), model=model_name(run), headline=headline(run))
    if args.json:
        print_json(run)
        return EXIT_OK
    print(f"run {run['id']}: {run['kind']} of {run.get('model_path') or '-'} at {run['when']}")
    print(f"  model sha256: {run.get('model_sha256') or '-'}")
    print(f"  backend: requested {run.get('backend_requested') or '-'}, used {run.get('backend_used') or '-'}; "
          f"precision {run.get('precision') or '-'}")
    print(f"  headline: {headline_text(run)}")
    print(f"  folder: {run.get('run_dir') or '-'}")
    settings = {k: v for k, v in (run.get("settings") or {}).items() if v not in (None, {}, [], False)}
    print("  settings: " + (", ".join(f"{k}={v}" for k, v in settings.items()) or "-"))
    for i in run.get("inputs") or []:
        print(f"  input {i.get('name')}: {i.get('dtype')} {i.get('shape')}")
    scalars = {k: v for k, v in (run.get("summary") or {}).items()
               if isinstance(v, (str, int, float, bool)) and k not in ("path", "model")}
    if scalars:
        print("  summary: " + ", ".join(f"{k}={num(v) if isinstance(v, float) else v}" for k, v in scalars.items()))
    for w in (run.get("summary") or {}).get("warnings") or []:
        print(f"  warning: {w}")
    if run["ops"]:
        print(f"  {len(run['ops'])} ops:")
        for op in run["ops"]:
            print(f"    {op['index']:>5}  {num(op.get('ms'), '{:.4f}'):>10} ms  {op.get('type') or '?':<16} "
                  f"{op.get('name')}")
    return EXIT_OK


def do_diff(args, store: RunStore) -> int:
    ids = [_parse_id(t) for t in args.ids]
    runs = []
    for run_id in ids:
        run = store.get_run(run_id)
        if run is None:
            return _not_found(args, f"no run {run_id} in {store.path}")
        runs.append(run)
    try:
        out = diff_runs(*runs, conversions=store.conversion_of)  # the Runs dock's diff, the same computation
    except RunFailed as e:
        raise ModelError(str(e))
    except ValueError as e:
        raise UsageError(str(e))
    for w in out.get("warnings") or []:
        eprint(f"warning: {w}")
    if args.json:
        print_json(out)
    else:
        print_diff(out, args.top)
    return EXIT_OK


# ----- clean ---------------------------------------------------------------------------------------------
def _folder_bytes(path: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):  # os.walk does not follow symlinked folders
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def _inside(path: str, folder: str) -> bool:
    return os.path.realpath(path) == folder or os.path.realpath(path).startswith(folder + os.sep)


def do_clean(args, store: RunStore) -> int:
    if args.older_than is None and args.keep is None:
        raise UsageError("clean needs --older-than DAYS and/or --keep N (it never empties the store by default)")
    _positive("--keep", args.keep, 0)
    if args.older_than is not None and (args.older_than < 0 or not math.isfinite(args.older_than)):
        raise UsageError("--older-than must be a number of days >= 0")
    runs = store.list_runs(model_hash=_model_filter(store, args.model), kind=args.kind)
    doomed = runs[args.keep:] if args.keep is not None else runs
    if args.older_than is not None:
        cutoff = time.time() - args.older_than * 86400
        doomed = [r for r in doomed if r["time"] < cutoff]
    doomed_ids = {r["id"] for r in doomed}
    # A folder that a surviving run also names (or holds a surviving run's folder) stays.
    kept_dirs = [os.path.realpath(d) for i, d in store.run_dirs().items() if i not in doomed_ids]
    removed, skipped, errors, freed = [], [], [], 0
    for r in doomed:
        entry = brief(r)
        folder = r.get("run_dir")
        entry["folder_removed"], entry["folder_bytes"] = False, 0
        if folder and store.owns_folder(folder):
            real = os.path.realpath(folder)
            if any(_inside(k, real) for k in kept_dirs):
                entry["folder_note"] = "shared with a run that stays"
            else:
                entry["folder_bytes"] = _folder_bytes(real)
                if not args.dry_run:
                    try:
                        shutil.rmtree(real)
                    except OSError as e:  # the row stays too, so a later clean can retry
                        errors.append({"id": r["id"], "folder": folder, "message": str(e)})
                        continue
                entry["folder_removed"] = True
                freed += entry["folder_bytes"]
        elif folder:
            entry["folder_note"] = ("outside the store's runs folder: left alone" if os.path.exists(folder)
                                    else "already gone")
            if os.path.exists(folder):
                skipped.append(folder)
        if not args.dry_run:
            store.delete_run(r["id"])
        removed.append(entry)
    out = {"dry_run": bool(args.dry_run), "removed": removed, "bytes_freed": freed, "kept": len(runs) - len(removed),
           "left_alone": skipped, "errors": errors, "runs_dir": str(store.runs_dir)}
    # The conversion and reference caches: entries unused for --older-than days (all with --keep alone); a clean
    # filtered by --model/--kind leaves them, since an entry serves any model with the same content.
    out["cache"] = None if (args.model or args.kind) else DiskCache().clear(
        dry_run=bool(args.dry_run), unused_for_s=args.older_than * 86400 if args.older_than is not None else None)
    if args.json:
        print_json(out)
    else:
        verb = "would remove" if args.dry_run else "removed"
        print(f"{verb} {len(removed)} run(s), {fmt_bytes(freed)} of run folders; {out['kept']} kept")
        if out["cache"]:
            print(f"{verb} {out['cache']['entries']} cache entr(ies), {fmt_bytes(out['cache']['bytes'])} "
                  f"({out['cache']['path']})")
        for e in removed:
            gone = "folder would be deleted" if args.dry_run else "folder deleted"
            note = gone if e["folder_removed"] else e.get("folder_note", "no folder")
            print(f"  {list_line(e)}  [{note}]")
        for e in errors:
            eprint(f"mnnscope runs: could not delete {e['folder']} (run {e['id']} kept): {e['message']}")
    return EXIT_FAIL if errors else EXIT_OK


def run(args) -> int:
    action = getattr(args, "action", None) or "list"
    for flag, attr in (("--older-than", "older_than"), ("--keep", "keep"), ("--dry-run", "dry_run")):
        if action != "clean" and getattr(args, attr, None):
            raise UsageError(f"{flag} belongs to `runs clean`")
    if action in ("show", "diff") and (args.model or args.kind or args.limit):
        raise UsageError(f"--model/--kind/--limit filter `runs list` and `runs clean`, not `runs {action}`")
    if action == "clean" and args.limit:
        raise UsageError("--limit belongs to `runs list` (clean uses --keep N)")
    store = RunStore()
    return {"list": do_list, "show": do_show, "diff": do_diff, "clean": do_clean}[action](args, store)
