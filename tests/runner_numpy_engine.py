"""A runner plugin registering a tiny numpy engine: what adding an engine takes (one module, one `register`).

The `numpy` engine runs an .npz "model": a chain of dense layers `layer<i>.weight` [in, out] and
`layer<i>.bias` [out], each followed by a Relu except the last; input `x`, output `y`. Loaded into a real
runner with `plugin_client(NUMPY_PLUGIN)` (tests/runner_plugins.py); test_engines drives it through the
runner's own profile, sweep and dump_tensors handlers.
"""
from __future__ import annotations

import time

import numpy as np

from mnnscope.runner.engine import Engine, register

NUMPY_PLUGIN = "runner_numpy_engine"


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
