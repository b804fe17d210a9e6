"""Profile from here (`mnnscope profile --from NODE`): the model cut at a node, fed with what ONNX Runtime computes
for the cut's inputs, its times on the model's own node ids (issue 19, item 11: the context menu's "profile from
here")."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mnnscope.inspector.cli import app as cli


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MNNSCOPE_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def _json(capsys, *args) -> tuple[int, dict]:
    code = cli.main(["profile", *map(str, args), "--runs", "2", "--warmup", "1", "--json"])
    return code, json.loads(capsys.readouterr().out)


def _output(result: dict, name: str) -> np.ndarray:
    (out,) = [o for o in result["outputs"] if o["name"] == name]
    return np.load(out["path"])


def unnamed_residual(path) -> str:
    """x -> Conv -> Relu -> Add(x) -> Sigmoid, no node named: the graph shows them as Conv_0, Relu_1, Add_2, ...
    A cut from Relu reads the Conv's output and the model's own input x (the residual)."""
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((4, 4, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Add", ["r", "x"], ["a"]),
             helper.make_node("Sigmoid", ["a"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return str(path)


def test_from_a_node_times_it_and_what_follows_and_computes_what_the_whole_model_does(samples, capsys):
    model = samples / "cnn.onnx"
    code, whole = _json(capsys, model)
    assert code == 0
    code, cut = _json(capsys, model, "--from", "/layer1/relu/Relu")
    assert code == 0, cut
    info = cut["from_node"]
    assert info["node"] == "/layer1/relu/Relu" and info["nodes"] == 7 and info["of"] == 12
    assert {i["name"] for i in info["inputs"]} == {"/layer1/conv1/Conv_output_0", "/maxpool/MaxPool_output_0"}
    assert "/layer1/conv1/Conv" not in info["ids"] and "/fc/Gemm" in info["ids"]
    timed = {op["name"] for op in cut["ops"]}
    assert "/layer1/relu/Relu" in timed and "/conv1/Conv" not in timed and "/maxpool/MaxPool" not in timed
    assert cut["warnings"][0].startswith("profiled from /layer1/relu/Relu: 7 of 12 nodes")
    # fed with the whole model's own intermediate values: the same outputs
    np.testing.assert_allclose(_output(cut, "probs"), _output(whole, "probs"), rtol=1e-5, atol=1e-6)
    # on MNN the cut is converted: its op times land on the ONNX nodes through the cut's node map
    code, mnn = _json(capsys, model, "--from", "/layer1/relu/Relu", "--engine", "mnn")
    assert code == 0 and mnn["engine"] == "mnn" and mnn["from_node"]["nodes"] == 7
    nm = json.loads(open(mnn["node_map_path"]).read())
    mapped = json.dumps(nm)
    assert "/layer1/relu/Relu" in mapped and "/conv1/Conv" not in mapped
    np.testing.assert_allclose(_output(mnn, "probs"), _output(whole, "probs"), rtol=1e-3, atol=1e-4)


def test_a_cut_of_unnamed_nodes_keeps_the_graphs_ids_and_reads_the_models_own_input(tmp_path, capsys):
    model = unnamed_residual(tmp_path / "res.onnx")
    code, whole = _json(capsys, model)
    assert code == 0
    code, cut = _json(capsys, model, "--from", "Relu_1")
    assert code == 0, cut
    info = cut["from_node"]
    assert info["ids"] == ["Relu_1", "Add_2", "Sigmoid_3"]
    assert [i["name"] for i in info["inputs"]] == ["c", "x"] and info["inputs"][0]["shape"] == [1, 4, 8, 8]
    assert {op["name"] for op in cut["ops"]} <= {"Relu_1", "Add_2", "Sigmoid_3"}
    assert {op["name"] for op in cut["ops"]} & {"Relu_1", "Add_2", "Sigmoid_3"}
    np.testing.assert_allclose(_output(cut, "y"), _output(whole, "y"), rtol=1e-6)


def test_a_node_that_is_not_there_or_an_mnn_model_is_a_usage_error(samples, capsys):
    code = cli.main(["profile", str(samples / "cnn.onnx"), "--from", "/layer1/relu", "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert code == 2 and "close: /layer1/relu/Relu" in err["message"]
    code = cli.main(["profile", str(samples / "cnn.mnn"), "--from", "/layer1/relu/Relu", "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert code == 2 and "cuts the .onnx" in err["message"]
