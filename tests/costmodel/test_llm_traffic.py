"""LLM inference steps (issue 28) checked against hand calculations: the DRAM traffic of one
decode step of one Llama-3-8B block on tpu_like, by role (weights, KV cache, activations), byte for
byte (`costmodel.llm.dram_traffic`); the precision of each operand by its role
(`costmodel.loopnest.reference.operand_bits`); the serving figures (`costmodel.llm.step_metrics`);
and the DRAM bound of a batch-1 decode matmul on tpu_like and eyeriss_like.

Every expected number is worked out below from the published shapes of Llama 3 8B (hidden 4096,
32 heads, 8 KV heads, head_dim 128, FFN 14336, SwiGLU; Meta-Llama-3-8B config.json) and the
accelerators' TOML files (read here, not taken from the code under test). The block is built as
those counts assume: unfused attention and the accelerator's precision (8 bits on tpu_like), not
the default step (fused attention, the checkpoint's bfloat16), whose weight bytes are counted at
the end on llm_ws."""

from __future__ import annotations

import tomllib
from types import SimpleNamespace

import pytest

from costmodel.llm import dram_traffic, step_metrics
from costmodel.loopnest.allocation import allocate
from costmodel.loopnest.arch import load_accelerator
from costmodel.loopnest.mapping import Mapping
from costmodel.loopnest.reference import evaluate, operand_bits
from costmodel.transformer import build_transformer, transformer_config
from paths import REPO
from sweep.commands.map_eval import map_layer

PRESETS = REPO / "costmodel" / "presets"

# Llama 3 8B (published config): hidden, query heads, KV heads, head_dim, FFN, blocks.
H, HEADS, KV_HEADS, HD, FFN, BLOCKS = 4096, 32, 8, 128, 14336, 32
GROUP = HEADS // KV_HEADS      # 4 query heads share one K/V head (GQA)
CTX = 4096                     # tokens in the KV cache at the decode step (the new one included)


def _toml(name: str) -> dict:
    return tomllib.loads((PRESETS / f"{name}.toml").read_text())


def _dram(name: str) -> dict:
    return next(m for m in _toml(name)["memory"] if m["name"] == "dram")


def test_the_hardware_descriptions_used_below():
    """What the hand calculations read off the TOML files: tpu_like stores W and I at 8 bits, its
    DRAM word is 128 bits with one port shared by reads and writes and no read_bw / write_bw
    (so 128 bits per cycle: bandwidth = word width, costmodel/loopnest/arch.py), clock 700 MHz;
    eyeriss_like's DRAM word is 64 bits, shared port, no read_bw (64 bits per cycle)."""
    tpu = _toml("tpu_like")
    assert tpu["precision"]["W"] == 8 and tpu["precision"]["I"] == 8 and tpu["precision"]["O_final"] == 8
    assert tpu["clock_mhz"] == 700.0
    assert _dram("tpu_like")["word_bits"] == 128 and _dram("tpu_like")["shared_port"] is True
    assert "read_bw" not in _dram("tpu_like") and "write_bw" not in _dram("tpu_like")
    assert _dram("eyeriss_like")["word_bits"] == 64 and _dram("eyeriss_like")["shared_port"] is True
    assert "read_bw" not in _dram("eyeriss_like")
    arch = load_accelerator("tpu_like")
    assert arch.memories[-1].read_bw == 128 and arch.memories[-1].size_bits is None
    assert load_accelerator("eyeriss_like").memories[-1].read_bw == 64


# ----------------------------------------------------------------------------- one block, decode b1


#: Llama 3 8B with its checkpoint's bfloat16 unstated: its steps take the accelerator's
#: [precision] (8 bits on tpu_like) where no bits are given, as the hand counts below assume.
LLAMA_AT_ACCELERATOR = transformer_config("llama3_8b").at_accelerator_precision()


def _block(**bits) -> dict:
    """The layers of one block of a Llama-3-8B decode step at batch 1, context 4096, unfused
    attention (score and context through memory), in the accelerator's precision except the
    ``bits`` given, each with its executions per block (the network repeats block layers 32
    times, score / context batch x kv_heads x 32 times)."""
    net = build_transformer(LLAMA_AT_ACCELERATOR, phase="decode", batch=1, context=CTX, fusion="unfused", **bits)
    out = {}
    for layer, rep in net:
        if layer.name == "lm_head":
            continue
        assert rep % BLOCKS == 0
        out[layer.name] = (layer, rep // BLOCKS)
    return out


def _mapped(block: dict, names=None) -> dict:
    """name -> (layer, executions per block, DRAM bytes by role of one execution, report) under
    the best LOMA mapping on tpu_like."""
    arch = load_accelerator("tpu_like")
    out = {}
    for name, (layer, rep) in block.items():
        if names is not None and name not in names:
            continue
        res = map_layer(layer, arch, "loma")
        mapping = Mapping.from_dict(res["mapping"])
        by_role = {k: v / 8 for k, v in dram_traffic(layer, arch, mapping).items()}  # bits -> bytes
        out[name] = (layer, rep, by_role, evaluate(layer, arch, mapping))
    return out


@pytest.fixture(scope="module")
def block():
    return _mapped(_block())


def test_the_block_layers_by_hand():
    """(B rows, C contracted, K columns, W role, O role, executions per block) of each matmul: the
    projections at B = 1 token; score and context once per KV head (8), their B the 4 query heads
    of its group (decode: one query row each), C / K head_dim and the 4096 cached tokens."""
    got = {n: (l.B, l.C, l.K, l.w_role, l.o_role, r) for n, (l, r) in _block().items()}
    assert got == {
        "q_proj": (1, H, HEADS * HD, "weight", "activation", 1),          # 4096 -> 4096
        "k_proj": (1, H, KV_HEADS * HD, "weight", "kv_cache", 1),         # 4096 -> 1024
        "v_proj": (1, H, KV_HEADS * HD, "weight", "kv_cache", 1),
        "score": (GROUP, HD, CTX, "kv_cache", "activation", KV_HEADS),    # q (4 x 128) . K^T (128 x 4096)
        "context": (GROUP, CTX, HD, "kv_cache", "activation", KV_HEADS),  # p (4 x 4096) . V (4096 x 128)
        "o_proj": (1, HEADS * HD, H, "weight", "activation", 1),
        "ffn_gate": (1, H, FFN, "weight", "activation", 1),
        "ffn_up": (1, H, FFN, "weight", "activation", 1),
        "ffn_down": (1, FFN, H, "weight", "activation", 1),
    }


def _per_block(block: dict, role: str) -> float:
    return sum(rep * by_role[role] for _, rep, by_role, _ in block.values())


def test_weights_are_read_once_per_step(block):
    """8-bit weights (tpu_like [precision] W = 8): one byte each, every weight read from DRAM once.
    q, o: 4096 x 4096 = 16,777,216 B each; k, v: 4096 x 1024 = 4,194,304 B each; gate, up, down:
    4096 x 14336 = 58,720,256 B each. Block: 2 x 16,777,216 + 2 x 4,194,304 + 3 x 58,720,256
    = 33,554,432 + 8,388,608 + 176,160,768 = 218,103,808 B. score / context read no weights."""
    expected = {"q_proj": 4096 * 4096, "o_proj": 4096 * 4096, "k_proj": 4096 * 1024, "v_proj": 4096 * 1024,
                "ffn_gate": 4096 * 14336, "ffn_up": 4096 * 14336, "ffn_down": 14336 * 4096,
                "score": 0, "context": 0}
    assert {n: by_role["weights"] for n, (_, _, by_role, _) in block.items()} == expected
    assert _per_block(block, "weights") == 4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336 == 218_103_808


def test_kv_cache_is_read_once_per_kv_head(block):
    """The KV cache is an activation: 8 bits on tpu_like ([precision] I, as a kv_cache W operand
    takes). One score execution reads one KV head's K: 4096 tokens x 128 = 524,288 B, once for the
    4 query heads of its group (they are its B rows: the K tile stays in the weight register while
    B runs below it); context reads that head's V alike. Per block: 2 (K and V) x 8 KV heads x
    4096 x 128 = 8,388,608 B."""
    for name in ("score", "context"):
        assert block[name][2]["kv_cache"] == CTX * HD == 524_288
    assert _per_block(block, "kv_cache") - _written_kv(block) == 2 * KV_HEADS * CTX * HD == 8_388_608


def _written_kv(block: dict) -> float:
    return sum(rep * block[n][2]["kv_cache"] for n, (_, rep, _, _) in block.items() if n in ("k_proj", "v_proj"))


def test_kv_cache_written_by_k_and_v_projections(block):
    """The new token's K and V (outputs of k_proj and v_proj, o_role kv_cache): 8 KV heads x 128 =
    1024 B each at 8 bits ([precision] O_final), written once: 2 x 8 x 128 = 2048 B per block."""
    assert block["k_proj"][2]["kv_cache"] == block["v_proj"][2]["kv_cache"] == KV_HEADS * HD == 1024
    assert _written_kv(block) == 2 * KV_HEADS * HD == 2048


def test_activations_by_hand(block):
    """Activations at 8 bits ([precision] I and O_final): each layer reads its input once and writes
    its output once at final precision (the partial sums stay in the accumulators: with every
    loop below the accumulators' boundary no O-irrelevant loop is above it). No fusion: q, k and v
    each read the 4096-element normed input from DRAM, gate and up each the FFN input.

    q_proj, o_proj: in 4096 + out 4096 = 8192 B. k_proj, v_proj: in 4096 (the output is KV cache).
    score (x 8): in q of the group 4 x 128 = 512 + out scores 4 x 4096 = 16384 -> 16,896 B.
    context (x 8): in probabilities 4 x 4096 = 16384 + out 4 x 128 = 512 -> 16,896 B.
    gate, up: 4096 + 14336 = 18,432 B; down: 14336 + 4096 = 18,432 B.
    Block: 2 x 8192 + 2 x 4096 + 16 x 16,896 + 3 x 18,432 = 16,384 + 8,192 + 270,336 + 55,296
    = 350,208 B."""
    expected = {"q_proj": 8192, "o_proj": 8192, "k_proj": 4096, "v_proj": 4096, "score": 16896,
                "context": 16896, "ffn_gate": 18432, "ffn_up": 18432, "ffn_down": 18432}
    assert {n: by_role["activations"] for n, (_, _, by_role, _) in block.items()} == expected
    assert _per_block(block, "activations") == 2 * 8192 + 2 * 4096 + 16 * 16896 + 3 * 18432 == 350_208


def test_traffic_is_the_reports_dram_accesses(block):
    """dram_traffic is the cost report's DRAM reads + writes x 128 bits, whichever role: on ffn_gate
    W 58,720,256 B = 3,670,016 words, I 4096 B = 256 words, O 14336 B = 896 words."""
    _, _, by_role, rep = block["ffn_gate"]
    dram = {op: levels[-1] for op, levels in rep.breakdown["operands"].items()}
    assert dram["W"]["reads"] == 3_670_016 and dram["W"]["writes"] == 0
    assert dram["I"]["reads"] == 256 and dram["O"]["writes"] == 896 and dram["O"]["reads"] == 0
    assert sum(by_role.values()) == (3_670_016 + 256 + 896) * 128 / 8


# ----------------------------------------------------------------------------- precisions by role


def test_operand_bits_by_role():
    """An accelerator storing W at 4 bits and I at 16: a weight W takes 4, a KV-cache W (score,
    context) is an activation and takes I's 16; without [precision] I it falls back to the
    layer's i_bits (8)."""
    b = _block()
    arch = SimpleNamespace(precisions={"W": 4, "I": 16, "O": 32, "O_final": 8})
    assert operand_bits(b["q_proj"][0], arch) == {"W": 4, "I": 16, "O": 32, "O_final": 8}
    assert operand_bits(b["score"][0], arch) == {"W": 16, "I": 16, "O": 32, "O_final": 8}
    assert operand_bits(b["context"][0], arch)["W"] == 16
    assert operand_bits(b["score"][0], SimpleNamespace(precisions={"W": 4}))["W"] == 8
    tpu = load_accelerator("tpu_like")
    assert operand_bits(b["score"][0], tpu)["W"] == 8


def test_fixed_bits_override_the_accelerators_precision():
    """weight_bits=4 fixes W of the weight layers at 4 on tpu_like ([precision] W = 8) and leaves
    the KV cache at I's 8; kv_bits=4 fixes the cache (W of score / context, O_final of k / v);
    act_bits=16 fixes I and O_final everywhere and the cache with them."""
    tpu = load_accelerator("tpu_like")
    w4 = _block(weight_bits=4)
    assert operand_bits(w4["ffn_gate"][0], tpu) == {"W": 4, "I": 8, "O": 32, "O_final": 8}
    assert operand_bits(w4["score"][0], tpu)["W"] == 8
    kv4 = _block(kv_bits=4)
    assert operand_bits(kv4["score"][0], tpu) == {"W": 4, "I": 8, "O": 32, "O_final": 8}
    assert operand_bits(kv4["k_proj"][0], tpu) == {"W": 8, "I": 8, "O": 32, "O_final": 4}
    assert operand_bits(kv4["q_proj"][0], tpu) == {"W": 8, "I": 8, "O": 32, "O_final": 8}
    a16 = _block(act_bits=16)
    assert operand_bits(a16["context"][0], tpu) == {"W": 16, "I": 16, "O": 32, "O_final": 16}
    assert operand_bits(a16["ffn_up"][0], tpu) == {"W": 8, "I": 16, "O": 32, "O_final": 16}


def test_weight_bits_4_halves_the_weight_bytes():
    """ffn_gate at 4-bit weights: 4096 x 14336 / 2 = 29,360,128 B, activations unchanged (18,432 B)."""
    got = _mapped(_block(weight_bits=4), {"ffn_gate"})["ffn_gate"][2]
    assert got == {"weights": 4096 * 14336 / 2, "kv_cache": 0.0, "activations": 18432}


def test_kv_bits_4_halves_the_kv_cache_bytes():
    """kv_bits=4: read 2 x 8 x 4096 x 128 / 2 = 4,194,304 B per block (262,144 B per score /
    context execution), written 2 x 8 x 128 / 2 = 1024 B (512 B per k / v projection); the
    activations stay at 8 bits (score, context 16,896 B each; k, v 4096 B)."""
    kv4 = _mapped(_block(kv_bits=4), {"score", "context", "k_proj", "v_proj"})
    for name in ("score", "context"):
        assert kv4[name][2] == {"weights": 0.0, "kv_cache": CTX * HD / 2, "activations": 16896}
    for name in ("k_proj", "v_proj"):
        assert kv4[name][2] == {"weights": 4096 * 1024, "kv_cache": KV_HEADS * HD / 2, "activations": 4096}
    assert _per_block(kv4, "kv_cache") - _written_kv(kv4) == 2 * KV_HEADS * CTX * HD / 2 == 4_194_304
    assert _written_kv(kv4) == 2 * KV_HEADS * HD / 2 == 1024


# ----------------------------------------------------------------------------- serving figures


def test_step_metrics_decode_batch_8():
    """Decode at batch 8, 14,000,000 cycles at 700 MHz = 0.02 s per step = time per output token;
    tokens/s = 8 / 0.02 = 400; 3.5e12 pJ = 3.5 J per step, 3.5 / 8 = 0.4375 J per token."""
    w = build_transformer("llama3_8b", phase="decode", batch=8, context=CTX).workload
    m = step_metrics(w, 3.5e12, 14_000_000, 700.0)
    assert m["phase"] == "decode" and m["tokens"] == 8
    assert m["latency_s"] == pytest.approx(0.02) and m["time_per_token_s"] == pytest.approx(0.02)
    assert m["tokens_per_s"] == pytest.approx(400.0) == 8 / m["latency_s"]
    assert m["energy_j"] == pytest.approx(3.5) and m["energy_per_token_j"] == pytest.approx(0.4375)
    assert "ttft_s" not in m


def test_step_metrics_prefill_batch_2_seq_512():
    """Prefill of 2 x 512 = 1024 prompt tokens in 70,000,000 cycles at 700 MHz = 0.1 s = time to
    first token; 1024 / 0.1 = 10,240 tokens/s; 2.048e12 pJ = 2.048 J, 2.048 / 1024 = 2 mJ/token."""
    w = build_transformer("llama3_8b", phase="prefill", batch=2, seq=512).workload
    m = step_metrics(w, 2.048e12, 70_000_000, 700.0)
    assert m["tokens"] == 1024
    assert m["ttft_s"] == pytest.approx(0.1) == m["latency_s"]
    assert m["tokens_per_s"] == pytest.approx(10_240.0)
    assert m["energy_per_token_j"] == pytest.approx(2e-3)
    assert "time_per_token_s" not in m


def test_step_metrics_unknown_figures_are_none():
    """No valid mapping (inf) or no figure (None): the figures derived from it are None."""
    w = build_transformer("llama3_8b", phase="decode", batch=8, context=CTX).workload
    m = step_metrics(w, float("inf"), float("inf"), 700.0)
    assert m["tokens"] == 8
    assert all(m[k] is None for k in ("latency_s", "energy_j", "tokens_per_s", "energy_per_token_j",
                                      "time_per_token_s"))
    m = step_metrics(w, 1.6e12, None, 700.0)  # energy known, latency not
    assert m["latency_s"] is None and m["tokens_per_s"] is None and m["energy_per_token_j"] == pytest.approx(0.2)
    p = step_metrics(build_transformer("gpt2", phase="prefill", batch=1, seq=16).workload, None, float("inf"), 700.0)
    assert p["ttft_s"] is None and p["energy_j"] is None and p["tokens"] == 16


# ----------------------------------------------------------------------------- the DRAM bound

#: ffn_gate's weights: 4096 x 14336 x 8 bits = 469,762,048 bits.
GATE_W_BITS = 4096 * 14336 * 8


def test_decode_matmul_is_dram_bound_on_tpu_like(block):
    """ffn_gate at batch 1 on tpu_like: the weights need 469,762,048 / 128 = 3,670,016 cycles on the
    DRAM port; the array computes 4096 / 32 x 14336 / 32 = 128 x 448 = 57,344 cycles (64x less).
    The latency is within 2 % of the bound; exactly, the shared DRAM port also moves I (256
    words) and O (896 words), all within the whole layer's window (the weight register's run has no
    W-irrelevant loop, the unified buffer is double-buffered): 3,670,016 + 256 + 896 = 3,671,168."""
    bound = GATE_W_BITS / 128
    assert bound == 3_670_016
    rep = block["ffn_gate"][3]
    assert rep.breakdown["compute_cycles"] == 57_344
    assert bound <= rep.latency_cycles <= 1.02 * bound
    assert rep.latency_cycles == 3_670_016 + 256 + 896


def test_decode_matmul_is_dram_bound_on_eyeriss_like_with_spatial_search():
    """eyeriss_like: DRAM word 64 bits, 64 bits per cycle: 469,762,048 / 64 = 7,340,032 cycles.
    With the spatial unrolling searched under its hint (a matmul has OX = OY = FY = 1, so at most
    the 12 PEs of D2 work: 4096 x 14336 / 12 = 4,893,355 compute cycles < the bound) the latency
    is within 2 % of it."""
    arch = load_accelerator("eyeriss_like")
    gate = _block()["ffn_gate"][0]
    res = map_layer(gate, arch, "loma", params={"spatial": "search"})
    bound = GATE_W_BITS / 64
    assert bound == 7_340_032
    assert bound <= res["latency_cycles"] <= 1.02 * bound


def test_eyeriss_like_fixed_spatial_leaves_a_matmul_compute_bound():
    """Finding: eyeriss_like's own [spatial] (D1: OX 14, D2: FY 3 x K 4), which the loop-order
    mappers use by default (spatial = fixed when the accelerator has one), unrolls only K 4 on a
    matmul (OX = FY = 1): 4 of 168 PEs work, and every mapping computes 4096 x 14336 / 4 =
    14,680,064 cycles, twice the DRAM bound of 7,340,032: a decode step mapped with the defaults
    on eyeriss_like is compute-bound, not DRAM-bound."""
    arch = load_accelerator("eyeriss_like")
    gate = _block()["ffn_gate"][0]
    loops = [("C", 2)] * 12 + [("K", 2)] * 9 + [("K", 7)]   # 4096 = 2^12; 14336 / 4 = 3584 = 2^9 x 7
    rep = evaluate(gate, arch, allocate(gate, arch, None, loops))
    assert rep.valid, rep.reason
    assert rep.breakdown["compute_cycles"] == 4096 * 3584 == 14_680_064 == 2 * GATE_W_BITS / 64
    assert rep.breakdown["utilization"] == pytest.approx(4 / 168)
    assert rep.latency_cycles >= 14_680_064 > 1.02 * GATE_W_BITS / 64


@pytest.mark.slow
def test_eyeriss_like_default_mapping_of_a_decode_matmul():
    """The same finding with the mapper's defaults (LOMA, spatial fixed): its best latency is at
    least the 14,680,064 compute cycles, over 2x the DRAM bound (about 12 s)."""
    res = map_layer(_block()["ffn_gate"][0], load_accelerator("eyeriss_like"), "loma")
    assert res["spatial"] == {"D1": [["OX", 1]], "D2": [["FY", 1], ["K", 4]]}
    assert res["latency_cycles"] >= 14_680_064 > 1.02 * GATE_W_BITS / 64


def test_energy_breakdown_adds_up_to_the_step_and_prices_dram_weights_by_hand():
    """`costmodel.llm.energy_breakdown` of GPT-2's decode step (context 64) on tpu_like: its cells
    sum to `sweep map`'s step energy (matmuls + vector operations), and the DRAM cell of the
    weights is GPT-2's weights read once (988,256,256 bits, tied LM head included: see
    tests/sweep/test_llm_cli.py) x tpu_like's 6.25 pJ/bit (800 pJ per 128-bit word)."""
    from costmodel.llm import energy_breakdown
    from costmodel.loopnest.mapping import Mapping
    from costmodel.zoo import load_network
    from sweep.commands.map_eval import map_network

    acc = load_accelerator("tpu_like")
    net = load_network("gpt2", phase="decode", batch=1, context=64)
    res = map_network(net, acc, "loma", "energy")
    b = energy_breakdown(net, acc, [Mapping.from_dict(r["mapping"]) for r in res["layers"]])
    assert b["total_pj"] == pytest.approx(res["total"]["energy_pj"], rel=1e-12)
    cell = {(c["where"], c["carries"]): c["energy_pj"] for c in b["cells"]}
    assert cell[("dram", "weights")] == pytest.approx(988_256_256 * 6.25)
    assert sum(c["share"] for c in b["cells"]) == pytest.approx(1.0)


# ----------------------------------------------------------------------------- the default: the checkpoint's bits

#: Llama 3 8B's weights a decode step reads (Meta-Llama-3-8B config.json: hidden 4096, 32 layers,
#: 32 heads and 8 KV heads of head_dim 128, FFN 14336, vocab 128256, tie_word_embeddings false).
#: Per block: q, o 4096 x 4096 = 16,777,216 each; k, v 4096 x (8 x 128) = 4,194,304 each; gate,
#: up, down 4096 x 14336 = 58,720,256 each: 33,554,432 + 8,388,608 + 176,160,768 = 218,103,808.
#: 32 blocks: 6,979,321,856; the LM head (its own matrix) 4096 x 128256 = 525,336,576; the step:
#: 7,504,658,432 weights (the 525,336,576-entry embedding is looked up one row per token, no
#: matmul: with it, 8,029,995,008, the published "8B").
LLAMA3_8B_STEP_WEIGHTS = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 4096 * 128256


def _weight_bytes(net, arch) -> float:
    """The DRAM bytes of weights one step ``net`` moves under each layer's best LOMA mapping."""
    total = 0.0
    for layer, rep in net:
        if layer.w_role == "weight":
            mapping = Mapping.from_dict(map_layer(layer, arch, "loma")["mapping"])
            total += rep * dram_traffic(layer, arch, mapping)["weights"] / 8
    return total


def test_default_decode_step_moves_the_bfloat16_checkpoints_weights():
    """llama3_8b's default decode step (batch 1, context 2048) states no bits, so it takes its
    checkpoint's (config.json torch_dtype bfloat16): 16-bit weights, over llm_ws's [precision]
    W = 8. Every weight is read once (batch 1: no weight reuse to lose): 7,504,658,432 weights x
    2 B = 15,009,316,864 B, twice the 7,504,658,432 B of the same step at weight_bits=8."""
    assert LLAMA3_8B_STEP_WEIGHTS == 7_504_658_432
    assert LLAMA3_8B_STEP_WEIGHTS + 4096 * 128256 == 8_029_995_008
    arch = load_accelerator("llm_ws")
    assert arch.precisions["W"] == 8
    default = build_transformer("llama3_8b", phase="decode", batch=1, context=2048)
    w8 = build_transformer("llama3_8b", phase="decode", batch=1, context=2048, weight_bits=8)
    assert default.name == "llama3_8b/decode/b1/ctx2048" and w8.name == "llama3_8b/decode/b1/ctx2048/w8"
    rec = default.workload["precision"]
    assert (rec["weight_bits"], rec["weight_from"], rec["checkpoint_dtype"]) == (16, "checkpoint", "bfloat16")
    assert _weight_bytes(default, arch) == LLAMA3_8B_STEP_WEIGHTS * 2 == 15_009_316_864
    assert _weight_bytes(w8, arch) == LLAMA3_8B_STEP_WEIGHTS == 7_504_658_432
