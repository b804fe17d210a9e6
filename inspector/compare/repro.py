"""A minimal, verified repro of a mode's first divergence (`compare --repro DIR`).

The blamed op (the first divergence's region of ONNX nodes) is cut out of the model as a sub-model whose graph
inputs are the tensors it reads, fed with their real values from the reference run, and whose constant inputs
are initializers (convert/reduce.Cutter). Each candidate is *verified*: converted with the mode's settings, run
in MNN (the mode's precision and memory) and in ONNX Runtime in the runner, and kept only when one of its
outputs is still over the mode's tolerance. Where the region alone does not reproduce (the error stays under
the tolerance until later ops carry it over, or the fault needs context: a fusion, a layout decided before),
the candidate grows along the blame chain, then by consumers and producers, smallest first, up to MAX_NODES.

DIR receives repro.onnx, inputs.npz, repro.py (stand-alone: onnxruntime and MNN's Python API, converting
through the C extension `_tools.mnnconvert`, never MNN's console scripts) and README.md.
"""
from __future__ import annotations

import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper

from mnnscope.runner import protocol
from mnnscope.runner.protocol import RunnerError

from mnnscope.inspector.compare.metrics import tensor_metrics
from mnnscope.inspector.compare.options import DUMP_TIMEOUT
from mnnscope.inspector.compare.tolerance import within
from mnnscope.inspector.convert.reduce import Cutter
from mnnscope.inspector.convert.service import convert_model
from mnnscope.inspector.inputs.data import save_inputs
from mnnscope.inspector.store.tensors import load

MAX_NODES = 8  # the largest subgraph tried ("a handful of nodes")
MAX_TRIES = 12  # candidates verified at most (each is one conversion and two runs)
_ONNX_DTYPES = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "float64": TensorProto.DOUBLE,
                "int64": TensorProto.INT64, "int32": TensorProto.INT32, "int8": TensorProto.INT8,
                "uint8": TensorProto.UINT8, "bool": TensorProto.BOOL}


class NothingToReproduce(Exception):
    """The mode has no first divergence (its outputs are within tolerance) or could not run."""


def candidates(cutter: Cutter, fd: dict) -> list[set[int]]:
    """Node sets to try, smallest first: the blamed region, the region with the chain that carried its error
    over the tolerance, then grown by consumers, producers and both, at most MAX_NODES each (the region itself
    is always tried)."""
    region = _region(cutter, fd["tensor"], {i["tensor"] for i in fd.get("inputs") or []})
    if not region:
        return []
    found: list[set[int]] = [region]
    over = (fd.get("over_tolerance_at") or {}).get("tensor")
    base = region
    if over and over != fd["tensor"] and over in cutter.producer:
        path = _between(cutter, region, cutter.producer[over])
        if path:
            base = region | path
            found.append(base)
    grown = []
    for radius in (1, 2, 3):
        for way in ("consumers", "producers", "both"):
            keep = cutter.neighbourhood(base, radius, way)
            if len(keep) <= MAX_NODES:
                grown.append(keep)
    grown.sort(key=len)
    for keep in grown:
        if keep not in found:
            found.append(keep)
    return found[:MAX_TRIES]


def _region(cutter: Cutter, tensor: str, frontier: set[str]) -> set[int]:
    """The nodes that compute `tensor` from the measured tensors in `frontier` (metrics.compare_mode's region)."""
    if tensor not in cutter.producer:
        return set()
    keep, stack = set(), [cutter.producer[tensor]]
    while stack and len(keep) < 500:
        i = stack.pop()
        if i in keep:
            continue
        keep.add(i)
        for t in cutter.reads[i]:
            if t in frontier or t in cutter.inits or t not in cutter.producer:
                continue
            stack.append(cutter.producer[t])
    return keep


def _between(cutter: Cutter, region: set[int], target: int) -> set[int]:
    """Nodes downstream of `region` and upstream of `target` (target included), or empty past MAX_NODES."""
    down, frontier = set(), set(region)
    while frontier and len(down) <= 4 * MAX_NODES:
        nxt = set()
        for i in frontier:
            for t in cutter.nodes[i].output:
                nxt.update(cutter.consumers.get(t, []))
        nxt -= down | region
        down |= nxt
        frontier = nxt
    if target not in down:
        return set()
    up, stack = set(), [target]
    while stack:
        i = stack.pop()
        if i in up or i in region or i not in down:
            continue
        up.add(i)
        stack.extend(cutter.producer[t] for t in cutter.reads[i] if t in cutter.producer)
    return up if len(up | region) <= MAX_NODES else set()


def cut(cutter: Cutter, keep: set[int], ref_dir: str, ref_manifest: dict) -> tuple[onnx.ModelProto, dict] | None:
    """The sub-model of `keep` with concrete input shapes, and its inputs from the reference run (None when a
    tensor it reads was not kept by the reference run)."""
    model = cutter.cut(keep)
    feeds = {}
    inputs = []
    for vi in model.graph.input:
        entry = ref_manifest.get(vi.name)
        if entry is None:
            return None
        arr = np.array(load(ref_dir, entry))
        feeds[vi.name] = arr
        inputs.append(helper.make_tensor_value_info(vi.name, _ONNX_DTYPES.get(str(arr.dtype), TensorProto.FLOAT),
                                                    list(arr.shape)))
    del model.graph.input[:]
    model.graph.input.extend(inputs)
    outputs = []
    for vi in model.graph.output:  # concrete shapes where the reference run has the tensor
        entry = ref_manifest.get(vi.name)
        outputs.append(vi if entry is None else helper.make_tensor_value_info(
            vi.name, _ONNX_DTYPES.get(str(entry["dtype"]), TensorProto.FLOAT), list(entry["shape"])))
    del model.graph.output[:]
    model.graph.output.extend(outputs)
    model.producer_name = "mnnscope-repro"
    return model, feeds


def randomize_weights(model: onnx.ModelProto, seed: int = 0) -> list[str]:
    """Float initializers of more than one element replaced by seeded uniform values over the same range (same
    shapes and dtypes); returns the names replaced. Scalars and integer constants (shapes, axes) stay."""
    from onnx import numpy_helper as nh
    rng = np.random.default_rng(seed)
    replaced = []
    for k, t in enumerate(model.graph.initializer):
        arr = nh.to_array(t)
        if arr.dtype.kind != "f" or arr.size <= 1:
            continue
        lo, hi = float(arr.min()), float(arr.max())
        new = rng.uniform(lo, hi, arr.shape).astype(arr.dtype) if hi > lo else arr.copy()
        model.graph.initializer[k].CopyFrom(nh.from_array(new, t.name))
        replaced.append(t.name)
    return replaced


def verify(client, model_path: str, inputs_npz: str, settings, mode, tol, folder: str, threads: int = 1) -> dict:
    """Convert with `settings`, run MNN (the mode's precision and memory) and ONNX Runtime on the inputs; per
    output {max_abs, rel_l2, within}; `diverges` when one is over `tol`; `error` when it could not run."""
    model = onnx.load(model_path)
    outputs = [o.name for o in model.graph.output]
    dst = os.path.join(folder, "repro.mnn")
    res = convert_model(model_path, dst, settings, client=client, run_dir=os.path.join(folder, "convert"),
                        reduce=False, node_map=False, cache=False)
    if not res.ok:
        return {"diverges": False, "error": "conversion failed: " + ("; ".join(e.get("message", "") for e in res.errors)
                                                                    or "the converter gave no reason")}
    try:
        ref = client.request("dump_tensors", {"engine": protocol.ENGINE_ORT, "model": model_path, "inputs": inputs_npz,
                                              "out_dir": os.path.join(folder, "ort"), "tensors": outputs,
                                              "threads": threads}, timeout=DUMP_TIMEOUT)
        got = client.request("dump_tensors", {"engine": protocol.ENGINE_MNN, "model": dst, "inputs": inputs_npz,
                                              "out_dir": os.path.join(folder, "mnn"), "tensors": outputs,
                                              "precision": mode.precision, "memory": mode.memory,
                                              "threads": threads}, timeout=DUMP_TIMEOUT)
    except RunnerError as e:
        return {"diverges": False, "error": e.message}
    rows = {}
    for name in outputs:
        if name not in ref["manifest"] or name not in got["manifest"]:
            continue
        m = tensor_metrics(load(os.path.join(folder, "ort"), ref["manifest"][name]),
                           load(os.path.join(folder, "mnn"), got["manifest"][name]))
        rows[name] = {"max_abs": m["max_abs"], "rel_l2": m["rel_l2"], "ref_max_abs": m["ref_max_abs"],
                      "within": within(m, tol), "shape": m["ref_shape"], "dtype": m["ref_dtype"]}
    if not rows:
        return {"diverges": False, "error": "MNN returned none of the outputs under their ONNX names"}
    return {"diverges": any(not r["within"] for r in rows.values()), "outputs": rows, "error": None}


def make_repro(s, mode, row: dict, ref_dir: str, ref_manifest: dict, out_dir: str, random_weights: bool = False) -> dict:
    """The smallest verified repro of `row`'s first divergence, written to `out_dir`; the JSON entry
    {dir, nodes, op_types, rel_l2, max_abs, verified, tried, note}. NothingToReproduce when there is none."""
    fd = row.get("first_divergence")
    if row.get("error"):
        raise NothingToReproduce(f"{mode.name}: nothing to reproduce: the mode did not run ({row['error']})")
    if not fd:
        raise NothingToReproduce(f"{mode.name}: nothing to reproduce: MNN's outputs are within the tolerance of "
                                 f"ONNX Runtime ({row['tolerance']['rule']})")
    if mode.int8:
        raise NothingToReproduce(f"{mode.name}: a repro of a calibrated int8 conversion is not supported "
                                 f"(its calibration belongs to the whole model)")
    model = onnx.load(s.onnx_path)
    cutter = Cutter(model, os.path.dirname(s.onnx_path))
    settings = s.settings_for(mode)
    args = [a for a in settings.to_args() if a != "--dumpPass"]  # the converter's pass log: no effect on the model
    tol = s.options.tolerance_for(mode.name)
    work = os.path.join(s.work, "repro")
    os.makedirs(work, exist_ok=True)
    tried, winner, first = [], None, None
    for k, keep in enumerate(candidates(cutter, fd)):
        made = cut(cutter, keep, ref_dir, ref_manifest)
        if made is None:
            continue
        sub, feeds = made
        replaced = randomize_weights(sub, s.options.seed) if random_weights else []
        folder = os.path.join(work, f"try{k}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "repro.onnx")
        onnx.save(sub, path)
        npz = os.path.join(folder, "inputs.npz")
        save_inputs(feeds, npz)
        s.emit(f"repro: verifying {len(keep)} node(s) ({', '.join(_op_types(cutter, keep))})")
        check = verify(s.client, path, npz, settings, mode, tol, folder, s.options.threads)
        entry = {"keep": keep, "folder": folder, "check": check, "replaced": replaced}
        tried.append({"nodes": len(keep), "op_types": _op_types(cutter, keep), "diverges": check["diverges"],
                      "error": check.get("error"), "rel_l2": _worst(check, "rel_l2")})
        if first is None:
            first = entry
        if check["diverges"]:
            winner = entry
            break
    if first is None:
        raise NothingToReproduce(f"{mode.name}: the blamed op {fd['onnx_node']} could not be cut out (its inputs "
                                 f"are not in the reference run)")
    chosen = winner or first
    if os.path.isdir(out_dir):
        for name in ("repro.onnx", "inputs.npz", "repro.py", "README.md", "repro.mnn"):
            if os.path.exists(os.path.join(out_dir, name)):
                os.remove(os.path.join(out_dir, name))
    os.makedirs(out_dir, exist_ok=True)
    shutil.copy(os.path.join(chosen["folder"], "repro.onnx"), os.path.join(out_dir, "repro.onnx"))
    shutil.copy(os.path.join(chosen["folder"], "inputs.npz"), os.path.join(out_dir, "inputs.npz"))
    note = None if winner else (f"nothing of at most {MAX_NODES} nodes reproduces the divergence on its own "
                                f"({len(tried)} subgraph(s) tried); the blamed op is written, unverified")
    result = {"dir": os.path.abspath(out_dir), "nodes": [_name(cutter, i) for i in sorted(chosen["keep"])],
              "op_types": _op_types(cutter, chosen["keep"]), "rel_l2": _worst(chosen["check"], "rel_l2"),
              "max_abs": _worst(chosen["check"], "max_abs"), "verified": winner is not None, "tried": tried,
              "random_weights": bool(random_weights), "note": note}
    facts = {}
    try:
        facts = s.client.hello(mnn=True) or {}
    except Exception:  # noqa: BLE001 - versions are for the README only
        facts = {}
    with open(os.path.join(out_dir, "repro.py"), "w") as f:
        f.write(script(args, mode))
    with open(os.path.join(out_dir, "README.md"), "w") as f:
        f.write(readme(result, fd, mode, args, cutter, chosen, facts, s.onnx_path, tol))
    return result


def _name(cutter: Cutter, i: int) -> str:
    n = cutter.nodes[i]
    return n.name or f"{n.op_type}#{i}"


def _op_types(cutter: Cutter, keep) -> list[str]:
    return [cutter.nodes[i].op_type for i in sorted(keep)]


def _worst(check: dict, key: str):
    values = [r[key] for r in (check.get("outputs") or {}).values() if r.get(key) is not None]
    return max(values) if values else None


def readme(result: dict, fd: dict, mode, args: list[str], cutter: Cutter, chosen: dict, facts: dict, model_path: str,
           tol) -> str:
    sub = onnx.load(os.path.join(result["dir"], "repro.onnx"))
    lines = [f"# MNN computes {', '.join(dict.fromkeys(result['op_types']))} differently from ONNX Runtime", "",
             f"Made by `mnnscope compare {os.path.basename(model_path)} --modes {mode.name} --repro DIR` from the "
             f"first divergence at `{fd['onnx_node']}` ({fd['op_type']}).", "",
             "Run it: `python repro.py` (needs numpy, onnxruntime and MNN's Python package; it converts repro.onnx "
             "with the same converter settings, runs both and prints the difference).", "",
             "## Result", "",
             ("Verified: converted and run on its own, MNN's output is over the tolerance "
              f"({tol.to_json()['rule']})." if result["verified"] else f"NOT verified: {result['note']}."), ""]
    for name, r in (chosen["check"].get("outputs") or {}).items():
        lines.append(f"- output `{name}` {r['dtype']} {r['shape']}: max abs {r['max_abs']:.4g}, rel L2 "
                     f"{r['rel_l2']:.4g} (max |reference| {r['ref_max_abs']:.4g}), "
                     f"{'within' if r['within'] else 'over'} tolerance")
    if chosen["check"].get("error"):
        lines.append(f"- could not run: {chosen['check']['error']}")
    lines += ["", "## Operators", ""]
    for i in sorted(chosen["keep"]):
        n = cutter.nodes[i]
        attrs = ", ".join(f"{a.name}={helper.get_attribute_value(a)!r}" for a in n.attribute
                          if a.type != onnx.AttributeProto.GRAPH) or "no attributes"
        lines.append(f"- `{_name(cutter, i)}` {n.op_type}({', '.join(n.input)}) -> {', '.join(n.output)}; {attrs}")
    lines += ["", "## Inputs (inputs.npz: the values ONNX Runtime computed for them in the full model)", ""]
    for vi in sub.graph.input:
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        lines.append(f"- `{vi.name}` {TensorProto.DataType.Name(vi.type.tensor_type.elem_type).lower()} {dims}")
    lines += ["", "## Weights of the original model it contains", ""]
    inits = list(sub.graph.initializer)
    if result.get("random_weights"):
        lines.append(f"Random: {', '.join(chosen['replaced']) or 'no float tensor'} replaced by seeded uniform "
                     "values over the same range (same shapes); scalars and integer constants kept.")
    for t in inits:
        random = " (random values, not the model's)" if t.name in chosen["replaced"] else ""
        lines.append(f"- `{t.name}` {TensorProto.DataType.Name(t.data_type).lower()} {list(t.dims)}{random}")
    if not inits:
        lines.append("None.")
    lines += ["", "The inputs in inputs.npz are intermediate values of the model on the compare input."]
    lines += ["", "## Versions and settings", "",
              f"- MNN {facts.get('mnn') or 'unknown'}, ONNX Runtime {facts.get('onnxruntime') or 'unknown'}, "
              f"Python {facts.get('python_version') or 'unknown'}",
              f"- converter settings: {' '.join(args) or 'defaults'}",
              f"- runtime: CPU, precision {mode.precision}, memory {mode.memory}, 1 thread (mode {mode.name})", "",
              "## What was tried to make it smaller", ""]
    for t in result["tried"]:
        lines.append(f"- {t['nodes']} node(s) ({', '.join(t['op_types'])}): "
                     + (t["error"] if t["error"] else ("diverges" if t["diverges"] else "within tolerance")
                        + (f", rel L2 {t['rel_l2']:.4g}" if t["rel_l2"] is not None else "")))
    return "\n".join(lines) + "\n"


_SCRIPT = '''"""Stand-alone repro: converts repro.onnx to MNN, runs it in MNN and in ONNX Runtime on inputs.npz and prints
the difference of every output. Needs numpy, onnxruntime and MNN (pip install MNN onnxruntime numpy).
Made by mnnscope; converts through MNN's C extension (_tools.mnnconvert), not its console scripts."""
import os

import numpy as np
import onnxruntime as ort
import MNN
import _tools

HERE = os.path.dirname(os.path.abspath(__file__))
CONVERT_ARGS = {args!r}  # the converter settings of the mode that diverged
PRECISION = {precision}  # MNN precision: 0 normal, 1 high, 2 low, 3 low_bf16 (mode {mode})
MEMORY = {memory}  # MNN memory: 0 normal, 1 high, 2 low


def main():
    src, dst = os.path.join(HERE, "repro.onnx"), os.path.join(HERE, "repro.mnn")
    _tools.mnnconvert(["MNNConvert", "-f", "ONNX", "--modelFile", src, "--MNNModel", dst, "--bizCode", "repro"]
                      + CONVERT_ARGS)
    with np.load(os.path.join(HERE, "inputs.npz"), allow_pickle=False) as z:
        feeds = {{k: z[k] for k in z.files}}
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(src, options, providers=["CPUExecutionProvider"])
    inputs = [i.name for i in session.get_inputs()]
    outputs = [o.name for o in session.get_outputs()]
    reference = session.run(outputs, {{n: feeds[n] for n in inputs}})

    F = MNN.expr
    runtime = MNN.nn.create_runtime_manager(({{"backend": "CPU", "numThread": 1, "precision": PRECISION,
                                               "memory": MEMORY}},))
    net = MNN.nn.load_module_from_file(dst, inputs, outputs, runtime_manager=runtime)
    xs = []
    for n in inputs:
        a = feeds[n]
        if a.dtype.kind == "f":
            xs.append(F.const(a.astype(np.float32), list(a.shape), F.NCHW, F.float))
        else:
            xs.append(F.const(a.astype(np.int32), list(a.shape), F.NCHW, F.int))
    got = net.forward(xs)
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    print("MNN", MNN.version(), "ONNX Runtime", ort.__version__)
    for name, ref, var in zip(outputs, reference, got):
        if var.data_format == F.NC4HW4:
            var = F.convert(var, F.NCHW)
        value = np.array(var.read(), copy=True).astype(np.float64).reshape(ref.shape)
        ref = ref.astype(np.float64)
        diff = value - ref
        norm = float(np.linalg.norm(ref))
        rel = float(np.linalg.norm(diff)) / norm if norm > 0 else float(np.linalg.norm(diff))
        print(f"REPRO output={{name}} max_abs={{float(np.abs(diff).max()):.6g}} rel_l2={{rel:.6g}} "
              f"max_ref={{float(np.abs(ref).max()):.6g}}")


if __name__ == "__main__":
    main()
'''


def script(args: list[str], mode) -> str:
    precision = {"normal": 0, "high": 1, "low": 2, "low_bf16": 3}.get(mode.precision, 1)
    memory = {"normal": 0, "high": 1, "low": 2}.get(mode.memory, 0)
    return _SCRIPT.format(args=list(args), precision=precision, memory=memory, mode=mode.name)
