"""The ONNX format: .onnx files, external data beside them (parsing in onnx.py, imported on use)."""
from __future__ import annotations

import os

from mnnscope.runner import protocol
from mnnscope.inspector.formats.adapter import FormatAdapter, ShapeRequest


class OnnxAdapter(FormatAdapter):
    name = "onnx"
    description = "ONNX"
    extensions = (".onnx",)  # a protobuf has no magic bytes: the suffix decides
    engines = (protocol.ENGINE_ORT, protocol.ENGINE_MNN)  # MNN converts it first

    def parse(self, path):
        from mnnscope.inspector.formats.onnx import load_onnx
        return load_onnx(path)

    def shape_request(self, path, input_shapes=None):
        # ONNX shapes stay symbolic: input_shapes do not apply.
        return ShapeRequest("infer_shapes", {"path": os.path.abspath(path)})

    def dims_request(self, path, input_shapes):
        # shape inference again with the inputs fixed: names it (or the exporter) made up for sizes it could not
        # express get their numbers at these sizes
        return ShapeRequest("infer_shapes", {"path": os.path.abspath(path), "input_shapes": input_shapes,
                                             "dims_only": True})

    def merge_shapes(self, graph, result):
        from mnnscope.inspector.formats.onnx import merge_shapes
        merge_shapes(graph, result.get("shapes", {}))

    def tensor_shapes(self, result):
        return result.get("shapes", {})

    def weight_stats(self, path, keys):
        from mnnscope.inspector.formats.onnx import initializer_stats
        return initializer_stats(path, keys)
