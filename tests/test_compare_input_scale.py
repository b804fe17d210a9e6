"""Inputs on a scale the model does not expect (inspector/compare/inputscale.py).

A new user's int8 of captcha-whisperer's CRNN, calibrated on their own captchas read on the 0..1 scale (the Inputs
dock's default) and compared on one of them, read worst rel L2 0.497 with "give it more samples"; the model scales
its BGR input itself (x * 0.0142 - 3.80: it expects 0..255 values) and its first conv read an almost constant tensor.
Read on the 0..255 scale, the same calibration matched at 0.0407."""
from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper, save

from test_real_models import real_model

from mnnscope.inspector.cli.app import main
from mnnscope.inspector.compare.inputscale import SCALE_255, input_scale_notes, scaling_chain
from mnnscope.inspector.formats.onnx import load_onnx

MEAN, STD = np.array([123.7, 116.3, 103.5]), np.array([58.4, 57.1, 57.4])  # ImageNet's, on the 0..255 scale


def _normalising_model(path, *, inside: bool = True, scale_only: bool = False):
    """x (1x3x8x8) -> (x - mean) / std per channel (inside the model, as exporters of vision models leave it; or not;
    or x * 45 alone, as a transformer scales its embeddings) -> Conv."""
    nodes, inits, at = [], [], "x"
    if scale_only:
        inits.append(numpy_helper.from_array(np.array(45.0, np.float32), "k"))
        nodes.append(helper.make_node("Mul", ["x", "k"], ["scaled"], name="mul"))
        at = "scaled"
    elif inside:
        inits += [numpy_helper.from_array(MEAN.reshape(1, 3, 1, 1).astype(np.float32), "mean"),
                  numpy_helper.from_array(STD.reshape(1, 3, 1, 1).astype(np.float32), "std")]
        nodes += [helper.make_node("Sub", ["x", "mean"], ["centred"], name="sub"),
                  helper.make_node("Div", ["centred", "std"], ["normed"], name="div")]
        at = "normed"
    w = np.random.default_rng(0).normal(size=(4, 3, 3, 3)).astype(np.float32)
    inits.append(numpy_helper.from_array(w, "w"))
    nodes.append(helper.make_node("Conv", [at, "w"], ["y"], name="conv", pads=[1, 1, 1, 1]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], initializer=inits)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return load_onnx(path)


def _normed(x):
    return (x - MEAN.reshape(1, 3, 1, 1)) / STD.reshape(1, 3, 1, 1)


def test_the_models_own_scaling_is_measured_and_inputs_off_its_scale_are_named_with_the_numbers(tmp_path):
    graph = _normalising_model(tmp_path / "m.onnx")
    assert scaling_chain(graph, "x") == (["sub", "div"], "normed", None)
    rng = np.random.default_rng(1)
    image01 = rng.uniform(0, 1, (1, 3, 8, 8))  # an image read on the 0..1 scale
    (note,) = input_scale_notes(graph, {"x": image01}, {"normed": _normed(image01)}, image_inputs={"x"})
    assert note["input"] == "x" and note["ops"] == ["sub", "div"] and note["reader"] == "conv"
    assert np.allclose(note["expects_centre"], MEAN, rtol=1e-4) and np.allclose(note["expects_spread"], STD, rtol=1e-4)
    assert max(note["reaches_std"]) < 0.01 and note["image_0_255"]
    assert "values around 124, 116, 104 (\u00b1 58.4, 57.1, 57.4)" in note["text"], note["text"]
    assert f"std {SCALE_255:.5f}, that is 1/255" in note["text"] and "reaches conv almost constant" in note["text"]
    # the same data from a file or random: what to feed instead, not how to read an image
    (note,) = input_scale_notes(graph, {"x": image01}, {"normed": _normed(image01)})
    assert not note["image_0_255"] and "feed real inputs at that scale" in note["text"]
    # far too wide (values 100 times the model's range) is said too
    wide = rng.uniform(0, 255 * 100, (1, 3, 8, 8))
    (note,) = input_scale_notes(graph, {"x": wide}, {"normed": _normed(wide)})
    assert "times wider than that" in note["text"]
    # on its scale: nothing to say
    image255 = image01 * 255
    assert input_scale_notes(graph, {"x": image255}, {"normed": _normed(image255)}, image_inputs={"x"}) == []
    # a tensor that is not the input scaled (another model, a wrong reference) is not taken for a scaling
    assert input_scale_notes(graph, {"x": image01}, {"normed": rng.normal(size=(1, 3, 8, 8)) * 1e-3}) == []
    # a model that scales nothing itself: the scale its inputs should have cannot be told
    plain = _normalising_model(tmp_path / "plain.onnx", inside=False)
    assert scaling_chain(plain, "x") is None
    assert input_scale_notes(plain, {"x": image01}, {"y": np.zeros((1, 4, 8, 8))}) == []
    # an input that is no image (a float attention mask [1, 1, 1, 16] scaled and shifted) is not read for a scaling
    inits = [numpy_helper.from_array(np.array(-1e4, np.float32), "big"),
             numpy_helper.from_array(np.array(1e4, np.float32), "off")]
    nodes = [helper.make_node("Mul", ["m", "big"], ["scaled"], name="mul"),
             helper.make_node("Add", ["scaled", "off"], ["bias"], name="add"),
             helper.make_node("Softmax", ["bias"], ["p"], name="softmax")]
    masked = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("m", TensorProto.FLOAT, [1, 1, 1, 16])],
                               [helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 1, 1, 16])],
                               initializer=inits)
    save(helper.make_model(masked, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "mask.onnx"))
    mask = (rng.uniform(0, 1, (1, 1, 1, 16)) > 0.5).astype(np.float64)
    mg = load_onnx(tmp_path / "mask.onnx")
    assert scaling_chain(mg, "m") == (["mul", "add"], "bias", None)  # a chain, but not an image's
    assert input_scale_notes(mg, {"m": mask}, {"bias": mask * -1e4 + 1e4}) == []
    # a scale alone (embeddings times sqrt(d)) says nothing of the range expected: no note, however wide
    scaled = _normalising_model(tmp_path / "scaled.onnx", scale_only=True)
    assert scaling_chain(scaled, "x") is None
    assert input_scale_notes(scaled, {"x": wide}, {"scaled": wide * 45}) == []


def _layout_model(path, layout: str):
    """An image model that normalises its input in another layout or by another op, then a Conv; the tensor the
    Conv reads is an output too, so ONNX Runtime gives what the reference run would.
    nhwc_then_transpose: NHWC, scaled on the last axis, then transposed; transpose_first: NHWC transposed, then
    scaled per channel on axis 1; batchnorm: NCHW through a BatchNormalization of the mean and std (var = std^2)."""
    nodes, inits = [], [numpy_helper.from_array(np.random.default_rng(0).normal(size=(4, 3, 3, 3)).astype(np.float32),
                                                "w")]
    nhwc = layout != "batchnorm"
    if layout == "batchnorm":
        inits += [numpy_helper.from_array(v.astype(np.float32), k) for k, v in
                  (("gamma", np.ones(3)), ("beta", np.zeros(3)), ("mean", MEAN), ("var", STD ** 2))]
        nodes.append(helper.make_node("BatchNormalization", ["x", "gamma", "beta", "mean", "var"], ["normed"],
                                      name="bn", epsilon=0.0))
    else:
        cshape = (1, 3, 1, 1) if layout == "transpose_first" else (3,)
        inits += [numpy_helper.from_array(MEAN.reshape(cshape).astype(np.float32), "mean"),
                  numpy_helper.from_array(STD.reshape(cshape).astype(np.float32), "std")]
        chain = [helper.make_node("Sub", ["a0", "mean"], ["a1"], name="sub"),
                 helper.make_node("Div", ["a1", "std"], ["a2"], name="div")]
        move = helper.make_node("Transpose", ["a2" if layout == "nhwc_then_transpose" else "x"],
                                ["normed" if layout == "nhwc_then_transpose" else "a0"], name="to_nchw",
                                perm=[0, 3, 1, 2])
        if layout == "nhwc_then_transpose":
            chain[0].input[0] = "x"
            nodes += chain + [move]
        else:
            chain[1].output[0] = "normed"
            nodes += [move] + chain
    nodes.append(helper.make_node("Conv", ["normed", "w"], ["y"], name="conv", pads=[1, 1, 1, 1]))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 3] if nhwc else [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8]),
         helper.make_tensor_value_info("normed", TensorProto.FLOAT, [1, 3, 8, 8])], initializer=inits)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)]), str(path))
    return load_onnx(path), (1, 8, 8, 3) if nhwc else (1, 3, 8, 8)


@pytest.mark.parametrize("layout", ["nhwc_then_transpose", "transpose_first", "batchnorm"])
def test_a_scaling_in_another_layout_or_by_batchnorm_is_measured_too(tmp_path, layout):
    """An image model exported with its input NHWC scales each channel on the last axis and then transposes, or
    transposes first; one exported from Keras may normalise with a BatchNormalization. Each is a scaling of the
    input: the fit follows the Transpose (the input's axes in the order the scaled tensor has them), and a
    BatchNormalization of constants scales and shifts. Reference values from ONNX Runtime."""
    import onnxruntime as ort
    g, shape = _layout_model(tmp_path / "m.onnx", layout)
    chain = scaling_chain(g, "x")
    assert chain is not None and chain.tensor == "normed"
    assert chain.ops == {"nhwc_then_transpose": ["sub", "div", "to_nchw"], "transpose_first": ["to_nchw", "sub", "div"],
                         "batchnorm": ["bn"]}[layout]
    assert chain.perm == (None if layout == "batchnorm" else [0, 3, 1, 2])
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    image01 = np.random.default_rng(2).uniform(0, 1, shape).astype(np.float32)
    for image, notes in ((image01, 1), (image01 * 255, 0)):
        (normed,) = sess.run(["normed"], {"x": image})
        found = input_scale_notes(g, {"x": image}, {"normed": normed}, image_inputs={"x"})
        assert len(found) == notes, (layout, found)
        if notes:
            (note,) = found
            assert note["reader"] == "conv" and note["image_0_255"], note
            assert np.allclose(note["expects_centre"], MEAN, rtol=1e-3), note["expects_centre"]
            assert np.allclose(note["expects_spread"], STD, rtol=1e-3), note["expects_spread"]
    # the Transposes alone, without the scaling after them, are no scaling
    if layout == "transpose_first":
        g.g.remove_node(next(n for n, d in g.g.nodes(data=True) if d["name"] == "sub"))
        assert scaling_chain(g, "x") is None


@pytest.fixture(scope="module")
def captchas(tmp_path_factory):
    """Three captcha-like images (dark glyph strokes on a light, noisy background), 160x60 RGB."""
    from PIL import Image
    folder = tmp_path_factory.mktemp("captchas")
    rng = np.random.default_rng(7)
    for k in range(3):
        img = rng.integers(170, 256, (60, 160, 3), dtype=np.uint8)
        for _ in range(6):
            x, y = int(rng.integers(5, 140)), int(rng.integers(5, 40))
            img[y:y + 15, x:x + 4] = rng.integers(0, 80, 3, dtype=np.uint8)
        Image.fromarray(img).save(folder / f"cap{k}.png")
    return folder


def _compare(capsys, tmp_path, model, image, calib_dir, std=None) -> dict:
    settings = {"int8": {"calib_dir": str(calib_dir), "samples": 3}}
    extra = []
    if std is not None:
        settings["int8"].update(std=[std] * 3, image_format="BGR")
        extra = ["--std", ",".join([str(std)] * 3)]
    (tmp_path / "s.json").write_text(json.dumps(settings))
    code = main(["compare", str(model), "--modes", "fp32,int8", "--image", str(image), "--convert-settings",
                 str(tmp_path / "s.json"), *extra, "--no-fix", "--time-runs", "0", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code in (0, 1), code
    return out


def test_a_crnn_fed_images_on_the_0_1_scale_is_told_to_read_them_on_the_0_255_scale(captchas, capsys, tmp_path):
    """The new user's run, on images of our own: their int8 advice is the scale, with the setting that fixes it, and
    with that setting the warning goes and the same calibration folder does far better."""
    model = real_model("captcha_whisperer", "models/captcha_crnn.onnx")
    image = captchas / "cap0.png"
    off = _compare(capsys, tmp_path, model, image, captchas)
    (note,) = off["input_scale"]
    assert note["input"] == "image" and note["reader"] == "/conv1/Conv" and note["image_0_255"]
    assert note["ops"] == ["/Mul", "/Add"] and max(note["reaches_std"]) < 0.05
    assert note["text"] in off["warnings"]
    fp32, int8 = off["modes"]
    advice = int8["calibration"]["advice"]
    assert "0..255 scale" in advice and "more of your inputs" not in advice
    assert int8["cause"].endswith(note["text"])
    assert not int8.get("ok") and not [w for w in int8.get("warnings") or [] if "0..255" in w]  # said once, as advice
    assert fp32["ok"] and not fp32.get("warnings")
    on = _compare(capsys, tmp_path, model, image, captchas, std=SCALE_255)
    assert on["input_scale"] == [] and not [w for w in on.get("warnings") or [] if "scale the model" in w]
    before, after = off["modes"][1]["outputs"][0]["rel_l2"], on["modes"][1]["outputs"][0]["rel_l2"]
    assert after < before / 3, (before, after)
