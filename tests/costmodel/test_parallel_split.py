"""One chip's share of a split transformer step (`costmodel.system.parallel`): the shapes, the memory
per chip and the errors, each by hand from the models' published configs (Llama-3-70B: hidden 8192,
80 blocks, 64 query heads, 8 K/V heads, head_dim 128, FFN 28672, vocabulary 128256, untied;
Mixtral-8x7B: hidden 4096, 32 blocks, 32 / 8 heads, FFN 14336, 8 experts, top-2, vocabulary 32000)."""

import pytest

from costmodel.capacity import step_footprint
from costmodel.loopnest.arch import load_accelerator
from costmodel.system.parallel import Split, kv_replicas, share_params
from costmodel.transformer import build_transformer, param_count, parse_step_name, transformer_config

A100 = load_accelerator("a100")  # 16-bit weights, activations and cache


def _shapes(net):
    return {l.name: (l.B, l.C, l.K, r) for l, r in net}


def test_tp8_shapes_by_hand():
    """Megatron's split: Q, K, V, gate, up by columns (heads, FFN width / 8), O and down by rows, the
    LM head by vocabulary rows; 8 K/V heads over 8 chips: one each, a GQA group of 64 / 8 = 8
    (unfused attention: score and context one matmul each per sequence and K/V head)."""
    s = _shapes(build_transformer("llama3_70b", phase="decode", batch=32, context=4096, tp=8, fusion="unfused"))
    assert s["q_proj"] == (32, 8192, 8 * 128, 80)
    assert s["k_proj"] == s["v_proj"] == (32, 8192, 128, 80)
    assert s["o_proj"] == (32, 1024, 8192, 80)
    assert s["ffn_gate"] == s["ffn_up"] == (32, 8192, 3584, 80)
    assert s["ffn_down"] == (32, 3584, 8192, 80)
    assert s["score"] == (8, 128, 4096, 32 * 1 * 80)     # group 8 x 1 query, per (sequence, K/V head) x blocks
    assert s["lm_head"] == (32, 8192, 128256 // 8, 1)


def test_even_split_has_an_eighth_of_the_macs():
    """Every matmul splits evenly at tp 8 (128256 = 8 x 16032): 8 shares do the step's MACs exactly."""
    for phase, kw in (("decode", {"context": 4096}), ("prefill", {"seq": 2048})):
        one = build_transformer("llama3_70b", phase=phase, batch=4, **kw)
        share = build_transformer("llama3_70b", phase=phase, batch=4, tp=8, **kw)
        assert 8 * share.macs == one.macs


def test_kv_heads_replicated_past_their_count():
    """tp 16 over 8 K/V heads: each chip one K/V head (a copy on 2 chips), 4 query heads."""
    cfg = transformer_config("llama3_70b")
    assert kv_replicas(cfg, 16) == 2 and kv_replicas(cfg, 8) == 1
    s = _shapes(build_transformer("llama3_70b", phase="decode", batch=32, context=4096, tp=16, fusion="unfused"))
    assert s["q_proj"][2] == 4 * 128 and s["k_proj"][2] == 128 and s["score"][0] == 4
    fp8 = step_footprint(build_transformer("llama3_70b", phase="decode", batch=32, context=4096, tp=8), A100)
    fp16 = step_footprint(build_transformer("llama3_70b", phase="decode", batch=32, context=4096, tp=16), A100)
    assert fp16.kv_cache_bytes == fp8.kv_cache_bytes == 32 * 4096 * 80 * 2 * 128 * 2


def test_memory_per_chip_by_hand():
    """tp 8: per block q 8192 x 1024, k and v 8192 x 128, o 1024 x 8192, gate/up/down 3 x 8192 x 3584,
    two RMSNorm gains of 8192; the embedding and the LM head 16032 x 8192 each; the final norm 8192;
    2 bytes each. pp 2 on top: the last stage, 40 blocks, the final norm and the LM head."""
    block = 8192 * 1024 + 2 * 8192 * 128 + 1024 * 8192 + 3 * 8192 * 3584 + 2 * 8192
    tp8 = 80 * block + 2 * 16032 * 8192 + 8192
    last = 40 * block + 16032 * 8192 + 8192
    cfg = transformer_config("llama3_70b")
    assert share_params(cfg, Split(tp=8)) == tp8
    assert share_params(cfg, Split(tp=8, pp=2)) == last
    assert share_params(cfg, Split()) == param_count(cfg)["total"] == 70_553_706_496
    fp = step_footprint(build_transformer("llama3_70b", phase="decode", batch=32, context=4096, tp=8, pp=2), A100)
    assert fp.weights_bytes == 2 * last
    assert fp.kv_cache_bytes == 32 * 4096 * 40 * 2 * 128 * 2     # its 40 blocks, one K/V head each


def test_expert_parallel_share_by_hand():
    """Mixtral decode, batch 32 over ep 4: each group 8 sequences (attention data parallel), 2 of the
    8 experts; the 32 tokens x top-2 = 64 pairs reach all 8 experts (8 x (1 - (6/8)^32) = 7.999),
    so a group's 2 experts take 64 / 4 = 16 pairs: 8 rows each, 2 experts x 32 blocks."""
    s = _shapes(build_transformer("mixtral_8x7b", phase="decode", batch=32, context=4096, ep=4))
    assert s["q_proj"] == (8, 4096, 4096, 32)
    assert s["expert_gate"] == (8, 4096, 14336, 2 * 32)
    assert s["router"] == (8, 4096, 8, 32)
    cfg = transformer_config("mixtral_8x7b")
    parts = param_count(cfg)
    assert share_params(cfg, Split(ep=4)) == parts["total"] - parts["experts"] + parts["experts"] // 4


@pytest.mark.parametrize("kw, msg", [
    ({"tp": 3}, "tp: 3 does not divide llama3_70b's 64 query heads"),
    ({"tp": 32, "batch": 32}, None),                               # 32 heads? no: 64 / 32 = 2, K/V 8 | 32: allowed
    ({"pp": 3}, "pp: 3 does not divide llama3_70b's 80 blocks"),
    ({"ep": 2}, "ep: 2 applies to a mixture of experts; llama3_70b has a dense FFN"),
    ({"tp": 0}, "tp: must be a positive integer"),
])
def test_split_errors_name_the_parameter(kw, msg):
    kw = {"phase": "decode", "context": 4096, **kw}
    if msg is None:
        build_transformer("llama3_70b", **kw)
        return
    with pytest.raises(ValueError, match=msg.replace("(", r"\(")):
        build_transformer("llama3_70b", **kw)


def test_ep_must_divide_the_batch():
    with pytest.raises(ValueError, match="ep: 4 does not divide the batch 6"):
        build_transformer("mixtral_8x7b", phase="decode", batch=6, context=512, ep=4)


def test_name_round_trip_and_one_chip_unchanged():
    net = build_transformer("llama3_70b", phase="decode", batch=32, context=4096, tp=8, pp=2)
    assert net.name == "llama3_70b/decode/b32/ctx4096/tp8/pp2"
    model, params = parse_step_name(net.name)
    assert build_transformer(model, **params).name == net.name and params["tp"] == 8 and params["pp"] == 2
    one = build_transformer("llama3_70b", phase="decode", batch=32, context=4096)
    same = build_transformer("llama3_70b", phase="decode", batch=32, context=4096, tp=1, pp=1)
    assert one == same and "tp" not in one.workload and one.name == "llama3_70b/decode/b32/ctx4096"
