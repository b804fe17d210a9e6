"""inspector/formats/mnn_flatbuffer.py (and its table and parameter readers) against real MNN files: ONNX
models of known structure converted by MNN's own converter, cross-checked with MNN's own reading of the
same files (both in child processes). One module past 400 lines: every case shares the same conversion
fixtures and MNN cross-check."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mnnscope.inspector.formats.mnn_flatbuffer import MnnFormatError, read_mnn
from mnnscope.inspector.formats.mnn_weights import read_weight, weight_array

_CONVERT = (
    "import sys, _tools\n"
    "_tools.mnnconvert(['MNNConvert', '-f', 'ONNX', '--modelFile', sys.argv[1], '--MNNModel', sys.argv[2],"
    " '--bizCode', 'mnnscope'] + sys.argv[3:])\n"
)
# MNN's view of a file: (output tensor name, op type) per Var. MNN prints on stdout, so JSON goes to a file.
_MNN_VIEW = (
    "import json, sys, MNN\n"
    "view = {}\n"
    "for path in sys.argv[2:]:\n"
    "    view[path] = [[v.name, v.op_type] for v in MNN.expr.load_as_list(path)]\n"
    "json.dump(view, open(sys.argv[1], 'w'))\n"
)


def _init(name, values):
    return numpy_helper.from_array(np.asarray(values, np.float32), name)


def _conv_net() -> onnx.ModelProto:
    """Conv(3x3, stride 2)+BN+Relu, depthwise Conv(3x1)+Clip(0,6), MaxPool, Flatten, Gemm, Softmax."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "g", "be", "m", "v"], ["bn1"]),
        helper.make_node("Relu", ["bn1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], kernel_shape=[3, 1], pads=[1, 0, 1, 0], group=8),
        helper.make_node("Clip", ["c2", "lo", "hi"], ["r2"]),
        helper.make_node("MaxPool", ["r2"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p1"], ["f1"], axis=1),
        helper.make_node("Gemm", ["f1", "wg", "bg"], ["g1"], transB=1),
        helper.make_node("Softmax", ["g1"], ["y"], axis=1),
    ]
    inits = [_init("w1", rng.standard_normal((8, 3, 3, 3))), _init("b1", rng.standard_normal(8)),
             _init("g", rng.random(8) + 0.5), _init("be", rng.standard_normal(8)),
             _init("m", rng.standard_normal(8)), _init("v", rng.random(8) + 0.5),
             _init("w2", rng.standard_normal((8, 1, 3, 1))), _init("lo", 0.0), _init("hi", 6.0),
             _init("wg", rng.standard_normal((10, 128))), _init("bg", rng.standard_normal(10))]
    graph = helper.make_graph(nodes, "convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _block_net() -> onnx.ModelProto:
    """MatMul+bias, LayerNorm, Transpose, attention-like MatMuls, Softmax, Mul; Gather+Sqrt on a side input."""
    rng = np.random.default_rng(1)
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("Add", ["q", "bq"], ["qb"]),
        helper.make_node("LayerNormalization", ["qb", "gamma", "beta"], ["ln"], axis=-1, epsilon=1e-5),
        helper.make_node("Transpose", ["ln"], ["tr"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["ln", "tr"], ["att"]),
        helper.make_node("Softmax", ["att"], ["sm"], axis=-1),
        helper.make_node("MatMul", ["sm", "ln"], ["ctx"]),
        helper.make_node("Mul", ["ctx", "scale"], ["y"]),
        helper.make_node("Gather", ["emb", "ids"], ["e"], axis=0),
        helper.make_node("Sqrt", ["e"], ["z"]),
    ]
    inits = [_init("wq", rng.standard_normal((16, 16))), _init("bq", rng.standard_normal(16)),
             _init("gamma", rng.random(16) + 0.5), _init("beta", rng.standard_normal(16)),
             _init("scale", [0.5]), _init("emb", rng.random((50, 16)))]
    graph = helper.make_graph(
        nodes, "block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 16]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 16]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 16])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _if_net() -> onnx.ModelProto:
    """A data-dependent If: MNN keeps both branches as named subgraphs."""
    then_g = helper.make_graph([helper.make_node("Relu", ["dw"], ["t_out"])], "then_branch", [],
                               [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Neg", ["dw"], ["e_out"])], "else_branch", [],
                               [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Conv", ["x", "w"], ["dw"], kernel_shape=[3, 3], group=4, pads=[1, 1, 1, 1]),
             helper.make_node("ReduceSum", ["dw"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    graph = helper.make_graph(nodes, "ifnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [_init("w", np.ones((4, 1, 3, 3))), _init("zero", 0.0)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _deep_net(layers: int, width: int) -> onnx.ModelProto:
    """A deep stack of MatMul/Add/Relu (13 MNN ops per layer after conversion) with big weights."""
    rng = np.random.default_rng(2)
    nodes, inits, cur = [], [], "x"
    for i in range(layers):
        inits.append(_init(f"w{i}", rng.standard_normal((width, width))))
        nodes += [helper.make_node("MatMul", [cur, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", cur], [f"a{i}"]),
                  helper.make_node("Relu", [f"a{i}"], [f"r{i}"])]
        cur = f"r{i}"
    graph = helper.make_graph(nodes, "deep", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
                              [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [1, width])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# name -> (ONNX builder, converter flags)
_VARIANTS = {
    "conv": ("conv", []),
    "conv_q8": ("conv", ["--weightQuantBits", "8"]),
    "conv_fp16": ("conv", ["--fp16"]),
    "conv_ext": ("conv", ["--saveExternalData"]),
    "block": ("block", []),
    "conv_q4_ext": ("conv", ["--weightQuantBits", "4", "--weightQuantBlock", "32", "--saveExternalData"]),
    "ifnet": ("ifnet", []),
    "deep": ("deep", []),
}


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    """Every variant converted once (in parallel child processes), plus MNN's own view of each file."""
    root = tmp_path_factory.mktemp("mnn_format")
    builders = {"conv": _conv_net, "block": _block_net, "ifnet": _if_net, "deep": lambda: _deep_net(100, 256)}
    onnx_paths = {}
    for key, build in builders.items():
        onnx_paths[key] = root / f"{key}.onnx"
        onnx.save(build(), onnx_paths[key])
    jobs = {}
    for name, (src, flags) in _VARIANTS.items():
        # Own folder per job: the converter writes a scratch file into its working directory.
        work = root / name
        work.mkdir()
        dst = work / f"{name}.mnn"
        proc = subprocess.Popen([sys.executable, "-c", _CONVERT, str(onnx_paths[src]), str(dst), *flags],
                                cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        jobs[name] = (proc, dst)
    paths = {}
    for name, (proc, dst) in jobs.items():
        out, _ = proc.communicate(timeout=300)
        assert "Converted Success!" in out and dst.exists(), f"conversion of {name} failed:\n{out[-2000:]}"
        paths[name] = dst
    view_file = root / "mnn_view.json"
    proc = subprocess.run([sys.executable, "-c", _MNN_VIEW, str(view_file), *map(str, paths.values())],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    views = json.loads(view_file.read_text())
    return {"root": root, "paths": paths, "onnx": onnx_paths,
            "mnn_view": {name: views[str(path)] for name, path in paths.items()}}


def _by_output(model, tensor):
    return next(op for op in model.ops if tensor in op.outputs)


def _mnn_type(op) -> str:
    """The op type as MNN's Python API names it (operation names for BinaryOp/UnaryOp)."""
    if op.op_type in ("BinaryOp", "UnaryOp"):
        return op.attrs["opType"]
    return op.op_type


@pytest.mark.parametrize("name", list(_VARIANTS))
def test_structure_matches_mnn(models, name):
    model = read_mnn(models["paths"][name])
    mine = sorted((tensor, _mnn_type(op)) for op in model.ops for tensor in op.outputs)
    theirs = sorted(tuple(item) for item in models["mnn_view"][name])
    assert mine == theirs
    assert len(model.ops) == len({op.name for op in model.ops})
    assert model.biz_code == "mnnscope" and model.source == "ONNX" and model.version
    graph = onnx.load(models["onnx"][_VARIANTS[name][0]]).graph
    assert model.outputs == [o.name for o in graph.output]
    assert [i["name"] for i in model.inputs] == [i.name for i in graph.input]
    for given, read in zip(graph.input, model.inputs):
        assert read["shape"] == [d.dim_value for d in given.type.tensor_type.shape.dim]
    assert set(model.tensor_names) >= {t for op in model.ops for t in op.inputs + op.outputs}
    json.dumps(dataclasses.asdict(model))  # attrs and weights must be plain data


def test_conv_attributes_as_built(models):
    model = read_mnn(models["paths"]["conv"])
    conv = _by_output(model, "r1")  # Conv+BN+Relu fused: one op, ONNX's Relu output name
    assert conv.op_type == "Convolution"
    attrs = conv.attrs
    assert (attrs["kernel"], attrs["stride"], attrs["pads"]) == ([3, 3], [2, 2], [1, 1, 1, 1])
    assert (attrs["group"], attrs["inputCount"], attrs["outputCount"]) == (1, 3, 8)
    assert attrs["relu"] is True and attrs["relu6"] is False and "quant" not in attrs
    assert [(w["name"], w["shape"], w["dtype"]) for w in conv.weights] == [
        ("weight", [8, 3, 3, 3], "float32"), ("bias", [8], "float32")]
    dw = _by_output(model, "r2")  # depthwise Conv + Clip(0, 6)
    assert dw.op_type == "ConvolutionDepthwise"
    assert (dw.attrs["group"], dw.attrs["kernel"], dw.attrs["relu6"]) == (8, [3, 1], True)  # [y, x]
    assert dw.attrs["pads"] == [1, 0, 1, 0] and dw.attrs["relu"] is False
    assert dw.weights[0]["shape"] == [8, 1, 3, 1]
    pool = _by_output(model, "p1")
    assert pool.op_type == "Pooling"
    assert pool.attrs["type"] == "MAXPOOL" and pool.attrs["kernel"] == [2, 2] and pool.attrs["stride"] == [2, 2]
    assert pool.attrs["global"] is False
    assert _by_output(model, "y").attrs["axis"] == 1
    (the_input,) = model.inputs
    assert the_input["dtype"] == "float32" and the_input["format"] == "NCHW"
    # Every ONNX weight survives as a conv weight (BN folded into conv1, Gemm became a 1x1 conv).
    conv_weights = [w["elements"] for op in model.ops for w in op.weights if w["name"] == "weight"]
    assert sorted(conv_weights) == sorted([8 * 3 * 9, 8 * 3, 10 * 128])
    assert model.params == sum(w["elements"] for op in model.ops for w in op.weights)
    assert not model.external_weights


def test_weight_quantization_is_reported(models):
    plain = read_mnn(models["paths"]["conv"])
    quant = read_mnn(models["paths"]["conv_q8"])
    convs = [op for op in quant.ops if op.op_type.startswith("Convolution")]
    assert len(convs) == 3
    quant_bytes = float_bytes = 0
    for op in convs:
        reference = next(o for o in plain.ops if o.name == op.name)
        assert op.attrs["quant"]["bits"] == 8 and op.attrs["quant"]["kind"] == "weight_quant"
        weight, ref_weight = op.weights[0], reference.weights[0]
        assert weight["dtype"] == "int8" and weight["shape"] == ref_weight["shape"]
        assert weight["elements"] == ref_weight["elements"]
        quant_bytes, float_bytes = quant_bytes + weight["bytes"], float_bytes + ref_weight["bytes"]
    # Per op a 256-entry value table is stored too, so only the total is clearly smaller.
    assert quant_bytes < float_bytes / 2
    assert quant.params == plain.params

    half = read_mnn(models["paths"]["conv_fp16"])
    for op in (op for op in half.ops if op.op_type.startswith("Convolution")):
        assert op.attrs["quant"]["kind"] == "fp16"
        assert op.weights[0]["dtype"] == "float16" and op.weights[0]["bytes"] == 2 * op.weights[0]["elements"]
    assert half.params == plain.params


def test_external_weights_keep_shapes(models):
    plain = read_mnn(models["paths"]["conv"])
    path = models["paths"]["conv_ext"]
    ext = read_mnn(path)
    assert ext.external_weights
    assert os.path.getsize(f"{path}.weight") > 0
    for op in ext.ops:
        ref = next(o for o in plain.ops if o.name == op.name)
        assert [(w["name"], w["shape"], w["elements"]) for w in op.weights] == \
            [(w["name"], w["shape"], w["elements"]) for w in ref.weights]
    # The converter moves conv weights and biases (and only them, in this model) to x.mnn.weight.
    moved = sum(w["bytes"] for op in ext.ops if op.op_type.startswith("Convolution") for w in op.weights)
    assert moved == os.path.getsize(f"{path}.weight")

    # Quantized and external: the weight shape comes from the conv parameters, bytes from `external`.
    q4 = read_mnn(models["paths"]["conv_q4_ext"])
    assert q4.external_weights and q4.params == plain.params
    for op in (op for op in q4.ops if op.op_type.startswith("Convolution")):
        ref = next(o for o in plain.ops if o.name == op.name)
        assert op.attrs["quant"]["bits"] == 4
        assert (op.weights[0]["dtype"], op.weights[0]["shape"]) == ("int4", ref.weights[0]["shape"])
    gemm = _by_output(q4, "g1__matmul_converted")
    assert gemm.attrs["quant"]["blocks"] == 4  # 128 inputs in blocks of 32
    assert gemm.weights[0]["bytes"] < gemm.weights[0]["elements"]  # 4 bits a weight plus a small header


def test_block_attributes(models):
    model = read_mnn(models["paths"]["block"])
    ln = _by_output(model, "ln")
    assert ln.op_type == "LayerNorm" and ln.attrs["axis"] == [-1]
    assert ln.attrs["epsilon"] == pytest.approx(1e-5)
    assert {w["name"]: w["elements"] for w in ln.weights} == {"gamma": 16, "beta": 16}
    assert _by_output(model, "tr").attrs["dims"] == [0, 2, 1]
    att = _by_output(model, "att")
    assert att.op_type == "MatMul" and (att.attrs["transposeA"], att.attrs["transposeB"]) == (False, False)
    assert _by_output(model, "sm").attrs["axis"] == -1
    assert _by_output(model, "y").attrs["opType"] == "MUL"
    assert _by_output(model, "z").attrs["opType"] == "SQRT"
    emb = next(op for op in model.ops if op.name == "emb")
    assert emb.op_type == "Const" and emb.attrs["dims"] == [50, 16]
    assert [{k: v for k, v in w.items() if k != "data"} for w in emb.weights] == \
        [{"name": "value", "shape": [50, 16], "dtype": "float32", "bytes": 3200, "elements": 800}]
    ids = next(i for i in model.inputs if i["name"] == "ids")
    assert ids["dtype"] == "int32"  # MNN stores int64 inputs as int32


def test_subgraphs_of_if(models):
    model = read_mnn(models["paths"]["ifnet"])
    branch = _by_output(model, "y")
    assert branch.op_type == "If"
    names = {g.name: g for g in model.subgraphs}
    assert set(names) == {branch.attrs["then_graph"], branch.attrs["else_graph"]} == {"then_branch", "else_branch"}
    assert [op.op_type for op in names["then_branch"].ops if op.op_type != "Input"] == ["ReLU"]
    neg = [op for op in names["else_branch"].ops if op.op_type != "Input"]
    assert [(op.op_type, op.attrs["opType"]) for op in neg] == [("UnaryOp", "NEG")]
    assert names["then_branch"].outputs == ["t_out"]


def test_big_file_parses_fast(models):
    path = models["paths"]["deep"]
    assert path.stat().st_size > 20e6
    start = time.perf_counter()
    model = read_mnn(path)
    elapsed = time.perf_counter() - start
    assert len(model.ops) > 1000 and model.params >= 100 * 256 * 256
    # Weights (26 MB) are measured, never read: a per-byte or per-element loop would take seconds.
    assert elapsed < 0.3, f"{len(model.ops)} ops took {elapsed:.3f} s"


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def _assert_rejected(path):
    start = time.perf_counter()
    with pytest.raises(MnnFormatError) as info:
        read_mnn(path)
    assert time.perf_counter() - start < 1.0
    message = str(info.value)
    assert str(path) in message and "\n" not in message
    return message


def test_bad_files_raise_one_line_errors(models, tmp_path):
    rng = np.random.default_rng(3)
    assert "empty" in _assert_rejected(_write(tmp_path / "empty.mnn", b""))
    _assert_rejected(_write(tmp_path / "ten.mnn", rng.bytes(10)))
    _assert_rejected(_write(tmp_path / "random.mnn", rng.bytes(10_000)))
    _assert_rejected(_write(tmp_path / "onnx.mnn", models["onnx"]["conv"].read_bytes()))
    assert "cannot read" in _assert_rejected(tmp_path / "missing.mnn")
    real = models["paths"]["conv"].read_bytes()
    # The last 4 bytes can be a string terminator plus padding; any cut before them loses data.
    for cut in (4, 16, 100, len(real) // 3, len(real) // 2, len(real) - 100, len(real) - 5):
        _assert_rejected(_write(tmp_path / f"cut{cut}.mnn", real[:cut]))


def test_garbage_never_escapes_as_another_exception(models, tmp_path):
    """Random byte flips in a real file either still parse or raise MnnFormatError, quickly."""
    real = bytearray(models["paths"]["conv_q8"].read_bytes())
    rng = np.random.default_rng(4)
    path = tmp_path / "flipped.mnn"
    rejected = 0
    for _ in range(300):
        data = bytearray(real)
        for pos in rng.integers(0, len(data), size=4):
            data[pos] = rng.integers(0, 256)
        path.write_bytes(bytes(data))
        try:
            read_mnn(path)
        except MnnFormatError:
            rejected += 1
    assert rejected > 0


def _tiny_net(op_type: int, param_tag: int, output_index: int) -> bytes:
    """A hand-built one-op Net (flatbuffers Builder, field slots as in MNN.fbs)."""
    import flatbuffers

    b = flatbuffers.Builder(256)
    op_name, tensor = b.CreateString("op0"), b.CreateString("t0")
    b.StartObject(1)  # an empty parameter table
    param = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependInt32(output_index)
    outputs = b.EndVector()
    b.StartObject(8)  # Op
    b.PrependUint8Slot(1, param_tag, 0)
    b.PrependUOffsetTRelativeSlot(2, param, 0)
    b.PrependUOffsetTRelativeSlot(3, op_name, 0)
    b.PrependUOffsetTRelativeSlot(4, outputs, 0)
    b.PrependInt32Slot(5, op_type, 0)
    op = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(op)
    ops = b.EndVector()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(tensor)
    names = b.EndVector()
    b.StartObject(12)  # Net
    b.PrependUOffsetTRelativeSlot(3, ops, 0)
    b.PrependUOffsetTRelativeSlot(7, names, 0)
    b.Finish(b.EndObject())
    return bytes(b.Output())


def test_unknown_enums_and_bad_indexes(tmp_path):
    model = read_mnn(_write(tmp_path / "future.mnn", _tiny_net(9999, 250, 0)))
    (op,) = model.ops
    assert (op.name, op.op_type, op.outputs) == ("op0", "UNKNOWN_9999", ["t0"])
    assert op.attrs == {"param_type": "UNKNOWN_250"} and op.weights == []
    assert (model.version, model.biz_code, model.source) == (None, "", "CAFFE")
    softmax = read_mnn(_write(tmp_path / "axis.mnn", _tiny_net(85, 4, 0))).ops[0]  # Softmax with Axis param
    assert (softmax.op_type, softmax.attrs) == ("Softmax", {"axis": 0, "param_type": "Axis"})
    message = _assert_rejected(_write(tmp_path / "index.mnn", _tiny_net(85, 4, 5)))
    assert "op #0 'op0'" in message and "tensor index 5" in message


def _onnx_init(models, key, name) -> np.ndarray:
    model = onnx.load(str(models["onnx"][key]))
    return next(numpy_helper.to_array(t) for t in model.graph.initializer if t.name == name)


def _values(path, op, name="weight"):
    arr, why = weight_array(path, next(w for w in op.weights if w["name"] == name))
    assert why is None, why
    return arr


def test_weights_read_back_equal_the_onnx_initializers(models):
    """Where the converter keeps weights verbatim (a conv without BN, Gemm as a 1x1 conv, LayerNorm,
    a Const), the values read from the file are the ONNX initializers bit for bit."""
    path = models["paths"]["conv"]
    model = read_mnn(path)
    w2, wg, bg = (_onnx_init(models, "conv", n) for n in ("w2", "wg", "bg"))
    dw = _by_output(model, "r2")  # depthwise Conv + Clip: no BN folded in
    np.testing.assert_array_equal(_values(path, dw), w2)
    assert _values(path, dw).dtype == np.float32 and _values(path, dw).shape == w2.shape
    np.testing.assert_array_equal(_values(path, dw, "bias"), np.zeros(8, np.float32))  # MNN adds a zero bias
    gemm = _by_output(model, "g1__matmul_converted")
    np.testing.assert_array_equal(_values(path, gemm).reshape(wg.shape), wg)
    np.testing.assert_array_equal(_values(path, gemm, "bias"), bg)
    conv1 = _by_output(model, "r1")  # BN folded: not the ONNX weights, but the same shape and finite
    folded = _values(path, conv1)
    assert folded.shape == (8, 3, 3, 3) and np.isfinite(folded).all()
    assert not np.array_equal(folded, _onnx_init(models, "conv", "w1"))

    block_path = models["paths"]["block"]
    block = read_mnn(block_path)
    ln = _by_output(block, "ln")
    np.testing.assert_array_equal(_values(block_path, ln, "gamma"), _onnx_init(models, "block", "gamma"))
    np.testing.assert_array_equal(_values(block_path, ln, "beta"), _onnx_init(models, "block", "beta"))
    emb = next(op for op in block.ops if op.name == "emb")
    np.testing.assert_array_equal(_values(block_path, emb, "value"), _onnx_init(models, "block", "emb"))


def test_fp16_external_and_quantized_weights(models):
    w2 = _onnx_init(models, "conv", "w2")
    half_path = models["paths"]["conv_fp16"]
    dw = _by_output(read_mnn(half_path), "r2")
    half = _values(half_path, dw)
    assert half.dtype == np.float16
    # MNN's --fp16 truncates to half instead of rounding: within one half-precision step, not equal.
    np.testing.assert_allclose(half.astype(np.float32), w2, rtol=2.0 ** -10, atol=0)

    ext_path = models["paths"]["conv_ext"]
    plain_path = models["paths"]["conv"]
    plain = read_mnn(plain_path)
    for op in read_mnn(ext_path).ops:
        ref = next(o for o in plain.ops if o.name == op.name)
        for w, rw in zip(op.weights, ref.weights):
            np.testing.assert_array_equal(_values(ext_path, op, w["name"]), _values(plain_path, ref, rw["name"]))

    q8_path = models["paths"]["conv_q8"]
    for op in (op for op in read_mnn(q8_path).ops if op.op_type.startswith("Convolution")):
        arr, why = weight_array(q8_path, op.weights[0])
        assert arr is None and why == "quantized (int8, 8 bits)"
        assert _values(q8_path, op, "bias").shape == (op.attrs["outputCount"],)  # the bias stays float
    q4_path = models["paths"]["conv_q4_ext"]
    conv = next(op for op in read_mnn(q4_path).ops if op.op_type == "Convolution")
    assert weight_array(q4_path, conv.weights[0]) == (None, "quantized (int4, 4 bits)")


def test_weight_reads_are_bounds_checked(models, tmp_path):
    path = models["paths"]["conv"]
    model = read_mnn(path)
    gemm = _by_output(model, "g1__matmul_converted")
    weight = gemm.weights[0]
    data = weight["data"]
    # The file is cut inside the weight after it was read: reading the values fails with one line.
    cut = tmp_path / "cut.mnn"
    cut.write_bytes(path.read_bytes()[:data["offset"] + 4 * data["count"] - 1])
    with pytest.raises(MnnFormatError, match=r"cut\.mnn: weight data at offset \d+ .* runs past the end"):
        weight_array(cut, weight)
    with pytest.raises(MnnFormatError):
        read_mnn(cut)  # and the model itself no longer opens
    with pytest.raises(MnnFormatError, match="past the end"):
        read_weight(path, os.path.getsize(path) - 8, 3, "float32")
    with pytest.raises(MnnFormatError, match="bad weight location"):
        read_weight(path, -4, 1, "float32")
    assert read_weight(path, data["offset"], 0, "float32").size == 0
    # A short or missing external weight file: no values and a reason, not an exception.
    ext = read_mnn(models["paths"]["conv_ext"])
    conv = next(op for op in ext.ops if op.op_type.startswith("Convolution"))
    copy = tmp_path / "ext.mnn"
    copy.write_bytes(models["paths"]["conv_ext"].read_bytes())
    assert weight_array(copy, conv.weights[0]) == (None, "external weight file ext.mnn.weight not found")
    (tmp_path / "ext.mnn.weight").write_bytes(b"\0" * 8)
    arr, why = weight_array(copy, conv.weights[0])
    assert arr is None and "runs past the end" in why


def test_a_full_int8_model_without_output_names_has_its_outputs(shared_runner, samples, tmp_path):
    """mnnquant may write no outputName (measured with 3.6.1 on PP-OCRv6 det; cnn's keeps it): Properties read
    "Outputs: none" for that full-int8 .mnn and `inspect` printed "outputs:" with nothing after it (tryout 12). MNN
    runs to the tensors no op reads after their last write (the last op is a layout copy under the output's own
    name, fetch_name_0 -> fetch_name_0): those are the outputs."""
    import importlib.util
    import mmap
    from conftest import missing_dependency
    from mnnscope.inspector.convert.service import convert_model
    from mnnscope.inspector.convert.settings import ConvertSettings, Int8Settings
    from mnnscope.inspector.formats import mnn_flatbuffer as fb
    spec = importlib.util.find_spec("rapidocr")
    if spec is None:
        missing_dependency("real-model package 'rapidocr' is not installed (python3 dev.py setup installs it)")
    model = Path(spec.submodule_search_locations[0]) / "models" / "PP-OCRv6_det_small.onnx"
    r = convert_model(model, tmp_path / "det_int8.mnn",
                      ConvertSettings(int8=Int8Settings(feature_method="EMA", calib_random=2, samples=2)),
                      client=shared_runner, run_dir=tmp_path / "run")
    assert r.ok, r.errors
    with open(r.output, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as d:
        assert fb.Table(d, os.path.getsize(r.output), fb.U32(d, 0)[0]).strings(4) == []  # the premise
    assert read_mnn(r.output).outputs == ["fetch_name_0"]  # the ONNX model's output
    assert read_mnn(samples / "cnn.mnn").outputs == ["probs"]  # a file that names them: as named
