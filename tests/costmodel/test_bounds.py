"""Lower bounds of a layer and a step (`costmodel.bounds`): one layer by hand from the hardware's
published figures, and bound <= mapped on every layer and step of a small architecture search
mapped by SALSA (a bound above a mapped figure would prune a design that could win)."""

from __future__ import annotations

import pytest

from costmodel.bounds import layer_bound, step_bounds
from costmodel.loopnest.arch import load_accelerator
from costmodel.zoo.transformer import build_transformer


def test_decode_q_proj_on_llm_ws_by_hand():
    # llm_ws: 128 x 128 MACs at 1 GHz, 0.3 pJ per MAC; one HBM2E stack: 409.6 GB/s (JESD235C, 3.2 Gb/s
    # per pin x 1,024 pins) = 3,276.8 bits per cycle at 1 GHz, 3.9 pJ/bit (O'Connor et al., MICRO 2017),
    # reads and writes on one bus. Llama-3-8B q_proj at decode batch 1: 4,096 x 4,096 8-bit weights,
    # one 4,096-wide 8-bit input and output.
    acc = load_accelerator("llm_ws")
    layer = next(iter(build_transformer("llama3_8b", phase="decode", batch=1, context=64).unique()))[0]
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
