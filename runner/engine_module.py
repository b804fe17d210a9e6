"""The MNN Module API (MNN.nn) engine, for models the Interpreter cannot run (control flow, RNN subgraphs).

Reached through the MNN engine's fallback (runner/engine.py `with_fallback`), never named by a request.
`load_module_from_file` with the declared outputs times whole forwards; a second module with every tensor
of the file (or the named ones) as outputs reads them all in one forward. There are no per-op callbacks
here: per-op timing is unavailable, and one op_begin/op_end pair covers the whole forward. Tensors follow
the MNN engine's layout rule (runner/engine_mnn.py): NC4HW4 is converted to NCHW, other layouts are read
as declared.
"""
from __future__ import annotations

import time

import numpy as np

from mnnscope.runner import protocol
from mnnscope.runner.engine import MNN_MODULE, Engine, register
from mnnscope.runner.engine_mnn import MnnFile
from mnnscope.runner.mnn_env import backend_facts, backend_loads, capture_fd1, mnn, native_reason, schedule_config
from mnnscope.runner.protocol import CUSTOM_OPS, RunnerError

NO_KERNEL = "Don't support type [Extra]"   # MNN's words for an op it has no kernel for (a custom op)


@register
class MnnModule(MnnFile, Engine):
    name = MNN_MODULE
    api = protocol.API_MODULE
    title = "Module API"

    def load_impl(self) -> None:
        s, path = self.settings, self.path
        self.MNN = MNN = mnn()
        config = schedule_config(s.backend, s.precision, s.memory, s.threads)
        try:
            self.rt, text = capture_fd1(MNN.nn.create_runtime_manager, (config,))
            vars_, text2 = capture_fd1(MNN.expr.load_as_list, path)
        except Exception as e:
            raise RunnerError(protocol.BAD_MODEL, f"{path}: MNN cannot open the model ({e})")
        self._log(text + text2)
        if not vars_:
            raise RunnerError(protocol.BAD_MODEL, f"{path}: not a valid .mnn model (MNN found no operators)")
        self.vars = []
        for v in vars_:
            try:
                self.vars.append({"name": v.name, "type": v.op_type})
            except Exception:
                continue
        self.input_names = [v["name"] for v in self.vars if v["type"] == "Input"]
        try:
            info_module, text = capture_fd1(MNN.nn.load_module_from_file, path, [], [], runtime_manager=self.rt)
        except Exception as e:
            raise RunnerError(protocol.RUN_FAILED, f"{path}: the Module API cannot load the model: {native_reason(e)}")
        self._log(text)
        info = info_module.get_info()
        self.input_names = list(info.get("inputNames") or self.input_names)
        self.output_names = list(info.get("outputNames") or [])
        self.tensor_ops = [v for v in self.vars if v["type"] not in ("Input", "Const")]
        self.module = self._load(self.output_names)
        self.inputs: dict[str, np.ndarray] = {}
        self.last: dict[str, np.ndarray] = {}

    def _log(self, text: str) -> None:
        for line in text.strip().splitlines():
            self.job.log(line, "native")

    def _load(self, outputs: list[str]):
        try:
            module, text = capture_fd1(self.MNN.nn.load_module_from_file, self.path, self.input_names, outputs,
                                       runtime_manager=self.rt, shape_mutable=True)
        except Exception as e:
            raise RunnerError(protocol.RUN_FAILED,
                              f"{self.path}: the Module API cannot load the model either: {native_reason(e)}")
        self._log(text)
        if module is None:
            raise RunnerError(protocol.RUN_FAILED, f"{self.path}: the Module API cannot load the model either")
        return module

    def feed_impl(self, inputs: dict[str, np.ndarray]) -> list[str]:
        missing = [n for n in self.input_names if n not in inputs]
        if missing:
            raise RunnerError(protocol.BAD_MODEL, f"no data for input(s) {', '.join(missing)} of {self.path}")
        self.inputs = {n: inputs[n] for n in self.input_names}
        return [f"input '{n}' is not an input of this model: ignored" for n in inputs if n not in self.input_names]

    def _feeds(self) -> list:
        F = self.MNN.expr
        feeds = []
        for name in self.input_names:
            arr = self.inputs[name]
            if arr.dtype.kind == "f":
                feeds.append(F.const(arr.astype(np.float32), list(arr.shape), F.NCHW, F.float))
            elif arr.dtype.kind == "u" and arr.dtype.itemsize == 1:
                feeds.append(F.const(arr, list(arr.shape), F.NCHW, F.uint8))
            else:
                feeds.append(F.const(arr.astype(np.int32), list(arr.shape), F.NCHW, F.int))
        return feeds

    def fed_arrays(self) -> dict[str, np.ndarray]:
        """The inputs as MNN receives them (float32 / uint8 / int32)."""
        out = {}
        for name, arr in self.inputs.items():
            kind = arr.dtype.kind
            out[name] = (arr.astype(np.float32) if kind == "f" else
                         arr if kind == "u" and arr.dtype.itemsize == 1 else arr.astype(np.int32))
        return out

    def _read(self, var) -> np.ndarray:
        F = self.MNN.expr
        if var.data_format == F.NC4HW4:
            var = F.convert(var, F.NCHW)
        return np.array(var.read(), copy=True)

    def _forward(self, module) -> list:
        results = module.forward(self._feeds())
        return list(results) if isinstance(results, (list, tuple)) else [results]

    def _failed(self, module, expected: int) -> RunnerError:
        """A forward that returned no outputs: run it once more with fd 1 captured to get MNN's reason (the
        first attempt is not captured, so that what MNN prints before a crash still reaches the client)."""
        try:
            _, text = capture_fd1(self._forward, module)
        except Exception as e:
            text = str(e)
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("code=")]
        reason = "; ".join(lines[-3:]) or f"it returned no outputs ({expected} expected)"
        if NO_KERNEL in text:
            # ops converted as custom ones (allow-custom-op): the Interpreter's "control flow or RNN" guess that the
            # fallback appended misled (helper 117: Hardmax and Mish, in a model without control flow)
            return RunnerError(protocol.RUN_FAILED, f"{self.path}: MNN could not run the model: it holds ops MNN has "
                               f"no kernel for (MNN: \"{NO_KERNEL}\": custom ops the conversion kept with allow-"
                               "custom-op); it runs only with them registered as MNN custom ops: replace them before "
                               "export, or implement them", CUSTOM_OPS)
        return RunnerError(protocol.RUN_FAILED, f"{self.path}: MNN could not run the model: {reason}")

    def run_impl(self, events: bool) -> float:
        """One forward with the outputs read back (the Module evaluates lazily)."""
        if events:
            self.whole_run_event("op_begin")
        t0 = time.perf_counter()
        results = self._forward(self.module)
        if len(results) != len(self.output_names):
            raise self._failed(self.module, len(self.output_names))
        self.last = {name: self._read(v) for name, v in zip(self.output_names, results)}
        ms = (time.perf_counter() - t0) * 1e3
        if events:
            self.whole_run_event("op_end", ms)
        return ms

    def op_table_impl(self):
        return [{"name": v["name"], "type": v["type"], "flops": None} for v in self.tensor_ops], None

    def outputs_impl(self) -> dict[str, np.ndarray]:
        return self.last

    def read_tensors_impl(self, sink, names, events) -> None:
        """Every tensor of the file (or the named ones) as an output of one forward."""
        inputs = set(self.input_names)
        if names is None:
            ops = [dict(v, index=i) for i, v in enumerate(self.tensor_ops)]
        else:
            ops = [{"index": None, "name": n, "type": None} for n in names if n not in inputs]
            fed = self.fed_arrays()
            for n in names:
                if n in fed:
                    sink(None, n, fed[n])
        module = self._load([op["name"] for op in ops])
        if events:
            self.whole_run_event("op_begin")
        results = self._forward(module)
        if len(results) != len(ops):
            raise self._failed(module, len(ops))
        if events:
            self.whole_run_event("op_end")
        for i, (op, var) in enumerate(zip(ops, results)):
            if i % 256 == 0:
                self.job.check_cancel()
            try:
                value, _ = capture_fd1(self._read, var)
            except Exception as e:
                value = e
            sink(op if names is None else None, op["name"], value)

    def facts_impl(self) -> dict:
        requested = self.settings.backend
        loads = backend_loads(requested)
        used = requested.upper() if loads else "CPU"
        note, warnings = backend_facts(requested, used, loads)
        return {"backend_used": used, "backend_note": note, "warnings": warnings}
