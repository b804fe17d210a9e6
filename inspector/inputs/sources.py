"""Where run inputs come from besides random data: .npy/.npz files, image files, text through a tokenizer.

Helpers of inspector/inputs.py, which documents the rules; kept apart so that each module holds one concern.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from mnnscope.inspector.errors import ModelError, UsageError

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff", ".ppm", ".pgm"}


def dim_key(dim, axis: int):
    """The binding key of a free dimension: its symbol, or (axis) for unnamed ones (MNN's -1)."""
    return dim if isinstance(dim, str) and dim else ("?", axis)


def is_free(dim) -> bool:
    return not isinstance(dim, int) or dim <= 0


def np_dtype(name: str) -> np.dtype:
    try:
        return np.dtype(name)
    except TypeError:
        raise ModelError(f"input dtype '{name}' cannot be fed from numpy")


def load_array(spec: dict, path: str, key: str | None = None) -> np.ndarray:
    p = Path(path)
    try:
        if p.suffix.lower() == ".npz":
            with np.load(p, allow_pickle=False) as z:
                names = list(z.keys())
                pick = key if key in names else (spec["name"] if spec["name"] in names else
                                                 (names[0] if len(names) == 1 else None))
                if pick is None:
                    raise ModelError(f"input '{spec['name']}': {p} holds {names}, none named '{spec['name']}'")
                arr = z[pick]
        else:
            arr = np.load(p, allow_pickle=False)
    except ModelError:
        raise
    except (OSError, ValueError) as e:
        # numpy's own words for a pickled or garbage file ("...load it unsafely using allow_pickle=True") advise
        # what we never do with a user's file (tryout 17)
        why = "it holds Python objects (pickled), which are never loaded" if "allow_pickle" in str(e) else str(e)
        raise ModelError(f"input '{spec['name']}': {p} is not a readable .npy/.npz file ({why}): save the array "
                         "with numpy.save")
    return cast_to(spec, arr, str(p))


def cast_to(spec: dict, arr: np.ndarray, source: str) -> np.ndarray:
    want = np_dtype(spec["dtype"])
    if arr.dtype == want:
        return arr
    same_kind = (arr.dtype.kind in "iub" and want.kind in "iub") or (arr.dtype.kind in "f" and want.kind in "f")
    if not same_kind:
        raise ModelError(f"input '{spec['name']}': {source} holds {arr.dtype}, the model expects {want}")
    out = arr.astype(want)
    if want.kind in "iu" and not np.array_equal(out.astype(arr.dtype), arr):
        raise ModelError(f"input '{spec['name']}': {source} has values that do not fit {want}")
    return out


def image_layout(shape: list) -> str:
    """NCHW or NHWC, read from a rank-4 input shape (channel axis of size 1, 3 or 4)."""
    if len(shape) == 4 and isinstance(shape[-1], int) and shape[-1] in (1, 3, 4) and not (
            isinstance(shape[1], int) and shape[1] in (1, 3, 4)):
        return "NHWC"
    return "NCHW"


def load_image(spec: dict, path: str, bindings: dict, *, mean=None, std=None, bgr: bool = False) -> np.ndarray:
    """An image file resized to the input's H×W (or its own size when those are free), pixels scaled to
    [0, 1], then (x - mean) / std per channel; laid out NCHW or NHWC as the input shape says."""
    from PIL import Image

    shape = spec["shape"]
    if shape is None or len(shape) not in (3, 4):
        raise ModelError(f"input '{spec['name']}' is not image-like (shape {shape}): an image needs a rank-3/4 input")
    shape4 = shape if len(shape) == 4 else [1] + list(shape)
    layout = image_layout(shape4)
    c_axis, h_axis, w_axis = (1, 2, 3) if layout == "NCHW" else (3, 1, 2)
    channels = shape4[c_axis] if not is_free(shape4[c_axis]) else 3
    try:
        with Image.open(path) as img:
            img = img.convert({1: "L", 3: "RGB", 4: "RGBA"}.get(channels, "RGB"))
            def size(axis: int, own: int) -> int:
                dim = shape4[axis]
                return int(dim) if not is_free(dim) else int(bindings.get(dim_key(dim, axis), own))

            width, height = size(w_axis, img.width), size(h_axis, img.height)
            if (img.width, img.height) != (width, height):
                img = img.resize((int(width), int(height)), Image.Resampling.BILINEAR)
            pixels = np.asarray(img)
    except (OSError, ValueError) as e:
        raise ModelError(f"input '{spec['name']}': {path} is not a readable image ({e})")
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    if bgr and pixels.shape[2] >= 3:
        pixels = pixels[:, :, [2, 1, 0] + list(range(3, pixels.shape[2]))]
    dtype = np_dtype(spec["dtype"])
    if dtype.kind in "iu":  # quantized image models take raw pixels
        data = pixels.astype(dtype)
    else:
        data = pixels.astype(np.float32) / 255.0
        m = np.asarray(mean if mean is not None else [0.0], np.float32)
        s = np.asarray(std if std is not None else [1.0], np.float32)
        if m.size not in (1, data.shape[2]) or s.size not in (1, data.shape[2]):
            raise UsageError(f"--mean/--std need 1 or {data.shape[2]} values for input '{spec['name']}'")
        data = ((data - m) / s).astype(dtype)
    data = data[None]  # NHWC
    if layout == "NCHW":
        data = data.transpose(0, 3, 1, 2)
    data = np.ascontiguousarray(data)
    batch = shape4[0] if not is_free(shape4[0]) else 1
    if batch > 1:
        data = np.repeat(data, batch, axis=0)
    return data if len(shape) == 4 else data[0]


TEXT_ROLES = {
    "input_ids": ("input_ids", "ids", "tokens", "token_ids"),
    "attention_mask": ("attention_mask",),
    "position_ids": ("position_ids",),
    "token_type_ids": ("token_type_ids", "segment_ids"),
}


def text_role(spec: dict) -> str | None:
    lname = spec["name"].lower()
    for role, names in TEXT_ROLES.items():
        if lname in names or any(lname.endswith(n) for n in names[:1]):
            return role
    return None


def encode_text(text: str, tokenizer: str) -> dict[str, list[int]]:
    """Token ids, attention mask and type ids of one text (no padding, no truncation)."""
    return _encode(text, tokenizer)[0]


def encode_prompt(text: str, tokenizer: str) -> tuple[list[int], list[str]]:
    """A prompt's token ids, and the characters of it (besides white space) that no token of `tokenizer` covers, each
    once in order: a tokenizer without an unknown token drops them (the bundled sample's 96 tokens dropped ':', '你'
    and '🙂' from a prompt, and the Text dock echoed it as typed: helper 115). One load and one encoding for both."""
    ids, tok, enc = _encode(text, tokenizer)
    unk = tok.token_to_id(getattr(tok.model, "unk_token", None) or "[UNK]")
    covered = [False] * len(text)
    for tid, (a, b) in zip(enc.ids, enc.offsets):
        if unk is not None and tid == unk:
            continue  # mapped to the unknown token: not this character's own
        for i in range(a, min(b, len(text))):
            covered[i] = True
    return ids["input_ids"], list(dict.fromkeys(c for c, ok in zip(text, covered) if not ok and not c.isspace()))


def _encode(text: str, tokenizer: str):
    """(encode_text's dict, the loaded tokenizer, its Encoding) of one text."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise UsageError("--text needs the 'tokenizers' package (pip install tokenizers)")
    if not os.path.isfile(tokenizer):
        raise UsageError(f"--tokenizer: no such file: {tokenizer}")
    try:
        tok = Tokenizer.from_file(tokenizer)
    except Exception as e:
        raise ModelError(f"{tokenizer}: not a readable tokenizer.json ({str(e).splitlines()[0][:200]})")
    tok.no_padding()  # some tokenizer.json files pad every text to a fixed length (e.g. 128)
    tok.no_truncation()
    enc = tok.encode(text)
    if not enc.ids:
        raise ModelError(f"the text produced no tokens with {tokenizer}")
    return ({"input_ids": list(enc.ids), "attention_mask": list(enc.attention_mask),
             "token_type_ids": list(enc.type_ids), "position_ids": list(range(len(enc.ids)))}, tok, enc)


def tokenizer_beside(model) -> str | None:
    """The tokenizer.json that sits beside a model, in its own folder and nowhere else: `<stem>.tokenizer.json`
    (moe_llm.onnx: moe_llm.tokenizer.json), else `tokenizer.json`; None when neither is there (or no model). A model
    folder (an MNN-LLM export) is looked in itself. Only these two names are checked: nothing is searched."""
    if not model:
        return None
    p = Path(model)
    folder, stem = (p, None) if p.is_dir() else (p.parent, p.stem)
    for name in ([f"{stem}.tokenizer.json"] if stem else []) + ["tokenizer.json"]:
        if (folder / name).is_file():
            return os.path.abspath(folder / name)
    return None


def text_array(spec: dict, values: list[int], shape: list[int]) -> np.ndarray:
    n = shape[-1]
    row = np.zeros(n, np.int64)
    row[:min(n, len(values))] = values[:n]
    return np.broadcast_to(row, shape).astype(np_dtype(spec["dtype"]))
