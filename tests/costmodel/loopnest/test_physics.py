"""Memory physics vs size and word width, and design area: values checked by hand.

The SRAM energies are read straight from the CSV file here (own parser, not the code path), the
areas are written out from the two DeepOpt constants.
"""

import math
from pathlib import Path

import pytest

from costmodel.loopnest.arch import load_accelerator
from costmodel.loopnest.physics import (PhysicsRangeError, TooSmallForWord, design_area_mm2, energy_ratio,
                                        memory_area_mm2, memory_class, memory_instances, scale_memory,
                                        sram_pj_per_bit)
from costmodel.systolic.area import A_PE_UM2, A_SRAM_UM2_PER_BYTE

CSV = Path(__file__).resolve().parents[3] / "costmodel" / "data" / "sram_energy_pj_per_bit.csv"
PRESETS = ["eyeriss_like", "simba_like", "tpu_like"]
KIB = 8192  # bits per KiB


def _csv() -> dict[int, float]:
    out = {}
    for line in CSV.read_text().splitlines():
        if not line.strip() or line.startswith("#") or line.startswith("sram_kib"):
            continue
        kib, e = line.split(",")
        out[int(kib)] = float(e)
    return out


E = _csv()


@pytest.fixture(scope="module")
def eyeriss():
    return load_accelerator("eyeriss_like")


def test_csv_as_expected_and_lookup_exact_at_rows():
    assert sorted(E) == list(range(4, 513))
    assert E[64] == 0.460338 and E[128] == 0.688924
    for kib, e in E.items():
        assert sram_pj_per_bit(kib) == e


@pytest.mark.parametrize("preset", PRESETS)
def test_template_size_and_width_give_template_values_exactly(preset):
    acc = load_accelerator(preset)
    for m in acc.memories:
        assert scale_memory(m) is m
        assert scale_memory(m, m.size_bits, m.word_bits) is m
        assert energy_ratio(m, m.size_bits, m.word_bits) == 1.0
        # a width change and back again: the energies come back bit-identical
        w2 = 2 * m.word_bits if m.size_bits is None or m.size_bits >= 2 * m.word_bits else m.word_bits // 2
        there = scale_memory(m, word_bits=w2)
        back = scale_memory(there, word_bits=m.word_bits)
        assert (back.read_pj, back.write_pj, back.read_bw, back.write_bw) == (
            m.read_pj, m.write_pj, m.read_bw, m.write_bw)


def test_memory_classes(eyeriss):
    assert [memory_class(m) for m in eyeriss.memories] == [
        "regfile", "regfile", "regfile", "sram", "sram", "sram", "dram"]
    simba = load_accelerator("simba_like")
    assert memory_class(simba.memory("acc_buffer")) == "regfile"   # 3 KB < 4 KiB


def test_regfile_scales_with_sqrt_of_size(eyeriss):
    rf = eyeriss.memory("rf_64B_W")          # 512 bits, 1.0 / 1.5 pJ, word 8
    big = scale_memory(rf, size_bits=1024)
    assert big.size_bits == 1024
    assert big.read_pj == pytest.approx(math.sqrt(2), rel=1e-15)
    assert big.write_pj == pytest.approx(1.5 * math.sqrt(2), rel=1e-15)
    assert (big.word_bits, big.read_bw, big.write_bw) == (8, 8.0, 8.0)
    small = scale_memory(rf, size_bits=128)
    assert (small.read_pj, small.write_pj) == (0.5, 0.75)
    # width 16 at 4x the size: 2 (width) x 2 (sqrt 4)
    w = scale_memory(rf, size_bits=2048, word_bits=16)
    assert (w.read_pj, w.write_pj, w.read_bw, w.write_bw) == (4.0, 6.0, 16.0, 16.0)


def test_sram_follows_cacti_table(eyeriss):
    s = eyeriss.memory("sram_64KB")          # 64 KiB, 20 / 25 pJ, word 128
    m = scale_memory(s, size_bits=128 * KIB)
    assert m.read_pj == pytest.approx(20 * E[128] / E[64], rel=1e-14)
    assert m.write_pj == pytest.approx(25 * E[128] / E[64], rel=1e-14)
    assert m.read_pj == pytest.approx(29.9312, abs=1e-4)   # 20 * 0.688924 / 0.460338
    # fractional size: linear between the neighbouring rows
    frac = scale_memory(s, size_bits=round(100.25 * KIB))
    e = E[100] + 0.25 * (E[101] - E[100])
    assert frac.read_pj == pytest.approx(20 * e / E[64], rel=1e-14)
    assert sram_pj_per_bit(64.5) == pytest.approx((E[64] + E[65]) / 2, rel=1e-15)
    # the edges of the table are in range
    assert scale_memory(s, size_bits=4 * KIB).read_pj == pytest.approx(20 * E[4] / E[64], rel=1e-14)
    assert scale_memory(s, size_bits=512 * KIB).read_pj == pytest.approx(20 * E[512] / E[64], rel=1e-14)


def test_word_width_scales_energy_and_bandwidth(eyeriss):
    s = eyeriss.memory("sram_64KB")
    w = scale_memory(s, word_bits=256)
    assert (w.read_pj, w.write_pj, w.read_bw, w.write_bw, w.size_bits) == (40.0, 50.0, 256.0, 256.0, 64 * KIB)


def test_dram_has_no_size_and_a_constant_energy_per_bit(eyeriss):
    d = eyeriss.memory("dram")
    w = scale_memory(d, word_bits=128)
    assert (w.read_pj, w.write_pj, w.read_bw, w.size_bits) == (2000.0, 2000.0, 128.0, None)
    with pytest.raises(ValueError, match="unbounded") as ei:
        scale_memory(d, size_bits=1 << 30)
    assert not isinstance(ei.value, PhysicsRangeError)


def test_range_errors_name_the_value(eyeriss):
    with pytest.raises(PhysicsRangeError, match=r"2 KiB.*4\.\.1024 KiB"):
        scale_memory(eyeriss.memory("sram_8KB"), size_bits=2 * KIB)
    with pytest.raises(PhysicsRangeError, match=r"2048 KiB.*4\.\.1024 KiB"):
        scale_memory(eyeriss.memory("sram_64KB"), size_bits=2048 * KIB)
    with pytest.raises(PhysicsRangeError, match="32768 bits"):
        scale_memory(eyeriss.memory("rf_64B_W"), size_bits=32768)
    assert scale_memory(eyeriss.memory("rf_64B_W"), size_bits=32767).size_bits == 32767
    with pytest.raises(PhysicsRangeError, match="1100 KiB"):
        sram_pj_per_bit(1100)
    with pytest.raises(PhysicsRangeError, match="3.5 KiB"):
        sram_pj_per_bit(3.5)


def test_sram_above_the_table_continues_with_the_square_root(eyeriss):
    # eyeriss_like's global buffer is 8388608 bits = 1024 KiB, above the CACTI table (512 KiB):
    # e_bit(S) = e_bit(512) * sqrt(S / 512) up to 1 MiB (Horowitz ISSCC'14's square-root law)
    g = eyeriss.memory("sram_1M")            # 100 / 130 pJ per 384-bit word
    assert g.size_bits == 1024 * KIB and memory_class(g) == "sram"
    assert scale_memory(g, size_bits=g.size_bits) is g
    assert sram_pj_per_bit(1024) == pytest.approx(E[512] * math.sqrt(2), rel=1e-15)
    assert sram_pj_per_bit(768) == pytest.approx(E[512] * math.sqrt(1.5), rel=1e-15)
    half = scale_memory(g, size_bits=512 * KIB)
    assert half.read_pj == pytest.approx(100 / math.sqrt(2), rel=1e-14)
    assert half.write_pj == pytest.approx(130 / math.sqrt(2), rel=1e-14)
    q = scale_memory(g, size_bits=256 * KIB)  # into the table: ratio of the table to the continuation
    assert q.read_pj == pytest.approx(100 * E[256] / (E[512] * math.sqrt(2)), rel=1e-14)
    w = scale_memory(g, word_bits=768)       # same size, wider word: same energy per bit
    assert (w.read_pj, w.write_pj, w.read_bw) == (200.0, 260.0, 768.0)


def test_too_small_for_one_word_is_checked_first(eyeriss):
    rf = eyeriss.memory("rf_16B")            # 128 bits, word 24
    with pytest.raises(TooSmallForWord, match="16 bits.*24 bits") as ei:
        scale_memory(rf, size_bits=16)
    assert not isinstance(ei.value, PhysicsRangeError)
    # an SRAM below the table *and* below its word: an invalid point, not a range problem
    with pytest.raises(TooSmallForWord):
        scale_memory(eyeriss.memory("sram_8KB"), size_bits=2 * KIB, word_bits=32768)
    ok = scale_memory(rf, size_bits=24)
    assert ok.read_pj == pytest.approx(1.5 * math.sqrt(24 / 128), rel=1e-15)


@pytest.mark.parametrize("bad", [0, -8, 1.5, 512.0, True, "512"])
def test_bad_types(eyeriss, bad):
    with pytest.raises(ValueError):
        scale_memory(eyeriss.memory("rf_64B_W"), size_bits=bad)
    with pytest.raises(ValueError):
        scale_memory(eyeriss.memory("rf_64B_W"), word_bits=bad)


def test_eyeriss_area_by_hand(eyeriss):
    # 168 PEs; per PE RFs of 512 + 512 + 128 bits; SRAMs 8 KiB + 64 KiB + 1024 KiB (sram_1M is
    # 8388608 bits = 1 MiB); DRAM off chip.
    rf_bytes = 168 * (512 + 512 + 128) / 8             # 24192
    sram_bytes = (8 + 64 + 1024) * 1024                # 1122304
    want = (168 * A_PE_UM2 + (rf_bytes + sram_bytes) * A_SRAM_UM2_PER_BYTE) * 1e-6
    assert design_area_mm2(eyeriss) == pytest.approx(want, rel=1e-12)
    # with the rounded constants 7405.95 and 32.5457 um^2: 1244199.6 + 1146496 * 32.5457 um^2
    assert design_area_mm2(eyeriss) == pytest.approx(38.5577, abs=1e-3)
    assert memory_area_mm2(eyeriss.memory("dram"), eyeriss) == 0.0
    assert memory_instances(eyeriss.memory("rf_16B"), eyeriss) == 168
    assert memory_area_mm2(eyeriss.memory("rf_16B"), eyeriss) == pytest.approx(
        168 * 16 * A_SRAM_UM2_PER_BYTE * 1e-6, rel=1e-12)


def test_simba_and_tpu_area_by_hand():
    simba = load_accelerator("simba_like")
    # 1024 MACs; weight_reg 1 B per MAC; per PE (16 PEs) 3 + 32 + 8 KiB; 128 KiB global buffer
    want = (1024 * A_PE_UM2 + (1024 * 1 + 16 * (3 + 32 + 8) * 1024 + 128 * 1024) * A_SRAM_UM2_PER_BYTE) * 1e-6
    assert design_area_mm2(simba) == pytest.approx(want, rel=1e-12)
    tpu = load_accelerator("tpu_like")
    # 1024 PEs with a 2 B weight register each; 64 KiB accumulators; 512 KiB unified buffer
    want = (1024 * A_PE_UM2 + (1024 * 2 + (64 + 512) * 1024) * A_SRAM_UM2_PER_BYTE) * 1e-6
    assert design_area_mm2(tpu) == pytest.approx(want, rel=1e-12)
