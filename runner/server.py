"""The runner's main loop: requests on stdin, events on a private copy of stdout.

Native libraries (MNN, the converter) print to fd 1. At start the protocol moves to a duplicate of the
original stdout and fd 1 is pointed at stderr, so stray prints become log lines the client forwards,
never corrupt protocol messages. Requests run one at a time on the main thread; a reader thread takes
`cancel` and `shutdown` while a request runs.

Plugins: MNNSCOPE_RUNNER_PLUGINS=module[,module] names modules imported at start (from the runner's own
sys.path: PYTHONPATH). A plugin adds request handlers with `register_handler(type, function)` and
engines with `mnnscope.runner.engine.register(cls)`; nothing test-only ships in the runner itself (the
test suite's plugin is tests/runner_plugins.py). A plugin that fails to import is reported on stderr
and as an `error` event, and the runner serves without it.
"""
from __future__ import annotations

import importlib
import os
import queue
import sys
import threading
import time
import traceback

from mnnscope.runner import protocol
from mnnscope.runner.protocol import RunnerError

# Request type -> "module:function" (or a function, for handlers plugins register). Modules are imported on first use so a `hello` or `infer_shapes`
# never pays for MNN or onnxruntime.
HANDLERS = {
    "hello": "mnnscope.runner.hello:hello",
    "infer_shapes": "mnnscope.runner.structure:infer_shapes",
    "load_structure": "mnnscope.runner.structure:load_structure",
    "convert": "mnnscope.runner.convert:convert",
    "quantize": "mnnscope.runner.convert:quantize",
    "supported_ops": "mnnscope.runner.convert:supported_ops",
    "dump_tensors": "mnnscope.runner.dump:dump_tensors",
    "profile": "mnnscope.runner.profile:profile",
    "sweep": "mnnscope.runner.sweep:sweep",
    "generate": "mnnscope.runner.generate:generate",
    "llm": "mnnscope.runner.llm:llm",
}
BUILTIN_REQUESTS = tuple(HANDLERS)  # before any plugin adds its own (protocol.REQUESTS names these)
PLUGINS_ENV = "MNNSCOPE_RUNNER_PLUGINS"


def register_handler(msg_type: str, handler) -> None:
    """Answer requests of `msg_type` with handler(job) -> result (a plugin's way to add a request)."""
    if msg_type in protocol.CONTROL_REQUESTS:
        raise ValueError(f"'{msg_type}' is taken by the runner itself")
    HANDLERS[msg_type] = handler


def load_plugins(spec: str | None) -> list[str]:
    """Import the plugin modules named in `spec` (comma-separated); returns the problems, one per failure."""
    problems = []
    for name in (n.strip() for n in (spec or "").split(",")):
        if not name:
            continue
        try:
            importlib.import_module(name)
        except Exception as e:
            problems.append(f"runner plugin {name}: {type(e).__name__}: {e}")
    return problems


def out_of_memory(msg_type: str, payload: dict | None) -> str:
    """'out of memory in profile of model.onnx (the runner's limit: 4096 MB, MNNSCOPE_RUNNER_MEMORY_MB)'."""
    limit = None
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        limit = None if soft == resource.RLIM_INFINITY else soft >> 20
    except (ImportError, OSError, ValueError):
        pass
    p = payload or {}
    what = p.get("path") or p.get("src") or p.get("model")
    where = f" of {os.path.basename(str(what))}" if what else ""
    cap = f"the runner's limit: {limit} MB, " if limit else ""
    return (f"out of memory in {msg_type}{where} ({cap}MNNSCOPE_RUNNER_MEMORY_MB); this runner ends, the next "
            "request starts a fresh one")


class Job:
    """What a handler gets: its payload and the ways to talk back."""

    def __init__(self, server: "Server", msg_id, payload: dict):
        self.server = server
        self.id = msg_id
        self.payload = payload or {}
        self.cancel_event = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def check_cancel(self) -> None:
        if self.cancel_event.is_set():
            raise RunnerError(protocol.CANCELLED, "cancelled")

    def event(self, msg_type: str, payload=None) -> None:
        self.server.send(self.id, msg_type, payload)

    def progress(self, fraction: float | None, message: str = "") -> None:
        self.event("progress", {"fraction": fraction, "message": message})

    def log(self, text: str, stream: str = "runner") -> None:
        self.event("log", {"text": text, "stream": stream})


class Server:
    def __init__(self, proto_fd: int):
        self.proto_fd = proto_fd
        self.lock = threading.Lock()
        self.requests: queue.Queue = queue.Queue()
        self.current: Job | None = None
        self.cancel_lock = threading.Lock()
        self.cancelled: set = set()   # ids of requests cancelled before they started
        self.exit_after = False       # a request ran out of memory: leave once it is answered

    def send(self, msg_id, msg_type: str, payload=None) -> None:
        data = protocol.encode(msg_id, msg_type, payload)
        with self.lock:
            view = memoryview(data)
            while view:
                n = os.write(self.proto_fd, view)
                view = view[n:]

    def read_stdin(self) -> None:
        for raw in sys.stdin.buffer:
            try:
                msg = protocol.decode(raw)
            except ValueError:
                self.send(None, "error", RunnerError(protocol.BAD_REQUEST, "unreadable request line").to_payload())
                continue
            if msg["type"] == "cancel":
                target = (msg.get("payload") or {}).get("target")
                with self.cancel_lock:
                    job = self.current
                    if job is not None and target in (None, job.id):
                        job.cancel_event.set()
                    elif target is not None:
                        # Its request has not started yet (a runner still starting, a queued request): it is
                        # answered `cancelled` when it comes up, instead of the cancel being lost.
                        self.cancelled.add(target)
                continue
            if msg["type"] == "shutdown":
                break
            self.requests.put(msg)
        self.requests.put(None)

    def heartbeat(self, interval: float) -> None:
        while True:
            time.sleep(interval)
            job = self.current
            self.send(job.id if job else None, "heartbeat", None)

    def serve(self) -> None:
        threading.Thread(target=self.read_stdin, daemon=True).start()
        threading.Thread(target=self.heartbeat, args=(1.0,), daemon=True).start()
        while True:
            msg = self.requests.get()
            if msg is None:
                return
            self.handle(msg)
            if self.exit_after:
                return

    def handle(self, msg: dict) -> None:
        msg_id, msg_type = msg.get("id"), msg["type"]
        target = HANDLERS.get(msg_type)
        if target is None:
            self.send(msg_id, "error", RunnerError(protocol.BAD_REQUEST, f"unknown request type '{msg_type}'").to_payload())
            return
        job = Job(self, msg_id, msg.get("payload"))
        with self.cancel_lock:
            self.current = job
            if msg_id in self.cancelled:
                self.cancelled.discard(msg_id)
                job.cancel_event.set()
        try:
            job.check_cancel()
            if isinstance(target, str):
                module, func = target.split(":")
                target = getattr(importlib.import_module(module), func)
            result = target(job)
            job.check_cancel()
            self.reply(msg_id, "result", result)
        except RunnerError as e:
            self.reply(msg_id, "error", e.to_payload())
        except MemoryError:
            # Out of the memory the runner may use (RLIMIT_AS, MNNSCOPE_RUNNER_MEMORY_MB): said with what was
            # running, then this runner leaves, so the next request gets a fresh one, not a fragmented heap.
            self.reply(msg_id, "error", RunnerError(protocol.RUN_FAILED, out_of_memory(msg_type, job.payload))
                       .to_payload())
            self.exit_after = True
        except Exception as e:  # a handler bug must not kill the runner: report it with its traceback
            self.reply(msg_id, "error", RunnerError(protocol.INTERNAL, f"{type(e).__name__}: {e}",
                                                    traceback.format_exc()).to_payload())
        finally:
            self.current = None

    def reply(self, msg_id, msg_type: str, payload) -> None:
        """The request's result or error, after everything it printed and the sync marker (protocol.SYNC_PREFIX)."""
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        try:
            os.write(2, f"{protocol.SYNC_PREFIX}{msg_id}\n".encode())
        except OSError:
            pass
        self.send(msg_id, msg_type, payload)


def main() -> None:
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    # Python's own stdout object keeps writing to fd 1, which is now stderr: prints become log lines.
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    server = Server(proto_fd)
    for problem in load_plugins(os.environ.get(PLUGINS_ENV)):
        print(problem, file=sys.stderr, flush=True)
        server.send(None, "error", RunnerError(protocol.INTERNAL, problem).to_payload())
    server.serve()
