"""Key focus handed from a button about to be disabled to the one that takes its place (Run -> Cancel while a job
runs, back when it ends).

Qt moves the focus of a widget that is disabled to the next one in the tab chain: after a click on the Compare
dock's Run it landed in the .mnn row's configuration box, scrolled out of view by the run, where the arrow keys
changed it unseen (helper 98's try)."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton


def set_running(run: QAbstractButton, cancel: QAbstractButton, busy: bool, run_ok: bool = True) -> None:
    """Enable `cancel` while busy and `run` while not (and `run_ok`); the focus on the one disabled goes to the
    other instead of the next widget in the tab chain."""
    giving, taking = (run, cancel) if busy else (cancel, run)
    had = giving.hasFocus()
    cancel.setEnabled(busy)
    run.setEnabled(not busy and run_ok)
    if had and taking.isEnabled() and taking.isVisible():
        taking.setFocus(Qt.OtherFocusReason)
