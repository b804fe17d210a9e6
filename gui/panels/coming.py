"""Docks that the workflow issue fills (profile, compare, convert, inputs, runs, log): clearly marked as
coming, each naming the CLI command that already does the job where there is one."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

COMING = {
    "Profile": ("Per-operator timings on MNN backends, drawn over the graph.", "mnnscope profile MODEL"),
    "Compare": ("Layerwise comparison of MNN against ONNX Runtime, first divergent operator.",
                "mnnscope compare MODEL"),
    "Convert": ("ONNX to .mnn conversion with every converter setting, and why a conversion fails. "
                "The common settings are in Model \u203a Convert to MNN\u2026 (Ctrl+Shift+M) already.",
                "mnnscope convert MODEL"),
    "Statistics": ("Tensor statistics (min/max/std, NaN/Inf, histograms) of every tensor, drawn over the graph.",
                   "mnnscope profile MODEL --stats"),
    "Inputs": ("Input tensors for runs: random, from files, or from a tokenizer.", ""),
    "Runs": ("History of every run (settings, backend, timings, results), comparable with each other.", ""),
    "Log": ("Runner and converter logs of every job.", ""),
}


class ComingPanel(QWidget):
    def __init__(self, name: str, parent=None):
        super().__init__(parent)
        self.name = name
        what, cli = COMING[name]
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 12, 12, 12)
        head = QLabel(f"<b>{name}</b> \u2014 coming in a later version")
        body = QLabel(what + (f"<br><br>Available now on the command line: <code>{cli}</code>" if cli else ""))
        body.setWordWrap(True)
        body.setTextFormat(Qt.RichText)
        for w in (head, body):
            w.setObjectName("ComingText")
            lay.addWidget(w)
        lay.addStretch(1)
