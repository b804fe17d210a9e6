"""pyqtgraph plots free their menus when the window that holds them closes.

A pyqtgraph PlotWidget makes two parentless menus (its plot's "Plot Options" and its view box's context menu, with
their submenus and forms: about 35 widgets a plot) that nothing deletes when the window is deleted: measured, every
closed MainWindow left ~180 widgets alive (its five plots' menus). In the app that is once per process; in the test
suite, one window per test, they piled up to tens of thousands, and each new window's first show and polish walked
them (a window's first paint grew from 0.9 s to 2.3 s of CPU within 20 tests: the UI-watchdog stalls of late tests
in full-suite runs).
"""
from __future__ import annotations

import sys

from PySide6.QtWidgets import QWidget


def release_plots(root: QWidget) -> None:
    """Close every pyqtgraph PlotWidget under `root` and delete it and its menus."""
    pg = sys.modules.get("pyqtgraph")
    if pg is None:  # no plot was ever made
        return
    for plot in root.findChildren(pg.PlotWidget):
        item = plot.plotItem
        if item is None:  # closed already
            continue
        vb = item.getViewBox()
        menus = [item.ctrlMenu, getattr(vb, "menu", None) if vb is not None else None]
        plot.close()  # pyqtgraph's close takes the plot out of its parent: it would outlive the window too
        for w in (*menus, plot):
            if w is not None:
                w.deleteLater()
