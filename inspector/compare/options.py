"""What a comparison is asked to do: the precision modes and the options of one compare run.

A mode is converter settings plus runtime settings:


    fp32    default conversion, precision high             (the baseline)
    low     default conversion, precision low             (fp16 arithmetic where the CPU has it)
    bf16    default conversion, precision low_bf16
    fp16w   --fp16 (fp16 weight storage), precision high
    int8w   --weightQuantBits 8, precision high            (weights dequantized at load)
    int4w   --weightQuantBits 4, precision high
    int8    mnnquant full int8 (calibrated on the compare input plus seeded random samples of its shape)
    memlow  --weightQuantBits 8, memory low                 (weights stay int8: dynamic int8 compute)
    fp16c   no conversion: ONNX Runtime on a copy of the model rounded to fp16 at every operator boundary
    bf16c   the same with bf16                             (both *emulated*: see emulate.py for what is and is not)

The emulated modes (fp16c, bf16c) predict on any desktop what fp16/bf16 compute does to the model on a device:
their "device side" is ONNX Runtime on the emulated copy, matched to the reference by identical tensor names.
Every result row says `emulated: true`.

With `--mnn FILE`, the runtime-only modes (fp32, low, bf16, memlow) run that file instead of a conversion.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from mnnscope.inspector.compare.tolerance import DEFAULT_TOLERANCES, Tolerance

DUMP_TIMEOUT = 3600.0
DEFAULT_TIME_RUNS = 5  # timed runs of each mode's MNN model, or of each side of an .mnn comparison


@dataclass(frozen=True)
class Mode:
    name: str
    description: str
    settings: tuple = ()  # ConvertSettings fields as (name, value) pairs
    precision: str = "high"
    memory: str = "normal"
    int8: bool = False
    weight_bits: int | None = None
    emulate: str | None = None  # "fp16" | "bf16": computed by ONNX Runtime on an emulated copy (emulate.py), no MNN

    @property
    def runtime_only(self) -> bool:
        return not self.settings and not self.int8 and self.weight_bits is None and self.emulate is None


MODES = {m.name: m for m in (
    Mode("fp32", "default conversion, fp32 run"),
    Mode("low", "runtime precision low (fp16 arithmetic where the CPU has it)", precision="low"),
    Mode("bf16", "runtime precision low_bf16", precision="low_bf16"),
    Mode("fp16w", "fp16 weight storage (--fp16)", settings=(("fp16", True),)),
    Mode("int8w", "8-bit weight-only quantization", weight_bits=8),
    Mode("int4w", "4-bit weight-only quantization", weight_bits=4),
    Mode("int8", "full int8 (mnnquant, calibrated)", int8=True),
    Mode("memlow", "8-bit weights kept quantized, memory low (dynamic int8 compute)", weight_bits=8, memory="low"),
    Mode("fp16c", "fp16 compute emulated (ONNX Runtime, every operator's inputs, weights and outputs rounded to fp16)",
         emulate="fp16"),
    Mode("bf16c", "bf16 compute emulated (ONNX Runtime, every operator's inputs, weights and outputs rounded to bf16)",
         emulate="bf16"),
)}
DEFAULT_MODES = ["fp32", "low", "bf16", "fp16w", "int8w", "int4w", "memlow"]
# names users try that are no mode, and the modes they may mean (a new user looked for "fp16")
_FP16 = "low runs fp16 arithmetic, fp16w stores the weights in fp16, fp16c emulates fp16 compute in ONNX Runtime"
NEAR_MODES = {"fp16": _FP16, "float16": _FP16, "half": _FP16,
              "int4": "int4w is 4-bit weights (there is no full int4)", "float32": "fp32"}


def weights_mode(fp16: bool, bits: int | None, int8: bool) -> str:
    """The mode whose weight storage this is: full int8, else weight quantization by its bits (4 or fewer: int4w,
    more: int8w), else fp16 storage, else fp32. A given .mnn's weights (modes.stored_weights) and the Convert dock's
    settings (its Reconvert and re-run report) are named by it."""
    if int8:
        return "int8"
    if bits is not None:
        return "int4w" if bits <= 4 else "int8w"
    return "fp16w" if fp16 else "fp32"
QUANTIZED = ("fp16w", "int8w", "int4w", "int8", "memlow")
EMULATED = tuple(name for name, m in MODES.items() if m.emulate)
# The MNN mode that runs the same arithmetic for real (on a CPU or GPU with fp16/bf16 arithmetic).
REAL_MODE = {"fp16c": "low", "bf16c": "bf16"}
# An emulated mode is judged like the real mode it predicts.
EMULATED_TOLERANCES = {name: DEFAULT_TOLERANCES[REAL_MODE[name]] for name in EMULATED}


@dataclass
class CompareOptions:
    modes: list[str] = field(default_factory=lambda: list(DEFAULT_MODES))
    tolerance: Tolerance | None = None  # None: DEFAULT_TOLERANCES per mode
    # one part of the tolerance given alone ({"atol": x} or {"rtol": x}: --atol or --rtol without the other): the
    # other part stays each mode's default (--atol alone used to set rtol 0 for every mode: loosening the gate made
    # int8w's far stricter, tryout 17)
    tolerance_only: dict | None = None
    threads: int = 1
    mnn_path: str | None = None
    weight_quant_block: int | None = None
    weight_quant_asymmetric: bool | None = None
    # int8: how activation ranges are calibrated (None: the convert settings', else KL); mnnquant's failure on a
    # Winograd model says to use EMA, and compare must take that advice too
    feature_method: str | None = None
    fix: bool = True
    fix_ops: int = 3
    # The MNN ops the fix keeps in float, as a mode row's `fix_plan` named them (the dock's button); None: the plan
    # of this run's ranking (fix.fix_plan)
    fix_skip_ops: list[str] | None = None
    # `--fix-out FILE.mnn`: the fix's conversion is copied there (it is made in the comparison's temporary folder)
    fix_out: str | None = None
    calib_samples: int = 4
    seed: int = 0
    keep: bool = False
    # What a runner may hold of kept tensors at once; past it a run is split into parts (each a full run
    # that keeps only its part), because ORT and MNN keep every tensor they are asked for until the end.
    memory_budget_mb: float = 2048
    # Reuse identical conversions and reference runs (convert/cache.py); False: `--no-cache`.
    cache: bool = True
    # `--repro DIR`: a minimal verified repro of the (single) mode's first divergence written there (repro.py).
    repro: str | None = None
    repro_random_weights: bool = False
    # Conversion settings every mode starts from (ConvertSettings.to_json(): the Convert dock's after "Reconvert
    # and re-run", or `--convert-settings FILE.json`); each mode's own precision fields (PRECISION_FIELDS)
    # replace theirs, except how the mode quantizes: the weight block/asymmetry (when the options above leave them
    # unset) and full int8's calibration (methods; data when they name some) stay the user's. None: the
    # converter's defaults.
    convert_settings: dict | None = None
    # timed runs of each mode's MNN model after the comparison (its `timing`: what the mode costs in speed beside
    # what it costs in accuracy; a reconversion that fixed fp32's GELU made PP-OCRv6 rec 2.25x slower and only the
    # Runs dock said so, tryout 18); 0: none
    time_runs: int = DEFAULT_TIME_RUNS

    def tolerance_for(self, mode: str) -> Tolerance:
        base = self.tolerance or DEFAULT_TOLERANCES.get(mode) or EMULATED_TOLERANCES.get(mode) \
            or DEFAULT_TOLERANCES["fp32"]
        return replace(base, **self.tolerance_only) if self.tolerance_only and self.tolerance is None else base

    def tolerance_setting(self) -> dict | None:
        """The tolerance the user chose, as a compare run records it (its `tolerance` setting: Tolerance.to_json(),
        or the one part given alone); None: each mode's default. `tolerance_options` reads it back (Repeat)."""
        if self.tolerance is not None:
            return self.tolerance.to_json()
        return dict(self.tolerance_only) if self.tolerance_only else None


def tolerance_options(setting: dict | None) -> dict:
    """CompareOptions keywords of a recorded `tolerance` setting (CompareOptions.tolerance_setting)."""
    if not isinstance(setting, dict) or not setting:
        return {}
    if "rule" in setting:
        return {"tolerance": Tolerance(**{k: setting[k] for k in ("atol", "rtol", "metric", "threshold")
                                          if k in setting})}
    return {"tolerance_only": {k: float(v) for k, v in setting.items() if k in ("atol", "rtol")}}


def tolerance_text(setting: dict | None) -> str:
    """A recorded `tolerance` setting in words: its rule, or the part given alone ("atol 0.001, else each mode's
    default")."""
    if not isinstance(setting, dict) or not setting:
        return "each mode's default"
    if setting.get("rule"):
        return str(setting["rule"])
    return ", ".join(f"{k} {v:g}" for k, v in setting.items()) + ", else each mode's default"


def parse_modes(spec: str | None) -> list[str]:
    """"fp32,int8w" -> ["fp32", "int8w"]; ValueError naming the unknown ones."""
    if not spec:
        return list(DEFAULT_MODES)
    names = [m.strip().lower() for m in spec.split(",") if m.strip()]
    unknown = [m for m in names if m not in MODES]
    if unknown or not names:
        hints = [f"{m}: {NEAR_MODES[m]}" for m in unknown if m in NEAR_MODES]
        raise ValueError(f"unknown mode(s) {', '.join(unknown) or '(none)'}: choose from {', '.join(MODES)}"
                         + (f" ({'; '.join(hints)})" if hints else ""))
    return list(dict.fromkeys(names))
