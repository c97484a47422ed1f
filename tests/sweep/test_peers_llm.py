"""Serving on many chips against GenZ 0.0.16 and llm-analysis 0.2.2 (their outputs pinned in
tests/data/peers_llm/, `sweep.commands.peers_llm`; `python scripts/peers_llm.py` prints every case).

Where the physics is the same (Llama-3-70B under tensor parallelism on GenZ's A100: weights and KV
cache read from HBM at decode, the matmuls at prefill, two all-reduces per block) ours is within 10%;
the larger differences are the peers' named conventions, pinned here with their size."""

import pytest

from paths import DATA
from sweep.commands.peers_llm import load_peer, our_case, peer_arch

PEERS = DATA / "peers_llm"


def _rec(peer, **kw):
    rows = [r for r in load_peer(peer, PEERS) if all(r[k] == v for k, v in kw.items())]
    assert len(rows) == 1, kw
    return rows[0]


@pytest.fixture(scope="module")
def genz_arch():
    return peer_arch("genz")


@pytest.mark.parametrize("phase, batch, tp", [("decode", 32, 8), ("decode", 1, 8), ("decode", 32, 4),
                                              ("prefill", 1, 8)])
def test_llama3_70b_tensor_parallel_within_10_percent_of_genz(genz_arch, phase, batch, tp):
    rec = _rec("genz", model="Llama-3-70B", phase=phase, batch=batch, tp=tp, pp=1, ep=1)
    ours = our_case("genz", genz_arch, rec)
    key = "ttft_s" if phase == "prefill" else "time_per_token_s"
    assert ours["status"] == "ok"
    assert ours["latency_s"] / rec[key] == pytest.approx(1.0, abs=0.10)


def test_memory_per_chip_equals_genz_plus_what_it_leaves_out(genz_arch):
    """TP 8 decode: the same KV cache to the byte (one K/V head per chip); our weights are GenZ's plus
    the input embedding's share (128,256 / 8 x 8,192 x 2 B: GenZ's decode has no embedding op) and the
    161 RMSNorm gains of 8,192 x 2 B (GenZ counts GEMM weights only)."""
    rec = _rec("genz", model="Llama-3-70B", phase="decode", batch=32, tp=8, pp=1, ep=1)
    ours = our_case("genz", genz_arch, rec)
    assert ours["kv_cache_bytes"] == rec["kv_cache_per_chip_bytes"] == 32 * 4096 * 80 * 2 * 128 * 2
    assert ours["weights_bytes"] - rec["weights_per_chip_bytes"] == 128256 // 8 * 8192 * 2 + 161 * 8192 * 2


def test_both_refuse_a_70b_on_one_80_gb_chip(genz_arch):
    rec = _rec("genz", model="Llama-3-70B", phase="decode", batch=1, tp=1, pp=1, ep=1)
    assert rec["figures_with_capacity_check_disabled"]
    assert our_case("genz", genz_arch, rec)["status"] == "does not fit"


def test_genz_mixtral_decode_reads_top_k_experts_only(genz_arch):
    """GenZ keeps ceil(top_k / ep) experts active per chip at decode whatever the batch (its ffn.py:97):
    at batch 32 its TP 2 decode reads 2 of Mixtral's 8 experts; 32 tokens x top-2 reach all 8 (ours),
    so ours is 2.3-2.7x its figure; at batch 1 (2 experts either way) the two agree within 5%."""
    b32 = _rec("genz", model="Mixtral-8x7B", phase="decode", batch=32, tp=2, pp=1, ep=1)
    b1 = _rec("genz", model="Mixtral-8x7B", phase="decode", batch=1, tp=2, pp=1, ep=1)
    assert 2.3 <= our_case("genz", genz_arch, b32)["latency_s"] / b32["time_per_token_s"] <= 2.7
    assert our_case("genz", genz_arch, b1)["latency_s"] / b1["time_per_token_s"] == pytest.approx(1.0, abs=0.05)


def test_llm_analysis_conventions_by_size():
    """llm-analysis's prefill MLP is 16 b s h^2 FLOPs (a 4h two-matrix MLP; Llama-3-70B's SwiGLU is
    3 x 28,672 / 8,192 = 10.5 h). Its attention is FlashAttention's (no score matrix in DRAM), as our
    fused step (`PLATFORMS`), and its attention FLOPs equal ours; its all-reduces equal ours (300 GB/s,
    no latency). So at TP 8 ours is its TTFT plus the SwiGLU's extra FLOPs at our peak (108 SMs x 1,024
    MACs x 2 x 1.41 GHz = 311.9 TFLOP/s): (6 x 8,192 x 28,672 - 16 x 8,192^2) / 8 x 2,048 tokens x 80
    blocks = 6.87e12 FLOPs = 22.0 ms over its 129.6 ms, 1.17x; our mapping's stalls and vector operations
    add under 0.13 (an unfused step, the scores through DRAM, is above that). Its decode counts the KV
    cache twice and floors each all-reduce at 8 us: ours is 15-25% under it at TP 8."""
    arch = peer_arch("llm-analysis")
    pre = _rec("llm-analysis", model="Llama-3-70B", phase="prefill", batch=1, tp=8, pp=1, ep=1)
    dec = _rec("llm-analysis", model="Llama-3-70B", phase="decode", batch=32, tp=8, pp=1, ep=1)
    mlp_extra_s = (6 * 8192 * 28672 - 16 * 8192 ** 2) / 8 * 2048 * 80 / (108 * 1024 * 2 * 1.41e9)
    floor = (pre["ttft_s"] + mlp_extra_s) / pre["ttft_s"]
    assert floor == pytest.approx(1.17, abs=0.005)
    assert floor <= our_case("llm-analysis", arch, pre)["latency_s"] / pre["ttft_s"] <= floor + 0.13
    assert 0.75 <= our_case("llm-analysis", arch, dec)["latency_s"] / dec["time_per_token_s"] <= 0.85
