"""`dump_tensors`: run a model once and write every tensor it computes as .npy into the run directory.

MNN side: the Interpreter with `saveTensors` = every tensor name of the file (so the session keeps them
instead of reusing their memory), op_begin/op_end events from the run callbacks (a crash names the op),
then each tensor copied into a Caffe (NCHW) host tensor with `copyToHostTensor` — never `getNumpyData()`
on a device tensor, which is a raw NC4HW4 view. Models the Interpreter cannot run (control flow, LSTM
subgraphs: it returns an error code) fall back to the Module API with every tensor name as an output.
This run is separate from any timing run: reading tensors distorts timings.

ORT side: the ONNX model with every node output added as a graph output, graph optimisations off, one
run (or several when `outputs_per_run` bounds memory), each output saved as .npy.

Payload: {engine: "mnn"|"onnxruntime", model, inputs (an .npz), out_dir, backend, precision
(high|low|low_bf16), memory (normal|low), threads, api (auto|interpreter|module), tensors (optional subset),
op_events (default true), outputs_per_run (ORT, optional), file_prefix (for several requests writing
into one folder)}.
Result: {engine, version, api, fallback_reason, manifest: {tensor: {path, shape, dtype, producer, op_type,
inputs}}, order: [tensor names in execution order], outputs, problems, seconds, backend_used, manifest_path}.
"""
from __future__ import annotations

import json
import os
import time

import numpy as np

from mnnscope.runner import protocol
from mnnscope.runner.mnn_env import capture_fd1, mnn
from mnnscope.runner.protocol import RunnerError
from mnnscope.runner.structure import load_vars, var_info

PRECISIONS = {"high": "high", "normal": "normal", "low": "low", "low_bf16": "Low_BF16", "bf16": "Low_BF16"}
MEMORY = {"normal": 0, "high": 1, "low": 2}
# MNN's forward types that mean "the CPU ran it" (13 = CPU_EXTENSION, reported for plain CPU requests too).
_CPU_CODES = {0, 13}


def _require_file(path: str, what: str) -> None:
    if not path or not os.path.isfile(path):
        raise RunnerError(protocol.BAD_MODEL, f"{path}: no such {what}")
    if os.path.getsize(path) == 0:
        raise RunnerError(protocol.BAD_MODEL, f"{path}: the {what} is empty")


def _load_inputs(path: str | None) -> dict[str, np.ndarray]:
    if not path:
        return {}
    _require_file(path, "input file")
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: np.asarray(z[k]) for k in z.files}
    except Exception as e:
        raise RunnerError(protocol.BAD_MODEL, f"{path}: not a readable .npz of inputs ({e})")


class _Writer:
    """Writes tensors as <index>.npy into out_dir and builds the manifest."""

    def __init__(self, out_dir: str, prefix: str = ""):
        self.out_dir = out_dir
        self.prefix = prefix  # several requests (chunks of one run) may write into one folder
        os.makedirs(out_dir, exist_ok=True)
        self.manifest: dict[str, dict] = {}
        self.order: list[str] = []

    def save(self, name: str, arr: np.ndarray, **info) -> None:
        fname = f"{self.prefix}{len(self.order):06d}.npy"
        np.save(os.path.join(self.out_dir, fname), np.asarray(arr, order="C"), allow_pickle=False)  # keeps 0-d as 0-d
        entry = {"path": fname, "shape": [int(d) for d in arr.shape], "dtype": str(arr.dtype)}
        entry.update(info)
        self.manifest[name] = entry
        self.order.append(name)

    def finish(self, result: dict) -> dict:
        result["manifest"] = self.manifest
        result["order"] = self.order
        path = os.path.join(self.out_dir, f"{self.prefix}manifest.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({k: v for k, v in result.items() if k != "manifest_path"}, f)
        result["manifest_path"] = path
        return result


def dump_tensors(job) -> dict:
    p = job.payload
    engine = p.get("engine", "mnn")
    model = p.get("model")
    out_dir = p.get("out_dir")
    if not out_dir:
        raise RunnerError(protocol.BAD_REQUEST, "dump_tensors needs out_dir")
    _require_file(model, "model file")
    inputs = _load_inputs(p.get("inputs"))
    start = time.perf_counter()
    if engine == "onnxruntime":
        result = _dump_ort(job, model, inputs, out_dir)
    elif engine == "mnn":
        result = _dump_mnn(job, model, inputs, out_dir)
    else:
        raise RunnerError(protocol.BAD_REQUEST, f"unknown engine '{engine}' (expected mnn or onnxruntime)")
    result["seconds"] = time.perf_counter() - start
    return result


# ----- MNN --------------------------------------------------------------------------------------------
def _var_table(path: str) -> list[dict]:
    """Every tensor of the file: name, producing op type, input tensor names."""
    vars_, _ = load_vars(path)
    return [{k: info[k] for k in ("name", "op_type", "inputs")} for info in map(var_info, vars_) if info["name"]]


def _mnn_feed(arr: np.ndarray) -> np.ndarray:
    """MNN has no int64/bool/float64 tensors: cast to int32/float32 (the same .npz serves ORT)."""
    if arr.dtype in (np.int64, np.uint64, np.int16, np.uint16, np.uint32, np.bool_):
        return arr.astype(np.int32)
    if arr.dtype in (np.float64, np.float16):
        return arr.astype(np.float32)
    return np.asarray(arr, order="C")


def _runtime_config(p: dict) -> dict:
    precision = str(p.get("precision") or "high").lower()
    if precision not in PRECISIONS:
        raise RunnerError(protocol.BAD_REQUEST, f"unknown precision '{precision}' (high, low, low_bf16)")
    memory = str(p.get("memory") or "normal").lower()
    if memory not in MEMORY:
        raise RunnerError(protocol.BAD_REQUEST, f"unknown memory mode '{memory}' (normal, low)")
    return {"backend": str(p.get("backend") or "CPU").upper(), "numThread": int(p.get("threads") or 1),
            "precision": PRECISIONS[precision], "memory": MEMORY[memory]}


def _dump_mnn(job, path: str, inputs: dict, out_dir: str) -> dict:
    MNN = mnn()
    p = job.payload
    table = _var_table(path)
    input_names = [v["name"] for v in table if v["op_type"] == "Input"]
    missing = [n for n in input_names if n not in inputs]
    if missing:
        raise RunnerError(protocol.BAD_MODEL, f"no value for model input(s) {', '.join(missing)}")
    wanted = p.get("tensors")
    names = [v["name"] for v in table if wanted is None or v["name"] in set(wanted)]
    info = {v["name"]: v for v in table}
    ops = p.get("producers") or {}
    config = _runtime_config(p)
    api = p.get("api", "auto")
    result = {"engine": "mnn", "version": _mnn_version(MNN), "api": None, "fallback_reason": None,
              "outputs": [], "problems": [], "backend_requested": config["backend"], "backend_used": None,
              "precision": p.get("precision") or "high", "memory": p.get("memory") or "normal",
              "threads": config["numThread"]}
    writer = _Writer(out_dir, str(p.get("file_prefix") or ""))
    feeds = {k: _mnn_feed(v) for k, v in inputs.items()}

    def meta(name):
        v = info.get(name, {})
        return {"producer": ops.get(name), "op_type": v.get("op_type"), "inputs": v.get("inputs", [])}

    if api in ("auto", "interpreter"):
        reason = _interpreter_run(job, MNN, path, names, feeds, config, writer, meta, result)
        if reason is None:
            result["api"] = "interpreter"
            result["outputs"] = _graph_outputs(table)
            return writer.finish(result)
        if api == "interpreter":
            raise RunnerError(protocol.RUN_FAILED, f"{path}: {reason}")
        result["fallback_reason"] = reason
        writer = _Writer(out_dir, str(p.get("file_prefix") or ""))
    _module_run(job, MNN, path, input_names, names, feeds, config, writer, meta, result)
    result["outputs"] = _graph_outputs(table)
    result["api"] = "module"
    return writer.finish(result)


def _mnn_version(MNN) -> str | None:
    try:
        return MNN.version()
    except Exception:
        return getattr(MNN, "__version__", None)


def _host_tensor(MNN, arr: np.ndarray, halide_type):
    """A Caffe-layout host tensor holding arr, in the session input's own type."""
    kinds = {MNN.Halide_Type_Float: np.float32, MNN.Halide_Type_Int: np.int32, MNN.Halide_Type_Uint8: np.uint8}
    for k, dt in kinds.items():
        if halide_type == k:
            arr = arr.astype(dt, copy=False)
            break
    return MNN.Tensor(tuple(arr.shape), halide_type, np.ascontiguousarray(arr), MNN.Tensor_DimensionType_Caffe)


def _interpreter_run(job, MNN, path, names, feeds, config, writer, meta, result) -> str | None:
    """Run with the Interpreter and write every saved tensor; returns why it could not, or None."""
    session_config = dict(config)
    session_config["saveTensors"] = tuple(names)
    try:
        interp, _ = capture_fd1(MNN.Interpreter, path)
        session, log = capture_fd1(interp.createSession, session_config)
    except Exception as e:
        return f"the Interpreter could not open the model ({e})"
    try:
        session_inputs = interp.getSessionInputAll(session)
    except Exception as e:
        return f"the Interpreter has no inputs for this model ({e})"
    resized = False
    for name, t in session_inputs.items():
        arr = feeds.get(name)
        if arr is None:
            raise RunnerError(protocol.BAD_MODEL, f"no value for model input '{name}'")
        if tuple(t.getShape()) != tuple(arr.shape):
            interp.resizeTensor(t, tuple(int(d) for d in arr.shape))
            resized = True
    if resized:
        _, text = capture_fd1(interp.resizeSession, session)
        log += text
    for name, t in session_inputs.items():
        t.copyFrom(_host_tensor(MNN, feeds[name], t.getDataType()))
    try:
        used = int(interp.getSessionInfo(session, 2))
        result["backend_used"] = "CPU" if used in _CPU_CODES else f"forward type {used}"
    except Exception:
        pass

    events = job.payload.get("op_events", True)

    def begin(tensors, op):
        try:
            if events:
                job.event("op_begin", {"name": op.getName(), "type": op.getType()})
        except Exception:
            pass  # an exception here would surface as SystemError from the run
        return not job.cancelled

    def end(tensors, op):
        try:
            if events:
                job.event("op_end", {"name": op.getName(), "type": op.getType()})
        except Exception:
            pass
        return not job.cancelled

    job.progress(0.1, "running the model (Interpreter)")
    try:
        rc, text = capture_fd1(interp.runSessionWithCallBackInfo, session, begin, end)
    except Exception as e:
        return f"the Interpreter failed ({e})"
    log += text
    job.check_cancel()
    if rc != 0:
        tail = " ".join(line for line in log.strip().splitlines()[-3:] if line)
        return f"the Interpreter returned error code {rc}" + (f" ({tail[:300]})" if tail else "")
    job.progress(0.6, "reading tensors")
    for i, name in enumerate(names):
        if i % 256 == 0:
            job.check_cancel()
        if name in feeds:  # the session may reuse an input's buffer once it is consumed: write what was fed
            writer.save(name, feeds[name], **meta(name))
            continue
        try:
            t = interp.getSessionOutput(session, name)
            host = MNN.Tensor(t, MNN.Tensor_DimensionType_Caffe)
            t.copyToHostTensor(host)
            arr = np.array(host.getNumpyData(), copy=True).reshape(tuple(t.getShape()))
        except Exception as e:
            result["problems"].append(f"{name}: not readable ({str(e).splitlines()[0][:200] if str(e) else type(e).__name__})")
            continue
        writer.save(name, arr, **meta(name))
    return None


def _module_run(job, MNN, path, input_names, names, feeds, config, writer, meta, result) -> None:
    F = MNN.expr
    outputs = [n for n in names if n not in input_names]
    try:
        rt = MNN.nn.create_runtime_manager((dict(config),))
        module, _ = capture_fd1(MNN.nn.load_module_from_file, path, input_names, outputs, runtime_manager=rt,
                                shape_mutable=True)
    except Exception as e:
        raise RunnerError(protocol.RUN_FAILED, f"{path}: MNN could not load the model as a Module ({e})")
    vars_in = []
    for name in input_names:
        arr = feeds[name]
        dtype = F.int if arr.dtype == np.int32 else (F.uint8 if arr.dtype == np.uint8 else F.float)
        vars_in.append(F.const(arr, list(arr.shape), F.NCHW, dtype))
    job.progress(0.1, "running the model (Module API)")
    # No per-op callbacks in the Module API: one op event for the whole forward, so a crash is placed there.
    job.event("op_begin", {"name": "(Module forward)", "type": "Module"})
    try:
        results, text = capture_fd1(module.forward, vars_in)
    except Exception as e:
        raise RunnerError(protocol.RUN_FAILED, f"{path}: the Module API run failed ({e})")
    job.event("op_end", {"name": "(Module forward)", "type": "Module"})
    results = results if isinstance(results, (list, tuple)) else [results]
    job.progress(0.6, "reading tensors")
    for name, arr in feeds.items():
        if name in input_names and name in names:
            writer.save(name, arr, **meta(name))
    for i, (name, var) in enumerate(zip(outputs, results)):
        if i % 256 == 0:
            job.check_cancel()
        try:
            arr, _ = capture_fd1(lambda v=var: np.array(F.convert(v, F.NCHW).read(), copy=True))
        except Exception as e:
            result["problems"].append(f"{name}: not readable ({str(e).splitlines()[0][:200] if str(e) else type(e).__name__})")
            continue
        writer.save(name, arr, **meta(name))


def _graph_outputs(table: list[dict]) -> list[str]:
    """Tensors no op consumes: the model's outputs as the Module API sees them."""
    used = {i for v in table for i in v["inputs"]}
    return [v["name"] for v in table if v["name"] not in used and v["op_type"] not in ("Input", "Const")]


# ----- ONNX Runtime -----------------------------------------------------------------------------------
_ORT_TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
              "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
              "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_, "tensor(int16)": np.int16}


def _all_outputs_model(path: str):
    """The ONNX model with every node output marked as a graph output.

    Returns (serialized model without its external data, {tensor: (node, op type)}, graph outputs,
    whether it has external data).
    """
    import onnx
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as e:
        raise RunnerError(protocol.BAD_MODEL, f"{path}: not a readable ONNX model ({str(e).splitlines()[0][:200]})")
    graph = model.graph
    producers = {}
    for node in graph.node:
        for o in node.output:
            if o:
                producers[o] = (node.name, node.op_type)
    original = [o.name for o in graph.output]
    existing = set(original)
    for name in producers:
        if name not in existing:
            graph.output.append(onnx.ValueInfoProto(name=name))
    external = any(t.data_location == onnx.TensorProto.EXTERNAL for t in graph.initializer)
    # Weights stay in their files: ORT resolves external data against the model's own folder (given
    # below), so nothing is copied and the model's own containment check still applies.
    return model.SerializeToString(), producers, original, external


def _dump_ort(job, path: str, inputs: dict, out_dir: str) -> dict:
    import onnxruntime as ort
    p = job.payload
    model, producers, graph_outputs, external = _all_outputs_model(path)
    so = ort.SessionOptions()
    if external:
        so.add_session_config_entry("session.model_external_initializers_file_folder_path",
                                    os.path.dirname(os.path.abspath(path)))
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = int(p.get("threads") or 1)
    so.log_severity_level = 3
    try:
        session = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    except Exception as e:
        raise RunnerError(protocol.BAD_MODEL, f"{path}: ONNX Runtime cannot load the model ({str(e).splitlines()[0][:300]})")
    feeds = {}
    for i in session.get_inputs():
        if i.name not in inputs:
            raise RunnerError(protocol.BAD_MODEL, f"no value for model input '{i.name}'")
        dt = _ORT_TYPES.get(i.type)
        feeds[i.name] = inputs[i.name].astype(dt) if dt is not None else inputs[i.name]
    wanted = p.get("tensors")
    names = [o.name for o in session.get_outputs() if wanted is None or o.name in set(wanted)]
    per_run = int(p.get("outputs_per_run") or 0) or len(names) or 1
    writer = _Writer(out_dir, str(p.get("file_prefix") or ""))
    result = {"engine": "onnxruntime", "version": ort.__version__, "api": "InferenceSession",
              "fallback_reason": None, "problems": [], "backend_requested": "CPU", "backend_used": "CPU",
              "precision": "fp32", "threads": so.intra_op_num_threads,
              "outputs": graph_outputs}
    for name, arr in inputs.items():
        if wanted is None or name in set(wanted):
            writer.save(name, np.asarray(feeds.get(name, arr)), producer=None, op_type="Input", inputs=[])
    for start in range(0, len(names), per_run):
        chunk = names[start:start + per_run]
        job.progress(start / max(len(names), 1), f"running ONNX Runtime ({len(chunk)} outputs)")
        try:
            values = session.run(chunk, feeds)
        except Exception as e:
            shapes = ", ".join(f"{k} {v.dtype}{list(v.shape)}" for k, v in feeds.items())
            raise RunnerError(protocol.RUN_FAILED, f"{path}: ONNX Runtime failed on inputs {shapes} "
                                                   f"({str(e).splitlines()[0][:300]}); if a dynamic dimension is "
                                                   f"wrong, set it with --shape NAME=DIMS")
        for name, value in zip(chunk, values):
            prod = producers.get(name, (None, None))
            arr = np.asarray(value)
            if arr.dtype == object:
                result["problems"].append(f"{name}: not a numeric tensor (skipped)")
                continue
            writer.save(name, arr, producer=prod[0], op_type=prod[1], inputs=[])
        del values
        job.check_cancel()
    return writer.finish(result)

