"""The Convert dock holds still and names its output from the settings shown (pytest-qt, offscreen, the real dock at
1024x700; nothing converted). A new user's try: the "Changed from the defaults" line above the form grew to three and
four lines as settings were changed, pushing every field down so that a click aimed at one landed on another; and with
fp16 weights ticked beside 8-bit weight quantization (a conflict the dock reports) the Output field kept
"cnn.int8w.1.mnn", named from the earlier setting."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI
from PySide6.QtCore import QPoint  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixtures_convert import model_copy  # noqa: E402,F401  (shared fixtures)
from test_gui import docked_at_1024, make_window, settings_dir, window  # noqa: E402,F401
from test_gui_convert_dock import dock_of  # noqa: E402

from mnnscope.inspector.convert.settings import ConvertSettings  # noqa: E402

pytestmark = pytest.mark.gui

# settings a user changes one after another, by their widgets (cnn.onnx has no GELU: exact erf adds a warning line)
CHANGES = (("fp16", True), ("weight_quant_bits", 8), ("gelu_approximation", False), ("transformer_fuse", True),
           ("origin_rnn", True), ("save_static_model", True), ("optimize_level", 2), ("allow_custom_op", True),
           ("weight_quant_bits", None), ("fp16", False))


def places(dock) -> dict[str, QPoint]:
    """Where the find field and the fields of the form's first screenful are, in the dock."""
    names = ("fp16", "weight_quant_bits", "weight_quant_block", "hqq")
    at = {f: dock.form.widgets[f].mapTo(dock, QPoint(0, 0)) for f in names}
    at["find"] = dock.find_setting.mapTo(dock, QPoint(0, 0))
    return at


def test_changing_settings_moves_no_field(qtbot, window, samples):
    """Each change is named above the form on one line, whole in its tooltip: no field moves, however many are named
    (the two lines' room the row had was outgrown by the third change)."""
    dock = docked_at_1024(qtbot, window, samples / "cnn.onnx", "Convert")
    qtbot.waitUntil(lambda: dock.form.widgets["fp16"].isVisible(), timeout=5000)
    qtbot.wait(100)
    before, height = places(dock), dock.not_default.height()
    for field, value in CHANGES:
        dock.form.set_value(field, value)  # through the widget: its signal, as a click or a pick in the list
        qtbot.wait(50)  # (the layout settles)
        assert places(dock) == before, (field, value, dock.not_default.text())
        assert dock.not_default.height() == height, (field, value)
    s = dock.settings()
    assert s.gelu_approximation is False and s.transformer_fuse and s.allow_custom_op and not s.fp16
    text = dock.not_default.text()
    # the row's words stay whole where a user (and the rest of the app) reads them: the label's text and its tooltip
    assert text.startswith("Changed from the defaults (for this model): ") and "allow custom ops" in text
    assert "gelu_approximation has no effect on this model" in text
    assert " ".join(dock.not_default.toolTip().split()) == " ".join(text.split())  # (in lines: wrap_tip)
    # drawn on one line: what changed first, the warning marked at its start, cut where the column ends
    line = dock.not_default.shown()
    assert line.startswith("\u26a0 Changed: ") and line.endswith("\u2026"), line
    assert dock.not_default.height() < 2 * dock.not_default.fontMetrics().lineSpacing()
    dock.defaults_btn.click()  # back to the defaults: nothing moves either
    qtbot.wait(50)
    assert places(dock) == before and dock.not_default.shown() == "The converter's defaults"
    assert dock.not_default.text() == "The converter's defaults (for this model)"


def conflict_said(dock, words: str) -> bool:
    """The Output field names nothing and says why; the problem is the conflict, not a missing output."""
    problems = dock.problems.text()
    return (dock.output.text() == "" and words in dock.output.placeholderText()
            and "choose one" in problems and "choose an output file" not in problems
            and not dock.convert_btn.isEnabled())


def test_the_output_name_follows_the_settings_through_a_conflict(qtbot, window, model_copy, tmp_path):
    """fp16 ticked beside int8w kept "cnn.int8w.1.mnn" in Output: the settings asked for two precisions, and the name
    said one. While they conflict no name applies (the field says so); the precision kept names it again."""
    from test_gui import open_and_wait
    model_copy.with_name("cnn.int8w.mnn").write_bytes(b"an earlier int8w conversion")
    open_and_wait(qtbot, window, model_copy, shapes=False)
    dock = dock_of(qtbot, window)
    name = lambda n: str(model_copy.with_name(n))  # noqa: E731
    assert dock.output.text() == name("cnn.mnn")
    dock.form.set_value("weight_quant_bits", 8)
    assert dock.output.text() == name("cnn.int8w.1.mnn")  # (cnn.int8w.mnn is taken: Replace offers it)
    dock.form.set_value("fp16", True)
    assert "exclude each other" in dock.problems.text()
    assert conflict_said(dock, "int8w and fp16 conflict"), (dock.output.text(), dock.output.placeholderText(),
                                                            dock.problems.text())
    assert not dock.replace_btn.isVisible() and not dock.output_note.text()
    dock.form.set_value("weight_quant_bits", None)  # fp16 kept
    assert dock.output.text() == name("cnn.fp16.mnn") and not dock.output.placeholderText()
    assert dock.convert_btn.isEnabled()
    dock.form.set_value("weight_quant_bits", 4)
    assert conflict_said(dock, "int4w and fp16 conflict")
    dock.form.set_value("fp16", False)  # int4w kept
    assert dock.output.text() == name("cnn.int4w.mnn")
    dock.form.set_value("weight_quant_bits", None)
    dock.form.set_value("fp16", True)
    dock.form.set_value("int8", True)  # full int8 beside fp16: a conflict too
    assert conflict_said(dock, "int8 and fp16 conflict")
    # kept for the model in conflict: opened again, it names nothing either, until one is kept
    dock.set_source(None)
    dock.set_source(str(model_copy))
    assert conflict_said(dock, "int8 and fp16 conflict")
    dock.form.set_value("int8", False)
    assert dock.output.text() == name("cnn.fp16.mnn")
    # a name the user chose stays through a conflict (the problem still says why Convert is greyed)
    mine = str(tmp_path / "mine.mnn")
    dock.output.setText(mine)
    dock.form.set_value("weight_quant_bits", 8)
    assert dock.output.text() == mine and "exclude each other" in dock.problems.text()
    dock.set_settings(ConvertSettings())  # this model keeps no settings after the test


def test_a_samples_run_folder_stays_through_a_conflict(qtbot, window, samples):
    """A bundled sample converts into a run folder: the conflict empties the name, the precision kept names it in the
    same folder (not one more run folder per click)."""
    from test_gui import open_and_wait
    open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    dock = dock_of(qtbot, window)
    folder = Path(dock.output.text()).parent
    assert folder != samples and "bundled sample" in dock.output_note.text()
    dock.form.set_value("weight_quant_bits", 8)
    assert dock.output.text() == str(folder / "cnn.int8w.mnn")
    dock.form.set_value("fp16", True)
    assert conflict_said(dock, "int8w and fp16 conflict") and "bundled sample" not in dock.output_note.text()
    dock.form.set_value("weight_quant_bits", None)
    assert dock.output.text() == str(folder / "cnn.fp16.mnn") and "bundled sample" in dock.output_note.text()
    dock.set_settings(ConvertSettings())
