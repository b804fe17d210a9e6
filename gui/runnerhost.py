"""The window's runner: one `python -m mnnscope.runner` process, started on demand, watched, restarted after a
crash. Its state shows in the status bar; requests run on worker threads (gui.tasks)."""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from mnnscope.inspector.process.client import RunnerClient
from mnnscope.inspector.formats.registry import adapter_named

from mnnscope.gui.tasks import TaskSlot


class RunnerHost(QObject):
    state_changed = Signal(str)   # not started / busy: ... / idle / died: ...
    backend_changed = Signal(str)

    def __init__(self, python: str | None = None, parent=None):
        super().__init__(parent)
        self.python = python
        self.client = RunnerClient(python=python)
        self.state = "not started"
        self.backend = "CPU"
        self._shapes: dict[str, TaskSlot] = {}
        self._hello = TaskSlot(self)

    def set_python(self, python: str | None) -> None:
        """Use another interpreter (a user's own MNN build) for the runner from the next request on."""
        for slot in self._shapes.values():
            slot.shutdown()
        self.client.stop()
        self.python = python
        self.client = RunnerClient(python=python)
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
        for slot in self._shapes.values():
            slot.shutdown()
        self._hello.shutdown()
        self.client.stop()

    @property
    def alive(self) -> bool:
        return self.client.alive

