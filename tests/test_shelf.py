"""gui/shelf.py: what a dock keeps of the last few models (pure Python)."""
from __future__ import annotations

import os

from mnnscope.gui.shelf import Shelf


def test_the_shelf_keeps_the_newest_models_and_says_what_goes(tmp_path):
    shelf = Shelf(size=2)
    a, b, c = (str(tmp_path / n) for n in ("a.onnx", "b.onnx", "c.onnx"))
    assert shelf.put(a, 1) == [] and shelf.put(b, 2) == []
    assert shelf.put(a, 3) == [1]           # a again: its old value goes, a is the newest now
    assert shelf.put(c, 4) == [2]           # beyond the size: the oldest (b) goes
    assert a in shelf and b not in shelf and shelf.get(c) == 4 and shelf.values() == [3, 4]
    os.symlink(tmp_path / "a.onnx", tmp_path / "link.onnx")  # one file under two spellings is one
    assert shelf.get(str(tmp_path / "link.onnx")) == 3 and shelf.take(str(tmp_path / "link.onnx")) == 3
    assert a not in shelf and shelf.take(a) is None and shelf.get(None) is None and None not in shelf
    shelf.clear()
    assert shelf.values() == []
