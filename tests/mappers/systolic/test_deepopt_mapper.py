"""DeepOpt LOS / FS / product PM against brute force on synthetic per-branch costs."""

import itertools

import numpy as np
import pytest

from costmodel.systolic import SystolicResult
from mappers.systolic.deepopt import PMS, fixed_scheduling, los, pm_value, product_pm


def _random_result(rng, P=3, L=4, mask_prob=0.2):
    e = rng.uniform(1.0, 10.0, size=(P, L, 5))
    d = rng.uniform(1.0, 10.0, size=(P, L, 5))
    ok = rng.random((P, L, 5)) > mask_prob
    ok[..., 0] = True  # at least one allowed branch per layer
    return SystolicResult(energy_pj=e, cycles=d, delay_ok=ok)


def test_pm_value_exponents():
    assert pm_value(2.0, 3.0, "E") == 2.0
    assert pm_value(2.0, 3.0, "D") == 3.0
    assert pm_value(2.0, 3.0, "ED") == 6.0
    assert pm_value(2.0, 3.0, "E2D") == 12.0
    assert pm_value(2.0, 3.0, "ED2") == 18.0
    with pytest.raises(KeyError):
        pm_value(1.0, 1.0, "EDP")


@pytest.mark.parametrize("pm", list(PMS))
def test_los_is_sum_of_per_layer_minima(pm):
    rng = np.random.default_rng(1)
    res = _random_result(rng)
    reps = np.array([1, 2, 1, 3])
    value, best, energy, cycles = los(res, reps, pm)
    a, b = PMS[pm]
    for p in range(3):
        total = 0.0
        e_tot = d_tot = 0.0
        for l in range(4):
            cands = [(res.energy_pj[p, l, k] ** a * res.cycles[p, l, k] ** b, k) for k in range(5)
                     if b == 0 or res.delay_ok[p, l, k]]
            v, k = min(cands)
            assert best[p, l] == k
            total += reps[l] * v
            e_tot += reps[l] * res.energy_pj[p, l, k]
            d_tot += reps[l] * res.cycles[p, l, k]
        assert value[p] == pytest.approx(total, rel=1e-12)
        assert energy[p] == pytest.approx(e_tot, rel=1e-12)
        assert cycles[p] == pytest.approx(d_tot, rel=1e-12)


def test_fixed_scheduling_is_never_better_than_los():
    rng = np.random.default_rng(2)
    res = _random_result(rng, mask_prob=0.0)
    reps = np.array([1, 1, 2, 1])
    for pm in PMS:
        fs = fixed_scheduling(res, reps, pm)
        v = los(res, reps, pm)[0]
        assert np.all(fs >= v[:, None] * (1 - 1e-12))
        # FS of branch b by hand for point 0
        a, b = PMS[pm]
        hand = sum(reps[l] * res.energy_pj[0, l, 2] ** a * res.cycles[0, l, 2] ** b for l in range(4))
        assert fs[0, 2] == pytest.approx(hand)


@pytest.mark.parametrize("pm", ["ED", "E2D", "ED2", "E", "D"])
@pytest.mark.parametrize("seed", range(6))
def test_product_pm_matches_exhaustive_enumeration(pm, seed):
    rng = np.random.default_rng(seed)
    L = 4
    e = rng.uniform(1.0, 10.0, size=(L, 5))
    d = rng.uniform(1.0, 10.0, size=(L, 5))
    ok = rng.random((L, 5)) > 0.3
    ok[:, 1] = True
    reps = np.array([1, 2, 1, 1])
    execs = [l for l in range(L) for _ in range(reps[l])]
    a, b = PMS[pm]
    best = np.inf
    for choice in itertools.product(range(5), repeat=len(execs)):
        if not all(ok[l, k] for l, k in zip(execs, choice)):
            continue
        E = sum(e[l, k] for l, k in zip(execs, choice))
        D = sum(d[l, k] for l, k in zip(execs, choice))
        best = min(best, E**a * D**b)
    value, E, D, choice = product_pm(e, d, ok, reps, pm)
    assert value == pytest.approx(best, rel=1e-12)
    # the returned choice reproduces the value
    E2 = sum(e[l, k] for l, k in zip(execs, choice))
    D2 = sum(d[l, k] for l, k in zip(execs, choice))
    assert E2 == pytest.approx(E) and D2 == pytest.approx(D)
    assert E2**a * D2**b == pytest.approx(value)


def test_product_pm_never_worse_than_los_choice():
    # the product optimum is at most the product of the sums of LOS's ED choice
    rng = np.random.default_rng(7)
    res = _random_result(rng, P=1, L=6, mask_prob=0.0)
    reps = np.ones(6, dtype=int)
    _, _, e_los, d_los = los(res, reps, "ED")
    value, *_ = product_pm(res.energy_pj[0], res.cycles[0], res.delay_ok[0], reps, "ED")
    assert value <= e_los[0] * d_los[0] * (1 + 1e-12)
