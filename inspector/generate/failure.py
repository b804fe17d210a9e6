"""What a generation that failed at a step says: the step, the positions it fed, and for a position overflow what
the model holds (pure text: the service and its tests use it)."""
from __future__ import annotations

import re

# The Interpreter's fallback note: true of a model it cannot run at all, misleading for one that ran earlier steps.
_FALLBACK_HINT = re.compile(r";?\s*the Interpreter cannot run this model \(error code 3 in .*?typical of control "
                            r"flow or RNN subgraphs\)", re.S)
_BROADCAST = (re.compile(r"Broad ?cast error, dim1 = (\d+), dim2 = (\d+)"),  # MNN
              re.compile(r"broadcast an axis by a dimension other than 1\. (\d+) by (\d+)"))  # ONNX Runtime


def step_failure(message: str, step: int, prompt: int) -> str:
    """The runner's error for a generation that ran steps 0..step-1 and failed at `step`, with the step named and
    the positions it fed; where it ran earlier steps, without the Interpreter's hint of control flow. A broadcast
    of fewer positions against the positions fed is a position overflow and says so. Unchanged for a failure of
    the prompt (step 0) that is no position overflow."""
    positions = prompt + step
    m = next((m for rx in _BROADCAST if (m := rx.search(message))), None)
    held = min(int(m[1]), int(m[2])) if m and max(int(m[1]), int(m[2])) == positions else None
    overflow = held is not None and held < positions
    if step == 0 and not overflow:
        return message
    text = _FALLBACK_HINT.sub("", message).strip()
    out = (f"step {step} failed (it fed {positions} positions: prompt {prompt} + {step} tokens; steps 0-{step - 1} "
           f"ran): {text}" if step else f"step 0 failed (it fed the prompt's {prompt} positions): {text}")
    if overflow:
        fit = (f"prompt {prompt} + at most {held - prompt + 1} steps" if held >= prompt else
               "the prompt alone is longer")
        out += (f" \u2014 a tensor of {held} positions met one of {positions}: this model holds at most {held} "
                f"positions ({fit})")
    return out
