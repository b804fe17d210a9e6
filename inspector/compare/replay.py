"""The error one operator adds, measured exactly: re-run it in numpy (float64) on MNN's own inputs.

Subtracting input errors from output errors is only an estimate: an elementwise product y * g whose
gate g flips between 0 and w shows a large relative error that it did not make. For ops numpy can
compute exactly, replaying the op on the values MNN fed it separates what the op did from what it
received: introduced = ||mnn_out - op(mnn_inputs)|| / ||ref_out||. A kernel that computes another
function (an approximate activation) shows up here in full; an op that only passed errors on, as zero.

A region of several ONNX nodes that MNN fused into one op (Sigmoid and Mul into SiLU, the five ops of an erf-GELU,
Conv and its bias Add, a LayerNorm's ReduceMean...Add) is replayed as a whole, node by node in float64 on MNN's values
of the region's inputs. Estimated by subtraction instead, a nonlinear region was credited with the error it only
amplified (PP-OCRv6 rec's int8w: a weightless SiLU ranked first at 0.194 of the 0.345 its output carried), and so was
a convolution (a linear map changes relative error without adding any: in fp32 its Convs read 0.004 each). Replayed
with the ONNX file's float weights, a Conv's introduced error is exactly what its stored (fp16, int8...) weights and
its kernel add.
"""
from __future__ import annotations

import math

import numpy as np
import onnx

from mnnscope.inspector.model.graph import ModelGraph


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


_ERF = np.frompyfunc(math.erf, 1, 1)


def _erf(a):
    return np.asarray(_ERF(np.asarray(a, np.float64)), dtype=np.float64)


# MatMul too: a linear map changes relative error without adding any (its output's relative error can exceed
# its input's), so estimating it by subtraction would credit it with error it only carried.
BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "MatMul": np.matmul,
          "Pow": np.power}
UNARY = {"Relu": lambda a: np.maximum(a, 0.0), "Neg": np.negative, "Abs": np.abs, "Sigmoid": _sigmoid,
         "Tanh": np.tanh, "Exp": np.exp, "Sqrt": np.sqrt, "Identity": lambda a: a, "Erf": _erf,
         "Reciprocal": lambda a: 1.0 / a}
ATTR_OPS = {"Conv", "BatchNormalization", "ReduceMean", "HardSigmoid", "Dropout", "Constant"}  # replayed with their attributes (_apply)
PASS_OPS = {"Identity", "Dropout"}  # ops that hand their input on: a region of them and one op is that op's
MAX_ELEMENTS = 1 << 22  # bigger outputs keep the estimate: a replay holds a few float64 copies in memory
MAX_REGION = 24  # nodes: a bigger region (a whole block MNN fused) keeps the estimate
MAX_MACS = 1 << 30  # a convolution costing more multiply-adds than this keeps the estimate (seconds of numpy)


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
        return self.introduced_region([nid], out, ref_l2, atol)

    def introduced_region(self, nids: list[str], out: str, ref_l2: float, atol: float) -> float | None:
        """Error the region (its nodes in topological order, the last one making `out`) adds to `out`: the region
        computed in float64 from MNN's values of what it reads (initializers from the ONNX file), against MNN's
        `out`. None when a node cannot be replayed here (the caller keeps its estimate)."""
        if not nids or len(nids) > MAX_REGION:
            return None
        nodes = [self.graph.g.nodes[n] for n in nids]
        if any(d["op_type"] not in BINARY and d["op_type"] not in UNARY and d["op_type"] not in ATTR_OPS
               for d in nodes) or out not in nodes[-1]["outputs"][:1]:
            return None
        ref_out = self.read_ref(out)
        if ref_out is None or ref_out.dtype.kind != "f" or ref_out.size > MAX_ELEMENTS:
            return None
        values: dict[str, np.ndarray] = {}
        try:
            with np.errstate(all="ignore"):
                for d in nodes:
                    if d["op_type"] == "Constant":
                        value = self.read_ref(d["outputs"][0]) if d["outputs"] else None
                        if value is None:
                            return None
                        values[d["outputs"][0]] = np.asarray(value, np.float64)
                        continue
                    args = []
                    for k, name in enumerate(d["inputs"]):
                        if not name:
                            args.append(None)
                            continue
                        if name in values:
                            args.append(values[name])
                            continue
                        src, value = self._mnn_input(name)  # (each tensor read from disk once)
                        if value is None:
                            value = self._initializer(src)
                        if value is None:
                            return None
                        # integer operands (axes, shapes) stay integers
                        args.append(np.asarray(value) if np.asarray(value).dtype.kind in "biu" and
                                    d["op_type"] in ATTR_OPS else np.asarray(value, dtype=np.float64))
                    result = _apply(d, args)
                    if result is None:
                        return None
                    values[d["outputs"][0]] = np.asarray(result, np.float64)
                expected = values.get(out)
                mnn_out = self.read_mnn(out, ref_shape=True)
                if expected is None or mnn_out is None:
                    return None
                diff = np.asarray(mnn_out, np.float64) - np.broadcast_to(expected, ref_out.shape)
        except (ValueError, TypeError, IndexError, MemoryError):
            return None  # inputs that do not broadcast as the reference did: keep the estimate
        # Over the elements the reference has finite, as the metrics are: where the reference holds +-inf (a
        # mask), MNN's saturated stand-in (-65504) plus an input rounds at that magnitude, which is no error.
        finite = np.isfinite(diff) & np.isfinite(np.asarray(ref_out))
        err = float(np.linalg.norm(diff[finite])) if finite.any() else 0.0
        # relative to the larger of the reference and what the op should give on the inputs it got: an op fed values
        # far off (a ruined layer's output, 3.6x the reference) is judged against the scale it was asked to compute
        # at, else the next layer of a chain of ruined ones outranked the first (its error over a smaller norm)
        should = np.broadcast_to(expected, ref_out.shape)[finite]
        scale = max(ref_l2 or 0.0, float(np.linalg.norm(should)) if should.size else 0.0,
                    atol * math.sqrt(max(ref_out.size, 1)))
        return err / scale if scale > 0 else 0.0


def _apply(d: dict, args: list):
    """One node computed in float64 (None: not replayable with these attributes)."""
    op, attrs = d["op_type"], d.get("attrs") or {}
    if op in BINARY:
        return BINARY[op](args[0], args[1]) if len(args) == 2 and all(a is not None for a in args) else None
    if op in UNARY or op == "Dropout":
        return args[0] if op == "Dropout" else UNARY[op](args[0])
    if op == "HardSigmoid":
        return np.clip(float(attrs.get("alpha", 0.2)) * args[0] + float(attrs.get("beta", 0.5)), 0.0, 1.0)
    if op == "ReduceMean":
        axes = attrs.get("axes")
        if axes is None and len(args) > 1 and args[1] is not None:
            axes = [int(a) for a in np.asarray(args[1]).reshape(-1)]
        if attrs.get("noop_with_empty_axes") and not axes:
            return args[0]
        keep = bool(attrs.get("keepdims", 1))
        return np.mean(args[0], axis=tuple(int(a) for a in axes) if axes else None, keepdims=keep)
    if op == "BatchNormalization":  # inference form: scale, bias, mean, var
        if len(args) < 5 or any(a is None for a in args[:5]) or args[0].ndim < 2:
            return None
        x, scale, bias, mean, var = args[:5]
        shape = (1, -1) + (1,) * (x.ndim - 2)
        eps = float(attrs.get("epsilon", 1e-5))
        return ((x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * scale.reshape(shape)
                + bias.reshape(shape))
    if op == "Conv":
        return _conv2d(args[0], args[1], args[2] if len(args) > 2 else None, attrs)
    return None


def _conv2d(x, w, b, attrs: dict):
    """ONNX Conv of 2-D images (N, C, H, W) with groups, strides, pads, dilations: one batched matrix product per
    kernel position, so memory stays at the input and output (no im2col copy). None for another rank, auto_pad
    SAME_* or an output too costly to compute here."""
    if x is None or w is None or x.ndim != 4 or w.ndim != 4:
        return None
    if attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID", b"NOTSET", b"VALID"):
        return None
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    g = int(attrs.get("group", 1))
    if c != cg * g or m % g:
        return None
    sh, sw = (list(attrs.get("strides") or [1, 1]) + [1, 1])[:2]
    dh, dw = (list(attrs.get("dilations") or [1, 1]) + [1, 1])[:2]
    pads = list(attrs.get("pads") or [0, 0, 0, 0])
    if len(pads) != 4:
        return None
    t, l, bt, r = pads
    xp = np.pad(x, ((0, 0), (0, 0), (t, bt), (l, r)))
    ho = (h + t + bt - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + l + r - dw * (kw - 1) - 1) // sw + 1
    if ho <= 0 or wo <= 0 or n * m * ho * wo * cg * kh * kw > MAX_MACS:
        return None
    xg = xp.reshape(n, g, cg, xp.shape[2], xp.shape[3])
    wg = w.reshape(g, m // g, cg, kh, kw)
    y = np.zeros((n, g, m // g, ho * wo))
    for i in range(kh):
        for j in range(kw):
            patch = xg[:, :, :, i * dh:i * dh + sh * (ho - 1) + 1:sh, j * dw:j * dw + sw * (wo - 1) + 1:sw]
            y += np.matmul(wg[None, :, :, :, i, j], patch.reshape(n, g, cg, ho * wo))
    y = y.reshape(n, m, ho, wo)
    if b is not None:
        y = y + np.asarray(b, np.float64).reshape(1, m, 1, 1)
    return y
