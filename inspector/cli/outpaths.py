"""Output paths checked before the work that writes them: a folder given for a file, a place that cannot be written
(`convert -o /proc/x.mnn` said "the converter said success but wrote no output file", `-o out` on a folder a
runner's IsADirectoryError, `compare --report /proc/r.html` an internal error after the whole comparison: tryout 17).
Nothing is created here: the writers make their folders when they write.
"""
from __future__ import annotations

import os
import tempfile

from mnnscope.inspector.errors import UsageError


def check_output(flag: str, path, folder: bool = False) -> None:
    """Raise UsageError when `path` (a file, or with `folder` a folder) cannot be written: a folder where a file is
    wanted (or the reverse), or a nearest existing folder on its way that takes no new file."""
    if not path:
        return
    path = os.path.abspath(os.fspath(path))
    if not folder and os.path.isdir(path):
        raise UsageError(f"{flag} {path}: is a folder; give a file path in it")
    if folder and os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{flag} {path}: is a file; give a folder")
    where = path if folder else os.path.dirname(path)
    while not os.path.exists(where):  # the nearest folder that exists: the writer makes the rest
        parent = os.path.dirname(where)
        if parent == where:
            break
        where = parent
    if not os.path.isdir(where):
        raise UsageError(f"{flag} {path}: cannot write there ({where} is a file)")
    try:
        with tempfile.NamedTemporaryFile(dir=where, prefix=".mnnscope-write-check-"):
            pass
    except OSError as e:
        raise UsageError(f"{flag} {path}: cannot write there ({e.strerror or e})") from None
