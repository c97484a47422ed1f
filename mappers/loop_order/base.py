"""What the loop-ordering mappers (loma, salsa, random) share: the ordering evaluator of a problem
(cached, with LOMA's LPF merging), the `SearchResult` of a best ordering, and the search over
spatial unrollings (`LoopOrderMapper`).

An *ordering* is a permutation of the layer's temporal LPFs given as LPF type ids, shape (n,),
innermost first (`mappers.loop_order.lpf`); the evaluator allocates it bottom-up to the memory
levels (LOMA) and costs it (`costmodel.loopnest.ordering.OrderingEvaluator`).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace
from typing import Any, Callable, Mapping

import numpy as np

from costmodel.loopnest.mapping import SpatialMapping
from mappers.base import ExtraColumn, LayerMapper, LayerProblem, LoopNestDetail, Param, SearchResult, WorkUnit
from mappers.loop_order.lpf import merge_lpfs
from mappers.spatial import RANKS, spatial_candidates, spatial_mode

__all__ = ["default_evaluator", "problem_evaluator", "problem_counts", "make_result", "least_energy_tie", "LoopOrderMapper", "SPATIAL_PARAMS",
           "SPATIAL_COLUMNS", "spatial_mode", "spatial_object"]


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


def problem_counts(problem: LayerProblem, lpf_limit: int | None = None) -> list[int]:
    """The multiplicities of the problem's temporal loop types, as ``problem_evaluator(problem,
    None, lpf_limit).counts`` holds them, counted from the layer's temporal bounds without building
    the evaluator (its kernel tables): what choosing an engine and estimating a run need.

    Raises:
        what the evaluator raises first: the unrolling does not fit the layer (`SpatialMapping.fit`).
    """
    from costmodel.loopnest.mapping import prime_factors
    from costmodel.workload import LOOP_DIMS
    sp = problem.spatial if problem.spatial is not None else problem.arch.spatial
    sp.fit(problem.layer)
    tb = sp.temporal_bounds(problem.layer)
    loops = [(d, p) for d in LOOP_DIMS for p in prime_factors(tb[d])]
    if lpf_limit is not None:
        merged = merge_lpfs(loops, lpf_limit)
        if len(merged) < len(loops):
            loops = merged
    counts: dict[tuple[str, int], int] = {}
    for t in loops:
        counts[t] = counts.get(t, 0) + 1
    return list(counts.values())


def make_result(ev, problem: LayerProblem, mapper: str, engine: str, ordering, value: float,
                evaluations: int, wall_s: float, seed: int | None = None, history=None,
                extra: dict | None = None) -> SearchResult:
    """A `SearchResult` for ``ordering`` (type ids, shape (n,)) with its energy and latency
    from one more evaluator call (not counted in ``evaluations``); value +inf = nothing valid."""
    if ordering is None or not np.isfinite(value):
        return SearchResult(mapper=mapper, engine=engine, objective=problem.objective, value=float("inf"),
                            energy_pj=float("inf"), latency_cycles=float("inf"),
                            evaluations=int(evaluations), wall_s=wall_s, seed=seed, history=history,
                            extra=dict(extra or {}))
    o = np.asarray(ordering, dtype=np.int64)
    cost = ev.evaluate(o[None, :])
    return SearchResult(mapper=mapper, engine=engine, objective=problem.objective, value=float(value),
                        energy_pj=float(cost.energy_pj[0]), latency_cycles=float(cost.latency_cycles[0]),
                        evaluations=int(evaluations), wall_s=wall_s, seed=seed, history=history,
                        extra=dict(extra or {}),
                        detail=LoopNestDetail(loops=tuple((str(d), int(f)) for d, f in ev.loops(o)),
                                              ordering=tuple(int(t) for t in o)))


def least_energy_tie(ev, value: float, ordering, seen: list):
    """Under the latency objective, the ordering of least energy among those evaluated at exactly
    ``value`` (`mappers.base.rank_key`: a compute-bound layer has many orderings of equal latency
    that move different data): ``ordering`` and the keys of each dict of ``seen`` (ordering tuple ->
    objective; None entries skipped; or a pair of arrays, orderings (m, n) and objectives (m,), the
    items of such a dict) whose value is ``value``. ``ordering`` itself when it is the
    only one or ``value`` is not finite; ties on energy keep the first met (``ordering``, then the
    dicts in order, each in insertion order). The re-costing is not counted as evaluations: the
    search already counted these orderings."""
    if ordering is None or not np.isfinite(value):
        return ordering
    cands = [tuple(int(t) for t in ordering)]
    for d in seen:
        if isinstance(d, tuple):   # (orderings (m, n), objectives (m,)): a dict's items as arrays
            cands += list(map(tuple, d[0][d[1] == value].tolist()))
        else:
            cands += [k for k, v in (d or {}).items() if v == value]
    cands = list(dict.fromkeys(cands))
    if len(cands) == 1:
        return ordering
    energy = ev.evaluate(np.array(cands, dtype=np.int64)).energy_pj
    return np.array(cands[int(np.argmin(energy))], dtype=np.int64)


#: The spatial-search parameters of every loop-order mapper.
SPATIAL_PARAMS = (
    Param("spatial", "str", None,
          "fixed: the accelerator's [spatial] (or the campaign's); search: the best spatial_candidates "
          "unrollings of each layer under the accelerator's [spatial_hint], each searched, the best kept; "
          "absent = fixed if the accelerator has a [spatial], search if it has only a hint",
          choices=("fixed", "search"), omit_default=True),
    Param("spatial_candidates", "int|all", 3,
          "spatial = search: unrollings tried per layer (the best by rank; ZigZag's default 3), or \"all\" "
          "(in sweep map with objective latency, an unrolling whose latency bound exceeds the best "
          "found is not run: the same best)",
          low=1, high=1 << 20, omit_default=True),
    Param("spatial_rank", "str", "auto",
          "spatial = search: how candidates are ranked: auto (loma under the latency objective, else "
          "utilization), loma (of the 12 best by utilisation, those whose "
          "bound can still win are probed by an exhaustive LOMA of at most 2,520 orderings; kept by the probe's best "
          "objective, one whose bound cannot beat the best probe dropped), utilization (MACs / (PEs x "
          "cycles), then the smaller largest factor) or probe (best objective of 64 random orderings "
          "per unrolling)",
          choices=RANKS, omit_default=True),
)

#: Row columns of the spatial search: the unrolling a unit ran (JSON, fitted to the layer) and how
#: many candidates its problem tried (1 = fixed).
SPATIAL_COLUMNS = (
    ExtraColumn("spatial", "str", "spatial unrolling the unit ran, JSON {array dim: [[loop dim, factor]]}"),
    ExtraColumn("spatial_candidates", "int", "spatial unrollings tried for the problem (1 = fixed)"),
)


_SPATIAL_OBJ: OrderedDict = OrderedDict()


def spatial_object(text: str) -> SpatialMapping:
    """The unrolling of a spatial candidate's text (`SpatialMapping.to_json`, as a work unit's
    ``spec["spatial"]`` carries it): one object per text, so that the evaluator cache, which keys
    on the unrolling's identity, is hit by every unit of a candidate."""
    sp = _SPATIAL_OBJ.get(text)
    if sp is None:
        sp = _SPATIAL_OBJ[text] = SpatialMapping.from_json(text)
        while len(_SPATIAL_OBJ) > 256:
            _SPATIAL_OBJ.popitem(last=False)
    return sp


class LoopOrderMapper(LayerMapper):
    """A loop-ordering search, run on one spatial unrolling or on each of a layer's candidates.

    Subclasses implement `order_units` and `run_order` (their search on ``problem.spatial``).
    With ``spatial = "search"`` (`spatial_mode`) `units` asks `mappers.spatial.spatial_candidates`
    for the best ``spatial_candidates`` unrollings under the accelerator's hint and returns, for
    each candidate in rank order, the subclass's units of the problem on that unrolling (their
    ``spec`` also holds ``spatial``, ``spatial_index``, ``spatial_count``): the engine spreads
    them over workers like any units, and `reduce` (best of all, ties to the earlier unit = the
    better-ranked candidate) keeps the best over candidates. Every result's ``extra`` holds
    ``spatial`` (the unrolling it ran, fitted to the layer, `SpatialMapping.to_json`) and
    ``spatial_candidates`` (1 when fixed).

    Raises (from `units` and `run`): ValueError when searching on an accelerator without a hint;
    `mappers.spatial.NoSpatialCandidate` when no unrolling of the layer survives the hint.
    """

    searches_spatial = True

    def spatial_mode(self, problem: LayerProblem, params: Mapping[str, Any]) -> str:
        """`mappers.spatial.spatial_mode`: ``params['spatial']`` if given, else search when the
        accelerator has only a hint."""
        return spatial_mode(problem, params)

    columns = SPATIAL_COLUMNS

    def order_units(self, problem: LayerProblem, params: Mapping[str, Any]) -> list[WorkUnit]:
        """The units of the ordering search on ``problem.spatial`` (subclasses)."""
        raise NotImplementedError

    def run_order(self, problem: LayerProblem, unit: WorkUnit, params: Mapping[str, Any]) -> SearchResult:
        """Run one unit of the ordering search on ``problem.spatial`` (subclasses)."""
        raise NotImplementedError

    def candidates(self, problem: LayerProblem, params: Mapping[str, Any]):
        """The problem's spatial candidates (`mappers.spatial.spatial_candidates`), best first."""
        k = params.get("spatial_candidates", 3)
        return spatial_candidates(problem.layer, problem.arch, keep=None if k == "all" else int(k),
                                  rank=str(params.get("spatial_rank", "auto")),
                                  objective=problem.objective, even=problem.even)

    def units(self, problem: LayerProblem, params: Mapping[str, Any]) -> list[WorkUnit]:
        """`order_units` of the problem (fixed) or of each spatial candidate in rank order (search)."""
        if spatial_mode(problem, params) == "fixed":
            return self.order_units(problem, params)
        cands = self.candidates(problem, params)
        out = []
        for i, c in enumerate(cands):
            text = c.spatial.to_json()
            for u in self.order_units(replace(problem, spatial=spatial_object(text)), params):
                out.append(replace(u, spec={**u.spec, "spatial": text, "spatial_index": i,
                                              "spatial_count": len(cands)}))
        return out

    def unit_floor(self, problem: LayerProblem, unit: WorkUnit, params: Mapping[str, Any]) -> float | None:
        """With the latency objective and a searched unrolling: the layer's latency bound (cycles)
        under the unit's unrolling (`costmodel.bounds.layer_bound` at that unrolling's utilisation:
        compute, every memory port, the DRAM re-reads the capacities force); else None."""
        text = unit.spec.get("spatial")
        if text is None or problem.objective != "latency":
            return None
        from costmodel.bounds import layer_bound
        from costmodel.workload import LOOP_DIMS
        from mappers.spatial import utilization
        sp = spatial_object(text).fit(problem.layer)
        u = utilization(problem.layer, problem.arch.pe_count, {d: sp.factor(d) for d in LOOP_DIMS})
        return layer_bound(problem.layer, problem.arch, u).latency_cycles

    def run(self, problem: LayerProblem, unit: WorkUnit, params: Mapping[str, Any]) -> SearchResult:
        """`run_order` on the unit's spatial unrolling; ``extra`` gains ``spatial`` and
        ``spatial_candidates``."""
        text = unit.spec.get("spatial")
        if text is not None:
            problem = replace(problem, spatial=spatial_object(text))
        r = self.run_order(problem, unit, params)
        sp = problem.spatial if problem.spatial is not None else getattr(problem.arch, "spatial", None)
        if sp is not None:  # (test stubs run without an accelerator)
            r.extra["spatial"] = sp.fit(problem.layer).to_json()
        r.extra["spatial_candidates"] = int(unit.spec.get("spatial_count", 1))
        return r
