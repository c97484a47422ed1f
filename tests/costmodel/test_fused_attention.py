"""Fused attention and element-wise fusion (`costmodel.transformer.attention`), and the vector unit
working beside the array (`costmodel.llm.step_latency`), against counts made by hand.

The hand case of the issue: one head (GQA group 1), head dim 128, 8 query positions in 4 query
tiles of 2, K/V tiles of 2, on llm_ws (8-bit activations and cache). Causal: query tile i runs
its K/V tiles 0..i, 10 (query tile, K/V tile) pairs; dense: 16."""

from __future__ import annotations

import pytest

from costmodel.llm import dram_traffic, step_latency
from costmodel.loopnest.arch import load_accelerator
from costmodel.workload import Layer, Network, VectorOp
from costmodel.transformer.attention import attention_layers, fused_attention_ops, fused_tiles
from costmodel.transformer import build_transformer


@pytest.fixture(scope="module")
def llm_ws():
    return load_accelerator("llm_ws")


def test_tiles_by_hand():
    causal = fused_tiles(8, 8, True, tile=2)
    assert causal == {(2, 2, True, True): 1, (2, 2, True, False): 3, (2, 2, False, False): 3, (2, 2, False, True): 3}
    assert sum(causal.values()) == 10
    assert sum(fused_tiles(8, 8, False, tile=2).values()) == 16
    # a decode step: one query position, 4,096 keys in 32 tiles of 128
    assert fused_tiles(1, 4096, False) == {(1, 128, True, False): 1, (1, 128, False, False): 30, (1, 128, False, True): 1}
    # partial tiles at the edges: 5 queries, 5 keys, tile 2: query tiles of 2, 2 and 1 rows
    # attending keys [0, 2), [0, 4) and [0, 5): 1, 2 and 3 K/V tiles, the last one a single key
    assert fused_tiles(5, 5, True, tile=2) == {(2, 2, True, True): 1, (2, 2, True, False): 1, (2, 2, False, True): 1,
                                               (1, 2, True, False): 1, (1, 2, False, False): 1, (1, 1, False, True): 1}


def _mapped_traffic(layers, reps, arch):
    from sweep import api
    out = {"weights": 0.0, "kv_cache": 0.0, "activations": 0.0}
    for l, r in zip(layers, reps):
        res = api.map_layer(l, arch, "loma", objective="energy")
        from costmodel.loopnest.mapping import Mapping
        for k, v in dram_traffic(l, arch, Mapping.from_dict(res.mapping)).items():
            out[k] += v * r
    return out


def test_kv_read_once_per_query_tile_and_scores_never_leave_the_chip(llm_ws):
    """By hand (bits): K and V tiles of 2 keys x 128 read from DRAM once per pair: 10 x 2 x 2 x 128
    x 8 = 40,960; Q read once per query tile (its first score tile): 4 x 2 x 128 x 8 = 8,192; the
    output written once per query tile (its last context tile): 8,192. The scores (2 x 2 per tile)
    and probabilities move nothing off chip. Dense: 16 pairs, 65,536 bits of K and V."""
    layers, reps = attention_layers(1, 128, 8, 8, True, "fused", 1, tile=2)
    t = _mapped_traffic(layers, reps, llm_ws)
    assert t == {"weights": 0.0, "kv_cache": 40_960.0, "activations": 16_384.0}
    dense = _mapped_traffic(*attention_layers(1, 128, 8, 8, False, "fused", 1, tile=2), llm_ws)
    assert dense["kv_cache"] == 16 * 2 * 2 * 128 * 8 and dense["activations"] == 16_384.0
    # unfused dense: the 8 x 8 scores written and the probabilities read back through DRAM
    unfused = _mapped_traffic(*attention_layers(1, 128, 8, 8, False, "unfused", 1), llm_ws)
    assert unfused["kv_cache"] == 2 * 8 * 128 * 8
    assert unfused["activations"] >= 8 * 128 * 8 * 2 + 8 * 8 * 8 * 2


def test_a_tile_that_cannot_stay_on_chip_is_refused():
    """The scores of a fused tile must fit the on-chip levels: an accelerator whose only I / O
    memory is DRAM cannot keep them (`Accelerator.for_layer`)."""
    from costmodel.loopnest.arch import accelerator_from_dict
    acc = load_accelerator("llm_ws")
    d = acc.to_dict()
    d["memory"] = [m for m in d["memory"] if m["name"] in ("weight_reg", "dram")]
    d.pop("dram")
    d["memory"][-1].update(read_bw=1024.0, write_bw=1024.0)
    bare = accelerator_from_dict(d)
    tile = attention_layers(1, 128, 8, 8, True, "fused", 1, tile=2)[0][1]
    with pytest.raises(ValueError, match="keeps I on chip, but no memory below 'dram' serves I"):
        bare.for_layer(tile)


def test_online_softmax_and_rescale_counts(llm_ws):
    """Vector work of the causal hand case (group 1, 2-row tiles, head dim 128): an online softmax
    on each of the 10 score tiles (4 elements, 2 rows), a rescale of the 2 x 128 partial output
    after each of the 6 non-first tiles, a normalisation per query tile (4)."""
    ops, reps = fused_attention_ops(1, 128, 8, 8, True, 1, None, ("t",), tile=2)
    by = {}
    for o, r in zip(ops, reps):
        by[o.op, o.elements] = by.get((o.op, o.elements), 0) + r
    assert by == {("online_softmax", 4): 10, ("mul", 256): 6 + 4}
    from costmodel.vector import vector_cost
    c = vector_cost(ops[0], llm_ws)
    # 4 elements x (3 adds + 1 mul + 1 exp x 4 cycles) + 2 rows x 1 exp x 4 cycles = 40 lane-cycles
    assert c.compute_cycles == 1 and c.ops == 4 * 5 + 2 and c.memory == "unified_buffer"


def test_elementwise_ops_fused_into_their_producers(llm_ws):
    """Fused: SiLU on ffn_gate's drain touches no memory; the SwiGLU multiply reads only the
    activated gate (ffn_up's output in flight) and writes nothing; the residual adds read only the
    residual; norms stay a second pass (read and write). In llm_ws's 8-bit activations (the
    bfloat16 checkpoint's 16 bits set aside)."""
    from costmodel.transformer import transformer_config
    from costmodel.vector import vector_cost
    llama = transformer_config("llama3_8b").at_accelerator_precision()
    net = build_transformer(llama, phase="decode", batch=1, context=256, fusion="fused")
    ops = {o.name: o for o in net.vector_ops}
    assert ops["act"].in_flight == 1 and ops["act"].overlaps == ("ffn_gate",)
    assert vector_cost(ops["act"], llm_ws).memory == "-"
    g = vector_cost(ops["gate_mul"], llm_ws)
    assert (g.read_bits, g.write_bits) == (14336 * 8, 0)
    r = vector_cost(ops["attn_residual"], llm_ws)
    assert (r.read_bits, r.write_bits) == (4096 * 8, 0)
    n = vector_cost(ops["attn_norm"], llm_ws)
    assert (n.read_bits, n.write_bits) == (4096 * 8, 4096 * 8)
    assert "softmax" not in ops and any(o.op == "online_softmax" for o in net.vector_ops)


def test_overlap_rule_by_hand():
    """Two matmuls A (10 cycles x 2) and B (30 cycles); vector ops: v1 (25 cycles) beside A, v2 (5)
    beside B, v3 (7) on its own. A's group hides 20 of v1's 25, B's hides all of v2: latency = 20 +
    30 + 7 + (25 - 20) + 0 = 62; serial 20 + 30 + 25 + 5 + 7 = 87."""
    a, b = Layer("A", K=4, C=4, kind="matmul"), Layer("B", K=8, C=4, kind="matmul")
    ops = (VectorOp("v1", "add", 4, overlaps=("A",)), VectorOp("v2", "add", 4, overlaps=("B",)),
           VectorOp("v3", "add", 4))
    net = Network("n", (a, b), (2, 1), vector_ops=ops, vector_repeats=(1, 1, 1))
    rows = [{"latency_cycles": 25.0, "repeat": 1}, {"latency_cycles": 5.0, "repeat": 1},
            {"latency_cycles": 7.0, "repeat": 1}]
    got = step_latency(net, [10.0, 30.0], rows)
    assert got == {"latency_cycles": 62.0, "serial_cycles": 87.0, "overlapped_cycles": 25.0}
    # an op beside both A and B joins them into one group: v1 + v2 + 20 = 50 against 20 + 30
    ops2 = (VectorOp("v1", "add", 4, overlaps=("A",)), VectorOp("v2", "add", 4, overlaps=("A", "B")),
            VectorOp("v3", "add", 4))
    rows2 = [{"latency_cycles": 25.0, "repeat": 1}, {"latency_cycles": 30.0, "repeat": 1},
             {"latency_cycles": 7.0, "repeat": 1}]
    net2 = Network("n", (a, b), (2, 1), vector_ops=ops2, vector_repeats=(1, 1, 1))
    assert step_latency(net2, [10.0, 30.0], rows2)["latency_cycles"] == 20 + 30 + 7 + (55 - 50)


def test_query_tile_by_hand():
    """--query-tile 512 on a causal prefill of 2,048 tokens: 4 query tiles of 512 positions, K/V
    tiles of 128 keys up to each query tile's last position: 4 + 8 + 12 + 16 = 40 pairs of 512 x
    128, against 16 x 17 / 2 = 136 pairs of 128 x 128 at the default tile; K and V are read once per
    pair, so 40 x 128 = 5,120 keys per head instead of 136 x 128 = 17,408."""
    from costmodel.transformer.attention import computed_pairs
    t512 = fused_tiles(2048, 2048, True, 512, 128)
    assert sum(t512.values()) == 40 and all(r == 512 and c == 128 for r, c, _, _ in t512)
    assert sum(fused_tiles(2048, 2048, True).values()) == 136
    assert computed_pairs(2048, 2048, True, "fused", 512) == 40 * 512 * 128
    net = build_transformer("llama3_8b", phase="prefill", seq=2048, fusion="fused", query_tile=512)
    # fused is the default: not named, its tile is
    assert net.name == "llama3_8b/prefill/b1/seq2048/qt512" and net.workload["query_tile"] == 512
    assert build_transformer("llama3_8b", phase="prefill", seq=2048, query_tile=512).name == net.name
    from costmodel.transformer import parse_step_name
    assert parse_step_name(net.name)[1]["query_tile"] == 512
    assert parse_step_name("llama3_8b/prefill/b1/seq2048/fused/qt512")[1] == {   # the tag named: the same step
        "phase": "prefill", "batch": 1, "seq": 2048, "fusion": "fused", "query_tile": 512}
    keys = sum(l.K * r for l, r in net if l.name.startswith("score_tile")) // (8 * 32)   # per KV head and block
    assert keys == 5120
    with pytest.raises(ValueError, match="^query_tile: 512 applies to fused attention.*fusion='unfused'"):
        build_transformer("llama3_8b", phase="prefill", query_tile=512, fusion="unfused")


def test_kv_tile_by_hand():
    """--kv-tile 512 on a decode step at context 4,096: 8 K/V tiles of 512 keys (one query
    position), so 7 rescales of the partial output per (sequence, KV head, block) instead of 31 at
    the default 128; 32 heads x 32 blocks x 4,096 pairs computed either way."""
    from costmodel.transformer.attention import computed_pairs
    from costmodel.transformer import parse_step_name
    assert fused_tiles(1, 4096, False, 128, 512) == {(1, 512, True, False): 1, (1, 512, False, False): 6,
                                                      (1, 512, False, True): 1}
    assert computed_pairs(1, 4096, False, "fused", 128, 512) == 4096
    net = build_transformer("llama3_8b", phase="decode", context=4096, fusion="fused", kv_tile=512)
    assert net.name == "llama3_8b/decode/b1/ctx4096/kt512" and net.workload["kv_tile"] == 512
    assert parse_step_name("llama3_8b/decode/b1/ctx4096/kv4/fused/qt256/kt512")[1] == {
        "phase": "decode", "batch": 1, "context": 4096, "kv_bits": 4, "fusion": "fused", "query_tile": 256,
        "kv_tile": 512}
    rescale = {v.name: r for v, r in zip(net.vector_ops, net.vector_repeats) if v.name.startswith("attn_rescale")}
    assert rescale == {"attn_rescale_4": 7 * 8 * 32}   # 4 query rows of the GQA group; 8 KV heads x 32 blocks
    assert "kv_tile" not in build_transformer("llama3_8b", phase="decode", fusion="unfused").workload
    assert build_transformer("llama3_8b", phase="decode").workload["kv_tile"] == 128   # fused, the default
    with pytest.raises(ValueError, match="^kv_tile: 512 applies to fused attention.*fusion='unfused'"):
        build_transformer("llama3_8b", phase="decode", kv_tile=512, fusion="unfused")


_ORDER_SCRIPT = """
from costmodel.llm import step_latency
from costmodel.workload import Layer, Network, VectorOp
names = ["score_first", "context", "score", "score_tail", "context_last"]
layers = tuple(Layer(n, K=4 * (i + 1), C=4, kind="matmul") for i, n in enumerate(names))
ops = (VectorOp("online_softmax", "add", 4, overlaps=tuple(names)),)
net = Network("n", layers, (1, 1, 1, 1, 1), vector_ops=ops, vector_repeats=(1,))
lat = [1.0, 1.0, 3.0, 1.0e16, 1.0]        # 1e16 + 1 + 1 + 3 + 1 in some orders loses the ones
print(repr(step_latency(net, lat, [{"latency_cycles": 1.0e16 + 100, "repeat": 1}])))
"""


def test_a_groups_sum_does_not_depend_on_string_hashing():
    """A vector operation beside five matmuls whose hidden part is a sum of five latencies: the sum
    runs in the order the operation names its layers, so every process gives the same bits (with a
    set of names it followed the process's string hash seed: 1 ulp apart on Llama-3-8B's decode
    steps at 2,177 tokens of context)."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = set()
    for seed in range(6):
        env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": root}
        out.add(subprocess.run([sys.executable, "-c", _ORDER_SCRIPT], env=env, capture_output=True, text=True,
                               check=True).stdout)
    assert len(out) == 1
