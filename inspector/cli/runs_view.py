"""What `mnnscope runs` shows of a stored run: its headline figure, its list line, and the diff of two runs."""
from __future__ import annotations

import math
import time
from pathlib import Path

from mnnscope.inspector.rundiff import worst_rel_l2


# ----- headline figures ------------------------------------------------------------------------------------
def headline(run: dict) -> dict:
    s = run.get("summary") or {}
    kind = run.get("kind")
    if s.get("error"):
        err = s["error"]
        return {"error": err.get("message") if isinstance(err, dict) else str(err)}
    if kind == "profile":
        return {"total_ms": s.get("total_ms")}
    if kind == "convert":
        return {"ok": s.get("ok"), "size_bytes": s.get("size_bytes")}
    if kind == "compare":
        return {"ok": s.get("ok"), "worst_rel_l2": worst_rel_l2(s)}
    if kind == "sweep":
        cells = [c for c in s.get("cells") or [] if isinstance(c.get("total_ms"), (int, float))]
        best = min(cells, key=lambda c: c["total_ms"]) if cells else None
        # Name the best cell by the axes that vary, not by every setting it shares with the others.
        axes = [k for k in ("threads", "precision_requested", "memory_mode", "backend_requested")
                if len({str(c.get(k)) for c in s.get("cells") or []}) > 1]
        return {"cells": len(s.get("cells") or []), "best_ms": best["total_ms"] if best else None,
                "best": {k: best.get(k) for k in axes} if best else None}
    return {}


def num(v, fmt="{:.3g}") -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return str(v)
    return fmt.format(v)


def fmt_bytes(n) -> str:
    if n is None:
        return "?"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def headline_text(run: dict) -> str:
    h = headline(run)
    if "error" in h:
        return f"error: {h['error']}"
    kind = run.get("kind")
    if kind == "profile":
        return f"{num(h['total_ms'], '{:.4g}')} ms"
    if kind == "convert":
        return f"ok {fmt_bytes(h['size_bytes'])}" if h["ok"] else "failed"
    if kind == "compare":
        modes = ", ".join(f"{m} rel_l2 {num(v)}" if v is not None else f"{m} no outputs compared"
                          for m, v in h["worst_rel_l2"].items())
        return ("" if h["ok"] else "FAILED ") + (modes or "no modes")
    if kind == "sweep":
        if h["best_ms"] is None:
            return f"{h['cells']} cells, none timed"
        cell = ", ".join(f"{k}={v}" for k, v in (h["best"] or {}).items() if v is not None)
        return f"best {num(h['best_ms'], '{:.4g}')} ms ({cell}) of {h['cells']} cells"
    return ""


def when_text(t) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


def model_name(run: dict) -> str | None:
    return Path(run["model_path"]).name if run.get("model_path") else None


def brief(run: dict) -> dict:
    """A run as a list shows it (no ops, no summary)."""
    keys = ("id", "time", "kind", "model_path", "model_sha256", "backend_requested", "backend_used", "precision",
            "run_dir")
    out = {k: run.get(k) for k in keys}
    out.update(when=when_text(run.get("time")), model=model_name(run), headline=headline(run),
               headline_text=headline_text(run))
    return out


def list_line(b: dict) -> str:
    return (f"{b['id']:>5}  {b['when']}  {b['kind']:<8} {(b['model'] or '-'):<28} {(b['backend_used'] or '-'):<7} "
            f"{(b['precision'] or '-'):<8} {b['headline_text']}")


# ----- diff ----------------------------------------------------------------------------------------------
def print_diff(d: dict, top: int) -> None:
    for side in ("a", "b"):
        r = d[side]
        print(f"{side}: run {r['id']} {r['kind']} of {r['model'] or '-'} at {r['when']} ({r['headline_text']})")
    for k, (va, vb) in d["settings_changed"].items():
        print(f"  setting {k}: {va} -> {vb}")
    if d["kind"] == "compare":
        for m in d["modes"]:
            print(f"  {m['mode']:<8} worst output rel_l2 {num(m['rel_l2_a']) if m['in_a'] else 'n/a'} -> "
                  f"{num(m['rel_l2_b']) if m['in_b'] else 'n/a'}")
        return
    print(f"  total {num(d['total_ms_a'], '{:.4g}')} ms -> {num(d['total_ms_b'], '{:.4g}')} ms "
          f"(x{num(d['total_ratio'])})")
    print(f"  {len(d['ops'])} ops in both; largest changes first:")
    for c in d["ops"][:max(0, top)]:
        print(f"    {c['delta_ms']:+.4f} ms  {c['ms_a']:.4f} -> {c['ms_b']:.4f}  (x{num(c['ratio'])})  "
              f"{c['type'] or '?'} {c['name']}")
    for side, label in (("only_a", "only in a"), ("only_b", "only in b")):
        if d[side]:
            print(f"  {len(d[side])} ops {label}: " + ", ".join(o["name"] for o in d[side][:top])
                  + (" ..." if len(d[side]) > top else ""))
