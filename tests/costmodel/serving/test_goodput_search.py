"""`costmodel.serving.metrics.goodput`, DistServe's goodput by doubling / halving and bisection, on
attainment curves given in closed form (a step at a known capacity): the answer and the rates
tried follow by hand."""

import pytest

from costmodel.serving import SLO, metrics


@pytest.fixture
def step(monkeypatch):
    """serve_at(rate) -> the rate; attainment 1 up to ``cap`` req/s, 0 above."""
    def make(cap):
        monkeypatch.setattr(metrics, "attainment", lambda res, slo: 1.0 if res <= cap else 0.0)
        return lambda rate: rate
    return make


def test_a_capacity_above_the_start_is_bracketed_by_doubling(step):
    got = metrics.goodput(step(5.0), SLO(2.0, 0.1), 2.0)
    assert [p["rate"] for p in got["points"]][:3] == [2.0, 4.0, 8.0]
    good, bad = got["bracket"]
    assert good <= 5.0 < bad and bad - good <= 0.02 * bad and got["goodput_rps"] == good


def test_a_capacity_below_the_start_is_found_by_halving_after_the_floor(step):
    got = metrics.goodput(step(0.3), SLO(2.0, 0.1), 2.0)
    # the start missed: the floor (2 / 1024) first, then 1, 0.5, 0.25 (met), then bisection
    assert [p["rate"] for p in got["points"]][:5] == [2.0, 2.0 / metrics.FLOOR, 1.0, 0.5, 0.25]
    good, bad = got["bracket"]
    assert good <= 0.3 < bad and bad - good <= 0.02 * bad


def test_missed_even_at_the_floor_is_zero_after_two_simulations(step):
    got = metrics.goodput(step(0.0), SLO(2.0, 0.1), 2.0)
    assert got["goodput_rps"] == 0.0 and got["simulations"] == 2
    assert got["bracket"] == [0.0, 2.0 / metrics.FLOOR]
