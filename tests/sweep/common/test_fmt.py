"""`sweep.common.fmt`: the human-text formatters, each figure worked out by hand."""

import math

import pytest

from sweep.common import fmt


@pytest.mark.parametrize("pj, text", [
    (12_714_590_470.3, "12.71 mJ"),     # 12,714,590,470.3 pJ = 12.7145... x 1e9 pJ (1 mJ = 1e9 pJ)
    (740_000.0, "740.0 nJ"),            # 7.4e5 pJ = 740 nJ: 4 significant digits, trailing zero kept
    (205_812.5, "205.8 nJ"),
    (999.94, "999.9 pJ"),
    (999.96, "1.000 nJ"),               # rounds to 1000 pJ: shown in the next unit
    (1.5, "1.500 pJ"),
    (0, "0 pJ"),
    (2.5e12, "2.500 J"),
    (3.2e15, "3200 J"),                 # no unit above J: more digits, not fewer
])
def test_energy(pj, text):
    assert fmt.energy(pj) == text


@pytest.mark.parametrize("n, text", [
    (950, "950 cycles"),
    (950.5, "950.5 cycles"),            # a mean over seeds
    (999.96, "1.000 kcycles"),
    (12_346, "12.35 kcycles"),
    (3_402_000, "3.402 Mcycles"),
    (1_000_000_000, "1.000 Gcycles"),
])
def test_cycles(n, text):
    assert fmt.cycles(n) == text


@pytest.mark.parametrize("v, text", [
    (1.2345678e18, "1.235e+18 pJ*cycles"),
    (4.0e9, "4.000e+09 pJ*cycles"),
    (7.0, "7.000e+00 pJ*cycles"),
])
def test_edp_scientific(v, text):
    assert fmt.edp(v) == text
    assert fmt.edp(v, unit=False) == text.split()[0]


@pytest.mark.parametrize("v, text", [(15.8734, "15.87 mm^2"), (4.9, "4.900 mm^2"), (0.0123456, "0.01235 mm^2")])
def test_area(v, text):
    assert fmt.area(v) == text


@pytest.mark.parametrize("v, text", [
    (12.3456, "12.35"), (1234, "1234"), (12346, "1.235e+04"), (0.000012345, "1.234e-05"), (0.5, "0.5000"),
])
def test_sig(v, text):
    assert fmt.sig(v) == text


@pytest.mark.parametrize("f", [fmt.energy, fmt.cycles, fmt.edp, fmt.area, fmt.sig])
def test_missing_values(f):
    assert f(None) == "n/a" and f(math.nan) == "n/a"
    assert f(math.inf).startswith("inf") and f(-math.inf).startswith("-inf")


def test_counts_and_words_replace_python_reprs():
    assert fmt.counts({"ok": 72}) == "72 ok"
    assert fmt.counts({"ok": 1200, "error": 3}) == "1,200 ok, 3 error"
    assert fmt.counts({}) == "none"
    assert fmt.words(["edp"]) == "edp"
    assert fmt.words(("edp", "area_mm2")) == "edp, area_mm2"
    assert fmt.words([]) == "none"
