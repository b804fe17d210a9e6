"""Where a conversion's .mnn goes (Qt-free): never over an existing file without saying so.

The default is <stem>.mnn beside the model, or <stem>.1.mnn, <stem>.2.mnn ... when that name is taken (the
existing file is offered by a Replace button, the user's explicit choice); a bundled sample (its .mnn twin
ships with the app) or a read-only folder sends it to a fresh run folder.
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


def is_sample(p: Path) -> bool:
    """A bundled sample (resources/samples): its files stay as shipped."""
    try:
        return p.resolve().parent == SAMPLES.resolve()
    except OSError:
        return False


def default_output(src: str) -> tuple[str, str]:
    """(output path, note): a free name beside the model (<stem>.mnn, else <stem>.1.mnn ...), or a fresh run
    folder for a bundled sample, a model inside an installed Python package or a read-only folder (the note says
    which)."""
    p = Path(src)
    if is_sample(p):
        run = new_run_dir("convert")
        return str(run / f"{p.stem}.mnn"), "a bundled sample: writing to a run folder (the samples stay as shipped)"
    if any(part in ("site-packages", "dist-packages") for part in p.parent.parts):
        # a model a pip package ships (rapidocr's PP-OCR): written beside it, the output sat in the package's install
        # folder, which the next reinstall deletes (a new-user try)
        run = new_run_dir("convert")
        return (str(run / f"{p.stem}.mnn"), f"inside an installed Python package ({p.parent}): writing to a run "
                "folder, which a reinstall of the package does not delete")
    if os.access(p.parent, os.W_OK):
        return free_output(p.with_suffix(".mnn")), ""
    run = new_run_dir("convert")
    return str(run / f"{p.stem}.mnn"), f"{p.parent} is read-only: writing to the run folder"


@dataclass
class OutputChoice:
    """The dialog's own choice of output, and what it says about whatever path the output field holds."""

    auto: str = ""               # the path the dialog chose (not the user)
    fixed_note: str = ""         # why that path is not beside the model
    dodged: str | None = None    # the existing file the choice stepped over: Replace picks it
    written: str | None = None   # what the last successful conversion wrote

    @classmethod
    def for_source(cls, src: str) -> "OutputChoice":
        out, note = default_output(src)
        beside = str(Path(src).with_suffix(".mnn"))
        # Replace is offered only for a name stepped over beside the model (never for a sample's twin)
        dodged = beside if out != beside and Path(out).parent == Path(beside).parent else None
        return cls(out, note, dodged)

    def after_success(self, src: str, written: str) -> "OutputChoice":
        """The next conversion's choice: the next free name, with Replace for the file just written."""
        base = Path(written).parent / f"{Path(src).stem}.mnn"
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
