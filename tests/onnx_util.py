"""Small ONNX models built with onnx.helper for the ONNX-import tests (no model files shipped).

The transformer blocks (`bert_block`, `llama_block`) have their real shapes but no weight data:
their weights and biases are initializers stored as external data in a file that is never
written (`external_weight`), which the importer never reads, so a BERT-base block is a few kB."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def weight(name: str, shape: tuple[int, ...]):
    """A zero initializer of ``shape`` (float32)."""
    return numpy_helper.from_array(np.zeros(shape, dtype=np.float32), name)


def external_weight(name: str, shape: tuple[int, ...]):
    """A float32 initializer of ``shape`` whose data are external, in a file that does not exist."""
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(shape),
                    data_location=TensorProto.EXTERNAL)
    for key, value in (("location", "absent_weights.bin"), ("offset", "0"), ("length", str(4 * math.prod(shape)))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


def model(nodes, inputs, outputs, inits=(), value_info=(), opset: int = 17) -> onnx.ModelProto:
    """A model of ``nodes``; ``inputs``/``outputs``: (name, shape or None) pairs."""
    def vi(name: str, shape):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)

    graph = helper.make_graph(list(nodes), "g", [vi(n, s) for n, s in inputs], [vi(n, s) for n, s in outputs],
                              initializer=list(inits), value_info=[vi(n, s) for n, s in value_info])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def save(m: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(m.SerializeToString())
    return path


def mixed_model() -> onnx.ModelProto:
    """X[1,3,15,17] -> conv_s (8x3x3x3, stride 2, dilation 2, pads (1,0,2,1)) -> relu -> dw
    (depthwise 3x3, pad 1) -> grouped (16x2x1x1, group 4) -> pool (2x2 /2) -> drop (Dropout:
    identity at inference; it was an Add of p to itself until Adds became vector ops) -> flatten ->
    fc (Gemm 144 -> 10, transB) -> mm (MatMul 10 -> 6)."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w_s"], ["y_s"], name="conv_s", strides=[2, 2], dilations=[2, 2], pads=[1, 0, 2, 1]),
        n("Relu", ["y_s"], ["r"], name="relu"),
        n("Conv", ["r", "w_dw"], ["y_dw"], name="dw", group=8, pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        n("Conv", ["y_dw", "w_g", "b_g"], ["y_g"], name="grouped", group=4),
        n("MaxPool", ["y_g"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        n("Dropout", ["p"], ["a"], name="drop"),
        n("Flatten", ["a"], ["f"], name="flatten"),
        n("Gemm", ["f", "w_fc", "b_fc"], ["z"], name="fc", transB=1),
        n("MatMul", ["z", "w_mm"], ["out"], name="mm"),
    ]
    inits = [weight("w_s", (8, 3, 3, 3)), weight("w_dw", (8, 1, 3, 3)), weight("w_g", (16, 2, 1, 1)),
             weight("b_g", (16,)), weight("w_fc", (10, 144)), weight("b_fc", (10,)), weight("w_mm", (10, 6))]
    return model(nodes, [("x", [1, 3, 15, 17])], [("out", [1, 6])], inits)


def repeated_model() -> onnx.ModelProto:
    """Three tiny convs, two of the same shape, and a Gemm: 3 unique layers, repeats (1, 2, 1)."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1"], ["y1"], name="c1", pads=[1, 1, 1, 1]),
        n("Relu", ["y1"], ["r1"], name="relu1"),
        n("Conv", ["r1", "w2"], ["y2"], name="c2", pads=[1, 1, 1, 1]),
        n("Conv", ["y2", "w3"], ["y3"], name="c3", pads=[1, 1, 1, 1]),
        n("GlobalAveragePool", ["y3"], ["g"], name="gap"),
        n("Flatten", ["g"], ["f"], name="flat"),
        n("Gemm", ["f", "w_fc"], ["out"], name="fc", transB=1),
    ]
    inits = [weight("w1", (4, 2, 3, 3)), weight("w2", (4, 4, 3, 3)), weight("w3", (4, 4, 3, 3)),
             weight("w_fc", (5, 4))]
    return model(nodes, [("x", [1, 2, 6, 6])], [("out", [1, 5])], inits)


class _Block:
    """Builds a graph node by node; each node's one output is named after the node."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.inits: list = []

    def op(self, op_type: str, inputs: list[str], name: str, domain: str = "", **attrs) -> str:
        self.nodes.append(helper.make_node(op_type, inputs, [name], name=name, domain=domain or None, **attrs))
        return name

    def weight(self, name: str, shape: tuple[int, ...]) -> str:
        self.inits.append(external_weight(name, shape))
        return name

    def const(self, name: str, value, dtype=np.float32) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def linear(self, x: str, name: str, c: int, k: int, bias: bool) -> str:
        """x @ W[c, k] (node ``name``), + b[k] (node ``<name>_bias``) when ``bias``."""
        y = self.op("MatMul", [x, self.weight(f"{name}.weight", (c, k))], name)
        return self.op("Add", [y, self.weight(f"{name}.bias", (k,))], f"{name}_bias") if bias else y

    def split_heads(self, x: str, name: str, seq: int, heads: int, hd: int, perm: list[int]) -> str:
        """[1, seq, heads*hd] -> [1, seq, heads, hd] -> transposed by ``perm``."""
        r = self.op("Reshape", [x, self.const(f"{name}_shape", [1, seq, heads, hd], np.int64)], f"{name}_split")
        return self.op("Transpose", [r], f"{name}_heads", perm=perm)

    def merge_heads(self, x: str, name: str, seq: int, width: int) -> str:
        """[1, heads, seq, hd] -> [1, seq, heads*hd]."""
        t = self.op("Transpose", [x], f"{name}_t", perm=[0, 2, 1, 3])
        return self.op("Reshape", [t, self.const(f"{name}_shape", [1, seq, width], np.int64)], f"{name}_merge")

    def gelu_erf(self, x: str, name: str) -> str:
        """GELU as torch.onnx exports nn.GELU: ((x * (1 + erf(x / sqrt 2))) * 0.5; the last node ``name``."""
        d = self.op("Div", [x, self.const(f"{name}_sqrt2", math.sqrt(2.0))], f"{name}_div")
        e = self.op("Erf", [d], f"{name}_erf")
        a = self.op("Add", [e, self.const(f"{name}_one", 1.0)], f"{name}_add")
        m = self.op("Mul", [x, a], f"{name}_mul")
        return self.op("Mul", [m, self.const(f"{name}_half", 0.5)], name)

    def model(self, inputs, outputs, value_info=(), opset: int = 17) -> onnx.ModelProto:
        return model(self.nodes, inputs, outputs, self.inits, value_info, opset)


def bert_block(seq: int = 128, hidden: int = 768, heads: int = 12, ffn: int = 3072) -> onnx.ModelProto:
    """One BERT-base encoder block (post-LN, biases, GELU as erf, batch 1) as Hugging Face's BERT
    exports it, nodes named after the zoo's layers and vector ops (`costmodel.transformer`):
    q_proj, k_proj, v_proj (+ ``*_bias`` Adds), heads split, score = Q K^T, score_scale (Div by
    sqrt(head_dim)), mask_add (+ the additive padding mask, a graph input), softmax, context = P V,
    heads merged, o_proj, attn_residual, attn_norm, ffn_up, act (GELU), ffn_down, ffn_residual,
    ffn_norm. Inputs x [1, seq, hidden] and mask [1, 1, 1, seq]."""
    b, hd = _Block(), hidden // heads
    q, k, v = (b.linear("x", f"{n}_proj", hidden, hidden, bias=True) for n in "qkv")
    qh = b.split_heads(q, "q", seq, heads, hd, [0, 2, 1, 3])
    kt = b.split_heads(k, "k", seq, heads, hd, [0, 2, 3, 1])
    vh = b.split_heads(v, "v", seq, heads, hd, [0, 2, 1, 3])
    s = b.op("MatMul", [qh, kt], "score")
    s = b.op("Div", [s, b.const("scale", math.sqrt(hd))], "score_scale")
    s = b.op("Add", [s, "mask"], "mask_add")
    p = b.op("Softmax", [s], "softmax", axis=-1)
    c = b.merge_heads(b.op("MatMul", [p, vh], "context"), "context", seq, hidden)
    r = b.op("Add", [b.linear(c, "o_proj", hidden, hidden, bias=True), "x"], "attn_residual")
    n1 = b.op("LayerNormalization", [r, b.weight("attn_norm.g", (hidden,)), b.weight("attn_norm.b", (hidden,))],
              "attn_norm", axis=-1, epsilon=1e-12)
    a = b.gelu_erf(b.linear(n1, "ffn_up", hidden, ffn, bias=True), "act")
    r2 = b.op("Add", [b.linear(a, "ffn_down", ffn, hidden, bias=True), n1], "ffn_residual")
    b.op("LayerNormalization", [r2, b.weight("ffn_norm.g", (hidden,)), b.weight("ffn_norm.b", (hidden,))],
         "ffn_norm", axis=-1, epsilon=1e-12)
    return b.model([("x", [1, seq, hidden]), ("mask", [1, 1, 1, seq])], [("ffn_norm", [1, seq, hidden])])


def llama_block(norm: str = "RMSNormalization", seq: int = 8, hidden: int = 64, heads: int = 4,
                kv_heads: int = 2, ffn: int = 128) -> onnx.ModelProto:
    """A tiny LLaMA-style block (pre-norm, no biases, no RoPE, GQA with K/V expanded to every
    query head as Hugging Face's repeat_kv does, SwiGLU FFN with SiLU as Mul(x, Sigmoid(x)), a
    constant causal mask, batch 1). ``norm``: ``RMSNormalization`` (opset 23) or ONNX Runtime's
    ``SimplifiedLayerNormalization`` (opset 17; onnx cannot infer its output, so value_info gives
    it). Nodes: attn_norm, q_proj, k_proj, v_proj, score, score_scale (Mul by 1/sqrt(head_dim)),
    mask_add, softmax, context, o_proj, attn_residual, ffn_norm, ffn_gate, ffn_up, act_sigmoid +
    act (SiLU), gate_mul, ffn_down, ffn_residual."""
    b, hd, group = _Block(), hidden // heads, heads // kv_heads
    opset = 23 if norm == "RMSNormalization" else 17
    n1 = b.op(norm, ["x", b.weight("attn_norm.g", (hidden,))], "attn_norm", axis=-1, epsilon=1e-5)
    q = b.linear(n1, "q_proj", hidden, heads * hd, bias=False)
    k = b.linear(n1, "k_proj", hidden, kv_heads * hd, bias=False)
    v = b.linear(n1, "v_proj", hidden, kv_heads * hd, bias=False)
    qh = b.split_heads(q, "q", seq, heads, hd, [0, 2, 1, 3])

    def repeat_kv(x: str, name: str, tail: list[int]) -> str:   # [1, kv, a, c] -> [1, kv * group, a, c]
        u = b.op("Unsqueeze", [x, b.const(f"{name}_axis", [2], np.int64)], f"{name}_unsq")
        e = b.op("Expand", [u, b.const(f"{name}_to", [1, kv_heads, group] + tail, np.int64)], f"{name}_expand")
        return b.op("Reshape", [e, b.const(f"{name}_rep_shape", [1, heads] + tail, np.int64)], f"{name}_rep")

    kt = repeat_kv(b.split_heads(k, "k", seq, kv_heads, hd, [0, 2, 3, 1]), "k", [hd, seq])
    vh = repeat_kv(b.split_heads(v, "v", seq, kv_heads, hd, [0, 2, 1, 3]), "v", [seq, hd])
    s = b.op("Mul", [b.op("MatMul", [qh, kt], "score"), b.const("scale", 1 / math.sqrt(hd))], "score_scale")
    causal = np.triu(np.full((seq, seq), -1e4, dtype=np.float32), 1)
    p = b.op("Softmax", [b.op("Add", [s, b.const("causal", causal)], "mask_add")], "softmax", axis=-1)
    c = b.merge_heads(b.op("MatMul", [p, vh], "context"), "context", seq, hidden)
    r = b.op("Add", [b.linear(c, "o_proj", heads * hd, hidden, bias=False), "x"], "attn_residual")
    n2 = b.op(norm, [r, b.weight("ffn_norm.g", (hidden,))], "ffn_norm", axis=-1, epsilon=1e-5)
    gate = b.linear(n2, "ffn_gate", hidden, ffn, bias=False)
    act = b.op("Mul", [gate, b.op("Sigmoid", [gate], "act_sigmoid")], "act")
    h = b.op("Mul", [act, b.linear(n2, "ffn_up", hidden, ffn, bias=False)], "gate_mul")
    b.op("Add", [b.linear(h, "ffn_down", ffn, hidden, bias=False), r], "ffn_residual")
    vi = [("attn_norm", [1, seq, hidden]), ("ffn_norm", [1, seq, hidden])] if opset == 17 else []
    return b.model([("x", [1, seq, hidden])], [("ffn_residual", [1, seq, hidden])], vi, opset)
