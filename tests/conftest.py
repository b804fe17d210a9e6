"""Shared fixtures. Qt tests run headless: the platform is set here, before anything imports Qt.

Missing test dependencies: outside CI a test whose dependency (pytest-qt, a real-model package) is missing
is skipped with the reason; in CI (the CI environment variable set, as .ci/run does) it fails, so a CI run
can never pass by silently not running tests. Tests call `require_module()` / `missing_dependency()` from
here (`from conftest import ...`); as a safety net, a plain `pytest.importorskip()` or a skip whose reason
says "is not installed" anywhere in the suite is turned into a failure under CI by the hooks below.
"""
from __future__ import annotations

import atexit
import functools
import importlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# Tests never write run records, logs or caches into the user's home.
_SCRATCH = tempfile.mkdtemp(prefix="mnnscope-tests-")
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)  # (a hundred stayed in /tmp, one per pytest run)
for _var, _sub in (("MNNSCOPE_DATA_DIR", "data"), ("XDG_CACHE_HOME", "cache"),
                   ("XDG_CONFIG_HOME", "config")):
    os.environ[_var] = os.path.join(_SCRATCH, _sub)
os.environ.pop("MNNSCOPE_RUNS", None)  # conversion folders go beside the store's runs, as for users



def child_pids(parent: int | None = None) -> list[int]:
    """Live (not zombie) child processes of `parent` (default: this test process), read from /proc."""
    parent = os.getpid() if parent is None else parent
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent and fields[0] != "Z":
            out.append(int(d))
    return out


def in_ci() -> bool:
    """CI=true (GitHub Actions, GitLab, .ci/run) or any other non-empty value but 0/false/no."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


CI_NOTE = "[CI is set: a missing test dependency fails instead of skipping]"


def missing_dependency(reason: str) -> NoReturn:
    """A test dependency is missing: skip with `reason`, or fail under CI."""
    if in_ci():
        pytest.fail(f"{reason} {CI_NOTE}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)  # also at module level (pytest-qt guard)


def require_module(name: str, hint: str = ""):
    """Import and return test dependency `name`; missing, it skips (fails under CI). Usable at module level."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        missing_dependency(f"test dependency '{name}' is missing ({e}){': ' + hint if hint else ''}")


# Skip reasons that mean "a dependency is missing": pytest.importorskip's and this suite's own wording.
_MISSING_REASON = re.compile(r"could not import|is not installed|test dependency .* is missing")


def _fail_missing_dependency_skip(report) -> None:
    if not in_ci() or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if _MISSING_REASON.search(reason):
        report.outcome = "failed"
        report.longrepr = f"{reason} {CI_NOTE}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_missing_dependency_skip(outcome.get_result())  # a module-level importorskip


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_missing_dependency_skip(outcome.get_result())


ROOT = Path(__file__).resolve().parent.parent


@functools.lru_cache(maxsize=None)
def load_script(path) -> object:
    """A script of the repository (benchmarks/*.py, resources/samples/make_*.py: scripts, not a package) as a
    module, loaded once per test process."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def benchmark(name: str):
    """benchmarks/<name>.py as a module (e.g. gen_large: the Llama-like decoder of known size)."""
    return load_script(ROOT / "benchmarks" / f"{name}.py")
SAMPLES = ROOT / "resources" / "samples"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def samples() -> Path:
    return SAMPLES


@pytest.fixture
def runner_client():
    """A fresh runner client per test, always stopped afterwards (no runner outlives its test)."""
    from mnnscope.inspector.process.client import RunnerClient
    client = RunnerClient()
    yield client
    client.stop()
    assert not client.alive


@pytest.fixture(scope="module")
def shared_runner():
    """One runner for read-only requests across a test module (faster than one per test; stopped with the
    module so no runner outlives the tests that use it)."""
    from mnnscope.inspector.process.client import RunnerClient
    client = RunnerClient()
    yield client
    client.stop()


@pytest.fixture(scope="module")
def isolated_home(tmp_path_factory):
    """A test module's own run folders and caches (MNNSCOPE_RUNS, XDG_CACHE_HOME), restored afterwards."""
    base = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MNNSCOPE_RUNS", str(base / "runs"))
        mp.setenv("XDG_CACHE_HOME", str(base / "cache"))
        yield base


@pytest.fixture
def ui_watchdog(qtbot):
    """tests/uiwatchdog.py: measures the longest UI-thread stall while the test runs; call .check() at the end
    (the fixture checks too, so a workflow test cannot forget it)."""
    from uiwatchdog import UiWatchdog
    dog = UiWatchdog().start()
    yield dog
    dog.check()


@pytest.fixture(autouse=True)
def _gui_thread_collection():
    """Once a window has switched Python's automatic cycle collection to the GUI thread's timer (gui/gcguard.py),
    tests that run no event loop would never collect: collect after each test, on this thread, and freeze what
    survives (what earlier tests imported and cached), so that a test's UI-thread time measures its own work,
    not full collections over the whole suite's heap (as the app freezes its start-up state)."""
    yield
    guard = sys.modules.get("mnnscope.gui.gcguard")
    if guard is not None and guard.installed():
        # the test's windows were closed with deleteLater, which only an event loop carries out: delete them now,
        # so that what their Python side holds in cycles is garbage before the collection, not frozen for good
        from PySide6.QtCore import QCoreApplication, QEvent
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        guard.settle()
