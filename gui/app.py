"""Starting the desktop app: arguments, platform checks, the QApplication."""
from __future__ import annotations

import argparse
import ctypes.util
import os
import sys

from mnnscope.resources import SAMPLES
DEMO_MODEL = SAMPLES / "moe_llm.onnx"


def platform_problem() -> str | None:
    """Why Qt would abort before showing a window, as one line of advice (None when it should start)."""
    if os.environ.get("QT_QPA_PLATFORM"):
        return None
    if sys.platform.startswith("linux"):
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            return ("no display found (DISPLAY/WAYLAND_DISPLAY unset); run it on a desktop, under Xvfb, or use "
                    "`mnnscope view MODEL --screenshot OUT.png` for a headless render")
        if os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY") and not ctypes.util.find_library("xcb-cursor"):
            return ("Qt's xcb platform plugin needs libxcb-cursor0: install it "
                    "(Debian/Ubuntu: `sudo apt-get install libxcb-cursor0`)")
    return None


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="mnnscope", description="Open the mnnscope desktop app.")
    p.add_argument("model", nargs="?", help="an .onnx or .mnn file to open")
    p.add_argument("--demo", action="store_true", help="open the bundled sample model")
    p.add_argument("--theme", choices=("light", "dark"), help="colour theme (default: the last one used)")
    return p.parse_args(argv)


_QT_NOISE = ("propagateSizeHints",)  # the offscreen platform's complaints about features it lacks


def _qt_messages(mode, context, message) -> None:
    if any(n in message for n in _QT_NOISE):
        return
    sys.stderr.write(message + "\n")


def make_app():
    from PySide6.QtCore import qInstallMessageHandler
    from PySide6.QtWidgets import QApplication

    from mnnscope.gui import qtguard  # noqa: F401  (see qtguard: a PySide6 6.12 / Python 3.11 refcount bug)
    qInstallMessageHandler(_qt_messages)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    from mnnscope.gui import gcguard
    gcguard.install(app)  # reference cycles (and the Qt widgets in them) are collected on the GUI thread only
    app.setApplicationName("mnnscope")
    app.setOrganizationName("mnnscope")
    return app


def run_app(argv: list[str]) -> int:
    args = parse_args(argv)
    return open_window(str(DEMO_MODEL) if args.demo else args.model, theme=args.theme)


def open_window(path: str | None, theme: str | None = None, expand: str | None = None, size=None) -> int:
    problem = platform_problem()
    if problem:
        print(f"mnnscope: {problem}", file=sys.stderr)
        return 1
    job = _prefetch(path)
    app = make_app()
    from mnnscope.gui.window import MainWindow
    window = MainWindow(theme=theme)
    place_window(window, app, size)
    from mnnscope.gui.quitsignals import close_on_signals
    app._quit_notifier = close_on_signals(window, app)  # kept (with its sockets) while the app runs
    window.show()
    if path:
        window.open_model(path, expanded=expand, job=job)
    return app.exec()


def place_window(window, app, size=None) -> None:
    """The window's first size: `size` when asked for, else the size it was closed at (no larger than this screen:
    one saved on a large monitor), else 1500x950 fitted to the screen."""
    if size:
        window.resize(*size)
        return
    screen = app.primaryScreen().availableGeometry()
    if not window.geometry_restored:
        window.resize(min(1500, screen.width()), min(950, screen.height()))
    elif window.width() > screen.width() or window.height() > screen.height():
        window.resize(min(window.width(), screen.width()), min(window.height(), screen.height()))


def _prefetch(path: str | None):
    """Start parsing the model in its child process before Qt and the window are set up (they take a
    few hundred milliseconds that the parse can use)."""
    if not path:
        return None
    from mnnscope.inspector.errors import ModelError
    from mnnscope.inspector.formats.loadproc import start_load
    from mnnscope.inspector.formats.registry import detect
    try:
        detect(path)
    except ModelError:
        return None  # open_model reports it
    return start_load(path)
