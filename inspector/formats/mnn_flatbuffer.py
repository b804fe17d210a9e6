"""Pure-Python reader of MNN's .mnn model files (a FlatBuffer), safe on untrusted input.

The layout follows alibaba/MNN ``schema/default/*.fbs`` (MNN 3.6.1): tables are read by field
index (vtable slot ``4 + 2 * index``). The ``flatbuffers`` runtime is not used for reading because
it does no bounds checks (and Python's ``struct`` accepts negative offsets), so a garbage file could
read itself silently; here every offset is checked and every malformed input raises
``MnnFormatError`` with one line naming the file. Work is linear in the file size: vector lengths
are checked against the bytes that back them, and weight arrays are never decoded, only measured.
"""
from __future__ import annotations

import mmap
import os
import stat
import struct
from dataclasses import dataclass, field

from mnnscope.inspector.formats.mnn_schema import (
    _AVG_COUNT, _BINARY, _BLOB_VECTORS, _BLOB_WEIGHTS, _CONV3D_COMMON, _DATA_FORMATS, _DATA_TYPES,
    _FLOAT_WEIGHTS, _IDST_KINDS, _NET_SOURCES, _OP_TYPES, _PAD_MODE, _PARAM_TYPES, _POOL_TYPES,
    _QUANTIZE_ALGO, _SIMPLE_PARAMS)

__all__ = ["MnnFormatError", "MnnOp", "MnnSubgraph", "MnnModel", "read_mnn"]


class MnnFormatError(Exception):
    """The file is not a readable .mnn model; the message is one line naming the file."""


@dataclass
class MnnOp:
    name: str
    op_type: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict
    weights: list[dict]


@dataclass
class MnnSubgraph:
    name: str
    ops: list[MnnOp]
    tensor_names: list[str]
    inputs: list[str]
    outputs: list[str]


@dataclass
class MnnModel:
    path: str
    ops: list[MnnOp]
    tensor_names: list[str]
    inputs: list[dict]
    outputs: list[str]
    biz_code: str
    source: str
    version: str | None
    external_weights: bool
    params: int
    subgraphs: list[MnnSubgraph] = field(default_factory=list)


class _Bad(Exception):
    """Internal: what is wrong, without the file name (added by read_mnn)."""


_I32 = struct.Struct("<i").unpack_from
_U32 = struct.Struct("<I").unpack_from
_U16 = struct.Struct("<H").unpack_from
_SCALAR = {"i32": (struct.Struct("<i").unpack_from, 4), "u8": (struct.Struct("<B").unpack_from, 1),
           "i8": (struct.Struct("<b").unpack_from, 1), "f32": (struct.Struct("<f").unpack_from, 4),
           "bool": (struct.Struct("<?").unpack_from, 1)}
# Vtables longer than this are not from any MNN schema (Net has 12 fields); refusing them makes
# random bytes fail at the first table instead of deep inside.
_MAX_VTABLE = 4 + 2 * 128
# Vectors that are decoded into Python lists (names, indexes, dims) never come near this in a real
# model; without a cap a crafted file could make a few bytes of offsets cost gigabytes of objects.
_MAX_DECODED = 1 << 22


class _Table:
    """One FlatBuffer table at ``pos`` in ``d`` (bytes or mmap of length ``n``), bounds-checked."""

    __slots__ = ("d", "n", "pos", "vt", "vtlen", "size")

    def __init__(self, d, n: int, pos: int):
        if pos < 0 or pos + 4 > n:
            raise _Bad(f"table offset {pos} outside the file ({n} bytes)")
        # FlatBuffers writers align tables to 4 and vtables to 2 (MNN's verifier checks it too).
        if pos & 3:
            raise _Bad(f"misaligned table at offset {pos}")
        vt = pos - _I32(d, pos)[0]
        if vt < 0 or vt + 4 > n or vt & 1:
            raise _Bad(f"bad vtable offset {vt} for the table at offset {pos}")
        vtlen, size = _U16(d, vt)[0], _U16(d, vt + 2)[0]
        if vtlen < 4 or vtlen & 1 or vtlen > _MAX_VTABLE or vt + vtlen > n:
            raise _Bad(f"bad vtable at offset {vt}")
        if size < 4 or pos + size > n:
            raise _Bad(f"table at offset {pos} runs past the end of the file")
        self.d, self.n, self.pos, self.vt, self.vtlen, self.size = d, n, pos, vt, vtlen, size

    def _field(self, index: int, width: int = 4) -> int:
        slot = 4 + 2 * index
        if slot >= self.vtlen:
            return 0
        off = _U16(self.d, self.vt + slot)[0]
        if off and off + width > self.size:
            raise _Bad(f"field {index} of table at offset {self.pos} lies outside the table")
        return off

    def scalar(self, index: int, kind: str, default=0):
        unpack, width = _SCALAR[kind]
        off = self._field(index, width)
        return unpack(self.d, self.pos + off)[0] if off else default

    def has(self, index: int) -> bool:
        return self._field(index, 1) != 0

    def _target(self, index: int) -> int:
        off = self._field(index)
        if not off:
            return -1
        at = self.pos + off
        target = at + _U32(self.d, at)[0]
        if target >= self.n:
            raise _Bad(f"field {index} of table at offset {self.pos} points outside the file")
        return target

    def table(self, index: int) -> _Table | None:
        target = self._target(index)
        return None if target < 0 else _Table(self.d, self.n, target)

    def vector(self, index: int, elem: int) -> tuple[int, int]:
        """(start, length) of a vector field, checked to fit the file; (0, 0) when absent."""
        target = self._target(index)
        if target < 0:
            return 0, 0
        return _vector_at(self.d, self.n, target, elem)

    def string(self, index: int) -> str | None:
        target = self._target(index)
        return None if target < 0 else _string_at(self.d, self.n, target)

    def _decoded(self, index: int, code: str, size: int) -> tuple:
        start, count = self.vector(index, size)
        if count > _MAX_DECODED:
            raise _Bad(f"field {index} of table at offset {self.pos} has an implausible {count} items")
        return (start, struct.unpack_from(f"<{count}{code}", self.d, start)) if count else (start, ())

    def ints(self, index: int) -> list[int]:
        return list(self._decoded(index, "i", 4)[1])

    def floats(self, index: int) -> list[float]:
        return list(self._decoded(index, "f", 4)[1])

    def external(self, index: int) -> list[int]:
        """An ``external: [int64]`` field: [offset, byte sizes...] in the x.mnn.weight file."""
        values = list(self._decoded(index, "q", 8)[1])
        if values and min(values) < 0:
            raise _Bad(f"negative offset or size in the external-data field of table at offset {self.pos}")
        return values

    def strings(self, index: int) -> list[str]:
        start, offsets = self._decoded(index, "I", 4)
        d, n = self.d, self.n
        return [_string_at(d, n, start + 4 * i + o) for i, o in enumerate(offsets)]

    def positions(self, index: int) -> list[int]:
        """Where the tables of a [Table] vector field start (checked when each is opened)."""
        start, offsets = self._decoded(index, "I", 4)
        return [start + 4 * i + o for i, o in enumerate(offsets)]

    def tables(self, index: int) -> list[_Table]:
        return [_Table(self.d, self.n, pos) for pos in self.positions(index)]


def _vector_at(d, n: int, target: int, elem: int) -> tuple[int, int]:
    if target & 3:
        raise _Bad(f"misaligned vector at offset {target}")
    if target + 4 > n:
        raise _Bad(f"vector at offset {target} runs past the end of the file")
    count = _U32(d, target)[0]
    if target + 4 + count * elem > n:
        raise _Bad(f"vector at offset {target} ({count} items) runs past the end of the file")
    return target + 4, count


def _string_at(d, n: int, target: int) -> str:
    start, count = _vector_at(d, n, target, 1)
    if start + count >= n or d[start + count] != 0:
        raise _Bad(f"string at offset {target} lacks its terminating zero byte")
    return d[start:start + count].decode("utf-8", "replace")


def _enum(names: dict | tuple, value: int) -> str:
    """Enum name of ``value``; unknown values read as UNKNOWN_<n> so newer files still open."""
    if isinstance(names, dict):
        name = names.get(value)
    else:
        name = names[value] if 0 <= value < len(names) else None
    return name if name else f"UNKNOWN_{value}"


def _dtype(value: int) -> str:
    return _enum(_DATA_TYPES, value)


def _simple_attrs(t: _Table, spec) -> dict:
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
            attrs[key] = _enum(kind[1], t.scalar(index, kind[0], default))
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
_ITEMSIZE = {"float32": 4, "float16": 2, "int32": 4, "int64": 8, "int8": 1, "uint8": 1}


def _at(offset: int, nbytes: int, dtype: str, external: bool = False) -> dict:
    size = _ITEMSIZE.get(dtype)
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


def _float_weights(t: _Table, fields, external_index: int | None) -> tuple[list[dict], bool]:
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


def _conv_attrs(t: _Table, op_type: str) -> tuple[dict, list[dict], bool]:
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
                          "method": _enum(_QUANTIZE_ALGO, sym.scalar(4, "i8", 0))}
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


def _conv_common(c: _Table) -> dict:
    attrs = {
        "kernel": [c.scalar(3, "i32", 1), c.scalar(2, "i32", 1)],
        "stride": [c.scalar(5, "i32", 1), c.scalar(4, "i32", 1)],
        "dilate": [c.scalar(7, "i32", 1), c.scalar(6, "i32", 1)],
        "pads": c.ints(14) if c.has(14) else [c.scalar(1, "i32", 0), c.scalar(0, "i32", 0)],
        "padMode": _enum(_PAD_MODE, c.scalar(8, "i8", 0)),
        "group": c.scalar(9, "i32", 1),
        "outputCount": c.scalar(10, "i32", 0),
        "inputCount": c.scalar(11, "i32", 0),
        "relu": c.scalar(12, "bool", False),
        "relu6": c.scalar(13, "bool", False),
    }
    if c.has(15):
        attrs["outPads"] = c.ints(15)
    return attrs


def _idst_quant(q: _Table, external: list[int], logical: list[int] | None) -> tuple[dict, dict | None]:
    """Quantization summary of an IDSTQuan (weight-only quant or fp16 storage) and its weight entry."""
    qtype = q.scalar(2, "i32", 0)
    start, nbuf = q.vector(0, 1)
    nbytes = nbuf if nbuf else (external[1] if len(external) > 1 else 0)
    _, nalpha = q.vector(1, 4)
    _, nalpha16 = q.vector(14, 2)
    quant = {"type": qtype, "kind": _IDST_KINDS.get(qtype, f"UNKNOWN_{qtype}")}
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


def _blob(b: _Table, name: str) -> tuple[dict, dict | None, bool]:
    """Attributes and weight entry of a Blob (a constant's value)."""
    dims = b.ints(0)
    dtype_code = b.scalar(2, "i32", 1)
    attrs = {"dims": dims, "dtype": _dtype(dtype_code), "dataFormat": _enum(_DATA_FORMATS, b.scalar(1, "i8", 0))}
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


def _extra_attrs(t: _Table, attr_index: int) -> dict:
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


def _decode_param(ptype: str, t: _Table, op_type: str) -> tuple[dict, list[dict], bool]:
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
            "type": _enum(_POOL_TYPES, t.scalar(7, "i8", 0)),
            "kernel": [t.scalar(4, "i32", 0), t.scalar(3, "i32", 0)],
            "stride": [t.scalar(6, "i32", 0), t.scalar(5, "i32", 0)],
            "pads": t.ints(11) if t.has(11) else [t.scalar(1, "i32", 0), t.scalar(0, "i32", 0)],
            "padType": _enum(_PAD_MODE, t.scalar(8, "i8", 0)),
            "global": t.scalar(2, "bool", False),
            "ceilMode": t.scalar(10, "bool", True),
            "countType": _enum(_AVG_COUNT, t.scalar(12, "i8", 0)),
        }
        return attrs, [], False
    if ptype == "BinaryOp" and op_type in ("ScatterElements", "ScatterNd"):
        # MNN's scatter ops carry their reduction as a BinaryOp opType, -1 meaning none.
        reduction = t.scalar(0, "i32", -1)
        return {"reduction": "none" if reduction < 0 else _enum(_BINARY, reduction)}, [], False
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


def _op(t: _Table, names: list[str]) -> tuple[MnnOp, bool]:
    name = t.string(3) or ""
    try:
        op_type = _enum(_OP_TYPES, t.scalar(5, "i32", 0))
        inputs, outputs = _names(names, t.ints(0)), _names(names, t.ints(4))
        ptag = t.scalar(1, "u8", 0)
        attrs, weights, external = {}, [], False
        param = t.table(2) if ptag else None
        if param is not None:
            ptype = _enum(_PARAM_TYPES, ptag)
            attrs, weights, external = _decode_param(ptype, param, op_type)
            attrs["param_type"] = ptype
        if t.has(7):
            external = True
        return MnnOp(name, op_type, inputs, outputs, attrs, weights), external
    except _Bad as exc:
        raise _Bad(f"{name!r}: {exc}") from None


def _names(names: list[str], indexes: list[int]) -> list[str]:
    count = len(names)
    if indexes and (min(indexes) < 0 or max(indexes) >= count):
        bad = next(i for i in indexes if not 0 <= i < count)
        raise _Bad(f"tensor index {bad} outside the {count} tensor names")
    return [names[i] for i in indexes]


def _ops(parent: _Table, index: int, names: list[str], where: str) -> tuple[list[MnnOp], bool]:
    ops, external = [], False
    for i, pos in enumerate(parent.positions(index)):
        try:
            op, ext = _op(_Table(parent.d, parent.n, pos), names)
        except _Bad as exc:
            raise _Bad(f"{where}op #{i} {exc}") from None
        ops.append(op)
        external = external or ext
    return ops, external


def _net(d, n: int, path: str) -> MnnModel:
    if n < 12:
        raise _Bad(f"only {n} bytes, too short for a model")
    net = _Table(d, n, _U32(d, 0)[0])
    tensor_names = net.strings(7)
    ops, external = _ops(net, 3, tensor_names, "")
    if not ops:
        raise _Bad("the model has no operators")
    outputs = net.strings(4)
    inputs = [{"name": op.outputs[0] if op.outputs else op.name, "shape": op.attrs.get("dims", []),
               "dtype": op.attrs.get("dtype", "float32"), "format": op.attrs.get("dformat", "NC4HW4")}
              for op in ops if op.op_type == "Input"]
    subgraphs = []
    for g in net.tables(10):
        gname = g.string(0) or ""
        gnames = g.strings(3)
        gops, gext = _ops(g, 4, gnames, f"subgraph {gname!r} ")
        external = external or gext
        try:
            gin, gout = _names(gnames, g.ints(1)), _names(gnames, g.ints(2))
        except _Bad as exc:
            raise _Bad(f"subgraph {gname!r} inputs/outputs: {exc}") from None
        subgraphs.append(MnnSubgraph(gname, gops, gnames, gin, gout))
    info = net.table(2)
    version = info.string(2) if info is not None else None
    params = sum(w["elements"] for op in ops for w in op.weights)
    params += sum(w["elements"] for g in subgraphs for op in g.ops for w in op.weights)
    return MnnModel(path=path, ops=ops, tensor_names=tensor_names, inputs=inputs, outputs=outputs,
                    biz_code=net.string(0) or "", source=_enum(_NET_SOURCES, net.scalar(6, "i8", 0)),
                    version=version, external_weights=external, params=params, subgraphs=subgraphs)


def read_mnn(path) -> MnnModel:
    """Read the structure, attributes and weight sizes of a .mnn file without running MNN."""
    path = os.fspath(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # opening a FIFO or device could block forever
            raise MnnFormatError(f"{path}: not a regular file")
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                raise MnnFormatError(f"{path}: empty file, not an MNN model")
            # mmap: big models are mostly weights, which are measured but never read.
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as d:
                return _net(d, size, path)
    except _Bad as exc:
        raise MnnFormatError(f"{path}: not a valid MNN model: {exc}") from None
    except (struct.error, IndexError, ValueError, OverflowError) as exc:
        raise MnnFormatError(f"{path}: not a valid MNN model: {exc}") from None
    except OSError as exc:
        raise MnnFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None


# --- Format data from alibaba/MNN schema/default/*.fbs (MNN 3.6.1), written out by hand. ---------
