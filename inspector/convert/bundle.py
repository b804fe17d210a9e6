"""Bug-report bundle of a failing conversion: what an MNN maintainer needs in one folder.

    report.md        expected vs observed, the diagnosis with next steps, how to reproduce
    report.json      the same as data (the CLI's --json object plus reduction and versions)
    reduced.onnx     the smallest model found that fails the same way (see reduce.py)
    reduced.log      the converter's log on reduced.onnx
    convert.log      the converter's log on the original model
    command.txt      the exact converter command, and the same through MNN's Python extension; after a failed
                     full int8 quantization also the quantizer's step
    quantize.json    (quantization failures) mnnquant's config, reading calibration/ beside it
    quantize.log     (quantization failures) mnnquant's log
    calibration/     (quantization failures) the calibration samples mnnquant read, when they fit in 64 MB
    settings.json    the conversion settings (mnnscope convert --settings settings.json)
    versions.json    MNN, onnx, numpy, Python, platform
    inputs/          random inputs for the reduced model (.npy) and their signature
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shlex
import shutil
from pathlib import Path

import numpy as np

from mnnscope.inspector.convert.reduce import reduce_failure
from mnnscope.inspector.convert.tools import converter_argv
from mnnscope.inspector.formats.onnx import load_onnx
from mnnscope.inspector.inputs.data import describe_inputs, make_inputs


def _versions(mnn_version: str | None) -> dict:
    out = {"mnn": mnn_version, "python": platform.python_version(), "platform": platform.platform(),
           "machine": platform.machine(), "numpy": np.__version__}
    try:
        import onnx
        out["onnx"] = onnx.__version__
    except ImportError:
        pass
    try:
        from importlib.metadata import version
        out["mnnscope"] = version("mnnscope")
    except Exception:
        out["mnnscope"] = None
    return out


def _sha256(path: str) -> str | None:
    try:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    except OSError:
        return None


def _command(model: str, settings) -> tuple[str, str]:
    argv = converter_argv(model, "out.mnn", settings)
    shell = " ".join(shlex.quote(a) for a in argv)
    python = f'python -c "import _tools; _tools.mnnconvert({argv!r})"'
    return shell, python


CALIBRATION_COPY_LIMIT = 64 << 20  # bytes of calibration samples copied into a bundle


def _quantize_step(bundle: Path, result) -> tuple[str, str]:
    """The quantizer's step of a failed full int8 conversion: its config, log and calibration data copied beside
    the report (the config pointing at the copy), and its command lines (shell, Python extension); ("", "")
    without the run's quantize.json."""
    run = Path(result.run_dir) if result.run_dir else None
    config_path = run / "quantize.json" if run else None
    if config_path is None or not config_path.is_file():
        return "", ""
    config = json.loads(config_path.read_text(encoding="utf-8"))
    data = Path(config.get("path") or "")
    if data.is_dir():
        size = sum(f.stat().st_size for f in data.rglob("*") if f.is_file())
        if size <= CALIBRATION_COPY_LIMIT:
            shutil.copytree(data, bundle / "calibration", dirs_exist_ok=True)
            config["path"] = "calibration"
    (bundle / "quantize.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    if (run / "quantize.log").is_file():
        shutil.copyfile(run / "quantize.log", bundle / "quantize.log")
    argv = ["mnnquant", "out.mnn", "out_int8.mnn", "quantize.json"]
    return " ".join(argv), f'python -c "import _tools; _tools.mnnquant({argv!r})"'


def _quantize_failed(result) -> bool:
    return bool(result.signature) and result.signature[0] == "quantize_failed"


def _observed(result) -> str:
    sig = result.signature or ["?"]
    kind = sig[0]
    if kind == "unsupported":
        return f"the converter prints 'These Op Not Support: {' | '.join('ONNX::' + o for o in sig[1])}' and 'Converted Failed!'"
    if kind == "crash":
        return f"the converter process dies with {sig[1]}"
    if kind == "missing_external_data":
        return "the converter prints \"Can't open file\" for the external data and then 'Converted Success!' (garbage weights)"
    if kind == "truncated_external_data":
        return "the converter reads past the end of the truncated external data file and prints 'Converted Success!'"
    if kind == "unreadable_model":
        return "the converter prints 'read onnx model failed' / 'Model file is not onnx model'"
    return "; ".join(e["message"] for e in result.errors) or "the conversion failed"


def _write_inputs(model_path: str, folder: Path) -> list[dict]:
    try:
        inputs = make_inputs(load_onnx(model_path), seed=0)
    except Exception:  # inputs are a convenience: a model we cannot feed still gets its bundle
        return []
    folder.mkdir(parents=True, exist_ok=True)
    for name, arr in inputs.items():
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
        np.save(folder / f"{safe}.npy", np.ascontiguousarray(arr), allow_pickle=False)
    described = describe_inputs(inputs)
    (folder / "inputs.json").write_text(json.dumps(described, indent=2), encoding="utf-8")
    return described


def write_bundle(bundle_dir, src: str, result, client, reduce: bool = True, on_event=None,
                 timeout: float = 300.0) -> tuple[str, dict | None]:
    """Write the bundle for a failed ConvertResult; returns (bundle path, reduction summary)."""
    bundle = Path(bundle_dir)
    bundle.mkdir(parents=True, exist_ok=True)
    reduction = None
    # (a quantization failure is mnnquant's, after a conversion that worked: the reduction probes the converter
    # alone, so every probe "failed the same way" and the bundle's one-node model converted fine, tryout 15)
    if reduce and result.signature and result.signature[0] not in ("external_data_outside", "timeout",
                                                                      "runner_error", "missing_file",
                                                                      "quantize_failed", "truncated_external_data"):
        seeds = [e["node"] for e in result.errors if e.get("node")]
        red = reduce_failure(src, result.signature, result.settings, client, bundle / "probes", seeds=seeds,
                             timeout=timeout, on_event=on_event)
        reduction = red.to_json()
        if red.path:
            reduction["path"] = str(bundle / "reduced.onnx")
            (bundle / "reduced.log").write_text(red.log_text, encoding="utf-8")
        shutil.rmtree(bundle / "probes", ignore_errors=True)
    model_for_command = "reduced.onnx" if reduction and reduction.get("path") else os.path.abspath(src)
    shell, python = _command(model_for_command, result.settings)
    quant_shell, quant_python = _quantize_step(bundle, result) if _quantize_failed(result) else ("", "")
    if quant_shell:
        shell += f"\n{quant_shell}"
        python += f"\n{quant_python}"
    (bundle / "command.txt").write_text(f"{shell}\n\n# the same without MNN's console script (no telemetry):\n"
                                        f"{python}\n", encoding="utf-8")
    (bundle / "settings.json").write_text(json.dumps(result.settings.to_json(), indent=2), encoding="utf-8")
    versions = _versions((result.preflight or {}).get("mnn_version"))
    (bundle / "versions.json").write_text(json.dumps(versions, indent=2), encoding="utf-8")
    if result.log_path and os.path.isfile(result.log_path):
        shutil.copyfile(result.log_path, bundle / "convert.log")
    inputs = _write_inputs(str(bundle / "reduced.onnx"), bundle / "inputs") if reduction and reduction.get("path") else []
    original = {"path": os.path.abspath(src), "bytes": os.path.getsize(src) if os.path.isfile(src) else None,
                "sha256": _sha256(src), "nodes": (result.preflight or {}).get("nodes")}
    report = dict(result.to_json(), bundle=str(bundle), reduced=reduction, versions=versions, original=original,
                  inputs=inputs, expected=("mnnquant writes a full int8 .mnn from the converted model and the "
                                           "calibration samples" if quant_shell else
                                           "MNNConvert writes a .mnn model that loads, and prints 'Converted Success!'"),
                  observed=_observed(result))
    (bundle / "report.json").write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    (bundle / "report.md").write_text(_markdown(report, result, shell), encoding="utf-8")
    return str(bundle), reduction


def _markdown(report: dict, result, shell: str) -> str:
    v = report["versions"]
    lines = [f"# MNN {v.get('mnn') or '?'} fails to convert `{os.path.basename(report['original']['path'])}`", "",
             f"**Expected:** {report['expected']}.", "", f"**Observed:** {report['observed']}.", "", "## Diagnosis", ""]
    for e in result.errors:
        node = f" (node `{e['node']}`)" if e.get("node") else ""
        lines.append(f"- **{e['kind']}**{node}: {e['message']}.")
        if e.get("next_step"):
            lines.append(f"  Next step: {e['next_step']}.")
    red = report.get("reduced")
    lines += ["", "## Reproducer", ""]
    if red and red.get("path"):
        what = (f"{red['nodes_after']} of {red['nodes_before']} nodes" if red["nodes_before"]
                else f"{red['bytes_after']} of {red['bytes_before']} bytes")
        lines.append(f"`reduced.onnx` ({what}, found by {red['method']} in {red['probes']} conversions) fails the "
                     f"same way{'' if red['reproduced'] else ' (NOT confirmed on the final check)'}:")
    else:
        lines.append(f"No smaller model reproduced the failure; the original is `{report['original']['path']}` "
                     f"(sha256 {report['original']['sha256']}).")
    if "mnnquant" in shell:
        lines += ["", "The conversion itself succeeds; the quantizer's step (second line) fails. `quantize.json` is "
                  "its config, reading the calibration samples in `calibration/` (when they fitted in the bundle), "
                  "`quantize.log` its log."]
    lines += ["", "```", shell, "```", "", "`command.txt` has the same through MNN's Python extension; "
              "`convert.log` is the log on the original model, `reduced.log` on the reduced one; "
              "`inputs/` holds random inputs for the reduced model.", "", "## Versions", ""]
    lines += [f"- {k}: {val}" for k, val in v.items()]
    lines.append("")
    return "\n".join(lines)
