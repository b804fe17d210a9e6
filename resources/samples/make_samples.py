"""Regenerate mnnscope's bundled sample models (ONNX + their MNN conversions).

Run: .venv/bin/python resources/samples/make_samples.py

Everything is built with onnx.helper and numpy from fixed seeds, without network access. MNN's
converter runs in a child process through the `_tools` C extension (never the `mnnconvert`
console script, which installs packages and posts telemetry at run time); success is judged by
the printed "Converted Success!" and a non-empty output file, because its exit code lies.

One script past 400 lines on purpose: each sample is a short builder, and keeping them together keeps
the regeneration byte-identical from one command.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import re
import subprocess
import sys
import uuid

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = pathlib.Path(__file__).resolve().parent
IR_VERSION = 9  # accepted by every onnx/onnxruntime the project supports, and by opset <= 20
SAMPLES_THAT_CONVERT = ("cnn", "encoder_block", "moe_llm", "moe_llm_kv", "external_data", "control_flow")


class GraphBuilder:
    """Collects nodes and initializers under exporter-style names.

    A node named "/a/b/MatMul" gets the output tensor "/a/b/MatMul_output_0", as torch.onnx does.
    """

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def weight(self, name: str, shape: tuple[int, ...], scale: float | None = None) -> str:
        # 1/sqrt(fan_in) keeps activations O(1) through deep stacks, so fp32 comparisons stay meaningful.
        scale = scale if scale is not None else 1.0 / np.sqrt(shape[0])
        return self.const(name, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], name: str, n_out: int = 1,
           outputs: list[str] | None = None, **attrs) -> str | list[str]:
        outs = outputs or [f"{name}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=name, **attrs))
        return outs[0] if len(outs) == 1 else outs

    def graph(self, name: str, inputs: list, outputs: list) -> onnx.GraphProto:
        return helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.initializers)


def make_model(graph: onnx.GraphProto, opset: int) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="mnnscope-samples", producer_version="1")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


# ---------------------------------------------------------------------------------------------
# cnn.onnx
# ---------------------------------------------------------------------------------------------

def build_cnn() -> onnx.ModelProto:
    """Conv+BN+Relu stem, MaxPool, one residual block, global pool, Gemm classifier, Softmax."""
    b = GraphBuilder(seed=1)
    x = b.op("Conv", ["input", b.weight("conv1.weight", (16, 3, 3, 3), 0.2)], "/conv1/Conv",
             kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    x = b.op("BatchNormalization", [x, b.const("bn1.weight", 1 + 0.1 * b.rng.standard_normal(16).astype(np.float32)),
                                    b.const("bn1.bias", 0.1 * b.rng.standard_normal(16).astype(np.float32)),
                                    b.const("bn1.running_mean", 0.1 * b.rng.standard_normal(16).astype(np.float32)),
                                    b.const("bn1.running_var", (0.5 + b.rng.random(16)).astype(np.float32))],
             "/bn1/BatchNormalization", epsilon=1e-5)
    x = b.op("Relu", [x], "/relu/Relu")
    x = b.op("MaxPool", [x], "/maxpool/MaxPool", kernel_shape=[2, 2], strides=[2, 2])
    skip = x
    y = b.op("Conv", [x, b.weight("layer1.conv1.weight", (16, 16, 3, 3), 0.08), b.weight("layer1.conv1.bias", (16,), 0.1)],
             "/layer1/conv1/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    y = b.op("Relu", [y], "/layer1/relu/Relu")
    y = b.op("Conv", [y, b.weight("layer1.conv2.weight", (16, 16, 3, 3), 0.08), b.weight("layer1.conv2.bias", (16,), 0.1)],
             "/layer1/conv2/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    x = b.op("Add", [y, skip], "/layer1/Add")
    x = b.op("GlobalAveragePool", [x], "/avgpool/GlobalAveragePool")
    x = b.op("Flatten", [x], "/Flatten", axis=1)
    x = b.op("Gemm", [x, b.weight("fc.weight", (10, 16), 0.25), b.weight("fc.bias", (10,), 0.1)], "/fc/Gemm", transB=1)
    b.op("Softmax", [x], "/Softmax", outputs=["probs"], axis=1)
    graph = b.graph("cnn", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
                    [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])])
    return make_model(graph, 17)


# ---------------------------------------------------------------------------------------------
# encoder_block.onnx
# ---------------------------------------------------------------------------------------------

def _linear(b: GraphBuilder, x: str, scope: str, wname: str, n_in: int, n_out: int, bias: bool = True) -> str:
    y = b.op("MatMul", [x, b.weight(f"{wname}.weight", (n_in, n_out))], f"{scope}/MatMul")
    if bias:
        y = b.op("Add", [b.weight(f"{wname}.bias", (n_out,), 0.05), y], f"{scope}/Add")
    return y


def build_encoder_block() -> onnx.ModelProto:
    """A pre-norm transformer encoder block: 4 heads of 16, FFN with the ONNX Gelu op."""
    b = GraphBuilder(seed=2)
    hidden, heads, head_dim, ffn = 64, 4, 16, 128
    s = "/encoder/layer.0"
    w = "encoder.layer.0"
    split_heads = b.const("/encoder/Constant_heads", np.array([1, -1, heads, head_dim], np.int64))
    merge_heads = b.const("/encoder/Constant_merge", np.array([1, -1, hidden], np.int64))

    def layer_norm(x: str, scope: str, wname: str) -> str:
        return b.op("LayerNormalization", [x, b.const(f"{wname}.weight", np.ones(hidden, np.float32)),
                                           b.const(f"{wname}.bias", np.zeros(hidden, np.float32))],
                    f"{scope}/LayerNormalization", axis=-1, epsilon=1e-5)

    x = layer_norm("hidden", f"{s}/attention/layer_norm", f"{w}.attention.layer_norm")
    q, k, v = (_linear(b, x, f"{s}/attention/self/{p}", f"{w}.attention.self.{p}", hidden, hidden)
               for p in ("query", "key", "value"))
    q = b.op("Transpose", [b.op("Reshape", [q, split_heads], f"{s}/attention/self/Reshape")],
             f"{s}/attention/self/Transpose", perm=[0, 2, 1, 3])
    k = b.op("Transpose", [b.op("Reshape", [k, split_heads], f"{s}/attention/self/Reshape_1")],
             f"{s}/attention/self/Transpose_1", perm=[0, 2, 3, 1])
    v = b.op("Transpose", [b.op("Reshape", [v, split_heads], f"{s}/attention/self/Reshape_2")],
             f"{s}/attention/self/Transpose_2", perm=[0, 2, 1, 3])
    scores = b.op("MatMul", [q, k], f"{s}/attention/self/MatMul")
    scores = b.op("Div", [scores, b.const("/encoder/Constant_scale", np.array(np.sqrt(head_dim), np.float32))],
                  f"{s}/attention/self/Div")
    probs = b.op("Softmax", [scores], f"{s}/attention/self/Softmax", axis=-1)
    ctx = b.op("MatMul", [probs, v], f"{s}/attention/self/MatMul_1")
    ctx = b.op("Transpose", [ctx], f"{s}/attention/self/Transpose_3", perm=[0, 2, 1, 3])
    ctx = b.op("Reshape", [ctx, merge_heads], f"{s}/attention/self/Reshape_3")
    attn = _linear(b, ctx, f"{s}/attention/output/dense", f"{w}.attention.output.dense", hidden, hidden)
    x = b.op("Add", ["hidden", attn], f"{s}/attention/Add")
    h = layer_norm(x, f"{s}/ffn/layer_norm", f"{w}.ffn.layer_norm")
    h = _linear(b, h, f"{s}/ffn/intermediate/dense", f"{w}.ffn.intermediate.dense", hidden, ffn)
    h = b.op("Gelu", [h], f"{s}/ffn/intermediate/act/Gelu")
    h = _linear(b, h, f"{s}/ffn/output/dense", f"{w}.ffn.output.dense", ffn, hidden)
    b.op("Add", [x, h], f"{s}/ffn/Add", outputs=["output"])
    graph = b.graph("encoder_block",
                    [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [1, "seq", hidden])],
                    [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, "seq", hidden])])
    return make_model(graph, 20)  # Gelu is an ONNX op from opset 20


# ---------------------------------------------------------------------------------------------
# moe_llm.onnx
# ---------------------------------------------------------------------------------------------

def build_moe_llm(kv_cache: bool = False) -> onnx.ModelProto:
    """A 2-layer decoder-only LM whose FFN is a top-2 mixture of 4 SwiGLU experts.

    kv_cache: the same weights (the same seed, drawn in the same order) with past_key_i/past_value_i inputs
    ([1, heads, past, head_dim]) and present_key_i/present_value_i outputs (past + new), as HF exports
    decoders; the causal mask is the [seq, past+seq] window of the buffer starting at row `past`. Feeding
    an empty past and the whole sequence gives moe_llm's logits.
    """
    b = GraphBuilder(seed=3)
    vocab, hidden, heads, head_dim, n_layers, n_experts, top_k, inter = 96, 32, 2, 16, 2, 4, 2, 16
    max_pos = 64
    c = {  # shared constants, named like the Constant nodes exporters fold into initializers
        "two": b.const("/model/Constant_pow", np.array(2.0, np.float32)),
        "eps": b.const("/model/Constant_eps", np.array(1e-6, np.float32)),
        "scale": b.const("/model/Constant_scale", np.array(np.sqrt(head_dim), np.float32)),
        "split": b.const("/model/Constant_heads", np.array([1, -1, heads, head_dim], np.int64)),
        "merge": b.const("/model/Constant_merge", np.array([1, -1, hidden], np.int64)),
        "tokens": b.const("/model/Constant_tokens", np.array([-1, hidden], np.int64)),
        "unflatten": b.const("/model/Constant_unflatten", np.array([1, -1, hidden], np.int64)),
        "last": b.const("/model/Constant_last", np.array([-1], np.int64)),
        "topk": b.const("/model/Constant_topk", np.array([top_k], np.int64)),
        
        "one": b.const("/model/Constant_one", np.array([1], np.int64)),
        "two_i": b.const("/model/Constant_two", np.array([2], np.int64)),
        "axes01": b.const("/model/Constant_axes", np.array([0, 1], np.int64)),
        "zeros2": b.const("/model/Constant_starts", np.array([0, 0], np.int64)),
    }

    def rms_norm(x: str, scope: str, wname: str) -> str:
        p = b.op("Pow", [x, c["two"]], f"{scope}/Pow")
        m = b.op("ReduceMean", [p], f"{scope}/ReduceMean", axes=[-1], keepdims=1)
        m = b.op("Add", [m, c["eps"]], f"{scope}/Add")
        r = b.op("Sqrt", [m], f"{scope}/Sqrt")
        y = b.op("Div", [x, r], f"{scope}/Div")
        weight = b.const(f"{wname}.weight", (1 + 0.1 * b.rng.standard_normal(hidden)).astype(np.float32))
        return b.op("Mul", [weight, y], f"{scope}/Mul")

    # Causal mask: slice the [seq, seq] corner of a constant buffer, as HF exports do.
    ids_shape = b.op("Shape", ["input_ids"], "/model/Shape")
    seq = b.op("Slice", [ids_shape, c["one"], c["two_i"]], "/model/Slice")
    buffer = np.triu(np.full((max_pos, max_pos), -1e9, np.float32), k=1)
    if kv_cache:  # rows past..past+seq, columns 0..past+seq
        past = b.op("Slice", [b.op("Shape", ["past_key_0"], "/model/Shape_1"), c["two_i"],
                              b.const("/model/Constant_three", np.array([3], np.int64))], "/model/Slice_2")
        total = b.op("Add", [past, seq], "/model/Add")
        starts = b.op("Concat", [past, b.const("/model/Constant_zero", np.array([0], np.int64))],
                      "/model/Concat_1", axis=0)
        ends = b.op("Concat", [total, total], "/model/Concat", axis=0)
        mask = b.op("Slice", [b.const("model.causal_mask", buffer), starts, ends, c["axes01"]], "/model/Slice_1")
    else:
        ends = b.op("Concat", [seq, seq], "/model/Concat", axis=0)
        mask = b.op("Slice", [b.const("model.causal_mask", buffer), c["zeros2"], ends, c["axes01"]],
                    "/model/Slice_1")

    x = b.op("Gather", [b.weight("model.embed_tokens.weight", (vocab, hidden), 1.0), "input_ids"],
             "/model/embed_tokens/Gather", axis=0)
    for i in range(n_layers):
        s, w = f"/model/layers.{i}", f"model.layers.{i}"
        h = rms_norm(x, f"{s}/input_layernorm", f"{w}.input_layernorm")
        qkv = {}
        for n, (p, perm) in enumerate((("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3]))):
            t = _linear(b, h, f"{s}/self_attn/{p}_proj", f"{w}.self_attn.{p}_proj", hidden, hidden, bias=False)
            sfx = f"_{n}" if n else ""
            t = b.op("Reshape", [t, c["split"]], f"{s}/self_attn/Reshape{sfx}")
            if kv_cache and p != "q":  # cache [1, heads, past+seq, head_dim]; keys transposed after the cache
                t = b.op("Transpose", [t], f"{s}/self_attn/Transpose{sfx}", perm=[0, 2, 1, 3])
                key = "key" if p == "k" else "value"
                t = b.op("Concat", [f"past_{key}_{i}", t], f"{s}/self_attn/Concat{sfx}", axis=2,
                         outputs=[f"present_{key}_{i}"])
                qkv[p] = b.op("Transpose", [t], f"{s}/self_attn/Transpose_k", perm=[0, 1, 3, 2]) if p == "k" else t
                continue
            qkv[p] = b.op("Transpose", [t], f"{s}/self_attn/Transpose{sfx}", perm=perm)
        scores = b.op("MatMul", [qkv["q"], qkv["k"]], f"{s}/self_attn/MatMul")
        scores = b.op("Div", [scores, c["scale"]], f"{s}/self_attn/Div")
        scores = b.op("Add", [scores, mask], f"{s}/self_attn/Add")
        probs = b.op("Softmax", [scores], f"{s}/self_attn/Softmax", axis=-1)
        ctx = b.op("MatMul", [probs, qkv["v"]], f"{s}/self_attn/MatMul_1")
        ctx = b.op("Transpose", [ctx], f"{s}/self_attn/Transpose_3", perm=[0, 2, 1, 3])
        ctx = b.op("Reshape", [ctx, c["merge"]], f"{s}/self_attn/Reshape_3")
        attn = _linear(b, ctx, f"{s}/self_attn/o_proj", f"{w}.self_attn.o_proj", hidden, hidden, bias=False)
        x = b.op("Add", [x, attn], f"{s}/Add")

        # MoE: dense-gated form. TopK picks 2 experts per token, ScatterElements spreads their
        # (renormalised) weights into a [tokens, experts] gate, Gather takes each expert's column.
        m = f"{s}/mlp"
        h = rms_norm(x, f"{s}/post_attention_layernorm", f"{w}.post_attention_layernorm")
        tokens = b.op("Reshape", [h, c["tokens"]], f"{m}/Reshape")
        logits = _linear(b, tokens, f"{m}/gate", f"{w}.mlp.gate", hidden, n_experts, bias=False)
        route = b.op("Softmax", [logits], f"{m}/Softmax", axis=-1)
        top_w, top_i = b.op("TopK", [route, c["topk"]], f"{m}/TopK", n_out=2, axis=-1, largest=1, sorted=1)
        top_sum = b.op("ReduceSum", [top_w, c["last"]], f"{m}/ReduceSum", keepdims=1)
        top_w = b.op("Div", [top_w, top_sum], f"{m}/Div")
        zeros = b.op("ConstantOfShape", [b.op("Shape", [route], f"{m}/Shape")], f"{m}/ConstantOfShape",
                     value=helper.make_tensor("value", TensorProto.FLOAT, [1], [0.0]))
        gate = b.op("ScatterElements", [zeros, top_i, top_w], f"{m}/ScatterElements", axis=1)
        out = None
        for e in range(n_experts):
            es, ew = f"{m}/experts.{e}", f"{w}.mlp.experts.{e}"
            g = _linear(b, tokens, f"{es}/gate_proj", f"{ew}.gate_proj", hidden, inter, bias=False)
            g = b.op("Mul", [g, b.op("Sigmoid", [g], f"{es}/act_fn/Sigmoid")], f"{es}/act_fn/Mul")
            u = _linear(b, tokens, f"{es}/up_proj", f"{ew}.up_proj", hidden, inter, bias=False)
            y = _linear(b, b.op("Mul", [g, u], f"{es}/Mul"), f"{es}/down_proj", f"{ew}.down_proj", inter, hidden,
                        bias=False)
            col = b.const(f"/model/Constant_expert{e}", np.array([e], np.int64)) if i == 0 else f"/model/Constant_expert{e}"
            y = b.op("Mul", [y, b.op("Gather", [gate, col], f"{es}/Gather", axis=1)], f"{es}/Mul_1")
            out = y if out is None else b.op("Add", [out, y], f"{es}/Add")
        out = b.op("Reshape", [out, c["unflatten"]], f"{m}/Reshape_1")
        x = b.op("Add", [x, out], f"{s}/Add_1")

    x = rms_norm(x, "/model/norm", "model.norm")
    b.op("MatMul", [x, b.weight("lm_head.weight", (hidden, vocab))], "/lm_head/MatMul", outputs=["logits"])
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "seq"])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "seq", vocab])]
    if kv_cache:
        for i in range(n_layers):
            for key in ("key", "value"):
                inputs.append(helper.make_tensor_value_info(f"past_{key}_{i}", TensorProto.FLOAT,
                                                            [1, heads, "past", head_dim]))
                outputs.append(helper.make_tensor_value_info(f"present_{key}_{i}", TensorProto.FLOAT,
                                                             [1, heads, "total", head_dim]))
    if kv_cache:  # the mask starts at row `past`: the shared [0, 0] starts constant is unused
        b.initializers = [t for t in b.initializers if t.name != c["zeros2"]]
    graph = b.graph("moe_llm_kv" if kv_cache else "moe_llm", inputs, outputs)
    return make_model(graph, 17)


# ---------------------------------------------------------------------------------------------
# unsupported_op.onnx
# ---------------------------------------------------------------------------------------------

def build_unsupported_op() -> onnx.ModelProto:
    """A small conv net with Mish (YOLOv4-style activation) and a Hardmax head: MNN 3.6.1 has neither."""
    b = GraphBuilder(seed=4)
    x = b.op("Conv", ["input", b.weight("conv1.weight", (8, 3, 3, 3), 0.2), b.weight("conv1.bias", (8,), 0.1)],
             "/conv1/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    x = b.op("Mish", [x], "/act1/Mish")
    x = b.op("Conv", [x, b.weight("conv2.weight", (8, 8, 3, 3), 0.1), b.weight("conv2.bias", (8,), 0.1)],
             "/conv2/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
    x = b.op("Relu", [x], "/act2/Relu")
    x = b.op("GlobalAveragePool", [x], "/pool/GlobalAveragePool")
    x = b.op("Flatten", [x], "/Flatten", axis=1)
    x = b.op("Gemm", [x, b.weight("fc.weight", (4, 8), 0.3), b.weight("fc.bias", (4,), 0.1)], "/fc/Gemm", transB=1)
    b.op("Hardmax", [x], "/Hardmax", outputs=["onehot"], axis=-1)
    graph = b.graph("unsupported_op", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 16, 16])],
                    [helper.make_tensor_value_info("onehot", TensorProto.FLOAT, [1, 4])])
    return make_model(graph, 18)  # Mish is an ONNX op from opset 18


# ---------------------------------------------------------------------------------------------
# external_data.onnx (+ .onnx.data)
# ---------------------------------------------------------------------------------------------

def build_external_data() -> onnx.ModelProto:
    """Three MatMul/Add/Relu layers; the caller saves every initializer into external_data.onnx.data."""
    b = GraphBuilder(seed=5)
    x, sizes = "x", [64, 128, 128, 16]
    for i in range(3):
        s = f"/layers.{i}"
        x = _linear(b, x, s, f"layers.{i}", sizes[i], sizes[i + 1])
        x = b.op("Relu", [x], f"{s}/Relu", outputs=["y"] if i == 2 else None)
    graph = b.graph("external_data", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])])
    return make_model(graph, 17)


# ---------------------------------------------------------------------------------------------
# control_flow.onnx
# ---------------------------------------------------------------------------------------------

def build_control_flow() -> onnx.ModelProto:
    """x -> If(sum(x) > 0: 2x+1 else |x-1|) -> Loop 3 times (acc = 0.5*acc + i) -> y."""
    b = GraphBuilder(seed=6)
    f4 = [1, 4]
    total = b.op("ReduceSum", ["x"], "/ReduceSum", keepdims=0)
    cond = b.op("Greater", [total, b.const("/Constant_zero", np.array(0.0, np.float32))], "/Greater")

    then_b = GraphBuilder(seed=7)
    t = then_b.op("Mul", ["x", then_b.const("/then/Constant_two", np.array(2.0, np.float32))], "/then/Mul")
    then_b.op("Add", [t, then_b.const("/then/Constant_one", np.array(1.0, np.float32))], "/then/Add",
              outputs=["then_out"])
    else_b = GraphBuilder(seed=8)
    t = else_b.op("Sub", ["x", else_b.const("/else/Constant_one", np.array(1.0, np.float32))], "/else/Sub")
    else_b.op("Abs", [t], "/else/Abs", outputs=["else_out"])
    branched = b.op("If", [cond], "/If",
                    then_branch=then_b.graph("then_branch", [], [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, f4)]),
                    else_branch=else_b.graph("else_branch", [], [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, f4)]))

    body = GraphBuilder(seed=9)
    i_f = body.op("Cast", ["iter"], "/loop/Cast", to=TensorProto.FLOAT)
    half = body.op("Mul", ["acc_in", body.const("/loop/Constant_half", np.array(0.5, np.float32))], "/loop/Mul")
    body.op("Add", [half, i_f], "/loop/Add", outputs=["acc_out"])
    body.op("Identity", ["cond_in"], "/loop/Identity", outputs=["cond_out"])
    body_graph = body.graph(
        "loop_body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, f4)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, f4)])
    b.op("Loop", [b.const("/Constant_trips", np.array(3, np.int64)), b.const("/Constant_true", np.array(True)), branched],
         "/Loop", outputs=["y"], body=body_graph)
    graph = b.graph("control_flow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, f4)],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, f4)])
    return make_model(graph, 17)


# ---------------------------------------------------------------------------------------------
# saving and converting
# ---------------------------------------------------------------------------------------------

_CONVERT = """
import sys, _tools
_tools.mnnconvert(["MNNConvert", "-f", "ONNX", "--modelFile", sys.argv[1], "--MNNModel", sys.argv[2],
                   "--bizCode", "mnnscope"])
"""


def convert(src: pathlib.Path, dst: pathlib.Path) -> tuple[bool, str]:
    """Convert src to dst with MNN in a child process; success = printed marker and a non-empty file."""
    dst.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "-c", _CONVERT, str(src), str(dst)], capture_output=True,
                          text=True, errors="replace", timeout=300, cwd=src.parent)
    log = proc.stdout + proc.stderr
    ok = proc.returncode == 0 and "Converted Success!" in log and "Can't open file" not in log
    ok = ok and dst.exists() and dst.stat().st_size > 0
    return ok, log


_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def pin_uuid(src: pathlib.Path, dst: pathlib.Path) -> None:
    """Replace the random UUID the converter stamps into each .mnn by one derived from the source.

    Without this every regeneration rewrites all .mnn files (36 bytes differ), which churns git.
    Same length, so the flatbuffer layout is untouched.
    """
    data = dst.read_bytes()
    found = _UUID.findall(data)
    if len(found) == 1:
        pinned = uuid.uuid5(uuid.NAMESPACE_URL, "mnnscope-sample:" + hashlib.sha256(src.read_bytes()).hexdigest())
        dst.write_bytes(data.replace(found[0], str(pinned).encode()))


def save_all(out: pathlib.Path = HERE) -> dict[str, onnx.ModelProto]:
    """Write every sample .onnx (and the external data file) into out."""
    models = {"cnn": build_cnn(), "encoder_block": build_encoder_block(), "moe_llm": build_moe_llm(),
              "moe_llm_kv": build_moe_llm(kv_cache=True),
              "unsupported_op": build_unsupported_op(), "control_flow": build_control_flow()}
    for name, model in models.items():
        onnx.save_model(model, out / f"{name}.onnx")
    ext = build_external_data()
    (out / "external_data.onnx.data").unlink(missing_ok=True)  # save appends to an existing data file
    onnx.save_model(ext, out / "external_data.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                    location="external_data.onnx.data", size_threshold=0)
    onnx.checker.check_model(str(out / "external_data.onnx"))
    models["external_data"] = ext
    return models


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate mnnscope's sample models.")
    parser.add_argument("--out", type=pathlib.Path, default=HERE, help="folder to write into (default: here)")
    out = parser.parse_args(argv).out
    out.mkdir(parents=True, exist_ok=True)
    models = save_all(out)
    failures = []
    for name in SAMPLES_THAT_CONVERT:
        ok, log = convert(out / f"{name}.onnx", out / f"{name}.mnn")
        if ok:
            pin_uuid(out / f"{name}.onnx", out / f"{name}.mnn")
        else:
            failures.append(f"{name}.onnx: conversion failed:\n{log[-2000:]}")
    ok, log = convert(out / "unsupported_op.onnx", out / "unsupported_op.mnn")
    (out / "unsupported_op.mnn").unlink(missing_ok=True)
    if ok or "These Op Not Support" not in log:
        failures.append(f"unsupported_op.onnx: expected 'These Op Not Support', got:\n{log[-2000:]}")
    for name, model in models.items():
        hist: dict[str, int] = {}
        for node in model.graph.node:
            hist[node.op_type] = hist.get(node.op_type, 0) + 1
        print(json.dumps({"sample": name, "nodes": len(model.graph.node), "ops": dict(sorted(hist.items()))}))
    total = sum(p.stat().st_size for p in out.iterdir() if p.suffix in (".onnx", ".mnn", ".data"))
    print(f"total size of samples: {total / 1024:.0f} KiB")
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
