"""Conversion as an explained operation: pre-flight, conversion in the runner, diagnosis, node map, bundle.

`convert_model()` never raises for a bad model or a crashing converter: it returns a ConvertResult whose
`errors` say what went wrong, on which ONNX node, and what to do next. Only bad settings raise
(SettingsError), since those are the caller's mistake.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from mnnscope.runner.protocol import RunnerError

from mnnscope.inspector.convert import cache as ccache
from mnnscope.inspector.convert.bundle import write_bundle
from mnnscope.inspector.convert.checks import (check_model, diagnose, float_weight_share, float_weights,
                                                 float_weights_left, parse_log)
from mnnscope.inspector.model.nodemap import NodeMap, build_node_map
from mnnscope.inspector.convert.quantize import EMA_ADVICE, METHOD_ADVICE, quantize
from mnnscope.inspector.convert.settings import ConvertSettings
from mnnscope.inspector.convert.tools import (DEFAULT_TIMEOUT, Attempt, EventHandler, cache_dir, convert_once,
                                              new_run_dir, runs_root)
from mnnscope.inspector.convert.tools import converter_argv as tools_argv
from mnnscope.inspector.errors import ModelError, UsageError
from mnnscope.inspector.formats.mnn_flatbuffer import MnnFormatError, read_mnn
from mnnscope.inspector.formats.onnx import load_onnx
from mnnscope.inspector.model.graphdiff import graph_diff
from mnnscope.inspector.process.client import Cancelled, RunnerClient, client_or_own
from mnnscope.inspector.store.runs import RunStore, record

__all__ = ["EMA_ADVICE", "METHOD_ADVICE", "ConvertResult", "SettingsError", "convert_model", "new_run_dir", "preflight",
           "run_convert", "runs_root"]


class SettingsError(UsageError, ValueError):
    """Settings that cannot be used (the message lists every problem): a usage error (exit 2)."""


# failures of the user's files, not of MNN: no bug-report bundle (helper 117 got a reduced model and "Open bug report"
# for a weights file it had left behind)
NOT_A_BUG = ("missing_external_data", "truncated_external_data", "external_data_outside", "missing_file",
             "unreadable_model")


@dataclass
class ConvertResult:
    ok: bool
    output: str | None
    size_bytes: int | None
    seconds: float
    unsupported_ops: list[dict]
    errors: list[dict]
    warnings: list[str]
    node_map: object | None  # NodeMap
    log_path: str | None
    log_text: str
    bundle: str | None = None
    diff: dict | None = None
    settings: ConvertSettings | None = None
    preflight: dict | None = None
    signature: list | None = None
    argv: list[str] = field(default_factory=list)
    run_dir: str | None = None
    weight_file: str | None = None
    mnn_ops: int | None = None
    reduced: dict | None = None
    run_id: int | None = None        # its row in the run store (run_convert); None: not recorded
    # The conversion cache: {"state": hit|stored|miss|off|bypassed, "key", "reason"?, "converter_s"?}
    cache: dict | None = None
    convert_s: float | None = None   # seconds the converter itself ran (a cache hit: 0)
    # a quantizing conversion: the share of its weight bytes left in float32 (checks.float_weight_share); else None
    float_share: float | None = None

    def next_steps(self, errors: int | None = None) -> list[str]:
        """The errors' own next steps (of the first `errors` of them), each once, in order."""
        return list(dict.fromkeys(e["next_step"] for e in self.errors[:errors] if e.get("next_step")))

    def failure(self, model) -> str:
        """A failed conversion in one sentence for a command that needed the .mnn (profile, generate): what MNN
        said, what to do (as convert and compare say it: a failed profile gave MNN's words and no way out) and
        the log."""
        reasons = "; ".join(e.get("message", "") for e in self.errors[:3]) or "see the conversion log"
        steps = self.next_steps(3)
        nxt = f"; next: {'; '.join(steps)}" if steps else ""
        return f"{model}: conversion to MNN failed: {reasons}{nxt} (log: {self.log_path})"

    def to_json(self) -> dict:
        """The CLI's --json object."""
        return {
            "ok": self.ok, "output": self.output, "size_bytes": self.size_bytes, "seconds": round(self.seconds, 3),
            "unsupported_ops": self.unsupported_ops,
            "unverified_ops": (self.preflight or {}).get("unverified_ops", []),
            "errors": self.errors, "warnings": self.warnings,
            "node_map": self.node_map.counts() if self.node_map is not None else None,
            "log": self.log_path, "bundle": self.bundle, "diff": self.diff,
            "settings": self.settings.to_json() if self.settings else None,
            "command": self.argv, "weight_file": self.weight_file, "mnn_ops": self.mnn_ops,
            "reduced": self.reduced, "run_id": self.run_id, "cache": self.cache,
            "convert_s": round(self.convert_s, 3) if self.convert_s is not None else None,
            "float_share": round(self.float_share, 4) if self.float_share is not None else None,
        }


# ----- pre-flight ----------------------------------------------------------------------------------------
def supported_ops(client: RunnerClient, model=None) -> dict:
    """{"mnn_version", "ops"} from the converter's own list, cached on disk per MNN version; with `model`, also
    what a trial conversion of it says about its op types outside that list ("probed", "unverified")."""
    payload = {"framework": "ONNX", "cache_dir": str(cache_dir())}
    if model is not None:
        payload["model"] = os.path.abspath(os.fspath(model))
    return client.request("supported_ops", payload, timeout=120)


def preflight(onnx_path, client: RunnerClient | None = None, trial: bool = True) -> dict:
    """What will go wrong before converting: unsupported ops (with node names and domains), custom-domain
    ops, missing or escaping external data, inputs nobody defines (they crash the converter), unreadable files.

    Unsupported ops come from the converter itself: its op list, and (`trial`) for the model's ops outside
    that list, a trial conversion of the model (convert_model skips it: its own conversion answers)."""
    with client_or_own(client) as client:
        try:
            listing = supported_ops(client, onnx_path if trial else None)
        except Cancelled:
            raise
        except RunnerError as e:
            listing = {"mnn_version": None, "ops": None, "problem": e.message}
    report = check_model(str(onnx_path), listing.get("ops"), listing.get("unverified") or ())
    report["mnn_version"] = listing.get("mnn_version")
    report["probed"] = listing.get("probed")
    if listing.get("problem"):
        report["warnings"].append(f"the converter's op list is unavailable ({listing['problem']}): "
                                  "unsupported ops were not predicted")
    return report


# ----- the service ---------------------------------------------------------------------------------------
def run_convert(src, dst, settings: ConvertSettings | None = None, *, client: RunnerClient | None = None,
                store: RunStore | None = None, on_event: EventHandler | None = None, bundle_dir=None,
                run_dir=None, timeout: float = DEFAULT_TIMEOUT, reduce: bool = True,
                cache: bool = True) -> ConvertResult:
    """The convert service (the CLI and the dialog present it): check, convert, record in the run store.

    A missing model raises ModelError, unusable settings SettingsError (a UsageError); a failed conversion
    is a result, not an exception. `result.run_id` is the record; a store that cannot take it costs the
    record only, with a line in `result.warnings` (store.runs.record).
    """
    if not os.path.isfile(src):
        raise ModelError(f"{src}: no such file")
    settings = settings or ConvertSettings()
    result = convert_model(src, dst, settings, client=client, on_event=on_event, bundle_dir=bundle_dir,
                           run_dir=run_dir, timeout=timeout, reduce=reduce, cache=cache)
    summary = {k: v for k, v in result.to_json().items() if k != "run_id"}
    result.run_id, problem = record(store, kind="convert", model_path=src, settings=settings.to_json(),
                                    summary=summary, run_dir=result.run_dir)
    if problem:
        result.warnings.append(problem)
    return result


# ----- the operation ---------------------------------------------------------------------------------------
def _emit(on_event: EventHandler | None, message: str) -> None:
    if on_event is not None:
        on_event("progress", {"fraction": None, "message": message})


def _file_size(path: str | None) -> int | None:
    try:
        return os.path.getsize(path) if path else None
    except OSError:
        return None


def convert_model(src, dst, settings: ConvertSettings | None = None, client: RunnerClient | None = None,
                  on_event: EventHandler | None = None, bundle_dir=None, run_dir=None,
                  timeout: float = DEFAULT_TIMEOUT, node_map: bool = True, reduce: bool = True,
                  cache: bool = True, int8_fallback: bool = False) -> ConvertResult:
    """Convert an ONNX model to MNN in the runner and explain the outcome.

    `int8_fallback`: full int8 whose feature method crashed mnnquant is made with the other method where that
    quantizes (quantize.quantize's `fallback`); `result.settings` then names the method that made it.

    `cache`: serve an identical earlier converter run from the conversion cache (convert/cache.py) and store
    this one there when it succeeds; False (or MNNSCOPE_CACHE=0) always runs the converter.

    `bundle_dir`: on failure, write a bug-report bundle there (with a reduced model when `reduce`).
    `run_dir`: where the log and work files go (default: a new folder under runs_root()).
    A failed conversion leaves no model at `dst` (what the converter wrote goes to the run folder).
    Raises SettingsError for unusable settings and Cancelled when `client.cancel()` stops it.
    """
    settings = settings or ConvertSettings()
    problems = settings.validate()
    if problems:
        raise SettingsError("; ".join(problems))
    src, dst = os.fspath(src), os.fspath(dst)
    if os.path.abspath(src) == os.path.abspath(dst):
        raise SettingsError("the output file must not be the input model (the converter replaces its output)")
    run = Path(run_dir) if run_dir else new_run_dir()
    run.mkdir(parents=True, exist_ok=True)
    log_path = str(run / "convert.log")
    start = time.monotonic()
    with client_or_own(client) as client:
        _emit(on_event, "pre-flight checks")
        pre = preflight(src, client, trial=False)
        if pre.get("refuse"):
            # External data that points outside the model's folder: the converter would read any file.
            log = f"not converted: {pre['refuse']}\n"
            Path(log_path).write_text(log, encoding="utf-8")
            attempt = Attempt(False, log_path, log, 0.0, error={"kind": "refused", "message": pre["refuse"]})
        else:
            Path(dst).parent.mkdir(parents=True, exist_ok=True)
            float_dst = str(run / "float.mnn") if settings.int8 else dst
            cache_info = _cache_lookup(src, float_dst, settings, pre, client, log_path, on_event) \
                if ccache.enabled(cache) else {"state": "off", "key": None}
            attempt = cache_info.pop("attempt", None)
            if attempt is None:
                attempt = convert_once(client, src, float_dst, settings, log_path, on_event, timeout)
        verdict = diagnose(attempt, pre, parse_log(attempt.log_text), settings)
        if pre.get("refuse"):
            cache_info = {"state": "bypassed", "key": None, "reason": "not converted"}
        store_pending = cache_info["state"] == "miss" and verdict["ok"]  # stored below, with its node map
        explained = cache_info.pop("explain", None)
        convert_s = 0.0 if cache_info["state"] == "hit" else attempt.seconds
        quant_attempt = None
        if verdict["ok"] and settings.int8 is not None:
            _emit(on_event, "int8 calibration")
            quant_attempt, qverdict = quantize(client, src, attempt.result["output"], dst, settings, run,
                                               on_event, timeout, fallback=int8_fallback)
            if qverdict.get("feature_method"):  # what made the model (the method given crashed mnnquant)
                settings = dataclasses.replace(settings, int8=dataclasses.replace(
                    settings.int8, feature_method=qverdict["feature_method"]))
            verdict["errors"] += qverdict["errors"]
            verdict["warnings"] += qverdict["warnings"]
            verdict["ok"] = qverdict["ok"]
            if not qverdict["ok"]:  # (the float conversion's "ok" made the bundle reduce what converts fine)
                verdict["signature"] = ["quantize_failed"]
        out_ok = verdict["ok"]
        if not out_ok:
            _set_aside(dst, run)
        result = ConvertResult(
            ok=out_ok, output=os.path.abspath(dst) if out_ok else None,
            size_bytes=_file_size(dst) if out_ok else None, seconds=time.monotonic() - start,
            unsupported_ops=pre.get("unsupported_ops", []),
            errors=verdict["errors"], warnings=pre.get("warnings", []) + verdict["warnings"], node_map=None,
            log_path=log_path, log_text=attempt.log_text + (quant_attempt.log_text if quant_attempt else ""),
            settings=settings, preflight=pre, signature=verdict["signature"], argv=attempt.argv,
            run_dir=str(run), mnn_ops=(attempt.result or {}).get("mnn_ops"), cache=cache_info, convert_s=convert_s)
        if quant_attempt is not None:
            result.convert_s += quant_attempt.seconds
        if out_ok:
            for entry in pre.get("unsupported_ops", []):
                result.warnings.append(f"{entry['op_type']} ({entry['domain']}, {len(entry['nodes'])} node(s)) was kept "
                                       "as a custom op: MNN can only run the model with an implementation of it")
            weight = dst + ".weight"
            result.weight_file = os.path.abspath(weight) if os.path.isfile(weight) else None
            read = None  # the written .mnn as our reader sees it, read once for the checks below
            if settings.weight_quant_bits is not None or settings.int8 is not None:
                read = _float_left(result, dst, settings)
            if node_map and explained is not None and settings.int8 is None:
                result.node_map, result.diff = NodeMap.from_json(explained["node_map"]), explained["diff"]
            elif node_map:
                _explain(result, src, dst, attempt.log_text, on_event, read)
        elif bundle_dir is not None and not all(e.get("kind") in NOT_A_BUG for e in result.errors):
            _emit(on_event, "writing the bug-report bundle")
            result.bundle, result.reduced = write_bundle(bundle_dir, src, result, client, reduce=reduce,
                                                         on_event=on_event, timeout=timeout)
        if store_pending:
            explain = {"node_map": result.node_map.to_json(), "diff": result.diff} \
                if settings.int8 is None and result.node_map is not None else None
            cache_info["state"] = _cache_store(cache_info, attempt, float_dst, explain)
        cache_info.pop("parts", None)
        result.seconds = time.monotonic() - start
        return result


# ----- the conversion cache -----------------------------------------------------------------------------
def _cache_lookup(src: str, dst: str, settings: ConvertSettings, pre: dict, client: RunnerClient, log_path: str,
                  on_event: EventHandler | None) -> dict:
    """{"state": hit|miss|bypassed, "key", ...}; on a hit also "attempt": the stored converter run, its files
    placed at `dst` and its log written to `log_path` (and replayed to `on_event`) as if it had just run."""
    missing = pre.get("external_data", {}).get("missing")
    if missing:
        return {"state": "bypassed", "key": None, "reason": "external data missing"}
    if not pre.get("mnn_version"):
        return {"state": "bypassed", "key": None, "reason": "MNN version unknown"}
    try:
        model_sha = ccache.model_digest(src, pre.get("external_data", {}).get("files", []))
    except OSError as e:
        return {"state": "bypassed", "key": None, "reason": f"model unreadable ({e})"}
    key, parts = ccache.conversion_key(model_sha, settings.to_args(), pre["mnn_version"], client.python)
    info = {"state": "miss", "key": key, "parts": parts}
    store = ccache.DiskCache()
    found = store.get(ccache.CONVERT, key)
    if found is None:
        return info
    folder, meta = found
    try:
        if os.path.isfile(dst + ".weight") and "model.mnn.weight" not in meta["files"]:
            os.remove(dst + ".weight")  # an old output must never pass for this conversion's result
        Path(dst).parent.mkdir(parents=True, exist_ok=True)
        for name in meta["files"]:
            if name.startswith("model.mnn"):
                ccache.place(folder / name, dst + name[len("model.mnn"):])
        log_text = (folder / "convert.log").read_text(encoding="utf-8", errors="replace")
        explain = json.loads((folder / EXPLAIN).read_text(encoding="utf-8")) if EXPLAIN in meta["files"] else None
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        Path(log_path).write_text(log_text, encoding="utf-8")
    except (OSError, KeyError, ValueError):
        return info  # evicted under us or unwritable destination: convert as if never cached
    result = dict(meta.get("result") or {})
    argv = tools_argv(os.path.abspath(src), os.path.abspath(dst), settings)
    result.update(argv=argv, log_path=str(log_path), output=os.path.abspath(dst), output_bytes=_file_size(dst),
                  weight_bytes=_file_size(dst + ".weight"), seconds=0.0, cached=True)
    converter_s = float(meta.get("converter_s") or 0.0)
    if on_event is not None:
        on_event("log", {"text": f"(conversion cache hit {key[:12]}: the converter's log of an identical run, "
                                 f"which took {converter_s:.1f} s)\n" + log_text.rstrip("\n"),
                         "stream": "converter"})
    attempt = Attempt(True, str(log_path), log_text, 0.0, result=result, argv=argv)
    return {"state": "hit", "key": key, "converter_s": round(converter_s, 3), "attempt": attempt, "explain": explain}


EXPLAIN = "explain.json"  # the node map and graph diff: derived from the entry's own files, kept to skip rebuilding


def _cache_store(info: dict, attempt: Attempt, dst: str, explain: dict | None) -> str:
    """Keep a successful converter run; "stored", or "miss" when the cache would not take it."""
    files = {"model.mnn": dst, "convert.log": attempt.log_path}
    if os.path.isfile(dst + ".weight"):
        files["model.mnn.weight"] = dst + ".weight"
    if explain is not None:
        side = Path(attempt.log_path).with_name("cache-explain.json")
        try:
            side.write_text(json.dumps(explain, default=str), encoding="utf-8")
            files[EXPLAIN] = str(side)
        except (OSError, TypeError, ValueError):
            pass
    result = {k: v for k, v in (attempt.result or {}).items() if k not in ("argv", "log_path", "output")}
    meta = {"key_parts": info.get("parts"), "result": result, "converter_s": attempt.seconds}
    stored = ccache.DiskCache().put(ccache.CONVERT, info["key"], files, meta)
    if EXPLAIN in files:
        try:
            os.remove(files[EXPLAIN])
        except OSError:
            pass
    return "stored" if stored is not None else "miss"


def _set_aside(dst: str, run: Path) -> None:
    """A failed conversion's output (e.g. garbage weights after missing external data) must not stay where
    the user asked for a model: it goes to the run folder as rejected.mnn, for inspection."""
    for path, name in ((dst, "rejected.mnn"), (dst + ".weight", "rejected.mnn.weight")):
        if os.path.isfile(path):
            try:
                shutil.move(path, run / name)
            except OSError:
                os.remove(path)


def _float_left(result: ConvertResult, dst: str, settings: ConvertSettings):
    """A warning where a quantizing conversion left most weight bytes in float32 (checks.float_weights_left);
    returns the MnnModel read (None when unreadable), for _explain."""
    what = f"{settings.weight_quant_bits}-bit weight quantization" if settings.weight_quant_bits is not None \
        else "int8 quantization"
    try:
        mnn_model = read_mnn(dst)
    except MnnFormatError:
        return None
    weights = float_weights(mnn_model)  # (one walk of the model for the warning and the share)
    note = float_weights_left(mnn_model, what, weights=weights)
    if note:
        result.warnings.append(note)
    result.float_share = float_weight_share(weights)
    return mnn_model


def _explain(result: ConvertResult, src: str, dst: str, log_text: str, on_event: EventHandler | None,
             mnn_model=None) -> None:
    """Node map and graph diff of a successful conversion (pure Python: the .mnn is read by our own reader, unless
    `mnn_model` is that reading already)."""
    _emit(on_event, "mapping ONNX nodes to MNN ops")
    try:
        onnx_graph = load_onnx(src)
        mnn_model = mnn_model or read_mnn(dst)
    except (ModelError, MnnFormatError) as e:
        result.warnings.append(f"node map unavailable: {e}")
        return
    result.node_map = build_node_map(onnx_graph, mnn_model, log_text)
    result.diff = graph_diff(onnx_graph, mnn_model, result.node_map, log_text)
