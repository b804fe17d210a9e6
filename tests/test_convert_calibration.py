"""int8 calibration sources: a folder (or files, or text) given beside the random samples the app put in for the user
replaces them; both chosen by the user are refused, naming the Convert dock's fields and the CLI's flags. Converted
for real (a new user's folder of real inputs was refused: "int8 takes one calibration source, got calib_dir,
calib_random", until they found and cleared Random samples)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from mnnscope.inspector.convert.service import convert_model
from mnnscope.inspector.convert.settings import ConvertSettings, Int8Settings

SAMPLES = Path(__file__).resolve().parent.parent / "resources" / "samples"


def test_a_calibration_folder_replaces_the_default_random_samples(isolated_home, shared_runner, tmp_path):
    folder = tmp_path / "real"
    folder.mkdir()
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal((1, 3, 32, 32)).astype(np.float32) * (k + 1) for k in range(3)]
    for k, a in enumerate(arrays):
        np.savez(folder / f"x{k}.npz", input=a)
    # what the Compare dock's "Reconvert with settings..." gives the Convert dock, and the folder set after it
    mine = Int8Settings(calib_random=4, samples=4, calib_random_default=True, calib_dir=str(folder))
    settings = ConvertSettings(int8=mine)
    assert settings.validate() == []
    assert mine.sources() == ["calib_dir"] and mine.replaced_random() == 4
    assert "int8 (KL/MAX_ABS, calib_dir in place of the 4 default random samples)" in settings.describe()
    # it converts as the folder alone does (its count of 4 went with the stand-in: the folder is not capped at 4)
    assert settings.key() == ConvertSettings(int8=Int8Settings(calib_dir=str(folder))).key()
    back = ConvertSettings.from_json(json.loads(json.dumps(settings.to_json())))
    assert back.int8.calib_random_default is True and back == settings
    assert "calib_random_default" not in ConvertSettings(int8=Int8Settings(calib_random=4)).to_json()["int8"]

    r = convert_model(SAMPLES / "cnn.onnx", tmp_path / "int8.mnn", settings, client=shared_runner,
                      run_dir=tmp_path / "run", reduce=False, cache=False)
    assert r.ok, r.errors
    assert any("calibrates on the data given" in w and "4 default random samples" in w for w in r.warnings), r.warnings
    written = sorted((tmp_path / "run" / "calibration").iterdir())
    assert len(written) == 3  # the folder's three samples, not four random ones
    values = np.loadtxt(written[2] / "input.txt", dtype=np.float32)
    np.testing.assert_allclose(values, arrays[2].reshape(-1), rtol=1e-6)
    config = json.loads((tmp_path / "run" / "quantize.json").read_text())
    assert config["used_sample_num"] == 3


def test_both_sources_chosen_by_the_user_are_refused_naming_the_fields():
    both = ConvertSettings(int8=Int8Settings(calib_random=4, calib_dir="/data/real"))
    (problem,) = both.validate()
    assert problem.startswith("int8 takes one calibration source, got calib_dir, calib_random: keep one of ")
    assert "Calibration folder (--calib)" in problem and "Random samples (--calib-random)" in problem
    # a default beside files or text yields too; beside nothing it is the source
    assert Int8Settings(calib_random=4, calib_random_default=True, calib_files=["a.npz"]).sources() == ["calib_files"]
    assert Int8Settings(calib_random=4, calib_random_default=True).sources() == ["calib_random"]
