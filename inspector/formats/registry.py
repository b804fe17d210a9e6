"""The format registry: which adapter reads a path (formats/adapter.py says what an adapter is).

Adding a format is one module with a FormatAdapter subclass and one line: its "module:Class" in BUILTIN
below, or, for a format kept outside mnnscope (a plugin, a test's made-up format), in the environment
variable MNNSCOPE_FORMATS (comma-separated "module:Class" entries; the module must be importable, e.g.
through PYTHONPATH). The environment reaches every process that mnnscope starts, so the load process
(formats/loadproc.py) and `mnnscope inspect` find the same formats as the process that set it; an
adapter passed to `register()` is known to this process only.

Detection, in order: a folder goes to the folder format that recognises it; a file whose first bytes
match an adapter's magic goes to that adapter whatever its name; otherwise its suffix decides (when the
adapter of that suffix declares magic, the file must start with it). Anything else is a ModelError
naming the file, never a guess.
"""
from __future__ import annotations

import importlib
import os
import stat
from pathlib import Path

from mnnscope.inspector.errors import ModelError
from mnnscope.inspector.formats.adapter import FormatAdapter

BUILTIN = (
    "mnnscope.inspector.formats.onnx_adapter:OnnxAdapter",
    "mnnscope.inspector.formats.mnn_adapter:MnnAdapter",
    "mnnscope.inspector.formats.llm_folder:LlmExportAdapter",
)
ENV = "MNNSCOPE_FORMATS"
_HEAD = 64  # bytes read for magic checks

_builtin: dict[str, FormatAdapter] | None = None
_registered: dict[str, FormatAdapter] = {}
_from_env: dict[str, FormatAdapter] = {}  # "module:Class" -> adapter, imported once


def register(adapter: FormatAdapter) -> FormatAdapter:
    """Add (or replace, by name) a format in this process."""
    _check(adapter, repr(adapter))
    _registered[adapter.name] = adapter
    return adapter


def adapters() -> list[FormatAdapter]:
    """Every known format: the built-in ones, then register()ed ones, then those named in MNNSCOPE_FORMATS
    (a later one with the same name replaces an earlier one)."""
    global _builtin
    if _builtin is None:
        _builtin = {a.name: a for a in map(_load, BUILTIN)}
    out = dict(_builtin)
    out.update(_registered)
    for spec in filter(None, (s.strip() for s in os.environ.get(ENV, "").split(","))):
        if spec not in _from_env:
            _from_env[spec] = _load(spec)
        out[_from_env[spec].name] = _from_env[spec]
    return list(out.values())


def adapter_named(name: str) -> FormatAdapter:
    for a in adapters():
        if a.name == name:
            return a
    raise ModelError(f"no format named '{name}' (known: {', '.join(a.name for a in adapters())})")


def extensions() -> list[str]:
    """Every registered file suffix, in registration order."""
    return [ext for a in adapters() for ext in a.extensions]


def has_model_suffix(path: str | os.PathLike) -> bool:
    name = Path(path).name.lower()
    return any(name.endswith(ext) for ext in extensions())


def detect(path: str | os.PathLike) -> FormatAdapter:
    """The adapter that reads `path`; ModelError (one line naming the path) when none does."""
    p = Path(path)
    known = adapters()
    try:
        st = p.stat()
    except OSError:
        raise ModelError(f"{p}: no such file") from None
    if stat.S_ISDIR(st.st_mode):
        for a in known:
            if a.folder and a.is_model_folder(p):
                return a
        raise ModelError(f"{p}: is a folder, not a model file" + _folder_formats(known))
    name = p.name.lower()
    by_suffix = [a for a in known if any(name.endswith(ext) for ext in a.extensions)]
    if not stat.S_ISREG(st.st_mode):  # opening a FIFO or a device could block forever
        raise ModelError(f"{p}: not a regular file")
    if st.st_size == 0:
        if by_suffix:
            raise ModelError(f"{p}: the file is empty")
        raise _unsupported(p, known)
    head = _head(p)
    for a in known:
        if a.magic and head.startswith(a.magic):
            return a
    for a in by_suffix:
        if not a.magic:
            return a
    if by_suffix:
        a = by_suffix[0]
        raise ModelError(f"{p}: not a {a.description or a.name} file (it does not start with {a.magic[0]!r})")
    raise _unsupported(p, known)


def _head(p: Path) -> bytes:
    try:
        with open(p, "rb") as f:
            return f.read(_HEAD)
    except OSError as e:
        raise ModelError(f"{p}: cannot read: {e.strerror or e}") from None


def _unsupported(p: Path, known: list[FormatAdapter]) -> ModelError:
    exts = [ext for a in known for ext in a.extensions]
    expected = " or ".join([", ".join(exts[:-1]), exts[-1]] if len(exts) > 1 else exts)
    return ModelError(f"{p}: unsupported file type '{p.suffix or '(none)'}' (expected {expected})")


def _folder_formats(known: list[FormatAdapter]) -> str:
    # Built-in folder formats are left out: they claim the folders that look like theirs (an MNN-LLM export's
    # config.json) and say what is missing there, so for any other folder their names are noise.
    builtin = set((_builtin or {}).values())
    names = [a.description or a.name for a in known if a.folder and a not in builtin]
    return f" (not a {' or '.join(names)} either)" if names else ""


def _load(spec: str) -> FormatAdapter:
    module, _, attr = spec.partition(":")
    try:
        obj = getattr(importlib.import_module(module), attr or "ADAPTER")
    except (ImportError, AttributeError) as e:
        raise ModelError(f"{ENV}: cannot load format adapter '{spec}' ({type(e).__name__}: {e})") from None
    adapter = obj() if isinstance(obj, type) else obj
    _check(adapter, spec)
    return adapter


def _check(adapter, where: str) -> None:
    if not isinstance(adapter, FormatAdapter) or not adapter.name:
        raise ModelError(f"{where}: not a named FormatAdapter")
    if any(ext != ext.lower() or not ext.startswith(".") for ext in adapter.extensions):
        raise ModelError(f"{where}: extensions must be lower-case suffixes with the dot, got {adapter.extensions}")
