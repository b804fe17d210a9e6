"""`dump_tensors`: run a model once and write every tensor it computes into the run directory
(appended to one packed file, `tensors.bin`; see _Writer).

Engine-agnostic (runner/engine.py): the engine lists the tensors the file defines (`tensor_table`), is
loaded keeping them all readable, and reads them in one run (`read_tensors(sink, names)`), with op events
so a crash names its operator. MNN: the Interpreter with `saveTensors` (the MNN engine's layout rule:
NC4HW4 read as NCHW), the Module API with every tensor as an output when the Interpreter cannot run the
model (the engines' fallback policy). ONNX Runtime: every node output added as a graph output, graph
optimisations off, one run (or several when `outputs_per_run` bounds memory). This run is separate from
any timing run: reading tensors distorts timings.

Payload: {engine (protocol.ENGINES; "onnxruntime" is accepted for "ort"), model, inputs (an .npz),
out_dir, backend, precision (high|low|low_bf16), memory (normal|low), threads, api (auto|interpreter|
module: MNN only), tensors (optional subset), producers ({tensor: op name}, for the manifest), op_events
(default true), outputs_per_run (ORT, optional), file_prefix (for several requests writing into one
folder), plain_outputs (MNN's Interpreter: also run the model keeping no tensors and write its outputs,
_plain_outputs; default false)}.
Result: {engine, version, api, fallback_reason, manifest: {tensor: {path, shape, dtype, producer, op_type,
inputs}}, order: [tensor names as written], outputs, problems, seconds, backend_requested, backend_used,
precision, memory, threads, manifest_path, plain_outputs (with the request's plain_outputs: the .npz)}.
"""
from __future__ import annotations

import json
import os
import time

import numpy as np

from mnnscope.runner import protocol
from mnnscope.runner.engine import Settings, engine_class, read_inputs, with_fallback
from mnnscope.runner.engine_mnn import first_line
from mnnscope.runner.protocol import RunnerError


def _require_file(path: str, what: str) -> None:
    if not path or not os.path.isfile(path):
        raise RunnerError(protocol.BAD_MODEL, f"{path}: no such {what}")
    if os.path.getsize(path) == 0:
        raise RunnerError(protocol.BAD_MODEL, f"{path}: the {what} is empty")


class _Writer:
    """Appends the tensors of one run to a single file, `<prefix>tensors.bin`, and builds the manifest: each
    entry names the file, the byte offset (64-byte aligned, so large tensors can be memory-mapped), the shape
    and the dtype (read back by inspector/compare/metrics.load).

    One file instead of one .npy per tensor: a 2,000-node decoder has ~4,700 small tensors, and creating that
    many files cost 6-7 s of the MNN run's 8.5 s (open, header, close per tensor) on the 2-core machine, and
    reading them back another 2 s; appending costs only the bytes. Written as the tensors arrive (nothing is
    held in memory), so a run that dies midway leaves what it had written, named by the tensors before it.
    """

    ALIGN = 64

    def __init__(self, out_dir: str, prefix: str = ""):
        self.out_dir = out_dir
        self.prefix = prefix  # several requests (chunks of one run) may write into one folder
        os.makedirs(out_dir, exist_ok=True)
        self.manifest: dict[str, dict] = {}
        self.order: list[str] = []
        self.fname = f"{prefix}tensors.bin"
        self._file = open(os.path.join(out_dir, self.fname), "wb")  # a fallback's second writer starts afresh
        self._offset = 0

    def save(self, name: str, arr: np.ndarray, **info) -> None:
        arr = np.asarray(arr, order="C")  # keeps 0-d as 0-d (np.ascontiguousarray would make it 1-d)
        pad = -self._offset % self.ALIGN
        if pad:
            self._file.write(b"\0" * pad)
            self._offset += pad
        entry = {"path": self.fname, "offset": self._offset, "shape": [int(d) for d in arr.shape],
                 "dtype": str(arr.dtype)}
        if arr.nbytes:
            self._file.write(arr.reshape(-1).view(np.uint8).data)
            self._offset += arr.nbytes
        entry.update(info)
        self.manifest[name] = entry
        self.order.append(name)

    def finish(self, result: dict) -> dict:
        self._file.close()
        result["manifest"] = self.manifest
        result["order"] = self.order
        path = os.path.join(self.out_dir, f"{self.prefix}manifest.json")
        with open(path, "w", encoding="utf-8") as f:  # dumps, not dump: json.dump to a file encodes in Python
            f.write(json.dumps({k: v for k, v in result.items() if k != "manifest_path"}))
        result["manifest_path"] = path
        return result


def _plain_outputs(job, cls, model: str, settings: Settings, inputs: dict, out_dir: str, prefix: str,
                   result: dict) -> None:
    """The model's outputs from a run that keeps no tensors, written beside the dump (`plain_outputs`: their .npz):
    MNN's `saveTensors` keeps every tensor readable, and with full int8 that changes what it computes (measured,
    MNN 3.6.1, PP-OCRv6 det int8, one input: worst output rel L2 0.235 with every tensor kept, 0.291 in a plain run,
    tryout 15), so a comparison must judge the outputs on a plain run. A failure here is a problem, not the dump's."""
    try:
        with cls(job, model, settings.but(keep=())) as plain:
            plain.load()
            plain.feed(inputs)
            plain.run()
            outs = plain.outputs()
        path = os.path.join(out_dir, f"{prefix}plain_outputs.npz")
        np.savez(path, **{k: np.asarray(v) for k, v in outs.items()})
        result["plain_outputs"] = path
    except Exception as e:  # noqa: BLE001 - the dump stands; its outputs are then the dumped run's
        result["problems"].append(f"the plain run for the outputs failed: {first_line(e)}")


def dump_tensors(job) -> dict:
    p = job.payload
    name = protocol.engine_name(p.get("engine") or protocol.ENGINE_MNN)
    cls = engine_class(name)
    model, out_dir = p.get("model"), p.get("out_dir")
    if not out_dir:
        raise RunnerError(protocol.BAD_REQUEST, "dump_tensors needs out_dir")
    _require_file(model, "model file")
    if p.get("inputs"):
        _require_file(p["inputs"], "input file")
    inputs = read_inputs(p.get("inputs"), kind=protocol.BAD_MODEL)
    start = time.perf_counter()
    table, graph_outputs = cls.tensor_table(model)
    wanted = set(p["tensors"]) if p.get("tensors") is not None else None
    names = [t["name"] for t in table if wanted is None or t["name"] in wanted]
    producers = p.get("producers") or {}
    meta = {t["name"]: {"producer": producers.get(t["name"], t["producer"]), "op_type": t["op_type"],
                        "inputs": t["inputs"]} for t in table}
    settings = Settings(backend=str(p.get("backend") or protocol.DEFAULT_BACKEND),
                        precision=p.get("precision") or protocol.PRECISION_HIGH,
                        memory=p.get("memory") or protocol.MEMORY_NORMAL, threads=int(p.get("threads") or 1),
                        op_timing=False, keep=tuple(names),
                        outputs_per_run=int(p.get("outputs_per_run") or 0) or len(names) or 1)

    def use(engine, reason):
        result = {"engine": name, "version": cls.version(), "api": engine.api, "fallback_reason": reason,
                  "outputs": graph_outputs, "problems": [], "backend_requested": settings.backend.upper(),
                  "backend_used": None, "threads": settings.threads,
                  "precision": settings.precision if "precision" in engine.honours else None,
                  "memory": settings.memory if "memory" in engine.honours else None}
        writer = _Writer(out_dir, str(p.get("file_prefix") or ""))
        engine.feed(inputs)  # inputs the model does not use are not a problem of the dump
        job.progress(0.1, f"running the model ({engine.title})")

        def sink(op, tensor, value):
            if isinstance(value, Exception):
                result["problems"].append(f"{tensor}: not readable ({first_line(value)})")
                return
            arr = np.asarray(value)
            if arr.dtype == object:
                result["problems"].append(f"{tensor}: not a numeric tensor (skipped)")
                return
            writer.save(tensor, arr, **meta.get(tensor, {"producer": None, "op_type": None, "inputs": []}))

        engine.read_tensors(sink, names, events=p.get("op_events", True))
        result["backend_used"] = engine.facts()["backend_used"]
        if name == protocol.ENGINE_MNN and engine.api == cls.api and p.get("plain_outputs"):
            _plain_outputs(job, cls, model, settings, inputs, out_dir, str(p.get("file_prefix") or ""), result)
        return writer.finish(result)

    api = p.get("api") or "auto"
    if api == "auto":
        result = with_fallback(job, name, model, settings, use)
    else:
        chosen = cls if api == cls.api else engine_class(cls.fallback) if cls.fallback else None
        if chosen is None or chosen.api != api:
            raise RunnerError(protocol.BAD_REQUEST, f"the {name} engine has no '{api}' API")
        result = with_fallback(job, chosen.name, model, settings, use, fallback=False)
    result["seconds"] = time.perf_counter() - start
    return result
