"""Random search over loop orderings, Timeloop-style: sample uniformly, stop after ``patience``
consecutive valid samples that do not improve the best (Timeloop's ``victory-condition``, default
500), or after ``max_samples`` samples.

Samples are drawn and evaluated in batches for speed, but the stopping rule is applied in sample
order, and sample k always uses the same random numbers whatever the batch size (each sample is n
doubles of the generator), so the result is exactly that of one-by-one sampling. Invalid samples
(+inf: the ordering does not fit the memories) neither count towards ``patience`` nor reset it.

``evaluations`` counts the samples up to and including the stopping one (what a one-by-one search
would evaluate); ``extra['evaluated']`` the rows actually sent to the evaluator.

Latency ties (issue 38; ``latency_ties`` = 1): under the latency objective a sample improves on the
best when its (latency, energy) pair is lexicographically lower (`mappers.base.rank_key`; the
ordering evaluator gives no DRAM figure, so energy only): it becomes the best and resets the
patience, as Timeloop's victory condition counts the mappings that are not better under its
lexicographic ``optimization-metrics``. The samples do not depend on the comparisons, so such a
search draws what it drew before and possibly more: its latency is never worse. Spatial candidates'
units are reduced by latency, then energy (`mappers.base.best_of`). Energy and EDP results are
those of version 1.

Source: A. Parashar et al., "Timeloop: A Systematic Approach to DNN Accelerator Evaluation",
ISPASS 2019 (random-pruned search; ``mapper.victory-condition``), the baseline of SALSA (Jung et
al., AICAS 2023, section V).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

import numpy as np

from mappers.base import LayerProblem, Param, SearchResult, WorkUnit
from mappers.loop_order.base import SPATIAL_PARAMS, LoopOrderMapper, make_result, problem_evaluator
from mappers.loop_order.lpf import multiset_count
from mappers.loop_order.salsa import chain_seeds, random_orderings

__all__ = ["RandomMapper", "RANDOM", "stop_index", "pair_ranks"]


def pair_ranks(vals: np.ndarray, energy: np.ndarray, best: float, best_energy: float) -> tuple[np.ndarray, int]:
    """Dense ranks of the (value, energy) pairs of a batch in lexicographic order, with the pair
    (``best``, ``best_energy``) ranked among them: equal pairs share a rank, a lower pair has a
    lower rank (the order of `mappers.base.rank_key` under the latency objective, as integers that
    `np.minimum.accumulate` can run over). Returns (ranks of the batch (n,) int64, rank of the best)."""
    v = np.concatenate([[best], np.asarray(vals, dtype=np.float64)])
    e = np.concatenate([[best_energy], np.asarray(energy, dtype=np.float64)])
    order = np.lexsort((e, v))
    sv, se = v[order], e[order]
    new = np.ones(len(v), dtype=bool)
    new[1:] = (sv[1:] != sv[:-1]) | (se[1:] != se[:-1])
    rank = np.empty(len(v), dtype=np.int64)
    rank[order] = np.cumsum(new)
    return rank[1:], int(rank[0])


def stop_index(vals: np.ndarray, best: float, streak: int, patience: int, energy: np.ndarray | None = None,
               best_energy: float = float("inf")) -> tuple[int | None, float, int, int | None]:
    """Apply the stopping rule to a batch of sample values in order.

    Args:
        vals: objective of consecutive samples (n,), +inf = invalid.
        best: best value before the batch; streak: consecutive valid non-improving samples so far.
        patience: stop when the streak reaches this.
        energy: None, or the samples' energies (n,) pJ: then a sample improves when its (value,
            energy) pair is lexicographically lower than the best's (the latency tie rule, module
            docstring); ``best_energy`` the best's energy.

    Returns:
        (index of the stopping sample in the batch or None, best value up to it (or the batch end),
        streak after it, index of the best sample in the batch or None if none improved; of equal
        best samples the first).
    """
    valid = np.isfinite(vals)
    key, b0 = (vals, best) if energy is None else pair_ranks(vals, energy, best, best_energy)
    prev = np.minimum.accumulate(np.concatenate([[b0], key]))[:-1]  # best before each sample
    imp = key < prev
    nonimp = valid & ~imp
    # streak at sample k = non-improving valid samples since the last improvement (or batch start)
    cs = np.cumsum(nonimp)
    last_imp = np.maximum.accumulate(np.where(imp, np.arange(len(vals)), -1))
    base = np.where(last_imp >= 0, cs[np.maximum(last_imp, 0)], -streak)
    s = cs - base
    hit = np.flatnonzero(s >= patience)
    end = int(hit[0]) if len(hit) else len(vals) - 1
    seg = key[: end + 1]
    i = int(np.argmin(seg))
    improved = seg[i] < b0
    return (end if len(hit) else None), (float(vals[i]) if improved else best), int(s[end]), (i if improved else None)


class RandomMapper(LoopOrderMapper):
    """Timeloop-like random sampling of loop orderings with a patience stop.

    Lifecycle: `units` gives one seeded unit (``SeedSequence(seed).spawn(1)``); `run` samples until
    the stopping rule holds; `reduce` is `best_of` (latency ties by energy, module docstring).

    Args:
        evaluator_factory: builds the ordering evaluator; None = ``costmodel.loopnest.ordering.OrderingEvaluator``.
    """

    name = "random"
    version = "3"  # 3: the loma rank counts figures within a cycle or 1 ppm as tied (mappers.spatial.tied); 2: spatial_rank "auto" (loma under the latency objective) is the default
    latency_ties = 1  # latency ties broken by energy; such a tie-break resets patience (module docstring)
    kind = "loopnest"
    params = (
        Param("patience", "int", 500, "stop after this many consecutive valid non-improving samples (Timeloop: 500)",
              low=1, high=10**9),
        Param("max_samples", "int", 100_000, "stop after this many samples in any case", low=1, high=10**10),
        Param("seed", "int", 0, "campaign seed; the unit's seed is spawned from it (SeedSequence.spawn)", low=0),
        Param("batch", "int", 256, "samples per evaluator call (does not change the result)", low=1, high=1 << 20),
        *SPATIAL_PARAMS,
    )

    def __init__(self, evaluator_factory: Callable | None = None) -> None:
        self.evaluator_factory = evaluator_factory

    def order_units(self, problem: LayerProblem, params: Mapping[str, Any]) -> list[WorkUnit]:
        """One unit, seeded with `mappers.loop_order.salsa.chain_seeds` (params['seed'], 1)[0]."""
        return [WorkUnit(kind="random", seed=chain_seeds(int(params.get("seed", 0)), 1)[0])]

    def run_order(self, problem: LayerProblem, unit: WorkUnit, params: Mapping[str, Any]) -> SearchResult:
        """Sample until ``patience`` or ``max_samples``; ``history`` = objective of every sample
        up to the stopping one, in order (``extra['history_kind'] = 'sampled'``)."""
        t0 = time.perf_counter()
        ev = problem_evaluator(problem, self.evaluator_factory)
        patience = int(params.get("patience", 500))
        max_samples = int(params.get("max_samples", 100_000))
        batch = int(params.get("batch", 256))
        rng = np.random.default_rng(unit.seed)
        best, best_o, streak, done, evaluated = float("inf"), None, 0, 0, 0
        ties = bool(self.latency_ties) and problem.objective == "latency"
        en: np.ndarray | None
        best_e, en = float("inf"), None  # en: the batch's energies (pJ) under the latency tie rule
        hist = []
        stopped = "max_samples"
        while done < max_samples:
            b = min(batch, max_samples - done)
            orders = random_orderings(rng, ev.counts, b)
            if ties:  # latency ties broken by energy (module docstring)
                cost = ev.evaluate(orders)
                vals, en = cost.latency_cycles, cost.energy_pj
            else:
                vals = ev.objective(orders, problem.objective)
            evaluated += b
            end, best_new, streak, i = stop_index(vals, best, streak, patience, en, best_e)
            if i is not None:
                best, best_o = best_new, orders[i].copy()
                if en is not None:
                    best_e = float(en[i])
            used = b if end is None else end + 1
            hist.append(vals[:used])
            done += used
            if end is not None:
                stopped = "patience"
                break
        extra = {"evaluated": evaluated, "stopped_by": stopped, "history_kind": "sampled",
                 "space": multiset_count(ev.counts), "n_loops": int(np.sum(ev.counts))}
        return make_result(ev, problem, self.name, "random", best_o, best, done, time.perf_counter() - t0,
                           seed=unit.seed, history=np.concatenate(hist) if hist else np.empty(0), extra=extra)



RANDOM = RandomMapper()
