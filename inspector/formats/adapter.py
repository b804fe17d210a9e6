"""What a model format is to mnnscope: one FormatAdapter subclass per format, returning plain data.

After Model Explorer's adapters (an adapter declares the files it reads and returns plain data): an
adapter declares how its models are recognised (file suffixes, magic bytes at the start of the file, or
a folder it knows), parses one into a ModelGraph, says which runner request computes its tensor shapes
and how to merge that result, and reads weight statistics. The registry (formats/registry.py) picks the
adapter for a path; the loader, the load process, the CLI and the app reach formats only through it.

An adapter module must stay cheap to import (the registry imports every adapter to detect a format, in
the app's process too): import parsing libraries (onnx, numpy-heavy readers) inside the methods.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mnnscope.inspector.errors import ModelError

if TYPE_CHECKING:
    from mnnscope.inspector.model.graph import ModelGraph


@dataclass
class ShapeRequest:
    """The runner request that computes a model's tensor shapes (native code runs in the runner only)."""

    type: str                  # protocol message type, e.g. "infer_shapes"
    payload: dict
    problems: list[str] = field(default_factory=list)  # requested sizes that were not used: graph warnings


class FormatAdapter:
    """One model format. Subclasses set the class attributes and override `parse`; the rest is optional."""

    name: str = ""                      # ModelGraph.format / GraphTable.format, e.g. "onnx"
    description: str = ""               # for people: "ONNX", in errors and file dialogs
    extensions: tuple[str, ...] = ()    # lower-case file suffixes with the dot; ".tar.gz" style works
    magic: tuple[bytes, ...] = ()       # file prefixes that identify the format whatever the file's name
    folder: bool = False                # models are folders: `is_model_folder` says which ones
    engines: tuple[str, ...] = ()       # runner engines (runner/protocol.py names) that run these models,
                                        # the default first; () = none runs them (profile refuses them)

    def is_model_folder(self, path: Path) -> bool:
        """For folder formats: whether `path` (a folder) is a model of this format."""
        return False

    def parse(self, path: str) -> ModelGraph:
        """The model as a ModelGraph, without native code; ModelError (one line naming the file) if bad."""
        raise NotImplementedError

    def shape_request(self, path: str, input_shapes: dict[str, list[int]] | None = None) -> ShapeRequest | None:
        """The runner request whose result fills the tensor shapes the file does not store; None: no such
        request (the graph keeps the shapes `parse` found). `input_shapes` are sizes for free input dims."""
        return None

    def dims_request(self, path: str, input_shapes: dict[str, list[int]]) -> ShapeRequest | None:
        """The runner request that gives {symbolic dim: size} at concrete input sizes (its result's "dims_at"), for
        formats whose shapes stay symbolic; None: the shapes hold numbers already (or none can be had)."""
        return None

    def merge_shapes(self, graph: ModelGraph, result: dict) -> None:
        """Fill `graph` from the shape request's result."""

    def tensor_shapes(self, result: dict) -> dict:
        """{tensor: {shape, dtype}} from the shape request's result, for the viewer's GraphTable."""
        return {}

    def shapes_for_inputs(self, result: dict) -> dict:
        """The input sizes the result's shapes were computed for (empty when they hold for any size)."""
        return dict(result.get("shapes_for_inputs") or {})

    def weight_stats(self, path: str, keys: list[str]) -> dict:
        """{key: statistics} of the named weights (as GraphTable names them), read without native code."""
        raise ModelError(f"{path}: {self.description or self.name} models have no weight statistics")


def shapes_note(meta: dict) -> str | None:
    """"shapes computed for input_ids=[1, 8]" when the shapes hold for those input sizes only."""
    sizes = meta.get("shapes_for_inputs")
    if not sizes:
        return None
    return "shapes computed for " + ", ".join(f"{k}={list(v)}" for k, v in sizes.items())
