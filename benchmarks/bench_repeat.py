"""Repeat loops of `mnnscope compare`: first vs repeated run, one mode vs three, and what the runs cost.

    .venv/bin/python benchmarks/bench_repeat.py [--nodes 2000 5000 20000] [--sequential] [--json OUT.json]

For each size, the Llama-like decoder of gen_large.py is compared with the real CLI (`mnnscope compare --json
--no-fix`, a process of its own, as users run it), every figure from one run of this script so that the ratios
are measured side by side on the same machine load:

- first:    `--modes fp32` with an empty cache (a cache folder of its own)
- repeat:   the same command again (conversion and reference run served by the cache)
- three:    `--modes fp32,fp16w,int8w` with another empty cache (three conversions, in parallel)
- three_seq (with --sequential): the same with MNNSCOPE_CONVERT_JOBS=1, the conversions one after another

Printed per run: wall time of the command, `convert_s` (the converter's own seconds, summed over conversions),
the reference run's and the MNN runs' seconds, the command's time over conversion + reference run + MNN run
(what is not the three runs: process start, loading, matching, metrics, report), and the peak RSS of the
whole process tree (the compare process and its runners, summed, sampled every 0.1 s from /proc).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

import gen_large  # noqa: E402  (sibling scripts: run as a file, this folder is on sys.path)
from proctree import descendants  # noqa: E402


def _tree(pid: int) -> list[int]:
    """pid and its live descendants."""
    return [pid, *descendants(pid)]


def _rss(pids: list[int]) -> int:
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            pass
    return total


def run_compare_cli(model: Path, modes: str, cache_dir: Path, env_extra: dict | None = None) -> dict:
    env = dict(os.environ, MNNSCOPE_CACHE_DIR=str(cache_dir), **(env_extra or {}))
    cmd = [sys.executable, "-m", "mnnscope.gui.main", "compare", str(model), "--modes", modes, "--no-fix", "--json"]
    start = time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, _rss(_tree(proc.pid)))
            time.sleep(0.1)
        wall = time.monotonic() - start
        out.seek(0)
        result = json.loads(out.read().decode())
    if proc.returncode not in (0, 1) or "modes" not in result:
        raise RuntimeError(f"compare failed (exit {proc.returncode}): {result}")
    ref_s = float(result["reference"].get("seconds") or 0.0)
    run_s = sum(float((m.get("run") or {}).get("seconds") or 0.0) for m in result["modes"])
    convert_s = float(result.get("convert_s") or 0.0)
    runs = convert_s + ref_s + run_s
    return {"modes": modes, "wall_s": wall, "seconds": result["seconds"], "convert_s": convert_s, "reference_s": ref_s,
            "mnn_run_s": run_s, "over_runs": wall / runs if runs else None, "peak_rss_mb": peak / 2**20,
            "reference_cache": (result["reference"].get("cache") or {}).get("state"),
            "conversion_cache": [(m.get("conversion") or {}).get("cache", {}).get("state") for m in result["modes"]],
            "errors": [m.get("error") for m in result["modes"] if m.get("error")]}


def bench(n_nodes: int, sequential: bool, folder: Path, three: bool = True) -> dict:
    import onnx
    model = folder / f"decoder_{n_nodes}.onnx"
    onnx.save(gen_large.make_decoder(n_nodes), str(model))
    out = {"nodes": n_nodes}
    out["first"] = run_compare_cli(model, "fp32", folder / f"cache-{n_nodes}-a")
    out["repeat"] = run_compare_cli(model, "fp32", folder / f"cache-{n_nodes}-a")
    out["repeat_over_first"] = out["repeat"]["wall_s"] / out["first"]["wall_s"]
    if not three:
        return out
    out["three"] = run_compare_cli(model, "fp32,fp16w,int8w", folder / f"cache-{n_nodes}-b")
    if sequential:
        out["three_seq"] = run_compare_cli(model, "fp32,fp16w,int8w", folder / f"cache-{n_nodes}-c",
                                           {"MNNSCOPE_CONVERT_JOBS": "1"})
    out["three_over_one"] = out["three"]["wall_s"] / out["first"]["wall_s"]
    if sequential:
        out["three_seq_over_one"] = out["three_seq"]["wall_s"] / out["first"]["wall_s"]
    return out


def _line(name: str, r: dict) -> str:
    return (f"  {name:<10} wall {r['wall_s']:7.1f} s | convert {r['convert_s']:6.1f} s | reference {r['reference_s']:5.1f} s"
            f" | MNN runs {r['mnn_run_s']:5.1f} s | wall / runs {r['over_runs']:.2f} | peak RSS {r['peak_rss_mb']:6.0f} MB"
            f" | cache ref={r['reference_cache']} conv={','.join(map(str, r['conversion_cache']))}"
            + (f" | errors {r['errors']}" if r["errors"] else ""))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[2000])
    ap.add_argument("--sequential", action="store_true", help="also three modes with one conversion at a time")
    ap.add_argument("--no-three", action="store_true", help="only the first and the repeated run (big graphs)")
    ap.add_argument("--json", metavar="OUT.json")
    args = ap.parse_args(argv)
    print(f"cores: {len(os.sched_getaffinity(0))}, {time.strftime('%Y-%m-%d %H:%M')}")
    results = []
    with tempfile.TemporaryDirectory(prefix="mnnscope-bench-repeat-") as tmp:
        for n in args.nodes:
            r = bench(n, args.sequential, Path(tmp), three=not args.no_three)
            results.append(r)
            print(f"{n} nodes:")
            for name in ("first", "repeat", "three", "three_seq"):
                if name in r:
                    print(_line(name, r[name]))
            print(f"  repeat / first {r['repeat_over_first']:.2f} (target <= 0.33)"
                  + (f"; three modes / one {r['three_over_one']:.2f} (target <= ~2)" if "three" in r else "")
                  + (f"; three modes one at a time / one {r['three_seq_over_one']:.2f}" if "three_seq" in r else ""),
                  flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
