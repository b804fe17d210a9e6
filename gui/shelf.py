"""What a dock keeps of the last few models it worked on, to show again when one of them is opened again.

The Compare, Profile, Statistics and Convert docks each show one model's results; a user going between two models
(an encoder and its decoder) found the other model's results, or none, when coming back, and ran them again. Each
dock puts its results on a Shelf under the model file and takes them back when that file opens again.
"""
from __future__ import annotations

import os

MODELS_KEPT = 3  # models whose last results a dock keeps (the oldest goes first)


class Shelf:
    """{model file: value} for the last MODELS_KEPT models, oldest first; a file under two spellings is one."""

    def __init__(self, size: int = MODELS_KEPT):
        self.size = size
        self._items: dict = {}

    @staticmethod
    def key(path) -> str:
        return os.path.realpath(str(path))

    def put(self, path, value) -> list:
        """Keep `value` for `path` (the newest); returns the values that go: the one it replaces, the oldest beyond
        the size (a dock removes what they hold on disk)."""
        k = self.key(path)
        gone = [self._items.pop(k)] if k in self._items else []
        self._items[k] = value
        while len(self._items) > self.size:
            gone.append(self._items.pop(next(iter(self._items))))
        return gone

    def get(self, path):
        return self._items.get(self.key(path)) if path else None

    def take(self, path):
        """The value kept for `path`, off the shelf (None if none)."""
        return self._items.pop(self.key(path), None) if path else None

    def __contains__(self, path) -> bool:
        return bool(path) and self.key(path) in self._items

    def values(self) -> list:
        return list(self._items.values())

    def clear(self) -> None:
        self._items.clear()
