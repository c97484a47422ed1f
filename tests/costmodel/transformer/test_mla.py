"""DeepSeek-V3's layers (issue 41) by hand: multi-head latent attention in the explicit form at
prefill and the absorbed form at decode, its latent KV cache, the MoE block with its shared expert
and the dense first blocks; the KV-cache bytes per token of Llama-3-70B (GQA) and DeepSeek-V3 (MLA);
and a decode step's DRAM traffic by role on llm_ws against them.

Every figure below is worked out from the published configs (tests/data/hf/deepseek_v3.json:
hidden 7168, 61 blocks, 128 heads, q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128,
qk_rope_head_dim 64, v_head_dim 128, 256 routed experts of 2048, top 8, 1 shared expert, the first
3 blocks dense with FFN 18432, vocab 129280; Meta-Llama-3-70B: 80 blocks, 8 K/V heads of 128) and
DeepSeek-V2's equations (arXiv:2405.04434, Sec. 2.1, Eq. 9-19), not from the code under test."""

from __future__ import annotations

import pytest

from costmodel.capacity import step_footprint
from costmodel.llm import dram_traffic
from costmodel.loopnest.arch import load_accelerator
from costmodel.loopnest.mapping import Mapping
from costmodel.transformer import build_transformer, read_hf_config, transformer_config
from paths import REPO
from sweep.commands.map_eval import map_layer

H, BLOCKS, HEADS, QR, KVR, NOPE, ROPE, VD = 7168, 61, 128, 1536, 512, 128, 64, 128
EXPERT, TOPK, DENSE_FFN, VOCAB = 2048, 8, 18432, 129280
CTX = 4096


@pytest.fixture(scope="module")
def v3():
    return read_hf_config(REPO / "tests" / "data" / "hf" / "deepseek_v3.json")[0]


def _by_name(net) -> dict:
    return {l.name: (l, r) for l, r in net}


def test_decode_is_absorbed_and_its_macs_by_hand(v3):
    """One decode token at context 4096. Per MLA block (absorbed form): q_a 7168 x 1536, q_b 1536 x
    128 x 192, q_absorb per head 128 x 512 (the nope query into the latent space), kv_a 7168 x 576
    (the new latent and RoPE key: the cache entry), score 128 heads x 576 x 4096 (the heads share
    the one 576-wide cache), context 128 x 4096 x 512 (the latent as values), o_absorb per head 512
    x 128, o_proj 16384 x 7168. FFN: 3 dense blocks of 3 x 7168 x 18432; 58 MoE blocks of the router
    7168 x 256, 8 routed experts and the shared one, 3 x 7168 x 2048 each. LM head 7168 x 129280."""
    net = build_transformer(v3, phase="decode", batch=1, context=CTX, fusion="unfused")
    assert net.workload["mla_form"] == "absorbed"
    mla = (H * QR + QR * HEADS * (NOPE + ROPE) + HEADS * NOPE * KVR + H * (KVR + ROPE)
           + HEADS * (KVR + ROPE) * CTX + HEADS * CTX * KVR + HEADS * KVR * VD + HEADS * VD * H)
    assert mla == 757_530_624
    ffn3 = 3 * H * EXPERT
    moe = H * 256 + (TOPK + 1) * ffn3
    total = BLOCKS * mla + 3 * 3 * H * DENSE_FFN + 58 * moe + H * VOCAB
    assert net.macs == total == 71_420_542_976
    layers = _by_name(net)
    assert (layers["score"][0].B, layers["score"][0].C, layers["score"][0].K) == (HEADS, KVR + ROPE, CTX)
    assert (layers["context"][0].C, layers["context"][0].K) == (CTX, KVR)
    assert layers["score"][1] == BLOCKS        # one latent "K/V head" per sequence and block
    assert layers["q_absorb"][1] == layers["o_absorb"][1] == HEADS * BLOCKS
    assert layers["kv_a_proj"][0].o_role == "kv_cache" and layers["kv_a_proj"][0].K == 576
    assert layers["expert_gate"][1] == TOPK * 58 and layers["shared_gate"][1] == 58 and layers["ffn_gate"][1] == 3


def test_prefill_is_explicit_by_hand(v3):
    """A 256-token causal prefill: kv_b_proj (512 -> 128 x (128 + 128)) makes every head's key and
    value from each token's latent; attention is then plain multi-head attention, score C = 192
    (nope + rope), context K = v_head_dim 128, one K/V head per query head. MACs of the projections
    per token and block: q_a + q_b + kv_a + kv_b + o."""
    net = build_transformer(v3, phase="prefill", batch=1, seq=256)
    assert net.workload["mla_form"] == "explicit"
    layers = _by_name(net)
    assert "q_absorb" not in layers and (layers["kv_b_proj"][0].C, layers["kv_b_proj"][0].K) == (KVR, HEADS * 256)
    scores = [l for n, (l, _) in layers.items() if n.startswith("score_")]
    contexts = [l for n, (l, _) in layers.items() if n.startswith("context_")]
    assert {l.C for l in scores} == {NOPE + ROPE} and {l.K for l in contexts} == {VD}
    assert all(r % (HEADS * BLOCKS) == 0 for n, (_, r) in layers.items() if n.startswith(("score_", "context_")))
    proj = H * QR + QR * HEADS * 192 + H * 576 + KVR * HEADS * 256 + HEADS * VD * H
    assert sum(l.macs * r for n, (l, r) in layers.items()
               if n in ("q_a_proj", "q_b_proj", "kv_a_proj", "kv_b_proj", "o_proj")) == 256 * BLOCKS * proj


def test_kv_cache_bytes_per_token_by_hand(v3):
    """Bytes of cache per token at 16 bits: Llama-3-70B (GQA) 80 blocks x 2 (K, V) x 8 K/V heads x
    128 x 2 B = 327,680 B (320 KiB); DeepSeek-V3 (MLA) 61 blocks x (512 + 64) x 2 B = 70,272 B
    (68.6 KiB), 4.7x less with 16x the query heads. `step_footprint`'s KV cache at context 1000 is
    1000 x that, on any arch (its capacity plays no part)."""
    arch = load_accelerator("llm_ws")
    llama = step_footprint(build_transformer("llama3_70b", phase="decode", context=1000, kv_bits=16), arch)
    deepseek = step_footprint(build_transformer(v3, phase="decode", context=1000, kv_bits=16), arch)
    assert llama.kv_cache_bytes == 1000 * 80 * 2 * 8 * 128 * 2 == 1000 * 327_680
    assert deepseek.kv_cache_bytes == 1000 * BLOCKS * (KVR + ROPE) * 2 == 1000 * 70_272


def _traffic(net, names) -> dict:
    """name -> (repeats, DRAM bytes by role of one execution) under SALSA's best mapping on llm_ws."""
    arch = load_accelerator("llm_ws")
    out = {}
    for layer, rep in net:
        if layer.name in names:
            res = map_layer(layer, arch, "salsa")
            out[layer.name] = (rep, {k: v / 8 for k, v in dram_traffic(layer, arch, Mapping.from_dict(res["mapping"])).items()})
    return out


def test_decode_kv_traffic_by_role_on_llm_ws(v3):
    """llm_ws keeps the cache at 8 bits ([precision] I). Per block of a decode step at context
    4096, the cache is written once (kv_a_proj's 576-value output, 576 B) and read by score (its
    keys: 4096 x 576 B) and by context (its values: the latent's first 512 of each cached token,
    4096 x 512 B): 4096 x 1088 B, 1.89x the 4096 x 576 B the cache holds, because the two matmuls
    read the latent apart (a fused MLA kernel reads it once; the loop-nest model's score and
    context are two layers). Llama-3-70B reads exactly its cache: K by score, V by context, 8 K/V
    heads x 4096 x 128 B each.

    The write: 576 columns on a 128-column array are 5 column tiles (640, the last half empty); the
    DRAM moves whole 2048-bit words (llm_ws's HBM word), so the padded 640-byte tile is 3 words, of
    which 576 / 640 is the layer's: 3 x 256 B x 0.9 = 691.2 B (the exact 576 B plus word and
    padding waste)."""
    # the accelerator's precision (the checkpoints' FP8 / bfloat16 set aside) and unfused attention
    got = _traffic(build_transformer(v3.at_accelerator_precision(), phase="decode", context=CTX, fusion="unfused"),
                   ("kv_a_proj", "score", "context"))
    assert got["kv_a_proj"][1]["kv_cache"] == pytest.approx(3 * 2048 / 8 * 576 / 640) == 691.2
    assert got["score"][1]["kv_cache"] == CTX * (KVR + ROPE) and got["context"][1]["kv_cache"] == CTX * KVR
    assert got["score"][0] == got["context"][0] == BLOCKS
    llama70 = transformer_config("llama3_70b").at_accelerator_precision()
    llama = _traffic(build_transformer(llama70, phase="decode", context=CTX, fusion="unfused"), ("score", "context"))
    for name in ("score", "context"):
        rep, by_role = llama[name]
        assert rep == 8 * 80 and by_role["kv_cache"] == CTX * 128
