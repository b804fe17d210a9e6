"""The Inputs dock's Text row on first use. A new user (1024x700) set input_ids' source to Text and read the red "type
the text to tokenize", under the shape box, as being about the shape: a row's message now starts under the part it is
about (the source's page: the text box). And the Text source and its prompt came back as Random, seq = 8, when the
app was opened again: each model's inputs are now kept in the user's settings (as the Convert dock keeps its own),
and a kept entry that no longer fits the model is left out, nothing said. Copies of the samples in tmp_path."""
from __future__ import annotations

import json
import shutil

import numpy as np
from tokenizers import Tokenizer, models, pre_tokenizers
import pytest

from conftest import SAMPLES, require_module

require_module("pytestqt", "pip install -e .[test]")

from mnnscope.gui import settings as cfg  # noqa: E402
from mnnscope.gui.panels.inputs import BY_MODEL_KEY  # noqa: E402

import test_gui  # noqa: E402
from test_gui import docked_at_1024, open_and_wait  # noqa: E402
from test_gui_inputs_tokenizer import _model_in  # noqa: E402  (moe_llm.onnx with a tokenizer beside it, in tmp)

# the window fixtures of test_gui (assigned, not imported by name: pyflakes knows no noqa)
make_window, settings_dir, window = test_gui.make_window, test_gui.settings_dir, test_gui.window

pytestmark = pytest.mark.gui
PROMPT = "hello world"


def _span(panel, w) -> tuple[int, int]:
    """The columns `w` covers in `panel`: its left and right x."""
    x = w.mapTo(panel, w.rect().topLeft()).x()
    return x, x + w.width()


def test_the_text_hint_shows_under_the_text_box_not_the_shape(qtbot, window, tmp_path):
    panel = docked_at_1024(qtbot, window, _model_in(tmp_path / "llm"), "Inputs")
    (row,) = panel.rows
    qtbot.waitUntil(row.source.isVisible)
    row.source.setCurrentText("Text")
    qtbot.wait(50)   # laid out
    assert not panel.narrow
    hint = row.error
    assert hint.text() == "type the text to tokenize" and hint.isVisibleTo(panel)
    left, right = _span(panel, hint)
    box_left, box_right = _span(panel, row.text)
    shape_left, shape_right = _span(panel, row.shape_box)
    assert left < box_right and right > box_left, "the hint is not under the text box"
    assert left >= shape_right, "the hint starts under the shape box"
    assert abs(left - box_left) <= 2   # (it starts where the box starts)
    # typed: gone; emptied: back in the same place, and the rows below move no more than before
    qtbot.keyClicks(row.text, PROMPT)
    assert hint.text() == "" and not hint.isVisibleTo(panel)
    row.text.clear()
    qtbot.wait(50)
    assert hint.text() == "type the text to tokenize" and _span(panel, hint) == (left, right)


def test_a_message_about_the_sizes_stays_under_the_shape(qtbot, window, tmp_path):
    """A message about the sizes (two inputs' files disagree on a named dim) starts under the shape, as before; a
    message about the source (no file chosen yet) under its page. The romanizer's encoder: src and src_mask share
    [batch, src_len]."""
    from test_real_models import real_model
    panel = docked_at_1024(qtbot, window, real_model("arabic_name_romanizer", "resources/encoder.onnx"), "Inputs")
    src, mask = panel.row("src"), panel.row("src_mask")
    qtbot.waitUntil(mask.source.isVisible)
    mask.source.setCurrentText("File")
    qtbot.wait(50)   # laid out
    assert not panel.narrow and mask.error.text() == "choose an .npy or .npz file"
    assert _span(panel, mask.error)[0] == _span(panel, mask.details)[0]
    np.save(tmp_path / "src.npy", np.ones((1, 15), np.int64))
    np.save(tmp_path / "mask8.npy", np.zeros((1, 8), bool))
    src.source.setCurrentText("File")
    src.file_path.setText(str(tmp_path / "src.npy"))
    mask.file_path.setText(str(tmp_path / "mask8.npy"))
    qtbot.wait(50)
    assert "src_len is 8 in mask8.npy but 15 in src.npy" in mask.error.text()
    assert _span(panel, mask.error)[0] == _span(panel, mask.shape_box)[0]


def test_the_text_source_and_its_prompt_are_kept_for_the_next_start(qtbot, make_window, settings_dir, tmp_path):
    model = _model_in(tmp_path / "llm")
    first = make_window()
    open_and_wait(qtbot, first, model, shapes=False)
    first.show_dock("Inputs")
    panel = first.panels["Inputs"]
    (row,) = panel.rows
    row.source.setCurrentText("Text")
    qtbot.keyClicks(row.text, PROMPT)
    assert row.error.text() == ""
    n = row.dims[1].value()
    assert n != 8
    first.close()   # (the app closing: a new window is the next start)
    # the tokenizer beside the model kept as none, to follow the model's folder (a kept path went stale when it moved)
    assert cfg.by_model(BY_MODEL_KEY)[str(model)]["tokenizer"] is None

    again = make_window()
    open_and_wait(qtbot, again, model, shapes=False)
    again.show_dock("Inputs")
    panel = again.panels["Inputs"]
    (row,) = panel.rows
    assert row.kind == "Text" and row.text.text() == PROMPT and row.tokenizer.text() == ""   # (the one beside it)
    assert row.error.text() == "" and row.dims[1].value() == n
    assert again.input_spec()["text"] == PROMPT

    # a tokenizer chosen elsewhere, and another model opened in between: both kept too
    other = tmp_path / "elsewhere" / "mine.json"
    other.parent.mkdir()
    shutil.copyfile(SAMPLES / "tokenizer.json", other)
    row.tokenizer.setText(str(other))
    open_and_wait(qtbot, again, SAMPLES / "cnn.onnx", shapes=False)
    again.close()
    third = make_window()
    open_and_wait(qtbot, third, model, shapes=False)
    (row,) = third.panels["Inputs"].rows
    assert row.kind == "Text" and row.text.text() == PROMPT and row.tokenizer.text() == str(other)

    # a row refused (a tokenizer of another model, ids past the table): kept as typed, its red line back (helper 96:
    # the quit wrote nothing for the model, and the entry kept before was gone)
    big = Tokenizer(models.WordLevel({"[UNK]": 0, "hello": 29916}, unk_token="[UNK]"))
    big.pre_tokenizer = pre_tokenizers.Whitespace()
    big.save(str(tmp_path / "big.json"))
    row.tokenizer.setText(str(tmp_path / "big.json"))
    assert row.error.text().startswith("ids up to 29916")
    third.close()
    fourth = make_window()
    open_and_wait(qtbot, fourth, model, shapes=False)
    (row,) = fourth.panels["Inputs"].rows
    assert row.kind == "Text" and row.text.text() == PROMPT and row.tokenizer.text() == str(tmp_path / "big.json")
    assert row.error.text().startswith("ids up to 29916")
    third = fourth

    # the defaults set again: forgotten
    third.panels["Inputs"].reset()
    third.close()
    assert str(model) not in cfg.by_model(BY_MODEL_KEY)


def test_kept_inputs_that_no_longer_fit_the_model_are_left_out(qtbot, make_window, settings_dir, tmp_path):
    model = _model_in(tmp_path / "llm")
    gone = str(tmp_path / "gone" / "tokenizer.json")
    for entry in ({"text": PROMPT, "tokenizer": gone},                       # its tokenizer moved
                  {"shapes": {"tokens": [1, 5]}},                            # an input the model no longer has
                  {"shapes": {"input_ids": [1, 5, 2]}},                      # another rank
                  {"files": {"input_ids": str(tmp_path / "gone.npy")}},      # a file gone
                  {"ranges": {"input_ids": "0..5"}, "seed": "x"},            # not what this version wrote
                  ["not", "a", "table"]):
        cfg.settings().setValue(BY_MODEL_KEY, json.dumps({str(model): entry}))
        w = make_window()
        open_and_wait(qtbot, w, model, shapes=False)
        panel = w.panels["Inputs"]
        (row,) = panel.rows
        assert row.kind == "Random" and row.sizes() == [1, 8], entry
        assert not panel.errors and "not an input" not in panel.status.text(), entry
        w.shutdown()
    cfg.settings().setValue(BY_MODEL_KEY, "{not json")   # (the whole table unreadable)
    w = make_window()
    open_and_wait(qtbot, w, model, shapes=False)
    assert w.panels["Inputs"].rows[0].kind == "Random"

    # one that fits: sizes typed on Random, the seed and a range come back
    open_and_wait(qtbot, w, SAMPLES / "cnn.onnx", shapes=False)
    w.panels["Inputs"]._kept.clear()   # (this session's own: as after a restart)
    cfg.settings().setValue(BY_MODEL_KEY, json.dumps(
        {str(model): {"seed": 7, "shapes": {"input_ids": [1, 5]}, "ranges": {"input_ids": [0, 50]}}}))
    open_and_wait(qtbot, w, model, shapes=False)
    panel = w.panels["Inputs"]
    (row,) = panel.rows
    assert row.kind == "Random" and row.sizes() == [1, 5] and panel.seed.value() == 7 and row.high.text() == "50"
