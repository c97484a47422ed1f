"""The chip cost model (`costmodel.system.cost`, ttm-cas's, the one LLMCompass uses) by hand."""

import math

import pytest

from costmodel.system.cost import chip_cost_usd, die_cost_usd, die_yield, dies_per_wafer


def test_a_100_mm2_die_at_20_nm_by_hand():
    """300 mm wafer: pi x 150^2 / 100 - pi x 300 / sqrt(200) = 706.86 - 66.64 = 640.21 dies; yield at
    20 nm (D0 = 800 per 10^6 mm^2): (1 + 100 x 0.0008 / 3)^-3 = 1 / 1.08215 = 0.92408; $3,677 per wafer / (640.21 x
    0.92408) = $6.2152 a good die."""
    assert dies_per_wafer(100) == pytest.approx(math.pi * 150 ** 2 / 100 - math.pi * 300 / math.sqrt(200))
    assert dies_per_wafer(100) == pytest.approx(640.21, abs=0.01)
    assert die_yield(100) == pytest.approx(0.92408, abs=1e-5)
    assert die_cost_usd(100) == pytest.approx(6.2152, abs=1e-3)
    # + $21 of package + 2 HBM3 stacks of 16 GiB at $7 / GB
    assert chip_cost_usd(100, "hbm3", 2 * 16 * 2 ** 30) == pytest.approx(6.2152 + 21 + 7 * 2 * 16 * 2 ** 30 / 1e9,
                                                                            abs=1e-3)


def test_a_larger_die_costs_more_than_its_area_ratio():
    """Fewer dies per wafer and a lower yield: an 800 mm^2 die at 7 nm costs more than 8 x a 100 mm^2."""
    assert die_cost_usd(800, 7) > 8 * die_cost_usd(100, 7)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="area_mm2 = 0"):
        die_cost_usd(0)
    with pytest.raises(ValueError, match="node_nm = 22"):
        die_cost_usd(100, 22)
    with pytest.raises(ValueError, match="dram_kind = 'sram'"):
        chip_cost_usd(100, "sram", 1e9)
    with pytest.raises(ValueError, match="less than one die"):
        dies_per_wafer(80000)
