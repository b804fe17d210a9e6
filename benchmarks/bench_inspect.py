#!/usr/bin/env python3
"""`mnnscope inspect` on large generated decoders: wall time of the whole command (process start included).

    .venv/bin/python benchmarks/bench_inspect.py [--nodes 20000 100000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, nargs="+", default=[20000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from gen_large import make_decoder
    with tempfile.TemporaryDirectory(prefix="mnnscope-bench-") as tmp:
        for n in args.nodes:
            bench(Path(tmp), n, args.repeat, make_decoder)
    return 0


def bench(out: Path, n: int, repeat: int, make_decoder) -> None:
    """Time `inspect --json` with and without shape inference on one generated decoder of n nodes."""
    import onnx
    path = out / f"decoder_{n}.onnx"
    onnx.save(make_decoder(n), str(path))
    for flags in ([], ["--no-shapes"]):
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "inspect", str(path), "--json", *flags],
                               capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
            times.append(time.perf_counter() - t0)
            assert r.returncode == 0, r.stderr
        nodes = json.loads(r.stdout)["nodes"]
        label = "inspect --json" + (" --no-shapes" if flags else " (with shape inference)")
        print(f"{nodes:>7} nodes  {label:<42} median {statistics.median(times):.2f} s  "
              f"(min {min(times):.2f}, max {max(times):.2f}, n={len(times)})")


if __name__ == "__main__":
    sys.exit(main())
