"""Reading one .mnn weight's values on request (Properties statistics), from the location read_mnn recorded.

Pure Python: only the weight's own bytes are read, each location checked against the file size."""
from __future__ import annotations

import math
import os

import numpy as np

from mnnscope.inspector.errors import ModelError
from mnnscope.inspector.formats.mnn_flatbuffer import MnnFormatError
from mnnscope.inspector.formats.mnn_params import ITEMSIZE


def read_weight(path, offset: int, count: int, dtype: str) -> np.ndarray:
    """``count`` values of ``dtype`` at byte ``offset`` of the file; only those bytes are read.
    MnnFormatError (one line naming the file) when they do not lie inside the file."""
    path = os.fspath(path)
    size = ITEMSIZE.get(dtype)
    if size is None:
        raise MnnFormatError(f"{path}: cannot read {dtype} weights")
    if offset < 0 or count < 0:
        raise MnnFormatError(f"{path}: bad weight location (offset {offset}, {count} values)")
    try:
        with open(path, "rb") as f:
            total = os.fstat(f.fileno()).st_size
            if offset + count * size > total:
                raise MnnFormatError(f"{path}: weight data at offset {offset} ({count * size} bytes) runs past the "
                                     f"end of the file ({total} bytes)")
            f.seek(offset)
            raw = f.read(count * size)
    except OSError as exc:
        raise MnnFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) != count * size:  # the file shrank while being read
        raise MnnFormatError(f"{path}: weight data at offset {offset} runs past the end of the file")
    return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"))


def weight_array(path, weight: dict) -> tuple[np.ndarray | None, str | None]:
    """(values, None) of one weight entry of ``read_mnn(path)``, shaped as recorded when the sizes
    agree; (None, why) when its values are not stored as plain numbers (quantized) or its external
    weight file is missing or too short. A truncated .mnn raises MnnFormatError."""
    data = weight.get("data") or {"reason": "no location recorded"}
    if "reason" in data:
        return None, data["reason"]
    path = os.fspath(path)
    if data["file"] == "weight":
        wpath = path + ".weight"
        if not os.path.isfile(wpath):
            return None, f"external weight file {os.path.basename(wpath)} not found"
        try:
            arr = read_weight(wpath, data["offset"], data["count"], data["dtype"])
        except MnnFormatError as exc:
            return None, str(exc)
    else:
        arr = read_weight(path, data["offset"], data["count"], data["dtype"])
    shape = weight.get("shape") or []
    if shape and math.prod(shape) == arr.size and min(shape) >= 0:
        arr = arr.reshape(shape)
    return arr, None


def weight_stats(path, keys: list[str]) -> dict:
    """Statistics of .mnn op weights named "<op id>:<weight name>" as the viewer names them, read straight
    from the file (no MNN). Weights whose values are not plain numbers (quantized) get {"elements", "note":
    why} instead of statistics."""
    from mnnscope.inspector.formats.mnn import load_mnn
    from mnnscope.inspector.formats.stats import array_stats
    mg = load_mnn(path)
    located: dict = {}
    for g in [mg, *(sub for _, _, sub in mg.subgraphs())]:
        for nid, data in g.g.nodes(data=True):
            for w in data["attrs"].get("weights") or []:
                located[f"{nid}:{w['name']}"] = w
    out = {}
    for key in keys:
        w = located.get(key)
        if w is None:
            raise ModelError(f"{path}: no op weight named '{key}'")
        try:
            arr, why = weight_array(path, w)
        except MnnFormatError as e:
            raise ModelError(f"{e} (weight '{key}')")
        out[key] = array_stats(arr) if arr is not None else {"elements": w.get("elements", 0), "note": why}
    return out
