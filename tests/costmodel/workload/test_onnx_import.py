"""ONNX import (costmodel.importers.onnx): each Conv / Gemm / MatMul node's Layer against a hand
calculation, the ignored nodes (and why), a CNN's adds as vector ops, and bad files naming the file
and the node. Transformer blocks and the vector-op rules: test_onnx_transformer.py."""

from __future__ import annotations

import pytest
from onnx import helper

from costmodel.zoo import load_network_file, network_file_info
from costmodel.importers.onnx import read_onnx

from onnx_util import mixed_model, model, repeated_model, save, weight


def _fields(layer) -> dict:
    keys = ("K", "C", "OY", "OX", "FY", "FX", "B", "G", "SY", "SX", "DY", "DX", "PY", "PX", "kind")
    return {k: getattr(layer, k) for k in keys}


def _base(**kw) -> dict:
    d = dict(K=1, C=1, OY=1, OX=1, FY=1, FX=1, B=1, G=1, SY=1, SX=1, DY=1, DX=1, PY=0, PX=0, kind="conv")
    d.update(kw)
    return d


def test_mixed_model_layers_by_hand(tmp_path):
    r = read_onnx(save(mixed_model(), tmp_path / "mixed.onnx"))
    layers = {l.name: l for l in r.network.layers}
    assert list(layers) == ["conv_s", "dw", "grouped", "fc", "mm"]
    # conv_s: OY = floor((15 + 1 + 2 - 2*(3-1) - 1) / 2) + 1 = 7, OX = floor((17 + 0 + 1 - 4 - 1) / 2) + 1 = 7
    assert _fields(layers["conv_s"]) == _base(K=8, C=3, OY=7, OX=7, FY=3, FX=3, SY=2, SX=2, DY=2, DX=2,
                                              PY=1.5, PX=0.5)
    # depthwise: group 8 = channels, C = 1 and K = 8 / 8 = 1 per group
    assert _fields(layers["dw"]) == _base(K=1, C=1, OY=7, OX=7, FY=3, FX=3, G=8, PY=1, PX=1, kind="dwconv")
    # grouped: 16 outputs / group 4 = K 4, 8 inputs / 4 = C 2
    assert _fields(layers["grouped"]) == _base(K=4, C=2, OY=7, OX=7, G=4)
    # fc: pool 7 -> 3, flatten 16*3*3 = 144 -> 10; mm: 10 -> 6
    assert _fields(layers["fc"]) == _base(K=10, C=144, kind="fc")
    assert _fields(layers["mm"]) == _base(K=6, C=10, kind="fc")
    assert r.network.macs == 8 * 3 * 49 * 9 + 8 * 49 * 9 + 4 * 4 * 2 * 49 + 10 * 144 + 6 * 10
    assert r.nodes == (("conv_s", "Conv"), ("dw", "Conv"), ("grouped", "Conv"), ("fc", "Gemm"), ("mm", "MatMul"))
    assert r.ignored == (("relu", "Relu"), ("pool", "MaxPool"), ("drop", "Dropout"), ("flatten", "Flatten"))
    assert r.reasons == ("no vector op for Relu", "no vector op for MaxPool") + (
        "moves, reshapes, selects or creates data: no arithmetic to cost",) * 2
    assert r.network.name == "mixed" and all(rep == 1 for rep in r.network.repeats)
    assert r.network.vector_ops == () and r.vector_nodes == ()


def test_cnn_residual_and_bias_adds_are_vector_ops(tmp_path):
    n = helper.make_node
    nodes = [n("Conv", ["x", "w1"], ["y1"], name="c1", pads=[1, 1, 1, 1]),
             n("Relu", ["y1"], ["r1"], name="relu"),
             n("Conv", ["r1", "w2"], ["y2"], name="c2", pads=[1, 1, 1, 1]),
             n("Add", ["y2", "x"], ["res"], name="residual"),
             n("Add", ["res", "bias"], ["out"], name="bias")]
    m = model(nodes, [("x", [1, 4, 6, 6])], [("out", None)],
              [weight("w1", (4, 4, 3, 3)), weight("w2", (4, 4, 3, 3)), weight("bias", (4, 1, 1))])
    r = read_onnx(save(m, tmp_path / "res.onnx"))
    assert [l.name for l in r.network.layers] == ["c1", "c2"]
    # two activations: inputs 2; an activation and a constant (broadcast over the map): inputs 1
    assert [(v.name, v.op, v.elements, v.inputs, v.rows) for v in r.network.vector_ops] == [
        ("residual", "add", 144, 2, 24), ("bias", "add", 144, 1, 24)]   # rows: 1 x 4 x 6 of the 1 x 4 x 6 x 6 map
    assert r.network.vector_repeats == (1, 1) and r.vector_nodes == (("residual", "Add"), ("bias", "Add"))
    assert r.ignored == (("relu", "Relu"),)


def test_csv_dispatch_and_unique(tmp_path):
    p = save(repeated_model(), tmp_path / "rep.onnx")
    net = load_network_file(p)
    assert [l.name for l in net.layers] == ["c1", "c2", "c3", "fc"]
    u = net.unique()
    assert [l.name for l in u.layers] == ["c1", "c2", "fc"] and u.repeats == (1, 2, 1)
    info = network_file_info(p)
    assert info["name"] == "rep" and ("gap", "GlobalAveragePool") in info["ignored"]


def test_same_upper_1d_conv_batch_and_matmul_forms(tmp_path):
    n = helper.make_node
    nodes = [n("Conv", ["x", "w"], ["y"], name="same", strides=[2, 2], auto_pad="SAME_UPPER"),
             n("Conv", ["s", "w1"], ["t"], name="c1d", strides=[3]),
             n("MatMul", ["a", "wm"], ["am"], name="mm3"),
             n("MatMul", ["q", "k"], ["qk"], name="attn"),
             n("Gemm", ["ga", "gb"], ["gy"], name="gemm_t", transA=1)]
    m = model(nodes, [("x", [2, 3, 15, 17]), ("s", [1, 4, 20]), ("a", [3, 5, 8]), ("q", [2, 4, 5, 8]),
                      ("k", [2, 4, 8, 3]), ("ga", [7, 4])],
              [("y", None), ("t", None), ("am", None), ("qk", None), ("gy", None)],
              [weight("w", (4, 3, 3, 3)), weight("w1", (6, 4, 5)), weight("wm", (8, 6)), weight("gb", (7, 9))])
    net = load_network_file(save(m, tmp_path / "forms.onnx"))
    layers = {l.name: l for l in net.layers}
    # SAME_UPPER: O = ceil(I / S) = 8, 9; total pad (O-1)*S + F - I = 2 per axis -> 1 each side; batch 2
    assert _fields(layers["same"]) == _base(K=4, C=3, OY=8, OX=9, FY=3, FX=3, SY=2, SX=2, PY=1, PX=1, B=2)
    # 1-D conv: OX = floor((20 - 5) / 3) + 1 = 6, OY = FY = 1
    assert _fields(layers["c1d"]) == _base(K=6, C=4, OX=6, FX=5, SX=3)
    # [3,5,8] x [8,6]: shared weights, every row of A in B: 15. Kind "matmul" (was "fc" before
    # issue 28 part 4): a first operand of 3 axes holds rows of tokens, a transformer's projection
    # (import rule 3); a 2-D first operand (mixed_model's mm) stays "fc"
    assert _fields(layers["mm3"]) == _base(K=6, C=8, B=15, kind="matmul")
    # [2,4,5,8] x [2,4,8,3], two activations (attention's Q K^T): 8 distinct matrices of 5 rows.
    # Before issue 28 part 4 this was G = 8, a grouped 1x1 conv; now (rule 4) it is 8 independent
    # matmuls, B = 5, G = 1, run 8 times (the repeat), its second operand the KV cache, as the
    # zoo's transformer steps count their score and context matmuls
    assert _fields(layers["attn"]) == _base(K=3, C=8, B=5, kind="matmul")
    assert layers["attn"].w_role == "kv_cache" and dict(zip(layers, net.repeats))["attn"] == 8
    assert layers["attn"].macs * 8 == 2 * 4 * 5 * 8 * 3 and layers["mm3"].w_role == "weight"
    # Gemm transA: A' = [4, 7] x B [7, 9]
    assert _fields(layers["gemm_t"]) == _base(K=9, C=7, B=4, kind="fc")


def _bad(tmp_path, nodes, inputs, outputs, inits=()):
    return save(model(nodes, inputs, outputs, inits), tmp_path / "bad.onnx")


def test_bad_files_name_file_and_node(tmp_path):
    n = helper.make_node
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"this is not an onnx file at all")
    with pytest.raises(ValueError, match=r"junk\.onnx: not an ONNX model"):
        load_network_file(junk)
    p = _bad(tmp_path, [n("Conv", ["x", "w"], ["y"], name="noweights")], [("x", [1, 3, 8, 8]), ("w", None)],
             [("y", None)])
    with pytest.raises(ValueError, match=r"bad\.onnx: node 'noweights' \(Conv\): no shape for its weights 'w'"):
        load_network_file(p)
    p = _bad(tmp_path, [n("Conv", ["x", "w"], ["y"], name="vol")], [("x", [1, 3, 8, 8, 8])], [("y", None)],
             [weight("w", (4, 3, 3, 3, 3))])
    with pytest.raises(ValueError, match=r"bad\.onnx: node 'vol' \(Conv\): a 3-D convolution"):
        load_network_file(p)
    p = _bad(tmp_path, [n("Relu", ["x"], ["y"], name="r")], [("x", [1, 3])], [("y", None)])
    with pytest.raises(ValueError, match=r"bad\.onnx: no Conv, Gemm or MatMul node"):
        load_network_file(p)
    p = _bad(tmp_path, [n("MatMul", ["a", "b"], ["y"], name="dyn")], [("a", [1, "seq", 8]), ("b", [8, 4])],
             [("y", None)])
    with pytest.raises(ValueError, match=r"node 'dyn' \(MatMul\): tensor 'a' has an unknown size"):
        load_network_file(p)
    with pytest.raises(ValueError, match=r"missing\.onnx: cannot read"):
        load_network_file(tmp_path / "missing.onnx")
