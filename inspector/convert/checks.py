"""What a conversion will do and what it did: pre-flight checks of the ONNX file, the converter's log
read line by line, and a diagnosis per failure with the ONNX node it concerns and a next step.

The converter names op *types* only ("These Op Not Support: ONNX::Mish"), and a crash leaves just its
last log lines, so every message is mapped back here to ONNX node names and domains.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import onnx
import onnx.defs
from onnx import TensorProto

from mnnscope.inspector.errors import ExternalDataOutside, ModelError
from mnnscope.inspector.formats.onnx import TRUNCATED, load_onnx, truncated_files
from mnnscope.inspector.model.graph import ModelGraph

DEFAULT_DOMAINS = ("", "ai.onnx")

_UNSUPPORTED = re.compile(r"These Op Not Support:\s*(.*)")
_CANT_OPEN = re.compile(r"Can't open file:?\s*(.*)")
_EMPTY_INPUT = re.compile(r"==>\s*(.+?) has empty input, the index is (\d+)")
_ERRORISH = re.compile(r"error|failed|not support|check failed|can't|cannot|invalid|wrong", re.I)
_SHAPE = re.compile(r"shape", re.I)
# "caution:" is how MNN 3.6.1 says that weights hold denormals ("some weight absolute values are not zero and smaller
# than float min ... op name:Add.103", PP-OCRv6 rec): only in the log until a tester looked there
_WARNISH = re.compile(r"\bwarn|\bcaution\b", re.I)


# ----- pre-flight ------------------------------------------------------------------------------------
def _walk(graph: ModelGraph, outer: set[str]):
    """(node id, data, names visible to it) for every node, subgraphs included."""
    visible = set(outer) | set(graph.inputs) | {n for n, t in graph.tensors.items() if t.is_initializer}
    for _, data in graph.g.nodes(data=True):
        visible.update(t for t in data["outputs"] if t)
    for nid, data in graph.g.nodes(data=True):
        yield nid, data, visible
        for sub in data.get("subgraphs", {}).values():
            yield from _walk(sub, visible)


def _external_refs(path: str) -> list[tuple[str, str]]:
    """(tensor, location) of every initializer stored outside the .onnx file."""
    model = onnx.load(path, load_external_data=False)
    refs = []

    def visit(g):
        for t in g.initializer:
            if t.data_location == TensorProto.EXTERNAL:
                refs.append((t.name, next((e.value for e in t.external_data if e.key == "location"), "")))
        for node in g.node:
            for a in node.attribute:
                if a.HasField("g"):
                    visit(a.g)
                for sg in a.graphs:
                    visit(sg)
    visit(model.graph)
    return refs


def _group(items: list[tuple[str, str, str]]) -> list[dict]:
    out: dict[tuple[str, str], dict] = {}
    for op_type, domain, node in items:
        entry = out.setdefault((op_type, domain), {"op_type": op_type, "domain": domain or "ai.onnx", "nodes": []})
        entry["nodes"].append(node)
    return list(out.values())


def function_hint(op_type: str, domain: str, opset: dict) -> str | None:
    """A next step for standard ops MNN lacks: ONNX functions can be expanded, newer ops avoided."""
    if domain not in DEFAULT_DOMAINS:
        return None
    try:
        schema = onnx.defs.get_schema(op_type, int(opset.get("ai.onnx", opset.get("", 21))), "")
    except Exception:
        return None
    since = schema.since_version
    if schema.has_function or schema.has_context_dependent_function:
        return (f"{op_type} is an ONNX function (opset {since}+): expand it into its basic ops before converting, "
                f"or export with opset {since - 1} or lower so the exporter decomposes it")
    return None


def check_model(path: str, supported: list[str] | None, unverified: list[str] | tuple = ()) -> dict:
    """Pre-flight report of an ONNX file against the op types the converter accepts (None: not checked).

    `supported` is the converter's own answer: its `--OP` list, plus what a trial conversion of this model
    accepted when the service could make one (runner.convert.probe_ops). `unverified`: types outside the list
    that no trial settled; they are reported as such (`unverified_ops`), never as unsupported.
    """
    report = {"model": os.path.abspath(path), "readable": True, "nodes": 0, "opset": {}, "ir_version": None,
              "unsupported_ops": [], "unverified_ops": [], "custom_domain_ops": [], "external_data": {"files": [], "missing": []},
              "undefined_inputs": [], "errors": [], "warnings": [], "refuse": None, "parse_error": None}
    try:
        graph = load_onnx(path)
    except ExternalDataOutside as e:
        report["refuse"] = str(e)
        report["errors"].append(_err("external_data_outside", str(e), None,
                                     "keep external data files in the model's folder (or a subfolder) and "
                                     "refer to them by relative path"))
        report["ok"] = False
        return report
    except ModelError as e:
        report["readable"] = False
        report["parse_error"] = str(e)
        report["ok"] = False
        return report
    report["opset"] = dict(graph.opset)
    report["ir_version"] = graph.version
    known = set(supported) if supported is not None else None
    unknown = set(unverified or ())
    unsupported, open_, custom, undefined = [], [], [], []
    op_nodes: dict[str, list] = {}
    count = 0
    for nid, data, visible in _walk(graph, set()):
        count += 1
        op, domain = data["op_type"], data.get("domain") or ""
        op_nodes.setdefault(op, [domain, []])[1].append(nid)
        if known is not None and op not in known:
            (open_ if op in unknown else unsupported).append((op, domain, nid))
        elif domain not in DEFAULT_DOMAINS:
            custom.append((op, domain, nid))
        for index, t in enumerate(data["inputs"]):
            if t and t not in visible:
                undefined.append({"node": nid, "tensor": t, "index": index, "op_type": op})
    report["nodes"] = count
    report["_producers"] = graph.producers()
    report["_op_nodes"] = op_nodes
    report["unsupported_ops"] = _group(unsupported)
    report["unverified_ops"] = _group(open_)
    report["custom_domain_ops"] = _group(custom)
    for entry in report["unverified_ops"]:
        report["warnings"].append(_unverified_warning(entry, "a trial conversion stopped before the converter's op "
                                                             "check"))
    report["undefined_inputs"] = undefined
    for entry in report["custom_domain_ops"]:
        report["warnings"].append(
            f"{len(entry['nodes'])} node(s) of op {entry['op_type']} from domain '{entry['domain']}' "
            f"(first: {entry['nodes'][0]}): MNN ignores the domain and converts them as the standard ONNX "
            f"{entry['op_type']}; check their results")
    try:
        refs = _external_refs(path)
    except Exception:
        refs = []
    folder = Path(path).resolve().parent
    files: dict[str, list[str]] = {}
    for tensor, location in refs:
        files.setdefault(location, []).append(tensor)
    report["external_data"]["files"] = sorted(files)
    for location, tensors in sorted(files.items()):
        if not (folder / location).is_file():
            report["external_data"]["missing"].append({"file": location, "tensors": tensors})
    # a file there but shorter than the model says: MNN reads past its end and prints success
    report["external_data"]["truncated"] = truncated_files(graph)
    for entry in report["unsupported_ops"]:
        report["errors"].append(_unsupported_error(entry, graph.opset))
    for miss in report["external_data"]["missing"]:
        report["errors"].append(_missing_error(miss, graph))
    for short in report["external_data"]["truncated"]:
        report["errors"].append(_truncated_error(short, graph))
    for u in undefined:
        report["errors"].append(_undefined_error(u))
    report["ok"] = not report["errors"]
    return report


def _err(kind: str, message: str, node: str | None, next_step: str) -> dict:
    return {"kind": kind, "message": message, "node": node, "next_step": next_step}


def _unverified_warning(entry: dict, why: str) -> str:
    return (f"{len(entry['nodes'])} node(s) of op {entry['op_type']} ({entry['domain']}, first: {entry['nodes'][0]}) "
            f"are not in the converter's op list, and {why}: whether MNN converts them here is unknown (it "
            "rewrites some ops it does not list, such as MatMulInteger after DynamicQuantizeLinear)")


def _unsupported_error(entry: dict, opset: dict) -> dict:
    op, domain, nodes = entry["op_type"], entry["domain"], entry["nodes"]
    more = f" and {len(nodes) - 1} more" if len(nodes) > 1 else ""
    if domain not in DEFAULT_DOMAINS:
        message = f"op {op} of domain '{domain}' (node {nodes[0]}{more}) is not an ONNX op MNN knows"
        step = (f"{op} belongs to '{domain}', which only its own runtime implements: export without it "
                f"(decompose it into standard ONNX ops), or convert with --allow-custom-op and register "
                f"{op} as an MNN custom op")
    else:
        message = f"MNN cannot convert op {op} (node {nodes[0]}{more})"
        step = function_hint(op, domain, opset) or (
            f"replace {op} with ops MNN supports before export, or convert with --allow-custom-op and "
            f"implement {op} as an MNN custom op")
    return _err("unsupported_op", message, nodes[0], step)


def _consumer(graph: ModelGraph | None, tensor: str) -> str | None:
    if graph is None:
        return None
    for nid, data in graph.g.nodes(data=True):
        if tensor in data["inputs"]:
            return nid
    return None


def _missing_error(miss: dict, graph: ModelGraph | None) -> dict:
    tensors = miss["tensors"]
    node = _consumer(graph, tensors[0])
    more = f" and {len(tensors) - 1} more" if len(tensors) > 1 else ""
    message = (f"external data file '{miss['file']}' is missing (weights of {tensors[0]}{more}): MNN would "
               "convert with garbage weights and still print success")
    return _err("missing_external_data", message, node,
                f"put '{miss['file']}' beside the model (same folder), or re-export with the weights inside the .onnx")


def _truncated_error(short: dict, graph: ModelGraph | None) -> dict:
    return _err("truncated_external_data", f"{TRUNCATED.format(**short)}: MNN would convert with garbage weights "
                                           "and still print success", _consumer(graph, short["tensor"]),
                f"copy '{short['file']}' again in full (or re-export with the weights inside the .onnx)")


def _undefined_error(u: dict) -> dict:
    message = (f"node {u['node']} ({u['op_type']}) reads tensor '{u['tensor']}' (input #{u['index']}) that no node, "
               "graph input or initializer defines: MNN's converter crashes on such graphs")
    return _err("undefined_input", message, u["node"],
                "fix the export so that the tensor is produced, or declare it as a graph input or initializer "
                "(onnx.checker.check_model(model, full_check=True) reports it)")


# ----- the converter's log ---------------------------------------------------------------------------------
def parse_log(text: str) -> dict:
    """Facts from a converter/quantizer log: markers, unsupported op types, unreadable files, error lines."""
    lines = [line.rstrip() for line in text.replace("\r", "\n").splitlines()]
    plain = [line for line in lines if line.strip() and not line.startswith("[DumpPass]")]
    unsupported: list[str] = []
    for m in _UNSUPPORTED.finditer(text):
        for part in m.group(1).split("|"):
            op = part.strip().removeprefix("ONNX::")
            if op and op not in unsupported:
                unsupported.append(op)
    return {
        "success": "Converted Success!" in text,
        "failed": "Converted Failed!" in text,
        "unsupported": unsupported,
        "cant_open": [m.group(1).strip() for m in _CANT_OPEN.finditer(text)],
        "read_failed": "read onnx model failed" in text or "Model file is not onnx model" in text,
        "not_exist": "Model File Does Not Exist" in text,
        "empty_input": [{"tensor": m.group(1).strip(), "index": int(m.group(2))} for m in _EMPTY_INPUT.finditer(text)],
        "error_lines": [line for line in plain if _ERRORISH.search(line)][:20],
        "shape_lines": [line for line in plain if _ERRORISH.search(line) and _SHAPE.search(line)][:10],
        "warning_lines": [line for line in plain if _WARNISH.search(line)][:20],
        "last_lines": [line for line in lines if line.strip()][-12:],
    }


# ----- diagnosis ---------------------------------------------------------------------------------------------
def _nodes_of_type(pre: dict, op: str) -> tuple[list[str], str]:
    domain, nodes = pre.get("_op_nodes", {}).get(op, ("", []))
    if nodes:
        return list(nodes), domain or "ai.onnx"
    for entry in pre.get("unsupported_ops", []) + pre.get("custom_domain_ops", []):
        if entry["op_type"] == op:
            return entry["nodes"], entry["domain"]
    return [], "ai.onnx"


def _settle_op_support(attempt, pre: dict, log: dict, settings) -> None:
    """After a real conversion, `pre["unsupported_ops"]` holds exactly the types the converter named.

    The converter names every op type it could not convert in one line at the very end, after its passes
    have rewritten what they can; a prediction from its `--OP` list (which misses rewritten ops such as
    MatMulInteger) is replaced by that answer. When the attempt never reached that check (a crash, an earlier
    failure, or --allow-custom-op, which skips it), predictions not settled by a trial conversion become
    `unverified_ops` instead of being reported as unsupported.
    """
    if attempt.error and attempt.error.get("kind") == "refused":
        return
    named = list(log["unsupported"])
    reached = bool(named) or (log["success"] and not getattr(settings, "allow_custom_op", False)
                              and not attempt.died and not attempt.error)
    if reached:
        entries = []
        for op in named:
            nodes, domain = _nodes_of_type(pre, op)
            entries.append({"op_type": op, "domain": domain, "nodes": nodes or ["?"]})
        pre["unsupported_ops"] = entries
        pre["unverified_ops"] = []
        return
    probed = pre.get("probed") or {}
    keep, open_ = [], list(pre.get("unverified_ops", []))
    for entry in pre.get("unsupported_ops", []):
        (keep if probed.get(entry["op_type"]) is False else open_).append(entry)
    if len(open_) != len(pre.get("unverified_ops", [])):
        why = ("--allow-custom-op skips the converter's op check" if getattr(settings, "allow_custom_op", False)
               and log["success"] else "the conversion stopped before the converter's op check")
        for entry in open_[len(pre.get("unverified_ops", [])):]:
            pre.setdefault("warnings", []).append(_unverified_warning(entry, why))
    pre["unsupported_ops"], pre["unverified_ops"] = keep, open_


def diagnose(attempt, pre: dict, log: dict, settings) -> dict:
    """{"ok", "errors", "warnings", "signature"} for one converter attempt and its pre-flight report.

    The signature ([kind, detail]) says *how* it failed; the reducer keeps a cut model only when its
    conversion fails with the same signature.
    """
    errors: list[dict] = []
    warnings: list[str] = []
    signature: list = ["ok"]
    res = attempt.result or {}
    _settle_op_support(attempt, pre, log, settings)
    if attempt.error:
        kind = attempt.error["kind"]
        if kind == "refused":
            return {"ok": False, "errors": [e for e in pre["errors"] if e["kind"] == "external_data_outside"],
                    "warnings": warnings, "signature": ["external_data_outside"]}
        if kind == "timeout":
            errors.append(_err("timeout", f"the converter did not finish: {attempt.error['message']}", None,
                               "convert a smaller part of the model to find the slow part; conversion time grows "
                               "faster than the number of ops"))
            return {"ok": False, "errors": errors, "warnings": warnings, "signature": ["timeout"]}
        errors.append(_err("runner_error", f"the runner refused the conversion: {attempt.error['message']}", None,
                           "check the paths and settings; this is likely a bug in mnnscope if they are right"))
        return {"ok": False, "errors": errors, "warnings": warnings, "signature": ["runner_error"]}
    undefined = {(u["node"], u["index"]): u for u in pre.get("undefined_inputs", [])}
    if attempt.died:
        how = attempt.died.get("signal") or f"exit code {attempt.died.get('returncode')}"
        signature = ["crash", how]
        if log["empty_input"] or undefined:
            for u in pre.get("undefined_inputs", []):
                e = _undefined_error(u)
                e["message"] = f"the converter crashed ({how}): " + e["message"]
                errors.append(e)
            if not errors:
                hit = log["empty_input"][0]
                errors.append(_err("undefined_input", f"the converter crashed ({how}) on tensor '{hit['tensor']}': "
                                   f"its input #{hit['index']} is empty", None,
                                   "check that every node input is produced, a graph input or an initializer"))
        else:
            last = " | ".join(log["last_lines"][-3:]) or "no output"
            errors.append(_err("crash", f"the converter crashed ({how}); its last lines: {last}", None,
                               "the bundle holds a reduced model that reproduces the crash: report it to MNN; "
                               "meanwhile try other settings (e.g. --optimize-level 1, no --transformer-fuse)"))
        return {"ok": False, "errors": errors, "warnings": warnings, "signature": signature}
    if log["not_exist"]:
        errors.append(_err("missing_file", "the converter could not find the model file", None,
                           "check the path"))
        signature = ["missing_file"]
    elif log["read_failed"] or not pre.get("readable", True):
        detail = pre.get("parse_error") or "the protobuf does not parse"
        errors.append(_err("unreadable_model", f"MNN could not read the ONNX file ({detail})", None,
                           "it is an MNN model already: name it .mnn and profile it (nothing to convert)"
                           if "it is an MNN model" in detail else
                           "the file is truncated or not an ONNX model: copy or export it again "
                           "and check its size"))
        signature = ["unreadable_model"]
    if log["unsupported"]:
        for entry in pre["unsupported_ops"]:
            errors.append(_unsupported_error(entry, pre.get("opset", {})))
        signature = ["unsupported", sorted(log["unsupported"])]
    if log["cant_open"] or pre.get("external_data", {}).get("missing"):
        missing = pre.get("external_data", {}).get("missing") or [
            {"file": os.path.basename(f), "tensors": ["?"]} for f in log["cant_open"]]
        for miss in missing:
            errors.append(_missing_error(miss, None) | {"node": _node_for(pre, miss)})
        if signature == ["ok"]:
            signature = ["missing_external_data"]
    for e in pre.get("errors", []):
        if e["kind"] == "truncated_external_data":
            errors.append(e)
            if signature == ["ok"]:
                signature = ["truncated_external_data"]
    ok = attempt.ok and not errors
    if not ok and not errors:
        problems = res.get("problems") or []
        shape = log["shape_lines"]
        if shape:
            node = next((n for n in (_node_in(line, pre) for line in shape) if n), None)
            extra = f"; then {problems[0]}" if problems else ""
            errors.append(_err("shape_error", f"the converter failed computing shapes ({'; '.join(shape[:2])}){extra}",
                               node, "check the shapes around this node for the model's input sizes: give fixed "
                                     "input shapes, or re-export with shapes that agree"))
            signature = ["shape_error"]
        elif problems:
            errors.append(_err("bad_output", "; ".join(problems), None,
                               "the converter wrote an unusable file: report the bundle to MNN"))
            signature = ["bad_output"]
        else:
            detail = " | ".join(log["error_lines"][:3] or log["last_lines"][-3:]) or "no message"
            errors.append(_err("converter_failed", f"the converter failed: {detail}", None,
                               "see the log; the bundle holds a reduced model that fails the same way"))
            signature = ["converter_failed"]
    if ok:
        # The converter prints shape errors and skipped steps, then "Converted Success!": the model may
        # still fail at run time, so each line is passed on with the node it names.
        for line in log["error_lines"]:
            node = _node_in(line, pre)
            warnings.append(f"converter: {line.strip()}" + (f" (node {node})" if node else ""))
    warnings += [f"converter: {line.strip()}" + (f" (node {node})" if (node := _node_in(line, pre)) else "")
                 for line in log["warning_lines"] if line not in log["error_lines"]]
    return {"ok": ok, "errors": errors, "warnings": warnings, "signature": signature}


_WARNING_NODE = re.compile(r" \(node ([^()]+)\)$")


def warning_node(warning: str) -> str | None:
    """The node a converter warning names (the " (node X)" verdict() appends to its line), or None."""
    found = _WARNING_NODE.search(warning or "")
    return found.group(1) if found else None


def _node_for(pre: dict, miss: dict) -> str | None:
    for e in pre.get("errors", []):
        if e["kind"] == "missing_external_data" and f"'{miss['file']}'" in e["message"]:
            return e["node"]
    return None


def _node_in(line: str, pre: dict) -> str | None:
    """The first node id named in a log line (MNN prints tensor names: those of the node's outputs)."""
    producers = pre.get("_producers", {})
    for token in re.findall(r"[\w/.:\-]+", line):
        for name in (token, token.rsplit(":", 1)[-1]):  # "op name:Add.103"
            if name in producers:
                return producers[name]
    return None


# ----- after a quantizing conversion ------------------------------------------------------------------
# the advice that ends float_weights_left's warning (the Compare dock's "Reconvert with settings…" follows it)
FP16_INSTEAD = "fp16 weight storage halves every float weight instead."


def float_weights(model) -> tuple[int, list]:
    """(bytes of every weight, [(op, bytes, the ops that read it) of each float32 weight of 1 kB or more])."""
    readers: dict[str, list] = {}
    for op in model.ops:
        for t in op.inputs:
            readers.setdefault(t, []).append(op)
    total, left = 0, []
    for op in model.ops:
        for w in op.weights:
            size = int(w.get("bytes") or 0)
            total += size
            if w.get("dtype") == "float32" and size >= 1024:
                rs = readers.get(op.outputs[0], []) if op.op_type == "Const" and op.outputs else [op]
                left.append((op, size, rs))
    return total, left


def float_weight_share(weights: tuple[int, list]) -> float | None:
    """The share of the weight bytes a conversion left in float32 (weights of 1 kB or more), from float_weights; None
    without weights."""
    total, left = weights
    return sum(size for _, size, _ in left) / total if total else None


def float_weights_left(model, what: str, floor: float = 0.25, weights: tuple[int, list] | None = None) -> str | None:
    """A warning where a conversion meant to quantize weights (`what`: "8-bit weight quantization") left at
    least `floor` of the weight bytes in float32, saying which ones and why; None otherwise. `model`: an
    MnnModel (formats/mnn_flatbuffer.read_mnn).

    Measured (MNN 3.6.1): a weight that many ops read (an unrolled LSTM's, read at every step: captcha_crnn's
    Gemm weights, 20 readers each) stays a float32 Const read by MatMul ops, which weight quantization does not
    touch; read by two ops it is copied into two Convolution ops and quantized. captcha_crnn came out 14.4 MB of
    18.3 with 8-bit weights, and nothing said why. `weights`: float_weights(model) where the caller has it."""
    total, left = weights or float_weights(model)
    left_bytes = sum(size for _, size, _ in left)
    if not total or left_bytes < floor * total:
        return None
    by_type: dict[str, int] = {}
    for _, size, rs in left:
        for t in sorted({r.op_type for r in rs}) or ["nothing"]:
            by_type[t] = by_type.get(t, 0) + size
    # three figures: "0.2 MB of the 0.6 MB of weights (27%)" did not add up (0.16 of 0.59 MB: helper 111)
    mb = lambda b: f"{b / 1e6:.3g} MB" if b >= 1e5 else f"{b / 1e3:.0f} kB"  # noqa: E731
    parts = ", ".join(f"{mb(b)} read by {t}" for t, b in sorted(by_type.items(), key=lambda kv: -kv[1])[:3])
    msg = (f"{what} left {len(left)} weight{'s' if len(left) > 1 else ''} in float32, {mb(left_bytes)} of the "
           f"{mb(total)} of weights ({100 * left_bytes / total:.0f}%): {parts}")
    shared = sorted(((op, size, rs) for op, size, rs in left if op.op_type == "Const" and len(rs) > 1),
                    key=lambda x: -x[1])
    if shared:
        op, size, rs = shared[0]
        msg += (f"; {len(shared)} of them {'are constants' if len(shared) > 1 else 'is a constant'} that several "
                f"ops read (the largest, {op.name or op.outputs[0]}, "
                f"{mb(size)}, by {len(rs)} ops): MNN keeps a weight that many ops share (an unrolled LSTM's, read at "
                "every step) as a float input of MatMul ops, which weight quantization does not touch")
    return msg + ". " + FP16_INSTEAD
