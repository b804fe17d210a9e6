"""Text for generate results shared by the CLI and the Text dock (no heavy imports: the window loads it)."""
from __future__ import annotations


def op_split_summary(split: dict | None, top: int = 3) -> str:
    """One line for the CLI and the Text dock: where a prefill and a decode step spend their time, by op type."""
    if not split:
        return "per-op split: not measured (this engine has no per-op times)"
    # sorted here: a result that went through JSON with sorted keys (the window's child process) lost the order
    types = sorted(split["by_type"].items(), key=lambda kv: -kv[1]["decode_ms"])[:top]
    return (f"per op (kernels only; a step also feeds inputs, resizes and reads the logits): prefill "
            f"{split['prefill_ms']:.2f} ms, decode step {split['decode_ms']:.2f} ms; slowest op types in decode: "
            + ", ".join(f"{t} {v['decode_ms']:.3f} ms (prefill {v['prefill_ms']:.3f})" for t, v in types))


def verdict(r: dict) -> str:
    """A compared generation's answer first ("✓ MNN picks the reference's token at every step: "), "" without a
    comparison: the agreement was mid-sentence in a dense line, and nothing said whether the run was good (helper
    105's try)."""
    if r.get("agreement_top1") is None:
        return ""
    first = r.get("first_mismatch_step")
    if first is None:
        return "\u2713 MNN picks the reference's token at every step: "
    return f"\u2717 MNN picks another token than the reference's at step {first} (teacher-forced): "


def headline(r: dict) -> str:
    """The Text dock's first line for a generation: the tokens, the engine and mode that made them (and the precision
    they really ran at, where it differs from the one asked for), timing, and with a comparison the teacher-forced
    agreement and where MNN's own text leaves the reference's."""
    preq, peff = r.get("precision_requested"), r.get("precision_effective")
    ran_as = f"; precision {preq} ran as {peff} on this CPU" if preq and peff and preq != peff else ""
    what = " ".join(x for x in (r["engine"], r.get("mode")) if x)
    kv = "on" if r["kv_cache"] else "off" + (f": {r['kv_cache_why']}" if r.get("kv_cache_why") else "")
    # each figure says what it is: the median step beside a rate over every step read as a contradiction (helper 115:
    # "decode 0.57 ms/token, 1053 tokens/s", where 1/0.57 ms is 1750/s; two slow steps make the difference)
    n = len(r.get("decode_ms") or [])
    over = f" over all {n} steps after the first" if n > 1 else ""
    line = verdict(r) + (f"{r['steps']} tokens on {what} ({r.get('backend_used')}, KV cache {kv}{ran_as}): prefill "
                         f"(time to first token) {r['prefill_ms']:.2f} ms, decode "
                         f"{(r.get('decode_ms_per_token') or 0):.2f} ms/token (median), {r['tokens_per_s']:.0f} "
                         f"tokens/s{over}")
    if r.get("agreement_top1") is not None:
        first = r["first_mismatch_step"]
        line += (f"; top-1 agreement {r['agreement_top1']:.2f} (teacher-forced), first mismatch "
                 f"{'none' if first is None else f'at step {first}'}")
        if r.get("free_run_mismatch_step") is not None:
            line += f"; MNN's own text leaves the reference's at step {r['free_run_mismatch_step']}"
    return line


def reference_speed(r: dict) -> str:
    """The reference's own speed, where a comparison ran ONNX Runtime: "ONNX Runtime (the reference): prefill 0.19 ms,
    decode 0.16 ms/token (median), 6410 tokens/s". Helper 115 read MNN's figures alone and could not compare them
    with ONNX Runtime's; its run reads the routers' outputs back as it goes (a little slower, if anything)."""
    ref = r.get("reference") or {}
    if not isinstance(ref.get("prefill_ms"), (int, float)) or not isinstance(ref.get("tokens_per_s"), (int, float)):
        return ""
    kv = "on" if ref.get("kv_cache") else "off"
    return (f"ONNX Runtime (the reference, KV cache {kv}): prefill {ref['prefill_ms']:.2f} ms, decode "
            f"{(ref.get('decode_ms_per_token') or 0):.2f} ms/token (median), {ref['tokens_per_s']:.0f} tokens/s")
