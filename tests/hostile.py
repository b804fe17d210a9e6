"""The hostile-file corpus: broken, lying and malicious model files made from the bundled samples (never committed).

`generate(folder)` writes the corpus under `folder` and returns its cases; `python -m tests.hostile --full` (or
MNNSCOPE_HOSTILE_FULL=1 with tests/test_hostile.py) runs every CLI command on every file and prints the counts
tried and passed; without `--full` it runs the CI-sized sample that tests/test_hostile.py runs.

Kinds (each sample in both formats, resources/samples):
- `truncated`: cut at many offsets (0 is the zero-length file);
- `bitflip`: a few bits flipped at seeded random places;
- `random`: seeded random bytes of the sample's size;
- `wrong_ext`: an .onnx's bytes named .mnn and an .mnn's named .onnx;
- `absurd`: 2^40 elements in an input shape, in an initializer's dims (4 bytes of data), in external data's
  declared length (ONNX only: a .mnn's dims sit in flatbuffer tables the truncations and flips already hit);
- `nested`: If inside If, 20 and 200 deep (protobuf refuses messages nested 100+ levels: ~33 Ifs);
- `escape`: external data at `../secret.bin`, `../../secret.bin`, an absolute path and a symlink pointing out of
  the model's folder (the outside file would make the model load if it were read).

A case's `expect` is "fail" (the command must exit 1) or "either" (the file may in fact be fine: a truncation at a
protobuf field boundary or a bit flip in a weight leaves a valid model; exit 0 is then correct). Every run must:
exit 0 or 1 as expected, print no traceback and no "internal error", give a one-line reason on stderr naming the
file when it exits 1, and finish within its bound.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "resources" / "samples"
ONNX_SAMPLES = ["cnn", "control_flow", "encoder_block", "external_data", "moe_llm", "moe_llm_kv", "unsupported_op"]
MNN_SAMPLES = ["cnn", "control_flow", "encoder_block", "external_data", "moe_llm", "moe_llm_kv"]
TRUNCATE_AT = [0, 1, 2, 7, 16, 64, 0.1, 0.25, 0.5, 0.75, 0.9, -1]  # bytes, or fractions of the size; -1: all but one
BIG = 2 ** 40
COMMANDS = ("inspect", "convert", "profile", "compare")
BOUND_S = {"inspect": 60, "convert": 150, "profile": 150, "compare": 200}  # per run, on the loaded 2-core machine


@dataclass
class Case:
    name: str
    path: Path
    kind: str
    expect: str = "either"  # "fail": exit 1; "either": 0 or 1
    note: str = ""
    outside: list = field(default_factory=list)  # files outside the model's folder it points at


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _mutations(folder: Path, stem: str, ext: str, data: bytes, rng: random.Random) -> list[Case]:
    cases = []
    for i, at in enumerate(TRUNCATE_AT):
        n = int(len(data) * at) if isinstance(at, float) else (len(data) + at if at < 0 else at)
        name = f"{stem}.trunc{i}{ext}"
        cases.append(Case(name, _write(folder / name, data[:n]), "truncated", "fail" if n < 8 else "either"))
    for k in range(6):
        buf = bytearray(data)
        for _ in range(1 + k):
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
        name = f"{stem}.flip{k}{ext}"
        cases.append(Case(name, _write(folder / name, bytes(buf)), "bitflip"))
    for k in range(2):
        name = f"{stem}.random{k}{ext}"
        cases.append(Case(name, _write(folder / name, rng.randbytes(len(data))), "random", "fail"))
    other = ".mnn" if ext == ".onnx" else ".onnx"
    name = f"{stem}_{ext[1:]}{other}"
    cases.append(Case(name, _write(folder / name, data), "wrong_ext", "fail", f"{ext} content named {other}"))
    return cases


def _absurd(folder: Path) -> list[Case]:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    cases = []
    m = onnx.load(str(SAMPLES / "cnn.onnx"))
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = BIG
    p = folder / "absurd_input.onnx"
    p.write_bytes(m.SerializeToString())
    cases.append(Case(p.name, p, "absurd", "either",
                      "inspect may describe it (exit 0); running it must refuse to allocate 2^40 x 3072 floats"))

    def tiny(init: TensorProto, name: str) -> Path:
        g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "absurd",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [init])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        path = folder / name
        path.write_bytes(model.SerializeToString())
        return path

    w = helper.make_tensor("w", TensorProto.FLOAT, [4], np.ones(4, np.float32).tobytes(), raw=True)
    del w.dims[:]
    w.dims.extend([BIG])
    p = tiny(w, "absurd_initializer.onnx")
    cases.append(Case(p.name, p, "absurd", "either", "inspect may list it (exit 0); converting/running must fail"))
    (folder / "absurd.bin").write_bytes(np.ones(4, np.float32).tobytes())
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "absurd.bin"), ("offset", "0"), ("length", str(BIG * 4))):
        w.external_data.add(key=k, value=v)
    p = tiny(w, "absurd_external_length.onnx")
    cases.append(Case(p.name, p, "absurd", "either", "external data claims 4 TiB of a 16-byte file"))
    return cases


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append(n & 0x7F | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def nested_if(depth: int) -> bytes:
    """The bytes of a model whose If nodes nest `depth` deep (each then branch holds the next If).

    Written as protobuf wire format by hand: protobuf itself refuses to build or copy messages past ~33 If
    levels (3 message levels each), which is the point of the file."""
    from onnx import ModelProto, TensorProto, helper

    def vi(name: str, elem=TensorProto.FLOAT, shape=(1,)) -> bytes:
        return helper.make_tensor_value_info(name, elem, list(shape)).SerializeToString()

    def attr(name: str, graph: bytes) -> bytes:  # AttributeProto: name=1, g=6, type=20 (GRAPH=5)
        return _field(1, name.encode()) + _field(6, graph) + _varint(20 << 3) + _varint(5)

    def graph(name: str, nodes: bytes, inputs: bytes, outputs: bytes) -> bytes:  # node=1 name=2 input=11 output=12
        return nodes + _field(2, name.encode()) + inputs + outputs

    def identity(src: str, dst: str) -> bytes:  # NodeProto: input=1 output=2 op_type=4 attribute=5
        return _field(1, _field(1, src.encode()) + _field(2, dst.encode()) + _field(4, b"Identity"))

    body = graph(f"g{depth}", identity("x", f"o{depth}"), b"", _field(12, vi(f"o{depth}")))
    for level in range(depth - 1, 0, -1):
        leaf = graph(f"e{level}", identity("x", f"e{level}"), b"", _field(12, vi(f"e{level}")))
        node = (_field(1, b"c") + _field(2, f"o{level}".encode()) + _field(4, b"If")
                + _field(5, attr("then_branch", body)) + _field(5, attr("else_branch", leaf)))
        if level > 1:
            body = graph(f"g{level}", _field(1, node), b"", _field(12, vi(f"o{level}")))
        else:
            body = graph("nested", _field(1, node), _field(11, vi("c", TensorProto.BOOL, ())) + _field(11, vi("x")),
                         _field(12, vi("o1")))
    head = ModelProto(ir_version=8)
    head.opset_import.add(domain="", version=17)
    return head.SerializeToString() + _field(7, body)


def _nested(folder: Path) -> list[Case]:
    cases = []
    for depth in (20, 200):
        path = folder / f"nested_if_{depth}.onnx"
        path.write_bytes(nested_if(depth))
        cases.append(Case(path.name, path, "nested", "either" if depth < 30 else "fail",
                          f"If inside If, {depth} deep"))
    return cases


def escape_model(folder: Path, location: str, name: str = "model.onnx") -> Path:
    """external_data.onnx rewritten so that its weights' data sits at `location` (the data file copied there)."""
    import onnx
    m = onnx.load(str(SAMPLES / "external_data.onnx"), load_external_data=False)
    for t in m.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = location
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(m.SerializeToString())
    return path


def _escape(folder: Path) -> list[Case]:
    cases = []
    data = SAMPLES / "external_data.onnx.data"
    outside = folder / "escape" / "secret.bin"
    outside.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(data, outside)
    for n, (sub, location) in enumerate((("model_up", "../secret.bin"), ("a/b/model_upup", "../../secret.bin"),
                                         ("model_abs", str(outside)))):
        p = escape_model(folder / "escape" / sub, location, f"escape{n}.onnx")
        cases.append(Case(f"escape{n}.onnx", p, "escape", "fail", f"location {location!r}", [str(outside)]))
    link_dir = folder / "escape" / "model_link"
    link_dir.mkdir(parents=True, exist_ok=True)
    link = link_dir / "weights.bin"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(outside)
    p = escape_model(link_dir, "weights.bin", "escape_symlink.onnx")
    cases.append(Case(p.name, p, "escape", "fail", "location is a symlink to a file outside the folder",
                      [str(outside)]))
    return cases


def generate(folder: Path, seed: int = 14) -> list[Case]:
    """Write the whole corpus under `folder`; returns its cases (a few hundred files, ~10 MB)."""
    folder = Path(folder)
    rng = random.Random(seed)
    cases: list[Case] = []
    for stem in ONNX_SAMPLES:
        sub = folder / f"{stem}_onnx"
        sub.mkdir(parents=True, exist_ok=True)
        if (SAMPLES / f"{stem}.onnx.data").exists():  # mutations keep their external data beside them
            shutil.copyfile(SAMPLES / f"{stem}.onnx.data", sub / f"{stem}.onnx.data")
        cases += _mutations(sub, stem, ".onnx", (SAMPLES / f"{stem}.onnx").read_bytes(), rng)
    for stem in MNN_SAMPLES:
        cases += _mutations(folder / f"{stem}_mnn", stem, ".mnn", (SAMPLES / f"{stem}.mnn").read_bytes(), rng)
    cases += _absurd(folder)
    cases += _nested(folder)
    cases += _escape(folder)
    return cases


def ci_sample(cases: list[Case]) -> list[Case]:
    """The CI-sized sample: every kind on the cnn and control_flow samples, plus every special case."""
    pick = {"cnn.trunc0.onnx", "cnn.trunc6.onnx", "cnn.trunc8.onnx", "cnn.flip2.onnx", "cnn.random0.onnx",
            "cnn_onnx.mnn", "cnn.trunc0.mnn", "cnn.trunc7.mnn", "cnn.trunc10.mnn", "cnn.flip3.mnn",
            "cnn.random1.mnn", "cnn_mnn.onnx", "control_flow.trunc8.onnx", "control_flow.flip1.mnn",
            "external_data.trunc11.onnx"}
    return [c for c in cases if c.name in pick or c.kind in ("absurd", "nested", "escape")]


def command_line(cmd: str, case: Case, out: Path) -> list[str]:
    base = [sys.executable, "-m", "mnnscope.gui.main", cmd, str(case.path)]
    if cmd == "convert":
        return base + ["-o", str(out / (case.path.stem + ".out.mnn")), "--json", "--no-cache"]
    if cmd == "profile":
        return base + ["--runs", "1", "--warmup", "0", "--json", "--no-cache"]
    if cmd == "compare":
        return base + ["--modes", "fp32", "--json", "--no-cache"]
    return base + ["--json"]


def judge(cmd: str, case: Case, rc, stdout: str, stderr: str, seconds: float) -> str | None:
    """What is wrong with one run, or None."""
    where = f"{cmd} {case.name}"
    if rc is None:
        return f"{where}: still running after {BOUND_S[cmd]} s"
    text = stdout + stderr
    if "Traceback" in text:
        return f"{where}: traceback: {stderr.strip()[-600:]}"
    if "internal error" in text:
        return f"{where}: internal error: {stderr.strip()[-400:]}"
    if case.expect == "fail" and rc != 1:
        return f"{where}: exit {rc}, expected 1: {stderr.strip()[-300:]}"
    if rc not in (0, 1):
        return f"{where}: exit {rc}: {stderr.strip()[-300:]}"
    try:
        data = json.loads(stdout)
    except ValueError:
        return f"{where}: stdout is not one JSON object: {stdout[:200]!r}"
    if rc == 1 and cmd == "compare" and "error" not in data and data.get("modes"):
        # compare ran and a mode is over tolerance: a failed check (exit 1 by contract), not a refused file;
        # its verdict is in the JSON (a bit flip in a weight leaves a valid model MNN computes differently)
        return None if all(m.get("verdict") for m in data["modes"]) else f"{where}: exit 1 without verdicts"
    if rc == 1:
        # one line per reason (convert prints one per error found; the others exactly one), each naming the file
        lines = [ln for ln in stderr.splitlines() if ln.startswith(f"mnnscope {cmd}:")]
        if not lines or (cmd != "convert" and len(lines) != 1):
            return f"{where}: expected one 'mnnscope {cmd}: reason' line on stderr: {stderr.strip()[-400:]}"
        for line in lines:
            if case.path.name not in line:
                return f"{where}: the reason does not name the file: {line}"
    return None


def run_one(cmd: str, case: Case, out: Path, env: dict) -> dict:
    t0 = time.monotonic()
    try:
        r = subprocess.run(command_line(cmd, case, out), capture_output=True, text=True, timeout=BOUND_S[cmd],
                           cwd=out, env=env)
        rc, stdout, stderr = r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired as e:
        rc, stdout, stderr = None, str(e.stdout or ""), str(e.stderr or "")
    seconds = time.monotonic() - t0
    problem = judge(cmd, case, rc, stdout, stderr, seconds)
    return {"command": cmd, "case": case.name, "kind": case.kind, "rc": rc, "seconds": round(seconds, 2),
            "problem": problem}


def commands_for(case: Case) -> list[str]:
    # convert and compare take an .onnx (an .mnn is a usage error, exit 2, for convert; compare of one .mnn needs
    # --backends): the .mnn files are inspected and profiled, the .onnx files go through every command.
    return list(COMMANDS) if case.path.suffix == ".onnx" else ["inspect", "profile"]


def run_corpus(cases: list[Case], work: Path, jobs: int = 2, log: str | None = None) -> list[dict]:
    """Every command on every case, `jobs` at once; `log`: a file that gets each result as a JSON line as soon as
    it is known (a long --full run can be read while it runs)."""
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
               MNNSCOPE_RUNS=str(work / "runs"), XDG_CACHE_HOME=str(work / "cache"))
    env.pop("MNNSCOPE_DEBUG", None)
    todo = [(cmd, c) for c in cases for cmd in commands_for(c)]
    sink = open(log, "a", encoding="utf-8") if log else None

    def one(t):
        result = run_one(t[0], t[1], work, env)
        if sink is not None:
            sink.write(json.dumps(result) + "\n")
            sink.flush()
        return result
    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, todo))
    finally:
        if sink is not None:
            sink.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.hostile", description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="the whole corpus (default: the CI sample)")
    ap.add_argument("--dir", default=None, help="where to write the corpus (default: a temporary folder)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--log", default=None, help="append each result to this file as a JSON line")
    args = ap.parse_args(argv)
    import tempfile
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="mnnscope-hostile-"))
    cases = generate(base / "corpus")
    chosen = cases if args.full else ci_sample(cases)
    t0 = time.monotonic()
    results = run_corpus(chosen, base / "work", args.jobs, args.log)
    bad = [r for r in results if r["problem"]]
    for r in bad:
        print("FAIL", r["problem"])
    by_rc = {}
    for r in results:
        by_rc[r["rc"]] = by_rc.get(r["rc"], 0) + 1
    print(f"files {len(chosen)}, runs tried {len(results)}, passed {len(results) - len(bad)}, exit codes "
          f"{dict(sorted(by_rc.items(), key=str))}, {time.monotonic() - t0:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
