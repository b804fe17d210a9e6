"""MNN execution for profiling: an Interpreter session, timed per operator; the Module API as fallback.

One `MnnInterpreterRun` is one session with one configuration (backend, precision, memory mode,
threads). Its runs, in the order profile.py calls them:

- `discover()`: the first warm-up run, with op_begin/op_end events (so a crash names its operator),
  which also lists the runtime ops (MNN's own list: Raster ops, While for batched MatMul, ...);
- `timed(n)`: runs with minimal callbacks (two perf_counter calls per op, no events, the name-only
  callback API) -> per-op times;
- `plain(n)`: `runSession` without callbacks, the baseline for the instrumentation overhead;
- `stats_pass()`: one more run that copies every op output into a host tensor inside the end callback
  (`copyToHostTensor` into a Caffe-layout tensor; never the raw device view) -- separate from the timed
  runs because reading tensors inflates op times by 10-35%.

Models the Interpreter cannot run (control flow, LSTM subgraphs: the session stays "needs resize", or a
run returns an error code) raise `NeedsModule`; `MnnModuleRun` then runs them through
`MNN.nn.load_module_from_file` with every tensor as an output (runner/mnn_module.py): whole-run times and
statistics only.
"""
from __future__ import annotations

import re
import struct
import time

import numpy as np

from mnnscope.runner import protocol
from mnnscope.runner.mnn_env import BACKENDS, capture_fd1, mnn
from mnnscope.runner.protocol import RunnerError
from mnnscope.runner.stats import tensor_stats

PRECISIONS = {"normal": 0, "high": 1, "low": 2, "low_bf16": 3}
MEMORY_MODES = {"normal": 0, "high": 1, "low": 2}
# MNNForwardType values that getSessionInfo(BACKENDS) returns; 13 (CPU_EXTENSION) is the CPU too.
FORWARD_TYPES = {0: "CPU", 1: "METAL", 2: "CUDA", 3: "OPENCL", 4: "AUTO", 5: "NN", 6: "OPENGL", 7: "VULKAN",
                 8: "HIAI", 9: "TRT", 10: "HEXAGON", 11: "USER_3", 13: "CPU", 15: "MUSA"}
_INFO_MEMORY, _INFO_FLOPS, _INFO_BACKENDS, _INFO_RESIZE, _INFO_THREADS = 0, 1, 2, 3, 4
_CAFFE_C4 = 2


class NeedsModule(Exception):
    """The Interpreter cannot run this model; the message says why (MNN's own words when it printed any)."""


def _as_int(value: float) -> int:
    """getSessionInfo returns some int fields reinterpreted as float (MNN_NOTES): undo that."""
    return struct.unpack("<i", struct.pack("<f", float(value)))[0]


def schedule_config(backend: str, precision: str, memory: str, threads: int) -> dict:
    backend = (backend or "CPU").upper()
    if backend not in BACKENDS and backend != "AUTO":
        raise RunnerError(protocol.BAD_REQUEST, f"unknown MNN backend '{backend}' (known: {', '.join(BACKENDS)})")
    if precision not in PRECISIONS:
        raise RunnerError(protocol.BAD_REQUEST, f"unknown precision '{precision}' (high, low, low_bf16, normal)")
    if memory not in MEMORY_MODES:
        raise RunnerError(protocol.BAD_REQUEST, f"unknown memory mode '{memory}' (normal, low, high)")
    return {"backend": backend, "numThread": int(threads), "precision": PRECISIONS[precision],
            "memory": MEMORY_MODES[memory]}


def backend_loads(name: str) -> bool:
    """Whether MNN really creates a runtime for this backend here (it silently uses the CPU otherwise)."""
    if name.upper() == "CPU":
        return True
    MNN = mnn()
    try:
        created, _ = capture_fd1(MNN.Interpreter.createRuntime, ({"backend": name.upper()},))
        return bool(created and created[1] and created[1][0])
    except Exception:
        return False


def _halide(MNN, arr: np.ndarray):
    kind = arr.dtype.kind
    if kind == "f":
        return MNN.Halide_Type_Float, arr.astype(np.float32, copy=False)
    if kind == "u" and arr.dtype.itemsize == 1:
        return MNN.Halide_Type_Uint8, arr
    if kind in "iub":  # MNN has no int64 or bool tensors
        return MNN.Halide_Type_Int, arr.astype(np.int32, copy=False)
    raise RunnerError(protocol.BAD_MODEL, f"an input of dtype {arr.dtype} cannot be fed to MNN")


def _cast_for(MNN, tensor, arr: np.ndarray) -> np.ndarray:
    dt = tensor.getDataType()
    if dt == MNN.Halide_Type_Float:
        return arr.astype(np.float32, copy=False)
    if dt == MNN.Halide_Type_Int:
        if arr.dtype.kind == "f":
            raise RunnerError(protocol.BAD_MODEL, "a float array was given for an integer input")
        return arr.astype(np.int32, copy=False)
    if dt == MNN.Halide_Type_Uint8:
        return arr.astype(np.uint8, copy=False)
    return _halide(MNN, arr)[1]


def read_tensor(MNN, tensor) -> np.ndarray:
    """A copy of a session tensor's values through a host tensor (NC4HW4 becomes NCHW; NHWC stays)."""
    dim = tensor.getDimensionType()
    host = MNN.Tensor(tensor, MNN.Tensor_DimensionType_Caffe if dim == _CAFFE_C4 else dim)
    tensor.copyToHostTensor(host)
    return np.array(host.getNumpyData(), copy=True)


class OutputNamer:
    """Tensor names for the outputs of a runtime op. The op name is not its output's name when the converter
    fused ops (Conv+BN+Relu: op `/conv1/Conv_output_0`, tensor `/relu/Relu_output_0`), so the file's
    op -> output tensors map comes first (`tensor_names`, sent by the client, which reads the .mnn); ops the
    file does not have (Raster, inserted conversions) are named by the op. Without a map: the op name, and
    for ops with more outputs the tensors of the same expression in MNN.expr.load_as_list, else `op:i`."""

    def __init__(self, path: str, tensor_names: dict[str, list[str]] | None = None):
        self.path = path
        self.tensor_names = tensor_names or {}
        self._groups: dict[str, list[str]] | None = None

    def _load(self) -> dict[str, list[str]]:
        MNN = mnn()
        groups: dict[str, list[str]] = {}
        try:
            vars_, _ = capture_fd1(MNN.expr.load_as_list, self.path)
        except Exception:
            return groups
        prev = None
        for v in vars_:
            try:
                key = (v.op_type, tuple(i.name for i in v.inputs))
                name = v.name
            except Exception:
                prev = None
                continue
            if prev is not None and prev[0] == key and key[0] not in ("Input", "Const"):
                groups[prev[1]].append(name)
            else:
                groups[name] = [name]
                prev = (key, name)
        return groups

    def names(self, op: str, count: int) -> list[str]:
        known = self.tensor_names.get(op)
        if known and len(known) >= count:
            return list(known[:count])
        if count <= 1:
            return [op][:count]
        if self._groups is None:
            self._groups = self._load()
        group = self._groups.get(op, [])
        if len(group) >= count:
            return group[:count]
        m = re.match(r"^(.*_output_)0$", op)
        if m:
            return [op] + [f"{m.group(1)}{i}" for i in range(1, count)]
        return [op] + [f"{op}:{i}" for i in range(1, count)]


class MnnInterpreterRun:
    """One Interpreter session with one configuration; see the module docstring for its runs."""

    def __init__(self, job, path: str, *, backend: str = "CPU", precision: str = "high", memory: str = "normal",
                 threads: int = 1):
        self.job, self.path = job, path
        self.MNN = MNN = mnn()
        self.config = schedule_config(backend, precision, memory, threads)
        try:
            self.interp, text = capture_fd1(MNN.Interpreter, path)
        except Exception as e:
            raise RunnerError(protocol.BAD_MODEL, f"{path}: MNN cannot open the model ({e})")
        self._forward(text)
        try:
            self.session, text = capture_fd1(self.interp.createSession, self.config)
        except Exception as e:
            raise RunnerError(protocol.RUN_FAILED, f"{path}: MNN could not create a session ({e})")
        self.create_log = text.strip()
        self._forward(text)
        self.ops: list[dict] = []
        self._hosts: list = []

    def _forward(self, text: str) -> None:
        for line in text.strip().splitlines():
            if line.strip():
                self.job.log(line, "native")

    # ----- session facts ---------------------------------------------------------------------------
    def info(self, code: int) -> float:
        return self.interp.getSessionInfo(self.session, code)

    @property
    def backend_used(self) -> str:
        code = int(self.info(_INFO_BACKENDS))
        return FORWARD_TYPES.get(code, f"type {code}")

    @property
    def memory_mb(self) -> float:
        return float(self.info(_INFO_MEMORY))

    @property
    def flops_m(self) -> float:
        return float(self.info(_INFO_FLOPS))

    @property
    def threads_used(self) -> int:
        return _as_int(self.info(_INFO_THREADS))

    def input_names(self) -> list[str]:
        return list(self.interp.getSessionInputAll(self.session).keys())

    # ----- inputs ------------------------------------------------------------------------------------
    def feed(self, inputs: dict[str, np.ndarray]) -> list[str]:
        """Resize to the inputs' shapes where they differ, copy the data in; returns warnings."""
        MNN = self.MNN
        tensors = self.interp.getSessionInputAll(self.session)
        missing = [n for n in tensors if n not in inputs]
        if missing:
            raise RunnerError(protocol.BAD_MODEL, f"no data for input(s) {', '.join(missing)} of {self.path}")
        warnings = [f"input '{n}' is not an input of this model: ignored" for n in inputs if n not in tensors]
        resized = False
        for name, tensor in tensors.items():
            arr = inputs[name]
            if tuple(tensor.getShape()) != tuple(arr.shape):
                self.interp.resizeTensor(tensor, tuple(int(d) for d in arr.shape))
                resized = True
        if resized:
            _, text = capture_fd1(self.interp.resizeSession, self.session)
            self._forward(text)
            self.create_log = (self.create_log + "\n" + text.strip()).strip()
        status = _as_int(self.info(_INFO_RESIZE))
        if status != 0:
            reason = _shape_error(self.create_log) or "its shapes cannot be computed before running"
            raise NeedsModule(f"the Interpreter cannot run this model ({reason}: "
                              "typical of control flow or RNN subgraphs)")
        tensors = self.interp.getSessionInputAll(self.session)
        self._hosts = []
        for name, tensor in tensors.items():
            data = np.ascontiguousarray(_cast_for(MNN, tensor, inputs[name]))
            htype, data = _halide(MNN, data)
            self._hosts.append((tensor, MNN.Tensor(tuple(data.shape), htype, data, tensor.getDimensionType()), data))
        self._refill()
        return warnings

    def _refill(self) -> None:
        """Copy the inputs in again: a run may reuse an input tensor's memory for intermediates (moe_llm's
        second run read garbage ids without this), so every run starts from a fresh copy, outside the clock."""
        for tensor, host, _ in self._hosts:
            tensor.copyFrom(host)

    def _check_rc(self, rc: int, where: str) -> None:
        if rc == 0:
            return
        if rc == 3:  # "Can't run session because not resized" (control flow): the Module API can run it
            raise NeedsModule(f"the Interpreter cannot run this model (error code 3 in {where})")
        raise RunnerError(protocol.RUN_FAILED, f"{self.path}: MNN returned error code {rc} in {where}")

    # ----- runs --------------------------------------------------------------------------------------
    def discover(self) -> float:
        """The first warm-up run, with op_begin/op_end events; fills self.ops; returns its wall ms."""
        job, ops, pc = self.job, [], time.perf_counter
        state = {"t0": 0.0, "error": None}

        def begin(tensors, info):
            try:
                job.event("op_begin", {"name": info.getName(), "type": info.getType(), "index": len(ops)})
                state["t0"] = pc()
            except Exception as e:  # an exception here would surface as SystemError: keep it, stop the run
                state["error"] = e
                return False
            return True

        def end(tensors, info):
            try:
                ms = (pc() - state["t0"]) * 1e3
                op = {"name": info.getName(), "type": info.getType(), "flops": info.getFlops() * 1e6,
                      "n_outputs": len(tensors), "first_ms": ms}
                ops.append(op)
                job.event("op_end", {"name": op["name"], "type": op["type"], "ms": ms, "flops": op["flops"],
                                     "index": len(ops) - 1})
            except Exception as e:
                state["error"] = e
                return False
            return not job.cancelled

        self._refill()
        t0 = pc()
        rc = self.interp.runSessionWithCallBackInfo(self.session, begin, end)
        wall = (pc() - t0) * 1e3
        job.check_cancel()
        if state["error"] is not None:
            raise RunnerError(protocol.INTERNAL, f"profiling callback failed: {state['error']}")
        self._check_rc(rc, "the warm-up run")
        self.ops = ops
        return wall

    def plain(self, n: int) -> list[float]:
        """Wall ms of n runs without callbacks."""
        times, pc = [], time.perf_counter
        for _ in range(n):
            self.job.check_cancel()
            self._refill()
            t0 = pc()
            rc = self.interp.runSession(self.session)
            times.append((pc() - t0) * 1e3)
            self._check_rc(rc, "a run")
        return times

    def timed(self, n: int) -> tuple[list[float], list[list[float]]]:
        """n runs timed per op: (wall ms per run, per-op ms per run). Callbacks only read the clock."""
        walls, per_run, pc = [], [], time.perf_counter
        count = len(self.ops)
        for _ in range(n):
            self.job.check_cancel()
            starts, ends = [], []
            s_add, e_add = starts.append, ends.append

            def begin(tensors, name, s_add=s_add):
                s_add(pc())
                return True

            def end(tensors, name, e_add=e_add):
                e_add(pc())
                return True

            self._refill()
            t0 = pc()
            # The name-only callback API: it skips building an OpInfo object per call, which halves the
            # overhead (about 0.7 us per op instead of 1.9 on a 519-op net); types and flops come from discover().
            rc = self.interp.runSessionWithCallBack(self.session, begin, end)
            walls.append((pc() - t0) * 1e3)
            self._check_rc(rc, "a timed run")
            if len(starts) != count or len(ends) != count:
                raise RunnerError(protocol.INTERNAL, f"MNN ran {len(ends)} ops in a timed run, {count} in the first")
            per_run.append([(e - s) * 1e3 for s, e in zip(starts, ends)])
        return walls, per_run

    def outputs(self) -> dict[str, np.ndarray]:
        """The model outputs after the last run."""
        return {name: read_tensor(self.MNN, t) for name, t in self.interp.getSessionOutputAll(self.session).items()}

    def stats_pass(self, keep, tensor_names: dict | None = None) -> list[list[dict]]:
        """One run reading every op output: per op, [{name, stats}] in run order; `keep(name, array)` is
        called for each tensor (to save it) and may return a path that is added as `path`."""
        MNN, namer, per_op = self.MNN, OutputNamer(self.path, tensor_names), []
        state = {"error": None}

        def end(tensors, info):
            try:
                names = namer.names(info.getName(), len(tensors))
                outs = []
                for name, tensor in zip(names, tensors):
                    entry = {"name": name}
                    try:
                        arr = read_tensor(MNN, tensor)
                        entry.update(tensor_stats(arr))
                        path = keep(name, arr)
                        if path:
                            entry["path"] = path
                    except Exception as e:  # one unreadable tensor (e.g. an int8 layout) must not end the pass
                        entry["error"] = f"unreadable: {e}"
                    outs.append(entry)
                per_op.append(outs)
            except Exception as e:
                state["error"] = e
                return False
            return not self.job.cancelled

        self._refill()
        rc = self.interp.runSessionWithCallBackInfo(self.session, lambda t, i: True, end)
        self.job.check_cancel()
        if state["error"] is not None:
            raise RunnerError(protocol.INTERNAL, f"statistics callback failed: {state['error']}")
        self._check_rc(rc, "the statistics run")
        return per_op

    def close(self) -> None:
        self.session = None
        self.interp = None


def _shape_error(text: str) -> str | None:
    m = re.search(r"Compute Shape Error for (\S+)", text or "")
    return f"MNN: Compute Shape Error for {m.group(1)}" if m else None
