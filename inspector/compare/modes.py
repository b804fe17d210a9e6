"""Precision modes: one conversion per mode (identical settings converted once) and one dump run per mode.

The modes (what each converts and runs) and the options are in options.py.
Everything is one reference run and one run per mode: never a reconversion per probe. The fix
suggestion (fix.py) adds one conversion and one run for the worst quantized mode.
"""
from __future__ import annotations

import dataclasses
import math
import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout, wait as wait_futures

import numpy as np

from mnnscope.runner import protocol
from mnnscope.runner.protocol import RunnerError

from mnnscope.inspector.compare.calibration import (calibration_advice, calibration_of, random_inputs_note,
                                                    random_match_note, random_spec)
from mnnscope.inspector.compare.emulate import emulate_model
from mnnscope.inspector.compare.inputscale import input_scale_notes
from mnnscope.inspector.compare.fix import plan_for, suggest_fix
from mnnscope.inspector.compare.match import match_tensors
from mnnscope.inspector.compare.metrics import compare_mode, plain_outputs, worst_output_error
from mnnscope.inspector.compare.repro import NothingToReproduce, make_repro
from mnnscope.inspector.compare.verdict import judge
from mnnscope.inspector.compare.options import (DEFAULT_MODES, DUMP_TIMEOUT, EMULATED, MODES, QUANTIZED, REAL_MODE,
                                                CompareOptions, Mode, parse_modes, weights_mode)
from mnnscope.inspector.convert import cache as ccache
from mnnscope.inspector.convert.service import convert_model, supported_ops
from mnnscope.inspector.convert.settings import ConvertSettings, Int8Settings, graph_settings
from mnnscope.inspector.errors import ModelError
from mnnscope.inspector.formats.mnn import load_mnn
from mnnscope.inspector.inputs.data import load_inputs, make_inputs, save_inputs
from mnnscope.inspector.model.graph import ModelGraph
from mnnscope.inspector.process.client import Cancelled, RunnerClient
from mnnscope.inspector.store.tensors import load

# Re-exported: callers that run comparisons name the options and modes beside run_compare.
__all__ = ["DEFAULT_MODES", "MODES", "QUANTIZED", "CompareOptions", "Mode", "parse_modes", "run_compare"]

STOP_WAIT_S = 10.0  # how long a stop waits for the conversion workers to finish (their runners killed)


class _Session:
    """What one compare run shares: the runner, the work folder, conversions by settings key."""

    def __init__(self, onnx_path: str, graph: ModelGraph, inputs_npz: str, options: CompareOptions,
                 client: RunnerClient, work_dir: str, on_event, inputs_random: bool | None = None):
        self.onnx_path, self.graph, self.inputs_npz = os.path.abspath(onnx_path), graph, inputs_npz
        self.inputs_random = inputs_random  # the compared inputs are generated (None: not known)
        self.input_scale: list[dict] = []  # inputs on a scale the model does not expect (inputscale.py)
        self.options, self.client, self.work = options, client, work_dir
        self.on_event = on_event
        self.conversions: dict[str, dict] = {}
        self.structures: dict[str, tuple] = {}
        self._events = threading.Lock()       # conversions report from worker threads
        self._guard = threading.Lock()        # the worker list and the stop flag (never held while reporting)
        self._pending: dict[str, object] = {}  # settings key -> Future of a conversion under way
        self._workers: list[RunnerClient] = []
        self._stopping = False
        self._pool: ThreadPoolExecutor | None = None

    def emit(self, message: str) -> None:
        if self.on_event is not None:
            with self._events:
                self.on_event("progress", {"fraction": None, "message": message})

    # ----- conversions in parallel --------------------------------------------------------------------
    def start_conversions(self, modes: list[Mode]) -> int:
        """Convert every distinct setting of `modes` in the background, each in a short-lived runner of its own
        (own process, own working directory: the converter writes scratch files into its cwd), at most
        parallel_conversions() at once, while the caller runs the reference. Returns how many were started."""
        wanted: dict[str, tuple[Mode, ConvertSettings]] = {}
        for mode in modes:
            if mode.runtime_only and self.options.mnn_path or mode.emulate:
                continue  # a given file, or no MNN at all (emulated modes)
            settings = self.settings_for(mode)
            wanted.setdefault(settings.key(), (mode, settings))
        # What the cache holds is served later on the main runner: no process to start for a file copy.
        cached = self._cached_keys(wanted)
        todo = {k: v for k, v in wanted.items() if k not in cached}
        if not todo:
            return 0
        jobs = parallel_conversions(len(todo), self.onnx_path)
        self._pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="mnnscope-convert")
        for key, (mode, settings) in todo.items():
            self._pending[key] = self._pool.submit(self._convert_worker, mode, settings, key)
        self.emit(f"converting {len(todo)} setting(s), {jobs} at a time, beside the reference run")
        return len(todo)

    def _cached_keys(self, wanted: dict) -> set[str]:
        """The settings keys whose conversion the conversion cache holds (a guess that costs no conversion: the
        real lookup, with its check of the entry, happens in convert_model)."""
        if not ccache.enabled(self.options.cache):
            return set()
        try:
            version = supported_ops(self.client).get("mnn_version")
            sha = ccache.model_digest(self.onnx_path, ccache.external_files(self.onnx_path))
        except Exception:  # noqa: BLE001 - no guess: every conversion goes to a worker, which looks up itself
            return set()
        if not version:
            return set()
        store = ccache.DiskCache()
        held = set()
        for key, (_mode, settings) in wanted.items():
            ckey, _ = ccache.conversion_key(sha, settings.to_args(), version, self.client.python)
            if (store.entry_dir(ccache.CONVERT, ckey) / ccache.META).is_file():
                held.add(key)
        return held

    def _convert_worker(self, mode: Mode, settings: ConvertSettings, key: str) -> dict:
        with self._guard:
            if self._stopping:
                raise Cancelled()
            client = _WorkerClient(self, python=self.client.python, env=self.client.extra_env)
            self._workers.append(client)
        try:
            return self._convert(mode, settings, key, client)
        finally:
            client.stop()

    def stop_conversions(self) -> None:
        """Cancel: every conversion still under way stops (its runner is killed), none starts."""
        with self._guard:  # a worker's runner starts under this guard (_WorkerClient): none starts after this
            self._stopping = True
            for client in self._workers:
                client.cancel()
                client.kill()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        # A worker whose runner was just killed still writes into the work folder on its way out (the log, the
        # set-aside output), which the caller removes next: a folder outlived SIGTERM that way (CI, under load).
        # Its runner is dead, so it is done in moments; the wait is bounded all the same.
        wait_futures(list(self._pending.values()), timeout=STOP_WAIT_S)

    def _wait(self, key: str) -> dict | None:
        future = self._pending.get(key)
        if future is None:
            return None
        while True:
            try:
                return future.result(timeout=0.2)
            except FutureTimeout:
                continue

    def settings_for(self, mode: Mode) -> ConvertSettings:
        s = graph_settings(self.options.convert_settings)  # GELU, optimize level, fusions: the user's
        user = ConvertSettings.from_json(self.options.convert_settings) if self.options.convert_settings else None
        for name, value in mode.settings:
            setattr(s, name, value)
        if mode.weight_bits is not None:  # the mode's bits; how they are blocked: the options', else the user's
            s.weight_quant_bits = mode.weight_bits
            s.weight_quant_block = self.options.weight_quant_block if self.options.weight_quant_block is not None \
                else (user.weight_quant_block if user else None)
            s.weight_quant_asymmetric = self.options.weight_quant_asymmetric \
                if self.options.weight_quant_asymmetric is not None else (user.weight_quant_asymmetric if user else None)
        if mode.int8:
            # full int8 is calibrated as the user set it (tryout 10: mnnquant crashed with KL and said "winogradOpt
            # only be available under EMA"; EMA set in the Convert dock, Reconvert and re-run crashed again on KL):
            # their methods, and their data when they gave some; else this comparison's inputs and seeded samples
            mine = user.int8 if user is not None else None
            if mine is not None and mine.sources():
                s.int8 = dataclasses.replace(mine, skip_ops=list(mine.skip_ops))
            else:
                s.int8 = Int8Settings(calib_files=self.calibration_files(), samples=self.options.calib_samples + 1,
                                      seed=self.options.seed)
                if mine is not None:
                    s.int8.feature_method, s.int8.weight_method = mine.feature_method, mine.weight_method
                    s.int8.quant_bits, s.int8.skip_ops = mine.quant_bits, list(mine.skip_ops)
            if self.options.feature_method:
                s.int8.feature_method = self.options.feature_method
        return s

    def calibration_files(self) -> list[str]:
        """The compare input plus seeded random samples of the same shapes (dynamic dims included)."""
        folder = os.path.join(self.work, "calibration")
        os.makedirs(folder, exist_ok=True)
        base = load_inputs(self.inputs_npz)
        shapes = {k: list(v.shape) for k, v in base.items()}
        files = [self.inputs_npz]
        for k in range(self.options.calib_samples):
            path = os.path.join(folder, f"sample{k}.npz")
            if not os.path.exists(path):
                save_inputs(make_inputs(self.graph, seed=self.options.seed + 1 + k, shapes=shapes), path)
            files.append(path)
        return files

    def model_for(self, mode: Mode) -> dict:
        """{path, settings, key, seconds, size_bytes, node_map, reused, error} for the mode's .mnn file."""
        if mode.runtime_only and self.options.mnn_path:
            return {"path": os.path.abspath(self.options.mnn_path), "settings": None, "key": "given",
                    "seconds": 0.0, "size_bytes": os.path.getsize(self.options.mnn_path), "node_map": None,
                    "reused": False, "error": None, "given": True}
        settings = self.settings_for(mode)
        key = settings.key()
        if key in self.conversions:
            return dict(self.conversions[key], reused=True)
        if key in self._pending:
            entry = self._wait(key)
        else:
            entry = self._convert(mode, settings, key, self.client)
        self.conversions[key] = entry
        return entry

    def _convert(self, mode: Mode, settings: ConvertSettings, key: str, client: RunnerClient) -> dict:
        folder = os.path.join(self.work, "conversions", key)
        os.makedirs(folder, exist_ok=True)
        dst = os.path.join(folder, "model.mnn")
        self.emit(f"converting for {mode.name} ({', '.join(settings.describe()) or 'default settings'})")
        # full int8 whose method nobody gave on the command line is made with the other one where the given one
        # crashes mnnquant and the other quantizes (said in the mode's warnings): a comparison, not a conversion
        result = convert_model(self.onnx_path, dst, settings, client=client, run_dir=folder, reduce=False,
                               cache=self.options.cache, int8_fallback=not self.options.feature_method)
        error = None
        if not result.ok:
            error = "; ".join(e.get("message", "") for e in result.errors) or "the conversion failed"
            # what to do (tryout 15's int8 tab showed MNN's words and no way out), for every error that has a step
            # of its own (unsupported_op.onnx's Mish step was left out beside Hardmax's, tryout 17)
            steps = result.next_steps()
            if steps:
                error += f" (next: {'; '.join(steps)})"
        cache = result.cache or {}
        self.emit(f"converted for {mode.name} in {result.seconds:.1f} s"
                  + (" (from the conversion cache)" if cache.get("state") == "hit" else ""))
        return {"path": result.output, "settings": result.settings or settings, "key": key, "seconds": result.seconds,
                "convert_s": result.convert_s or 0.0, "cache": cache, "size_bytes": result.size_bytes,
                "node_map": result.node_map, "reused": False, "error": error, "given": False,
                "warnings": list(result.warnings), "float_share": result.float_share}

    # ----- the reference run, cached ------------------------------------------------------------------
    def reference(self, ref_dir: str) -> dict:
        """The ONNX Runtime run that writes every tensor, served from the reference cache when the model
        (external data included), the inputs, the runtime and its settings are identical."""
        key, parts = None, None
        if ccache.enabled(self.options.cache):
            try:
                key, parts = self._reference_key()
            except Exception:  # noqa: BLE001 - unreadable model, runner without versions: run it, cache nothing
                key = None
        if key is not None:
            found = ccache.DiskCache().get(ccache.REFERENCE, key)
            if found is not None:
                folder, meta = found
                start = time.monotonic()
                try:
                    if os.path.isdir(ref_dir):
                        shutil.rmtree(ref_dir)
                    for name in meta["files"]:
                        target = os.path.join(ref_dir, name)
                        os.makedirs(os.path.dirname(target), exist_ok=True)  # cheap: the folders exist after one
                        ccache.place(folder / name, target, link=True)
                    ref = dict(meta["result"], out_dir=ref_dir)
                    ref["cache"] = {"state": "hit", "key": key, "run_s": meta["result"].get("seconds")}
                    ref["seconds"] = time.monotonic() - start
                    self.emit("reference run served from the cache (identical model, inputs and runtime)")
                    return ref
                except (OSError, KeyError):
                    pass  # evicted under us: run it
        ref = self.dump(protocol.ENGINE_ORT, self.onnx_path, ref_dir, sizes=self.onnx_sizes())
        state = "off" if not ccache.enabled(self.options.cache) else "bypassed" if key is None else "miss"
        if key is not None:
            files = {os.path.relpath(os.path.join(root, f), ref_dir): os.path.join(root, f)
                     for root, _dirs, names in os.walk(ref_dir) for f in names}
            result = {k: v for k, v in ref.items() if k not in ("out_dir", "cache")}
            if ccache.DiskCache().put(ccache.REFERENCE, key, files, {"key_parts": parts, "result": result}):
                state = "stored"
        ref["cache"] = {"state": state, "key": key}
        return ref

    def _reference_key(self) -> tuple[str, dict]:
        facts = self.client.hello(mnn=False)
        parts = {"kind": ccache.REFERENCE, "model": ccache.model_digest(self.onnx_path,
                                                                        ccache.external_files(self.onnx_path)),
                 "inputs": ccache.arrays_digest(load_inputs(self.inputs_npz)), "engine": protocol.ENGINE_ORT,
                 "onnxruntime": facts.get("onnxruntime"), "python": facts.get("python"),
                 "threads": self.options.threads, "precision": "high", "memory": "normal",
                 # the budget decides how the run is split into parts (the values are the same, the run is not)
                 "memory_budget_mb": self.options.memory_budget_mb}
        if not parts["onnxruntime"]:
            raise ValueError("ONNX Runtime version unknown")
        return ccache.make_key(parts), parts

    def structure(self, path: str):
        if path not in self.structures:
            try:
                self.structures[path] = (load_mnn(path), None)
            except ModelError as e:
                self.structures[path] = (None, f"MNN structure unavailable, matching by name only: {e}")
        return self.structures[path]

    def dump(self, engine: str, model: str, out_dir: str, precision="high", memory="normal",
             sizes: dict[str, int] | None = None) -> dict:
        """One run that writes every tensor; several runs over parts of the tensors when `sizes` (bytes per
        tensor) add up to more than the memory budget, since the runner holds every kept tensor at once."""
        if os.path.isdir(out_dir):
            shutil.rmtree(out_dir)
        payload = {"engine": engine, "model": model, "inputs": self.inputs_npz, "out_dir": out_dir,
                   "precision": precision, "memory": memory, "threads": self.options.threads}
        if engine == protocol.ENGINE_MNN:
            payload["plain_outputs"] = True  # outputs judged on a run that keeps no tensors (metrics.compare_mode)
            mnn_graph, _ = self.structure(model)
            if mnn_graph is not None:  # op names for the manifest (the runner only sees tensor names)
                payload["producers"] = {t: mnn_graph.g.nodes[nid].get("name")
                                        for t, nid in mnn_graph.producers().items()}
        groups = _groups(sizes or {}, int(self.options.memory_budget_mb * (1 << 20)))
        if len(groups) <= 1:
            return self.client.request("dump_tensors", payload, on_event=self._forward, timeout=DUMP_TIMEOUT)
        return self.dump_parts(payload, groups)

    def dump_parts(self, payload: dict, groups: list[list[str]]) -> dict:
        return dump_in_parts(self.client, payload, groups, self.emit, self._forward)

    def onnx_sizes(self) -> dict[str, int]:
        """Estimated bytes of every ONNX tensor the reference run keeps, from inferred shapes and the inputs."""
        feeds = load_inputs(self.inputs_npz)
        bind = {}
        for name, arr in feeds.items():
            t = self.graph.tensors.get(name)
            for d, n in zip((t.shape or []) if t else [], arr.shape):
                if isinstance(d, str):
                    bind[d] = int(n)
        sizes = {name: int(arr.nbytes) for name, arr in feeds.items()}
        for _, data in self.graph.g.nodes(data=True):
            for out in data["outputs"]:
                t = self.graph.tensors.get(out)
                dims = [bind.get(d, d) for d in (t.shape or [])] if t and t.shape is not None else None
                if dims is not None and all(isinstance(d, int) and d >= 0 for d in dims):
                    sizes[out] = int(np.prod(dims, dtype=np.int64)) * np.dtype(_np_dtype(t.dtype)).itemsize
                else:
                    sizes[out] = 0  # unknown: counted as small
        return sizes

    def mnn_sizes(self, mnn_graph: ModelGraph | None, ref_manifest: dict) -> dict[str, int] | None:
        """Bytes per MNN tensor, taken from the reference tensor of the same name (others: the median)."""
        if mnn_graph is None:
            return None
        known = {n: int(np.prod(e["shape"], dtype=np.int64)) * np.dtype(_np_dtype(e["dtype"])).itemsize
                 for n, e in ref_manifest.items()}
        median = int(np.median(list(known.values()))) if known else 0
        names = [t for _, d in mnn_graph.g.nodes(data=True) for t in d["outputs"] if t]
        return {n: known.get(n, median) for n in names}

    def _forward(self, kind, body) -> None:
        if self.on_event is not None and kind in ("progress", "log"):
            self.on_event(kind, body)


class _WorkerClient(RunnerClient):
    """A conversion's own runner: it refuses to start once the comparison is stopping."""

    def __init__(self, session: _Session, **kwargs):
        super().__init__(**kwargs)
        self._session = session

    def start(self) -> None:
        with self._session._guard:
            if self._session._stopping:
                raise Cancelled()
            super().start()

    def spawn_sibling(self) -> "_WorkerClient":
        """Another runner for the same conversion (mnnquant's own process), stopped by Cancel like this one."""
        with self._session._guard:
            sibling = _WorkerClient(self._session, python=self.python, env=self.extra_env)
            self._session._workers.append(sibling)
        return sibling


def dump_in_parts(client: RunnerClient, payload: dict, groups: list[list[str]], emit, forward, check=None) -> dict:
    """One dump request per group of tensors (each a full run keeping only its part: ORT and MNN keep every
    tensor they are asked for until the end), merged into one result; `check(part)` sees each part."""
    merged = None
    for k, group in enumerate(groups):
        if len(groups) > 1:
            emit(f"part {k + 1} of {len(groups)} ({len(group)} tensors, within the memory budget)")
        # (a plain run of the outputs, where asked for, once: with the first part, whose result the merge keeps)
        part = client.request("dump_tensors", dict(payload, tensors=group, file_prefix=f"p{k}_",
                                                   plain_outputs=bool(payload.get("plain_outputs")) and k == 0),
                              on_event=forward, timeout=DUMP_TIMEOUT)
        if check is not None:
            check(part)
        if merged is None:
            merged = dict(part, parts=len(groups))
        else:
            merged["manifest"].update(part["manifest"])
            merged["problems"] = merged.get("problems", []) + part.get("problems", [])
            merged["seconds"] = merged.get("seconds", 0) + part.get("seconds", 0)
    return merged


def _np_dtype(name: str | None):
    try:
        return np.dtype(name or "float32")
    except TypeError:
        return np.dtype("float32")


def _groups(sizes: dict[str, int], budget: int) -> list[list[str]]:
    """Tensor names split into consecutive groups of at most `budget` bytes (one group when all fit)."""
    if not sizes or sum(sizes.values()) <= budget:
        return [list(sizes)] if sizes else []
    groups, current, used = [], [], 0
    for name, size in sizes.items():
        if current and used + size > budget:
            groups.append(current)
            current, used = [], 0
        current.append(name)
        used += size
    if current:
        groups.append(current)
    return groups


def run_compare(onnx_path: str, graph: ModelGraph, inputs_npz: str, options: CompareOptions,
                client: RunnerClient, work_dir: str, on_event=None, input_spec: dict | None = None,
                image_inputs: set | None = None) -> dict:
    """Reference run, then every mode; returns the JSON-ready result (compare.service adds the described
    inputs, the report path and the run id). `input_spec`: the make_inputs keywords `inputs_npz` was made with
    (whether they are random data is said of a full int8 mode calibrated on them); None: not known.
    `image_inputs`: the inputs made from an image file (what to do about one on the wrong scale is said for them)."""
    start = time.monotonic()
    s = _Session(onnx_path, graph, inputs_npz, options, client, work_dir, on_event, random_spec(input_spec))
    wanted, facts = _with_real_modes(s, list(options.modes))
    if any(m in wanted for m in ("low", "bf16")) and "fp32" not in wanted:
        wanted_runs = ["fp32"] + wanted  # the baseline for "no effect" is an fp32 run of the same file
    else:
        wanted_runs = wanted
    try:
        s.start_conversions([MODES[name] for name in wanted_runs])
        s.emit("reference run (ONNX Runtime, every node output)")
        ref_dir = os.path.join(work_dir, "reference")
        ref = s.reference(ref_dir)
        reference = {"runtime": "onnxruntime", "version": ref.get("version"), "graph_optimization": "disabled",
                     "tensors": len(ref["manifest"]), "seconds": ref.get("seconds"), "outputs": ref.get("outputs"),
                     "problems": ref.get("problems", []), "parts": ref.get("parts", 1), "cache": ref.get("cache")}
        outputs = [o for o in graph.outputs if o in ref["manifest"]] or list(ref.get("outputs") or [])
        manifest = ref["manifest"]
        s.input_scale = input_scale_notes(graph, load_inputs(inputs_npz), image_inputs=image_inputs,
                                          load=lambda t: load(ref_dir, manifest[t]) if t in manifest else None)
        modes, baselines = [], {}
        for name in wanted_runs:
            mode = MODES[name]
            result = _run_mode(s, mode, ref_dir, ref["manifest"], outputs, baselines)
            if name in wanted:
                modes.append(result)
    finally:
        s.stop_conversions()
    _time_modes(s, modes)
    _note_real_precision(modes, facts, options.fix_ops)
    fix = None
    if options.fix:
        fix = suggest_fix(s, modes, ref_dir, ref["manifest"], outputs) or \
            _emulated_fix(s, modes, ref_dir, ref["manifest"], outputs)
    repro_problem = None
    if options.repro:
        repro_problem = _repro(s, modes, ref_dir, ref["manifest"])
    if not options.keep:
        for d in baselines.values():
            shutil.rmtree(d["dir"], ignore_errors=True)
    ok = all(m.get("ok") for m in modes)
    # Where the wait went: the converter's own seconds over every distinct conversion (0 for cache hits; they
    # ran in parallel, so their sum can exceed the wall time they took).
    convert_s = sum(c.get("convert_s") or 0.0 for c in s.conversions.values())
    return {"model": os.path.abspath(onnx_path), "reference": reference, "modes": modes, "fix": fix,
            "input_scale": s.input_scale, "ok": ok, "seconds": time.monotonic() - start,
            "convert_s": round(convert_s, 3), "work_dir": work_dir,
            **({"repro_problem": repro_problem} if options.repro else {})}


TIME_BUDGET_S = 10.0  # timed runs of one mode, at most about this long (a one-run minimum)


def _time_modes(s: _Session, modes: list[dict]) -> None:
    """Each mode that ran on MNN gets `timing`: the median (min, max) of `time_runs` timed runs (fewer where they would
    take over TIME_BUDGET_S; `runs` says how many) of its model at its precision and memory mode, after every conversion has ended (a conversion running beside a timed run slows it),
    one mode after another; {"error": message} when the run failed; None when not timed."""
    for row in modes:
        row["timing"] = None
        if s.options.time_runs < 1 or row.get("error") or row.get("emulated") or not row.get("mnn_model"):
            continue
        # a large model's runs are few enough for ~TIME_BUDGET_S a mode (its run with every tensor read back, an
        # upper bound of one run, says how long one takes)
        one = ((row.get("run") or {}).get("seconds") or 0.0) / max(1, (row.get("run") or {}).get("parts") or 1)
        runs = max(1, min(s.options.time_runs, int(TIME_BUDGET_S / one))) if one > 0 else s.options.time_runs
        s.emit(f"timing {row['mode']} ({runs} runs)")  # (not "<mode>:", the dock's step prefix)
        payload = {"path": row["mnn_model"], "engine": protocol.ENGINE_MNN, "inputs": s.inputs_npz,
                   "precision": row.get("precision") or "high", "memory": row.get("memory") or "normal",
                   "threads": s.options.threads, "runs": runs, "warmup": 1, "stats": False,
                   "save": "none", "check_precision": False, "plain": True}
        try:
            r = s.client.request("profile", payload, on_event=s._forward, timeout=DUMP_TIMEOUT)
        except RunnerError as e:
            row["timing"] = {"error": e.message}
            continue
        # the uninstrumented runs (no per-op callbacks) where MNN has them: what an application's run costs
        plain = r.get("plain_runs_ms") or []
        times = plain or r.get("runs_ms") or []
        ms = r.get("plain_ms") if plain else r.get("total_ms")
        row["timing"] = {"ms": ms, "ms_min": min(times) if times else r.get("total_ms_min"),
                         "ms_max": max(times) if times else r.get("total_ms_max"), "runs": runs,
                         "threads": s.options.threads}


def _repro(s: _Session, modes: list[dict], ref_dir: str, ref_manifest: dict) -> str | None:
    """`--repro DIR`: each mode row gets `repro` (repro.make_repro's entry, or None); returns why there is no
    verified repro (None when there is one)."""
    problems = []
    for row in modes:
        row["repro"] = None
        if row.get("emulated"):
            problems.append(f"{row['mode']}: an emulated mode has no MNN conversion to cut a repro from")
            continue
        try:
            row["repro"] = make_repro(s, MODES[row["mode"]], row, ref_dir, ref_manifest, s.options.repro,
                                      random_weights=s.options.repro_random_weights)
        except NothingToReproduce as e:
            problems.append(str(e))
            continue
        except RunnerError as e:
            problems.append(f"{row['mode']}: the repro could not be verified: {e.message}")
            continue
        if not row["repro"]["verified"]:
            problems.append(f"{row['mode']}: {row['repro']['note']}")
    return "; ".join(problems) or None


def parallel_conversions(count: int, model: str) -> int:
    """How many conversions run at once: one per core, as many as memory holds (a converter holds several
    copies of the model's weights: 3x the model's bytes + 512 MB each, measured loosely), at least one.
    MNNSCOPE_CONVERT_JOBS overrides."""
    try:
        forced = int(os.environ.get("MNNSCOPE_CONVERT_JOBS", "0"))
    except ValueError:
        forced = 0
    if forced > 0:
        return max(1, min(count, forced))
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        weights = sum(os.path.getsize(p) for p in _model_files(model))
    except OSError:
        weights = 0
    per = 3 * weights + (512 << 20)
    available = _available_memory()
    by_memory = max(1, available // per) if available else count
    return int(max(1, min(count, cores, by_memory)))


def _model_files(model: str) -> list[str]:
    try:
        return [model] + [os.path.join(os.path.dirname(model), f) for f in ccache.external_files(model)]
    except Exception:  # noqa: BLE001 - an unparsable model fails later, with its own message
        return [model]


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _run_mode(s: _Session, mode: Mode, ref_dir: str, ref_manifest: dict, outputs: list[str], baselines: dict) -> dict:
    """One mode's row, with its verdict (match/close/wrong/failed), cause and failed node (verdict.py)."""
    # The runner's log lines of this mode: when a run dies after the Interpreter gave up on the model, the
    # reason it gave (MNN's own words, naming the op) is only there.
    logs: list[str] = []
    forward = s.on_event

    def keep(kind, body):
        if kind == "log" and isinstance(body, dict) and body.get("text"):
            logs.append(str(body["text"]))
        if forward is not None:
            forward(kind, body)

    s.on_event = keep
    try:
        measure = _measure_emulated if mode.emulate else _measure_mode
        row = measure(s, mode, ref_dir, ref_manifest, outputs, baselines)
    finally:
        s.on_event = forward
    row.setdefault("emulated", False)
    if row.get("error") and not (row.get("run") or {}).get("fallback_reason"):
        fallback = next((line for line in logs if "Interpreter cannot run" in line), None)
        if fallback:
            row["run"] = dict(row.get("run") or {}, fallback_reason=fallback)
    problems = {p.split(":", 1)[0]: p for p in (row.get("run") or {}).get("problems") or []}
    for u in row.get("unmatched", []):
        if u["tensor"] in problems:  # the runner's own words on why it has no value
            u["reason"] = f"{u['reason']}: {problems[u['tensor']]}"
    row.update(judge(_as_judged(row) if mode.emulate else row, s.graph))
    scale = "; ".join(n["text"] for n in s.input_scale)
    advice = calibration_advice(row, scale or None)
    if scale and not advice and not row.get("ok") and not row.get("error"):
        # measured on inputs the model never sees: said first (a full int8 row says it as its calibration advice: a
        # new user's int8, calibrated on their captchas read on the 0..1 scale, was told to give it more samples)
        row.setdefault("warnings", []).insert(0, scale)
    if advice:  # (a new user's int8 read "wrong: /Softmax ..." and nothing said it was calibrated on random data)
        row["calibration"]["advice"] = advice
        row["cause"] += f"; {advice}"
    note = random_match_note(row) or random_inputs_note(row, s.inputs_random)
    if note:  # random data only, said beside the verdict (tiny_note's channel), the verdict kept
        row.setdefault("warnings", []).append(note)
    if mode.emulate:
        _explain_overflow(row)
    return row


def branch_note(result: dict) -> str | None:
    """Which branches the model's If ops ran (metrics._branches): one taken on ONNX Runtime and another on MNN (their
    conditions differ: different computations), or each one's only branch, the other not checked by these inputs (an
    If that passed did not say which branch ran: helper 117)."""
    known = [b for b in result.get("branches") or [] if b.get("reference")]
    differ = [b for b in known if b.get("mnn") and b["mnn"] != b["reference"]]
    if differ:
        return "; ".join(f"If {b['onnx_node']} took {b['reference']} on ONNX Runtime and {b['mnn']} on MNN (its "
                         f"condition {b['cond']} differs)" for b in differ[:3]) + \
            (f"; and {len(differ) - 3} more" if len(differ) > 3 else "") + ": the two ran different computations"
    if len(known) == 1:
        b = known[0]
        other = "else_branch" if b["reference"] == "then_branch" else "then_branch"
        was = "true" if b["reference"] == "then_branch" else "false"
        return (f"If {b['onnx_node']} ran {b['reference']} only (its condition {b['cond']} was {was} on these "
                f"inputs): {other} was not checked")
    if known:
        listed = ", ".join(f"{b['onnx_node']} {b['reference']}" for b in known[:4])
        return (f"{len(known)} If ops each ran one branch on these inputs ({listed}"
                f"{', ...' if len(known) > 4 else ''}): their other branches were not checked")
    return None


def plain_note(result: dict) -> str | None:
    """What a mode says when keeping every tensor readable changed MNN's outputs (its outputs are then judged on a
    plain run, the per-tensor analysis is of the run that kept them)."""
    diffs = result.get("plain_differs") or []
    if not diffs:
        return None
    d = max(diffs, key=lambda x: x.get("rel_l2_plain") or 0.0)
    fmt = lambda v: "?" if v is None else f"{v:.3g}"  # noqa: E731
    return (f"keeping every tensor readable changed what MNN computes ({len(diffs)} output"
            f"{'s' if len(diffs) > 1 else ''}; {d['output']}: rel L2 {fmt(d['rel_l2_plain'])} in a plain run, "
            f"{fmt(d['rel_l2_kept'])} with every tensor kept): the outputs are judged on the plain run, the "
            "layer-by-layer figures are of the run that kept them")


SMALL_SAID = 0.01  # an output's rel L2 passed on the absolute floor is said from 1% (tiny_note)


def tiny_note(result: dict) -> str | None:
    """What a mode says of an output that passes on the absolute floor more than on its own scale (atol >= rtol x
    max|reference|) with a relative error from SMALL_SAID: the inputs give the model too little to compare. Full int8
    passed a text detector's probability map (4e-4 at most on random inputs) 75% off, and int8w's "match" with rel L2
    0.1 read as wrong beside its numbers, nothing saying why (new-user tries); the verdict stays the tolerance's
    (tolerance.py)."""
    tol = result.get("tolerance") or {}
    atol, rtol = tol.get("atol") or 0.0, tol.get("rtol") or 0.0
    floor = [o for o in result.get("outputs") or [] if o.get("within") and tol.get("metric") is None
             and (o.get("ref_max_abs") or 0) > 0 and atol >= rtol * o["ref_max_abs"]
             and (o.get("rel_l2") or 0) > max(rtol, SMALL_SAID)]
    if not floor:
        return None
    o = max(floor, key=lambda x: x.get("rel_l2") or 0.0)
    size = (f"almost zero on these inputs (max |reference| {o['ref_max_abs']:.3g}, under atol {atol:g}): it passes on "
            "atol alone" if o.get("tiny_reference") else
            f"small on these inputs (max |reference| {o['ref_max_abs']:.3g}): its limit is mostly the absolute floor "
            f"atol {atol:g} (against {rtol:g} x max|reference|)")
    return (f"output {o['name']} is {size}, with rel L2 {o['rel_l2']:.3g}: these inputs cannot tell a right output "
            "from a wrong one; compare on inputs like the model's real data (the Inputs dock)")


def top1_note(result: dict) -> str | None:
    """What a mode says of a scores output (logits, log-probabilities) whose top-1 class changed somewhere while the
    output is within tolerance: the tolerance is on the values, and the romanizer decoder's int8 passed it with its
    logprobs 0.185 off at most, where a seq2seq shipper checks whether the next token is the same (helper 111)."""
    moved = [o for o in result.get("outputs") or [] if o.get("within") and o.get("top1") is not None
             and o["top1"] < 1.0]
    if not moved:
        return None
    o = min(moved, key=lambda x: x["top1"])
    return (f"output {o['name']} is within tolerance, but its top-1 class differs at {100 * (1 - o['top1']):.3g}% of "
            f"its positions ({100 * o['top1']:.3g}% agree): the largest score changed where the values stay close; "
            "judge it by --metric, or by what your application reads of it")


def _measure_mode(s: _Session, mode: Mode, ref_dir: str, ref_manifest: dict, outputs: list[str], baselines: dict) -> dict:
    tol = s.options.tolerance_for(mode.name)
    row = {"mode": mode.name, "description": mode.description, "precision": mode.precision,
           "memory": mode.memory, "ok": False, "error": None, "effect": None, "tolerance": tol.to_json(),
           "outputs": [], "first_divergence": None, "sources": [], "harmless": [], "ranking": [], "tensors": [], "unmatched": []}
    try:
        model = s.model_for(mode)
        if model.get("given"):  # the file run as it is: no "default conversion" happened
            row["description"] = (f"{os.path.basename(model['path'])} as given (no conversion), "
                                  + ("fp32 run" if mode.name == "fp32" else mode.description))
        row["conversion"] = {"key": model["key"], "reused": model["reused"], "given": model.get("given", False),
                             "seconds": model["seconds"], "size_bytes": model["size_bytes"],
                             "settings": model["settings"].to_json() if model["settings"] else None,
                             "cache": model.get("cache")}
        # The converter's own seconds for this mode (0 when reused, given or served by the cache).
        row["convert_s"] = 0.0 if model["reused"] else round(model.get("convert_s") or 0.0, 3)
        if model["settings"] is not None and model["settings"].int8 is not None:
            row["calibration"] = calibration_of(model["settings"].int8, s.work, s.inputs_npz, s.inputs_random)
        if model["error"]:
            row["error"] = f"conversion failed: {model['error']}"
            return row
        # what the conversion warned of (weights a quantizing mode left in float32: tryout 14's GRU kept by a
        # Convert dock setting made int4w a "match" with its recurrent weights never quantized, and nothing said so)
        if model.get("warnings"):
            row.setdefault("warnings", []).extend(model["warnings"])
        # the share itself, for the verdict's mark: "int8 \u2713 0.004" over a conversion that left 97% of its weights in
        # float32 read as int8 being fine (helper 111: the Convert dock's keep-LSTM/GRU setting, kept on)
        if model.get("float_share") is not None:
            row["conversion"]["float_share"] = round(model["float_share"], 4)
        row["mnn_model"] = model["path"]
        out_dir = os.path.join(s.work, "runs", mode.name)
        s.emit(f"{mode.name}: running MNN and reading every tensor")
        mnn_graph, problem = s.structure(model["path"])
        stored = stored_weights(mnn_graph) if model.get("given") and mode.name == "fp32" else None
        if stored:  # a given file with fp16 or quantized weights is judged as that mode (a new-user try's fp16
            # .mnn read "wrong: MNN computes /Gemm_1 differently" under fp32's tolerance, offering a bug repro)
            tol = s.options.tolerance_for(stored)
            row.update(judged_as=stored, tolerance=tol.to_json(), description=(
                f"{os.path.basename(model['path'])} as given (no conversion; its weights are "
                f"{STORED_WORDS[stored]}, judged as {stored}), fp32 run"))
        dump = s.dump(protocol.ENGINE_MNN, model["path"], out_dir, mode.precision, mode.memory,
                      sizes=s.mnn_sizes(mnn_graph, ref_manifest))
    except RunnerError as e:
        row["error"] = e.message
        return row
    row["run"] = {k: dump.get(k) for k in ("api", "fallback_reason", "seconds", "backend_requested",
                                            "backend_used", "problems")}
    row["run"]["parts"] = dump.get("parts", 1)
    match = match_tensors(s.graph, mnn_graph, dump["manifest"], ref_manifest, model["node_map"])
    # float weights: a mode that quantizes none, on a model whose ops carry no quantization (a given --mnn may)
    floats = mode.name not in QUANTIZED and mnn_graph is not None and \
        not any(d.get("attrs", {}).get("quant") for _, d in mnn_graph.g.nodes(data=True))
    result = compare_mode(s.graph, match, ref_dir, ref_manifest, out_dir, dump["manifest"], tol, outputs,
                          plain=plain_outputs(dump), float_weights=floats)
    row.update(result)
    for note in (plain_note(result), tiny_note(result), top1_note(result), branch_note(result)):
        if note:
            row.setdefault("warnings", []).append(note)
    if problem:
        row.setdefault("warnings", []).append(problem)
    row["ok"] = result["summary"]["outputs_within"]
    # what the fix would keep in float, decided here once: the dock's button says it and the fix does it
    row["fix_plan"] = plan_for(row, s.options.fix_ops, mnn_graph)
    if mode.name == "fp32":
        baselines[model["path"]] = {"dir": out_dir, "manifest": dump["manifest"]}
    elif mode.precision != "high" and model["path"] in baselines:
        row["effect"] = _effect(baselines[model["path"]], out_dir, dump["manifest"], dump.get("outputs") or [],
                                outputs, mode)
    if mode.name != "fp32" and not s.options.keep:
        shutil.rmtree(out_dir, ignore_errors=True)
    return row


STORED_WORDS = {"fp16w": "stored as fp16", "int8w": "8-bit quantized", "int4w": "4-bit quantized",
                "int8": "full int8 (calibrated)"}


def stored_weights(mnn_graph: ModelGraph | None) -> str | None:
    """The mode an .mnn's weight storage matches (fp16w, int8w, int4w, int8), from its ops' quantization
    (formats/mnn_params.py); None: float32 weights."""
    kinds = [q for _, d in (mnn_graph.g.nodes(data=True) if mnn_graph is not None else ())
             if (q := d.get("attrs", {}).get("quant"))]
    bits = [q["bits"] for q in kinds if q.get("bits")]
    mode = weights_mode(any(q.get("kind") == "fp16" for q in kinds), min(bits) if bits else None,
                        any(q.get("kind") == "int8" for q in kinds))
    return None if mode == "fp32" else mode


def _effect(base: dict, out_dir: str, manifest: dict, mnn_outputs: list[str], onnx_outputs: list[str], mode, *,
            what: str | None = None, baseline: str = "fp32") -> str:
    """Whether a runtime precision changed anything: bit-identical outputs (and tensors) mean no effect.
    `what` names the setting that changed (default: the mode's precision), `baseline` the run it is held against
    (compare/mnnpair.py: one .mnn under two configurations)."""
    what = what or f"precision {mode.precision}"
    names = [o for o in onnx_outputs if o in manifest and o in base["manifest"]] or \
            [o for o in mnn_outputs if o in manifest and o in base["manifest"]]
    same_outputs = all(np.array_equal(load(base["dir"], base["manifest"][o]), load(out_dir, manifest[o]))
                       for o in names) if names else False
    if not same_outputs:
        return f"{what} changes the results on this CPU"
    common = [t for t in manifest if t in base["manifest"]]
    identical = sum(1 for t in common if np.array_equal(load(base["dir"], base["manifest"][t]), load(out_dir, manifest[t])))
    return (f"no effect on this CPU: outputs bit-identical to {baseline} ({identical}/{len(common)} tensors identical); "
            f"this CPU does not run {what} differently")


# ----- emulated modes (fp16c, bf16c): ONNX Runtime on a copy rounded at every operator boundary (emulate.py) ---------
EMULATED_DEVICE = "ONNX Runtime on the emulated copy"
FP16_MAX = 65504.0


def _measure_emulated(s: _Session, mode: Mode, ref_dir: str, ref_manifest: dict, outputs: list[str],
                      _baselines: dict) -> dict:
    """One emulated mode's row: the emulated copy written (dtypes from the reference run), run by ONNX Runtime
    through the same dump job, matched to the reference by identical tensor names and measured by compare_mode
    (fp16 overflow to inf counts as the error it is: no saturation rule)."""
    tol = s.options.tolerance_for(mode.name)
    row = {"mode": mode.name, "description": mode.description, "precision": f"{mode.emulate} (emulated)",
           "memory": mode.memory, "ok": False, "error": None, "effect": None, "tolerance": tol.to_json(),
           "emulated": True, "outputs": [], "first_divergence": None, "sources": [], "harmless": [], "ranking": [],
           "tensors": [], "unmatched": [], "conversion": None, "convert_s": 0.0}
    folder = os.path.join(s.work, "emulated", mode.name)
    path = os.path.join(folder, "model.onnx")
    s.emit(f"{mode.name}: writing the {mode.emulate}-emulated copy of the model")
    try:
        row["emulation"] = emulate_model(s.onnx_path, path, mode.emulate,
                                         {n: e["dtype"] for n, e in ref_manifest.items()})
    except Exception as e:  # noqa: BLE001 - onnx/protobuf errors of many kinds: the mode fails, the others go on
        row["error"] = f"emulation failed: {str(e).splitlines()[0][:300] if str(e) else type(e).__name__}"
        return row
    out_dir = os.path.join(s.work, "runs", mode.name)
    s.emit(f"{mode.name}: running ONNX Runtime on the emulated copy and reading every tensor")
    try:
        dump = _dump_named(s, path, out_dir, s.onnx_sizes(), list(ref_manifest))
    except RunnerError as e:
        row["error"] = e.message
        return row
    row["run"] = {k: dump.get(k) for k in ("api", "seconds", "backend_requested", "backend_used", "problems")}
    row["run"].update(engine=protocol.ENGINE_ORT, version=dump.get("version"), parts=dump.get("parts", 1))
    match = match_tensors(s.graph, None, dump["manifest"], ref_manifest)
    result = compare_mode(s.graph, match, ref_dir, ref_manifest, out_dir, dump["manifest"], tol, outputs,
                          saturated=math.inf)
    row.update(result)
    for note in (tiny_note(result), top1_note(result)):
        if note:
            row.setdefault("warnings", []).append(note)
    row["ok"] = result["summary"]["outputs_within"]
    if not s.options.keep:
        shutil.rmtree(out_dir, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
    return row


def _dump_named(s: _Session, model: str, out_dir: str, sizes: dict[str, int], names: list[str]) -> dict:
    """ONNX Runtime's dump of `model` keeping only the tensors in `names` (the emulated copy's rounding
    intermediates are never read back), in parts within the memory budget."""
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    wanted = {n: sizes.get(n, 0) for n in names}
    groups = _groups(wanted, int(s.options.memory_budget_mb * (1 << 20))) or [list(names)]
    payload = {"engine": protocol.ENGINE_ORT, "model": model, "inputs": s.inputs_npz, "out_dir": out_dir,
               "precision": "high", "memory": "normal", "threads": s.options.threads}
    return s.dump_parts(payload, groups)


def _as_judged(row: dict) -> dict:
    """The row as verdict.judge sees it: the device side is ONNX Runtime's exact kernels, so no MNN kernel
    approximation (approximations.py) can explain an emulated divergence."""
    def device(entry):
        return dict(entry, mnn_types=[EMULATED_DEVICE]) if entry else entry
    return dict(row, sources=[device(e) for e in row.get("sources") or []],
                first_divergence=device(row.get("first_divergence")))


def _explain_overflow(row: dict) -> None:
    """An emulated fp16 divergence whose elements became inf: the cause says so (its statistics cover only the
    elements finite on both sides, which hide the overflow)."""
    fd = row.get("first_divergence") or {}
    count = fd.get("nonfinite_mismatch") or 0
    if count and row.get("cause"):
        limit = "65504, fp16's largest" if (row.get("emulation") or {}).get("format") == "fp16" else "the format's range"
        row["cause"] += (f"; {count} element(s) of {fd['tensor']} overflow there (|value| > {limit}) and become "
                         f"inf or NaN")
        row["overflow"] = {"onnx_node": fd["onnx_node"], "tensor": fd["tensor"], "elements": count}


def _with_real_modes(s: _Session, wanted: list[str]) -> tuple[list[str], dict]:
    """The modes to run: the asked ones, plus the real MNN mode of each emulated one when the runner's MNN
    reports that arithmetic on this CPU (so the emulation is measured against it); and the runner's facts."""
    if not any(m in EMULATED for m in wanted):
        return wanted, {}
    try:
        facts = s.client.hello()
    except RunnerError:
        return wanted, {}
    cpu = facts.get("cpu") or {}
    extra = [REAL_MODE[m] for m in wanted if m in EMULATED and _reported(cpu, REAL_MODE[m])
             and REAL_MODE[m] not in wanted]
    return wanted + list(dict.fromkeys(extra)), facts


def _reported(cpu: dict, real: str) -> bool:
    """Whether MNN's banner reports the arithmetic of real mode `real` (it has an fp16 flag, none for bf16)."""
    return real == "low" and bool(cpu.get("fp16"))


def _note_real_precision(modes: list[dict], facts: dict, limit: int) -> None:
    """Each emulated row gets `real_low_precision` (whether this machine runs that arithmetic for real: from a
    run of the real mode when there is one, else from MNN's banner), `real_mode` (the evidence, and both modes'
    figures side by side when the real one ran with an effect) and `keep_fp32` (the ops to keep in fp32 on the
    device)."""
    rows = {m["mode"]: m for m in modes}
    cpu = (facts or {}).get("cpu") or {}
    for row in modes:
        if not row.get("emulated"):
            continue
        real = REAL_MODE[row["mode"]]
        ran = rows.get(real)
        effect = (ran or {}).get("effect") or ""
        info = {"mode": real, "ran": ran is not None and not ran.get("error"), "compared": None}
        if ran is not None and effect.startswith("no effect"):
            available, why = False, f"mode {real} ran bit-identical to fp32 here: {effect}"
        elif ran is not None and effect:
            available, why = True, f"mode {real} changes the results here ({effect})"
        elif real == "low":
            available = bool(cpu.get("fp16"))
            why = ("MNN reports fp16 arithmetic on this CPU" if available else
                   "MNN reports no fp16 arithmetic on this CPU (fp16:0): precision low computes in fp32 here")
        else:
            available = False
            why = ("MNN reports no bf16 flag and its low_bf16 precision has run bit-identical to fp32 on x86 "
                   "CPUs: run mode bf16 beside it to check this machine")
        if available and info["ran"]:
            info["compared"] = {
                "real_worst_rel_l2": worst_output_error(ran.get("outputs") or []),
                "emulated_worst_rel_l2": worst_output_error(row.get("outputs") or []),
                "real_first_divergence": (ran.get("first_divergence") or {}).get("onnx_node"),
                "emulated_first_divergence": (row.get("first_divergence") or {}).get("onnx_node")}
        info["reason"] = why
        row["real_low_precision"] = available
        row["real_mode"] = info
        row["keep_fp32"] = _keep_fp32(row, limit)


def _keep_fp32(row: dict, limit: int) -> list[dict]:
    """The ops to keep in fp32 on the device, at most `limit`: the first divergence (where the error that reaches
    the outputs was introduced), then the top of the ranking (ops that add at least a tenth of the worst one's
    error). Empty when every output is within tolerance."""
    if row.get("ok") or row.get("error"):
        return []
    ranking = row.get("ranking") or []
    top = ranking[0]["introduced"] if ranking else 0.0
    fd = row.get("first_divergence")
    candidates = ([fd] if fd else []) + [e for e in ranking if e["introduced"] >= 0.1 * top]
    picked, seen = [], set()
    for entry in candidates:
        if entry["onnx_node"] in seen:
            continue
        seen.add(entry["onnx_node"])
        picked.append({"onnx_node": entry["onnx_node"], "op_type": entry["op_type"], "tensor": entry.get("tensor"),
                       "introduced": entry["introduced"]})
        if len(picked) >= limit:
            break
    return picked


def _emulated_fix(s: _Session, modes: list[dict], ref_dir: str, ref_manifest: dict, outputs: list[str]) -> dict | None:
    """The fix suggestion of the worst emulated mode over tolerance: keep its `keep_fp32` ops in fp32 on the device,
    plus (fp16) the producer and every reader of a tensor whose reference values lie beyond fp16's range (no fp16
    op can hold it); checked by emulating again with those ops in fp32 (emulate.py's `keep_fp32`) against the same
    reference. Not run on MNN: its precision is set per session, not per op."""
    failing = [m for m in modes if m.get("emulated") and m.get("keep_fp32")]
    if not failing:
        return None
    worst = max(failing, key=lambda m: worst_output_error(m.get("outputs") or []))
    mode = MODES[worst["mode"]]
    names = [e["onnx_node"] for e in worst["keep_fp32"]]
    names += [n for n in _out_of_range(s, worst, ref_dir, ref_manifest, mode.emulate) if n not in names]
    tensors = [e["tensor"] for e in worst["keep_fp32"] if e.get("tensor")]
    out = {"mode": mode.name, "possible": False, "kind": "keep_fp32", "emulated": True,
           "how": "their weights, and outputs only fp32 ops read, left unrounded", "settings": [], "skip_ops": names,
           "onnx_nodes": names,
           "before": None, "after": None, "gain": None, "size_bytes": {"before": None, "after": None},
           "note": (f"keep these ops in fp32 on the device: {', '.join(names)} (under {mode.name}, emulated, they add "
                    f"the most error or hold values beyond the format's range); MNN sets precision per session, so "
                    f"that means running them in a part of the model at precision high, or the whole model at high")}
    folder = os.path.join(s.work, "emulated", "fix")
    out_dir = os.path.join(folder, "run")
    try:
        emulation = emulate_model(s.onnx_path, os.path.join(folder, "model.onnx"), mode.emulate,
                                  {n: e["dtype"] for n, e in ref_manifest.items()}, keep_fp32=names + tensors)
        dump = _dump_named(s, os.path.join(folder, "model.onnx"), out_dir, s.onnx_sizes(), list(ref_manifest))
    except RunnerError as e:
        out["note"] += f"; the check failed: {e.message}"
        return out
    except Exception as e:  # noqa: BLE001 - onnx/protobuf errors: the suggestion stays, unchecked
        out["note"] += f"; the check failed: {str(e).splitlines()[0][:200] if str(e) else type(e).__name__}"
        return out
    tol = s.options.tolerance_for(mode.name)
    match = match_tensors(s.graph, None, dump["manifest"], ref_manifest)
    after = compare_mode(s.graph, match, ref_dir, ref_manifest, out_dir, dump["manifest"], tol, outputs,
                         saturated=math.inf)
    b, a = worst_output_error(worst["outputs"]), worst_output_error(after["outputs"])
    bad_b, bad_a = (sum((o.get("nan") or 0) + (o.get("inf") or 0) for o in rows)
                    for rows in (worst["outputs"], after["outputs"]))
    if bad_b or bad_a:  # rel L2 covers the finite elements only: say what became finite
        out["note"] += f"; NaN/inf output elements: {bad_b} before, {bad_a} with these ops in fp32"
    out.update(possible=True, kept_fp32=emulation["kept_fp32"], before={"outputs": worst["outputs"], "ok": worst["ok"]},
               after={"outputs": after["outputs"], "ok": after["summary"]["outputs_within"],
                      "first_divergence": after["first_divergence"]},
               gain=(b / a) if a > 0 and math.isfinite(a) else (math.inf if a == 0 else None))
    if not s.options.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return out


def _out_of_range(s: _Session, row: dict, ref_dir: str, ref_manifest: dict, fmt: str) -> list[str]:
    """fp16: the ONNX nodes that make or read a tensor whose reference values pass 65504 (where the emulated run
    has infinities): none of them can run in fp16. bf16 has fp32's range: none."""
    if fmt != "fp16":
        return []
    producer = s.graph.producers()
    names = []
    for t in row.get("tensors") or []:
        if not t.get("inf") or t["name"] not in ref_manifest:
            continue
        ref = np.asarray(load(ref_dir, ref_manifest[t["name"]]), dtype=np.float64)
        finite = ref[np.isfinite(ref)]
        if not finite.size or np.abs(finite).max() <= FP16_MAX:
            continue
        nids = ([producer[t["name"]]] if t["name"] in producer else []) + \
            [nid for nid, d in s.graph.g.nodes(data=True) if t["name"] in d["inputs"]]
        for nid in nids:
            name = s.graph.g.nodes[nid].get("name") or nid
            if name not in names:
                names.append(name)
    return names
