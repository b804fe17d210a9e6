"""The open dialogs (gui/filedialog.py). A new user at 1024x700 under a bare X server (Qt's own dialog, no mime
entry for .onnx or .mnn) saw both listed as type "unknown" and the size column cut to "24....KiB". Offscreen, on
the dialog the window builds (open_dialog, the function File > Open calls): the type column names the models,
and no size or type text is wider than its column."""
from __future__ import annotations

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI
from PySide6.QtWidgets import QFileDialog, QFileSystemModel, QStyle, QTreeView  # noqa: E402

from mnnscope.gui import filedialog  # noqa: E402
from mnnscope.gui.window import file_filter  # noqa: E402
from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401

pytestmark = pytest.mark.gui
NAME, SIZE, TYPE = 0, 1, 2


def listed(qtbot, dlg: QFileDialog, folder) -> dict[str, list[str]]:
    """File name -> the detail view's cells (name, size, type, date) once `folder` is listed."""
    view = dlg.findChild(QTreeView, "treeView")
    assert view is not None and isinstance(view.model(), QFileSystemModel), "not Qt's own dialog"

    def rows():
        model, root = view.model(), view.rootIndex()
        if model.filePath(root) != str(folder):
            return {}
        return {model.index(r, NAME, root).data(): [model.index(r, c, root).data() for c in range(4)]
                for r in range(model.rowCount(root)) if not view.isRowHidden(r, root)}
    qtbot.waitUntil(lambda: "cnn.onnx" in rows() and "cnn.mnn" in rows(), timeout=10000)
    qtbot.wait(200)  # (the folder's listing done: directoryLoaded, and the view laid out)
    return rows()


def cut_cells(view: QTreeView, cells: dict[str, list[str]], col: int) -> list[str]:
    """The texts of column `col` that the view draws elided: wider than the column less the style's text margins
    (QCommonStyle: PM_FocusFrameHMargin + 1 on each side)."""
    margin = view.style().pixelMetric(QStyle.PM_FocusFrameHMargin, None, view) + 1
    room = view.header().sectionSize(col) - 2 * margin
    fm = view.fontMetrics()
    return [f"{row[col]!r} ({fm.horizontalAdvance(row[col])} px > {room} px)" for row in cells.values()
            if fm.horizontalAdvance(row[col]) > room]


def test_the_open_dialog_names_models_and_shows_whole_sizes(qtbot, samples):
    dlg = filedialog.open_dialog(None, "Open model", str(samples), file_filter())
    qtbot.addWidget(dlg)
    assert not dlg.testOption(QFileDialog.DontUseNativeDialog)   # (Qt's dialog here: no platform theme offscreen)
    assert dlg.nameFilters() == file_filter().split(";;")       # the filters as they were
    dlg.show()
    cells = listed(qtbot, dlg, samples)
    assert cells["cnn.onnx"][TYPE] == "ONNX model" and cells["cnn.mnn"][TYPE] == "MNN model", cells
    assert {row[TYPE] for row in cells.values()} == {"ONNX model", "MNN model"}   # (the Models filter)
    view = dlg.findChild(QTreeView, "treeView")
    fm = view.fontMetrics()
    for name in ("cnn.onnx", "encoder_block.mnn"):   # 22.41 KiB; 144.57 KiB (the widest sample)
        text = cells[name][SIZE]
        assert "KiB" in text and view.header().sectionSize(SIZE) >= fm.horizontalAdvance(text), (name, text)
    assert not cut_cells(view, cells, SIZE), cut_cells(view, cells, SIZE)
    assert not cut_cells(view, cells, TYPE), cut_cells(view, cells, TYPE)
    # at 1024x700 it comes up at a size that shows its columns (it is at most the screen's available area)
    room = dlg.screen().availableGeometry()
    assert dlg.width() <= room.width() and dlg.height() <= room.height()


def test_the_open_dialog_names_the_data_files_the_app_opens(qtbot, samples):
    """Under "All files" (chosen once the models are listed: the columns widen for the rows it adds)."""
    dlg = filedialog.open_dialog(None, "Open model", str(samples), file_filter())
    qtbot.addWidget(dlg)
    dlg.show()
    listed(qtbot, dlg, samples)
    dlg.selectNameFilter("All files (*)")
    qtbot.waitUntil(lambda: "tokenizer.json" in listed(qtbot, dlg, samples), timeout=10000)
    cells = listed(qtbot, dlg, samples)
    view = dlg.findChild(QTreeView, "treeView")
    assert not cut_cells(view, cells, SIZE), cut_cells(view, cells, SIZE)
    assert not cut_cells(view, cells, TYPE), cut_cells(view, cells, TYPE)
    assert cells["tokenizer.json"][TYPE] == "Tokenizer (JSON)"
    assert cells["external_data.onnx.data"][TYPE] == "ONNX external data"
    assert cells["README.md"][TYPE] not in ("ONNX model", "MNN model", "")   # Qt's own name stands
    types = filedialog.file_types()
    assert [types.file_type(n) for n in ("x.npy", "x.NPZ", "x.png", "x.jpeg", "x.txt", "onnx")] == \
        ["NumPy array", "NumPy archive", "PNG image", "JPEG image", None, None]


def test_the_window_and_docks_open_files_through_open_dialog(qtbot, window, samples, monkeypatch):
    """File > Open, Open Side by Side, Open Folder and the Compare dock's "another .mnn" build their dialog with
    open_dialog (the provider that names the files), cancelled here."""
    shown = []

    def cancel(dlg):
        shown.append((dlg.windowTitle(), dlg.nameFilters(), isinstance(dlg.iconProvider(), filedialog.ModelFileTypes),
                      dlg.fileMode()))
        return 0
    monkeypatch.setattr(QFileDialog, "exec", cancel)
    for static in ("getOpenFileName", "getExistingDirectory"):   # (Qt's own, unnamed types: recorded, cancelled)
        monkeypatch.setattr(QFileDialog, static, staticmethod(
            lambda parent, caption, *a, _s=static, **k: shown.append((_s, caption)) or ("" if "Dir" in _s else ("", ""))))
    open_and_wait(qtbot, window, samples / "cnn.mnn", shapes=False)
    window.ask_open()
    window.ask_open_second()
    window.ask_open_folder()
    assert window.panels["Compare"].compare_with_mnn() is False
    models = file_filter().split(";;")
    assert shown == [("Open model", models, True, QFileDialog.ExistingFile),
                     ("Open a model beside this one", models, True, QFileDialog.ExistingFile),
                     ("Open a model folder (an MNN-LLM export)", ["All Files (*)"], True, QFileDialog.Directory),
                     ("Compare with another .mnn", ["MNN models (*.mnn)"], True, QFileDialog.ExistingFile)], shown
    assert window.second is None
