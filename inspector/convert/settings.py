"""Conversion settings: every MNN converter option that changes the result, plus int8 calibration.

Settings are plain data: validated here, turned into converter arguments by `to_args()`, and saved as
JSON so that a conversion can be repeated exactly (`--settings FILE.json`, bug-report bundles).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace

OPTIMIZE_PREFER = {"normal": 0, "smallest": 1, "fastest": 2}
FEATURE_METHODS = ("KL", "EMA", "ADMM")
WEIGHT_METHODS = ("MAX_ABS", "ADMM")
IMAGE_FORMATS = ("RGB", "BGR", "RGBA", "BGRA", "GRAY")

# Help text per field: the CLI, the GUI's settings dialog and `describe()` all read it from here.
HELP = {
    "fp16": "store float weights as fp16 (halves the size; compute stays fp32)",
    "weight_quant_bits": "quantize Conv and MatMul weights to N bits (2-8; a weight many ops share stays "
                         "float); activations stay float",
    "weight_quant_asymmetric": "asymmetric (true) or symmetric (false) weight quantization; unset = the "
                               "converter's default (asymmetric in MNN 3.6.1)",
    "weight_quant_block": "quantize weights per block of N input channels instead of per output channel",
    "hqq": "HQQ weight quantization (asymmetric unless symmetric is asked for)",
    "optimize_level": "graph optimization: 1 = only always-correct rewrites (default), 2 = also rewrites that "
                      "are usually correct",
    "optimize_prefer": "what the optimizer prefers: normal, smallest or fastest",
    "transformer_fuse": "fuse transformer blocks (attention) into MNN's fused ops",
    "save_static_model": "fold shape computations for the fixed input shapes (static model)",
    "convert_matmul_to_conv": "turn MatMul with a constant weight into 1x1 Convolution (MNN default: on)",
    "gelu_approximation": "GELU: on = MNN's approximate GELU kernel (the converter's default: a written-out "
                          "erf-GELU is fused into it, max abs error 4.7e-4); off = MNN's exact GELU_STANDARD kernel",
    "origin_rnn": "keep LSTM/GRU as single ops (runnable by the Interpreter; cannot be quantized)",
    "keep_input_format": "keep the inputs' NCHW layout (MNN 3.6.1 keeps it by default; off = NC4HW4 inputs)",
    "external_weights": "write the weights to a separate OUT.mnn.weight file",
    "allow_custom_op": "convert ops MNN does not know as custom ops instead of failing",
    "dump_pass": "log every optimizer pass (needed for the ONNX-to-MNN node map)",
    "int8": "full int8 post-training quantization with calibration data (mnnquant)",
}

INT8_HELP = {
    "feature_method": "how activation ranges are chosen: KL or EMA (ADMM crashes mnnquant 3.6.1)",
    "weight_method": "how weight ranges are chosen: MAX_ABS or ADMM",
    "samples": "number of calibration samples to use",
    "skip_ops": "MNN op names to leave in float",
    "calib_dir": "folder of calibration images (read on the 0..1 scale, then Image mean, std and format), of .npy/.npz "
                "samples, or of mnnquant sequence samples",
    "calib_files": ".npy/.npz files, one calibration sample each",
    "calib_random": "generate N random samples from the model's inputs",
    "calib_text": "text file, one calibration sample per line (with `tokenizer`)",
    "tokenizer": "tokenizer.json used to turn `calib_text` lines into token ids",
    "mean": "calibration image preprocessing: per-channel mean subtracted from pixels read on the 0..1 scale",
    "std": "calibration image preprocessing: per-channel divisor of the pixels on the 0..1 scale (0.00392 = 1/255 "
           "feeds 0..255 values)",
    "width": "calibration image preprocessing: input width",
    "height": "calibration image preprocessing: input height",
    "image_format": "calibration image preprocessing: channel order fed to the model",
    "quant_bits": "bits of the quantized weights and activations",
    "seed": "random seed for generated calibration data",
    "calib_random_default": "calib_random was put there for you (the comparison's stand-in), not chosen: a folder, "
                            "files or text given beside it replace it",
}

# Each calibration source as the Convert dock labels it and `mnnscope convert` spells it (problems name both).
SOURCE_WORDS = {"calib_dir": ("Calibration folder", "--calib"), "calib_files": ("Calibration files", "--calib-file"),
                "calib_random": ("Random samples", "--calib-random"),
                "calib_text": ("Calibration text", "--calib-text")}


@dataclass
class Int8Settings:
    """Full int8 quantization through mnnquant, and where its calibration data comes from."""

    feature_method: str = "KL"
    weight_method: str = "MAX_ABS"
    samples: int = 16
    skip_ops: list[str] = field(default_factory=list)
    calib_dir: str | None = None
    calib_files: list[str] = field(default_factory=list)
    calib_random: int | None = None
    calib_text: str | None = None
    tokenizer: str | None = None
    mean: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    std: list[float] = field(default_factory=lambda: [1.0, 1.0, 1.0])
    width: int | None = None
    height: int | None = None
    image_format: str = "RGB"
    quant_bits: int = 8
    seed: int = 0
    # calib_random was filled in for the user, not chosen (the Compare dock's "Reconvert with settings..." puts 4
    # random samples where the comparison's own samples were): data given beside it replaces it instead of being
    # refused ("int8 takes one calibration source, got calib_dir, calib_random": a new user had to find and clear
    # Random samples before their folder of real inputs was taken)
    calib_random_default: bool = False

    def _data(self) -> list[str]:
        return [name for name, v in (("calib_dir", self.calib_dir), ("calib_files", self.calib_files),
                                     ("calib_text", self.calib_text)) if v]

    def replaced_random(self) -> int | None:
        """The default random samples that data given beside them replaces (their count), else None."""
        return self.calib_random if self.calib_random and self.calib_random_default and self._data() else None

    def sources(self) -> list[str]:
        """The calibration sources in effect (default random samples that data replaces are not one)."""
        random = bool(self.calib_random) and not self.replaced_random()
        return [name for name, on in (("calib_dir", bool(self.calib_dir)), ("calib_files", bool(self.calib_files)),
                                      ("calib_random", random), ("calib_text", bool(self.calib_text))) if on]

    def effective(self) -> "Int8Settings":
        """These settings as they calibrate: without the default random samples that given data replaces."""
        gone = self.replaced_random()
        if not gone:
            return self
        # a sample count equal to the stand-in's was set to match it (the dock shows both): it goes with it, or it
        # would cap the folder given in its place
        samples = Int8Settings.samples if self.samples == gone else self.samples
        return replace(self, calib_random=None, calib_random_default=False, samples=samples,
                       skip_ops=list(self.skip_ops), calib_files=list(self.calib_files))

    def validate(self) -> list[str]:
        errors = []
        if self.feature_method not in FEATURE_METHODS:
            errors.append(f"int8 feature method must be one of {', '.join(FEATURE_METHODS[:2])} "
                          f"(got '{self.feature_method}')")
        elif self.feature_method == "ADMM":
            errors.append("int8 feature method ADMM crashes mnnquant 3.6.1: use KL or EMA")
        if self.weight_method not in WEIGHT_METHODS:
            errors.append(f"int8 weight method must be one of {', '.join(WEIGHT_METHODS)} (got '{self.weight_method}')")
        if not isinstance(self.samples, int) or self.samples < 1:
            errors.append(f"int8 samples must be a positive integer (got {self.samples!r})")
        sources = self.sources()
        if not sources:
            errors.append("int8 needs calibration data: a folder (--calib DIR), .npy/.npz files, "
                          "random samples (--calib-random N) or text with a tokenizer")
        elif len(sources) > 1:
            keep = " or ".join(f"{SOURCE_WORDS[x][0]} ({SOURCE_WORDS[x][1]})" for x in sources)
            errors.append(f"int8 takes one calibration source, got {', '.join(sources)}: keep one of {keep}")
        if self.calib_random is not None and (not isinstance(self.calib_random, int) or self.calib_random < 1):
            errors.append(f"--calib-random needs a positive number of samples (got {self.calib_random!r})")
        if self.calib_text and not self.tokenizer:
            errors.append("calibration text needs a tokenizer (tokenizer.json)")
        for f in self.calib_files:
            if not str(f).lower().endswith((".npy", ".npz")):
                errors.append(f"calibration file '{f}' is not .npy or .npz")
        if self.image_format not in IMAGE_FORMATS:
            errors.append(f"image format must be one of {', '.join(IMAGE_FORMATS)} (got '{self.image_format}')")
        if any(s == 0 for s in self.std):
            errors.append("image std must not contain 0")
        for name in ("width", "height"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or v < 1):
                errors.append(f"image {name} must be a positive integer (got {v!r})")
        if self.quant_bits not in range(2, 9):
            errors.append(f"int8 quant bits must be 2..8 (got {self.quant_bits!r})")
        return errors

    def to_json(self) -> dict:
        d = asdict(self)
        if not d["calib_random_default"]:  # (settings without it keep their JSON, and their conversions' keys)
            del d["calib_random_default"]
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Int8Settings":
        return cls(**_known(cls, d, "int8"))


@dataclass
class ConvertSettings:
    """Every converter option that changes the converted model. Defaults = the converter's defaults."""

    fp16: bool = False
    weight_quant_bits: int | None = None
    # None = the converter's default, which is asymmetric in MNN 3.6.1. Its bare `--weightQuantAsymmetric`
    # flag gives *symmetric* weights (measured); only `=1` / `=0` say what they mean.
    weight_quant_asymmetric: bool | None = None
    weight_quant_block: int | None = None
    hqq: bool = False
    optimize_level: int | None = None
    optimize_prefer: str | None = None
    transformer_fuse: bool = False
    save_static_model: bool = False
    convert_matmul_to_conv: bool | None = None
    # None = the converter's default, which fuses a written-out erf-GELU into MNN's approximate GELU kernel
    # (max abs error 4.7e-4, measured with MNN 3.6.1); only an explicit "0" gives the exact GELU_STANDARD kernel.
    gelu_approximation: bool | None = None
    origin_rnn: bool = False
    # None = the converter's default. MNN 3.6.1 keeps NCHW inputs by default although its help says
    # otherwise; only an explicit "=0" gives NC4HW4 inputs, so the three states are kept apart.
    keep_input_format: bool | None = None
    external_weights: bool = False
    allow_custom_op: bool = False
    dump_pass: bool = True
    int8: Int8Settings | None = None

    def validate(self) -> list[str]:
        """Problems with these settings, one sentence each; empty when they are usable."""
        errors = []
        bits = self.weight_quant_bits
        if bits is not None and (not isinstance(bits, int) or isinstance(bits, bool) or not 2 <= bits <= 8):
            errors.append(f"weight quant bits must be 2..8 (got {bits!r})")
        if bits is None:
            for flag, what in ((self.weight_quant_asymmetric is not None, "weight quant (a)symmetric"),
                               (self.weight_quant_block is not None, "weight quant block"),
                               (self.hqq, "HQQ")):
                if flag:
                    errors.append(f"{what} needs weight quant bits (e.g. --weight-quant-bits 8)")
        block = self.weight_quant_block
        if block is not None and (not isinstance(block, int) or isinstance(block, bool) or block < 1):
            errors.append(f"weight quant block must be a positive number of channels (got {block!r})")
        if self.fp16 and bits is not None:
            errors.append("fp16 and weight quantization exclude each other (MNN 3.6.1 silently drops the "
                          "weight quantization when both are given): choose one")
        if self.optimize_level is not None and self.optimize_level not in (1, 2):
            errors.append(f"optimize level must be 1 or 2 for ONNX models (got {self.optimize_level!r}; "
                          "0 is only for .mnn sources)")
        if self.optimize_prefer is not None and self.optimize_prefer not in OPTIMIZE_PREFER:
            errors.append(f"optimize prefer must be one of {', '.join(OPTIMIZE_PREFER)} (got '{self.optimize_prefer}')")
        if self.int8 is not None:
            errors.extend(self.int8.validate())
            if bits is not None or self.fp16:
                errors.append("int8 quantization replaces fp16/weight quantization: choose one")
            if self.external_weights:
                errors.append("int8 quantization cannot read external weight files: drop --external-weights")
        return errors

    def to_args(self) -> list[str]:
        """Converter arguments for these settings (after -f/--modelFile/--MNNModel/--bizCode)."""
        args: list[str] = []
        if self.fp16:
            args.append("--fp16")
        if self.weight_quant_bits is not None:
            args += ["--weightQuantBits", str(self.weight_quant_bits)]
            if self.weight_quant_asymmetric is not None:
                args.append(f"--weightQuantAsymmetric={1 if self.weight_quant_asymmetric else 0}")
            if self.weight_quant_block is not None:
                args += ["--weightQuantBlock", str(self.weight_quant_block)]
            if self.hqq:
                args.append("--hqq")
        if self.optimize_level is not None:
            args += ["--optimizeLevel", str(self.optimize_level)]
        if self.optimize_prefer is not None:
            args += ["--optimizePrefer", str(OPTIMIZE_PREFER[self.optimize_prefer])]
        if self.transformer_fuse:
            args.append("--transformerFuse")
        if self.save_static_model:
            args.append("--saveStaticModel")
        if self.convert_matmul_to_conv is not None:
            args += ["--convertMatmulToConv", "1" if self.convert_matmul_to_conv else "0"]
        if self.gelu_approximation is not None:
            args += ["--useGeluApproximation", "1" if self.gelu_approximation else "0"]
        if self.origin_rnn:
            args.append("--useOriginRNNImpl")
        if self.keep_input_format is not None:
            args.append("--keepInputFormat=1" if self.keep_input_format else "--keepInputFormat=0")
        if self.external_weights:
            args.append("--saveExternalData")
        if self.allow_custom_op:
            args.append("--allowCustomOp")
        if self.dump_pass:
            args.append("--dumpPass")
        return args

    def to_json(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "int8"}
        d["int8"] = self.int8.to_json() if self.int8 is not None else None
        return d

    @classmethod
    def from_json(cls, d: dict) -> "ConvertSettings":
        if not isinstance(d, dict):
            raise ValueError("settings must be a JSON object")
        kw = _known(cls, d, "settings")
        int8 = kw.pop("int8", None)
        s = cls(**kw)
        s.int8 = Int8Settings.from_json(int8) if int8 else None
        return s

    @classmethod
    def load(cls, path) -> "ConvertSettings":
        with open(path, encoding="utf-8") as f:
            try:
                data = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: not valid JSON ({e.msg}, line {e.lineno})") from None
        return cls.from_json(data)

    def key(self) -> str:
        """Stable hash of the settings: identical settings give identical conversions."""
        d = self.to_json()
        if self.int8 is not None:  # default random samples that given data replaces change no conversion
            d["int8"] = self.int8.effective().to_json()
        blob = json.dumps(d, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    @classmethod
    def describe_json(cls, data: dict | None) -> str:
        """describe() of settings given as to_json(), joined ("fp16=True, weight_quant_bits=8"); "" for none."""
        return ", ".join(cls.from_json(data).describe()) if data else ""

    def describe(self) -> list[str]:
        """The settings that differ from the defaults, in words."""
        default = ConvertSettings()
        out = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "int8":
                if value is not None:
                    size = f", {value.width or '?'}x{value.height or '?'}" if value.width or value.height else ""
                    gone = value.replaced_random()
                    instead = f" in place of the {gone} default random samples" if gone else ""
                    out.append(f"int8 ({value.feature_method}/{value.weight_method}, "
                               f"{', '.join(value.sources()) or 'no data'}{instead}{size})")
            elif value != getattr(default, f.name):
                out.append(f"{f.name}={value}")
        return out


def settings_without_effect(settings: "ConvertSettings", op_types) -> list[str]:
    """The changed settings that cannot change this model's conversion, in words, from its ONNX op types: the GELU
    setting acts on a written-out erf-GELU (Erf) only; an ONNX Gelu op goes to MNN's GELU kernel either way (tryout
    20 set exact GELU on encoder_block, reconverted, and got the same file and the same error, with no word)."""
    types = set(op_types)
    out = []
    if settings.gelu_approximation is not None and "Erf" not in types:
        gelu = "its Gelu ops run MNN's GELU kernel either way" if "Gelu" in types else "it has no GELU"
        out.append(f"gelu_approximation has no effect on this model: it has no written-out erf-GELU (Erf); {gelu}")
    return out


# The fields that say how weights and activations are stored and computed: what a compare mode (fp32, fp16w,
# int8w, int8, ...) decides for itself. The other fields (GELU, optimize level, fusions, input format) say how the
# graph is converted and carry over to every mode of a comparison.
PRECISION_FIELDS = ("fp16", "weight_quant_bits", "weight_quant_asymmetric", "weight_quant_block", "hqq", "int8",
                    "external_weights")


def graph_settings(d: dict | None) -> "ConvertSettings":
    """Settings (ConvertSettings.to_json() form, or None) with the precision fields back at their defaults."""
    s = ConvertSettings.from_json(d) if d else ConvertSettings()
    default = ConvertSettings()
    for name in PRECISION_FIELDS:
        setattr(s, name, getattr(default, name))
    return s


def _known(cls, d: dict, what: str) -> dict:
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise ValueError(f"unknown {what} key(s): {', '.join(unknown)}")
    return {k: v for k, v in d.items() if k in names}
