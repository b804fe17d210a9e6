"""Generate a deep Llama-like ONNX decoder with a chosen node count, for large-graph benchmarks.

    .venv/bin/python benchmarks/gen_large.py --nodes 20000 -o /tmp/decoder_20k.onnx

Each layer is what torch.onnx writes for a Llama decoder layer without rotary embeddings: RMSNorm
(Pow/ReduceMean/Add/Sqrt/Div/Mul), attention (q/k/v MatMul, Reshape/Transpose into heads, MatMul,
Div, causal mask Add, Softmax, MatMul, Transpose/Reshape back, o_proj, residual Add), RMSNorm and a
SwiGLU MLP. Names follow the exporter ("/model/layers.K/self_attn/q_proj/MatMul"). The hidden size
is tiny and the constants are shared, so a 100k-node model stays a few MB. Layers are stacked until
the count is within one layer of the target; the rest is made up by Identity nodes before the
final norm, so the node count is exact.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN, HEADS, HEAD_DIM, INTER, VOCAB, SEQ = 8, 2, 4, 16, 32, 16
NODES_PER_LAYER = 37
NODES_OUTSIDE_LAYERS = 8  # embedding Gather, final RMSNorm (6), lm_head MatMul


def _count_layers(n_nodes: int) -> tuple[int, int]:
    """Return (layers, identity padding) so that the graph has exactly n_nodes nodes."""
    layers, pad = divmod(n_nodes - NODES_OUTSIDE_LAYERS, NODES_PER_LAYER)
    if layers < 1:
        raise ValueError(f"--nodes must be at least {NODES_OUTSIDE_LAYERS + NODES_PER_LAYER}, got {n_nodes}")
    return layers, pad


def make_decoder(n_nodes: int, seed: int = 0) -> onnx.ModelProto:
    """Build a Llama-like decoder ModelProto with exactly n_nodes nodes (at least 45)."""
    n_layers, pad = _count_layers(n_nodes)
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def op(op_type: str, inputs: list[str], name: str, output: str | None = None, **attrs) -> str:
        out = output or f"{name}_output_0"
        nodes.append(helper.make_node(op_type, inputs, [out], name=name, **attrs))
        return out

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value, name))
        return name

    def weight(name: str, shape: tuple[int, int]) -> str:
        return const(name, (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32))

    two = const("/model/Constant_pow", np.array(2.0, np.float32))
    eps = const("/model/Constant_eps", np.array(1e-6, np.float32))
    scale = const("/model/Constant_scale", np.array(np.sqrt(HEAD_DIM), np.float32))
    split = const("/model/Constant_heads", np.array([1, SEQ, HEADS, HEAD_DIM], np.int64))
    merge = const("/model/Constant_merge", np.array([1, SEQ, HIDDEN], np.int64))
    mask = const("/model/causal_mask", np.triu(np.full((1, 1, SEQ, SEQ), -1e9, np.float32), k=1))
    # One norm weight shared by every RMSNorm keeps the file small; the graph structure is what matters.
    norm_w = const("model.norm_weight_shared", np.ones(HIDDEN, np.float32))

    def rms_norm(x: str, scope: str) -> str:
        p = op("Pow", [x, two], f"{scope}/Pow")
        m = op("ReduceMean", [p], f"{scope}/ReduceMean", axes=[-1], keepdims=1)
        r = op("Sqrt", [op("Add", [m, eps], f"{scope}/Add")], f"{scope}/Sqrt")
        return op("Mul", [norm_w, op("Div", [x, r], f"{scope}/Div")], f"{scope}/Mul")

    x = op("Gather", [weight("model.embed_tokens.weight", (VOCAB, HIDDEN)), "input_ids"],
           "/model/embed_tokens/Gather", axis=0)
    for k in range(n_layers):
        s, w = f"/model/layers.{k}", f"model.layers.{k}"
        h = rms_norm(x, f"{s}/input_layernorm")
        heads = []
        for n, (p, perm) in enumerate((("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3]))):
            t = op("MatMul", [h, weight(f"{w}.self_attn.{p}_proj.weight", (HIDDEN, HIDDEN))],
                   f"{s}/self_attn/{p}_proj/MatMul")
            sfx = f"_{n}" if n else ""
            t = op("Reshape", [t, split], f"{s}/self_attn/Reshape{sfx}")
            heads.append(op("Transpose", [t], f"{s}/self_attn/Transpose{sfx}", perm=perm))
        a = op("MatMul", heads[:2], f"{s}/self_attn/MatMul")
        a = op("Div", [a, scale], f"{s}/self_attn/Div")
        a = op("Add", [a, mask], f"{s}/self_attn/Add")
        a = op("Softmax", [a], f"{s}/self_attn/Softmax", axis=-1)
        a = op("MatMul", [a, heads[2]], f"{s}/self_attn/MatMul_1")
        a = op("Transpose", [a], f"{s}/self_attn/Transpose_3", perm=[0, 2, 1, 3])
        a = op("Reshape", [a, merge], f"{s}/self_attn/Reshape_3")
        a = op("MatMul", [a, weight(f"{w}.self_attn.o_proj.weight", (HIDDEN, HIDDEN))], f"{s}/self_attn/o_proj/MatMul")
        x = op("Add", [x, a], f"{s}/Add")
        h = rms_norm(x, f"{s}/post_attention_layernorm")
        g = op("MatMul", [h, weight(f"{w}.mlp.gate_proj.weight", (HIDDEN, INTER))], f"{s}/mlp/gate_proj/MatMul")
        g = op("Mul", [g, op("Sigmoid", [g], f"{s}/mlp/act_fn/Sigmoid")], f"{s}/mlp/act_fn/Mul")
        u = op("MatMul", [h, weight(f"{w}.mlp.up_proj.weight", (HIDDEN, INTER))], f"{s}/mlp/up_proj/MatMul")
        d = op("MatMul", [op("Mul", [g, u], f"{s}/mlp/Mul"), weight(f"{w}.mlp.down_proj.weight", (INTER, HIDDEN))],
               f"{s}/mlp/down_proj/MatMul")
        x = op("Add", [x, d], f"{s}/Add_1")
    for i in range(pad):
        x = op("Identity", [x], f"/model/norm/Identity_{i}")
    x = rms_norm(x, "/model/norm")
    op("MatMul", [x, weight("lm_head.weight", (HIDDEN, VOCAB))], "/lm_head/MatMul", output="logits")

    graph = helper.make_graph(
        nodes, f"decoder_{n_layers}_layers",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, SEQ])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, SEQ, VOCAB])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="mnnscope-gen_large", producer_version="1")
    model.ir_version = 9
    return model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, required=True, help="exact number of ONNX nodes (>= 45)")
    parser.add_argument("-o", "--output", required=True, help="path of the .onnx file to write")
    parser.add_argument("--no-check", action="store_true", help="skip onnx.checker.check_model")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        model = make_decoder(args.nodes)
    except ValueError as exc:
        parser.error(str(exc))
    if not args.no_check:
        onnx.checker.check_model(model)
    onnx.save_model(model, args.output)
    size = os.path.getsize(args.output)
    print(f"{args.output}: {len(model.graph.node)} nodes, {size / 1e6:.2f} MB, "
          f"{time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
