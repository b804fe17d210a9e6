"""Packaging: the folders gui/ inspector/ runner/ resources/ install as mnnscope.gui, mnnscope.inspector,
mnnscope.runner and mnnscope.resources, every package is listed in pyproject.toml, and a wheel built from the
repository, installed (not editable) into a fresh venv, works there on its own."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest

from conftest import child_pids
from mnnscope.runner import protocol

try:
    import tomllib
except ImportError:  # Python 3.10
    from conftest import require_module
    tomllib = require_module("tomli", "pip install -e .[test]")

ROOT = Path(__file__).resolve().parent.parent
TOP_LEVEL = ("gui", "inspector", "runner", "resources")


def _setuptools_config() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]


def test_pyproject_lists_every_package_folder():
    """A subpackage folder (one with __init__.py) missing from `packages` would silently be left out of the
    wheel while the editable install, which maps whole folders, still works."""
    cfg = _setuptools_config()
    package_dir = cfg["package-dir"]
    assert package_dir == {f"mnnscope.{name}": name for name in TOP_LEVEL}
    found = set()
    for package, folder in package_dir.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            found.add(".".join((package, *init.parent.relative_to(ROOT / folder).parts)))
    assert sorted(cfg["packages"]) == sorted(found)


def test_every_code_folder_is_a_package():
    """A code folder without __init__.py imports (as a namespace package) from the repository but would not be
    found by the `packages` check above, nor installed. resources/ holds data folders (samples/ has the script
    that makes them): only its top level is a package."""
    for top in ("gui", "inspector", "runner"):
        for folder in [ROOT / top, *(p for p in (ROOT / top).rglob("*") if p.is_dir())]:
            if folder.name == "__pycache__" or not any(folder.glob("*.py")):
                continue
            assert (folder / "__init__.py").is_file(), f"{folder.relative_to(ROOT)} has modules but no __init__.py"


# ----- the built wheel in a fresh venv --------------------------------------------------------------------------


def _clean_env(venv: Path | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTHONSAFEPATH")}
    env["PYTHONNOUSERSITE"] = "1"  # nothing from ~/.local either
    env["QT_QPA_PLATFORM"] = "offscreen"
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = str(venv / "bin") + os.pathsep + env.get("PATH", "")
    return env


def _check(cmd, cwd, env=None, timeout=60, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env or _clean_env(), capture_output=True, text=True,
                          timeout=timeout, **kw)
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel pip builds from a copy of the repository's sources (a build writes build/ and *.egg-info into
    its source tree: never into the repository while tests run). No build isolation (setuptools>=77 and wheel
    come with the test extras) and no index: nothing is downloaded."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in TOP_LEVEL:
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _check([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
            "-w", base / "dist", src], cwd=base, timeout=180)
    (built,) = (base / "dist").glob("mnnscope-*.whl")
    return built


@pytest.fixture(scope="module")
def fresh(tmp_path_factory, wheel) -> dict:
    """A fresh venv with the wheel installed (not editable); its third-party dependencies come from this test
    run's environment without installing them again.

    How, and why it is sound: the venv is created with `python -m venv --without-pip` (from a venv's python
    that makes a venv of the base interpreter, not a nested one) and without --system-site-packages, so
    nothing of the base or project environments is visible in it. The wheel is installed into it by this
    environment's pip (`pip --python FRESH install --no-deps --no-index WHEEL`): a real, non-editable install
    with its own `mnnscope` console script. Only afterwards (so pip sees an empty venv and never considers
    the project's editable install as "already installed") a `.pth` file adds this environment's
    site-packages at the END of the fresh venv's sys.path, for numpy, MNN, PySide6 and the rest. That
    directory holds no top-level gui/inspector/runner/resources (checked below) and does not put the
    repository on the path: the editable install's own .pth hook lives in it, and .pth files of a directory
    added by a .pth line are not processed, so its import finder is never installed. mnnscope itself is an
    implicit namespace package found in the fresh site-packages first; the tests check that every mnnscope
    module, and the bundled samples, load from there, and run everything from a folder outside the
    repository."""
    base = tmp_path_factory.mktemp("fresh")
    venv = base / "venv"
    _check([sys.executable, "-m", "venv", "--without-pip", venv], cwd=base)
    python = venv / "bin" / "python"
    _check([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", wheel],
           cwd=base, timeout=120)
    site = Path(_check([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                       cwd=base).stdout.strip())
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    for d in deps:
        for name in TOP_LEVEL:
            assert not (Path(d) / name).exists() and not (Path(d) / f"{name}.py").exists(), \
                f"{d} has a top-level '{name}': it would hide what this test checks"
    (site / "zz-mnnscope-test-deps.pth").write_text("".join(f"{d}\n" for d in sorted(deps)))
    work = base / "work"  # the current directory of every command: outside the repository
    work.mkdir()
    return {"venv": venv, "python": python, "site": site, "work": work, "env": _clean_env(venv)}


@pytest.mark.slow
def test_wheel_holds_the_packages_and_resources(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in _setuptools_config()["packages"]:
        assert package.replace(".", "/") + "/__init__.py" in names, package
    assert not [n for n in names if n.split("/")[0] in TOP_LEVEL], "a top-level gui/inspector/runner/resources"
    assert {n.split("/")[0] for n in names} == {"mnnscope", "mnnscope-0.1.0.dist-info"}
    resources = {f"mnnscope/resources/{p.relative_to(ROOT / 'resources').as_posix()}"
                 for p in (ROOT / "resources").rglob("*")
                 if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    assert resources - names == set()
    for sample in ("cnn.onnx", "cnn.mnn", "moe_llm.onnx", "external_data.onnx", "external_data.onnx.data"):
        assert f"mnnscope/resources/samples/{sample}" in names


@pytest.mark.slow
def test_installed_wheel_imports_only_under_mnnscope(fresh):
    script = """
import importlib, json, sys
out = {"top": {}}
for name in ("gui", "inspector", "runner", "resources"):
    try:
        importlib.import_module(name)
        out["top"][name] = "imported"
    except ImportError:
        out["top"][name] = None
for package in sys.argv[1:]:  # every package of the wheel
    importlib.import_module(package)
import mnnscope, mnnscope.gui.main, mnnscope.inspector.cli.app, mnnscope.runner.server
from mnnscope.resources import SAMPLES
out["files"] = {m: sys.modules[m].__file__ for m in sorted(sys.modules) if m.startswith("mnnscope.")}
out["mnnscope_path"] = list(mnnscope.__path__)
out["samples"] = str(SAMPLES)
out["sys_path"] = sys.path
print(json.dumps(out))
"""
    packages = _setuptools_config()["packages"]
    got = json.loads(_check([fresh["python"], "-c", script, *packages], cwd=fresh["work"], env=fresh["env"]).stdout)
    assert got["top"] == {name: None for name in TOP_LEVEL}
    site = str(fresh["site"])
    assert got["mnnscope_path"] == [os.path.join(site, "mnnscope")]
    assert set(packages) < set(got["files"])
    assert all(f.startswith(site + os.sep) for f in got["files"].values()), got["files"]
    assert got["samples"] == os.path.join(site, "mnnscope", "resources", "samples")
    assert not [p for p in got["sys_path"] if p and Path(p).resolve() == ROOT], got["sys_path"]


@pytest.mark.slow
def test_installed_wheel_inspects_a_bundled_sample(fresh):
    samples = Path(fresh["site"]) / "mnnscope" / "resources" / "samples"
    for sample, fmt in (("cnn.onnx", "onnx"), ("cnn.mnn", "mnn")):  # the .mnn one is read by the runner
        out = _check([fresh["venv"] / "bin" / "mnnscope", "inspect", samples / sample, "--json"],
                     cwd=fresh["work"], env=fresh["env"], timeout=120).stdout
        data = json.loads(out)
        assert data["format"] == fmt and data["nodes"] > 0 and data["path"] == str(samples / sample)
        assert data["inputs"] and data["outputs"]


@pytest.mark.slow
def test_installed_runner_answers_hello(fresh):
    """`python -m mnnscope.runner` speaks the protocol: one JSON line per message on stdout."""
    requests = protocol.encode(1, "hello", {}) + protocol.encode(None, "shutdown")
    proc = subprocess.run([str(fresh["python"]), "-m", "mnnscope.runner"], input=requests, capture_output=True,
                          cwd=fresh["work"], env=fresh["env"], timeout=120)
    messages = [protocol.decode(line) for line in proc.stdout.splitlines() if line.strip()]
    results = [m for m in messages if m["id"] == 1 and m["type"] == "result"]
    assert len(results) == 1, (messages, proc.stderr[-3000:])
    hello = results[0]["payload"]
    assert hello["python"] == str(fresh["python"])
    assert hello["mnn"] and hello["onnxruntime"] and "CPU" in hello["backends"]
    assert proc.returncode == 0, proc.stderr[-3000:]


def _children(pid: int) -> dict[int, str]:
    """Live child processes of `pid`: {pid: command line}."""
    return {child: _cmdline(child) for child in child_pids(pid)}


def _cmdline(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return None


def _end_orphans(procs: dict[int, str]) -> None:
    """The app's runner and loader have sessions of their own and end when the app's pipes close; any still
    there after a few seconds (same pid, same command line: not a reused pid) is killed."""
    deadline = time.monotonic() + 5
    while procs and time.monotonic() < deadline:
        procs = {pid: cmd for pid, cmd in procs.items() if _cmdline(pid) == cmd}
        time.sleep(0.05)
    for pid, cmd in procs.items():
        if _cmdline(pid) == cmd:
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="watches the app's child processes in /proc")
def test_installed_demo_starts_and_opens_the_bundled_model(fresh, tmp_path):
    """`mnnscope --demo` offscreen. The app has no quit-after option, so the test waits for what the window
    does once it has loaded a model: it records it in its recent files (settings, written at once) and
    starts its runner for the shapes. Both must name the installed copies: the venv's sample and python."""
    config = tmp_path / "config"
    env = dict(fresh["env"], XDG_CONFIG_HOME=str(config), MNNSCOPE_DATA_DIR=str(tmp_path / "data"))
    demo = os.path.join(str(fresh["site"]), "mnnscope", "resources", "samples", "moe_llm.onnx")
    runner = f"{fresh['python']} -m mnnscope.runner"

    def recent_has_demo() -> bool:
        return any(demo in f.read_text(errors="replace") for f in config.rglob("*") if f.is_file())

    app = subprocess.Popen([str(fresh["venv"] / "bin" / "mnnscope"), "--demo"], cwd=fresh["work"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    children: dict[int, str] = {}
    opened = started = False
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and app.poll() is None and not (opened and started):
            children = _children(app.pid)
            started = started or runner in children.values()
            opened = opened or recent_has_demo()
            time.sleep(0.05)
        alive = app.poll() is None
    finally:
        if app.poll() is None:
            children = _children(app.pid)
            os.killpg(app.pid, signal.SIGTERM)
        _, err = app.communicate(timeout=10)
        _end_orphans(children)
    err = err.decode("utf-8", "replace")
    assert alive, f"the app exited ({app.returncode}) before opening the demo model\n{err[-3000:]}"
    assert opened, f"the demo model {demo} was not opened\n{err[-3000:]}"
    assert started, f"no runner ({runner}) was started for the demo model's shapes\n{err[-3000:]}"
    assert "Traceback" not in err, err[-3000:]
