"""The MNN format: .mnn files (structure read in pure Python by mnn.py; shapes computed by MNN in the
runner, which needs concrete sizes for free input dims)."""
from __future__ import annotations

import os

from mnnscope.runner import protocol
from mnnscope.inspector.formats.adapter import FormatAdapter, ShapeRequest


class MnnAdapter(FormatAdapter):
    name = "mnn"
    description = "MNN"
    extensions = (".mnn",)  # a FlatBuffer without a file identifier: the suffix decides
    engines = (protocol.ENGINE_MNN,)

    def parse(self, path):
        from mnnscope.inspector.formats.mnn import load_mnn
        return load_mnn(path)

    def shape_request(self, path, input_shapes=None):
        """load_structure, with sizes for the inputs that have free (-1) dims: `input_shapes` (e.g. --shape)
        and inspector.inputs' defaults for the rest, or MNN computes no shape behind them."""
        sizes, problems = input_sizes(path, input_shapes)
        return ShapeRequest("load_structure", {"path": os.path.abspath(path), "input_shapes": sizes}, problems)

    def merge_shapes(self, graph, result):
        from mnnscope.inspector.formats.mnn import merge_structure
        merge_structure(graph, result)

    def tensor_shapes(self, result):
        return {v["name"]: {"shape": v.get("shape"), "dtype": v.get("dtype")}
                for v in result.get("vars", []) if v.get("name")}

    def weight_stats(self, path, keys):
        from mnnscope.inspector.formats.mnn_weights import weight_stats
        return weight_stats(path, keys)


def input_sizes(path: str, given: dict[str, list[int]] | None = None) -> tuple[dict, list[str]]:
    """(sizes, problems) for the .mnn inputs that have free dims (the file's own declaration, read in Python),
    so MNN can compute the shapes behind them; an unreadable file gets none (its parse reports that)."""
    from mnnscope.inspector.formats.mnn_flatbuffer import MnnFormatError, read_mnn
    from mnnscope.inspector.inputs.data import free_input_sizes
    try:
        specs = read_mnn(path).inputs
    except (MnnFormatError, OSError, ValueError):
        return {}, []
    return free_input_sizes(specs, given)
