"""With nothing selected, Properties summarises the model (issue 19 item 8): inputs and outputs with shapes,
opset, producer, parameters and a FLOP estimate; File > Open Recent has a Clear entry (item 11)."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401

from mnnscope.gui import settings as cfg  # noqa: E402
from mnnscope.inspector.formats.loadproc import load_table  # noqa: E402
from mnnscope.inspector.formats.loader import load_model  # noqa: E402
from mnnscope.inspector.model.flops import estimate_flops  # noqa: E402
from mnnscope.inspector.model.summary import model_summary  # noqa: E402

pytestmark = pytest.mark.gui


def test_summary_matches_the_model_file(samples):
    path = samples / "cnn.onnx"
    m = onnx.load(str(path))
    s = model_summary(load_table(str(path)))
    assert [t["name"] for t in s["inputs"]] == [i.name for i in m.graph.input
                                                if i.name not in {x.name for x in m.graph.initializer}]
    assert [t["name"] for t in s["outputs"]] == [o.name for o in m.graph.output]
    assert s["params"] == sum(math.prod(i.dims) for i in m.graph.initializer)
    assert s["opset"] == {(o.domain or "ai.onnx"): o.version for o in m.opset_import}
    assert s["ops"] == len(m.graph.node) and sum(s["op_types"].values()) == len(m.graph.node)
    assert s["flops"] is None and s["flops_ops"] == 0  # no shapes inferred yet: unknown, not zero


def test_properties_shows_the_model_summary_when_nothing_is_selected(qtbot, window, samples):
    view = open_and_wait(qtbot, window, samples / "cnn.onnx")
    props = window.properties
    # the summary is recounted off the UI thread once the runner's shapes have arrived
    qtbot.waitUntil(lambda: props.summary is not None and props.summary["flops"] is not None, timeout=20000)
    text = props.text()
    s = props.summary
    assert s["flops"] and s["params"] and s["inputs"] and s["outputs"]
    for tensor in s["inputs"] + s["outputs"]:
        assert tensor["name"] in text
        assert tensor["shape"] is not None
    assert "opset" in text and "parameters" in text and "FLOPs" in text
    assert "ai.onnx" in text
    assert props.title.text() == "<b>Model</b>" and props.copy_btn.isEnabled()
    flops, _ = estimate_flops(load_model(str(samples / "cnn.onnx")))  # `mnnscope inspect`'s figure
    assert s["flops"] == flops
    # a node selected: its properties; background clicked: the summary again
    op = next(i for i in range(view.table.node_count) if view.table.op_types[i] == "Conv")
    view.select(op)
    assert "Conv" in props.title.text() and "opset" not in props.text()
    view.select(-1)
    assert props.title.text() == "<b>Model</b>" and "FLOPs" in props.text()


def test_mnn_summary_counts_its_inline_weights(qtbot, window, samples):
    open_and_wait(qtbot, window, samples / "cnn.mnn")
    props = window.properties
    qtbot.waitUntil(lambda: props.summary is not None and bool(props.summary["params"]), timeout=20000)
    assert props.summary["params"] == load_model(str(samples / "cnn.mnn"), native=False).params()  # as inspect
    assert props.summary["format"] == "mnn" and "MNN" in props.text()
    # op types as the canvas titles them: ADD and SUB, not "BinaryOp 2" (a new-user try)
    assert props.summary["op_types"].get("ADD") == 1 and props.summary["op_types"].get("SUB") == 1
    assert "BinaryOp" not in props.summary["op_types"]


def test_clear_recent_files(qtbot, make_window, samples, settings_dir):
    w = make_window()
    open_and_wait(qtbot, w, samples / "cnn.onnx", shapes=False)
    menu = w.recent_menu
    menu.aboutToShow.emit()
    texts = [a.text() for a in menu.actions()]
    assert texts[0] == str(samples / "cnn.onnx") and texts[-1] == "Clear Recent Files"
    clear = next(a for a in menu.actions() if a.text() == "Clear Recent Files")
    clear.trigger()
    assert cfg.recent_files() == [] and not menu.isEnabled()
    menu.aboutToShow.emit()
    assert [a.text() for a in menu.actions()] == []


def test_an_fp16_mnn_constant_says_it_is_stored_as_halves(qtbot, window, tmp_path):
    """An fp16 conversion keeps a float32 constant as halves: Properties showed '1x3x1x1 · float32 · 6 B', a size
    three float32 values cannot have. The weight says it is stored as float16."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from mnnscope.gui.panels.properties import describe

    scale = numpy_helper.from_array(np.array([0.5, 1.5, 2.5], np.float32).reshape(1, 3, 1, 1), "scale")
    graph = helper.make_graph([helper.make_node("Mul", ["x", "scale"], ["y"], name="mul")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])], [scale])
    src = tmp_path / "scale.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), src)
    out = {}
    for fp16 in (False, True):
        dst = tmp_path / f"scale_{fp16}.mnn"
        r = subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "convert", str(src), "-o", str(dst), "--no-cache",
                            "--run-dir", str(tmp_path / str(fp16)), *(["--fp16"] if fp16 else [])],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr  # converted in a process of its own: no runner outlives the test
        view = open_and_wait(qtbot, window, dst)
        op = next(i for i, t in enumerate(view.table.op_types) if not view.tree.hidden[i] and t == "BinaryOp")
        view.select(op)
        (out[fp16],) = describe(view.table, view.tree, op)["weights"]
        qtbot.waitUntil(lambda: "scale" in window.properties.text())
        out[fp16, "text"] = window.properties.text()
    assert out[False]["bytes"] == 12 and out[False]["dtype"] == "float32" and "stored_dtype" not in out[False]
    assert out[True]["bytes"] == 6 and out[True]["dtype"] == "float32" and out[True]["stored_dtype"] == "float16"
    assert "float32 (stored as float16) \u00b7 6 B" in out[True, "text"], out[True, "text"]


def test_flops_of_a_model_with_free_dims_are_counted_at_the_inputs_docks_sizes(qtbot, window, samples):
    """moe_llm's input has a free `seq`: the summary said "unknown: the inputs have free dimensions". It counts at
    the sizes the Inputs dock shows (seq 8 by default) and says so, follows a size typed there, and agrees with
    `mnnscope inspect` at the same sizes."""
    path = samples / "moe_llm.onnx"
    open_and_wait(qtbot, window, path)
    props = window.properties
    qtbot.waitUntil(lambda: props.summary is not None and props.summary["flops"] is not None, timeout=20000)
    assert props.summary["flops_at"] == {"seq": 8} and "at seq=8: the Inputs dock's sizes" in props.text()
    mg = load_model(str(path))
    assert props.summary["flops"] == estimate_flops(mg, {"seq": 8})[0]
    row = window.panels["Inputs"].row("input_ids")
    box = next(b for b in row.dims if b is not None)
    box.setValue(16)  # typed in the dock
    qtbot.waitUntil(lambda: props.summary is not None and props.summary.get("flops_at") == {"seq": 16}, timeout=20000)
    assert props.summary["flops"] == estimate_flops(mg, {"seq": 16})[0] > estimate_flops(mg, {"seq": 8})[0]
    assert "at seq=16" in props.text()


def test_the_summary_is_settled_only_once_counted_at_the_inputs_docks_sizes(qtbot, window, samples):
    """`mnnscope view` screenshots once the summary pane is final: its screenshot of the romanizer decoder showed
    "unknown: the inputs have free dimensions" (the count before the Inputs dock's sizes) where the window, a moment
    later, shows 2.06 M at batch=1, tgt_len=8, src_len=8."""
    open_and_wait(qtbot, window, samples / "moe_llm.onnx")
    props = window.properties
    qtbot.waitUntil(props.summary_settled, timeout=20000)
    assert props.summary["flops_at"] == {"seq": 8} and props.summary["flops"]
    row = window.panels["Inputs"].row("input_ids")
    next(b for b in row.dims if b is not None).setValue(12)
    assert not props.summary_settled()  # counted at seq=8, the dock says 12
    qtbot.waitUntil(props.summary_settled, timeout=20000)
    assert props.summary["flops_at"] == {"seq": 12}
    props.show_item(0)
    assert props.summary_settled()  # a node shown is final


def test_shapes_in_properties_are_those_at_the_inputs_docks_sizes(qtbot, window):
    """PP-OCRv6 rec's labels read 1x48x24x32 at the Inputs dock's sizes while Properties gave the same tensor as
    "DynamicDimension.0x48x24x(floor(DynamicDimension.1/2 - 1/2) + 1)", and its FLOPs "unknown: the inputs have free
    dimensions" though the dock gives them sizes (96 ops are left out because shape inference made up their dims).
    Properties now gives the shape at the sizes first, the symbolic form after it, follows a size typed in the dock,
    and says why the FLOPs are unknown."""
    from test_real_models import real_model
    from mnnscope.inspector.model.summary import table_flops_detail
    open_and_wait(qtbot, window, real_model("rapidocr", "models/PP-OCRv6_rec_small.onnx"))
    props = window.properties
    qtbot.waitUntil(props.summary_settled, timeout=30000)
    s = props.summary
    view = window.pane.main_view
    sizes = {"DynamicDimension.0": 1, "DynamicDimension.1": 64}
    assert s["sizes"] == sizes and s["flops"] is None
    assert {k: s["dims"][k] for k in sizes} == sizes  # (with what the model's other dims come to at them)
    _, counted, uncounted = table_flops_detail(view.table, s["dims"])
    assert uncounted > 0 and (s["flops_ops"], s["flops_uncounted"]) == (counted, uncounted)
    text = " ".join(props.text().split())
    # the made-up names with what the Inputs dock calls them ("width"), and a link that opens the dock (a new-user
    # try looked for it: it was closed)
    assert (f"the shapes of {uncounted} of {counted + uncounted} countable ops cannot be worked out, even at "
            "DynamicDimension.0 (batch)=1, DynamicDimension.1 (width)=64 (the Inputs dock's sizes)") in text
    assert "inputs have free dimensions" not in text
    window.docks["Inputs"].hide()
    assert 'href="dock:Inputs"' in props.browser.toHtml()
    from PySide6.QtCore import QUrl
    props._link(QUrl("dock:Inputs"))
    assert window.docks["Inputs"].isVisible()
    assert "1\u00d73\u00d748\u00d764 at the input sizes (DynamicDimension.0\u00d73\u00d748\u00d7DynamicDimension.1)" in text

    conv = view.table.names.index("Conv.0")
    view.select(conv)
    text = " ".join(props.text().split())
    # (its symbolic form simplified: "(floor(DynamicDimension.1/2 - 1/2) + 1)" is ceil(DynamicDimension.1/2))
    assert ("1\u00d748\u00d724\u00d732 at the input sizes (DynamicDimension.0\u00d748\u00d724\u00d7"
            "ceil(DynamicDimension.1/2))") in text
    row = window.panels["Inputs"].row("x")
    row.dims[3].setValue(128)  # the width typed in the dock
    qtbot.waitUntil(lambda: "1\u00d748\u00d724\u00d764 at the input sizes" in " ".join(props.text().split()),
                    timeout=10000)


def test_dims_an_exporter_made_up_read_as_numbers_at_the_inputs_docks_sizes(qtbot, window):
    """PP-OCRv6 det's output is declared "ConvTranspose_459_o0__d0×..._d1×..._d2×..._d3" (names Paddle's exporter made
    up): Properties, the labels and FLOPs could not follow it at any size. The runner runs shape inference again with
    the inputs at the Inputs dock's sizes and gives each symbolic dim its number there, as an .mnn's shapes are;
    a size typed in the dock works them out again."""
    from test_real_models import real_model
    open_and_wait(qtbot, window, real_model("rapidocr", "models/PP-OCRv6_det_small.onnx"))
    props, view = window.properties, window.pane.main_view
    out = "1\u00d71\u00d764\u00d764 at the input sizes (?\u00d7?\u00d7?\u00d7?)"  # (its made-up names: unknown)
    qtbot.waitUntil(lambda: props.summary_settled() and out in " ".join(props.text().replace("\u200b", "").split()),
                    timeout=30000)
    dims = view.canvas.dim_values
    assert dims["ConvTranspose_459_o0__d2"] == 64 and dims["ConvTranspose_453_o0__d3"] == 32, dims
    assert props.summary["flops_at"] == {"DynamicDimension.0": 1, "DynamicDimension.1": 64,
                                         "DynamicDimension.2": 64}
    row = window.panels["Inputs"].row("x")
    row.dims[3].setValue(128)  # the width typed in the dock
    qtbot.waitUntil(lambda: view.canvas.dim_values.get("ConvTranspose_459_o0__d3") == 128, timeout=30000)
    qtbot.waitUntil(lambda: "1\u00d71\u00d764\u00d7128 at the input sizes" in
                    " ".join(props.text().replace("\u200b", "").split()), timeout=30000)
    # another model opened at once (its request may wait behind this one's): its own dims come too
    row.dims[3].setValue(96)
    rec = real_model("rapidocr", "models/PP-OCRv6_rec_small.onnx")
    open_and_wait(qtbot, window, rec)
    view = window.pane.main_view
    qtbot.waitUntil(lambda: isinstance(view.canvas.dim_values.get("Reshape_470_o0__d2"), int), timeout=30000)
    assert "ConvTranspose_459_o0__d3" not in view.canvas.dim_values


@pytest.mark.parametrize("settings, words", [
    ({"weight_quant_bits": 8}, "8-bit weights, asymmetric, per output channel (16 scales and zero points)"),
    ({"weight_quant_bits": 4, "weight_quant_asymmetric": False},
     "4-bit weights, symmetric, per output channel (16 scales)"),
    ({"fp16": True}, "weights stored as fp16"),
])
def test_a_quantized_ops_quantization_reads_as_words(qtbot, window, samples, tmp_path, settings, words):
    """Properties of a quantized .mnn's Convolution said {"type": 1, "kind": "weight_quant", "bits": 8, ...}
    (tryout 19): now what it means."""
    from mnnscope.inspector.convert.service import convert_model
    from mnnscope.inspector.convert.settings import ConvertSettings
    out = tmp_path / "cnn_q.mnn"
    r = convert_model(samples / "cnn.onnx", out, ConvertSettings(**settings), cache=False)
    assert r.ok, r.errors
    view = open_and_wait(qtbot, window, out, shapes=False)
    conv = next(i for i in range(view.table.node_count) if view.table.op_types[i] == "Convolution")
    view.select(conv)
    text = window.properties.text()
    assert words in text, text
    assert "weight_quant" not in text and '"kind"' not in text
