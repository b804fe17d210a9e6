"""Full int8 through mnnquant: one run in a runner of its own, and what a failed run says and what to do next.

mnnquant 3.6.1 crashes (SIGSEGV) on models it cannot calibrate and prints nothing that names the cause. Its line
"winogradOpt only be available under EMA" is no cause: it prints it on every KL run of a model with convolutions,
the successful ones included (the romanizer decoder quantizes with it; its GRU encoder crashes after it with KL and
with EMA alike; PP-OCRv6 det crashes after it with KL and quantizes with EMA at 64x64; measured). So a crash is put
down to the feature method only on evidence: one more run with the other method, on the same float model and data.
"""
from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

from mnnscope.inspector.convert.calibration import prepare_calibration
from mnnscope.inspector.convert.tools import Attempt, run_tool
from mnnscope.inspector.errors import ModelError
from mnnscope.inspector.formats.mnn_flatbuffer import MnnFormatError, read_mnn
from mnnscope.inspector.formats.onnx import load_onnx
from mnnscope.inspector.process.client import RunnerClient

# The words of a quantize failure that a run with the other feature method proved: the Compare dock's "Reconvert
# with settings..." sets that method when a failure says them.
METHOD_ADVICE = "set the int8 feature method to {}"
EMA_ADVICE = METHOD_ADVICE.format("EMA")
WINOGRAD = "only be available under EMA"
# the ops mnnquant's skip_quant_op_names can keep in float (compare/fix.py: its skip list takes convolutions only)
SKIPPABLE = {"Convolution", "ConvolutionDepthwise", "Deconvolution", "DeconvolutionDepthwise"}
INT8W = ("8-bit weight-only quantization, which needs no calibration (compare mode int8w; the Convert dock's "
         "Weight quant bits 8 with int8 off; convert --weight-quant-bits 8)")
_OP = re.compile(r"\bop \[ ?([^\]\s]+) ?\]")
_ERROR = re.compile(r"\berror\b", re.IGNORECASE)
_STAMP = re.compile(r"^\[\d\d:\d\d:\d\d\] @ ?\d+: ")


def quantize(client, src, float_mnn, dst, settings, run: Path, on_event, timeout,
             fallback: bool = False) -> tuple[Attempt | None, dict]:
    """mnnquant on `float_mnn` with `settings.int8`; (attempt, {"ok", "errors", "warnings"}, and "feature_method"
    when another method made the model).

    `fallback`: where mnnquant crashed with the feature method and the one run with the other method quantized,
    keep that run's model (said in a warning) instead of failing: a comparison whose method nobody chose. A
    conversion the user asked for keeps failing with the method it was given, advising the other one."""
    errors, warnings = [], []
    int8 = settings.int8
    try:
        config = prepare_calibration(int8, load_onnx(src), run)
    except ModelError as e:
        errors.append({"kind": "calibration_data", "message": str(e), "node": None,
                       "next_step": "give a folder of images or .npy/.npz samples that fit the model's inputs, "
                                    "or --calib-random N"})
        return None, {"ok": False, "errors": errors, "warnings": warnings}
    gone = int8.replaced_random()
    if gone:
        given = int8.calib_dir or ", ".join(int8.calib_files) or int8.calib_text
        warnings.append(f"int8 calibrates on the data given ({given}); the {gone} default random samples (Random "
                        "samples) beside it are not used")
    payload = {"src": os.path.abspath(float_mnn), "dst": os.path.abspath(dst), "config": config}
    attempt = _run(client, payload, run / "quantize.log", on_event, timeout)
    if attempt.ok:
        return attempt, {"ok": True, "errors": errors, "warnings": warnings}
    probe = None
    method = config.get("feature_quantize_method", "KL")
    other = {"KL": "EMA", "EMA": "KL"}.get(method)
    if attempt.died and other:
        if on_event is not None:
            on_event("progress", {"fraction": None, "message": f"mnnquant crashed with {method}: trying {other} once, "
                                                               "to tell whether the method is the cause"})
        probe_dst = run / "probe.mnn"
        probe = _run(client, dict(payload, dst=str(probe_dst), config=dict(config, feature_quantize_method=other)),
                     run / f"quantize-{other}.log", on_event, timeout)
        if fallback and probe.ok and probe_dst.is_file():
            # (a new user's int8 Compare on moe_llm: "with EMA it quantized" beside a failed mode that advised EMA)
            os.replace(probe_dst, dst)
            last = _last(attempt)
            warnings.append(f"mnnquant {_how(attempt)} with {method} calibration"
                            + (f", after \"{last}\"" if last else "")
                            + f"; quantized with {other} instead (one run, same model and data): this int8 model is "
                            f"{other}'s")
            both = dataclasses.replace(probe, log_text=attempt.log_text + probe.log_text,
                                       seconds=attempt.seconds + probe.seconds)
            return both, {"ok": True, "errors": errors, "warnings": warnings, "feature_method": other}
        if probe_dst.is_file():
            probe_dst.unlink()
    message, steps = explain_failure(attempt, probe, method, other, int8, float_mnn, settings)
    tail = [_plain(line) for line in attempt.log_text.splitlines() if line.strip()][-5:]
    message += f"; last lines: {' | '.join(tail)}" if tail else ""
    errors.append({"kind": "quantize_failed", "message": message, "node": None, "next_step": "; ".join(steps)})
    return attempt, {"ok": False, "errors": errors, "warnings": warnings}


def _run(client, payload: dict, log_path: Path, on_event, timeout) -> Attempt:
    # mnnquant leaves MNN in a state where the next conversion in the same process segfaults (measured with
    # 3.6.1): it gets a runner of its own, stopped right after. A client that knows how to make its siblings (a
    # comparison's conversion runner) gets one it can cancel too.
    spawn = getattr(client, "spawn_sibling", None)
    quant_client = spawn() if spawn is not None else RunnerClient(python=client.python, env=client.extra_env)
    try:
        return run_tool(quant_client, "quantize", payload, str(log_path), on_event, timeout)
    finally:
        quant_client.stop()


def _plain(line: str) -> str:
    """A log line without mnnquant's "[13:21:51] @ 1107: " prefix."""
    return _STAMP.sub("", line.strip())


def _last(attempt: Attempt) -> str | None:
    lines = [_plain(line) for line in attempt.log_text.splitlines() if line.strip()]
    return lines[-1] if lines else None


def _how(attempt: Attempt) -> str:
    """"crashed (SIGSEGV)", "was not run: ...", "did not produce a quantized model (...)"."""
    if attempt.died:
        return f"crashed ({attempt.died['signal'] or 'exit ' + str(attempt.died['returncode'])})"
    if attempt.error:
        return f"was not run: {attempt.error['message']}"
    problems = (attempt.result or {}).get("problems") or []
    return "did not produce a quantized model" + (f" ({'; '.join(problems)})" if problems else "")


def explain_failure(attempt: Attempt, probe: Attempt | None, method: str, other: str | None, int8, float_mnn: str,
                    settings) -> tuple[str, list[str]]:
    """(message, next steps) of a failed mnnquant run, and of the run with the other feature method when there was
    one (`probe`). A step is only one that evidence backs: the other method where it got past the crash, an op to
    skip only where the log names one that mnnquant can skip, int8w (no calibration) otherwise."""
    last = _last(attempt)
    message = f"mnnquant {_how(attempt)}" + (f" with {method} calibration" if attempt.died else "")
    if attempt.died and last:
        message += f", after \"{last}\""
    steps: list[str] = []
    remedy = None   # the step, if any, for where the other method stopped
    log = attempt.log_text + (probe.log_text if probe is not None else "")
    # the other method got past this failure: it quantized, stopped without crashing, or stopped on an error of its
    # own (PP-OCRv6 det at 256x256: KL crashes collecting its statistics; EMA says "Error for concat size of op
    # [ Concat.1 ]" and then crashes, and quantizes with 64x64 samples)
    further = probe is not None and bool(probe.ok or not probe.died or _new_error(probe, attempt))
    if probe is not None and probe.ok:
        message += f"; with {other} (tried once, same model and data) it quantized"
        steps.append(f"{METHOD_ADVICE.format(other)} (Convert dock, or --feature-method {other})")
    elif further:
        message += (f"; with {other} (tried once, same model and data) it got past that and {_how(probe)}"
                    + (f", after \"{_last(probe)}\"" if _last(probe) else ""))
    elif probe is not None:
        message += (f"; with {other} it {_how(probe)} too (tried once, same model and data"
                    + (f", after \"{_last(probe)}\"" if _last(probe) else "")
                    + "): changing the feature method does not avoid it")
        if WINOGRAD in log:
            message += ("; MNN's \"winogradOpt only be available under EMA\" is a warning it prints on successful KL "
                        "runs too")
    if "Error for concat size" in log:
        # measured, MNN 3.6.1, PP-OCRv6 det with EMA: 64x64 samples quantize, 320x320 and 640x640 stop here, and
        # skipping the Concat changes nothing (tryout 15 went round KL -> EMA -> --skip-op Concat.1)
        w, h = getattr(int8, "width", None), getattr(int8, "height", None)
        if w and h and max(w, h) <= 64:
            # samples that small already: the way out measured on det does not apply (a new user's PP-OCR rec, 48
            # high, read the det advice)
            message += (f"; it stops on this Concat with {h}x{w} samples already (64x64 ones got PP-OCRv6 det past "
                        "it)")
        else:
            # (the measurement named as one: a new user's PP-OCR rec read "samples of PP-OCRv6 det" as the wrong model)
            steps.append("calibrate with smaller samples where the model takes them (image width/height, e.g. 64x64; "
                         "measured on one model, PP-OCRv6 det: mnnquant 3.6.1 stopped on such a Concat with 320x320 "
                         "and 640x640 samples and quantized it with 64x64 ones)")
            remedy = len(steps) - 1
    else:
        named = _named_ops(log, float_mnn)
        skippable = [n for n, t in named if t in SKIPPABLE]
        if skippable:
            steps.append(f"keep {', '.join(skippable)} in float (--skip-op {' --skip-op '.join(skippable)}; the "
                         "Convert dock's Skip ops)")
            remedy = len(steps) - 1
        elif named:
            ops = ", ".join(f"{n} ({t or 'not in the float model'})" for n, t in named)
            message += (f"; the log names {ops}, which mnnquant's skip list cannot keep in float (it takes "
                        "convolutions only)")
        elif attempt.died:
            message += "; its log names no op"
    if further and not probe.ok:
        # the other method is a step only with a remedy for where it stopped, in one step: "set the feature method to
        # EMA: it gets past the KL failure" beside "with EMA ... crashed" read as a contradiction (two new users), and
        # where nothing is known for that stop (its samples small already) it led to the same crash
        if remedy is not None:
            steps[remedy] = (f"{METHOD_ADVICE.format(other)} (Convert dock, or --feature-method {other}), which gets "
                             f"past the {method} failure, and {steps[remedy]}")
        else:
            further = False
    if not further:
        loops = _while_ops(float_mnn) if not settings.origin_rnn else 0
        if loops:
            # measured, MNN 3.6.1: the romanizer's GRU encoder, its GRUs converted to While loops, crashed mnnquant
            # with KL and with EMA; converted with --useOriginRNNImpl it quantized with EMA (the GRUs stay float32)
            steps.append(f"convert with keep LSTM/GRU ops (--origin-rnn) and EMA: this model's LSTM/GRU run as "
                         f"{loops} While loop(s), and a GRU encoder that crashed mnnquant 3.6.1 so with KL and with EMA "
                         "quantized with its GRUs kept as single float32 ops (measured)")
        steps.append(INT8W)
    if int8.sources() and set(int8.sources()) <= {"calib_dir", "calib_files", "calib_text"}:
        steps.append("check the calibration data matches the model's inputs")
    return message, steps


def _new_error(probe: Attempt, attempt: Attempt) -> str | None:
    """The last error line of the probe's log that the failed run's log does not have: where it stopped instead."""
    seen = {_plain(line) for line in attempt.log_text.splitlines()}
    errors = [_plain(line) for line in probe.log_text.splitlines() if _ERROR.search(line)]
    new = [line for line in errors if line not in seen]
    return new[-1] if new else None


def _named_ops(log: str, float_mnn: str) -> list[tuple[str, str | None]]:
    """The ops mnnquant's log names ("op [ Concat.1 ]"), each with its type in the float model (None: not there)."""
    names = list(dict.fromkeys(_OP.findall(log)))
    if not names:
        return []
    try:
        types = {op.name: op.op_type for op in read_mnn(float_mnn).ops}
    except (MnnFormatError, OSError):
        types = {}
    return [(n, types.get(n)) for n in names]


def _while_ops(float_mnn: str) -> int:
    try:
        return sum(1 for op in read_mnn(float_mnn).ops if op.op_type == "While")
    except (MnnFormatError, OSError):
        return 0
