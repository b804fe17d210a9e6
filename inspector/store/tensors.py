"""Tensors a run dumped (runner/dump.py's manifest: one packed file, or .npy files), read back: what comparisons
measure and what a profile from a node feeds its cut with."""
from __future__ import annotations

import functools
import os

import numpy as np

MMAP_BYTES = 1 << 20  # smaller files are read outright: mapping costs more than reading them


def load(run_dir: str, entry: dict) -> np.ndarray:
    """A dumped tensor; large ones memory-mapped, so only the chunk being measured is resident.

    Entries with an `offset` live in the run's packed file (runner/dump.py _Writer), mapped once per file;
    others are .npy files."""
    path = os.path.join(run_dir, entry["path"])
    if "offset" in entry:
        dtype, shape = np.dtype(entry["dtype"]), tuple(int(d) for d in entry["shape"])
        count = int(np.prod(shape, dtype=np.int64))
        if count == 0:
            return np.empty(shape, dtype)
        start = int(entry["offset"])
        end = start + count * dtype.itemsize
        st = os.stat(path)
        if end > st.st_size:
            raise ValueError(f"{path}: tensor at offset {start} is cut short ({st.st_size - start} of "
                             f"{end - start} bytes)")
        view = _packed(path, st.st_mtime_ns, st.st_size)[start:end].view(dtype).reshape(shape)
        return view if end - start > MMAP_BYTES else np.array(view)
    big = os.path.getsize(path) > MMAP_BYTES
    return np.load(path, mmap_mode="r" if big else None, allow_pickle=False)


@functools.lru_cache(maxsize=8)
def _packed(path: str, mtime_ns: int, size: int) -> np.memmap:
    """The packed file mapped once (not opened per tensor: thousands of tensors per run); keyed by mtime and
    size too, so a rewritten file is mapped afresh."""
    return np.memmap(path, dtype=np.uint8, mode="r", shape=(size,))
