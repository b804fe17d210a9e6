"""A failed conversion's bug-report bundle shown inside the app: its report, its files, and its path to copy.

Handing the folder to a file manager does nothing visible on machines without one (minimal desktops,
remote sessions), so the report is read here; "Open folder" stays for those who have one and says so
when nothing answered.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (QDialog, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QTabWidget, QTextBrowser,
                               QVBoxLayout)

from mnnscope.inspector.history import fmt_bytes
from mnnscope.gui.placement import keep_on_screen

REPORT = "report.md"
TEXT_FILES = ("command.txt", "convert.log", "reduced.log")
MAX_CHARS = 200_000  # a converter log can be long: the viewer shows its end


def _read(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        return f"({path.name} cannot be read: {e})"
    return text if len(text) <= MAX_CHARS else "\u2026\n" + text[-MAX_CHARS:]


def bundle_files(bundle: str) -> list[tuple[str, int | None]]:
    """(relative path, bytes) of every file in the bundle, sorted."""
    root = Path(bundle)
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file():
            try:
                size = p.stat().st_size
            except OSError:
                size = None
            out.append((p.relative_to(root).as_posix(), size))
    return out


class ReportViewer(QDialog):
    """The bundle's report.md rendered, its text files in tabs, its file list, Copy path / Open folder."""

    def __init__(self, parent, bundle: str, subject: str = ""):
        super().__init__(parent)
        self.bundle = str(bundle)
        self.setWindowTitle(f"Bug report \u2014 {subject}" if subject else "Bug report")
        self.setModal(False)
        lay = QVBoxLayout(self)
        self.path_label = QLabel()
        self.path_label.setTextFormat(Qt.PlainText)
        self.path_label.setWordWrap(True)
        self.path_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        lay.addWidget(self.path_label)
        self.tabs = QTabWidget(self)
        self.report = QTextBrowser(self)
        self.report.setOpenExternalLinks(False)
        self.tabs.addTab(self.report, REPORT)
        self.texts: dict[str, QPlainTextEdit] = {}
        for name in TEXT_FILES:
            view = QPlainTextEdit(self)
            view.setReadOnly(True)
            view.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
            self.texts[name] = view
            self.tabs.addTab(view, name)
        self.files = QPlainTextEdit(self)
        self.files.setReadOnly(True)
        self.files.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
        self.tabs.addTab(self.files, "files")
        lay.addWidget(self.tabs, 1)
        self.status = QLabel()
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        row = QHBoxLayout()
        self.copy_path_btn = QPushButton("Copy path")
        self.copy_path_btn.setToolTip("copy the bundle's folder path, to attach the folder to a report")
        self.copy_path_btn.clicked.connect(self.copy_path)
        self.copy_report_btn = QPushButton("Copy report")
        self.copy_report_btn.setToolTip("copy report.md, ready to paste into an issue")
        self.copy_report_btn.clicked.connect(self.copy_report)
        self.open_btn = QPushButton("Open folder")
        self.open_btn.setToolTip("show the folder in the desktop's file manager, when there is one")
        self.open_btn.clicked.connect(self.open_folder)
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        for b in (self.copy_path_btn, self.copy_report_btn, self.open_btn):
            row.addWidget(b)
        row.addStretch(1)
        row.addWidget(close)
        lay.addLayout(row)
        self.resize(760, 640)
        self.load()

    def load(self) -> None:
        root = Path(self.bundle)
        self.path_label.setText(f"Bug-report bundle: {self.bundle}")
        self.report_text = _read(root / REPORT) if (root / REPORT).is_file() else ""
        if self.report_text:
            self.report.setMarkdown(self.report_text)
        else:
            self.report.setPlainText(f"no {REPORT} in {self.bundle}")
        for name, view in self.texts.items():
            path = root / name
            view.setPlainText(_read(path) if path.is_file() else f"(no {name} in this bundle)")
            self.tabs.setTabVisible(self.tabs.indexOf(view), path.is_file())
        files = bundle_files(self.bundle)
        self.files.setPlainText("\n".join(f"{fmt_bytes(size):>10}  {name}" for name, size in files)
                                or "(the folder is empty or gone)")
        self.tabs.setCurrentIndex(0)

    def copy_path(self) -> None:
        QGuiApplication.clipboard().setText(self.bundle)
        self.status.setText(f"copied: {self.bundle}")

    def copy_report(self) -> None:
        QGuiApplication.clipboard().setText(self.report_text)
        self.status.setText(f"copied {REPORT} ({len(self.report_text)} characters)")

    def open_folder(self) -> None:
        if QDesktopServices.openUrl(QUrl.fromLocalFile(self.bundle)):
            self.status.setText("handed to the file manager")
        else:
            self.status.setText("no file manager answered: Copy path gives the folder's path")


def show_report(parent, bundle: str, subject: str = "") -> ReportViewer:
    """The bundle's viewer (one per parent, reloaded for a new bundle), shown and raised."""
    viewer = getattr(parent, "_report_viewer", None)
    if viewer is None or viewer.bundle != str(bundle):
        if viewer is not None:
            viewer.close()
            viewer.deleteLater()
        viewer = ReportViewer(parent, bundle, subject)
        parent._report_viewer = viewer
    viewer.show()
    keep_on_screen(viewer, parent)  # after show(): the frame's size is known then
    viewer.raise_()
    viewer.activateWindow()
    return viewer
