"""The MNN-LLM export format: a folder written by llmexport (config.json naming llm.mnn, llm.mnn.weight,
tokenizer.mtok, llm_config.json, export_args.json), which MNN.llm runs.

The graph is llm.mnn's (read by the .mnn reader; its inputs are the real ones MNN.llm feeds: `input_ids` is the
embedding [seq, 1, hidden], `attention_mask`, `position_ids`, `logits_index`; outputs `logits`,
`hidden_states`), its scopes from the exporter's names (/layers.0/self_attn/...), the KV cache inside each
fused Attention op. meta["llm_config"] holds the runtime config (sampler, precision, memory, threads,
backend), the model's (llm_config.json) and the export's arguments; meta["llm_quant"] the weight
quantization per layer as the file stores it (bits, block size, asymmetric).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from mnnscope.inspector.errors import ModelError
from mnnscope.inspector.formats.adapter import FormatAdapter
from mnnscope.inspector.formats.mnn_adapter import MnnAdapter

FORMAT = "mnn-llm"
DECODE_STEP_SHAPES = {"attention_mask": [1, 1, 1, 1], "position_ids": [1, 1]}
RUNTIME_KEYS = ("backend_type", "thread_num", "precision", "memory", "sampler_type", "temperature", "top_k",
                "top_p", "max_new_tokens")


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise ModelError(f"{path}: not readable JSON ({e})") from None
    if not isinstance(data, dict):
        raise ModelError(f"{path}: not a JSON object")
    return data


def is_export_folder(path: str | os.PathLike) -> bool:
    """A folder whose config.json names an existing llm.mnn (what MNN.llm runs)."""
    p = Path(path)
    if not (p / "config.json").is_file():
        return False
    try:
        config = json.loads((p / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and (p / str(config.get("llm_model") or "llm.mnn")).is_file()


def looks_like_export(path: str | os.PathLike) -> bool:
    """An export folder, or one that was meant to be (llmexport's llm_config.json, or a config.json naming an
    llm_model): opening it says what is missing instead of "not a model"."""
    p = Path(path)
    if is_export_folder(p) or (p / "llm_config.json").is_file() or (p / "llm.mnn").is_file():
        return True
    try:
        config = json.loads((p / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and "llm_model" in config


def read_export(path: str | os.PathLike) -> dict:
    """{config, model, export_args, llm_model (path), runtime {key: value}, bits, block, size_bytes}."""
    p = Path(path)
    if not is_export_folder(p):
        missing = "config.json" if not (p / "config.json").is_file() else "the llm.mnn its config.json names"
        raise ModelError(f"{p}: an MNN-LLM export folder without {missing}")
    config = _json(p / "config.json")
    args = _json(p / "export_args.json")
    bits = args.get("quant_bit")
    return {"config": config, "model": _json(p / "llm_config.json"), "export_args": args,
            "llm_model": str(p / str(config.get("llm_model") or "llm.mnn")),
            "runtime": {k: config[k] for k in RUNTIME_KEYS if k in config},
            "bits": bits, "block": (args.get("quant_block") if bits is not None and bits < 16 else None),
            "size_bytes": sum(f.stat().st_size for f in p.iterdir() if f.is_file())}


def layer_quant(graph) -> list[dict]:
    """Weight quantization per layer (ops whose weights the file stores quantized, or in float)."""
    out = []
    for nid, data in graph.g.nodes(data=True):
        attrs = data.get("attrs") or {}
        weights = attrs.get("weights") or []
        w = next((x for x in weights if x.get("name") == "weight"), None)
        if w is None:
            continue
        q = attrs.get("quant") or {}
        blocks = q.get("blocks")
        cin = attrs.get("inputCount")
        block = (cin // blocks) if (q.get("bits") and blocks and cin and blocks > 1) else None
        out.append({"node": nid, "op_type": data.get("op_type"), "dtype": w.get("dtype"),
                    "bits": q.get("bits"), "block": block, "asymmetric": q.get("asymmetric"),
                    "bytes": w.get("bytes")})
    return out


class LlmExportAdapter(FormatAdapter):
    name = FORMAT
    description = "MNN-LLM export folder"
    run_hint = "an export folder runs through MNN.llm: mnnscope generate DIR --text TEXT, or the Text dock (F6)"
    folder = True
    engines = ()  # it runs through MNN.llm (`mnnscope generate DIR`), not profile's engines

    def is_model_folder(self, path):
        return looks_like_export(path)

    def parse(self, path):
        from mnnscope.inspector.formats.mnn import load_mnn
        info = read_export(path)
        graph = load_mnn(info["llm_model"])
        graph.format = FORMAT
        graph.meta["model_file"] = info["llm_model"]
        graph.meta["llm_config"] = {"runtime": info["runtime"], "config": info["config"], "model": info["model"],
                                    "export_args": info["export_args"], "bits": info["bits"],
                                    "block": info["block"], "size_bytes": info["size_bytes"]}
        graph.meta["llm_quant"] = layer_quant(graph)
        graph.meta["fused_attention"] = [nid for nid, d in graph.g.nodes(data=True) if d.get("op_type") == "Attention"]
        return graph

    def shape_request(self, path, input_shapes=None):
        # One decode step (sequence 1) unless told otherwise: the mask and positions must agree with the
        # embedding input, whose sequence dim the file fixes at 1.
        sizes = dict(DECODE_STEP_SHAPES, **(input_shapes or {}))
        return MnnAdapter().shape_request(read_export(path)["llm_model"], sizes)

    def merge_shapes(self, graph, result):
        MnnAdapter().merge_shapes(graph, result)

    def tensor_shapes(self, result):
        return MnnAdapter().tensor_shapes(result)

    def weight_stats(self, path, keys):
        return MnnAdapter().weight_stats(read_export(path)["llm_model"], keys)


