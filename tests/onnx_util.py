"""Small ONNX models built with onnx.helper for the ONNX-import tests (no model files shipped)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def weight(name: str, shape: tuple[int, ...]):
    """A zero initializer of ``shape`` (float32)."""
    return numpy_helper.from_array(np.zeros(shape, dtype=np.float32), name)


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
    (depthwise 3x3, pad 1) -> grouped (16x2x1x1, group 4) -> pool (2x2 /2) -> add -> flatten ->
    fc (Gemm 144 -> 10, transB) -> mm (MatMul 10 -> 6)."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w_s"], ["y_s"], name="conv_s", strides=[2, 2], dilations=[2, 2], pads=[1, 0, 2, 1]),
        n("Relu", ["y_s"], ["r"], name="relu"),
        n("Conv", ["r", "w_dw"], ["y_dw"], name="dw", group=8, pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        n("Conv", ["y_dw", "w_g", "b_g"], ["y_g"], name="grouped", group=4),
        n("MaxPool", ["y_g"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        n("Add", ["p", "p"], ["a"], name="add"),
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
