"""The export sweep's table, shared by `mnnscope llm-sweep` and the Text dock (no heavy imports: the window loads
it)."""
from __future__ import annotations

SWEEP_COLUMNS = ["export", "bits", "block", "size kB", "tokens/s", "agree", "KL mean", "KL max", "1st miss"]


def sweep_rows(r: dict) -> list[list[str]]:
    """The sweep table's cells (the CLI's `llm-sweep` table), one row per export, the reference marked."""
    def f(v, fmt):
        return "-" if v is None else fmt.format(v)
    return [[row["name"] + (" (reference)" if row.get("reference") else ""), f(row["bits"], "{}"),
             f(row["block"], "{}"), f"{row['size_bytes'] / 1e3:.1f}", f(row["tokens_per_s"], "{:.0f}"),
             f(row["agreement_top1"], "{:.3f}"), f(row["kl_mean"], "{:.4f}"), f(row["kl_max"], "{:.3f}"),
             f(row["first_mismatch_step"], "{}")] for row in r["rows"]]
