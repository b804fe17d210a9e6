"""The file dialogs (gui/filedialog.py). A new user at 1024x700 under a bare X server (Qt's own dialog, no mime
entry for .onnx or .mnn) saw both listed as type "unknown" and the size column cut to "24....KiB". Offscreen, on
the dialog the window builds (open_dialog, the function File > Open calls; save_dialog, the one every save dialog
calls): the type column names the models, and no size or type text is wider than its column."""
from __future__ import annotations

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI
from types import SimpleNamespace  # noqa: E402

from PySide6.QtCore import QRect, QTimer  # noqa: E402
from PySide6.QtWidgets import (QApplication, QFileDialog, QFileSystemModel, QLineEdit,  # noqa: E402
                               QMessageBox, QStyle, QTreeView)

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


def test_the_save_dialog_names_models_and_fits_a_small_screen(qtbot, samples, monkeypatch):
    """The save dialogs were QFileDialog.getSaveFileName's own: .mnn "unknown", narrow columns, sized for no
    screen. save_dialog sets them up as open_dialog does; here on a 1024x700 screen (the offscreen one is 800x800)."""
    room = QRect(0, 0, 1024, 700)
    monkeypatch.setattr(filedialog, "QGuiApplication",
                        SimpleNamespace(primaryScreen=lambda: SimpleNamespace(availableGeometry=lambda: room)))
    dlg = filedialog.save_dialog(None, "Converted model", str(samples / "new.mnn"), "Models (*.onnx *.mnn)")
    qtbot.addWidget(dlg)
    assert not dlg.testOption(QFileDialog.DontUseNativeDialog)   # (native where the platform offers one)
    assert dlg.acceptMode() == QFileDialog.AcceptSave and dlg.fileMode() == QFileDialog.AnyFile
    assert not dlg.testOption(QFileDialog.DontConfirmOverwrite)  # (it asks before replacing, as Qt's did)
    assert isinstance(dlg.iconProvider(), filedialog.ModelFileTypes)
    assert dlg.nameFilters() == ["Models (*.onnx *.mnn)"]
    assert dlg.width() <= room.width() and dlg.height() <= room.height(), dlg.size()
    assert dlg.width() >= dlg.sizeHint().width() and dlg.height() >= dlg.sizeHint().height()
    dlg.show()
    cells = listed(qtbot, dlg, samples)
    assert cells["cnn.mnn"][TYPE] == "MNN model" and cells["cnn.onnx"][TYPE] == "ONNX model", cells
    assert dlg.selectedFiles() == [str(samples / "new.mnn")]     # the name offered, as getSaveFileName's
    view = dlg.findChild(QTreeView, "treeView")
    assert not cut_cells(view, cells, SIZE), cut_cells(view, cells, SIZE)
    assert not cut_cells(view, cells, TYPE), cut_cells(view, cells, TYPE)
    header = view.header()   # the name, size and type columns all within the view the dialog shows
    assert header.sectionViewportPosition(TYPE) + header.sectionSize(TYPE) <= view.viewport().width(), \
        (header.sectionViewportPosition(TYPE), header.sectionSize(TYPE), view.viewport().width())


def _save_answered(qtbot, samples, confirm_overwrite: bool) -> tuple[str, list[str]]:
    """ask_save_file with samples/cnn.mnn (which exists) chosen: its answer, and the questions it asked (each
    answered No)."""
    asked, done = [], []

    def answer():
        if done:
            return None
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            asked.append(box.text())
            box.button(QMessageBox.No).click()
            return QTimer.singleShot(50, answer)
        if not isinstance(box, QFileDialog):
            return QTimer.singleShot(50, answer)
        if not box.property("chose"):
            box.setProperty("chose", True)
            box.findChild(QLineEdit, "fileNameEdit").setText("cnn.mnn")   # (typed: selectFile leaves the
            # focused name field as it is)
            QTimer.singleShot(50, answer)        # (a question, where one is asked, comes up inside accept())
            return box.accept()
        box.reject()                             # (still open: the question was answered No)
    QTimer.singleShot(50, answer)
    chosen = filedialog.ask_save_file(None, "Save", str(samples / "new.mnn"), "MNN (*.mnn)",
                                      confirm_overwrite=confirm_overwrite)
    done.append(True)   # (the answering timer stops)
    qtbot.wait(100)
    return chosen, asked


def test_the_save_dialog_asks_before_replacing_unless_told_not_to(qtbot, samples):
    """An existing file chosen: the dialog asks (Qt's own question) and No leaves nothing chosen; with
    confirm_overwrite=False (the compare dock's repro folder: QFileDialog.DontConfirmOverwrite) it is taken as is."""
    chosen, asked = _save_answered(qtbot, samples, confirm_overwrite=True)
    assert chosen == "" and len(asked) == 1 and "cnn.mnn already exists" in asked[0], (chosen, asked)
    chosen, asked = _save_answered(qtbot, samples, confirm_overwrite=False)
    assert chosen == str(samples / "cnn.mnn") and asked == [], (chosen, asked)
    dlg = filedialog.save_dialog(None, "Save", str(samples), confirm_overwrite=False)
    qtbot.addWidget(dlg)
    assert dlg.testOption(QFileDialog.DontConfirmOverwrite)


def test_the_window_and_docks_save_files_through_save_dialog(qtbot, window, samples, monkeypatch):
    """Export Image's Browse, the converted model's Browse, the compare report and repro folder, the profile's
    exports and the log's Save build their dialog with save_dialog (the provider that names the files), cancelled
    here; QFileDialog.getSaveFileName (Qt's own, unnamed types) is called by none."""
    shown = []

    def cancel(dlg):
        shown.append((dlg.windowTitle(), dlg.nameFilters(), isinstance(dlg.iconProvider(), filedialog.ModelFileTypes),
                      dlg.acceptMode(), dlg.testOption(QFileDialog.DontConfirmOverwrite)))
        return 0
    monkeypatch.setattr(QFileDialog, "exec", cancel)
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(
        lambda parent, caption, *a, **k: shown.append(("getSaveFileName", caption)) or ("", "")))
    open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    window.actions_by_name["Export Image"].trigger()
    window.export_dialog._browse()
    window.export_dialog.reject()
    window.panels["Convert"]._browse()
    compare = window.panels["Compare"]
    monkeypatch.setattr(compare, "result", {"model": str(samples / "cnn.onnx"), "modes": [{"mode": "fp32"}]})
    monkeypatch.setattr(compare, "mode", {"mode": "fp32", "first_divergence": {"onnx_node": "/conv/Conv"}})
    monkeypatch.setattr(compare, "_last", (str(samples / "cnn.onnx"), None, None))
    assert compare.export_report() is None
    assert compare.make_repro() is False
    window.panels["Profile"]._ask_export("ops_csv")
    window.panels["Log"].ask_save()
    save, sure = QFileDialog.AcceptSave, False
    assert shown == [("Export image", ["PNG (*.png)"], True, save, sure),
                     ("Converted model", ["MNN (*.mnn)"], True, save, sure),
                     ("Save the compare report", ["HTML (*.html)"], True, save, sure),
                     ("New folder for the repro (created)", ["Folder (*)"], True, save, True),
                     ("Export", ["CSV (*.csv)"], True, save, sure),
                     ("Save log", ["Log files (*.log *.txt)"], True, save, sure)], shown


def test_a_save_dialog_offered_a_bare_name_starts_at_home_or_the_last_save_folder(qtbot, tmp_path, monkeypatch):
    """The Profile's "Ops table as CSV…" and the log's Save offer a bare file name: Qt started the dialog in the
    current working directory (the source checkout the app was started from: helper 104's try). It starts in the
    home folder, then in the folder the last save went to; a path given with its folder stays as given."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(filedialog, "_last_save_folder", [])
    dlg = filedialog.save_dialog(None, "Export", "cnn.ops.csv", "CSV (*.csv)")
    qtbot.addWidget(dlg)
    assert dlg.directory().absolutePath() == str(tmp_path / "home"), dlg.directory().absolutePath()
    # a model's export (the compare report, the profile's tables) starts beside the model until a save chose a folder
    # (helper 111 looked for the report beside the model; the dialog was in the home folder)
    models = tmp_path / "models"
    models.mkdir()
    assert filedialog.save_start("cnn-compare-fp32.html", near=str(models)) == str(models / "cnn-compare-fp32.html")
    assert filedialog.save_start("x.csv", near=str(tmp_path / "gone")) == str(tmp_path / "home" / "x.csv")
    out = tmp_path / "exports"
    out.mkdir()
    monkeypatch.setattr(filedialog, "_run", lambda d: str(out / "a.csv"))
    assert filedialog.ask_save_file(None, "Export", "a.csv") == str(out / "a.csv")
    assert filedialog.save_start("b.csv") == str(out / "b.csv")
    assert filedialog.save_start("b.csv", near=str(models)) == str(out / "b.csv")  # the folder the user chose wins
    assert filedialog.save_start(str(tmp_path / "c" / "d.csv")) == str(tmp_path / "c" / "d.csv")


def test_a_pattern_typed_as_a_save_name_filters_instead_of_saving(qtbot, tmp_path):
    """Helper 106 typed "*" in the Profile export's name box and pressed Enter: a CSV named "*" was written into the
    samples folder. A name with a wildcard filters the listing and the dialog stays open; a plain name saves."""
    from PySide6.QtWidgets import QDialog
    dlg = filedialog.save_dialog(None, "Export", str(tmp_path / "a.ops.csv"), "CSV (*.csv)")
    qtbot.addWidget(dlg)
    dlg.selectFile("*")
    dlg.accept()
    assert dlg.result() != QDialog.Accepted and dlg.nameFilters() == ["*"]
    assert not (tmp_path / "*").exists()
    dlg.selectFile("b.csv")
    dlg.accept()
    assert dlg.result() == QDialog.Accepted and dlg.selectedFiles() == [str(tmp_path / "b.csv")]
