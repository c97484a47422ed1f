"""DRAM kinds (`costmodel.tech.dram`): the data and its sources, bits per cycle and energy per word
worked by hand, the clock, errors naming the key, and a DRAM level that an accelerator takes and
the reference evaluator runs (a DRAM-bound layer whose seconds do not change with the clock)."""

import math

import numpy as np
import pytest

from costmodel.loopnest.arch import accelerator_from_dict, dram_level, load_accelerator
from costmodel.loopnest.ordering import OrderingEvaluator
from costmodel.loopnest.reference import evaluate
from costmodel.tech.dram import (DRAM_KINDS, DramSpec, default_word_bits, dram_area_mm2, dram_bits_per_cycle,
                                 dram_spec)
from costmodel.workload import Layer


def test_kinds_units_and_jedec_bandwidths():
    assert DRAM_KINDS == ("lpddr5", "ddr5", "hbm2e", "hbm3", "hbm3e", "gddr6", "gddr6x", "gddr7")
    # GB/s per unit = transfers/s x data bits / 8, from the JEDEC speed grades:
    # LPDDR5-6400 x16: 6400e6 x 16 / 8 = 12.8e9; DDR5-4800 64-bit: 4800e6 x 64 / 8 = 38.4e9;
    # HBM2E 3.2 Gb/s x 1024 / 8 = 409.6e9; HBM3 6.4 Gb/s x 1024 / 8 = 819.2e9; the vendors' parts:
    # HBM3E 9.2 Gb/s x 1024 / 8 (Micron 2023); GDDR6 18 Gb/s, GDDR6X 21 Gb/s, GDDR7 32 Gb/s x 32 / 8.
    expected = {"lpddr5": 6400e6 * 16 / 8, "ddr5": 4800e6 * 64 / 8, "hbm2e": 3.2e9 * 1024 / 8,
                "hbm3": 6.4e9 * 1024 / 8, "hbm3e": 9.2e9 * 1024 / 8, "gddr6": 18e9 * 32 / 8,
                "gddr6x": 21e9 * 32 / 8, "gddr7": 32e9 * 32 / 8}
    for kind, bytes_per_s in expected.items():
        s = dram_spec(kind)
        assert isinstance(s, DramSpec) and s.name == kind
        assert s.gbps_per_unit * 1e9 == pytest.approx(bytes_per_s, rel=1e-12)
    assert [dram_spec(k).unit for k in DRAM_KINDS] == ["x16 channel", "64-bit channel", "stack", "stack", "stack",
                                                       "x32 channel", "x32 channel", "x32 channel"]
    assert [dram_spec(k).default_units for k in DRAM_KINDS] == [4, 2, 1, 1, 1, 12, 12, 16]


def test_every_figure_has_a_source_and_estimates_are_marked():
    for kind in DRAM_KINDS:
        s = dram_spec(kind)
        assert set(s.sources) == {"unit", "gbps_per_unit", "pj_per_bit", "phy_area_mm2_per_unit", "default_units",
                                  "min_units", "max_units", "capacity_gib_per_unit"}
        assert all(len(src) > 10 for src in s.sources.values())
        # no LPDDR5, DDR5 or HBM3 energy was measured for this table, and every PHY area is an estimate
        assert {"pj_per_bit", "phy_area_mm2_per_unit"} <= s.estimates
        assert s.min_units == 1 <= s.default_units <= s.max_units
    assert "O'Connor" in dram_spec("hbm2e").sources["pj_per_bit"]
    assert "JESD238" in dram_spec("hbm3").sources["gbps_per_unit"]
    assert "gbps_per_unit" not in dram_spec("lpddr5").estimates


def test_hbm3_one_stack_at_1ghz():
    # 819.2 GB/s x 8 bits / 1e9 cycles/s = 6553.6 bits per cycle; the default word is the largest
    # power of two not above it, 4096 bits; energy per word = 3.9 pJ/bit x 4096 = 15974.4 pJ.
    lv = dram_level("hbm3", 1, 1000.0)
    assert lv.read_bw == lv.write_bw == pytest.approx(6553.6, rel=1e-12)
    assert lv.word_bits == 4096
    assert lv.read_pj == lv.write_pj == pytest.approx(3.9 * 4096, rel=1e-12) == pytest.approx(15974.4)
    assert lv.size_bits is None and lv.unbounded and lv.shared_port and lv.private_to == ()
    assert lv.name == "dram" and lv.operands == ("W", "I", "O")


def test_lpddr5_four_channels_at_700mhz():
    # 4 x 12.8e9 B/s x 8 / 7e8 cycles/s = 409.6e9 / 7e8 = 585.142857... bits per cycle; word 512
    # (2^9 <= 585.14 < 2^10); energy per word = 5.0 pJ/bit x 512 = 2560 pJ.
    lv = dram_level("lpddr5", 4, 700)
    assert lv.read_bw == lv.write_bw == pytest.approx(4 * 12.8e9 * 8 / 7e8, rel=1e-12)
    assert lv.read_bw == pytest.approx(585.142857, abs=1e-6)
    assert lv.word_bits == 512
    assert lv.read_pj == lv.write_pj == pytest.approx(2560.0, rel=1e-12)


@pytest.mark.parametrize("kind", DRAM_KINDS)
def test_energy_per_word_is_pj_per_bit_times_word_bits(kind):
    s = dram_spec(kind)
    for word in (8, 256, 1000):
        lv = dram_level(kind, s.default_units, 1000.0, word_bits=word)
        assert lv.word_bits == word
        assert lv.read_pj == lv.write_pj == pytest.approx(s.pj_per_bit * word, rel=1e-12)
        # the word sets the access granularity, not the bandwidth
        assert lv.read_bw == pytest.approx(dram_bits_per_cycle(kind, s.default_units, 1000.0), rel=1e-12)


@pytest.mark.parametrize("bits_per_cycle, word", [
    (6553.6, 4096), (585.142857, 512), (4096.0, 4096), (4095.99, 2048), (8.0, 8), (7.9, 8), (0.25, 8),
    (13107.2, 8192),
])
def test_default_word_is_the_largest_power_of_two_not_above_the_bits_per_cycle(bits_per_cycle, word):
    assert default_word_bits(bits_per_cycle) == word


def test_the_clock_scales_bits_per_cycle_inversely():
    # HBM3, one stack: 6553.6 bits/cycle at 1000 MHz, 13107.2 at 500 MHz, 3276.8 at 2000 MHz;
    # bits per cycle x clock = the bytes/s x 8 at every clock.
    for mhz, bpc in ((1000.0, 6553.6), (500.0, 13107.2), (2000.0, 3276.8)):
        assert dram_bits_per_cycle("hbm3", 1, mhz) == pytest.approx(bpc, rel=1e-12)
        assert dram_bits_per_cycle("hbm3", 1, mhz) * mhz * 1e6 == pytest.approx(819.2e9 * 8, rel=1e-12)
    # units scale linearly: 8 stacks at 1 GHz = 52428.8 bits per cycle
    assert dram_bits_per_cycle("hbm3", 8, 1000.0) == pytest.approx(8 * 6553.6, rel=1e-12)


def test_one_gib_of_weights_over_hbm3_at_1ghz():
    # 1 GiB = 2^30 bytes = 8 x 2^30 = 2^33 bits; at 6553.6 bits/cycle: 2^33 / 6553.6 = 1,310,720
    # cycles = 1.31072 ms at 1 GHz (= 2^30 B / 819.2e9 B/s). In 4096-bit words: 2^33 / 2^12 = 2^21
    # words exactly, taking 2^21 x 4096 / 6553.6 cycles, the same; energy 2^21 x 15974.4 pJ =
    # 2^33 x 3.9 pJ = 33,500,744,908.8 pJ = 33.5 mJ.
    lv = dram_level("hbm3", 1, 1000.0)
    bits = 8 * 2 ** 30
    words = math.ceil(bits / lv.word_bits)
    assert words == 2 ** 21
    cycles = words * lv.word_bits / lv.read_bw
    assert cycles == pytest.approx(8 * 2 ** 30 / 6553.6, rel=1e-12) == pytest.approx(1_310_720.0, rel=1e-12)
    assert cycles / 1e9 == pytest.approx(2 ** 30 / 819.2e9, rel=1e-12)
    assert words * lv.read_pj == pytest.approx(33_500_744_908.8, rel=1e-12)


def test_area_is_units_times_the_phy_area():
    # HBM2E PHY 10.45 mm^2 per stack (LLMCompass, ISCA 2024): 2 stacks 20.9 mm^2; DDR5 2 x 1.45
    # mm^2 per 64-bit channel = 2.9: 2 channels 5.8 mm^2; LPDDR5 16 DQ of that: 0.725 per channel.
    assert dram_area_mm2("hbm2e", 2) == pytest.approx(20.9)
    assert dram_area_mm2("hbm3", 1) == pytest.approx(10.45)
    assert dram_area_mm2("ddr5", 2) == pytest.approx(5.8)
    assert dram_area_mm2("lpddr5", 4) == pytest.approx(2.9)


@pytest.mark.parametrize("call, match", [
    (lambda: dram_spec("hbm9"), r"dram = 'hbm9': expected one of \['lpddr5', 'ddr5', 'hbm2e', 'hbm3', 'hbm3e', 'gddr6', 'gddr6x', 'gddr7'\]"),
    (lambda: dram_level("hbm9", 1, 1000.0), r"dram = 'hbm9'"),
    (lambda: dram_area_mm2("HBM3", 1), r"dram = 'HBM3'"),
    (lambda: dram_spec(None), r"dram = None"),
    (lambda: dram_level("hbm3", 0, 1000.0), r"units = 0: expected an integer from 1 to 8"),
    (lambda: dram_level("hbm3", 9, 1000.0), r"units = 9: expected an integer from 1 to 8"),
    (lambda: dram_level("lpddr5", 33, 1000.0), r"units = 33: expected an integer from 1 to 32"),
    (lambda: dram_level("ddr5", 2.0, 1000.0), r"units = 2.0"),
    (lambda: dram_level("ddr5", True, 1000.0), r"units = True"),
    (lambda: dram_area_mm2("ddr5", 13), r"units = 13: expected an integer from 1 to 12"),
    (lambda: dram_level("hbm3", 1, 0), r"clock_mhz = 0: expected a finite number > 0"),
    (lambda: dram_level("hbm3", 1, -700.0), r"clock_mhz = -700.0"),
    (lambda: dram_level("hbm3", 1, math.inf), r"clock_mhz = inf"),
    (lambda: dram_level("hbm3", 1, math.nan), r"clock_mhz = nan"),
    (lambda: dram_bits_per_cycle("hbm3", 1, "1000"), r"clock_mhz = '1000'"),
    (lambda: dram_level("hbm3", 1, 1000.0, word_bits=0), r"word_bits = 0: expected a positive integer"),
    (lambda: dram_level("hbm3", 1, 1000.0, word_bits=64.0), r"word_bits = 64.0"),
    (lambda: dram_level("hbm3", 1, 1000.0, operands=("W", "X")), r"operands = \('W', 'X'\)"),
    (lambda: dram_level("hbm3", 1, 1000.0, operands=()), r"operands = \(\)"),
    (lambda: dram_level("hbm3", 1, 1000.0, operands=("W", "W")), r"operands = \('W', 'W'\)"),
    (lambda: dram_level("hbm3", 1, 1000.0, name=""), r"name = ''"),
])
def test_errors_name_the_key_and_the_value(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def _tpu_like_with(kind, units, clock_mhz):
    """tpu_like's dict with its clock and its DRAM level replaced, through `accelerator_from_dict`."""
    d = load_accelerator("tpu_like").to_dict()
    lv = dram_level(kind, units, clock_mhz)
    d["clock_mhz"] = clock_mhz
    d["memory"] = [m for m in d["memory"] if m["name"] != "dram"] + [{
        "name": lv.name, "operands": list(lv.operands), "read_pj": lv.read_pj, "write_pj": lv.write_pj,
        "word_bits": lv.word_bits, "read_bw": lv.read_bw, "write_bw": lv.write_bw,
        "shared_port": lv.shared_port, "private_to": list(lv.private_to)}]
    acc = accelerator_from_dict(d, "tpu_like with " + kind)
    assert acc.memory("dram") == lv   # the TOML path takes the level unchanged
    return acc


def _evaluate_fc(acc):
    layer = Layer("fc_4096", K=4096, C=4096)   # a decode step's matrix-vector product, 8-bit
    ev = OrderingEvaluator(layer, acc)
    ordering = np.repeat(np.arange(len(ev.types)), ev.counts)   # the first ordering: K loops innermost
    r = evaluate(layer, acc, ev.mapping(ordering))
    assert r.valid, r.reason
    return r


def _dram_words(r):
    return sum(c["reads"] + c["writes"] for op in "WIO" for c in r.breakdown["operands"][op] if c["memory"] == "dram")


def test_a_dram_bound_layer_on_tpu_like_takes_the_same_seconds_at_any_clock():
    # fc 4096 x 4096 on tpu_like (32 x 32 PEs) with 4 LPDDR5 channels (51.2 GB/s). DRAM moves the
    # weights once, 4096 x 4096 x 8 = 134,217,728 bits, the input (4096 x 8 = 32,768 bits) and the
    # output (32,768 bits): 134,283,264 bits = 262,272 words of 512 bits at 700 MHz.
    # Cycles = 134,283,264 / 585.142857 = 134,283,264 x 700 / 409,600 = 229,488, far above the
    # 4096 x 4096 / 1024 = 16,384 compute cycles: the weight registers are double-buffered, so
    # latency = the DRAM transfer time. Seconds = 229,488 / 7e8 = 327.84 us = 134,283,264 bits /
    # (51.2e9 x 8 bits/s). At 350 MHz: 1170.29 bits/cycle, 1024-bit words (131,136 of them),
    # 114,744 cycles, the same 327.84 us. DRAM energy at both clocks: 134,283,264 x 5.0 pJ =
    # 671,416,320 pJ; the MAC energy does not change with the clock either (no V/f model).
    fast, slow = _tpu_like_with("lpddr5", 4, 700.0), _tpu_like_with("lpddr5", 4, 350.0)
    r_fast, r_slow = _evaluate_fc(fast), _evaluate_fc(slow)
    assert r_fast.breakdown["compute_cycles"] == r_slow.breakdown["compute_cycles"] == 16_384
    assert _dram_words(r_fast) == 262_272 and _dram_words(r_slow) == 131_136
    assert r_fast.latency_cycles == pytest.approx(229_488.0, rel=1e-12)
    assert r_slow.latency_cycles == pytest.approx(114_744.0, rel=1e-12)
    assert r_fast.latency_cycles / (700.0 * 1e6) == pytest.approx(327.84e-6, rel=1e-12)
    assert r_slow.latency_cycles / (350.0 * 1e6) == pytest.approx(327.84e-6, rel=1e-12)
    for r, acc in ((r_fast, fast), (r_slow, slow)):
        dram = acc.memory("dram")
        assert _dram_words(r) * dram.read_pj == pytest.approx(671_416_320.0, rel=1e-12)
    assert r_fast.breakdown["mac_energy_pj"] == r_slow.breakdown["mac_energy_pj"]
    assert r_fast.energy_pj == pytest.approx(r_slow.energy_pj, rel=1e-12)


def test_hbm3_makes_the_same_layer_compute_bound():
    # One HBM3 stack at 700 MHz: 819.2e9 x 8 / 7e8 = 9362.29 bits/cycle; the same 134,283,264 bits
    # take 134,283,264 / 9362.29 = 14,343 cycles (with 8192-bit words, rounded up per transfer),
    # fewer than the 16,384 compute cycles, so the DRAM stalls nothing.
    acc = _tpu_like_with("hbm3", 1, 700.0)
    assert acc.memory("dram").read_bw == pytest.approx(819.2e9 * 8 / 7e8, rel=1e-12)
    assert acc.memory("dram").word_bits == 8192
    r = _evaluate_fc(acc)
    assert r.breakdown["stall_cycles"]["dram"] == 0.0
    assert r.latency_cycles == r.breakdown["compute_cycles"] == 16_384


def test_capacities_are_the_parts_as_shipped():
    """16 GiB per HBM2E / HBM3 stack (A100 80GB and H100 SXM5: 80 GB in five stacks), 2 GiB per
    LPDDR5 x16 channel (M1 Max: 64 GB on 32 channels), 32 GiB per DDR5 channel (our choice)."""
    from costmodel.tech.dram import dram_capacity_bytes
    assert dram_capacity_bytes("hbm2e", 5) == 80 * 2**30
    assert dram_capacity_bytes("hbm3", 5) == 80 * 2**30
    assert dram_capacity_bytes("lpddr5", 32) == 64 * 2**30
    assert dram_capacity_bytes("ddr5", 2) == 64 * 2**30
    assert "choice" not in dram_spec("hbm3").sources["capacity_gib_per_unit"]
    with pytest.raises(ValueError, match="units = 9"):
        dram_capacity_bytes("hbm3", 9)
