"""A fused step's element-wise operations overlap the matmuls that produce their input, for every
layout (issue 41): the experts of an MoE block (Mixtral's SiLU ran alone before: it named a dense
``ffn_gate`` its steps do not have), MLA's projections, a shared expert; a name the step lacks
would hide nothing."""

from __future__ import annotations

import pytest

from costmodel.transformer import build_transformer, list_transformers, read_hf_config
from paths import REPO

HF = REPO / "tests" / "data" / "hf"
MODELS = [*list_transformers(), *(HF / f"{n}.json" for n in ("qwen1_5_moe_a2_7b", "qwen3_30b_a3b", "deepseek_v3",
                                                            "qwen2_5_7b"))]


def _model(m):
    return read_hf_config(m)[0] if not isinstance(m, str) else m


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m if isinstance(m, str) else m.stem)
def test_every_overlap_names_a_layer_of_the_step(model):
    phase = "prefill" if model in ("bert_base", "vit_b16") else "decode"
    net = build_transformer(_model(model), phase=phase, batch=4, fusion="fused")
    names = {l.name for l, _ in net}
    for op in net.vector_ops:
        if op.name == "bias_add":  # the first models' fixed list (their task ids); GELU ones have no ffn_gate
            continue
        assert set(op.overlaps) <= names, (op.name, op.overlaps)


def test_mixtral_and_deepseek_elementwise_ops_ride_their_producers():
    mix = build_transformer("mixtral_8x7b", phase="decode", batch=16, fusion="fused")
    ops = {o.name: o for o in mix.vector_ops}
    assert ops["act"].overlaps == ("expert_gate",) and ops["gate_mul"].overlaps == ("expert_up",)
    assert ops["ffn_residual"].in_flight == 1 and ops["ffn_residual"].overlaps == ()  # takes the experts' sum
    v3 = build_transformer(read_hf_config(HF / "deepseek_v3.json")[0], phase="decode", batch=1, fusion="fused")
    ops = {o.name: o for o in v3.vector_ops}
    assert ops["rope_q"].overlaps == ("q_b_proj",) and ops["rope_k"].overlaps == ("kv_a_proj",)
    assert ops["shared_act"].overlaps == ("shared_gate",) and ops["dense_act"].overlaps == ("ffn_gate",)
    assert ops["act"].overlaps == ("expert_gate",) and ops["gate_mul"].overlaps == ("expert_up",)  # 8 pairs on 8 experts: no _hi layers


@pytest.mark.parametrize("n, window, tile", [(300, 64, 32), (257, 100, 64), (96, 96, 32), (500, 128, 128)])
def test_sliding_window_tiles_cover_the_band_and_skip_what_lies_before_it(n, window, tile):
    """Brute force over every (query, key) pair of a causal prefill of n tokens with a sliding window
    (query i attends keys i - window + 1 .. i): the fused tiles, placed as `fused_tiles` walks them,
    cover every pair of the band and no tile lies wholly before it; the unfused `band_blocks`
    compute at least the band's pairs, their rows add up to n, and without a binding window they
    are `causal_blocks`."""
    from costmodel.transformer.attention import band_blocks, causal_blocks, fused_tiles
    band = {(i, j) for i in range(n) for j in range(max(0, i - window + 1), i + 1)}
    covered, count = set(), 0
    for q0 in range(0, n, tile):
        rows = min(tile, n - q0)
        k0 = max(0, q0 - window + 1) // tile
        for ki in range(k0, -(-(q0 + rows) // tile)):
            cells = {(i, j) for i in range(q0, q0 + rows) for j in range(ki * tile, min((ki + 1) * tile, q0 + rows))}
            assert cells & band, (q0, ki)  # no tile wholly outside the band
            covered |= cells
            count += 1
    assert band <= covered
    assert sum(fused_tiles(n, n, True, tile, tile, window).values()) == count
    blocks = band_blocks(n, window)
    assert sum(r * c * k for r, c, k in blocks) >= len(band)
    if n <= window:
        assert blocks == causal_blocks(n)
    else:
        assert sum(r * k for r, c, k in blocks if c > r) == n - window  # the band's query blocks
