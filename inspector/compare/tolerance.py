"""When a tensor is *within* tolerance, per mode, and how far off it is on a common scale.

Tolerance (a tensor is *within* when): max|mnn - ref| <= atol + rtol * max|ref|, with no NaN/Inf that the
reference does not have, and the same number of elements. This is MNN's own `--testdir` rule (error
relative to the tensor's largest value, threshold 0.01) with an absolute floor, so tensors whose reference
is zero or tiny are judged by atol alone. Polygraphy's default is elementwise |a - r| <= atol + rtol*|r|
with atol = rtol = 1e-5: right for one engine against itself, but it fails ordinary cross-engine fp32
noise (summation order) on near-zero elements; MNN's 0.01 is loose enough to hide a wrong GELU kernel
(5e-4). Our fp32 default (atol 1e-5, rtol 1e-4 of the max) sits between: float noise of a few ulps per op
passes, a kernel that computes a different function does not. Quantized modes get tolerances that match
the precision they keep (see DEFAULT_TOLERANCES). `--metric cosine:0.999` (or rel_l2:X, sqnr:dB,
max_abs:X) judges by that statistic instead, still with atol for tiny references. Integer and boolean
tensors must be equal.

A model output whose reference lies wholly under atol (not all zero: tiny_output) passes on the floor whatever its
relative error: the inputs give the model almost nothing to compare (a text detector's probability map on random
data, 4e-4 at most, passed int8's floor of 1e-3 with rel L2 0.752). The rule stays (judged on its own scale instead,
the scoreboard's PP-OCRv6 det int8w turned wrong with an error that shows only at the output, which the truth
script's bisection could not cut); the mode says it instead (modes.tiny_note).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Tolerance:
    atol: float = 1e-5
    rtol: float = 1e-4
    metric: str | None = None  # cosine | rel_l2 | sqnr | max_abs
    threshold: float | None = None

    def describe(self) -> str:
        if self.metric:
            op = ">=" if self.metric in ("cosine", "sqnr") else "<="
            return f"{self.metric} {op} {self.threshold:g}, atol {self.atol:g} for tiny references"
        return f"max abs error <= {self.atol:g} + {self.rtol:g} x max|reference|"

    def to_json(self) -> dict:
        return dict(asdict(self), rule=self.describe())


# Per mode: what the kept precision can deliver. fp16 weights lose ~5e-4 relative per weight; 8-bit
# weights about 1e-2; 4-bit about 1e-1; int8 activations add the same again.
DEFAULT_TOLERANCES = {
    "fp32": Tolerance(1e-5, 1e-4), "low": Tolerance(1e-4, 1e-2), "bf16": Tolerance(1e-4, 3e-2),
    "fp16w": Tolerance(1e-4, 5e-3), "int8w": Tolerance(1e-4, 5e-2), "int4w": Tolerance(1e-3, 0.2),
    "int8": Tolerance(1e-3, 0.1), "memlow": Tolerance(1e-3, 0.1),
}
METRICS = ("cosine", "rel_l2", "sqnr", "max_abs")


def parse_metric(spec: str) -> tuple[str, float]:
    """"cosine:0.999" -> ("cosine", 0.999); ValueError with a one-line reason otherwise."""
    name, sep, value = spec.partition(":")
    name = name.strip().lower().replace("sqnr_db", "sqnr")
    if not sep or name not in METRICS:
        raise ValueError(f"--metric '{spec}': expected one of {', '.join(m + ':X' for m in METRICS)}")
    try:
        threshold = float(value)
    except ValueError:
        raise ValueError(f"--metric '{spec}': '{value}' is not a number")
    if name == "cosine" and not -1 <= threshold <= 1:
        raise ValueError(f"--metric '{spec}': cosine thresholds lie in [-1, 1]")
    return name, threshold


METRIC_KEYS = {"cosine": "cosine", "rel_l2": "rel_l2", "sqnr": "sqnr_db", "max_abs": "max_abs"}  # in a metrics row


def tiny_output(m: dict, tol: Tolerance) -> bool:
    """A reference that lies wholly under atol, not all zero: the floor passes it whatever its relative error."""
    return 0 < (m.get("ref_max_abs") or 0) <= tol.atol


def criterion(m: dict, tol: Tolerance) -> tuple[str, float, float, str]:
    """(key, value, limit, op) a float tensor with finite elements is judged on: its max abs error against atol +
    rtol x max|reference| (atol alone for a tiny reference under a metric), or the metric against its threshold; op
    ">=" or "<=". within() decides by it, and the verdict's fix table shows it (verdict.judged_figure)."""
    if tol.metric is None:
        return "max_abs", m["max_abs"], tol.atol + tol.rtol * m["ref_max_abs"], "<="
    if m["ref_max_abs"] <= tol.atol:
        return "max_abs", m["max_abs"], tol.atol, "<="
    key = METRIC_KEYS[tol.metric]
    return key, m[key], tol.threshold, ">=" if tol.metric in ("cosine", "sqnr") else "<="


def within(m: dict, tol: Tolerance) -> bool:
    if m["shape_mismatch"] or m["nonfinite_mismatch"]:
        return False
    if m["integer"]:
        return m["mismatch"] == 0
    if m["max_abs"] is None:  # nothing finite on either side, and the same non-finite pattern
        return True
    _, value, limit, op = criterion(m, tol)
    return value >= limit if op == ">=" else value <= limit


def scaled_error(m: dict, tol: Tolerance) -> float:
    """Relative L2 with the reference norm floored at atol per element: comparable across tensors. Always
    finite: a non-finite mismatch (see metrics.tensor_metrics) counts as one element wholly wrong, so the
    measure adds the share of such elements; a shape mismatch counts as every element wrong (1.0)."""
    if m["shape_mismatch"]:
        return 1.0
    if m["integer"]:
        return (m["mismatch"] or 0) / max(m["size"], 1)
    bad = (m.get("nonfinite_mismatch") or 0) / max(m["size"], 1)
    if m["err_l2"] is None:
        return bad
    return m["err_l2"] / max(m["ref_l2"], tol.atol * math.sqrt(max(m["size"], 1))) + bad
