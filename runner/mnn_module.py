"""The Module API (MNN.nn) for models the Interpreter cannot run (control flow, RNN subgraphs).

`load_module_from_file` with the declared outputs times whole forwards; a second module with every tensor
of the file as an output reads them all in one forward for statistics. There are no per-op callbacks here,
so per-op timing is reported unavailable by the caller.
"""
from __future__ import annotations

import time

import numpy as np

from mnnscope.runner import protocol
from mnnscope.runner.mnn_backend import schedule_config
from mnnscope.runner.mnn_env import capture_fd1, mnn
from mnnscope.runner.protocol import RunnerError
from mnnscope.runner.stats import tensor_stats


class MnnModuleRun:
    """The Module API (MNN.nn) for models the Interpreter cannot run: whole-run times, all tensors readable."""

    def __init__(self, job, path: str, *, backend: str = "CPU", precision: str = "high", memory: str = "normal",
                 threads: int = 1):
        self.job, self.path = job, path
        self.MNN = MNN = mnn()
        config = schedule_config(backend, precision, memory, threads)
        try:
            self.rt, text = capture_fd1(MNN.nn.create_runtime_manager, (config,))
            vars_, text2 = capture_fd1(MNN.expr.load_as_list, path)
        except Exception as e:
            raise RunnerError(protocol.BAD_MODEL, f"{path}: MNN cannot open the model ({e})")
        for line in (text + text2).strip().splitlines():
            job.log(line, "native")
        if not vars_:
            raise RunnerError(protocol.BAD_MODEL, f"{path}: not a valid .mnn model (MNN found no operators)")
        self.vars = []
        for v in vars_:
            try:
                self.vars.append({"name": v.name, "type": v.op_type})
            except Exception:
                continue
        self.input_names = [v["name"] for v in self.vars if v["type"] == "Input"]
        info_module = MNN.nn.load_module_from_file(path, [], [], runtime_manager=self.rt)
        info = info_module.get_info()
        self.input_names = list(info.get("inputNames") or self.input_names)
        self.output_names = list(info.get("outputNames") or [])
        self.tensor_ops = [v for v in self.vars if v["type"] not in ("Input", "Const")]
        self.module = self._load(self.output_names)

    def _load(self, outputs: list[str]):
        try:
            module, text = capture_fd1(self.MNN.nn.load_module_from_file, self.path, self.input_names, outputs,
                                       runtime_manager=self.rt, shape_mutable=True)
        except Exception as e:
            raise RunnerError(protocol.RUN_FAILED, f"{self.path}: the Module API cannot load the model either ({e})")
        for line in text.strip().splitlines():
            self.job.log(line, "native")
        if module is None:
            raise RunnerError(protocol.RUN_FAILED, f"{self.path}: the Module API cannot load the model either")
        return module

    def _feeds(self, inputs: dict[str, np.ndarray]) -> list:
        F = self.MNN.expr
        missing = [n for n in self.input_names if n not in inputs]
        if missing:
            raise RunnerError(protocol.BAD_MODEL, f"no data for input(s) {', '.join(missing)} of {self.path}")
        feeds = []
        for name in self.input_names:
            arr = inputs[name]
            if arr.dtype.kind == "f":
                feeds.append(F.const(arr.astype(np.float32), list(arr.shape), F.NCHW, F.float))
            elif arr.dtype.kind == "u" and arr.dtype.itemsize == 1:
                feeds.append(F.const(arr, list(arr.shape), F.NCHW, F.uint8))
            else:
                feeds.append(F.const(arr.astype(np.int32), list(arr.shape), F.NCHW, F.int))
        return feeds

    def _read(self, var) -> np.ndarray:
        F = self.MNN.expr
        if var.data_format == F.NC4HW4:
            var = F.convert(var, F.NCHW)
        return np.array(var.read(), copy=True)

    def _forward(self, module, inputs) -> list:
        results = module.forward(self._feeds(inputs))
        return list(results) if isinstance(results, (list, tuple)) else [results]

    def _failed(self, module, inputs, expected: int) -> RunnerError:
        """A forward that returned no outputs: run it once more with fd 1 captured to get MNN's reason (the
        first attempt is not captured, so that what MNN prints before a crash still reaches the client)."""
        try:
            _, text = capture_fd1(self._forward, module, inputs)
        except Exception as e:
            text = str(e)
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("code=")]
        reason = "; ".join(lines[-3:]) or f"it returned no outputs ({expected} expected)"
        return RunnerError(protocol.RUN_FAILED, f"{self.path}: MNN could not run the model: {reason}")

    def run(self, inputs: dict[str, np.ndarray]) -> tuple[float, dict[str, np.ndarray]]:
        """One forward with the outputs read back (the Module evaluates lazily); (wall ms, outputs)."""
        t0 = time.perf_counter()
        results = self._forward(self.module, inputs)
        if len(results) != len(self.output_names):
            raise self._failed(self.module, inputs, len(self.output_names))
        arrays = {name: self._read(v) for name, v in zip(self.output_names, results)}
        return (time.perf_counter() - t0) * 1e3, arrays

    def stats_pass(self, inputs, keep) -> list[list[dict]]:
        """Every tensor of the file as an output of one forward; per file op, [{name, stats}]."""
        module = self._load([v["name"] for v in self.tensor_ops])
        results = self._forward(module, inputs)
        if len(results) != len(self.tensor_ops):
            raise self._failed(module, inputs, len(self.tensor_ops))
        per_op = []
        for op, var in zip(self.tensor_ops, results):
            entry = {"name": op["name"]}
            try:
                arr = self._read(var)
                entry.update(tensor_stats(arr))
                path = keep(op["name"], arr)
                if path:
                    entry["path"] = path
            except Exception as e:
                entry["error"] = f"unreadable: {e}"
            per_op.append([entry])
        return per_op
