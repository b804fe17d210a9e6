"""Output paths checked before the work that writes them: a folder given for a file, a place that cannot be written
(`convert -o /proc/x.mnn` said "the converter said success but wrote no output file", `-o out` on a folder a
runner's IsADirectoryError, `compare --report /proc/r.html` an internal error after the whole comparison: tryout 17).
"""
from __future__ import annotations

import os
import tempfile

from mnnscope.inspector.errors import UsageError


def check_output(flag: str, path, folder: bool = False) -> None:
    """Raise UsageError when `path` (a file, or with `folder` a folder) cannot be written; creates missing parent
    folders (as the writers do)."""
    if not path:
        return
    path = os.fspath(path)
    if not folder and os.path.isdir(path):
        raise UsageError(f"{flag} {path}: is a folder; give a file path in it")
    if folder and os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{flag} {path}: is a file; give a folder")
    where = path if folder else (os.path.dirname(os.path.abspath(path)) or ".")
    try:
        os.makedirs(where, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=where, prefix=".mnnscope-write-check-"):
            pass
    except OSError as e:
        raise UsageError(f"{flag} {path}: cannot write there ({e.strerror or e})") from None
