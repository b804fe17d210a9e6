"""The one supervisor of the child processes inspector starts (the runner, the load process): which Python,
what environment, stderr drained into a tail (and forwarded), the end (ask, terminate, kill) and the
report of a death. RunnerClient (client.py) and ChildJob (childjob.py) speak their protocols on top of it.
"""
from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Callable

from mnnscope.runner import protocol

RUNNER_PYTHON_ENV = "MNNSCOPE_RUNNER_PYTHON"
RUNNER_MEMORY_ENV = "MNNSCOPE_RUNNER_MEMORY_MB"
RUNNER_MODULE = "mnnscope.runner"

_RUNNER_PACKAGE = Path(protocol.__file__).resolve().parent
_shim_dir: tempfile.TemporaryDirectory | None = None


def runner_python(explicit: str | None = None) -> str:
    """The interpreter that runs the runner: `--python` (explicit), else $MNNSCOPE_RUNNER_PYTHON, else ours.

    The one place that resolves it: every command (profile, compare, convert, inspect's shapes) and the
    window get it through RunnerClient.
    """
    return explicit or os.environ.get(RUNNER_PYTHON_ENV) or sys.executable


def runner_path_for(python: str) -> str | None:
    """A PYTHONPATH entry that makes `mnnscope.runner` importable by another Python (None: ours has it).

    A user's own Python (their MNN build) has no mnnscope installed, and the runner needs only the stdlib,
    numpy, onnx, MNN and onnxruntime: it gets a copy of the runner package under an `mnnscope` namespace
    folder, never our whole site-packages or the repository (whose top-level folders are not packages).
    """
    global _shim_dir
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return None
    if _shim_dir is None:
        _shim_dir = tempfile.TemporaryDirectory(prefix="mnnscope-runner-path-")
        dest = Path(_shim_dir.name) / "mnnscope" / "runner"
        dest.mkdir(parents=True)
        for src in _RUNNER_PACKAGE.glob("*.py"):
            (dest / src.name).write_bytes(src.read_bytes())
    return _shim_dir.name


def child_env(python: str, extra: dict | None = None) -> dict:
    """Our environment for a child under `python`: the runner importable, output unbuffered, `extra` on top."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    path = runner_path_for(python)
    if path:  # in front of any PYTHONPATH, the caller's `extra` one included
        env["PYTHONPATH"] = path + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def runner_memory_mb() -> int | None:
    """The runner's address-space limit in MB: $MNNSCOPE_RUNNER_MEMORY_MB (0: none), else 3/4 of this machine's
    memory; None where it cannot be set (no RLIMIT_AS) or is switched off."""
    raw = os.environ.get(RUNNER_MEMORY_ENV, "").strip()
    if raw:
        try:
            mb = int(float(raw))
        except ValueError:
            mb = -1
        if mb <= 0:
            return None
        return mb
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    return int(total * 3 / 4) >> 20


def limit_memory(pid: int, mb: int | None) -> None:
    """Cap a started child's address space (RLIMIT_AS), so a model that allocates without bound ends in the
    child's MemoryError or allocation failure, not in the OOM killer choosing among the user's processes."""
    if mb is None:
        return
    try:
        import resource
        resource.prlimit(pid, resource.RLIMIT_AS, (mb << 20, mb << 20))
    except (ImportError, AttributeError, OSError, ValueError):  # not Linux, or the child is already gone
        pass


def signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def how_it_ended(returncode: int | None) -> str:
    """'SIGSEGV' or 'exit code 3': the words every death report uses."""
    return signal_name(returncode) or f"exit code {returncode}"


class ChildProcess:
    """`python -m module args...` with piped stdout (and stdin when asked); stderr drained by a thread into
    `tail` (its last lines) and forwarded line by line to `on_stderr(text)` when set."""

    def __init__(self, python: str, module: str, args: list[str] = (), *, cwd: str, stdin: bool = False,
                 env: dict | None = None, new_session: bool = False, tail: int = 200,
                 on_stderr: Callable[[str], None] | None = None):
        self.python = python
        self.tail: collections.deque[str] = collections.deque(maxlen=tail)
        self.on_stderr = on_stderr
        self._synced = threading.Condition()
        self.last_sync: str | None = None  # the id in the last protocol.SYNC_PREFIX line read from stderr
        self.popen = subprocess.Popen([python, "-m", module, *args],
                                      stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      env=child_env(python, env), cwd=cwd, start_new_session=new_session)
        self.memory_mb = runner_memory_mb() if module == RUNNER_MODULE else None
        # Set from here right after the start (prlimit), not in a preexec_fn: that is unsafe with threads, and
        # the runner allocates nothing big before it has read its first request.
        limit_memory(self.popen.pid, self.memory_mb)
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self) -> None:
        try:
            for raw in self.popen.stderr:
                text = raw.decode("utf-8", "replace").rstrip("\n")
                if text.startswith(protocol.SYNC_PREFIX):
                    with self._synced:
                        self.last_sync = text[len(protocol.SYNC_PREFIX):].strip()
                        self._synced.notify_all()
                    continue
                self.tail.append(text)
                sink = self.on_stderr
                if sink is not None:
                    try:
                        sink(text)
                    except Exception:  # a listener's bug must not stop the draining (the child would block)
                        pass
        except (OSError, ValueError):  # the pipe was closed under us after the child died
            pass

    def wait_sync(self, msg_id, timeout: float) -> bool:
        """Wait until stderr has been read up to the runner's sync marker for `msg_id` (sent just before its
        reply): every line it printed for that request has then been forwarded."""
        with self._synced:
            return self._synced.wait_for(lambda: self.last_sync == str(msg_id), timeout)

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def death(self, what: str) -> str:
        """'<what> died (SIGSEGV): <last stderr line>' once the child has ended."""
        last = next((line for line in reversed(self.tail) if line.strip()), None)
        return f"{what} died ({how_it_ended(self.popen.returncode)})" + (f": {last}" if last else "")

    def end(self, timeout: float) -> None:
        """Wait `timeout` s for the child to leave on its own, then terminate, then kill."""
        try:
            self.popen.wait(timeout)
            return
        except subprocess.TimeoutExpired:
            pass
        self.popen.terminate()
        try:
            self.popen.wait(0.5)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(2.0)

    def kill(self) -> None:
        if self.alive:
            self.popen.kill()
        self.popen.wait(5)

    def close(self) -> None:
        """Close our ends of its pipes (the reader threads then end)."""
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            try:
                if stream is not None:
                    stream.close()
            except Exception:
                pass
