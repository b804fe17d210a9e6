"""Regenerate the sample tokenizer: a BPE (Metaspace pre-tokenizer) trained on tokenizer_corpus.txt beside it.

Run: .venv/bin/python resources/samples/make_tokenizer.py

No downloads: the `tokenizers` package trains on the text in this folder. The vocabulary holds 96
entries, the rows of the moe_llm samples' embedding table, so every id it produces is one the models
accept. Training is deterministic: tests/test_generate.py trains afresh and checks the vocabulary and the ids
of the whole corpus against the committed file (its JSON layout varies between `tokenizers` versions).
"""
from __future__ import annotations

import argparse
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
VOCAB_SIZE = 96  # moe_llm's embedding rows
SPECIAL = ["<unk>", "<eos>"]


def build_tokenizer(corpus: pathlib.Path = HERE / "tokenizer_corpus.txt"):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=SPECIAL, show_progress=False)
    lines = [line.strip() for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    tok.train_from_iterator(lines, trainer=trainer)
    return tok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Train the sample tokenizer.json on tokenizer_corpus.txt.")
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "tokenizer.json")
    out = parser.parse_args(argv).out
    tok = build_tokenizer()
    if tok.get_vocab_size() > VOCAB_SIZE:
        print(f"vocabulary of {tok.get_vocab_size()} entries exceeds {VOCAB_SIZE}", file=sys.stderr)
        return 1
    tok.save(str(out), pretty=True)
    print(f"{out}: {tok.get_vocab_size()} tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
