"""Generation with and without the KV cache, on MNN and ONNX Runtime, side by side in one run.

    .venv/bin/python benchmarks/bench_generate.py [--steps 32] [--repeat 3]

The bundled MoE decoder (resources/samples/moe_llm*.onnx/.mnn, the same weights with and without past/present
inputs) generates --steps tokens from one prompt through the sample tokenizer, greedy, in one runner
process, through the service `mnnscope generate` uses. Per configuration: prefill (time to first token,
median over --repeat), decode ms per token (median of the per-token medians) and tokens/s, and whether the
tokens equal ONNX Runtime's without cache (they must). Without a cache each decode step feeds the whole
sequence again (and MNN resizes its session every step); with it, one token and the previous step's present
tensors (MNN still resizes: the past grows).
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from mnnscope.inspector.generate.service import GenerateOptions, run_generate
from mnnscope.inspector.process.client import RunnerClient

SAMPLES = Path(__file__).resolve().parents[1] / "resources" / "samples"
CONFIGS = [("ort", "moe_llm.onnx", "off"), ("ort", "moe_llm_kv.onnx", "on"),
           ("mnn", "moe_llm.mnn", "off"), ("mnn", "moe_llm_kv.mnn", "on")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--text", default="The model runs on the phone")
    args = ap.parse_args(argv)
    rows, baseline = [], None
    with tempfile.TemporaryDirectory() as tmp, RunnerClient() as client:
        from mnnscope.inspector.store.runs import RunStore
        store = RunStore(Path(tmp) / "runs.sqlite")
        for engine, model, kv in CONFIGS:
            runs = [run_generate(GenerateOptions(model=str(SAMPLES / model), tokenizer=str(SAMPLES / "tokenizer.json"),
                                                 text=args.text, steps=args.steps, kv=kv, engine=engine),
                                 client=client, store=store) for _ in range(args.repeat)]
            baseline = baseline or runs[0]["tokens"]
            rows.append((engine, model, kv, statistics.median(r["prefill_ms"] for r in runs),
                         statistics.median(r["decode_ms_per_token"] for r in runs),
                         statistics.median(r["tokens_per_s"] for r in runs),
                         all(r["tokens"] == baseline for r in runs)))
    print(f"{args.steps} tokens from {args.text!r}, median of {args.repeat} runs")
    print(f"{'engine':<6} {'model':<18} {'cache':<5} {'prefill ms':>10} {'decode ms/tok':>13} {'tok/s':>8}  "
          "same tokens")
    for engine, model, kv, pre, dec, tps, same in rows:
        print(f"{engine:<6} {model:<18} {kv:<5} {pre:>10.3f} {dec:>13.3f} {tps:>8.0f}  {same}")
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
