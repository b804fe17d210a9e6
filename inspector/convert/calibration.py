"""Calibration data for full int8 quantization (mnnquant), written in its "sequence" layout.

Every source — random samples, .npy/.npz files, images, text through a tokenizer — is turned into
model inputs by `inputs.make_inputs` (the same rules as a profile run), then written the way
mnnquant 3.6.1 reads multi-input data: `DIR/<sample>/input.json` ({"inputs": [{name, shape}]}) plus
one `<input>.txt` of whitespace-separated values per input. mnnquant crashes on empty or malformed
folders, so everything it will read is checked here and again in the runner.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from mnnscope.inspector.convert.settings import Int8Settings
from mnnscope.inspector.errors import ModelError
from mnnscope.inspector.model.graph import ModelGraph
from mnnscope.inspector.inputs.data import IMAGE_SUFFIXES, input_specs, make_inputs


def _write_sample(folder: Path, inputs: dict[str, np.ndarray], outputs: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"inputs": [{"name": k, "shape": [int(d) for d in v.shape]} for k, v in inputs.items()],
            "outputs": outputs}
    (folder / "input.json").write_text(json.dumps(meta), encoding="utf-8")
    for name, arr in inputs.items():
        flat = np.asarray(arr).reshape(-1)
        if flat.dtype.kind == "b":
            flat = flat.astype(np.int32)
        fmt = "%d" if flat.dtype.kind in "iu" else "%.8g"
        np.savetxt(folder / f"{name}.txt", flat, fmt=fmt)


def _is_sequence_folder(d: Path) -> bool:
    subs = [p for p in d.iterdir() if p.is_dir()]
    return bool(subs) and all((p / "input.json").is_file() for p in subs)


def _sample_files(settings: Int8Settings) -> list[Path]:
    files = [Path(f) for f in settings.calib_files]
    if settings.calib_dir:
        d = Path(settings.calib_dir)
        files += sorted(p for p in d.iterdir() if p.is_file() and p.suffix.lower() in {".npy", ".npz"} | IMAGE_SUFFIXES)
    for f in files:
        if not f.is_file():
            raise ModelError(f"calibration file '{f}' does not exist")
    return files


def _text_samples(settings: Int8Settings, graph: ModelGraph) -> list[dict[str, np.ndarray]]:
    lines = [line.strip() for line in Path(settings.calib_text).read_text(encoding="utf-8").splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        raise ModelError(f"calibration text '{settings.calib_text}' has no non-empty lines")
    return [make_inputs(graph, text=line, tokenizer=settings.tokenizer, seed=settings.seed)
            for line in lines[:settings.samples]]


def _image_shapes(settings: Int8Settings, specs: list[dict]) -> dict[str, list[int]] | None:
    """The calibration size asked for (Int8Settings.width/height) as make_inputs `shapes` of the first image-like
    input ([N, C, H, W], or [N, H, W, C] where the channels come last): they were never read, and samples came at
    the files' (or the defaults') size whatever was set (tryout 15)."""
    if not (settings.width or settings.height):
        return None
    for spec in specs:
        shape = spec.get("shape")
        if not shape or len(shape) != 4:
            continue
        last = isinstance(shape[3], int) and 0 < shape[3] <= 4 and not (isinstance(shape[1], int) and 0 < shape[1] <= 4)
        c = shape[3] if last else shape[1]
        c = c if isinstance(c, int) and c > 0 else 3
        n = shape[0] if isinstance(shape[0], int) and shape[0] > 0 else 1
        h = settings.height or (shape[1] if last else shape[2])
        w = settings.width or (shape[2] if last else shape[3])
        if not (isinstance(h, int) and h > 0 and isinstance(w, int) and w > 0):
            return None
        return {spec["name"]: [n, h, w, c] if last else [n, c, h, w]}
    return None


def _file_samples(settings: Int8Settings, graph: ModelGraph, specs: list[dict]) -> list[dict[str, np.ndarray]]:
    files = _sample_files(settings)
    if not files:
        where = settings.calib_dir or "the given files"
        raise ModelError(f"no calibration samples in {where} (expected images, .npy or .npz files, "
                         "or mnnquant sample folders)")
    samples = []
    for f in files[:settings.samples]:
        if f.suffix.lower() == ".npz":
            samples.append(make_inputs(graph, files={"*": str(f)}, seed=settings.seed))
        elif f.suffix.lower() == ".npy":
            if len(specs) > 1:
                raise ModelError(f"calibration file '{f}' is one array but the model has {len(specs)} inputs: "
                                 "use .npz files with one array per input")
            samples.append(make_inputs(graph, files={specs[0]["name"]: str(f)}, seed=settings.seed))
        else:
            samples.append(make_inputs(graph, image={"path": str(f), "mean": settings.mean, "std": settings.std,
                                                     "bgr": settings.image_format.startswith("BGR")},
                                       seed=settings.seed, shapes=_image_shapes(settings, specs)))
    return samples


def prepare_calibration(settings: Int8Settings, graph: ModelGraph, work_dir) -> dict:
    """Write the calibration samples under work_dir and return the mnnquant config that reads them."""
    settings = settings.effective()  # a folder, files or text given beside default random samples replace them
    specs = input_specs(graph)
    if not specs:
        raise ModelError("the model has no runtime inputs to calibrate")
    work = Path(work_dir)
    data_dir = work / "calibration"
    samples: list[dict[str, np.ndarray]] = []
    n = settings.samples
    if settings.calib_dir:
        d = Path(settings.calib_dir)
        if not d.is_dir():
            raise ModelError(f"calibration folder '{d}' does not exist")
        if _is_sequence_folder(d):
            data_dir = d  # already in mnnquant's layout: read as is
    if data_dir != work / "calibration":
        pass  # a ready-made sample folder
    elif settings.calib_random:
        shapes = _image_shapes(settings, specs)
        samples = [make_inputs(graph, seed=settings.seed + i, shapes=shapes) for i in range(settings.calib_random)]
    elif settings.calib_text:
        samples = _text_samples(settings, graph)
    else:
        samples = _file_samples(settings, graph, specs)
    for i, sample in enumerate(samples):
        _write_sample(data_dir / f"sample_{i:04d}", sample, list(graph.outputs))
    count = len(samples) if samples else len([p for p in data_dir.iterdir() if p.is_dir()])
    if count == 0:
        raise ModelError(f"calibration folder '{data_dir}' holds no samples")
    first_shapes = samples[0] if samples else None
    inputs = [{"name": s["name"], "shape": list(first_shapes[s["name"]].shape) if first_shapes else None}
              for s in specs]
    inputs = [{k: v for k, v in i.items() if v is not None} for i in inputs]
    return {
        "path": os.fspath(data_dir),
        "input_type": "sequence",
        "inputs": inputs,
        "used_sample_num": min(count, n) if not settings.calib_random else count,
        "feature_quantize_method": settings.feature_method,
        "weight_quantize_method": settings.weight_method,
        "quant_bits": settings.quant_bits,
        "skip_quant_op_names": list(settings.skip_ops),
        "batch_size": 1,
    }
