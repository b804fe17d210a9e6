"""ONNX Runtime for the same profiling job on .onnx files: the reference side of later comparisons.

Per-node times come from ORT's own profiler (`SessionOptions.enable_profiling`: a Chrome-trace JSON with
one `<node>_kernel_time` event per node per run and one `model_run` event per run). Those node names are
ORT's *optimized* graph (fused nodes such as `..._nchwc`) unless `optimization` is "none". Statistics
come from a second, unoptimized session in which every node output is a graph output, so every ONNX
tensor is read exactly as the model defines it.
"""
from __future__ import annotations

import json
import os
import time

import numpy as np

from mnnscope.runner import protocol
from mnnscope.runner.protocol import RunnerError
from mnnscope.runner.stats import tensor_stats

OPTIMIZATION = {"none": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
                "all": "ORT_ENABLE_ALL"}
_EXT_FOLDER_KEY = "session.model_external_initializers_file_folder_path"
STATS_OUTPUTS_PER_RUN = 256


def provider_for(backend: str, available: list[str]) -> tuple[str, str | None]:
    """(provider to use, note when it is not the one asked for). "CPU", "CUDA" or a full provider name."""
    name = backend or "CPU"
    wanted = name if name.endswith("ExecutionProvider") else {
        "CPU": "CPUExecutionProvider", "CUDA": "CUDAExecutionProvider", "TRT": "TensorrtExecutionProvider",
        "TENSORRT": "TensorrtExecutionProvider", "OPENVINO": "OpenVINOExecutionProvider",
        "DML": "DmlExecutionProvider", "COREML": "CoreMLExecutionProvider", "ROCM": "ROCMExecutionProvider",
    }.get(name.upper(), name + "ExecutionProvider")
    if wanted in available:
        return wanted, None
    return "CPUExecutionProvider", (f"{wanted} is not available in this onnxruntime "
                                    f"(available: {', '.join(available)}); ran on CPU")


def short_provider(provider: str) -> str:
    return provider.replace("ExecutionProvider", "").upper() or provider


def _options(ort, threads: int, optimization: str, profile_prefix: str | None = None):
    so = ort.SessionOptions()
    so.intra_op_num_threads = max(0, int(threads))
    so.inter_op_num_threads = 1
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, OPTIMIZATION[optimization])
    so.log_severity_level = 3
    if profile_prefix:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
    return so


def _fail(path: str, e: Exception, what: str) -> RunnerError:
    text = str(e).strip().splitlines()[0][:400] if str(e).strip() else type(e).__name__
    unsupported = "NOT_IMPLEMENTED" in str(e) or "not implemented" in str(e).lower()
    kind = protocol.UNSUPPORTED if unsupported else protocol.BAD_MODEL
    return RunnerError(kind if what == "load" else protocol.RUN_FAILED, f"{path}: onnxruntime {what} failed: {text}")


def _feeds(session, inputs: dict[str, np.ndarray], path: str) -> tuple[dict, list[str]]:
    names = [i.name for i in session.get_inputs()]
    missing = [n for n in names if n not in inputs]
    if missing:
        raise RunnerError(protocol.BAD_MODEL, f"no data for input(s) {', '.join(missing)} of {path}")
    warnings = [f"input '{n}' is not an input of this model: ignored" for n in inputs if n not in names]
    return {n: inputs[n] for n in names}, warnings


class OrtRun:
    """Profiling session (warm-up, timed runs through the profiler) plus the all-outputs stats session."""

    def __init__(self, job, path: str, *, backend: str = "CPU", threads: int = 1, optimization: str = "all",
                 run_dir: str, profile: bool = True):
        import onnxruntime as ort
        self.ort, self.job, self.path, self.run_dir = ort, job, path, run_dir
        if optimization not in OPTIMIZATION:
            raise RunnerError(protocol.BAD_REQUEST, f"unknown ORT optimization level '{optimization}'")
        self.provider, self.note = provider_for(backend, ort.get_available_providers())
        self.threads, self.optimization = threads, optimization
        so = _options(ort, threads, optimization, os.path.join(run_dir, "ort_profile") if profile else None)
        try:
            self.session = ort.InferenceSession(path, so, providers=[self.provider])
        except Exception as e:
            raise _fail(path, e, "load")
        self.backend_used = short_provider(self.session.get_providers()[0])
        self.ops: list[dict] = []

    def feed(self, inputs: dict[str, np.ndarray]) -> list[str]:
        self.feeds, warnings = _feeds(self.session, inputs, self.path)
        return warnings

    def _run(self):
        try:
            return self.session.run(None, self.feeds)
        except Exception as e:
            raise _fail(self.path, e, "run")

    def warmup(self, n: int) -> None:
        # No per-node callbacks in ORT: the whole run is the one "op" a crash can be pinned to.
        for i in range(max(1, n)):
            self.job.check_cancel()
            if i == 0:
                self.job.event("op_begin", {"name": "onnxruntime.run", "type": "Session", "index": 0})
            self._run()
            if i == 0:
                self.job.event("op_end", {"name": "onnxruntime.run", "type": "Session", "index": 0})

    def timed(self, n: int) -> tuple[list[float], dict[str, np.ndarray]]:
        walls, outs = [], None
        for _ in range(n):
            self.job.check_cancel()
            t0 = time.perf_counter()
            outs = self._run()
            walls.append((time.perf_counter() - t0) * 1e3)
        names = [o.name for o in self.session.get_outputs()]
        return walls, dict(zip(names, outs))

    def node_times(self, skip_runs: int) -> tuple[list[dict], list[list[float]]]:
        """Ends profiling; (ops in run order [{name, type}], per-run list of per-op ms), warm-ups skipped."""
        profile = self.session.end_profiling()
        try:
            with open(profile) as f:
                events = json.load(f)
        finally:
            try:
                os.remove(profile)
            except OSError:
                pass
        runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                      if e.get("cat") == "Session" and e.get("name") == "model_run")[skip_runs:]
        nodes = sorted((e for e in events
                        if e.get("cat") == "Node" and str(e.get("name", "")).endswith("_kernel_time")),
                       key=lambda e: e["ts"])
        order: list[dict] = []
        index: dict[str, int] = {}
        per_run: list[list[float]] = []
        for start, stop in runs:
            times: dict[int, float] = {}
            for e in nodes:
                if start <= e["ts"] <= stop:
                    name = e["name"][: -len("_kernel_time")]
                    if name not in index:
                        index[name] = len(order)
                        order.append({"name": name, "type": e.get("args", {}).get("op_name") or "?",
                                      "provider": e.get("args", {}).get("provider")})
                    times[index[name]] = times.get(index[name], 0.0) + e["dur"] / 1000.0
            per_run.append([times.get(i, 0.0) for i in range(len(order))])
        per_run = [row + [0.0] * (len(order) - len(row)) for row in per_run]
        self.ops = order
        return order, per_run

    def stats_pass(self, inputs: dict[str, np.ndarray], keep, per_run: int = STATS_OUTPUTS_PER_RUN) -> list[dict]:
        """Every node output of the ONNX graph, unoptimized: [{name (node), type, outputs: [{name, stats}]}].

        At most `per_run` outputs are held at once (one session run each)."""
        import onnx
        ort = self.ort
        model = onnx.load(self.path, load_external_data=False)
        graph = model.graph
        known = {o.name for o in graph.output}
        for node in graph.node:
            for out in node.output:
                if out and out not in known:
                    graph.output.append(onnx.ValueInfoProto(name=out))  # ORT infers the type
                    known.add(out)
        so = _options(ort, self.threads, "none")
        folder = os.path.dirname(os.path.abspath(self.path))
        try:
            so.add_session_config_entry(_EXT_FOLDER_KEY, folder)
            data = model.SerializeToString()
        except Exception:  # an older onnxruntime: bring the external weights into memory instead
            model = onnx.load(self.path)
            for node in model.graph.node:
                for out in node.output:
                    if out and out not in {o.name for o in model.graph.output}:
                        model.graph.output.append(onnx.ValueInfoProto(name=out))
            data = model.SerializeToString()
        entries: dict[str, dict] = {}
        try:
            session = ort.InferenceSession(data, so, providers=[self.provider])
            names = [o.name for o in session.get_outputs()]
            feeds, _ = _feeds(session, inputs, self.path)
            # A few hundred outputs per run: holding every tensor of a big model at once runs out of memory
            # (Polygraphy's "mark all" complaint); each run recomputes the graph, statistics stay exact.
            per_run = max(1, int(per_run))
            for start in range(0, len(names), per_run):
                self.job.check_cancel()
                chunk = names[start:start + per_run]
                for name, value in zip(chunk, session.run(chunk, feeds)):
                    entries[name] = self._stats_entry(name, value, keep)
        except RunnerError:
            raise
        except Exception as e:
            raise _fail(self.path, e, "run with every tensor as an output")
        nodes = []
        for node in graph.node:
            outs = [entries[out] for out in node.output if out and out in entries]
            nodes.append({"name": node.name or (node.output[0] if node.output else node.op_type),
                          "type": node.op_type, "outputs": outs})
        return nodes

    @staticmethod
    def _stats_entry(name: str, value, keep) -> dict:
        entry = {"name": name}
        try:
            arr = np.asarray(value)
            entry.update(tensor_stats(arr))
            path = keep(name, arr)
            if path:
                entry["path"] = path
        except Exception as e:
            entry["error"] = f"unreadable: {e}"
        return entry
