"""Bounds-checked reading of FlatBuffer tables, the layer under the .mnn reader (mnn_flatbuffer.py).

The ``flatbuffers`` runtime is not used for reading because it does no bounds checks (and Python's
``struct`` accepts negative offsets), so a garbage file could read itself silently; here every offset is
checked against the file and every malformed input raises ``Bad`` (read_mnn turns it into
MnnFormatError naming the file). Tables are read by field index (vtable slot ``4 + 2 * index``).
"""
from __future__ import annotations

import struct


class Bad(Exception):
    """Internal: what is wrong, without the file name (added by read_mnn)."""


_I32 = struct.Struct("<i").unpack_from
U32 = struct.Struct("<I").unpack_from
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


class Table:
    """One FlatBuffer table at ``pos`` in ``d`` (bytes or mmap of length ``n``), bounds-checked."""

    __slots__ = ("d", "n", "pos", "vt", "vtlen", "size")

    def __init__(self, d, n: int, pos: int):
        if pos < 0 or pos + 4 > n:
            raise Bad(f"table offset {pos} outside the file ({n} bytes)")
        # FlatBuffers writers align tables to 4 and vtables to 2 (MNN's verifier checks it too).
        if pos & 3:
            raise Bad(f"misaligned table at offset {pos}")
        vt = pos - _I32(d, pos)[0]
        if vt < 0 or vt + 4 > n or vt & 1:
            raise Bad(f"bad vtable offset {vt} for the table at offset {pos}")
        vtlen, size = _U16(d, vt)[0], _U16(d, vt + 2)[0]
        if vtlen < 4 or vtlen & 1 or vtlen > _MAX_VTABLE or vt + vtlen > n:
            raise Bad(f"bad vtable at offset {vt}")
        if size < 4 or pos + size > n:
            raise Bad(f"table at offset {pos} runs past the end of the file")
        self.d, self.n, self.pos, self.vt, self.vtlen, self.size = d, n, pos, vt, vtlen, size

    def _field(self, index: int, width: int = 4) -> int:
        slot = 4 + 2 * index
        if slot >= self.vtlen:
            return 0
        off = _U16(self.d, self.vt + slot)[0]
        if off and off + width > self.size:
            raise Bad(f"field {index} of table at offset {self.pos} lies outside the table")
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
        target = at + U32(self.d, at)[0]
        if target >= self.n:
            raise Bad(f"field {index} of table at offset {self.pos} points outside the file")
        return target

    def table(self, index: int) -> Table | None:
        target = self._target(index)
        return None if target < 0 else Table(self.d, self.n, target)

    def vector(self, index: int, elem: int) -> tuple[int, int]:
        """(start, length) of a vector field, checked to fit the file; (0, 0) when absent."""
        target = self._target(index)
        if target < 0:
            return 0, 0
        return vector_at(self.d, self.n, target, elem)

    def string(self, index: int) -> str | None:
        target = self._target(index)
        return None if target < 0 else string_at(self.d, self.n, target)

    def _decoded(self, index: int, code: str, size: int) -> tuple:
        start, count = self.vector(index, size)
        if count > _MAX_DECODED:
            raise Bad(f"field {index} of table at offset {self.pos} has an implausible {count} items")
        return (start, struct.unpack_from(f"<{count}{code}", self.d, start)) if count else (start, ())

    def ints(self, index: int) -> list[int]:
        return list(self._decoded(index, "i", 4)[1])

    def floats(self, index: int) -> list[float]:
        return list(self._decoded(index, "f", 4)[1])

    def external(self, index: int) -> list[int]:
        """An ``external: [int64]`` field: [offset, byte sizes...] in the x.mnn.weight file."""
        values = list(self._decoded(index, "q", 8)[1])
        if values and min(values) < 0:
            raise Bad(f"negative offset or size in the external-data field of table at offset {self.pos}")
        return values

    def strings(self, index: int) -> list[str]:
        start, offsets = self._decoded(index, "I", 4)
        d, n = self.d, self.n
        return [string_at(d, n, start + 4 * i + o) for i, o in enumerate(offsets)]

    def positions(self, index: int) -> list[int]:
        """Where the tables of a [Table] vector field start (checked when each is opened)."""
        start, offsets = self._decoded(index, "I", 4)
        return [start + 4 * i + o for i, o in enumerate(offsets)]

    def tables(self, index: int) -> list[Table]:
        return [Table(self.d, self.n, pos) for pos in self.positions(index)]


def vector_at(d, n: int, target: int, elem: int) -> tuple[int, int]:
    if target & 3:
        raise Bad(f"misaligned vector at offset {target}")
    if target + 4 > n:
        raise Bad(f"vector at offset {target} runs past the end of the file")
    count = U32(d, target)[0]
    if target + 4 + count * elem > n:
        raise Bad(f"vector at offset {target} ({count} items) runs past the end of the file")
    return target + 4, count


def string_at(d, n: int, target: int) -> str:
    start, count = vector_at(d, n, target, 1)
    if start + count >= n or d[start + count] != 0:
        raise Bad(f"string at offset {target} lacks its terminating zero byte")
    return d[start:start + count].decode("utf-8", "replace")
