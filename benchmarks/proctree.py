"""A process's live descendants, read from /proc: what the benchmarks sum memory over (the CLI or browser process
and the children it starts). A module of the benchmark scripts (run as `python benchmarks/NAME.py`, which puts
this folder on sys.path)."""
from __future__ import annotations

import os


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (children, their children, ...), not `pid` itself."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out
