"""Persistent settings (QSettings, INI format so tests can point it at a temporary folder)."""
from __future__ import annotations

import json
import os

from PySide6.QtCore import QSettings

MAX_RECENT = 10


def settings() -> QSettings:
    return QSettings(QSettings.IniFormat, QSettings.UserScope, "mnnscope", "mnnscope")


def use_folder(path: str) -> None:
    """Keep settings under `path` (tests, portable installs)."""
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(path))


def recent_files() -> list[str]:
    v = settings().value("recent", [])
    if isinstance(v, str):
        v = [v]
    return [p for p in (v or []) if isinstance(p, str)]


def add_recent(path: str) -> list[str]:
    path = os.path.abspath(path)
    items = [path] + [p for p in recent_files() if p != path]
    items = items[:MAX_RECENT]
    settings().setValue("recent", items)
    return items


def clear_recent() -> None:
    settings().setValue("recent", [])


def export_dir() -> str:
    """The folder an image was last exported to ("" before the first)."""
    v = settings().value("export_dir", "")
    return v if isinstance(v, str) else ""


def set_export_dir(path: str) -> None:
    settings().setValue("export_dir", os.path.abspath(path))


def theme() -> str:
    v = settings().value("theme", "light")
    return v if v in ("light", "dark") else "light"


def set_theme(name: str) -> None:
    settings().setValue("theme", name)


def by_model(key: str) -> dict:
    """A dock's per-model table under `key` ("<dock>/by_model": {absolute model path: its JSON value}, the one set
    most recently last); {} where there is none or it does not read."""
    try:
        raw = json.loads(settings().value(key) or "{}")
    except (ValueError, TypeError):
        return {}
    return raw if isinstance(raw, dict) else {}


def set_by_model(key: str, path: str, value, most: int = 200) -> None:
    """Keep `value` (JSON) for the model at `path` in the table under `key`, as the one set last (None: forget the
    model's); the `most` models set last are kept. TypeError for a value JSON cannot hold (nothing written)."""
    table = by_model(key)
    path = os.path.abspath(path)
    table.pop(path, None)
    if value is not None:
        table[path] = value
    for old in list(table)[:-most]:
        del table[old]
    settings().setValue(key, json.dumps(table))
