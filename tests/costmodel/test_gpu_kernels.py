"""The GPU execution effects (costmodel/gpu), each against a case worked by hand from the A100's
figures: 108 SMs x 1,024 FP16 MACs per clock, 1,410 MHz boost, L2 5,120 B per clock, 2,039 GB/s x
0.88 sustained (costmodel/presets/a100.toml), with a base clock, a device time per kernel and a
per-CTA DRAM limit set here (not the preset's)."""

import math

import pytest

from costmodel.gpu.kernels import (compute_clock_hz, decode_attention_time, gemm_time, prefill_attention_time,
                                   vector_time)
from costmodel.gpu.spec import array_for_bits, gpu_from_dict, power_from_dict
from costmodel.loopnest.arch import accelerator_from_dict, load_accelerator
from costmodel.vector import vector_cost
from costmodel.workload import VectorOp

BASE = 1275e6


@pytest.fixture(scope="module")
def gpu():
    d = load_accelerator("a100").to_dict()
    d["gpu"] = {"kernel_us": 2.0, "sm_dram_gbps": 25.0}
    d["power"] = {"tdp_w": 400.0, "base_clock_mhz": 1275.0}
    return accelerator_from_dict(d, "test")


def test_a_tensor_bound_kernel_runs_at_the_base_clock(gpu):
    assert compute_clock_hz(gpu) == BASE
    assert compute_clock_hz(load_accelerator("eyeriss_like")) == load_accelerator("eyeriss_like").clock_mhz * 1e6


def test_a_large_gemm_in_waves_of_cta_tiles(gpu):
    # 8192^3: 256 x 128 tiles -> 32 x 64 = 2,048 tiles over 108 SMs = 18.96 -> 19 waves; a tile is
    # 256 x 128 x 8,192 / 1,024 = 262,144 cycles of issue, its feed (256 + 128) x 8,192 x 2 B / (40,960 B / 8 ...
    # = 5,120 B per clock / 108 SMs = 47.4 B) = 132,710 cycles: issue binds. 19 x 262,144 / 1.275 GHz
    # = 3.906 ms, + 2 us. DRAM: 3 x 8192^2 x 2 B = 402.7 MB / (2,039 GB/s x 0.88) = 0.224 ms.
    k = gemm_time(8192, 8192, 8192, gpu)
    assert k.time_s == pytest.approx(19 * 262144 / BASE + 2e-6, rel=1e-9)
    assert k.bound == "compute" and k.dram_s == pytest.approx(3 * 8192 ** 2 * 2 / (2039e9 * 0.88), rel=2e-3)
    assert "19 wave" in k.detail


def test_a_tail_wave_costs_a_whole_wave(gpu):
    # a library of one tile, 256 x 128: 108 tiles (M = 256 x 108) run in one wave, 109 in two; with
    # the 128 x 128 tile too, 109 x 2 = 218 half-size tiles run in 3 half waves: 1.5x, not 2x
    import dataclasses
    one_tile = dataclasses.replace(gpu, gpu=dataclasses.replace(gpu.gpu, cta_tiles=((256, 128),)))
    one = gemm_time(256 * 108, 128, 4096, one_tile)
    two = gemm_time(256 * 109, 128, 4096, one_tile)
    assert two.compute_s == pytest.approx(2 * one.compute_s, rel=1e-9)
    two_tiles = dataclasses.replace(gpu, gpu=dataclasses.replace(gpu.gpu, cta_tiles=((256, 128), (128, 128))))
    assert gemm_time(256 * 109, 128, 4096, two_tiles).compute_s == pytest.approx(1.5 * one.compute_s, rel=1e-9)


def test_split_k_fills_the_sms_of_a_short_wide_reduction(gpu):
    # 64 x 128 output, K = 8,192: without a split, 64 x 64 tiles -> 2 CTAs, each fed (64 + 64) x
    # 8,192 x 2 B / (5,120 / 108 = 47.4 B per clock) = 44,237 cycles = 34.7 us. Split-K doubles
    # while tiles x splits x 2 <= 108 and 8,192 / (splits x 2) >= 128: 32 splits, 64 CTAs, one wave
    # of 1/32 the work; DRAM then binds: W 8,192 x 128 x 2 + I 64 x 8,192 x 2 + O 64 x 128 x 2 +
    # the FP32 partials written and read 2 x 64 x 128 x 4 x 32 = 5,259,264 B at 1,794 GB/s = 2.93 us.
    k = gemm_time(64, 128, 8192, gpu)
    assert "split-K 32" in k.detail and k.bound == "dram"
    assert k.time_s == pytest.approx(5259264 / (2039e9 * 0.88) + 2e-6, rel=1e-3)


def test_the_loop_nest_is_a_floor(gpu):
    k = gemm_time(64, 128, 8192, gpu, floor_s=1e-3)
    assert k.time_s == pytest.approx(1e-3 + 2e-6) and k.bound == "loop nest"


def test_a_one_row_vector_kernel_runs_on_one_cta(gpu):
    # RMSNorm of one token of 4,096 FP16: 8,192 B read + 8,192 B written = 16,384 B at 25 GB/s
    # (one CTA) = 0.655 us, + 2 us on the device
    c = vector_cost(VectorOp("n", "rmsnorm", 4096, rows=1, bits=16), gpu)
    k = vector_time(c, gpu, 1)
    assert k.time_s == pytest.approx(16384 / 25e9 + 2e-6, rel=1e-6) and k.bound == "fixed"
    big = vector_time(vector_cost(VectorOp("n", "add", 2 ** 26, inputs=2, bits=16), gpu), gpu, 2 ** 14)
    # 3 x 2^26 x 2 B = 402.7 MB at 1,794 GB/s
    assert big.time_s == pytest.approx(3 * 2 ** 27 / (2039e9 * 0.88) + 2e-6, rel=2e-3) and big.bound == "dram"


def test_decode_attention_is_limited_by_its_ctas(gpu):
    # one sequence, 1,024 cached tokens, 8 KV heads of 128: K and V = 1,024 x 8 x 128 x 2 x 2 B =
    # 4 MiB over 8 CTAs at 25 GB/s = 200 GB/s: 20.97 us + 2 us
    k = decode_attention_time(1, 1024, 32, 8, 128, gpu)
    assert k.time_s == pytest.approx(4 * 2 ** 20 / 200e9 + 2e-6, rel=1e-9) and k.bound == "cta"
    # 64 sequences: 512 CTAs, the HBM's sustained rate binds
    assert decode_attention_time(64, 1024, 32, 8, 128, gpu).bound == "dram"


def test_prefill_attention_mma_then_softmax(gpu):
    # 8,192 tokens, 32 heads of 128: 64 query blocks x 32 heads = 2,048 CTAs = 18.96 waves; a CTA:
    # 128 x 4,096 x 128 x 2 / 1,024 = 131,072 cycles at 1.275 GHz, then 128 x 4,096 scores x (3 add +
    # 1 mul + 1 exp x 16) / 256 lanes = 40,960 cycles at 1.41 GHz
    k = prefill_attention_time(8192, 32, 8, 128, gpu, 3 + 1 + 16)
    per_cta = 131072 / BASE + 40960 / 1410e6
    assert k.compute_s == pytest.approx(2048 / 108 * per_cta, rel=1e-9)
    assert k.time_s == pytest.approx(k.compute_s + 2e-6)


def test_spec_errors_name_the_key():
    with pytest.raises(ValueError, match=r"gpu.kernel_us = -1"):
        gpu_from_dict({"kernel_us": -1}, "a.toml")
    with pytest.raises(ValueError, match=r"gpu.kernel_uss"):
        gpu_from_dict({"kernel_uss": 1}, "a.toml")
    with pytest.raises(ValueError, match=r"gpu.kernel_us: missing"):
        gpu_from_dict({}, "a.toml")
    with pytest.raises(ValueError, match=r"gpu.cta_tiles"):
        gpu_from_dict({"kernel_us": 1, "cta_tiles": [[128]]}, "a.toml")
    with pytest.raises(ValueError, match=r"gpu.gemm_dram_fraction = 1.5"):
        gpu_from_dict({"kernel_us": 1, "gemm_dram_fraction": 1.5}, "a.toml")
    with pytest.raises(ValueError, match=r"power.base_clock_mhz = 2000"):
        power_from_dict({"tdp_w": 400, "base_clock_mhz": 2000}, "a.toml", 1410.0)
    with pytest.raises(ValueError, match=r"power.idle_w = 500"):
        power_from_dict({"tdp_w": 400, "idle_w": 500}, "a.toml")
    with pytest.raises(ValueError, match=r"array_by_bits.x"):
        array_for_bits({"D1": 2}, {"x": {"D1": 4}}, {"W": 8, "I": 8})
    with pytest.raises(ValueError, match=r"array_by_bits.8"):
        array_for_bits({"D1": 2}, {"8": {"D9": 4}}, {"W": 8, "I": 8})


def test_array_by_bits_picks_the_smallest_covering_width():
    t = {"8": {"D4": 32}, "4": {"D4": 64}}
    assert array_for_bits({"D1": 2, "D4": 16}, t, {"W": 16, "I": 16}) == {"D1": 2, "D4": 16}
    assert array_for_bits({"D1": 2, "D4": 16}, t, {"W": 8, "I": 8}) == {"D1": 2, "D4": 32}
    assert array_for_bits({"D1": 2, "D4": 16}, t, {"W": 4, "I": 8}) == {"D1": 2, "D4": 32}
    assert array_for_bits({"D1": 2, "D4": 16}, t, {"W": 4, "I": 4}) == {"D1": 2, "D4": 64}
    # an FP8 A100-like copy: twice the MACs per clock
    d = load_accelerator("a100").to_dict()
    d["precision"] = {"W": 8, "I": 8, "O": 32}
    d["array_by_bits"] = {"8": {"D4": 32}}
    acc = accelerator_from_dict(d)
    assert math.prod(acc.array.values()) == 2 * 108 * 1024
    assert accelerator_from_dict(acc.to_dict()).array == acc.array


def test_an_fp8_step_runs_the_tensor_cores_at_twice_the_bf16_rate():
    # H100 SXM5 whitepaper: 989.4 dense BF16 TFLOPS, 1,978.9 dense FP8: [array_by_bits] 8 = { D4 = 64 }
    from costmodel.gpu.spec import at_step_bits
    from costmodel.workload import Layer
    h = load_accelerator("h100")
    fp8 = [Layer("q", kind="matmul", B=8, C=4096, K=4096, w_bits=8, i_bits=8, fixed_bits=("W", "I"))]
    bf16 = [Layer("q", kind="matmul", B=8, C=4096, K=4096, w_bits=16, i_bits=16, fixed_bits=("W", "I"))]
    assert math.prod(at_step_bits(h, fp8).array.values()) == 2 * math.prod(h.array.values())
    assert at_step_bits(h, bf16) is h and at_step_bits(load_accelerator("eyeriss_like"), fp8).array == \
        load_accelerator("eyeriss_like").array
