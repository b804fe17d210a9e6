"""What an op is called where it is shown (the canvas, the Profile dock's tables). MNN folds whole families of ONNX
ops into one generic op whose parameter says what it computes (BinaryOp with opType ADD, MUL, ...); a graph of
nodes all titled "BinaryOp" says nothing, so these are titled by their operation, as MNN's own enums name it.
Properties and the tooltips keep the raw op type."""
from __future__ import annotations

SEP = "\u00b7"
# op type -> (attribute naming the operation, keep the op type in the title). BinaryOp and UnaryOp are the
# common case and their operation names are unambiguous ("ADD", "SQRT"); Eltwise and Reduction share names
# with them and with each other ("SUM", "MAXIMUM"), so they keep their type: "Reduction·MEAN".
OPERATION = {"BinaryOp": ("opType", False), "UnaryOp": ("opType", False),
             "Eltwise": ("type", True), "Reduction": ("operation", True)}


def node_title(op_type: str, attrs: dict) -> str:
    """The title of one op: its operation for MNN's generic ops, else its op type."""
    spec = OPERATION.get(op_type)
    value = attrs.get(spec[0]) if spec else None
    if not isinstance(value, str) or not value:
        return op_type
    if spec[1] or value.startswith("UNKNOWN_"):  # an operation newer than our schema: keep the type beside it
        return f"{op_type}{SEP}{value}"
    return value
