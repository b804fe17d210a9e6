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
    names: dict[str, str] = {}

    def alias(m):  # names such as "DynamicDimension.0" are no Python identifiers
        return names.setdefault(m.group(0), f"_v{len(names)}") if m.group(0) not in _FUNCS else m.group(0)
    try:
        tree = ast.parse(_NAME.sub(alias, text), mode="eval")
    except SyntaxError:
        return None
    env = {v: values.get(k) for k, v in names.items()}
    try:
        out = _eval(tree.body, env)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        return None
    if out is None or not math.isfinite(out) or abs(out - round(out)) > 1e-9 or out < 0:
        return None
    return int(round(out))


def _eval(node, env):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        v = env.get(node.id)
        if v is None:
            raise ValueError(node.id)
        return v
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, env)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, env), _eval(node.right, env)
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
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS \
            and not node.keywords and node.args:
        return _FUNCS[node.func.id](*[_eval(a, env) for a in node.args])
    raise ValueError("expression")


def concrete(shape, values: dict) -> list[int] | None:
    """Every dim of `shape` at `values`, or None when one cannot be computed (or there is no shape)."""
    if shape is None:
        return None
    out = [eval_dim(d, values) for d in shape]
    return None if any(d is None for d in out) else out


def is_symbolic(shape) -> bool:
    return shape is not None and any(isinstance(d, str) for d in shape)
