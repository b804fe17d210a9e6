"""What a full int8 mode was calibrated on, and what to do when it was random data and the mode is over tolerance.

mnnquant sets each activation's int8 range from the calibration samples; random samples give ranges that real
inputs may not have. A new user's int8 of the romanizer decoder read "wrong: /Softmax ... worst model output rel L2
0.0916" with nothing saying it was calibrated on random data; calibrated on their own inputs it came to 0.0207.
"""
from __future__ import annotations

import os

from mnnscope.inspector.convert.settings import Int8Settings

# Where a comparison's int8 gets its user's data: the Convert dock's fields, or the CLI's settings file.
GIVE_DATA = ("give it your own inputs (Convert dock \u203a Calibration folder or Calibration files: .npz/.npy of real "
             "inputs, then Reconvert and re-run; CLI: compare --convert-settings FILE.json with "
             "{\"int8\": {\"calib_dir\": DIR}})")


def random_spec(input_spec: dict | None) -> bool | None:
    """Whether compare inputs (inputs.data.make_inputs keywords) are generated: no file, image or text in them; None
    when unknown."""
    if input_spec is None:
        return None
    return not any(input_spec.get(k) for k in ("files", "image", "text"))


def calibration_of(int8: Int8Settings, work_dir: str, inputs_npz: str, inputs_random: bool | None) -> dict:
    """{source, samples, random, given} of a full int8 conversion's calibration: `source` the setting it came from
    ("calib_dir", "calib_files", "calib_random", "calib_text", or "comparison": the compared input plus this
    comparison's seeded random samples), `samples` how many it was given, `random` how many of them are random
    data, `given` whether the user gave the data."""
    int8 = int8.effective()
    sources = int8.sources()
    if sources == ["calib_random"]:
        n = int(int8.calib_random)
        return {"source": "calib_random", "samples": n, "random": n, "given": False,
                "compared_input_random": inputs_random}
    work = os.path.join(os.path.abspath(work_dir), "")
    files = [os.path.abspath(f) for f in int8.calib_files]
    if sources == ["calib_files"] and files and all(f.startswith(work) for f in files):
        own = [f for f in files if f != os.path.abspath(inputs_npz)]
        random = len(own) + (1 if inputs_random and len(own) < len(files) else 0)
        return {"source": "comparison", "samples": len(files), "random": random, "given": False,
                "compared_input": len(own) < len(files), "compared_input_random": inputs_random}
    n = None
    if sources == ["calib_files"]:
        n = len(files)
    elif sources == ["calib_dir"] and os.path.isdir(int8.calib_dir):
        n = sum(1 for e in os.scandir(int8.calib_dir) if e.is_file() and not e.name.startswith("."))
    return {"source": sources[0] if sources else None, "samples": n, "random": 0, "given": True,
            "compared_input_random": inputs_random}


def calibration_advice(row: dict, input_scale: str | None = None) -> str | None:
    """For a full int8 row over its tolerance calibrated on random data: the sentence that says so and what to do
    ("calibrated on 5 random samples: give it your own inputs (...)"); None otherwise. `input_scale`: the compared
    inputs are on a scale the model does not expect (inputscale.py): that is the advice, whatever the calibration
    (more samples on the wrong scale would not help)."""
    cal = row.get("calibration") or {}
    if row.get("ok") or row.get("error"):
        return None
    if input_scale and row.get("calibration") is not None:
        return input_scale
    if cal.get("given"):
        return _given_advice(cal)
    if not cal.get("random"):
        return None
    n = cal["random"]
    what = f"calibrated on {n} random sample{'s' if n != 1 else ''}"
    if cal.get("source") == "comparison" and cal.get("compared_input") and not cal.get("compared_input_random"):
        what += " and the compared input"
    elif cal.get("source") == "comparison" and cal.get("compared_input") and n > 1:
        # (helper 109 read "5 random samples" here and Random samples 4 in the Convert dock after Reconvert with
        # settings: the fifth is the compared input, random data too)
        what += f" ({n - 1} of the comparison's own and its input, random too)"
    return f"{what}: {GIVE_DATA}"


def random_match_note(row: dict) -> str | None:
    """For a full int8 row within its tolerance whose calibration and compared inputs were all random data: the
    note that says the match tells little about real data, and what to do; None otherwise (the user gave inputs or
    calibration data, or the mode is over its tolerance: calibration_advice speaks then). A new user's romanizer
    decoder read "int8 match", worst output rel L2 0.0265, on the Inputs dock's random defaults; on real inputs the
    same int8 was wrong (first divergence /Add_4). The verdict stays the tolerance's."""
    cal = row.get("calibration") or {}
    if not row.get("ok") or row.get("error") or cal.get("given") or cal.get("compared_input_random") is not True:
        return None
    n = cal.get("random")
    if not isinstance(n, int) or n <= 0 or n != cal.get("samples"):
        return None
    return (f"calibrated on {n} random sample{'s' if n != 1 else ''} and compared on random inputs, so this match "
            "says little about real data: compare on real inputs (Inputs dock \u203a File; CLI: --input) and "
            f"calibrate on them: {GIVE_DATA}")


def random_inputs_note(row: dict, inputs_random: bool | None) -> str | None:
    """For a mode judged wrong on generated inputs: that the error may not show on the model's real data, and where
    real inputs go; None otherwise (a full int8 mode whose calibration was random says so itself:
    calibration_advice). A new user's PP-OCR rec read fp16w and int8w "wrong" on the Inputs dock's random [-1, 1)
    data, ran the keep-in-float fix (a larger file, 1.3x less error), and found both modes matching on image-like
    inputs; the only word on the inputs came after the fix."""
    if inputs_random is not True or row.get("verdict") != "wrong" or (row.get("calibration") or {}).get("advice"):
        return None
    return ("compared on generated inputs (the Inputs dock's random data): this error may not show on the model's "
            "real data; compare on real inputs (Inputs dock \u203a File or Image; CLI: --input) before acting on it")


FEW_SAMPLES = 10  # calibration sets smaller than this: the activation ranges fit those few inputs only


def _given_advice(cal: dict) -> str | None:
    """Over tolerance on the user's own calibration data: what may stand between it and the comparison (tryout 71
    calibrated the romanizer decoder on one real input and compared on random data: rel L2 0.0265 -> 0.0566, FAIL,
    with nothing said). None when neither applies."""
    out = []
    if cal.get("compared_input_random"):
        out.append("it was calibrated on your data but compared on random inputs, whose activations may go beyond the "
                   "ranges calibrated: compare on inputs like the calibration data (Inputs dock \u203a File; CLI: "
                   "--input)")
    n = cal.get("samples")
    if isinstance(n, int) and 0 < n < FEW_SAMPLES:
        out.append(f"it was calibrated on {n} sample{'s' if n != 1 else ''}: int8's activation ranges then fit those "
                   "inputs only; give it more of your inputs (tens to hundreds)")
    return "; ".join(out) or None
