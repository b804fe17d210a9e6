"""The layer rules of ARCHITECTURE.md, checked by import-linter, plus a Qt-free headless CLI."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.conftest import ROOT


def test_import_contracts_hold():
    exe = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    assert exe, "import-linter is part of the test extras"
    r = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "broken" not in r.stdout.lower() or "0 broken" in r.stdout.lower()


def test_headless_cli_never_imports_qt_or_native_libraries(samples):
    code = ("import sys; from mnnscope.gui.main import main; rc = main(['inspect', sys.argv[1], '--json', '--no-shapes']); "
            "bad = [m for m in ('PySide6', 'pyqtgraph', 'MNN', '_tools', 'onnxruntime') if m in sys.modules]; "
            "print('LOADED', bad, file=sys.stderr); sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code, str(samples / "cnn.onnx")], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "LOADED []" in r.stderr


def test_inspector_imports_only_the_runner_protocol():
    import ast
    offenders = []
    for path in (ROOT / "inspector").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for n in names:
                if n.startswith("mnnscope.runner") and n not in ("mnnscope.runner", "mnnscope.runner.protocol") and \
                        not n.startswith("mnnscope.runner.protocol."):
                    offenders.append(f"{path.name}: {n}")
    assert not offenders, offenders


def test_print_json_indents_small_results_and_keeps_large_ones_compact(capsys):
    # Indented JSON goes through json's pure-Python encoder (seconds for a 5,000-node comparison): past
    # INDENT_LIMIT the output is compact; both are one JSON object, NaN/inf written as strings.
    import json as _json

    from mnnscope.inspector.cli.app import INDENT_LIMIT, print_json
    small = {"a": [1.0, float("nan"), float("-inf")], "b": "x"}
    print_json(small)
    out = capsys.readouterr().out
    assert out.count("\n") > 3 and _json.loads(out) == {"a": [1.0, "nan", "-inf"], "b": "x"}
    large = {"rows": [{"name": f"t{i}", "rel_l2": i / 7} for i in range(INDENT_LIMIT // 20)]}
    print_json(large)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and _json.loads(out) == large
