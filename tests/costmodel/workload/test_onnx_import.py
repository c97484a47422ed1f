"""ONNX import (costmodel.importers.onnx): each Conv / Gemm / MatMul node's Layer against a hand
calculation, the ignored nodes, and bad files naming the file and the node."""

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
    assert r.ignored == (("relu", "Relu"), ("pool", "MaxPool"), ("add", "Add"), ("flatten", "Flatten"))
    assert r.network.name == "mixed" and all(rep == 1 for rep in r.network.repeats)


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
    layers = {l.name: l for l in load_network_file(save(m, tmp_path / "forms.onnx")).layers}
    # SAME_UPPER: O = ceil(I / S) = 8, 9; total pad (O-1)*S + F - I = 2 per axis -> 1 each side; batch 2
    assert _fields(layers["same"]) == _base(K=4, C=3, OY=8, OX=9, FY=3, FX=3, SY=2, SX=2, PY=1, PX=1, B=2)
    # 1-D conv: OX = floor((20 - 5) / 3) + 1 = 6, OY = FY = 1
    assert _fields(layers["c1d"]) == _base(K=6, C=4, OX=6, FX=5, SX=3)
    # [3,5,8] x [8,6]: shared weights, every row of A in B: 15
    assert _fields(layers["mm3"]) == _base(K=6, C=8, B=15, kind="fc")
    # [2,4,5,8] x [2,4,8,3]: 8 distinct matrices -> G 8, 5 rows each
    assert _fields(layers["attn"]) == _base(K=3, C=8, B=5, G=8)
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
