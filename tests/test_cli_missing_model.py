"""One exit code for a missing model in every command: 1 (bad model or data), with a one-line reason."""
from __future__ import annotations

import json

import pytest

from mnnscope.inspector.cli.app import COMMANDS, main
from mnnscope.resources import SAMPLES


def _argv(command: str, missing: str, out_dir) -> list[str]:
    return {
        "inspect": ["inspect", missing],
        "profile": ["profile", missing],
        "compare": ["compare", missing],
        "convert": ["convert", missing, "-o", str(out_dir / "out.mnn")],
        "runs": ["runs", "list", "--model", missing],
        "generate": ["generate", missing, "--tokenizer", str(SAMPLES / "tokenizer.json"), "--text", "hi"],
        "llm-sweep": ["llm-sweep", missing, "--text", "hi"],
    }[command]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_model_exits_1_with_a_bad_model_error(command, tmp_path, capsys):
    missing = str(tmp_path / ("missing.mnn" if command in ("profile", "runs") else "missing.onnx"))
    assert main(_argv(command, missing, tmp_path) + ["--json"]) == 1
    captured = capsys.readouterr()
    err = json.loads(captured.out)["error"]
    assert err["kind"] == "bad_model" and "no such file" in err["message"]
    assert captured.err.strip().count("\n") == 0 and "no such file" in captured.err


def test_convert_preflight_of_a_missing_model_exits_1(tmp_path, capsys):
    assert main(["convert", str(tmp_path / "missing.onnx"), "--preflight", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "bad_model"
