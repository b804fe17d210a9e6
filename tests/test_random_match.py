"""A comparison on random data says so (a new user's romanizer decoder, Compare on the Inputs dock's defaults: the
full int8 tab read "int8 match", worst output rel L2 0.0265, with nothing saying that both the compared inputs and
int8's calibration were random data; on real inputs the same int8 was wrong, first divergence /Add_4).

- Full int8 within its tolerance, calibrated on random data only and compared on random inputs: a note on the mode
  (its `warnings`, as tiny_note's: the dock's notes, `compare`'s text and `--json`) says the match says little about
  real data and where real inputs go; the verdict stays "match". Inputs or calibration data the user gave: no note.
- The Compare dock after the Inputs dock changed: a line says the results shown are of the previous inputs, until
  the inputs are those again or a new comparison's results come.

Real comparisons of the bundled CNN (resources/samples/cnn.onnx), MNN and ONNX Runtime in the runner.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import require_module

from mnnscope.inspector.cli.app import main
from mnnscope.inspector.compare.calibration import GIVE_DATA, random_match_note

require_module("pytestqt", "pip install -e .[test]")
from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401
from test_gui_compare import _run  # noqa: E402

NOTE = "random samples and compared on random inputs, so this match says little about real data"


def _compare(capsys, samples, *argv, text=False):
    """`mnnscope compare cnn.onnx --modes fp32,int8` with `argv`: its JSON's rows by mode (text=True: its text)."""
    args = ["compare", str(samples / "cnn.onnx"), "--modes", "fp32,int8", "--no-fix", "--time-runs", "0",
            *map(str, argv)]
    code = main(args + ([] if text else ["--json"]))
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    return out if text else {m["mode"]: m for m in json.loads(out)["modes"]}


def _stale_line(panel) -> str | None:
    """The dock's line that says its results are of other inputs than the Inputs dock's, when one shows."""
    from PySide6.QtWidgets import QLabel
    return next((lbl.text() for lbl in panel.findChildren(QLabel)
                 if lbl.isVisibleTo(panel) and "previous inputs" in lbl.text()), None)


def _notes(row: dict) -> list[str]:
    return [w for w in row.get("warnings") or [] if NOTE in w]


def test_full_int8_passing_on_random_calibration_and_random_inputs_says_the_match_says_little(capsys, samples,
                                                                                             tmp_path):
    rows = _compare(capsys, samples)
    int8 = rows["int8"]
    assert int8["ok"] and int8["verdict"] == "match", int8.get("cause")  # the verdict is the tolerance's
    cal = int8["calibration"]
    assert cal["random"] == cal["samples"] == 5 and not cal["given"] and cal["compared_input_random"] is True
    (note,) = _notes(int8)
    assert note == ("calibrated on 5 random samples and compared on random inputs, so this match says little about "
                    "real data: compare on real inputs (Inputs dock \u203a File; CLI: --input) and calibrate on them: "
                    + GIVE_DATA)
    assert "calibration" not in int8["cause"] and not cal.get("advice")  # a note, not the verdict's cause
    assert not _notes(rows["fp32"]) and "calibration" not in rows["fp32"]
    # compare's text says it under the table, as every mode's warning
    assert f"int8: warning: {note}" in _compare(capsys, samples, text=True)

    # the compared input given as a file (the comparison calibrates on it and 4 random samples): no note
    given = tmp_path / "x.npz"
    np.savez(given, input=np.random.default_rng(3).random((1, 3, 32, 32), dtype=np.float32))
    rows = _compare(capsys, samples, "--input", given)
    int8 = rows["int8"]
    assert int8["ok"] and int8["verdict"] == "match", int8.get("cause")
    assert int8["calibration"]["compared_input_random"] is False and int8["calibration"]["random"] == 4
    assert not _notes(int8), int8.get("warnings")


def test_random_calibration_set_by_the_user_is_random_too_and_their_own_data_is_not(capsys, samples, tmp_path):
    """Random samples set in the Convert dock (calib_random: what "Reconvert with settings..." gives a comparison's
    int8) are random data: said on random inputs. A folder of the user's inputs is theirs: nothing said."""
    mine = tmp_path / "random.json"
    mine.write_text(json.dumps({"int8": {"calib_random": 3}}))
    int8 = _compare(capsys, samples, "--convert-settings", mine)["int8"]
    assert int8["ok"] and int8["verdict"] == "match", int8.get("cause")
    assert int8["calibration"] == {"source": "calib_random", "samples": 3, "random": 3, "given": False,
                                   "compared_input_random": True}
    (note,) = _notes(int8)
    assert note.startswith("calibrated on 3 random samples and compared on random inputs")

    folder = tmp_path / "real"
    folder.mkdir()
    for k in range(3):
        # like the compared inputs ([-1, 1)): calibrated on [0, 1) int8 is wrong on them, and then says why itself
        x = np.random.default_rng(10 + k).uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)
        np.savez(folder / f"x{k}.npz", input=x)
    theirs = tmp_path / "theirs.json"
    theirs.write_text(json.dumps({"int8": {"calib_dir": str(folder)}}))
    int8 = _compare(capsys, samples, "--convert-settings", theirs)["int8"]
    assert int8["ok"] and int8["calibration"]["given"], int8.get("calibration")
    assert not _notes(int8), int8.get("warnings")


def test_no_note_but_on_a_pass_with_every_sample_and_the_compared_input_random():
    cal = {"source": "comparison", "samples": 5, "random": 5, "given": False, "compared_input": True,
           "compared_input_random": True}
    row = {"ok": True, "error": None, "verdict": "match", "calibration": cal}
    assert random_match_note(row).startswith("calibrated on 5 random samples and compared on random inputs")
    for other in (dict(row, ok=False, verdict="wrong"),          # over tolerance: calibration_advice speaks
                  dict(row, error="conversion failed"),
                  dict(row, calibration=dict(cal, random=4)),    # the compared input was the user's
                  dict(row, calibration=dict(cal, compared_input_random=None)),  # not known to be random
                  dict(row, calibration={"source": "calib_dir", "samples": 3, "random": 0, "given": True,
                                         "compared_input_random": True}),
                  {k: v for k, v in row.items() if k != "calibration"}):  # not a full int8 mode
        assert random_match_note(other) is None, other


@pytest.mark.gui
def test_the_compare_dock_says_its_results_are_of_the_previous_inputs(qtbot, window, samples, tmp_path):
    """After a comparison, the Inputs dock changed (a value, then a source): the results shown were of the previous
    inputs and nothing said so. A line under the mode tabs says it; the same inputs again, or a new comparison's
    results, and it goes. The int8 tab of a comparison on random data carries the note that says so."""
    open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    panel, inputs = window.panels["Compare"], window.panels["Inputs"]
    _run(qtbot, panel, ["fp32", "int8"])
    assert _stale_line(panel) is None
    panel.show_mode("int8")
    assert NOTE in panel.cause.text() or NOTE in panel.cause.toolTip()

    inputs.seed.setValue(5)  # a value
    qtbot.waitUntil(lambda: _stale_line(panel) is not None, timeout=5000)
    line = _stale_line(panel)
    assert "These results are from the previous inputs" in line and "Run again" in line, line
    inputs.seed.setValue(0)  # the inputs they were computed on again
    assert _stale_line(panel) is None

    (row,) = inputs.rows
    row.source.setCurrentText("File")  # a source (no file chosen yet: the spec still falls back to random data)
    assert _stale_line(panel) is not None
    given = tmp_path / "x.npz"
    np.savez(given, input=np.random.default_rng(3).random((1, 3, 32, 32), dtype=np.float32))
    row.file_path.setText(str(given))
    assert _stale_line(panel) is not None

    # a new comparison, on the file: the line goes, and no random-data note on int8
    result = _run(qtbot, panel, ["fp32", "int8"])
    assert _stale_line(panel) is None
    int8 = next(m for m in result["modes"] if m["mode"] == "int8")
    assert int8["calibration"]["compared_input_random"] is False and not _notes(int8)

    # another model and back (the Inputs dock gives cnn.onnx its file again): the same inputs, nothing said
    open_and_wait(qtbot, window, samples / "encoder_block.onnx", shapes=False)
    assert _stale_line(panel) is None
    open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    assert inputs.spec()["files"] == {"input": str(given)}
    assert _stale_line(panel) is None
    inputs.rows[0].source.setCurrentText("Random")
    assert _stale_line(panel) is not None


def test_a_wrong_mode_on_generated_inputs_says_the_error_may_not_show_on_real_data(capsys, tmp_path):
    """A new user's PP-OCR rec read fp16w and int8w "wrong" on the Inputs dock's random data, ran the keep-in-float
    fix, and found both modes matching on image-like inputs: a wrong mode on generated inputs says so beside its
    verdict; on inputs given as a file it does not."""
    from mnnscope.inspector.compare.calibration import random_inputs_note
    from test_compare_models import HIDDEN, build_outlier
    model = build_outlier(tmp_path / "outlier.onnx")
    args = ["compare", str(model), "--modes", "int8w", "--no-fix", "--time-runs", "0", "--json"]
    assert main(args) == 1
    (row,) = json.loads(capsys.readouterr().out)["modes"]
    assert row["verdict"] == "wrong"
    said = [w for w in row.get("warnings") or [] if w.startswith("compared on generated inputs")]
    assert said == [random_inputs_note(row, True)] and "before acting on it" in said[0]
    given = tmp_path / "x.npz"
    np.savez(given, x=np.random.default_rng(0).standard_normal((1, 8, HIDDEN)).astype(np.float32))
    main(args + ["--input", str(given)])
    (row,) = json.loads(capsys.readouterr().out)["modes"]
    assert row["verdict"] == "wrong" and not any(w.startswith("compared on generated") for w in row.get("warnings") or [])
