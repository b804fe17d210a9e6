"""The real-model scoreboard: `mnnscope compare --json` against a truth the tool had no part in.

tests/data/scoreboard.json lists real models from the packages dev.py installs (PaddleOCR's detector,
recognizer and classifier from rapidocr, a CRNN, a BiGRU encoder and an attention-GRU decoder, the ONNX
test-suite's classic CNNs, ONNX Runtime's logistic-regression pipeline) and quantized copies of some, made with
onnxruntime.quantization. For each model and mode it holds the verdict and the ops to blame, judged from what
benchmarks/scoreboard.py --truth measured (stored beside it as "measured"): ONNX Runtime and MNN run side by
side with MNN's converter and Module API called directly, outputs compared with the documented rule, and
off models bisected with cut models. Each case here feeds compare the same seeded inputs as the truth.
"""
from __future__ import annotations

import ast
import contextlib
import io
import json
from pathlib import Path

import onnx
import pytest

from mnnscope.inspector.cli.app import main
from conftest import benchmark, missing_dependency

ROOT = Path(__file__).resolve().parents[1]
scoreboard = benchmark("scoreboard")
CORPUS = scoreboard.load_corpus()
CASES = [(e, c) for e in CORPUS["models"] for c in e["modes"]]
IDS = [f"{e['id']}-{c['mode']}" for e, c in CASES]
VERDICTS = ("match", "close", "wrong", "failed")


@pytest.fixture(scope="module")
def work(isolated_home):
    folder = isolated_home / "scoreboard"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _installed(entry) -> Path:
    path = scoreboard.model_path(entry)
    if path is None:
        missing_dependency(f"the real-model package '{entry['package']}' is not installed (python3 dev.py setup)")
    return path


# ----- the truth itself -----------------------------------------------------------------------------------
def test_the_truth_script_uses_no_mnnscope_code():
    """The truth must not come from the tool it judges: the script imports MNN, _tools, onnx and onnxruntime
    itself, never mnnscope."""
    tree = ast.parse((ROOT / "benchmarks" / "scoreboard.py").read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert "mnnscope" not in imported and {"MNN", "_tools", "onnxruntime", "onnx"} <= imported, imported


@pytest.mark.parametrize("entry,case", CASES, ids=IDS)
def test_each_verdict_is_what_was_measured(entry, case):
    """A judged verdict agrees with the side-by-side measurement; blamed ops are where the bisection found the
    error coming in, and exist in the model."""
    assert case["verdict"] in VERDICTS
    measured = case["measured"]
    if case["verdict"] == "match":
        assert measured["verdict"] == "match" and all(o["within"] for o in measured["outputs"].values())
    elif case["verdict"] == "failed":
        assert measured["verdict"] == "failed"
        assert case.get("failed_ops") or case.get("cause_mentions")
        for text in case.get("cause_mentions", []):
            assert text in str(measured["detail"]), measured["detail"]
        if case.get("failed_ops"):
            assert measured["stage"] == "convert"
            named = " ".join(measured["detail"])
            assert all(f"ONNX::{op}" in named for op in case["failed_ops"]), named
    else:
        assert measured["verdict"] == "over" and case["blame"]
        assert measured["first_over"]["node"] in measured["window"]
        assert set(case["blame"]) <= set(measured["window"])
    if scoreboard.model_path(entry) is not None and not entry.get("derive") and case.get("blame"):
        names = {n.name for n in onnx.load(str(scoreboard.model_path(entry)), load_external_data=False).graph.node}
        assert set(case["blame"]) <= names


def test_the_corpus_spans_the_architectures():
    archs = {e["arch"].split(" (")[0] for e in CORPUS["models"]}
    assert {"CNN", "CNN + transformer", "RNN", "quantized", "classic ML"} <= archs, archs
    assert {c["verdict"] for _, c in CASES} == set(VERDICTS)


# ----- the tool against it -------------------------------------------------------------------------------------
def _compare(path: Path, mode: str, inputs: dict[str, Path]) -> tuple[int, dict]:
    argv = ["compare", str(path), "--modes", mode, "--json"]
    for name, p in inputs.items():
        argv += ["--input", f"{name}={p}"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, json.loads(out.getvalue())


def _op_types(path: Path) -> dict[str, str]:
    model = onnx.load(str(path), load_external_data=False)
    return {n.name: n.op_type for n in model.graph.node}


@pytest.mark.slow
@pytest.mark.parametrize("entry,case", CASES, ids=IDS)
def test_compare_agrees_with_the_truth(entry, case, work):
    _installed(entry)
    path = scoreboard.prepare_model(entry, work)
    code, data = _compare(path, case["mode"], scoreboard.make_inputs(entry, work))
    assert "modes" in data, data
    mode = data["modes"][0]
    assert mode.get("verdict") == case["verdict"], (f"verdict {mode.get('verdict')!r} (ok={mode.get('ok')}, "
                                                    f"error={mode.get('error')!r}); the truth: {case['verdict']}")
    if case["verdict"] == "match":
        assert code == 0 and all(o["within"] for o in mode["outputs"])
    elif case["verdict"] == "failed":
        assert code == 1
        said = " ".join(str(mode.get(k) or "") for k in ("cause", "error"))
        for text in case.get("failed_ops", []) + case.get("cause_mentions", []):
            assert text in said, said
        if case.get("failed_ops") and mode.get("failed_node"):
            assert _op_types(path).get(mode["failed_node"]) in case["failed_ops"], mode["failed_node"]
    else:
        fd = mode["first_divergence"]
        assert fd and fd["onnx_node"] in case["blame"], (fd and fd["onnx_node"], case["blame"])
        assert isinstance(fd.get("chain"), list)
