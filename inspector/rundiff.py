"""The difference between two stored runs of one kind, as data: a profile's total and per-op times, a
comparison's worst output error per mode, the settings that changed. `mnnscope runs diff` prints it; the
Convert dock's "Reconvert and re-run" shows it for the run before and after a reconversion."""
from __future__ import annotations

from mnnscope.inspector.compare.metrics import worst_output_error


def worst_rel_l2(summary: dict) -> dict[str, float | None]:
    """{mode: worst relative L2 error over the model's outputs} of a compare run (compare.metrics'
    worst_output rule); None for a mode that compared no outputs (it failed)."""
    return {m.get("mode"): worst_output_error(m["outputs"]) if m.get("outputs") else None
            for m in (summary or {}).get("modes") or []}


def _op_times(run: dict) -> dict[str, float]:
    """Median ms per op name; a name that occurs twice (rare: MNN's raster copies) sums its occurrences."""
    out: dict[str, float] = {}
    for op in run.get("ops") or []:
        if op.get("name") is not None and isinstance(op.get("ms"), (int, float)):
            out[op["name"]] = out.get(op["name"], 0.0) + op["ms"]
    return out


def _ratio(b, a) -> float | None:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or a == 0:
        return None
    return b / a


def diff_profiles(a: dict, b: dict) -> dict:
    ta, tb = _op_times(a), _op_times(b)
    common = [n for n in ta if n in tb]
    changes = [{"name": n, "type": None, "ms_a": ta[n], "ms_b": tb[n], "delta_ms": tb[n] - ta[n],
                "ratio": _ratio(tb[n], ta[n])} for n in common]
    types = {op["name"]: op.get("type") for op in (a.get("ops") or []) + (b.get("ops") or [])}
    for c in changes:
        c["type"] = types.get(c["name"])
    changes.sort(key=lambda c: -abs(c["delta_ms"]))
    total_a, total_b = (a.get("summary") or {}).get("total_ms"), (b.get("summary") or {}).get("total_ms")
    return {"kind": "profile", "total_ms_a": total_a, "total_ms_b": total_b, "total_ratio": _ratio(total_b, total_a),
            "ops": changes,
            "only_a": [{"name": n, "type": types.get(n), "ms": ta[n]} for n in ta if n not in tb],
            "only_b": [{"name": n, "type": types.get(n), "ms": tb[n]} for n in tb if n not in ta]}


def diff_compares(a: dict, b: dict) -> dict:
    wa, wb = worst_rel_l2(a.get("summary")), worst_rel_l2(b.get("summary"))
    modes = list(wa) + [m for m in wb if m not in wa]
    return {"kind": "compare", "modes": [{"mode": m, "rel_l2_a": wa.get(m), "rel_l2_b": wb.get(m),
                                          "in_a": m in wa, "in_b": m in wb} for m in modes]}


def settings_changed(a: dict, b: dict) -> dict:
    sa, sb = a.get("settings") or {}, b.get("settings") or {}
    return {k: [sa.get(k), sb.get(k)] for k in list(sa) + [k for k in sb if k not in sa] if sa.get(k) != sb.get(k)}
