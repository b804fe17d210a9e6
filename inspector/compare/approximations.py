"""Known approximations: ONNX ops that MNN computes with a kernel of another, approximate function.

Each entry is data, and each comes from a measurement (described beside it): the ONNX pattern, the MNN kernel
that replaces it, the kernel's own typical error, and the converter setting that avoids it (None when no
setting does). The `close` verdict (verdict.py) accepts a divergence only when its source matches an entry
and its own error stays within the entry's measured bound; the cause sentence and the JSON row carry the
setting as the fix. Extend the table only from measurements: convert a one-op model, run it in MNN and ONNX
Runtime on a dense input range, and reconvert with the candidate setting (tests/test_compare_verdict.py
re-measures the entries here on every run).

Measured with MNN 3.6.1 and ONNX Runtime (graph optimisations off), fp32, 1 thread, on x = linspace(-6, 6,
4001) (tests/test_compare_verdict.py::test_approximation_table_entries_are_what_mnn_does):

- ONNX `Gelu` (opset 20, approximate="none"): MNN's GELU kernel, max abs error 4.74e-4 at |x| = 2.706,
  relative L2 8.7e-5 over the range; `--useGeluApproximation 0` changes nothing (same 4.74e-4): no setting.
- erf-GELU written out (Div or Mul by 1/sqrt2, Erf, Add 1, Mul x, Mul 0.5: what exporters emit before opset
  20): the converter fuses it into the same GELU kernel (a UnaryOp GELU, 4.74e-4); with
  `--useGeluApproximation 0` it fuses it into UnaryOp GELU_STANDARD instead (not the Erf kept, as this said
  until a tryout read the .mnn), and the result is exact to float noise (max abs 4.8e-7). On PP-OCRv6 rec (13
  such GELUs) that takes fp32's worst output rel L2 from 0.00333 to 9e-05.
- ONNX `Softmax` over a long axis: MNN adds up the normaliser in float32 in a way that rounds with a bias when one
  class dominates its row (each of the n small terms added to ~1 loses up to half an ulp, mostly in one
  direction): the whole row comes out scaled by up to n x 1.1e-8 (measured on 2 x 32 rows of N(0, s) logits, s
  in 0.5..4, one class lifted by 2..25, n = 2,000 to 100,000: max abs / max|p| / n <= 1.07e-8; a row of equal
  logits is exact; the row sums off 1 by the same amount), where ONNX Runtime is about 10x closer (1.2e-5 at n =
  18,710). The order of the classes is unchanged. PP-OCRv6 rec (18,710 classes, after the GELU fix): max abs
  9.7e-5. The bound is per element of the axis: 2^-26 (a four-lane float32 sum's worst bias).
- Not approximations (float noise, max abs <= 2.4e-7 on the same range): Sigmoid, Tanh, Erf alone; Softmax over
  a short axis (<= 4.8e-7 for 64 classes).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Approximation:
    id: str
    onnx_ops: frozenset  # op types the ONNX region may hold (Identity/Dropout aside)
    key_ops: frozenset  # at least one of these must be in the region
    mnn_kernels: frozenset  # MNN op types (effective: UnaryOp sub-types spelled out) that compute it
    description: str
    max_abs: float  # the kernel's own max abs error, measured
    rel_l2: float  # its relative L2 error over the measured range
    setting: str | None  # converter arguments that avoid the approximation, None when none does
    setting_effect: str  # what the setting was measured to do
    option: str | None = None  # the same setting as mnnscope's convert option (and the Convert dock's field)
    convert_fields: tuple = ()  # the same setting as ConvertSettings fields, ((field, value), ...)
    per_axis_element: bool = False  # max_abs is per element of the op's axis, relative to max|reference|
    setting_cost: str | None = None  # what the setting was measured to cost (speed), said beside the advice

    def bound(self, axis_length: int | None, ref_max_abs: float | None) -> float:
        """The kernel's own error this op may show: max_abs, or for an entry measured per element of the axis,
        max_abs x the axis length x max|reference| (0 when the length is unknown: nothing is explained)."""
        if not self.per_axis_element:
            return self.max_abs
        return self.max_abs * (axis_length or 0) * (ref_max_abs or 0.0)

    def to_json(self) -> dict:
        d = asdict(self)
        for k in ("onnx_ops", "key_ops", "mnn_kernels"):
            d[k] = sorted(d[k])
        return d


GELU_KERNELS = frozenset({"GELU", "GELU_STANDARD"})

APPROXIMATIONS = (
    Approximation(
        id="gelu-op", onnx_ops=frozenset({"Gelu"}), key_ops=frozenset({"Gelu"}), mnn_kernels=GELU_KERNELS,
        description="MNN computes ONNX Gelu (exact, erf) with its own GELU kernel",
        max_abs=4.74e-4, rel_l2=8.7e-5, setting=None,
        setting_effect="--useGeluApproximation 0 leaves the GELU kernel in place (measured: same 4.74e-4)"),
    Approximation(
        id="erf-gelu", onnx_ops=frozenset({"Div", "Mul", "Erf", "Add"}), key_ops=frozenset({"Erf"}),
        mnn_kernels=GELU_KERNELS,
        description="the converter fuses the erf-GELU pattern (Div, Erf, Add, Mul, Mul) into MNN's GELU kernel",
        max_abs=4.74e-4, rel_l2=8.7e-5, setting="--useGeluApproximation 0",
        setting_effect="MNN's exact GELU_STANDARD kernel instead: float noise (measured max abs 4.8e-7)",
        option="--no-gelu-approximation (Convert dock: GELU = exact erf)",
        convert_fields=(("gelu_approximation", False),),
        # a new-user try followed the advice on PP-OCRv6 det and found the model 2.4x slower, unwarned
        setting_cost="the exact kernel is slower: measured 2.25x per run on PP-OCRv6 rec and 2.4x on PP-OCRv6 det "
                     "at 640x480 (MNN 3.6.1, CPU)"),
    Approximation(
        id="softmax-sum", onnx_ops=frozenset({"Softmax"}), key_ops=frozenset({"Softmax"}),
        mnn_kernels=frozenset({"Softmax"}),
        description="MNN's Softmax adds up its normaliser in float32 with a rounding bias when one class dominates: "
                    "a row can come out scaled by up to 1.5e-8 per class on its axis (measured up to 1.1e-8), the "
                    "order of the classes unchanged",
        max_abs=2.0 ** -26, rel_l2=5e-9, setting=None,  # both per element of the axis (rel_l2: PP-OCRv6 rec's)
        setting_effect="no converter or runtime setting changes MNN's Softmax sum (fp32 runs already use precision "
                       "high)",
        per_axis_element=True),
)

# How far an op's own max abs error may exceed the entry's measured one (float noise of its inputs, rounding
# of the inputs it received) and still be that approximation.
MARGIN = 1.25


def find(region_types: list[str], mnn_types: list[str]) -> Approximation | None:
    """The entry whose pattern this divergence's source matches (ONNX region op types, MNN op types), else
    None. The MNN side must show the entry's kernel when the pair lists MNN ops at all."""
    ops = {t for t in region_types if t not in ("Identity", "Dropout")}
    for entry in APPROXIMATIONS:
        if not ops or not ops <= entry.onnx_ops or not ops & entry.key_ops:
            continue
        if mnn_types and not set(mnn_types) & entry.mnn_kernels:
            continue
        return entry
    return None


def within_bound(entry: Approximation, max_abs: float | None, atol: float, rtol: float, ref_max_abs: float | None,
                 axis_length: int | None = None) -> bool:
    """Whether an op's own error is no more than the approximation's measured error (plus the mode's tolerance)."""
    if max_abs is None or (entry.per_axis_element and not axis_length):
        return False
    return max_abs <= entry.bound(axis_length, ref_max_abs) * MARGIN + atol + rtol * (ref_max_abs or 0.0)
