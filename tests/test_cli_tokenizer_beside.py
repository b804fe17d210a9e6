"""`--text` without `--tokenizer` takes the tokenizer.json beside the model, as the Inputs dock's Text source does (a
new user's Text source asked for one with moe_llm's tokenizer.json in its folder), and says which on stderr."""
from __future__ import annotations

import json


def _profile(capsys, model, *extra):
    from mnnscope.inspector.cli.app import main
    code = main(["profile", str(model), "--engine", "ort", "--runs", "1", "--warmup", "0", "--json", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_text_is_tokenized_with_the_tokenizer_beside_the_model(tmp_path, samples, capsys):
    from tokenizers import Tokenizer
    model = tmp_path / "moe_llm.onnx"
    model.write_bytes((samples / "moe_llm.onnx").read_bytes())
    (tmp_path / "tokenizer.json").write_bytes((samples / "tokenizer.json").read_bytes())
    code, out, err = _profile(capsys, model, "--text", "hello world")
    assert code == 0, err
    n = len(Tokenizer.from_file(str(tmp_path / "tokenizer.json")).encode("hello world").ids)
    (inp,) = json.loads(out)["inputs"]
    assert inp["name"] == "input_ids" and inp["shape"] == [1, n]
    assert f"tokenized with {tmp_path / 'tokenizer.json'}, beside the model" in err


def test_text_without_a_tokenizer_anywhere_is_a_usage_error(tmp_path, samples, capsys):
    model = tmp_path / "moe_llm.onnx"
    model.write_bytes((samples / "moe_llm.onnx").read_bytes())
    code, out, err = _profile(capsys, model, "--text", "hello world")
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    assert json.loads(out)["error"]["message"] == "--text needs --tokenizer FILE (no tokenizer.json beside the model)"


def test_generate_takes_the_tokenizer_beside_the_model(tmp_path, samples, capsys):
    """generate required --tokenizer for an .onnx, with moe_llm's tokenizer.json beside it."""
    from mnnscope.inspector.cli.app import main
    model = tmp_path / "moe_llm.onnx"
    model.write_bytes((samples / "moe_llm.onnx").read_bytes())
    code = main(["generate", str(model), "--text", "hello", "--steps", "2", "--engine", "ort", "--json"])
    out, err = capsys.readouterr()
    assert code == 2 and "no tokenizer.json beside it" in json.loads(out)["error"]["message"]
    (tmp_path / "tokenizer.json").write_bytes((samples / "tokenizer.json").read_bytes())
    code = main(["generate", str(model), "--text", "hello", "--steps", "2", "--engine", "ort", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert len(result["tokens"]) == 2 and f"tokenized with {tmp_path / 'tokenizer.json'}, beside the model" in err


def test_a_missing_model_is_named_without_a_line_on_the_tokenizer_beside_it(tmp_path, samples, capsys):
    """`profile gone.onnx --text ...` in a folder holding a tokenizer.json said "tokenized with .../tokenizer.json"
    before "gone.onnx: no such file": the model's own error comes first and alone."""
    (tmp_path / "tokenizer.json").write_bytes((samples / "tokenizer.json").read_bytes())
    code, out, err = _profile(capsys, tmp_path / "gone.onnx", "--text", "hello world")
    assert code == 1 and "tokenized with" not in err and err.count("\n") == 1, err
    assert "gone.onnx: no such file" in json.loads(out)["error"]["message"]
