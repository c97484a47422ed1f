"""Lower bounds of a layer and a step (`costmodel.bounds`): one layer by hand from the hardware's
published figures, and bound <= mapped on every layer and step of a small architecture search
mapped by SALSA (a bound above a mapped figure would prune a design that could win)."""

from __future__ import annotations

import pytest

from costmodel.bounds import layer_bound, step_bounds
from costmodel.loopnest.arch import load_accelerator
from costmodel.transformer import build_transformer, transformer_config

#: Llama 3 8B in the accelerator's [precision] (8-bit on llm_ws) where no bits are given, as the hand
#: counts below assume (the bundled model is a bfloat16 checkpoint, served at 16 bits by default).
LLAMA3_8B_INT8 = transformer_config("llama3_8b").at_accelerator_precision()


def test_decode_q_proj_on_llm_ws_by_hand():
    # llm_ws: 128 x 128 MACs at 1 GHz, 0.3 pJ per MAC; one HBM2E stack: 409.6 GB/s (JESD235C, 3.2 Gb/s
    # per pin x 1,024 pins) = 3,276.8 bits per cycle at 1 GHz, 3.9 pJ/bit (O'Connor et al., MICRO 2017),
    # reads and writes on one bus. Llama-3-8B q_proj at decode batch 1: 4,096 x 4,096 8-bit weights,
    # one 4,096-wide 8-bit input and output.
    acc = load_accelerator("llm_ws")
    layer = next(iter(build_transformer(LLAMA3_8B_INT8, phase="decode", batch=1, context=64).unique()))[0]
    assert (layer.name, layer.K, layer.C, layer.B) == ("q_proj", 4096, 4096, 1)
    bits = 4096 * 4096 * 8 + 4096 * 8 + 4096 * 8
    b = layer_bound(layer, acc)
    assert b.latency_cycles == pytest.approx(bits / 3276.8)           # 40,980 cycles: DRAM
    assert b.bound_by == "dram"
    assert b.energy_pj == pytest.approx(4096 * 4096 * 0.3 + bits * 3.9)
    # compute: 16,777,216 MACs / 16,384 PEs = 1,024 cycles; at 1/64 of the PEs busy, 65,536: compute-bound
    b = layer_bound(layer, acc, utilization=1 / 64)
    assert b.latency_cycles == pytest.approx(65536) and b.bound_by == "compute"


def test_bounds_are_below_every_mapped_layer_and_step(monkeypatch):
    import sweep.engine.design_tasks as dt
    from sweep.search.bounds import _utilization
    from llm_grid_util import campaign
    from sweep.kinds.load import parse_campaign

    c = parse_campaign(campaign(
        array={"D1": [16, 32], "D2": [32]}, dram=["lpddr5", "hbm3"], dram_units=[2], clock_mhz=[1000],
        vector={"lanes": [128]}, constraints=["memory.unified_buffer.word_bits == 8 * array.D1"],
        memory={"accumulators": {"size_kib": [64], "word_bits": [1024]},
                "unified_buffer": {"size_kib": [256, 512], "word_bits": [128, 256]}}))
    space = c.architectures
    u = _utilization(c)
    dt._MAPPINGS.clear()
    out = dt.make_task(c, list(range(len(space)))).run()
    rows, tots = out["rows"].to_pylist(), out["totals"].to_pylist()
    checked = 0
    for i in range(len(space)):
        vals = space.point(i)
        did = space.design_id(vals)
        acc = space.template.design(vals, name=dt.design_name(did))
        for net in c.networks:
            t = next(t for t in tots if t["design_id"] == did and t["network"] == net.name)
            if t["status"] != "ok":
                continue
            mine = [r for r in rows if r["design_id"] == did and r["network"] == net.name]
            for (layer, _), r in zip(net.unique(), mine):
                lb = layer_bound(layer, acc, u(acc)(layer))
                assert lb.latency_cycles <= r["latency_cycles"], (did, layer.name)
                assert lb.energy_pj <= r["energy_pj"] * (1 + 1e-12), (did, layer.name)
            sb = step_bounds(net, acc, u(acc))
            assert sb["latency_cycles"] <= t["latency_cycles"] and sb["energy_pj"] <= t["energy_pj"] * (1 + 1e-12)
            assert sb["latency_cycles"] >= 0.5 * t["latency_cycles"]   # and not trivially loose
            checked += 1
    assert checked >= 6


def _one_design(**grid):
    from llm_grid_util import campaign
    from sweep.kinds.load import parse_campaign

    c = parse_campaign(campaign(**grid))
    space = c.architectures
    assert len(space) == 1
    return space.template.design(space.point(0), name="one")


def test_dram_refetch_floor_by_hand():
    # Llama-3-8B ffn_gate at a 2,048-token prefill (B 2,048, K 14,336, C 4,096; 8-bit W, I and final O)
    # on llm_ws with 1 MiB of accumulators and of unified buffer, a 128 x 256 array and one DDR5
    # channel at 1.4 GHz: 38.4 GB/s (JESD79-5, 4,800 MT/s x 64 bits) = 219.43 bits per cycle. W lives
    # in the PEs' 16-bit weight registers only (2 weights x 32,768 PEs on chip), I and O in the buffer
    # (2^20 8-bit elements each). The cheapest order of the operands' reuse (O's tile outermost) lets
    # the W and I reuse extents E_W x E_I <= 2^20: min 2,048 / E_W x |W| + 14,336 / E_I x |I| is at
    # E_W = E_I = 1,024 (|W| / |I| = 7 = 14,336 / 2,048), so W crosses the DRAM twice, I 14 times,
    # O once; every other order is dearer (W's order: E_I x E_O <= 65,536).
    from costmodel.traffic import dram_floor
    from costmodel.loopnest.reference import operand_bits

    acc = _one_design(array={"D1": [128], "D2": [256]}, dram=["ddr5"], dram_units=[1], clock_mhz=[1400],
                      vector={"lanes": [128]},
                      memory={"accumulators": {"size_kib": [1024], "word_bits": [8192]},
                              "unified_buffer": {"size_kib": [1024], "word_bits": [1024]}})
    bw = 38.4e9 * 8 / 1.4e9
    assert acc.memories[-1].read_bw == pytest.approx(bw)
    layer = next(l for l, _ in build_transformer(LLAMA3_8B_INT8, phase="prefill", batch=1, seq=2048).unique()
                 if l.name == "ffn_gate")
    assert (layer.B, layer.K, layer.C) == (2048, 14336, 4096)
    W, I, O = 14336 * 4096, 2048 * 4096, 2048 * 14336
    want = (2 * W * 8 + 14 * I * 8 + O * 8) / bw
    bits = operand_bits(layer, acc)
    floor = dram_floor(layer, acc, {"W": 8, "I": 8, "O": 8}, bits)
    assert floor == pytest.approx(want)                       # 9,633,792 cycles
    assert floor > 2.1 * (W + I + O) * 8 / bw                 # the compulsory traffic's time x 2.19
    b = layer_bound(layer, acc)
    assert b.latency_cycles == pytest.approx(want) and b.bound_by == "dram"


def test_bound_below_every_mapping_of_a_small_matmul_brute_force():
    # every loop order (LOMA, exhaustive over LPFs merged to 10 loops) of every spatial candidate of
    # a matmul whose 4 KiB buffers force re-reads: the best latency found is >= the bound, and the
    # re-read term is what binds (1.47 x the compulsory traffic's time)
    from costmodel.workload import Layer
    from sweep.engine.problem import Problem

    acc = _one_design(array={"D1": [32], "D2": [32]}, dram=["lpddr5"], dram_units=[1], clock_mhz=[1000],
                      vector={"lanes": [128]}, constraints=[],
                      memory={"accumulators": {"size_kib": [4], "word_bits": [256]},
                              "unified_buffer": {"size_kib": [4], "word_bits": [64]}})
    layer = Layer(name="mm", B=64, K=256, C=192)
    sol = Problem.layer("loma", layer, acc, objective="latency",
                        params={"spatial": "search", "spatial_candidates": "all", "lpf_limit": 10}, seed=0).solve()
    assert sol.status == "ok" and len(sol.results) == 16
    b = layer_bound(layer, acc)
    compulsory = (256 * 192 + 64 * 192 + 64 * 256) * 8 / acc.memories[-1].read_bw
    assert b.bound_by == "dram" and b.latency_cycles > 1.4 * compulsory
    assert b.latency_cycles <= sol.best.latency_cycles


def test_skipping_units_by_floor_keeps_the_best():
    # a unit (spatial candidate) whose bound exceeds the best found cannot win: skipped, the same
    # best mapping (value, loops, unrolling), fewer evaluations
    from sweep.engine.problem import Problem

    acc = _one_design(array={"D1": [32], "D2": [64]}, dram=["hbm3"], dram_units=[1], clock_mhz=[1000],
                      vector={"lanes": [128]}, constraints=[],
                      memory={"accumulators": {"size_kib": [256], "word_bits": [2048]},
                              "unified_buffer": {"size_kib": [1024], "word_bits": [256]}})
    skipped = 0
    for layer, _ in build_transformer("gpt2", phase="prefill", batch=1, seq=256).unique():
        prob = Problem.layer("salsa", layer, acc, objective="latency",
                             params={"spatial": "search", "spatial_rank": "utilization", "chains": 2,
                                     "iterations": 20, "max_evaluations": 200},
                             seed=1)
        full, fast = prob.solve(), prob.solve(skip_by_floor=True)
        assert (fast.best.value, fast.best.loops, fast.best.extra["spatial"]) == \
            (full.best.value, full.best.loops, full.best.extra["spatial"]), layer.name
        assert fast.best.evaluations <= full.best.evaluations
        skipped += len(fast.results) < len(full.results)
    assert skipped >= 2
