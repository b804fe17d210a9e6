"""Profile from here: the part of an ONNX model from one node down to the outputs, fed with real values.

The cut keeps the node and every node that reads, directly or through others, what it computes; its inputs are
the tensors those nodes read from elsewhere (earlier nodes, the model's inputs), their values what ONNX Runtime
computes for them on the profile's inputs (a `dump_tensors` request: the same runner and confinement as every
other run). The cut's nodes keep the ids the graph shows (an unnamed node gets its id as its name), so the
profile's times land on the open model's own nodes.

Runs where the profile service runs (its child process for the window, the CLI's process): never in the window.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mnnscope.inspector.errors import ModelError, UsageError


@dataclass
class Cut:
    path: str          # the cut model (.onnx, weights inside)
    inputs: str        # its inputs (.npz)
    node: str          # the node it starts at
    nodes: int         # nodes kept
    of: int            # top-level nodes of the model
    feeds: list[dict]  # {name, shape, dtype} of each input of the cut
    ids: list[str]     # the ids of the nodes kept (the window draws the others as not measured)

    def to_json(self) -> dict:
        return {"node": self.node, "nodes": self.nodes, "of": self.of, "inputs": self.feeds, "path": self.path,
                "ids": self.ids}

    def note(self) -> str:
        names = ", ".join(f["name"] for f in self.feeds[:4]) + (f" and {len(self.feeds) - 4} more"
                                                               if len(self.feeds) > 4 else "")
        return (f"profiled from {self.node}: {self.nodes} of {self.of} nodes (it and everything after it), fed "
                f"with what ONNX Runtime computes for {names} on these inputs")


def top_level_ids(graph) -> list[str]:
    """The id the graph view gives each top-level node."""
    from mnnscope.inspector.formats.onnx import node_id
    taken: set[str] = set()
    return [node_id(n, i, taken) for i, n in enumerate(graph.node)]


def below(cutter, start: int) -> set[int]:
    """The node `start` and every node that reads what the kept ones compute (subgraph reads included)."""
    keep, todo = {start}, [start]
    while todo:
        i = todo.pop()
        for t in cutter.nodes[i].output:
            for c in cutter.consumers.get(t, []) if t else []:
                if c not in keep:
                    keep.add(c)
                    todo.append(c)
    return keep


def cut_from(model_path: str, node: str, inputs_npz: str, run_dir: Path, client, on_event=None) -> Cut:
    """Cut `model_path` at `node` (an id as the graph shows it) and compute the cut's inputs; files go to
    run_dir/from_here/."""
    import onnx
    from onnx import helper

    from mnnscope.inspector.convert.reduce import Cutter
    from mnnscope.inspector.inputs.data import load_inputs, save_inputs
    from mnnscope.inspector.store.tensors import load

    try:
        model = onnx.load(model_path)
    except Exception as e:  # noqa: BLE001 - the loader said what was wrong when the model opened; here, in a line
        raise ModelError(f"{model_path}: cannot read it to cut at {node} ({str(e).splitlines()[0][:200]})") from None
    ids = top_level_ids(model.graph)
    if node not in ids:
        import difflib
        close = difflib.get_close_matches(node, ids, n=3)
        raise UsageError(f"--from {node}: {Path(model_path).name} has no top-level node of that id"
                         + (f" (close: {', '.join(close)})" if close else "")
                         + "; a node inside an If or Loop body cannot start a cut: start at the If or Loop itself")
    cutter = Cutter(model, os.path.dirname(os.path.abspath(model_path)))
    keep = below(cutter, ids.index(node))
    for i in keep:
        if cutter.nodes[i].name != ids[i]:
            cutter.nodes[i].name = ids[i]  # the times land on the graph's own node ids
    cut = cutter.cut(keep)
    boundary = [vi.name for vi in cut.graph.input]
    given = load_inputs(inputs_npz)
    values = {k: given[k] for k in boundary if k in given}
    wanted = [k for k in boundary if k not in values]
    folder = Path(run_dir) / "from_here"
    folder.mkdir(parents=True, exist_ok=True)
    if wanted:
        if on_event is not None:
            on_event("progress", {"fraction": None, "message": f"computing the inputs of the cut at {node} "
                                                               "(ONNX Runtime)"})
        dump = client.request("dump_tensors", {"engine": "ort", "model": os.path.abspath(model_path),
                                               "inputs": inputs_npz, "tensors": wanted, "out_dir": str(folder),
                                               "op_events": False}, on_event=on_event)
        manifest = dump.get("manifest") or {}
        for k in wanted:
            if k not in manifest:
                raise ModelError(f"{model_path}: ONNX Runtime did not give tensor '{k}' (an input of the cut at "
                                 f"{node}): {'; '.join(dump.get('problems') or []) or 'no value'}")
            values[k] = np.array(load(str(folder), manifest[k]))
    feeds = []
    del cut.graph.input[:]
    for k in boundary:
        arr = values[k]
        cut.graph.input.append(helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(arr.dtype),
                                                             list(arr.shape)))
        feeds.append({"name": k, "shape": [int(d) for d in arr.shape], "dtype": str(arr.dtype)})
    cut.producer_name = "mnnscope-from-here"
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in node)[:80]
    path = folder / f"from_{safe}.onnx"
    if cut.ByteSize() > 1_800_000_000:  # protobuf's 2 GB limit: the weights beside it
        onnx.save(cut, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                  location=path.name + ".data")
    else:
        onnx.save(cut, str(path))
    inputs = save_inputs(values, folder / "inputs.npz")
    return Cut(str(path), inputs, node, len(keep), len(ids), feeds, [ids[i] for i in sorted(keep)])
