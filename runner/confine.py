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


def external_locations(model) -> list[tuple[str, str]]:
    """(tensor, location) of every tensor stored outside the file, subgraphs and attribute tensors included."""
    from onnx import TensorProto
    found = []

    def tensors(g):
        yield from g.initializer
        yield from (s.values for s in g.sparse_initializer)
        for node in g.node:
            for a in node.attribute:
                if a.HasField("t"):
                    yield a.t
                yield from a.tensors
                for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    yield from tensors(sub)

    for t in tensors(model.graph):
        if t.data_location == TensorProto.EXTERNAL:
            found.append((t.name, next((e.value for e in t.external_data if e.key == "location"), "")))
    return found


def outside(folder: str, location: str) -> bool:
    """Whether `location` (as a model names it) leaves `folder`: empty, absolute, or resolving (symlinks
    followed by path) anywhere but strictly inside it."""
    if not location or os.path.isabs(location) or location.startswith(("\\", "/")) or location[1:2] == ":":
        return True
    root = os.path.realpath(folder)
    target = os.path.realpath(os.path.join(root, location))
    return os.path.commonpath([root, target]) != root or target == root


def check_onnx(path: str, model=None) -> None:
    """Raise BAD_MODEL when an .onnx names external data outside its folder; a file that does not parse is left to
    the caller's own reader (which reports it in its words)."""
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
