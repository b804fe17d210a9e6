"""The Inputs dock: a row per model input with its dynamic dims editable, spec() as make_inputs keywords that a
real profile run takes, inline errors, .mnn shapes that follow the edited sizes, and restoring a past run."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")

from mnnscope.inspector.errors import ModelError  # noqa: E402
from mnnscope.inspector.formats.loader import load_model  # noqa: E402
from mnnscope.inspector.inputs.data import index_bounds, make_inputs, table_index_bounds  # noqa: E402
from mnnscope.inspector.profile.service import ProfileOptions, run_profile  # noqa: E402
from mnnscope.inspector.store.runs import RunStore  # noqa: E402

from conftest import SAMPLES  # noqa: E402
from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401

pytestmark = pytest.mark.gui


def _warm(qtbot, window, path, dog):
    """The first paint of a process (and of a model's labels) builds Qt's glyph caches (100-300 ms on a loaded
    machine): not the dock's doing. Opened once unmeasured; the test opens it again, measured."""
    dog.pause()
    open_and_wait(qtbot, window, path)
    dog.resume()


def _profile(qtbot, window, opts: ProfileOptions) -> dict:
    got = {}
    window.runner.run_job("profile", lambda client, on_event, cancelled: run_profile(
        opts, client=client, on_event=on_event), on_done=lambda r: got.update(result=r),
        on_fail=lambda m: got.update(error=m))
    qtbot.waitUntil(lambda: bool(got), timeout=120000)
    assert "error" not in got, got
    return got["result"]


def test_dock_lists_inputs_and_spec_feeds_make_inputs(qtbot, window, samples, ui_watchdog):
    _warm(qtbot, window, samples / "encoder_block.onnx", ui_watchdog)
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    panel = window.panels["Inputs"]
    assert [r.name for r in panel.rows] == ["input"] and panel.rows[0].dims == [None] * 4  # cnn: all fixed

    open_and_wait(qtbot, window, samples / "encoder_block.onnx")
    (row,) = panel.rows
    assert (row.name, row.dtype, row.shape) == ("hidden", "float32", [1, "seq", 64])
    seq = row.dims[1]
    assert row.dims[0] is None and row.dims[2] is None and seq.value() == 8   # inputs.data's default
    assert seq.text() == "seq = 8"  # which dim the box sizes (a bare "8" said nothing of it)
    from mnnscope.gui.panels.inputs import short_dim
    assert short_dim("seq") == "seq" and short_dim("DynamicDimension.1") == "Dyna\u2026n.1"
    assert panel.spec() == {"seed": 0, "shapes": {}, "files": {}, "text": None, "tokenizer": None, "image": None}
    seq.setValue(16)
    panel.seed.setValue(7)
    spec = panel.spec()
    assert spec["shapes"] == {"hidden": [1, 16, 64]} and spec["seed"] == 7
    assert window.input_spec() == spec
    graph = load_model(str(samples / "encoder_block.onnx"), native=False)
    arr = make_inputs(graph, **spec)["hidden"]
    assert arr.shape == (1, 16, 64)
    assert np.array_equal(arr, make_inputs(graph, seed=7, shapes={"hidden": [1, 16, 64]})["hidden"])

    # a real profile run takes the dock's spec as it is
    result = _profile(qtbot, window, ProfileOptions(str(samples / "encoder_block.onnx"), runs=2, warmup=1, **spec))
    record = RunStore().get_run(result["run_id"])
    assert record["inputs"] == [{"name": "hidden", "shape": [1, 16, 64], "dtype": "float32"}]
    assert record["settings"]["seed"] == 7 and record["settings"]["shapes"] == {"hidden": [1, 16, 64]}


def test_made_up_dim_names_of_an_image_input_read_as_their_roles(qtbot, window, tmp_path):
    """PP-OCRv6 det's input is [DynamicDimension.0, 3, DynamicDimension.1, DynamicDimension.2]: a new-user try read
    "Dyna…n.1 = 640" and "Dyna…n.2" and could not tell height from width. Such a box says its role; the name it
    stands for stays in the tooltip, and a model's own names stay."""
    import onnx
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["DynamicDimension.0", 3, "DynamicDimension.1",
                                                               "DynamicDimension.2"])
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, ["DynamicDimension.3", "unk__4"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    n = helper.make_tensor_value_info("n", TensorProto.INT64, None)
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Identity", ["ids"], ["n"])],
                              "g", [x, ids], [y, n])
    path = tmp_path / "image.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    open_and_wait(qtbot, window, path)
    rows = {r.name: r for r in window.panels["Inputs"].rows}
    image = rows["x"].dims
    assert [b.prefix() if b else None for b in image] == ["batch = ", None, "height = ", "width = "]
    assert "DynamicDimension.1" in image[2].toolTip()
    assert [b.prefix() for b in rows["ids"].dims] == ["Dyna\u2026n.3 = ", "unk__4 = "]  # not an image: the names


def test_an_input_name_with_markup_characters_reads_as_written(qtbot, window, tmp_path):
    """Names are data, not markup: an input named "x<1>&y" showed as "x&y" in bold (its row's label took it for
    HTML), and Statistics likewise took op and tensor names."""
    import onnx
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x<1>&y", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Relu", ["x<1>&y"], ["y"], name="<relu>")], "g", [x], [y])
    path = tmp_path / "marks.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    open_and_wait(qtbot, window, path)
    label = window.panels["Inputs"].row("x<1>&y").name_label
    from PySide6.QtGui import QTextDocument
    doc = QTextDocument()
    doc.setHtml(label.text())
    assert doc.toPlainText() == "x<1>&y"
    panel = window.panels["Statistics"]
    window.show_dock("Statistics")
    with qtbot.waitSignal(panel.finished, timeout=120000):
        assert panel.run()
    panel.show_node(window.view.table.names.index("<relu>"))
    doc.setHtml(panel.detail.text())
    assert doc.toPlainText().startswith("<relu> (Relu)"), doc.toPlainText()


def test_integer_ids_are_bounded_like_the_cli_and_errors_show_inline(qtbot, window, samples, ui_watchdog, tmp_path):
    _warm(qtbot, window, samples / "moe_llm.onnx", ui_watchdog)
    open_and_wait(qtbot, window, samples / "moe_llm.onnx")
    panel = window.panels["Inputs"]
    (row,) = panel.rows
    assert (row.name, row.dtype, row.bound) == ("input_ids", "int64", 96)
    assert table_index_bounds(window.pane.table) == index_bounds(load_model(str(samples / "moe_llm.onnx"),
                                                                            native=False))
    assert (row.low.text(), row.high.text()) == ("0", "96")   # [0, rows of the embedding table)
    row.high.setText("200")
    row.high.textEdited.emit("200")
    assert "96 rows" in row.error.text() and row.error.isVisibleTo(panel)
    assert "input_ids" not in panel.spec().get("ranges", {})
    row.high.setText("50")
    row.high.textEdited.emit("50")
    assert row.error.text() == ""
    spec = panel.spec()
    assert spec["ranges"] == {"input_ids": [0, 50]}
    ids = make_inputs(load_model(str(samples / "moe_llm.onnx"), native=False), **spec)["input_ids"]
    assert ids.dtype == np.int64 and ids.max() < 50 and ids.shape == (1, 8)

    # a file that does not fit the input is refused in its row, before any run
    np.save(tmp_path / "ids.npy", np.zeros((1, 5, 2), np.int64))
    row.source.setCurrentText("File")
    row.file_path.setText(str(tmp_path / "ids.npy"))
    assert "holds shape [1, 5, 2]" in row.error.text()
    np.save(tmp_path / "ids12.npy", np.arange(12, dtype=np.int64).reshape(1, 12))
    row.file_path.setText(str(tmp_path / "ids12.npy"))
    assert row.error.text() == ""
    spec = panel.spec()
    assert spec["files"] == {"input_ids": str(tmp_path / "ids12.npy")}
    ids = make_inputs(load_model(str(samples / "moe_llm.onnx"), native=False), **spec)["input_ids"]
    assert ids.tolist() == [list(range(12))]
    row.source.setCurrentText("Text")
    assert "text" in row.error.text()


def test_mnn_shapes_follow_the_edited_sizes(qtbot, window, samples, ui_watchdog):
    _warm(qtbot, window, samples / "moe_llm.mnn", ui_watchdog)
    view = open_and_wait(qtbot, window, samples / "moe_llm.mnn")
    assert "input_ids=[1, 8]" in (window.shapes_note or "")
    panel = window.panels["Inputs"]
    (row,) = panel.rows
    assert (row.name, row.dtype, row.shape) == ("input_ids", "int32", [1, -1])
    t = view.table
    logits = t.tensor_index(t.outputs[0])
    assert t.shapes[logits][:2] == [1, 8]
    with qtbot.waitSignal(window.shapes_loaded, timeout=60000):
        row.dims[1].setValue(13)
    assert "input_ids=[1, 13]" in window.shapes_note
    assert t.shapes[logits][:2] == [1, 13]
    assert "input_ids=[1, 13]" in window.model_label.text()


def test_the_mnn_beside_the_model_takes_the_same_sizes(qtbot, window, samples, ui_watchdog):
    """Tryout 10: with the Inputs dock at 256x256 (the runs used it), the .mnn opened side by side, its summary and
    its exported image read 64x64: its shapes were asked at the default sizes."""
    _warm(qtbot, window, samples / "moe_llm.onnx", ui_watchdog)
    open_and_wait(qtbot, window, samples / "moe_llm.onnx")
    (row,) = window.panels["Inputs"].rows
    row.dims[1].setValue(13)
    assert window.input_spec()["shapes"] == {"input_ids": [1, 13]}
    with qtbot.waitSignal(window.shapes_loaded, timeout=60000):
        open_and_wait(qtbot, window, samples / "moe_llm.mnn", second=True, shapes=False)
    qtbot.waitUntil(lambda: window.second.main_view.table is not None, timeout=30000)
    t = window.second.main_view.table
    qtbot.waitUntil(lambda: (t.shapes[t.tensor_index(t.outputs[0])] or [None])[:2] == [1, 13], timeout=60000)
    # its input drawn at those sizes too: "1\u00d7?" beside its consumer's 1\u00d713\u00d7... read as a mismatch
    # (helper 79's try); the file's own shape in the tooltip
    c = window.second.main_view.canvas
    ids = t.tensor_index("input_ids")
    assert t.shapes[ids] == [1, -1] and c.shape_of(ids) == [1, 13]
    sc = c.scene
    io = next(int(i) for i in sc.vg.leaves if sc.is_io[int(sc.leaf_of_item[int(i)])] and
              c.describe(int(i)).startswith("graph input"))
    assert "1\u00d713 at the input sizes (1\u00d7? in the file) \u00b7 int32" in c.describe(io), c.describe(io)
    from mnnscope.gui.canvas import fmt_shape
    edges = [e for e in range(len(sc.vg.edge_tensor)) if int(sc.vg.edge_tensor[e]) == ids]
    texts = [x for _e, ts, _s in c._label_texts(sc, np.asarray(edges)) for x in ts]
    assert texts and all(x.startswith(fmt_shape([1, 13])) for x in texts), texts


def test_the_mnn_beside_follows_the_sizes_after_it_opened_a_files_too(qtbot, window, samples, ui_watchdog, tmp_path):
    """A new user's .npz set PP-OCR rec's width to 320: the ONNX pane followed, the .mnn beside kept the width it was
    opened at (and its summary a quarter of the FLOPs): its shapes were asked once, at the typed sizes only."""
    _warm(qtbot, window, samples / "moe_llm.onnx", ui_watchdog)
    open_and_wait(qtbot, window, samples / "moe_llm.onnx")
    open_and_wait(qtbot, window, samples / "moe_llm.mnn", second=True)
    t = window.second.main_view.table
    logits = t.tensor_index(t.outputs[0])
    qtbot.waitUntil(lambda: (t.shapes[logits] or [None])[:2] == [1, 8], timeout=60000)
    panel = window.panels["Inputs"]
    (row,) = panel.rows
    row.dims[1].setValue(13)  # sizes typed after it opened
    qtbot.waitUntil(lambda: (t.shapes[logits] or [None])[:2] == [1, 13], timeout=60000)
    ids = tmp_path / "ids.npz"
    np.savez(ids, input_ids=np.arange(5, dtype=np.int64).reshape(1, 5))
    row.source.setCurrentText("File")  # a file's sizes (not typed: the spec does not hold them)
    row.file_path.setText(str(ids))
    qtbot.waitUntil(lambda: (t.shapes[logits] or [None])[:2] == [1, 5], timeout=60000)


def test_a_model_opened_again_keeps_the_inputs_set_for_it(qtbot, window, samples):
    """Tryout 12: reopening PP-OCRv6 det put its input back to the default 64x64 after 256x256 had been set."""
    open_and_wait(qtbot, window, samples / "encoder_block.onnx", shapes=False)
    panel = window.panels["Inputs"]
    panel.rows[0].dims[1].setValue(16)
    open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    assert panel.spec()["shapes"] == {}  # cnn's own
    open_and_wait(qtbot, window, samples / "encoder_block.onnx", shapes=False)
    assert panel.spec()["shapes"] == {"hidden": [1, 16, 64]} and panel.rows[0].dims[1].value() == 16


def test_restore_from_a_recorded_run(qtbot, window, samples, ui_watchdog):
    _warm(qtbot, window, samples / "moe_llm.onnx", ui_watchdog)
    open_and_wait(qtbot, window, samples / "moe_llm.onnx")
    panel = window.panels["Inputs"]
    (row,) = panel.rows
    row.dims[1].setValue(5)
    panel.seed.setValue(3)
    row.low.setText("10")
    row.low.textEdited.emit("10")
    spec = panel.spec()
    assert spec == {"seed": 3, "shapes": {"input_ids": [1, 5]}, "files": {}, "text": None, "tokenizer": None,
                    "image": None, "ranges": {"input_ids": [10, 96]}}
    result = _profile(qtbot, window, ProfileOptions(str(samples / "moe_llm.onnx"), runs=1, warmup=1, **spec))
    assert RunStore().get_run(result["run_id"])["settings"]["ranges"] == {"input_ids": [10, 96]}

    panel.reset()
    assert panel.spec()["shapes"] == {} and row.dims[1].value() == 8 and row.low.text() == "0"
    # Restore from run…: the model's runs are listed off the UI thread, then offered in a menu
    panel.restore_btn.click()
    qtbot.waitUntil(lambda: panel.runs_found is not None, timeout=30000)
    assert panel.runs_found[0]["id"] == result["run_id"]
    action = panel.runs_menu.actions()[0]
    assert action.text().startswith(f"#{result['run_id']} profile") and "input_ids=[1, 5]" in action.text()
    panel.runs_menu.hide()
    action.trigger()
    assert panel.spec() == spec and panel.restored_from == result["run_id"]
    assert row.dims[1].value() == 5 and row.low.text() == "10"
    assert "restored from run" in panel.status.text()


def test_restore_reads_a_compare_record_and_names_what_does_not_fit(qtbot, window, samples, ui_watchdog):
    from mnnscope.inspector.compare.modes import CompareOptions
    from mnnscope.inspector.compare.service import compare_model

    _warm(qtbot, window, samples / "encoder_block.onnx", ui_watchdog)
    open_and_wait(qtbot, window, samples / "encoder_block.onnx")
    panel = window.panels["Inputs"]
    spec = {"seed": 4, "shapes": {"hidden": [1, 3, 64]}, "files": {}, "text": None, "tokenizer": None,
            "image": None}
    got = {}
    window.runner.run_job("compare", lambda client, on_event, cancelled: compare_model(
        str(samples / "encoder_block.onnx"), CompareOptions(modes=["fp32"], seed=4, fix=False), inputs=spec,
        client=client, on_event=on_event), on_done=lambda r: got.update(result=r),
        on_fail=lambda m: got.update(error=m))
    qtbot.waitUntil(lambda: bool(got), timeout=180000)
    assert "error" not in got, got
    record = RunStore().get_run(got["result"]["run_id"])
    assert record["settings"]["input_spec"] == spec   # compare records the whole spec
    assert panel.restore(record) == []
    assert panel.spec() == spec and panel.rows[0].dims[1].value() == 3
    problems = panel.restore({"id": 1, "settings": {"seed": 1, "shapes": {"nope": [1, 2]}}})
    assert problems and "'nope'" in panel.status.text()


def test_view_shape_is_the_docks_headless_twin(samples, tmp_path):
    """`mnnscope view MODEL --shape NAME=DIMS` sets the sizes in the Inputs dock, the window's own path."""
    import os
    import subprocess
    import sys

    def view(*args):
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
        return subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "view", *args], env=env,
                              capture_output=True, text=True, timeout=300)

    svg = tmp_path / "g.svg"
    r = view(str(samples / "moe_llm.mnn"), "--shape", "input_ids=1,13", "--screenshot", str(svg), "--whole")
    assert r.returncode == 0, r.stderr
    text = svg.read_text()
    assert "1\u00d713\u00d732" in text and "1\u00d78\u00d732" not in text   # MNN's shapes at the dock's sizes
    r = view(str(samples / "moe_llm.mnn"), "--shape", "input_ids=1,x", "--screenshot", str(tmp_path / "x.png"))
    assert r.returncode == 2 and "dimensions must be integers" in r.stderr


def test_make_inputs_value_ranges_are_checked():
    from mnnscope.inspector.errors import UsageError
    graph = load_model(str(SAMPLES / "moe_llm.onnx"), native=False)
    with pytest.raises(UsageError, match="96 rows"):
        make_inputs(graph, ranges={"input_ids": [0, 97]})
    with pytest.raises(UsageError, match="not an input"):
        make_inputs(graph, ranges={"nope": [0, 1]})
    with pytest.raises(UsageError, match="whole numbers"):
        make_inputs(graph, ranges={"input_ids": [0, 2.5]})
    ids = make_inputs(graph, seed=1, ranges={"input_ids": [90, 96]})["input_ids"]
    assert ids.min() >= 90 and ids.max() < 96
    # without ranges, nothing changes: the same arrays as before the keyword existed
    assert np.array_equal(make_inputs(graph, seed=1)["input_ids"], make_inputs(graph, seed=1, ranges={})["input_ids"])


def test_a_file_sets_its_rows_sizes_and_inputs_that_share_a_dimension_must_agree(qtbot, window, samples, tmp_path):
    """The romanizer's encoder: `src` and `src_mask` share [batch, src_len]. A 1x15 file for src: its row shows 1x15
    and the mask (random) follows (tryout 14: the row kept 1x8 and the mask was generated at 8); a mask file of 1x8
    beside it is refused in its row, naming both (the CLI's make_inputs says the same)."""
    from test_real_models import real_model
    onnx = real_model("arabic_name_romanizer", "resources/encoder.onnx")
    open_and_wait(qtbot, window, onnx)
    panel = window.panels["Inputs"]
    src, mask = panel.row("src"), panel.row("src_mask")
    np.save(tmp_path / "src.npy", np.arange(1, 16, dtype=np.int64).reshape(1, 15))
    src.source.setCurrentText("File")
    src.file_path.setText(str(tmp_path / "src.npy"))
    assert src.sizes() == [1, 15] and mask.sizes() == [1, 15] and not panel.validate()
    spec = panel.spec()
    got = make_inputs(load_model(str(onnx), native=False), **spec)
    assert got["src_mask"].shape == (1, 15)
    np.save(tmp_path / "mask8.npy", np.zeros((1, 8), bool))
    mask.source.setCurrentText("File")
    mask.file_path.setText(str(tmp_path / "mask8.npy"))
    errors = panel.validate()
    assert errors and "src_len is 8 in mask8.npy but 15 in src.npy" in mask.error.text()
    with pytest.raises(ModelError, match="src_len is 8"):
        make_inputs(load_model(str(onnx), native=False), files={"src": str(tmp_path / "src.npy"),
                                                               "src_mask": str(tmp_path / "mask8.npy")})


def test_a_mask_that_is_true_where_masked_says_its_rule_in_its_row(qtbot, window):
    """The romanizer's decoder picks -1e9 where `src_mask` is True (Where(src_mask, -1e9, scores)); its row read
    "filled by rule: all ones / True" and every attention score was -1e9 (tryout 67). The row says the rule the
    run follows, and why on hover (in the row it ran past the dock's edge at 1024, tryout 71); the encoder's (a Not
    reads it) likewise."""
    from test_real_models import real_model
    for name, why in (("decoder", "a Where puts -1e+09 where it is True"), ("encoder", "a Not reads it")):
        open_and_wait(qtbot, window, real_model("arabic_name_romanizer", f"resources/{name}.onnx"))
        row = window.panels["Inputs"].row("src_mask")
        assert row.rule_label.text() == "filled by rule: all False (True masks out)", name
        assert row.rule_label.toolTip() == f"all False: True masks out here ({why})", name


def test_runs_on_the_users_inputs_name_them_in_their_summary_lines(qtbot, window, samples, tmp_path):
    """Helper 105 gave input_ids from ids.npy and ran Profile and Compare: their lines named only the sizes
    ("moe_llm.onnx at input_ids 1×10"), the file only in the Runs dock's settings tooltip. Both lines name inputs a
    user gave; the random defaults are not named there (the result's inputs_from says them)."""
    from test_gui_profile import profile_and_wait
    open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)
    _, result = profile_and_wait(qtbot, window, runs=2)
    assert result["inputs_from"] == "random inputs, seed 0"
    assert "from ids" not in window.panels["Profile"].status.text()
    np.save(tmp_path / "ids.npy", np.arange(10, dtype=np.int64).reshape(1, 10))
    (row,) = window.panels["Inputs"].rows
    row.source.setCurrentText("File")
    row.file_path.setText(str(tmp_path / "ids.npy"))
    assert row.error.text() == ""
    panel, result = profile_and_wait(qtbot, window, runs=2)
    assert result["inputs_from"] == "input_ids from ids.npy"
    assert "moe_llm.onnx at input_ids 1\u00d710 (input_ids from ids.npy): " in panel.status.text(), panel.status.text()
    compare = window.panels["Compare"]
    compare.set_modes(["fp32"])
    with qtbot.waitSignal(compare.finished, timeout=300000) as done:
        assert compare.run()
    assert done.args[0]["inputs_from"] == "input_ids from ids.npy"
    assert " on input_ids from ids.npy: " in compare.status.text(), compare.status.text()


def test_an_mnn_takes_the_inputs_of_the_onnx_it_was_converted_from(qtbot, window, samples, tmp_path):
    """Helper 113 set an image at 640x640 for PP-OCRv6 det's .onnx, converted it, opened the .mnn alone and profiled
    it at the defaults (64x64, random) with nothing saying so. A file a recorded conversion made takes the inputs
    set for its source (said in a note and the dock's status), and Restore from run lists the source's runs."""
    from mnnscope.inspector.convert.service import run_convert
    onnx, mnn = tmp_path / "lm.onnx", tmp_path / "lm.mnn"
    onnx.write_bytes((samples / "moe_llm.onnx").read_bytes())
    assert run_convert(str(onnx), str(mnn), cache=False).ok  # (its own runner: the window's test wants none left)
    open_and_wait(qtbot, window, onnx)
    panel = window.panels["Inputs"]
    (row,) = panel.rows
    row.dims[1].setValue(5)
    row.edited = True
    open_and_wait(qtbot, window, mnn)
    (row,) = panel.rows
    qtbot.waitUntil(lambda: panel.inputs_of is not None, timeout=30000)
    assert panel.spec()["shapes"] == {"input_ids": [1, 5]} and row.dims[1].value() == 5
    assert "the inputs of lm.onnx, which this file was converted from" in panel.status.text()
    assert any("lm.mnn takes the inputs set for lm.onnx, which it was converted from (input_ids 1\u00d75)" in t
               for t in window.notes.texts()), window.notes.texts()
    # Restore from run: the source's runs too, said as such
    RunStore().add_run(kind="profile", model_path=str(onnx), settings={"seed": 2, "shapes": {"input_ids": [1, 7]}})
    panel.restore_btn.click()
    qtbot.waitUntil(lambda: panel.runs_found is not None, timeout=30000)
    assert "(of lm.onnx, which this file was converted from)" in panel.runs_menu.actions()[0].text()
    panel.runs_menu.hide()
    panel.reset()  # Defaults: the file's own again
    assert panel.inputs_of is None and "converted from" not in panel.status.text()
    # a file no recorded conversion wrote keeps the defaults
    open_and_wait(qtbot, window, samples / "moe_llm.mnn")
    qtbot.wait(500)
    assert panel.inputs_of is None and panel.spec()["shapes"] == {}


def test_an_image_rows_normalisation_comes_from_a_preset(qtbot, window, samples, tmp_path):
    """Helper 114 typed ImageNet's mean and std, six numbers, from the mean field's tooltip example: the Image row
    offers the usual normalisations, and the run takes them."""
    from PySide6.QtGui import QColor, QImage
    from mnnscope.gui.panels.inputs import NORMALISATIONS
    png = tmp_path / "x.png"
    img = QImage(40, 40, QImage.Format_RGB32)
    img.fill(QColor(200, 100, 50))
    assert img.save(str(png))
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    panel = window.panels["Inputs"]
    (row,) = panel.rows
    row.source.setCurrentText("Image")
    row.image_path.setText(str(png))
    imagenet = next(k for k in NORMALISATIONS if k.startswith("ImageNet"))
    next(a for a in row.norm_btn.menu().actions() if a.text() == imagenet).trigger()
    assert (row.mean.text(), row.std.text()) == ("0.485,0.456,0.406", "0.229,0.224,0.225")
    image = panel.spec()["image"]
    assert image["mean"] == [0.485, 0.456, 0.406] and image["std"] == [0.229, 0.224, 0.225], image
    next(a for a in row.norm_btn.menu().actions() if a.text().startswith("[0, 1]")).trigger()
    assert not row.mean.text() and not row.std.text() and not panel.spec()["image"].get("mean")
