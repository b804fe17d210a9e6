"""Engines: one base class for every way the runner executes a model, a registry, one fallback policy.

Modelled on Polygraphy's runner base (backend/base/runner.py): the public methods check the engine's
state and call `*_impl` hooks, and the engine measures its own time. An engine is one model file under
one `Settings` (backend, precision, memory mode, threads, ...):

    load()                  open the model, create the session                      -> load_impl()
    feed(inputs)            bind input arrays (resizing where shapes differ)         -> feed_impl()
    run(events)             one untimed run; events: op_begin/op_end per op (or one
                            pair for the whole run when the engine has no per-op
                            callbacks), so a crash names its operator; returns wall ms -> run_impl()
    timed_run(per_op)       one run timed by the engine itself: wall ms; with per_op
                            (where the engine can) the per-op times are kept        -> timed_run_impl()
    op_table()              (ops [{name, type, flops}], per-op ms of each per-op timed run, or None
                            when the engine cannot time ops)                          -> op_table_impl()
    outputs()               the model outputs of the last run                        -> outputs_impl()
    read_tensors(sink, names) one more run that reads tensors: every op output (names None) or the
                            named ones; sink(op, tensor name, array or the exception that stopped
                            reading it) is called once per tensor; op is {index, name, type} when
                            every op output is read (a call with tensor name None may announce an op
                            that has no outputs), None for named tensors              -> read_tensors_impl()
    version(), tensor_table(path)   classmethods: the library's version; every tensor the file defines
    facts()                 what really ran: backend_used, backend_note, threads_used, memory_mb, flops,
                            warnings                                                  -> facts_impl()
    close()                                                                          -> close_impl()

Request handlers (profile, sweep, dump_tensors) are engine-agnostic: they pick an engine class by name
from ENGINES and drive it through these methods. Adding an engine = one module with a subclass plus one
`register(...)` call (built-ins are listed in BUILTIN; a runner plugin registers its own, see server.py).

Fallback: an engine that cannot run a model it opened raises `NeedsFallback` (from any method); the one
policy, `with_fallback`, closes it and runs the same job on the engine named by its `fallback`
attribute (MNN Interpreter -> MNN Module API), with the reason kept for the result.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, replace

import numpy as np

from mnnscope.runner import protocol
from mnnscope.runner.protocol import RunnerError


@dataclass(frozen=True)
class Settings:
    """How to run a model; names are the protocol's (runner/protocol.py)."""
    backend: str = protocol.DEFAULT_BACKEND
    precision: str = protocol.PRECISION_HIGH
    memory: str = protocol.MEMORY_NORMAL
    threads: int = 1
    optimization: str = "all"          # ONNX Runtime graph optimization level
    run_dir: str | None = None         # where an engine may write its own files (ORT's profile)
    op_timing: bool = True             # per-op timing wanted (ORT: its profiler is on)
    tensor_names: dict | None = None   # MNN: {op name: output tensor names}, to name fused ops' outputs
    keep: tuple | None = None          # tensor names read_tensors(names) will be asked for (MNN: saveTensors)
    outputs_per_run: int | None = None  # ORT: outputs held at once while reading every tensor

    def but(self, **changes) -> "Settings":
        return replace(self, **changes)


class NeedsFallback(Exception):
    """This engine cannot run this model (the message says why); its `fallback` engine may."""


class Engine:
    """Base of every engine; subclasses implement the `*_impl` hooks (see the module docstring)."""

    name = ""                 # the name requests use (registered in ENGINES)
    api = ""                  # what a result calls this way of running ("interpreter", "module", ...)
    title = ""                # how messages name it ("MNN", "ONNX Runtime")
    suffixes: tuple = ()      # model files it runs, lowercase (".mnn"); the default engine for them
    fallback: str | None = None   # registered engine to try when this one raises NeedsFallback
    honours: tuple = ("precision", "memory")  # settings this engine applies (others are warned about)
    plain_runs = False        # timed_run(per_op=False) is a different, uninstrumented run
    reads_run_ops = True      # read_tensors(None) reports the same ops, in the same order, as op_table

    def __init__(self, job, path: str, settings: Settings | None = None):
        self.job, self.path = job, path
        self.settings = settings or Settings()
        self.state = "new"
        self.fed = False

    # ----- state ---------------------------------------------------------------------------------------
    def _require(self, state: str, what: str) -> None:
        if self.state != state:
            raise RunnerError(protocol.INTERNAL, f"{self.name} engine: {what} needs state '{state}', "
                                                 f"it is '{self.state}'")

    def _require_fed(self, what: str) -> None:
        self._require("loaded", what)
        if not self.fed:
            raise RunnerError(protocol.INTERNAL, f"{self.name} engine: {what} before feed()")

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ----- public API ----------------------------------------------------------------------------------
    def load(self) -> "Engine":
        self._require("new", "load()")
        self.load_impl()
        self.state = "loaded"
        return self

    def feed(self, inputs: dict[str, np.ndarray]) -> list[str]:
        """Bind the inputs; returns warnings (inputs the model does not have, ...)."""
        self._require("loaded", "feed()")
        warnings = self.feed_impl(inputs)
        self.fed = True
        return list(warnings or [])

    def run(self, events: bool = False) -> float:
        self._require_fed("run()")
        self.job.check_cancel()
        return float(self.run_impl(events))

    def timed_run(self, per_op: bool | None = None) -> float:
        self._require_fed("timed_run()")
        self.job.check_cancel()
        return float(self.timed_run_impl(self.settings.op_timing if per_op is None else per_op))

    def op_table(self) -> tuple[list[dict], list[list[float]] | None]:
        self._require("loaded", "op_table()")
        return self.op_table_impl()

    def outputs(self) -> dict[str, np.ndarray]:
        self._require_fed("outputs()")
        return self.outputs_impl()

    def read_tensors(self, sink, names: list[str] | None = None, events: bool = False) -> None:
        self._require_fed("read_tensors()")
        self.job.check_cancel()
        self.read_tensors_impl(sink, names, events)
        self.job.check_cancel()

    def facts(self) -> dict:
        self._require("loaded", "facts()")
        out = {"backend_used": None, "backend_note": None, "threads_used": None, "memory_mb": None, "flops": None,
               "warnings": []}
        out.update(self.facts_impl())
        return out

    def close(self) -> None:
        if self.state == "loaded":
            try:
                self.close_impl()
            finally:
                self.state = "closed"
        else:
            self.state = "closed"

    # ----- about the engine and the file (no session needed) -------------------------------------------
    @classmethod
    def version(cls) -> str | None:
        """The version of the library behind this engine."""
        return None

    @classmethod
    def tensor_table(cls, path: str) -> tuple[list[dict], list[str]]:
        """Every tensor the model file defines, in file order: ([{name, producer, op_type, inputs}], the
        model's outputs). What dump_tensors writes and names in its manifest."""
        raise RunnerError(protocol.UNSUPPORTED, f"the {cls.name} engine cannot list a model's tensors")

    # ----- hooks ---------------------------------------------------------------------------------------
    def load_impl(self) -> None:
        raise NotImplementedError

    def feed_impl(self, inputs: dict[str, np.ndarray]) -> list[str]:
        raise NotImplementedError

    def run_impl(self, events: bool) -> float:
        raise NotImplementedError

    def timed_run_impl(self, per_op: bool) -> float:
        return self.run_impl(False)

    def op_table_impl(self) -> tuple[list[dict], list[list[float]] | None]:
        return [], None

    def outputs_impl(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def read_tensors_impl(self, sink, names: list[str] | None, events: bool) -> None:
        raise RunnerError(protocol.UNSUPPORTED, f"the {self.name} engine cannot read tensors")

    def facts_impl(self) -> dict:
        return {"backend_used": self.settings.backend.upper(), "threads_used": self.settings.threads}

    def close_impl(self) -> None:
        pass

    # ----- helpers for subclasses ----------------------------------------------------------------------
    def whole_run_event(self, kind: str, ms: float | None = None) -> None:
        """op_begin/op_end for a whole run, where an engine has no per-op callbacks (a crash is placed there)."""
        body = {"name": f"{self.api}.run", "type": self.api, "index": 0}
        if ms is not None:
            body["ms"] = ms
        self.job.event(kind, body)


# ----- registry ----------------------------------------------------------------------------------------
# The MNN Module API engine: reached through the MNN engine's fallback, never named by a request.
MNN_MODULE = "mnn_module"
# Built-in engines, imported on first use (a `hello` must not pay for MNN or onnxruntime):
# registered name -> "module:class".
BUILTIN = {
    protocol.ENGINE_MNN: "mnnscope.runner.engine_mnn:MnnInterpreter",
    MNN_MODULE: "mnnscope.runner.engine_module:MnnModule",
    protocol.ENGINE_ORT: "mnnscope.runner.engine_ort:OrtEngine",
}
ENGINES: dict[str, object] = dict(BUILTIN)   # name -> class, or "module:class" until first use


def register(cls) -> type:
    """Make an engine class available to requests under `cls.name` (usable as a class decorator)."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    ENGINES[cls.name] = cls
    return cls


def engine_class(name: str):
    """The engine class registered as `name` (older spellings accepted); BAD_REQUEST for an unknown one."""
    name = protocol.engine_name(name)
    target = ENGINES.get(name)
    if target is None:
        raise RunnerError(protocol.BAD_REQUEST, f"unknown engine '{name}' ({', '.join(public_engines())})")
    if isinstance(target, str):
        module, cls = target.split(":")
        target = ENGINES[name] = getattr(importlib.import_module(module), cls)
    return target


def public_engines() -> list[str]:
    """Engines a request may name (the Module API is reached through the MNN engine's fallback)."""
    return [n for n in ENGINES if n != MNN_MODULE]


def engine_for_path(path: str, requested: str | None) -> str:
    """The engine to run `path` with: the requested one, else the one whose suffixes match (else MNN)."""
    if requested:
        name = protocol.engine_name(requested)
        engine_class(name)  # unknown: BAD_REQUEST
        return name
    suffix = os.path.splitext(path)[1].lower()
    for name in public_engines():
        target = ENGINES[name]
        if not isinstance(target, str) and suffix in target.suffixes:
            return name
    return protocol.ENGINE_ORT if suffix == ".onnx" else protocol.ENGINE_MNN


# ----- the fallback policy -------------------------------------------------------------------------------
def with_fallback(job, name: str, path: str, settings: Settings, use, *, fallback: bool = True):
    """use(engine, reason) with a loaded engine `name`; when it raises NeedsFallback, the same on the
    engine's fallback (reason = why the first could not). The only place engines fall back; with
    fallback=False a NeedsFallback is the request's failure (RUN_FAILED)."""
    cls = engine_class(name)
    reason = None
    while True:
        engine = cls(job, path, settings)
        try:
            engine.load()
            return use(engine, reason)
        except NeedsFallback as e:
            if cls.fallback is None or not fallback:
                raise RunnerError(protocol.RUN_FAILED, f"{path}: {e}")
            reason = str(e)
            nxt = engine_class(cls.fallback)
            job.log(f"{reason}: running it with the {nxt.title}", "runner")
            cls = nxt
        except RunnerError as e:
            # The fallback could not run it either: say what the first engine found too (MNN's own
            # words are often only in that first message).
            if reason and e.kind == protocol.RUN_FAILED and reason not in e.message and e.detail != protocol.CUSTOM_OPS:
                raise RunnerError(e.kind, f"{e.message}; {reason}", e.detail)
            raise
        finally:
            engine.close()


# ----- inputs ------------------------------------------------------------------------------------------
def read_inputs(path: str | None, kind: str = protocol.BAD_REQUEST) -> dict[str, np.ndarray]:
    """The arrays of an .npz of model inputs (allow_pickle=False); `kind` is the error kind when unreadable."""
    if not path:
        return {}
    if not os.path.isfile(path):
        raise RunnerError(kind, f"inputs file missing: {path}")
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: np.asarray(z[k]) for k in z.files}
    except Exception as e:
        raise RunnerError(kind, f"{path}: not a readable .npz of inputs ({e})")
