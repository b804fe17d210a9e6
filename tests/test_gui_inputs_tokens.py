"""A Text row's sizes are its text's token count, as a File row's are its file's. A new user set input_ids' source to
Text, typed a 13-token prompt and ran: the row did not say how many tokens the text made, and Properties still said
"1x8 at the input sizes" (the spin boxes' default 8), the dock's sizes ignoring the text. Now the row says "13 tokens"
beside the text, its sizes (and so Properties, the FLOPs, an .mnn's shapes) are [1, 13], the inputs sharing the seq
dim (attention_mask, position_ids) follow, and the count is the run's own (special tokens added, the file's padding
off). A tokenizer that does not load, or none: no count, the row says why. The Text dock finds `<stem>.tokenizer.json`
beside the model as the Inputs dock does. Counts are the real tokenizer's (the tokenizers library), never typed in."""
from __future__ import annotations

import os
import shutil

import pytest

from conftest import SAMPLES, require_module

require_module("pytestqt", "pip install -e .[test]")
require_module("tokenizers", "pip install tokenizers")

from PySide6.QtWidgets import QLabel  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

from mnnscope.inspector.formats.loader import load_model  # noqa: E402
from mnnscope.inspector.inputs.data import make_inputs  # noqa: E402
from mnnscope.inspector.inputs.sources import encode_text  # noqa: E402

import test_gui  # noqa: E402
from test_gui import open_and_wait  # noqa: E402
from test_gui_inputs_tokenizer import _model_in  # noqa: E402  (moe_llm.onnx with a tokenizer beside it, in tmp)
from test_inputs import _bert_like  # noqa: E402  (input_ids, attention_mask, ..., position_ids: [batch, seq])

# the window fixtures of test_gui (assigned, not imported by name: pyflakes knows no noqa)
make_window, settings_dir, window = test_gui.make_window, test_gui.settings_dir, test_gui.window

pytestmark = pytest.mark.gui
PROMPT = "the model runs on words"
MORE = " and then some more"


def _count(tokenizer, text: str) -> int:
    """The real tokenizer's count of `text`, as a run feeds it (encode_text: padding and truncation off)."""
    tok = Tokenizer.from_file(str(tokenizer))
    tok.no_padding()
    tok.no_truncation()
    return len(tok.encode(text).ids)


def _count_label(row) -> QLabel | None:
    return row.details.findChild(QLabel, "TokenCount")


def _text_on(qtbot, window, model, name: str = "input_ids", text: str = PROMPT):
    """`model` open, the Inputs dock shown, `name`'s source set to Text and `text` typed (as a user does)."""
    open_and_wait(qtbot, window, model, shapes=False)
    window.show_dock("Inputs")
    panel = window.panels["Inputs"]
    row = panel.row(name)
    row.source.setCurrentText("Text")
    qtbot.keyClicks(row.text, text)
    return panel, row


def test_a_text_rows_sizes_are_its_token_count_and_properties_follow(qtbot, window, tmp_path):
    model = _model_in(tmp_path / "llm")
    tok = tmp_path / "llm" / "tokenizer.json"
    n = _count(tok, PROMPT)
    assert n != 8 and n == len(encode_text(PROMPT, str(tok))["input_ids"])   # (not the boxes' default)
    panel, row = _text_on(qtbot, window, model)
    assert row.error.text() == "" and not panel.errors, row.error.text()

    # the dock's sizes are the text's, as the run feeds it
    assert panel.sizes_now() == {"input_ids": [1, n]}
    assert panel.dim_values() == {"seq": n}
    assert row.dims[1].value() == n and row.dims[1].text() == f"seq = {n}"
    assert not row.dims[1].isEnabled()   # (the text sets it: typing there would not count)
    spec = window.input_spec()
    assert make_inputs(load_model(str(model), native=False), **spec)["input_ids"].shape == (1, n)
    # the row says how many tokens the text makes, beside it
    label = _count_label(row)
    assert label is not None and label.text() == f"{n} tokens" and label.isVisibleTo(panel)
    # the text box kept its width as the count came (it narrowed under the typing: a new-user try)
    width = row.text.width()
    row.text.setText("")
    qtbot.waitUntil(lambda: label.text() == "")
    qtbot.wait(50)
    assert row.text.width() == width, (row.text.width(), width)
    row.text.setText(PROMPT)
    qtbot.waitUntil(lambda: label.text() == f"{n} tokens")

    # Properties: the summary's FLOPs and the input's shape at the text's count, not at the default 8
    props = window.properties
    qtbot.waitUntil(lambda: props.summary is not None and props.summary.get("flops_at") == {"seq": n},
                    timeout=20000)
    text = " ".join(props.text().split())
    assert f"at seq={n}" in text and "at seq=8" not in text
    assert f"1\u00d7{n} at the input sizes" in text and "1\u00d78 at the input sizes" not in text, text

    # more text typed: the count and the sizes follow
    qtbot.keyClicks(row.text, MORE)
    m = _count(tok, PROMPT + MORE)
    assert m != n and label.text() == f"{m} tokens"
    assert panel.sizes_now() == {"input_ids": [1, m]} and panel.dim_values() == {"seq": m}
    qtbot.waitUntil(lambda: props.summary is not None and props.summary.get("flops_at") == {"seq": m},
                    timeout=20000)

    # back to Random: the default sizes, no count, the box the user's again
    row.source.setCurrentText("Random")
    assert panel.sizes_now() == {"input_ids": [1, 8]} and label.text() == ""
    assert row.dims[1].isEnabled()


def test_the_count_is_the_runs_with_special_tokens_and_the_files_padding(qtbot, window, tmp_path):
    """A tokenizer.json that adds an end token and pads every text to 32 (as real ones do): the count is what the run
    feeds (the end token in, the padding out), in the Inputs dock and in the Text dock's check of a prompt's length."""
    from tokenizers.processors import TemplateProcessing
    folder = tmp_path / "llm"
    model = _model_in(folder, tokenizer=None)
    tok = Tokenizer.from_file(str(SAMPLES / "tokenizer.json"))
    tok.post_processor = TemplateProcessing(single="$A <eos>", special_tokens=[("<eos>", 1)])
    tok.enable_padding(pad_id=0, pad_token="<unk>", length=32)
    tok.save(str(folder / "tokenizer.json"))
    prompt = PROMPT + MORE
    n = len(encode_text(prompt, str(folder / "tokenizer.json"))["input_ids"])
    assert n == _count(folder / "tokenizer.json", prompt) and n not in (8, 32)
    assert len(tok.encode(prompt).ids) == 32   # (the file's own padding: not what a run feeds)
    tok.no_padding()
    assert len(tok.encode(prompt, add_special_tokens=False).ids) == n - 1   # (the end token is fed)

    panel, row = _text_on(qtbot, window, model, text=prompt)
    assert row.error.text() == "", row.error.text()
    assert panel.sizes_now() == {"input_ids": [1, n]}
    label = _count_label(row)
    assert label is not None and label.text() == f"{n} tokens"
    arr = make_inputs(load_model(str(model), native=False), **window.input_spec())["input_ids"]
    assert arr.shape == (1, n) and arr[0, -1] == 1   # (the end token, fed)
    # the Text dock counts the prompt the same way (a padded count refused prompts that fit)
    assert window.panels["Text"]._prompt_tokens(str(folder / "tokenizer.json"), prompt) == n


def test_inputs_sharing_the_seq_dim_follow_the_text(qtbot, window, tmp_path):
    """attention_mask, token_type_ids and position_ids share input_ids' `seq`: they take the text's count as they
    take a file's length; a size typed there that disagrees is refused in its row."""
    folder = tmp_path / "bert"
    folder.mkdir()
    model = _bert_like(folder / "bert.onnx", vocab=96)
    shutil.copyfile(SAMPLES / "tokenizer.json", folder / "bert.tokenizer.json")   # (<stem>.tokenizer.json)
    n = _count(folder / "bert.tokenizer.json", PROMPT)
    panel, row = _text_on(qtbot, window, model)
    assert row.error.text() == "" and not panel.errors, panel.errors
    sizes = panel.sizes_now()
    for name in ("input_ids", "attention_mask", "token_type_ids", "position_ids"):
        assert sizes[name] == [1, n], (name, sizes)
        assert panel.row(name).dims[1].value() == n
    assert panel.dim_values() == {"batch": 1, "seq": n}
    fed = make_inputs(load_model(str(model), native=False), **window.input_spec())
    assert {k: fed[k].shape for k in ("input_ids", "attention_mask", "position_ids")} == {
        "input_ids": (1, n), "attention_mask": (1, n), "position_ids": (1, n)}
    assert _count_label(row).text() == f"{n} tokens"

    mask = panel.row("attention_mask")
    mask.dims[1].setValue(n + 3)   # typed: it disagrees with the text
    assert f"seq is {n + 3}" in mask.error.text() and "the text" in mask.error.text(), mask.error.text()
    assert panel.errors and window.inputs_refused("Profile")


def test_a_text_longer_than_the_models_position_table_is_refused_in_the_row(qtbot, window, tmp_path):
    """position_ids (0..n-1, sharing input_ids' seq) index a table of learned positions: a text of more tokens than it
    has rows failed only in the run ("holds ids 0..n-1, but it indexes an embedding table of 4 rows"); the Text row now
    says it first (runs wait), and a text that fits is fine."""
    from mnnscope.inspector.errors import ModelError
    folder = tmp_path / "bert"
    folder.mkdir()
    model = _bert_like(folder / "bert.onnx", vocab=96, positions=4)
    shutil.copyfile(SAMPLES / "tokenizer.json", folder / "bert.tokenizer.json")
    n = _count(folder / "bert.tokenizer.json", PROMPT)
    assert n > 4
    panel, row = _text_on(qtbot, window, model)
    assert panel.row("position_ids").bound == 4
    msg = row.error.text()
    assert msg == (f"{n} tokens, but input 'position_ids' (positions 0..{n - 1}) indexes a table of 4 rows: at most 4 "
                   "tokens"), msg
    assert panel.errors == [msg] and window.inputs_refused("Profile")
    with pytest.raises(ModelError, match="'position_ids' holds ids 0..*of 4 rows"):   # (what the run said)
        make_inputs(load_model(str(model), native=False), text=PROMPT, tokenizer=str(folder / "bert.tokenizer.json"))
    short = next(t for t in ("hello", "the model", "a") if 0 < _count(folder / "bert.tokenizer.json", t) <= 4)
    row.text.setText(short)
    assert row.error.text() == "" and not window.inputs_refused("Profile")


def test_a_tokenizer_that_does_not_load_or_none_gives_no_count_and_says_why(qtbot, window, tmp_path):
    folder = tmp_path / "llm"
    model = _model_in(folder, tokenizer=None)
    (folder / "tokenizer.json").write_text('{"model": "not one"}')
    panel, row = _text_on(qtbot, window, model)
    assert "not a readable tokenizer.json" in row.error.text(), row.error.text()
    assert _count_label(row) is not None and _count_label(row).text() == ""
    assert window.inputs_refused("Profile")   # (the run would fail on it)
    assert panel.sizes_now() == {"input_ids": [1, 8]} and row.dims[1].isEnabled()

    # a readable one written over it (a newer mtime): counted
    shutil.copyfile(SAMPLES / "tokenizer.json", folder / "tokenizer.json")
    os.utime(folder / "tokenizer.json", (1e9 + 100, 1e9 + 100))
    row.text.setText(PROMPT + " ")
    n = _count(folder / "tokenizer.json", PROMPT + " ")
    assert row.error.text() == "" and _count_label(row).text() == f"{n} tokens"
    assert panel.sizes_now() == {"input_ids": [1, n]}

    # none at all: the row asks for one, no count
    (folder / "tokenizer.json").unlink()
    row.text.setText(PROMPT)
    assert row.error.text() == "choose a tokenizer.json" and _count_label(row).text() == ""
    assert panel.sizes_now() == {"input_ids": [1, 8]}


def test_a_tokenizer_whose_ids_pass_the_models_table_is_refused_in_the_row(qtbot, window, tmp_path):
    """A tokenizer.json of another model (moonshine's, ids to 29916, for moe_llm's table of 96 rows): the row said
    "13 tokens" and the run then failed with "holds ids 1..29916, but it indexes an embedding table of 96 rows". The
    row now says so first, as its error (runs wait), the count still beside the text; a tokenizer whose ids fit shows
    just the count. (A word-level tokenizer made here stands in for moonshine's.)"""
    from tokenizers import models, pre_tokenizers
    from mnnscope.inspector.errors import ModelError
    model = _model_in(tmp_path / "llm")
    big = Tokenizer(models.WordLevel({"[UNK]": 0, "the": 5, "model": 29916}, unk_token="[UNK]"))
    big.pre_tokenizer = pre_tokenizers.Whitespace()
    big.save(str(tmp_path / "big.json"))
    panel, row = _text_on(qtbot, window, model)
    assert row.bound == 96 and row.error.text() == "" and _count_label(row).text().endswith(" tokens")

    row.tokenizer.setText(str(tmp_path / "big.json"))
    n = _count(tmp_path / "big.json", PROMPT)
    assert _count_label(row).text() == f"{n} tokens"
    msg = row.error.text()
    assert msg.startswith("ids up to 29916, but the model's table has 96 rows") and row.error.isVisibleTo(panel), msg
    assert "input 'input_ids' indexes an embedding table: ids must lie in [0, 96)" in msg
    assert panel.errors == [msg] and window.inputs_refused("Profile")
    with pytest.raises(ModelError, match="indexes an embedding table of 96 rows"):   # (what the run said)
        make_inputs(load_model(str(model), native=False), text=PROMPT, tokenizer=str(tmp_path / "big.json"))

    # a text whose ids fit the table, through the same tokenizer: fine
    row.text.setText("the the")
    assert row.error.text() == "" and not window.inputs_refused("Profile")
    # the tokenizer beside the model (ids within the table): just the count
    row.text.setText(PROMPT)
    row.tokenizer.setText("")
    n = _count(tmp_path / "llm" / "tokenizer.json", PROMPT)
    assert row.error.text() == "" and _count_label(row).text() == f"{n} tokens"
    assert not window.inputs_refused("Profile")


def test_a_large_tokenizer_loads_off_the_ui_thread_and_the_row_counts_when_it_is_ready(qtbot, window, tmp_path,
                                                                                          monkeypatch):
    """An LLM's tokenizer.json (2-11 MB) took 0.1-0.5 s to load on the UI thread the first time Text was chosen. One
    over SYNC_TOKENIZER_BYTES now loads on a thread: the row says it is loading (runs wait, as for any row error), and
    counts once it is ready. (The bundled tokenizer stands in for a large one: the threshold set to 0 bytes.)"""
    from mnnscope.gui.panels import inputs as dock
    monkeypatch.setattr(dock, "SYNC_TOKENIZER_BYTES", 0, raising=False)
    model = _model_in(tmp_path / "llm")
    tok = tmp_path / "llm" / "tokenizer.json"
    n = _count(tok, PROMPT)
    first = dock.text_tokens(PROMPT, str(tok))   # (returns at once, the load started)
    assert first[0] is None and first[1].startswith("loading tokenizer.json"), first
    panel, row = _text_on(qtbot, window, model)
    qtbot.waitUntil(lambda: _count_label(row).text() == f"{n} tokens", timeout=10000)
    assert row.error.text() == "" and not window.inputs_refused("Profile")
    assert panel.sizes_now() == {"input_ids": [1, n]}
    # a tokenizer changed on disk (a newer mtime) loads again, and the row follows it without another key
    t = Tokenizer.from_file(str(tok))
    from tokenizers.processors import TemplateProcessing
    t.post_processor = TemplateProcessing(single="$A <eos>", special_tokens=[("<eos>", 1)])
    t.save(str(tok))
    os.utime(tok, (1e9 + 100, 1e9 + 100))
    assert dock.text_tokens(PROMPT, str(tok))[1].startswith("loading")
    qtbot.waitUntil(lambda: _count_label(row).text() == f"{n + 1} tokens", timeout=10000)
    assert panel.sizes_now() == {"input_ids": [1, n + 1]}


def test_the_text_dock_finds_the_models_own_tokenizer_beside_it(qtbot, window, tmp_path):
    """moe_llm.tokenizer.json beside moe_llm.onnx: the Inputs dock used it, the Text dock looked for tokenizer.json
    only and asked for one."""
    model = _model_in(tmp_path / "llm", tokenizer="moe_llm.tokenizer.json")
    open_and_wait(qtbot, window, model, shapes=False)
    assert window.panels["Text"].tokenizer.text() == str(tmp_path / "llm" / "moe_llm.tokenizer.json")


def _mnn_ids_row(qtbot, window, folder, source: str):
    """moe_llm.mnn (copied into `folder`) open at its default 1x8, its input_ids row set to `source`: the row, and a
    function giving the first two dims of its logits as MNN computed them."""
    shutil.copyfile(SAMPLES / "moe_llm.mnn", folder / "moe_llm.mnn")
    view = open_and_wait(qtbot, window, folder / "moe_llm.mnn")
    t = view.table
    logits = t.tensor_index(t.outputs[0])
    assert t.shapes[logits][:2] == [1, 8]
    window.show_dock("Inputs")
    row = window.panels["Inputs"].row("input_ids")
    row.source.setCurrentText(source)
    return row, lambda: (t.shapes[logits] or [None])[:2]


def test_an_mnn_models_shapes_follow_the_texts_count(qtbot, window, tmp_path):
    """moe_llm.mnn's input is [1, -1]: its shapes come from MNN at the dock's sizes, which now hold the text's."""
    folder = tmp_path / "mnn"
    folder.mkdir()
    shutil.copyfile(SAMPLES / "tokenizer.json", folder / "tokenizer.json")
    n = _count(folder / "tokenizer.json", PROMPT)
    row, logits = _mnn_ids_row(qtbot, window, folder, "Text")
    with qtbot.waitSignal(window.shapes_loaded, timeout=60000):
        qtbot.keyClicks(row.text, PROMPT)
    qtbot.waitUntil(lambda: logits() == [1, n], timeout=60000)
    assert f"input_ids=[1, {n}]" in (window.shapes_note or "")


def test_an_mnn_models_shapes_follow_a_file_rows_sizes(qtbot, window, tmp_path):
    """The same for a File row: an .npz of 1x13 ids left moe_llm.mnn's shapes at 1x8 (the spec the window asked MNN's
    shapes at holds only sizes typed; helper 91 noticed it)."""
    import numpy as np
    ids = tmp_path / "ids.npy"
    np.save(ids, np.arange(1, 14, dtype=np.int32).reshape(1, 13))
    row, logits = _mnn_ids_row(qtbot, window, tmp_path, "File")
    with qtbot.waitSignal(window.shapes_loaded, timeout=60000):
        row.file_path.setText(str(ids))
        row.file_path.editingFinished.emit()
    qtbot.waitUntil(lambda: logits() == [1, 13], timeout=60000)


def test_a_reopened_model_gets_its_text_back_and_its_sizes_still_follow_the_source(qtbot, window, tmp_path):
    """Each model keeps its inputs while the window is open. A reopened model got its Text row back with the text's
    sizes as if typed: switching the row to Random then kept the text's count (n, not the default 8)."""
    model = _model_in(tmp_path / "llm")
    n = _count(tmp_path / "llm" / "tokenizer.json", PROMPT)
    panel, row = _text_on(qtbot, window, model)
    assert panel.sizes_now() == {"input_ids": [1, n]}
    open_and_wait(qtbot, window, SAMPLES / "cnn.onnx", shapes=False)
    open_and_wait(qtbot, window, model, shapes=False)
    row = panel.row("input_ids")
    assert row.kind == "Text" and row.text.text() == PROMPT and _count_label(row).text() == f"{n} tokens"
    assert panel.sizes_now() == {"input_ids": [1, n]} and not row.edited
    row.source.setCurrentText("Random")
    assert panel.sizes_now() == {"input_ids": [1, 8]}, "the text's count stayed after the source changed"
