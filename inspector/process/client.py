"""The runner client: starts `python -m mnnscope.runner` (through child.py's supervisor), sends requests,
watches the process (Qt-free)."""
from __future__ import annotations

import contextlib
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Callable

from mnnscope.runner import protocol
from mnnscope.runner.protocol import RunnerError

from mnnscope.inspector.process.child import ChildProcess, how_it_ended, runner_python, signal_name

EventHandler = Callable[[str, dict], None]


class RunnerDied(RunnerError):
    """The runner process ended while a request was in flight."""

    def __init__(self, returncode: int | None, last_op: dict | None, log_tail: list[str]):
        self.returncode = returncode
        self.signal = signal_name(returncode)
        self.last_op = last_op
        self.log_tail = log_tail
        how = f"({how_it_ended(returncode)})"
        where = f" during op `{last_op['name']}` ({last_op.get('type') or '?'})" if last_op else ""
        super().__init__(protocol.DIED, f"runner died {how}{where}", {"log_tail": log_tail})


class Cancelled(RunnerError):
    def __init__(self):
        super().__init__(protocol.CANCELLED, "cancelled")


# The longest protocol line read whole (a 20,000-node dump's manifest is about 10 MB); a longer one, or bytes
# that never end their line, are dropped in pieces instead of growing this process's memory without bound.
MAX_LINE = 256 << 20
SYNC_WAIT = 2.0  # s: how long a reply waits for the stderr lines printed before it (protocol.SYNC_PREFIX)

# temporary folders a process removes itself when done, named by its pid (`mnnscope-<kind>-<pid>-<random>`): the
# runner's working folder, the Compare dock's and a comparison's own; remove_orphan_workdirs finds those of processes
# that are gone (a folder meant to stay, such as `compare --keep`'s, has no pid in its name)
OWNED_TEMP = re.compile(r"mnnscope-[a-z]+(?:-[a-z]+)*-(\d+)-[A-Za-z0-9_]+")


def owned_prefix(kind: str) -> str:
    """The name a temporary folder of this process starts with (OWNED_TEMP)."""
    return f"mnnscope-{kind}-{os.getpid()}-"


def owned_tempdir(kind: str) -> str:
    """A new temporary folder that this process removes when done; swept once the process is gone without it."""
    return tempfile.mkdtemp(prefix=owned_prefix(kind))


def work_folder(work_dir: str | None, kind: str, keep: bool) -> str:
    """`work_dir` (made if missing), or without one a new temporary folder: owned by this process (owned_tempdir)
    unless it is to be kept, when its name carries no pid."""
    if work_dir:
        work = os.path.abspath(work_dir)
        os.makedirs(work, exist_ok=True)
        return work
    return tempfile.mkdtemp(prefix=f"mnnscope-{kind}-") if keep else owned_tempdir(kind)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # someone else's process: not ours to judge
    return True


def remove_orphan_workdirs(folder: str | None = None) -> list[str]:
    """Remove the folders a process owned (`mnnscope-<kind>-<pid>-*`: OWNED_TEMP, the runner's and comparisons')
    in the temp folder whose process is gone (a SIGKILLed app or command ran no cleanup); the removed paths.
    Folders of live processes, of other users, and without a pid in their name stay."""
    base = folder or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(base)
    except OSError:
        return removed
    for name in names:
        m = OWNED_TEMP.fullmatch(name)
        if m is None:
            continue
        path = os.path.join(base, name)
        try:
            if _pid_alive(int(m.group(1))) or os.stat(path).st_uid != os.getuid() or not os.path.isdir(path):
                continue
        except OSError:
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            removed.append(path)
    return removed


class RunnerClient:
    """One runner process, one request at a time; restarted on demand after it dies.

    `request()` blocks the calling thread (call it from a worker thread in the GUI); `cancel()` may be
    called from any thread: it asks the runner to stop, then terminates and kills it after a grace period.
    """

    def __init__(self, python: str | None = None, env: dict | None = None, grace: float = 0.5):
        self.python = runner_python(python)
        self.extra_env = env or {}
        self.grace = grace
        self._child: ChildProcess | None = None
        self._messages: queue.Queue = queue.Queue()
        self._log_sink: EventHandler | None = None
        self._next_id = 0
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._inflight: int | None = None
        self.restarts = 0
        self._tmp: tempfile.TemporaryDirectory | None = None

    # ----- process ----------------------------------------------------------------------------
    @property
    def proc(self) -> subprocess.Popen | None:
        return self._child.popen if self._child is not None else None

    def start(self) -> None:
        if self.alive:
            return
        if self._child is not None:
            self.restarts += 1
            self._child.close()  # the dead runner's pipes
        try:
            self._child = ChildProcess(self.python, "mnnscope.runner", cwd=self._workdir(), stdin=True,
                                       env=self.extra_env, new_session=True, on_stderr=self._forward_stderr)
        except OSError as e:
            raise RunnerError(protocol.INTERNAL, f"cannot start the runner with '{self.python}': {e}")
        self._messages = queue.Queue()
        threading.Thread(target=self._read_stdout, args=(self._child, self._messages), daemon=True).start()

    def _workdir(self) -> str:
        """A private working directory: the converter drops scratch files into its current directory. Its name
        carries this process's pid, and the folders of processes that are gone (killed: nothing removed them)
        are removed first."""
        if self._tmp is None:
            remove_orphan_workdirs()
            self._tmp = tempfile.TemporaryDirectory(prefix=owned_prefix("runner"))
        return self._tmp.name

    @property
    def alive(self) -> bool:
        return self._child is not None and self._child.alive

    @property
    def pid(self) -> int | None:
        return self._child.pid if self._child else None

    @staticmethod
    def _read_stdout(child: ChildProcess, messages) -> None:
        stream = child.popen.stdout
        try:
            while True:
                line = stream.readline(MAX_LINE)
                if not line:
                    break
                if len(line) >= MAX_LINE and not line.endswith(b"\n"):
                    while True:  # the rest of an over-long line, in pieces, dropped
                        more = stream.readline(MAX_LINE)
                        if not more or more.endswith(b"\n"):
                            break
                    child.tail.append(f"(a protocol line over {MAX_LINE} bytes was dropped)")
                    continue
                try:
                    messages.put(protocol.decode(line))
                except ValueError:  # a stray print that reached the protocol stream: kept as a log line
                    child.tail.append(line.decode("utf-8", "replace").rstrip()[:2000])
        except (OSError, ValueError):  # the pipe was closed under us: the runner is gone
            pass
        messages.put(None)  # end of stream: the process is gone or going

    def _forward_stderr(self, text: str) -> None:
        sink = self._log_sink
        if sink is not None:
            sink("log", {"text": text, "stream": "native"})

    def stop(self, timeout: float = 2.0) -> None:
        """Shut the runner down: ask, then terminate, then kill."""
        child = self._child
        if child is None:
            return
        if child.alive:
            try:
                child.popen.stdin.write(protocol.encode(None, "shutdown"))
                child.popen.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass
            child.end(timeout)
        child.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def kill(self) -> None:
        if self.alive:
            self._child.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    # ----- requests ---------------------------------------------------------------------------
    def request(self, msg_type: str, payload: dict | None = None, on_event: EventHandler | None = None,
                timeout: float | None = None, hang_timeout: float | None = None,
                cancelled: Callable[[], bool] | None = None) -> dict:
        """Send one request and wait for its result; events go to `on_event(type, payload)`. `cancelled`: the
        caller's job's cancel flag, read as `cancel()` is: `cancel()` finds nothing to stop between two requests
        of a job, so a job cancelled there would send its next request in full (the window's jobs: gui.runnerhost).

        Raises RunnerError (the runner reported an error), RunnerDied (it died: signal and last op
        named), Cancelled, or RunnerError(kind="timeout").
        """
        if cancelled is not None and cancelled():
            raise Cancelled()
        with self._lock:
            self.start()
            self._next_id += 1
            msg_id = self._next_id
            self._cancel.clear()
            self._inflight = msg_id
            self._log_sink = on_event
            child, messages = self._child, self._messages
            proc = child.popen
            last_op: dict | None = None
            try:
                try:
                    proc.stdin.write(protocol.encode(msg_id, msg_type, payload or {}))
                    proc.stdin.flush()
                except (BrokenPipeError, OSError, ValueError):
                    # the death is reported below from the exit status (ValueError: its pipe closed by a close() from
                    # another thread, as a refused model's CLI does while a shape request starts: CI, 2026-12-06)
                    pass
                start = last_seen = time.monotonic()
                while True:
                    if self._cancel.is_set() or (cancelled is not None and cancelled()):
                        self._stop_inflight(child, msg_id, messages)
                        raise Cancelled()
                    now = time.monotonic()
                    if timeout is not None and now - start > timeout:
                        child.end(0)
                        raise RunnerError(protocol.TIMEOUT, f"'{msg_type}' took longer than {timeout:g} s; the runner was stopped")
                    if hang_timeout is not None and now - last_seen > hang_timeout:
                        child.end(0)
                        where = f" in op `{last_op['name']}`" if last_op else ""
                        raise RunnerError(protocol.TIMEOUT, f"the runner stopped answering{where} for {hang_timeout:g} s; it was stopped")
                    try:
                        msg = messages.get(timeout=0.05)
                    except queue.Empty:
                        continue
                    if msg is None:
                        proc.wait(5)
                        time.sleep(0.05)  # let the stderr reader drain the last native lines
                        raise RunnerDied(proc.returncode, last_op, list(child.tail)[-40:])
                    last_seen = time.monotonic()
                    if msg.get("id") != msg_id:
                        continue  # late messages of an earlier, cancelled request
                    kind, body = msg["type"], msg.get("payload")
                    if kind in ("result", "error"):
                        child.wait_sync(msg_id, SYNC_WAIT)  # the lines it printed first reach on_event first
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

    def _stop_inflight(self, child: ChildProcess, msg_id: int, messages: queue.Queue) -> None:
        """Cancel protocol: a cancel request, a grace period for the runner to stop, then terminate/kill."""
        proc = child.popen
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
        child.end(0)

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

