"""What `mnnscope runs` prints of stored runs: the list line and the text of a diff. The figures themselves
(headline, brief, diffs) are computed in inspector/history.py, which the window's Runs dock uses too."""
from __future__ import annotations

from mnnscope.inspector.history import (brief, compare_verdicts_text, diff_compares, diff_profiles, diff_row_name,
                                        diff_row_sizes, fmt_bytes, generate_value, headline, headline_text,
                                        mode_time_text, model_name, num, pct, ratio_words, setting_text,
                                        settings_changed, when_text, whole_run_text, worst_rel_l2)

# runs_cmd imports the figures from here, beside the printing
__all__ = ["brief", "diff_compares", "diff_profiles", "fmt_bytes", "headline", "headline_text", "list_line",
           "model_name", "num", "print_diff", "settings_changed", "when_text", "worst_rel_l2"]


def list_line(b: dict) -> str:
    return (f"{b['id']:>5}  {b['when']}  {b['kind']:<8} {(b['model'] or '-'):<28} {(b['backend_used'] or '-'):<7} "
            f"{(b['precision'] or '-'):<8} {b['headline_text']}")


def print_diff(d: dict, top: int) -> None:
    for side in ("a", "b"):
        r = d[side]
        print(f"{side}: run {r['id']} {r['kind']} of {r['model'] or '-'} at {r['when']} ({r['headline_text']})")
    for k, (va, vb) in d["settings_changed"].items():
        print(f"  setting {k}: {setting_text(k, va)} -> {setting_text(k, vb)}")
    if d["kind"] == "generate":
        for r in d["rows"]:
            print(f"  {r['what']:<20} {generate_value(r['a'], r['what'])} -> {generate_value(r['b'], r['what'])}")
        print(f"  the two runs' tokens agree for the first {d['same_tokens']} of {d['tokens']}")
        return
    if d["kind"] == "convert":
        for side in ("a", "b"):
            kept = d[f"keep_float_{side}"]
            print(f"  {side}: {'ok' if d[f'ok_{side}'] else 'failed'} {fmt_bytes(d[f'size_{side}'])} "
                  f"{d[f'output_{side}'] or ''}" + (f" ({len(kept)} ops kept in float)" if kept else ""))
        if d["size_ratio"] is not None:
            print(f"  size b/a x{num(d['size_ratio'])}")
        return
    if d["kind"] == "compare":
        for m in d["modes"]:
            sides = [side for side in ("a", "b") if m.get(f"fixed_{side}")]
            fixed = f" ({' and '.join(sides)} after {'its fix' if len(sides) == 1 else 'their fixes'})" if sides else ""
            sizes = diff_row_sizes(m, "->")
            size = f", size {sizes}" if sizes else ""
            print(f"  {diff_row_name(m, '->'):<8} worst output rel_l2 {num(m['rel_l2_a']) if m['in_a'] else 'n/a'} -> "
                  f"{num(m['rel_l2_b']) if m['in_b'] else 'n/a'}{fixed}, {compare_verdicts_text(m)}"
                  f"{mode_time_text(m)}{size}")
        return
    print(f"  total {num(d['total_ms_a'], '{:.4g}')} ms -> {num(d['total_ms_b'], '{:.4g}')} ms "
          f"(x{num(d['total_ratio'])}: {ratio_words(d['total_ratio'])})")
    whole = whole_run_text(d)
    if whole:
        print(f"  {whole}")
        return
    what = "ops"
    if d.get("matched_by") == "onnx_node":
        what = "ONNX nodes"
        print(f"  two engines: matched by ONNX node ({pct(d.get('placed_a'))} of a's time and {pct(d.get('placed_b'))} "
              "of b's placed on the nodes)")
    print(f"  {len(d['ops'])} {what} in both; largest changes first:")
    for c in d["ops"][:max(0, top)]:
        print(f"    {c['delta_ms']:+.4f} ms  {c['ms_a']:.4f} -> {c['ms_b']:.4f}  (x{num(c['ratio'])})  "
              f"{c['type'] or '?'} {c['name']}")
    for side, label in (("only_a", "only in a"), ("only_b", "only in b")):
        if d[side]:
            print(f"  {len(d[side])} {what} {label}: " + ", ".join(o["name"] for o in d[side][:top])
                  + (" ..." if len(d[side]) > top else ""))
