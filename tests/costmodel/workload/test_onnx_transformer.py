"""Transformer blocks exported to ONNX (costmodel.importers.onnx, issue 28 part 4): a BERT-base
encoder block imports with the layers, roles and vector operations of the zoo's BERT-base step
of the same shapes (`costmodel.transformer`), one block's worth; a tiny LLaMA-style block gives
rmsnorm, silu and the gate mul; the fused GELU / SiLU patterns and the nodes left out, with why;
and `sweep list networks --file` on the BERT block."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from onnx import helper
from typer.testing import CliRunner

from costmodel.importers.onnx import read_onnx
from costmodel.workload import Network
from costmodel.transformer import build_transformer, transformer_config
from sweep.cli import app

from onnx_util import bert_block, llama_block, model, save, weight

BLOCK_LAYERS = ("q_proj", "k_proj", "v_proj", "score", "context", "o_proj", "ffn_up", "ffn_down")
#: The zoo's per-block vector ops of BERT-base; its biases are one op, ``bias_add``, where the ONNX
#: block has one Add per projection (``<layer>_bias``): compared as a sum below.
ZOO_BLOCK_OPS = {"attn_norm", "softmax", "attn_residual", "ffn_norm", "act", "ffn_residual", "bias_add"}
#: Zoo block ops that an ONNX block cannot have: none (every one has its node in bert_block).
ZOO_ONLY: tuple[str, ...] = ()
#: ONNX nodes the zoo does not count as vector ops of their own: the score scale is one of the
#: zoo's softmax multiplies per element (`costmodel.vector.OP_PRIMITIVES`, so an exported scale node
#: counts it a second time: the ONNX import costs what the file says); the padding mask is listed
#: in the zoo's ``workload["not_costed"]`` (assumed folded into softmax).
ONNX_ONLY = {"score_scale": ("mul", 1, None), "mask_add": ("add", 2, "attention mask")}


def _shape(layer) -> tuple:
    return (layer.B, layer.K, layer.C, layer.G, layer.kind, layer.w_role, layer.o_role)


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    path = save(bert_block(), tmp_path_factory.mktemp("onnx") / "bert_block.onnx")
    # the exported graph runs every operation through memory: the zoo's unfused step (the default
    # step's fused attention tiles have no ONNX nodes of their own)
    zoo = build_transformer("bert_base", phase="prefill", batch=1, seq=128, fusion="unfused")
    return path, read_onnx(path), zoo, transformer_config("bert_base").layers


def test_bert_block_file_is_small(bert):
    # the weights (7.1 M parameters) are external data that never exist: the file holds shapes only
    path, r, _, _ = bert
    assert path.stat().st_size < 10_000
    assert sum(l.weight_count for l, _ in r.network if l.w_role == "weight") == 4 * 768 * 768 + 2 * 768 * 3072


def test_bert_block_layers_equal_the_zoo_block(bert):
    _, r, zoo, n_layers = bert
    assert n_layers == 12
    zoo_block = [(l, rep) for l, rep in zoo if l.name in BLOCK_LAYERS]
    assert [l.name for l, _ in zoo_block] == list(BLOCK_LAYERS)
    assert all(rep % n_layers == 0 for _, rep in zoo_block)
    # layer by layer (the ONNX nodes carry the zoo's names): shapes, roles, and the zoo's repeat
    # over its 12 blocks; score / context repeat batch x heads = 12 times in both. k_proj / v_proj
    # have o_role kv_cache in the import too: their outputs reach attention's second operands
    # through bias Adds, Reshapes and Transposes only (import rule 5), so nothing is guessed
    onnx_layers = {l.name: (l, rep) for l, rep in r.network}
    assert list(onnx_layers) == list(BLOCK_LAYERS)
    for l, rep in zoo_block:
        got, got_rep = onnx_layers[l.name]
        assert (_shape(got), got_rep) == (_shape(l), rep // n_layers), l.name
    # and merged by Network.unique: the same unique layers with the same repeats per block
    zoo_unique = Network("zoo block", tuple(l for l, _ in zoo_block), tuple(rep for _, rep in zoo_block)).unique()
    assert sorted((_shape(l), rep) for l, rep in r.network.unique()) == \
        sorted((_shape(l), rep // n_layers) for l, rep in zoo_unique)
    assert r.network.macs * n_layers == sum(l.macs * rep for l, rep in zoo_block)
    assert [op for _, op in r.nodes] == ["MatMul"] * 8


def test_bert_block_vector_ops_equal_the_zoo_block(bert):
    _, r, zoo, n_layers = bert
    zoo_ops = {v.name: v for v, rep in zip(zoo.vector_ops, zoo.vector_repeats) if rep == n_layers}
    assert set(zoo_ops) == ZOO_BLOCK_OPS and not ZOO_ONLY
    ops = {v.name: v for v in r.network.vector_ops}
    for name, (op, inputs, not_costed) in ONNX_ONLY.items():
        assert (ops[name].op, ops[name].inputs) == (op, inputs)
        if not_costed is None:  # the zoo's softmax counts the scale: 2 multiplies per element
            from costmodel.vector import OP_PRIMITIVES
            assert OP_PRIMITIVES["softmax"].mul == 2
            continue
        assert any(not_costed in line for line in zoo.workload["not_costed"])
    biases = {n: v for n, v in ops.items() if n.endswith("_bias")}
    assert sorted(biases) == sorted(f"{n}_bias" for n in BLOCK_LAYERS if n.endswith(("proj", "up", "down")))
    assert all((v.op, v.inputs) == ("add", 1) for v in biases.values())
    assert sum(v.elements for v in biases.values()) == zoo_ops["bias_add"].elements
    for name, z in zoo_ops.items():
        if name != "bias_add":
            v = ops[name]
            assert (v.op, v.elements, v.inputs, v.rows) == (z.op, z.elements, z.inputs, z.rows), name
    assert set(ops) == set(zoo_ops) - {"bias_add"} | set(biases) | set(ONNX_ONLY)
    # graph order, and what each came from (the GELU's five nodes as one op)
    assert [n for n, _ in r.vector_nodes] == [v.name for v in r.network.vector_ops]
    assert dict(r.vector_nodes)["act"] == "Div+Erf+Add+Mul+Mul"
    assert dict(r.vector_nodes)["attn_norm"] == "LayerNormalization"


def test_bert_block_ignores_only_data_moves(bert):
    _, r, _, _ = bert
    assert {op for _, op in r.ignored} == {"Reshape", "Transpose"}
    assert not {"Softmax", "LayerNormalization", "Gelu", "Add", "Mul", "Div", "Erf"} & {op for _, op in r.ignored}
    assert len(r.reasons) == len(r.ignored) and all("moves" in why for why in r.reasons)
    # every node is a layer, a vector op, a node of the fused GELU, or ignored
    assert len(r.nodes) + len(r.vector_nodes) + 4 + len(r.ignored) == len(bert_block().graph.node)


@pytest.mark.parametrize("norm", ["RMSNormalization", "SimplifiedLayerNormalization"])
def test_llama_block_rmsnorm_silu_gate_mul(tmp_path, norm):
    r = read_onnx(save(llama_block(norm), tmp_path / "llama.onnx"))
    T, h, ffn, heads, kv, hd = 8, 64, 128, 4, 2, 16
    assert [(v.name, v.op, v.elements, v.inputs, v.rows) for v in r.network.vector_ops] == [
        ("attn_norm", "rmsnorm", T * h, 1, T),
        # element-wise ops: a row per index of every dim but the last (heads x T scores, T tokens)
        ("score_scale", "mul", heads * T * T, 1, heads * T),   # the zoo folds it into softmax (not_costed)
        ("mask_add", "add", heads * T * T, 1, heads * T),      # a constant causal mask: one input tensor
        ("softmax", "softmax", heads * T * T, 1, heads * T),
        ("attn_residual", "add", T * h, 2, T),
        ("ffn_norm", "rmsnorm", T * h, 1, T),
        ("act", "silu", T * ffn, 1, T),
        ("gate_mul", "mul", T * ffn, 2, T),
        ("ffn_residual", "add", T * h, 2, T)]
    assert dict(r.vector_nodes)["act"] == "Sigmoid+Mul" and dict(r.vector_nodes)["attn_norm"] == norm
    assert "Sigmoid" not in {op for _, op in r.ignored} and "act_sigmoid" not in dict(r.vector_nodes)
    layers = {l.name: (l, rep) for l, rep in r.network}
    assert layers["k_proj"][0].o_role == layers["v_proj"][0].o_role == "kv_cache"   # through Expand too
    assert layers["q_proj"][0].o_role == "activation"
    # GQA: K and V are expanded to every query head before the MatMuls, so score / context are
    # q_len rows repeated batch x heads, where the zoo has group x q_len rows repeated batch x
    # kv_heads: the same MACs, batch x heads x q_len x attended x head_dim each
    score, rep = layers["score"]
    assert (score.B, score.C, score.K, score.G, rep, score.w_role) == (T, hd, T, 1, heads, "kv_cache")
    context, rep = layers["context"]
    assert (context.B, context.C, context.K, rep) == (T, T, hd, heads)
    assert score.macs * rep == context.macs * rep == 1 * heads * T * T * hd
    assert kv * (heads // kv) == heads


def _vector_import(tmp_path, nodes, inputs, inits=(), opset=17):
    out = nodes[-1].output[0]
    return read_onnx(save(model(nodes, inputs, [(out, None)], inits, opset=opset), tmp_path / "v.onnx"))


def _const(name, value):
    from onnx import numpy_helper
    return numpy_helper.from_array(np.asarray(value, dtype=np.float32), name)


def test_gelu_forms_and_a_near_miss(tmp_path):
    n = helper.make_node
    mm = n("MatMul", ["x", "w"], ["u"], name="up")
    # Hugging Face's gelu(): x * 0.5 * (1 + erf(x / sqrt 2)), the 0.5 on x first
    hf = [mm, n("Mul", ["u", "half"], ["h"], name="half_x"), n("Div", ["u", "sqrt2"], ["d"], name="div"),
          n("Erf", ["d"], ["e"], name="erf"), n("Add", ["e", "one"], ["a"], name="add1"),
          n("Mul", ["h", "a"], ["y"], name="gelu")]
    inits = [weight("w", (4, 6)), _const("half", 0.5), _const("sqrt2", math.sqrt(2)), _const("one", 1.0)]
    r = _vector_import(tmp_path, hf, [("x", [1, 3, 4])], inits)
    assert [(v.name, v.op, v.elements) for v in r.network.vector_ops] == [("gelu", "gelu", 18)]
    assert r.vector_nodes == (("gelu", "Mul+Div+Erf+Add+Mul"),) and r.ignored == ()
    # opset 20's Gelu node
    r = _vector_import(tmp_path, [mm, n("Gelu", ["u"], ["y"], name="g")], [("x", [1, 3, 4])], [weight("w", (4, 6))], 20)
    assert [(v.name, v.op, v.elements) for v in r.network.vector_ops] == [("g", "gelu", 18)]
    # 1 + erf(x / 2) is not GELU: each node on its own (the Erf has no vector op)
    inits[2] = _const("sqrt2", 2.0)
    r = _vector_import(tmp_path, hf, [("x", [1, 3, 4])], inits)
    assert [v.op for v in r.network.vector_ops] == ["mul", "mul", "add", "mul"]
    assert r.ignored == (("erf", "Erf"),) and r.reasons == ("no vector op for Erf",)


def test_silu_needs_its_own_sigmoid_and_lone_sigmoid_tanh_are_ignored(tmp_path):
    n = helper.make_node
    nodes = [n("MatMul", ["x", "w"], ["u"], name="up"), n("Sigmoid", ["u"], ["s"], name="sig"),
             n("Mul", ["u", "s"], ["y1"], name="silu"),
             n("Sigmoid", ["u"], ["s2"], name="sig2"), n("Tanh", ["u"], ["t"], name="tanh"),
             n("Mul", ["s2", "t"], ["y2"], name="mul2"), n("Add", ["y1", "y2"], ["y"], name="sum")]
    r = _vector_import(tmp_path, nodes, [("x", [2, 4])], [weight("w", (4, 5))])
    assert [(v.name, v.op, v.inputs) for v in r.network.vector_ops] == [("silu", "silu", 1), ("mul2", "mul", 2),
                                                                        ("sum", "add", 2)]
    assert r.ignored == (("sig2", "Sigmoid"), ("tanh", "Tanh"))
    assert all(why.startswith("a lone ") for why in r.reasons)


def test_elementwise_inputs_constants_shapes_and_division(tmp_path):
    n = helper.make_node
    nodes = [n("MatMul", ["x", "w"], ["u"], name="mm"),
             n("Add", ["u", "b"], ["a"], name="bias"),             # activation + constant: 1 input
             n("Sub", ["a", "x2"], ["s"], name="sub"),             # two activations: an add of 2 inputs
             n("Div", ["s", "c"], ["d"], name="div_const"),        # / constant: a multiply
             n("Div", ["d", "s"], ["q"], name="div_act"),          # / activation: not costed
             n("Mul", ["b", "c"], ["bc"], name="const_mul"),       # constants only: folded
             n("Shape", ["q"], ["sh"], name="shape"),
             n("Mul", ["sh", "one_i"], ["sh2"], name="shape_mul"),  # int64 shape arithmetic
             n("Reshape", ["q", "sh2"], ["y"], name="reshape")]
    inits = [weight("w", (4, 5)), weight("b", (5,)), _const("c", 3.0),
             helper.make_tensor("one_i", 7, [1], [1])]
    r = _vector_import(tmp_path, nodes, [("x", [2, 4]), ("x2", [2, 5])], inits)
    assert [(v.name, v.op, v.elements, v.inputs) for v in r.network.vector_ops] == [
        ("bias", "add", 10, 1), ("sub", "add", 10, 2), ("div_const", "mul", 10, 1)]
    assert dict(zip((nd for nd, _ in r.ignored), r.reasons)) == {
        "div_act": "a division by an activation: no vector op (a reciprocal and a multiply)",
        "const_mul": "computes from constants only (folded before inference)",
        "shape": "moves, reshapes, selects or creates data: no arithmetic to cost",
        "shape_mul": "integer arithmetic (shapes or indices)",
        "reshape": "moves, reshapes, selects or creates data: no arithmetic to cost"}


def test_activation_matmul_broadcast_rows_and_no_kv_guess(tmp_path):
    n = helper.make_node
    # [2,4,5,8] x [8,3], both activations: one matrix shared by the 8 batch elements -> 40 rows, repeat 1;
    # the second operand comes from a graph input, not from a projection: no layer gets o_role kv_cache
    nodes = [n("MatMul", ["a", "w"], ["aw"], name="proj"), n("Neg", ["aw"], ["na"], name="neg"),
             n("MatMul", ["q", "k"], ["y"], name="shared"), n("MatMul", ["q2", "na"], ["z"], name="after_neg")]
    m = model(nodes, [("a", [3, 8]), ("q", [2, 4, 5, 8]), ("k", [8, 3]), ("q2", [2, 3])],
              [("y", None), ("z", None)], [weight("w", (8, 3))])
    r = read_onnx(save(m, tmp_path / "b.onnx"))
    layers = {l.name: (l, rep) for l, rep in r.network}
    shared, rep = layers["shared"]
    assert (shared.B, shared.C, shared.K, shared.G, shared.kind, shared.w_role, rep) == (40, 8, 3, 1, "matmul",
                                                                                       "kv_cache", 1)
    # a Neg between the projection and the MatMul is not one of rule 5's nodes: the projection stays an activation
    assert layers["proj"][0].o_role == "activation" and layers["proj"][0].kind == "fc"
    assert r.ignored == (("neg", "Neg"),)


def test_cli_list_networks_file_lists_the_block_layers(bert):
    path, _, _, _ = bert
    res = CliRunner().invoke(app, ["list", "networks", "--file", str(path), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert [(l["name"], l["op"], l["kind"], l["B"], l["C"], l["K"], l["G"], l["repeat"]) for l in doc["layers"]] == [
        ("q_proj", "MatMul", "matmul", 128, 768, 768, 1, 1), ("k_proj", "MatMul", "matmul", 128, 768, 768, 1, 1),
        ("v_proj", "MatMul", "matmul", 128, 768, 768, 1, 1), ("score", "MatMul", "matmul", 128, 64, 128, 1, 12),
        ("context", "MatMul", "matmul", 128, 128, 64, 1, 12), ("o_proj", "MatMul", "matmul", 128, 768, 768, 1, 1),
        ("ffn_up", "MatMul", "matmul", 128, 768, 3072, 1, 1), ("ffn_down", "MatMul", "matmul", 128, 3072, 768, 1, 1)]
    assert doc["total_macs"] == 4 * 128 * 768 * 768 + 2 * 12 * 128 * 128 * 64 + 2 * 128 * 768 * 3072
    assert {row["op"] for row in doc["ignored"]} == {"Reshape", "Transpose"}


def test_norm_of_unknown_output_shape_takes_its_input_shape(tmp_path):
    # onnx cannot infer ONNX Runtime's SimplifiedLayerNormalization (com.microsoft domain here):
    # a row-wise op's output has its input's shape; an op of another domain is not read
    n = helper.make_node
    nodes = [n("MatMul", ["x", "w"], ["u"], name="mm"),
             n("SimplifiedLayerNormalization", ["u", "g"], ["y"], name="norm", domain="com.microsoft", axis=-1),
             n("FusedGemm", ["y", "w2"], ["z"], name="custom", domain="com.microsoft")]
    m = model(nodes, [("x", [1, 3, 4])], [("z", None)], [weight("w", (4, 6)), weight("g", (6,)), weight("w2", (6, 2))])
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    r = read_onnx(save(m, tmp_path / "ms.onnx"))
    assert [(v.name, v.op, v.elements, v.rows) for v in r.network.vector_ops] == [("norm", "rmsnorm", 18, 3)]
    assert r.ignored == (("custom", "FusedGemm"),) and r.reasons == ("an operator of domain 'com.microsoft': not read",)
