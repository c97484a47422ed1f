"""LOMA: exhaustive search over all loop orderings (multiset permutations of the LPFs), sharded.

Every ordering of the temporal LPFs of a layer is allocated bottom-up to the memory levels and
costed by the batch evaluator (`costmodel.loopnest.ordering.OrderingEvaluator`); the best is kept. With
``lpf_limit`` the LPFs are first merged as LOMA does (`mappers.loop_order.lpf.merge_lpfs`), which shrinks
the space at the price of optimality.

Work units are shards: shard i of s enumerates the contiguous lexicographic rank range
`mappers.loop_order.lpf.shard_range` (total, i, s) with no coordination. Ties go to the lowest rank, and the
reduction keeps the first of equal values in shard order, so the result does not depend on the
number of shards.

Source: A. Symons, L. Mei, M. Verhelst, "LOMA: Fast auto-scheduling on DNN accelerators through
loop-order-based memory allocation", AICAS 2021; used as SALSA's exhaustive engine (Jung et al.,
AICAS 2023, section IV-B).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

import numpy as np

from mappers.base import LayerProblem, Param, SearchResult, WorkUnit
from mappers.loop_order.base import SPATIAL_PARAMS, LoopOrderMapper, make_result, problem_evaluator
from mappers.loop_order.lpf import iter_permutations, multiset_count, shard_range

__all__ = ["LomaMapper", "LOMA", "exhaustive_range"]


def exhaustive_range(ev, objective: str, start: int, stop: int, batch: int = 4096):
    """Best ordering among lexicographic ranks start .. stop-1 of the evaluator's LPF multiset.

    Returns:
        (best value (+inf if none valid), best ordering (n,) int64 or None, its rank or None,
        orderings evaluated). Ties go to the lowest rank; under the latency objective ties on
        latency go to the lower energy first.
    """
    best_v, best_e, best_o, best_r = float("inf"), float("inf"), None, None
    r = start
    for block in iter_permutations(ev.counts, start, stop, batch):
        if objective == "latency":  # ties on latency broken by energy (`mappers.base.rank_key`)
            cost = ev.evaluate(block)
            vals, en = cost.latency_cycles, cost.energy_pj
            i = int(np.lexsort((en, vals))[0])  # stable: the lowest rank of equal keys
            if (vals[i], en[i]) < (best_v, best_e):
                best_v, best_e, best_o, best_r = float(vals[i]), float(en[i]), block[i].copy(), r + i
        else:
            vals = ev.objective(block, objective)
            i = int(np.argmin(vals))  # first minimum = lowest rank in the block
            if vals[i] < best_v:
                best_v, best_o, best_r = float(vals[i]), block[i].copy(), r + i
        r += len(block)
    return best_v, best_o, best_r, stop - start


class LomaMapper(LoopOrderMapper):
    """Exhaustive loop-ordering search (LOMA), sharded into contiguous rank ranges.

    Lifecycle: `units` gives one `WorkUnit` per shard; `run` enumerates one shard through the batch
    evaluator; `reduce` keeps the best (`best_of`: first of equal values, i.e. lowest rank).

    Args:
        evaluator_factory: builds the ordering evaluator (signature of
            ``costmodel.loopnest.ordering.OrderingEvaluator``); None = the real one. Tests pass a stub.
    """

    name = "loma"
    version = "3"  # 3: the loma rank counts figures within a cycle or 1 ppm as tied (mappers.spatial.tied); 2: spatial_rank "auto" (loma under the latency objective) is the default
    latency_ties = 1  # ties on latency broken by energy (mappers.base.rank_key)
    kind = "loopnest"
    params = (
        Param("lpf_limit", "int", None, "merge LPFs until at most this many loops remain (LOMA); absent = no limit",
              low=1),
        Param("max_orderings", "int", None,
              "skip the search (engine 'skipped', value inf) when the space is larger; absent = no limit",
              low=1),
        Param("shards", "int", 1, "independent work units, each a contiguous rank range of the orderings",
              low=1, high=1 << 20),
        Param("batch", "int", 4096, "orderings per evaluator call", low=1, high=1 << 22),
        *SPATIAL_PARAMS,
    )

    def __init__(self, evaluator_factory: Callable | None = None) -> None:
        self.evaluator_factory = evaluator_factory

    def evaluator(self, problem: LayerProblem, params: Mapping[str, Any]):
        """The (cached) evaluator of ``problem`` with the LPFs merged to ``params['lpf_limit']``."""
        return problem_evaluator(problem, self.evaluator_factory, params.get("lpf_limit"))

    def space_size(self, problem: LayerProblem, params: Mapping[str, Any]) -> int:
        """Number of orderings the search enumerates: n! / prod k_i! of the (merged) LPFs."""
        return multiset_count(self.evaluator(problem, params).counts)

    def order_units(self, problem: LayerProblem, params: Mapping[str, Any]) -> list[WorkUnit]:
        """One unit per shard (``params['shards']``). The search is deterministic: no seed."""
        shards = int(params.get("shards", 1))
        return [WorkUnit(kind="exhaustive", shard=i, shards=shards) for i in range(shards)]

    def run_order(self, problem: LayerProblem, unit: WorkUnit, params: Mapping[str, Any]) -> SearchResult:
        """Enumerate the unit's rank range and return its best ordering.

        ``extra`` holds ``rank`` (of the best ordering), ``space`` (all orderings), ``start`` and
        ``stop`` of the shard, ``n_loops`` and ``lpf_limit``.
        """
        t0 = time.perf_counter()
        ev = self.evaluator(problem, params)
        total = multiset_count(ev.counts)
        limit = params.get("max_orderings")
        if limit is not None and total > int(limit):  # "exhaustive where it is feasible"
            return make_result(ev, problem, self.name, "skipped", None, float("inf"), 0,
                               time.perf_counter() - t0,
                               extra={"space": total, "max_orderings": int(limit),
                                      "n_loops": int(np.sum(ev.counts)),
                                      "reason": f"search skipped: {total:,} orderings, more than "
                                                f"max_orderings {int(limit):,}"})
        start, stop = shard_range(total, unit.shard, unit.shards)
        v, o, r, n = exhaustive_range(ev, problem.objective, start, stop, int(params.get("batch", 4096)))
        extra = {"rank": r, "space": total, "start": start, "stop": stop, "n_loops": int(np.sum(ev.counts)),
                 "lpf_limit": params.get("lpf_limit")}
        return make_result(ev, problem, self.name, "exhaustive", o, v, n, time.perf_counter() - t0, extra=extra)





LOMA = LomaMapper()
