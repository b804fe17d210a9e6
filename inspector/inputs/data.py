"""Model inputs for a run: seeded random data, .npy/.npz files, an image, or text through a tokenizer.

Pure numpy (Pillow for images, `tokenizers` for text), no native model code: the arrays are built here
and handed to the runner as one .npz file.

Symbolic and unknown dimensions (ONNX `dim_param`, MNN `-1`) get their size, in this order, from
`shapes` (`--shape NAME=DIMS`), from another input that binds the same dimension name (so
`input_ids` and `attention_mask` agree on `seq`), from the text's token count, and else from a default:
DEFAULT_BATCH (1) for batch-like dimensions (named like `batch`/`N`, or the first axis of an input
with two or more axes unless its name says sequence/length/time), DEFAULT_SPATIAL (64) for the height
and width of image-like inputs ([N, C, H, W] with C <= 4, unless the dim's name says sequence: a KV cache's
`past`), and DEFAULT_SEQUENCE (8) for every other one (sequence lengths, cache lengths, unnamed inner axes).

Random values are seeded (`seed`) and chosen per dtype so that the model runs on valid data:
floats uniform in [-1, 1); integer inputs that feed a Gather on an embedding table (read from the graph)
uniform in [0, rows of the table); other integers in [0, SMALL_INT); bool inputs all True, but all False where
True means "masked out" (a Not reads them, or a Where picks -1e9 where they are True: padding masks); inputs named like
`attention_mask` all ones, `position_ids` 0..seq-1, `token_type_ids` zeros.

Arrays keep the model's dtypes (ONNX int64 stays int64): MNN wants int64/bool as int32, and the runner's
MNN side casts, so the same input file serves both engines.
"""
from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path

import numpy as np

from mnnscope.inspector.errors import ModelError, UsageError

from mnnscope.inspector.model.graph import ModelGraph
from mnnscope.inspector.inputs.sources import (IMAGE_SUFFIXES, dim_key, encode_text, is_free, load_array, load_image, np_dtype,
                            text_array, text_role)

DEFAULT_BATCH = 1
DEFAULT_SEQUENCE = 8
DEFAULT_SPATIAL = 64
SEQUENCE_WORDS = ("seq", "len", "token", "time", "step", "past", "cache", "kv")  # in a dim's name: a sequence
SMALL_INT = 4
FLOAT_RANGE = (-1.0, 1.0)

_BATCH_NAMES = {"batch", "batch_size", "batchsize", "n", "b", "bs", "num_batches"}
_GATHER_TYPES = {"Gather", "GatherV2", "GatherElements", "GatherND"}
# Ops an index can pass through on its way to a Gather (MNN adds a negative-index fix-up before it).
_INDEX_PASSTHROUGH_DEPTH = 4
# Ops whose output is the input's shape, not its values: the ids do not pass through them (the romanizer's decoder as
# .mnn: Rank(prefix) -> ... -> the axis of a GatherV2 whose data is prefix, read as "prefix indexes a table of 1 row",
# and its own ids 2..136 refused)
_SHAPE_OF = {"Shape", "Rank", "Size"}


def _id_role(op_type: str, pos: int) -> str:
    """What an op reading the ids (as its input `pos`) does with them, for index_bounds' walks: "index" (a Gather's
    indices: its table bounds them), "stop" (their shape, or a GatherV2's axis: not the ids) or "pass" (the values go
    on, a Gather of the ids themselves too)."""
    if op_type in _SHAPE_OF or (op_type in _GATHER_TYPES and pos >= 2):
        return "stop"
    return "index" if op_type in _GATHER_TYPES and pos == 1 else "pass"


# ----- option parsing ---------------------------------------------------------------------------
def parse_shape_option(values: list[str] | None) -> dict[str, list[int]]:
    """["input_ids=1,32", "mask=1x32"] -> {"input_ids": [1, 32], "mask": [1, 32]}; UsageError on bad syntax."""
    shapes: dict[str, list[int]] = {}
    for value in values or []:
        name, sep, dims = value.rpartition("=")
        if not sep or not name or not dims:
            raise UsageError(f"--shape '{value}': expected NAME=DIMS, e.g. input_ids=1,32")
        parts = re.split(r"\s*[,x]\s*|\s+", dims.strip())
        try:
            # Every part must be a number: "1,x" is a typo, not the shape [1].
            parsed = [int(d) for d in parts]
        except ValueError:
            raise UsageError(f"--shape '{value}': dimensions must be integers, e.g. {name}=1,32")
        if not parsed or any(d <= 0 for d in parsed):
            raise UsageError(f"--shape '{value}': dimensions must be positive integers")
        shapes[name] = parsed
    return shapes


def parse_input_option(values: list[str] | None) -> dict[str, str]:
    """["input_ids=ids.npy", "all.npz"] -> {"input_ids": "ids.npy", "*": "all.npz"} (files must exist)."""
    files: dict[str, str] = {}
    for value in values or []:
        name, sep, path = value.rpartition("=")
        if not sep:
            name, path = "*", value
        if not path or not name:
            raise UsageError(f"--input '{value}': expected NAME=FILE (.npy, .npz or an image) or FILE.npz")
        if name == "*" and not path.lower().endswith(".npz"):
            raise UsageError(f"--input '{value}': only an .npz file may omit NAME= (its arrays are named by input)")
        if not os.path.isfile(path):
            raise UsageError(f"--input '{value}': no such file: {path}")
        files[name] = path
    return files


# ----- the graph's view of its inputs -------------------------------------------------------------
def input_specs(graph: ModelGraph) -> list[dict]:
    """[{name, shape, dtype}] of the graph inputs that are fed at run time (initializers excluded)."""
    out = []
    for name in graph.inputs:
        t = graph.tensors.get(name)
        if t is not None and t.is_initializer:
            continue
        out.append({"name": name, "shape": list(t.shape) if t and t.shape is not None else None,
                    "dtype": (t.dtype if t and t.dtype else "float32")})
    return out


NEGATING_OPS = ("Not",)  # (MNN's converter keeps the name; an .mnn reads it as UnaryOp/BinaryOp and is not caught)
# ops a mask passes through unchanged in meaning on its way to a Not or a Where (its first input only)
MASK_CARRIERS = ("Unsqueeze", "Squeeze", "Reshape", "Expand", "Cast", "Identity", "Transpose", "Flatten")
MASKED_BELOW = -1e4  # a Where that picks a value this low where its condition is True masks there (-1e9, -inf)


def _negations(bool_inputs: set[str], nodes) -> dict[str, str]:
    """{input: why} for the bool inputs where True means "masked out": a Not reads them, or they are the condition
    of a Where whose value where True is a large negative constant (a Constant op's). nodes: (op_type, input
    names, output names, attrs) per op; the mask may pass through MASK_CARRIERS on the way."""
    readers: dict = {}
    const: dict = {}
    for op, ins, outs, attrs in nodes:
        for k, t in enumerate(ins):
            readers.setdefault(t, []).append((op, k, ins, outs))
        if op == "Constant" and outs:
            attrs = attrs or {}
            v = attrs.get("value_float", attrs.get("value"))
            if isinstance(v, dict):  # a tensor attribute (its value kept when small)
                v = v.get("tensor", {}).get("value")
            while isinstance(v, list) and len(v) == 1:
                v = v[0]
            if isinstance(v, (int, float)):
                const[outs[0]] = float(v)
    out = {}
    for name in bool_inputs:
        seen, todo = {name}, [name]
        while todo and name not in out:
            t = todo.pop()
            for op, k, ins, outs in readers.get(t, []):
                if op in NEGATING_OPS:
                    out[name] = f"a {op} reads it"
                elif op == "Where" and k == 0 and len(ins) > 1 and const.get(ins[1], 0.0) <= MASKED_BELOW:
                    out[name] = f"a Where puts {const[ins[1]]:g} where it is True"
                elif op in MASK_CARRIERS and k == 0:
                    for o in outs:
                        if o and o not in seen:
                            seen.add(o)
                            todo.append(o)
                if name in out:
                    break
    return out


def negated_inputs(graph: ModelGraph) -> dict[str, str]:
    """Bool inputs where True means "masked out" ({name: why}): a padding mask the model negates before using it
    (PyTorch's key_padding_mask; arabic-name-romanizer's encoder: a Not) or uses to pick -1e9 (its decoder: Where(
    src_mask, -1e9, scores)). Filled all True, such a mask hides every position: the encoder then gives the same
    `hidden_out` for any token ids (tryout 14), the decoder's attention is uniform (tryout 67); these are filled
    all False instead."""
    specs = {s["name"] for s in input_specs(graph) if np_dtype(s["dtype"]).kind == "b"}
    if not specs:
        return {}
    return _negations(specs, ((d["op_type"], d["inputs"], d["outputs"], d.get("attrs"))
                              for _, d in graph.g.nodes(data=True)))


def table_negated_inputs(table) -> dict[str, str]:
    """negated_inputs over a viewer's GraphTable (the Inputs dock says which rule fills the input)."""
    specs = set()
    for name in table.inputs:
        t = table.tensor_index(name)
        if t is not None and not table.is_init[t] and str(table.dtypes[t] or "").startswith("bool"):
            specs.add(name)
    if not specs:
        return {}
    names = table.tensor_names

    def nodes():
        for i in range(table.node_count):
            op = table.op_types[i]
            yield (op, [names[t] if t >= 0 else "" for t in table.node_inputs(i)],
                   [names[t] for t in table.node_outputs(i) if t >= 0], table.attrs(i) if op == "Constant" else None)
    return _negations(specs, nodes())


def _table_rows(graph: ModelGraph, tensor: str) -> int | None:
    t = graph.tensors.get(tensor)
    if t is not None and t.shape and isinstance(t.shape[0], int) and t.shape[0] > 0:
        return int(t.shape[0])
    producer = graph.producer_of(tensor)
    if producer is not None:  # an MNN Const op carries its dims as an attribute
        dims = graph.g.nodes[producer].get("attrs", {}).get("dims")
        if dims and isinstance(dims[0], int) and dims[0] > 0:
            return int(dims[0])
    return None


def index_bounds(graph: ModelGraph) -> dict[str, int]:
    """{integer input: rows of the smallest embedding table it indexes}, found by walking forward from
    each input (through a few ops, since MNN rewrites indices before its Gather) to a Gather's index input."""
    consumers: dict[str, list[tuple[str, int]]] = {}
    for nid, data in graph.g.nodes(data=True):
        for pos, t in enumerate(data["inputs"]):
            consumers.setdefault(t, []).append((nid, pos))
    bounds: dict[str, int] = {}
    for spec in input_specs(graph):
        if not spec["dtype"].startswith(("int", "uint")):
            continue
        frontier, seen = [spec["name"]], {spec["name"]}
        for _ in range(_INDEX_PASSTHROUGH_DEPTH):
            nxt = []
            for tensor in frontier:
                for nid, pos in consumers.get(tensor, []):
                    data = graph.g.nodes[nid]
                    role = _id_role(data["op_type"], pos)
                    if role == "stop":
                        continue
                    if role == "index":
                        rows = _table_rows(graph, data["inputs"][0]) if data["inputs"] else None
                        if rows:
                            bounds[spec["name"]] = min(rows, bounds.get(spec["name"], rows))
                        continue
                    # anything else passes the values on, a Gather of the ids themselves too (the romanizer's
                    # decoder picks its last token with one before the embedding: the ids went unbounded, a
                    # tester's [500, 1000) ran on MNN reading past a table of 160 rows without a word)
                    for out in data["outputs"]:
                        if out and out not in seen:
                            seen.add(out)
                            nxt.append(out)
            frontier = nxt
    return bounds


def table_index_bounds(table) -> dict[str, int]:
    """index_bounds over a viewer's GraphTable (model/table.py) instead of a ModelGraph: the same walk, in
    numpy over the table's arrays, so the GUI can bound integer inputs without parsing the model again."""
    n = len(table.ids)
    in_ptr, in_idx = np.asarray(table.in_ptr), np.asarray(table.in_idx)
    slot_node = np.repeat(np.arange(n, dtype=np.int64), np.diff(in_ptr))
    slot_pos = np.arange(len(in_idx), dtype=np.int64) - in_ptr[slot_node] if n else np.zeros(0, np.int64)

    def rows(t: int) -> int | None:
        shape = table.shapes[t]
        if shape and isinstance(shape[0], int) and shape[0] > 0:
            return int(shape[0])
        p = int(table.producer[t])
        if p >= 0:  # an MNN Const op carries its dims as an attribute
            dims = table.attrs(p).get("dims")
            if dims and isinstance(dims[0], int) and dims[0] > 0:
                return int(dims[0])
        return None

    bounds: dict[str, int] = {}
    for name in table.inputs:
        t0 = table.tensor_index(name)
        if t0 is None or table.is_init[t0] or not str(table.dtypes[t0] or "").startswith(("int", "uint")):
            continue
        frontier, seen = [t0], {t0}
        for _ in range(_INDEX_PASSTHROUGH_DEPTH):
            nxt = []
            for t in frontier:
                for slot in np.nonzero(in_idx == t)[0]:
                    node, pos = int(slot_node[slot]), int(slot_pos[slot])
                    role = _id_role(table.op_types[node], pos)
                    if role == "stop":
                        continue
                    if role == "index":
                        first = int(in_idx[in_ptr[node]]) if in_ptr[node + 1] > in_ptr[node] else -1
                        r = rows(first) if first >= 0 else None
                        if r:
                            bounds[name] = min(r, bounds.get(name, r))
                        continue  # a Gather of the ids themselves passes them on (index_bounds)
                    for out in table.node_outputs(node):
                        if out >= 0 and out not in seen:
                            seen.add(out)
                            nxt.append(out)
            frontier = nxt
    return bounds


def random_range(spec: dict, bound: int | None) -> tuple[float, float] | None:
    """The [low, high) random values of one input are drawn from by default, or None for inputs filled by rule
    (masks all ones, position ids 0..n-1, token type ids zeros, bools True): fill_rule's, so that the Inputs dock
    offers a range exactly where make_inputs draws one (it offered a float attention_mask a range that make_inputs
    filled with ones, and a 0-d position_ids a rule where it drew random ids)."""
    return _default_rule(spec, bound)[1]


def _default_rule(spec: dict, bound: int | None) -> tuple[str, tuple | None]:
    """fill_rule of an input spec without a chosen range, at the rank of its declared shape."""
    return fill_rule(spec, bound, None, len(spec["shape"]) if isinstance(spec.get("shape"), list) else 1)


RULE_WORDS = {"all False": "all False (True masks out)", "ones": "all ones", "positions": "0 \u2026 n\u22121",
              "zeros": "zeros", "all True": "all True"}  # fill_rule's rules without a range, in a few words


def rule_words(spec: dict, bound: int | None) -> str | None:
    """What an input without a random range is filled with, in a few words (the Inputs dock's row); None for one
    drawn at random."""
    rule, span = _default_rule(spec, bound)
    if span is not None:
        return None
    return "all True" if rule == "ones" and np_dtype(spec["dtype"]).kind == "b" else RULE_WORDS[rule]


def check_range(spec: dict, low, high, bound: int | None) -> tuple[float, float]:
    """A user's [low, high) for one input's random values: ints stay integers, ids that index an embedding
    stay in [0, rows); UsageError says what is wrong."""
    dtype = np_dtype(spec["dtype"])
    name = spec["name"]
    if dtype.kind == "b":
        raise UsageError(f"input '{name}' is bool: it has no value range")
    if dtype.kind in "iu":
        if float(low) != int(low) or float(high) != int(high):
            raise UsageError(f"input '{name}' is {spec['dtype']}: its range needs whole numbers")
        low, high = int(low), int(high)
        if bound and (low < 0 or high > bound):
            raise UsageError(f"input '{name}' indexes a table of {bound} rows: ids must lie in [0, {bound})")
        if dtype.kind == "u" and low < 0:
            raise UsageError(f"input '{name}' is {spec['dtype']}: its range cannot be negative")
    else:
        low, high = float(low), float(high)
    if not low < high:
        raise UsageError(f"input '{name}': the range needs low < high (got {low} .. {high})")
    return low, high


# ----- shapes --------------------------------------------------------------------------------------
def _is_batch_name(dim) -> bool:
    return isinstance(dim, str) and dim.strip().lower() in _BATCH_NAMES


def _default_dim(shape: list, axis: int, dim) -> int:
    """The documented default for a free dimension (see the module docstring)."""
    if _is_batch_name(dim):
        return DEFAULT_BATCH
    name = dim.lower() if isinstance(dim, str) else ""
    sequence_like = any(w in name for w in SEQUENCE_WORDS)
    # The first axis of a multi-axis input is a batch, whatever an exporter called it
    # ("DynamicDimension.0", "unk__12", "N"), unless its name says sequence.
    if axis == 0 and (len(shape) >= 2 or not name) and not sequence_like:
        return DEFAULT_BATCH
    # Image-like inputs ([N, C, H, W] with a small fixed channel count): spatial sizes a CNN can downsample. Not a
    # KV cache's [batch, heads, past, head_dim] with 2 heads: moe_llm_kv's `past` took 64, seq 8 beside it made 72
    # positions of a model that holds 64, and ONNX Runtime failed on the dock's own defaults (tryout 66).
    if len(shape) == 4 and axis >= 2 and isinstance(shape[1], int) and 0 < shape[1] <= 4 and not sequence_like:
        return DEFAULT_SPATIAL
    return DEFAULT_SEQUENCE


def _bind(shape: list | None, concrete: list[int], bindings: dict) -> None:
    if shape is None or len(shape) != len(concrete):
        return
    for axis, (dim, value) in enumerate(zip(shape, concrete)):
        if is_free(dim):
            bindings.setdefault(dim_key(dim, axis), value)


def _named(dim) -> bool:
    """A dimension with a name of its own: not a number, not unnamed (MNN's -1), not "?" (an exporter's word for
    unknown, on every free axis alike: PaddleOCR's cls)."""
    return isinstance(dim, str) and bool(dim) and dim.strip() not in ("?", "-1")


def dim_values(specs: list[dict], sizes: dict[str, list[int]]) -> dict[str, int]:
    """{dimension name: size} of the inputs' named free dimensions at `sizes` (input -> concrete dims, as
    free_input_sizes gives them): what FLOPs and shapes are counted at. "?" (an exporter's word for unknown) and
    unnamed dims are left out."""
    out: dict[str, int] = {}
    for spec in specs:
        dims, shape = sizes.get(spec["name"]), spec.get("shape")
        if not dims or shape is None or len(dims) != len(shape):
            continue
        for d, n in zip(shape, dims):
            if _named(d):
                out.setdefault(d, int(n))
    return out


def named_dim_conflicts(specs: list[dict], given: dict[str, tuple[list[int], str]]) -> dict[str, str]:
    """{input: why} where inputs given by their data (`given`: name -> (dims, where they come from: a file, the
    row's sizes)) disagree on a named dimension: `src` from one file with src_len 8 beside `src_mask` from another
    with 15 (tryout 14 ran them; the .mnn's shapes then followed 8). Unnamed dims (MNN's -1) are not compared."""
    seen: dict[str, tuple[int, str, str]] = {}
    out: dict[str, str] = {}
    for spec in specs:
        if spec["name"] not in given or spec.get("shape") is None:
            continue
        dims, source = given[spec["name"]]
        if len(dims) != len(spec["shape"]):
            continue
        for d, n in zip(spec["shape"], dims):
            if not _named(d):
                continue
            if d in seen and seen[d][0] != int(n) and seen[d][1] != spec["name"]:
                size, other, where = seen[d]
                out[spec["name"]] = (f"{d} is {int(n)} in {source} but {size} in {where} ('{other}'): inputs that "
                                     f"share a named dimension must agree")
            else:
                seen.setdefault(d, (int(n), spec["name"], source))
    return out


def resolve_shape(spec: dict, bindings: dict) -> list[int]:
    """Concrete dims for one input: bound symbols first, then the documented defaults."""
    shape = spec["shape"]
    if shape is None:
        raise ModelError(f"input '{spec['name']}' has no known rank: give its shape with --shape {spec['name']}=DIMS")
    out = []
    for axis, dim in enumerate(shape):
        if not is_free(dim):
            out.append(int(dim))
            continue
        key = dim_key(dim, axis)
        if key not in bindings:
            bindings[key] = _default_dim(shape, axis, dim)
        out.append(bindings[key])
    return out


def free_input_sizes(specs: list[dict], given: dict[str, list[int]] | None = None) -> tuple[dict, list[str]]:
    """Concrete sizes for every input that has a free dim or a size in `given` (e.g. --shape): the given
    ones as asked (they also bind the same named dims of other inputs), the rest by the defaults above.
    Returns (sizes, problems): a size for a name that is not an input, or of the wrong rank (that input
    then gets the defaults), is a problem to report, not an error. Inputs of unknown rank are left out.
    What MNN needs to compute shapes behind dynamic inputs."""
    names = [spec["name"] for spec in specs]
    problems = [f"a size is given for '{n}', which is not an input of the model (inputs: {', '.join(names)})"
                for n in (given or {}) if n not in names]
    usable = {}
    for spec in specs:
        dims = (given or {}).get(spec["name"])
        if dims is None:
            continue
        shape = spec.get("shape")
        if shape is not None and len(shape) != len(dims):
            problems.append(f"input '{spec['name']}' has {len(shape)} dims {shape}, the size given has "
                            f"{len(dims)}: the defaults are used")
            continue
        usable[spec["name"]] = [int(d) for d in dims]
    bindings: dict = {}
    for spec in specs:
        if spec["name"] in usable:
            _bind(spec.get("shape"), usable[spec["name"]], bindings)
    sizes = {}
    for spec in specs:
        if spec["name"] in usable:
            sizes[spec["name"]] = usable[spec["name"]]
        elif spec.get("shape") is not None and any(is_free(d) for d in spec["shape"]):
            sizes[spec["name"]] = resolve_shape(spec, bindings)
    return sizes, problems


def _check_shape(spec: dict, arr: np.ndarray, source: str) -> None:
    shape = spec["shape"]
    if shape is None:
        return
    if len(shape) != arr.ndim or any(not is_free(d) and d != n for d, n in zip(shape, arr.shape)):
        raise ModelError(f"input '{spec['name']}': {source} has shape {list(arr.shape)}, "
                         f"the model expects {_fmt_shape(shape)}")


def _fmt_shape(shape) -> str:
    return "[" + ", ".join(str(d) if isinstance(d, int) and d > 0 else (d if isinstance(d, str) and d else "?")
                           for d in shape) + "]"


# ----- sources -------------------------------------------------------------------------------------
def fill_rule(spec: dict, bound: int | None, value_range: tuple | None = None,
              rank: int = 1) -> tuple[str, tuple | None]:
    """How a generated input is filled, by the rules of the module docstring in their order: (rule, [low, high) of
    its random values or None). Rules: "chosen" (a range the user chose, check_range), "all False" (True masks out),
    "ones" (named like a mask), "positions" (0..n-1 on the last axis; an input of rank 1 or more), "zeros" (token type
    ids), "all True" (other bools), "ids" (integers below the rows of the table they index, else SMALL_INT),
    "uniform" (floats). make_inputs fills by it and compare.service says it in words, so the two never differ."""
    kind = np_dtype(spec["dtype"]).kind
    if value_range is not None:
        return "chosen", tuple(value_range)
    lname = spec["name"].lower()
    if spec.get("negated") and kind == "b":
        return "all False", None
    if "attention_mask" in lname or lname.endswith("_mask") and kind in "iub":
        return "ones", None
    if "position_ids" in lname and kind in "iu" and rank:
        return "positions", None
    if "token_type_ids" in lname and kind in "iu":
        return "zeros", None
    if kind == "b":
        return "all True", None
    if kind in "iu":
        return "ids", (0, bound if bound else SMALL_INT)
    if kind == "f":
        return "uniform", FLOAT_RANGE
    raise ModelError(f"input '{spec['name']}' has dtype {spec['dtype']}: give it with --input {spec['name']}=FILE")


def _random(spec: dict, shape: list[int], rng: np.random.Generator, bound: int | None,
            value_range: tuple | None = None) -> np.ndarray:
    dtype = np_dtype(spec["dtype"])
    rule, span = fill_rule(spec, bound, value_range, len(shape))
    if span is not None:
        low, high = span
        if dtype.kind in "iu":
            return rng.integers(int(low), int(high), size=shape).astype(dtype)
        return rng.uniform(low, high, size=shape).astype(dtype)
    if rule in ("all False", "zeros"):
        return np.zeros(shape, dtype)
    if rule == "positions":
        return np.broadcast_to(np.arange(shape[-1], dtype=dtype), shape).copy()
    return np.ones(shape, dtype)  # "ones", "all True"


# ----- the one entry point ---------------------------------------------------------------------------
def make_inputs(graph: ModelGraph, *, seed: int = 0, shapes: dict[str, list[int]] | None = None,
                files: dict[str, str] | None = None, text: str | None = None, tokenizer: str | None = None,
                image: dict | None = None, ranges: dict[str, list] | None = None) -> dict[str, np.ndarray]:
    """Every runtime input of `graph` as a numpy array (see the module docstring for the rules).

    `ranges`: {input name: [low, high)} for random inputs, instead of the defaults (check_range's rules).

    `files`: {input name: .npy/.npz/image path}, with "*" for an .npz whose arrays are named by input.
    `image`: {"path", "input" (optional: the first rank-4 float input), "mean", "std", "bgr"}.
    Raises UsageError for options that do not fit the model, ModelError for data that does not.
    """
    specs = input_specs(graph)
    by_name = {s["name"]: s for s in specs}
    shapes = dict(shapes or {})
    files = dict(files or {})
    for name in list(shapes) + [n for n in files if n != "*"]:
        if name not in by_name:
            raise UsageError(f"the model has no input '{name}' (inputs: {', '.join(by_name) or 'none'})")
    if text is not None and not tokenizer:
        raise UsageError("--text needs --tokenizer FILE (a tokenizer.json)")

    bindings: dict = {}
    for name, dims in shapes.items():
        spec = by_name[name]
        if spec["shape"] is not None and len(spec["shape"]) != len(dims):
            raise UsageError(f"--shape {name}: the model's input has rank {len(spec['shape'])} "
                               f"{_fmt_shape(spec['shape'])}, got {len(dims)} dims")
        if spec["shape"] is not None:
            for d, n in zip(spec["shape"], dims):
                if not is_free(d) and d != n:
                    raise UsageError(f"--shape {name}: dims {dims} contradict the fixed shape "
                                      f"{_fmt_shape(spec['shape'])}")
        _bind(spec["shape"], dims, bindings)
    # two --shape values that disagree on a dim both inputs name (src_len 8 in src, 5 in src_mask): the first one
    # bound it and the other input silently took it (tryout 17)
    clash = named_dim_conflicts(specs, {n: (list(d), f"--shape {n}") for n, d in shapes.items()})
    if clash:
        name, why = next(iter(clash.items()))
        raise UsageError(f"input '{name}': {why}")

    out: dict[str, np.ndarray] = {}
    # Files first: their shapes bind symbols for the generated inputs.
    star = files.pop("*", None)
    if star is not None:
        with np.load(star, allow_pickle=False) as z:
            present = set(z.keys())
        for name in present & set(by_name):
            files.setdefault(name, star)
    image = dict(image or {})
    if image.get("path"):
        target = image.get("input") or next((s["name"] for s in specs if s["shape"] and len(s["shape"]) == 4
                                             and s["name"] not in files), None)
        if target is None or target not in by_name:
            raise UsageError(f"--image: the model has no image-like input{f' named {target}' if target else ''}")
        files[target] = image["path"]
    for name, path in files.items():
        spec = by_name[name]
        if Path(path).suffix.lower() in IMAGE_SUFFIXES:
            if name in shapes:
                _bind(spec["shape"], shapes[name], bindings)
            arr = load_image(spec, path, bindings, mean=image.get("mean"), std=image.get("std"),
                             bgr=bool(image.get("bgr")))
        else:
            arr = load_array(spec, path)
        _check_shape(spec, arr, path)
        if name in shapes and list(arr.shape) != shapes[name]:
            raise UsageError(f"--shape {name}={shapes[name]} contradicts {path} (shape {list(arr.shape)})")
        _bind(spec["shape"], list(arr.shape), bindings)
        out[name] = arr
    clash = named_dim_conflicts(specs, {**{n: (list(d), f"--shape {n}") for n, d in shapes.items()},
                                        **{n: (list(a.shape), files[n]) for n, a in out.items()}})
    if clash:
        name, why = next(iter(clash.items()))
        raise ModelError(f"input '{name}': {why}")

    tokens = encode_text(text, tokenizer) if text is not None else None
    if tokens is not None:
        roles = {s["name"]: text_role(s) for s in specs if s["name"] not in out}
        if "input_ids" not in roles.values():
            bounds = index_bounds(graph)
            cand = next((n for n in roles if n in bounds), None)
            if cand is None:
                raise UsageError("--text: the model has no token-id input (named like input_ids, "
                                   "or an integer input feeding an embedding)")
            roles[cand] = "input_ids"
        ids_name = next(n for n, r in roles.items() if r == "input_ids")
        ids_spec = by_name[ids_name]
        if ids_spec["shape"] and ids_name not in shapes:
            seq_axis = len(ids_spec["shape"]) - 1
            dim = ids_spec["shape"][seq_axis]
            if is_free(dim):
                bindings.setdefault(dim_key(dim, seq_axis), len(tokens["input_ids"]))
        for name, role in roles.items():
            if role is None:
                continue
            spec = by_name[name]
            shape = resolve_shape(spec, bindings)
            if not shape:
                raise ModelError(f"input '{name}' is a scalar; it cannot hold token ids")
            if role == "position_ids":
                values = list(range(shape[-1]))
            else:
                values = tokens[role]
            out[name] = text_array(spec, values, shape)
        n_ids = out[ids_name].shape[-1]
        if n_ids < len(tokens["input_ids"]):
            graph.warnings.append(f"the text has {len(tokens['input_ids'])} tokens; "
                                  f"input '{ids_name}' holds {n_ids}: truncated")

    given = [n for n in out if np_dtype(by_name[n]["dtype"]).kind in "iu" and out[n].size]
    bounds = index_bounds(graph) if given else None
    for name in given:  # ids from a file or a tokenizer must index the table they feed: MNN reads past its end
        bound, arr = bounds.get(name), out[name]
        if bound and (int(arr.min()) < -bound or int(arr.max()) >= bound):
            raise ModelError(f"input '{name}' holds ids {int(arr.min())}..{int(arr.max())}, but it indexes an "
                             f"embedding table of {bound} rows (ids must lie in [0, {bound})): MNN would read past "
                             f"the table's end without an error")

    rng = np.random.default_rng(seed)
    negated = None
    for name in ranges or {}:
        if name not in by_name:
            raise UsageError(f"a value range is given for '{name}', which is not an input "
                             f"(inputs: {', '.join(by_name) or 'none'})")
    for spec in specs:
        if spec["name"] in out:
            continue
        if bounds is None:
            bounds = index_bounds(graph)
        bound = bounds.get(spec["name"])
        chosen = (ranges or {}).get(spec["name"])
        value_range = check_range(spec, chosen[0], chosen[1], bound) if chosen is not None else None
        shape = resolve_shape(spec, bindings)
        _check_size(graph, spec, shape)
        if negated is None:
            negated = negated_inputs(graph)
        out[spec["name"]] = _random(dict(spec, negated=negated.get(spec["name"])), shape, rng, bound, value_range)
    return {s["name"]: out[s["name"]] for s in specs}


def _memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 34


def _check_size(graph: ModelGraph, spec: dict, shape: list[int]) -> None:
    """Refuse an input a model declares too large to make (a hostile 2^40-element dim) before numpy tries: a
    MemoryError, or on Linux's overcommit the OOM killer, would answer instead of a reason."""
    elements = 1
    for d in shape:
        elements *= max(int(d), 0)
    nbytes = elements * (8 + np_dtype(spec.get("dtype") or "float32").itemsize)  # numpy draws float64/int64 first
    limit = _memory_bytes() // 2
    if nbytes > limit:
        raise ModelError(f"{graph.path}: input '{spec['name']}' of shape {_fmt_shape(shape)} would take "
                         f"{nbytes / 2**30:,.0f} GiB, over half this machine's memory: give smaller sizes with "
                         f"--shape {spec['name']}=DIMS")


# ----- files -----------------------------------------------------------------------------------------
def save_inputs(inputs: dict[str, np.ndarray], path) -> str:
    """Write inputs as one .npz (no pickles); returns the path."""
    path = str(path)
    if not path.endswith(".npz"):
        path += ".npz"
    for name, arr in inputs.items():
        if np.asarray(arr).dtype.kind == "O":
            raise ModelError(f"input '{name}' holds Python objects; only numeric arrays can be saved")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    # Written as np.savez does (one NAME.npy per array in a zip), but not through np.savez: NumPy releases
    # before its allow_pickle keyword (pyproject allows numpy>=1.24) save that keyword as one more array,
    # which becomes a model input, and an input named "file" or "allow_pickle" collides with its parameters.
    with zipfile.ZipFile(path, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, arr in inputs.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.ascontiguousarray(arr), allow_pickle=False)
    return path


def load_inputs(path) -> dict[str, np.ndarray]:
    """The arrays of an .npz written by save_inputs, in their saved order."""
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.keys()}


RANDOM_INPUTS = "random inputs"   # how inputs_from says the generated defaults (given_inputs leaves them unsaid)


def inputs_from(spec: dict | None) -> str:
    """Where a run's inputs came from, in brief, from its make_inputs keywords: "input_ids from ids.npy", "text
    'the dog ran home'", "image cat.png" (the inputs they do not cover filled as make_inputs fills them), or
    "random inputs, seed 0". A profile and a comparison named only the inputs' sizes: a new user who gave ids.npy
    found it named only in the Runs dock's settings tooltip (helper 105's try)."""
    spec = spec or {}
    parts = []
    for name, path in (spec.get("files") or {}).items():
        base = os.path.basename(str(path))
        parts.append(base if name == "*" else f"{name} from {base}")
    image = spec.get("image") or {}
    if image.get("path"):
        parts.append(f"image {os.path.basename(str(image['path']))}")
    text = spec.get("text")
    if text is not None:
        parts.append(f"text {(text if len(text) <= 40 else text[:39] + chr(0x2026))!r}")
    return ", ".join(parts) or f"{RANDOM_INPUTS}, seed {int(spec.get('seed') or 0)}"


def given_inputs(result: dict) -> str:
    """A run result's inputs_from where the user gave them (a file, a text, an image), "" for the random defaults:
    what a dock's summary line names."""
    src = result.get("inputs_from") or ""
    return "" if src.startswith(RANDOM_INPUTS) else src


def describe_inputs(inputs: dict[str, np.ndarray]) -> list[dict]:
    """[{name, shape, dtype}] for results and the run store."""
    return [{"name": k, "shape": list(v.shape), "dtype": str(v.dtype)} for k, v in inputs.items()]
