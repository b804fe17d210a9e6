"""Compare without ONNX: one .mnn against another, or one .mnn under two runtime configurations.

- `compare_mnn_pair(A, B)`: two .mnn files of the same network (fp32 and its weight-quantized or int8 version,
  two conversions with other settings). Both run in the runner (the dump job, engine mnn, every tensor read
  back) on the same inputs, made from A's inputs as the .mnn profile path makes them. B's tensors are matched
  to A's by name and structure with match.match_tensors (A's graph takes the reference's place; where B fused
  differently, A's unmatched ops form the regions of metrics.compare_mode, as ONNX ops fused into one MNN op
  do in the ONNX comparison). Side A is the `reference`, B the one entry of `modes` (named after B's file
  stem, "B" when both stems are equal).
- `compare_configs(MODEL, configs)`: one .mnn under several runtime configurations (backend, precision,
  memory, threads): the first is side A, one `modes` entry per other one, tensors matched by identity. A
  backend the runner's MNN does not load is refused before anything runs (BackendUnavailable, exit 1), and
  a run whose backend_used is not the one asked for is refused too: never CPU against CPU under another
  name. Bit-identical results are reported as "no effect" (modes._effect).

Both add per-op time deltas (`op_time_delta`, B minus A per op name, the one that grew most first) from a
short profile run of each side (`time_runs` timed runs; 0: none), and the totals and session memory in `time`.
The JSON is the ONNX comparison's: `reference` ({"kind": "mnn", "model", ...}), `modes`, `ok`, `fix` (None),
`inputs`, `run_id`; `kind` says which of the two it was ("mnn_pair" or "mnn_configs").
"""
from __future__ import annotations

import copy
import itertools
import os
import shutil
import time
from dataclasses import dataclass, replace

import numpy as np

from mnnscope.runner import protocol
from mnnscope.runner.protocol import RunnerError

from mnnscope.inspector.compare.match import LAYOUT_OPS, effective_type, match_tensors
from mnnscope.inspector.compare.metrics import compare_mode
from mnnscope.inspector.compare.modes import _effect, _groups, dump_in_parts, stored_weights
from mnnscope.inspector.compare.options import DEFAULT_TIME_RUNS, DUMP_TIMEOUT, CompareOptions
from mnnscope.inspector.compare.tolerance import DEFAULT_TOLERANCES, Tolerance
from mnnscope.inspector.compare.verdict import judge
from mnnscope.inspector.errors import ModelError, UsageError
from mnnscope.inspector.formats.loader import detect_format, load_model
from mnnscope.inspector.formats.mnn import load_mnn
from mnnscope.inspector.inputs.data import describe_inputs, inputs_from, load_inputs, make_inputs, save_inputs
from mnnscope.inspector.model.graph import ModelGraph, TensorInfo
from mnnscope.inspector.process.client import EventHandler, RunnerClient, client_or_own, work_folder
from mnnscope.inspector.store.runs import RunStore, record

PROFILE_TIMEOUT = 1800.0
STATIC_OPS = ("Const", "Shape", "Rank", "Size")  # MNN ops whose outputs are fixed once the input shapes are
MEMORY_BUDGET_MB = CompareOptions().memory_budget_mb  # kept tensors a runner holds at once, as compare's default


class BackendUnavailable(ModelError):
    """A configuration asks for a backend the runner's MNN does not load (or a run did not use it): exit 1."""


@dataclass(frozen=True)
class RunConfig:
    """One runtime configuration of an MNN session."""

    backend: str = protocol.DEFAULT_BACKEND
    precision: str = protocol.PRECISION_HIGH
    memory: str = protocol.MEMORY_NORMAL
    threads: int = 1

    @property
    def name(self) -> str:
        return f"{self.backend.lower()}/{self.precision}/{self.memory}/{self.threads}t"

    def to_json(self) -> dict:
        return {"backend": self.backend, "precision": self.precision, "memory": self.memory, "threads": self.threads}

    def differs(self, other: "RunConfig") -> str:
        """What this configuration changes against `other`, in words ("precision low, threads 4")."""
        parts = [f"{k} {v}" for k, v in self.to_json().items() if v != other.to_json()[k]]
        return ", ".join(parts) or "nothing"


def _split(spec: str | None) -> list[str]:
    return [v.strip() for v in (spec or "").split(",") if v.strip()]


def parse_configs(backends: str | None = None, precisions: str | None = None, memory: str | None = None,
                  threads_list: str | None = None, threads: int = 1) -> list[RunConfig]:
    """The configurations of `--backends/--precisions/--memory/--threads-list` (comma lists), every combination
    in the order given; the first is side A. UsageError for unknown values or fewer than two configurations."""
    bs = [b.upper() for b in _split(backends)] or [protocol.DEFAULT_BACKEND]
    unknown = [b for b in bs if b not in protocol.MNN_BACKENDS]
    if unknown:
        raise UsageError(f"--backends: unknown backend(s) {', '.join(unknown)}: MNN backends are "
                         f"{', '.join(protocol.MNN_BACKENDS)}")
    ps = [p.lower() for p in _split(precisions)] or [protocol.PRECISION_HIGH]
    if any(p not in protocol.PRECISIONS for p in ps):
        raise UsageError(f"--precisions: values are {', '.join(protocol.PRECISIONS)}")
    ms = [m.lower() for m in _split(memory)] or [protocol.MEMORY_NORMAL]
    if any(m not in protocol.MEMORY_MODES for m in ms):
        raise UsageError(f"--memory: values are {', '.join(protocol.MEMORY_MODES)}")
    try:
        ts = [int(t) for t in _split(threads_list)] or [threads]
    except ValueError:
        raise UsageError("--threads-list: thread counts are integers")
    if any(t < 1 for t in ts):
        raise UsageError("--threads-list: thread counts must be at least 1")
    configs = list(dict.fromkeys(RunConfig(b, p, m, t) for b, p, m, t in itertools.product(bs, ps, ms, ts)))
    if len(configs) < 2:
        raise UsageError("nothing to compare: give at least two values to --backends, --precisions, --memory "
                         "or --threads-list")
    return configs


def check_backends(configs: list[RunConfig], client: RunnerClient) -> list[str]:
    """The backends the runner's MNN really loads; BackendUnavailable naming the first requested one it does not."""
    facts = client.hello()
    available = [str(b).upper() for b in facts.get("backends") or []]
    for c in configs:
        if c.backend not in available:
            raise BackendUnavailable(
                f"backend {c.backend} is not available in this runner's MNN {facts.get('mnn') or '(version unknown)'}"
                f" (runner {facts.get('python')}); available: {', '.join(available) or 'none'}")
    return available


def tolerance_for(config: RunConfig, given: Tolerance | dict | None) -> Tolerance:
    """The given tolerance, else the precision mode's default (low, bf16), else fp32's; a dict gives one part of it
    ({"atol": x}), the other part the default's."""
    if isinstance(given, Tolerance):
        return given
    mode = _precision_mode(config)
    return replace(DEFAULT_TOLERANCES[mode], **given) if given else DEFAULT_TOLERANCES[mode]


def _precision_mode(config: RunConfig) -> str:
    """The compare mode whose default tolerance a run at `config`'s precision is held to."""
    return {protocol.PRECISION_LOW: "low", protocol.PRECISION_LOW_BF16: "bf16"}.get(config.precision, "fp32")


def pair_tolerance(config: RunConfig, given: Tolerance | dict | None, weights: list[str | None]) -> \
        tuple[Tolerance, str | None]:
    """The tolerance two .mnn files are judged with, and the weight mode it is the default of (None: the run's
    precision's). Two versions of one network whose weights are quantized differ by that quantization: judged by the
    loosest default of the modes their weights match (stored_weights), as compare judges each mode against ONNX
    Runtime. Two int8 conversions of PP-OCRv6 rec (per channel and in blocks of 32) read "FAIL (max abs error <= 1e-05
    + 0.0001 x max|reference|)" at rel L2 0.004 under fp32's (helper 120). A given tolerance is kept."""
    if isinstance(given, Tolerance):
        return given, None
    base, name = tolerance_for(config, None), None
    for w in weights:
        t = DEFAULT_TOLERANCES.get(w) if w else None
        if t is not None and (t.rtol, t.atol) > (base.rtol, base.atol):
            base, name = t, w
    return (replace(base, **given) if given else base), name


class _Pair:
    """What one comparison shares: the runner, the inputs, A's run."""

    def __init__(self, client: RunnerClient, inputs_npz: str, work: str, on_event, time_runs: int,
                 memory_budget_mb: float = MEMORY_BUDGET_MB):
        self.client, self.inputs_npz, self.work, self.on_event = client, inputs_npz, work, on_event
        self.time_runs, self.memory_budget_mb = time_runs, memory_budget_mb

    def emit(self, message: str) -> None:
        if self.on_event is not None:
            self.on_event("progress", {"fraction": None, "message": message})

    def _forward(self, kind, body) -> None:
        if self.on_event is not None and kind in ("progress", "log"):
            self.on_event(kind, body)

    def dump(self, model: str, graph: ModelGraph | None, config: RunConfig, out_dir: str,
             sizes: dict[str, int] | None = None) -> dict:
        """One MNN run that writes every tensor; refused when MNN ran it on another backend than asked. Several
        runs over parts of the tensors when `sizes` (bytes per tensor) add up to more than the memory budget (the
        runner holds every kept tensor at once), as the ONNX comparison does (modes._Session.dump)."""
        if os.path.isdir(out_dir):
            shutil.rmtree(out_dir)
        payload = {"engine": protocol.ENGINE_MNN, "model": model, "inputs": self.inputs_npz, "out_dir": out_dir,
                   **config.to_json()}
        if graph is not None:  # op names for the manifest (the runner only sees tensor names)
            payload["producers"] = {t: graph.g.nodes[nid].get("name") for t, nid in graph.producers().items()}
        groups = _groups(sizes or {}, int(self.memory_budget_mb * (1 << 20)))
        if len(groups) <= 1:
            result = self.client.request("dump_tensors", payload, on_event=self._forward, timeout=DUMP_TIMEOUT)
        else:
            result = dump_in_parts(self.client, payload, groups, self.emit, self._forward,
                                   check=lambda part: check_used(config, part.get("backend_used")))
        check_used(config, result.get("backend_used"))
        return result

    def times(self, model: str, config: RunConfig) -> dict | None:
        """A short profile run (per-op medians, total, session memory); None when not asked, {"error"} when it failed."""
        if self.time_runs < 1:
            return None
        payload = {"path": model, "engine": protocol.ENGINE_MNN, "inputs": self.inputs_npz, **config.to_json(),
                   "runs": self.time_runs, "warmup": 1, "stats": False, "save": "none", "check_precision": False,
                   "plain": False}
        try:
            result = self.client.request("profile", payload, on_event=self._forward, timeout=PROFILE_TIMEOUT)
        except RunnerError as e:
            return {"error": e.message}
        check_used(config, result.get("backend_used"))
        return result


def tensor_sizes(graph: ModelGraph, known: dict[str, int] | None = None) -> dict[str, int]:
    """Bytes of every tensor an op of `graph` writes, from its shapes (MNN computes them when the model is loaded
    with a runner); unknown ones from `known` (the other side's, by name), else their median, else 0."""
    known = dict(known or {})
    median = int(np.median(list(known.values()))) if known else 0
    out = {}
    for _nid, data in graph.g.nodes(data=True):
        for t in data["outputs"]:
            if not t:
                continue
            info = graph.tensors.get(t)
            shape = info.shape if info is not None else None
            if shape is not None and all(isinstance(d, int) and d >= 0 for d in shape):
                try:
                    item = np.dtype(info.dtype or "float32").itemsize
                except TypeError:
                    item = 4
                out[t] = int(np.prod(shape, dtype=np.int64)) * item
            else:
                out[t] = known.get(t, median)
    return out


def check_used(config: RunConfig, used) -> None:
    """Never CPU against CPU under another name: a run that did not use the backend asked for is refused."""
    if used and str(used).upper() != config.backend:
        raise BackendUnavailable(f"backend {config.backend} was asked for, but MNN ran the model on {used}: "
                                 f"no comparison of {config.backend} is possible in this runner")


def op_time_delta(a: dict | None, b: dict | None) -> list[dict]:
    """Per-op time change B - A (median ms per op name; names only one side has count 0 on the other), the op that
    grew most first."""
    if not a or not b or a.get("error") or b.get("error"):
        return []

    def per_op(r):
        out: dict[str, dict] = {}
        for op in r.get("ops") or []:
            if op.get("ms") is None:
                continue
            e = out.setdefault(op["name"], {"type": op.get("type"), "ms": 0.0})
            e["ms"] += float(op["ms"])
        return out

    pa, pb = per_op(a), per_op(b)
    rows = []
    for name in list(pa) + [n for n in pb if n not in pa]:
        ea, eb = pa.get(name), pb.get(name)
        a_ms, b_ms = (ea or {}).get("ms"), (eb or {}).get("ms")
        delta = (b_ms or 0.0) - (a_ms or 0.0)
        rows.append({"op": name, "type": (ea or eb)["type"], "a_ms": a_ms, "b_ms": b_ms, "delta_ms": round(delta, 6),
                     "ratio": (b_ms / a_ms) if a_ms and b_ms is not None else None,
                     "only_in": None if ea and eb else ("A" if ea else "B")})
    rows.sort(key=lambda r: -r["delta_ms"])
    return rows


def time_summary(a: dict | None, b: dict | None) -> dict | None:
    """{a_ms, b_ms, ratio, a_range_ms, b_range_ms, within_noise, a_memory_mb, b_memory_mb, memory_delta_mb, timing}
    of the two profile runs (`within_noise`: the min..max of their timed runs overlap; None when unknown)."""
    if a is None or b is None:
        return None
    if a.get("error") or b.get("error"):
        return {"error": a.get("error") or b.get("error")}
    a_ms, b_ms = a.get("total_ms"), b.get("total_ms")
    am, bm = a.get("memory_mb"), b.get("memory_mb")
    # the two sides' timed runs overlap (min..max): the difference of the medians is within run-to-run noise (tryout
    # 11 read 'A 74.4 ms -> B 53.5 ms (0.72x)' for one file against itself, and 'precision low' as slower)
    ranges = [(r.get("total_ms_min"), r.get("total_ms_max")) for r in (a, b)]
    noise = None
    if all(isinstance(v, (int, float)) for r in ranges for v in r):
        noise = ranges[0][0] <= ranges[1][1] and ranges[1][0] <= ranges[0][1]
    return {"a_ms": a_ms, "b_ms": b_ms, "ratio": (b_ms / a_ms) if a_ms and b_ms is not None else None,
            "a_range_ms": list(ranges[0]), "b_range_ms": list(ranges[1]), "within_noise": noise,
            "a_memory_mb": am, "b_memory_mb": bm,
            "memory_delta_mb": (bm - am) if am is not None and bm is not None else None,
            "timing": b.get("timing"), "runs": b.get("runs")}


def _headlines(row: dict) -> None:
    """A region's headline is its first op that computes something: MNN's layout ops (ConvertTensor, Reshape...)
    only carry values, as the ONNX comparison's Identity nodes do."""
    for entry in [row.get("first_divergence")] + list(row.get("sources") or []) + list(row.get("ranking") or []) \
            + list(row.get("harmless") or []):
        if not entry or not entry.get("region"):
            continue
        first = next((n for n in entry["region"] if n.get("op_type") not in LAYOUT_OPS), None)
        if first is not None:
            entry["onnx_node"], entry["op_type"] = first["name"], first["op_type"]


def _reword(row: dict) -> None:
    """The verdict's words name ONNX Runtime and ONNX nodes; here the reference is side A, an .mnn."""
    if isinstance(row.get("cause"), str):  # neither side is the exact one: B differs, it does not "lose accuracy"
        row["cause"] = row["cause"].replace("ONNX Runtime", "side A").replace("ONNX node", "op") \
            .replace(" loses accuracy under ", " differs in ")
    for u in row.get("unmatched") or []:
        if str(u.get("reason") or "").startswith("no MNN tensor of this name"):
            u["reason"] = "B has no tensor of this name (its conversion fused, removed or renamed the op)"


def _row(name: str, description: str, model: str, config: RunConfig, tol: Tolerance) -> dict:
    return {"mode": name, "description": description, "mnn_model": model, "precision": config.precision,
            "memory": config.memory, "config": config.to_json(), "ok": False, "error": None, "effect": None,
            "tolerance": tol.to_json(), "outputs": [], "first_divergence": None, "sources": [], "harmless": [],
            "ranking": [], "tensors": [], "unmatched": [], "conversion": None, "convert_s": 0.0,
            "op_time_delta": [], "time": None}


def _measure(p: _Pair, row: dict, graph_a: ModelGraph, dump_a: dict, a_dir: str, model_b: str,
             graph_b: ModelGraph | None, config_b: RunConfig, tol: Tolerance, outputs: list[str], b_dir: str,
             sizes: dict[str, int] | None = None) -> dict:
    try:
        dump_b = p.dump(model_b, graph_b, config_b, b_dir, sizes)
    except RunnerError as e:
        row["error"] = e.message
        row.update(judge(row, graph_a))
        _reword(row)
        return row
    row["run"] = {k: dump_b.get(k) for k in ("api", "fallback_reason", "seconds", "backend_requested",
                                              "backend_used", "problems")}
    row["run"]["parts"] = dump_b.get("parts", 1)
    # B seen as A is (reference_view): its constants and shape arithmetic are no ops to walk through, or the same file
    # compared with itself found 226 LSTM tensors "computed by different ops" (A's walk stopped where B's went on
    # into the loop's index arithmetic; tryout 11)
    match = match_tensors(graph_a, reference_view(graph_b) if graph_b is not None else None, dump_b["manifest"],
                          dump_a["manifest"], None)
    row.update(compare_mode(graph_a, match, a_dir, dump_a["manifest"], b_dir, dump_b["manifest"], tol, outputs))
    row["ok"] = row["summary"]["outputs_within"]
    _headlines(row)
    row["dump"] = {"dir": b_dir, "manifest": dump_b["manifest"], "outputs": dump_b.get("outputs") or []}
    return row


def _prepare(model_a: str, inputs: dict | None, client: RunnerClient, work: str) -> tuple[ModelGraph, str]:
    spec = dict(inputs or {"seed": 0})
    graph = load_model(model_a, client=client, input_shapes=spec.get("shapes") or None)
    inputs_npz = save_inputs(make_inputs(graph, **spec), os.path.join(work, "inputs.npz"))
    return reference_view(graph), inputs_npz


def reference_view(graph: ModelGraph) -> ModelGraph:
    """An .mnn graph as the reference side of a comparison: the tensors of constants and of shape computations
    (Const, Shape, Rank, Size and what is computed from them alone) count as initializers, as an ONNX model's
    weights do, so a region of ops a fusion hides is the data ops between measured tensors, never the shape
    arithmetic of a Reshape beside them; their ops leave the view (as an ONNX model's initializers are no nodes).
    Op types are the effective ones (a UnaryOp's GELU, a BinaryOp's ADD), so results name what an op computes.
    The file's graph is not changed (the view has its own networkx graph and tensor table)."""
    view = copy.copy(graph)
    view.tensors = dict(graph.tensors)
    static: set[str] = set()
    static_ops = []
    for nid in graph.topological_order():
        data = graph.g.nodes[nid]
        ins = [i for i in data["inputs"] if i]
        if data["op_type"] in STATIC_OPS or (ins and all(i in static for i in ins)):
            static.update(t for t in data["outputs"] if t)
            static_ops.append(nid)
    view.g = graph.g.copy()  # node data dicts copied: the view's op types below stay in the view
    view.g.remove_nodes_from(static_ops)
    for _nid, data in view.g.nodes(data=True):
        data["op_type"] = effective_type(data)  # UnaryOp -> GELU, BinaryOp -> ADD...: what the results name
    for t in static:
        info = view.tensors.get(t)
        view.tensors[t] = replace(info, is_initializer=True) if info is not None else TensorInfo(t, is_initializer=True)
    return view


def _check_mnn(path: str) -> None:
    if not os.path.isfile(path):
        raise ModelError(f"{path}: no such file")
    if detect_format(path) != "mnn":
        raise UsageError(f"{path}: not an .mnn model (compare A.mnn B.mnn compares two .mnn files)")


def _finish(result: dict, graph_a: ModelGraph, inputs_npz: str, model: str, settings: dict,
            store: RunStore | None, keep: bool, start: float) -> dict:
    result["inputs"] = describe_inputs(load_inputs(inputs_npz))
    # where the inputs came from, as a comparison with ONNX Runtime says it (the dock's status names random ones)
    result["inputs_from"] = inputs_from(settings.get("input_spec") or {"seed": 0})
    for m in result["modes"]:
        m.pop("dump", None)
    result["ok"] = all(m.get("ok") for m in result["modes"])
    result["seconds"] = time.monotonic() - start
    if not keep:
        result["work_dir"] = None
    summary = dict(result, modes=[{k: v for k, v in m.items() if k != "tensors"} for m in result["modes"]])
    result["run_id"], problem = record(store, kind="compare", model_path=model, settings=settings, summary=summary,
                                       run_dir=result.get("work_dir"))
    warnings = list(graph_a.warnings) + ([problem] if problem else [])
    if warnings:
        result["warnings"] = warnings
    return result


def _reference(model: str, config: RunConfig, dump: dict, times: dict | None) -> dict:
    return {"kind": "mnn", "model": os.path.abspath(model), "runtime": "mnn", "version": dump.get("version"),
            **config.to_json(), "backend_used": dump.get("backend_used"), "api": dump.get("api"),
            "tensors": len(dump["manifest"]), "seconds": dump.get("seconds"), "outputs": dump.get("outputs"),
            "problems": dump.get("problems", []), "parts": dump.get("parts", 1),
            "total_ms": (times or {}).get("total_ms"), "memory_mb": (times or {}).get("memory_mb")}


def compare_mnn_pair(model_a: str, model_b: str, *, tolerance: Tolerance | None = None, threads: int = 1,
                     inputs: dict | None = None, client: RunnerClient | None = None, store: RunStore | None = None,
                     work_dir: str | None = None, keep: bool = False, time_runs: int = DEFAULT_TIME_RUNS,
                     memory_budget_mb: float = MEMORY_BUDGET_MB, on_event: EventHandler | None = None) -> dict:
    """A.mnn against B.mnn on A's inputs (inputs.data.make_inputs keywords); see the module's docstring."""
    _check_mnn(model_a)
    _check_mnn(model_b)
    if threads < 1:
        raise UsageError("--threads must be at least 1")
    start = time.monotonic()
    work = work_folder(work_dir, "compare-mnn", keep)
    config = RunConfig(threads=threads)
    name_a, name_b = _stem(model_a), _stem(model_b)
    mode_name = name_b if name_b != name_a else "B"
    try:
        with client_or_own(client) as client:
            graph_a, inputs_npz = _prepare(model_a, inputs, client, work)
            graph_b = load_mnn(model_b)
            missing = [i for i in graph_b.inputs if i not in graph_a.inputs]
            if missing:
                raise ModelError(f"{model_b}: its inputs {', '.join(missing)} are not inputs of {model_a}: not two "
                                 f"versions of one network")
            weights = [stored_weights(graph_a), stored_weights(graph_b)]
            tol, judged = pair_tolerance(config, tolerance, weights)
            p = _Pair(client, inputs_npz, work, on_event, time_runs, memory_budget_mb)
            p.emit(f"A: running {os.path.basename(model_a)} and reading every tensor")
            a_dir = os.path.join(work, "runs", "A")
            sizes_a = tensor_sizes(graph_a)
            dump_a = p.dump(os.path.abspath(model_a), graph_a, config, a_dir, sizes_a)
            p.emit(f"B: running {os.path.basename(model_b)} and reading every tensor")
            held = (f", held to {judged}'s tolerance (weights: " + ", ".join(w or "float32" for w in weights) + ")"
                    if judged else "")
            row = _row(mode_name, f"{os.path.basename(model_b)} against {os.path.basename(model_a)}{held}",
                       os.path.abspath(model_b), config, tol)
            row["size_bytes"] = os.path.getsize(model_b)
            row["weights"] = {"a": weights[0] or "fp32", "b": weights[1] or "fp32"}
            row["tolerance_of"] = judged or _precision_mode(config)
            outputs = [o for o in graph_a.outputs if o in dump_a["manifest"]] or list(dump_a.get("outputs") or [])
            _measure(p, row, graph_a, dump_a, a_dir, os.path.abspath(model_b), graph_b, config, tol, outputs,
                     os.path.join(work, "runs", "B"), tensor_sizes(reference_view(graph_b), sizes_a))
            if not row.get("error"):
                row.update(judge(row, graph_a))
                _reword(row)
            p.emit("timing A and B per op")
            ta = p.times(os.path.abspath(model_a), config)
            tb = p.times(os.path.abspath(model_b), config)
            row["op_time_delta"], row["time"] = op_time_delta(ta, tb), time_summary(ta, tb)
        result = {"kind": "mnn_pair", "model": os.path.abspath(model_a),
                  "reference": dict(_reference(model_a, config, dump_a, ta), size_bytes=os.path.getsize(model_a)),
                  "modes": [row], "fix": None, "convert_s": 0.0, "work_dir": work}
        return _finish(result, graph_a, inputs_npz, model_a,
                       {"mnn_pair": [os.path.abspath(model_a), os.path.abspath(model_b)], "threads": threads,
                        "input_spec": inputs or {"seed": 0}}, store, keep, start)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def compare_configs(model: str, configs: list[RunConfig], *, tolerance: Tolerance | None = None,
                    inputs: dict | None = None, client: RunnerClient | None = None, store: RunStore | None = None,
                    work_dir: str | None = None, keep: bool = False, time_runs: int = DEFAULT_TIME_RUNS,
                    memory_budget_mb: float = MEMORY_BUDGET_MB, on_event: EventHandler | None = None) -> dict:
    """One .mnn under each configuration, the first as side A; see the module's docstring."""
    _check_mnn(model)
    if len(configs) < 2:
        raise UsageError("nothing to compare: give at least two configurations")
    start = time.monotonic()
    work = work_folder(work_dir, "compare-mnn", keep)
    path = os.path.abspath(model)
    first = configs[0]
    try:
        with client_or_own(client) as client:
            check_backends(configs, client)
            graph, inputs_npz = _prepare(model, inputs, client, work)
            p = _Pair(client, inputs_npz, work, on_event, time_runs, memory_budget_mb)
            p.emit(f"A ({first.name}): running the model and reading every tensor")
            a_dir = os.path.join(work, "runs", "A")
            sizes = tensor_sizes(graph)
            dump_a = p.dump(path, graph, first, a_dir, sizes)
            ta = p.times(path, first)
            outputs = [o for o in graph.outputs if o in dump_a["manifest"]] or list(dump_a.get("outputs") or [])
            base = {"dir": a_dir, "manifest": dump_a["manifest"]}
            rows = []
            for k, config in enumerate(configs[1:], 1):
                tol = tolerance_for(config, tolerance)
                what = config.differs(first)
                p.emit(f"{config.name}: running the model and reading every tensor")
                row = _row(config.name, f"{what} (against {first.name})", path, config, tol)
                b_dir = os.path.join(work, "runs", f"B{k}")
                _measure(p, row, graph, dump_a, a_dir, path, graph, config, tol, outputs, b_dir, sizes)
                if not row.get("error"):
                    d = row["dump"]
                    row["effect"] = _effect(base, b_dir, d["manifest"], d["outputs"], outputs, None, what=what,
                                            baseline=first.name)
                    row.update(judge(row, graph))
                    _reword(row)
                tb = p.times(path, config)
                row["op_time_delta"], row["time"] = op_time_delta(ta, tb), time_summary(ta, tb)
                if not keep:
                    shutil.rmtree(b_dir, ignore_errors=True)
                rows.append(row)
        result = {"kind": "mnn_configs", "model": path, "reference": _reference(model, first, dump_a, ta),
                  "modes": rows, "fix": None, "convert_s": 0.0, "work_dir": work}
        return _finish(result, graph, inputs_npz, model,
                       {"configs": [c.to_json() for c in configs], "input_spec": inputs or {"seed": 0}},
                       store, keep, start)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


