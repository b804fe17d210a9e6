"""Statistics of a tensor (numpy), and the runner process's peak memory.

`tensor_stats` is what the protocol sends inline for every tensor a run reads back: min, max, mean, std
over the finite values, NaN/Inf counts, the fraction of exact zeros, and a 64-bin histogram of the finite
values between min and max. Sums run in float64 so that large fp16/fp32 tensors do not lose the mean.
"""
from __future__ import annotations

import os

import numpy as np

HIST_BINS = 64


def tensor_stats(arr) -> dict:
    """{shape, dtype, size, min, max, mean, std, nan, inf, zero_fraction, hist: {lo, hi, counts}}.

    min/max/mean/std cover the finite values only (None when there are none); `hist.counts` has
    HIST_BINS entries over [lo, hi] (lo == hi for a constant tensor: every value in the first bin).
    """
    a = np.asarray(arr)
    out = {"shape": list(a.shape), "dtype": str(a.dtype), "size": int(a.size), "min": None, "max": None,
           "mean": None, "std": None, "nan": 0, "inf": 0, "zero_fraction": None,
           "hist": {"lo": None, "hi": None, "counts": [0] * HIST_BINS}}
    if a.size == 0:
        return out
    if a.dtype.kind == "b":
        a = a.astype(np.uint8)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"no statistics for dtype {a.dtype}")
    flat = a.reshape(-1)
    out["zero_fraction"] = float(np.count_nonzero(flat == 0)) / flat.size
    if flat.dtype.kind == "f":
        finite_mask = np.isfinite(flat)
        out["nan"] = int(np.count_nonzero(np.isnan(flat)))
        out["inf"] = int(flat.size - out["nan"] - np.count_nonzero(finite_mask))
        finite = flat[finite_mask] if out["nan"] or out["inf"] else flat
    else:
        finite = flat
    if finite.size == 0:
        return out
    wide = finite.astype(np.float64)
    lo, hi = float(wide.min()), float(wide.max())
    out.update(min=lo, max=hi, mean=float(wide.mean()), std=float(wide.std()))
    if hi > lo:
        counts, _ = np.histogram(wide, bins=HIST_BINS, range=(lo, hi))
    else:
        counts = np.zeros(HIST_BINS, np.int64)
        counts[0] = wide.size
    out["hist"] = {"lo": lo, "hi": hi, "counts": [int(c) for c in counts]}
    return out


# ----- process memory ---------------------------------------------------------------------------------
def reset_peak_rss() -> bool:
    """Reset the kernel's high-water mark of this process (Linux), so the next peak is one run's."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float | None:
    """Peak resident memory of this process in MiB since the last reset (VmHWM), else since start."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    try:
        import resource
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (1024.0 * 1024.0) if os.uname().sysname == "Darwin" else peak / 1024.0
    except Exception:
        return None


def median_spread(values: list[float]) -> tuple[float | None, float | None, float | None]:
    """(median, min, max) of a list of times; Nones for an empty list."""
    if not values:
        return None, None, None
    v = np.asarray(values, np.float64)
    return float(np.median(v)), float(v.min()), float(v.max())
