"""Decoding the parameter table of one .mnn op into attributes and located (never decoded) weights.

Field indexes and enums follow alibaba/MNN ``schema/default/*.fbs`` (MNN 3.6.1), as tabled in
mnn_schema.py; the tables themselves are read through mnn_fbtable's bounds-checked Table.
"""
from __future__ import annotations

import struct

from mnnscope.inspector.formats.mnn_fbtable import Table
from mnnscope.inspector.formats.mnn_schema import (
    _AVG_COUNT, _BINARY, _BLOB_VECTORS, _BLOB_WEIGHTS, _CONV3D_COMMON, _DATA_FORMATS, _DATA_TYPES,
    _FLOAT_WEIGHTS, _IDST_KINDS, _PAD_MODE, _POOL_TYPES, _QUANTIZE_ALGO, _SIMPLE_PARAMS)


def enum_name(names: dict | tuple, value: int) -> str:
    """Enum name of ``value``; unknown values read as UNKNOWN_<n> so newer files still open."""
    if isinstance(names, dict):
        name = names.get(value)
    else:
        name = names[value] if 0 <= value < len(names) else None
    return name if name else f"UNKNOWN_{value}"


def _dtype(value: int) -> str:
    return enum_name(_DATA_TYPES, value)


def _simple_attrs(t: Table, spec) -> dict:
    """Decode the fields listed as (key, field index, kind, default), as in _SIMPLE_PARAMS."""
    attrs = {}
    for key, index, kind, default in spec:
        if kind == "ints":
            if t.has(index):
                attrs[key] = t.ints(index)
        elif kind == "floats":
            if t.has(index):
                attrs[key] = t.floats(index)
        elif kind == "str":
            value = t.string(index)
            if value is not None:
                attrs[key] = value
        elif kind == "dtype":
            value = t.scalar(index, "i32", default)
            if value:  # DT_INVALID (0) means the converter left the field unset
                attrs[key] = _dtype(value)
        elif isinstance(kind, tuple):  # (scalar kind, enum names)
            attrs[key] = enum_name(kind[1], t.scalar(index, kind[0], default))
        else:
            value = t.scalar(index, kind, default)
            attrs[key] = _short(value) if kind == "f32" else value
    return attrs


def _short(value: float) -> float:
    """A float32 as the short decimal it was written from (1e-05, not 9.999999747378752e-06)."""
    return float(f"{value:.7g}")


def _weight(name: str, shape: list[int], dtype: str, nbytes: int, elements: int, data: dict) -> dict:
    """A weight's size, and in ``data`` where its values lie ({file, offset, count, dtype}, offset in
    bytes into the .mnn ("model") or the x.mnn.weight file ("weight")) or why they are not readable
    as they are ({reason}). Only located, never decoded here: mnn_weights.read_weight reads one on request."""
    return {"name": name, "shape": shape, "dtype": dtype, "bytes": int(nbytes), "elements": int(elements),
            "data": data}


# dtypes whose values read_weight returns as they are stored (little-endian, as MNN writes them).
ITEMSIZE = {"float32": 4, "float16": 2, "int32": 4, "int64": 8, "int8": 1, "uint8": 1}


def _at(offset: int, nbytes: int, dtype: str, external: bool = False) -> dict:
    size = ITEMSIZE.get(dtype)
    if size is None:
        return {"reason": f"{dtype} values"}
    return {"file": "weight" if external else "model", "offset": int(offset), "count": int(nbytes) // size,
            "dtype": dtype}


def _external_at(external: list[int], slot: int, dtype: str) -> dict:
    """Location of the ``slot``-th array of an ``external`` field: [offset, size0, size1, ...], the
    arrays lying one after another in the weight file from ``offset`` on."""
    if len(external) <= slot + 1:
        return {"reason": "no location recorded for the external data"}
    return _at(external[0] + sum(external[1:slot + 1]), external[slot + 1], dtype, external=True)


def _float_weights(t: Table, fields, external_index: int | None) -> tuple[list[dict], bool]:
    """Weights stored as [float] vectors, or in the external file as [offset, bytes...]."""
    weights = []
    for name, index in fields:
        start, count = t.vector(index, 4)
        if count:
            weights.append(_weight(name, [count], "float32", 4 * count, count, _at(start, 4 * count, "float32")))
    external = t.external(external_index) if external_index is not None else []
    if not weights and len(external) > 1:
        for slot, ((name, _), nbytes) in enumerate(zip(fields, external[1:])):
            if nbytes > 0:
                weights.append(_weight(name, [nbytes // 4], "float32", nbytes, nbytes // 4,
                                       _external_at(external, slot, "float32")))
    return weights, bool(external)


def _conv_attrs(t: Table, op_type: str) -> tuple[dict, list[dict], bool]:
    common = t.table(0)
    attrs = _conv_common(common) if common is not None else {}
    oc, ic, group = attrs.get("outputCount", 0), attrs.get("inputCount", 0), attrs.get("group", 1)
    ky, kx = attrs.get("kernel", [1, 1])
    logical = None
    if ic > 0 and oc > 0 and group > 0:
        if op_type.startswith("Deconvolution") and oc % group == 0:
            logical = [ic, oc // group, ky, kx]
        elif ic % group == 0:
            logical = [oc, ic // group, ky, kx]

    weights: list[dict] = []
    external = t.external(6)
    quan, sym = t.table(3), t.table(4)
    bias_start, nbias = t.vector(2, 4)
    bias_at = _at(bias_start, 4 * nbias, "float32")
    if quan is not None:
        quant, weight = _idst_quant(quan, external, logical)
        if quant["kind"] == "int8" and sym is not None:
            # mnnquant also leaves a weightless QuantizedFloatParam: the clamp the int8 kernel applies.
            quant["clamp"] = [sym.scalar(8, "i8", -128), sym.scalar(9, "i8", 127)]
            quant["method"] = enum_name(_QUANTIZE_ALGO, sym.scalar(4, "i8", 0))
        attrs["quant"] = quant
        if weight is not None:
            weights.append(weight)
        bias_bytes = external[3] if len(external) > 3 and not nbias else 4 * nbias
        if not nbias:
            bias_at = _external_at(external, 2, "float32")  # after the buffer and the scales
    elif sym is not None:
        _, nw = sym.vector(0, 1)
        _, nb = sym.vector(1, 4)
        _, ns = sym.vector(2, 4)
        bits = sym.scalar(5, "i32", 8)
        attrs["quant"] = {"kind": "int8", "bits": bits, "scales": ns,
                          "method": enum_name(_QUANTIZE_ALGO, sym.scalar(4, "i8", 0))}
        why = {"reason": f"quantized (int8, {bits} bits)"}
        weights.append(_weight("weight", _fit(logical, nw), "int8", nw, nw, why))
        if nb:
            weights.append(_weight("bias", [nb], "int32", 4 * nb, nb, why))
        bias_bytes = 0
    else:
        start, nw = t.vector(1, 4)
        wbytes = 4 * nw if nw else (external[1] if len(external) > 1 else 0)
        if wbytes:
            where = _at(start, wbytes, "float32") if nw else _external_at(external, 0, "float32")
            weights.append(_weight("weight", _fit(logical, wbytes // 4), "float32", wbytes, wbytes // 4, where))
        bias_bytes = 4 * nbias if nbias else (external[2] if len(external) > 2 else 0)
        if not nbias:
            bias_at = _external_at(external, 1, "float32")
    if bias_bytes:
        weights.append(_weight("bias", [bias_bytes // 4], "float32", bias_bytes, bias_bytes // 4, bias_at))
    return attrs, weights, bool(external)


def _conv_common(c: Table) -> dict:
    attrs = {
        "kernel": [c.scalar(3, "i32", 1), c.scalar(2, "i32", 1)],
        "stride": [c.scalar(5, "i32", 1), c.scalar(4, "i32", 1)],
        "dilate": [c.scalar(7, "i32", 1), c.scalar(6, "i32", 1)],
        "pads": c.ints(14) if c.has(14) else [c.scalar(1, "i32", 0), c.scalar(0, "i32", 0)],
        "padMode": enum_name(_PAD_MODE, c.scalar(8, "i8", 0)),
        "group": c.scalar(9, "i32", 1),
        "outputCount": c.scalar(10, "i32", 0),
        "inputCount": c.scalar(11, "i32", 0),
        "relu": c.scalar(12, "bool", False),
        "relu6": c.scalar(13, "bool", False),
    }
    if c.has(15):
        attrs["outPads"] = c.ints(15)
    return attrs


def _idst_quant(q: Table, external: list[int], logical: list[int] | None) -> tuple[dict, dict | None]:
    """Quantization summary of an IDSTQuan (weight-only quant, fp16 storage, or the weights of a full-int8
    op) and its weight entry."""
    qtype = q.scalar(2, "i32", 0)
    start, nbuf = q.vector(0, 1)
    nbytes = nbuf if nbuf else (external[1] if len(external) > 1 else 0)
    _, nalpha = q.vector(1, 4)
    _, nalpha16 = q.vector(14, 2)
    quant = {"type": qtype, "kind": _IDST_KINDS.get(qtype, f"UNKNOWN_{qtype}")}
    scale_in = q.scalar(5, "f32", 0.0)
    if scale_in:
        # Full int8 (mnnquant's calibration): int8 weights as in weight-only quantization, plus the calibrated
        # scales of the input and output activations; MNN itself reads scaleIn != 0 as post-training quant.
        quant["kind"] = "int8"
    if qtype == 3:  # fp16 storage: the buffer is the raw half floats
        where = _at(start, nbytes, "float16") if nbuf else _external_at(external, 0, "float16")
        return quant, _weight("weight", _fit(logical, nbytes // 2), "float16", nbytes, nbytes // 2, where)
    if qtype in (1, 2, 4):
        bits = q.scalar(7, "i32", 0)
        if not 1 <= bits <= 8 and qtype == 1 and nbuf:
            bits = _idst_bits(q.d, start, nbuf, q.scalar(11, "bool", False))
        quant["bits"] = bits if 1 <= bits <= 8 else 8
        quant["asymmetric"] = q.scalar(9, "i32", 0) != 0
        alpha16 = q.scalar(15, "i8", 0) == 1
        scales = nalpha16 if alpha16 else nalpha
        if not scales and len(external) > 2:
            scales = external[2] // (2 if alpha16 else 4)
        quant["scales"] = scales
        channels = logical[0] if logical else 0
        per_channel = scales // (2 if quant["asymmetric"] else 1)
        if channels and per_channel > channels and per_channel % channels == 0:
            quant["blocks"] = per_channel // channels  # --weightQuantBlock: scales per output channel
    if scale_in:
        quant["scaleIn"], quant["scaleOut"] = _short(scale_in), _short(q.scalar(6, "f32", 0.0))
    elements = _product(logical) if logical else 0
    if qtype in (1, 2) and nbuf:
        header = _idst_shape(q.d, start, nbuf, q.scalar(11, "bool", False))
        if header:
            elements = _product(header)
            logical = logical if logical and _product(logical) == elements else header
    elif qtype == 4:
        elements = nbytes
    if not nbytes:
        return quant, None
    dtype = f"int{quant['bits']}" if "bits" in quant else "unknown"
    why = {"reason": f"quantized ({dtype}, {quant['bits']} bits)" if "bits" in quant else f"{quant['kind']} data"}
    return quant, _weight("weight", _fit(logical, elements), dtype, nbytes, elements, why)


def _idst_shape(d, start: int, length: int, int32_dims: bool) -> list[int] | None:
    """Weight shape from the header of an IDST buffer: ndims byte, then u16 (or u32) dims."""
    ndims = d[start]
    width = 4 if int32_dims else 2
    if not 1 <= ndims <= 8 or 1 + ndims * width > length:
        return None
    return list(struct.unpack_from(f"<{ndims}{'I' if int32_dims else 'H'}", d, start + 1))


def _idst_bits(d, start: int, length: int, int32_dims: bool) -> int:
    """Bits per weight of a type-1 IDST buffer whose header predates the aMaxOrBits field: the
    byte after the shape counts the distinct values (0 meaning 256), each index takes log2 bits."""
    at = start + 1 + d[start] * (4 if int32_dims else 2)
    if at >= start + length:
        return 0
    return max(1, ((d[at] or 256) - 1).bit_length())


def _fit(shape: list[int] | None, elements: int) -> list[int]:
    return shape if shape and _product(shape) == elements else [elements]


def _product(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _blob(b: Table, name: str) -> tuple[dict, dict | None, bool]:
    """Attributes and weight entry of a Blob (a constant's value)."""
    dims = b.ints(0)
    dtype_code = b.scalar(2, "i32", 1)
    attrs = {"dims": dims, "dtype": _dtype(dtype_code), "dataFormat": enum_name(_DATA_FORMATS, b.scalar(1, "i8", 0))}
    nbytes, start = 0, 0
    for index, elem in _BLOB_VECTORS:
        at, count = b.vector(index, elem)
        if count and not nbytes:
            start = at
        nbytes += count * elem
    external = b.external(9)
    dtype = "float16" if dtype_code == 19 else _dtype(dtype_code)
    # Half and 8-bit values are raw bytes in uint8s/int8s; the other types have their own vector.
    where = _at(start, nbytes, dtype) if nbytes else {"reason": "no data"}
    if not nbytes and len(external) > 1:
        nbytes = external[1]
        where = _external_at(external, 0, dtype)
    elements = _product(dims) if dims else (1 if nbytes else 0)
    if dims and min(dims) < 0:
        elements = 0
    attrs["elements"] = elements
    if not elements and not nbytes:
        return attrs, None, bool(external)
    return attrs, _weight(name, dims, dtype, nbytes, elements, where), bool(external)


def _extra_attrs(t: Table, attr_index: int) -> dict:
    attrs = {}
    for a in t.tables(attr_index):
        key = a.string(3)
        if key is None:
            continue
        if a.has(0):
            attrs[key] = a.string(0)
        elif a.has(7):
            lst = a.table(7)
            attrs[key] = lst.ints(1) or lst.floats(2) or lst.strings(0)
        elif a.has(6):
            attrs[key] = "<tensor>"
        elif a.has(5):
            attrs[key] = _short(a.scalar(5, "f32", 0.0))
        elif a.has(2):
            attrs[key] = a.scalar(2, "bool", False)
        else:
            attrs[key] = a.scalar(1, "i32", 0)
    return attrs


def decode_param(ptype: str, t: Table, op_type: str) -> tuple[dict, list[dict], bool]:
    """(attrs, weights, uses_external_file) for one op parameter table."""
    if ptype == "Convolution2D":
        return _conv_attrs(t, op_type)
    if ptype == "Blob":
        attrs, weight, ext = _blob(t, "value")
        return attrs, [weight] if weight else [], ext
    if ptype == "Extra":
        attrs = {"type": t.string(0) or "", "engine": t.string(1) or ""}
        attrs["attr"] = _extra_attrs(t, 3)
        return attrs, [], False
    if ptype == "Plugin":
        return {"type": t.string(0) or "", "attr": _extra_attrs(t, 1)}, [], False
    if ptype == "Pool":
        attrs = {
            "type": enum_name(_POOL_TYPES, t.scalar(7, "i8", 0)),
            "kernel": [t.scalar(4, "i32", 0), t.scalar(3, "i32", 0)],
            "stride": [t.scalar(6, "i32", 0), t.scalar(5, "i32", 0)],
            "pads": t.ints(11) if t.has(11) else [t.scalar(1, "i32", 0), t.scalar(0, "i32", 0)],
            "padType": enum_name(_PAD_MODE, t.scalar(8, "i8", 0)),
            "global": t.scalar(2, "bool", False),
            "ceilMode": t.scalar(10, "bool", True),
            "countType": enum_name(_AVG_COUNT, t.scalar(12, "i8", 0)),
        }
        return attrs, [], False
    if ptype == "BinaryOp" and op_type in ("ScatterElements", "ScatterNd"):
        # MNN's scatter ops carry their reduction as a BinaryOp opType, -1 meaning none.
        reduction = t.scalar(0, "i32", -1)
        return {"reduction": "none" if reduction < 0 else enum_name(_BINARY, reduction)}, [], False
    attrs = _simple_attrs(t, _SIMPLE_PARAMS.get(ptype, ()))
    if ptype == "Convolution3D" and t.has(0):
        attrs.update(_simple_attrs(t.table(0), _CONV3D_COMMON))
    weights, ext = [], False
    if ptype in _FLOAT_WEIGHTS:
        fields, external_index = _FLOAT_WEIGHTS[ptype]
        weights, ext = _float_weights(t, fields, external_index)
    if ptype == "InnerProduct" and t.has(7):
        quant, weight = _idst_quant(t.table(7), [], None)
        attrs["quant"] = quant
        weights = [weight] + weights if weight else weights
    for key, index in _BLOB_WEIGHTS.get(ptype, ()):
        blob = t.table(index)
        if blob is not None:
            _, weight, blob_ext = _blob(blob, key)
            ext = ext or blob_ext
            if weight:
                weights.append(weight)
    return attrs, weights, ext
