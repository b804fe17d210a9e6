"""The `mnnscope` console script: headless subcommands go to inspector's CLI without importing Qt;
no subcommand (or a model path, or --demo) opens the app; `view` shows or renders one model."""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from mnnscope.inspector.cli import app as cli
    if argv and (argv[0] in cli.COMMANDS or argv[0] in ("-h", "--help")):
        if argv[0] in ("-h", "--help"):
            _print_help(cli)
            return 0
        return cli.main(argv)
    if argv and argv[0] == "view":
        from mnnscope.gui.viewcmd import run_view
        return run_view(argv[1:])
    if argv and not argv[0].startswith("-") and \
            not any(argv[0].lower().endswith(ext) for ext in (".onnx", ".mnn")):
        # Neither a command nor a model file: a typo must not open a window.
        print(f"mnnscope: unknown command '{argv[0]}' (commands: {', '.join(cli.COMMANDS + ['view'])}; "
              "or give an .onnx/.mnn file)", file=sys.stderr)
        return 2
    from mnnscope.gui.app import run_app
    return run_app(argv)


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
