"""The input options every run command shares (profile, compare): flags, checks, and the make_inputs spec."""
from __future__ import annotations

import os
import sys

from mnnscope.inspector.errors import UsageError
from mnnscope.inspector.inputs.data import parse_input_option, parse_shape_option
from mnnscope.inspector.inputs.sources import tokenizer_beside


def add_input_arguments(p) -> None:
    p.add_argument("--input", action="append", metavar="NAME=FILE",
                   help="input data: .npy, .npz or an image file; FILE.npz alone feeds inputs by array name")
    p.add_argument("--shape", action="append", metavar="NAME=DIMS", help="dims of a dynamic input, e.g. input_ids=1,32")
    p.add_argument("--text", help="text for the token inputs (tokenized with --tokenizer, else the tokenizer.json "
                   "beside the model)")
    p.add_argument("--tokenizer", metavar="FILE", help="a tokenizer.json (HuggingFace tokenizers)")
    p.add_argument("--image", metavar="FILE", help="an image for the (first) image-like input")
    p.add_argument("--mean", help="per-channel mean on the [0,1] scale for images, e.g. 0.485,0.456,0.406")
    p.add_argument("--std", help="per-channel std on the [0,1] scale for images, e.g. 0.229,0.224,0.225")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")


def add_python_argument(p, help_text: str = "the runner's Python (e.g. one with your own MNN build and GPU "
                                            "backends)") -> None:
    # None: RunnerClient resolves it (process.child.runner_python: $MNNSCOPE_RUNNER_PYTHON, else ours).
    p.add_argument("--python", metavar="PATH", default=None,
                   help=help_text + "; default: $MNNSCOPE_RUNNER_PYTHON, else this Python")


def floats(value: str | None, flag: str) -> list[float] | None:
    if value is None:
        return None
    try:
        return [float(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"{flag} '{value}': expected numbers separated by commas")


def tokenizer_or_beside(given: str | None, model, missing: str, said: str = "") -> str:
    """`given` (--tokenizer), else the tokenizer.json beside `model` (inputs.sources.tokenizer_beside), named on stderr
    after `said`; UsageError(`missing`) when there is neither. profile/compare/view's --text and generate share it."""
    if given:
        return given
    beside = tokenizer_beside(model)
    if not beside:
        raise UsageError(missing)
    print(f"{said}tokenized with {beside}, beside the model (--tokenizer FILE for another)", file=sys.stderr, flush=True)
    return beside


def input_spec(args) -> dict:
    """Checked keyword arguments for inputs.make_inputs (seed, shapes, files, text, tokenizer, image)."""
    tokenizer = args.tokenizer
    model = getattr(args, "model", None)
    if args.text is not None and not tokenizer and not (model and not os.path.exists(model)):
        # the tokenizer.json beside the model, as the Inputs dock takes it (a new user's Text source asked for one
        # with moe_llm's tokenizer.json in its folder)
        # (not for a model that is not there: its own error comes first, without a line on its neighbour)
        tokenizer = tokenizer_or_beside(
            None, model, "--text needs --tokenizer FILE (no tokenizer.json beside the model)", "--text: ")
    if args.tokenizer and args.text is None:
        raise UsageError("--tokenizer needs --text")
    if args.tokenizer and not os.path.isfile(args.tokenizer):
        raise UsageError(f"--tokenizer: no such file: {args.tokenizer}")
    if args.image and not os.path.isfile(args.image):
        raise UsageError(f"--image: no such file: {args.image}")
    image = None
    if args.image or args.mean or args.std:
        image = {"path": args.image, "mean": floats(args.mean, "--mean"), "std": floats(args.std, "--std")}
    return {"seed": args.seed, "shapes": parse_shape_option(args.shape), "files": parse_input_option(args.input),
            "text": args.text, "tokenizer": tokenizer, "image": image}
