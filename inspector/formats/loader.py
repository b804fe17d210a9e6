"""Open any supported model file: pick the adapter, run the native parts in the runner."""
from __future__ import annotations

import os
from pathlib import Path

from mnnscope.runner.protocol import RunnerError

from mnnscope.inspector.process.client import RunnerClient, client_or_own
from mnnscope.inspector.errors import ModelError
from mnnscope.inspector.model.graph import ModelGraph

FORMATS = {".onnx": "onnx", ".mnn": "mnn"}


def detect_format(path: str | os.PathLike) -> str:
    p = Path(path)
    if not p.exists():
        raise ModelError(f"{p}: no such file")
    if p.is_dir():
        raise ModelError(f"{p}: is a folder, not a model file")
    fmt = FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise ModelError(f"{p}: unsupported file type '{p.suffix or '(none)'}' (expected .onnx or .mnn)")
    if p.stat().st_size == 0:
        raise ModelError(f"{p}: the file is empty")
    return fmt


def load_model(path: str | os.PathLike, client: RunnerClient | None = None, native: bool = True,
               input_shapes: dict[str, list[int]] | None = None) -> ModelGraph:
    """Load a model into a ModelGraph.

    With `native`, shapes come from the runner process (ONNX shape inference, MNN's own shape
    computation) while this process parses the file; a runner failure there only costs the shapes
    and adds a warning. `client` is reused when given, else a runner is started and stopped here.
    For .mnn, whose inputs may have free (-1) dims that stop MNN's shape computation, the runner resizes
    them to `input_shapes` (e.g. --shape) and inspector.inputs' defaults for the rest (mnn_input_sizes);
    the sizes used end up in meta["shapes_for_inputs"]. `input_shapes` does not apply to ONNX (its shapes
    stay symbolic).
    """
    fmt = detect_format(path)
    path = str(Path(path))
    if not native:
        return _parse(fmt, path, None)
    with client_or_own(client) as client:
        request = "infer_shapes" if fmt == "onnx" else "load_structure"
        payload = {"path": os.path.abspath(path)}
        size_problems: list[str] = []
        if fmt == "mnn":
            payload["input_shapes"], size_problems = mnn_input_sizes(path, input_shapes)
        pending = _Pending(client, request, payload)
        graph = _parse(fmt, path, None)  # parsing overlaps with the runner's work
        extra, problem = pending.wait()
        if extra is not None:
            if fmt == "onnx":
                from mnnscope.inspector.formats.onnx import merge_shapes
                merge_shapes(graph, extra.get("shapes", {}))
            else:
                from mnnscope.inspector.formats.mnn import merge_structure
                merge_structure(graph, extra)
        graph.warnings.extend(f"shapes: {p}" for p in size_problems)
        if problem:
            graph.warnings.append(problem)
        return graph


def mnn_input_sizes(path: str, given: dict[str, list[int]] | None = None) -> tuple[dict, list[str]]:
    """(sizes, problems) for the .mnn inputs that have free dims (the file's own declaration, read in Python),
    so MNN can compute the shapes behind them; an unreadable file gets none (its parse reports that)."""
    from mnnscope.inspector.inputs.data import free_input_sizes
    from mnnscope.inspector.formats.mnn_flatbuffer import MnnFormatError, read_mnn
    try:
        specs = read_mnn(path).inputs
    except (MnnFormatError, OSError, ValueError):
        return {}, []
    return free_input_sizes(specs, given)


def _parse(fmt: str, path: str, extra) -> ModelGraph:
    if fmt == "onnx":
        from mnnscope.inspector.formats.onnx import load_onnx
        return load_onnx(path, extra)
    from mnnscope.inspector.formats.mnn import load_mnn
    return load_mnn(path, extra)


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

    def wait(self):
        self.thread.join()
        return self.result, self.problem
