"""Symbolic dimensions at concrete sizes: "floor(DynamicDimension.1/2 - 1/2) + 1" with DynamicDimension.1 = 48 is 24.

Shape inference and exporters write a free dimension as a name ("batch", "DynamicDimension.0") or as an
expression over names (PP-OCRv6's "(floor(DynamicDimension.1/2 - 1/2) + 1)"). At the sizes the inputs run at
those are numbers: what the graph's labels show where the symbolic form does not fit (it showed "?x24x24x?"), and
what FLOPs are counted at (PP-OCRv6 det's stayed unknown). Evaluated by a small walker over Python's own parse of
the text: numbers, names, + - * / // %, unary minus, floor/ceil/min/max; anything else is "not known".
"""
from __future__ import annotations

import ast
import math
import re
from fractions import Fraction
from functools import lru_cache

import numpy as np

_FUNCS = {"floor": math.floor, "ceil": math.ceil, "min": min, "max": max, "Min": min, "Max": max,
          "ceiling": math.ceil}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:]*")


def eval_dim(dim, values: dict) -> int | None:
    """`dim` (an int, a name, or an expression over names) at `values` ({name: size}); None when it cannot be
    computed (a name without a value, an expression of another kind, a result that is no whole number >= 0)."""
    if isinstance(dim, bool):
        return None
    if isinstance(dim, int):
        return dim if dim >= 0 else None
    if not isinstance(dim, str) or not dim.strip():
        return None
    text = dim.strip()
    if text in values:
        return int(values[text])
    parsed = _parse(text)
    if parsed is None:
        return None
    tree, names = parsed
    # exactly, in fractions: in floats floor(13/3 - 1/3) was floor(3.9999999999999996) = 3, a layer's size one short
    env = {v: None if values.get(k) is None else Fraction(values[k]) for k, v in names.items()}
    try:
        out = _eval(tree.body, env, const=Fraction)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        return None
    if out is None or out != int(out) or out < 0:
        return None
    return int(out)


def _parse(text: str) -> tuple[ast.Expression, dict[str, str]] | None:
    """Python's parse of an expression over dim names, each name given an identifier (names such as
    "DynamicDimension.0" are none), and {name: its identifier}; None when it does not parse."""
    names: dict[str, str] = {}

    def alias(m):
        return names.setdefault(m.group(0), f"_v{len(names)}") if m.group(0) not in _FUNCS else m.group(0)
    try:
        return ast.parse(_NAME.sub(alias, text), mode="eval"), names
    except SyntaxError:
        return None


def _eval(node, env, funcs=_FUNCS, const=lambda v: v):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return const(node.value)
    if isinstance(node, ast.Name):
        v = env.get(node.id)
        if v is None:
            raise ValueError(node.id)
        return v
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, env, funcs, const)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, env, funcs, const), _eval(node.right, env, funcs, const)
        op = node.op
        if isinstance(op, ast.Add):
            return a + b
        if isinstance(op, ast.Sub):
            return a - b
        if isinstance(op, ast.Mult):
            return a * b
        if isinstance(op, ast.Div):
            return a / b
        if isinstance(op, ast.FloorDiv):
            return a // b
        if isinstance(op, ast.Mod):
            return a % b
        raise ValueError("operator")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in funcs \
            and not node.keywords and node.args:
        return funcs[node.func.id](*[_eval(a, env, funcs, const) for a in node.args])
    raise ValueError("expression")


def concrete(shape, values: dict) -> list[int] | None:
    """Every dim of `shape` at `values`, or None when one cannot be computed (or there is no shape)."""
    if shape is None:
        return None
    out = [eval_dim(d, values) for d in shape]
    return None if any(d is None for d in out) else out


def is_symbolic(shape) -> bool:
    return shape is not None and any(isinstance(d, str) for d in shape)


# Simplifying: exporters nest one floor per strided layer, and a shape read
# "(floor(floor(floor(floor(DynamicDimension.1/2 - 1/2)/2)/2)/2) + 1)" where it is "ceil(DynamicDimension.1/16)"
# (PP-OCRv6 det, in Properties: four lines of brackets per tensor). An expression of one name, built only of numbers,
# + - * /, // and floor/ceil (nothing multiplies the name by itself), steps by the same whole number D whenever its
# name grows by P (the product of its denominators, as _period counts them): f(x + P) = f(x) + D. So do the forms
# tried, k*x + c (P = 1) and floor(x/k) + c, ceil(x/k) + c (P = k, tried only where k divides the expression's P):
# two such forms equal at every size 1..SIMPLE_UPTO (at least four of P) are equal at every size.
SIMPLE_UPTO = 4096
_AFFINE_FUNCS = {"floor": lambda v: np.floor(v + 1e-9), "ceil": lambda v: np.ceil(v - 1e-9),
                 "ceiling": lambda v: np.ceil(v - 1e-9)}


def _period(node, names: set) -> int | None:
    """The product of the expression's denominators, or None when it is not of the kind simplify() can prove (a
    name times a name, min/max, %, powers, ...)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return Fraction(node.value).limit_denominator(1 << 12).denominator
    if isinstance(node, ast.Name):
        names.add(node.id)
        return 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _period(node.operand, names)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _AFFINE_FUNCS \
            and len(node.args) == 1 and not node.keywords:
        return _period(node.args[0], names)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv)):
        left, right = set(), set()
        a, b = _period(node.left, left), _period(node.right, right)
        if a is None or b is None:
            return None
        names |= left | right
        if isinstance(node.op, (ast.Add, ast.Sub)):
            return a * b
        if isinstance(node.op, ast.Mult):
            return a * b if not (left and right) else None
        if right or not isinstance(node.right, ast.Constant) or not node.right.value:
            return None  # divided by a name (or by an expression, or by 0)
        return a * b * Fraction(node.right.value).limit_denominator(1 << 12).numerator
    return None


@lru_cache(maxsize=4096)
def simplify(dim: str) -> str:
    """A shorter form of the expression `dim` that has the same value at every size of its one name, or `dim` itself
    where none of the forms tried is (or the expression is of another kind): "(floor(floor(H/2 - 1/2)/2) + 1)" is
    "ceil(H/4)", "H*2 + 0" is "2*H". The value of `dim` at sizes is unchanged: eval_dim of either."""
    if not isinstance(dim, str):
        return dim
    parsed = _parse(dim.strip())
    if parsed is None:
        return dim
    tree, names = parsed
    used: set = set()
    p = _period(tree.body, used)
    if p is None or len(used) != 1 or len(names) != 1 or p * 4 > SIMPLE_UPTO:
        return dim
    name, var = next(iter(names.items()))
    x = np.arange(1, SIMPLE_UPTO + 1, dtype=np.float64)
    try:
        with np.errstate(all="ignore"):
            y = np.asarray(_eval(tree.body, {var: x}, _AFFINE_FUNCS), np.float64) * np.ones_like(x)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        return dim
    if not np.isfinite(y).all() or np.abs(y - np.round(y)).max() > 1e-6:
        return dim
    y = np.round(y)
    slope = (y[-1] - y[0]) / (x[-1] - x[0])
    forms = []
    if slope >= 1 and abs(slope - round(slope)) < 1e-9:
        k = int(round(slope))
        forms.append((x * k, name if k == 1 else f"{k}*{name}"))
    elif 0 < slope < 1:
        k = int(round(1 / slope))
        if p % k == 0:
            forms += [(np.floor(x / k), f"floor({name}/{k})"), (np.ceil(x / k), f"ceil({name}/{k})")]
    for vals, text in forms:
        c = y[0] - vals[0]
        if (y == vals + c).all():
            short = text if c == 0 else f"{text} {'+' if c > 0 else '-'} {int(abs(c))}"
            return short if len(short) < len(dim.strip()) else dim
    return dim
