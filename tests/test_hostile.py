"""Hostile files (tests/hostile.py): every CLI command on a CI-sized sample of the corpus exits 0 or 1 as the file
deserves, without a traceback, within its bound, with a one-line reason naming the file; the window opens 50 of
them in a row and stays responsive. MNNSCOPE_HOSTILE_FULL=1 runs the whole corpus (or `python -m tests.hostile
--full`, which prints the counts)."""
from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests import hostile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401 (the window fixtures)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    return base, hostile.generate(base / "corpus")


def test_the_corpus_has_every_kind_in_both_formats(corpus):
    base, cases = corpus
    kinds = Counter(c.kind for c in cases)
    assert set(kinds) == {"truncated", "bitflip", "random", "wrong_ext", "absurd", "nested", "escape"}, kinds
    for kind in ("truncated", "bitflip", "random", "wrong_ext"):
        suffixes = {c.path.suffix for c in cases if c.kind == kind}
        assert suffixes == {".onnx", ".mnn"}, (kind, suffixes)
    assert len(cases) > 250
    assert any(c.path.stat().st_size == 0 for c in cases)
    for c in cases:
        if c.kind == "escape":  # each names a real file outside its own folder (that would load if read)
            assert c.outside and all(not Path(o).is_relative_to(c.path.parent) for o in c.outside)
            assert all(Path(o).stat().st_size > 0 for o in c.outside)
    # the 200-deep model is beyond what protobuf parses; the 20-deep one is a valid model
    import onnx
    onnx.checker.check_model(onnx.load(str(base / "corpus" / "nested_if_20.onnx")))
    with pytest.raises(Exception):
        onnx.load(str(base / "corpus" / "nested_if_200.onnx"))


def test_every_command_survives_the_corpus(corpus):
    base, cases = corpus
    full = os.environ.get("MNNSCOPE_HOSTILE_FULL") == "1"
    chosen = cases if full else hostile.ci_sample(cases)
    assert len(chosen) >= 20
    results = hostile.run_corpus(chosen, base / "work", jobs=3)
    problems = [r["problem"] for r in results if r["problem"]]
    assert not problems, "\n".join(problems)
    # every kind was tried, every must-fail file failed, and the intact-enough files ran through
    assert {r["kind"] for r in results} == {c.kind for c in chosen}
    assert Counter(r["rc"] for r in results)[1] > len(results) // 2
    print(f"hostile corpus: {len(chosen)} files, {len(results)} runs, {len(results) - len(problems)} passed")


@pytest.mark.gui
def test_the_window_opens_50_hostile_files_and_stays_responsive(corpus, qtbot, window, ui_watchdog, samples):
    """Through the window's open path (as File > Open does), one after another, each waited for."""
    w = window
    _, cases = corpus
    step = max(1, len(cases) // 50)
    special = [c for c in cases if c.kind in ("escape", "nested", "absurd", "wrong_ext")]
    chosen = list({c.name: c for c in special + cases[::step]}.values())[:50]
    assert len(chosen) == 50
    outcome = []
    w.model_loaded.connect(lambda p: outcome.append(("loaded", p)))
    w.load_failed.connect(lambda m: outcome.append(("failed", m)))
    t0 = time.monotonic()
    for c in chosen:
        before = len(outcome)
        w.open_model(str(c.path))
        qtbot.waitUntil(lambda: len(outcome) > before, timeout=60000)
        if outcome[-1][0] == "loaded":
            qtbot.waitUntil(lambda: w.pane.main_view.scene is not None and not w.pane.main_view.layout_busy,
                            timeout=30000)
    kinds = Counter(k for k, _ in outcome)
    assert len(outcome) == 50 and kinds["failed"] >= sum(c.expect == "fail" for c in chosen), kinds
    # still itself: a good model opens and lays out after all that
    open_and_wait(qtbot, w, samples / "cnn.onnx")
    assert w.pane.main_view.scene is not None
    print(f"50 hostile files opened in {time.monotonic() - t0:.0f} s: {dict(kinds)}")
    ui_watchdog.check()
