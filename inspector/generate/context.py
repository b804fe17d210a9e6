"""How many positions a decoder holds, where its graph proves it (pure Python on the viewer's GraphTable, so the
Text dock can say it when a model opens and the generate service can refuse a run up front).

The proof is a constant table indexed by the sequence length: a Slice of a constant (the causal mask buffer of
HF exports, [max_pos, max_pos]) whose bounds are computed from tensor shapes, or a Gather from a constant
([max_pos, hidden] position embeddings) whose indices are. Past the table's rows the slice comes out short and
the next op fails ("Broad cast error, dim1 = 64, dim2 = 65" in MNN). A generation of `steps` tokens from a prompt
of `prompt` tokens feeds prompt + steps - 1 positions at its last step (the last token chosen is never fed).

Only what the graph shows for certain is claimed: the bounds must come from shapes alone (never from the token
ids), and the sliced axes must be known to be the table's position axes (every axis, or every axis longer than
1 holding the same size); otherwise no limit is claimed and a run that overflows fails as before.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

SLICES = ("Slice", "StridedSlice")   # StridedSlice: MNN's form of an ONNX Slice (same inputs)
GATHERS = ("Gather",)
SHAPES = ("Shape", "Size")
CONSTS = ("Constant", "Const")
WALK = 64  # tensors looked at above one bound: shape arithmetic is short


@dataclass(frozen=True)
class ContextLimit:
    positions: int      # the most positions a step may feed
    tensor: str         # the constant table that bounds it
    shape: tuple        # its shape
    op: str             # the op that reads it by the sequence length
    kind: str           # "causal mask" | "position table"

    def why(self) -> str:
        dims = "\u00d7".join(str(d) for d in self.shape)
        return f"its {self.kind} {self.tensor} is {dims}, read by {self.op} up to the sequence length"

    @staticmethod
    def needed(prompt: int, steps: int) -> int:
        """Positions the last step feeds: the prompt and every token chosen but the last."""
        return prompt + steps - 1

    def max_steps(self, prompt: int) -> int:
        return self.positions - prompt + 1

    def fits(self, prompt: int, steps: int) -> bool:
        return self.needed(prompt, steps) <= self.positions

    def holds(self) -> str:
        return f"this model holds at most {self.positions} positions"

    def refusal(self, prompt: int, steps: int) -> str:
        """Why prompt + steps does not fit, and what does."""
        most = self.max_steps(prompt)
        fix = (f"at most {most} steps with this prompt" if most >= 1 else
               f"the prompt alone is longer than {self.positions} tokens")
        return (f"{self.holds()}: prompt {prompt} + steps {steps} would feed {self.needed(prompt, steps)} "
                f"positions ({self.why()}); {fix}")

    def to_json(self) -> dict:
        d = asdict(self)
        d["shape"] = list(self.shape)
        d["why"] = self.why()
        return d


def context_limit(table) -> ContextLimit | None:
    """The smallest position limit the graph proves (see the module doc), or None. `table`: a GraphTable."""
    names = table.tensor_names
    inputs = {table.tensor_index(n) for n in table.inputs} - {None}
    attrs_cache: dict[int, dict] = {}

    def attrs(node: int) -> dict:
        if node not in attrs_cache:
            try:
                attrs_cache[node] = table.attrs(node)
            except ValueError:
                attrs_cache[node] = {}
        return attrs_cache[node]

    def producer(t: int) -> int:
        return int(table.producer[t]) if t >= 0 else -1

    def is_const(t: int) -> bool:
        if t < 0:
            return False
        p = producer(t)
        return bool(table.is_init[t]) or (p >= 0 and table.op_types[p] in CONSTS)

    def shape(t: int) -> list[int] | None:
        s = table.shapes[t] if t >= 0 else None
        if not s:
            p = producer(t)
            s = attrs(p).get("dims") if p >= 0 and table.op_types[p] in CONSTS else None  # MNN's Const
        if not s or not all(isinstance(d, int) and d >= 0 for d in s):
            return None
        return list(s)

    def from_shapes(t: int) -> bool:
        """Whether tensor t is computed from tensor shapes and constants only (and from at least one shape)."""
        stack, seen, found = [t], set(), False
        while stack:
            x = stack.pop()
            if x in seen:
                continue
            seen.add(x)
            if len(seen) > WALK or x < 0 or x in inputs:
                return False  # a graph input's data (the token ids): not a length
            if is_const(x):
                continue
            p = producer(x)
            if p < 0:
                return False
            if table.op_types[p] in SHAPES:
                found = True
                continue
            stack.extend(i for i in table.node_inputs(p) if i >= 0)
        return found

    best: ContextLimit | None = None
    for node, op in enumerate(table.op_types):
        if op not in SLICES and op not in GATHERS:
            continue
        ins = table.node_inputs(node)
        if len(ins) < 2 or not is_const(ins[0]):
            continue
        dims = shape(ins[0])
        if not dims or len(dims) < 2:
            continue
        n = None
        if op in SLICES:
            bounds = [b for b in ins[1:3] if b >= 0]
            computed = [b for b in bounds if not is_const(b)]
            if len(bounds) < 2 or not computed or not all(from_shapes(b) for b in computed):
                continue
            axes = ins[3] if len(ins) > 3 and ins[3] >= 0 else None
            count = shape(axes) if axes is not None else next((shape(b) for b in bounds if shape(b)), None)
            k = count[0] if count and len(count) == 1 else None
            long_dims = sorted({d for d in dims if d > 1})
            if k == len(dims):
                n = min(dims)
            elif k is not None and len(long_dims) == 1 and k <= sum(1 for d in dims if d > 1):
                n = long_dims[0]
            kind = "causal mask"
        else:
            axis = attrs(node).get("axis", 0)
            if axis not in (0, -len(dims)) or not from_shapes(ins[1]):
                continue
            n, kind = dims[0], "position table"
        if n and (best is None or n < best.positions):
            best = ContextLimit(int(n), names[ins[0]], tuple(dims), table.names[node] or table.ids[node], kind)
    return best
