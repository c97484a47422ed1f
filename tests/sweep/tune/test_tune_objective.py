"""sweep.tune.objective: gaps, evaluations-to-reach, the fixed budget, reference optima (no Ray, no Optuna)."""

import math

import numpy as np
import pytest

from mappers.loop_order.loma import LOMA
from mappers.loop_order.salsa import INIT_TRIES
from sweep.tune.objective import (GAP_CAP, derive_params, evals_to_reach, evaluate_layer, layer_problem,
                            reduce_reference, reference_plan, relative_gap, run_reference_unit, summarise_gaps)


@pytest.fixture(scope="module")
def fc():
    """ResNet-34's fc layer on eyeriss_like (2,860 orderings) and its exhaustive optimum (pJ)."""
    prob = layer_problem("resnet34", "fc", "eyeriss_like", "energy")
    return prob, LOMA.search(prob).value


def test_relative_gap_by_hand():
    assert relative_gap(101.0, 100.0) == pytest.approx(0.01)
    assert relative_gap(100.0, 100.0) == 0.0
    assert relative_gap(99.0, 100.0) == pytest.approx(-0.01)  # a fallback reference can be beaten
    assert relative_gap(math.inf, 100.0) == GAP_CAP
    assert relative_gap(5000.0, 100.0) == GAP_CAP


def test_evals_to_reach_by_hand():
    # two chains, 4 proposals each; the reference 10 is reached by chain 1 at its 2nd proposal
    h = [np.array([30.0, 20.0, 15.0, 12.0, 11.0]), np.array([40.0, 25.0, 10.0, 10.0, 10.0])]
    assert evals_to_reach(h, 10.0, 0.0) == 2 * 2          # lockstep: 2 proposals in each of 2 chains
    assert evals_to_reach(h, 10.0, 0.5) == 2 * 2          # 15 <= 10 * 1.5 first at index 2 (both chains)
    assert evals_to_reach(h, 10.0, 2.0) == 2 * 0          # the initial states are within 200 %
    assert evals_to_reach([np.array([30.0, 20.0, 15.0])], 10.0, 0.0) == 2  # never: the whole budget


def test_summarise_gaps_weighs_layers_equally():
    from sweep.tune.objective import LayerOutcome
    a = LayerOutcome("a", [0, 1], 1.0, [1, 1], [0.0, 0.0], [10, 10], [9, 9], [3, 5], 0.0, 0.1)
    b = LayerOutcome("b", [0, 1, 2, 3], 1.0, [1] * 4, [0.1, 0.1, 0.0, 0.2], [10] * 4, [9] * 4, [10] * 4, 0.0, 0.1)
    s = summarise_gaps([a, b])
    assert s["mean_gap"] == pytest.approx((0.0 + 0.1) / 2)
    assert s["reach_rate"] == pytest.approx((1.0 + 0.25) / 2)
    assert s["mean_to_reach"] == pytest.approx((4 + 10) / 2)


def test_derive_params_keeps_the_budget():
    p = derive_params("salsa", {"chains": 4, "t0": 0.1}, {"normalise": "zigzag"}, 1000)
    assert (p["chains"], p["iterations"], p["engine"], p["normalise"], p["t0"]) == (4, 250, "sa", "zigzag", 0.1)
    p = derive_params("salsa", {"iterations": 200}, {}, 1000)
    assert (p["chains"], p["iterations"]) == (5, 200)
    p = derive_params("primitive_sa", {"p_block": 0.5}, {}, 300)
    assert (p["chains"], p["iterations"], p["p_block"]) == (1, 300, 0.5) and "engine" not in p
    with pytest.raises(ValueError, match="does not divide"):
        derive_params("salsa", {"chains": 3}, {}, 1000)
    with pytest.raises(ValueError, match="set by the tuner"):
        derive_params("salsa", {"seed": 3}, {}, 1000)
    with pytest.raises(ValueError, match="rho"):
        derive_params("salsa", {"rho": 1.5}, {}, 1000)


@pytest.mark.parametrize("mapper, chains", [("salsa", 1), ("salsa", 4), ("salsa", 5), ("primitive_sa", 2)])
def test_every_run_spends_exactly_the_budget(fc, mapper, chains):
    prob, opt = fc
    budget = 200
    p = derive_params(mapper, {"chains": chains}, {}, budget)
    o = evaluate_layer(mapper, prob, p, [0, 1, 2], opt)
    assert o.proposals == [budget] * 3                      # chains x iterations proposals, from the histories
    for e in o.evaluations:                                  # SearchResult.evaluations: cost-model calls
        assert 1 <= e <= budget + chains * INIT_TRIES
    assert all(0 <= r <= budget for r in o.to_reach)


def test_reference_is_the_exhaustive_optimum_and_bounds_every_sa_run(fc):
    prob, opt = fc
    method, space, units = reference_plan("salsa", prob, max_orderings=10_000, shards=3)
    assert (method, space, len(units)) == ("loma", 2860, 3)
    ref, _ = reduce_reference([run_reference_unit(m, prob, p, u) for m, p, u in units])
    assert ref == opt
    o = evaluate_layer("salsa", prob, derive_params("salsa", {"t0": 0.3, "rho": 0.98}, {}, 100), range(8), ref)
    assert min(o.values) >= ref and min(o.gaps) >= 0.0
    assert o.values == pytest.approx([ref * (1 + g) for g in o.gaps])


def test_reference_falls_back_to_a_long_run(fc):
    prob, opt = fc
    method, space, units = reference_plan("salsa", prob, max_orderings=100, fallback_chains=2,
                                          fallback_iterations=300)
    assert (method, space, len(units)) == ("sa_long", 2860, 2)
    assert all(p["engine"] == "sa" and p["iterations"] == 300 for _, p, _ in units)
    ref, _ = reduce_reference([run_reference_unit(m, prob, p, u) for m, p, u in units])
    assert ref >= opt
    method, space, units = reference_plan("primitive_sa", prob, max_orderings=10**9, fallback_chains=1)
    assert (method, space) == ("sa_long", None)
