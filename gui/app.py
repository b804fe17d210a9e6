"""Starting the desktop app: arguments, platform checks, the QApplication."""
from __future__ import annotations

import argparse
import ctypes.util
import os
import sys
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "resources" / "samples"
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
    return p.parse_args(argv)


def run_app(argv: list[str]) -> int:
    args = parse_args(argv)
    problem = platform_problem()
    if problem:
        print(f"mnnscope: {problem}", file=sys.stderr)
        return 1
    from PySide6.QtWidgets import QApplication

    from .window import MainWindow
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("mnnscope")
    app.setOrganizationName("mnnscope")
    window = MainWindow()
    window.resize(1400, 900)
    window.show()
    path = str(DEMO_MODEL) if args.demo else args.model
    if path:
        window.open_model(path)
    return app.exec()
