"""Pure-Python reader of MNN's .mnn model files (a FlatBuffer), safe on untrusted input.

The layout follows alibaba/MNN ``schema/default/*.fbs`` (MNN 3.6.1). Three layers: mnn_fbtable reads
FlatBuffer tables with every offset checked, mnn_params decodes one op's parameter table, and this
module walks the Net (ops, tensor names, inputs, subgraphs); every malformed input raises
``MnnFormatError`` with one line naming the file. Work is linear in the file size: vector lengths
are checked against the bytes that back them, and weight arrays are never decoded, only measured.
"""
from __future__ import annotations

import mmap
import os
import stat
import struct
from dataclasses import dataclass, field

from mnnscope.inspector.formats.mnn_fbtable import U32, Bad, Table
from mnnscope.inspector.formats.mnn_params import decode_param, enum_name
from mnnscope.inspector.formats.mnn_schema import _NET_SOURCES, _OP_TYPES, _PARAM_TYPES

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


def _op(t: Table, names: list[str]) -> tuple[MnnOp, bool]:
    name = t.string(3) or ""
    try:
        op_type = enum_name(_OP_TYPES, t.scalar(5, "i32", 0))
        inputs, outputs = _names(names, t.ints(0)), _names(names, t.ints(4))
        ptag = t.scalar(1, "u8", 0)
        attrs, weights, external = {}, [], False
        param = t.table(2) if ptag else None
        if param is not None:
            ptype = enum_name(_PARAM_TYPES, ptag)
            attrs, weights, external = decode_param(ptype, param, op_type)
            attrs["param_type"] = ptype
        if t.has(7):
            external = True
        return MnnOp(name, op_type, inputs, outputs, attrs, weights), external
    except Bad as exc:
        raise Bad(f"{name!r}: {exc}") from None


def _names(names: list[str], indexes: list[int]) -> list[str]:
    count = len(names)
    if indexes and (min(indexes) < 0 or max(indexes) >= count):
        bad = next(i for i in indexes if not 0 <= i < count)
        raise Bad(f"tensor index {bad} outside the {count} tensor names")
    return [names[i] for i in indexes]


def _ops(parent: Table, index: int, names: list[str], where: str) -> tuple[list[MnnOp], bool]:
    ops, external = [], False
    for i, pos in enumerate(parent.positions(index)):
        try:
            op, ext = _op(Table(parent.d, parent.n, pos), names)
        except Bad as exc:
            raise Bad(f"{where}op #{i} {exc}") from None
        ops.append(op)
        external = external or ext
    return ops, external


def _net(d, n: int, path: str) -> MnnModel:
    if n < 12:
        raise Bad(f"only {n} bytes, too short for a model")
    net = Table(d, n, U32(d, 0)[0])
    tensor_names = net.strings(7)
    ops, external = _ops(net, 3, tensor_names, "")
    if not ops:
        raise Bad("the model has no operators")
    outputs = net.strings(4)
    if not outputs:
        # mnnquant writes no outputName (tryout 12: Properties read "Outputs: none" for a full-int8 .mnn, and so did
        # `inspect`); MNN then runs to the tensors that no op reads, which are the outputs here too
        # (by their last write: a layout op may rewrite a tensor under its own name, fetch_name_0 -> fetch_name_0)
        last_read: dict[str, int] = {}
        last_write: dict[str, int] = {}
        for i, op in enumerate(ops):
            for t in op.inputs:
                last_read[t] = i
            if op.op_type not in ("Const", "TrainableParam"):
                for t in op.outputs:
                    last_write[t] = i
        outputs = [t for t, i in last_write.items() if i >= last_read.get(t, -1)]
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
        except Bad as exc:
            raise Bad(f"subgraph {gname!r} inputs/outputs: {exc}") from None
        subgraphs.append(MnnSubgraph(gname, gops, gnames, gin, gout))
    info = net.table(2)
    version = info.string(2) if info is not None else None
    params = sum(w["elements"] for op in ops for w in op.weights)
    params += sum(w["elements"] for g in subgraphs for op in g.ops for w in op.weights)
    return MnnModel(path=path, ops=ops, tensor_names=tensor_names, inputs=inputs, outputs=outputs,
                    biz_code=net.string(0) or "", source=enum_name(_NET_SOURCES, net.scalar(6, "i8", 0)),
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
    except (Bad, struct.error, IndexError, ValueError, OverflowError) as exc:
        raise MnnFormatError(f"{path}: not a valid MNN model ({_what_instead(path)}: {exc})") from None
    except OSError as exc:
        raise MnnFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _what_instead(path: str) -> str:
    """What a file that is no MNN model looks like: an ONNX model under the wrong name, or a damaged file (tryout 17
    read "table offset 269617416 outside the file" for an .onnx named .mnn)."""
    try:
        import onnx
        model = onnx.load(path, load_external_data=False)
        if model.HasField("graph") and (len(model.graph.node) or len(model.graph.output)):
            return "it is an ONNX model: name it .onnx, or convert it (mnnscope convert)"
    except Exception:  # noqa: BLE001 - not ONNX either
        pass
    return "truncated, or not an MNN model at all"
