"""Build the MNN-LLM export fixtures in tests/data/llm/ (dev-only; the tests never run this).

Tiny randomly initialised HuggingFace decoders (a dense Qwen2 and a Qwen3-MoE, hidden 64, 2 layers), a
byte-level BPE tokenizer trained here on resources/samples/tokenizer_corpus.txt (ASCII only, no full byte
alphabet: every token decodes to valid UTF-8, so MNN.llm's `response()` never meets a partial character),
each exported by llmexport at 16, 8 and 4 bits (4 bits with blocks 64 and 32), offline.

llmexport's traps (../shared/MNN_NOTES.md): its console script fails (`No module named 'utils'`), so it runs
as `python <site-packages>/llmexport/llmexport.py` (its own folder first on sys.path); it converts through
`MNN.tools.mnnconvert` (the telemetry wrapper) unless `--mnnconvert` names an existing executable, which it
runs through a shell: this script writes one, a few lines calling `_tools.mnnconvert(sys.argv)`. MNN.tools is
never imported.

Dependencies: the optional group `llm-fixtures` in pyproject.toml, in a venv of its own (torch is big):

    python3 -m venv /tmp/llmvenv
    /tmp/llmvenv/bin/pip install torch==2.13.0          # the CPU wheel on this machine's disk
    /tmp/llmvenv/bin/pip install transformers llmexport==0.0.5 MNN==3.6.1 tokenizers
    /tmp/llmvenv/bin/python scripts/make_llm_exports.py --out tests/data/llm

What it writes: tests/data/llm/<model>_<bits>[_b<block>]/ with config.json, llm_config.json, llm.mnn,
llm.mnn.weight, tokenizer.mtok (and whatever else llmexport writes but the ONNX intermediates), for
<model> in qwen2 (dense) and qwen3moe. Seeds are fixed; a rerun gives the same weights.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORPUS = ROOT / "resources" / "samples" / "tokenizer_corpus.txt"
VOCAB = 256
# (bits, block): block 0 = one scale per output channel (llmexport's 0), ignored at 16 bits.
VARIANTS = [(16, 0), (8, 0), (4, 64), (4, 32)]
MODELS = ("qwen2", "qwen3moe")
KEEP = (".json", ".mnn", ".weight", ".mtok", ".bin", ".txt")
DROP = ("llm.mnn.json",)  # a JSON dump of llm.mnn (76 kB each): the tool reads llm.mnn itself


def variant_name(model: str, bits: int, block: int) -> str:
    return f"{model}_{bits}" + (f"_b{block}" if bits == 4 else "")


def build_tokenizer(dst: pathlib.Path) -> int:
    """A byte-level BPE trained on the sample corpus, saved as a HuggingFace tokenizer folder; returns its size."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  show_progress=False)
    lines = [ln.strip() for ln in CORPUS.read_text(encoding="ascii").splitlines() if ln.strip()]
    tok.train_from_iterator(lines, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None)
    # A plain template: the prompt as it is (the exports' own chat template is what a user would ship).
    fast.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    fast.save_pretrained(str(dst))
    return tok.get_vocab_size()


def build_model(kind: str, vocab: int, dst: pathlib.Path) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0 if kind == "qwen2" else 1)
    common = dict(vocab_size=vocab, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6, tie_word_embeddings=False,
                  bos_token_id=None, eos_token_id=vocab - 1, torch_dtype="float32")
    if kind == "qwen2":
        config = AutoConfig.for_model("qwen2", intermediate_size=128, **common)
    else:
        config = AutoConfig.for_model("qwen3_moe", intermediate_size=128, moe_intermediate_size=32, num_experts=4,
                                      num_experts_per_tok=2, decoder_sparse_step=1, mlp_only_layers=[],
                                      head_dim=16, norm_topk_prob=True, **common)
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():  # random init std 0.02 gives near-uniform logits: widen so argmax is decisive
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.25)
    model.eval()
    model.save_pretrained(str(dst), safe_serialization=True)


def write_converter(dst: pathlib.Path) -> pathlib.Path:
    """The `--mnnconvert` executable llmexport runs through a shell: MNN's converter without MNN.tools."""
    script = dst / "mnnconvert.py"
    script.write_text(f"#!{sys.executable}\nimport sys\nimport _tools\n"
                      "sys.exit(_tools.mnnconvert(sys.argv) or 0)\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def export(hf: pathlib.Path, out: pathlib.Path, bits: int, block: int, converter: pathlib.Path, work: pathlib.Path):
    import importlib.util
    pkg = pathlib.Path(importlib.util.find_spec("llmexport").origin).parent  # importing it fails ('utils')
    tmp = work / f"export_{out.name}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    cmd = [sys.executable, str(pkg / "llmexport.py"), "--path", str(hf), "--export", "mnn", "--dst_path", str(tmp),
           "--quant_bit", str(bits), "--quant_block", str(block), "--mnnconvert", str(converter)]
    env = dict(os.environ, PYTHONPATH=str(pkg), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    print(" ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=str(work), env=env)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for f in sorted(tmp.iterdir()):
        if f.is_file() and f.name.endswith(KEEP) and f.name not in DROP:
            shutil.copy2(f, out / f.name)
    args = json.loads((out / "export_args.json").read_text())
    for key in ("path", "tokenizer_path", "dst_path", "mnnconvert"):  # this machine's temporary paths
        if args.get(key):
            args[key] = pathlib.Path(args[key]).name
    (out / "export_args.json").write_text(json.dumps(args, indent=4) + "\n")
    if not (out / "llm.mnn").is_file():
        raise SystemExit(f"{out}: llmexport wrote no llm.mnn (see {work}/.export.log)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "tests" / "data" / "llm")
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args(argv)
    work = pathlib.Path(tempfile.mkdtemp(prefix="llm_exports_"))
    converter = write_converter(work)
    for kind in args.models.split(","):
        hf = work / f"hf_{kind}"
        vocab = build_tokenizer(hf)
        build_model(kind, vocab, hf)
        for bits, block in VARIANTS:
            export(hf, args.out / variant_name(kind, bits, block), bits, block, converter, work)
    total = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file())
    print(f"{args.out}: {total / 1e6:.2f} MB in all (work files in {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
