"""The file dialogs, built in one place: the open dialogs (File > Open, Open Side by Side, Open Folder, the docks'
model, data, image and tokenizer pickers) and the save dialogs (Export Image, the converted model, the compare
report and repro folder, the profile's exports, the log), all set up alike (_fitted).

A new user at 1024x700 under a bare X server (no desktop, so Qt's own dialog, no native one) found .onnx and .mnn
listed as type "unknown" (the type column comes from the mime database, which knows neither) and the size column
cut to "24....KiB" (Qt sizes it for "128.88 GB" in its own font, narrower than "144.57 KiB"). Here the files the
app opens are named by what they are (ModelFileTypes), the size and type columns widen to their text once a folder
is listed, the places beside it are not cut either, and the dialog comes up at a size that shows its columns on a
small screen. Where the platform gives a native dialog it is still used (it names and sizes files itself); the
filters are the callers'.
"""
from __future__ import annotations

import os

from PySide6.QtCore import QFileInfo, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (QDialog, QFileDialog, QFileIconProvider, QFileSystemModel, QListView, QSplitter,
                               QTreeView, QWidget)

from mnnscope.inspector.formats.registry import adapters
from mnnscope.inspector.inputs.sources import IMAGE_SUFFIXES

SIZE_COLUMN, TYPE_COLUMN = 1, 2   # QFileSystemModel's columns: name, size, type, date modified
FITTED_COLUMNS = (SIZE_COLUMN, TYPE_COLUMN)
DIALOG_SIZE = (900, 560)   # at most this, and at most 90% x 85% of the screen's available area

_NAMED = {"tokenizer.json": "Tokenizer (JSON)"}   # whole file names (case-insensitive)
_COMPOUND = {".onnx.data": "ONNX external data"}   # name endings of more than one suffix
_IMAGE_NAMES = {".jpg": "JPEG image", ".jpeg": "JPEG image", ".tif": "TIFF image", ".tiff": "TIFF image"}


def type_names() -> dict[str, str]:
    """Suffix (".onnx") -> the type column's name for the files the app opens: each model format in the format
    registry ("ONNX model", "MNN model"), the input data (.npy/.npz) and the images an input may be built from."""
    names = {s: _IMAGE_NAMES.get(s, f"{s[1:].upper()} image") for s in IMAGE_SUFFIXES}
    names.update({".npy": "NumPy array", ".npz": "NumPy archive"})
    for a in adapters():
        for ext in a.extensions:
            names[ext.lower()] = f"{a.description or a.name} model"
    return names


class ModelFileTypes(QFileIconProvider):
    """Qt's icons and types, but the app's own files named by what they are, whatever the mime database holds (a
    bare machine's knows no .onnx, .mnn, .npy or .npz: "unknown"). QFileSystemModel asks type() on the UI thread
    as each listing arrives, so a provider set right after the dialog is built names its first folder too."""

    def __init__(self):
        super().__init__()
        self._suffixes = type_names()   # (the registry read once, here)

    def file_type(self, name: str) -> str | None:
        """The app's name for a file called `name`, or None (Qt's answer stands)."""
        low = name.lower()
        if low in _NAMED:
            return _NAMED[low]
        for ending, text in _COMPOUND.items():
            if low.endswith(ending) and len(low) > len(ending):
                return text
        dot = low.rfind(".")
        return self._suffixes.get(low[dot:]) if dot > 0 else None

    def type(self, info: QFileInfo) -> str:
        if info.isFile():
            named = self.file_type(info.fileName())
            if named:
                return named
        return super().type(info)


_PROVIDER: ModelFileTypes | None = None


def file_types() -> ModelFileTypes:
    """The one provider every dialog shares (a dialog does not own its provider: this one outlives them all)."""
    global _PROVIDER
    if _PROVIDER is None:
        _PROVIDER = ModelFileTypes()
    return _PROVIDER


def fit_columns(view: QTreeView) -> None:
    """Widen the size and type columns to the widest text the view holds (never narrower: the user's widths and
    Qt's stay where they are wider)."""
    header = view.header()
    for col in FITTED_COLUMNS:
        if header.isSectionHidden(col):
            continue
        want = view.sizeHintForColumn(col)   # the widest cell, with the style's margins
        if want > header.sectionSize(col):
            header.resizeSection(col, want)


def fit_sidebar(dlg: QFileDialog) -> None:
    """The places beside the folder (Computer, the home folder) whole: Qt's splitter gave them 70 px, "Co..." (set
    before the dialog is shown: the splitter applies it then; a wider width restored from Qt's settings stays)."""
    side, splitter = dlg.findChild(QListView, "sidebar"), dlg.findChild(QSplitter, "splitter")
    if side is None or splitter is None or splitter.count() != 2:
        return
    want = side.sizeHintForColumn(0) + 2 * side.frameWidth()
    sizes = splitter.sizes()
    if sizes[0] < want:
        splitter.setSizes([want, max(dlg.width() - want, sizes[1])])


def _initial_size(dlg: QFileDialog, parent: QWidget | None) -> None:
    screen = (parent.screen() if parent is not None else None) or QGuiApplication.primaryScreen()
    if screen is None:
        return
    room, hint = screen.availableGeometry(), dlg.sizeHint()
    w = min(max(hint.width(), min(DIALOG_SIZE[0], int(room.width() * 0.9))), room.width())
    h = min(max(hint.height(), min(DIALOG_SIZE[1], int(room.height() * 0.85))), room.height())
    dlg.resize(w, h)


def _fitted(dlg: QFileDialog, parent: QWidget | None) -> QFileDialog:
    """What every dialog here shares, open or save: the app's files named (ModelFileTypes), the size and type
    columns widened to their text as folders are listed, a size that fits the screen, the places beside whole."""
    dlg.setIconProvider(file_types())   # before the event loop: the first listing is named by it
    model = dlg.findChild(QFileSystemModel)
    view = dlg.findChild(QTreeView, "treeView")
    if model is not None and view is not None:   # (none where a native dialog is used)
        refit = QTimer(view, singleShot=True, interval=0)   # (once for a burst: a listing, another filter)
        refit.timeout.connect(lambda: fit_columns(view))
        for signal in (model.directoryLoaded, model.rowsInserted, model.layoutChanged, model.modelReset):
            signal.connect(refit.start)
    _initial_size(dlg, parent)
    fit_sidebar(dlg)
    return dlg


def open_dialog(parent: QWidget | None, caption: str, directory: str = "", name_filter: str = "",
                folder: bool = False) -> QFileDialog:
    """The open dialog (not yet shown): an existing file (or, `folder`, a folder) under `caption`, starting at
    `directory` (a file there is selected, as QFileDialog.getOpenFileName does), with `name_filter` as given."""
    dlg = QFileDialog(parent, caption, directory, name_filter)
    dlg.setAcceptMode(QFileDialog.AcceptOpen)
    if folder:
        dlg.setFileMode(QFileDialog.Directory)
        dlg.setOption(QFileDialog.ShowDirsOnly, True)
    else:
        dlg.setFileMode(QFileDialog.ExistingFile)
    return _fitted(dlg, parent)


_last_save_folder: list[str] = []   # the folder the last save dialog chose (this session)


def save_start(directory: str, near: str | None = None) -> str:
    """Where a save dialog starts: `directory` as given where it names a folder; a bare file name ("x.ops.csv")
    in the folder the last save went to, else `near` (the model's folder, where it is writable), else the home
    folder. Qt put it in the current working directory: the Profile's "Ops table as CSV…" opened in the source
    checkout the app was started from (helper 104's try); the home folder was no better for a model's report, which
    a new user looked for beside the model (helper 111)."""
    if not directory or os.path.dirname(directory):
        return directory
    if _last_save_folder and os.path.isdir(_last_save_folder[-1]):
        base = _last_save_folder[-1]
    elif near and os.path.isdir(near) and os.access(near, os.W_OK):
        base = near
    else:
        base = os.path.expanduser("~")
    return os.path.join(base, directory)


WILDCARDS = "*?["


class SaveDialog(QFileDialog):
    """A save dialog that never saves under a pattern: a name with a wildcard ("*", "*.csv") filters the listing, as
    it does in a shell, and the dialog stays open. Qt's own dialog wrote a file named "*" into the samples folder
    (helper 106's try). A native dialog (where the platform has one) handles names itself."""

    def accept(self) -> None:
        files = self.selectedFiles()
        name = os.path.basename(files[0]) if files else ""
        if any(c in name for c in WILDCARDS):
            self.setNameFilter(name)
            return
        super().accept()


def save_dialog(parent: QWidget | None, caption: str, directory: str = "", name_filter: str = "",
                confirm_overwrite: bool = True, near: str | None = None) -> QFileDialog:
    """The save dialog (not yet shown): a file, new or existing, under `caption`, starting at `directory` (a file
    named there is offered, as QFileDialog.getSaveFileName does; a bare name: save_start), with `name_filter` as
    given; choosing an existing file asks first unless not `confirm_overwrite` (QFileDialog.DontConfirmOverwrite)."""
    dlg = SaveDialog(parent, caption, save_start(directory, near), name_filter)
    dlg.setAcceptMode(QFileDialog.AcceptSave)
    dlg.setFileMode(QFileDialog.AnyFile)
    dlg.setOption(QFileDialog.DontConfirmOverwrite, not confirm_overwrite)
    return _fitted(dlg, parent)


def _run(dlg: QFileDialog) -> str:
    try:
        if dlg.exec() == QDialog.Accepted and dlg.selectedFiles():
            return dlg.selectedFiles()[0]
        return ""
    finally:
        dlg.deleteLater()


def ask_open_file(parent: QWidget | None, caption: str, directory: str = "", name_filter: str = "") -> str:
    """The chosen file's path, or "" (cancelled): QFileDialog.getOpenFileName's answer, from open_dialog."""
    return _run(open_dialog(parent, caption, directory, name_filter))


def ask_open_folder(parent: QWidget | None, caption: str, directory: str = "") -> str:
    """The chosen folder's path, or "" (cancelled): QFileDialog.getExistingDirectory's answer, from open_dialog."""
    return _run(open_dialog(parent, caption, directory, folder=True))


def ask_save_file(parent: QWidget | None, caption: str, directory: str = "", name_filter: str = "",
                  confirm_overwrite: bool = True, near: str | None = None) -> str:
    """The path to save to, or "" (cancelled): QFileDialog.getSaveFileName's answer, from save_dialog (`near`: the
    folder a bare name starts in before any save chose one, the model's)."""
    path = _run(save_dialog(parent, caption, directory, name_filter, confirm_overwrite, near))
    if path:
        _last_save_folder[:] = [os.path.dirname(os.path.abspath(path))]
    return path
