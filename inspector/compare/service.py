"""The compare service (the CLI presents it): check the request, build the inputs, run every mode against
the reference (modes.run_compare), describe the inputs, write the report, record the run.

A store that cannot record the run costs the record only: `run_id` is None and `warnings` says why
(store.runs.record), as for profile and convert.
"""
from __future__ import annotations

import os
import shutil

from mnnscope.inspector.compare.modes import CompareOptions, run_compare
from mnnscope.inspector.compare.report import write_report
from mnnscope.inspector.errors import ModelError, UsageError
from mnnscope.inspector.formats.loader import load_model
from mnnscope.inspector.inputs.data import describe_inputs, load_inputs, make_inputs, save_inputs
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
    from mnnscope.inspector.convert.settings import ConvertSettings
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
            result = run_compare(model, graph, inputs_npz, options, client, work, on_event=on_event,
                                 input_spec=inputs or {"seed": options.seed})
        result["inputs"] = describe_inputs(load_inputs(inputs_npz))
        if report:
            result["report"] = write_report(result, report, graph)
        if not options.keep:
            result["work_dir"] = None
            _forget_removed(result, work)
        summary = dict(result, modes=[{k: v for k, v in m.items() if k != "tensors"} for m in result["modes"]])
        settings = {"modes": options.modes, "seed": options.seed, "input_spec": inputs or {"seed": options.seed}}
        if options.fix and options.fix_skip_ops:  # a fix run (the Compare dock's button): what it kept in float
            settings["keep_float"] = list(options.fix_skip_ops)
        result["run_id"], problem = record(store, kind="compare", model_path=model, settings=settings,
                                           summary=summary, run_dir=result.get("work_dir"))
        warnings = list(graph.warnings) + ([problem] if problem else [])
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
