"""Tests of the transformer models (costmodel/zoo/transformers.toml, costmodel/zoo/transformer.py).

Every expected value is a published figure (parameter counts: the models' Hugging Face
checkpoints) or a hand formula written out below from the published configs (hidden h, heads,
KV heads kv, head_dim hd, FFN size f, layers L, vocab V), never the code's own output.
"""

from __future__ import annotations

import dataclasses

import pytest

from costmodel.workload import Network
from costmodel.zoo import is_transformer, list_networks, load_network, network_info
from costmodel.transformer import (
    build_transformer,
    experts_touched,
    list_transformers,
    param_count,
    transformer_config,
    transformer_info,
)

#: Published exact parameter counts (the `published_params_source` of each model says where from).
PUBLISHED = {
    "bert_base": 109_482_240,       # BertModel with pooler
    "gpt2": 124_439_808,
    "llama3_2_1b": 1_235_814_400,
    "llama3_8b": 8_030_261_248,
    "llama3_70b": 70_553_706_496,
    "mixtral_8x7b": 46_702_792_704,
    "vit_b16": 86_567_656,          # ViTForImageClassification with its classifier
}


def layer(net: Network, name: str):
    """(layer, repeat) of the layer named ``name``."""
    for l, r in net:
        if l.name == name:
            return l, r
    raise AssertionError(f"{net.name} has no layer {name!r}")


def vop(net: Network, name: str):
    """(vector op, repeat) of the vector op named ``name``."""
    for v, r in zip(net.vector_ops, net.vector_repeats):
        if v.name == name:
            return v, r
    raise AssertionError(f"{net.name} has no vector op {name!r}")


# ----------------------------------------------------------------------------- hand formulas

def dense_block(T, b, q_len, attended, h, heads, kv, hd, f, ffn_mats):
    """MACs of one block: q and o projections T*h*(heads*hd) each, k and v T*h*(kv*hd) each, FFN
    ffn_mats (2 GELU, 3 SwiGLU) matrices of T*h*f; score and context b*heads*q_len*attended*hd each."""
    proj = T * (2 * h * heads * hd + 2 * h * kv * hd)
    ffn = T * ffn_mats * h * f
    attention = 2 * b * heads * q_len * attended * hd
    return proj + ffn + attention


def llama3_8b_decode(b, c):
    h, heads, kv, hd, f, L, V = 4096, 32, 8, 128, 14336, 32, 128256
    per_layer = b * (h * h + 2 * h * kv * hd + h * h + 3 * h * f) + b * heads * hd * c * 2
    return L * per_layer + b * h * V


def llama3_8b_prefill(b, s):
    h, heads, kv, hd, f, L, V = 4096, 32, 8, 128, 14336, 32, 128256
    T = b * s
    per_layer = T * (h * h + 2 * h * kv * hd + h * h + 3 * h * f) + b * heads * hd * s * s * 2
    return L * per_layer + b * h * V   # lm_head on the last token of each sequence only


def mixtral_decode_b1(c):
    """Batch 1: attention as Llama-3-8B's, router h*8, two SwiGLU experts of 3*h*f each."""
    h, heads, kv, hd, f, L, V, E, k = 4096, 32, 8, 128, 14336, 32, 32000, 8, 2
    per_layer = (h * h + 2 * h * kv * hd + h * h) + heads * hd * c * 2 + h * E + k * 3 * h * f
    return L * per_layer + h * V


def bert_prefill(b, s):
    h, heads, hd, f, L = 768, 12, 64, 3072, 12
    T = b * s
    per_layer = T * (4 * h * h + 2 * h * f) + 2 * b * heads * s * s * hd
    return L * per_layer + b * h * h   # + pooler on the first token


def vit_prefill(b):
    h, heads, hd, f, L, classes = 768, 12, 64, 3072, 12, 1000
    s = (224 // 16) ** 2 + 1            # 197 tokens
    T = b * s
    per_layer = T * (4 * h * h + 2 * h * f) + 2 * b * heads * s * s * hd
    patch = b * 196 * h * 3 * 16 * 16   # a 16x16 conv, 3 channels in, 768 out, on 14x14 outputs
    return L * per_layer + patch + b * h * classes


# ----------------------------------------------------------------------------- parameters

def test_the_seven_models():
    assert list_transformers() == sorted(PUBLISHED)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_param_count_equals_published(name):
    cfg = transformer_config(name)
    counts = param_count(cfg)
    assert counts["total"] == PUBLISHED[name] == cfg.published_params
    assert sum(v for k, v in counts.items() if k != "total") == counts["total"]
    assert all(v >= 0 for v in counts.values())


def test_param_breakdown_by_hand():
    # Llama-3-8B: untied head, no biases, RMSNorm (gain only): 2 per block + the final one.
    c = param_count(transformer_config("llama3_8b"))
    assert c["embeddings"] == c["lm_head"] == 128256 * 4096
    assert c["attention"] == 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024)
    assert c["ffn"] == 32 * 3 * 4096 * 14336
    assert c["norms"] == (2 * 32 + 1) * 4096 and c["biases"] == 0 and c["position"] == 0
    # Mixtral: 8 experts and a router per block, no dense FFN.
    m = param_count(transformer_config("mixtral_8x7b"))
    assert m["experts"] == 32 * 8 * 3 * 4096 * 14336 and m["router"] == 32 * 4096 * 8 and m["ffn"] == 0
    # Llama-3.2-1B: tied head (counted once, in embeddings).
    assert param_count(transformer_config("llama3_2_1b"))["lm_head"] == 0
    # BERT: token + type embeddings, 512 positions, pooler, LayerNorm gain + bias (2 per block + embeddings).
    b = param_count(transformer_config("bert_base"))
    assert b["embeddings"] == (30522 + 2) * 768 and b["position"] == 512 * 768
    assert b["pooler"] == 768 * 768 + 768 and b["norms"] == (2 * 12 + 1) * 2 * 768
    assert b["biases"] == 12 * (4 * 768 + 3072 + 768)
    # ViT: class token, 197 positions, patch conv with bias, classifier with bias.
    v = param_count(transformer_config("vit_b16"))
    assert v["embeddings"] == 768 and v["position"] == 197 * 768
    assert v["patch_embed"] == 768 * 3 * 16 * 16 + 768 and v["classifier"] == 768 * 1000 + 1000


# ----------------------------------------------------------------------------- MACs

@pytest.mark.parametrize("b, c", [(1, 4096), (8, 4096), (3, 17)])
def test_llama3_8b_decode_macs(b, c):
    assert build_transformer("llama3_8b", phase="decode", batch=b, context=c).macs == llama3_8b_decode(b, c)


@pytest.mark.parametrize("b, s", [(1, 2048), (2, 100)])
def test_llama3_8b_prefill_macs(b, s):
    assert build_transformer("llama3_8b", phase="prefill", batch=b, seq=s, attention="dense").macs == llama3_8b_prefill(b, s)


def test_mixtral_decode_macs_top2_of_8():
    net = build_transformer("mixtral_8x7b", phase="decode", batch=1, context=4096)
    assert net.macs == mixtral_decode_b1(4096)
    assert net.workload["experts_touched"] == 2


def test_bert_and_vit_prefill_macs():
    assert build_transformer("bert_base").macs == bert_prefill(1, 128)
    assert build_transformer("bert_base", batch=4, seq=384).macs == bert_prefill(4, 384)
    assert build_transformer("vit_b16").macs == vit_prefill(1)
    assert build_transformer("vit_b16", batch=32).macs == vit_prefill(32)


MODELS = {  # name: (h, heads, kv, hd, f, L, V, FFN matrices) from the published configs
    "gpt2": (768, 12, 12, 64, 3072, 12, 50257, 2),
    "llama3_2_1b": (2048, 32, 8, 64, 8192, 16, 128256, 3),
    "llama3_8b": (4096, 32, 8, 128, 14336, 32, 128256, 3),
    "llama3_70b": (8192, 64, 8, 128, 28672, 80, 128256, 3),
}


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_dense_decoder_macs(name, phase):
    h, heads, kv, hd, f, L, V, mats = MODELS[name]
    b, n = 2, 512
    if phase == "prefill":
        net = build_transformer(name, phase=phase, batch=b, seq=n, attention="dense")
        block = dense_block(b * n, b, n, n, h, heads, kv, hd, f, mats)
    else:
        net = build_transformer(name, phase=phase, batch=b, context=n)
        block = dense_block(b, b, 1, n, h, heads, kv, hd, f, mats)
    assert net.macs == L * block + b * h * V


def test_mixtral_prefill_macs_are_top2_per_token():
    h, heads, kv, hd, f, L, V, E, k = 4096, 32, 8, 128, 14336, 32, 32000, 8, 2
    b, s = 1, 1000
    T = b * s
    per_layer = dense_block(T, b, s, s, h, heads, kv, hd, f, 0) + T * h * E + T * k * 3 * h * f
    net = build_transformer("mixtral_8x7b", phase="prefill", batch=b, seq=s, attention="dense")
    assert net.macs == L * per_layer + b * h * V


# ----------------------------------------------------------------------------- shapes

def test_gqa_score_and_context_llama3_8b_decode():
    b, c = 8, 4096
    net = build_transformer("llama3_8b", phase="decode", batch=b, context=c, fusion="unfused")
    assert net.name == "llama3_8b/decode/b8/ctx4096/unfused"
    assert build_transformer("llama3_8b", phase="decode", batch=b, context=c).name == "llama3_8b/decode/b8/ctx4096"
    score, r = layer(net, "score")
    assert (score.B, score.C, score.K) == (32 // 8, 128, c) and r == b * 8 * 32
    assert score.w_role == "kv_cache" and score.kind == "matmul"
    ctx, r = layer(net, "context")
    assert (ctx.B, ctx.C, ctx.K) == (4, c, 128) and r == b * 8 * 32 and ctx.w_role == "kv_cache"
    q, r = layer(net, "q_proj")
    assert (q.B, q.C, q.K, r) == (b, 4096, 4096, 32)
    for n in ("k_proj", "v_proj"):
        l, r = layer(net, n)
        assert (l.B, l.C, l.K, r, l.o_role) == (b, 4096, 1024, 32, "kv_cache")
    head, r = layer(net, "lm_head")
    assert (head.B, head.C, head.K, r) == (b, 4096, 128256, 1)
    for l, _ in net:
        assert l.kind == "matmul" and (l.OY, l.OX, l.FY, l.FX, l.G) == (1, 1, 1, 1, 1)


def test_layer_names_and_order():
    names = [l.name for l, _ in build_transformer("llama3_8b", fusion="unfused")]
    assert names == ["q_proj", "k_proj", "v_proj", "score", "context", "o_proj",
                     "ffn_gate", "ffn_up", "ffn_down", "lm_head"]
    assert [l.name for l, _ in build_transformer("gpt2", fusion="unfused")] == [
        "q_proj", "k_proj", "v_proj", "score", "context", "o_proj", "ffn_up", "ffn_down", "lm_head"]
    assert [l.name for l, _ in build_transformer("bert_base", fusion="unfused")][-1] == "pooler"
    assert [l.name for l, _ in build_transformer("vit_b16", fusion="unfused")] == [
        "patch_embed", "q_proj", "k_proj", "v_proj", "score", "context", "o_proj", "ffn_up", "ffn_down",
        "classifier"]


def test_default_step_is_fused_attention_tiles():
    """The default step is fused (FlashAttention's tiles, `costmodel.transformer.attention`): a
    query tile of min(128, q_len) positions against K/V tiles of 128 keys, the first score tile of
    each query tile reading Q, the last context tile writing O. Llama-3-8B decode at context 4,096:
    one query position, 4,096 / 128 = 32 K/V tiles; repeats x (batch 1 x 8 KV heads x 32 blocks) =
    256: score first 1 x 256, the other 31 score tiles 31 x 256 = 7,936, the 31 context tiles but the
    last 7,936 and the last 256. ViT-B/16's 197 tokens: query and K/V tiles of 128 and 69."""
    net = build_transformer("llama3_8b")
    assert [(l.name, r) for l, r in net] == [
        ("q_proj", 32), ("k_proj", 32), ("v_proj", 32),
        ("score_tile_1x128_first", 256), ("context_tile_1x128", 7936),
        ("score_tile_1x128", 7936), ("context_tile_1x128_last", 256),
        ("o_proj", 32), ("ffn_gate", 32), ("ffn_up", 32), ("ffn_down", 32), ("lm_head", 1)]
    s, _ = layer(net, "score_tile_1x128_first")
    assert (s.B, s.C, s.K, s.onchip) == (4, 128, 128, ("O",))   # GQA group 4 as rows
    assert [l.name for l, _ in build_transformer("bert_base")] == [
        "q_proj", "k_proj", "v_proj", "score_tile_128x128_first", "context_tile_128x128_last", "o_proj",
        "ffn_up", "ffn_down", "pooler"]
    tiles = [f"{m}_tile_{r}x{c}{t}" for r in (128, 69)
             for m, c, t in (("score", 128, "_first"), ("context", 128, ""), ("score", 69, ""), ("context", 69, "_last"))]
    assert [l.name for l, _ in build_transformer("vit_b16")] == [
        "patch_embed", "q_proj", "k_proj", "v_proj", *tiles, "o_proj", "ffn_up", "ffn_down", "classifier"]


def test_prefill_lm_head_is_last_token_only_and_names():
    net = build_transformer("gpt2", phase="prefill", batch=3, seq=100, attention="dense", fusion="unfused")
    assert net.name == "gpt2/prefill/b3/seq100/dense/unfused"
    assert build_transformer("gpt2", phase="prefill", batch=3, seq=100, attention="dense").name == (
        "gpt2/prefill/b3/seq100/dense")   # fused, the default, is not named
    assert layer(net, "lm_head")[0].B == 3 and layer(net, "q_proj")[0].B == 300
    score, r = layer(net, "score")
    assert (score.B, score.K, r) == (100, 100, 3 * 12 * 12)   # MHA: group 1, q_len 100


def test_vit_patch_embed_and_classifier():
    net = build_transformer("vit_b16", batch=2)
    assert net.name == "vit_b16/prefill/b2/seq197"
    p, r = layer(net, "patch_embed")
    assert (p.kind, p.B, p.K, p.C, p.FY, p.FX, p.SY, p.SX, p.OY, p.OX, r) == (
        "conv", 2, 768, 3, 16, 16, 16, 16, 14, 14, 1)
    c, _ = layer(net, "classifier")
    assert (c.B, c.C, c.K) == (2, 768, 1000)
    assert layer(net, "q_proj")[0].B == 2 * 197


def test_moe_experts_touched():
    assert experts_touched(1, 8, 2) == 2
    assert experts_touched(1000, 8, 2) == 8
    # 8 * (1 - (6/8)^3) = 4.625 -> 5; 8 * (1 - (6/8)^2) = 3.5 -> 4 (half up)
    assert experts_touched(3, 8, 2) == 5 and experts_touched(2, 8, 2) == 4
    assert build_transformer("mixtral_8x7b", phase="prefill", seq=1000).workload["experts_touched"] == 8


def test_moe_split_over_touched_experts():
    # batch 3 decode: T=3, 6 token-expert pairs over 5 experts: 1 expert with 2 tokens, 4 with 1.
    net = build_transformer("mixtral_8x7b", phase="decode", batch=3, context=100)
    for n in ("expert_gate", "expert_up", "expert_down"):
        lo, r_lo = layer(net, n)
        hi, r_hi = layer(net, n + "_hi")
        assert (lo.B, r_lo, hi.B, r_hi) == (1, 4 * 32, 2, 1 * 32)
    router, r = layer(net, "router")
    assert (router.B, router.C, router.K, r) == (3, 4096, 8, 32)
    # batch 1: exactly two experts of one token each, no _hi layers
    net1 = build_transformer("mixtral_8x7b", batch=1)
    assert layer(net1, "expert_up")[0].B == 1 and layer(net1, "expert_up")[1] == 2 * 32
    assert not any(l.name.endswith("_hi") for l, _ in net1)


# ----------------------------------------------------------------------------- vector ops

def test_vector_ops_llama3_8b_decode():
    b, c, h = 4, 1000, 4096
    net = build_transformer("llama3_8b", batch=b, context=c, fusion="unfused")
    names = [v.name for v in net.vector_ops]
    assert names == ["attn_norm", "rope_q", "rope_k", "softmax", "attn_residual", "ffn_norm", "act",
                     "gate_mul", "ffn_residual", "final_norm"]
    v, r = vop(net, "softmax")
    assert (v.op, v.elements, v.rows, r) == ("softmax", b * 32 * 1 * c, b * 32, 32)
    v, r = vop(net, "attn_norm")
    assert (v.op, v.elements, v.rows, r) == ("rmsnorm", b * h, b, 32)
    assert vop(net, "rope_q")[0].elements == b * 32 * 128 and vop(net, "rope_k")[0].elements == b * 8 * 128
    v, _ = vop(net, "gate_mul")
    assert (v.op, v.inputs, v.elements) == ("mul", 2, b * 14336)
    assert vop(net, "act")[0].op == "silu" and vop(net, "final_norm")[1] == 1
    assert (vop(net, "ffn_residual")[0].inputs, vop(net, "ffn_residual")[0].elements) == (2, b * h)
    # fused (the default): the softmax is an online softmax per score tile, 7 K/V tiles of 128 keys
    # and one of 1,000 - 7 x 128 = 104, rows = the GQA group of 4 query heads; it covers the same
    # b x 32 heads x c scores per block as the unfused softmax
    fused = build_transformer("llama3_8b", batch=b, context=c)
    assert "softmax" not in [v.name for v in fused.vector_ops]
    s128, r128 = vop(fused, "online_softmax_1x128")
    s104, r104 = vop(fused, "online_softmax_1x104")
    assert (s128.elements, r128, s104.elements, r104) == (4 * 128, 7 * b * 8 * 32, 4 * 104, b * 8 * 32)
    assert s128.elements * r128 + s104.elements * r104 == b * 32 * c * 32


def test_vector_ops_bert_gpt2_vit_mixtral():
    bert = build_transformer("bert_base", seq=128)
    T, h = 128, 768
    assert vop(bert, "embed_norm")[0].op == "layernorm" and vop(bert, "pos_add")[0].elements == T * h
    assert vop(bert, "type_add")[0].elements == T * h and vop(bert, "act")[0].op == "gelu"
    # biased outputs per block: q, k, v, o (768 each), ffn_up (3072), ffn_down (768)
    assert vop(bert, "bias_add")[0].elements == T * (4 * 768 + 3072 + 768)
    assert vop(bert, "pooler_bias")[0].elements == 768
    assert any("pooler tanh" in s for s in bert.workload["not_costed"])
    assert any("embedding gather" in s for s in bert.workload["not_costed"])
    gpt2 = build_transformer("gpt2", context=50)
    assert "rope_q" not in [v.name for v in gpt2.vector_ops] and vop(gpt2, "pos_add")[0].elements == h
    vit = build_transformer("vit_b16")
    assert vop(vit, "classifier_bias")[0].elements == 1000 and vop(vit, "final_norm")[0].elements == 197 * h
    assert vop(vit, "patch_embed_bias")[0].elements == 196 * h and vop(vit, "pos_add")[0].elements == 197 * h
    mix = build_transformer("mixtral_8x7b", batch=2)
    assert vop(mix, "router_softmax")[0].elements == 2 * 8 and vop(mix, "act")[0].elements == 2 * 2 * 14336
    assert vop(mix, "expert_combine")[0].elements == 2 * 2 * 4096


# ----------------------------------------------------------------------------- precisions

def test_kv_bits_fix_the_cache():
    net = build_transformer(transformer_config("llama3_8b").at_accelerator_precision(), kv_bits=4, fusion="unfused")
    score, _ = layer(net, "score")
    assert score.w_bits == 4 and score.fixed_bits == ("W",)
    k, _ = layer(net, "k_proj")
    assert k.o_bits == 4 and k.fixed_bits == ("O_final",)
    assert layer(net, "q_proj")[0].fixed_bits == ()
    # the bundled bfloat16 checkpoint: the cache at the 4 bits given, the rest at its 16
    net = build_transformer("llama3_8b", kv_bits=4, fusion="unfused")
    score, _ = layer(net, "score")
    assert (score.w_bits, score.i_bits, score.fixed_bits) == (4, 16, ("W", "I", "O_final"))
    k, _ = layer(net, "k_proj")
    assert (k.w_bits, k.i_bits, k.o_bits) == (16, 16, 4)


def test_no_precision_no_fixed_bits():
    """No bits given: a checkpoint whose config.json states no dtype (GPT-2, BERT, ViT) fixes none
    (the accelerator's [precision]); the Llama 3 and Mixtral checkpoints are torch_dtype bfloat16,
    so their steps fix W, I and O_final of every layer, and every vector op, at 16 bits."""
    for name in list_transformers():
        cfg = transformer_config(name)
        net = build_transformer(cfg.at_accelerator_precision())
        assert all(l.fixed_bits == () for l, _ in net)
        assert all(v.bits is None for v in net.vector_ops)
        net = build_transformer(name)
        if name in ("gpt2", "bert_base", "vit_b16"):
            assert all(l.fixed_bits == () for l, _ in net), name
            assert all(v.bits is None for v in net.vector_ops), name
            assert net.workload["precision"]["weight_from"] == "accelerator"
        else:
            assert cfg.checkpoint_dtype == "bfloat16", name
            assert all(l.fixed_bits == ("W", "I", "O_final") for l, _ in net), name
            assert all((l.w_bits, l.i_bits, l.o_bits) == (16, 16, 16) for l, _ in net), name
            assert all(v.bits == 16 for v in net.vector_ops), name


def test_weight_and_act_bits():
    llama = transformer_config("llama3_8b").at_accelerator_precision()
    net = build_transformer(llama, weight_bits=4, act_bits=16, fusion="unfused")
    q, _ = layer(net, "q_proj")
    assert (q.w_bits, q.i_bits, q.o_bits, q.fixed_bits) == (4, 16, 16, ("W", "I", "O_final"))
    s, _ = layer(net, "score")          # the cache takes act_bits when kv_bits is not given
    assert (s.w_bits, s.i_bits, s.fixed_bits) == (16, 16, ("W", "I", "O_final"))
    v, _ = layer(net, "v_proj")
    assert (v.w_bits, v.o_bits) == (4, 16)
    assert all(op.bits == 16 for op in net.vector_ops)
    net = build_transformer(llama, act_bits=8, kv_bits=4, fusion="unfused")
    assert layer(net, "v_proj")[0].o_bits == 4 and layer(net, "context")[0].w_bits == 4
    assert net.workload["kv_bits"] == 4 and net.workload["weight_bits"] is None
    assert layer(net, "q_proj")[0].fixed_bits == ("I", "O_final")   # W: the accelerator's
    # the bundled bfloat16 checkpoint: act_bits given sets the cache too (8, not the checkpoint's
    # 16); the weights not given are the checkpoint's 16
    net = build_transformer("llama3_8b", act_bits=8, fusion="unfused")
    assert (layer(net, "score")[0].w_bits, layer(net, "k_proj")[0].o_bits) == (8, 8)
    assert layer(net, "q_proj")[0].w_bits == 16 and net.workload["weight_bits"] is None   # the bits given
    assert net.workload["precision"] == {"weight_bits": 16, "act_bits": 8, "kv_bits": 8, "weight_from": "checkpoint",
                                         "act_from": "given", "kv_from": "activations", "checkpoint_dtype": "bfloat16"}


# ----------------------------------------------------------------------------- workload and errors

def test_workload_dict():
    w = build_transformer("llama3_8b", batch=8, context=4096).workload
    assert {k: w[k] for k in ("model", "phase", "batch", "seq", "context", "tokens", "kind")} == {
        "model": "llama3_8b", "phase": "decode", "batch": 8, "seq": None, "context": 4096,
        "tokens": 8, "kind": "decoder"}
    w = build_transformer("llama3_8b", phase="prefill", batch=2, seq=10).workload
    assert (w["seq"], w["context"], w["tokens"]) == (10, None, 20)
    assert w["weight_bits"] is None and w["act_bits"] is None and w["kv_bits"] is None


@pytest.mark.parametrize("name, kwargs, key", [
    ("bert_base", {"phase": "decode"}, "phase"),
    ("vit_b16", {"phase": "decode"}, "phase"),
    ("llama3_8b", {"phase": "train"}, "phase"),
    ("llama3_8b", {"phase": "prefill", "context": 10}, "context"),
    ("bert_base", {"context": 10}, "context"),
    ("llama3_8b", {"phase": "decode", "seq": 10}, "seq"),
    ("llama3_8b", {"weight_bits": 3}, "weight_bits"),
    ("llama3_8b", {"act_bits": 0}, "act_bits"),
    ("llama3_8b", {"kv_bits": -4}, "kv_bits"),
    ("llama3_8b", {"batch": 0}, "batch"),
    ("llama3_8b", {"context": 1.5}, "context"),
    ("gpt2", {"phase": "decode", "context": 1025}, "context"),  # past GPT-2's 1,024 learned positions
    ("gpt2", {"phase": "prefill", "seq": 1025}, "seq"),
    ("vit_b16", {"seq": 100}, "seq"),
])
def test_errors_name_the_key(name, kwargs, key):
    with pytest.raises(ValueError) as ei:
        build_transformer(name, **kwargs)
    msg = str(ei.value)
    assert msg.startswith(f"{key}:"), msg
    assert str(kwargs[key]) in msg or kwargs[key] == "decode" and "decode" in msg


def test_rope_models_run_past_their_published_context_with_a_note():
    """RoPE defines the shapes at any position: Llama 3 8B's published max_position_embeddings is
    8,192, and a decode step at context 32,768 has the same shapes with a longer cache (the issue's
    long-context measurement); the step says it is past the published window."""
    net = build_transformer("llama3_8b", phase="decode", context=32768, fusion="unfused")
    score = next(l for l, _ in net if l.name == "score")
    assert score.K == 32768
    assert "8192" in net.workload["note"]
    assert "note" not in build_transformer("llama3_8b", phase="decode", context=8192).workload


def test_config_validation_names_model_and_key():
    cfg = transformer_config("llama3_8b")
    with pytest.raises(ValueError, match="'llama3_8b'.*kv_heads"):
        dataclasses.replace(cfg, kv_heads=5)
    with pytest.raises(ValueError, match="'llama3_8b'.*norm"):
        dataclasses.replace(cfg, norm="batchnorm")
    with pytest.raises(ValueError, match="'llama3_8b'.*hidden"):
        dataclasses.replace(cfg, hidden=0)
    with pytest.raises(ValueError, match="'llama3_8b'.*top_k"):
        dataclasses.replace(cfg, top_k=2)
    with pytest.raises(KeyError, match="llama4"):
        transformer_config("llama4")


# ----------------------------------------------------------------------------- the zoo registry

def test_zoo_lists_and_loads_transformers():
    names = list_networks()
    assert set(PUBLISHED) <= set(names) and "resnet18" in names and names == sorted(names)
    assert is_transformer("llama3_8b") and not is_transformer("resnet18")
    net = load_network("llama3_8b", batch=8, context=4096)
    assert net.name == "llama3_8b/decode/b8/ctx4096" and net.macs == llama3_8b_decode(8, 4096)
    assert load_network("llama3_8b").name == "llama3_8b/decode/b1/ctx4096"
    assert load_network("bert_base").name == "bert_base/prefill/b1/seq128"
    assert "Meta-Llama-3-8B" in net.source


def test_zoo_csv_networks_take_no_workload_params():
    with pytest.raises(ValueError, match=r"^phase: the network resnet18 has no such parameter"):
        load_network("resnet18", phase="decode")
    with pytest.raises(ValueError, match=r"^foo:"):
        load_network("llama3_8b", foo=1)
    assert load_network("resnet18") is load_network("resnet18")


def test_network_info_of_a_transformer():
    info = network_info("mixtral_8x7b")
    assert info == transformer_info("mixtral_8x7b")
    assert info["published_params"] == PUBLISHED["mixtral_8x7b"] and info["kind"] == "decoder"
    assert info["defaults"] == {"phase": "decode", "batch": 1, "seq": 2048, "context": 4096}
    assert "config.json" in info["source"] and info["published_params_source"]
    assert network_info("vit_b16")["defaults"]["phase"] == "prefill"
    assert network_info("vit_b16")["defaults"]["context"] is None


# ----------------------------------------------------------------------------- causal prefill

def test_causal_blocks_cover_the_triangle_exactly_once():
    """Every (query, key) pair with key <= query is in exactly one block, and pairs above the
    diagonal only inside the diagonal blocks (<= 128 wide): a brute-force cover of n = 300 and
    n = 1,000 (blocks placed as the recursion places them)."""
    from costmodel.transformer.attention import causal_blocks

    def place(n, q0=0, k0=0, out=None):
        out = [] if out is None else out
        if n <= 128:
            out.append((q0, k0, n, n))
            return out
        h = n // 2
        out.append((q0 + h, k0, n - h, h))
        place(h, q0, k0, out)
        place(n - h, q0 + h, k0 + h, out)
        return out

    for n in (300, 1000, 2048):
        seen = {}
        for q0, k0, r, c in place(n):
            for q in range(q0, q0 + r):
                for k in range(k0, k0 + c):
                    seen[(q, k)] = seen.get((q, k), 0) + 1
        lower = {(q, k) for q in range(n) for k in range(q + 1)}
        assert lower <= set(seen) and all(v == 1 for v in seen.values())
        assert all(abs(q - k) < 128 for q, k in set(seen) - lower)
        blocks = causal_blocks(n)
        assert sum(r * c * m for r, c, m in blocks) == len(seen)
        shapes = {}
        for _, _, r, c in place(n):
            shapes[(r, c)] = shapes.get((r, c), 0) + 1
        assert {(r, c): m for r, c, m in blocks} == shapes


def test_causal_prefill_macs_by_hand():
    """Llama-3-8B prefill of 2,048 tokens: the attention pairs per head are 2,048 x 2,049 / 2 =
    2,098,176 exact, 1,024^2 + 2 x 512^2 + 4 x 256^2 + 24 x 128^2 = 2,228,224 computed (the 16
    diagonal blocks of 128 in full); MACs = dense - 2 x 128 x (2,048^2 - 2,228,224) x 32 heads x
    32 blocks; the dense step names itself /dense and keeps today's count."""
    causal = build_transformer("llama3_8b", phase="prefill", seq=2048, fusion="unfused")
    dense = build_transformer("llama3_8b", phase="prefill", seq=2048, attention="dense", fusion="unfused")
    assert causal.name == "llama3_8b/prefill/b1/seq2048/unfused" and dense.name.endswith("/dense/unfused")
    assert causal.workload["attention"] == "causal"
    assert causal.workload["attention_pairs"] == {"exact": 2_098_176 * 32 * 32, "computed": 2_228_224 * 32 * 32}
    assert dense.macs - causal.macs == 2 * 128 * (2048 ** 2 - 2_228_224) * 32 * 32
    assert dense.macs == llama3_8b_prefill(1, 2048)
    soft = {v.name: v for v in causal.vector_ops}["softmax"]
    assert soft.elements == 32 * 2_228_224 and soft.rows == 32 * 2048
    # the blocks: score_<r>x<c> with B = 4 x r (GQA group 4), C = 128, K = c
    s, r = layer(causal, "score_1024x1024")
    assert (s.B, s.C, s.K, r) == (4 * 1024, 128, 1024, 8 * 32)


def test_attention_option_errors_and_decode():
    with pytest.raises(ValueError, match="^attention: bert_base is an encoder model"):
        build_transformer("bert_base", attention="causal")
    with pytest.raises(ValueError, match="^attention: must be one of"):
        build_transformer("llama3_8b", phase="prefill", attention="sparse")
    d = build_transformer("llama3_8b", phase="decode", context=512, attention="dense")
    assert d.name == "llama3_8b/decode/b1/ctx512" and d.workload["attention"] is None
    assert build_transformer("bert_base").workload["attention"] == "dense"
