"""What the loop-ordering mappers (loma, salsa, random) share: the ordering evaluator of a problem
(cached, with LOMA's LPF merging) and the `SearchResult` of a best ordering.

An *ordering* is a permutation of the layer's temporal LPFs given as LPF type ids, shape (n,),
innermost first (`mappers.loop_order.lpf`); the evaluator allocates it bottom-up to the memory
levels (LOMA) and costs it (`costmodel.loopnest.ordering.OrderingEvaluator`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

import numpy as np

from mappers.base import LayerProblem, SearchResult
from mappers.loop_order.lpf import merge_lpfs

__all__ = ["default_evaluator", "problem_evaluator", "make_result"]


def default_evaluator(layer, arch, spatial=None, factors=None, even=False):
    """`costmodel.loopnest.ordering.OrderingEvaluator` (imported on first use)."""
    from costmodel.loopnest.ordering import OrderingEvaluator
    return OrderingEvaluator(layer, arch, spatial=spatial, factors=factors, even=even)


_EV_CACHE: OrderedDict = OrderedDict()
_EV_CACHE_SIZE = 16


def _expanded(ev) -> list[tuple[str, int]]:
    return [tuple(t) for t, k in zip(ev.types, np.asarray(ev.counts)) for _ in range(int(k))]


def problem_evaluator(problem: LayerProblem, factory: Callable | None = None, lpf_limit: int | None = None):
    """The ordering evaluator of a problem, with the LPFs merged to ``lpf_limit`` if given.

    Evaluators are cached (the last 16, least recently used dropped), since work units of one
    problem share one. The key holds the layer, ``even``, the LPF limit and the *identity* of the
    accelerator and spatial unrolling (they are not hashable); the cache keeps references to them,
    so an identity cannot be reused while its entry lives.

    Args:
        problem: layer, accelerator, spatial unrolling, even/uneven.
        factory: callable with the signature of ``OrderingEvaluator(layer, arch, spatial=None,
            factors=None, even=False)``; None = `default_evaluator`.
        lpf_limit: LOMA's LPF limit; None = the LPFs as they are.
    """
    factory = factory or default_evaluator
    try:
        key = (factory, problem.layer, id(problem.arch), id(problem.spatial), bool(problem.even), lpf_limit)
        hit = _EV_CACHE.get(key)
    except TypeError:  # unhashable layer: no caching
        key, hit = None, None
    if hit is not None:
        _EV_CACHE.move_to_end(key)
        return hit[2]
    ev = factory(problem.layer, problem.arch, spatial=problem.spatial, even=problem.even)
    if lpf_limit is not None:
        loops = _expanded(ev)
        merged = merge_lpfs(loops, lpf_limit)
        if len(merged) < len(loops):
            ev = factory(problem.layer, problem.arch, spatial=problem.spatial, factors=merged, even=problem.even)
    if key is not None:
        _EV_CACHE[key] = (problem.arch, problem.spatial, ev)
        while len(_EV_CACHE) > _EV_CACHE_SIZE:
            _EV_CACHE.popitem(last=False)
    return ev


def make_result(ev, problem: LayerProblem, mapper: str, engine: str, ordering, value: float,
                evaluations: int, wall_s: float, seed: int | None = None, history=None,
                extra: dict | None = None) -> SearchResult:
    """A `SearchResult` for ``ordering`` (type ids, shape (n,)) with its energy and latency
    from one more evaluator call (not counted in ``evaluations``); value +inf = nothing valid."""
    if ordering is None or not np.isfinite(value):
        return SearchResult(mapper=mapper, engine=engine, objective=problem.objective, value=float("inf"),
                            energy_pj=float("inf"), latency_cycles=float("inf"), ordering=None, loops=None,
                            evaluations=int(evaluations), wall_s=wall_s, seed=seed, history=history,
                            extra=dict(extra or {}))
    o = np.asarray(ordering, dtype=np.int64)
    cost = ev.evaluate(o[None, :])
    return SearchResult(mapper=mapper, engine=engine, objective=problem.objective, value=float(value),
                        energy_pj=float(cost.energy_pj[0]), latency_cycles=float(cost.latency_cycles[0]),
                        ordering=tuple(int(t) for t in o), loops=tuple((str(d), int(f)) for d, f in ev.loops(o)),
                        evaluations=int(evaluations), wall_s=wall_s, seed=seed, history=history,
                        extra=dict(extra or {}))
