"""The shipped CACTI SRAM table (`costmodel.tech.sram`): it loads, covers 4 KiB .. 128 MiB, is
monotone in size, interpolates log-log (exact at tabulated sizes, between neighbours elsewhere),
names the size it refuses, and three rows agree with CACTI's own printed output."""

from __future__ import annotations

import math

import numpy as np
import pytest

from costmodel.tech import sram
from costmodel.tech.sram import (SRAM_MAX_KIB, SRAM_MIN_KIB, SRAM_NODE_NM, SRAM_WORD_BITS,
                                 sram_area_mm2, sram_leakage_mw, sram_read_pj_per_bit,
                                 sram_source, sram_table, sram_write_pj_per_bit)

FUNCS = {"read_pj_per_bit": sram_read_pj_per_bit, "write_pj_per_bit": sram_write_pj_per_bit,
         "area_mm2": sram_area_mm2, "leakage_mw": sram_leakage_mw}


def test_table_loads_with_its_source():
    t = sram_table()
    assert SRAM_NODE_NM == 22 and SRAM_WORD_BITS == 64
    assert t.size_kib[0] == SRAM_MIN_KIB == 4 and t.size_kib[-1] == SRAM_MAX_KIB == 128 * 1024
    assert len(t.size_kib) == 31                      # powers of two and the 1.5x points
    assert set(2 ** k * 4 for k in range(16)) <= set(t.size_kib.tolist())
    for col in FUNCS:
        values = getattr(t, col)
        assert values.shape == t.size_kib.shape and np.all(np.isfinite(values)) and np.all(values > 0)
    src = sram_source()
    for fact in ("CACTI 7.0", "hwcomponents-cacti 1.0.40", "22 nm", "width=64", "1 bank",
                 "1 read/write port", '"ram"', "itrs-lstp", "300 K", "scripts/cacti_tables.py"):
        assert fact in src, fact


@pytest.mark.parametrize("col", list(FUNCS))
def test_monotone_in_size(col):
    values = getattr(sram_table(), col)
    assert np.all(np.diff(values) >= 0), col


@pytest.mark.parametrize("col", list(FUNCS))
def test_exact_at_tabulated_sizes(col):
    t = sram_table()
    for size, value in zip(t.size_kib, getattr(t, col)):
        assert FUNCS[col](float(size)) == value
        assert FUNCS[col](int(size)) == value


@pytest.mark.parametrize("col", list(FUNCS))
def test_between_neighbours_log_log(col):
    t = sram_table()
    values = getattr(t, col)
    for i in range(len(t.size_kib) - 1):
        s0, s1, v0, v1 = t.size_kib[i], t.size_kib[i + 1], values[i], values[i + 1]
        for frac in (0.01, 0.3, 0.5, 0.99):
            s = s0 + frac * (s1 - s0)
            v = FUNCS[col](s)
            assert v0 <= v <= v1
            # a power law between the neighbours: log v is linear in log s
            t_log = math.log(s / s0) / math.log(s1 / s0)
            assert math.log(v) == pytest.approx(math.log(v0) + t_log * math.log(v1 / v0), abs=1e-12)
    # the geometric midpoint of two sizes gets the geometric mean of their values
    assert sram_read_pj_per_bit(math.sqrt(4 * 6)) == pytest.approx(
        math.sqrt(sram_read_pj_per_bit(4) * sram_read_pj_per_bit(6)), rel=1e-12)


@pytest.mark.parametrize("size", [3.999, 0, -4, 131072.5, 256 * 1024, float("nan"), float("inf")])
@pytest.mark.parametrize("func", list(FUNCS.values()))
def test_out_of_range_names_the_size(func, size):
    with pytest.raises(ValueError) as err:
        func(size)
    msg = str(err.value)
    assert repr(size) in msg and "[4 KiB, 128 MiB]" in msg


# CACTI's own printed output (its log, `cacti -infile ...` as hwcomponents-cacti 1.0.40 runs it),
# copied by hand from the Python 3.12 venv of scripts/cacti_tables.py: 22 nm, cache type "ram",
# 1 bank, 1 read/write port, block size 8 bytes. Per access: "Total dynamic read / write energy per
# access (nJ)"; "Data array: Area (mm2)"; leakage = "Total leakage power of a bank (mW)" + "Total
# gate leakage power of a bank (mW)".
CACTI_PRINTED = {
    # KiB: (read nJ, write nJ, area mm^2, leakage mW, gate leakage mW)
    4: (0.00117092, 0.00124601, 0.00350925, 7.51514e-05, 0.000817214),
    1024: (0.0234672, 0.0175006, 0.778459, 0.0150449, 0.12285),
    131072: (0.257873, 0.248359, 88.4615, 2.00799, 16.7985),
}


@pytest.mark.parametrize("kib", sorted(CACTI_PRINTED))
def test_pinned_rows_match_cacti_printed_output(kib):
    read_nj, write_nj, area, leak, gate_leak = CACTI_PRINTED[kib]
    assert sram_read_pj_per_bit(kib) == pytest.approx(read_nj * 1000 / 64, rel=1e-9)
    assert sram_write_pj_per_bit(kib) == pytest.approx(write_nj * 1000 / 64, rel=1e-9)
    assert sram_area_mm2(kib) == pytest.approx(area, rel=1e-9)
    # CACTI prints each leakage to 6 digits; the wrapper's column is their unrounded sum
    assert sram_leakage_mw(kib) == pytest.approx(leak + gate_leak, rel=1e-5)


def test_no_cacti_at_run_time():
    """The module reads a CSV with the standard library and numpy; it never imports the wrapper."""
    text = open(sram.__file__, encoding="utf-8").read()
    assert "hwcomponents" not in text.split('"""', 2)[2]    # not in the code after the docstring
    assert "subprocess" not in text
