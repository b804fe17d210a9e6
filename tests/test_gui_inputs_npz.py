"""The Inputs dock on the romanizer decoder (prefix, memory, src_mask, hidden), as a new user met it: one .npz holding
every input's array had to be chosen four times, once per input; the dim names lost their underscore ("tgt len = 8");
the red "choose an .npy or .npz file" under a row moved every row below it up and down as it came and went."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")
from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtGui import qGray  # noqa: E402

from mnnscope.inspector.formats.loader import load_model  # noqa: E402
from mnnscope.inspector.inputs.data import make_inputs  # noqa: E402

import test_gui  # noqa: E402
from test_gui import open_and_wait  # noqa: E402

# the window fixtures of test_gui (assigned, not imported by name: pyflakes knows no noqa)
make_window, settings_dir, window = test_gui.make_window, test_gui.settings_dir, test_gui.window

pytestmark = pytest.mark.gui
NAMES = ["prefix", "memory", "src_mask", "hidden"]


@pytest.fixture
def decoder():
    from test_real_models import real_model
    return real_model("arabic_name_romanizer", "resources/decoder.onnx")


def _npz(tmp_path, name="dec_inputs.npz", src_len=7, tgt_len=5, **extra):
    """An .npz holding an array for each decoder input (and `extra` keys that name no input)."""
    rng = np.random.default_rng(0)
    arrays = {"prefix": rng.integers(0, 160, (1, tgt_len)).astype(np.int64),
              "memory": rng.standard_normal((1, src_len, 256)).astype(np.float32),
              "src_mask": np.zeros((1, src_len), bool),
              "hidden": rng.standard_normal((1, 2, 256)).astype(np.float32), **extra}
    path = tmp_path / name
    np.savez(path, **arrays)
    return path, arrays


def _choose(row, path) -> None:
    """What the user does for one input: source File, then the file."""
    row.source.setCurrentText("File")
    row.file_path.setText(str(path))


def test_an_npz_chosen_for_one_input_feeds_the_others_it_names(qtbot, window, decoder, tmp_path):
    open_and_wait(qtbot, window, decoder, shapes=False)
    panel = window.panels["Inputs"]
    assert [r.name for r in panel.rows] == NAMES
    path, arrays = _npz(tmp_path, extra=np.ones(3, np.float32))   # "extra": a key that is no input's name

    _choose(panel.row("prefix"), path)
    assert [r.kind for r in panel.rows] == ["File"] * 4
    assert [r.file_path.text() for r in panel.rows] == [str(path)] * 4
    assert panel.shared_note.isVisibleTo(panel)
    assert panel.shared_note.text() == "also used for memory, src_mask, hidden (their names are in dec_inputs.npz)"
    assert not panel.validate()
    # the sizes follow the file, as for a file chosen for each input
    assert {r.name: r.sizes() for r in panel.rows} == {"prefix": [1, 5], "memory": [1, 7, 256], "src_mask": [1, 7],
                                                       "hidden": [1, 2, 256]}
    spec = panel.spec()
    assert spec["files"] == {n: str(path) for n in NAMES}
    got = make_inputs(load_model(str(decoder), native=False), **spec)
    assert set(got) == set(NAMES) and all(np.array_equal(got[n], arrays[n]) for n in NAMES)

    # exactly what choosing the file for each input gives (the dock's own per-input path: a restored run's files)
    panel.reset()
    assert [r.kind for r in panel.rows] == ["Random"] * 4 and not panel.shared_note.isVisibleTo(panel)
    panel.restore({"settings": {"input_spec": {"seed": 0, "files": {n: str(path) for n in NAMES}}}}, follow=False)
    assert not panel.shared_note.isVisibleTo(panel)  # (chosen for each: nothing was shared)
    restored = panel.spec()
    assert restored == spec and {r.name: r.sizes() for r in panel.rows}["memory"] == [1, 7, 256]

    # another .npz chosen for prefix: the inputs that took the first follow it
    other, _ = _npz(tmp_path, "other.npz", src_len=4)
    panel.reset()
    _choose(panel.row("prefix"), path)
    panel.row("prefix").file_path.setText(str(other))
    assert [r.file_path.text() for r in panel.rows] == [str(other)] * 4 and panel.row("memory").sizes() == [1, 4, 256]
    # the user edits one of them: it is theirs now, and the line no longer names it
    panel.row("hidden").file_path.setText(str(path))
    assert panel.shared_note.text() == "also used for memory, src_mask (their names are in other.npz)"


def test_an_npz_leaves_the_inputs_the_user_set(qtbot, window, decoder, tmp_path):
    open_and_wait(qtbot, window, decoder, shapes=False)
    panel = window.panels["Inputs"]
    path, arrays = _npz(tmp_path)
    np.save(tmp_path / "hidden.npy", np.ones((1, 2, 256), np.float32))
    _choose(panel.row("hidden"), tmp_path / "hidden.npy")        # a file of its own
    memory = panel.row("memory")
    memory.low.setText("0")                                       # a range typed: Random on purpose
    memory.low.textEdited.emit("0")
    src_mask = panel.row("src_mask")
    src_mask.source.setCurrentText("Image")                       # chosen, then back: Random on purpose
    src_mask.source.setCurrentText("Random")

    _choose(panel.row("prefix"), path)
    assert {r.name: r.kind for r in panel.rows} == {"prefix": "File", "memory": "Random", "src_mask": "Random",
                                                   "hidden": "File"}
    assert panel.row("hidden").file_path.text() == str(tmp_path / "hidden.npy")
    assert not panel.shared_note.isVisibleTo(panel)
    spec = panel.spec()
    assert spec["files"] == {"prefix": str(path), "hidden": str(tmp_path / "hidden.npy")}
    assert spec["ranges"] == {"memory": [0.0, 1.0]}

    # an input still on its default takes it; one the .npz does not name keeps its own
    panel.reset()
    np.savez(tmp_path / "two.npz", prefix=arrays["prefix"], src_mask=arrays["src_mask"], other=arrays["hidden"])
    _choose(panel.row("prefix"), tmp_path / "two.npz")
    assert [r.kind for r in panel.rows] == ["File", "Random", "File", "Random"]
    assert panel.shared_note.text() == "also used for src_mask (its name is in two.npz)"


def test_a_broken_npz_is_said_in_its_row(qtbot, window, decoder, tmp_path):
    """A file named .npz that is no zip archive: the row says it cannot be read (zipfile's BadZipFile is neither an
    OSError nor a ValueError: it escaped the rows' checks), and no other input takes it."""
    open_and_wait(qtbot, window, decoder, shapes=False)
    panel = window.panels["Inputs"]
    (tmp_path / "broken.npz").write_bytes(b"not a zip")
    _choose(panel.row("prefix"), tmp_path / "broken.npz")
    assert "broken.npz is not a readable .npy/.npz file" in panel.row("prefix").error.text()
    assert [r.kind for r in panel.rows] == ["File", "Random", "Random", "Random"]


def _lowest_ink(widget) -> int:
    """The lowest pixel row of `widget` with dark (text) pixels in it, -1 if none."""
    img = widget.grab().toImage()
    rows = [y for y in range(img.height()) if any(qGray(img.pixel(x, y)) < 128 for x in range(img.width()))]
    return max(rows, default=-1)


def test_dim_names_show_their_underscore(qtbot, window, decoder):
    """A new user read "src len = 8": the box's editor, 13 px for a 14 px font under the app's style sheet, cut the
    text's bottom row. The editor has the height it asks for, and the underscore draws: "src_len = 8" (no letter of
    it goes below the baseline) has ink lower than "src len = 8"."""
    open_and_wait(qtbot, window, decoder, shapes=False)
    window.show_dock("Inputs")
    panel = window.panels["Inputs"]
    box = panel.row("memory").dims[1]
    qtbot.waitUntil(box.isVisible)
    assert box.text() == "src_len = 8" and panel.row("prefix").dims[1].text() == "tgt_len = 8"
    edit = box.lineEdit()
    assert edit.height() >= edit.sizeHint().height() >= box.fontMetrics().height()
    underscore = _lowest_ink(edit)
    box.setPrefix("src len = ")
    try:
        assert underscore > _lowest_ink(edit) >= 0, "the underscore of src_len is not drawn"
    finally:
        box.setPrefix("src_len = ")
    # the boxes stay no taller than the row's other fields (its combo box, its range fields)
    assert box.height() <= panel.row("memory").source.height()


def test_a_row_message_moves_no_row(qtbot, window, decoder, tmp_path):
    """The red "choose an .npy or .npz file" came under a row as its source became File and went once the file was
    chosen: the rows below moved down and up each time. The line is kept for it; a long message stays one line."""
    open_and_wait(qtbot, window, decoder, shapes=False)
    window.show_dock("Inputs")
    panel = window.panels["Inputs"]
    prefix = panel.row("prefix")
    qtbot.waitUntil(prefix.source.isVisible)

    def where():
        qtbot.wait(50)   # laid out
        return {r.name: r.source.mapTo(panel, QPoint(0, 0)) for r in panel.rows}
    before = where()
    prefix.source.setCurrentText("File")
    assert prefix.error.text() == "choose an .npy or .npz file" and prefix.error.isVisibleTo(panel)
    assert where() == before
    np.save(tmp_path / "p.npy", np.zeros((1, 5), np.int64))
    prefix.file_path.setText(str(tmp_path / "p.npy"))
    assert prefix.error.text() == "" and not prefix.error.isVisibleTo(panel)
    assert where() == before
    # a message longer than the row: one line still, all of it on hover
    long = tmp_path / ("a_file_with_a_very_long_name_" * 6 + ".npy")
    prefix.file_path.setText(str(long))
    assert prefix.error.text().startswith("no such file")
    assert " ".join(prefix.error.toolTip().split()) == prefix.error.text()  # (in lines: wrap_tip)
    assert prefix.error.height() == prefix.error.fontMetrics().height()
    assert where() == before


def test_the_first_row_takes_no_spare_height(qtbot, window, decoder):
    """In a dock taller than its rows the first row took all the spare height (the stretch the empty dock put on
    its row 1 stayed there): prefix stood alone, 200 px above memory. The rows stay together at the top."""
    window.resize(1400, 900)
    qtbot.waitUntil(lambda: window.height() == 900)
    open_and_wait(qtbot, window, decoder, shapes=False)
    window.show_dock("Inputs")
    dock = window.docks["Inputs"]
    qtbot.waitUntil(dock.isVisible)
    panel = window.panels["Inputs"]

    def tall() -> bool:   # asked again until it holds: show_dock's own deferred sizing came after the first ask on a
        window.resizeDocks([dock], [600], Qt.Vertical)   # loaded machine (CI cc28)
        return panel.scroll.viewport().height() > 300
    qtbot.waitUntil(tall, timeout=5000)
    qtbot.wait(50)
    ys = [r.source.mapTo(panel.body, QPoint(0, 0)).y() for r in panel.rows]
    steps = [b - a for a, b in zip(ys, ys[1:])]
    assert max(steps) - min(steps) <= 2 and max(steps) < 3 * panel.row("prefix").source.height(), ys
