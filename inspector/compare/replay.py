"""The error one operator adds, measured exactly: re-run it in numpy (float64) on MNN's own inputs.

Subtracting input errors from output errors is only an estimate: an elementwise product y * g whose
gate g flips between 0 and w shows a large relative error that it did not make. For ops numpy can
compute exactly, replaying the op on the values MNN fed it separates what the op did from what it
received: introduced = ||mnn_out - op(mnn_inputs)|| / ||ref_out||. A kernel that computes another
function (an approximate activation) shows up here in full; an op that only passed errors on, as zero.
"""
from __future__ import annotations

import math

import numpy as np
import onnx

from mnnscope.inspector.model.graph import ModelGraph


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


# MatMul too: a linear map changes relative error without adding any (its output's relative error can exceed
# its input's), so estimating it by subtraction would credit it with error it only carried.
BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "MatMul": np.matmul}
UNARY = {"Relu": lambda a: np.maximum(a, 0.0), "Neg": np.negative, "Abs": np.abs, "Sigmoid": _sigmoid,
         "Tanh": np.tanh, "Exp": np.exp, "Sqrt": np.sqrt, "Identity": lambda a: a}
PASS_OPS = {"Identity", "Dropout"}  # ops that hand their input on: a region of them and one op is that op's
MAX_ELEMENTS = 1 << 22  # bigger outputs keep the estimate: a replay holds a few float64 copies in memory


class Replayer:
    """Replays single-node regions of one comparison; initializer values read once from the ONNX file."""

    def __init__(self, graph: ModelGraph, read_ref, read_mnn):
        self.graph = graph
        self.read_ref, self.read_mnn = read_ref, read_mnn  # tensor name -> array (or None)
        self._inits: dict | None = None
        self._producer: dict | None = None

    def _initializer(self, name: str):
        if self._inits is None:
            self._inits = {}
            try:
                model = onnx.load(self.graph.path, load_external_data=False)
                self._inits = {t.name: t for t in model.graph.initializer}
            except Exception:
                pass
        t = self._inits.get(name)
        if t is None:
            return None
        if t.data_location == onnx.TensorProto.EXTERNAL:
            return None
        return onnx.numpy_helper.to_array(t)

    def _mnn_input(self, name: str) -> tuple[str, object]:
        """(name, MNN's value) of an input: an Identity/Dropout's output (the converter removes them, so MNN has no
        such tensor) is its input's value, followed back through a chain of them; the value None when MNN has none."""
        if self._producer is None:
            self._producer = self.graph.producers()
        for _ in range(64):
            value = self.read_mnn(name, ref_shape=True)
            nid = self._producer.get(name) if value is None else None
            data = self.graph.g.nodes[nid] if nid is not None else None
            if data is None or data["op_type"] not in PASS_OPS or not data["inputs"]:
                return name, value
            name = data["inputs"][0]
        return name, None

    def introduced(self, nid: str, out: str, ref_l2: float, atol: float) -> float | None:
        """Error the node adds to `out`, or None when it cannot be replayed here."""
        data = self.graph.g.nodes[nid]
        op = data["op_type"]
        if (op not in BINARY and op not in UNARY) or data["outputs"][:1] != [out]:
            return None
        ref_out = self.read_ref(out)
        if ref_out is None or ref_out.dtype.kind != "f" or ref_out.size > MAX_ELEMENTS:
            return None
        args = []
        for name in data["inputs"]:
            name, value = self._mnn_input(name)  # (each tensor read from disk once)
            if value is None:
                value = self._initializer(name)
            if value is None:
                return None
            args.append(np.asarray(value, dtype=np.float64))
        mnn_out = self.read_mnn(out, ref_shape=True)
        if mnn_out is None:
            return None
        try:
            with np.errstate(all="ignore"):
                expected = BINARY[op](*args) if op in BINARY else UNARY[op](*args)
                diff = np.asarray(mnn_out, np.float64) - np.broadcast_to(expected, ref_out.shape)
        except (ValueError, TypeError, IndexError):
            return None  # inputs that do not broadcast as the reference did: keep the estimate
        # Over the elements the reference has finite, as the metrics are: where the reference holds +-inf (a
        # mask), MNN's saturated stand-in (-65504) plus an input rounds at that magnitude, which is no error.
        finite = np.isfinite(diff) & np.isfinite(np.asarray(ref_out))
        err = float(np.linalg.norm(diff[finite])) if finite.any() else 0.0
        scale = max(ref_l2 or 0.0, atol * math.sqrt(max(ref_out.size, 1)))
        return err / scale if scale > 0 else 0.0
