"""The compare service (the CLI presents it): check the request, build the inputs, run every mode against
the reference (modes.run_compare), describe the inputs, write the report, record the run.

A store that cannot record the run costs the record only: `run_id` is None and `warnings` says why
(store.runs.record), as for profile and convert.
"""
from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
from pathlib import Path

import numpy as np

from mnnscope.inspector.compare.errormap import annotate_speed, find_mode
from mnnscope.inspector.compare.modes import CompareOptions, run_compare
from mnnscope.inspector.compare.options import DEFAULT_TIME_RUNS
from mnnscope.inspector.compare.report import write_report
from mnnscope.inspector.compare.tolerance import DEFAULT_TOLERANCES
from mnnscope.inspector.compare.verdict import judged_change
from mnnscope.inspector.convert.settings import ConvertSettings
from mnnscope.inspector.errors import ModelError, UsageError
from mnnscope.inspector.formats.loader import load_model
from mnnscope.inspector.inputs.data import (describe_inputs, fill_rule, index_bounds, input_specs, inputs_from,
                                            load_inputs, make_inputs, negated_inputs, save_inputs)
from mnnscope.inspector.inputs.sources import IMAGE_SUFFIXES, np_dtype, text_role
from mnnscope.inspector.process.client import EventHandler, RunnerClient, client_or_own, work_folder
from mnnscope.inspector.store.runs import RunStore, record


def check_request(model: str, options: CompareOptions) -> None:
    """What must hold before anything runs: an ONNX reference (usage), files that exist (bad model, exit 1)."""
    if options.threads < 1:
        raise UsageError("--threads must be at least 1")
    if options.fix_ops < 1:
        raise UsageError("--fix-ops must be at least 1")
    if options.weight_quant_block is not None and options.weight_quant_block < 1:
        raise UsageError("--weight-quant-block must be a positive number of channels")
    if options.feature_method and "int8" not in options.modes:
        raise UsageError("--feature-method calibrates full int8: add int8 to --modes")
    if not str(model).lower().endswith(".onnx"):
        raise UsageError(f"{model}: compare needs the ONNX model as the reference (give a .mnn with --mnn)")
    if not os.path.isfile(model):
        raise ModelError(f"{model}: no such file")
    if options.mnn_path and not os.path.isfile(options.mnn_path):
        raise ModelError(f"--mnn {options.mnn_path}: no such file")


def calibration_mismatch(options: CompareOptions, inputs: dict | None) -> str | None:
    """Full int8 calibrated on images normalised otherwise than the image this comparison feeds: its own mean/std
    (Convert dock, int8) against the Inputs dock's (tryout 15 calibrated with mean 0/std 1 and compared on an image
    with ImageNet's, silently). None when they agree, or nothing compares."""
    image = (inputs or {}).get("image") or {}
    if "int8" not in options.modes or not image.get("path") or not options.convert_settings:
        return None
    try:
        int8 = ConvertSettings.from_json(options.convert_settings).int8
    except (TypeError, ValueError, KeyError):
        return None
    if int8 is None or not (int8.calib_dir or int8.calib_files):
        return None

    def per_channel(v, default):
        vals = [float(x) for x in (v if isinstance(v, (list, tuple)) else [v])] if v is not None else [default]
        return vals * 3 if len(vals) == 1 else vals

    fed = (per_channel(image.get("mean"), 0.0), per_channel(image.get("std"), 1.0))
    calib = (per_channel(int8.mean, 0.0), per_channel(int8.std, 1.0))
    if all(abs(a - b) <= 1e-6 for x, y in zip(fed, calib) for a, b in zip(x, y)):
        return None
    fmt = lambda v: ",".join(f"{x:g}" for x in v)  # noqa: E731
    return (f"int8 is calibrated on images normalised with mean {fmt(calib[0])}, std {fmt(calib[1])} (the Convert "
            f"dock's int8 settings) but compared on an image normalised with mean {fmt(fed[0])}, std {fmt(fed[1])} "
            "(the Inputs dock's): set the same in both, or the calibration ranges do not fit the data")


def _forget_removed(result: dict, work: str) -> None:
    """The converted models a comparison made in its temporary folder are gone once it returns: their paths
    (`mnn_model` of each mode and of the fix) become null, as `work_dir` does, instead of naming files that no
    longer exist (a given --mnn file, outside the folder, stays)."""
    inside = os.path.join(os.path.abspath(work), "")
    for entry in list(result.get("modes") or []) + [result.get("fix") or {}]:
        path = entry.get("mnn_model") if isinstance(entry, dict) else None
        if isinstance(path, str) and os.path.abspath(path).startswith(inside):
            entry["mnn_model"] = None


def compare_model(model: str, options: CompareOptions, *, inputs: dict | None = None,
                  client: RunnerClient | None = None, store: RunStore | None = None, work_dir: str | None = None,
                  report: str | None = None, on_event: EventHandler | None = None) -> dict:
    """Compare MNN against ONNX Runtime on `model` in every mode of `options`; returns run_compare's result
    plus `inputs` (described), `report` (when asked), `run_id` and, when there are any, `warnings`.

    `inputs`: inputs.data.make_inputs keywords (seed, shapes, files, text, tokenizer, image).
    `work_dir`: where conversions and tensors go; kept only with `options.keep` (else a temporary folder).
    """
    check_request(model, options)
    work = work_folder(work_dir, "compare", options.keep)
    try:
        with client_or_own(client) as client:
            graph = load_model(model, client=client)
            if graph.format != "onnx":
                raise ModelError(f"{model}: not an ONNX model")
            inputs_npz = save_inputs(make_inputs(graph, **(inputs or {"seed": options.seed})),
                                     os.path.join(work, "inputs.npz"))
            arrays = load_inputs(inputs_npz)
            # what makes the run repeatable, beside what it measured: where each input came from, and the command
            # line that runs it again (the report listed "prefix int64[1, 8], ..." and nothing a colleague could rerun)
            spec = inputs or {"seed": options.seed}
            sources = input_sources(graph, spec, arrays)
            result = run_compare(model, graph, inputs_npz, options, client, work, on_event=on_event,
                                 input_spec=spec, image_inputs={s["name"] for s in sources if s["kind"] == "image"})
        result["inputs"] = describe_inputs(arrays)
        result["input_sources"] = sources
        result["inputs_from"] = inputs_from(spec)
        result["reproduce"] = reproduce(model, options, spec)
        annotate_speed(result["modes"])
        _annotate_fix(result, model, options, spec)
        if report:
            result["report"] = write_report(result, report, graph)
        if not options.keep:
            result["work_dir"] = None
            _forget_removed(result, work)
        summary = dict(result, modes=[{k: v for k, v in m.items() if k != "tensors"} for m in result["modes"]])
        settings = {"modes": options.modes, "seed": options.seed, "input_spec": inputs or {"seed": options.seed}}
        if options.mnn_path:  # a given .mnn checked as it is: the file is what the run was about
            settings["mnn"] = os.path.abspath(options.mnn_path)
        tolerance = options.tolerance_setting()
        if tolerance:  # (absent: each mode's default; a diff of two runs names a change of it)
            settings["tolerance"] = tolerance
        if options.convert_settings and ConvertSettings.describe_json(options.convert_settings):
            # the conversion every mode starts from, where it is not the defaults (the Convert dock's): a diff of two
            # comparisons named no change where a calibration folder was the whole difference (helper 109), as a diff
            # of two profiles does
            settings["convert_settings"] = options.convert_settings
        if options.fix and options.fix_skip_ops:  # a fix run (the Compare dock's button): what it kept in float
            settings["keep_float"] = list(options.fix_skip_ops)
        result["run_id"], problem = record(store, kind="compare", model_path=model, settings=settings,
                                           summary=summary, run_dir=result.get("work_dir"))
        warnings = list(graph.warnings) + ([problem] if problem else [])
        warnings += [n["text"] for n in result.get("input_scale") or []]
        mismatch = calibration_mismatch(options, inputs)
        if mismatch:
            warnings.append(mismatch)
        if warnings:
            result["warnings"] = warnings
        return result
    except BaseException as e:
        if not isinstance(e, Exception) and client is not None:
            # Ctrl+C or SIGTERM (the CLI's Terminated): the runner may still be writing into the work folder, which
            # then outlived the rmtree below (tryout 17's 29-93 MB folders); it is stopped first
            try:
                client.stop()
            except Exception:  # noqa: BLE001 - stopping on the way out: the interruption is what is raised
                pass
        raise
    finally:
        if not options.keep:
            shutil.rmtree(work, ignore_errors=True)


# ----- what makes a comparison repeatable ----------------------------------------------------------------------
def input_sources(graph, spec: dict, arrays: dict) -> list[dict]:
    """Per model input, where its data came from, as inputs.data.make_inputs made it from `spec` (its keywords):
    {name, kind ("file", "image", "text", "random" or "rule": filled by a fixed rule), text (in words), and seed,
    range, path where they apply}. The rules are make_inputs' own, in its order (inputs/data.py _random)."""
    spec = spec or {}
    seed = int(spec.get("seed") or 0)
    files = dict(spec.get("files") or {})
    star = files.pop("*", None)
    specs = input_specs(graph)
    if star is not None:
        names = set(arrays)
        try:
            with np.load(star, allow_pickle=False) as z:
                names = set(z.keys())
        except (OSError, ValueError):
            pass
        for s in specs:
            if s["name"] in names:
                files.setdefault(s["name"], star)
    image = dict(spec.get("image") or {})
    image_input = None
    if image.get("path"):
        image_input = image.get("input") or next((s["name"] for s in specs if s["shape"] and len(s["shape"]) == 4
                                                  and s["name"] not in files), None)
    roles: dict[str, str] = {}
    if spec.get("text") is not None:
        roles = {s["name"]: r for s in specs if s["name"] not in files and s["name"] != image_input
                 and (r := text_role(s))}
        if "input_ids" not in roles.values():
            bounds = index_bounds(graph)
            cand = next((s["name"] for s in specs if s["name"] in bounds and s["name"] not in files), None)
            if cand is not None:
                roles[cand] = "input_ids"
    ranges = spec.get("ranges") or {}
    bounds = negated = None
    out = []
    for s in specs:
        name = s["name"]
        arr = arrays.get(name)
        n = int(arr.shape[-1]) if arr is not None and arr.ndim else None
        if name == image_input:
            mean, std = image.get("mean"), image.get("std")
            words = (f"image {os.path.abspath(image['path'])} (resized to the input's size, mean "
                     f"{_floats(mean) or '0'}, std {_floats(std) or '1'}, {'BGR' if image.get('bgr') else 'RGB'})")
            out.append({"name": name, "kind": "image", "path": os.path.abspath(image["path"]), "mean": mean, "std": std,
                        "bgr": bool(image.get("bgr")), "text": words})
        elif name in files:
            path = os.path.abspath(files[name])
            kind = "image" if Path(path).suffix.lower() in IMAGE_SUFFIXES else "file"
            words = f"{kind} {path}" + (f" (its array '{name}')" if files[name] == star else "")
            if kind == "image":
                words += (f" (resized to the input's size, mean {_floats(image.get('mean')) or '0'}, std "
                          f"{_floats(image.get('std')) or '1'}, {'BGR' if image.get('bgr') else 'RGB'})")
            out.append({"name": name, "kind": kind, "path": path, "text": words})
        elif name in roles:
            role = roles[name]
            what = {"input_ids": "its token ids", "attention_mask": "its attention mask (ones)",
                    "token_type_ids": "its token type ids", "position_ids": f"positions 0..{(n or 1) - 1}"}[role]
            out.append({"name": name, "kind": "text", "text": f"text {spec['text']!r} through {spec.get('tokenizer')}: "
                                                               f"{what}", "role": role, "path": spec.get("tokenizer")})
        else:
            if bounds is None:
                bounds, negated = index_bounds(graph), negated_inputs(graph)
            out.append(_generated(s, seed, ranges.get(name), bounds.get(name), negated.get(name), n))
    return out


def _generated(s: dict, seed: int, chosen, bound: int | None, negated: str | None, n: int | None) -> dict:
    """A generated input in words, by the rule make_inputs filled it by (inputs.data.fill_rule)."""
    kind = np_dtype(s["dtype"]).kind
    entry = {"name": s["name"], "kind": "rule", "seed": seed}
    rule, span = fill_rule(dict(s, negated=negated), bound, chosen, 1 if n is not None else 0)
    if rule == "chosen":
        lo, hi = span
        what = "integers" if kind in "iu" else "uniform"
        return dict(entry, kind="random", range=[lo, hi],
                    text=f"random, seed {seed}: {what} in [{lo:g}, {hi:g}) (a range set for it)")
    if rule == "all False":
        return dict(entry, rule="all False", text=f"filled by rule: all False (True masks out: {negated})")
    if rule == "ones":
        ones = "all True" if kind == "b" else "all ones"
        return dict(entry, rule=ones, text=f"filled by rule: {ones} (named like a mask: every position kept)")
    if rule == "positions":
        return dict(entry, rule="positions", text=f"filled by rule: positions 0..{(n or 1) - 1}")
    if rule == "zeros":
        return dict(entry, rule="zeros", text="filled by rule: zeros (token type ids)")
    if rule == "all True":
        return dict(entry, rule="all True", text="filled by rule: all True")
    lo, hi = span
    if rule == "ids":
        why = ("the rows of the embedding table it indexes" if bound else
               "small ids: it indexes no embedding table the graph shows")
        return dict(entry, kind="random", range=[lo, hi], text=f"random, seed {seed}: integers in [0, {hi}) ({why})")
    return dict(entry, kind="random", range=[lo, hi], text=f"random, seed {seed}: uniform in [{lo:g}, {hi:g})")


def _floats(v) -> str:
    if v is None:
        return ""
    vals = v if isinstance(v, (list, tuple)) else [v]
    return ",".join(f"{float(x):g}" for x in vals)


SETTINGS_FILE = "convert-settings.json"  # what the command line calls the conversion settings it needs written out


def _num(v: float) -> str:
    """A number as short as it is exact (1e-05, 0.05) for a command line."""
    text = f"{float(v):g}"
    return text if float(text) == float(v) else repr(float(v))


def reproduce(model: str, options: CompareOptions, spec: dict) -> dict:
    """The `mnnscope compare` command line that runs this comparison again: {command, argv, convert_settings (the
    JSON to save as SETTINGS_FILE beside it, or None), settings_file, not_carried (what the command line cannot say:
    it then differs from the run there, each in words)}."""
    argv = ["mnnscope", "compare", os.path.abspath(model)]
    notes = []
    if options.mnn_path:
        argv += ["--mnn", os.path.abspath(options.mnn_path)]
    argv += ["--modes", ",".join(options.modes)]
    settings = _changed_settings(options.convert_settings)
    if settings is not None:
        argv += ["--convert-settings", SETTINGS_FILE]
    if options.weight_quant_block is not None:
        argv += ["--weight-quant-block", str(options.weight_quant_block)]
    if options.weight_quant_asymmetric is not None:
        argv += ["--weight-quant-asymmetric", "1" if options.weight_quant_asymmetric else "0"]
    if options.feature_method:
        argv += ["--feature-method", options.feature_method]
    tol = options.tolerance
    if tol is not None and tol.metric:
        argv += ["--metric", f"{tol.metric}:{_num(tol.threshold)}"]
        if tol.atol != DEFAULT_TOLERANCES["fp32"].atol:
            argv += ["--atol", _num(tol.atol)]
    elif tol is not None:
        argv += ["--atol", _num(tol.atol), "--rtol", _num(tol.rtol)]
    elif options.tolerance_only:
        for k, v in options.tolerance_only.items():
            argv += [f"--{k}", _num(v)]
    if options.threads != 1:
        argv += ["--threads", str(options.threads)]
    if options.time_runs != DEFAULT_TIME_RUNS:
        argv += ["--time-runs", str(options.time_runs)]
    if not options.fix:
        argv.append("--no-fix")
    elif options.fix_skip_ops:
        argv += ["--fix-keep", ",".join(options.fix_skip_ops)]
    elif options.fix_ops != CompareOptions.fix_ops:
        argv += ["--fix-ops", str(options.fix_ops)]
    if options.fix and options.fix_out:
        argv += ["--fix-out", os.path.abspath(options.fix_out)]
    if options.repro:
        argv += ["--repro", os.path.abspath(options.repro)] + (["--repro-random-weights"]
                                                               if options.repro_random_weights else [])
    if options.calib_samples != CompareOptions.calib_samples:
        notes.append(f"int8 was calibrated on the compared input plus {options.calib_samples} random samples; the "
                     f"command line's int8 takes {CompareOptions.calib_samples}")
    argv += _input_args(spec, notes)
    return {"command": shlex.join(argv), "argv": argv, "convert_settings": settings,
            "settings_file": SETTINGS_FILE if settings is not None else None, "not_carried": notes}


def _changed_settings(data: dict | None) -> dict | None:
    """The conversion settings a comparison started from, when they differ from the converter's defaults (else
    None: the command line needs no settings file)."""
    if not data:
        return None
    try:
        return data if ConvertSettings.from_json(data).describe() else None
    except (TypeError, ValueError):
        return data


def _input_args(spec: dict, notes: list[str]) -> list[str]:
    """The input options of make_inputs keywords (inputs.options.input_spec's inverse)."""
    spec = spec or {}
    args = []
    if int(spec.get("seed") or 0):
        args += ["--seed", str(int(spec["seed"]))]
    for name, dims in (spec.get("shapes") or {}).items():
        args += ["--shape", f"{name}={','.join(str(int(d)) for d in dims)}"]
    for name, path in (spec.get("files") or {}).items():
        args += ["--input", os.path.abspath(path) if name == "*" else f"{name}={os.path.abspath(path)}"]
    image = spec.get("image") or {}
    if image.get("path"):
        path = os.path.abspath(image["path"])
        args += ["--input", f"{image['input']}={path}"] if image.get("input") else ["--image", path]
    if image.get("path") or image.get("mean") is not None or image.get("std") is not None:
        for flag in ("mean", "std"):
            if image.get(flag) is not None:
                args += [f"--{flag}", _floats(image[flag])]
        if image.get("bgr"):
            notes.append("the image was fed in BGR order (the Inputs dock's BGR); the command line feeds RGB")
    if spec.get("text") is not None:
        args += ["--text", str(spec["text"]), "--tokenizer", os.path.abspath(str(spec.get("tokenizer") or ""))]
    for name, (lo, hi) in (spec.get("ranges") or {}).items():
        notes.append(f"input {name}'s random values were drawn from [{lo:g}, {hi:g}) (set in the Inputs dock); the "
                     "command line draws them from the default range")
    return args


def _annotate_fix(result: dict, model: str, options: CompareOptions, spec: dict) -> None:
    """A fix that ran gets `judged` (the figure its mode's tolerance is judged on, before and after, against its
    limit: verdict.judged_change) and `command` (the command line that runs that fix again)."""
    fix = result.get("fix")
    if not fix or not fix.get("possible") or not fix.get("before") or not fix.get("after"):
        return
    row = find_mode(result, fix["mode"]) or {}
    fix["judged"] = judged_change(fix["before"]["outputs"], fix["after"]["outputs"], row.get("tolerance"))
    again = dataclasses.replace(options, modes=[fix["mode"]], fix=True, repro=None,
                                fix_skip_ops=None if fix.get("emulated") else list(fix["skip_ops"]))
    fix["command"] = reproduce(model, again, spec)["command"]
