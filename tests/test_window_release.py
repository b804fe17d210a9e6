"""A closed window frees what it made: pyqtgraph's plots keep parentless menus (about 35 widgets a plot) that
nothing deleted with the window; one window per test piled them up in the suite, and each new window's first
show walked them all (gui/plotrelease.py)."""
from __future__ import annotations

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")
from PySide6.QtCore import QCoreApplication, QEvent  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from test_gui import settings_dir  # noqa: E402,F401

pytestmark = pytest.mark.gui


def _widgets_after_deletes() -> int:
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    return len(QApplication.allWidgets())


def test_a_closed_window_leaves_no_plot_menus_behind(qtbot, settings_dir):  # noqa: F811
    import pyqtgraph as pg

    from mnnscope.gui.window import MainWindow
    before = _widgets_after_deletes()
    w = MainWindow(theme="light")
    w.resize(1200, 800)
    w.show()
    qtbot.waitExposed(w)
    plots = w.findChildren(pg.PlotWidget)
    assert len(plots) >= 3  # the Profile, Statistics and Sweep docks' plots at least
    made = len(QApplication.allWidgets()) - before
    w.close()  # closeEvent: shutdown, then the plots released
    w.deleteLater()
    del w, plots
    left = _widgets_after_deletes() - before
    # ~180 of the window's widgets stayed before (its plots' menus and the plots pyqtgraph's close un-parents)
    assert left <= 5, f"{left} of the window's {made} widgets outlived it"
