"""The format registry: a format made up here, registered with one line (MNNSCOPE_FORMATS), is opened by
load_model, by the load process (load_table, which the window uses) and by `mnnscope inspect --json`;
unknown files get one line naming them, never a guess."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from mnnscope.inspector.errors import ModelError
from mnnscope.inspector.formats import registry
from mnnscope.inspector.formats.loader import load_model
from mnnscope.inspector.formats.loadproc import load_stats, load_table
from tests.conftest import ROOT

# A JSON graph after a magic line, suffix .tgraph; and the same JSON as graph.json in a folder.
PLUGIN = '''
import json
from pathlib import Path

from mnnscope.inspector.errors import ModelError
from mnnscope.inspector.formats.adapter import FormatAdapter

MAGIC = b"TINYGRAPH\\n"


def _data(path):
    raw = Path(path).read_bytes()[len(MAGIC):]
    try:
        return json.loads(raw)
    except ValueError as e:
        raise ModelError(f"{path}: not a tiny graph ({e})")


def _graph(fmt, path, data):
    from mnnscope.inspector.model.graph import ModelGraph, TensorInfo
    mg = ModelGraph(format=fmt, path=str(path))
    for name, t in data["tensors"].items():
        values = t.get("values")
        mg.tensors[name] = TensorInfo(name, t.get("shape"), t.get("dtype"), values is not None,
                                      4 * len(values) if values else None, len(values) if values else None)
    for n in data["nodes"]:
        mg.add_op(n["name"], name=n["name"], op_type=n["op"], inputs=n["inputs"], outputs=n["outputs"],
                  attrs=n.get("attrs", {}))
    mg.inputs, mg.outputs = data["inputs"], data["outputs"]
    mg.connect()
    return mg


class TinyGraphAdapter(FormatAdapter):
    name = "tinygraph"
    description = "tiny graph"
    extensions = (".tgraph",)
    magic = (MAGIC,)

    def parse(self, path):
        return _graph(self.name, path, _data(path))

    def weight_stats(self, path, keys):
        import numpy as np

        from mnnscope.inspector.formats.stats import array_stats
        tensors = _data(path)["tensors"]
        return {k: array_stats(np.asarray(tensors[k]["values"], np.float32)) for k in keys}


class TinyFolderAdapter(FormatAdapter):
    name = "tinyfolder"
    description = "tiny graph folder"
    folder = True

    def is_model_folder(self, path):
        return (path / "graph.json").is_file()

    def parse(self, path):
        return _graph(self.name, path, json.loads((Path(path) / "graph.json").read_text()))
'''

GRAPH = {
    "inputs": ["x"], "outputs": ["y"],
    "tensors": {"x": {"shape": [1, 4], "dtype": "float32"}, "w": {"shape": [4, 4], "dtype": "float32",
                                                                  "values": [0.5, -1.0, 2.0, 0.0] * 4},
                "h": {"shape": [1, 4], "dtype": "float32"}, "y": {"shape": [1, 4], "dtype": "float32"}},
    "nodes": [{"name": "/block/MatMul", "op": "MatMul", "inputs": ["x", "w"], "outputs": ["h"]},
              {"name": "/block/Relu", "op": "Relu", "inputs": ["h"], "outputs": ["y"], "attrs": {"note": "tiny"}}],
}
REGISTRATION = "tinygraph_format:TinyGraphAdapter,tinygraph_format:TinyFolderAdapter"


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("plugin")
    (d / "tinygraph_format.py").write_text(textwrap.dedent(PLUGIN))
    return d


@pytest.fixture
def tiny(plugin_dir, tmp_path, monkeypatch):
    """The made-up format registered (one line: MNNSCOPE_FORMATS), its module importable here and in the
    processes this one starts; yields a .tgraph file."""
    monkeypatch.syspath_prepend(str(plugin_dir))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(plugin_dir), str(ROOT)]))
    monkeypatch.setenv(registry.ENV, REGISTRATION)
    path = tmp_path / "model.tgraph"
    path.write_bytes(b"TINYGRAPH\n" + json.dumps(GRAPH).encode())
    return path


def _inspect(path, *args):
    return subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "inspect", str(path), "--json", *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=dict(os.environ))


def test_builtin_formats_are_detected_by_suffix(samples):
    assert registry.detect(samples / "cnn.onnx").name == "onnx"
    assert registry.detect(samples / "cnn.mnn").name == "mnn"
    assert {".onnx", ".mnn"} <= set(registry.extensions())


def test_load_model_opens_a_registered_format(tiny):
    for native in (False, True):  # the format has no shape request: native or not, no runner is needed
        g = load_model(tiny, native=native)
        assert g.format == "tinygraph" and g.node_count == 2 and g.op_types() == {"MatMul": 1, "Relu": 1}
        assert g.inputs == ["x"] and g.outputs == ["y"] and g.params() == 16
        assert g.top_scopes() == ["block"]


def test_the_load_process_finds_the_registered_format(tiny):
    table = load_table(str(tiny))
    assert table.format == "tinygraph" and table.ids == ["/block/MatMul", "/block/Relu"]
    assert table.attrs(1) == {"note": "tiny"}
    stats = load_stats(str(tiny), ["w"])["w"]
    assert stats["elements"] == 16 and stats["min"] == -1.0 and stats["max"] == 2.0 and stats["zeros"] == 4


def test_inspect_json_opens_the_registered_format(tiny):
    r = _inspect(tiny)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["format"] == "tinygraph" and data["nodes"] == 2 and data["edges"] == 1
    assert data["op_types"] == {"MatMul": 1, "Relu": 1} and data["params"] == 16
    assert data["inputs"] == [{"name": "x", "shape": [1, 4], "dtype": "float32"}]


def test_profile_refuses_a_format_no_engine_runs(tiny):
    """Which engines run a format is the adapter's to say (`engines`): the made-up format names none, so
    profile refuses it by name (exit 1) instead of handing it to ONNX Runtime as if it were ONNX."""
    r = subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "profile", str(tiny), "--json"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT, env=dict(os.environ))
    assert r.returncode == 1, (r.stdout, r.stderr)
    err = json.loads(r.stdout)["error"]
    assert str(tiny) in err["message"] and "cannot be run" in err["message"]
    assert "Traceback" not in r.stderr


def test_magic_bytes_decide_whatever_the_name(tiny):
    renamed = tiny.with_name("model.bin")
    renamed.write_bytes(tiny.read_bytes())
    assert registry.detect(renamed).name == "tinygraph"
    assert load_table(str(renamed)).format == "tinygraph"


def test_a_suffix_without_its_magic_is_refused(tiny):
    fake = tiny.with_name("fake.tgraph")
    fake.write_bytes(json.dumps(GRAPH).encode())
    with pytest.raises(ModelError, match=r"fake\.tgraph: not a tiny graph file"):
        load_model(fake, native=False)
    r = _inspect(fake)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "fake.tgraph" in r.stderr


def test_a_folder_format(tiny):
    folder = tiny.parent / "exported"
    folder.mkdir()
    (folder / "graph.json").write_text(json.dumps(GRAPH))
    assert load_model(folder, native=False).format == "tinyfolder"
    assert load_table(str(folder)).node_count == 2
    r = _inspect(folder)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["format"] == "tinyfolder"
    other = tiny.parent / "not_a_model"
    other.mkdir()
    with pytest.raises(ModelError) as e:
        load_model(other, native=False)
    assert str(e.value).endswith("not_a_model: is a folder, not a model file (not a tiny graph folder either)")


def test_unregistered_and_unknown_formats_get_one_line_naming_the_file(tmp_path, samples, monkeypatch):
    monkeypatch.delenv(registry.ENV, raising=False)
    files = {"model.tgraph": b"TINYGRAPH\n" + json.dumps(GRAPH).encode(),  # not registered in this test
             "model.xyz": (samples / "cnn.mnn").read_bytes(),  # an .mnn's bytes under another name
             "noext": (samples / "cnn.onnx").read_bytes()}
    for name, data in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        for load in (lambda: load_model(path, native=False), lambda: load_table(str(path)),
                     lambda: registry.detect(path)):
            with pytest.raises(ModelError) as e:
                load()
            message = str(e.value)
            assert name in message and "unsupported file type" in message and "\n" not in message
            assert "expected .onnx or .mnn" in message
        r = _inspect(path)
        assert r.returncode == 1 and "Traceback" not in r.stderr
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and name in lines[0] and "unsupported file type" in lines[0]
        assert json.loads(r.stdout)["error"]["message"]


def test_a_broken_registration_is_reported_not_ignored(monkeypatch, samples):
    monkeypatch.setenv(registry.ENV, "no_such_format_module:Adapter")
    with pytest.raises(ModelError, match="MNNSCOPE_FORMATS: cannot load format adapter 'no_such_format_module"):
        registry.detect(samples / "cnn.onnx")


def test_the_window_opens_the_registered_format(tiny, tmp_path):
    """`mnnscope view --screenshot` drives the window's own open path (registry, load process, shapes)."""
    pytest.importorskip("PySide6")
    out = tmp_path / "tiny.png"
    r = subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "view", str(tiny), "--screenshot", str(out),
                        "--size", "400x300", "--timing"], capture_output=True, text=True, timeout=180, cwd=ROOT,
                       env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["nodes_drawn"] >= 1 and out.stat().st_size > 0


def test_register_adds_a_format_to_this_process(plugin_dir, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(plugin_dir))
    monkeypatch.delenv(registry.ENV, raising=False)
    monkeypatch.setattr(registry, "_registered", {})
    from tinygraph_format import TinyGraphAdapter
    path = tmp_path / "x.tgraph"
    path.write_bytes(b"TINYGRAPH\n" + json.dumps(GRAPH).encode())
    with pytest.raises(ModelError, match="unsupported file type '.tgraph'"):
        registry.detect(path)
    registry.register(TinyGraphAdapter())
    assert registry.detect(path).name == "tinygraph" and ".tgraph" in registry.extensions()
    assert load_model(path).node_count == 2
    with pytest.raises(ModelError, match="extensions must be lower-case"):
        registry.register(type("Bad", (TinyGraphAdapter,), {"extensions": (".TG",)})())


def test_the_app_takes_what_a_format_recognises_and_refuses_typos(tiny):
    from mnnscope.gui.main import _model_like  # Qt-free: the guard runs before the app is imported
    renamed = tiny.with_name("model.bin")
    renamed.write_bytes(tiny.read_bytes())
    folder = tiny.parent / "exported"
    folder.mkdir()
    (folder / "graph.json").write_text("{}")
    assert _model_like(str(tiny)) and _model_like(str(renamed)) and _model_like(str(folder))
    assert _model_like("not_yet_there.onnx")  # the window says it is missing
    assert not _model_like(str(tiny.parent)) and not _model_like("inpsect")


def test_a_model_under_the_wrong_suffix_or_cut_short_is_named_for_what_it_is(samples, tmp_path, capsys):
    """An .mnn named .onnx read "does not parse as one: DecodeError", an .onnx named .mnn "table offset 269617416
    outside the file", truncated files were never called truncated, and `convert x.mnn` advised exporting again
    (tryout 17)."""
    import shutil
    from mnnscope.inspector.cli.app import main
    shutil.copy(samples / "cnn.mnn", tmp_path / "mnn_named.onnx")
    shutil.copy(samples / "cnn.onnx", tmp_path / "onnx_named.mnn")
    (tmp_path / "cut.onnx").write_bytes((samples / "cnn.onnx").read_bytes()[:3000])
    (tmp_path / "cut.mnn").write_bytes((samples / "cnn.mnn").read_bytes()[:3000])
    for name, needle in (("mnn_named.onnx", "it is an MNN model: name it .mnn"),
                         ("onnx_named.mnn", "it is an ONNX model: name it .onnx"),
                         ("cut.onnx", "truncated, or not an ONNX model"),
                         ("cut.mnn", "truncated, or not an MNN model")):
        with pytest.raises(ModelError, match=needle):
            load_model(str(tmp_path / name), native=False)
    assert main(["convert", str(samples / "cnn.mnn"), "-o", str(tmp_path / "x.mnn"), "--json"]) == 2
    assert "is an MNN model already" in json.loads(capsys.readouterr().out)["error"]["message"]
