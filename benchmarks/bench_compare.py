"""Single-pass localisation (mnnscope compare) against a bisection that reconverts the model for every probe.

    .venv/bin/python benchmarks/bench_compare.py [--nodes 2000] [--repeat 1]

The model is the Llama-like decoder of gen_large.py with one fault planted in the middle layer: its SiLU
is replaced by 100 x the erf-GELU pattern (Div, Erf, Add, Mul, Mul) on pre-activations shifted to -2.7. MNN
fuses that pattern into its own GELU kernel, which is about 5e-4 off there: a real fp32 divergence at a
known place.

Baseline: what MNN's tools/script/testMNNFromOnnx.py does in its DEBUG mode (re-implemented here, not
run): for each probe, cut the ONNX model at one tensor (that tensor becomes the only output), convert
the cut model, run it in MNN and in ONNX Runtime, and compare; bisect over the tensors in topological
order until the first one over tolerance. Every probe pays a conversion, an MNN run and an ORT run.
Ours: one ORT run with every tensor kept, one conversion, one MNN run reading every tensor, then the
matching and localisation in Python. Both use the same tolerance rule and the same runner process.
Prints both answers, both times and their ratio.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mnnscope.inspector.process.client import RunnerClient  # noqa: E402
from mnnscope.inspector.compare.metrics import load, tensor_metrics  # noqa: E402
from mnnscope.inspector.compare.modes import run_compare  # noqa: E402
from mnnscope.inspector.compare.options import CompareOptions  # noqa: E402
from mnnscope.inspector.compare.tolerance import Tolerance, within  # noqa: E402
from mnnscope.inspector.inputs.data import make_inputs, save_inputs  # noqa: E402
from mnnscope.inspector.formats.onnx import load_onnx  # noqa: E402

import gen_large  # noqa: E402  (a sibling script: run as a file, this folder is on sys.path)

TOLERANCE = Tolerance(atol=1e-5, rtol=1e-4)


def faulty_decoder(n_nodes: int, path: Path, where: float = 0.5) -> str:
    """The decoder with one layer's SiLU replaced by erf-GELU(x - 2.7); returns that layer's scope.

    `where`: the layer's position as a fraction of the depth (0.5: the middle layer).
    """
    gen = gen_large
    model = gen.make_decoder(n_nodes)
    layers, _ = gen._count_layers(n_nodes)
    scope = f"/model/layers.{min(layers - 1, int(layers * where))}/mlp/act_fn"
    nodes = list(model.graph.node)
    sig = next(i for i, n in enumerate(nodes) if n.name == f"{scope}/Sigmoid")
    mul = next(i for i, n in enumerate(nodes) if n.name == f"{scope}/Mul")
    x, out = nodes[sig].input[0], nodes[mul].output[0]
    for name, value in (("shift", -2.7), ("sqrt2", float(np.sqrt(2.0))), ("one", 1.0), ("half", 0.5),
                        ("gain", 100.0)):
        model.graph.initializer.append(numpy_helper.from_array(np.array(value, np.float32), f"{scope}/{name}"))
    gelu = [helper.make_node("Add", [x, f"{scope}/shift"], [f"{scope}/Add_output_0"], name=f"{scope}/Add"),
            helper.make_node("Div", [f"{scope}/Add_output_0", f"{scope}/sqrt2"], [f"{scope}/Div_output_0"], name=f"{scope}/Div"),
            helper.make_node("Erf", [f"{scope}/Div_output_0"], [f"{scope}/Erf_output_0"], name=f"{scope}/Erf"),
            helper.make_node("Add", [f"{scope}/Erf_output_0", f"{scope}/one"], [f"{scope}/Add_1_output_0"], name=f"{scope}/Add_1"),
            helper.make_node("Mul", [f"{scope}/Add_output_0", f"{scope}/Add_1_output_0"], [f"{scope}/Mul_0_output_0"],
                             name=f"{scope}/Mul_0"),
            helper.make_node("Mul", [f"{scope}/Mul_0_output_0", f"{scope}/half"], [f"{scope}/Mul_1_output_0"],
                             name=f"{scope}/Mul_1"),
            # GELU(x - 2.7) is about -0.01: scaled up so that the layer matters to the output.
            helper.make_node("Mul", [f"{scope}/Mul_1_output_0", f"{scope}/gain"], [out], name=f"{scope}/Mul")]
    kept = nodes[:sig] + gelu + [n for i, n in enumerate(nodes) if i > sig and i != mul]
    del model.graph.node[:]
    model.graph.node.extend(kept)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return scope


def cut_at(model: onnx.ModelProto, tensor: str) -> onnx.ModelProto:
    """The part of the model that computes `tensor`, with `tensor` as its only output."""
    producer = {o: n for n in model.graph.node for o in n.output}
    needed, stack, keep = set(), [tensor], set()
    while stack:
        t = stack.pop()
        n = producer.get(t)
        if n is None or id(n) in keep:
            continue
        keep.add(id(n))
        stack.extend(i for i in n.input if i)
        needed.update(n.input)
    cut = onnx.ModelProto()
    cut.CopyFrom(model)
    nodes = [n for n in model.graph.node if id(n) in keep]
    del cut.graph.node[:]
    cut.graph.node.extend(nodes)
    inits = [t for t in model.graph.initializer if t.name in needed]
    del cut.graph.initializer[:]
    cut.graph.initializer.extend(inits)
    del cut.graph.output[:]
    cut.graph.output.append(onnx.ValueInfoProto(name=tensor))
    return cut


def bisect(client: RunnerClient, onnx_path: Path, inputs: str, work: Path) -> tuple[str, int]:
    """First tensor over tolerance by bisection, one conversion per probe; returns (tensor, probes)."""
    model = onnx.load(str(onnx_path))
    graph = load_onnx(onnx_path)
    floats = [t for nid in graph.topological_order() for t in graph.g.nodes[nid]["outputs"]
              if t and graph.g.nodes[nid]["op_type"] not in ("Shape", "Slice", "Concat", "Gather")]
    probes = 0

    def diverged(k: int) -> bool:
        nonlocal probes
        probes += 1
        tensor = floats[k]
        folder = work / f"probe{probes}"
        folder.mkdir(parents=True)
        onnx.save(cut_at(model, tensor), str(folder / "cut.onnx"))
        conv = client.request("convert", {"src": str(folder / "cut.onnx"), "dst": str(folder / "cut.mnn"), "args": [],
                                          "log_path": str(folder / "convert.log")}, timeout=600)
        if not conv.get("ok"):
            raise RuntimeError(f"probe {tensor}: conversion failed")
        ref = client.request("dump_tensors", {"engine": "onnxruntime", "model": str(folder / "cut.onnx"),
                                              "inputs": inputs, "out_dir": str(folder / "ref"), "tensors": [tensor]},
                             timeout=600)
        got = client.request("dump_tensors", {"engine": "mnn", "model": str(folder / "cut.mnn"), "inputs": inputs,
                                              "out_dir": str(folder / "mnn"), "tensors": [tensor], "op_events": False},
                             timeout=600)
        m = tensor_metrics(load(str(folder / "ref"), ref["manifest"][tensor]),
                           load(str(folder / "mnn"), got["manifest"][tensor]))
        return not within(m, TOLERANCE)

    lo, hi = 0, len(floats) - 1
    if not diverged(hi):
        return "(outputs within tolerance)", probes
    while lo < hi:
        mid = (lo + hi) // 2
        if diverged(mid):
            hi = mid
        else:
            lo = mid + 1
    return floats[lo], probes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000, help="ONNX nodes of the decoder (default 2000)")
    parser.add_argument("--where", type=float, default=0.5, help="depth of the faulty layer, 0..1 (default 0.5)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp, RunnerClient() as client:
        tmp = Path(tmp)
        onnx_path = tmp / "decoder.onnx"
        scope = faulty_decoder(args.nodes, onnx_path, args.where)
        graph = load_onnx(onnx_path)
        inputs = save_inputs(make_inputs(graph, seed=0), tmp / "inputs.npz")
        client.hello()  # start the runner (and import MNN there) before timing either method

        start = time.perf_counter()
        options = CompareOptions(modes=["fp32"], tolerance=TOLERANCE, fix=False)
        result = run_compare(str(onnx_path), graph, inputs, options, client, str(tmp / "ours"))
        ours = time.perf_counter() - start
        fd = result["modes"][0]["first_divergence"]

        start = time.perf_counter()
        found, probes = bisect(client, onnx_path, inputs, tmp / "bisect")
        baseline = time.perf_counter() - start

    print(f"model: {graph.node_count} ONNX nodes, fault planted in {scope} (erf-GELU fused by MNN)")
    if fd:
        region = ", ".join(n["name"] for n in fd["region"])
        print(f"single pass: {ours:.2f} s; first divergence {fd['onnx_node']} (region: {region})")
    else:
        print(f"single pass: {ours:.2f} s; no divergence reaches the outputs")
    print(f"bisection:   {baseline:.2f} s; {probes} probes (a conversion, an MNN run and an ORT run each); "
          f"first error at {found}")
    print(f"ratio bisection / single pass: {baseline / ours:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
