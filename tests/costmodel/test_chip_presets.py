"""The a100 and tpu_v4 presets against their chips' published figures, the [dram] rate keys
(gbps_per_unit, sustained, gib_per_unit) and the fixed cost per kernel launch, each by hand."""

import math

import pytest

from costmodel.capacity import _capacity
from costmodel.llm import step_launches
from costmodel.loopnest.arch import accelerator_from_dict, load_accelerator
from costmodel.tech.dram import dram_bits_per_cycle, dram_capacity_bytes
from costmodel.transformer import build_transformer


def test_a100_peak_and_memories_match_the_whitepaper():
    a = load_accelerator("a100")
    # 312 TFLOPS dense FP16 (NVIDIA A100 whitepaper) = 108 SMs x 1,024 FMA x 2 x 1.41 GHz
    assert a.pe_count == 108 * 1024
    assert a.pe_count * 2 * a.clock_mhz * 1e6 / 1e12 == pytest.approx(311.87, abs=0.01)
    mem = {m.name: m for m in a.memories}
    assert mem["registers"].size_bits == 256 * 1024 * 8 and mem["registers"].private_to == ("D1",)
    assert mem["shared_memory"].size_bits == 164 * 1024 * 8 and mem["shared_memory"].read_bw == 128 * 8
    assert mem["l2"].size_bits == 40 * 2**20 * 8 and mem["l2"].read_bw == 5120 * 8 and mem["l2"].private_to == ()
    # 2,039 GB/s peak in 5 stacks, 88% sustained: 5 x 407.8 x 0.88 x 8e9 / 1.41e9 bits per cycle
    assert mem["dram"].read_bw == pytest.approx(2039 * 0.88 * 8e9 / 1.41e9, rel=1e-12)
    # LLMCompass's 21 us per call less the device's 2 us per kernel ([gpu] kernel_us), counted apart
    assert a.launch_overhead_us == 19.0 and a.gpu.kernel_us == 2.0
    # 80 GB in five 16 GiB stacks
    assert _capacity(a) == (80 * 2**30, "5 HBM2E stacks")


def test_tpu_v4_peak_and_memories_match_the_published_figures():
    a = load_accelerator("tpu_v4")
    # 275 TFLOPS BF16 (Jouppi et al., ISCA 2023) = 2 cores x 4 MXUs x 128 x 128 x 2 x 1.05 GHz
    assert a.pe_count * 2 * a.clock_mhz * 1e6 / 1e12 == pytest.approx(275.3, abs=0.1)
    assert a.memory("vmem").size_bits == 16 * 2**20 * 8 and a.memory("vmem").private_to == ("D3",)
    assert a.memory("cmem").size_bits == 128 * 2**20 * 8
    # 1.23e12 bytes/s (JAX's TPU table) = 4 x 307.2 GB/s, peak (no sustained figure)
    assert a.memories[-1].read_bw * 1.05e9 / 8 == pytest.approx(1228.8e9, rel=1e-12)
    # 32 GiB, not the 4 x 16 GiB of the kinds table's HBM2E stacks
    assert _capacity(a) == (32 * 2**30, "4 HBM2E stacks of 8 GiB")
    assert a.launch_overhead_us == 0.0


def test_dram_rate_keys_by_hand():
    # one HBM2E stack at the JEDEC grade, 1 GHz: 409.6e9 x 8 / 1e9 bits per cycle
    assert dram_bits_per_cycle("hbm2e", 1, 1000.0) == pytest.approx(3276.8)
    assert dram_bits_per_cycle("hbm2e", 2, 1000.0, gbps_per_unit=300.0, sustained=0.5) == pytest.approx(2400.0)
    assert dram_capacity_bytes("hbm2e", 3, gib_per_unit=8) == 24 * 2**30
    for key, v, msg in (("sustained", 1.5, "dram.sustained = 1.5"), ("sustained", 0, "dram.sustained = 0"),
                        ("gbps_per_unit", -1, "dram.gbps_per_unit = -1")):
        with pytest.raises(ValueError, match=msg):
            dram_bits_per_cycle("hbm2e", 1, 1000.0, **{key: v})


def _with(preset, **dram):
    d = load_accelerator(preset).to_dict()
    d["dram"] = {**d["dram"], **dram}
    return d


def test_dram_keys_in_toml_round_trip_and_errors():
    a = load_accelerator("a100")
    b = accelerator_from_dict(a.to_dict())
    assert b == a and (b.dram_gbps_per_unit, b.dram_sustained, b.launch_overhead_us) == (407.8, 0.88, 19.0)
    with pytest.raises(ValueError, match=r"dram.sustained = 2"):
        accelerator_from_dict(_with("a100", sustained=2))
    with pytest.raises(ValueError, match=r"dram.gib_per_unit = 'x'"):
        accelerator_from_dict(_with("a100", gib_per_unit="x"))
    with pytest.raises(ValueError, match=r"dram = .*optional gbps_per_unit"):
        accelerator_from_dict(_with("a100", speed=3))
    d = load_accelerator("a100").to_dict()
    d["launch_overhead_us"] = -1
    with pytest.raises(ValueError, match=r"launch_overhead_us = -1"):
        accelerator_from_dict(d)


def test_presets_without_the_new_keys_are_unchanged():
    for name in ("llm_ws", "tpu_like", "eyeriss_like"):
        a = load_accelerator(name)
        d = a.to_dict()
        assert "launch_overhead_us" not in d and set(d.get("dram", {"kind": 0})) <= {"kind", "units"}
        assert (a.dram_gbps_per_unit, a.dram_sustained, a.dram_gib_per_unit, a.launch_overhead_us) == (None, 1.0, None, 0.0)
    # llm_ws's DRAM: one stack at the JEDEC peak, as before
    assert load_accelerator("llm_ws").memories[-1].read_bw == pytest.approx(3276.8)


def test_a_template_keeps_the_chips_rates_when_its_units_vary():
    from costmodel.loopnest.template import ArchTemplate
    t = ArchTemplate(load_accelerator("a100"))
    d = t.design({"dram_units": 4})
    assert d.memories[-1].read_bw == pytest.approx(4 * 407.8 * 0.88 * 8e9 / 1.41e9)
    assert (d.dram_gbps_per_unit, d.dram_sustained) == (407.8, 0.88)


def test_step_launches_by_hand():
    # Llama-3-8B decode, unfused: per block 7 weight matmuls (q, k, v, o, gate, up, down), score and
    # context (one batched launch each), 9 vector ops (2 norms, 2 RoPE, softmax, 2 residuals, SiLU,
    # the gate multiply); then lm_head and the final norm: 32 x 18 + 2
    net = build_transformer("llama3_8b", phase="decode", batch=8, context=4096, fusion="unfused")
    assert step_launches(net) == 32 * (7 + 2 + 9) + 2
    # fused: attention one kernel, its online softmax inside it, the element-wise ops (RoPE, residuals,
    # SiLU, gate multiply) in their producers' drain: 7 + 1 + 2 norms per block
    fused = build_transformer("llama3_8b", phase="decode", batch=8, context=4096, fusion="fused")
    assert step_launches(fused) == 32 * (7 + 1 + 2) + 2
    # fused is the default (as LLMs are served)
    assert step_launches(build_transformer("llama3_8b", phase="decode", batch=8, context=4096)) == 32 * 10 + 2
    # causal prefill, unfused: the score / context rectangles are one launch each per block, as dense
    assert step_launches(build_transformer("llama3_8b", phase="prefill", batch=1, seq=2048, fusion="unfused")) == 578


def test_step_latency_adds_launches_times_the_fixed_cost():
    from sweep import api
    r = api.map_network(build_transformer("llama3_2_1b", phase="decode", batch=1, context=256, fusion="unfused"),
                        "a100", "loma", "latency", lpf_limit=4)
    tot = r.total
    n = 16 * 18 + 2   # Llama-3.2-1B, unfused: 16 blocks
    assert tot["launches"] == n
    # decode replays as a CUDA graph ([gpu] graph_phases): no host cost, the device's 2 us per kernel
    assert tot["launch_cycles"] == pytest.approx(n * 2e-6 * 1410e6)
    assert tot["launch_host_cycles"] == 0 and tot["launch_device_cycles"] == tot["launch_cycles"]
    pre = api.map_network(build_transformer("llama3_2_1b", phase="prefill", batch=1, seq=64, fusion="unfused"),
                          "a100", "loma", "latency", lpf_limit=4).total
    # prefill is launched eagerly: the host's 19 us and the device's 2 us per kernel (LLMCompass's 21 us)
    assert pre["launch_cycles"] == pytest.approx(pre["launches"] * (19e-6 + 2e-6) * 1410e6)
    assert tot["latency_cycles"] == pytest.approx(tot["matmul_latency_cycles"] + tot["vector_latency_cycles"]
                                                  + tot["launch_cycles"])
    assert math.isclose(tot["edp"], tot["energy_pj"] * tot["latency_cycles"])
