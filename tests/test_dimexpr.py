"""Symbolic dimensions at concrete sizes (inspector/model/dimexpr.py): what labels and FLOPs are computed at."""
from __future__ import annotations

import pytest

from mnnscope.inspector.model.dimexpr import concrete, eval_dim


def test_names_and_expressions_evaluate_at_the_sizes_and_nothing_else_does():
    v = {"DynamicDimension.0": 1, "DynamicDimension.1": 48, "batch": 2}
    assert eval_dim("(floor(DynamicDimension.1/2 - 1/2) + 1)", v) == 24  # PP-OCRv6's own words
    assert eval_dim("batch", v) == 2 and eval_dim("2*batch + 1", v) == 5 and eval_dim("Max(batch, 3)", v) == 3
    assert eval_dim(7, v) == 7
    for unknown in ("seq", "batch/4", -1, "", None, "batch ** 2", "__import__('os').getcwd()", "batch.real",
                    "'a' * 3", "[batch]"):
        assert eval_dim(unknown, v) is None, unknown
    assert concrete(["DynamicDimension.0", 3, "(floor(DynamicDimension.1/2 - 1/2) + 1)"], v) == [1, 3, 24]
    assert concrete(["seq", 3], v) is None and concrete(None, v) is None


def test_a_conv_nets_flops_follow_its_input_area_through_the_expressions():
    """PP-OCRv6 det's shapes are expressions over its input's DynamicDimension.1/.2: its FLOPs were unknown at any
    size; counted now, a conv net's FLOPs grow with the input's area."""
    from test_real_models import real_model
    from mnnscope.inspector.formats.loader import load_model
    from mnnscope.inspector.model.flops import estimate_flops
    g = load_model(real_model("rapidocr", "models/PP-OCRv6_det_small.onnx"), native=False)
    small = estimate_flops(g, {"DynamicDimension.0": 1, "DynamicDimension.1": 64, "DynamicDimension.2": 64})[0]
    big = estimate_flops(g, {"DynamicDimension.0": 1, "DynamicDimension.1": 128, "DynamicDimension.2": 128})[0]
    assert small and big and big / small == pytest.approx(4.0, rel=0.05)


def test_nested_floors_of_strided_layers_read_as_one_ceil_with_the_same_value_at_every_size():
    """PP-OCRv6 det's Properties read "(floor(floor(floor(floor(DynamicDimension.1/2 - 1/2)/2)/2)/2) + 1)" per
    tensor, four lines of brackets: it is ceil(DynamicDimension.1/16). A form is only taken where it is equal at
    every size (checked here far beyond the range simplify() looks at); expressions of another kind stay as they are."""
    from mnnscope.inspector.model.dimexpr import SIMPLE_UPTO, simplify
    cases = {
        "(floor(floor(floor(floor(DynamicDimension.1/2 - 1/2)/2)/2)/2) + 1)": "ceil(DynamicDimension.1/16)",
        "floor(H/2 - 1/2) + 1": "ceil(H/2)",
        "(floor((W - 3)/2) + 1)": "ceil(W/2) - 1",
        "floor(H/3 - 1/3) + 1": "ceil(H/3)",
        "(H - 7)//2 + 1": "ceil(H/2) - 3",
        "floor(q) + 1": "q + 1",
        "H*2 + 0": "2*H",
        "floor(H/4)": "floor(H/4)",  # already short
    }
    for text, short in cases.items():
        assert simplify(text) == short, text
        name = "DynamicDimension.1" if "Dynamic" in text else next(c for c in "HWq" if c in text)
        for x in list(range(1, 300)) + [SIMPLE_UPTO + 1, 10 ** 6 + 7, 3 ** 13]:
            assert eval_dim(text, {name: x}) == eval_dim(short, {name: x}), (text, x)
    for other in ("H*W", "H + W", "min(H, 3)", "H/2", "H % 7", "H*H + 1", "floor(H/7919)", "(", "", "H ** 2"):
        assert simplify(other) == other, other
