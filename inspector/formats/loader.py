"""Open any supported model: its format adapter parses it here, its shape request runs in the runner."""
from __future__ import annotations

import os
from pathlib import Path

from mnnscope.runner.protocol import RunnerError

from mnnscope.inspector.process.client import RunnerClient, client_or_own
from mnnscope.inspector.formats.registry import detect
from mnnscope.inspector.model.graph import ModelGraph


def detect_format(path: str | os.PathLike) -> str:
    """The name of the format that reads `path` ("onnx", "mnn", ...); ModelError naming the file if none."""
    return detect(path).name


def load_model(path: str | os.PathLike, client: RunnerClient | None = None, native: bool = True,
               input_shapes: dict[str, list[int]] | None = None) -> ModelGraph:
    """Load a model into a ModelGraph through its format adapter (formats/registry.py).

    With `native`, shapes come from the runner process (the adapter's shape request: ONNX shape
    inference, MNN's own shape computation) while this process parses the file; a runner failure there
    only costs the shapes and adds a warning. `client` is reused when given, else a runner is started and
    stopped here. `input_shapes` (e.g. --shape) size free input dims where the format needs sizes to compute
    shapes (.mnn; the sizes used end up in meta["shapes_for_inputs"]); ONNX shapes stay symbolic.
    """
    adapter = detect(path)
    path = str(Path(path))
    request = adapter.shape_request(path, input_shapes) if native else None
    if request is None:
        return adapter.parse(path)
    with client_or_own(client) as client:
        pending = _Pending(client, request.type, request.payload)
        graph = adapter.parse(path)  # parsing overlaps with the runner's work
        extra, problem = pending.wait()
        if extra is not None:
            adapter.merge_shapes(graph, extra)
        graph.warnings.extend(f"shapes: {p}" for p in request.problems)
        if problem:
            graph.warnings.append(problem)
        return graph


class _Pending:
    """A runner request running on a helper thread while the caller does its own work."""

    def __init__(self, client: RunnerClient, msg_type: str, payload: dict):
        import threading
        self.result = None
        self.problem = None
        self.thread = threading.Thread(target=self._run, args=(client, msg_type, payload), daemon=True)
        self.thread.start()

    def _run(self, client, msg_type, payload):
        try:
            self.result = client.request(msg_type, payload, timeout=300)
        except RunnerError as e:
            self.problem = f"shapes unavailable: {e.message}"
        except Exception as e:  # noqa: BLE001 (a helper thread: what went wrong is said, never a thread traceback)
            self.problem = f"shapes unavailable: {e}"

    def wait(self):
        self.thread.join()
        return self.result, self.problem
