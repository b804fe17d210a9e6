"""The rule for missing test dependencies (tests/conftest.py): skipped outside CI, a failure when CI is set.

A tiny suite with the project's own conftest.py runs in a subprocess, once without CI and once with CI=1."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

TINY = {
    # module level, the way the GUI test modules guard pytest-qt
    "test_module_require.py": """
from conftest import require_module
require_module("mnnscope_no_such_module")
def test_never_runs():
    pass
""",
    # a plain importorskip, module level and in a test (the safety net)
    "test_module_importorskip.py": """
import pytest
pytest.importorskip("mnnscope_no_such_module")
def test_never_runs():
    pass
""",
    "test_in_test.py": """
import pytest
from conftest import missing_dependency
def test_importorskip():
    pytest.importorskip("mnnscope_no_such_module")
def test_real_model_package():
    missing_dependency("real-model package 'nothing' is not installed (python3 dev.py setup installs it)")
def test_runs():
    pass
""",
    # a skip for another reason stays a skip in CI
    "test_other_skip.py": """
import pytest
def test_hardware():
    pytest.skip("this CPU has fp16 arithmetic")
""",
}


def _run(tmp: Path, ci: str | None) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    if ci is not None:
        env["CI"] = ci
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "-q",
                           "--continue-on-collection-errors", "-c", str(tmp / "pytest.ini"), "--rootdir", str(tmp),
                           str(tmp)], cwd=tmp, env=env, capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


def _summary(out: str) -> dict[str, str]:
    """{"test_in_test.py::test_runs": "PASSED", "test_module_require.py": "ERROR", ...} from -rA's summary."""
    got = {}
    for line in out.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR"):
            got[rest.split(" - ")[0].strip()] = word
        elif word == "SKIPPED":  # SKIPPED [1] test_other_skip.py:3: reason
            got[rest.split("] ", 1)[1].split(":")[0]] = word
    return got


def test_missing_test_dependency_skips_locally_and_fails_under_ci(tmp_path):
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    for name, text in TINY.items():
        (tmp_path / name).write_text(text)

    rc, out = _run(tmp_path, None)
    assert rc == 0, out
    assert "1 passed" in out and "5 skipped" in out and "failed" not in out and "error" not in out, out

    for ci in ("1", "true"):
        rc, out = _run(tmp_path, ci)
        assert rc != 0, out
        got = _summary(out)
        assert got.get("test_in_test.py::test_runs") == "PASSED", out
        assert got.get("test_in_test.py::test_importorskip") == "FAILED", out
        assert got.get("test_in_test.py::test_real_model_package") == "FAILED", out
        assert got.get("test_module_require.py") == "ERROR", out  # a collection error: the module fails
        assert got.get("test_module_importorskip.py") == "ERROR", out
        assert got.get("test_other_skip.py") == "SKIPPED", out  # not a dependency: still a skip
        assert "CI is set: a missing test dependency fails instead of skipping" in out, out
        assert "mnnscope_no_such_module" in out, out

    rc, out = _run(tmp_path, "false")  # CI=false is not CI
    assert rc == 0, out
