"""The words of a finished conversion for its notification: message, severity and the hint (next step, bundle
or log), from a ConvertResult."""
from __future__ import annotations

from pathlib import Path

from mnnscope.gui.notify import ERROR, INFO


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} kB" if n < 1024 ** 2 else f"{n / 1024 ** 2:.1f} MB"


def outcome_text(result) -> tuple[str, str, str]:
    """(message, severity, hint) of a finished conversion, for its notification."""
    name = Path(result.output).name if result.output else ""
    if result.ok:
        msg = f"converted to {name} ({fmt_bytes(result.size_bytes)}, {result.seconds:.1f} s)"
        if result.node_map is not None:
            c = result.node_map.counts()
            msg += "; ONNX nodes " + ", ".join(f"{c.get(k, 0)} {k}" for k in ("kept", "renamed", "fused", "eliminated"))
            msg += f"; {c.get('inserted', 0)} MNN ops inserted"
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
