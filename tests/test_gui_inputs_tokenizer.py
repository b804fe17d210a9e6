"""The Inputs dock's Text source uses the tokenizer.json beside the model while none is chosen. A new user opened
moe_llm.onnx (tokenizer.json in its folder), set input_ids' source to Text, typed a prompt and was told "choose a
tokenizer.json". Now the row's tokenizer field reads "tokenizer.json beside the model" (its path in the tooltip), the
spec the runs take names that file, and a tokenizer the user chooses is kept. With none beside the model: the old
message. Copies of the samples in tmp_path (the repo's folder is not touched)."""
from __future__ import annotations

import shutil

import pytest

from conftest import SAMPLES, require_module

require_module("pytestqt", "pip install -e .[test]")

from mnnscope.inspector.formats.loader import load_model  # noqa: E402
from mnnscope.inspector.inputs.data import make_inputs  # noqa: E402
from mnnscope.inspector.inputs.sources import encode_text, tokenizer_beside  # noqa: E402
from mnnscope.inspector.profile.service import ProfileOptions  # noqa: E402
from mnnscope.inspector.store.runs import RunStore  # noqa: E402

import test_gui  # noqa: E402
from test_gui import open_and_wait  # noqa: E402
from test_gui_inputs import _profile  # noqa: E402  (a profile run through the window's runner)

# the window fixtures of test_gui (assigned, not imported by name: pyflakes knows no noqa)
make_window, settings_dir, window = test_gui.make_window, test_gui.settings_dir, test_gui.window

pytestmark = pytest.mark.gui
PROMPT = "hello world"


def _model_in(folder, tokenizer: str | None = "tokenizer.json"):
    """A copy of moe_llm.onnx in `folder`, with a copy of the sample tokenizer.json beside it named `tokenizer`."""
    folder.mkdir(parents=True, exist_ok=True)
    model = folder / "moe_llm.onnx"
    shutil.copyfile(SAMPLES / "moe_llm.onnx", model)
    if tokenizer:
        shutil.copyfile(SAMPLES / "tokenizer.json", folder / tokenizer)
    return model


def _text_row(qtbot, window, model):
    """`model` open, the Inputs dock shown, input_ids' source set to Text and the prompt typed (as a user does)."""
    open_and_wait(qtbot, window, model, shapes=False)
    window.show_dock("Inputs")
    panel = window.panels["Inputs"]
    (row,) = panel.rows
    assert row.name == "input_ids"
    row.source.setCurrentText("Text")
    qtbot.keyClicks(row.text, PROMPT)
    return panel, row


def test_text_uses_the_tokenizer_beside_the_model_and_a_run_takes_it(qtbot, window, tmp_path):
    model = _model_in(tmp_path / "llm")
    beside = str(tmp_path / "llm" / "tokenizer.json")
    panel, row = _text_row(qtbot, window, model)

    # no "choose a tokenizer.json": the row is fine and says which tokenizer it uses
    assert row.error.text() == "" and not panel.errors, row.error.text()
    assert row.tokenizer.text() == ""   # nothing chosen: the field is still the user's to fill
    assert row.tokenizer.placeholderText() == "tokenizer.json beside the model"
    assert beside in row.tokenizer.toolTip()
    spec = window.input_spec()
    assert spec["text"] == PROMPT and spec["tokenizer"] == beside
    assert not window.inputs_refused("Profile")   # (what the window's runs ask before they start)

    # the spec feeds the model: the prompt's token ids, and a real profile run of it
    ids = encode_text(PROMPT, beside)["input_ids"]
    arr = make_inputs(load_model(str(model), native=False), **spec)["input_ids"]
    assert arr.tolist() == [ids]
    result = _profile(qtbot, window, ProfileOptions(str(model), runs=2, warmup=1, **spec))
    assert result["inputs"] == [{"name": "input_ids", "shape": [1, len(ids)], "dtype": "int64"}]
    record = RunStore().get_run(result["run_id"])
    assert record["settings"]["tokenizer"] == beside and record["settings"]["text"] == PROMPT

    # another tokenizer chosen: it is the one used, and kept (also when the model is opened again)
    other = tmp_path / "elsewhere" / "mine.json"
    other.parent.mkdir()
    shutil.copyfile(SAMPLES / "tokenizer.json", other)
    row.tokenizer.setText(str(other))
    assert row.error.text() == ""
    assert window.input_spec()["tokenizer"] == str(other)
    assert row.tokenizer.toolTip() == ""   # (the field shows the chosen path itself)
    open_and_wait(qtbot, window, _model_in(tmp_path / "alone", tokenizer=None), shapes=False)
    open_and_wait(qtbot, window, model, shapes=False)
    (row,) = panel.rows
    assert row.kind == "Text" and row.tokenizer.text() == str(other)
    assert window.input_spec()["tokenizer"] == str(other)

    # emptied again: back to the one beside the model
    row.tokenizer.setText("")
    assert row.error.text() == "" and window.input_spec()["tokenizer"] == beside


def test_without_a_tokenizer_beside_the_model_the_row_asks_for_one(qtbot, window, tmp_path):
    (tmp_path / "tokenizer.json").write_bytes((SAMPLES / "tokenizer.json").read_bytes())  # a folder up: not looked in
    model = _model_in(tmp_path / "bare", tokenizer=None)
    panel, row = _text_row(qtbot, window, model)
    assert row.error.text() == "choose a tokenizer.json"
    assert panel.errors == ["choose a tokenizer.json"]
    assert row.tokenizer.placeholderText() == "tokenizer.json" and row.tokenizer.toolTip() == ""
    assert window.input_spec()["tokenizer"] is None   # (a row with a problem falls back to random data)


def test_tokenizer_beside_looks_in_the_models_own_folder_only(tmp_path):
    model = _model_in(tmp_path / "m", tokenizer=None)
    (tmp_path / "tokenizer.json").write_text("{}")   # the folder above: never searched
    assert tokenizer_beside(str(model)) is None
    assert tokenizer_beside(None) is None
    (tmp_path / "m" / "tokenizer.json").write_text("{}")
    assert tokenizer_beside(str(model)) == str(tmp_path / "m" / "tokenizer.json")
    (tmp_path / "m" / "moe_llm.tokenizer.json").write_text("{}")   # the model's own: preferred
    assert tokenizer_beside(model) == str(tmp_path / "m" / "moe_llm.tokenizer.json")
