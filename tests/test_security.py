"""What a model cannot make the tool do: read files outside its folder, reach the network, unpickle anything.

- Path confinement: a model whose external data sits at `../x`, an absolute path or a symlink out of its folder
  is refused by every command (and by the runner itself, asked directly), and the outside file is never opened:
  it is a FIFO, and a watcher notices any reader (a read would also block, bounded by the timeouts).
- No network: the main workflows run with a sitecustomize.py that records and refuses every non-AF_UNIX
  connect / name lookup in the CLI and its runner processes; the record stays empty.
- A scan of gui/ inspector/ runner/: no MNN.tools, no pip at run time, no pickle/torch.load, every np.load with
  allow_pickle=False.
"""
from __future__ import annotations

import ast
import errno
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT
from tests.hostile import SAMPLES, escape_model

PACKAGES = ("gui", "inspector", "runner")


def mnnscope(*args, env=None, cwd=None, timeout=180):
    full = dict(os.environ, PYTHONPATH=str(ROOT))
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "mnnscope.gui.main", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd or ROOT, env=full)


class FifoWatch:
    """A FIFO that records whether anything opened it for reading (a writer's non-blocking open succeeds only
    while a reader holds it)."""

    def __init__(self, path: Path):
        self.path = path
        os.mkfifo(path)
        self.opened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self):
        while not self._stop.is_set():
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as e:
                if e.errno != errno.ENXIO:  # ENXIO: no reader, as it should be
                    raise
            else:
                self.opened += 1
                os.close(fd)  # the reader sees end-of-file and goes on: nothing hangs
            time.sleep(0.002)

    def stop(self):
        self._stop.set()
        self._thread.join(2)


@pytest.fixture
def escapes(tmp_path):
    """Models pointing at an outside FIFO: by `..`, by absolute path, by a symlink in their own folder."""
    watch = FifoWatch(tmp_path / "outside.fifo")
    models = {"dotdot": escape_model(tmp_path / "m1", "../outside.fifo", "dotdot.onnx"),
              "absolute": escape_model(tmp_path / "m2", str(tmp_path / "outside.fifo"), "absolute.onnx")}
    (tmp_path / "m3").mkdir()
    (tmp_path / "m3" / "weights.bin").symlink_to(tmp_path / "outside.fifo")
    models["symlink"] = escape_model(tmp_path / "m3", "weights.bin", "symlink.onnx")
    models["passwd"] = escape_model(tmp_path / "m4", "/etc/passwd", "passwd.onnx")
    yield models, watch
    watch.stop()


COMMANDS = {
    "inspect": ["inspect", "{m}", "--json"],
    "convert": ["convert", "{m}", "-o", "{out}/o.mnn", "--json", "--no-cache"],
    "profile": ["profile", "{m}", "--runs", "1", "--warmup", "0", "--json", "--no-cache"],
    "profile_mnn": ["profile", "{m}", "--engine", "mnn", "--runs", "1", "--warmup", "0", "--json", "--no-cache"],
    "compare": ["compare", "{m}", "--modes", "fp32", "--json", "--no-cache"],
}


def test_every_command_refuses_external_data_outside_the_folder_without_opening_it(escapes, tmp_path):
    models, watch = escapes
    env = {"MNNSCOPE_RUNS": str(tmp_path / "runs"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for kind, model in models.items():
        for name, argv in COMMANDS.items():
            if kind == "passwd" and name not in ("inspect", "convert"):
                continue
            r = mnnscope(*[a.format(m=model, out=tmp_path) for a in argv], env=env, timeout=120)
            assert r.returncode == 1, (kind, name, r.stdout[-500:], r.stderr[-500:])
            assert "outside the model's folder" in r.stderr and model.name in r.stderr, (kind, name, r.stderr)
            assert "Traceback" not in r.stderr
            data = json.loads(r.stdout)  # convert: its result with the refusal as an error; others: {"error": ...}
            assert "outside the model's folder" in json.dumps(data.get("error") or data.get("errors"))
    assert watch.opened == 0, "a model made the tool open a file outside its folder"


def test_the_runner_itself_refuses_them(escapes, tmp_path):
    """Asked directly (no inspector check first): the converter and ONNX Runtime never get the model."""
    from mnnscope.inspector.process.client import RunnerClient
    from mnnscope.runner.protocol import RunnerError
    models, watch = escapes
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, x=np.ones((1, 64), np.float32))
    with RunnerClient() as client:
        for kind, model in models.items():
            with pytest.raises(RunnerError) as e:
                client.request("convert", {"src": str(model), "dst": str(tmp_path / f"{kind}.mnn"),
                                           "log_path": str(tmp_path / f"{kind}.log")}, timeout=60)
            assert e.value.kind == "bad_model" and "outside the model's folder" in e.value.message
            assert not (tmp_path / f"{kind}.mnn").exists()
            with pytest.raises(RunnerError) as e:
                client.request("profile", {"path": str(model), "engine": "ort", "inputs": str(inputs),
                                           "runs": 1, "warmup": 1, "save": "none"}, timeout=60)
            assert e.value.kind == "bad_model" and "outside the model's folder" in e.value.message, e.value.message
        # the same folder layout inside the folder is fine (the check is not a blanket refusal)
        inside = escape_model(tmp_path / "ok", "w.bin", "ok.onnx")
        shutil.copyfile(SAMPLES / "external_data.onnx.data", tmp_path / "ok" / "w.bin")
        result = client.request("profile", {"path": str(inside), "engine": "ort", "inputs": str(inputs),
                                            "runs": 1, "warmup": 1, "save": "none"}, timeout=120)
        assert result["engine"] == "ort" or result
    assert watch.opened == 0


# ----- no network --------------------------------------------------------------------------------------
SITECUSTOMIZE = '''
import os, socket
_LOG = os.environ["MNNSCOPE_NET_LOG"]
with open("/proc/self/cmdline", "rb") as f:  # sys.argv is still ['-m'] here
    _cmd = f.read().replace(b"\\0", b" ").decode(errors="replace")[:200]
with open(os.environ["MNNSCOPE_NET_LOADED"], "a") as f:
    f.write(f"{os.getpid()} {_cmd}\\n")


def _record(what):
    with open(_LOG, "a") as f:
        f.write(f"{os.getpid()} {what}\\n")
    raise OSError("network access blocked by the test")


_connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex


def connect(self, address):
    if self.family == getattr(socket, "AF_UNIX", None):
        return _connect(self, address)
    _record(f"connect {address!r}")


def connect_ex(self, address):
    if self.family == getattr(socket, "AF_UNIX", None):
        return _connect_ex(self, address)
    _record(f"connect_ex {address!r}")


def getaddrinfo(host, *a, **k):
    _record(f"getaddrinfo {host!r}")


socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo
socket.gethostbyname = lambda host: _record(f"gethostbyname {host!r}")
'''


@pytest.fixture
def no_network(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "MNNSCOPE_NET_LOG": str(tmp_path / "net.log"),
           "MNNSCOPE_NET_LOADED": str(tmp_path / "loaded.log"), "MNNSCOPE_RUNS": str(tmp_path / "runs"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return env, tmp_path / "net.log", tmp_path / "loaded.log"


def test_the_blocker_detects_a_connection(no_network, tmp_path):
    """The detector can fail: a process that does connect is recorded and refused."""
    env, log, _ = no_network
    code = "import socket\ntry:\n socket.create_connection(('127.0.0.1', 9), timeout=1)\nexcept OSError as e: print(e)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, **env))
    assert "blocked by the test" in r.stdout, r.stderr
    assert log.read_text().strip()


def test_main_workflows_make_no_network_connection(no_network, tmp_path):
    env, log, loaded = no_network
    model = SAMPLES / "cnn.onnx"
    runs = [("inspect", model, "--json"), ("convert", model, "-o", tmp_path / "cnn.mnn", "--json"),
            ("profile", model, "--runs", "2", "--json"),
            ("profile", model, "--engine", "mnn", "--runs", "2", "--json"),
            ("compare", model, "--modes", "fp32,int8w", "--json"),
            ("inspect", SAMPLES / "cnn.mnn", "--json"),
            ("runs", "list", "--json")]
    for argv in runs:
        r = mnnscope(*argv, env=env, cwd=tmp_path, timeout=300)
        assert r.returncode == 0, (argv, r.stderr[-800:])
    starts = loaded.read_text().splitlines()
    assert any("mnnscope.runner" in s for s in starts), starts  # the runner processes were watched too
    assert not log.exists() or not log.read_text().strip(), log.read_text()


# ----- the scan ----------------------------------------------------------------------------------------
def _sources():
    for pkg in PACKAGES:
        yield from sorted((ROOT / pkg).rglob("*.py"))


def _dotted(node) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    return ""


UNSAFE_MODULES = ("pickle", "cPickle", "_pickle", "dill", "cloudpickle", "joblib", "shelve", "marshal", "pip",
                  "MNN.tools")
PROCESS_CALLS = ("subprocess.run", "subprocess.Popen", "subprocess.call", "subprocess.check_call",
                 "subprocess.check_output", "os.system", "os.popen", "os.execv", "os.execvp", "os.spawnv")


def scan(path: Path) -> list[str]:
    """What a source file does that this project forbids (line: reason)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in UNSAFE_MODULES or a.name.startswith("MNN.tools"):
                    found.append(f"{where}: imports {a.name}")
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if mod.split(".")[0] in UNSAFE_MODULES or mod.startswith("MNN.tools") or (
                    mod == "MNN" and any(a.name == "tools" for a in node.names)):
                found.append(f"{where}: imports from {mod}")
        elif isinstance(node, ast.Attribute) and _dotted(node).endswith("MNN.tools"):
            found.append(f"{where}: uses MNN.tools")
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name in ("np.load", "numpy.load"):
                allow = [k for k in node.keywords if k.arg == "allow_pickle"]
                if not allow or not (isinstance(allow[0].value, ast.Constant) and allow[0].value.value is False):
                    found.append(f"{where}: np.load without allow_pickle=False")
            if name in ("torch.load", "pd.read_pickle", "pandas.read_pickle"):
                found.append(f"{where}: {name}")
            if name in PROCESS_CALLS or name.startswith("os.exec"):
                words = [c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
                if any(w in ("pip", "pip3", "ensurepip") or w.startswith(("pip ", "pip3 ")) or " -m pip" in w
                       or w.endswith(("/pip", "/pip3")) for w in words):
                    found.append(f"{where}: runs pip")
                if any(w.lower() in ("mnnconvert", "mnnquant", "mnnconvert.exe") for w in words):
                    found.append(f"{where}: runs MNN's console scripts")
    return found


def test_the_scan_catches_what_it_looks_for(tmp_path):
    bad = tmp_path / "probe.py"
    bad.write_text("import pickle\nimport numpy as np\nfrom MNN import tools\nimport subprocess\n"
                   "np.load('x.npy')\nnp.load('x.npy', allow_pickle=True)\nimport torch\ntorch.load('m.pt')\n"
                   "subprocess.run([sys.executable, '-m', 'pip', 'install', 'x'])\nsubprocess.run(['mnnconvert'])\n")
    found = scan(bad)
    reasons = " ".join(found)
    for what in ("imports pickle", "imports from MNN", "np.load without allow_pickle=False", "torch.load",
                 "runs pip", "console scripts"):
        assert what in reasons, (what, found)
    assert sum("np.load" in f for f in found) == 2


def test_no_source_file_unpickles_calls_pip_or_mnn_tools():
    files = list(_sources())
    assert len(files) > 100
    found = [f for path in files for f in scan(path)]
    assert not found, "\n".join(found)
