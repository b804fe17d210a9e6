"""The conversion cache (and the reference-run cache beside it): never pay twice for the same converter run.

The MNN converter dominates every repeat loop (a 3,000-node decoder: ~20 s; it grows faster than the graph),
and a comparison over several modes, a profile of an .onnx and the window's "reconvert and re-run" all ask
for conversions they have already had. An entry is a folder of files plus `meta.json`:

    <data dir>/cache/<namespace>/<key>/meta.json   {"key_parts", "files": {name: {size, sha256}}, ...}

- The key is a sha256 over everything that decides the output: the model's bytes and every external data
  file it names (by content, not by path or mtime), the converter's full argument list, the MNN version and
  the runner's Python; for a reference run the inputs' arrays, the engine and its version. A different input
  can never be served: whatever changes a byte changes the key.
- Every hit re-hashes the entry's files against `meta.json`: a corrupted or truncated entry is removed and
  counts as a miss, so the caller converts again and stores a fresh one.
- Entries are written into a staging folder and renamed into place, so a reader never sees half an entry and
  two processes storing the same key at once do not interfere (the second rename loses and is dropped).
- Size-bounded, least recently used first out (a hit touches `meta.json`); `mnnscope runs clean` empties it;
  `--no-cache` (or MNNSCOPE_CACHE=0) bypasses it. Bound: MNNSCOPE_CACHE_MB (default 4096 MB).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import secrets
import shutil
import time
from pathlib import Path

from mnnscope.inspector.store.runs import data_dir

CONVERT = "convert"
REFERENCE = "reference"
DEFAULT_LIMIT_MB = 4096
META = "meta.json"
FORMAT = 1  # bump when an entry's layout changes: old entries then simply miss


def enabled(flag: bool = True) -> bool:
    """Whether a caller that asked for the cache (`flag`) gets it: MNNSCOPE_CACHE=0 turns it off everywhere."""
    return bool(flag) and os.environ.get("MNNSCOPE_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def cache_root() -> Path:
    """Beside the run store: `runs clean` and the store's data directory own it."""
    return Path(os.environ.get("MNNSCOPE_CACHE_DIR") or data_dir() / "cache")


def limit_bytes() -> int:
    try:
        mb = float(os.environ.get("MNNSCOPE_CACHE_MB", DEFAULT_LIMIT_MB))
    except ValueError:
        mb = DEFAULT_LIMIT_MB
    return int(max(mb, 0) * (1 << 20))


# ----- keys ---------------------------------------------------------------------------------------------
def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def model_digest(model: str | os.PathLike, external_files: list[str] | tuple = ()) -> str:
    """sha256 over the model's bytes and each external data file (its location as the model names it, then its
    bytes). Raises OSError when a file cannot be read: the caller then bypasses the cache."""
    h = hashlib.sha256()
    h.update(file_sha256(model).encode())
    folder = Path(model).resolve().parent
    for location in sorted(external_files):
        h.update(b"\0" + location.encode("utf-8") + b"\0")
        h.update(file_sha256(folder / location).encode())
    return h.hexdigest()


def external_files(model: str | os.PathLike) -> list[str]:
    """The external data locations an ONNX model names (relative to its folder), without loading them."""
    st = os.stat(model)
    return list(_external_files(os.path.abspath(model), st.st_size, st.st_mtime_ns, st.st_ino))


@functools.lru_cache(maxsize=16)
def _external_files(model: str, _size: int, _mtime_ns: int, _ino: int) -> tuple[str, ...]:
    import onnx  # lazily: heavy, and only the reference cache asks
    from onnx.external_data_helper import _get_all_tensors, uses_external_data
    m = onnx.load(str(model), load_external_data=False)
    found = set()
    for t in _get_all_tensors(m):
        if uses_external_data(t):
            found.update(e.value for e in t.external_data if e.key == "location")
    return tuple(sorted(found))


def arrays_digest(arrays: dict) -> str:
    """sha256 over named arrays (name, dtype, shape, bytes): an .npz's own bytes carry zip timestamps."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = arrays[name]
        h.update(f"{name}\0{a.dtype.str}\0{tuple(a.shape)}\0".encode("utf-8"))
        h.update(memoryview(a.tobytes()))
    return h.hexdigest()


def make_key(parts: dict) -> str:
    blob = json.dumps(dict(parts, format=FORMAT), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def conversion_key(model_sha: str, argv_tail: list[str], mnn_version: str, runner_python: str,
                   framework: str = "ONNX") -> tuple[str, dict]:
    """(key, parts) of one converter run: model content, converter arguments, MNN version, runner Python."""
    parts = {"kind": CONVERT, "model": model_sha, "framework": framework, "args": [str(a) for a in argv_tail],
             "mnn": mnn_version, "python": runner_python}
    return make_key(parts), parts


# ----- the store ----------------------------------------------------------------------------------------
class DiskCache:
    """`DiskCache(root=None, limit=None)`: entries under root/<namespace>/<key>/ (see the module docstring)."""

    def __init__(self, root: str | os.PathLike | None = None, limit: int | None = None):
        self.root = Path(root) if root else cache_root()
        self.limit = limit_bytes() if limit is None else int(limit)

    def entry_dir(self, namespace: str, key: str) -> Path:
        return self.root / namespace / key

    def get(self, namespace: str, key: str) -> tuple[Path, dict] | None:
        """(entry folder, meta) for a sound entry, else None; a damaged entry is removed (a miss)."""
        folder = self.entry_dir(namespace, key)
        meta_path = folder / META
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            if folder.exists():
                self._remove(folder)
            return None
        if not self._sound(folder, meta):
            self._remove(folder)
            return None
        try:
            os.utime(meta_path)  # least recently used goes first
        except OSError:
            pass
        return folder, meta

    @staticmethod
    def _sound(folder: Path, meta: dict) -> bool:
        files = meta.get("files")
        if meta.get("format") != FORMAT or not isinstance(files, dict):
            return False
        for name, want in files.items():
            path = folder / name
            try:
                if path.stat().st_size != want.get("size") or file_sha256(path) != want.get("sha256"):
                    return False
            except OSError:
                return False
        return True

    def put(self, namespace: str, key: str, files: dict[str, str | os.PathLike], meta: dict) -> Path | None:
        """Store copies of `files` ({name in the entry: source path}) with `meta`; the entry folder, or None when
        it was not stored (too big for the bound, or the disk refused). Never raises for a full disk."""
        total = 0
        try:
            total = sum(os.path.getsize(src) for src in files.values())
        except OSError:
            return None
        if total > self.limit // 2:  # one entry may not push everything else out
            return None
        final = self.entry_dir(namespace, key)
        staging = self.root / ".staging" / f"{key}-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            staging.mkdir(parents=True)
            listed = {}
            for name, src in files.items():
                dst = staging / name
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
                listed[name] = {"size": dst.stat().st_size, "sha256": file_sha256(dst)}
            body = dict(meta, format=FORMAT, key=key, files=listed, stored=time.time(), bytes=total)
            (staging / META).write_text(json.dumps(body, default=str), encoding="utf-8")
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(staging, final)
            except OSError:
                # Another process stored the same key first (rename onto a non-empty folder fails): keep theirs.
                shutil.rmtree(staging, ignore_errors=True)
                if not (final / META).is_file():
                    return None
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            return None
        self.evict()
        return final

    def entries(self) -> list[dict]:
        """[{namespace, key, path, bytes, used}] of every entry, least recently used first."""
        out = []
        if not self.root.is_dir():
            return out
        for ns in sorted(p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")):
            for folder in ns.iterdir():
                if folder.name.startswith("."):
                    continue  # an entry being removed
                meta = folder / META
                try:
                    used = meta.stat().st_mtime
                except OSError:
                    used = 0.0  # half removed or foreign: first to go
                size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
                out.append({"namespace": ns.name, "key": folder.name, "path": str(folder), "bytes": size,
                            "used": used})
        out.sort(key=lambda e: e["used"])
        return out

    def evict(self) -> int:
        """Remove least recently used entries until the cache fits its bound; bytes freed."""
        entries = self.entries()
        total = sum(e["bytes"] for e in entries)
        freed = 0
        for e in entries:
            if total <= self.limit:
                break
            self._remove(Path(e["path"]))
            total -= e["bytes"]
            freed += e["bytes"]
        return freed

    def clear(self, dry_run: bool = False, unused_for_s: float | None = None) -> dict:
        """Empty the cache, or only entries not used for `unused_for_s` seconds (`runs clean`):
        {"entries", "bytes", "path"} of what went (or would go, with `dry_run`)."""
        entries = self.entries()
        if unused_for_s is not None:
            cutoff = time.time() - unused_for_s
            entries = [e for e in entries if e["used"] < cutoff]
        freed = sum(e["bytes"] for e in entries)
        if not dry_run:
            for e in entries:
                self._remove(Path(e["path"]))
            if unused_for_s is None:
                shutil.rmtree(self.root / ".staging", ignore_errors=True)
        return {"entries": len(entries), "bytes": freed, "path": str(self.root)}

    @staticmethod
    def _remove(folder: Path) -> None:
        # Rename first so a concurrent reader sees the entry gone rather than half deleted.
        doomed = folder.with_name(f".{folder.name}-{secrets.token_hex(4)}.del")
        try:
            os.rename(folder, doomed)
        except OSError:
            doomed = folder
        shutil.rmtree(doomed, ignore_errors=True)


def place(src: str | os.PathLike, dst: str | os.PathLike, link: bool = False) -> None:
    """Put a cached file at `dst` (a hard link when `link` and the file system allows, else a copy); the
    destination folder must exist."""
    try:
        os.unlink(dst)
    except FileNotFoundError:
        pass
    if link:
        try:
            os.link(src, dst)
            return
        except OSError:
            pass
    shutil.copyfile(src, dst)
