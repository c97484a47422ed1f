"""The LLM template (`costmodel/presets/llm_ws.toml`): CACTI 22 nm SRAMs priced absolutely from the
shipped table, a DRAM of a kind made from its data (bandwidth per unit, pJ/bit) at the clock, and
the template parameters dram / dram_units / clock_mhz; every expected figure worked by hand from the
rows of costmodel/data/sram_cacti_22nm.csv and dram_kinds.csv, quoted below."""

from __future__ import annotations

import pytest

from costmodel.loopnest.arch import accelerator_from_dict, load_accelerator
from costmodel.loopnest.physics import A_PE_UM2, PhysicsRangeError, design_area_mm2
from costmodel.loopnest.template import ArchTemplate

# sram_cacti_22nm.csv rows (size_kib, read_pj_per_bit, write_pj_per_bit, area_mm2):
CACTI = {4: (0.018295625, 0.01946890625, 0.00350925), 2048: (0.493759375, 0.4005296875, 1.54269),
         16384: (1.2985953125, 1.2228625, 11.6214), 65536: (2.62015625, 2.43525, 44.7674)}
# dram_kinds.csv: HBM2E 409.6 GB/s per stack, HBM3 819.2 GB/s, both 3.9 pJ/bit; HBM2E PHY 10.45 mm^2


def test_llm_ws_as_described():
    acc = load_accelerator("llm_ws")
    assert acc.tech == "cacti22" and acc.dram == ("hbm2e", 1) and acc.clock_mhz == 1000.0
    dram = acc.memories[-1]
    # 409.6e9 B/s x 8 / 1e9 cycles/s = 3276.8 bits per cycle; 3.9 pJ/bit x its word
    assert dram.read_bw == pytest.approx(3276.8) and dram.size_bits is None
    assert dram.read_pj == pytest.approx(3.9 * dram.word_bits)
    ub = acc.memory("unified_buffer")  # 16 MiB, 1024-bit words: 1.2985953125 x 1024 = 1329.7616 pJ
    assert ub.read_pj == pytest.approx(CACTI[16384][0] * 1024, rel=1e-6)
    assert ub.write_pj == pytest.approx(CACTI[16384][1] * 1024, rel=1e-6)


def test_area_by_hand():
    acc = load_accelerator("llm_ws")
    # 16,384 PEs and 128 vector lanes of 4 PEs each at DeepOpt's 65 nm PE area, scaled
    pe = (128 * 128 + 128 * 4) * A_PE_UM2 * 1e-6 * (22 / 65) ** 2
    sram = CACTI[2048][2] + CACTI[16384][2]                     # accumulators + unified buffer
    regs = 128 * 128 * CACTI[4][2] * (16 / 8192) / 4            # 16-bit registers at the 4 KiB density
    assert design_area_mm2(acc) == pytest.approx(pe + sram + regs + 10.45, rel=1e-9)


def test_template_dram_kind_units_and_clock():
    t = ArchTemplate(load_accelerator("llm_ws"))
    assert {"dram", "dram_units", "clock_mhz"} <= set(t.parameter_names())
    d = t.design({"dram": "hbm3", "dram_units": 2, "clock_mhz": 800.0})
    # 2 x 819.2e9 B/s x 8 / 800e6 = 16,384 bits per cycle; the clock moves, the MAC energy does not
    assert d.memories[-1].read_bw == pytest.approx(16384.0)
    assert d.dram == ("hbm3", 2) and d.clock_mhz == 800.0 and d.mac_pj == 0.3
    # a 64 MiB unified buffer: CACTI's 2.62015625 pJ/bit x 1024-bit words, absolute (not anchored)
    big = t.design({"memory.unified_buffer.size_kib": 65536})
    assert big.memory("unified_buffer").read_pj == pytest.approx(CACTI[65536][0] * 1024, rel=1e-6)
    assert t.design({}) .memories == load_accelerator("llm_ws").memories


@pytest.mark.parametrize("name, value, error", [
    ("dram", "hbm9", ValueError), ("clock_mhz", -1.0, ValueError), ("clock_mhz", float("nan"), ValueError),
    ("dram_units", 0, ValueError), ("memory.unified_buffer.size_kib", 262144, PhysicsRangeError),
])
def test_bad_values_name_the_parameter(name, value, error):
    t = ArchTemplate(load_accelerator("llm_ws"))
    with pytest.raises(error, match=name.split(".")[0] if name != "memory.unified_buffer.size_kib" else "256|262144"):
        t.check_value(name, value)


def test_old_presets_have_no_dram_parameters():
    assert "dram" not in ArchTemplate(load_accelerator("tpu_like")).parameter_names()


def test_a_design_file_round_trips_and_a_disagreeing_dram_is_refused():
    acc = load_accelerator("llm_ws")
    d = acc.to_dict()
    assert accelerator_from_dict(d, "x") == acc
    d["memory"][-1]["read_pj"] *= 2
    with pytest.raises(ValueError, match="dram"):
        accelerator_from_dict(d, "x")
    with pytest.raises(ValueError, match="dram.kind"):
        accelerator_from_dict({**acc.to_dict(), "dram": {"kind": "hbm9"}}, "x")
