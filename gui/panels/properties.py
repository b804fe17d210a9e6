"""The Properties dock: what the selected op or scope is, with links to its neighbours.

Weights show shape, dtype and size at once; their statistics (ONNX initializers and .mnn op weights
alike) are computed on request in a child process (gui.tasks + the load process's --stats), never by
reading the model in this process. Quantized .mnn weights say so instead: their values are codes.
"""
from __future__ import annotations

import html
import json
import re
from collections import Counter

import numpy as np
from PySide6.QtCore import QMimeData, Qt, QUrl, Signal
from PySide6.QtGui import QFont, QFontMetrics, QGuiApplication, QPainter
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QPushButton, QSizePolicy, QTabWidget, QTextBrowser, QVBoxLayout,
                               QWidget)

from mnnscope.inspector.formats.loadproc import load_stats
from mnnscope.inspector.model.flops import free_dims
from mnnscope.inspector.model.summary import model_summary

from mnnscope.gui.canvas import fmt_shape
from mnnscope.gui.labels import node_title, node_titles
from mnnscope.gui.panels.inputs import dim_role
from mnnscope.inspector.model.dimexpr import concrete, is_symbolic
from mnnscope.gui.tasks import TaskSlot
from mnnscope.inspector.history import fmt_bytes as decimal_bytes


def fmt_bytes(n) -> str:
    """A size in decimal units, as every other view writes sizes (inspector.history.fmt_bytes): this one divided by
    1024 and wrote "kB", so the same weights read 105.1 kB here and 107.6 kB in the Convert dock."""
    return "?" if n is None or n < 0 else decimal_bytes(n)


ZWSP = "\u200b"


def name_html(name: str) -> str:
    """A tensor, op or scope name escaped for the panel, with a line break allowed after each '.', '_' and ':'
    (a narrow dock wrapped "model.embed_tokens.weight" mid-word, as "...we" / "ight": Qt breaks only at
    spaces, '/' and '-' in them); copying and text() take the breaks out again."""
    return re.sub(r"([._:])", "\\1" + ZWSP, html.escape(name))


# A dock narrower than this (its text area, px) shows each name/value row stacked, the value under its name: side by
# side at 1024x700 the dock is ~200 px, and the two columns wrapped a file name as "moe_llm." / "onnx" and the FLOPs
# note one word per line (tryout 2026-12-04)
NARROW_PX = 260
_KV_ROW = re.compile(r"<tr><td class='k'>(.*?)</td><td>(.*?)</td></tr>", re.S)


def stacked(text: str) -> str:
    """The panel's HTML with each name/value row as one cell, the name (grey) above its value."""
    return _KV_ROW.sub(r"<tr><td><span style='color:gray'>\1</span><br>\2</td></tr>", text)


class _Title(QLabel):
    """The panel's title: where the dock is too narrow for it, cut with an ellipsis ("HardSigmo…"), not clipped
    mid-letter ("HardSigmoi" side by side at 1024x700: tryout 2026-12-04); whole in its tooltip."""

    def shown_text(self) -> str | None:
        """The plain text drawn in place of the rich title when that does not fit; None when it fits."""
        room = self.contentsRect().width()
        if self.sizeHint().width() <= self.width() or room <= 0:
            return None
        plain = html.unescape(re.sub(r"<[^>]+>", "", self.text()))
        return QFontMetrics(self._bold()).elidedText(plain, Qt.ElideRight, room)

    def _bold(self) -> QFont:
        font = QFont(self.font())
        font.setBold(True)
        return font

    def paintEvent(self, event) -> None:
        cut = self.shown_text()
        if cut is None:
            super().paintEvent(event)
            return
        painter = QPainter(self)
        painter.setFont(self._bold())
        painter.drawText(self.contentsRect(), Qt.AlignLeft | Qt.AlignVCenter, cut)


class _Browser(QTextBrowser):
    """The panel's text: rows of names and values side by side, stacked where the dock is narrow."""

    source_html = ""
    narrow = False

    def setHtml(self, text: str) -> None:
        self.source_html = text
        self.narrow = self.viewport().width() < NARROW_PX
        super().setHtml(stacked(text) if self.narrow else text)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if (self.viewport().width() < NARROW_PX) != self.narrow and self.source_html:
            bar = self.verticalScrollBar()
            at = bar.value()
            self.setHtml(self.source_html)
            bar.setValue(at)

    def createMimeDataFromSelection(self) -> QMimeData:
        data = QMimeData()
        data.setText(self.textCursor().selection().toPlainText().replace(ZWSP, ""))
        return data


def _attr_text(v) -> str:
    """An attribute value as JSON, its floats at float32's shortest form: both formats store float32, and LayerNorm's
    epsilon read 9.999999747378752e-06 on the ONNX side beside 1e-05 on the MNN side (tryout 19)."""
    if isinstance(v, float):
        return str(np.float32(v)) if np.isfinite(v) else json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_attr_text(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_attr_text(x)}" for k, x in v.items()) + "}"
    return json.dumps(v)


def shape_at_html(shape, sizes: dict | None, at=None) -> str:
    """A tensor's shape at the input sizes `sizes` ({dim name: size}: the Inputs dock's), as the graph's labels give
    it, with its symbolic form after it (PP-OCRv6 rec's Conv.18 read "DynamicDimension.0×192×6×(floor(floor(
    DynamicDimension.1/2 - 1/2)/2) + 1)" here beside a label of 1×192×6×16 on the graph); the shape alone where the
    sizes do not make it concrete. `at`: for an .mnn input with free (-1) dims, the sizes MNN computed the model's
    shapes at (it read "1×? · int32" beside edges of 1×8: tryout 2026-12-04)."""
    # a line may break after each \u00d7 (a narrow dock broke "ceil(DynamicDimension.1/16)" as ".../1" / "6)")
    text = html.escape(fmt_shape(shape)).replace("\u00d7", "\u00d7" + ZWSP)
    if at and shape and len(at) == len(shape) and any(isinstance(d, int) and d < 0 for d in shape):
        return f"<b>{html.escape(fmt_shape(list(at)))}</b> at the input sizes ({text})"
    got = concrete(shape, sizes) if sizes and is_symbolic(shape) else None
    if got is None:
        return text
    return f"<b>{html.escape(fmt_shape(got))}</b> at the input sizes ({text})"


def quant_text(q: dict) -> str:
    """An .mnn op's quantization (mnn_params' `quant`) in words: "8-bit weights, asymmetric, per output channel
    (32 scales)" where the raw dict read {"type": 1, "kind": "weight_quant", "bits": 8, ...} (tryout 19)."""
    kind = q.get("kind")
    if kind == "fp16":
        return "weights stored as fp16 (computed in float)"
    if kind in ("weight_quant", "weight_quant_sparse", "weight_int8") and q.get("bits"):
        asym = bool(q.get("asymmetric"))
        how = "asymmetric" if asym else "symmetric"
        per = f"{q['blocks']} blocks per output channel" if q.get("blocks") else "per output channel"
        sparse = ", sparse" if kind == "weight_quant_sparse" else ""
        n = q.get("scales")
        # asymmetric: a scale and a zero point each ("128 scales" for 64 channels read as a miscount: tryout 20)
        count = "? scales" if not isinstance(n, int) else f"{n // 2} scales and zero points" if asym else f"{n} scales"
        return f"{q['bits']}-bit weights{sparse}, {how}, {per} ({count}); dequantized to float when computed"
    if kind == "int8":
        parts = [f"full int8 ({q.get('bits', 8)}-bit)"]
        if q.get("method"):
            parts.append(f"calibration {q['method']}")
        if q.get("clamp"):
            parts.append(f"clamp {q['clamp'][0]}..{q['clamp'][1]}")
        if q.get("scales"):
            parts.append(f"{q['scales']} scales")
        if q.get("scaleIn") is not None:
            parts.append(f"input scale {q['scaleIn']}, output scale {q['scaleOut']}")
        return ", ".join(parts)
    return _attr_text(q)


# ONNX's TensorProto data types by number (the spec's enum), for attributes that name one: Cast's "to" read
# "1" (a new-user try); the GUI process does not import onnx for this
ONNX_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string",
               9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 14: "complex64",
               15: "complex128", 16: "bfloat16", 17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2",
               20: "float8e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4e2m1"}
DTYPE_ATTRS = {("Cast", "to"), ("EyeLike", "dtype"), ("RandomNormal", "dtype"), ("RandomUniform", "dtype"),
               ("RandomNormalLike", "dtype"), ("RandomUniformLike", "dtype"), ("Multinomial", "dtype"),
               ("Bernoulli", "dtype")}


def attr_html(d: dict, key: str, v) -> str:
    """An attribute's value as Properties shows it: a data type named beside its ONNX number ("1 (float32)")."""
    if d.get("format") == "onnx" and (d.get("op_type"), key) in DTYPE_ATTRS and isinstance(v, int) \
            and not isinstance(v, bool) and v in ONNX_DTYPES:
        return html.escape(f"{v} ({ONNX_DTYPES[v]})")
    return _value(v, key)


def _value(v, key: str = "") -> str:
    if key == "quant" and isinstance(v, dict):
        return html.escape(quant_text(v))
    text = _attr_text(v) if not isinstance(v, str) else v
    if len(text) > 300:
        text = text[:300] + " \u2026"
    return html.escape(text)


def _stats_text(s: dict) -> str:
    if s.get("note"):  # e.g. quantized .mnn weights: their values are codes, not numbers
        return f"<i>{html.escape(s['note'])}: statistics not computed</i>"
    if s.get("error"):
        return f"<i>statistics unavailable: {html.escape(s['error'])}</i>"
    if s.get("values") is not None:  # a few numbers (a Reshape's target shape): the numbers themselves
        return "values [" + ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in s["values"]) + "]"
    if "min" not in s:
        return f"{s.get('elements', 0):,} elements"
    parts = [f"min {s['min']:.4g}", f"max {s['max']:.4g}", f"mean {s['mean']:.4g}", f"std {s['std']:.4g}",
             f"zeros {s['zeros']:,}"]
    if s.get("nan") or s.get("inf"):
        parts.append(f"<b>NaN {s['nan']:,} Inf {s['inf']:,}</b>")
    return ", ".join(parts)


def describe(table, tree, item: int, stats: dict | None = None) -> dict:
    """Everything the panel shows for an item, as data (the clipboard gets it as JSON)."""
    stats = stats or {}
    n = table.node_count
    if item >= n and tree.is_io(item - n):
        return _describe_io(table, tree, item - n)
    if item >= n:
        s = item - n
        ops = np.flatnonzero(np.isin(np.arange(n), _ops_under(tree, s)))
        hist: dict[str, int] = {}
        for i in ops.tolist():
            hist[table.op_types[i]] = hist.get(table.op_types[i], 0) + 1
        return {"kind": "group" if tree.kind[s] else "scope", "path": tree.display_path(s),
                "name_path": tree.path[s], "ops": int(tree.count[s]),
                "children": int((tree.node_parent == s).sum() + (tree.parent == s).sum()),
                "op_types": dict(sorted(hist.items(), key=lambda kv: -kv[1]))}
    attrs = table.attrs(item)
    mnn_weights = attrs.pop("weights", None) if table.format == "mnn" else None
    inputs, weights = [], []
    op_type, n_in = table.op_types[item], len(table.node_inputs(item))
    for k, t in enumerate(table.node_inputs(item)):
        role = _op_io_role(op_type, table.format, k, n_in, True)
        if t < 0:
            inputs.append({"name": "", "shape": None, "dtype": None, "from": "(omitted)", "role": role})
            continue
        info = table.tensor(t)
        if role:
            info["role"] = role
        p = int(table.producer[t])
        if info["is_initializer"]:
            info["stats"] = stats.get(info["name"])
            weights.append(info)
            continue
        if p >= 0 and tree.hidden[p]:  # an .mnn Const: a weight of this op
            info["from_const"] = table.ids[p]
            const_w = table.attrs(p).get("weights") or []
            info["bytes"] = sum(w.get("bytes") or 0 for w in const_w) or None
            stored = const_w[0].get("dtype") if len(const_w) == 1 else None
            if stored and not info.get("dtype"):  # shapes not computed yet: what the file holds
                info["dtype"] = stored
            elif stored and stored != info["dtype"]:
                # an fp16 .mnn keeps float32 constants as halves: '1x3x1x1 float32 6 B' read as a wrong size
                info["stored_dtype"] = stored
            if len(const_w) == 1:
                info["key"] = f"{table.ids[p]}:{const_w[0].get('name')}"
                info["stats"] = stats.get(info["key"]) or _known_stats(const_w[0])
            weights.append(info)
            continue
        info["from"] = p
        inputs.append(info)
    outputs = []
    for k, t in enumerate(table.node_outputs(item)):
        if t < 0:
            continue
        info = table.tensor(t)
        role = _op_io_role(op_type, table.format, k, n_in, False)
        if role:
            info["role"] = role
        info["consumers"] = int(np.count_nonzero(table.edge_tensor == t))
        outputs.append(info)
    if mnn_weights:
        for w in mnn_weights:
            key = f"{table.ids[item]}:{w.get('name')}"  # as the load process's --stats names .mnn weights
            weights.append({"name": w.get("name"), "shape": w.get("shape"), "dtype": w.get("dtype"),
                            "bytes": w.get("bytes"), "is_initializer": True, "inline": True, "key": key,
                            "stats": stats.get(key) or _known_stats(w)})
    return {"kind": "op", "index": item, "id": table.ids[item], "name": table.names[item],
            "op_type": table.op_types[item], "format": table.format,
            "scope": tree.display_path(int(tree.node_parent[item])) if tree.node_parent[item] else "/",
            "scope_inferred": bool(tree.inferred[item]), "attributes": attrs, "inputs": inputs,
            "weights": weights, "outputs": outputs, "subgraphs": list(table.subgraphs.get(item, {}))}


def _body_role(table, name: str, is_input: bool) -> str | None:
    """What an input or output of a Loop's body, or an output of an If's branch, is (ONNX's Loop: inputs are the
    iteration number, the condition, then the loop-carried values; outputs the next condition, the carried values,
    then the scan outputs). A new-user try clicked iter, cond_in and acc_in and read only "Graph input"; numbers
    are 1-based, as the Loop op's own Properties number its inputs and outputs."""
    body = table.info.get("body_of") or {}
    names = table.inputs if is_input else table.outputs
    if name not in names:
        return None
    k = names.index(name)
    outer_in, outer_out = body.get("inputs") or [], body.get("outputs") or []

    def called(names_, i):  # "the Loop's input 3 (/If_output_0)"
        return f" ({names_[i]})" if 0 <= i < len(names_) and names_[i] else ""
    if body.get("op_type") == "If" and not is_input:
        when = "true" if str(body.get("attr", "")).startswith("then") else "false"
        return f"becomes the If's output {k + 1}{called(outer_out, k)} when its condition is {when}"
    if body.get("op_type") != "Loop":
        return None
    carried = max(0, len(table.inputs) - 2)
    if is_input:
        if k == 0:
            return "body input 1: the iteration number (0 on the first iteration)"
        if k == 1:
            return (f"body input 2: the condition the iteration starts with: the Loop's input 2{called(outer_in, 1)} "
                    f"on the first iteration, then body output 1 of the iteration before")
        return (f"body input {k + 1}: loop-carried value {k - 1} of {carried}: the Loop's input {k + 1}"
                f"{called(outer_in, k)} on the first iteration, then body output {k} of the iteration before")
    if k == 0:
        return "body output 1: the condition for the next iteration (false ends the loop)"
    if k <= carried:
        return (f"body output {k + 1}: loop-carried value {k} of {carried}: the next iteration's body input {k + 2}, "
                f"the Loop's output {k}{called(outer_out, k - 1)} after the last")
    return (f"body output {k + 1}: a scan output: its value of every iteration, stacked into the Loop's output {k}"
            f"{called(outer_out, k - 1)}")


def _with_roles(d: dict, table, hidden=None) -> dict:
    """A summary as the window shows it: a body's inputs and outputs with what each is (_body_role), as a selected
    one says; an .mnn's op types counted as the canvas titles them (a new-user try read "BinaryOp 2" in the list over
    a graph that draws ADD and SUB)."""
    if table.format == "mnn":
        titles = node_titles(table)
        counts = Counter(titles[i] for i in range(table.node_count) if hidden is None or not hidden[i])
        d["op_types"] = dict(counts.most_common())
    for key, is_input in (("inputs", True), ("outputs", False)):
        for t in d.get(key) or []:
            role = _body_role(table, t["name"], is_input)
            if role:
                t["role"] = role
    return d


def _op_io_role(op_type: str, fmt: str, k: int, n_inputs: int, is_input: bool) -> str | None:
    """The role of a Loop op's k-th input or output (0-based), numbered as its body's roles refer to them."""
    if fmt != "onnx" or op_type != "Loop":
        return None
    carried = max(0, n_inputs - 2)
    if is_input:
        return ("input 1: the trip count (most iterations; empty: no limit)" if k == 0 else
                "input 2: the starting condition" if k == 1 else
                f"input {k + 1}: the first value of loop-carried value {k - 1}")
    return (f"output {k + 1}: loop-carried value {k + 1} after the last iteration" if k < carried else
            f"output {k + 1}: a scan output (every iteration's value, stacked)")


def _describe_io(table, tree, s: int) -> dict:
    """A graph input (its readers) or output (its producer)."""
    k = tree.io_index(s)
    ti = int(tree.io_tensor[k])
    info = table.tensor(ti)
    d = {"kind": "input" if tree.io_input[k] else "output", "name": info["name"], "shape": info["shape"],
         "dtype": info["dtype"], "outer": bool(tree.io_outer[k])}
    role = _body_role(table, info["name"], bool(tree.io_input[k]))
    if role:
        d["role"] = role
    if tree.io_input[k]:
        slot_node = np.repeat(np.arange(table.node_count), np.diff(table.in_ptr))
        d["consumers"] = [int(i) for i in np.unique(slot_node[table.in_idx == ti]) if not tree.hidden[i]]
    else:
        p = int(table.producer[ti])
        d["producer"] = p if p >= 0 and not tree.io_op[p] else None
    return d


def describe_many(table, items) -> dict:
    """A multi-selection (Select all matches): how many of each op type, and the ops themselves."""
    ops = [int(i) for i in items if 0 <= int(i) < table.node_count]
    hist: dict[str, int] = {}
    for i in ops:
        hist[table.op_types[i]] = hist.get(table.op_types[i], 0) + 1
    return {"kind": "selection", "count": len(ops), "op_types": dict(sorted(hist.items(), key=lambda kv: -kv[1])),
            "ops": [{"index": i, "name": table.names[i] or table.ids[i], "op_type": table.op_types[i]} for i in ops]}


MANY_LISTED = 200  # a multi-selection lists this many ops by name


def fmt_count(n) -> str:
    if n is None:
        return "?"
    for unit, div in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n:,}"


def _body_title(view) -> str | None:
    """The tab title of an If/Loop body's view ("If_0 \u25b8 then_branch"); None for a model's main graph."""
    w = view.parentWidget()
    while w is not None and not isinstance(w, QTabWidget):
        w = w.parentWidget()
    i = w.indexOf(view) if w is not None else -1
    return w.tabText(i) if i > 0 else None


def summary_html(d: dict, graph: str | None = None, shapes_at: dict | None = None) -> str:
    """The model summary (nothing selected) as the panel's HTML; `graph`: the body shown, if not the main graph;
    `shapes_at`: {input: sizes} an .mnn's shapes were computed at."""
    e = html.escape
    css = ("<style>td{padding:2px 6px;vertical-align:top} td.k{color:gray;white-space:nowrap} "
           "span.d{color:gray} h4{margin:10px 0 3px 0} table{border-collapse:collapse}</style>")
    rows = [("file", name_html(d["path"].rsplit("/", 1)[-1])), ("format", e(d["format"].upper()))]
    if graph:
        rows.insert(0, ("subgraph", e(graph)))
    if d.get("producer"):
        rows.append(("producer", e(str(d["producer"]))))
    if d.get("opset"):
        rows.append(("opset", e(", ".join(f"{k} {v}" for k, v in d["opset"].items()))))
    if d.get("version") and d["format"] != "onnx":
        rows.append(("version", e(str(d["version"]))))
    rows.append(("operators", f"{d['ops']:,}"))
    weights = f" ({fmt_bytes(d['weight_bytes'])})" if d.get("weight_bytes") else ""
    rows.append(("parameters", fmt_count(d["params"]) + weights))
    free = free_dims([t["shape"] for t in d["inputs"]])
    sizes = d.get("sizes") or {}
    # the dock's own words for made-up names ("DynamicDimension.1 (height)=64": the dock sizes "height"), and a link
    # that opens it (a new-user try looked for "the Inputs dock" the summary named: it was closed)
    role = {dim: dim_role(dim, axis, t["shape"]) for t in d["inputs"] for axis, dim in enumerate(t["shape"] or [])
            if isinstance(dim, str)}
    dock = "<a href='dock:Inputs'>the Inputs dock</a>'s sizes"

    def at_text(values: dict) -> str:
        return ", ".join(f"{e(k)}{f' ({role[k]})' if role.get(k) else ''}={v}" for k, v in values.items())
    if d["flops"] is None and free and d.get("flops_uncounted") and all(f in sizes for f in free):
        # the sizes are known (the Inputs dock's), the shapes of some ops still are not: the free dims were blamed
        # (PP-OCRv6 rec: 96 ops whose dims shape inference made up, at DynamicDimension.0=1, DynamicDimension.1=64)
        flops = (f"<i>unknown: the shapes of {d['flops_uncounted']:,} of {d['flops_uncounted'] + d['flops_ops']:,} "
                 f"countable ops cannot be worked out, even at {at_text(sizes)} ({dock}): shape inference "
                 "left them made-up dimensions</i>")
    elif d["flops"] is None and free:  # MatMul sizes depend on them: no number rather than a wrong one
        flops = f"<i>unknown: the inputs have free dimensions ({e(', '.join(free))})</i>"
    elif d["flops"] is None:
        flops = "<i>unknown (no shapes yet)</i>"
    else:
        at = at_text(d.get("flops_at") or {})
        flops = (f"{fmt_count(d['flops'])} <span class='d'>(estimate over {d['flops_ops']:,} of {d['ops']:,} ops"
                 + (f", at {at}: {dock}" if at else "") + ")</span>")
    rows.append(("FLOPs", flops))
    out = [css, "<table>", *(f"<tr><td class='k'>{k}</td><td>{v}</td></tr>" for k, v in rows), "</table>"]
    for title, key in (("Inputs", "inputs"), ("Outer-scope inputs", "outer_inputs"), ("Outputs", "outputs")):
        if key == "outer_inputs" and not d.get(key):
            continue
        out.append(f"<h4>{title}</h4><table>")
        for t in d[key]:
            role = f"<br><i>{e(t['role'])}</i>" if t.get("role") else ""
            out.append(f"<tr><td><b>{name_html(t['name'])}</b>{role}<br><span class='d'>"
                       f"{shape_at_html(t['shape'], d.get('dims') or sizes, (shapes_at or {}).get(t['name']))} \u00b7 "
                       f"{e(t['dtype'] or '?')}</span></td></tr>")
        if not d[key]:
            out.append("<tr><td><i>none</i></td></tr>")
        out.append("</table>")
    out.append("<h4>Op types</h4><table>")
    out += [f"<tr><td>{e(k)}</td><td>{v:,}</td></tr>" for k, v in list(d["op_types"].items())[:15]]
    if len(d["op_types"]) > 15:
        out.append(f"<tr><td colspan=2><i>and {len(d['op_types']) - 15} more types</i></td></tr>")
    out.append("</table><p style='color:gray'>Select a node to see its attributes, inputs, outputs and "
               "weights.</p>")
    return "".join(out)


def _known_stats(w: dict) -> dict | None:
    """What the file already says of an .mnn weight whose values are not readable numbers (quantized)."""
    reason = (w.get("data") or {}).get("reason")
    return {"elements": w.get("elements") or 0, "note": reason} if reason else None


def _ops_under(tree, s: int) -> np.ndarray:
    """The shown ops inside scope s (hidden constants left out)."""
    ops = tree.ops_under(s)
    return ops[~tree.hidden[ops]]


class PropertiesPanel(QWidget):
    navigate_to = Signal(int)        # op index
    show_dock = Signal(str)          # a dock the text links to ("the Inputs dock's sizes")
    open_subgraph = Signal(int, str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.table = self.tree = None
        self.item = -1  # -2: a multi-selection (self.many)
        self.many: dict | None = None
        self.graph: str | None = None  # the body shown (its tab title), None for the main graph
        self.short: list | None = None  # the names under the canvas titles (GraphView.short) of this table
        self.on_graph: tuple[int, str] | None = None  # (item, what the overlay colouring the graph says of it)
        self.stats: dict = {}
        self.pending: set[str] = set()
        self._stats_task = TaskSlot(self)
        self._summary_task = TaskSlot(self)  # FLOPs walk every op: off the UI thread for big models
        self.summary: dict | None = None
        self._summary_key = self._summary_pending = None
        # {dimension name: size} the model's inputs run at (the window sets it to the Inputs dock's): FLOPs of a model
        # with free input dims are counted at them
        self.dims_source = lambda: {}
        self.shapes_at_source = lambda: {}  # {input: sizes} an .mnn's shapes were computed at (the window's)
        self._closed = False  # after shutdown (window closing) no new summary task starts
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        top = QHBoxLayout()
        self.title = _Title("Nothing selected")
        self.title.setObjectName("PropertiesTitle")
        # the title gives way to the dock's width (cut, whole in its tooltip): as the least width of the dock, a bold
        # "LayerNormalization" beside Copy widened Properties from 204 to 272 px at 1024x700 side by side, and both
        # graph panes shrank and re-zoomed on a click (tryout 19)
        self.title.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.title.setMinimumWidth(0)
        self.copy_btn = QPushButton("Copy")
        self.copy_btn.setToolTip("Copy this node's properties to the clipboard (JSON)")
        self.copy_btn.clicked.connect(self.copy)
        self.copy_btn.setEnabled(False)
        top.addWidget(self.title, 1)
        top.addWidget(self.copy_btn)
        lay.addLayout(top)
        self.browser = _Browser(self)
        self.browser.setOpenLinks(False)
        self.browser.anchorClicked.connect(self._link)
        lay.addWidget(self.browser, 1)
        self.browser.setHtml("<p style='color:gray'>Select a node to see its attributes, inputs, outputs and "
                             "weights.</p>")

    def set_model(self, table, tree) -> None:
        self.graph = None
        self._stats_task.cancel()
        self._summary_task.cancel()
        self.table, self.tree = table, tree
        self.short = None
        self.stats, self.pending = {}, set()
        self.summary, self._summary_key = None, None
        self.show_item(-1)

    def _set_title(self, text: str) -> None:
        self.title.setText(text)
        self.title.setToolTip(re.sub(r"<[^>]+>", "", text))

    def show_item(self, item: int, auto: bool = True) -> None:
        self.item = item
        if self.table is None:
            self._set_title("Nothing selected")
            self.copy_btn.setEnabled(False)
            self.browser.setHtml("<p style='color:gray'>Open a model: its summary shows here, and a selected "
                                 "node's attributes, inputs, outputs and weights.</p>")
            return
        if item < 0:
            self._show_summary()
            return
        d = describe(self.table, self.tree, item, self.stats)
        if d["kind"] in ("input", "output"):
            self.copy_btn.setEnabled(True)
            self._set_title("<b>Outer-scope input</b>" if d.get("outer") else f"<b>Graph {d['kind']}</b>")
            self.browser.setHtml(self._io_html(d))
            return
        if auto:
            onnx = self.table.format == "onnx"  # .mnn weights are asked for by key ("<op id>:<weight>")
            want = [w.get("key") or w["name"] for w in d.get("weights", [])
                    if w.get("stats") is None and (w.get("key") or (onnx and not w.get("inline")))]
            if want:
                self.compute_stats(want)
                return
        self.copy_btn.setEnabled(True)
        self._set_title(_op_title(d["op_type"], shown_type(self.table, item)) if d["kind"] == "op" else
                        f"<b>{html.escape(d['kind'].title())}</b>")
        self.browser.setHtml(self._html(d))

    def show_view(self, view) -> None:
        """What `view` has selected: its multi-selection (Select all matches) as a list, else its selected item."""
        self.graph = _body_title(view)
        if view.table is self.table:  # the names under the canvas's titles ("conv2"), for the links to other ops
            self.short = view.short
        item = view.canvas.selected
        text = view.overlay_text(item)
        self.on_graph = (item, text) if text else None
        many = list(getattr(view, "selected_many", []) or [])
        if len(many) > 1 and self.table is view.table:
            self.show_many(many)
        else:
            self.show_item(view.canvas.selected)

    def show_many(self, items) -> None:
        self.item = -2
        self.many = describe_many(self.table, items)
        d, e = self.many, html.escape
        self.copy_btn.setEnabled(True)
        self._set_title(f"<b>{d['count']:,} ops selected</b>")
        css = "<style>td{padding:2px 6px;vertical-align:top} h4{margin:10px 0 3px 0}</style>"
        out = [css, "<h4>Op types</h4><table>"]
        out += [f"<tr><td>{e(k)}</td><td>{v:,}</td></tr>" for k, v in d["op_types"].items()]
        out.append("</table><h4>Ops</h4><table>")
        out += [f"<tr><td><a href='node:{o['index']}'>{name_html(o['name'])}</a></td><td>{e(o['op_type'])}</td></tr>"
                for o in d["ops"][:MANY_LISTED]]
        if d["count"] > MANY_LISTED:
            out.append(f"<tr><td colspan=2><i>and {d['count'] - MANY_LISTED:,} more</i></td></tr>")
        self.browser.setHtml("".join(out) + "</table>")

    def _io_html(self, d: dict) -> str:
        e, t = html.escape, self.table
        css = ("<style>td{padding:2px 6px;vertical-align:top} td.k{color:gray;white-space:nowrap} "
               "h4{margin:10px 0 3px 0} table{border-collapse:collapse}</style>")
        rows = [("name", name_html(d["name"])), ("shape", self._shape_html(d["shape"], d["name"])),
                ("dtype", e(d["dtype"] or "?"))] + ([("role", e(d["role"]))] if d.get("role") else [])
        out = [css, "<table>", *(f"<tr><td class='k'>{k}</td><td>{v}</td></tr>" for k, v in rows), "</table>"]
        if d.get("outer"):
            out.append("<p style='color:gray'>A value of the graph around this body (its outer scope), read here "
                       "by name (not one of the body's inputs).</p>")
        if d["kind"] == "input":
            out.append(f"<h4>Consumers ({len(d['consumers'])})</h4><table>")
            out += [f"<tr><td><a href='node:{i}'>{name_html(t.names[i] or t.ids[i])}</a></td>"
                    f"<td>{e(shown_type(t, i))}</td></tr>"
                    for i in d["consumers"][:MANY_LISTED]]
            out.append("</table>")
        elif d.get("producer") is not None:
            p = d["producer"]
            out.append(f"<h4>Producer</h4><p><a href='node:{p}'>{name_html(t.names[p] or t.ids[p])}</a> "
                       f"{e(shown_type(t, p))}</p>")
        return "".join(out)

    def _outer_inputs(self) -> set[str]:
        """The names of the values a control-flow body reads from its outer scope (ScopeTree.io_outer)."""
        tree, t = self.tree, self.table
        if tree is None or not len(getattr(tree, "io_outer", ())):
            return set()
        return {t.tensor_names[int(ti)] for ti in tree.io_tensor[tree.io_outer].tolist()}

    def _shape_html(self, shape, name: str | None = None) -> str:
        at = self.shapes_at_source().get(name) if name else None
        return shape_at_html(shape, self.dims_source() if is_symbolic(shape) else None, at)

    def _current_key(self) -> tuple:
        t = self.table
        dims = dict(self.dims_source() or {})
        return (id(t), sum(1 for s in t.shapes if s is not None), tuple(sorted(dims.items()))), dims

    def summary_settled(self) -> bool:
        """Whether what the pane shows is final: a node, or the summary counted at the current shapes and input
        sizes (`mnnscope view` screenshots once it is, not the 'unknown' FLOPs of the count before the sizes)."""
        if self.table is None or self.item != -1 or self._closed:
            return True
        return self.summary is not None and self._summary_key == self._current_key()[0] and not self._summary_task.busy

    def _show_summary(self) -> None:
        """Nothing selected: the model's summary (recomputed when shapes have arrived since)."""
        t = self.table
        key, dims = self._current_key()
        self._set_title("<b>Subgraph</b>" if self.graph else "<b>Model</b>")
        self.copy_btn.setEnabled(self.summary is not None)
        if self.summary is not None and self._summary_key == key:
            self.browser.setHtml(summary_html(self.summary, self.graph, self.shapes_at_source()))
            return
        if self.summary is None:
            self.browser.setHtml("<p style='color:gray'>Summarising the model\u2026</p>")
        else:
            # the last one until the new shapes are counted
            self.browser.setHtml(summary_html(self.summary, self.graph, self.shapes_at_source()))
        if self._closed or (self._summary_task.busy and self._summary_pending == key):
            return
        self._summary_pending = key
        hidden = None if self.tree is None else self.tree.hidden.copy()

        def done(d, key=key, table=t):
            if table is self.table:
                self.summary, self._summary_key = d, key
                if self.item == -1:
                    self._show_summary()

        self._summary_task.start(lambda cancelled=None: _with_roles(model_summary(t, hidden, dims), t, hidden),
                                 on_done=done,
                                 on_fail=lambda msg: self.browser.setHtml(
                                     f"<p style='color:gray'>summary unavailable: {html.escape(msg)}</p>"),
                                 name="summary")

    def sizes_changed(self) -> None:
        """The input sizes changed (the Inputs dock): the summary's FLOPs are counted again at them."""
        if self.table is not None and self.item == -1:
            self._show_summary()
        elif self.table is not None and self.item >= 0:  # its shapes are shown at those sizes
            self.show_item(self.item, auto=False)

    def text(self) -> str:
        return self.browser.toPlainText().replace(ZWSP, "")

    def copy(self) -> None:
        if self.table is None:
            return
        if self.item == -2:
            QGuiApplication.clipboard().setText(json.dumps(self.many, indent=2))
            return
        if self.item < 0:
            if self.summary is not None:
                QGuiApplication.clipboard().setText(json.dumps(self.summary, indent=2, default=str))
            return
        d = describe(self.table, self.tree, self.item, self.stats)
        QGuiApplication.clipboard().setText(json.dumps(d, indent=2, default=str))

    def _html(self, d: dict) -> str:
        e = html.escape
        rows = []

        def row(k, v):
            rows.append(f"<tr><td class='k'>{e(k)}</td><td>{v}</td></tr>")

        css = ("<style>td{padding:2px 6px;vertical-align:top} td.k{color:gray;white-space:nowrap} "
               "span.d{color:gray} h4{margin:10px 0 3px 0} table{border-collapse:collapse}</style>")
        on_graph = self.on_graph[1] if self.on_graph is not None and self.on_graph[0] == self.item else None
        if d["kind"] != "op":
            row("scope", name_html(d["path"]))
            row("operators", f"{d['ops']:,}")
            row("children", f"{d['children']:,}")
            if on_graph:  # the overlay's number for it (the colours alone gave none)
                row("on the graph", e(on_graph))
            out = css + "<table>" + "".join(rows) + "</table><h4>Op types</h4><table>"
            out += "".join(f"<tr><td>{e(k)}</td><td>{v:,}</td></tr>" for k, v in list(d["op_types"].items())[:20])
            return out + "</table>"
        row("name", name_html(d["name"] or "(unnamed)"))
        if d["id"] != d["name"]:
            row("id", name_html(d["id"]))
        row("op type", e(d["op_type"]))  # ("type" twice read oddly where an attribute is called type: Pooling)
        row("scope", name_html(d["scope"]) + (" <i>(inferred from its consumers)</i>" if d["scope_inferred"] else ""))
        if on_graph:
            row("on the graph", e(on_graph))
        out = [css, "<table>", *rows, "</table>"]
        if d["attributes"]:
            out.append("<h4>Attributes</h4><table>")
            out += [f"<tr><td class='k'>{e(k)}</td><td>{attr_html(d, k, v)}</td></tr>"
                    for k, v in d["attributes"].items()]
            out.append("</table>")
        t = self.table

        def tensor(name, parts, extra="", role=None):
            detail = " \u00b7 ".join(x for x in parts if x)
            said = f"<br><i>{e(role)}</i>" if role else ""  # a Loop's "input 1: the trip count", ...
            return (f"<tr><td><b>{name_html(name) or '<i>(omitted)</i>'}</b>{said}<br><span class='d'>{detail}"
                    f"</span>{extra}</td></tr>")

        if d["inputs"]:
            out.append("<h4>Inputs</h4><table>")
            outer = self._outer_inputs()
            for i in d["inputs"]:
                src = i.get("from")
                if isinstance(src, int) and src >= 0:
                    # named as the canvas names it: "from Convolution conv2" (four Convolutions feed Pooling ops)
                    short = self.short[src] if self.short and src < len(self.short) else ""
                    link = (f"from <a href='node:{src}'>{e(shown_type(t, src))}"
                            f"{f' <i>{e(short)}</i>' if short else ''}</a>")
                elif i["name"] in t.inputs:
                    link = "graph input"
                elif i["name"] in outer:
                    link = "outer-scope input"
                else:
                    link = ""
                out.append(tensor(i["name"], [self._shape_html(i["shape"], i["name"]), e(i["dtype"] or "?"), link],
                                  role=i.get("role")))
            out.append("</table>")
        if d["weights"]:
            out.append("<h4>Weights</h4><table>")
            for w in d["weights"]:
                stats = ""
                if w.get("stats"):
                    stats = _stats_text(w["stats"])
                elif (w.get("key") or w["name"]) in self.pending:
                    stats = "<i>computing statistics\u2026</i>"
                elif w.get("key") or (t.format == "onnx" and not w.get("inline")):
                    stats = f"<a href='stats:{e(w.get('key') or w['name'])}'>statistics</a>"
                dtype = (w["dtype"] or "?") + (f" (stored as {w['stored_dtype']})" if w.get("stored_dtype") else "")
                out.append(tensor(w["name"] or "", [e(fmt_shape(w["shape"])), e(dtype),
                                                    fmt_bytes(w.get("bytes"))],
                                  f"<br><span class='d'>{stats}</span>" if stats else "", role=w.get("role")))
            out.append("</table>")
        if d["outputs"]:
            out.append("<h4>Outputs</h4><table>")
            for o in d["outputs"]:
                out.append(tensor(o["name"], [self._shape_html(o["shape"]), e(o["dtype"] or "?"),
                                              f"{o['consumers']} consumer(s)"], role=o.get("role")))
            out.append("</table>")
        if d["subgraphs"]:
            out.append("<h4>Subgraphs</h4><p>")
            out += [f"<a href='sub:{d['index']}:{e(a)}'>open {e(a)}</a>&nbsp;&nbsp;" for a in d["subgraphs"]]
            out.append("</p>")
        return "".join(out)

    def _link(self, url: QUrl) -> None:
        s = url.toString()
        kind, _, rest = s.partition(":")
        if kind == "node":
            self.navigate_to.emit(int(rest))
        elif kind == "sub":
            idx, _, attr = rest.partition(":")
            self.open_subgraph.emit(int(idx), attr)
        elif kind == "stats":
            self.compute_stats([rest])
        elif kind == "dock":
            self.show_dock.emit(rest)

    def compute_stats(self, tensors: list[str]) -> None:
        """Statistics of initializers, in a child process; the panel updates when they arrive. A new
        request (another selection) cancels the one in flight."""
        tensors = [t for t in tensors if t not in self.stats]
        if self.table is None or not tensors or set(tensors) <= self.pending:
            return
        self.pending = set(tensors)
        path = self.table.path

        def run(cancelled=None):
            return load_stats(path, tensors, job_sink=lambda job: cancelled.set_hook(job.cancel))

        self._stats_task.start(run, on_done=self._stats_done,
                               on_fail=lambda msg, ts=tuple(tensors): self._stats_failed(ts, msg), name="stats")
        self.show_item(self.item, auto=False)

    def _stats_done(self, stats: dict) -> None:
        self.pending -= set(stats)
        self.stats.update(stats)
        self.show_item(self.item, auto=False)

    def _stats_failed(self, tensors, msg: str) -> None:
        self.pending -= set(tensors)
        for t in tensors:
            self.stats[t] = {"elements": 0, "error": msg}
        self.show_item(self.item, auto=False)

    def shutdown(self) -> None:
        self._closed = True
        self._stats_task.shutdown()
        self._summary_task.shutdown()


def shown_type(table, i: int) -> str:
    """Op i's type as the canvas names it: an MNN BinaryOp is "ADD" there (a new-user try read "from BinaryOp"
    under a Pooling3D whose input is drawn "ADD")."""
    op = table.op_types[i]
    return node_title(op, table.attrs(i)) if table.format == "mnn" else op


def _op_title(op: str, shown: str) -> str:
    """Properties' title for an op: its op type, led by what the canvas calls it (`shown`, shown_type) where that
    differs (an MNN BinaryOp drawn as "ADD" was titled "BinaryOp" here, and a new user could not tell it was the
    node clicked)."""
    if shown != op:
        return f"<b>{html.escape(shown)}</b> <small>({html.escape(op)})</small>"
    return f"<b>{html.escape(op)}</b>"
