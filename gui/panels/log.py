"""The Log dock: the runner's and the converter's log lines of every job, each job under a header (its name and
when it started), with a filter, copy and save.

Lines arrive as `log` events of the window's jobs (RunnerHost.job_event) and from the Convert dock when it
finishes. A runner can print thousands of lines a second, so nothing here costs the UI thread per line: the
events are taken on the job's own thread (a direct connection that only appends to a locked list) and the UI
thread writes them in batches on a timer. The view holds the newest VIEW_LINES lines (Qt's own trimming costs
~70 us a line once the view is full, so a large batch rebuilds the view instead); the buffer behind Copy, Save
and the filter holds MAX_LINES.
"""
from __future__ import annotations

import collections
import threading
import time

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication, QTextCursor
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QPushButton,
                               QVBoxLayout, QWidget)

from mnnscope.gui import filedialog

MAX_LINES = 50000      # lines kept for Copy, Save and the filter (the oldest go first)
VIEW_LINES = 2000      # lines the view shows (a rebuild of 5,000 took 46 ms, over 200 ms on a loaded CI machine)
APPEND_MAX = 300       # a batch larger than this, into a full view, rebuilds the view instead of appending
FLUSH_MS = 100         # batch interval
HEADER = "\u2500\u2500 {name} \u00b7 {when} \u2500\u2500"
AGAIN = "   \u2191 the line above {n} more time(s)"  # a run of identical lines, kept once


class LogPanel(QWidget):
    flushed = Signal(int)   # lines written to the view by one batch
    _wake = Signal()        # from a job's thread: lines are waiting

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.lines: collections.deque[str] = collections.deque(maxlen=MAX_LINES)  # what the view holds, unfiltered
        self._again = 0  # times the last line came again, not yet said (_add)
        self._pending: list[str] = []    # lines not yet in the view
        self._lock = threading.Lock()
        self._incoming: list[tuple[str, str]] = []   # (job, text) from jobs' threads, not yet taken
        self._open: set[str] = set()     # jobs whose header is written and that have not finished
        self.filter_text = ""
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(FLUSH_MS)
        self._timer.timeout.connect(self.flush)
        self._refilter = QTimer(self)
        self._refilter.setSingleShot(True)
        self._refilter.setInterval(200)
        self._refilter.timeout.connect(self._apply_filter)

        self.view = QPlainTextEdit()
        self.view.setReadOnly(True)
        self.view.setLineWrapMode(QPlainTextEdit.NoWrap)
        self.view.setMaximumBlockCount(VIEW_LINES)
        self.view.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
        self.view.setPlaceholderText("The runner's and the converter's log lines of every job appear here.")
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter lines\u2026")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(lambda _t: self._refilter.start())
        self.count = QLabel("")
        copy = QPushButton("Copy")
        copy.setToolTip("Copy the lines shown to the clipboard")
        copy.clicked.connect(self.copy)
        save = QPushButton("Save\u2026")
        save.clicked.connect(self.ask_save)
        clear = QPushButton("Clear")
        clear.clicked.connect(self.clear)
        bar = QHBoxLayout()
        bar.addWidget(self.filter, 1)
        bar.addWidget(self.count)
        for b in (copy, save, clear):
            bar.addWidget(b)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(bar)
        lay.addWidget(self.view, 1)

        self._wake.connect(self._woken, Qt.QueuedConnection)
        window.runner.job_event.connect(self._job_event, Qt.DirectConnection)  # on the job's thread: see above
        window.runner.job_finished.connect(self._job_finished)

    # ----- input ---------------------------------------------------------------------------------------
    def _header(self, name: str) -> None:
        if name not in self._open:
            self._open.add(name)
            self._add(HEADER.format(name=name, when=time.strftime("%H:%M:%S")))

    def _job_event(self, name: str, kind: str, payload) -> None:
        """Any thread: keep the line for the next batch, waking the UI thread for the first of a batch."""
        if kind != "log":
            return
        text = payload.get("text", "") if isinstance(payload, dict) else str(payload)
        with self._lock:
            first = not self._incoming
            self._incoming.append((name, str(text)))
        if first:
            try:
                self._wake.emit()
            except RuntimeError:  # the dock is gone (window closed) while the job still logs
                pass

    def _woken(self) -> None:
        if not self._timer.isActive():
            self._timer.start()

    def _take(self) -> None:
        """Move the lines the jobs sent into the buffer, each job's under its header."""
        with self._lock:
            batch, self._incoming = self._incoming, []
        for name, text in batch:
            self._header(name)
            for line in text.rstrip("\n").splitlines() or [""]:
                self._add(line)

    def _job_finished(self, name: str, ok: bool, msg: str) -> None:
        self._take()  # the job's last lines come before its end
        self._header(name)
        self._add(f"   {name}: done" if ok else f"   {name}: {msg or 'failed'}")
        self._open.discard(name)

    def add_log(self, name: str, text: str) -> None:
        """A whole log under its own header (a converter log file, a job's output read afterwards)."""
        self._open.discard(name)
        self._header(name)
        for line in text.rstrip("\n").splitlines():
            self._add(line)
        self._open.discard(name)

    def watch_convert(self, dialog) -> None:
        """Add the converter's whole log of every conversion the Convert dock finishes (the converter holds the
        GIL, so its lines do not all stream as events while it runs)."""
        def done(_outcome, d=dialog):
            res = getattr(d, "last_result", None)
            text = getattr(res, "log_text", "") if res is not None else ""
            if text:
                self.add_log("convert (whole log)", text)
        if not getattr(dialog, "_log_watched", False):
            dialog._log_watched = True
            dialog.conversion_done.connect(done)

    def _add(self, line: str) -> None:
        """One line into the buffer; a run of identical lines is kept once, with a line saying how often it came
        again (MNN printed "getshape: unable to get variable info..." over and over, a new-user try)."""
        if self.lines and line == self.lines[-1] and not line.startswith("\u2500\u2500 "):
            self._again += 1
            return
        self._said_again()
        self.lines.append(line)
        self._pending.append(line)
        if not self._timer.isActive():
            self._timer.start()

    def _said_again(self) -> None:
        """The line saying how often the last line came again, once a different line (or the flush) ends the run."""
        if self._again:
            note = AGAIN.format(n=self._again)
            self._again = 0
            self.lines.append(note)
            self._pending.append(note)

    # ----- output --------------------------------------------------------------------------------------
    def _match(self, line: str) -> bool:
        f = self.filter_text
        return not f or f in line.lower() or line.startswith("\u2500\u2500 ")

    def flush(self) -> None:
        self._take()
        self._said_again()
        batch, self._pending = self._pending, []
        shown = [line for line in batch if self._match(line)]
        if len(shown) > APPEND_MAX and self.view.blockCount() + len(shown) > VIEW_LINES:
            self._rebuild()
        elif shown:
            self.view.appendPlainText("\n".join(shown))
            if not self.view.verticalScrollBar().isSliderDown():
                self.view.moveCursor(QTextCursor.End)
        self._count()
        self.flushed.emit(len(shown))

    def _rebuild(self) -> None:
        """The view from the buffer: the newest VIEW_LINES lines that pass the filter."""
        shown = collections.deque((line for line in self.lines if self._match(line)), maxlen=VIEW_LINES)
        self.view.setPlainText("\n".join(shown))
        self.view.moveCursor(QTextCursor.End)

    def _apply_filter(self) -> None:
        self.filter_text = self.filter.text().strip().lower()
        self._take()
        self._pending.clear()
        self._rebuild()
        self._count()

    def _count(self) -> None:
        n = len(self.lines)
        self.count.setText(f"{n:,} lines" if not self.filter_text else f"filtered, of {n:,} lines")

    def text(self) -> str:
        """Every kept line that passes the filter (what Copy and Save take; the view shows the newest of them)."""
        self._take()
        self._said_again()
        return "\n".join(line for line in self.lines if self._match(line))

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.text())

    def ask_save(self) -> None:
        path = filedialog.ask_save_file(self, "Save log", "mnnscope.log", "Log files (*.log *.txt)")
        if path:
            self.save(path)

    def save(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.text() + "\n")

    def clear(self) -> None:
        self._take()
        self._again = 0
        self.lines.clear()
        self._pending.clear()
        self._open.clear()
        self.view.clear()
        self._count()

    def shutdown(self) -> None:
        self._timer.stop()
        self._refilter.stop()
