"""Conversion settings: converter arguments, validation, JSON round trip, and the CLI's flags (no MNN)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnnscope.inspector.errors import UsageError

from mnnscope.inspector.cli.app import build_parser
from mnnscope.inspector.cli.convert_cmd import settings_from_args
from mnnscope.inspector.convert.settings import ConvertSettings, Int8Settings


def test_defaults_ask_the_converter_for_nothing_but_the_pass_log():
    s = ConvertSettings()
    assert s.validate() == []
    assert s.to_args() == ["--dumpPass"]
    assert ConvertSettings(dump_pass=False).to_args() == []


@pytest.mark.parametrize("settings, args", [
    (ConvertSettings(fp16=True), ["--fp16"]),
    (ConvertSettings(weight_quant_bits=4, weight_quant_block=32),
     ["--weightQuantBits", "4", "--weightQuantBlock", "32"]),
    # MNN 3.6.1 reads the bare --weightQuantAsymmetric flag as *symmetric*: only =1/=0 say what they mean.
    (ConvertSettings(weight_quant_bits=8, weight_quant_asymmetric=True), ["--weightQuantBits", "8",
                                                                          "--weightQuantAsymmetric=1"]),
    (ConvertSettings(weight_quant_bits=8, weight_quant_asymmetric=False), ["--weightQuantBits", "8",
                                                                           "--weightQuantAsymmetric=0"]),
    (ConvertSettings(weight_quant_bits=8, hqq=True), ["--weightQuantBits", "8", "--hqq"]),
    (ConvertSettings(optimize_level=2, optimize_prefer="smallest"), ["--optimizeLevel", "2", "--optimizePrefer", "1"]),
    (ConvertSettings(transformer_fuse=True, save_static_model=True), ["--transformerFuse", "--saveStaticModel"]),
    (ConvertSettings(convert_matmul_to_conv=False), ["--convertMatmulToConv", "0"]),
    (ConvertSettings(gelu_approximation=True, origin_rnn=True), ["--useGeluApproximation", "1", "--useOriginRNNImpl"]),
    (ConvertSettings(gelu_approximation=False), ["--useGeluApproximation", "0"]),
    (ConvertSettings(keep_input_format=True), ["--keepInputFormat=1"]),
    (ConvertSettings(keep_input_format=False), ["--keepInputFormat=0"]),
    (ConvertSettings(external_weights=True, allow_custom_op=True), ["--saveExternalData", "--allowCustomOp"]),
])
def test_each_setting_becomes_its_converter_argument(settings, args):
    assert settings.validate() == []
    assert settings.to_args() == args + ["--dumpPass"]


@pytest.mark.parametrize("settings, fragment", [
    (ConvertSettings(weight_quant_bits=9), "2..8"),
    (ConvertSettings(weight_quant_bits=1), "2..8"),
    (ConvertSettings(weight_quant_asymmetric=True), "needs weight quant bits"),
    (ConvertSettings(weight_quant_block=32), "needs weight quant bits"),
    (ConvertSettings(hqq=True), "needs weight quant bits"),
    (ConvertSettings(weight_quant_bits=8, weight_quant_block=0), "positive"),
    (ConvertSettings(fp16=True, weight_quant_bits=8), "silently drops"),
    (ConvertSettings(optimize_level=0), "only for .mnn"),
    (ConvertSettings(optimize_prefer="tiny"), "optimize prefer"),
    (ConvertSettings(int8=Int8Settings()), "needs calibration data"),
    (ConvertSettings(int8=Int8Settings(calib_random=4, calib_dir="x")), "one calibration source"),
    (ConvertSettings(int8=Int8Settings(calib_random=4, feature_method="ADMM")), "crashes mnnquant"),
    (ConvertSettings(int8=Int8Settings(calib_random=4, weight_method="L2")), "weight method"),
    (ConvertSettings(int8=Int8Settings(calib_random=4), fp16=True), "replaces fp16"),
    (ConvertSettings(int8=Int8Settings(calib_files=["a.txt"])), "not .npy or .npz"),
    (ConvertSettings(int8=Int8Settings(calib_text="t.txt")), "needs a tokenizer"),
])
def test_validation_names_the_problem(settings, fragment):
    problems = settings.validate()
    assert problems and any(fragment in p for p in problems), problems


def test_json_round_trip_and_key():
    s = ConvertSettings(weight_quant_bits=4, weight_quant_block=64, weight_quant_asymmetric=False,
                        int8=None, optimize_prefer="fastest")
    d = json.loads(json.dumps(s.to_json()))
    back = ConvertSettings.from_json(d)
    assert back == s and back.key() == s.key()
    assert ConvertSettings(weight_quant_bits=8).key() != s.key()
    q = ConvertSettings(int8=Int8Settings(calib_random=3, skip_ops=["conv1"]))
    back = ConvertSettings.from_json(json.loads(json.dumps(q.to_json())))
    assert isinstance(back.int8, Int8Settings) and back.int8.skip_ops == ["conv1"] and back == q
    with pytest.raises(ValueError, match="unknown settings key"):
        ConvertSettings.from_json({"fp17": True})


def _args(*argv):
    return build_parser().parse_args(["convert", "m.onnx", "-o", "m.mnn", *argv])


def test_flags_override_a_settings_file(tmp_path):
    f = tmp_path / "s.json"
    f.write_text(json.dumps(ConvertSettings(weight_quant_bits=8, transformer_fuse=True).to_json()))
    s = settings_from_args(_args("--settings", str(f), "--weight-quant-bits", "4", "--weight-quant-block", "32",
                                 "--no-matmul-to-conv", "--weight-quant-symmetric"))
    assert (s.weight_quant_bits, s.weight_quant_block, s.transformer_fuse) == (4, 32, True)
    assert s.convert_matmul_to_conv is False and s.weight_quant_asymmetric is False
    s = settings_from_args(_args("--int8", "--calib-random", "5", "--skip-op", "a", "--skip-op", "b",
                                 "--feature-method", "EMA"))
    assert s.int8 == Int8Settings(calib_random=5, skip_ops=["a", "b"], feature_method="EMA")


@pytest.mark.parametrize("argv, fragment", [
    (("--calib-random", "4"), "needs --int8"),
    (("--fp16", "--weight-quant-bits", "8"), "exclude each other"),
    (("--int8",), "calibration data"),
    (("--settings", "/nonexistent/s.json"), "no such file"),
])
def test_bad_flag_combinations_are_usage_errors(argv, fragment):
    with pytest.raises(UsageError, match=fragment):
        settings_from_args(_args(*argv))


def test_calibration_samples_from_text_and_files(tmp_path):
    """Text lines through a tokenizer and .npz files become mnnquant "sequence" samples (no MNN needed)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from tokenizers import Tokenizer, models, pre_tokenizers

    from mnnscope.inspector.convert.calibration import prepare_calibration
    from mnnscope.inspector.formats.onnx import load_onnx

    emb = numpy_helper.from_array(np.ones((10, 4), np.float32), "emb")
    graph = helper.make_graph([helper.make_node("Gather", ["emb", "input_ids"], ["y"], name="embed")], "g",
                              [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "seq"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", 4])], initializer=[emb])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(tmp_path / "m.onnx"))
    vocab = {"[UNK]": 0, "hello": 1, "world": 2, "again": 3}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "calib.txt").write_text("hello world\n\nworld again hello\n")
    g = load_onnx(tmp_path / "m.onnx")
    config = prepare_calibration(Int8Settings(calib_text=str(tmp_path / "calib.txt"),
                                              tokenizer=str(tmp_path / "tokenizer.json")), g, tmp_path / "run")
    assert config["input_type"] == "sequence" and config["used_sample_num"] == 2
    samples = sorted(Path(config["path"]).iterdir())
    assert [np.loadtxt(s / "input_ids.txt", ndmin=1).astype(int).tolist() for s in samples] == [[1, 2], [2, 3, 1]]
    meta = json.loads((samples[1] / "input.json").read_text())
    assert meta["inputs"] == [{"name": "input_ids", "shape": [1, 3]}]
    npz = tmp_path / "npz"
    npz.mkdir()
    np.savez(npz / "a.npz", input_ids=np.array([[4, 5, 6, 7]], np.int64))
    config = prepare_calibration(Int8Settings(calib_dir=str(npz)), g, tmp_path / "run2")
    (sample,) = Path(config["path"]).iterdir()
    assert np.loadtxt(sample / "input_ids.txt").astype(int).tolist() == [4, 5, 6, 7]


def test_calibration_images_come_at_the_width_and_height_asked(tmp_path):
    """Int8Settings.width/height were never read: PP-OCRv6 det's calibration samples stayed 640x640 with 64 set
    (tryout 15). Images are resized to them, in the input's layout, and so are random samples."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
    from PIL import Image

    from mnnscope.inspector.convert.calibration import prepare_calibration
    from mnnscope.inspector.formats.onnx import load_onnx

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, "H", "W"])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "m.onnx"))
    images = tmp_path / "images"
    images.mkdir()
    for i in range(2):
        Image.new("RGB", (640, 640), (255, 255 - 100 * i, 255)).save(images / f"{i}.png")
    g = load_onnx(tmp_path / "m.onnx")
    for settings, want in ((Int8Settings(calib_dir=str(images), samples=2, width=64, height=48), [1, 3, 48, 64]),
                           (Int8Settings(calib_dir=str(images), samples=2), [1, 3, 640, 640]),
                           (Int8Settings(calib_random=2, width=32, height=32), [1, 3, 32, 32])):
        config = prepare_calibration(settings, g, tmp_path / f"run{want[2]}")
        for sample in Path(config["path"]).iterdir():
            meta = json.loads((sample / "input.json").read_text())
            assert meta["inputs"] == [{"name": "x", "shape": want}], (settings, meta)
