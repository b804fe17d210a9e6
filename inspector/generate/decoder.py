"""Whether a model can be generated from: the rule `decoder_io` applies to the graph, on names and dtypes only,
so the window can grey Generate Text for a model that is no decoder without loading anything (pure Python)."""
from __future__ import annotations

from typing import Callable


def int_dtype(dtype: str | None) -> bool:
    return bool(dtype) and ("int" in dtype.lower())


def token_input(inputs: list[str], dtype_of: Callable[[str], str | None]) -> str | None:
    """The token-id input: `input_ids`, else the first integer input; None when there is none."""
    if "input_ids" in inputs:
        return "input_ids"
    return next((n for n in inputs if int_dtype(dtype_of(n))), None)


def not_a_decoder(inputs: list[str], dtype_of: Callable[[str], str | None]) -> str | None:
    """Why generate cannot feed this model (None: it can): no token-id input, or inputs besides the token ids
    and the KV cache (past*)."""
    ids = token_input(inputs, dtype_of)
    if ids is None:
        return "no token-id input (an integer input such as input_ids): not a decoder LM"
    others = [n for n in inputs if n != ids and "past" not in n.lower()]
    if others:
        return (f"generate feeds the token ids and the KV cache only; the model also needs "
                f"{', '.join(others)}")
    return None
