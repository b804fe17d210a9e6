"""A transformer encoder as torch.onnx.export(dynamo=True) writes it, built with onnx.helper (no torch here).

What makes it a dynamo export: node names without scopes ("node_MatMul_3"), and on every node the metadata
the exporter records (torch/onnx/_internal/exporter/_core.py, _set_node_metadata): `namespace`
(": __main__.Model/encoder: __main__.Encoder/.../linear_3: aten.linear.default"),
`pkg.torch.onnx.class_hierarchy` and `pkg.torch.onnx.name_scopes` (repr() of the cumulative module paths, the
fx node's name last). `view="const"` writes the attention heads' Reshape with a constant [0, -1, H, D/H] (as
the TorchScript exporter and many hand-edited models do: shape inference invents a dim for the -1);
`view="shape"` computes it from Shape -> Slice -> Concat at run time (as dynamo exports do).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

D, HEADS = 32, 4
KEYS = ("namespace", "pkg.torch.onnx.class_hierarchy", "pkg.torch.onnx.name_scopes")


def dynamo_encoder(layers: int = 2, keys=KEYS, view: str = "const", slash_names: bool = False) -> onnx.ModelProto:
    """x[batch, seq, 32] -> `layers` encoder layers (self_attn, norm1, mlp, norm2) -> y; `keys`: the metadata
    written on each node (() for none); `slash_names`: TorchScript-style "/encoder/layers.0/..." node names."""
    nodes, inits, count = [], [], {}

    def const(name, values, dtype=np.int64):
        inits.append(numpy_helper.from_array(np.asarray(values, dtype), name))
        return name

    def weight(name, shape):
        rng = np.random.default_rng(len(inits))
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name))
        return name

    def op(kind, ins, outs, stack, fx, **attrs):
        k = count.get(kind, 0)
        count[kind] = k + 1
        name = f"node_{kind}_{k}" if k else f"node_{kind}"
        if slash_names:
            name = "/" + "/".join(p.rsplit(".", 1)[-1] if not p.rsplit(".", 1)[-1].isdigit()
                                  else ".".join(p.rsplit(".", 2)[-2:]) for p, _ in stack) + f"/{kind}_{k}"
        n = helper.make_node(kind, ins, outs, name=name, **attrs)
        props = {
            "namespace": "/".join([": __main__.Model"] + [f"{p}: {c}" for p, c in stack]
                                  + [f"{fx}: aten.{fx.rstrip('_0123456789')}.default"]),
            "pkg.torch.onnx.class_hierarchy": repr(["__main__.Model"] + [c for _, c in stack] + [f"aten.{fx}"]),
            "pkg.torch.onnx.name_scopes": repr([""] + [p for p, _ in stack] + [fx]),
        }
        for key in keys:
            n.metadata_props.add(key=key, value=props[key])
        nodes.append(n)
        return outs[0]

    def linear(x, stack, attr, din, dout, fx):
        st = stack + [(f"{stack[-1][0]}.{attr}", "torch.nn.modules.linear.Linear")]
        y = op("MatMul", [x, weight(f"{st[-1][0]}.weight", [din, dout])], [f"{fx}_mm"], st, fx)
        return op("Add", [y, weight(f"{st[-1][0]}.bias", [dout])], [fx], st, fx)

    x = "x"
    for L in range(layers):
        layer = [("encoder", "__main__.Encoder"), (f"encoder.layers.{L}", "__main__.Layer")]
        attn = layer + [(f"encoder.layers.{L}.self_attn", "__main__.Attention")]
        p = f"l{L}_"
        q, k, v = (linear(x, attn, f"{n}_proj", D, D, p + f"linear_{i}") for i, n in enumerate("qkv"))
        if view == "shape":
            shape = op("Shape", [x], [p + "sym_size"], attn, p + "sym_size")
            lead = op("Slice", [shape, const(p + "i0", [0]), const(p + "i2", [2])], [p + "bs"], attn, p + "view")
            heads_shape = op("Concat", [lead, const(p + "hd", [HEADS, D // HEADS])], [p + "heads_shape"], attn,
                             p + "view", axis=0)
        else:
            heads_shape = const(p + "heads_shape", [0, -1, HEADS, D // HEADS])
        q, k, v = (op("Transpose", [op("Reshape", [t, heads_shape], [p + n + "_h"], attn, p + "view_" + n)],
                      [p + n + "_t"], attn, p + "transpose_" + n, perm=[0, 2, 1, 3]) for t, n in zip((q, k, v), "qkv"))
        kt = op("Transpose", [k], [p + "kT"], attn, p + "transpose", perm=[0, 1, 3, 2])
        a = op("Softmax", [op("MatMul", [q, kt], [p + "scores"], attn, p + "matmul")], [p + "attn"], attn,
               p + "softmax", axis=-1)
        o = op("Transpose", [op("MatMul", [a, v], [p + "ctx"], attn, p + "matmul_1")], [p + "ctx_t"], attn,
               p + "transpose_1", perm=[0, 2, 1, 3])
        o = op("Reshape", [o, const(p + "flat", [0, -1, D])], [p + "ctx_r"], attn, p + "view_o")
        o = linear(o, attn, "o_proj", D, D, p + "linear_3")
        x1 = op("Add", [x, o], [p + "add"], layer, p + "add")  # the residual stream
        norm1 = layer + [(f"encoder.layers.{L}.norm1", "torch.nn.modules.normalization.LayerNorm")]
        n1 = op("LayerNormalization", [x1, weight(f"encoder.layers.{L}.norm1.weight", [D]),
                                       weight(f"encoder.layers.{L}.norm1.bias", [D])], [p + "ln1"], norm1,
                p + "layer_norm", axis=-1)
        mlp = layer + [(f"encoder.layers.{L}.mlp", "__main__.MLP")]
        h = op("Relu", [linear(n1, mlp, "fc1", D, 4 * D, p + "linear_4")], [p + "relu"], mlp, p + "relu")
        x2 = op("Add", [n1, linear(h, mlp, "fc2", 4 * D, D, p + "linear_5")], [p + "add_1"], layer, p + "add_1")
        norm2 = layer + [(f"encoder.layers.{L}.norm2", "torch.nn.modules.normalization.LayerNorm")]
        x = op("LayerNormalization", [x2, weight(f"encoder.layers.{L}.norm2.weight", [D]),
                                      weight(f"encoder.layers.{L}.norm2.bias", [D])],
               ["y" if L == layers - 1 else p + "ln2"], norm2, p + "layer_norm_1", axis=-1)
    # y as a file saved after an earlier shape inference stores it: with the dim that inference invented
    g = helper.make_graph(nodes, "main_graph",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", D])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "unk__35", D])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], producer_name="pytorch",
                          producer_version="2.9.0")
    m.ir_version = 10
    return m
