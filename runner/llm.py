"""The `llm` request: an MNN-LLM export folder run through `MNN.llm`, in a child process of the runner.

Why a child: MNN.llm crashes its process (3.6.1, seen here: reading `context` after a response() whose output
was not valid UTF-8 segfaults; a Var from forward() that outlives the Llm segfaults at exit; MNN_NOTES.md also
lists generate() after response() without generate_init(), not reproduced on the fixtures), and its
streamed tokens go to C++ stdout, which only another process can timestamp as they arrive. The runner starts
`python -m mnnscope.runner.llm SPEC.json`, reads the child's stdout (C stdio unbuffered there, so every token
piece is its own write) and stamps each chunk with its own clock; a child killed by a signal becomes a
RunnerError naming the signal and the phase it was in, and the runner serves the next request.

Payload:
    dir         str     the export folder (config.json)
    action      str     "generate": `response(text, True)` with the greedy sampler (or the folder's own with
                        sampler "config"), timed per token from the stream; "forward": `forward(ids)` per step,
                        greedy on the argmax or teacher-forced on `force`, the logits of every step saved;
                        "hidden": llm.mnn through the Module API on prompt + `force` at once, the last
                        position of every tensor named in `read` saved (hidden.npz)
    text        str     the prompt, through the export's own tokenizer (or `prompt_ids` [int])
    steps       int     tokens to generate (>= 1)
    force       [int]   with forward: the token fed after step i (argmax still recorded)
    sampler     "greedy" (default) | "config"
    threads     int     thread_num (default 1); config {...}: more set_config keys (precision, memory)
    out_dir     str     where logits.npy and the child's result go
    timeout     float   seconds before the child is killed (default 600)

Result (generate): {text, tokens, pieces [each token's text], prompt_ids, prompt_tokens, steps, prefill_ms,
decode_ms [per token after the first], decode_ms_per_token (median), tokens_per_s, wall_ms (stream start -> end of response()),
mnn_prefill_ms, mnn_decode_ms (MNN's own totals from `context`), chunks (reads of the stream), memory_mb (the
child's peak RSS), config {the settings in effect}}. Result (forward): {tokens (fed), argmax, logits_path,
prompt_ids, steps, forward_ms [per step], memory_mb}. Result (hidden): {read, path, positions, prompt_ids}.

Stream timing: the child writes a start marker, calls response(), writes an end marker, each stamped with the
machine's monotonic clock by the child itself. Each output token's piece is located in the stream bytes; its
arrival is the time of the read that completed it (never later than the end marker). prefill_ms is
start -> first token (time to first token); decode_ms[k] the gap between tokens k and k+1; a read holding
several tokens (the reader woke late) spreads its gap evenly over them, so prefill + sum(decode) is exactly
start -> last token, which the end marker bounds (wall_ms).
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

from mnnscope.runner import protocol
from mnnscope.runner.protocol import RunnerError

MARK = b"\x1e"        # frames the child's own messages inside its stdout: MARK json MARK
CHILD_MODULE = "mnnscope.runner.llm"


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def run_child(job, spec: dict) -> tuple[dict, list[tuple[float, bytes]], dict]:
    """Run the child on `spec`; returns (its result, [(time, bytes)] of its stdout, marks {phase: time,
    "offsets": {phase: bytes of the child's output before that phase's mark}}).

    Times are time.monotonic(): CLOCK_MONOTONIC, one clock for every process of the machine, so the child's own
    stamps on its phase marks and the parent's stamps on the reads of the pipe are on one time line."""
    out_dir = spec["out_dir"]
    os.makedirs(out_dir, exist_ok=True)
    spec_path = os.path.join(out_dir, "llm_spec.json")
    result_path = os.path.join(out_dir, "llm_result.json")
    if os.path.exists(result_path):
        os.remove(result_path)
    with open(spec_path, "w") as f:
        json.dump(dict(spec, result_path=result_path), f)
    cmd = [sys.executable, "-m", CHILD_MODULE, spec_path]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=None)
    fd = proc.stdout.fileno()
    chunks: list[tuple[float, bytes]] = []
    marks: dict[str, float] = {}
    offsets: dict[str, int] = {}   # bytes of MNN's output before each phase mark
    seen = 0
    phase = "start"
    pending = b""
    deadline = time.monotonic() + float(spec.get("timeout") or 600)
    try:
        while True:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                if job.cancelled or time.monotonic() > deadline:
                    proc.kill()
                    if job.cancelled:
                        raise RunnerError(protocol.CANCELLED, "cancelled")
                    raise RunnerError(protocol.RUN_FAILED, f"MNN.llm did not finish in {spec.get('timeout')} s "
                                                           f"(phase {phase}); killed")
                continue
            data = os.read(fd, 65536)
            now = time.monotonic()
            if not data:
                break
            # Markers are cut out of the stream; the bytes between them are MNN's own output.
            pending += data
            text = b""
            while True:
                i = pending.find(MARK)
                if i < 0:
                    text += pending
                    pending = b""
                    break
                j = pending.find(MARK, i + 1)
                if j < 0:
                    text += pending[:i]
                    pending = pending[i:]
                    break
                text += pending[:i]
                msg = json.loads(pending[i + 1:j])
                phase = msg.get("phase", phase)
                marks[phase] = float(msg.get("t", now))  # stamped by the child when it got there
                offsets[phase] = seen + len(text)
                pending = pending[j + 1:]
            if text:
                chunks.append((now, text))
                seen += len(text)
    except BaseException:
        proc.kill()  # never proc.poll() before wait4 below: it would reap the child and lose its peak memory
        proc.wait()
        raise
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    rc = proc.returncode
    if rc < 0:
        raise RunnerError(protocol.RUN_FAILED, f"MNN.llm crashed: killed by {_signal_name(rc)} during {phase} "
                                               f"({spec.get('dir')})")
    if not os.path.isfile(result_path):
        raise RunnerError(protocol.RUN_FAILED, f"MNN.llm child exited with code {rc} during {phase} without a result")
    with open(result_path) as f:
        result = json.load(f)
    if "error" in result:
        err = result["error"]
        raise RunnerError(err.get("kind", protocol.RUN_FAILED), err.get("message", "MNN.llm failed"))
    result["memory_mb"] = usage.ru_maxrss / 1024.0  # kB on Linux
    marks["offsets"] = offsets
    return result, chunks, marks


def token_times(chunks: list[tuple[float, bytes]], pieces: list, begin: int, start: float,
                end: float | None) -> list[float] | None:
    """Arrival time of each token: the read that completed its piece, the pieces expected one after the other from
    byte `begin` of the stream (after MNN's own "[MNNLLM] response: ..." line). A token whose piece is not
    printed there (an end-of-text token, a piece of a multi-byte character: None) arrives with the next
    printed one, or at `end`. Tokens that arrive in one read share the gap since the previous read evenly.
    None when no piece is found (the stream is not what the tokens say)."""
    stream = b"".join(c for _, c in chunks)
    if stream.startswith(b"[MNNLLM]", begin):
        nl = stream.find(b"\n", begin)
        begin = nl + 1 if nl >= 0 else begin
    bounds, pos = [], 0
    for t, c in chunks:
        pos += len(c)
        bounds.append((pos, t))
    arrivals: list[float | None] = []
    offset, b = begin, 0
    for piece in pieces:
        if piece and stream.startswith(piece, offset):
            offset += len(piece)
            while b < len(bounds) - 1 and bounds[b][0] < offset:
                b += 1
            arrivals.append(bounds[b][1])
        else:
            arrivals.append(None)
    if all(a is None for a in arrivals):
        return None
    later = end if end is not None else max(a for a in arrivals if a is not None)
    for i in range(len(arrivals) - 1, -1, -1):
        if arrivals[i] is None:
            arrivals[i] = later
        later = arrivals[i]
    out, i, prev = [], 0, start
    while i < len(arrivals):
        j = i
        while j + 1 < len(arrivals) and arrivals[j + 1] == arrivals[i]:
            j += 1
        n = j - i + 1
        for k in range(n):
            out.append(prev + (arrivals[i] - prev) * (k + 1) / n)
        prev = arrivals[i]
        i = j + 1
    return out


def llm(job) -> dict:
    p = dict(job.payload)
    folder = p.get("dir")
    if not folder or not os.path.isfile(os.path.join(folder, "config.json")):
        raise RunnerError(protocol.BAD_MODEL, f"{folder}: not an MNN-LLM export folder (no config.json)")
    action = p.get("action") or "generate"
    if action not in ("generate", "forward", "hidden"):
        raise RunnerError(protocol.BAD_REQUEST, f"llm: unknown action '{action}'")
    steps = int(p.get("steps") or 0)
    if steps < 1 or not (p.get("text") or p.get("prompt_ids")):
        raise RunnerError(protocol.BAD_REQUEST, "llm needs a prompt (text or prompt_ids) and steps >= 1")
    if not p.get("out_dir"):
        raise RunnerError(protocol.BAD_REQUEST, "llm needs out_dir")
    job.progress(None, f"MNN.llm {action} on {os.path.basename(os.path.normpath(folder))}")
    result, chunks, marks = run_child(job, p)
    if action in ("forward", "hidden"):
        return result
    start, end = marks.get("response"), marks.get("done")
    pieces = [None if s is None else s.encode("utf-8") for s in result.get("pieces") or []]
    times = None
    if start is not None:
        times = token_times(chunks, pieces, marks["offsets"].get("response", 0), start, end)
    if times is not None and end is not None:  # a read after response() returned is the reader's lag
        times = [min(t, end) for t in times]
    n = len(result.get("tokens") or [])
    if times is None or len(times) != n or not n:
        # The pieces were not found in the stream (a tokenizer that decodes differently one token at a time):
        # MNN's own totals are all there is.
        prefill = result["mnn_prefill_ms"]
        decode = [result["mnn_decode_ms"] / max(1, n - 1)] * max(0, n - 1)
        result["warnings"] = [f"the streamed text did not match the {n} tokens: MNN's own totals used"]
    else:
        prefill = (times[0] - start) * 1e3
        decode = [(b - a) * 1e3 for a, b in zip(times, times[1:])]
    result.update(prefill_ms=prefill, decode_ms=decode,
                  decode_ms_per_token=(sorted(decode)[len(decode) // 2] if decode else None),
                  tokens_per_s=(len(decode) / (sum(decode) / 1e3)) if decode and sum(decode) > 0 else
                  (1e3 / prefill if prefill else None),
                  wall_ms=((end - start) * 1e3) if start is not None and end is not None else None,
                  chunks=len(chunks))
    return result


# ----- the child --------------------------------------------------------------------------------------


def _say(**msg) -> None:
    """A framed message on stdout, in order with what MNN prints there (both unbuffered), stamped now."""
    os.write(1, MARK + json.dumps(dict(msg, t=time.monotonic())).encode() + MARK)


def _unbuffer_c_stdout() -> None:
    """C stdio's stdout is fully buffered on a pipe: MNN's streamed tokens would arrive in one lump at exit."""
    import ctypes
    libc = ctypes.CDLL(None)
    libc.setvbuf(ctypes.c_void_p.in_dll(libc, "stdout"), None, 2, 0)  # _IONBF


def _hidden(spec: dict, folder: str, ids: list[int], llm) -> dict:
    """llm.mnn through the Module API on the whole sequence at once (the prompt and `force`), with the
    folder's precision and memory modes: the last position's row of every tensor in `read` (layer
    boundaries, hidden_states, logits) saved as hidden.npz (t0, t1, ... in `read` order). The embedding rows
    come from the folder's bf16 table, the mask is causal (float), positions 0..n-1: what MNN.llm feeds
    for a prefill of the same tokens."""
    import numpy as np
    import MNN.expr as F
    import MNN.nn as nn
    _say(phase="hidden states")
    config = json.load(open(os.path.join(folder, "config.json")))
    model = json.load(open(os.path.join(folder, "llm_config.json")))
    if model.get("attention_mask", "float") != "float":
        return {"error": {"kind": protocol.UNSUPPORTED,
                          "message": f"hidden states: attention_mask '{model.get('attention_mask')}' is not supported"}}
    emb_path = os.path.join(folder, config.get("embedding_file") or "embeddings_bf16.bin")
    hidden = int(model["hidden_size"])
    if not os.path.isfile(emb_path):
        return {"error": {"kind": protocol.UNSUPPORTED, "message": f"hidden states: no {os.path.basename(emb_path)}"
                                                                  " (embeddings inside llm.mnn are not read)"}}
    bf16 = np.fromfile(emb_path, dtype=np.uint16).astype(np.uint32) << 16
    table = bf16.view(np.float32).reshape(-1, hidden)
    seq_ids = list(ids) + [int(t) for t in spec.get("force") or []]
    n = len(seq_ids)
    x = table[seq_ids].reshape(n, 1, hidden)
    mask = np.triu(np.full((n, n), np.finfo(np.float32).min, np.float32), 1).reshape(1, 1, n, n)
    pos = np.arange(n, dtype=np.int32).reshape(1, n)
    names = list(spec.get("read") or ["hidden_states", "logits"])
    modes = {"low": "Low", "high": "High", "normal": "Normal"}
    module = nn.load_module_from_file(
        os.path.join(folder, config.get("llm_model") or "llm.mnn"),
        ["input_ids", "attention_mask", "position_ids", "logits_index"], names, shape_mutable=True,
        memory_mode=getattr(nn._F.MemoryMode, modes.get(str(config.get("memory", "normal")).lower(), "Normal")),
        precision_mode=getattr(nn._F.PrecisionMode, modes.get(str(config.get("precision", "normal")).lower(),
                                                              "Normal")),
        thread_num=int(spec.get("threads") or 1))

    def const(a, dtype):
        return F.const(a.flatten().tolist(), list(a.shape), F.NCHW, dtype)

    outs = module.forward([const(x, F.float), const(mask, F.float), const(pos, F.int),
                           const(np.array([n - 1], np.int32), F.int)])
    if len(outs) != len(names):
        return {"error": {"kind": protocol.RUN_FAILED, "message": f"hidden states: the module gave {len(outs)} of "
                                                                  f"{len(names)} outputs"}}
    rows = {}
    for name, var in zip(names, outs):
        a = np.array(var.read(), dtype=np.float32)
        rows[name] = a.reshape(-1, a.shape[-1])[-1].copy()
        del var
    del outs, module  # before MNN's runtime goes (see forward: a Var outliving its owner crashes at exit)
    path = os.path.join(spec["out_dir"], "hidden.npz")
    np.savez(path, **{f"t{i}": rows[nm] for i, nm in enumerate(names)})
    _say(phase="done")
    return {"action": "hidden", "read": names, "path": path, "positions": n, "prompt_ids": ids}


def child_main(spec_path: str) -> int:
    with open(spec_path) as f:
        spec = json.load(f)
    result_path = spec["result_path"]

    def finish(obj) -> int:
        with open(result_path + ".tmp", "w") as f:
            json.dump(obj, f)
        os.replace(result_path + ".tmp", result_path)
        return 0

    _unbuffer_c_stdout()
    _say(phase="import")
    import numpy as np
    import MNN.llm as mnn_llm
    folder = spec["dir"]
    steps = int(spec["steps"])
    config = {"thread_num": int(spec.get("threads") or 1), "max_new_tokens": steps}
    if (spec.get("sampler") or "greedy") == "greedy":
        config["sampler_type"] = "greedy"
    config.update(spec.get("config") or {})
    _say(phase="load")
    llm = mnn_llm.create(os.path.join(folder, "config.json"))
    llm.set_config(config)
    llm.load()
    ids = [int(i) for i in spec.get("prompt_ids") or llm.tokenizer_encode(spec["text"])]
    if not ids:
        return finish({"error": {"kind": protocol.BAD_REQUEST, "message": "the prompt encodes to no tokens"}})
    if spec.get("action") == "hidden":
        return finish(_hidden(spec, folder, ids, llm))
    if spec.get("action") == "forward":
        _say(phase="forward")
        force = spec.get("force")
        fed, argmax, rows, ms = [], [], [], []
        feed = ids
        for step in range(steps):
            t0 = time.perf_counter()
            var = llm.forward(feed)
            logits = np.array(var.read(), dtype=np.float32).reshape(-1)
            del var  # a Var from forward() that outlives the Llm segfaults at exit (MNN 3.6.1)
            ms.append((time.perf_counter() - t0) * 1e3)
            rows.append(logits)
            top = int(logits.argmax())
            argmax.append(top)
            token = int(force[step]) if force is not None and step < len(force) else top
            fed.append(token)
            feed = [token]
        logits_path = os.path.join(spec["out_dir"], "logits.npy")
        np.save(logits_path, np.stack(rows), allow_pickle=False)
        _say(phase="done")
        return finish({"action": "forward", "tokens": fed, "argmax": argmax, "logits_path": logits_path,
                       "prompt_ids": ids, "prompt_tokens": len(ids), "steps": len(rows), "forward_ms": ms,
                       "config": config})
    # The prompt as the export's own tokenizer reads it: response() applies the chat template to the text.
    text = spec.get("text") or llm.tokenizer_decode(ids)
    _say(phase="response")
    llm.response(text, True)
    _say(phase="done")
    _say(phase="reading the context after response()")  # segfaults when the output was not valid UTF-8
    ctx = llm.context
    ctx.refresh()
    tokens = [int(t) for t in ctx.output_tokens]
    pieces = []
    for t in tokens:
        try:
            pieces.append(llm.tokenizer_decode(t))
        except UnicodeDecodeError:  # a piece of a multi-byte character: its time comes from MNN's totals
            pieces.append(None)
    return finish({"action": "generate", "text": "".join(p for p in pieces if p is not None), "tokens": tokens, "pieces": pieces,
                   "prompt_ids": [int(t) for t in ctx.history_tokens[:ctx.prompt_len]],
                   "prompt_tokens": int(ctx.prompt_len), "steps": len(tokens),
                   "mnn_prefill_ms": ctx.prefill_us / 1e3, "mnn_decode_ms": ctx.decode_us / 1e3,
                   "config": config})


if __name__ == "__main__":
    code = child_main(sys.argv[1])
    # The result is written; MNN's objects are not torn down (their destruction order has crashed at exit).
    os._exit(code)
