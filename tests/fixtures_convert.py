"""ONNX models for the conversion tests, built from fixed seeds: a fusion model whose MNN conversion is
known, and 60-node chains with one defect deep inside (each failing conversion a user meets)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

WIDTH = 16
CHAIN_NODES = 60
BAD_AT = 41  # the defect sits deep inside the chain


def _save(model: onnx.ModelProto, path: Path, **kw) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path), **kw)
    return path


def _model(nodes, inits, inputs, outputs, opset=17, extra_domains=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits)
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in extra_domains]
    m = helper.make_model(graph, opset_imports=opsets, producer_name="mnnscope-tests")
    m.ir_version = 9
    return m


def fusion_model(path: Path) -> Path:
    """Conv+BN+Relu, an Identity, Sigmoid*Mul (SiLU), GlobalAveragePool, Flatten, MatMul+Add."""
    rng = np.random.default_rng(7)

    def w(name, shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "conv.w", "conv.b"], ["c1"], name="/stem/conv", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("BatchNormalization", ["c1", "bn.s", "bn.b", "bn.m", "bn.v"], ["bn1"], name="/stem/bn"),
        helper.make_node("Relu", ["bn1"], ["r1"], name="/stem/relu"),
        helper.make_node("Identity", ["r1"], ["id1"], name="/stem/identity"),
        helper.make_node("Sigmoid", ["id1"], ["sg"], name="/act/sigmoid"),
        helper.make_node("Mul", ["id1", "sg"], ["sw"], name="/act/mul"),
        helper.make_node("GlobalAveragePool", ["sw"], ["gp"], name="/pool"),
        helper.make_node("Flatten", ["gp"], ["fl"], name="/flatten"),
        helper.make_node("MatMul", ["fl", "fc.w"], ["mm"], name="/fc/matmul"),
        helper.make_node("Add", ["mm", "fc.b"], ["y"], name="/fc/add"),
    ]
    inits = [w("conv.w", (8, 3, 3, 3)), w("conv.b", (8,)),
             numpy_helper.from_array((1 + 0.1 * rng.standard_normal(8)).astype(np.float32), "bn.s"),
             w("bn.b", (8,), 0.1), w("bn.m", (8,), 0.1),
             numpy_helper.from_array((1 + 0.1 * rng.random(8)).astype(np.float32), "bn.v"),
             w("fc.w", (8, 4)), w("fc.b", (4,))]
    m = _model(nodes, inits, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    onnx.checker.check_model(m, full_check=True)
    return _save(m, path)


def chain_model(defect: str | None = None, seed: int = 3) -> tuple[onnx.ModelProto, str | None]:
    """A chain of CHAIN_NODES elementwise/MatMul nodes on [1, WIDTH]; `defect` replaces node BAD_AT.

    defect: None, "custom_domain" (op MyOp of domain com.example), "unsupported" (Hardmax, which MNN
    3.6.1 lacks), "undefined_input" (an Add reading a tensor nobody defines: the converter crashes),
    "bad_reshape" (a Reshape whose target shape does not fit: a static conversion writes an empty model).
    Returns (model, name of the defective node).
    """
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    x = "x"
    bad_name = None
    for i in range(CHAIN_NODES):
        name = f"/block{i // 4}/op{i}"
        out = f"{name}_output_0"
        if i == BAD_AT and defect is not None:
            bad_name = name + "/" + defect
            if defect == "custom_domain":
                nodes.append(helper.make_node("MyOp", [x], [out], name=bad_name, domain="com.example"))
            elif defect == "unsupported":
                nodes.append(helper.make_node("Hardmax", [x], [out], name=bad_name, axis=-1))
            elif defect == "undefined_input":
                nodes.append(helper.make_node("Add", [x, "never_defined"], [out], name=bad_name))
            elif defect == "bad_reshape":  # 16 values into [3, 5]: only a static conversion computes it
                inits.append(numpy_helper.from_array(np.array([3, 5], np.int64), "bad_shape"))
                nodes.append(helper.make_node("Reshape", [x, "bad_shape"], [out], name=bad_name))
            else:
                raise ValueError(defect)
        elif i % 4 == 0:
            wname = f"w{i}"
            inits.append(numpy_helper.from_array(
                (rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32), wname))
            nodes.append(helper.make_node("MatMul", [x, wname], [out], name=name))
        elif i % 4 == 1:
            bname = f"b{i}"
            inits.append(numpy_helper.from_array((0.1 * rng.standard_normal(WIDTH)).astype(np.float32), bname))
            nodes.append(helper.make_node("Add", [x, bname], [out], name=name))
        elif i % 4 == 2:
            nodes.append(helper.make_node("Tanh", [x], [out], name=name))
        else:
            sname = f"s{i}"
            inits.append(numpy_helper.from_array((1 + 0.1 * rng.standard_normal(WIDTH)).astype(np.float32), sname))
            nodes.append(helper.make_node("Mul", [x, sname], [out], name=name))
        x = out
    nodes.append(helper.make_node("Identity", [x], ["y"], name="/out/identity"))
    domains = ("com.example",) if defect == "custom_domain" else ()
    m = _model(nodes, inits, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, WIDTH])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, WIDTH])], extra_domains=domains)
    return m, bad_name


def failing_models(folder: Path) -> dict[str, dict]:
    """Every failing fixture: {case: {"path", "node", "kind"}} (kind = the diagnosis expected)."""
    folder.mkdir(parents=True, exist_ok=True)
    cases = {}
    for defect, kind in (("custom_domain", "unsupported_op"), ("unsupported", "unsupported_op"),
                         ("undefined_input", "undefined_input")):
        m, bad = chain_model(defect)
        cases[defect] = {"path": _save(m, folder / f"{defect}.onnx"), "node": bad, "kind": kind}
    # External data whose file is gone: MNN prints "Can't open file", then "Converted Success!".
    m, _ = chain_model(None, seed=5)
    sub = folder / "missing_data"
    sub.mkdir(exist_ok=True)
    path = _save(m, sub / "missing_data.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                 location="missing_data.onnx.data", size_threshold=0)
    os.remove(sub / "missing_data.onnx.data")
    first_consumer = next(n.name for n in m.graph.node if any(i.startswith("w") for i in n.input))
    cases["missing_data"] = {"path": path, "node": first_consumer, "kind": "missing_external_data"}
    # A file cut in half (an interrupted download).
    good = _save(chain_model(None, seed=9)[0], folder / "whole.onnx")
    data = good.read_bytes()
    truncated = folder / "truncated.onnx"
    truncated.write_bytes(data[: len(data) // 2])
    cases["truncated"] = {"path": truncated, "node": None, "kind": "unreadable_model"}
    return cases


# Fixtures shared by the Convert dialog and dock tests (import them into the test module).

@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """The failing models, built once per test module."""
    return failing_models(tmp_path_factory.mktemp("gui_convert") / "models")


@pytest.fixture
def model_copy(tmp_path, samples):
    """cnn.onnx in a writable folder of its own (the default output goes beside the model)."""
    path = tmp_path / "model" / "cnn.onnx"
    path.parent.mkdir()
    shutil.copy(samples / "cnn.onnx", path)
    return path
