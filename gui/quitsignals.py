"""SIGTERM and SIGHUP close the window as its close button does.

Without this a `kill` (a session's logout, a terminal closed, a test harness or `pkill mnnscope`) ended the app
where it stood: Python ran no finalizer, so the runner's working folder (mnnscope-runner-*) and a comparison's
work folder (mnnscope-compare-*) stayed in the temp folder, and the settings of the session were not saved.

Python runs a signal handler only when the interpreter gets control, which Qt's event loop (C++) does not give it
while idle: the signal's byte, written to a socket by `signal.set_wakeup_fd`, wakes a QSocketNotifier, whose slot
is Python, and the handler runs there.
"""
from __future__ import annotations

import signal
import socket

from PySide6.QtCore import QObject, QSocketNotifier, QTimer

SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


def close_on_signals(window, app) -> QObject | None:
    """Close `window` (its closeEvent saves the settings, stops the runners, removes the work folders), then quit
    `app`, when one of SIGNALS arrives. Returns the notifier that must stay alive (None where the platform has no
    wakeup socket: the signals keep their default action)."""
    try:
        rsock, wsock = socket.socketpair()
        rsock.setblocking(False)
        wsock.setblocking(False)
        signal.set_wakeup_fd(wsock.fileno(), warn_on_full_buffer=False)
    except (OSError, ValueError, AttributeError):
        return None
    notifier = QSocketNotifier(rsock.fileno(), QSocketNotifier.Read, app)

    def drain() -> None:
        try:
            while rsock.recv(512):
                pass
        except OSError:
            pass
    notifier.activated.connect(drain)

    def close() -> None:
        window.close()
        app.quit()

    def handler(_signum, _frame) -> None:
        QTimer.singleShot(0, close)
    for s in SIGNALS:
        signal.signal(s, handler)
    notifier._socks = (rsock, wsock)  # the sockets live as long as the notifier
    return notifier
