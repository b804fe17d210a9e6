"""The run store: every run (profile, sweep, comparison, ...) as a row in an SQLite file.

Location: $MNNSCOPE_DATA_DIR, else $XDG_DATA_HOME/mnnscope, else ~/.local/share/mnnscope; the database is
`runs.sqlite` there and each run's tensors live in `runs/<folder>/` beside it (.npy files, never in the
database). Rows hold settings, the backend requested and used, precision, a JSON summary and one row per
operator (name, type, ms, flops and the rest of its entry as JSON: spread, tensor statistics).

Every call opens its own connection, so the store can be used from worker threads; WAL journaling lets a
reader (the GUI's history) see runs while another process (the CLI) adds them.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

SCHEMA_VERSION = 1
DB_NAME = "runs.sqlite"
RUN_KINDS = ("profile", "stats", "convert", "compare", "sweep", "generate")  # what records a run (CLI --kind, Runs dock)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL,
    model_path TEXT,
    model_sha256 TEXT,
    kind TEXT NOT NULL,
    settings TEXT NOT NULL DEFAULT '{}',
    backend_requested TEXT,
    backend_used TEXT,
    precision TEXT,
    inputs TEXT NOT NULL DEFAULT '[]',
    summary TEXT NOT NULL DEFAULT '{}',
    run_dir TEXT
);
CREATE INDEX IF NOT EXISTS runs_model ON runs(model_sha256);
CREATE TABLE IF NOT EXISTS ops (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    name TEXT,
    type TEXT,
    ms REAL,
    flops REAL,
    data TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE IF NOT EXISTS hashes (
    path TEXT PRIMARY KEY,
    size INTEGER,
    mtime_ns INTEGER,
    sha256 TEXT
);
"""
_OP_COLUMNS = ("index", "name", "type", "ms", "flops")


def data_dir() -> Path:
    """Where the store lives (see the module docstring for the order of precedence)."""
    env = os.environ.get("MNNSCOPE_DATA_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "mnnscope"


def companion_files(model_path: str | os.PathLike) -> list[Path]:
    """The model file plus weight files stored beside it under its name (x.onnx.data, x.mnn.weight, ...)."""
    p = Path(model_path)
    extra = sorted(q for q in p.parent.glob(p.name + "*") if q != p and q.is_file()) if p.parent.is_dir() else []
    return [p] + extra


def _dumps(obj) -> str:
    return json.dumps(obj, allow_nan=True, separators=(",", ":"), default=_default)


def _default(obj):
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


class RunStore:
    """`RunStore(path=None)`: path is the database file (default: data_dir()/runs.sqlite)."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path else data_dir() / DB_NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            con.executescript(_SCHEMA)
            con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=30)
        con.row_factory = sqlite3.Row
        con.execute("PRAGMA foreign_keys = ON")
        try:
            con.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError:
            pass  # e.g. a network file system: the default journal still works
        return con

    @property
    def runs_dir(self) -> Path:
        return self.path.parent / "runs"

    def new_run_dir(self, label: str = "run") -> Path:
        """A fresh folder for one run's tensors, beside the database."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        folder = self.runs_dir / f"{stamp}-{label}-{secrets.token_hex(3)}"
        folder.mkdir(parents=True, exist_ok=False)
        return folder

    # ----- hashing ------------------------------------------------------------------------------------
    def model_hash(self, model_path: str | os.PathLike) -> str:
        """sha256 over the model file and its companion weight files; cached by path, size and mtime."""
        files = companion_files(model_path)
        key = "|".join(str(f.resolve()) for f in files)
        stats = [f.stat() for f in files]
        size, mtime = sum(s.st_size for s in stats), max(s.st_mtime_ns for s in stats)
        with self._connect() as con:
            row = con.execute("SELECT size, mtime_ns, sha256 FROM hashes WHERE path = ?", (key,)).fetchone()
        if row and row["size"] == size and row["mtime_ns"] == mtime:
            return row["sha256"]
        h = hashlib.sha256()
        for f in files:
            with open(f, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
        digest = h.hexdigest()
        with self._connect() as con:
            con.execute("INSERT OR REPLACE INTO hashes (path, size, mtime_ns, sha256) VALUES (?, ?, ?, ?)",
                        (key, size, mtime, digest))
        return digest

    # ----- runs ---------------------------------------------------------------------------------------
    def add_run(self, *, kind: str, model_path: str | None = None, model_sha256: str | None = None,
                settings: dict | None = None, backend_requested: str | None = None, backend_used: str | None = None,
                precision: str | None = None, inputs: list | None = None, summary: dict | None = None,
                ops: list[dict] | None = None, run_dir: str | os.PathLike | None = None,
                time_s: float | None = None) -> int:
        """Record one run; returns its id. `ops`: [{index?, name, type, ms, flops, ...}], the rest as JSON."""
        if model_path and model_sha256 is None and os.path.isfile(model_path):
            model_sha256 = self.model_hash(model_path)
        with self._connect() as con:
            cur = con.execute(
                "INSERT INTO runs (time, model_path, model_sha256, kind, settings, backend_requested, backend_used,"
                " precision, inputs, summary, run_dir) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (time.time() if time_s is None else time_s, str(Path(model_path).resolve()) if model_path else None,
                 model_sha256, kind, _dumps(settings or {}), backend_requested, backend_used, precision,
                 _dumps(inputs or []), _dumps(summary or {}), str(run_dir) if run_dir else None))
            run_id = int(cur.lastrowid)
            rows = []
            for i, op in enumerate(ops or []):
                rest = {k: v for k, v in op.items() if k not in _OP_COLUMNS}
                rows.append((run_id, int(op.get("index", i)), op.get("name"), op.get("type"), op.get("ms"),
                             op.get("flops"), _dumps(rest)))
            con.executemany("INSERT INTO ops (run_id, idx, name, type, ms, flops, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
                            rows)
        return run_id

    @staticmethod
    def _row(row: sqlite3.Row) -> dict:
        d = dict(row)
        for key in ("settings", "inputs", "summary"):
            d[key] = json.loads(d[key]) if d.get(key) else None
        return d

    def get_run(self, run_id: int) -> dict | None:
        """The run with its ops (ordered), or None."""
        with self._connect() as con:
            row = con.execute("SELECT * FROM runs WHERE id = ?", (int(run_id),)).fetchone()
            if row is None:
                return None
            ops = con.execute("SELECT idx, name, type, ms, flops, data FROM ops WHERE run_id = ? ORDER BY idx",
                              (int(run_id),)).fetchall()
        run = self._row(row)
        run["ops"] = []
        for op in ops:
            entry = {"index": op["idx"], "name": op["name"], "type": op["type"], "ms": op["ms"], "flops": op["flops"]}
            entry.update(json.loads(op["data"]) if op["data"] else {})
            run["ops"].append(entry)
        return run

    def list_runs(self, model_hash: str | None = None, kind: str | None = None, limit: int | None = None,
                  model_path: str | os.PathLike | None = None) -> list[dict]:
        """Runs newest first, without their ops; filtered by model hash and/or kind. With `model_path` too, the
        runs of that hash or of that file (resolved) whatever its content was: every version of a model file."""
        sql, args = "SELECT * FROM runs", []
        where = []
        if model_hash and model_path:
            where.append("(model_sha256 = ? OR model_path = ?)")
            args += [model_hash, str(Path(model_path).resolve())]
        elif model_path:
            where.append("model_path = ?")
            args.append(str(Path(model_path).resolve()))
        elif model_hash:
            where.append("model_sha256 = ?")
            args.append(model_hash)
        if kind:
            where.append("kind = ?")
            args.append(kind)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY time DESC, id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        with self._connect() as con:
            return [self._row(r) for r in con.execute(sql, args).fetchall()]

    def converted_from(self, path: str | os.PathLike) -> str | None:
        """The model a recorded conversion wrote `path` from (the newest such conversion), None where none did: an
        .mnn opened alone is linked to its ONNX (helper 113's int8w.mnn read nothing of the .onnx runs beside it)."""
        made = self.conversion_of(path)
        return made["model_path"] if made else None

    def conversion_of(self, path: str | os.PathLike) -> dict | None:
        """The newest recorded conversion that wrote `path`: {"id", "model_path", "settings" (its ConvertSettings JSON),
        "keep_float" (the ops a saved fix kept in float, which the settings do not say)}, None where none did."""
        target = str(Path(path).resolve())
        with self._connect() as con:
            rows = con.execute("SELECT id, model_path, settings, summary FROM runs WHERE kind = 'convert' AND summary "
                               "LIKE ? ORDER BY time DESC, id DESC",
                               (f"%{_like(os.path.basename(target))}%",)).fetchall()
        for r in rows:
            try:
                summary = json.loads(r["summary"] or "{}") or {}
            except ValueError:
                continue
            out = summary.get("output")
            if isinstance(out, str) and out and str(Path(out).resolve()) == target and r["model_path"]:
                try:  # (the settings of the one that wrote it only)
                    settings = json.loads(r["settings"] or "{}") or {}
                except ValueError:
                    continue
                return {"id": r["id"], "model_path": r["model_path"], "settings": settings,
                        "keep_float": list(summary.get("keep_float") or [])}
        return None

    def lineage_runs(self, path: str | os.PathLike, kind: str | None = None, limit: int | None = None,
                     every_version: bool = True) -> list[dict]:
        """The runs of a model file (with `every_version`, of every content it had) and of the model it was converted
        from (converted_from), newest first."""
        digest = self.model_hash(path) if os.path.isfile(path) else None
        runs = self.list_runs(model_hash=digest, model_path=path if every_version else None, kind=kind, limit=limit) \
            if digest or every_version else []
        src = self.converted_from(path)
        if src:
            sd = self.model_hash(src) if os.path.isfile(src) else None
            seen = {r["id"] for r in runs}
            runs += [r for r in self.list_runs(model_hash=sd, model_path=src, kind=kind, limit=limit)
                     if r["id"] not in seen]
            runs.sort(key=lambda r: (r.get("time") or 0, r["id"]), reverse=True)
        return runs[:limit] if limit else runs

    def delete_run(self, run_id: int) -> bool:
        """Remove a run's rows (its folder is left to the caller: it may be shared or already gone)."""
        with self._connect() as con:
            return con.execute("DELETE FROM runs WHERE id = ?", (int(run_id),)).rowcount > 0

    def delete_runs(self, run_ids) -> dict:
        """Remove runs and the folders this store owns that no remaining run names (the Runs dock's Delete):
        {"removed": [ids], "folders": [deleted folders], "errors": [messages]}. A folder that cannot be deleted
        keeps its run, so that a later delete can retry."""
        ids = {int(i) for i in run_ids}
        dirs = self.run_dirs()
        kept = [os.path.realpath(d) for i, d in dirs.items() if i not in ids]
        out: dict = {"removed": [], "folders": [], "errors": []}
        for run_id in sorted(ids):
            folder = dirs.get(run_id)
            if folder and self.owns_folder(folder):
                real = os.path.realpath(folder)
                if not any(k == real or k.startswith(real + os.sep) for k in kept):
                    try:
                        shutil.rmtree(real)
                        out["folders"].append(real)
                    except OSError as e:
                        out["errors"].append(f"run {run_id}: {folder}: {e}")
                        continue
            if self.delete_run(run_id):
                out["removed"].append(run_id)
        return out

    # ----- cleaning -----------------------------------------------------------------------------------
    def owns_folder(self, path: str | os.PathLike | None) -> bool:
        """Whether `path` is a folder strictly inside this store's runs dir once symlinks are resolved, so that
        a cleaner may delete it; a recorded path elsewhere (a user's --work-dir, $MNNSCOPE_RUNS) never is."""
        if not path or not os.path.isabs(path):
            return False
        root = os.path.realpath(self.runs_dir)
        real = os.path.realpath(path)
        return real != root and real.startswith(root + os.sep) and os.path.isdir(real) and not os.path.islink(path)

    def run_dirs(self) -> dict[int, str]:
        """{run id: recorded run folder} for every run that names one (to spot folders that runs share)."""
        with self._connect() as con:
            rows = con.execute("SELECT id, run_dir FROM runs WHERE run_dir IS NOT NULL").fetchall()
        return {int(r["id"]): r["run_dir"] for r in rows}


def _like(name: str) -> str:
    """A file name as a LIKE pattern's middle that the JSON text holding it matches: plain ASCII as it is (its LIKE
    wildcards escaped by dropping to the longest part without them), anything else matching every row (the JSON
    escapes it)."""
    if not name.isascii():
        return ""
    return max(name.replace("%", "_").split("_"), key=len)


def record(store: RunStore | None, **run) -> tuple[int | None, str | None]:
    """Add one run (RunStore.add_run's keywords) to `store` (None: the default store): (run id, None).

    The one recording rule of every service (profile, sweep, convert, compare): a store that cannot take
    the run (read-only, locked, full, unwritable summary) never costs the result, only its record; the
    caller gets (None, a warning) and puts the warning in the result it returns.
    """
    try:
        return (store or RunStore()).add_run(**run), None
    except (sqlite3.Error, OSError, TypeError, ValueError) as e:
        return None, f"the run was not recorded in the run store ({e})"


def open_run(store: RunStore | None, label: str) -> tuple[RunStore | None, Path, list[str]]:
    """The store (None: the default one) and a fresh run folder in it, for a run about to start; a store
    that cannot be opened gives (None, a temporary folder, [a warning]) under the same rule as record()."""
    try:
        store = store or RunStore()
        return store, store.new_run_dir(label), []
    except (sqlite3.Error, OSError) as e:
        folder = Path(tempfile.mkdtemp(prefix=f"mnnscope-{label}-"))
        return None, folder, [f"the run store is unavailable ({e}); the run's files are in {folder}"]
