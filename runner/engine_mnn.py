"""The MNN engine: an Interpreter session, timed per operator; the Module API (engine_module.py) as fallback.

One engine is one session with one configuration (backend, precision, memory mode, threads). Its runs:

- `run(events=True)`: with op_begin/op_end events (so a crash names its operator); it also lists the
  runtime ops (MNN's own list: Raster ops, While for batched MatMul, ...) for `op_table()`;
- `timed_run(per_op=True)`: minimal callbacks (two perf_counter calls per op, no events, the name-only
  callback API) -> per-op times; `timed_run(per_op=False)`: `runSession` without callbacks, the baseline
  for the instrumentation overhead;
- `read_tensors(sink)`: one more run that copies every op output into a host tensor inside the end
  callback -- separate from the timed runs because reading tensors inflates op times by 10-35%;
  `read_tensors(sink, names)`: one run with the session keeping the named tensors (`saveTensors`, given
  at load as `Settings.keep`), then each read by name (dump_tensors: every tensor of the file).

Tensor layout rule (one for every read, profile and dump alike; the existing tests are its contract): a
tensor is read in the layout the model declares for it. NC4HW4 (MNN's internal packed layout, e.g. a
convolution's output) is copied into an NCHW (Caffe) host tensor with `copyToHostTensor`, never read
through `getNumpyData()` on the device tensor (a raw, channel-scrambled view); NCHW and NHWC tensors are
copied as they are, so the array matches the shape MNN reports for the tensor. Inputs are fed in the
layout of the session's input tensor (the converter keeps the ONNX model's NCHW by default).

Models the Interpreter cannot run (control flow, LSTM subgraphs: shapes cannot be computed before running,
a run returns error code 3) raise `NeedsFallback`; the engine policy then runs them with the Module API.
"""
from __future__ import annotations

import re
import struct
import time

import numpy as np

from mnnscope.runner import mnn_env, protocol
from mnnscope.runner.engine import MNN_MODULE, Engine, NeedsFallback, register
from mnnscope.runner.mnn_env import (FORWARD_TYPES, backend_facts, backend_loads, capture_fd1, mnn,
                                     schedule_config)
from mnnscope.runner.protocol import RunnerError
from mnnscope.runner.structure import mnn_tensor_table

_INFO_MEMORY, _INFO_FLOPS, _INFO_BACKENDS, _INFO_RESIZE, _INFO_THREADS = 0, 1, 2, 3, 4
_CAFFE_C4 = 2


def _as_int(value: float) -> int:
    """getSessionInfo returns some int fields reinterpreted as float (MNN_NOTES): undo that."""
    return struct.unpack("<i", struct.pack("<f", float(value)))[0]


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
    """A copy of a session tensor's values through a host tensor (the layout rule: NC4HW4 becomes NCHW)."""
    dim = tensor.getDimensionType()
    host = MNN.Tensor(tensor, MNN.Tensor_DimensionType_Caffe if dim == _CAFFE_C4 else dim)
    tensor.copyToHostTensor(host)
    return np.array(host.getNumpyData(), copy=True)


def first_line(e: Exception) -> str:
    text = str(e)
    return text.splitlines()[0][:200] if text else type(e).__name__


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


class MnnFile:
    """What both MNN engines (Interpreter, Module API) know of an .mnn file without running it."""

    @classmethod
    def version(cls) -> str | None:
        return mnn_env.version()

    @classmethod
    def tensor_table(cls, path: str) -> tuple[list[dict], list[str]]:
        return mnn_tensor_table(path)


@register
class MnnInterpreter(MnnFile, Engine):
    name = protocol.ENGINE_MNN
    api = protocol.API_INTERPRETER
    title = "MNN"
    suffixes = (".mnn",)
    fallback = MNN_MODULE
    plain_runs = True

    # ----- load and feed -------------------------------------------------------------------------------
    def load_impl(self) -> None:
        s = self.settings
        self.MNN = MNN = mnn()
        self.config = schedule_config(s.backend, s.precision, s.memory, s.threads)
        if s.keep:
            self.config["saveTensors"] = tuple(s.keep)
        try:
            self.interp, text = capture_fd1(MNN.Interpreter, self.path)
        except Exception as e:
            raise RunnerError(protocol.BAD_MODEL, f"{self.path}: MNN cannot open the model ({e})")
        self._forward(text)
        try:
            self.session, text = capture_fd1(self.interp.createSession, self.config)
        except Exception as e:
            raise RunnerError(protocol.RUN_FAILED, f"{self.path}: MNN could not create a session ({e})")
        self.create_log = text.strip()
        self._forward(text)
        self.ops: list[dict] = []
        self.per_run: list[list[float]] = []
        self._hosts: list = []
        self._shape_problem: str | None = None

    def _forward(self, text: str) -> None:
        for line in text.strip().splitlines():
            if line.strip():
                self.job.log(line, "native")

    def info(self, code: int) -> float:
        return self.interp.getSessionInfo(self.session, code)

    def feed_impl(self, inputs: dict[str, np.ndarray]) -> list[str]:
        """Resize to the inputs' shapes where they differ, copy the data in."""
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
        if _as_int(self.info(_INFO_RESIZE)) != 0:
            # Shapes cannot be computed before running: the first run returns error code 3, which is where
            # the fallback starts (so every request reports the same reason).
            self._shape_problem = _shape_error(self.create_log) or "its shapes cannot be computed before running"
        tensors = self.interp.getSessionInputAll(self.session)
        self._hosts = []
        for name, tensor in tensors.items():
            data = np.ascontiguousarray(_cast_for(MNN, tensor, inputs[name]))
            htype, data = _halide(MNN, data)
            self._hosts.append((name, tensor, MNN.Tensor(tuple(data.shape), htype, data, tensor.getDimensionType()),
                                data))
        self._refill()
        return warnings

    def _refill(self) -> None:
        """Copy the inputs in again: a run may reuse an input tensor's memory for intermediates (moe_llm's
        second run read garbage ids without this), so every run starts from a fresh copy, outside the clock."""
        for _, tensor, host, _ in self._hosts:
            tensor.copyFrom(host)

    def _check_rc(self, rc: int, where: str) -> None:
        if rc == 0:
            return
        if rc == 3:  # "Can't run session because not resized" (control flow): the Module API can run it
            why = f"; {self._shape_problem}" if self._shape_problem else ""
            raise NeedsFallback(f"the Interpreter cannot run this model (error code 3 in {where}{why}: "
                                "typical of control flow or RNN subgraphs)")
        raise RunnerError(protocol.RUN_FAILED, f"{self.path}: MNN returned error code {rc} in {where}")

    # ----- runs ----------------------------------------------------------------------------------------
    def run_impl(self, events: bool, timing: bool = True) -> float:
        """One run; with `events`, op_begin per op (what a crash is attributed to) and, with `timing`, op_end
        with its time and FLOPs. Without `timing` (a tensor dump: thousands of ops, nobody reads their times)
        only the last op's op_end is sent, after the run, so a crash while reading tensors back is not blamed
        on it; that halves the messages (~0.5 s of a 2,000-node decoder's dump on the 2-core machine)."""
        if not events:
            return self._plain()
        job, ops, pc = self.job, [], time.perf_counter
        state = {"t0": 0.0, "error": None, "last": None}

        def begin(tensors, info):
            try:
                state["last"] = {"name": info.getName(), "type": info.getType(), "index": len(ops)}
                job.event("op_begin", state["last"])
                state["t0"] = pc()
            except Exception as e:  # an exception here would surface as SystemError: keep it, stop the run
                state["error"] = e
                return False
            return True

        def end(tensors, info):
            if not timing:
                ops.append(None)
                return not job.cancelled
            try:
                ms = (pc() - state["t0"]) * 1e3
                op = {"name": info.getName(), "type": info.getType(), "flops": info.getFlops() * 1e6}
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
        if not timing and state["last"] is not None:
            job.event("op_end", dict(state["last"], ms=None, flops=None))
            ops = []
        job.check_cancel()
        if state["error"] is not None:
            raise RunnerError(protocol.INTERNAL, f"profiling callback failed: {state['error']}")
        self._check_rc(rc, "the first run")
        self.ops = ops
        return wall

    def _plain(self) -> float:
        """Wall ms of one run without callbacks."""
        self._refill()
        t0 = time.perf_counter()
        rc = self.interp.runSession(self.session)
        wall = (time.perf_counter() - t0) * 1e3
        self._check_rc(rc, "a run")
        return wall

    def timed_run_impl(self, per_op: bool) -> float:
        """Callbacks only read the clock; types and flops come from the first run(events=True)."""
        if not per_op:
            return self._plain()
        pc, count = time.perf_counter, len(self.ops)
        starts, ends = [], []
        s_add, e_add = starts.append, ends.append

        def begin(tensors, name):
            s_add(pc())
            return True

        def end(tensors, name):
            e_add(pc())
            return True

        self._refill()
        t0 = pc()
        # The name-only callback API: it skips building an OpInfo object per call, which halves the
        # overhead (about 0.7 us per op instead of 1.9 on a 519-op net).
        rc = self.interp.runSessionWithCallBack(self.session, begin, end)
        wall = (pc() - t0) * 1e3
        self._check_rc(rc, "a timed run")
        if len(starts) != count or len(ends) != count:
            raise RunnerError(protocol.INTERNAL, f"MNN ran {len(ends)} ops in a timed run, {count} in the first")
        self.per_run.append([(e - s) * 1e3 for s, e in zip(starts, ends)])
        return wall

    def op_table_impl(self):
        return self.ops, self.per_run

    def outputs_impl(self) -> dict[str, np.ndarray]:
        return {name: read_tensor(self.MNN, t) for name, t in self.interp.getSessionOutputAll(self.session).items()}

    # ----- tensors -------------------------------------------------------------------------------------
    def read_tensors_impl(self, sink, names, events) -> None:
        if names is not None:
            self._read_kept(sink, names, events)
            return
        MNN, namer = self.MNN, OutputNamer(self.path, self.settings.tensor_names)
        state = {"error": None, "index": 0}

        def end(tensors, info):
            try:
                op = {"index": state["index"], "name": info.getName(), "type": info.getType()}
                state["index"] += 1
                sink(op, None, None)  # the op, even one without outputs
                for name, tensor in zip(namer.names(op["name"], len(tensors)), tensors):
                    try:
                        value = read_tensor(MNN, tensor)
                    except Exception as e:  # one unreadable tensor (e.g. an int8 layout) must not end the pass
                        value = e
                    sink(op, name, value)
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

    def _read_kept(self, sink, names, events) -> None:
        """One run (op events when asked), then every named tensor, kept readable by saveTensors."""
        kept = set(self.settings.keep or ())
        if any(n not in kept for n in names):
            raise RunnerError(protocol.INTERNAL, "read_tensors(names) needs the names in Settings.keep")
        if events:
            self.run_impl(True, timing=False)
        else:
            self._plain()
        fed = {name: data for name, _, _, data in self._hosts}
        for i, name in enumerate(names):
            if i % 256 == 0:
                self.job.check_cancel()
            if name in fed:  # the session may reuse an input's buffer once it is consumed: give what was fed
                sink(None, name, fed[name])
                continue
            try:
                value = read_tensor(self.MNN, self.interp.getSessionOutput(self.session, name))
            except Exception as e:
                value = e
            sink(None, name, value)

    # ----- facts ---------------------------------------------------------------------------------------
    def facts_impl(self) -> dict:
        code = int(self.info(_INFO_BACKENDS))
        used = FORWARD_TYPES.get(code, f"type {code}")
        note, warnings = backend_facts(self.settings.backend, used, backend_loads(self.settings.backend))
        return {"backend_used": used, "backend_note": note, "warnings": warnings,
                "threads_used": _as_int(self.info(_INFO_THREADS)), "memory_mb": float(self.info(_INFO_MEMORY)),
                "flops": float(self.info(_INFO_FLOPS)) * 1e6}

    def close_impl(self) -> None:
        self.session = None
        self.interp = None
        self._hosts = []


def _shape_error(text: str) -> str | None:
    m = re.search(r"Compute Shape Error for (\S+)", text or "")
    return f"MNN: Compute Shape Error for {m.group(1)}" if m else None
