"""The window's runners: `python -m mnnscope.runner` processes, started on demand, watched, restarted after a
crash. `client` answers the quick structural requests (shapes, hello); `work` runs the docks' jobs (profile,
statistics, compare, convert) through `run_job`, so a long run never delays the shapes of a model just opened
and cancelling a job never kills the shapes runner. State shows in the status bar; requests run on worker
threads (gui.tasks)."""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from mnnscope.inspector.process.client import RunnerClient
from mnnscope.inspector.formats.registry import adapter_named

from mnnscope.gui.tasks import TaskSlot


class RunnerHost(QObject):
    state_changed = Signal(str)   # not started / busy: ... / idle / died: ...
    backend_changed = Signal(str)
    job_event = Signal(str, str, object)   # job name, event type (op_begin, log, ...), payload: UI thread
    job_finished = Signal(str, bool, str)  # job name, ok, message ("" when ok)

    def __init__(self, python: str | None = None, parent=None):
        super().__init__(parent)
        self.python = python
        self.client = RunnerClient(python=python)
        self.state = "not started"
        self.backend = "CPU"
        self._shapes: dict[str, TaskSlot] = {}
        self._hello = TaskSlot(self)
        self.work = RunnerClient(python=python)
        self._jobs: dict[str, TaskSlot] = {}
        self.job_event.connect(self._job_progress)

    def set_python(self, python: str | None) -> None:
        """Use another interpreter (a user's own MNN build) for the runner from the next request on."""
        for slot in self._shapes.values():
            slot.shutdown()
        self.client.stop()
        self.cancel_jobs()
        self.work.stop()
        self.python = python
        self.client = RunnerClient(python=python)
        self.work = RunnerClient(python=python)
        self._set_state("not started")

    def _set_state(self, state: str) -> None:
        self.state = state
        self.state_changed.emit(state)

    def load_shapes(self, path: str, fmt: str, on_done, on_fail, key: str = "main") -> None:
        """Shapes of every tensor, from the format adapter's shape request (ONNX shape inference, MNN itself:
        native, so runner only). A format without one reports no shapes and leaves the runner alone."""
        adapter = adapter_named(fmt)
        client = self.client

        def run(cancelled=None):
            cancelled.set_hook(client.cancel)
            request = adapter.shape_request(path)  # may read the file (.mnn input sizes): off the UI thread
            if request is None:
                return {}, {}
            result = client.request(request.type, request.payload, timeout=600)
            return adapter.tensor_shapes(result), adapter.shapes_for_inputs(result)

        def done(res):
            shapes, sizes = res
            self._set_state(f"idle (pid {client.pid})" if client.alive else "idle")
            on_done(shapes, sizes)

        def failed(msg):
            died = not client.alive
            self._set_state(f"died: {msg}" if died else f"idle (pid {client.pid})")
            on_fail(msg, died)

        self._set_state(f"busy: {fmt} shapes")
        slot = self._shapes.setdefault(key, TaskSlot(self))
        slot.start(run, on_done=done, on_fail=failed, name="shapes")

    def cancel(self) -> None:
        for slot in self._shapes.values():
            slot.cancel()

    # ----- jobs of the docks ---------------------------------------------------------------------------
    def run_job(self, name: str, fn, on_done=None, on_fail=None):
        """Run `fn(client, on_event, cancelled)` on a worker thread with the work runner: a service call such as
        `run_profile(opts, client=client, on_event=on_event)`. Events reach `job_event` on the UI thread;
        `on_done(result)` / `on_fail(message)` run on the UI thread. A job of the same name still running is
        cancelled first. Returns the task."""
        client = self.work

        def run(cancelled=None):
            cancelled.set_hook(client.cancel)
            return fn(client, lambda kind, payload: self.job_event.emit(name, kind, payload), cancelled)

        def done(result):
            self._set_state(f"idle (pid {client.pid})" if client.alive else "idle")
            self.job_finished.emit(name, True, "")
            if on_done is not None:
                on_done(result)

        def failed(msg):
            died = not client.alive and "cancelled" not in msg
            self._set_state(f"died: {msg}" if died else (f"idle (pid {client.pid})" if client.alive else "idle"))
            self.job_finished.emit(name, False, msg)
            if on_fail is not None:
                on_fail(msg)

        self._set_state(f"busy: {name}")
        slot = self._jobs.setdefault(name, TaskSlot(self))
        return slot.start(run, on_done=done, on_fail=failed, name=name)

    def job_busy(self, name: str) -> bool:
        slot = self._jobs.get(name)
        return slot is not None and slot.busy

    def cancel_job(self, name: str) -> None:
        """Cancel one job: the runner is asked to stop, then terminated (gone within a second)."""
        slot = self._jobs.get(name)
        if slot is not None and slot.task is not None:
            slot.cancel()
            self.work.cancel()
            self._set_state("idle (cancelled)")
            self.job_finished.emit(name, False, "cancelled")

    def cancel_jobs(self) -> None:
        for name in list(self._jobs):
            self.cancel_job(name)

    def _job_progress(self, name: str, kind: str, payload) -> None:
        if kind == "op_begin" and isinstance(payload, dict) and payload.get("name"):
            self._set_state(f"busy: {name} \u00b7 op {payload['name']}")

    def query_backend(self) -> None:
        """Ask the runner what it can run on (MNN version, loadable backends) for the status bar."""
        client = self.client

        def run(cancelled=None):
            return client.request("hello", {"mnn": True}, timeout=120)

        def done(info):
            backends = info.get("backends") or []
            names = [b.get("name", str(b)) if isinstance(b, dict) else str(b) for b in backends]
            mnn = info.get("mnn")
            self.backend = f"MNN {mnn} \u00b7 " + (", ".join(names) if names else "CPU") if mnn else "MNN unavailable"
            self.backend_changed.emit(self.backend)
            if self.state == "not started":
                self._set_state(f"idle (pid {client.pid})")

        self._hello.start(run, on_done=done, on_fail=lambda msg: None, name="hello")

    def shutdown(self) -> None:
        self.client.cancel()
        self.work.cancel()
        for slot in self._shapes.values():
            slot.shutdown()
        for slot in self._jobs.values():
            slot.shutdown()
        self._hello.shutdown()
        self.client.stop()
        self.work.stop()

    @property
    def alive(self) -> bool:
        return self.client.alive

