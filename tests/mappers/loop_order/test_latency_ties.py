"""Ties on the latency objective are broken by energy (`mappers.base.rank_key`; issue 38): a
compute-bound layer has many loop orders of equal latency that move different data, and the one
returned is the least energy among them. Brute force over every ordering is the oracle."""

from __future__ import annotations

import numpy as np
import pytest

from costmodel.loopnest.arch import load_accelerator
from costmodel.workload import Layer
from mappers.base import LayerProblem, SearchResult, best_of
from mappers.loop_order.base import least_energy_tie, problem_evaluator
from mappers.loop_order.loma import LOMA
from mappers.loop_order.lpf import iter_permutations, multiset_count
from mappers.loop_order.salsa import SALSA


@pytest.fixture(scope="module")
def problem():
    # a matmul on simba_like: 1,320 loop orders, 504 of them at the least latency, their energies
    # 1.51 x apart (brute force)
    layer = Layer("mm", K=256, C=64, B=128, kind="matmul")
    return LayerProblem(layer, load_accelerator("simba_like"), objective="latency")


def _brute(problem):
    ev = problem_evaluator(problem)
    lat, en = [], []
    for block in iter_permutations(ev.counts, 0, multiset_count(ev.counts)):
        c = ev.evaluate(block)
        lat.append(c.latency_cycles)
        en.append(c.energy_pj)
    lat, en = np.concatenate(lat), np.concatenate(en)
    best = lat.min()
    ties = lat == best
    return best, en[ties].min(), en[ties].max(), int(ties.sum())


def test_loma_returns_the_least_energy_of_the_fastest(problem):
    best, lo, hi, n = _brute(problem)
    assert n == 504 and hi > lo * 1.5          # the case has ties that differ in energy
    r = LOMA.search(problem, {"spatial": "fixed"})
    assert r.value == best and r.energy_pj == pytest.approx(lo, rel=1e-12)


def test_salsa_exhaustive_returns_the_least_energy_of_the_fastest(problem):
    best, lo, _, _ = _brute(problem)
    r = SALSA.search(problem, {"engine": "exhaustive", "spatial": "fixed"})
    assert r.value == best and r.energy_pj == pytest.approx(lo, rel=1e-12)


def test_least_energy_tie_and_best_of_by_hand(problem):
    ev = problem_evaluator(problem)
    block = next(iter_permutations(ev.counts, 0, 64))
    c = ev.evaluate(block)
    v = float(c.latency_cycles[0])
    seen = {tuple(int(t) for t in o): float(x) for o, x in zip(block, c.latency_cycles)}
    got = least_energy_tie(ev, v, block[0], [seen])
    same = [i for i in range(len(block)) if c.latency_cycles[i] == v]
    assert ev.evaluate(np.array([got])).energy_pj[0] == min(c.energy_pj[i] for i in same)
    mk = lambda e: SearchResult("m", "x", "latency", 10.0, e, 10.0, 1, 0.0)
    assert best_of([mk(5.0), mk(3.0)], latency_ties=True).energy_pj == 3.0
    assert best_of([mk(5.0), mk(3.0)]).energy_pj == 5.0            # not opted in: the first unit
