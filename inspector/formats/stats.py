"""Statistics of one weight array, as the load process sends them (Properties shows them)."""
from __future__ import annotations

import numpy as np


# a weight this small is shown by its values (a Reshape's target shape read "min -1, max 16, mean 5, std 6.595" in
# Properties: a new-user try)
VALUES_SHOWN = 16


def array_stats(arr: np.ndarray) -> dict:
    out = {"shape": list(arr.shape), "dtype": str(arr.dtype), "elements": int(arr.size)}
    if 0 < arr.size <= VALUES_SHOWN and arr.dtype.kind in "fiub":
        out["values"] = [v.item() for v in (arr.astype(np.int64) if arr.dtype.kind == "b" else arr).ravel()]
    if arr.size and arr.dtype.kind in "fiub":
        a = arr.astype(np.float64, copy=False).ravel()
        f = a[np.isfinite(a)]
        out.update({"nan": int(np.isnan(a).sum()), "inf": int(np.isinf(a).sum()), "zeros": int((a == 0).sum())})
        if f.size:
            out.update({"min": float(f.min()), "max": float(f.max()), "mean": float(f.mean()),
                        "std": float(f.std()), "abs_mean": float(np.abs(f).mean())})
    return out
