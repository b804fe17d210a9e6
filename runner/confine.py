"""External data stays inside the model's folder: checked before the converter or ONNX Runtime opens a model.

ONNX Runtime refuses external data outside the model's folder itself (1.17+: absolute paths, `..`, symlinks
resolved); MNN's converter joins the folder and the location and opens whatever that names. This check runs in
the runner before either is handed an .onnx, so a model that names `../secret.bin`, `/etc/passwd` or a symlink
out of its folder is refused by what it says, and the file is never opened (only the locations are read, with
the model parsed without its external data; a symlink is resolved by path, not opened).
"""
from __future__ import annotations

import os

from mnnscope.runner import protocol
from mnnscope.runner.protocol import RunnerError


def _tensors(g):
    """Every tensor of a graph: initializers, sparse ones' values, attribute tensors, subgraphs' too."""
    yield from g.initializer
    yield from (s.values for s in g.sparse_initializer)
    for node in g.node:
        for a in node.attribute:
            if a.HasField("t"):
                yield a.t
            yield from a.tensors
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                yield from _tensors(sub)


def external_locations(model) -> list[tuple[str, str]]:
    """(tensor, location) of every tensor stored outside the file, subgraphs and attribute tensors included."""
    from onnx import TensorProto
    found = []
    for t in _tensors(model.graph):
        if t.data_location == TensorProto.EXTERNAL:
            found.append((t.name, next((e.value for e in t.external_data if e.key == "location"), "")))
    return found


def _stored_bytes(t) -> int | None:
    """Bytes a tensor takes in its external file: its `length` entry, else its dims times its element size."""
    info = {e.key: e.value for e in t.external_data}
    try:
        if "length" in info:
            return int(info["length"])
        import numpy as np
        from onnx import helper
        n = 1
        for d in t.dims:
            n *= int(d)
        return n * np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
    except (ValueError, TypeError, KeyError):
        return None


def short_external_data(path: str, model) -> list[dict]:
    """External data files a model names that are missing, or end before a tensor stored in them (a truncated
    copy: ONNX Runtime then refuses the model in its own words, MNN's converter reads garbage and prints success):
    per file, {file, missing, size, tensor (the first that lies past the end), offset, end, tensors (how many)}.
    Locations outside the model's folder are check_onnx's."""
    folder = os.path.dirname(os.path.abspath(str(path)))
    out: dict[str, dict] = {}
    from onnx import TensorProto
    for t in _tensors(model.graph):
        if t.data_location != TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in t.external_data}
        location = info.get("location", "")
        if outside(folder, location):
            continue
        target = os.path.join(folder, location)
        size = os.path.getsize(target) if os.path.isfile(target) else None
        try:
            offset = int(info.get("offset", 0))
        except ValueError:
            offset = 0
        nbytes = _stored_bytes(t)
        end = offset + (nbytes or 0)
        if size is not None and end <= size:
            continue
        entry = out.setdefault(location, {"file": location, "missing": size is None, "size": size, "tensor": t.name,
                                          "offset": offset, "end": end, "tensors": 0})
        entry["tensors"] += 1
    return list(out.values())


def short_message(entry: dict) -> str:
    """One missing or truncated external data file in words, naming the first tensor it fails."""
    more = f" and {entry['tensors'] - 1} more" if entry["tensors"] > 1 else ""
    if entry["missing"]:
        return f"external data file '{entry['file']}' is missing (weights of {entry['tensor']}{more})"
    more = f" ({entry['tensors'] - 1} more tensors lie past its end)" if entry["tensors"] > 1 else ""
    return (f"external data file '{entry['file']}' is truncated: {entry['size']:,} bytes, but tensor "
            f"'{entry['tensor']}' is stored at bytes {entry['offset']:,}-{entry['end']:,}{more}")


def outside(folder: str, location: str) -> bool:
    """Whether `location` (as a model names it) leaves `folder`: empty, absolute, or resolving (symlinks
    followed by path) anywhere but strictly inside it."""
    if not location or os.path.isabs(location) or location.startswith(("\\", "/")) or location[1:2] == ":":
        return True
    root = os.path.realpath(folder)
    target = os.path.realpath(os.path.join(root, location))
    return os.path.commonpath([root, target]) != root or target == root


def check_onnx(path: str, model=None, whole: bool = False) -> None:
    """Raise BAD_MODEL when an .onnx names external data outside its folder, and (`whole`: before running it) when
    an external data file is missing or truncated; a file that does not parse is left to the caller's own reader
    (which reports it in its words)."""
    if not str(path).lower().endswith(".onnx") and model is None:
        return
    if model is None:
        import onnx
        try:
            model = onnx.load(str(path), load_external_data=False)
        except Exception:
            return
    folder = os.path.dirname(os.path.abspath(str(path)))
    for tensor, location in external_locations(model):
        if outside(folder, location):
            raise RunnerError(protocol.BAD_MODEL,
                              f"{path}: tensor '{tensor}' points its external data outside the model's folder "
                              f"('{location}'); refused without opening it")
    if whole:
        for entry in short_external_data(path, model):
            step = ("put it beside the model" if entry["missing"] else "copy it again in full") + \
                " (or re-export with the weights inside the .onnx)"
            raise RunnerError(protocol.BAD_MODEL, f"{path}: {short_message(entry)}: {step}")
