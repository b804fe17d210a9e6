"""MNN-LLM export folders: generate (timed per token), compare two exports, sweep several.

Everything runs through the runner's `llm` request (runner/llm.py: MNN.llm in a child of the runner).
- generate: `response(text, True)` with the greedy sampler (or the folder's own), the stream timestamped per
  token; the JSON of `mnnscope generate` (text, tokens, prefill_ms, decode_ms, decode_ms_per_token,
  tokens_per_s, memory_mb, run_id) plus MNN's own totals.
- compare: export A greedy through `forward(ids)` step by step (A's tokens and logits), then export B
  teacher-forced on A's tokens (the same prompt ids), so step k of both sees the same sequence; per step top-1
  agreement, KL(A || B) and logits cosine, the first step whose argmax differs. `modes` has one entry, B's.
- sweep: every folder against the 16-bit one among them (else the first given): bits, block, size,
  tokens/s, agreement and KL.
"""
from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from mnnscope.runner import protocol

from mnnscope.inspector.errors import ModelError, UsageError
from mnnscope.inspector.formats.llm_folder import is_export_folder, read_export
from mnnscope.inspector.generate.service import token_metrics
from mnnscope.inspector.process.client import EventHandler, RunnerClient, client_or_own
from mnnscope.inspector.store.runs import RunStore, open_run, record

LLM_TIMEOUT = 1800.0
SAMPLERS = ("greedy", "config")


@dataclass
class LlmOptions:
    folder: str
    text: str
    steps: int = 16
    threads: int = 1
    sampler: str = "greedy"     # greedy | config (the folder's own sampler, e.g. "mixed" at temperature 0.8)


def check_folder(folder: str) -> dict:
    if not os.path.exists(folder):
        raise ModelError(f"{folder}: no such file")
    if not is_export_folder(folder):
        raise ModelError(f"{folder}: not an MNN-LLM export folder (config.json naming an existing llm.mnn)")
    return read_export(folder)


def _check(text: str, steps: int, threads: int) -> None:
    if not text:
        raise UsageError("--text is needed (the prompt)")
    if steps < 1:
        raise UsageError("--steps must be at least 1")
    if threads < 1:
        raise UsageError("--threads must be at least 1")


def name_of(folder: str) -> str:
    return Path(folder).resolve().name


def _request(client: RunnerClient, payload: dict, on_event) -> dict:
    payload = dict(payload, dir=os.path.abspath(payload["dir"]))
    return client.request("llm", payload, on_event=on_event, timeout=LLM_TIMEOUT)


def _record(store, kind, folder, settings, summary, run_dir) -> tuple[int | None, str | None]:
    if store is None:
        return None, None
    return record(store, kind=kind, model_path=read_export(folder)["llm_model"], settings=settings,
                  backend_requested="CPU", summary=summary, run_dir=run_dir)


def generate_export(opts: LlmOptions, *, client: RunnerClient | None = None, store: RunStore | None = None,
                    on_event: EventHandler | None = None) -> dict:
    """`mnnscope generate DIR`: MNN.llm's response, timed per token; recorded as a `generate` run."""
    _check(opts.text, opts.steps, opts.threads)
    if opts.sampler not in SAMPLERS:
        raise UsageError(f"--sampler must be one of {', '.join(SAMPLERS)}")
    info = check_folder(opts.folder)
    store, run_dir, warnings = open_run(store, "generate")
    settings = dict(asdict(opts), engine="mnn-llm")
    payload = {"dir": opts.folder, "action": "generate", "text": opts.text, "steps": opts.steps,
               "threads": opts.threads, "sampler": opts.sampler, "out_dir": str(run_dir)}
    with client_or_own(client) as client:
        try:
            r = _request(client, payload, on_event)
        except protocol.RunnerError as e:
            _record(store, "generate", opts.folder, settings, {"error": {"kind": e.kind, "message": e.message}},
                    str(run_dir))
            raise
    result = dict(r, model=os.path.abspath(opts.folder), run_model=info["llm_model"], engine="mnn-llm",
                  api="MNN.llm", backend_used="CPU", kv_cache=True, mode=None, prompt=opts.text,
                  bits=info["bits"], block=info["block"], size_bytes=info["size_bytes"],
                  sampler=opts.sampler, total_ms=(r.get("prefill_ms") or 0) + sum(r.get("decode_ms") or []))
    result["run_id"], problem = _record(store, "generate", opts.folder, settings, result, str(run_dir))
    result["warnings"] = list(r.get("warnings") or []) + warnings + ([problem] if problem else [])
    result["run_dir"] = str(run_dir)
    return result


def _cosine(a: np.ndarray, b: np.ndarray) -> list[float]:
    a, b = a.astype(np.float64), b.astype(np.float64)
    den = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return [float(v) for v in np.where(den > 0, (a * b).sum(-1) / np.where(den > 0, den, 1), 1.0)]


def _forward(client, folder, run_dir, name, text, steps, threads, on_event, prompt_ids=None, force=None) -> dict:
    payload = {"dir": folder, "action": "forward", "text": text, "steps": steps, "threads": threads,
               "out_dir": os.path.join(run_dir, name)}
    if prompt_ids is not None:
        payload["prompt_ids"] = prompt_ids
    if force is not None:
        payload["force"] = force
    return _request(client, payload, on_event)


def compare_pair(client, run_dir: str, ref: dict, folder_b: str, threads: int, on_event, label: str) -> dict:
    """B teacher-forced on A's greedy tokens (`ref`: A's forward result): the mode entry for B."""
    forced = _forward(client, folder_b, run_dir, label, None, ref["steps"], threads, on_event,
                      prompt_ids=ref["prompt_ids"], force=ref["tokens"])
    a = np.load(ref["logits_path"], allow_pickle=False)
    b = np.load(forced["logits_path"], allow_pickle=False)
    if a.shape[-1] != b.shape[-1]:
        raise ModelError(f"{folder_b}: its vocabulary ({b.shape[-1]}) is not the reference's ({a.shape[-1]}): "
                         "not an export of the same model")
    m = token_metrics(a, b)
    info = read_export(folder_b)
    return dict(m, mode=name_of(folder_b), dir=os.path.abspath(folder_b), cosine_per_step=_cosine(a, b),
                kl_mean=float(np.mean(m["kl_per_step"])), kl_max=float(np.max(m["kl_per_step"])),
                argmax=forced["argmax"], logits_path=forced["logits_path"], bits=info["bits"], block=info["block"],
                size_bytes=info["size_bytes"])


def compare_exports(folder_a: str, folder_b: str, text: str, steps: int = 16, threads: int = 1, *,
                    client: RunnerClient | None = None, store: RunStore | None = None,
                    on_event: EventHandler | None = None) -> dict:
    """`mnnscope compare DIR_A DIR_B`: B against A (the reference), teacher-forced on A's greedy tokens."""
    _check(text, steps, threads)
    check_folder(folder_a)
    check_folder(folder_b)
    store, run_dir, warnings = open_run(store, "compare")
    run_dir = str(run_dir)
    with client_or_own(client) as client:
        ref = _forward(client, folder_a, run_dir, "reference", text, steps, threads, on_event)
        mode = compare_pair(client, run_dir, ref, folder_b, threads, on_event, "forced")
        if mode["first_mismatch_step"] is not None:
            mode["layer_divergence"] = layer_divergence(client, run_dir, ref, folder_a, folder_b,
                                                        mode["first_mismatch_step"], threads, on_event)
    result = {"kind": "mnn-llm", "model": os.path.abspath(folder_a), "prompt": text, "steps": steps,
              "reference": {"dir": os.path.abspath(folder_a), "tokens": ref["tokens"], "prompt_ids": ref["prompt_ids"],
                            "logits_path": ref["logits_path"], **_bits(folder_a)},
              "modes": [mode], "ok": mode["first_mismatch_step"] is None}
    settings = {"other": os.path.abspath(folder_b), "text": text, "steps": steps, "threads": threads}
    summary = {"kind": "mnn-llm",
               "modes": [{k: mode[k] for k in ("mode", "agreement_top1", "first_mismatch_step", "kl_max")}]}
    result["run_id"], problem = _record(store, "compare", folder_a, settings, summary, run_dir)
    result["warnings"] = warnings + ([problem] if problem else [])
    result["run_dir"] = run_dir
    return result


LAYER = re.compile(r"(?:blocks|layers)\.(\d+)/")


def layer_boundaries(folder: str) -> list[tuple[str, str]]:
    """[(label, tensor)]: the residual stream entering each decoder layer (its input_layernorm's input), then
    hidden_states and logits, read from llm.mnn's graph (no native code)."""
    from mnnscope.inspector.formats.loader import load_model
    graph = load_model(folder, native=False)
    found = {}
    for _, data in graph.g.nodes(data=True):
        name = data.get("name") or ""
        m = LAYER.search(name)
        if data.get("op_type") == "LayerNorm" and "input_layernorm" in name and m and data.get("inputs"):
            found[int(m.group(1))] = data["inputs"][0]
    out = [(f"layers.{i} input", found[i]) for i in sorted(found)]
    return out + [(n, n) for n in ("hidden_states", "logits") if n in graph.outputs]


def layer_divergence(client, run_dir: str, ref: dict, folder_a: str, folder_b: str, step: int, threads: int,
                     on_event) -> dict:
    """Where the hidden states of B part from A's at `step` (the first mismatching one): both exports run the
    same sequence (the prompt and A's tokens before `step`) through llm.mnn's Module API, and every layer's
    input, hidden_states and logits at the last position are compared. `added_most` is the layer whose output
    adds the most relative error (rel L2 after it minus before it)."""
    bounds = layer_boundaries(folder_a)
    if len(bounds) < 2 or [t for _, t in bounds] != [t for _, t in layer_boundaries(folder_b)]:
        return {"step": step, "error": "the two graphs do not name the same layer boundaries", "layers": []}
    rows = {}
    try:
        for key, folder in (("a", folder_a), ("b", folder_b)):
            r = _request(client, {"dir": folder, "action": "hidden", "prompt_ids": ref["prompt_ids"],
                                  "force": ref["tokens"][:step], "steps": 1, "threads": threads,
                                  "read": [t for _, t in bounds], "out_dir": os.path.join(run_dir, f"hidden_{key}")},
                         on_event)
            with np.load(r["path"], allow_pickle=False) as z:
                rows[key] = [z[f"t{i}"].astype(np.float64) for i in range(len(bounds))]
    except protocol.RunnerError as e:
        return {"step": step, "error": e.message, "layers": []}
    layers = []
    for (label, tensor), a, b in zip(bounds, rows["a"], rows["b"]):
        na = float(np.linalg.norm(a))
        den = na * float(np.linalg.norm(b))
        layers.append({"layer": label, "tensor": tensor,
                       "rel_l2": float(np.linalg.norm(b - a) / na) if na > 0 else float(np.linalg.norm(b)),
                       "cosine": float(a @ b / den) if den > 0 else 1.0})
    added = [(layers[i + 1]["rel_l2"] - layers[i]["rel_l2"], layers[i]["layer"].removesuffix(" input"))
             for i in range(len(layers) - 1) if layers[i]["layer"].endswith(" input")]
    worst = max(added) if added else None
    return {"step": step, "layers": layers, "added_most": worst[1] if worst else None,
            "added_rel_l2": worst[0] if worst else None,
            "argmax": {"a": int(np.argmax(rows["a"][-1])), "b": int(np.argmax(rows["b"][-1]))}}


def _bits(folder: str) -> dict:
    info = read_export(folder)
    return {"bits": info["bits"], "block": info["block"], "size_bytes": info["size_bytes"]}


def sweep_exports(folders: list[str], text: str, steps: int = 16, threads: int = 1, *,
                  client: RunnerClient | None = None, store: RunStore | None = None,
                  on_event: EventHandler | None = None) -> dict:
    """The table for choosing a quantization: per folder bits, block, size, tokens/s, agreement and KL
    against the 16-bit export among them (else the first given; the result says which)."""
    _check(text, steps, threads)
    if len(folders) < 1:
        raise UsageError("give at least one export folder")
    infos = {f: check_folder(f) for f in folders}
    ref_folder = next((f for f in folders if infos[f]["bits"] == 16), folders[0])
    warnings = [] if infos[ref_folder]["bits"] == 16 else [
        f"no 16-bit export among the folders: {name_of(ref_folder)} is the reference"]
    store, run_dir, more = open_run(store, "sweep")
    run_dir = str(run_dir)
    rows = []
    with client_or_own(client) as client:
        ref = _forward(client, ref_folder, run_dir, "reference", text, steps, threads, on_event)
        for i, f in enumerate(folders):
            gen = _request(client, {"dir": f, "action": "generate", "text": text, "steps": steps,
                                    "threads": threads, "out_dir": os.path.join(run_dir, f"gen{i}")}, on_event)
            m = compare_pair(client, run_dir, ref, f, threads, on_event, f"forced{i}")
            rows.append({"name": name_of(f), "dir": os.path.abspath(f), "bits": infos[f]["bits"],
                         "block": infos[f]["block"], "size_bytes": infos[f]["size_bytes"],
                         "tokens_per_s": gen.get("tokens_per_s"), "prefill_ms": gen.get("prefill_ms"),
                         "decode_ms_per_token": gen.get("decode_ms_per_token"), "memory_mb": gen.get("memory_mb"),
                         "agreement_top1": m["agreement_top1"], "first_mismatch_step": m["first_mismatch_step"],
                         "kl_mean": m["kl_mean"], "kl_max": m["kl_max"],
                         "cosine_min": min(m["cosine_per_step"]), "reference": f == ref_folder})
    result = {"kind": "mnn-llm-sweep", "reference": os.path.abspath(ref_folder), "prompt": text, "steps": steps,
              "threads": threads, "rows": rows}
    settings = {"folders": [os.path.abspath(f) for f in folders], "text": text, "steps": steps}
    result["run_id"], problem = _record(store, "sweep", ref_folder, settings, {"kind": "mnn-llm-sweep", "rows": rows},
                                       run_dir)
    result["warnings"] = warnings + more + ([problem] if problem else [])
    result["run_dir"] = run_dir
    return result


@dataclass
class SweepOptions:
    """The sweep as a service request (the Text dock's child process: inspector/llm/sweepproc.py)."""
    folders: list
    text: str
    steps: int = 16
    threads: int = 1


def run_sweep(opts: SweepOptions, *, client: RunnerClient | None = None, store: RunStore | None = None,
              on_event: EventHandler | None = None) -> dict:
    return sweep_exports(list(opts.folders), opts.text, opts.steps, opts.threads, client=client, store=store,
                         on_event=on_event)


def _identity(folder: Path) -> tuple | None:
    """What makes two export folders exports of one model: the HuggingFace source they were exported from and the
    model's type and size (llm_config.json); None when the folder is not an export."""
    if not is_export_folder(folder):
        return None
    info = read_export(folder)
    args, model = info.get("export_args") or {}, info.get("model") or {}
    return (args.get("path"), model.get("model_type"), model.get("hidden_size"), model.get("layer_nums"))


def same_model_exports(folder: str) -> list[str]:
    """`folder` and the export folders beside it (same parent) exported from the same model, 16-bit first, then by
    bits and name: what the Text dock's sweep compares."""
    me = Path(folder).resolve()
    ident = _identity(me)
    if ident is None:
        raise ModelError(f"{folder}: not an MNN-LLM export folder (config.json naming an existing llm.mnn)")
    found = [me] + [d for d in sorted(me.parent.iterdir()) if d.is_dir() and d != me and _identity(d) == ident]

    def bits(d):
        b = (read_export(d).get("export_args") or {}).get("quant_bit")
        return -(b or 0)
    return [str(d) for d in sorted(found, key=lambda d: (bits(d), d.name))]
