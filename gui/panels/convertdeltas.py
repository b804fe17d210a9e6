"""What changed between the run before and after "Reconvert and re-run": the `runs diff` computation
(inspector/rundiff.py) on the two results the Profile or Compare dock reported, plus the converted file's size,
as data and as the lines the Convert dock shows."""
from __future__ import annotations

from mnnscope.gui.convertoutcome import fmt_bytes
from mnnscope.inspector.rundiff import diff_compares, diff_profiles

TOP = 5  # per-op changes shown


def as_run(kind: str, result: dict) -> dict:
    """A service result (profile or compare) in the run store's shape: what rundiff reads."""
    return {"kind": kind, "summary": result, "ops": result.get("ops") or []}


def deltas(kind: str, before: dict, after: dict, size_before: int | None, size_after: int | None) -> dict:
    """rundiff's diff of the two results, with the sizes and run ids added."""
    a, b = as_run(kind, before), as_run(kind, after)
    d = diff_profiles(a, b) if kind == "profile" else diff_compares(a, b)
    d.update(size_before=size_before, size_after=size_after, run_a=before.get("run_id"), run_b=after.get("run_id"))
    return d


def _num(v, fmt="{:.3g}") -> str:
    return "-" if v is None else fmt.format(v)


def delta_lines(d: dict) -> list[str]:
    out = []
    if d["kind"] == "profile":
        out.append(f"total {_num(d['total_ms_a'], '{:.4g}')} ms \u2192 {_num(d['total_ms_b'], '{:.4g}')} ms "
                   f"(\u00d7{_num(d['total_ratio'])})")
        if d["ops"]:
            out.append(f"largest per-op changes ({len(d['ops'])} ops in both):")
        for c in d["ops"][:TOP]:
            out.append(f"  {c['delta_ms']:+.4f} ms  {c['ms_a']:.4f} \u2192 {c['ms_b']:.4f}  {c['type'] or '?'} "
                       f"{c['name']}")
        for side, label in (("only_a", "only before"), ("only_b", "only after")):
            if d[side]:
                out.append(f"{len(d[side])} ops {label}: " + ", ".join(o["name"] for o in d[side][:TOP])
                           + (" \u2026" if len(d[side]) > TOP else ""))
    else:
        for m in d["modes"]:
            out.append(f"{m['mode']}: worst output rel_l2 {_num(m['rel_l2_a']) if m['in_a'] else 'n/a'} \u2192 "
                       f"{_num(m['rel_l2_b']) if m['in_b'] else 'n/a'}")
    out.append(f"size {fmt_bytes(d['size_before'])} \u2192 {fmt_bytes(d['size_after'])}")
    return out
