"""Peak memory of `mnnscope compare` on a model whose activations are gigabytes.

    .venv/bin/python benchmarks/bench_compare_memory.py [--mb-per-tensor 64] [--tensors 40]

The model: one input of N float32 values and a chain of `--tensors` elementwise ops (Mul, Add, Relu, Sigmoid in
turn), so every activation is as big as the input and the activations of one side total tensors x MB. Both
sides are written to disk by the runners (ONNX Runtime's and MNN's), and compared tensor by tensor: metrics are
computed as each pair is read (large files through mmap, a chunk at a time), and a runner keeps at most the
memory budget of tensors at once (past it, the run is split into parts). Printed: the activations' total per
side, the wall time, and the peak RSS of the compare process tree (the compare process and its runners, summed,
sampled every 0.1 s), as `bench_repeat.py` measures it.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent

import bench_repeat  # noqa: E402  (a sibling script: run as a file, this folder is on sys.path)


def make_model(path: Path, n: int, tensors: int) -> None:
    nodes, inits, x = [], [], "x"
    kinds = ["Mul", "Add", "Relu", "Sigmoid"]
    for i in range(tensors):
        kind = kinds[i % len(kinds)]
        out = "y" if i == tensors - 1 else f"t{i}"
        if kind in ("Mul", "Add"):
            c = f"c{i}"
            inits.append(numpy_helper.from_array(np.array([0.5 if kind == "Mul" else 0.25], np.float32), c))
            nodes.append(helper.make_node(kind, [x, c], [out], name=f"/chain/{kind}_{i}"))
        else:
            nodes.append(helper.make_node(kind, [x], [out], name=f"/chain/{kind}_{i}"))
        x = out
    graph = helper.make_graph(nodes, "big_activations", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb-per-tensor", type=int, default=64)
    ap.add_argument("--tensors", type=int, default=32)
    args = ap.parse_args(argv)
    n = args.mb_per_tensor * (1 << 20) // 4
    bench = bench_repeat
    print(f"cores: {len(os.sched_getaffinity(0))}, {time.strftime('%Y-%m-%d %H:%M')}")
    with tempfile.TemporaryDirectory(prefix="mnnscope-bench-mem-") as tmp:
        tmp = Path(tmp)
        model = tmp / "big.onnx"
        make_model(model, n, args.tensors)
        side_gb = (args.tensors + 1) * n * 4 / 2**30  # the input and every op output
        r = bench.run_compare_cli(model, "fp32", tmp / "cache", {"TMPDIR": str(tmp)})
        print(f"activations per side: {side_gb:.2f} GB ({args.tensors + 1} tensors of {args.mb_per_tensor} MB); "
              f"both sides {2 * side_gb:.2f} GB")
        print(f"compare --modes fp32: wall {r['wall_s']:.1f} s, reference run {r['reference_s']:.1f} s, MNN run "
              f"{r['mnn_run_s']:.1f} s, peak RSS of the process tree {r['peak_rss_mb']:.0f} MB "
              f"({r['peak_rss_mb'] / 1024 / side_gb:.2f} x one side's activations)"
              + (f"; errors: {r['errors']}" if r["errors"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
