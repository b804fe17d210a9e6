"""The viewer's model: a compact table of a ModelGraph, parsed in a child process and sent back as JSON.

Why a table and not the ModelGraph itself: a 100k-node ModelGraph (networkx) costs ~270 MB and ~2 s to
rebuild from JSON, and parsing a big file on a UI worker thread holds the GIL. The viewer needs arrays
(for scopes, layout and hit tests) and, for one node at a time, its attributes; so the child parses the
file with the normal adapters and sends per-node strings and int arrays, with each node's attributes as
raw JSON text that is decoded only when that node is shown. The JSON goes in sections, one per line, so
the receiving thread never holds the GIL for long. The child finds formats through the registry like any
process: those named in MNNSCOPE_FORMATS too, since it inherits the environment.

    python -m mnnscope.inspector.formats.loadproc MODEL             -> GraphTable sections on stdout, exit 0
                                                                       (1: bad model)
    python -m mnnscope.inspector.formats.loadproc --stats MODEL T...  -> one JSON line: statistics of weights T...
                                                                       (ONNX initializers; .mnn op weights
                                                                       "<op id>:<weight name>")
    python -m mnnscope.inspector.formats.loadproc --nodemap ONNX MNN  -> one JSON line: the ONNX <-> MNN node map
"""
from __future__ import annotations

import json
import os
import sys

from mnnscope.inspector.errors import ModelError
from mnnscope.inspector.formats.registry import detect
from mnnscope.inspector.model.table import GraphTable
from mnnscope.inspector.process.childjob import ChildJob


# ----- the child process ------------------------------------------------------------------------------
def _write(obj) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":"), default=str) + "\n")


def weight_stats(path: str, keys: list[str]) -> dict:
    """Statistics of weights by the names the viewer gives them (ONNX initializer names; .mnn
    "<op id>:<weight name>"), read by the file's format adapter."""
    return detect(path).weight_stats(path, keys)


def node_map(onnx_path: str, mnn_path: str) -> dict:
    """The ONNX node <-> MNN op map of a conversion (model/nodemap.py), as JSON."""
    from mnnscope.inspector.formats.mnn_flatbuffer import MnnFormatError, read_mnn
    from mnnscope.inspector.model.nodemap import build_node_map
    from mnnscope.inspector.formats.onnx import load_onnx
    try:
        mnn_model = read_mnn(mnn_path)
    except MnnFormatError as e:
        raise ModelError(str(e))
    return build_node_map(load_onnx(onnx_path), mnn_model).to_json()


def main(argv: list[str] | None = None) -> int:
    import gc
    argv = list(sys.argv[1:] if argv is None else argv)
    gc.disable()  # a one-shot process: collections only slow down building 100k-node graphs
    try:
        if argv and argv[0] == "--stats":
            _write({"section": "stats", "data": weight_stats(argv[1], argv[2:])})
            return 0
        if argv and argv[0] == "--nodemap":
            _write({"section": "nodemap", "data": node_map(argv[1], argv[2])})
            return 0
        table = GraphTable.from_graph(detect(argv[0]).parse(argv[0]))
        for name, data in table.sections().items():
            _write({"section": name, "data": data})
        _write({"section": "end"})
        return 0
    except ModelError as e:
        _write({"section": "error", "message": str(e)})
        return 1
    except Exception as e:  # a bug or an exotic file: one line, never a traceback on the wire
        _write({"section": "error", "message": f"{argv[-1] if argv else '?'}: {type(e).__name__}: {e}"})
        return 1
    finally:
        sys.stdout.flush()


def start_load(path: str) -> ChildJob:
    """Start parsing `path` in a child process now (e.g. while the app is still starting)."""
    return ChildJob([os.path.abspath(path)])


def load_table(path: str, job_sink=None, job: ChildJob | None = None) -> GraphTable:
    """Parse `path` in a child process and return its GraphTable (ModelError on bad files).

    `job_sink(job)` receives the ChildJob first, so another thread can cancel it; `job` is one already
    started by start_load.
    """
    job = job or start_load(path)
    if job_sink is not None:
        job_sink(job)
    sections: dict = {}
    for msg in job.messages():
        if msg["section"] == "end":
            return GraphTable.from_sections(sections)
        sections[msg["section"]] = msg["data"]
    raise ModelError(f"{path}: the loader process ended without sending the graph")


def _one_section(args: list[str], section: str, missing: str, job_sink=None):
    """Run the load process with `args` and return the data of its `section` (ModelError `missing` if none)."""
    job = ChildJob(args)
    if job_sink is not None:
        job_sink(job)
    for msg in job.messages():
        if msg["section"] == section:
            return msg["data"]
    raise ModelError(missing)


def load_node_map(onnx_path: str, mnn_path: str, job_sink=None) -> dict:
    """NodeMap JSON ({onnx_to_mnn, mnn_to_onnx, inserted, ...}) computed in a child process."""
    return _one_section(["--nodemap", os.path.abspath(onnx_path), os.path.abspath(mnn_path)], "nodemap",
                        f"{mnn_path}: no node map", job_sink)


def load_stats(path: str, tensors: list[str], job_sink=None) -> dict:
    """{tensor: statistics} for ONNX initializers or .mnn op weights, computed in a child process."""
    return _one_section(["--stats", os.path.abspath(path), *tensors], "stats",
                        f"{path}: no statistics for {', '.join(tensors)}", job_sink)


if __name__ == "__main__":
    sys.exit(main())
