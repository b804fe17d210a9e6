"""Where a conversion's .mnn goes (Qt-free): never over an existing file without saying so.

The default is <stem>.mnn beside the model (<stem>.fp16.mnn, <stem>.int8w.mnn ... for a conversion that changes the
weights' precision: settings_tag; no name while the settings ask for two), or <stem>.1.mnn, <stem>.2.mnn ... when that
name is taken (the existing file is offered by a Replace button, the user's explicit choice); a bundled sample (its
.mnn twin ships with the app) or a read-only folder sends it to a fresh run folder.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mnnscope.inspector.convert.service import new_run_dir
from mnnscope.resources import SAMPLES


def _taken(path: Path) -> bool:
    return path.exists() or Path(f"{path}.weight").exists()


def free_output(path: str | Path) -> str:
    """`path` when neither it nor its .weight exists, else the first free <stem>.1.mnn, <stem>.2.mnn, ..."""
    p = Path(path)
    if not _taken(p):
        return str(p)
    stem = p.name[:-len(".mnn")] if p.name.endswith(".mnn") else p.stem
    for n in range(1, 10000):
        q = p.with_name(f"{stem}.{n}.mnn")
        if not _taken(q):
            return str(q)
    return str(new_run_dir("convert") / p.name)


def precision_tags(settings) -> list[str]:
    """Every precision the settings give the weights, as settings_tag names it: "int8" (calibrated), "int8w"/"int4w"
    (weight quantization), "fp16"; [] for float weights. More than one is a conflict validate() refuses."""
    if settings is None:
        return []
    bits = getattr(settings, "weight_quant_bits", None)
    return [tag for tag, on in (("int8", getattr(settings, "int8", None) is not None), (f"int{bits}w", bits),
                                ("fp16", getattr(settings, "fp16", False))) if on]


def settings_tag(settings) -> str | None:
    """The precision a conversion gives the weights, for its file name: "int8" (calibrated), "int8w"/"int4w" (weight
    quantization), "fp16"; "" for float weights. A user's default, fp16 and int8w conversions were model.mnn,
    model.1.mnn and model.2.mnn, nothing in the names saying which was which. None for settings that ask for two
    (fp16 with int8w, int8 with fp16): no name says both, and one of them read as the settings' (fp16 ticked beside
    int8w kept "model.int8w.mnn", a new user's try)."""
    tags = precision_tags(settings)
    return None if len(tags) > 1 else (tags[0] if tags else "")


def conflict_note(settings) -> str:
    """What the Output field says while the settings ask for two precisions at once (settings_tag is None); "" when
    they do not."""
    tags = precision_tags(settings)
    return f"no name: {' and '.join(tags)} conflict (keep one)" if len(tags) > 1 else ""


def output_name(stem: str, tag: str) -> str:
    """<stem>.mnn, or <stem>.<tag>.mnn for a settings_tag (never None: conflicting settings get no name)."""
    return f"{stem}.{tag}.mnn" if tag else f"{stem}.mnn"


def is_sample(p: Path) -> bool:
    """A bundled sample (resources/samples): its files stay as shipped."""
    try:
        return p.resolve().parent == SAMPLES.resolve()
    except OSError:
        return False


def default_output(src: str, tag: str = "") -> tuple[str, str]:
    """(output path, note): a free name beside the model (<stem>[.<tag>].mnn, else <stem>[.<tag>].1.mnn ...), or a
    fresh run folder for a bundled sample, a model inside an installed Python package or a read-only folder (the note
    says which). `tag`: settings_tag of the conversion's settings."""
    p = Path(src)
    name = output_name(p.stem, tag)
    if is_sample(p):
        run = new_run_dir("convert")
        return str(run / name), "a bundled sample: writing to a run folder (the samples stay as shipped)"
    if any(part in ("site-packages", "dist-packages") for part in p.parent.parts):
        # a model a pip package ships (rapidocr's PP-OCR): written beside it, the output sat in the package's install
        # folder, which the next reinstall deletes (a new-user try)
        run = new_run_dir("convert")
        return (str(run / name), f"inside an installed Python package ({p.parent}): writing to a run "
                "folder, which a reinstall of the package does not delete")
    if os.access(p.parent, os.W_OK):
        return free_output(p.with_name(name)), ""
    run = new_run_dir("convert")
    return str(run / name), f"{p.parent} is read-only: writing to the run folder"


@dataclass
class OutputChoice:
    """The dialog's own choice of output, and what it says about whatever path the output field holds."""

    auto: str = ""               # the path the dialog chose (not the user)
    fixed_note: str = ""         # why that path is not beside the model
    dodged: str | None = None    # the existing file the choice stepped over: Replace picks it
    written: str | None = None   # what the last successful conversion wrote

    @classmethod
    def for_source(cls, src: str, tag: str = "") -> "OutputChoice":
        out, note = default_output(src, tag)
        beside = str(Path(src).with_name(output_name(Path(src).stem, tag)))
        # Replace is offered only for a name stepped over beside the model (never for a sample's twin)
        dodged = beside if out != beside and Path(out).parent == Path(beside).parent else None
        return cls(out, note, dodged)

    def after_success(self, src: str, written: str, tag: str = "") -> "OutputChoice":
        """The next conversion's choice: the next free name, with Replace for the file just written."""
        base = Path(written).parent / output_name(Path(src).stem, tag)
        return OutputChoice(free_output(base), self.fixed_note, written, written)

    def note(self, out: str) -> tuple[str, bool]:
        """(what converting to `out` will do, whether to offer Replace)."""
        out = out.strip()
        notes = [self.fixed_note] if self.fixed_note and out == self.auto else []
        offer = False
        if out and os.path.exists(out):
            if self.written and os.path.abspath(out) == self.written:
                notes.append(f"{Path(out).name} was written by the last conversion; converting again replaces it")
            else:
                notes.append(f"{Path(out).name} exists and will be replaced")
        elif out and out == self.auto and self.dodged and os.path.exists(self.dodged):
            name = Path(self.dodged).name
            if self.dodged == self.written:
                notes.append(f"{name} was just written: the next conversion writes {Path(out).name} beside it")
            else:
                notes.append(f"{name} exists: this conversion writes {Path(out).name} beside it")
            offer = True
        return "; ".join(notes), offer
