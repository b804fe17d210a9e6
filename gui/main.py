"""The `mnnscope` console script: headless subcommands go to inspector's CLI without importing Qt;
no subcommand (or a model path, or --demo) opens the app; `view` shows or renders one model."""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from mnnscope.inspector.cli import app as cli
    if argv[:1] == ["--version"]:  # what a bug report or a CI log names first (the wheels' own metadata)
        from importlib.metadata import PackageNotFoundError, version

        def v(name):
            try:
                return version(name)
            except PackageNotFoundError:
                return "not installed"
        print(f"mnnscope {v('mnnscope')} (MNN {v('MNN')}, onnxruntime {v('onnxruntime')}, onnx {v('onnx')}, "
              f"PySide6 {v('PySide6_Essentials') if v('PySide6') == 'not installed' else v('PySide6')})")
        return 0
    if argv and (argv[0] in cli.COMMANDS or argv[0] in ("-h", "--help")):
        if argv[0] in ("-h", "--help"):
            _print_help(cli)
            return 0
        return cli.main(argv)
    if argv and argv[0] == "view":
        from mnnscope.gui.viewcmd import run_view
        return run_view(argv[1:])
    if argv and not argv[0].startswith("-") and not _model_like(argv[0]):
        # Neither a command nor a model: a typo must not open a window.
        print(f"mnnscope: unknown command '{argv[0]}' (commands: {', '.join(cli.COMMANDS + ['view'])}; "
              f"or give a model: {_model_hint()})", file=sys.stderr)
        return 2
    from mnnscope.gui.app import run_app
    return run_app(argv)


def _model_like(arg: str) -> bool:
    """A registered model suffix, or an existing file or folder that a format recognises (magic bytes,
    folder formats): the window opens it, or says why not."""
    import os

    from mnnscope.inspector.errors import ModelError
    from mnnscope.inspector.formats.registry import detect, has_model_suffix
    try:
        if has_model_suffix(arg):
            return True
        if os.path.exists(arg):
            detect(arg)
            return True
        return False
    except ModelError:
        return False


def _model_hint() -> str:
    from mnnscope.inspector.errors import ModelError
    from mnnscope.inspector.formats.registry import extensions
    try:
        return f"{', '.join(extensions())} file or a model folder"
    except ModelError as e:  # a broken MNNSCOPE_FORMATS entry
        return f"a file or a folder; {e}"


def _print_help(cli) -> None:
    parser = cli.build_parser()
    parser.usage = ("mnnscope [MODEL | --demo]  |  mnnscope view MODEL [--screenshot OUT.png]  |  "
                    "mnnscope COMMAND ...")
    parser.print_help()
    print("\nWith no command, opens the desktop app (optionally on MODEL, or the bundled sample with --demo).\n"
          "`mnnscope view MODEL --screenshot OUT.png [--size WxH] [--expand all|none|SCOPE] [--timing]` renders "
          "offscreen and exits.")


if __name__ == "__main__":
    sys.exit(main())
