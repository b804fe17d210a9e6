"""Inputs on a scale the model does not expect, found where the model scales them itself.

Many exported vision models normalise their input inside the graph (x * c + d per channel, from the training
pipeline's mean and std) and expect the raw range around it: captcha-whisperer's CRNN multiplies its BGR input by
0.0142 and adds -3.80, so it expects 0..255 values. Fed an image read on the 0..1 scale (the Inputs dock's default)
or the random [-1, 1) data of a comparison, the tensor its first convolution reads is almost constant (-3.80 +-
0.004): every mode is then measured on data the model never sees, and full int8 in particular has nothing left to
quantize (a new user's int8 calibrated on their own captchas read worst rel L2 0.497, its first conv adding 0.586
on an input without error, and the advice was "give it more samples"; read on the 0..255 scale, the same
calibration matched at 0.0407).

The scaling is measured, not parsed: the chain of elementwise ops with constant operands (or a BatchNormalization of
constants) from a model input to the first op of another kind, through Transposes (an NHWC input moved to NCHW before
or after its scaling) and float Casts on the way, and the input (its axes moved as the Transposes move them) and the
tensor at its end from the reference run, fitted per channel as t = c * x + d. A chain whose output does not fit
exactly is not a scaling this module speaks of.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

ELEMENTWISE = {"Mul", "Div", "Add", "Sub"}
FLOAT_TYPES = {1, 10, 11, 16}  # TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16
# the model's own scaling maps the inputs it expects to about mean 0, std 1: data that reaches its first layer with a
# spread this many times narrower (or wider) than that is on another scale
TOO_NARROW, TOO_WIDE = 0.05, 20.0
SCALE_255 = 1.0 / 255.0


def _readers(graph) -> dict[str, list[str]]:
    """{tensor: the ids of the nodes that read it} (a graph input has no producer, so no edge says who reads it)."""
    readers: dict[str, list[str]] = {}
    for nid, d in graph.g.nodes(data=True):
        for t in d["inputs"]:
            readers.setdefault(t, []).append(nid)
    return readers


class Chain(NamedTuple):
    """A model's own scaling of an input: the ops (by name) from the input to `tensor`, and `perm`, the axes of the
    input in the order `tensor` has them (Transposes on the way), None where no op moves them."""

    ops: list[str]
    tensor: str
    perm: list[int] | None = None


def _is_float_cast(d: dict) -> bool:
    return d["op_type"] == "Cast" and d["attrs"].get("to") in FLOAT_TYPES


def scaling_chain(graph, name: str, maps: tuple[dict, dict] | None = None) -> Chain | None:
    """The ops that scale and shift input `name` with constants (Mul, Div, Add, Sub with a constant operand, a
    BatchNormalization with constant statistics; Transposes, float Casts and Identities on the way, which move or
    keep values), up to the first op of another kind, and the tensor they end at; None when the input's one reader is
    no such op, or the chain only scales or only shifts (or neither). `maps`: (graph.producers(), _readers(graph))
    where the caller has them."""
    producer, readers = maps or (graph.producers(), _readers(graph))

    def constant(t: str) -> bool:
        info = graph.tensors.get(t)
        if info is not None and info.is_initializer:
            return True
        p = producer.get(t)
        return p is not None and graph.g.nodes[p]["op_type"] == "Constant"

    ops, kinds, at, perm = [], set(), name, None
    while True:
        nids = readers.get(at) or []
        if len(nids) != 1:
            break
        d = graph.g.nodes[nids[0]]
        op, ins = d["op_type"], d["inputs"]
        if len(d["outputs"]) != 1 or not ins or (ins[0] != at and op not in ("Mul", "Add")):
            break  # c / x or c - x is not a scaling of x; an op must read x as its data
        others = [t for t in ins if t != at]
        if op in ELEMENTWISE:
            if len(ins) != 2 or len(others) != 1 or not constant(others[0]):
                break
            kinds.add("scale" if op in ("Mul", "Div") else "shift")
        elif op == "BatchNormalization":
            if len(ins) != 5 or not all(constant(t) for t in ins[1:]):
                break
            kinds |= {"scale", "shift"}
        elif op == "Transpose" and len(ins) == 1:
            p = d["attrs"].get("perm")
            info = graph.tensors.get(name)
            rank = len(perm) if perm is not None else len(info.shape or []) if info is not None else 0
            p = list(p) if p is not None else list(range(rank))[::-1]  # no perm: the axes reversed
            if not p:
                break
            perm = [(perm or list(range(len(p))))[i] for i in p]
        elif not (op == "Identity" or _is_float_cast(d)) or len(ins) != 1:
            break
        ops.append(d["name"] or nids[0])
        at = d["outputs"][0]
    # a normalisation both scales and shifts (mean and std): a Mul alone (a transformer's embeddings times sqrt(d)) is
    # no statement of the range the model expects
    return Chain(ops, at, perm) if kinds == {"scale", "shift"} else None


def image_like(shape) -> bool:
    """An image batch: rank 4, 1, 3 or 4 channels first or last, the other two sizes 8 or more. Only such inputs are
    read for a scaling: a float attention mask [B, 1, 1, S] times -10000 plus a constant is no normalisation, and its
    0/1 (or random) values would read as 'far wider than the model expects'."""
    if len(shape) != 4:
        return False
    if shape[1] in (1, 3, 4) and min(shape[2], shape[3]) >= 8:
        return True
    return shape[3] in (1, 3, 4) and min(shape[1], shape[2]) >= 8


def _channels(a: np.ndarray, axis: int | None) -> np.ndarray:
    """`a` as one row per channel along `axis` (None: one row of everything), in float64."""
    if axis is None:
        return a.reshape(1, -1).astype(np.float64)
    return np.moveaxis(a, axis, 0).reshape(a.shape[axis], -1).astype(np.float64)


def _fit(x: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Per channel c, d with t = c * x + d exactly, and x and t as rows per channel (_channels): channels on axis 1
    (NCHW) where the input has 3 or more axes, else on the last (NHWC: an image model exported with its channels last
    scales them there), else one channel of everything; None where none fits."""
    if x.shape != t.shape or x.size == 0:
        return None
    for axis in ([1, x.ndim - 1] if x.ndim >= 3 else []) + [None]:
        xs, ts = _channels(x, axis), _channels(t, axis)
        xm, tm = xs.mean(axis=1), ts.mean(axis=1)
        var = ((xs - xm[:, None]) ** 2).mean(axis=1)
        if not np.all(var > 0) or not np.isfinite(ts).all():
            return None
        c = ((xs - xm[:, None]) * (ts - tm[:, None])).mean(axis=1) / var
        d = tm - c * xm
        resid = np.abs(ts - (c[:, None] * xs + d[:, None])).max()
        if resid <= 1e-4 * max(1.0, float(np.abs(ts).max())) and np.all(c != 0):
            return c, d, xs, ts
    return None


def _list(v: np.ndarray, fmt: str = "{:.3g}") -> str:
    return ", ".join(fmt.format(float(a)) for a in v)


def input_scale_notes(graph, inputs: dict[str, np.ndarray], reference: dict[str, np.ndarray] | None = None,
                      load=None, image_inputs: set | None = None) -> list[dict]:
    """For every input the model scales itself whose data reaches the end of that scaling far narrower or wider than
    mean 0, std 1: {input, ops, tensor, reader, scale, shift, fed_mean, fed_std, reaches_std, expects_centre,
    expects_spread, image_0_255, text}. `inputs`: the arrays fed; `load(tensor)`: the reference run's value of a
    tensor (None where it has none). `image_inputs`: inputs made from an image file (read on the 0..1 scale unless
    its std says otherwise): for those the note says how to read it on the 0..255 scale."""
    out = []
    maps = graph.producers(), _readers(graph)
    for name in graph.inputs:
        x = inputs.get(name)
        if x is None or np.asarray(x).dtype.kind != "f" or not image_like(np.shape(x)):
            continue
        chain = scaling_chain(graph, name, maps)
        if chain is None:
            continue
        ops, tensor, perm = chain
        t = load(tensor) if load is not None else (reference or {}).get(tensor)
        if t is None:
            continue
        x, t = np.asarray(x), np.asarray(t)
        if perm is not None:
            if len(perm) != x.ndim:
                continue
            x = x.transpose(perm)  # in the layout the scaling sees (an NHWC input transposed first)
        fit = _fit(x, t)
        if fit is None:
            continue
        c, d, xs, ts = fit
        reach = ts.std(axis=1)
        spread = float(reach.max())
        if TOO_NARROW <= spread <= TOO_WIDE:
            continue
        centre, width = -d / c, 1.0 / np.abs(c)
        fed_mean, fed_std = xs.mean(axis=1), xs.std(axis=1)
        lo, hi = float(x.min()), float(x.max())
        image = name in (image_inputs or set())
        # an image read on the 0..1 scale where the model's scaling centres on 0..255 values
        as_255 = bool(image and hi <= 1.0 + 1e-6 and lo >= -1e-6 and np.all((centre > 1.0) & (centre < 400.0))
                      and np.all((width > 8.0) & (width < 255.0)))
        reader = ", ".join(dict.fromkeys(graph.g.nodes[nid]["name"] or nid for nid in maps[1].get(tensor) or [])) \
            or tensor
        reaches = (f"almost constant (std {spread:.2g})" if spread < TOO_NARROW else
                   f"{spread:.3g} times wider than that")
        text = (f"{name} is not on the scale the model expects: the model scales it itself ({', '.join(ops)}: "
                f"x \u00d7 {_list(c)} + {_list(d)}), which gives mean 0, std 1 for values around "
                f"{_list(centre)} (\u00b1 {_list(width)}); the data fed spans {lo:.3g}..{hi:.3g} and reaches {reader} "
                f"{reaches}. Every mode is measured on inputs the model never sees")
        if as_255:
            text += (f": read the image on the 0..255 scale (std {SCALE_255:.5f}, that is 1/255, in the Inputs dock's "
                     "Image row, and in the Convert dock's Image std for int8 calibration; CLI: --std "
                     f"{SCALE_255:.5f},{SCALE_255:.5f},{SCALE_255:.5f})")
        elif image:
            text += (": set the image's mean and std (Inputs dock, and the Convert dock's for int8 calibration) so its "
                     "values come to that range")
        else:
            text += ": feed real inputs at that scale (Inputs dock \u203a File or Image; CLI: --input)"
        out.append({"input": name, "ops": ops, "tensor": tensor, "reader": reader, "scale": c.tolist(),
                    "shift": d.tolist(), "fed_mean": fed_mean.tolist(), "fed_std": fed_std.tolist(),
                    "reaches_std": reach.tolist(), "expects_centre": centre.tolist(), "expects_spread": width.tolist(),
                    "image_0_255": as_255, "text": text})
    return out
