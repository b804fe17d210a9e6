"""The Runs dock (the run store's history of the open model, two runs compared and drawn on the graph, a run
repeated) and the Log dock (every job's log lines), with real profiles, comparisons and conversions, under the UI
watchdog."""
from __future__ import annotations

import os
import shutil

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")

from mnnscope.inspector.compare.options import CompareOptions  # noqa: E402
from mnnscope.inspector.compare.tolerance import Tolerance  # noqa: E402
from mnnscope.inspector.compare.service import compare_model  # noqa: E402
from mnnscope.inspector.history import diff_runs, num, op_deltas  # noqa: E402
from mnnscope.inspector.model.overlay import RAMPS, Overlay  # noqa: E402
from mnnscope.inspector.process.client import RunnerClient  # noqa: E402
from mnnscope.inspector.profile.service import ProfileOptions, run_profile  # noqa: E402
from mnnscope.inspector.store.runs import RunStore  # noqa: E402
from PySide6.QtGui import QTextDocument  # noqa: E402

from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401

pytestmark = pytest.mark.gui


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A run store of the test's own (the dock reads the default store: $MNNSCOPE_DATA_DIR)."""
    monkeypatch.setenv("MNNSCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MNNSCOPE_RUNS", raising=False)
    return RunStore()


@pytest.fixture
def two_profiles(store, samples):
    """Two real profiles of cnn.mnn with different settings (recorded before the window and the watchdog
    start: the test thread waits on them)."""
    with RunnerClient() as client:  # stopped before the window exists: the window's check counts child processes
        a = run_profile(ProfileOptions(model=str(samples / "cnn.mnn"), threads=1, runs=3), client=client, store=store)
        b = run_profile(ProfileOptions(model=str(samples / "cnn.mnn"), threads=2, runs=4, precision="low"),
                        client=client, store=store)
    return a, b


def _runs_panel(window):
    panel = window.panels.get("Runs")
    assert panel is not None, "the Runs dock is built (gui/panels/runs.py)"
    return panel


def _open(qtbot, window, path, dog):
    dog.pause()  # the first paint of a process builds glyph caches (~100 ms): not this dock's work
    view = open_and_wait(qtbot, window, path)
    dog.resume()
    return view


def test_runs_dock_lists_compares_overlays_and_repeats(qtbot, store, two_profiles, samples, window, ui_watchdog):
    a, b = two_profiles
    panel = _runs_panel(window)
    view = _open(qtbot, window, samples / "cnn.mnn", ui_watchdog)
    qtbot.waitUntil(lambda: not panel.busy and {r["id"] for r in panel.runs} == {a["run_id"], b["run_id"]},
                    timeout=30000)

    # Both runs listed newest first, with kind, settings, backend and their headline figure.
    assert [r["id"] for r in panel.runs] == [b["run_id"], a["run_id"]]
    rows = {int(panel.table.topLevelItem(i).text(0)): panel.table.topLevelItem(i)
            for i in range(panel.table.topLevelItemCount())}
    for res in (a, b):
        item = rows[res["run_id"]]
        assert item.text(1) == "profile"
        assert item.text(5) == "CPU"
        assert item.text(6) == f"{num(res['total_ms'], '{:.4g}')} ms"
    assert "threads=1" in rows[a["run_id"]].text(4) and "threads=2" in rows[b["run_id"]].text(4)
    assert "low" in rows[b["run_id"]].text(4)

    # the Run menu's twins of Compare and Repeat are greyed as the buttons are (helper 107: enabled with no run)
    compare_act, repeat_act = (window.actions_by_name[n] for n in ("Compare Selected Runs", "Repeat Selected Run"))
    panel.select_runs([])
    assert not compare_act.isEnabled() and not repeat_act.isEnabled()
    panel.select_runs([a["run_id"]])
    assert not compare_act.isEnabled() and repeat_act.isEnabled()

    # Two selected: the diff (older run as a) with the cnn's ops, largest change first, drawn on the graph.
    with qtbot.waitSignal(panel.diffed, timeout=30000) as got:
        panel.select_runs([a["run_id"], b["run_id"]])
    assert compare_act.isEnabled() and not repeat_act.isEnabled()
    d = got.args[0]
    assert d["kind"] == "profile" and d["a"]["id"] == a["run_id"] and d["b"]["id"] == b["run_id"]
    assert d["total_ratio"] == pytest.approx(b["total_ms"] / a["total_ms"])
    assert d["settings_changed"]["threads"] == [1, 2]
    # b asked for precision low; where it ran as high (x86 CPUs without fp16 arithmetic), the diff says so instead
    # of crediting the precision with the change (tryout 66: "precision: high -> low ... b 5.44x slower")
    if b.get("precision_effective") and b["precision_effective"] != "low":
        eff = b["precision_effective"]
        assert d["precision_ran"] == [a["precision_effective"], eff]
        assert f"precision: high \u2192 low (ran as {eff})" in panel.diff_label.text()
        if eff == a["precision_effective"]:
            assert f"precision high -> low changed nothing: both runs ran at {eff} on this machine, so the " \
                   "difference is the other settings' (threads, runs)" in d["warnings"], d["warnings"]
            # the warning's line in view: the label is as tall as its wrapped lines (tryout 71: cut under the table)
            lab = panel.diff_label
            assert d["warnings"][0] in shown_text(lab)
            assert lab.minimumSizeHint().height() >= lab.heightForWidth(lab.width()) > 0
    names = {op["name"] for op in a["ops"]}
    assert {c["name"] for c in d["ops"]} == names  # same model: every op on both sides
    deltas = [abs(c["delta_ms"]) for c in d["ops"]]
    assert deltas == sorted(deltas, reverse=True)
    assert panel.deltas.topLevelItemCount() == len(d["ops"])
    assert panel.deltas.topLevelItem(0).text(5) == d["ops"][0]["name"]
    assert "\u00d7" + num(d["total_ratio"]) in panel.diff_label.text()
    from mnnscope.inspector.history import ratio_words
    assert ratio_words(d["total_ratio"]) in panel.diff_label.text()  # in words too (x0.857 alone, tryout 15)
    assert view.overlay is panel.overlay and view.overlay.scale.colours == RAMPS["diverge"]
    # with a legend on the graph saying what the colours mean (tryout 11: none, only a node's tooltip told)
    assert panel.legend.isVisible() and panel.legend.text().startswith(panel.overlay.name)
    assert "faster in b" in panel.legend.text()
    assert view.overlay.scale.vmin == -view.overlay.scale.vmax  # no change is the middle colour
    assert len(view._overlay_values) == len(names & set(view.table.names)) > 0
    sc, fills, checked = view.scene, view.canvas.fill_override, 0
    for op, v in view._overlay_values.items():
        leaf = int(sc.leaf_of_item[int(sc.vg.rep[op])])
        if int(sc.vg.leaves[leaf]) == op:  # an op drawn as itself (not inside a collapsed scope)
            assert fills[leaf] == view.overlay.scale.colour(v)
            checked += 1
    assert checked > 0
    # a refresh of the list (after any job) keeps the two selected and their diff (tryout 66: the diff went to
    # "Select two runs to compare them" with both runs still selected and Compare enabled)
    with qtbot.waitSignal(panel.listed, timeout=30000):
        panel.refresh()
    assert sorted(panel.selected_ids()) == sorted([a["run_id"], b["run_id"]])
    assert panel.diff is d and panel.overlay is not None and "changed:" in panel.diff_label.text()

    # A delta row selects its op on the graph.
    row = panel.deltas.topLevelItem(0)
    # (by the dock's own lookup: the largest change may be a piece MNN split off an op at run time, "<tensor>_raster_0",
    # which denotes that op; names.index() failed on one in a CI run)
    op = panel.op_index(row.text(5))
    assert op is not None, row.text(5)
    assert panel.op_index("/conv1/Conv_output_0_raster_0") == panel.op_index("/conv1/Conv_output_0") is not None
    panel._delta_clicked(row)
    qtbot.waitUntil(lambda: view.canvas.selected == op, timeout=30000)

    # Repeat the first run: a third record with its settings (through the Profile dock when it is built).
    panel.select_runs([a["run_id"]])
    # one run selected: the diff of the two others goes, with its colours (tryout 11 read it with one run selected)
    assert panel.overlay is None and view.overlay is None and panel.deltas.topLevelItemCount() == 0
    assert not panel.legend.isVisible()
    assert panel.diff_label.text() == "Select two runs to compare them."
    window.panels["Inputs"].seed.setValue(5)   # inputs of the user's own, which the run's replace: said
    assert panel.repeat_selected() in ("job", "dock")
    assert any(f"Repeat of run {a['run_id']}: the Inputs dock now holds that run's inputs (random inputs, seed 0)"
               in t for t in window.notes.texts()), window.notes.texts()
    qtbot.waitUntil(lambda: len(panel.runs) == 3 and not panel.busy, timeout=120000)
    new = panel.runs[0]
    assert new["id"] not in (a["run_id"], b["run_id"]) and new["kind"] == "profile"
    assert new["settings"]["threads"] == 1 and new["model_sha256"] == panel.digest

    # Delete it again (no dialog when confirm=False): the row and its run folder go.
    folder = new["run_dir"]
    panel.select_runs([new["id"]])
    assert panel.delete_selected(confirm=False)
    qtbot.waitUntil(lambda: len(panel.runs) == 2 and not panel.busy, timeout=30000)
    assert store.get_run(new["id"]) is None
    assert folder and not os.path.exists(folder)
    ui_watchdog.check()


def test_two_versions_of_a_model_file_and_two_comparisons(qtbot, store, samples, tmp_path, window, ui_watchdog):
    ui_watchdog.pause()  # the runs below are recorded by the test thread, before the dock is looked at
    model = tmp_path / "net.mnn"
    shutil.copyfile(samples / "cnn.mnn", model)
    onnx = str(samples / "cnn.onnx")
    with RunnerClient() as client:
        old = run_profile(ProfileOptions(model=str(model), runs=2), client=client, store=store)
        shutil.copyfile(samples / "encoder_block.mnn", model)  # the file changes: another version
        new = run_profile(ProfileOptions(model=str(model), runs=2), client=client, store=store)
        c1 = compare_model(onnx, CompareOptions(modes=["fp32"]), client=client, store=store)
        # judged with a tolerance of the user's (rel_l2 <= 1e-9: fp32 fails it)
        c2 = compare_model(onnx, CompareOptions(modes=["fp32", "fp16w"], tolerance=Tolerance(
            metric="rel_l2", threshold=1e-9)), client=client, store=store)
    ui_watchdog.resume()

    panel = _runs_panel(window)
    _open(qtbot, window, model, ui_watchdog)
    qtbot.waitUntil(lambda: not panel.busy and [r["id"] for r in panel.runs] == [new["run_id"]], timeout=30000)
    panel.scope.setCurrentIndex(1)  # this model and its other versions
    qtbot.waitUntil(lambda: not panel.busy and [r["id"] for r in panel.runs] == [new["run_id"], old["run_id"]],
                    timeout=30000)
    other = next(panel.table.topLevelItem(i) for i in range(2)
                 if int(panel.table.topLevelItem(i).text(0)) == old["run_id"])
    assert other.text(3) == f"net.mnn @{old_hash(store, old)[:8]}"
    with qtbot.waitSignal(panel.diffed, timeout=30000) as got:
        panel.select_runs([old["run_id"], new["run_id"]])
    d = got.args[0]
    assert {o["name"] for o in d["only_a"]} and {o["name"] for o in d["only_b"]}
    assert "another version of the model" in panel.diff_label.text()

    # Every model: the two comparisons of cnn.onnx, diffed mode by mode.
    panel.scope.setCurrentIndex(2)
    qtbot.waitUntil(lambda: not panel.busy and len(panel.runs) == 4, timeout=30000)
    # Each comparison's row says which of its modes passed and which failed (not "FAILED" for the whole run).
    texts = {int(panel.table.topLevelItem(i).text(0)): panel.table.topLevelItem(i).text(6) for i in range(4)}
    # a run's settings whole in its tooltip, the tolerance in words (it was the cell's text, cut at 120 characters)
    tips = {int(panel.table.topLevelItem(i).text(0)): panel.table.topLevelItem(i).toolTip(4) for i in range(4)}
    assert "tolerance=rel_l2 <= 1e-09, atol 1e-05 for tiny references" in " ".join(tips[c2["run_id"]].split())
    # and its result (cut at the dock's edge at 1024x700: helper 121)
    rows = [panel.table.topLevelItem(i) for i in range(4)]
    assert all(" ".join(it.toolTip(6).split()) == texts[int(it.text(0))] for it in rows)
    for c in (c1, c2):
        groups = texts[c["run_id"]].split("; ")
        for m in c["modes"]:
            assert any(g.startswith("passed " if m["ok"] else "FAILED ") and f"{m['mode']} rel_l2" in g
                       for g in groups), (m["mode"], m["ok"], texts[c["run_id"]])
    with qtbot.waitSignal(panel.diffed, timeout=30000) as got:
        panel.select_runs([c1["run_id"], c2["run_id"]])
    d = got.args[0]
    assert d["kind"] == "compare"
    assert [(m["mode"], m["in_a"], m["in_b"]) for m in d["modes"]] == [("fp32", True, True), ("fp16w", False, True)]
    assert panel.deltas.topLevelItem(1).text(0) == "fp16w" and panel.deltas.topLevelItem(1).text(1) == "n/a"
    # the change of tolerance said (its "<=" vanished as a tag in the rich text), the verdicts beside the figures,
    # whole (helper 107: "b/a 1" and nothing else while one run passed and the other failed)
    assert "; tolerance: each mode's default \u2192 rel_l2 <= 1e-09" in shown_text(panel.diff_label)
    fp32 = panel.deltas.topLevelItem(0)
    assert fp32.text(4) == "match \u2192 wrong", fp32.text(4)
    assert panel.deltas.columnWidth(4) >= panel.deltas.fontMetrics().horizontalAdvance(fp32.text(4))
    assert window.pane.main_view.overlay is None  # a comparison diff draws nothing on the graph
    assert not panel.overlay_box.isVisible()
    # the list filtered to profiles: the diff pane's columns are a profile diff's, not the comparison's "a rel_l2" left
    # over (helper 111)
    panel.kind.setCurrentText("profile")
    qtbot.waitUntil(lambda: not panel.busy and all(r["kind"] == "profile" for r in panel.runs), timeout=30000)
    header = panel.deltas.headerItem()
    assert [header.text(c) for c in range(3)] == ["\u0394 ms", "a ms", "b ms"] and panel.diff is None
    panel.kind.setCurrentIndex(0)
    qtbot.waitUntil(lambda: not panel.busy and len(panel.runs) == 4, timeout=30000)
    # a comparison and a profile: nothing to diff, said on the button, never a raw "ValueError: ..." (tryout 12)
    panel.select_runs([c1["run_id"], new["run_id"]])
    assert not panel.diff_button.isEnabled() and "a compare and a profile run" in panel.diff_button.toolTip()
    assert panel.diff is None and "ValueError" not in panel.diff_label.text()

    # Repeating a comparison (no Compare dock, or another model shown: straight through the service).
    panel.select_runs([c2["run_id"]])
    assert panel.repeat_selected() in ("job", "dock")
    qtbot.waitUntil(lambda: len(panel.runs) == 5 and not panel.busy, timeout=120000)
    again = panel.runs[0]
    assert again["kind"] == "compare" and again["settings"]["modes"] == ["fp32", "fp16w"]
    assert again["settings"]["tolerance"] == c2_tolerance(store, c2)   # judged as the run it repeats
    ui_watchdog.check()


def shown_text(label) -> str:
    """What a rich-text label reads on screen."""
    doc = QTextDocument()
    doc.setHtml(label.text())
    return doc.toPlainText()


def c2_tolerance(store, result) -> dict:
    tol = store.get_run(result["run_id"])["settings"]["tolerance"]
    assert tol["metric"] == "rel_l2" and tol["threshold"] == 1e-9
    return tol


def old_hash(store, result) -> str:
    return store.get_run(result["run_id"])["model_sha256"]


def test_log_dock_shows_each_jobs_log_lines(qtbot, store, samples, tmp_path, window, ui_watchdog):
    from mnnscope.inspector.convert.service import run_convert
    from mnnscope.inspector.convert.settings import ConvertSettings
    log = window.panels.get("Log")
    assert log is not None, "the Log dock is built (gui/panels/log.py)"
    src, dst = str(samples / "cnn.onnx"), str(tmp_path / "cnn.mnn")

    def job(client, on_event, cancelled):
        return run_convert(src, dst, ConvertSettings(), client=client, on_event=on_event, run_dir=tmp_path / "conv")

    with qtbot.waitSignal(window.runner.job_finished, timeout=120000) as done:
        window.runner.run_job("convert", job)
    assert done.args[:2] == ["convert", True]
    qtbot.waitUntil(lambda: "convert: done" in log.text(), timeout=10000)
    text = log.text()
    lines = text.splitlines()
    assert lines[0].startswith("\u2500\u2500 convert \u00b7 ")  # the job's header
    converter = (tmp_path / "conv" / "convert.log").read_text()
    said = [line for line in converter.splitlines() if line.strip()]
    assert said and all(line in lines for line in said[:5])  # the converter's own lines, as it wrote them

    # The filter keeps the matching lines (and the headers).
    word = said[0].split()[0]
    log.filter.setText(word)
    qtbot.waitUntil(lambda: log.filter_text == word.lower(), timeout=5000)
    assert all(word.lower() in line.lower() or line.startswith("\u2500\u2500") for line in log.text().splitlines())
    out = tmp_path / "saved.log"
    log.save(str(out))
    assert out.read_text().strip() == log.text().strip()
    ui_watchdog.check()


def test_view_twin_renders_the_runs_diff(two_profiles, samples, tmp_path):
    """`mnnscope view MODEL --runs-diff A,B --screenshot OUT.png` drives the same dock offscreen."""
    import subprocess
    import sys
    from PySide6.QtGui import QColor, QImage
    a, b = two_profiles
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    out = tmp_path / "diff.png"

    def view(*args):
        return subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "view", str(samples / "cnn.mnn"), *args],
                              env=env, capture_output=True, text=True, timeout=180)

    r = view("--runs-diff", f"{a['run_id']},{b['run_id']}", "--screenshot", str(out), "--size", "1400x900",
             "--no-shapes")
    assert r.returncode == 0, r.stderr
    img = QImage(str(out))
    assert (img.width(), img.height()) == (1400, 900)
    # The ops are filled with their change's colour on the diverging scale (the dock's own overlay of the diff).
    store = RunStore()
    overlay = Overlay.diverging("d", op_deltas(diff_runs(store.get_run(a["run_id"]), store.get_run(b["run_id"]))))
    colours = {QColor(overlay.scale.colour(v)).rgb() for v in overlay.values.values()}
    seen = {img.pixel(x, y) for x in range(0, img.width(), 2) for y in range(0, img.height(), 2)}
    # (two timing runs of a tiny model can give few distinct changes: every distinct colour, up to three, drawn)
    assert len(colours & seen) >= min(3, len(colours))

    r = view("--runs-diff", f"{a['run_id']},999", "--screenshot", str(out), "--no-shapes")
    assert r.returncode == 1 and "no run 999" in r.stderr
    r = view("--runs-diff", "7", "--screenshot", str(out))
    assert r.returncode == 2 and "two run ids" in r.stderr


def test_log_dock_keeps_up_with_a_flood_of_lines(qtbot, store, window, ui_watchdog):
    """A job that logs 20,000 lines as fast as it can: the dock writes them in batches, the view shows the newest
    VIEW_LINES, Copy/Save keep them all, and the UI thread never stalls."""
    from mnnscope.gui.panels.log import VIEW_LINES
    log = window.panels["Log"]
    n = 20000

    def job(client, on_event, cancelled):
        for i in range(n):
            on_event("log", {"text": f"line {i}", "stream": "native"})
        return n

    with qtbot.waitSignal(window.runner.job_finished, timeout=60000):
        window.runner.run_job("flood", job)
    qtbot.waitUntil(lambda: log.text().endswith("flood: done"), timeout=30000)
    # the view catches up on its batch timer
    qtbot.waitUntil(lambda: log.view.toPlainText().endswith("flood: done"), timeout=30000)
    lines = log.text().splitlines()
    assert lines[1:-1] == [f"line {i}" for i in range(n)]  # between the header and the end line, in order
    shown = log.view.toPlainText().splitlines()
    assert log.view.blockCount() <= VIEW_LINES and shown[-2:] == [f"line {n - 1}", "   flood: done"]
    ui_watchdog.check()


def test_log_dock_gets_the_convert_docks_log(qtbot, store, samples, tmp_path, window, ui_watchdog):
    """Model > Convert to MNN (the Convert dock): the converter's whole log reaches the Log dock when it
    finishes, streamed or not."""
    model = tmp_path / "model" / "cnn.onnx"
    model.parent.mkdir()
    shutil.copy(samples / "cnn.onnx", model)
    _open(qtbot, window, model, ui_watchdog)
    window.actions_by_name["Convert to MNN"].trigger()
    dlg = window.panels["Convert"]
    with qtbot.waitSignal(dlg.conversion_done, timeout=120000) as done:
        assert dlg.start()
    assert done.args[0] == "ok"
    text = window.panels["Log"].text()
    assert "\u2500\u2500 convert (whole log) \u00b7 " in text
    assert "Converted Success" in text and text.count("\n") > 5
    ui_watchdog.check()


def test_putting_a_runs_diff_away_brings_the_profiles_colours_back(qtbot, store, two_profiles, samples, window,
                                                                    ui_watchdog):
    """Tryout 12: the graph showed a profile's times, a Runs diff replaced them, and deselecting the diff left the
    op categories: the colours the graph had before the diff come back."""
    from test_gui_profile import profile_and_wait
    a, b = two_profiles
    view = _open(qtbot, window, samples / "cnn.mnn", ui_watchdog)
    window.show_dock("Profile")
    prof, _ = profile_and_wait(qtbot, window)
    shown = view.overlay
    assert shown is not None and "profile" in shown.meta  # the profile's times on the graph
    panel = _runs_panel(window)
    window.show_dock("Runs")
    qtbot.waitUntil(lambda: not panel.busy and {a["run_id"], b["run_id"]} <= {r["id"] for r in panel.runs},
                    timeout=30000)
    with qtbot.waitSignal(panel.diffed, timeout=30000):
        panel.select_runs([a["run_id"], b["run_id"]])
    assert view.overlay is panel.overlay
    panel.select_runs([a["run_id"]])  # one run: the diff goes
    assert view.overlay is not None and "profile" in view.overlay.meta, "the profile's colours are back"
    assert prof.legend.isVisible() and not panel.legend.isVisible()


def test_a_diff_with_a_whole_run_profile_compares_totals_and_paints_nothing(qtbot, store, window, ui_watchdog):
    """Tryout 14: MNN's whole-run profile of the romanizer's encoder against ONNX Runtime's painted the graph red as
    "slower" (every ORT op "only in b") under a total that fell x0.46. The dock says which run has whole-run times
    only, lists no ops and leaves the graph's colours alone."""
    from test_real_models import real_model
    onnx = real_model("arabic_name_romanizer", "resources/encoder.onnx")
    with RunnerClient() as client:
        a = run_profile(ProfileOptions(model=str(onnx), engine="mnn", runs=2), client=client, store=store)
        b = run_profile(ProfileOptions(model=str(onnx), engine="ort", runs=2), client=client, store=store)
    assert a["timing"] == "total_only"
    panel = _runs_panel(window)
    ui_watchdog.pause()
    view = open_and_wait(qtbot, window, onnx)
    ui_watchdog.resume()
    window.show_dock("Runs")
    qtbot.waitUntil(lambda: not panel.busy and {a["run_id"], b["run_id"]} <= {r["id"] for r in panel.runs},
                    timeout=30000)
    with qtbot.waitSignal(panel.diffed, timeout=30000):
        panel.select_runs([a["run_id"], b["run_id"]])
    assert f"run {a['run_id']} has whole-run times only" in panel.diff_label.text()
    assert panel.deltas.topLevelItemCount() == 0 and panel.overlay is None and view.overlay is None
    assert not panel.overlay_box.isVisible()


def test_the_kind_column_shows_its_longest_word(qtbot, store, window):
    """Tryout 66 at 1024x700 read "gener…" in the Kind column."""
    table = _runs_panel(window).table
    fm = table.fontMetrics()
    assert table.columnWidth(1) >= max(fm.horizontalAdvance(k) for k in ("generate", "compare", "profile")) + 12


def test_the_log_keeps_a_run_of_identical_lines_once(qtbot, window, ui_watchdog):
    """MNN printed "getshape: unable to get variable info..." over and over into the Log dock (a new-user try): a run
    of identical lines is kept once, with how often it came again."""
    log = window.panels["Log"]
    noise = "getshape: unable to get variable infogetdata_format: unable to get variable info"

    def job(client, on_event, cancelled):
        for text in ["start", *[noise] * 40, "middle", noise, "end"]:
            on_event("log", {"text": text, "stream": "native"})
        return 0

    with qtbot.waitSignal(window.runner.job_finished, timeout=60000):
        window.runner.run_job("noisy", job)
    qtbot.waitUntil(lambda: log.text().endswith("noisy: done"), timeout=30000)
    assert log.text().splitlines()[1:] == ["start", noise, "   \u2191 the line above 39 more time(s)", "middle", noise,
                                           "end", "   noisy: done"]
    qtbot.waitUntil(lambda: log.view.toPlainText().endswith("noisy: done"), timeout=30000)
    assert log.view.toPlainText().count(noise) == 2
    ui_watchdog.check()


def test_two_generations_diffed_side_by_side(qtbot, store, samples, window):
    """Helper 105 selected two generate runs (int8w, int4w) in the Runs dock: Compare stayed greyed, and Repeat
    greyed with no reason. Two generations are diffed figure by figure; Repeat says why it does not run one."""
    from mnnscope.inspector.generate.service import GenerateOptions, run_generate
    runs = []
    with RunnerClient() as client:
        for mode in ("int8w", "int4w"):
            runs.append(run_generate(GenerateOptions(model=str(samples / "moe_llm.onnx"), steps=5, mode=mode,
                                                     tokenizer=str(samples / "tokenizer.json"),
                                                     text="the cat sat on the", compare=True, layerwise=False),
                                     client=client, store=store))
    panel = _runs_panel(window)
    open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)
    window.show_dock("Runs")
    qtbot.waitUntil(lambda: not panel.busy and len(panel.runs) == 2, timeout=30000)
    panel.select_runs([runs[0]["run_id"]])
    assert not panel.repeat_button.isEnabled() and "a generate run" in panel.repeat_button.toolTip()
    with qtbot.waitSignal(panel.diffed, timeout=30000) as got:
        panel.select_runs([r["run_id"] for r in runs])
    d = got.args[0]
    assert d["kind"] == "generate" and panel.diff_button.isEnabled()
    shown = {panel.deltas.topLevelItem(i).text(0): panel.deltas.topLevelItem(i) for i in
             range(panel.deltas.topLevelItemCount())}
    assert (shown["mode"].text(1), shown["mode"].text(2)) == ("int8w", "int4w")
    fm = panel.deltas.fontMetrics()   # names and figures whole ("decode …", "1.51e+…" at 1024x700)
    for item in shown.values():
        for col in (0, 1, 2):
            if item.text(0) != "text":
                assert fm.horizontalAdvance(item.text(col)) <= panel.deltas.columnWidth(col), (item.text(col), col)
    assert shown["top-1 agreement"].text(2) == num(runs[1]["agreement_top1"])
    assert "two generations: their tokens agree for the first" in panel.diff_label.text()
    assert all(panel.deltas.isColumnHidden(c) for c in (3, 4, 5))   # no empty columns beside a and b
    assert shown["text"].toolTip(0).startswith("a: ")
    assert window.pane.main_view.overlay is None and not panel.overlay_box.isVisible()


def test_a_check_of_a_given_mnn_is_listed_and_repeated_as_one(store, samples, tmp_path):
    """Helper 114: a check of int8w.mnn against ONNX Runtime read "modes=fp32" in the Runs dock's Settings beside a
    Result "as int8w"; and Repeat compared the .onnx's own fp32 conversion on random inputs, neither the file checked
    nor the inputs given. The settings name the file; a repeat checks that file again on the run's inputs."""
    import numpy as np

    from mnnscope.gui.panels.runs import _repeat_compare
    from mnnscope.inspector.history import settings_text
    data = tmp_path / "x.npy"
    np.save(data, np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32))
    spec = {"seed": 0, "files": {"input": str(data)}}
    onnx, mnn = str(samples / "cnn.onnx"), str(samples / "cnn.mnn")
    with RunnerClient() as client:
        first = compare_model(onnx, CompareOptions(modes=["fp32"], mnn_path=mnn), inputs=spec, client=client,
                              store=store)
        run = store.get_run(first["run_id"])
        assert run["settings"]["mnn"] == os.path.abspath(mnn)
        text = settings_text(run, 4000)
        assert text.startswith("checked cnn.mnn") and "modes=" not in text, text
        again = _repeat_compare(run)(client, None, None)
    rerun = store.get_run(again["run_id"])
    assert rerun["settings"]["mnn"] == os.path.abspath(mnn) and rerun["settings"]["input_spec"] == spec
    assert again["modes"][0]["conversion"]["given"] and again["inputs_from"] == "input from x.npy"


def test_repeat_in_the_compare_dock_checks_the_file_a_check_run_checked(qtbot, store, samples, tmp_path, window,
                                                                      ui_watchdog):
    """Helper 120 repeated run 231, "checked PP-OCRv6_rec_small.mnn as int8w", from the Runs dock with the model open:
    the Compare dock compared a fresh fp32 conversion made with the Convert dock's settings of the moment (run 232,
    "close fp32"), not the file. In the dock too, a check repeats as one, on that file, and a plain comparison with
    the conversion settings it was made with."""
    import numpy as np

    from mnnscope.inspector.convert.settings import ConvertSettings
    data = tmp_path / "x.npy"
    np.save(data, np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32))
    spec = {"seed": 0, "files": {"input": str(data)}}
    fp16 = tmp_path / "cnn.fp16.mnn"
    from mnnscope.inspector.cli.app import main
    assert main(["convert", str(samples / "cnn.onnx"), "-o", str(fp16), "--fp16", "--json"]) == 0
    onnx = str(samples / "cnn.onnx")
    with RunnerClient() as client:
        first = compare_model(onnx, CompareOptions(modes=["fp32"], mnn_path=str(fp16)), inputs=spec, client=client,
                              store=store)
    assert first["modes"][0]["judged_as"] == "fp16w"  # judged by the mode its weights match
    view = _open(qtbot, window, samples / "cnn.onnx", ui_watchdog)
    compare = window.panels["Compare"]
    window.show_dock("Compare")
    window.show_dock("Convert")
    window.panels["Convert"].form.set_settings(ConvertSettings(weight_quant_bits=8))  # the dock's now: not the run's
    panel = _runs_panel(window)
    window.show_dock("Runs")
    qtbot.waitUntil(lambda: any(r["id"] == first["run_id"] for r in panel.runs), timeout=30000)
    compare.set_modes(["fp32", "int4w"])
    with qtbot.waitSignal(compare.finished, timeout=180000) as done:
        assert panel.repeat(store.get_run(first["run_id"])) == "dock"
    assert compare.modes() == ["fp32", "int4w"]  # a check is no choice of modes: the ticked ones stay
    mode = done.args[0]["modes"][0]
    assert mode["conversion"]["given"] and mode["judged_as"] == "fp16w" and mode["mnn_model"] == str(fp16), mode
    again = store.get_run(done.args[0]["run_id"])
    assert again["settings"]["mnn"] == str(fp16) and again["settings"]["input_spec"]["files"] == spec["files"]
    assert "convert_settings" not in again["settings"]
    # a plain comparison repeats with the conversion it was made with (the defaults), not the Convert dock's int8
    with RunnerClient() as client:
        plain = compare_model(onnx, CompareOptions(modes=["fp32"]), inputs=spec, client=client, store=store)
    with qtbot.waitSignal(compare.finished, timeout=180000) as done:
        assert panel.repeat(store.get_run(plain["run_id"])) == "dock"
    again = store.get_run(done.args[0]["run_id"])
    assert "convert_settings" not in again["settings"] and "mnn" not in again["settings"], again["settings"]
    assert view is window.pane.main_view


def test_the_dock_diffs_two_checked_files_by_what_they_ran_and_two_conversions(qtbot, store, samples, tmp_path,
                                                                             window, ui_watchdog):
    """Helper 120: two checks of int8 files diffed read "fp32" in the Mode column with no sizes, and two conversions
    selected left Compare greyed ("Select two runs to compare them.")."""
    import json

    from mnnscope.inspector.cli.app import main
    onnx = str(samples / "cnn.onnx")
    ids = {}
    for name, extra in (("b32", ["--weight-quant-block", "32"]), ("perch", [])):
        out = tmp_path / f"cnn_{name}.mnn"
        assert main(["convert", onnx, "-o", str(out), "--weight-quant-bits", "8", *extra, "--json"]) == 0
        ids[f"convert_{name}"] = RunStore().list_runs(kind="convert")[0]["id"]
        assert main(["compare", onnx, "--mnn", str(out), "--json"]) == 0
        ids[f"check_{name}"] = RunStore().list_runs(kind="compare")[0]["id"]
    panel = _runs_panel(window)
    _open(qtbot, window, samples / "cnn.onnx", ui_watchdog)
    window.show_dock("Runs")
    qtbot.waitUntil(lambda: not panel.busy and len(panel.runs) == 4, timeout=30000)
    with qtbot.waitSignal(panel.diffed, timeout=30000):
        panel.select_runs([ids["check_b32"], ids["check_perch"]])
    row = panel.deltas.topLevelItem(0)
    assert row.text(0) == "cnn_b32.mnn as int8w \u2192 cnn_perch.mnn as int8w", row.text(0)
    assert row.text(5).count("\u2192") == 1 and row.text(5).endswith("B"), row.text(5)  # "7.3 kB -> 11 kB"
    assert "made with:" in panel.diff_label.text() and "32" in panel.diff_label.text(), panel.diff_label.text()
    with qtbot.waitSignal(panel.diffed, timeout=30000) as got:
        panel.select_runs([ids["convert_b32"], ids["convert_perch"]])
    assert got.args[0]["kind"] == "convert" and panel.diff_button.isEnabled()
    files = next(panel.deltas.topLevelItem(i) for i in range(panel.deltas.topLevelItemCount())
                 if panel.deltas.topLevelItem(i).text(0) == "file")
    assert (files.text(1), files.text(2)) == ("cnn_b32.mnn", "cnn_perch.mnn")
    assert json.dumps(got.args[0])  # the CLI's --json of the same diff
