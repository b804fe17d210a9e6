"""The test suite's runner plugin: a `sleep` request and a tiny numpy engine, loaded into a real runner.

A runner imports the modules named in MNNSCOPE_RUNNER_PLUGINS at start (runner/server.py); `plugin_client()`
starts one with this module on its path, so nothing test-only ships in the runner itself.

- `sleep` {seconds, ops}: runs for `seconds` while checking for cancel, with op_begin/op_end events named
  op0, op1, ... when `ops` is set: used to test cancel, hang and crash handling.
- the `numpy` engine runs an .npz "model": a chain of dense layers `layer<i>.weight` [in, out] and
  `layer<i>.bias` [out], each followed by a Relu except the last; input `x`, output `y`. It shows what an
  engine is: one subclass of runner/engine.py's Engine plus one `register` line.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from mnnscope.runner.engine import Engine, register
from mnnscope.runner.server import register_handler

PLUGIN_DIR = Path(__file__).resolve().parent
PLUGIN_MODULE = "runner_plugins"


def sleep(job) -> dict:
    """A request that runs for `seconds` while checking for cancel: used to test cancel and hang handling."""
    deadline = time.monotonic() + float(job.payload.get("seconds", 1.0))
    n = 0
    while time.monotonic() < deadline:
        if job.payload.get("ops"):
            job.event("op_begin", {"name": f"op{n}", "type": "Sleep"})
        time.sleep(0.02)
        job.check_cancel()
        if job.payload.get("ops"):
            job.event("op_end", {"name": f"op{n}", "type": "Sleep", "ms": 20.0})
        n += 1
    return {"slept": float(job.payload.get("seconds", 1.0)), "steps": n}


register_handler("sleep", sleep)


def _layers(path: str) -> list[tuple[np.ndarray, np.ndarray]]:
    with np.load(path, allow_pickle=False) as z:
        count = len([k for k in z.files if k.endswith(".weight")])
        return [(z[f"layer{i}.weight"], z[f"layer{i}.bias"]) for i in range(count)]


@register
class NumpyEngine(Engine):
    name = "numpy"
    api = "numpy"
    title = "numpy"
    suffixes = (".npz",)
    honours = ()

    @classmethod
    def version(cls) -> str:
        return np.__version__

    @classmethod
    def tensor_table(cls, path: str):
        table = [{"name": "x", "producer": None, "op_type": "Input", "inputs": []}]
        prev = "x"
        for op in cls._ops(len(_layers(path))):
            table.append({"name": op["name"], "producer": op["name"], "op_type": op["type"], "inputs": [prev]})
            prev = op["name"]
        return table, [prev]

    @staticmethod
    def _ops(n: int) -> list[dict]:
        ops = []
        for i in range(n):
            last = i == n - 1
            ops.append({"name": "y" if last else f"layer{i}.dense", "type": "Dense", "flops": None})
            if not last:
                ops.append({"name": f"layer{i}", "type": "Relu", "flops": None})
        return ops

    def load_impl(self) -> None:
        self.layers = _layers(self.path)
        self.ops = self._ops(len(self.layers))
        self.per_run: list[list[float]] = []
        self.values: dict[str, np.ndarray] = {}

    def feed_impl(self, inputs):
        self.x = np.asarray(inputs["x"], np.float32)
        return [f"input '{n}' is not an input of this model: ignored" for n in inputs if n != "x"]

    def _forward(self, on_op) -> None:
        """One forward; on_op(index, op, value, ms) after each op."""
        h, pc, k = self.x, time.perf_counter, 0
        self.values = {"x": self.x}
        for i, (w, b) in enumerate(self.layers):
            t0 = pc()
            h = h @ w + b
            on_op(k, self.ops[k], h, (pc() - t0) * 1e3)
            k += 1
            if i < len(self.layers) - 1:
                t0 = pc()
                h = np.maximum(h, 0)
                on_op(k, self.ops[k], h, (pc() - t0) * 1e3)
                k += 1

    def _keep(self, k, op, value, ms) -> None:
        self.values[op["name"]] = value

    def run_impl(self, events: bool) -> float:
        def on_op(k, op, value, ms):
            self._keep(k, op, value, ms)
            if events:
                self.job.event("op_begin", {"name": op["name"], "type": op["type"], "index": k})
                self.job.event("op_end", {"name": op["name"], "type": op["type"], "ms": ms, "index": k})

        t0 = time.perf_counter()
        self._forward(on_op)
        return (time.perf_counter() - t0) * 1e3

    def timed_run_impl(self, per_op: bool) -> float:
        row: list[float] = []

        def on_op(k, op, value, ms):
            self._keep(k, op, value, ms)
            row.append(ms)

        t0 = time.perf_counter()
        self._forward(on_op)
        wall = (time.perf_counter() - t0) * 1e3
        if per_op:
            self.per_run.append(row)
        return wall

    def op_table_impl(self):
        return self.ops, self.per_run

    def outputs_impl(self):
        return {"y": self.values["y"]}

    def read_tensors_impl(self, sink, names, events) -> None:
        self.run_impl(events)
        if names is None:
            for k, op in enumerate(self.ops):
                sink(dict(op, index=k), op["name"], self.values[op["name"]])
        else:
            for name in names:
                sink(None, name, self.values.get(name, KeyError(name)))

    def facts_impl(self) -> dict:
        return {"backend_used": "CPU", "threads_used": 1,
                "warnings": [] if self.settings.backend.upper() == "CPU" else
                [f"backend {self.settings.backend.upper()} requested, CPU used: numpy runs on the CPU"]}


def write_mlp(path, sizes=(4, 8, 3), seed=0) -> dict[str, np.ndarray]:
    """An .npz model for the numpy engine: dense layers between the given sizes."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        arrays[f"layer{i}.weight"] = rng.standard_normal((a, b)).astype(np.float32)
        arrays[f"layer{i}.bias"] = rng.standard_normal(b).astype(np.float32)
    np.savez(path, **arrays)
    return arrays


def plugin_env() -> dict:
    """The environment that makes a runner load this plugin."""
    path = os.pathsep.join(p for p in (str(PLUGIN_DIR), os.environ.get("PYTHONPATH")) if p)
    return {"MNNSCOPE_RUNNER_PLUGINS": PLUGIN_MODULE, "PYTHONPATH": path}


def plugin_client(**kwargs):
    """A RunnerClient whose runner loads this plugin (sleep request, numpy engine)."""
    from mnnscope.inspector.process.client import RunnerClient
    return RunnerClient(env=plugin_env(), **kwargs)
