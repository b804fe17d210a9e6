"""The MNN converter's own cost: how its time grows with graph size, and which settings change the time
without changing the output.

    .venv/bin/python benchmarks/bench_converter.py [--nodes 500 1000 2000 5000] [--settings-at 2000] [--repeat 1]

Models: the Llama-like decoder of gen_large.py. Every conversion is one `convert` request to a runner (the
converter in-process there, as mnnscope runs it); the time is the runner's own measure of the converter call
(`seconds`), without process start, pre-flight or node map. MNN's output carries a random UUID, so "same
output" is judged by the bytes that differ from the default conversion (a UUID: at most ~36 bytes) and the op
list.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mnnscope.inspector.convert.settings import ConvertSettings  # noqa: E402
from mnnscope.inspector.formats.mnn_flatbuffer import read_mnn  # noqa: E402
from mnnscope.inspector.process.client import RunnerClient  # noqa: E402

import gen_large  # noqa: E402  (a sibling script: run as a file, this folder is on sys.path)

# (label, settings): what mnnscope converts with by default (--dumpPass on: the node map reads its log) and
# the settings whose effect on time is worth knowing.
VARIANTS = [
    ("default (mnnscope: --dumpPass)", ConvertSettings()),
    ("without --dumpPass", ConvertSettings(dump_pass=False)),
    ("--optimizeLevel 2", ConvertSettings(optimize_level=2)),
    ("--optimizePrefer 1 (smallest)", ConvertSettings(optimize_prefer="smallest")),
    ("--optimizePrefer 2 (fastest)", ConvertSettings(optimize_prefer="fastest")),
    ("--keepInputFormat=1 (3.6.1 default)", ConvertSettings(keep_input_format=True)),
    ("--convertMatmulToConv 1 (default)", ConvertSettings(convert_matmul_to_conv=True)),
    ("--convertMatmulToConv 0", ConvertSettings(convert_matmul_to_conv=False)),
    ("--transformerFuse", ConvertSettings(transformer_fuse=True)),
    ("--saveExternalData", ConvertSettings(external_weights=True)),
    ("--saveStaticModel", ConvertSettings(save_static_model=True)),
    ("--fp16", ConvertSettings(fp16=True)),
    ("--weightQuantBits 8", ConvertSettings(weight_quant_bits=8)),
    ("--weightQuantBits 4 --weightQuantBlock 32", ConvertSettings(weight_quant_bits=4, weight_quant_block=32)),
]


def convert(client: RunnerClient, src: Path, dst: Path, settings: ConvertSettings) -> dict:
    payload = {"src": str(src), "dst": str(dst), "args": settings.to_args(), "verify": False,
               "log_path": str(dst.with_suffix(".log"))}
    start = time.monotonic()
    result = client.request("convert", payload, timeout=1800)
    result["wall_s"] = time.monotonic() - start
    return result


def differing_bytes(a: Path, b: Path) -> int | None:
    x, y = a.read_bytes(), b.read_bytes()
    if len(x) != len(y):
        return None
    return sum(1 for i, j in zip(x, y) if i != j)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[500, 1000, 2000, 5000])
    ap.add_argument("--settings-at", type=int, default=2000, help="graph size for the settings table (0: skip)")
    ap.add_argument("--repeat", type=int, default=1, help="conversions per cell (the minimum is shown)")
    args = ap.parse_args(argv)
    gen = gen_large
    import onnx
    print(f"cores: {len(os.sched_getaffinity(0))}, {time.strftime('%Y-%m-%d %H:%M')}")
    with tempfile.TemporaryDirectory(prefix="mnnscope-bench-conv-") as tmp, RunnerClient() as client:
        tmp = Path(tmp)
        client.hello()
        print("\nconverter time by graph size (default settings):")
        print("| ONNX nodes | MNN ops | converter s | s per 1,000 nodes |")
        print("|---|---|---|---|")
        base = None
        for n in args.nodes:
            src = tmp / f"d{n}.onnx"
            onnx.save(gen.make_decoder(n), str(src))
            times = []
            for k in range(args.repeat):
                r = convert(client, src, tmp / f"d{n}-{k}.mnn", ConvertSettings())
                times.append(r["seconds"])
            ops = len(read_mnn(str(tmp / f"d{n}-0.mnn")).ops)
            t = min(times)
            base = base or (n, t)
            print(f"| {n:,} | {ops:,} | {t:.2f} | {1000 * t / n:.2f} |", flush=True)
        if args.settings_at:
            n = args.settings_at
            src = tmp / f"s{n}.onnx"
            onnx.save(gen.make_decoder(n), str(src))
            print(f"\nsettings at {n:,} nodes (same output: op list equal and only the UUID's bytes differ):")
            print("| settings | converter s | vs default | output bytes | bytes differing from default | same ops |")
            print("|---|---|---|---|---|---|")
            ref_path, ref_ops, ref_t = None, None, None
            for label, settings in VARIANTS:
                times = []
                for k in range(args.repeat):
                    dst = tmp / f"v{VARIANTS.index((label, settings))}-{k}.mnn"
                    times.append(convert(client, src, dst, settings)["seconds"])
                dst = tmp / f"v{VARIANTS.index((label, settings))}-0.mnn"
                ops = [(o.name, o.op_type) for o in read_mnn(str(dst)).ops]
                t = min(times)
                if ref_path is None:
                    ref_path, ref_ops, ref_t = dst, ops, t
                diff = differing_bytes(ref_path, dst)
                print(f"| {label} | {t:.2f} | {t / ref_t:.2f}x | {dst.stat().st_size:,} | "
                      f"{'size differs' if diff is None else diff} | {'yes' if ops == ref_ops else 'no'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
