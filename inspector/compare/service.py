"""The compare service (the CLI presents it): check the request, build the inputs, run every mode against
the reference (modes.run_compare), describe the inputs, write the report, record the run.

A store that cannot record the run costs the record only: `run_id` is None and `warnings` says why
(store.runs.record), as for profile and convert.
"""
from __future__ import annotations

import os
import shutil
import tempfile

from mnnscope.inspector.compare.modes import CompareOptions, run_compare
from mnnscope.inspector.compare.report import write_report
from mnnscope.inspector.errors import ModelError, UsageError
from mnnscope.inspector.formats.loader import load_model
from mnnscope.inspector.inputs.data import describe_inputs, load_inputs, make_inputs, save_inputs
from mnnscope.inspector.process.client import EventHandler, RunnerClient, client_or_own
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


def compare_model(model: str, options: CompareOptions, *, inputs: dict | None = None,
                  client: RunnerClient | None = None, store: RunStore | None = None, work_dir: str | None = None,
                  report: str | None = None, on_event: EventHandler | None = None) -> dict:
    """Compare MNN against ONNX Runtime on `model` in every mode of `options`; returns run_compare's result
    plus `inputs` (described), `report` (when asked), `run_id` and, when there are any, `warnings`.

    `inputs`: inputs.data.make_inputs keywords (seed, shapes, files, text, tokenizer, image).
    `work_dir`: where conversions and tensors go; kept only with `options.keep` (else a temporary folder).
    """
    check_request(model, options)
    work = os.path.abspath(work_dir) if work_dir else tempfile.mkdtemp(prefix="mnnscope-compare-")
    os.makedirs(work, exist_ok=True)
    try:
        with client_or_own(client) as client:
            graph = load_model(model, client=client)
            if graph.format != "onnx":
                raise ModelError(f"{model}: not an ONNX model")
            inputs_npz = save_inputs(make_inputs(graph, **(inputs or {"seed": options.seed})),
                                     os.path.join(work, "inputs.npz"))
            result = run_compare(model, graph, inputs_npz, options, client, work, on_event=on_event)
        result["inputs"] = describe_inputs(load_inputs(inputs_npz))
        if report:
            result["report"] = write_report(result, report, graph)
        if not options.keep:
            result["work_dir"] = None
        summary = dict(result, modes=[{k: v for k, v in m.items() if k != "tensors"} for m in result["modes"]])
        settings = {"modes": options.modes, "seed": options.seed, "input_spec": inputs or {"seed": options.seed}}
        if options.fix and options.fix_skip_ops:  # a fix run (the Compare dock's button): what it kept in float
            settings["keep_float"] = list(options.fix_skip_ops)
        result["run_id"], problem = record(store, kind="compare", model_path=model, settings=settings,
                                           summary=summary, run_dir=result.get("work_dir"))
        warnings = list(graph.warnings) + ([problem] if problem else [])
        if warnings:
            result["warnings"] = warnings
        return result
    finally:
        if not options.keep:
            shutil.rmtree(work, ignore_errors=True)
