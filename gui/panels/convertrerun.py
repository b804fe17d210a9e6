"""The Convert dock's "Reconvert and re-run": `Rerun` follows the Profile and Compare docks' runs (through their
interface: `finished(dict)`, `repeat_last()`), repeats the latest after a reconversion and works out what
changed: the `runs diff` computation (inspector/history.py) on the two results, plus the converted file's size,
as data and as the lines the dock shows."""
from __future__ import annotations

import os

from PySide6.QtCore import QObject, Signal

from mnnscope.inspector.history import fmt_bytes
from mnnscope.inspector.compare.errormap import mode_label
from mnnscope.inspector.compare.options import weights_mode
from mnnscope.inspector.history import (diff_compares, diff_profiles, diff_row_name, diff_row_sizes, mode_time_text,
                                        worst_rel_l2)

TOP = 5  # per-op changes shown
PANELS = {"profile": "Profile", "compare": "Compare"}  # run kind -> the dock that repeats it
HEAD = "Reconvert and re-run:"


def as_run(kind: str, result: dict) -> dict:
    """A service result (profile or compare) in the run store's shape: what history reads."""
    return {"kind": kind, "summary": result, "ops": result.get("ops") or []}


def row_label(m: dict) -> str:
    """What the Compare dock calls a mode row (its tab, less the verdict): the mode, or for a given .mnn (Check X
    against ONNX Runtime) the file, as the mode its weights are judged as ("cnn.fp16.mnn (as fp16w)") or with the mode
    it ran ("cnn.mnn fp32"): "fp32" alone read as a fresh conversion."""
    if m.get("judged_as"):
        return mode_label(m)
    given = os.path.basename(m.get("mnn_model") or "") if (m.get("conversion") or {}).get("given") else ""
    return f"{given} {m['mode']}" if given else m["mode"]


def deltas(kind: str, before: dict, after: dict, size_before: int | None, size_after: int | None) -> dict:
    """history's diff of the two results, with the sizes and run ids added."""
    a, b = as_run(kind, before), as_run(kind, after)
    d = diff_profiles(a, b) if kind == "profile" else diff_compares(a, b)
    d.update(size_before=size_before, size_after=size_after, run_a=before.get("run_id"), run_b=after.get("run_id"))
    if kind == "compare":  # (each mode's own file's size before and after: diff_compares' size_a, size_b)
        # a comparison of a given .mnn (Check X against ONNX Runtime) repeats on the file the reconversion wrote
        given = [next((m.get("mnn_model") for m in r.get("modes") or [] if (m.get("conversion") or {}).get("given")),
                      None) for r in (before, after)]
        d["given_files"] = given if all(given) else None
        used = [{m.get("mode"): (m.get("conversion") or {}).get("settings") for m in r.get("modes") or []}
                for r in (before, after)]
        # the rows as the dock labels them: a checked file's row is that file, judged as its weights' mode, not "fp32"
        # (a new-user try read "fp32: worst output rel_l2 ..." for encoder_block.fp16.mnn -> encoder_block.int8w.mnn)
        labels = [{m.get("mode"): row_label(m) for m in r.get("modes") or [] if m.get("mode")} for r in (before, after)]
        for m in d["modes"]:
            m["label_a"], m["label_b"] = labels[0].get(m["mode"], m["mode"]), labels[1].get(m["mode"], m["mode"])
            # converted with the same settings both times (the dock's changed setting does not reach it): the same
            # file, so a change in its time is run-to-run noise (tryout 2026-12-04 read "1.17x faster" for it)
            a, b = used[0].get(m["mode"]), used[1].get(m["mode"])
            m["same_conversion"] = a is not None and a == b
    return d


def dock_mode(settings) -> tuple[str, str]:
    """The Compare mode whose precision the Convert dock's settings (ConvertSettings or None) convert with, and those
    settings in words: ("fp16w", "fp16 weights"); ("fp32", "float32 weights") for none."""
    mode = weights_mode(bool(settings and settings.fp16), settings.weight_quant_bits if settings else None,
                        settings is not None and settings.int8 is not None)
    what = {"int8": "full int8", "fp16w": "fp16 weights", "fp32": "float32 weights"}.get(
        mode, f"{settings.weight_quant_bits if settings else ''}-bit weights")
    return mode, what


def yours(settings, after: dict) -> dict | None:
    """The dock's conversion among the repeated comparison's modes: {mode, what, in_compare, rel_l2, verdict}; None
    where the comparison checked a given .mnn file (its rows are that file, not the modes' own conversions). The
    Compare dock's modes convert with the dock's other settings and their own precision (fp16w adds --fp16, int8w 8
    bits), so the dock's conversion is what the mode its precision fields match runs."""
    if any((m.get("conversion") or {}).get("given") for m in after.get("modes") or []):
        return None
    mode, what = dock_mode(settings)
    m = next((m for m in after.get("modes") or [] if m.get("mode") == mode), None)
    rel_l2 = worst_rel_l2(after).get(mode)
    return {"mode": mode, "what": what, "in_compare": rel_l2 is not None, "rel_l2": rel_l2,
            "verdict": (m or {}).get("verdict")}


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
    if d["size_before"] is None:  # written beside the last one, not over it (nothing of this name before)
        size_line = f"the dock's conversion: {fmt_bytes(d['size_after'])} (a new file)"
    else:
        size_line = f"size {fmt_bytes(d['size_before'])} \u2192 {fmt_bytes(d['size_after'])}"
    if d["kind"] == "compare":
        # the dock's conversion first: it is what was changed (tryout 2026-12-04 found it only in the last line, under
        # four modes that had each re-run their own, unchanged conversion)
        y = d.get("yours")
        files = d.get("given_files")
        if files:
            a, b = (os.path.basename(f) for f in files)
            out.append(f"checked {a} \u2192 {b}" if a != b else f"checked {a} again (reconverted over it)")
        if y and y["in_compare"]:
            out.append(f"your conversion ({y['what']}) is what {y['mode']} runs: worst output rel_l2 "
                       f"{_num(y['rel_l2'])}" + (f" ({y['verdict']})" if y.get("verdict") else ""))
        elif y:
            out.append(f"your conversion ({y['what']}) is not among the modes compared: tick {y['mode']} in the "
                       "Compare dock to check it")
        out.append(size_line)
        same = [m for m in d["modes"] if m.get("same_conversion")]
        for m in d["modes"]:
            if m in same:
                continue
            sizes = diff_row_sizes(m)
            size = f", size {sizes}" if sizes else ""
            speed = mode_time_text(m).replace(" -> ", " \u2192 ")  # (what fixing the accuracy cost in speed)
            name = diff_row_name(m)  # (a checked file's: two files)
            out.append(f"{name}: worst output rel_l2 {_num(m['rel_l2_a']) if m['in_a'] else 'n/a'} \u2192 "
                       f"{_num(m['rel_l2_b']) if m['in_b'] else 'n/a'}{speed}{size}")
        if same:
            out.append("converted as before (the settings changed do not reach them), worst output rel_l2: "
                       + ", ".join(f"{m.get('label_b', m['mode'])} {_num(m['rel_l2_b'])}" for m in same))
    else:
        out.append(size_line)
    return out


class Rerun(QObject):
    """`begin(size_before)` before the reconversion, `converted(result)` after it; `say(head, lines)` tells the
    dock how it goes, `done(dict)` carries the deltas."""

    say = Signal(str, list)
    done = Signal(dict)
    changed = Signal()  # whether there is a run to repeat changed (last_run)

    def __init__(self, window, parent=None):
        super().__init__(parent)
        self.window_ = window
        self.last_run = None   # (kind, result) of the Profile/Compare dock's latest run
        self.pending = None    # the reconvert-and-re-run in progress
        self._watched: set[int] = set()

    def watch(self) -> None:
        """Follow the Profile and Compare docks' finished runs (whichever ran last is repeated); docks built
        later (or absent) are picked up on the next call."""
        for kind, name in PANELS.items():
            panel = self.window_.panels.get(name)
            signal = getattr(panel, "finished", None)
            if signal is not None and id(panel) not in self._watched:
                self._watched.add(id(panel))
                signal.connect(lambda result, k=kind: self._finished(k, result))

    def begin(self, size_before: int | None) -> bool:
        self.watch()
        if self.last_run is None:
            self.say.emit(HEAD, ["run a profile or a comparison first: it is what gets repeated after the "
                                 "reconversion"])
            return False
        kind, before = self.last_run
        self.pending = {"kind": kind, "before": before, "size_before": size_before, "size_after": None,
                        "repeating": False}
        self.say.emit(HEAD, [f"reconverting, then repeating the last {kind}\u2026"])
        return True

    def cancel(self) -> None:
        self.pending = None

    def forget(self) -> None:
        """Another model: the last run measured the previous one, so there is nothing to repeat for this one."""
        self.pending = None
        self.last_run = None
        self.changed.emit()

    def converted(self, result) -> None:
        """The reconversion ended: repeat the last run on the new file (nothing when it failed)."""
        p = self.pending
        if p is None:
            return
        if not result.ok:
            self.pending = None
            self.say.emit(HEAD, ["the reconversion failed: nothing was re-run"])
            return
        p["size_after"], p["repeating"], p["settings"] = result.size_bytes, True, result.settings
        panel = self.window_.panels.get(PANELS[p["kind"]])
        # the repeat converts with this conversion's settings: repeated with the defaults, the changed setting
        # changed nothing (a tester set GELU to exact erf and read "fp32: worst output rel_l2 0.00333 -> 0.00333";
        # converted with it, the comparison gives 9e-05)
        if panel is None or not panel.repeat_last(settings=result.settings, output=result.output):
            self.pending = None
            why = getattr(panel, "repeat_why", "") if panel is not None else ""
            self.say.emit(HEAD, [f"the {PANELS[p['kind']]} dock could not repeat its last run"
                                 + (f": {why}" if why else "")])
            return
        self.say.emit(HEAD, [f"reconverted; repeating the last {p['kind']}\u2026"])

    def _finished(self, kind: str, result) -> None:
        if not isinstance(result, dict):
            return
        p, self.last_run = self.pending, (kind, result)
        self.changed.emit()
        if p is None or p["kind"] != kind or not p["repeating"]:
            return
        self.pending = None
        d = deltas(kind, p["before"], result, p["size_before"], p["size_after"])
        if kind == "compare":
            d["yours"] = yours(p.get("settings"), result)
        self.say.emit(f"{PANELS[kind]} before \u2192 after reconverting:", delta_lines(d))
        self.done.emit(d)
