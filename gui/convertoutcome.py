"""The words of a finished conversion, from a ConvertResult: for its notification (message, severity and the
hint: next step, bundle or log), and for the dialog (every error with its own next step, the reduction, and
the log's closing lines)."""
from __future__ import annotations

import html
from pathlib import Path

from mnnscope.gui.notify import ERROR, INFO
from mnnscope.inspector.history import fmt_bytes  # one unit system (decimal MB) in every view of a size


def outcome_text(result) -> tuple[str, str, str]:
    """(message, severity, hint) of a finished conversion, for its notification."""
    name = Path(result.output).name if result.output else ""
    if result.ok:
        msg = f"converted to {name} ({fmt_bytes(result.size_bytes)}, {result.seconds:.1f} s)"
        if result.node_map is not None:
            c = result.node_map.counts()
            msg += "; ONNX nodes " + ", ".join(f"{c.get(k, 0)} {k}" for k in ("kept", "renamed", "fused", "eliminated"))
            # what these are, in the line itself: "170 MNN ops inserted" for a model of 127 ops read as a fault
            # (a new-user try)
            msg += (f"; {c.get('inserted', 0)} MNN ops inserted (layout converters and shape ops of MNN's own)"
                    if c.get("inserted") else "; no MNN ops inserted")
        hint = "; ".join(result.warnings[:2]) + (f" (+{len(result.warnings) - 2} more)" if len(result.warnings) > 2 else "")
        return msg, INFO, hint
    if not result.errors:
        return "conversion failed without a diagnosis", ERROR, _where(result)
    first = result.errors[0]
    msg = f"conversion failed [{first['kind']}]: {first['message']}"
    node = first.get("node")
    if node and node not in first["message"]:
        msg += f" (node {node})"
    others = [f"{e['kind']}" + (f" at {e['node']}" if e.get("node") else "") for e in result.errors[1:]]
    if others:
        msg += "; also " + ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    hint = f"next step: {first['next_step']}" if first.get("next_step") else ""
    return msg, ERROR, "; ".join(p for p in (hint, _where(result)) if p)


def _where(result) -> str:
    if result.bundle:
        return f"bug-report bundle: {result.bundle}"
    return f"log: {result.log_path}" if result.log_path else ""


# ----- the dialog's words: what happened and what to do next, in full -----------------------------------------
def _esc(text) -> str:
    return html.escape(str(text))


def outcome_html(result) -> str:
    """The Convert dock's outcome as rich text: each error with its node and its own next step (the op-specific fix,
    e.g. another opset), the reduction and the bundle; or what a success wrote, its warnings counted (they are listed
    under Diagnostics beside it: each showed twice, tryout 66)."""
    if result.ok:
        msg = outcome_text(result)[0]
        parts = [f"<b style='color:#2e8540'>Converted</b> \u2014 {_esc(msg)}"]
        if result.output:
            parts.append(f"<small>written: {_esc(result.output)}</small>")
        if result.warnings:
            n = len(result.warnings)
            parts.append(f"<small>{n} warning{'s' if n != 1 else ''}: see Diagnostics</small>")
        return "<br>".join(parts)
    out = "<b style='color:#d64545'>Failed</b>"
    if not result.errors:
        out += " \u2014 the conversion failed without a diagnosis: see the log"
    items = []
    for e in result.errors[:4]:
        node = e.get("node")
        where = f" <small>(node <code>{_esc(node)}</code>)</small>" if node and node not in e["message"] else ""
        step = f"<br><b>Next step:</b> {_esc(e['next_step'])}" if e.get("next_step") else ""
        head = f"<b>[{_esc(e['kind'])}]</b> {_esc(e['message'])}"
        if node:  # a click selects the node on the graph, as a Diagnostics row does (tryout 18 clicked it: nothing)
            head = f"<a href='node:{_esc(node)}' style='text-decoration:none'>{head}</a>"
        items.append(f"<li>{head}{where}{step}</li>")
    if len(result.errors) > 4:
        items.append(f"<li>and {len(result.errors) - 4} more (see the bug report)</li>")
    if items:
        out += f"<ul style='margin-left:-24px'>{''.join(items)}</ul>"
    tail = [x for x in (reduction_line(result), _where(result)) if x]
    if tail:
        out += ("" if items else "<br>") + "<small>" + "<br>".join(_esc(x) for x in tail) + "</small>"
    return out


def reduction_line(result) -> str:
    """What the reducer found, in one line ('' when there was no reduction)."""
    red = result.reduced
    if not red:
        return ""
    if red.get("path"):
        what = (f"{red['nodes_after']} of {red['nodes_before']} nodes" if red.get("nodes_before")
                else f"{red.get('bytes_after')} of {red.get('bytes_before')} bytes")
        sure = "" if red.get("reproduced") else " (not confirmed on the final check)"
        return f"reduced.onnx: {what} fail the same way{sure}, found in {red.get('probes')} conversions"
    return f"no smaller model reproduced the failure ({red.get('probes')} conversions tried)"


def log_summary(result) -> list[str]:
    """The log's closing lines: how the run ended, so the log never stops at a stage's progress line."""
    lines = []
    if result.ok:
        lines.append(f"converted: {result.output} ({fmt_bytes(result.size_bytes)}, {result.seconds:.1f} s)")
        return lines
    red = reduction_line(result)
    if red:
        lines.append(red)
    if result.bundle:
        lines.append(f"bug-report bundle written: {result.bundle}")
    for e in result.errors[:4]:
        lines.append(f"failed [{e['kind']}]: {e['message']}")
        if e.get("next_step"):
            lines.append(f"next step: {e['next_step']}")
    if not result.errors:
        lines.append("failed without a diagnosis")
    lines.append(f"finished after {result.seconds:.1f} s; the whole log: {result.log_path}")
    return lines
