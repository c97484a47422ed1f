"""Moves on LPF orderings (`mappers.loop_order.moves`): the neighbourhood against hand-listed and
brute-force sets, the first-improvement descent against a brute-force local-optimum check and
a state found stuck on the real cost model, the surrogate scan order on an exactly log-linear cost,
and the descents from several ends (version 4) joining earlier basins on the real cost model."""

import itertools
import math

import numpy as np
import pytest

from mappers.base import resolve_params
from mappers.loop_order.moves import (BLOCK_MAX, MoveStream, block_move, descend, descend_ends, fit_surrogate,
                                     neighbourhood, reverse, swap)
from mappers.loop_order.salsa import PAPER_SCHEDULE, SalsaMapper


def test_primitive_moves_by_hand():
    o = [0, 1, 2, 3, 4]
    assert swap(o, 0, 3) == [3, 1, 2, 0, 4]
    assert block_move(o, 1, 2, 3) == [0, 3, 4, 1, 2]      # [1, 2] out of [0, 3, 4], back before index 3
    assert block_move(o, 3, 1, 0) == [3, 0, 1, 2, 4]
    assert reverse(o, 1, 4) == [0, 3, 2, 1, 4]
    assert o == [0, 1, 2, 3, 4]                           # moves return new lists


def test_neighbourhood_small_cases_by_hand():
    # three distinct LPFs: every other permutation is one move away (a swap reaches each transposition,
    # a block move or reversal each 3-cycle)
    assert set(neighbourhood([0, 1, 2])) == set(itertools.permutations([0, 1, 2])) - {(0, 1, 2)}
    assert set(neighbourhood([0, 0, 1])) == {(0, 1, 0), (1, 0, 0)}
    assert neighbourhood([1, 1, 1]) == []


def test_neighbourhood_is_what_the_stream_draws():
    """Every distinct ordering the mixed stream proposes lies in `neighbourhood`, and 20,000 draws
    from one ordering reach all of it (the stream's support is the neighbourhood)."""
    o = [0, 1, 0, 2, 1, 3, 0]
    nb = set(neighbourhood(o))
    st = MoveStream(np.random.default_rng(1), len(o), 256, 0.3)
    drawn = {tuple(st.propose(o)) for _ in range(20000)}
    assert drawn == nb
    assert len(nb) == len(neighbourhood(o))               # listed once each


def _brute_neighbours(o, block_max=BLOCK_MAX):
    n, out = len(o), set()
    for i, j in itertools.product(range(n), repeat=2):
        out.add(tuple(swap(o, i, j)))
        out.add(tuple(reverse(o, min(i, j), max(i, j) + 1)))
    for length in range(1, block_max + 1):
        for i in range(n - length + 1):
            for j in range(n - length + 1):
                out.add(tuple(block_move(o, i, length, j)))
    out.discard(tuple(o))
    return out


def test_neighbourhood_equals_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(20):
        o = rng.integers(0, 4, size=int(rng.integers(2, 9))).tolist()
        assert set(neighbourhood(o)) == _brute_neighbours(o)


def test_descend_stops_at_a_local_optimum_within_budget():
    """On an arbitrary deterministic cost over permutations of 7 LPFs: the result is no worse than
    the start, every neighbour of it is no better (checked by brute force), the evaluations
    counted are those not already in ``seen``, and a small budget is respected."""
    w = np.random.default_rng(3).random((7, 7))

    def f(o):
        return float(sum(w[i, t] * (i + 1) for i, t in enumerate(o)) + 10.0)

    start = (0, 1, 2, 3, 4, 5, 6)
    seen = {}
    v, o, used = descend(f, start, f(list(start)), 10**9, np.random.default_rng(0), seen)
    assert v <= f(list(start)) and v == f(list(o))
    assert all(f(list(q)) >= v for q in neighbourhood(list(o)))
    assert used == len(seen)
    seen2 = {}
    v2, o2, used2 = descend(f, start, f(list(start)), 25, np.random.default_rng(0), seen2)
    assert used2 == 25 and v2 >= v


def test_descend_rescues_a_stuck_salsa_end_on_the_real_model():
    """ResNet-34 layer3.0.conv1 on eyeriss_like, energy: LOMA's exhaustive search over its 5,765,760
    orderings (scripts/salsa_vs_exhaustive.py) finds 5 optima, among them KKKCCCY CCCC x y KKK
    (innermost first; K = K2, C = C2, y = OY2, Y = OY7, x = FX3), and 5 orderings 0.0395 % worse
    (0.0346 % on model version 4), such as YCCCKKK CCCC x y KKK, where 3 of 100 default SALSA runs of
    version 2 ended. That state
    has exactly one better neighbour, the optimum (a reversal of the 7 innermost LPFs), which
    the descent finds."""
    pytest.importorskip("costmodel.loopnest.ordering")
    from costmodel.loopnest.arch import load_accelerator
    from costmodel.zoo import load_network
    from mappers.base import LayerProblem
    from mappers.loop_order.salsa import SALSA

    layer = next(l for l in load_network("resnet34").layers if l.name == "layer3.0.conv1")
    ev = SALSA.evaluator(LayerProblem(layer, load_accelerator("eyeriss_like"), None, "energy"))
    code = {"K": 0, "C": 1, "y": 2, "Y": 3, "x": 4}
    assert [tuple(t) for t in ev.types] == [("K", 2), ("C", 2), ("OY", 2), ("OY", 7), ("FX", 3)]
    optimum = [code[c] for c in "KKKCCCYCCCCxyKKK"]
    stuck = tuple(code[c] for c in "YCCCKKKCCCCxyKKK")

    def f(o):
        return float(ev.objective(np.array([o], dtype=np.int64), "energy")[0])

    v_opt, v_stuck = f(optimum), f(list(stuck))
    assert v_stuck / v_opt - 1 == pytest.approx(3.46e-4, abs=1e-6)   # model version 3: 3.95e-4
    better = [q for q in neighbourhood(list(stuck)) if f(list(q)) < v_stuck]
    assert better == [tuple(optimum)]
    v, o, used = descend(f, stuck, v_stuck, 2000, np.random.default_rng(7), {})
    # found within one scan of the stuck state's neighbours, then one scan proves the optimum local
    assert math.isclose(v, v_opt, rel_tol=1e-12)
    assert used <= len(neighbourhood(list(stuck))) + len(neighbourhood(optimum))


def test_surrogate_recovers_a_log_linear_cost_and_guides_the_descent():
    """On a cost that is exactly exp(sum_i W[i, o[i]]) over permutations of 7 LPFs, the surrogate fitted
    to 300 random orderings ranks 200 others exactly as the cost does; a descent scanning in its order
    takes the steepest neighbour first, so moves cost about one evaluation each and the whole descent
    (moves + the final scan) costs fewer evaluations than in random order, to a local optimum."""
    rng = np.random.default_rng(5)
    w = rng.normal(size=(7, 7))

    def f(o):
        return float(np.exp(w[np.arange(7), o].sum()))

    train = {tuple(rng.permutation(7).tolist()): 0.0 for _ in range(300)}
    train = {o: f(list(o)) for o in train}
    train[tuple(range(7))] = float("inf")                 # invalid orderings are left out of the fit
    weights = fit_surrogate(train, 7)
    assert weights.shape == (7, 7)
    test = [rng.permutation(7) for _ in range(200)]
    true = np.array([f(o) for o in test])
    score = np.array([weights[np.arange(7), o].sum() for o in test])
    assert np.array_equal(np.argsort(true), np.argsort(score))
    assert fit_surrogate({(0, 1): float("inf")}, 2) is None

    start = (6, 5, 4, 3, 2, 1, 0)
    runs = {}
    for name, wts in (("surrogate", weights), ("random", None)):
        seen = {}
        v, o, used = descend(f, start, f(list(start)), 10**9, np.random.default_rng(0), seen, wts)
        assert all(f(list(q)) >= v for q in neighbourhood(list(o)))
        runs[name] = used
    assert runs["surrogate"] < runs["random"]


def test_descend_ends_skips_plateaus_and_budget():
    """Ends of equal cost (a plateau: positions 0 and 1 weigh the same, so swapping them costs
    nothing) are descended once; the descents' evaluations are those added to ``seen``, they share
    the budget, and a spent budget stops the loop."""
    c = np.random.default_rng(3).random((7, 7))
    c[1] = c[0]

    def f(o):
        return float(sum(c[i, t] for i, t in enumerate(o)) + 10.0)

    a, twin, other = (0, 1, 2, 3, 4, 5, 6), (1, 0, 2, 3, 4, 5, 6), (6, 5, 4, 3, 2, 1, 0)
    assert f(list(a)) == f(list(twin)) != f(list(other))
    ends = [(other, f(list(other))), (twin, f(list(twin))), (a, f(list(a)))]
    log, seen = [], {}
    v, o, used = descend_ends(f, ends, 10**9, np.random.default_rng(0), seen, None, log)
    assert len(log) == 2                                  # a and its twin: one descent
    assert used == len(seen) == sum(k for _, _, k, _ in log)
    assert v == f(list(o)) <= min(f(list(q)) for q in neighbourhood(list(o)))
    log2 = []
    v2, _, used2 = descend_ends(f, ends, 30, np.random.default_rng(0), {}, None, log2)
    assert used2 == 30 and len(log2) == 1 and log2[0][3] == "budget" and v2 >= v


def test_descend_ends_joins_an_earlier_basin_on_the_real_model():
    """ResNet-34 layer3.0.conv2 on eyeriss_like, energy: three ends of the chains of SALSA version 3,
    seed 3, a run that missed the optimum (K = K2, C = C2, y = OY2, Y = OY7, x = FX3): the local optimum
    KKyCCCCYCxCCCKKKK, 0.43 % above the optimum (none of its 521 neighbours is better), a neighbour of
    it 0.51 % above, and KKCCCKYxCCCCyKKCK, 1.83 % above, from which the descent reaches the optimum.
    Version 3 spent that run's descent budget (1,233 evaluations) on ends in the first one's basin;
    `descend_ends` proves the first a local optimum, stops the second at once (a better neighbour lies on the first's path: 0 evaluations),
    and reaches the optimum from the third within about 1,500 evaluations in all."""
    pytest.importorskip("costmodel.loopnest.ordering")
    from costmodel.loopnest.arch import load_accelerator
    from costmodel.zoo import load_network
    from mappers.base import LayerProblem
    from mappers.loop_order.salsa import SALSA

    # the layer as model version 3 saw it (the padded input: no input size), where this run was observed
    layer = next(l for l in load_network("resnet34").layers if l.name == "layer3.0.conv2").with_(
        in_rows=None, in_cols=None)
    ev = SALSA.evaluator(LayerProblem(layer, load_accelerator("eyeriss_like"), None, "energy"))
    code = {"K": 0, "C": 1, "y": 2, "Y": 3, "x": 4}
    assert [tuple(t) for t in ev.types] == [("K", 2), ("C", 2), ("OY", 2), ("OY", 7), ("FX", 3)]

    def f(o):
        return float(ev.objective(np.array([o], dtype=np.int64), "energy")[0])

    local, near, far, optimum = (tuple(code[c] for c in s) for s in
                                 ("KKyCCCCYCxCCCKKKK", "KKyCCCCYCxCCKKCKK", "KKCCCKYxCCCCyKKCK", "KKKCCCYxCCCCyCKKK"))
    v_opt = f(list(optimum))
    assert f(list(local)) / v_opt - 1 == pytest.approx(4.297e-3, abs=1e-6)
    assert near in neighbourhood(list(local))
    ends = [(o, f(list(o))) for o in (far, near, local)]
    log, seen = [], {}
    v, o, used = descend_ends(f, ends, 4000, np.random.default_rng(0), seen, None, log)
    assert [r for *_, r in log] == ["local", "joined", "local"]
    assert log[0][1] == ends[2][1] and log[1][2] == 0
    assert math.isclose(v, v_opt, rel_tol=1e-12) and math.isclose(f(list(o)), v_opt, rel_tol=1e-12)
    assert used == len(seen) <= 1600


@pytest.fixture(scope="module")
def downsample():
    """ResNet-34 layer4.0.downsample on eyeriss_like, energy (16 LPFs, 102,960 orderings)."""
    pytest.importorskip("costmodel.loopnest.ordering")
    from costmodel.loopnest.arch import load_accelerator
    from costmodel.zoo import load_network
    from mappers.base import LayerProblem

    layer = next(l for l in load_network("resnet34").layers if l.name == "layer4.0.downsample")
    return LayerProblem(layer, load_accelerator("eyeriss_like"), None, "energy")


def test_real_descent_adds_to_the_chains_within_the_budget(downsample):
    """With ``descent`` the run is one unit; its chains are those of the run without descent (same
    seeds, same histories); the descent never loses what they found, is counted in
    ``evaluations`` and stops at ``max_evaluations``."""
    prob = downsample
    m = SalsaMapper()
    for seed in range(3):
        p = resolve_params(m, {**PAPER_SCHEDULE, "engine": "sa", "chains": 6, "iterations": 120, "seed": seed,
                               "moves": "mixed", "descent": True, "max_evaluations": 1000})
        (unit,) = m.units(prob, p)
        with_d = m.run(prob, unit, p)
        q = {**p, "descent": False}
        without = m.reduce([m.run(prob, u, q) for u in m.units(prob, q)])
        assert np.array_equal(with_d.history, without.history)
        assert with_d.value <= without.value
        assert with_d.evaluations == without.evaluations + with_d.extra["descent_evaluations"] <= 1000
        assert with_d.value == with_d.energy_pj   # the returned ordering, costed again by make_result
