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
