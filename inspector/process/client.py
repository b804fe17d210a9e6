"""The runner client: starts `python -m runner`, sends requests, watches the process (Qt-free)."""
from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from mnnscope.runner import protocol
from mnnscope.runner.protocol import RunnerError

EventHandler = Callable[[str, dict], None]

_RUNNER_PACKAGE = Path(protocol.__file__).resolve().parent
_shim_dir: tempfile.TemporaryDirectory | None = None


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


class RunnerDied(RunnerError):
    """The runner process ended while a request was in flight."""

    def __init__(self, returncode: int | None, last_op: dict | None, log_tail: list[str]):
        self.returncode = returncode
        self.signal = signal_name(returncode)
        self.last_op = last_op
        self.log_tail = log_tail
        how = f"({self.signal})" if self.signal else f"(exit code {returncode})"
        where = f" during op `{last_op['name']}` ({last_op.get('type') or '?'})" if last_op else ""
        super().__init__(protocol.DIED, f"runner died {how}{where}", {"log_tail": log_tail})


class Cancelled(RunnerError):
    def __init__(self):
        super().__init__(protocol.CANCELLED, "cancelled")


def _close_pipes(proc: subprocess.Popen) -> None:
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        try:
            stream.close()
        except Exception:
            pass


def signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


class RunnerClient:
    """One runner process, one request at a time; restarted on demand after it dies.

    `request()` blocks the calling thread (call it from a worker thread in the GUI); `cancel()` may be
    called from any thread: it asks the runner to stop, then terminates and kills it after a grace period.
    """

    def __init__(self, python: str | None = None, env: dict | None = None, grace: float = 0.5):
        self.python = python or sys.executable
        self.extra_env = env or {}
        self.grace = grace
        self.proc: subprocess.Popen | None = None
        self._messages: queue.Queue = queue.Queue()
        self._log_tail: collections.deque = collections.deque(maxlen=200)
        self._log_sink: EventHandler | None = None
        self._next_id = 0
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._inflight: int | None = None
        self.restarts = 0
        self._tmp: tempfile.TemporaryDirectory | None = None

    # ----- process ----------------------------------------------------------------------------
    def start(self) -> None:
        if self.alive:
            return
        if self.proc is not None:
            self.restarts += 1
            _close_pipes(self.proc)  # the dead runner's pipes
        env = dict(os.environ)
        extra = runner_path_for(self.python)
        if extra:
            env["PYTHONPATH"] = extra + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["PYTHONUNBUFFERED"] = "1"
        env.update(self.extra_env)
        try:
            self.proc = subprocess.Popen([self.python, "-m", "mnnscope.runner"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                         cwd=self._workdir(), start_new_session=True)
        except OSError as e:
            raise RunnerError(protocol.INTERNAL, f"cannot start the runner with '{self.python}': {e}")
        self._messages = queue.Queue()
        threading.Thread(target=self._read_stdout, args=(self.proc, self._messages), daemon=True).start()
        threading.Thread(target=self._read_stderr, args=(self.proc,), daemon=True).start()

    def _workdir(self) -> str:
        """A private working directory: the converter drops scratch files into its current directory."""
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="mnnscope-runner-")
        return self._tmp.name

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def _read_stdout(self, proc, messages) -> None:
        try:
            for line in proc.stdout:
                try:
                    messages.put(protocol.decode(line))
                except ValueError:
                    self._log_tail.append(line.decode("utf-8", "replace").rstrip())
        except (OSError, ValueError):  # the pipe was closed under us: the runner is gone
            pass
        messages.put(None)  # end of stream: the process is gone or going

    def _read_stderr(self, proc) -> None:
        try:
            self._forward_stderr(proc)
        except (OSError, ValueError):  # closed under us after the runner died
            pass

    def _forward_stderr(self, proc) -> None:
        for raw in proc.stderr:
            text = raw.decode("utf-8", "replace").rstrip("\n")
            self._log_tail.append(text)
            sink = self._log_sink
            if sink is not None:
                try:
                    sink("log", {"text": text, "stream": "native"})
                except Exception:
                    pass

    def stop(self, timeout: float = 2.0) -> None:
        """Shut the runner down: ask, then terminate, then kill."""
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                proc.stdin.write(protocol.encode(None, "shutdown"))
                proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass
            self._end(proc, timeout)
        _close_pipes(proc)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def _end(self, proc, timeout: float) -> None:
        try:
            proc.wait(timeout)
            return
        except subprocess.TimeoutExpired:
            pass
        proc.terminate()
        try:
            proc.wait(0.5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(2.0)

    def kill(self) -> None:
        if self.alive:
            self.proc.kill()
            self.proc.wait(2.0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    # ----- requests ---------------------------------------------------------------------------
    def request(self, msg_type: str, payload: dict | None = None, on_event: EventHandler | None = None,
                timeout: float | None = None, hang_timeout: float | None = None) -> dict:
        """Send one request and wait for its result; events go to `on_event(type, payload)`.

        Raises RunnerError (the runner reported an error), RunnerDied (it died: signal and last op
        named), Cancelled, or RunnerError(kind="timeout").
        """
        with self._lock:
            self.start()
            self._next_id += 1
            msg_id = self._next_id
            self._cancel.clear()
            self._inflight = msg_id
            self._log_sink = on_event
            proc, messages = self.proc, self._messages
            last_op: dict | None = None
            try:
                try:
                    proc.stdin.write(protocol.encode(msg_id, msg_type, payload or {}))
                    proc.stdin.flush()
                except (BrokenPipeError, OSError):
                    pass  # the death is reported below from the exit status
                start = last_seen = time.monotonic()
                while True:
                    if self._cancel.is_set():
                        self._stop_inflight(proc, msg_id, messages)
                        raise Cancelled()
                    now = time.monotonic()
                    if timeout is not None and now - start > timeout:
                        self._end(proc, 0)
                        raise RunnerError(protocol.TIMEOUT, f"'{msg_type}' took longer than {timeout:g} s; the runner was stopped")
                    if hang_timeout is not None and now - last_seen > hang_timeout:
                        self._end(proc, 0)
                        where = f" in op `{last_op['name']}`" if last_op else ""
                        raise RunnerError(protocol.TIMEOUT, f"the runner stopped answering{where} for {hang_timeout:g} s; it was stopped")
                    try:
                        msg = messages.get(timeout=0.05)
                    except queue.Empty:
                        continue
                    if msg is None:
                        proc.wait(5)
                        time.sleep(0.05)  # let the stderr reader drain the last native lines
                        raise RunnerDied(proc.returncode, last_op, list(self._log_tail)[-40:])
                    last_seen = time.monotonic()
                    if msg.get("id") != msg_id:
                        continue  # late messages of an earlier, cancelled request
                    kind, body = msg["type"], msg.get("payload")
                    if kind == "result":
                        return body
                    if kind == "error":
                        err = RunnerError.from_payload(body or {})
                        if err.kind == protocol.CANCELLED:
                            raise Cancelled()
                        raise err
                    if kind == "op_begin":
                        last_op = body
                    elif kind == "op_end" and last_op and body and body.get("name") == last_op.get("name"):
                        last_op = None
                    if kind != "heartbeat" and on_event is not None:
                        on_event(kind, body or {})
            finally:
                self._inflight = None
                self._log_sink = None

    def _stop_inflight(self, proc, msg_id: int, messages: queue.Queue) -> None:
        """Cancel protocol: a cancel request, a grace period for the runner to stop, then terminate/kill."""
        try:
            proc.stdin.write(protocol.encode(None, "cancel", {"target": msg_id}))
            proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            return
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline:
            try:
                msg = messages.get(timeout=0.05)
            except queue.Empty:
                continue
            if msg is None:
                return
            if msg.get("id") == msg_id and msg["type"] in ("result", "error"):
                return  # the runner stopped in time and stays usable
        self._end(proc, 0)

    def cancel(self) -> None:
        """Cancel the request in flight (thread-safe; no-op when idle)."""
        if self._inflight is not None:
            self._cancel.set()

    def hello(self, **payload) -> dict:
        return self.request("hello", payload, timeout=120)


@contextlib.contextmanager
def client_or_own(client: RunnerClient | None):
    """The caller's runner client as it is, or a new one that is stopped when the block ends."""
    if client is not None:
        yield client
        return
    own = RunnerClient()
    try:
        yield own
    finally:
        own.stop()


def result_json(obj) -> str:
    return json.dumps(obj, indent=2, allow_nan=True)
