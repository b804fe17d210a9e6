"""A short-lived child process that sends JSON lines (the load process): polled, cancellable, its death
reported, never hidden. Supervised by child.py like the runner."""
from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time

from mnnscope.inspector.errors import LoadCancelled, ModelError
from mnnscope.inspector.process.child import ChildProcess


class ChildJob:
    """A `python -m mnnscope.inspector.formats.loadproc ...` child: polled, cancellable, its death reported.

    It runs under our own Python (it imports inspector), never the runner's."""

    def __init__(self, args: list[str], python: str | None = None):
        self.child = ChildProcess(python or sys.executable, "mnnscope.inspector.formats.loadproc", args,
                                  cwd=tempfile.gettempdir(), tail=50)
        self.proc = self.child.popen
        self.started = time.perf_counter()
        self._cancel = threading.Event()

    def cancel(self) -> None:
        self._cancel.set()
        if self.child.alive:
            self.child.popen.kill()

    def messages(self):
        """Yield the child's JSON sections; raise ModelError for its error or its death."""
        try:
            for line in self.proc.stdout:
                if self._cancel.is_set():
                    raise LoadCancelled()
                msg = json.loads(line)
                if msg.get("section") == "error":
                    raise ModelError(msg.get("message", "unknown error"))
                yield msg
                time.sleep(0)  # let the UI thread take the GIL between sections
            if self._cancel.is_set():
                raise LoadCancelled()
            if self.proc.wait(10) != 0:
                raise ModelError(self.child.death("the loader process"))
        finally:
            self.close()

    def close(self) -> None:
        self.child.kill()
        self.child.close()


def run_service_child(module: str, request: dict, on_event, cancelled, pids: dict | None = None,
                      what: str = "service") -> dict:
    """Run a service in `python -m module JSON` (a child of ours that prints JSON lines: {"event", "payload"},
    {"runner_pid"}, {"result"} or {"error": {kind, message}}; "cancel" on its stdin stops it) from a worker
    thread; returns its result. `cancelled` is the job's flag (gui.runnerhost: callable, set_hook); `pids`
    receives the child's and its runner's process ids. Raises RunnerError for a cancel, the service's error
    or the child's death (with its last stderr lines). Used by the Profile and Text docks: the services
    import onnx, whose initialisation holds the GIL for seconds, so they never run in the GUI process."""
    from mnnscope.runner import protocol
    from mnnscope.runner.protocol import RunnerError
    child = ChildProcess(sys.executable, module, [json.dumps(request)], cwd=tempfile.gettempdir(), stdin=True,
                         tail=50)
    if pids is not None:
        pids["child"] = child.pid

    def stop():
        try:
            child.popen.stdin.write(b"cancel\n")
            child.popen.stdin.flush()
        except (OSError, ValueError):
            pass

    cancelled.set_hook(stop)
    result = error = None
    try:
        for raw in child.popen.stdout:
            msg = json.loads(raw)
            if "event" in msg:
                on_event(msg["event"], msg.get("payload"))
            elif "runner_pid" in msg and pids is not None:
                pids["runner"] = msg["runner_pid"]
            elif "result" in msg:
                result = msg["result"]
            elif "error" in msg:
                error = msg["error"]
        child.end(5.0)
    finally:
        child.close()
    if cancelled():
        raise RunnerError(protocol.CANCELLED, "cancelled")
    if error is not None:
        raise RunnerError(error.get("kind") or protocol.INTERNAL, error.get("message") or f"{what} failed")
    if result is None:
        raise RunnerError(protocol.DIED, child.death(f"the {what} process"))
    return result


SERVICE_CANCELLED_EXIT = 3  # a service child stopped by "cancel" on its stdin (or stdin closing)


def _json_writer():
    """A private copy of stdout for the JSON lines; fd 1 then points at stderr, so nothing else lands there."""
    fd = os.dup(1)
    os.dup2(2, 1)
    out = os.fdopen(fd, "w", buffering=1)
    lock = threading.Lock()

    def write(obj) -> None:
        line = json.dumps(obj, default=str)
        with lock:
            out.write(line + "\n")
            out.flush()
    return write


def service_child_main(argv: list[str], what: str, options_class, run) -> int:
    """The child side of run_service_child: `options_class(**json.loads(argv[0]))`, then
    `run(opts, client=RunnerClient, on_event=...)` with a runner of its own, every event, the runner's pid and
    the result or error as JSON lines on stdout; "cancel" on stdin (or stdin closing) kills the runner and
    ends the process with SERVICE_CANCELLED_EXIT. Exit codes: 0 result, 1 error, 2 bad request."""
    write = _json_writer()
    from mnnscope.inspector.errors import USER_ERRORS, UsageError
    from mnnscope.inspector.process.client import RunnerClient
    from mnnscope.runner.protocol import RunnerError
    try:
        opts = options_class(**json.loads(argv[0]))
    except (IndexError, TypeError, ValueError) as e:
        write({"error": {"kind": "bad_request", "message": f"bad {what} request: {e}"}})
        return 2
    client = RunnerClient()

    def watch_stdin() -> None:
        for line in sys.stdin:
            if line.strip() == "cancel":
                break
        client.kill()  # the runner goes at once, mid-run
        os._exit(SERVICE_CANCELLED_EXIT)

    threading.Thread(target=watch_stdin, daemon=True).start()
    try:
        client.start()
        write({"runner_pid": client.pid})
        result = run(opts, client=client, on_event=lambda kind, payload: write({"event": kind, "payload": payload}))
        write({"result": result})
        return 0
    except RunnerError as e:
        write({"error": {"kind": e.kind, "message": e.message}})
    except (*USER_ERRORS, UsageError) as e:
        write({"error": {"kind": type(e).__name__, "message": str(e)}})
    finally:
        client.stop()
    return 1
