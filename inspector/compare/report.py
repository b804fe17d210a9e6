"""A self-contained HTML report of a comparison: inline SVG plots (hand-written, no plotting library),
tables, no scripts and no external files, so it can be attached to a bug report as it is."""
from __future__ import annotations

import datetime
import html
import json
import math
import os

from mnnscope.inspector.compare.errormap import TIME_FLOOR_MS, speed_text
from mnnscope.inspector.compare.metrics import worst_output, worst_output_error
from mnnscope.inspector.convert.settings import ConvertSettings, graph_settings
from mnnscope.inspector.model.graph import ModelGraph

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
LOG_FLOOR = 1e-9  # rel L2 below this is drawn on the floor line (exact or float noise)

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 7px;text-align:left;
vertical-align:top}th{background:#f4f4f4}.ok{color:#18794e;font-weight:600}.bad{color:#c62828;font-weight:600}
.close{color:#a15c00;font-weight:600}
.mono{font-family:ui-monospace,monospace;font-size:12px}.muted{color:#777}details{margin:6px 0}
svg text{font-family:system-ui,sans-serif}
"""


def _e(v) -> str:
    return html.escape(str(v), quote=True)


def _g(v, fmt="{:.3g}") -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return fmt.format(v)


def _verdict(ok: bool) -> str:
    return '<span class="ok">within</span>' if ok else '<span class="bad">over</span>'


TIER_CLASS = {"match": "ok", "close": "close", "wrong": "bad", "failed": "bad"}


def _tier(m: dict) -> str:
    v = m.get("verdict") or ("failed" if m.get("error") else "match" if m.get("ok") else "wrong")
    return f"<span class='{TIER_CLASS.get(v, 'bad')}' title='{_e(m.get('cause') or '')}'>{_e(v)}</span>"


def _log(v) -> float:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return math.log10(LOG_FLOOR)
    if math.isinf(v):
        return 1.0
    return math.log10(min(max(v, LOG_FLOOR), 10.0))


# ----- plots -----------------------------------------------------------------------------------------------
def error_depth_svg(modes: list[dict], width: int = 900, height: int = 320) -> str:
    """Relative L2 (log scale) of every matched tensor against its depth, one series per mode."""
    # Float tensors only: integer ones (indices, shapes) are exact or wrong, not a curve.
    series = [(m["mode"], [(t["depth"], t["rel_l2"], t["name"], t.get("within")) for t in m.get("tensors", [])
                           if t.get("mismatch") is None],
               m.get("first_divergence")) for m in modes if m.get("tensors")]
    if not series:
        return '<p class="muted">no measured tensors</p>'
    max_depth = max((d for _, pts, _ in series for d, *_ in pts), default=1) or 1
    left, right, top, bottom = 60, 150, 14, 40
    pw, ph = width - left - right, height - top - bottom
    y_lo, y_hi = math.log10(LOG_FLOOR), 1.0

    def x(d):
        return left + pw * d / max_depth

    def y(v):
        return top + ph * (y_hi - _log(v)) / (y_hi - y_lo)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
           f'aria-label="error against depth">',
           f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fff" stroke="#bbb"/>']
    for p in range(int(y_lo), int(y_hi) + 1):
        yy = top + ph * (y_hi - p) / (y_hi - y_lo)
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" font-size="11" text-anchor="end">1e{p}</text>')
    for k in range(6):
        d = max_depth * k / 5
        out.append(f'<text x="{x(d):.1f}" y="{height - 14}" font-size="11" text-anchor="middle">{d:.0f}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 5}" font-size="11" text-anchor="middle">'
               f'depth (ONNX node in topological order)</text>')
    out.append(f'<text x="12" y="{top + ph / 2}" font-size="11" transform="rotate(-90 12 {top + ph / 2})" '
               f'text-anchor="middle">relative L2 error</text>')
    for i, (name, pts, fd) in enumerate(series):
        colour = COLOURS[i % len(COLOURS)]
        pts = sorted(pts)
        path = " ".join(f"{x(d):.1f},{y(v):.1f}" for d, v, *_ in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.2" opacity="0.8"/>')
        for d, v, tname, ok in pts:
            if ok is False:
                out.append(f'<circle cx="{x(d):.1f}" cy="{y(v):.1f}" r="2.2" fill="{colour}">'
                           f'<title>{_e(name)}: {_e(tname)} rel L2 {_g(v)}</title></circle>')
        if fd:
            cx, cy = x(fd["depth"]), y(fd["rel_l2"])
            out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="none" stroke="{colour}" stroke-width="2">'
                       f'<title>{_e(name)} first divergence: {_e(fd["onnx_node"])}</title></circle>')
        ly = top + 14 + 16 * i
        out.append(f'<line x1="{left + pw + 12}" x2="{left + pw + 32}" y1="{ly - 4}" y2="{ly - 4}" stroke="{colour}" '
                   f'stroke-width="2"/><text x="{left + pw + 38}" y="{ly}" font-size="12">{_e(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def neighbourhood_svg(graph: ModelGraph, mode: dict, hops: int = 2, width: int = 900) -> str:
    """The ONNX nodes around the first divergence, coloured by their output's verdict."""
    fd = mode.get("first_divergence")
    if not fd or graph is None:
        return ""
    by_name = {}
    for nid, d in graph.g.nodes(data=True):
        by_name[d.get("name") or nid] = nid
    region = [by_name[n["name"]] for n in fd["region"] if n["name"] in by_name]
    if not region:
        return ""
    g = graph.g
    keep = set(region)
    frontier = set(region)
    for _ in range(hops):
        nxt = set()
        for n in frontier:
            nxt |= set(g.predecessors(n)) | set(g.successors(n))
        nxt -= keep
        keep |= nxt
        frontier = nxt
    if len(keep) > 40:  # wide fan-outs: keep the closest by topological distance
        order = {n: i for i, n in enumerate(graph.topological_order())}
        centre = order.get(region[0], 0)
        keep = set(sorted(keep, key=lambda n: abs(order.get(n, 0) - centre))[:40]) | set(region)
    tensors = {t["name"]: t for t in mode.get("tensors", [])}
    layer: dict[str, int] = {}
    for n in [n for n in graph.topological_order() if n in keep]:
        layer[n] = max((layer[p] + 1 for p in g.predecessors(n) if p in layer), default=0)
    columns: dict[int, list[str]] = {}
    for n, k in layer.items():
        columns.setdefault(k, []).append(n)
    bw, bh, gx, gy = 150, 40, 40, 14
    ncol = max(columns) + 1
    nrow = max(len(v) for v in columns.values())
    w = max(width, ncol * (bw + gx) + 20)
    h = nrow * (bh + gy) + 20
    pos = {}
    for k, nodes in columns.items():
        for r, n in enumerate(nodes):
            pos[n] = (10 + k * (bw + gx), 10 + r * (bh + gy))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" aria-label="neighbourhood">']
    for a, b in g.edges():
        if a in pos and b in pos:
            (x1, y1), (x2, y2) = pos[a], pos[b]
            out.append(f'<line x1="{x1 + bw}" y1="{y1 + bh / 2}" x2="{x2}" y2="{y2 + bh / 2}" stroke="#999"/>')
    for n, (x0, y0) in pos.items():
        d = g.nodes[n]
        rows = [tensors[t] for t in d["outputs"] if t in tensors]
        if not rows:
            fill, label = "#e0e0e0", "no MNN tensor"
        else:
            worst = worst_output(rows)
            fill = "#c8e6c9" if all(r.get("within") for r in rows) else "#ffcdd2"
            label = f"rel L2 {_g(worst.get('rel_l2'))}"
        stroke = "#c62828" if n in region else "#777"
        name = d.get("name") or n
        short = name if len(name) <= 24 else "…" + name[-23:]
        out.append(f'<g><title>{_e(name)} ({_e(d["op_type"])}) {label}</title>'
                   f'<rect x="{x0}" y="{y0}" width="{bw}" height="{bh}" rx="4" fill="{fill}" stroke="{stroke}" '
                   f'stroke-width="{2 if n in region else 1}"/>'
                   f'<text x="{x0 + 5}" y="{y0 + 14}" font-size="11" font-weight="600">{_e(d["op_type"])}</text>'
                   f'<text x="{x0 + 5}" y="{y0 + 26}" font-size="9">{_e(short)}</text>'
                   f'<text x="{x0 + 5}" y="{y0 + 37}" font-size="9">{_e(label)}</text></g>')
    out.append("</svg>")
    return "".join(out)


# ----- document --------------------------------------------------------------------------------------------
def _summary_table(r: dict) -> str:
    rows = ["<table><tr><th>mode</th><th>tier</th><th>verdict</th><th>worst output rel L2</th><th>cosine</th>"
            "<th>SQNR dB</th><th>MNN ms per run</th><th>speed</th><th>first divergence</th><th>tolerance</th>"
            "<th>note</th></tr>"]
    for m in r["modes"]:
        if m.get("error"):
            rows.append(f"<tr><td>{_mode_label(m)}</td><td>{_tier(m)}</td><td class='bad'>error</td>"
                        f"<td colspan='8'>{_e(m.get('cause') or m['error'])}</td></tr>")
            continue
        worst = worst_output(m["outputs"])
        fd = m.get("first_divergence")
        where = f"{_e(fd['onnx_node'])} ({_e(fd['op_type'])})" if fd else "-"
        rows.append(f"<tr><td>{_mode_label(m)}</td><td>{_tier(m)}</td><td>{_verdict(m['ok'])}</td><td>{_g(worst.get('rel_l2'))}</td>"
                    f"<td>{_g(worst.get('cosine'), '{:.6f}')}</td><td>{_g(worst.get('sqnr_db'), '{:.1f}')}</td>"
                    f"<td>{_g((m.get('timing') or {}).get('ms'), '{:.4g}')}</td><td class='muted'>{_speed(m)}</td>"
                    f"<td>{where}</td><td class='muted'>{_e(m['tolerance']['rule'])}</td>"
                    f"<td>{_e(m.get('effect') or '')}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def _speed(m: dict) -> str:
    """The timed runs' spread and what the time cannot say (errormap.speed_caveat)."""
    t = m.get("timing") or {}
    if not isinstance(t.get("ms"), (int, float)):
        return _e(t.get("error") or "-")
    spread = (f"{_g(t.get('ms_min'), '{:.3g}')}-{_g(t.get('ms_max'), '{:.3g}')} ms, {t.get('runs')} runs"
              if t.get("ms_min") is not None else f"{t.get('runs')} runs")
    others = t.get("within_noise_of") or []
    caveat = (f"noise: under {TIME_FLOOR_MS:g} ms" if t["ms"] < TIME_FLOOR_MS else
              f"\u2248 {', '.join(others)} (within run-to-run noise)" if others else "")
    return _e(spread) + (f"<br><b>{_e(caveat)}</b>" if caveat else "")


def _mode_label(m: dict) -> str:
    return _e(m["mode"]) + (" (emulated)" if m.get("emulated") else "")


def _divergence(m: dict, graph) -> str:
    fd = m.get("first_divergence")
    parts = [f"<h2>{_mode_label(m)}: {_e(m.get('description', ''))}</h2>"]
    if m.get("emulated"):
        real = m.get("real_mode") or {}
        parts.append("<p class='muted'>Emulated: ONNX Runtime on a copy of the model rounded to "
                     f"{_e(m['mode'][:4])} at every operator boundary (weights, inputs, outputs); accumulation inside "
                     "each op stays fp32 and fused kernels are not modelled. Real arithmetic on this machine: "
                     f"{'available' if m.get('real_low_precision') else 'not available'}"
                     f"{': ' + _e(real['reason']) if real.get('reason') else ''}.</p>")
        if m.get("keep_fp32"):
            parts.append("<p>Keep in fp32 on the device: " + ", ".join(
                f"<span class='mono'>{_e(e['onnx_node'])}</span> ({_e(e['op_type'])})" for e in m["keep_fp32"]) + "</p>")
    if m.get("verdict"):
        parts.append(f"<p>Verdict: {_tier(m)}: {_e(m.get('cause') or '')}"
                     + (f"<br>Failed at ONNX node <span class='mono'>{_e(m['failed_node'])}</span>"
                        if m.get("failed_node") else "") + "</p>")
    if m.get("error"):
        return "".join(parts) + f"<p class='bad'>{_e(m['error'])}</p>"
    if fd:
        region = ", ".join(f"{_e(n['name'])} ({_e(n['op_type'])})" for n in fd["region"])
        parts.append(f"<h3>First divergence</h3><p><b>{_e(fd['onnx_node'])}</b> ({_e(fd['op_type'])}), tensor "
                     f"<span class='mono'>{_e(fd['tensor'])}</span>, MNN op <span class='mono'>{_e(fd.get('mnn_op'))}"
                     f"</span></p><p>ONNX nodes in the region (no MNN tensor between them): {region}</p>")
        if len(fd.get("chain") or []) > 1:
            parts.append(f"<p>The error is introduced here and carried over the tolerance by: "
                         f"{_e(' -> '.join(fd['chain']))} (first over tolerance: <span class='mono'>"
                         f"{_e(fd['over_tolerance_at']['tensor'])}</span>).</p>")
        parts.append("<table><tr><th></th><th>tensor</th><th>rel L2</th><th>max abs</th><th>cosine</th><th>verdict</th></tr>")
        for i in fd["inputs"]:
            parts.append(f"<tr><td>before</td><td class='mono'>{_e(i['tensor'])}</td><td>{_g(i.get('rel_l2'))}</td>"
                         f"<td>{_g(i.get('max_abs'))}</td><td>{_g(i.get('cosine'), '{:.6f}')}</td>"
                         f"<td>{_verdict(i.get('within', True))}</td></tr>")
        parts.append(f"<tr><td>after</td><td class='mono'>{_e(fd['tensor'])}</td><td>{_g(fd['rel_l2'])}</td>"
                     f"<td>{_g(fd['max_abs'])}</td><td>{_g(fd['cosine'], '{:.6f}')}</td>"
                     f"<td>{_verdict(fd.get('within', False))}</td></tr></table>")
        parts.append(neighbourhood_svg(graph, m))
    else:
        parts.append("<p>No divergence reaches the outputs.</p>")
    if m.get("harmless"):
        parts.append("<h3>Harmless divergences</h3><p>Over tolerance where they are made, but their error does not "
                     "reach the outputs (masked, overwritten or washed out).</p><ul>")
        parts += [f"<li>{_e(h['onnx_node'])} ({_e(h['op_type'])}): rel L2 {_g(h['rel_l2'])}</li>" for h in m["harmless"][:50]]
        parts.append("</ul>")
    if m.get("ranking"):
        parts.append("<h3>Operators ranked by error introduced</h3><p class='muted'>Error added: the op's scaled "
                     "relative L2 error beyond what its inputs carried; always finite (a NaN/inf that differs from "
                     "the reference counts as one element wholly wrong; the same non-finite value on both sides, or "
                     "an infinity against a same-signed value of magnitude >= 3e4, counts as equal).</p><table><tr><th>#</th><th>ONNX node</th><th>type</th>"
                     "<th>error introduced</th><th>op's rel L2</th><th>inputs' error</th><th>MNN ops</th></tr>")
        for k, e in enumerate(m["ranking"][:25], 1):
            parts.append(f"<tr><td>{k}</td><td class='mono'>{_e(e['onnx_node'])}</td><td>{_e(e['op_type'])}</td>"
                         f"<td>{_g(e['introduced'])}</td><td>{_g(e['rel_l2'])}</td><td>{_g(e.get('inputs_error'))}</td>"
                         f"<td class='mono'>{_e(', '.join(e.get('mnn_ops', [])))}</td></tr>")
        parts.append("</table>")
    if m.get("unmatched"):
        parts.append(f"<details><summary>{len(m['unmatched'])} ONNX tensors without an MNN counterpart</summary><table>"
                     "<tr><th>tensor</th><th>node</th><th>reason</th></tr>")
        parts += [f"<tr><td class='mono'>{_e(u['tensor'])}</td><td>{_e(u.get('onnx_node') or '')} "
                  f"({_e(u.get('op_type') or '')})</td><td>{_e(u['reason'])}</td></tr>" for u in m["unmatched"][:2000]]
        parts.append("</table></details>")
    rows = m.get("tensors", [])
    parts.append(f"<details><summary>all {len(rows)} measured tensors</summary><table><tr><th>depth</th><th>tensor</th>"
                 "<th>op</th><th>rel L2</th><th>max abs</th><th>cosine</th><th>SQNR dB</th><th>verdict</th></tr>")
    parts += [f"<tr><td>{t['depth']}</td><td class='mono'>{_e(t['name'])}</td><td>{_e(t['op_type'])}</td>"
              f"<td>{_g(t['rel_l2'])}</td><td>{_g(t['max_abs'])}</td><td>{_g(t['cosine'], '{:.6f}')}</td>"
              f"<td>{_g(t['sqnr_db'], '{:.1f}')}</td><td>{_verdict(t['within'])}</td></tr>" for t in rows[:5000]]
    parts.append("</table></details>")
    return "".join(parts)


def _fix(fix: dict | None) -> str:
    if not fix:
        return ""
    ran = fix.get("possible") and fix.get("before") and fix.get("after")
    out = [f"<h2>{'Keep-in-float fix' if ran else 'Fix suggestion'} for {_e(fix['mode'])}</h2>"]
    if not ran:
        return out[0] + f"<p>{_e(fix.get('note') or 'not possible')}</p>"
    b, a = worst_output_error(fix["before"]["outputs"]), worst_output_error(fix["after"]["outputs"])
    verb = "Emulated again" if fix.get("emulated") else "Reconverted"
    # by the ONNX nodes the ranking names, with MNN's op names (what --fix-keep takes) after them
    nodes = list(dict.fromkeys(e["onnx_node"] if isinstance(e, dict) else e for e in fix.get("onnx_nodes") or []))
    ops = f"<span class='mono'>{_e(', '.join(fix['skip_ops']))}</span>"
    kept = f"{_e(', '.join(nodes))} (MNN ops {ops})" if nodes and nodes != list(fix["skip_ops"]) else ops
    out.append(f"<p>{verb} with {kept} kept in float ({_e(fix['how'])}). Worst output "
               f"rel L2 {_g(b)} &rarr; {_g(a)} ({_g(fix['gain'], '{:.1f}')}x better); "
               f"{_verdict(fix['before']['ok'])} &rarr; {_verdict(fix['after']['ok'])} tolerance."
               + ("" if fix.get("emulated") else f" Size {_g((fix.get('size_bytes') or {}).get('before'), '{:,}')} "
                                                 f"&rarr; {_g((fix.get('size_bytes') or {}).get('after'), '{:,}')} "
                                                 "bytes.") + "</p>")
    judged = fix.get("judged") or {}
    if judged.get("outputs"):
        # the figure the tolerance is judged on: a verdict that flips on a small change of rel L2 reads as arbitrary
        # without it
        out.append(f"<p>The tolerance ({_e(judged.get('rule') or '')}) is judged on "
                   f"{_e(judged['outputs'][0]['figure'])}, not on rel L2"
                   + (" (the verdict flipped)" if judged.get("flipped") else "") + ":</p>"
                   "<table><tr><th>output</th><th>figure</th><th>before</th><th>after</th><th>limit</th>"
                   "<th>verdict</th></tr>")
        for j in judged["outputs"]:
            out.append(f"<tr><td class='mono'>{_e(j['output'])}</td><td>{_e(j['figure'])}</td><td>{_g(j['before'])}"
                       f"</td><td>{_g(j['after'])}</td><td>{_e(j['op'])} {_g(j['limit'])}"
                       + (f" <span class='muted'>({_e(j['limit_words'])})</span>" if j.get("limit_words") else "")
                       + f"</td><td>{_verdict(j['within_before'])} &rarr; {_verdict(j['within_after'])}</td></tr>")
        out.append("</table>")
    if fix.get("note"):
        out.append(f"<p class='muted'>{_e(fix['note'])}</p>")
    if (fix.get("next") or {}).get("text"):
        out.append(f"<p>{_e(fix['next']['text'])}</p>")
    if fix.get("better"):
        out.append(f"<p>{_e(fix['better'])}</p>")
    if fix.get("command"):
        out.append(f"<p>This fix again:</p><pre class='mono'>{_e(fix['command'])}</pre>")
    return "".join(out)


# ----- what the comparison ran on and with: enough to run it again --------------------------------------------
def _inputs(r: dict) -> str:
    sources = {s["name"]: s for s in r.get("input_sources") or []}
    rows = ["<table><tr><th>input</th><th>dtype, shape</th><th>data</th></tr>"]
    for i in r.get("inputs") or []:
        src = sources.get(i["name"]) or {}
        rows.append(f"<tr><td class='mono'>{_e(i['name'])}</td><td>{_e(i['dtype'])}{_e(i['shape'])}</td>"
                    f"<td>{_e(src.get('text') or 'not recorded')}</td></tr>")
    rows.append("</table>")
    return "".join(rows) if r.get("inputs") else "<p class='muted'>no inputs recorded</p>"


def _calibration(m: dict, settings: ConvertSettings | None) -> str:
    """What a full int8 mode was calibrated on, in words (compare.calibration.calibration_of's entry)."""
    cal = m.get("calibration") or {}
    int8 = settings.int8.effective() if settings is not None and settings.int8 is not None else None
    if int8 is None:
        return ""
    how = f" ({int8.feature_method}/{int8.weight_method}, {int8.quant_bits} bits)"
    source = cal.get("source") or (int8.sources() or [None])[0]
    if source == "comparison":
        extra = (cal.get("samples") or 1) - (1 if cal.get("compared_input") else 0)
        first = (cal.get("compared_input") and "the compared input"
                 + (" (random data itself)" if cal.get("compared_input_random") else "") + " and ") or ""
        return (f"calibrated on {first}{extra} random sample{'s' if extra != 1 else ''} of its shapes, seeds "
                f"{int8.seed + 1}..{int8.seed + extra} (made by this comparison){how}")
    if source == "calib_random":
        return f"calibrated on {int8.calib_random} random samples, seed {int8.seed}{how}"
    if source == "calib_dir":
        return f"calibrated on the folder {int8.calib_dir} (up to {int8.samples} samples){how}"
    if source == "calib_files":
        return f"calibrated on {len(int8.calib_files)} file(s): {', '.join(int8.calib_files)}{how}"
    if source == "calib_text":
        return f"calibrated on the lines of {int8.calib_text} through {int8.tokenizer}{how}"
    return f"calibrated{how}"


def _conversions(r: dict) -> str:
    rows = ["<table><tr><th>mode</th><th>conversion (what differs from the converter's defaults)</th>"
            "<th>converter flags</th><th>run</th><th>size</th></tr>"]
    for m in r["modes"]:
        conv = m.get("conversion") or {}
        settings = None
        if conv.get("settings"):
            try:
                settings = ConvertSettings.from_json(conv["settings"])
            except (TypeError, ValueError):
                settings = None
        if m.get("emulated"):
            what, flags = "none: ONNX Runtime on a copy of the model rounded at every operator boundary", ""
        elif conv.get("given"):
            what, flags = f"none: the given file {m.get('mnn_model') or 'the given .mnn'} as it is", ""
        elif settings is not None:
            said = [d for d in settings.describe() if not d.startswith("int8 (")]
            cal = _calibration(m, settings)
            what = ", ".join(said + ([f"full int8, {cal}"] if cal else [])) or "the converter's defaults"
            flags = " ".join(settings.to_args()) + ("; then mnnquant" if settings.int8 is not None else "")
        else:
            what, flags = "not recorded", ""
        run = m.get("run") or {}
        t = m.get("timing") or {}
        runtime = (f"{(run.get('backend_used') or 'CPU')}, precision {m.get('precision') or 'high'}, memory "
                   f"{m.get('memory') or 'normal'}" + (f", {t['threads']} thread(s)" if t.get("threads") else ""))
        rows.append(f"<tr><td>{_mode_label(m)}</td><td>{_e(what)}</td><td class='mono'>{_e(flags)}</td>"
                    f"<td>{_e(runtime if not m.get('emulated') else 'ONNX Runtime, emulated')}</td>"
                    f"<td>{_g(conv.get('size_bytes'), '{:,} bytes')}</td></tr>")
    rows.append("</table>")
    rep = r.get("reproduce") or {}
    if rep.get("convert_settings"):
        changed = graph_settings(rep["convert_settings"]).describe()
        rows.append("<p>Every mode converted from the Convert dock's settings (<code>--convert-settings</code>)"
                    + (f", which differ from the defaults in: {_e(', '.join(changed))}" if changed else "")
                    + "; each mode sets its own precision fields.</p>")
    return "".join(rows)


def _reproduce(r: dict) -> str:
    rep = r.get("reproduce")
    if not rep:
        return ""
    out = ["<h2>Run it again</h2><p>The same comparison from the command line (the inputs, modes, tolerance and "
           "conversion settings above):</p>", f"<pre class='mono'>{_e(rep['command'])}</pre>"]
    if rep.get("convert_settings"):
        out.append(f"<p>with <code>{_e(rep['settings_file'])}</code> beside it holding:</p>"
                   f"<pre class='mono'>{_e(json.dumps(rep['convert_settings'], indent=1))}</pre>")
    if rep.get("not_carried"):
        out.append("<p class='bad'>The command line cannot say all of this run; it differs there:</p><ul>"
                   + "".join(f"<li>{_e(n)}</li>" for n in rep["not_carried"]) + "</ul>")
    return "".join(out)


def render_report(r: dict, graph: ModelGraph | None = None) -> str:
    ref = r["reference"]
    speed = speed_text(r["modes"])
    body = [f"<h1>mnnscope compare: {_e(os.path.basename(r['model']))}</h1>",
            f"<p class='muted'>{_e(r['model'])}<br>Reference: ONNX Runtime {_e(ref.get('version'))}, fp32, graph "
            f"optimisations off, {ref['tensors']} tensors. "
            f"Made {datetime.datetime.now().isoformat(timespec='seconds')}.</p>",
            f"<p>Overall: {_verdict(r['ok'])} tolerance in every mode.</p>" if r["ok"] else
            "<p>Overall: <span class='bad'>at least one mode has outputs over tolerance</span>.</p>",
            _summary_table(r), f"<p>{_e(speed)}.</p>" if speed else "",
            "<h2>Inputs</h2>", _inputs(r), "<h2>Conversion and run per mode</h2>", _conversions(r), _reproduce(r),
            "<h2>Error against depth</h2>", error_depth_svg(r["modes"]),
            "<p class='muted'>Dots: tensors over tolerance; rings: the first divergence of each mode.</p>"]
    body += [_divergence(m, graph) for m in r["modes"]]
    body.append(_fix(r.get("fix")))
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>mnnscope compare report</title>"
            f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>")


def write_report(r: dict, path, graph: ModelGraph | None = None) -> str:
    path = os.path.abspath(os.fspath(path))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(render_report(r, graph))
    return path
