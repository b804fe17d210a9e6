"""Static figures of a graph: FLOP estimates per operator from tensor shapes."""
from __future__ import annotations

import math

from mnnscope.inspector.model.dimexpr import eval_dim
from mnnscope.inspector.model.graph import ModelGraph

_ELEMENTWISE = {
    "Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Pow", "Exp", "Log", "Neg",
    "Gelu", "LeakyRelu", "Clip", "HardSigmoid", "HardSwish", "Max", "Min", "Where", "Abs", "Reciprocal",
    "BinaryOp", "UnaryOp", "ReLU", "ReLU6", "Sigmoid", "TanH", "SILU", "GELU", "Eltwise", "PReLU", "Selu",
}
_NORM = {"Softmax": 5, "LayerNormalization": 8, "BatchNormalization": 2, "InstanceNormalization": 8,
         "LayerNorm": 8, "SimplifiedLayerNormalization": 6, "RMSNormalization": 6, "ReduceMean": 1,
         "ReduceSum": 1, "GlobalAveragePool": 1}


_MATMUL = {"MatMul", "Gemm", "FusedMatMul", "MatMulInteger"}
# recurrent layers: gates per step (each an input and a recurrent matrix product over the hidden size)
_RNN_GATES = {"GRU": 3, "LSTM": 4, "RNN": 1}
_CONV = {"Conv", "ConvTranspose", "Convolution", "ConvolutionDepthwise", "Deconvolution"}


def has_rule(op_type: str) -> bool:
    """Whether op_flops counts this operator type (given its shapes)."""
    return op_type in _MATMUL or op_type in _CONV or op_type in _ELEMENTWISE or op_type in _NORM or \
        op_type in _RNN_GATES


def free_dims(shapes) -> list[str]:
    """The dimensions of these (input) shapes that are not fixed numbers, by name, sorted."""
    return sorted({str(d) for s in shapes for d in (s or []) if not (isinstance(d, int) and d >= 0)})


UNCOUNTED_SHARE = 0.05  # of the operators with a rule: more left out than this, and a free-dim model's total is unknown


def total_or_unknown(per: list[int], unknown: int, input_shapes) -> int | None:
    """The model's FLOPs from the operators counted; None where nothing could be counted, or where more than one
    in twenty operators with a rule were left out for want of shapes while the inputs have free dimensions:
    captcha_crnn's free `batch` left every shape but one unknown and the total read "1" (a few left out, as
    PP-OCRv6 det's 5 ConvTranspose-fed ops of 303 whose dims inference invents, leave an estimate: the summary
    says over how many ops)."""
    if not per or (unknown and free_dims(input_shapes) and unknown > UNCOUNTED_SHARE * (len(per) + unknown)):
        return None
    return sum(per)


def _numel(shape) -> int | None:
    if shape is None or any(not isinstance(d, int) or d < 0 for d in shape):
        return None
    return math.prod(shape)  # a scalar ([]) has one element


def _shape(mg: ModelGraph, name: str):
    t = mg.tensors.get(name)
    return t.shape if t else None


def op_flops(mg: ModelGraph, data: dict) -> int | None:
    """Floating-point operations of one operator (a multiply-add counts 2), or None when unknown."""
    op = data["op_type"]
    outs = [o for o in data["outputs"] if o]
    out_shape = _shape(mg, outs[0]) if outs else None
    out_n = _numel(out_shape)
    ins = data["inputs"]
    if op in _MATMUL:
        a = _shape(mg, ins[0]) if ins else None
        if out_n is None or not a or not isinstance(a[-1], int):
            return None
        k = a[-1]
        if op == "Gemm" and data["attrs"].get("transA"):
            k = a[0] if isinstance(a[0], int) else None
        return None if k is None else 2 * out_n * k
    if op in _CONV:
        w = _shape(mg, ins[1]) if len(ins) > 1 else None
        attrs = data["attrs"]
        if w and all(isinstance(d, int) for d in w):
            per_out = math.prod(w[1:])  # Cin/group * kh * kw for Conv
            if op == "ConvTranspose":
                x = _shape(mg, ins[0])
                xn = _numel(x)
                return None if xn is None else 2 * xn * w[1] * math.prod(w[2:])
            return None if out_n is None else 2 * out_n * per_out
        # MNN convs keep weights inside the op: kernel and channels from its attributes.
        k = attrs.get("kernel") or [attrs.get("kernelY"), attrs.get("kernelX")]
        cin, group = attrs.get("inputCount"), attrs.get("group") or 1
        if out_n is not None and cin and all(isinstance(v, int) and v > 0 for v in k):
            return 2 * out_n * (cin // max(group, 1) if op != "ConvolutionDepthwise" else 1) * math.prod(k)
        return None
    if op in _RNN_GATES:
        # X [seq, batch, input] (or batch first), W [directions, gates x hidden, input], R [.., .., hidden]: per step,
        # direction and batch row the gates' two products (2 x gates x hidden x (input + hidden)) and their
        # activations and mixing (about 4 per gate element). The romanizer encoder's two BiGRUs, 97% of its run,
        # were left out of its FLOPs (helper 111).
        x = _numel(_shape(mg, ins[0])) if ins else None
        w = _shape(mg, ins[1]) if len(ins) > 1 else None
        if x is None or not w or len(w) != 3 or not all(isinstance(d, int) and d > 0 for d in w):
            return None
        dirs, gh, inp = w
        hidden = gh // _RNN_GATES[op]
        steps_rows = x // inp  # seq x batch
        return steps_rows * dirs * (2 * gh * (inp + hidden) + 4 * gh)
    if op in _ELEMENTWISE:
        return out_n
    if op in _NORM:
        x = _numel(_shape(mg, ins[0])) if ins else None
        return None if x is None else _NORM[op] * x
    return None


def bound(shape, dims: dict | None):
    """A shape with its named free dimensions, and the expressions over them (PP-OCRv6's "floor(H/2 - 1/2) + 1"),
    replaced by their values at `dims` ({name: size}: the sizes the inputs are run at); other dimensions as they
    are."""
    if not dims or shape is None:
        return shape
    out = []
    for d in shape:
        v = eval_dim(d, dims) if isinstance(d, str) else None
        out.append(d if v is None else v)
    return out


class BoundShapes:
    """What op_flops reads of a ModelGraph (`tensors.get(name).shape`), the shapes bound to sizes."""

    class _T:
        __slots__ = ("shape",)

        def __init__(self, shape):
            self.shape = shape

    def __init__(self, get, dims: dict):
        self._get, self.dims = get, dims
        self.tensors = self

    def get(self, name):
        shape = self._get(name)
        return None if shape is False else self._T(bound(shape, self.dims))


def estimate_flops(mg: ModelGraph, dims: dict | None = None) -> tuple[int | None, dict[str, int]]:
    """(total over countable operators, None when unknown (total_or_unknown), per-node figures). `dims`: sizes of
    named free dimensions ({"batch": 1, "seq": 8}) the shapes are counted at (a model with free input dims is
    otherwise unknown)."""
    return estimate_flops_detail(mg, dims)[:2]


def estimate_flops_detail(mg: ModelGraph, dims: dict | None = None) -> tuple[int | None, dict[str, int], int]:
    """estimate_flops and how many operators with a counting rule were left out for want of shapes."""
    view = BoundShapes(lambda n: mg.tensors[n].shape if n in mg.tensors else False, dims) if dims else mg
    per, unknown = {}, 0
    for nid, data in mg.g.nodes(data=True):
        f = op_flops(view, data)
        if f is not None:
            per[nid] = int(f)
        elif has_rule(data["op_type"]):
            unknown += 1
    # (the inputs' own shapes: with ops left uncounted a model with free dims stays unknown, bound or not: PP-OCRv6
    # det's convolutions have invented dims no size binds, and 20 counted ops of 464 read "275 k")
    shapes = [_shape(mg, n) for n in mg.inputs]
    return total_or_unknown(list(per.values()), unknown, shapes), per, unknown
