"""Names for the symbolic dimensions ONNX shape inference invents ("unk__7"), where the graph proves them equal
to a dimension the model names ("seq") or to a number.

Shape inference gives a fresh "unk__N" to every dimension it cannot compute (a Reshape to [1, -1, 64]) and
to every broadcast of two different symbols (the residual Add of [1, seq, 64] and [1, unk__3, 64]), so the
residual stream of a transformer changes name at every layer and cannot be followed. The ops themselves say
which dimensions must be equal in any valid run: the aligned dimensions of a broadcasting op that are not 1,
the contracted dimension of a MatMul, input and output of a shape-preserving op, the non-axis dimensions of a
Concat, and a Reshape's one free dimension when the fixed dimensions around it hold the same number of
elements (dims named on both sides cancel out). Those equalities are joined in classes (union-find); every
"unk__N" in a class that holds the model's own name takes that name (or the number the class holds); a class
of invented names only takes one of them, so at least it is one name everywhere. Dimensions the model names
are never renamed. Pure Python: runs beside the shape inference in the runner.
"""
from __future__ import annotations

import re

INVENTED = re.compile(r"^unk__\d+$")
BROADCAST = {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Mean", "Sum", "Where", "Equal", "Less",
             "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "PRelu", "BitShift", "BitwiseAnd",
             "BitwiseOr", "BitwiseXor"}
# ops whose first output has their first input's shape (inference copies it, but a shape stored in the file
# for the output may hold another name)
SAME_SHAPE = {"Relu", "Sigmoid", "Tanh", "Gelu", "Erf", "Sqrt", "Exp", "Log", "Abs", "Neg", "Cast", "CastLike",
              "Softmax", "LogSoftmax", "LayerNormalization", "SimplifiedLayerNormalization", "SkipLayerNormalization",
              "BatchNormalization", "InstanceNormalization", "GroupNormalization", "Identity", "Dropout", "Clip",
              "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Mish",
              "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Not", "IsNaN", "IsInf", "CumSum", "Trilu",
              "FastGelu", "QuickGelu", "BiasGelu", "Sin", "Cos"}


class _Classes:
    def __init__(self):
        self.parent: dict = {}

    def find(self, a):
        self.parent.setdefault(a, a)
        root = a
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[a] != root:  # path compression
            self.parent[a], a = root, self.parent[a]
        return root

    def join(self, dims) -> None:
        dims = [d for d in dims if d is not None and d != 1]  # 1 broadcasts: it proves nothing
        if len(dims) < 2 or not any(isinstance(d, str) for d in dims):
            return
        first = self.find(dims[0])
        for d in dims[1:]:
            r = self.find(d)
            if r != first:
                self.parent[r] = first


def _broadcast(classes: _Classes, shapes: list, out) -> None:
    rank = max(len(s) for s in shapes + [out])
    for k in range(1, rank + 1):
        classes.join([s[-k] for s in shapes + [out] if len(s) >= k])


def _static(shape) -> tuple[int, list]:
    n, free = 1, []
    for d in shape:
        if isinstance(d, int):
            n *= d
        else:
            free.append(d)
    return n, free


def _constraints(classes: _Classes, op: str, attrs: dict, ins: list, outs: list) -> None:
    known_in = [s for s in ins if s is not None]
    out = outs[0] if outs else None
    if out is None:
        return
    if op in BROADCAST and known_in and len(known_in) == len(ins):
        _broadcast(classes, known_in, out)
    elif op in SAME_SHAPE and known_in and len(known_in[0]) == len(out):
        for a, b in zip(known_in[0], out):
            classes.join([a, b])
    elif op == "MatMul" and len(known_in) == 2 and all(len(s) >= 2 for s in known_in) and len(out) >= 2:
        a, b = known_in
        classes.join([a[-1], b[-2]])
        classes.join([a[-2], out[-2]])
        classes.join([b[-1], out[-1]])
        _broadcast(classes, [a[:-2], b[:-2]], out[:-2])
    elif op == "Concat" and known_in and len(known_in) == len(ins):
        rank = len(out)
        axis = attrs.get("axis", 0)
        axis = axis + rank if axis < 0 else axis
        if all(len(s) == rank for s in known_in):
            for k in range(rank):
                if k != axis:
                    classes.join([s[k] for s in known_in] + [out[k]])
    elif op == "Reshape" and known_in:
        n_in, free_in = _static(known_in[0])
        n_out, free_out = _static(out)
        for d in list(free_in):  # a dim both sides name (kept by a 0 in the new shape) cancels out
            if d is not None and d in free_out:
                free_in.remove(d)
                free_out.remove(d)
        if len(free_in) == 1 and len(free_out) == 1 and n_in == n_out and None not in (free_in[0], free_out[0]):
            classes.join([free_in[0], free_out[0]])


def unify(nodes, shapes: dict, named_order: list[str] | None = None) -> dict[str, str | int]:
    """{invented dim: its new name or number}. `nodes`: (op_type, attrs, input names, output names) per op;
    `shapes`: tensor name -> list of dims (int, str or None); `named_order`: the graph inputs' dim names,
    preferred in that order and never renamed (even one called "unk__3": a file's inputs are its interface)."""
    classes = _Classes()
    for op, attrs, ins, outs in nodes:
        try:
            _constraints(classes, op, attrs, [shapes.get(t) if t else None for t in ins],
                         [shapes.get(t) for t in outs if t])
        except (TypeError, IndexError):  # a malformed shape or attribute: that op proves nothing
            continue
    members: dict = {}
    for d in list(classes.parent):
        members.setdefault(classes.find(d), []).append(d)
    prefer = {n: i for i, n in enumerate(named_order or [])}

    def invented_name(d) -> bool:  # a graph input's dim is the model's interface, whatever it is called
        return isinstance(d, str) and d not in prefer and INVENTED.match(d) is not None

    rename: dict = {}
    for group in members.values():
        invented = [d for d in group if invented_name(d)]
        if not invented:
            continue
        numbers = {d for d in group if isinstance(d, int)}
        names = sorted((d for d in group if isinstance(d, str) and not invented_name(d)),
                       key=lambda n: (prefer.get(n, len(prefer)), n))
        if len(numbers) > 1:
            continue  # contradictory: a broadcast of a symbol that was 1 after all; leave the names alone
        if numbers:
            target = numbers.pop()
        elif names:
            target = names[0]
        else:
            target = min(invented, key=lambda n: int(n[5:]))
        for d in invented:
            if d != target:
                rename[d] = target
    return rename


def apply(shape, rename: dict):
    """`shape` with its invented dims renamed."""
    if not shape or not rename:
        return shape
    return [rename.get(d, d) if isinstance(d, str) else d for d in shape]
