"""Profiling overhead: per-op-timed run time over plain runSession time, and the cost of the stats pass.

    .venv/bin/python benchmarks/bench_profile.py [--blocks 100] [--channels 32] [--size 28] [--runs 30]

Generates a conv/matmul net of a few hundred real ops (each residual block is Conv3x3+Relu, Conv1x1 and
Add, then an MLP head of MatMul/Add/Relu), converts it with MNN's converter in a child process, and
profiles it through the real runner (`profile` request, 1 thread). The runner interleaves timed runs
(two clock reads per op in Python callbacks) with plain `runSession` runs, so both see the same machine
state; the target for the ratio is <= 1.10. The stats pass is one more run that copies every op output
to the host and computes its statistics; its cost is printed against one plain run.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def make_convnet(blocks: int = 100, channels: int = 32, size: int = 28, mlp: int = 8, seed: int = 0) -> onnx.ModelProto:
    """A residual conv net plus an MLP head, exporter-style names; input `x` [1, C, size, size] -> `y` [1, 64]."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def weight(name, shape, scale):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    cur = "x"
    for b in range(blocks):
        s = f"/blocks.{b}"
        w1 = weight(f"blocks.{b}.conv1.weight", (channels, channels, 3, 3), (2.0 / (9 * channels)) ** 0.5)
        b1 = weight(f"blocks.{b}.conv1.bias", (channels,), 0.01)
        w2 = weight(f"blocks.{b}.conv2.weight", (channels, channels, 1, 1), (1.0 / channels) ** 0.5 * 0.5)
        nodes += [
            helper.make_node("Conv", [cur, w1, b1], [f"{s}/conv1/Conv_output_0"], name=f"{s}/conv1/Conv",
                             pads=[1, 1, 1, 1]),
            helper.make_node("Relu", [f"{s}/conv1/Conv_output_0"], [f"{s}/relu/Relu_output_0"], name=f"{s}/relu/Relu"),
            helper.make_node("Conv", [f"{s}/relu/Relu_output_0", w2], [f"{s}/conv2/Conv_output_0"],
                             name=f"{s}/conv2/Conv"),
            helper.make_node("Add", [cur, f"{s}/conv2/Conv_output_0"], [f"{s}/Add_output_0"], name=f"{s}/Add"),
        ]
        cur = f"{s}/Add_output_0"
    nodes += [helper.make_node("GlobalAveragePool", [cur], ["/pool/GlobalAveragePool_output_0"],
                               name="/pool/GlobalAveragePool"),
              helper.make_node("Flatten", ["/pool/GlobalAveragePool_output_0"], ["/Flatten_output_0"], name="/Flatten")]
    cur, width = "/Flatten_output_0", channels
    for m in range(mlp):
        s = f"/head.{m}"
        w = weight(f"head.{m}.weight", (width, 64), (1.0 / width) ** 0.5)
        bias = weight(f"head.{m}.bias", (64,), 0.01)
        nodes += [helper.make_node("MatMul", [cur, w], [f"{s}/MatMul_output_0"], name=f"{s}/MatMul"),
                  helper.make_node("Add", [f"{s}/MatMul_output_0", bias], [f"{s}/Add_output_0"], name=f"{s}/Add"),
                  helper.make_node("Relu", [f"{s}/Add_output_0"], [f"{s}/Relu_output_0"], name=f"{s}/Relu")]
        cur, width = f"{s}/Relu_output_0", 64
    nodes.append(helper.make_node("Identity", [cur], ["y"], name="/output/Identity"))
    graph = helper.make_graph(nodes, "convnet",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, size, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="mnnscope-bench")
    model.ir_version = 8
    return model


_CONVERT = """
import sys, _tools
_tools.mnnconvert(["MNNConvert", "-f", "ONNX", "--modelFile", sys.argv[1], "--MNNModel", sys.argv[2],
                   "--bizCode", "mnnscope"])
"""


def convert(src: Path, dst: Path) -> None:
    """ONNX -> MNN in a child process (the converter prints to stdout and may crash)."""
    proc = subprocess.run([sys.executable, "-c", _CONVERT, str(src), str(dst)], capture_output=True, text=True,
                          errors="replace", timeout=600)
    if "Converted Success!" not in proc.stdout + proc.stderr or not dst.is_file():
        raise RuntimeError(f"conversion of {src} failed:\n{(proc.stdout + proc.stderr)[-2000:]}")


def build(folder: Path, **kwargs) -> tuple[Path, Path]:
    """Write net.onnx and net.mnn into folder; returns their paths."""
    onnx_path, mnn_path = folder / "net.onnx", folder / "net.mnn"
    onnx.save(make_convnet(**kwargs), str(onnx_path))
    convert(onnx_path, mnn_path)
    return onnx_path, mnn_path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=100)
    ap.add_argument("--channels", type=int, default=32)
    ap.add_argument("--size", type=int, default=28)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    from mnnscope.inspector.process.client import RunnerClient

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        _, mnn_path = build(tmp, blocks=args.blocks, channels=args.channels, size=args.size)
        convert_s = time.perf_counter() - t0
        x = np.random.default_rng(0).uniform(-1, 1, (1, args.channels, args.size, args.size)).astype(np.float32)
        np.savez(tmp / "inputs.npz", x=x)
        payload = {"path": str(mnn_path), "inputs": str(tmp / "inputs.npz"), "threads": args.threads,
                   "runs": args.runs, "warmup": 3, "run_dir": str(tmp / "run"), "save": "none"}
        with RunnerClient() as client:
            timed = client.request("profile", payload)
            stats = client.request("profile", dict(payload, runs=3, stats=True))
        n_ops = len(timed["ops"])
        ratio = timed["total_ms"] / timed["plain_ms"]
        per_op_us = (timed["total_ms"] - timed["plain_ms"]) * 1000.0 / n_ops
        n_tensors = sum(len(op.get("outputs") or []) for op in stats["ops"])
        print(f"model: {args.blocks} residual blocks ({args.channels}ch, {args.size}x{args.size}) + MLP head; "
              f"{n_ops} runtime ops in MNN {os.path.basename(str(mnn_path))} (converted in {convert_s:.1f} s)")
        print(f"threads {args.threads}, {args.runs} interleaved runs each, median:")
        print(f"  plain runSession                 {timed['plain_ms']:9.3f} ms")
        print(f"  per-op timed (callbacks)         {timed['total_ms']:9.3f} ms")
        print(f"  overhead ratio                   {ratio:9.3f}   (target <= 1.10)  "
              f"= {per_op_us:.2f} us per op")
        print(f"  sum of per-op medians            {timed['ops_sum_ms']:9.3f} ms "
              f"({100 * timed['ops_sum_ms'] / timed['total_ms']:.1f}% of the timed run)")
        print(f"  stats pass ({n_tensors} tensors read)   {stats['stats_ms']:9.3f} ms "
              f"= {stats['stats_ms'] / timed['plain_ms']:.2f} plain runs")
        return 0 if ratio <= 1.10 else 1


if __name__ == "__main__":
    sys.exit(main())
