"""The Compare and Convert docks on full int8's calibration, for real (MNN and ONNX Runtime in the work runner): a
Calibration folder set after "Reconvert with settings..." replaces the random samples the dock was given instead of
being refused; the fix line of a comparison calibrated on random data says so and where real inputs go, and calls an
op without weights under int8 what it is (a new user's romanizer decoder, int8)."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")

from test_compare_calibration import decoder_inputs  # noqa: E402,F401
from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401
from test_gui_compare import _run, _wait  # noqa: E402
from test_real_models import real_model  # noqa: E402

pytestmark = pytest.mark.gui


def test_a_calibration_folder_set_after_reconvert_with_settings_replaces_its_random_samples(qtbot, window, samples,
                                                                                          tmp_path):
    open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    panel = window.panels["Compare"]
    _run(qtbot, panel, ["int8"])
    panel.show_mode("int8")
    panel.reconvert_with_settings()
    conv = window.panels["Convert"]
    assert conv.settings().int8.calib_random == 4 and not conv.problems_now()
    folder = tmp_path / "real"
    folder.mkdir()
    for k in range(3):
        np.savez(folder / f"x{k}.npz", input=np.random.default_rng(k).random((1, 3, 32, 32), dtype=np.float32))
    conv.form.widgets["int8.calib_dir"].setText(str(folder))  # as typed
    assert conv.problems_now() == [], conv.problems_now()
    assert conv.settings().int8.sources() == ["calib_dir"]
    assert "calib_dir in place of the 4 default random samples" in conv.not_default.text()
    assert conv.convert_btn.isEnabled()
    # a number of random samples the user sets beside the folder is theirs: both chosen, one is asked for
    conv.form.widgets["int8.calib_random"].setValue(6)
    (problem,) = conv.problems_now()
    assert "one calibration source" in problem and "Random samples (--calib-random)" in problem
    assert "Calibration folder (--calib)" in problem


def test_the_fix_line_says_int8_was_calibrated_on_random_data(qtbot, window, decoder_inputs):  # noqa: F811
    decoder = real_model("arabic_name_romanizer", "resources/decoder.onnx")
    open_and_wait(qtbot, window, decoder, shapes=False)
    panel = window.panels["Compare"]
    panel.window.show_dock("Compare")
    panel.set_modes(["int8"])
    inputs = {"seed": 0, "files": {"*": str(decoder_inputs / "name0.npz")}}
    _wait(qtbot, panel, panel.finished, lambda: panel.run(inputs))
    panel.show_mode("int8")
    line = panel.fix_why.text()
    assert panel.fix_why.isVisibleTo(panel) and line.startswith(
        "Fix: calibrated on 4 random samples and the compared input: give it your own inputs (Convert dock \u203a "
        "Calibration folder"), line
    assert "/Softmax (Softmax), has no weights, but under full int8 it computes on int8 activations" in line
    assert "left it as it was" not in line
    assert "calibrated on 4 random samples" in panel.cause.text()  # the verdict's line too


def test_inputs_off_the_models_scale_lead_the_fix_line_once(qtbot, window, tmp_path):
    """captcha-whisperer's CRNN scales its BGR input itself and expects 0..255 values: a new user compared int8 on a
    captcha read on the 0..1 scale and was told to give more samples. The Fix line now leads with the scale and the
    setting that fixes it; the paragraph is not said again in the verdict's line nor as a notice."""
    from PIL import Image
    image = tmp_path / "cap.png"
    Image.fromarray(np.random.default_rng(3).integers(150, 256, (60, 160, 3), dtype=np.uint8)).save(image)
    open_and_wait(qtbot, window, real_model("captcha_whisperer", "models/captcha_crnn.onnx"), shapes=False)
    panel = window.panels["Compare"]
    panel.window.show_dock("Compare")
    panel.set_modes(["fp32", "int8"])
    before = len(window.notes.texts())
    _wait(qtbot, panel, panel.finished, lambda: panel.run({"seed": 0, "image": {"path": str(image)}}))
    (note,) = panel.result["input_scale"]
    panel.show_mode("int8")
    line = panel.fix_why.text()
    assert line.startswith("Fix: image is not on the scale the model expects"), line
    assert "read the image on the 0..255 scale (std 0.00392, that is 1/255, in the Inputs dock's Image row" in line
    assert "not on the scale" not in panel.cause.text() and panel.cause.text().startswith("wrong: /conv1/Conv")
    assert not any("not on the scale" in t for t in window.notes.texts()[before:]), window.notes.texts()[before:]
