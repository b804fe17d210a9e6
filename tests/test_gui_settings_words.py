"""The window names changed conversion settings as the Convert dock's form labels them ("fp16 weights", "Weight quant
bits: 8", "GELU: exact erf"), not by their JSON keys ("fp16=True", "weight_quant_bits=8": a new user's try at
1024x700 could not find those in the form). The CLI and the JSON keep describe()'s key=value."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI
from PySide6.QtWidgets import QCheckBox, QComboBox  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401

from mnnscope.gui.panels.convertform import FIELDS, settings_text, settings_words  # noqa: E402
from mnnscope.gui.panels.stats import conversion_words  # noqa: E402
from mnnscope.inspector.convert.settings import ConvertSettings, Int8Settings  # noqa: E402


def test_defaults_and_none_name_nothing():
    assert settings_words(None) == [] and settings_words({}) == []
    assert settings_words(ConvertSettings()) == [] and settings_words(ConvertSettings().to_json()) == []
    assert settings_text(None) == ""


def test_each_setting_is_named_as_the_form_labels_it():
    s = ConvertSettings(fp16=True, gelu_approximation=False, convert_matmul_to_conv=False, optimize_level=2,
                        optimize_prefer="fastest", transformer_fuse=True, keep_input_format=False, dump_pass=False)
    words = settings_words(s)
    assert words == ["fp16 weights", "Optimize level: 2", "Optimize for: fastest", "fuse transformer blocks",
                     "MatMul to Conv: keep MatMul", "GELU: exact erf", "Input layout: NC4HW4",
                     "log optimizer passes (node map): off"]
    assert settings_words(s.to_json()) == words  # its JSON (a run's options) reads the same
    assert settings_text(s.to_json()) == ", ".join(words)
    assert not any("=" in w for w in words)


def test_weight_quantization_names_its_details():
    s = ConvertSettings(weight_quant_bits=8, weight_quant_asymmetric=False, weight_quant_block=32, hqq=True)
    assert settings_words(s) == ["Weight quant bits: 8", "Quant symmetry: symmetric", "Quant block: 32",
                                 "HQQ quantization"]
    assert settings_words(ConvertSettings(weight_quant_bits=4, weight_quant_asymmetric=True)) == [
        "Weight quant bits: 4", "Quant symmetry: asymmetric"]
    assert settings_words(ConvertSettings(gelu_approximation=True, convert_matmul_to_conv=True)) == [
        "MatMul to Conv: MatMul to Conv", "GELU: approximate kernel"]


def test_int8_keeps_describes_words():
    s = ConvertSettings(int8=Int8Settings(calib_dir="/data", width=224, height=224), origin_rnn=True)
    (int8,) = ConvertSettings(int8=s.int8).describe()
    assert int8 == "int8 (KL/MAX_ABS, calib_dir, 224x224)"
    assert settings_words(s) == ["keep LSTM/GRU ops", int8]  # describe()'s order: int8 last


def test_every_word_is_in_the_form_and_describe_is_unchanged():
    """Each name is a label of the form (what a user can find with its filter); describe() keeps the JSON keys."""
    labels = {label for _, _, label, _, _ in FIELDS}
    s = ConvertSettings(fp16=True, hqq=True, optimize_level=1, optimize_prefer="smallest", transformer_fuse=True,
                        save_static_model=True, convert_matmul_to_conv=False, gelu_approximation=False,
                        origin_rnn=True, keep_input_format=True, external_weights=True, allow_custom_op=True,
                        dump_pass=False)
    words = settings_words(s)
    assert len(words) == len(s.describe()) == 13
    assert all(w.split(": ")[0] in labels for w in words), words
    assert s.describe()[0] == "fp16=True" and ConvertSettings.describe_json({"fp16": True}) == "fp16=True"


def test_the_statistics_status_names_the_settings_it_converted_with():
    result = {"converted_from": "/m/cnn.onnx", "converted_with": "weight_quant_bits=8"}
    settings = ConvertSettings(weight_quant_bits=8).to_json()
    assert conversion_words(result, settings) == "converted with Weight quant bits: 8"
    assert conversion_words(result, {}) == ""  # the defaults
    assert conversion_words({"converted_with": "fp16=True"}, settings) == ""  # not a conversion (an .mnn, ORT)
    assert conversion_words(result) == "converted with weight_quant_bits=8"  # a payload without its settings


@pytest.mark.gui
def test_the_convert_dock_names_a_ticked_setting_by_its_label(qtbot, window, samples):
    open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    window.actions_by_name["Convert to MNN"].trigger()
    dock = window.panels["Convert"]
    box = dock.form.widgets["fp16"]
    assert isinstance(box, QCheckBox) and box.text() == "fp16 weights"
    box.setChecked(True)
    qtbot.waitUntil(lambda: dock.not_default.text().startswith("Changed from the defaults"), timeout=5000)
    assert dock.not_default.text() == "Changed from the defaults (for this model): fp16 weights", \
        dock.not_default.text()
    box.setChecked(False)
    gelu = dock.form.widgets["gelu_approximation"]
    assert isinstance(gelu, QComboBox)
    gelu.setCurrentIndex(gelu.findText("exact erf"))
    qtbot.waitUntil(lambda: "GELU: exact erf" in dock.not_default.text(), timeout=5000)
    head = dock.not_default.text().splitlines()[0]  # (cnn.onnx has no GELU: the inspector's warning follows)
    assert head == "Changed from the defaults (for this model): GELU: exact erf", head
    dock.form.set_settings(ConvertSettings())  # this model keeps no settings after the test


def test_weight_quant_bits_names_the_compare_modes_it_makes(qtbot):
    """One setting read as three: the Convert dock's "Weight quant bits", Compare's int8w / int4w and "8-bit
    quantized" (helper 96's try). The choices that make Compare's modes say so; the value stays the number."""
    from mnnscope.gui.panels.convertform import SettingsForm
    from mnnscope.inspector.compare.options import MODES
    form = SettingsForm()
    qtbot.addWidget(form)
    box = form.widgets["weight_quant_bits"]
    texts = {box.itemData(i): box.itemText(i) for i in range(box.count())}
    for mode in ("int8w", "int4w"):
        bits = MODES[mode].weight_bits
        assert texts[bits] == f"{bits} (Compare's {mode})", texts
    assert texts[6] == "6" and texts[None] == "converter default"
    form.set_value("weight_quant_bits", 8)
    assert form.value("weight_quant_bits") == 8 and form.settings().weight_quant_bits == 8
    assert settings_words(form.settings()) == ["Weight quant bits: 8"]
