"""The main window (first version): a model's summary and operator list, loaded off the UI thread."""
from __future__ import annotations

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot
from PySide6.QtWidgets import (QFileDialog, QLabel, QMainWindow, QSplitter, QTableWidget, QTableWidgetItem,
                               QVBoxLayout, QWidget)

from inspector.cmd_inspect import summarize
from inspector.graph import ModelError
from inspector.loader import load_model


class LoadWorker(QObject):
    """Loads a model on a worker thread; the result reaches the window through a queued signal."""
    loaded = Signal(object, dict)
    failed = Signal(str)

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    @Slot()
    def run(self) -> None:
        try:
            graph = load_model(self.path)
            self.loaded.emit(graph, summarize(graph))
        except ModelError as e:
            self.failed.emit(str(e))
        except Exception as e:  # never let a worker exception vanish: the user sees it
            self.failed.emit(f"{self.path}: {type(e).__name__}: {e}")


class MainWindow(QMainWindow):
    model_loaded = Signal(object)
    load_failed = Signal(str)

    def __init__(self):
        super().__init__()
        self.setWindowTitle("mnnscope")
        self.graph = None
        self._thread: QThread | None = None
        self._worker: LoadWorker | None = None
        central = QWidget()
        layout = QVBoxLayout(central)
        self.summary = QLabel("Open a model (Ctrl+O)")
        self.summary.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.summary.setWordWrap(True)
        self.ops = QTableWidget(0, 4)
        self.ops.setHorizontalHeaderLabels(["Name", "Type", "Inputs", "Outputs"])
        self.ops.horizontalHeader().setStretchLastSection(True)
        split = QSplitter(Qt.Vertical)
        split.addWidget(self.summary)
        split.addWidget(self.ops)
        layout.addWidget(split)
        self.setCentralWidget(central)
        menu = self.menuBar().addMenu("&File")
        act = menu.addAction("&Open...")
        act.setShortcut("Ctrl+O")
        act.triggered.connect(self._ask_open)
        menu.addAction("&Quit", self.close)
        self.statusBar().showMessage("ready")

    def _ask_open(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open model", "", "Models (*.onnx *.mnn);;All files (*)")
        if path:
            self.open_model(path)

    def open_model(self, path: str) -> None:
        self._stop_worker()
        self.statusBar().showMessage(f"loading {path} ...")
        self._thread = QThread(self)
        self._worker = LoadWorker(path)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.run)
        self._worker.loaded.connect(self._on_loaded)
        self._worker.failed.connect(self._on_failed)
        self._worker.loaded.connect(self._thread.quit)
        self._worker.failed.connect(self._thread.quit)
        self._thread.start()

    def _stop_worker(self) -> None:
        if self._thread is not None:
            self._worker.loaded.disconnect(self._on_loaded)
            self._worker.failed.disconnect(self._on_failed)
            self._thread.quit()
            self._thread.wait()
            self._thread = None

    def closeEvent(self, event) -> None:
        self._stop_worker()
        super().closeEvent(event)

    @Slot(object, dict)
    def _on_loaded(self, graph, s: dict) -> None:
        self.graph = graph
        ops = ", ".join(f"{k} {v}" for k, v in list(s["op_types"].items())[:15])
        self.summary.setText(
            f"<b>{s['path']}</b> ({s['format']})<br>operators {s['nodes']}, edges {s['edges']}, "
            f"params {s['params']}, FLOPs {s['flops']}<br>inputs: "
            + ", ".join(f"{i['name']} {i['dtype']}{i['shape']}" for i in s["inputs"])
            + "<br>outputs: " + ", ".join(f"{i['name']} {i['dtype']}{i['shape']}" for i in s["outputs"])
            + f"<br>op types: {ops}")
        rows = list(graph.g.nodes(data=True))
        self.ops.setRowCount(len(rows))
        for r, (nid, d) in enumerate(rows):
            for c, text in enumerate((d["name"] or nid, d["op_type"], ", ".join(d["inputs"]), ", ".join(d["outputs"]))):
                self.ops.setItem(r, c, QTableWidgetItem(text))
        self.statusBar().showMessage(f"{s['path']}: {s['nodes']} operators")
        self.model_loaded.emit(graph)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self.summary.setText(f"<span style='color:#b00'>Could not open: {message}</span>")
        self.statusBar().showMessage("load failed")
        self.load_failed.emit(message)
