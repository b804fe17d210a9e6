"""Client side of profiling: options -> inputs file + runner request -> result in the run store.

The runner does the running (runner/profile.py documents the request and its result, runner/engine.py
the engines); this module picks
the engine, builds the inputs (inspector.inputs), talks to the runner, records the run, and writes
Chrome traces. Used by `mnnscope profile` and by the GUI, from a worker thread.
"""
from __future__ import annotations

import filecmp
import itertools
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from mnnscope.runner import protocol
from mnnscope.runner.protocol import RunnerError

from mnnscope.inspector.convert.service import convert_model
from mnnscope.inspector.convert.settings import ConvertSettings
from mnnscope.inspector.errors import ModelError, UsageError
from mnnscope.inspector.formats.loader import detect_format, load_model
from mnnscope.inspector.formats.registry import detect
from mnnscope.inspector.inputs.data import describe_inputs, inputs_from, make_inputs, save_inputs
from mnnscope.inspector.model.graph import ModelGraph
from mnnscope.inspector.model.titles import node_title
from mnnscope.inspector.process.client import EventHandler, RunnerClient, client_or_own
from mnnscope.inspector.profile.fromhere import cut_from
from mnnscope.inspector.store.runs import RunStore, open_run, record

# Setting names: the protocol's, the one definition the runner uses too.
MNN_BACKENDS = [*protocol.MNN_BACKENDS, protocol.BACKEND_AUTO]
PRECISIONS = list(protocol.PRECISIONS)
MEMORY_MODES = list(protocol.MEMORY_MODES)
SWEEP_AXES = {"threads": int, "precision": str, "memory": str, "backend": str}


@dataclass
class ProfileOptions:
    model: str
    engine: str | None = None          # protocol.ENGINES ("mnn" | "ort"); None: from the file type
    backend: str = protocol.DEFAULT_BACKEND
    precision: str = protocol.PRECISION_HIGH
    memory: str = protocol.MEMORY_NORMAL
    threads: int = 1
    runs: int = 10
    warmup: int = 2
    stats: bool = False
    save: str = "outputs"              # tensors saved as .npy in the run folder: outputs | all | none
    optimization: str = "all"          # ONNX Runtime graph optimization level
    seed: int = 0
    shapes: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)
    text: str | None = None
    tokenizer: str | None = None
    image: dict | None = None
    ranges: dict = field(default_factory=dict)  # {input: [low, high)} of random values (inputs.data.check_range)
    cache: bool = True                 # an .onnx profiled on MNN: reuse an identical conversion (convert/cache.py)
    # an .onnx profiled on MNN is converted with these settings (ConvertSettings.to_json(): the Convert dock's after
    # "Reconvert and re-run", or `--convert-settings FILE.json`); None: the converter's defaults
    convert_settings: dict | None = None
    # profile from here: the .onnx cut at this node (an id as the graph shows it), everything after it, fed with
    # what ONNX Runtime computes for the cut's inputs (profile/fromhere.py); None: the whole model
    from_node: str | None = None

    def input_spec(self) -> dict:
        """The inputs as inputs.data.make_inputs keywords (the run's settings record each of them)."""
        spec = {"seed": self.seed, "shapes": self.shapes, "files": self.files, "text": self.text,
                "tokenizer": self.tokenizer, "image": self.image}
        if self.ranges:
            spec["ranges"] = self.ranges
        return spec


# MNN backends that ONNX Runtime has no provider for: asked for on an .onnx, they mean MNN
MNN_ONLY_BACKENDS = ("OPENCL", "VULKAN", "METAL", "OPENGL", "HIAI", "NN", protocol.BACKEND_AUTO)


def engine_for(model: str, engine: str | None, backend: str | None = None) -> str:
    """The engine for a model file, from its format's adapter: .mnn -> MNN, .onnx -> ONNX Runtime (MNN on
    an .onnx converts it first), or MNN where `backend` is one only MNN has (`profile model.onnx --backend
    opencl` ran ONNX Runtime on the CPU, saying "openclExecutionProvider is not available"); a format no engine
    runs is refused by name."""
    adapter = detect(model)
    if not adapter.engines:
        hint = getattr(adapter, "run_hint", None)
        raise ModelError(f"{model}: {adapter.description or adapter.name} models cannot be run here (no engine for "
                         f"them){'; ' + hint if hint else ''}")
    mnn_only = (backend or "").upper() in MNN_ONLY_BACKENDS
    if engine is None:
        if mnn_only and protocol.ENGINE_MNN in adapter.engines:
            return protocol.ENGINE_MNN
        return adapter.engines[0]
    engine = protocol.engine_name(engine)
    if engine not in protocol.ENGINES:
        raise UsageError(f"--engine must be {' or '.join(protocol.ENGINES)}, not '{engine}'")
    if engine == protocol.ENGINE_ORT and mnn_only:
        raise UsageError(f"--backend {backend}: an MNN backend, which ONNX Runtime has no provider for; leave out "
                         "--engine ort to run MNN on it (the .onnx is converted first)")
    if engine == protocol.ENGINE_ORT and engine not in adapter.engines:
        raise UsageError(f"{model}: ONNX Runtime runs .onnx files; profile the .onnx model for the ORT side")
    if engine not in adapter.engines:
        raise UsageError(f"{model}: the {engine} engine does not run {adapter.description or adapter.name} models")
    return engine


def check_options(opts: ProfileOptions, engine: str) -> None:
    if opts.threads < 1 or opts.runs < 1 or opts.warmup < 0:
        raise UsageError("--threads and --runs must be at least 1, --warmup at least 0 (0 runs one untimed run all "
                         "the same: the first run of a session is never timed)")
    if opts.precision not in PRECISIONS:
        raise UsageError(f"--precision must be one of {', '.join(PRECISIONS)}")
    if opts.memory not in MEMORY_MODES:
        raise UsageError(f"--memory must be one of {', '.join(MEMORY_MODES)}")
    if engine == protocol.ENGINE_MNN and opts.backend.upper() not in MNN_BACKENDS:
        raise UsageError(f"--backend '{opts.backend}': MNN backends are {', '.join(MNN_BACKENDS)}")
    if opts.from_node and detect_format(opts.model) != "onnx":
        raise UsageError(f"--from {opts.from_node}: a profile from a node cuts the .onnx model; profile the .onnx "
                         "(on MNN it is converted after the cut)")
    if engine == protocol.ENGINE_ORT and (opts.precision != protocol.PRECISION_HIGH or
                                          opts.memory != protocol.MEMORY_NORMAL):
        raise UsageError("--precision and --memory are MNN settings; ONNX Runtime runs the .onnx model at fp32")


def mnn_model_for(opts: ProfileOptions, run_dir: Path, client: RunnerClient,
                  on_event: EventHandler | None = None) -> ProfileOptions:
    """Options whose model MNN can run: an .onnx is converted (opts.convert_settings) into the run folder."""
    return mnn_conversion_for(opts, run_dir, client, on_event)[0]


def mnn_conversion_for(opts: ProfileOptions, run_dir: Path, client: RunnerClient,
                       on_event: EventHandler | None = None):
    """(options whose model MNN can run, the ConvertResult or None): an .onnx is converted (opts.convert_settings,
    else the defaults) into the run folder; the result's node map says which ONNX nodes each MNN op came from."""
    if detect_format(opts.model) == "mnn":
        return opts, None
    target = run_dir / (Path(opts.model).stem + ".mnn")
    settings = ConvertSettings.from_json(opts.convert_settings) if opts.convert_settings else None
    conv = convert_model(opts.model, str(target), settings, client=client, on_event=on_event, cache=opts.cache)
    if not conv.ok:
        raise ModelError(conv.failure(opts.model))
    return replace(opts, model=conv.output), conv


NODE_MAP_FILE = "node_map.json"


def save_node_map(conv, run_dir: Path) -> str | None:
    """The conversion's ONNX<->MNN node map as JSON in the run folder (None without one): the profile's op
    times land on the ONNX nodes through it (inspector/profile/placement.py)."""
    if conv is None or getattr(conv, "node_map", None) is None:
        return None
    path = Path(run_dir) / NODE_MAP_FILE
    try:
        with open(path, "w") as f:
            json.dump(conv.node_map.to_json(), f, default=str)
    except OSError:
        return None
    return str(path)


def prepare_inputs(opts: ProfileOptions, run_dir: Path) -> tuple[str, list[dict], ModelGraph]:
    """Build the model's inputs from the options and save them in the run folder: (npz path, description, graph)."""
    graph = load_model(opts.model, native=False)
    inputs = make_inputs(graph, **opts.input_spec())
    return save_inputs(inputs, run_dir / "inputs.npz"), describe_inputs(inputs), graph


def tensor_names(graph: ModelGraph) -> dict[str, list[str]]:
    """{op name: output tensor names} of an .mnn graph: fused ops carry another tensor's name (MNN_NOTES)."""
    return graph.outputs_by_op_name()


def build_request(opts: ProfileOptions, engine: str, inputs_path: str, run_dir: Path,
                  graph: ModelGraph | None = None) -> dict:
    payload = {"path": os.path.abspath(opts.model), "engine": engine, "inputs": inputs_path, "backend": opts.backend,
               "precision": opts.precision, "memory": opts.memory, "threads": opts.threads, "runs": opts.runs,
               "warmup": max(1, opts.warmup), "stats": opts.stats, "save": opts.save, "run_dir": str(run_dir),
               "optimization": opts.optimization}
    if engine == protocol.ENGINE_MNN and opts.stats and graph is not None and graph.format == "mnn":
        payload["tensor_names"] = tensor_names(graph)
    return payload


def _settings(opts: ProfileOptions, engine: str) -> dict:
    return {"engine": engine, "backend": opts.backend, "precision": opts.precision, "memory": opts.memory,
            "threads": opts.threads, "runs": opts.runs, "warmup": opts.warmup, "stats": opts.stats,
            "seed": opts.seed, "shapes": opts.shapes, "files": opts.files, "text": opts.text,
            "tokenizer": opts.tokenizer, "image": opts.image, "optimization": opts.optimization,
            **({"ranges": opts.ranges} if opts.ranges else {}),
            **({"convert_settings": opts.convert_settings} if opts.convert_settings else {}),
            **({"from_node": opts.from_node} if opts.from_node else {})}


def _conversion_facts(conv) -> dict:
    """Where the wait went before the run: `convert_s` (seconds the converter ran; 0 when the conversion cache
    served it) and the conversion's cache state."""
    return {"convert_s": round(conv.convert_s or 0.0, 3),
            "conversion": {"seconds": round(conv.seconds, 3), "cache": conv.cache}}


def _summary(result: dict) -> dict:
    """What a history list shows without opening the ops: everything but the per-op/per-node tables."""
    return {k: v for k, v in result.items() if k not in ("ops", "nodes")}


def run_profile(opts: ProfileOptions, *, client: RunnerClient | None = None, store: RunStore | None = None,
                on_event: EventHandler | None = None) -> dict:
    """Profile one model; returns the runner's result plus `run_id` and `run_dir`.

    The run is recorded even when it fails (then the RunnerError is raised); a store that cannot record
    it costs the record, not the result: `run_id` is None and `warnings` says why (store.runs.record).
    """
    engine = engine_for(opts.model, opts.engine, opts.backend)
    check_options(opts, engine)
    # a statistics pass is recorded as its own kind: its run times include reading every tensor back (tryouts 10
    # and 11 read a Statistics run listed as a "profile", 1.38x slower than the profile it was diffed with)
    kind = "stats" if opts.stats else "profile"
    store, run_dir, store_warnings = open_run(store, kind)
    inputs_path, described, graph = prepare_inputs(opts, run_dir)
    run = dict(kind=kind, model_path=opts.model, settings=_settings(opts, engine), inputs=described,
               run_dir=run_dir)
    with client_or_own(client) as client:
        try:
            converted = None
            node_map_path = None
            cut = None
            src = opts
            if opts.from_node:
                cut = cut_from(opts.model, opts.from_node, inputs_path, run_dir, client, on_event)
                src, inputs_path = replace(opts, model=cut.path, from_node=None), cut.inputs
                graph = load_model(cut.path, native=False)
            onnx_graph = graph if graph.format == "onnx" else None
            if engine == protocol.ENGINE_MNN and graph.format == "onnx":
                run_opts, conv = mnn_conversion_for(src, run_dir, client, on_event)
                converted = run_opts.model
                node_map_path = save_node_map(conv, run_dir)
                graph = load_model(converted, native=False)
            else:
                run_opts = src
            payload = build_request(run_opts, engine, inputs_path, run_dir, graph)
            result = client.request("profile", payload, on_event=on_event)
            if engine == protocol.ENGINE_MNN and graph.format == "mnn":
                file_types(result.get("ops") or [], graph)
            if cut is not None:
                result["from_node"] = dict(cut.to_json(), model=os.path.abspath(opts.model))
                result.setdefault("warnings", []).insert(0, cut.note())
            if converted:
                result["converted_from"] = os.path.abspath(opts.model)
                result.update(_conversion_facts(conv))
                if node_map_path:
                    result["node_map_path"] = node_map_path
                how = ConvertSettings.describe_json(opts.convert_settings)
                result["converted_with"] = how or ""  # what differs from the converter's defaults, in words
                # a file of that name beside the .onnx is not what ran (a new user read "profiled
                # PP-OCRv6_det_small.mnn ... weight_quant_bits=8" with the default conversion of that name beside it),
                # and the run folder's copy is named after the .onnx, so the conversion is named by what it was made
                # from (another looked for "decoder.mnn" beside decoder.onnx; their own was decoder.int8w.mnn)
                beside = os.path.join(os.path.dirname(os.path.abspath(opts.model)), os.path.basename(converted))
                other = os.path.isfile(beside) and os.path.abspath(beside) != os.path.abspath(converted)
                # the converter writes the same bytes for the same settings: a file beside that is those bytes is
                # what ran (a new user read "not the encoder_block.mnn beside it" right after converting it so)
                same = other and filecmp.cmp(beside, converted, shallow=False)
                name = os.path.basename(converted)
                result.setdefault("warnings", []).append(
                    f"profiled a fresh conversion of {os.path.basename(opts.model)} with "
                    + (f"the given settings ({how})" if how else "default settings")
                    + (f", the same bytes as the {name} beside it" if same else
                       f", not the {name} beside it" if other else "")
                    + f" (kept at {converted})")
                rnn = _rnn_advice(onnx_graph, opts.convert_settings) if result.get("timing") == "total_only" else None
                if rnn:
                    result["warnings"].append(rnn)
        except RunnerError as e:
            if store is not None:
                record(store, **run, backend_requested=opts.backend.upper(), precision=opts.precision,
                       summary={"error": {"kind": e.kind, "message": e.message}})
            raise
    warnings = result.setdefault("warnings", [])
    warnings.extend(store_warnings)
    result["run_id"], problem = record(store, **run, backend_requested=result.get("backend_requested"),
                                       backend_used=result.get("backend_used"),
                                       precision=result.get("precision_effective"), summary=_summary(result),
                                       ops=result.get("ops") or []) if store is not None else (None, None)
    if problem:
        warnings.append(problem)
    result["run_dir"] = str(run_dir)
    result["inputs_from"] = inputs_from(opts.input_spec())
    return result


def file_types(ops: list[dict], graph: ModelGraph) -> None:
    """Each timed op typed as the .mnn file types it, where MNN's run time names it otherwise (its runtime type kept
    in `runtime_type`): MNN's geometry runs GatherV2, MatMul and some BinaryOps as its loop kernel and reports them
    as "While", which a new-user try read as a While loop in a model without one ("/emb/Gather_output_0 While").
    MNN's generic ops by their operation, as the graph titles them (helper 113 read "UnaryOp" in the Profile dock
    beside "GELU" on the graph)."""
    by_name: dict[str, str] = {}
    for nid, d in graph.g.nodes(data=True):
        for key in (d.get("name") or nid, *d.get("outputs", [])):
            if key:
                by_name.setdefault(key, node_title(d["op_type"], d.get("attrs") or {}))
    for op in ops:
        t = by_name.get(str(op.get("name") or ""))
        if t and op.get("type") and t != op["type"]:
            op["runtime_type"], op["type"] = op["type"], t


RNN_OPS = ("LSTM", "GRU", "RNN")


def _rnn_advice(onnx_graph, convert_settings: dict | None) -> str | None:
    """Why an MNN profile of a converted .onnx with recurrent ops has whole-run times only, and the setting that
    gives per-op times: the converter turns each LSTM/GRU into a While loop by default, which the Interpreter cannot
    size (error code 3) and the Module API runs whole. Measured on arabic-name-romanizer's BiGRU encoder (MNN 3.6.1,
    tryout 14): default, 1.2 ms and no op times; with --useOriginRNNImpl, the two GRUs 0.65 ms each, 97% of the run."""
    if onnx_graph is None or (ConvertSettings.from_json(convert_settings).origin_rnn if convert_settings else False):
        return None
    kinds: dict[str, int] = {}
    for _, d in onnx_graph.g.nodes(data=True):
        if d.get("op_type") in RNN_OPS:
            kinds[d["op_type"]] = kinds.get(d["op_type"], 0) + 1
    if not kinds:
        return None
    what = ", ".join(f"{n} {k}" for k, n in kinds.items())
    return (f"the converter turned the model's recurrent ops ({what}) into While loops, which MNN times only as a "
            "whole; converting with 'keep LSTM/GRU ops' (the Convert dock; on the command line \"origin_rnn\": true in "
            "--convert-settings, or mnnscope convert --origin-rnn) keeps each as one op with its own time (its weights "
            "then stay float32 under weight quantization)")


# ----- sweeps -------------------------------------------------------------------------------------------
def parse_sweep(values: list[str] | None) -> list[dict]:
    """["threads=1,2", "precision=high,low"] -> the cells of their product, in the order given."""
    axes: list[tuple[str, list]] = []
    for value in values or []:
        name, sep, items = value.partition("=")
        name = name.strip().lower()
        if not sep or name not in SWEEP_AXES or not items.strip():
            raise UsageError(f"--sweep '{value}': expected AXIS=V1,V2 with AXIS one of {', '.join(SWEEP_AXES)}")
        if name in dict(axes):
            raise UsageError(f"--sweep: axis '{name}' given twice")
        try:
            vals = [SWEEP_AXES[name](v.strip()) for v in items.split(",") if v.strip()]
        except ValueError:
            raise UsageError(f"--sweep '{value}': {name} values must be integers")
        if name == "threads" and any(v < 1 for v in vals):
            raise UsageError("--sweep: threads must be at least 1")
        if name == "precision" and any(v not in PRECISIONS for v in vals):
            raise UsageError(f"--sweep: precision values are {', '.join(PRECISIONS)}")
        if name == "memory" and any(v not in MEMORY_MODES for v in vals):
            raise UsageError(f"--sweep: memory values are {', '.join(MEMORY_MODES)}")
        if name == "backend":
            vals = [v.upper() for v in vals]
        axes.append((name, vals))
    if not axes:
        raise UsageError("--sweep needs at least one AXIS=V1,V2")
    names = [a for a, _ in axes]
    return [dict(zip(names, combo)) for combo in itertools.product(*(v for _, v in axes))]


def run_sweep(opts: ProfileOptions, cells: list[dict], *, client: RunnerClient | None = None,
              store: RunStore | None = None, on_event: EventHandler | None = None) -> dict:
    """Time every cell (median of opts.runs plain runs each); returns {cells, ..., run_id}."""
    engine = engine_for(opts.model, opts.engine, opts.backend)
    check_options(opts, engine)
    if engine == protocol.ENGINE_ORT and any(k in ("precision", "memory") for c in cells for k in c):
        raise UsageError("--sweep precision/memory are MNN settings; ONNX Runtime sweeps threads and backend only")
    if engine == protocol.ENGINE_MNN:
        for c in cells:
            if c.get("backend", protocol.DEFAULT_BACKEND).upper() not in MNN_BACKENDS:
                raise UsageError(f"--sweep backend '{c['backend']}': MNN backends are {', '.join(MNN_BACKENDS)}")
    store, run_dir, store_warnings = open_run(store, "sweep")
    inputs_path, described, _ = prepare_inputs(opts, run_dir)
    with client_or_own(client) as client:
        run_opts, conv = mnn_conversion_for(opts, run_dir, client, on_event) if engine == protocol.ENGINE_MNN \
            else (opts, None)
        payload = build_request(run_opts, engine, inputs_path, run_dir)
        payload.update(cells=cells, save="none", stats=False)
        result = client.request("sweep", payload, on_event=on_event)
        if conv is not None:
            result.update(_conversion_facts(conv))
    problems = list(store_warnings)
    result["run_id"], problem = record(store, kind="sweep", model_path=opts.model,
                                       settings=dict(_settings(opts, engine), cells=cells),
                                       backend_requested=opts.backend.upper(), inputs=described, summary=result,
                                       run_dir=run_dir) if store is not None else (None, None)
    if problem:
        problems.append(problem)
    if problems:
        result.setdefault("warnings", []).extend(problems)
    return result


# ----- Chrome trace ------------------------------------------------------------------------------------
def chrome_trace(result: dict) -> dict:
    """A Chrome trace-event object (Perfetto and chrome://tracing open it): one complete ("X") event per op,
    laid end to end at its median time, µs; cat = op type. Without per-op times, one event for the run."""
    name = Path(result.get("path") or "model").name
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 1,
               "args": {"name": f"{name} ({result.get('engine')}, {result.get('backend_used')})"}},
              {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "ops (median of timed runs)"}}]
    ts = 0.0
    timed = [op for op in result.get("ops") or [] if op.get("ms") is not None]
    if timed:
        for op in timed:
            dur = float(op["ms"]) * 1000.0
            events.append({"ph": "X", "name": op["name"], "cat": op.get("type") or "op", "pid": 1, "tid": 1,
                           "ts": round(ts, 3), "dur": round(dur, 3),
                           "args": {k: op.get(k) for k in ("index", "flops", "ms_min", "ms_max")
                                    if op.get(k) is not None}})
            ts += dur
    elif result.get("total_ms") is not None:
        events.append({"ph": "X", "name": "whole run", "cat": result.get("api") or "run", "pid": 1, "tid": 1,
                       "ts": 0.0, "dur": round(float(result["total_ms"]) * 1000.0, 3),
                       "args": {"note": result.get("timing_unavailable")}})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {k: result.get(k) for k in ("engine", "backend_requested", "backend_used",
                                                     "precision_effective", "threads", "runs", "total_ms", "run_id")}}


def write_trace(result: dict, path: str | os.PathLike) -> str:
    try:
        with open(path, "w") as f:
            json.dump(chrome_trace(result), f, allow_nan=False, default=str)
    except OSError as e:
        raise UsageError(f"--trace {path}: cannot write the file ({e.strerror})")
    return str(path)
