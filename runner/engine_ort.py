"""The ONNX Runtime engine: .onnx files, the reference side of comparisons.

Per-node times come from ORT's own profiler (`SessionOptions.enable_profiling`, on when
`Settings.op_timing`: a Chrome-trace JSON with one `<node>_kernel_time` event per node per run and one
`model_run` event per run); `op_table()` ends profiling and keeps the runs made by `timed_run`. Those node
names are ORT's *optimized* graph (fused nodes such as `..._nchwc`) unless `optimization` is "none".
`read_tensors` uses a second, unoptimized session in which every node output is a graph output, so every
ONNX tensor is read exactly as the model defines it, at most `outputs_per_run` outputs held at once.
ORT has no per-node callbacks: one op_begin/op_end pair covers a whole run. Inputs are cast to the
dtypes the model declares (one .npz serves both engines).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time

import numpy as np

from mnnscope.runner import confine, protocol
from mnnscope.runner.engine import Engine, register
from mnnscope.runner.protocol import RunnerError

OPTIMIZATION = {"none": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
                "all": "ORT_ENABLE_ALL"}
assert set(OPTIMIZATION) == set(protocol.ORT_OPTIMIZATIONS)
_EXT_FOLDER_KEY = "session.model_external_initializers_file_folder_path"
STATS_OUTPUTS_PER_RUN = 256
_TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
          "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
          "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_, "tensor(int16)": np.int16}


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


def _fail(path: str, e: Exception, what: str) -> RunnerError:
    text = str(e).strip().splitlines()[0][:400] if str(e).strip() else type(e).__name__
    unsupported = "NOT_IMPLEMENTED" in str(e) or "not implemented" in str(e).lower()
    kind = protocol.UNSUPPORTED if unsupported else protocol.BAD_MODEL
    return RunnerError(kind if what == "load" else protocol.RUN_FAILED, f"{path}: onnxruntime {what} failed: {text}")


@register
class OrtEngine(Engine):
    name = protocol.ENGINE_ORT
    api = protocol.API_ONNXRUNTIME
    title = "ONNX Runtime"
    suffixes = (".onnx",)
    honours = ()
    reads_run_ops = False  # read_tensors reports the unoptimized ONNX nodes, op_table the optimized ones

    @classmethod
    def version(cls) -> str | None:
        import onnxruntime
        return onnxruntime.__version__

    @classmethod
    def tensor_table(cls, path: str) -> tuple[list[dict], list[str]]:
        """The graph inputs, then every node output (producer = the ONNX node), and the graph outputs."""
        import onnx
        try:
            graph = onnx.load(path, load_external_data=False).graph
        except Exception as e:
            raise RunnerError(protocol.BAD_MODEL, f"{path}: not a readable ONNX model ({str(e).splitlines()[0][:200]})")
        inits = {t.name for t in graph.initializer}
        table = [{"name": i.name, "producer": None, "op_type": "Input", "inputs": []}
                 for i in graph.input if i.name not in inits]
        for node in graph.node:
            table += [{"name": o, "producer": node.name, "op_type": node.op_type, "inputs": []}
                      for o in node.output if o]
        return table, [o.name for o in graph.output]

    def load_impl(self) -> None:
        import onnxruntime as ort
        s = self.settings
        self.ort = ort
        if s.optimization not in OPTIMIZATION:
            raise RunnerError(protocol.BAD_REQUEST, f"unknown ORT optimization level '{s.optimization}'")
        self.provider, self.note = provider_for(s.backend, ort.get_available_providers())
        self._session = None
        self._profile_dir = None  # the folder made for ORT's profile file when the run has none (removed at close)
        self.runs = 0          # runs of the profiling session before the timed ones (skipped in op_table)
        self.timed = 0
        self.feeds: dict = {}
        self.last: dict = {}
        self.table = None

    def _options(self, optimization: str, profile_prefix: str | None = None):
        so = self.ort.SessionOptions()
        so.intra_op_num_threads = max(0, int(self.settings.threads))
        so.inter_op_num_threads = 1
        so.graph_optimization_level = getattr(self.ort.GraphOptimizationLevel, OPTIMIZATION[optimization])
        so.log_severity_level = 3
        if profile_prefix:
            so.enable_profiling = True
            so.profile_file_prefix = profile_prefix
        return so

    @property
    def session(self):
        """The timing session, created on first use (a dump only needs the all-outputs one)."""
        if self._session is None:
            prefix = None
            if self.settings.op_timing:
                folder = self.settings.run_dir
                if not folder:
                    folder = self._profile_dir = tempfile.mkdtemp(prefix="mnnscope-ort-")
                prefix = os.path.join(folder, "ort_profile")
            confine.check_onnx(self.path, whole=True)  # ORT checks too (1.17+); this says so in our words, before it opens
            try:
                self._session = self.ort.InferenceSession(self.path, self._options(self.settings.optimization, prefix),
                                                          providers=[self.provider])
            except Exception as e:
                raise _fail(self.path, e, "load")
        return self._session

    def _feeds_for(self, session) -> dict:
        feeds = {}
        for i in session.get_inputs():
            arr = self.inputs[i.name]
            dt = _TYPES.get(i.type)
            feeds[i.name] = arr.astype(dt, copy=False) if dt is not None else arr
        return feeds

    def feed_impl(self, inputs: dict[str, np.ndarray]) -> list[str]:
        names = [i.name for i in self.session.get_inputs()]
        missing = [n for n in names if n not in inputs]
        if missing:
            raise RunnerError(protocol.BAD_MODEL, f"no data for input(s) {', '.join(missing)} of {self.path}")
        self.inputs = {n: inputs[n] for n in names}
        self.feeds = self._feeds_for(self.session)
        return [f"input '{n}' is not an input of this model: ignored" for n in inputs if n not in names]

    def _run(self) -> float:
        t0 = time.perf_counter()
        try:
            outs = self.session.run(None, self.feeds)
        except Exception as e:
            raise _fail(self.path, e, "run")
        ms = (time.perf_counter() - t0) * 1e3
        self.last = dict(zip([o.name for o in self.session.get_outputs()], outs))
        return ms

    def run_impl(self, events: bool) -> float:
        if events:
            self.whole_run_event("op_begin")
        ms = self._run()
        self.runs += 1
        if events:
            self.whole_run_event("op_end", ms)
        return ms

    def timed_run_impl(self, per_op: bool) -> float:
        ms = self._run()
        self.timed += 1
        return ms

    def outputs_impl(self) -> dict[str, np.ndarray]:
        return self.last

    def op_table_impl(self):
        """Ends profiling: (ops in run order [{name, type, provider}], per timed run the per-op ms)."""
        if self.table is not None or not self.settings.op_timing or self._session is None:
            return self.table or ([], None)
        profile = self._session.end_profiling()
        try:
            with open(profile) as f:
                events = json.load(f)
        finally:
            try:
                os.remove(profile)
            except OSError:
                pass
        runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                      if e.get("cat") == "Session" and e.get("name") == "model_run")[self.runs:]
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
        self.table = (order, per_run)
        return self.table

    def close_impl(self) -> None:
        # the session goes first: ONNX Runtime writes its profile file when a profiling session ends, read or not
        self._session = None
        if self._profile_dir:
            shutil.rmtree(self._profile_dir, ignore_errors=True)
            self._profile_dir = None

    # ----- every tensor ------------------------------------------------------------------------------
    def _all_outputs_model(self):
        """(serialized model with every node output a graph output, [(node, its outputs)], external data?)."""
        import onnx
        try:
            model = onnx.load(self.path, load_external_data=False)
        except Exception as e:
            raise RunnerError(protocol.BAD_MODEL, f"{self.path}: not a readable ONNX model "
                                                  f"({str(e).splitlines()[0][:200]})")
        confine.check_onnx(self.path, model, whole=True)
        graph = model.graph
        known = {o.name for o in graph.output}
        for node in graph.node:
            for out in node.output:
                if out and out not in known:
                    graph.output.append(onnx.ValueInfoProto(name=out))  # ORT infers the type
                    known.add(out)
        external = any(t.data_location == onnx.TensorProto.EXTERNAL for t in graph.initializer)
        nodes = [{"index": i, "name": node.name or (node.output[0] if node.output else node.op_type),
                  "node": node.name, "type": node.op_type, "outputs": [o for o in node.output if o]}
                 for i, node in enumerate(graph.node)]
        # Weights stay in their files: ORT resolves external data against the model's own folder (given
        # below), so nothing is copied and the model's own containment check still applies.
        return model, nodes, external

    def read_tensors_impl(self, sink, names, events) -> None:
        model, nodes, external = self._all_outputs_model()
        so = self._options("none")
        if external:
            so.add_session_config_entry(_EXT_FOLDER_KEY, os.path.dirname(os.path.abspath(self.path)))
        try:
            session = self.ort.InferenceSession(model.SerializeToString(), so, providers=[self.provider])
        except Exception as e:
            raise _fail(self.path, e, "load")
        producer = {out: node for node in nodes for out in node["outputs"]}
        outputs = [o.name for o in session.get_outputs()]
        wanted = outputs if names is None else [n for n in outputs if n in set(names)]
        feeds = self._feeds_for(session)
        if names is not None:
            for n, arr in feeds.items():
                if n in set(names):
                    sink(None, n, arr)
        else:
            for node in nodes:
                sink(node, None, None)
        # A few hundred outputs per run: holding every tensor of a big model at once runs out of memory
        # (Polygraphy's "mark all" complaint); each run recomputes the graph, values stay exact.
        per_run = max(1, int(self.settings.outputs_per_run or STATS_OUTPUTS_PER_RUN))
        for start in range(0, len(wanted), per_run):
            self.job.check_cancel()
            chunk = wanted[start:start + per_run]
            self.job.progress(None, f"running ONNX Runtime ({len(chunk)} outputs)")
            if events:
                self.whole_run_event("op_begin")
            try:
                values = session.run(chunk, feeds)
            except Exception as e:
                shapes = ", ".join(f"{k} {v.dtype}{list(v.shape)}" for k, v in feeds.items())
                reason = (str(e).splitlines() or [type(e).__name__])[0][:300]
                # the reason first (a notice shows its first lines), advice only where it applies: a tester's
                # out-of-range ids got "set it with --shape" after the shapes of every input
                low = reason.lower()
                hint = ("; an input's values lie outside what an op accepts (ids past an embedding table?)"
                        if "out of" in low and "bound" in low else
                        "; if a dynamic dimension is wrong, set it with --shape NAME=DIMS"
                        if any(w in low for w in ("shape", "dimension", "dims", "rank")) else "")
                raise RunnerError(protocol.RUN_FAILED, f"{self.path}: ONNX Runtime failed: {reason} (inputs "
                                                       f"{shapes}){hint}")
            if events:
                self.whole_run_event("op_end")
            for name, value in zip(chunk, values):
                sink(producer.get(name) if names is None else None, name, value)
            del values


    def facts_impl(self) -> dict:
        used = short_provider(self._session.get_providers()[0]) if self._session is not None else \
            short_provider(self.provider)
        return {"backend_used": used, "backend_note": self.note, "warnings": [self.note] if self.note else [],
                "threads_used": self.settings.threads, "optimization": self.settings.optimization}
