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
