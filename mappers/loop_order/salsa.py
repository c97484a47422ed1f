"""SALSA: simulated annealing over LPF loop orderings, with the dual (SA / exhaustive) engine.

Source: V. J. B. Jung, A. Symons, L. Mei, M. Verhelst, L. Benini, "SALSA: Simulated Annealing
based Loop-Ordering Scheduler for DNN Accelerators", AICAS 2023, section IV.

The annealer (one chain)
------------------------
* State: an ordering of the temporal LPFs (type ids, innermost first; `mappers.loop_order.lpf`). The
  initial state is a uniformly random ordering drawn from the chain's ``rng``; if it is invalid
  (does not fit the memories) further random orderings are drawn, up to 1,000, and the first valid
  one is taken.
* Neighbourhood, eq. (2): swap(o, i, j). Swapping two LPFs of the same type gives back the same
  ordering, so the proposal is a uniformly random pair {i, j} of positions holding *different*
  types (rejection sampling over all pairs).
* Acceptance, eq. (3): P = exp((V - V') / T_i) with V the normalised cost, T_i = T0 * rho^i,
  i = 0 .. I-1 (geometric cooling, section IV-C). The best state seen is kept and returned.
* The paper's schedule (section V-A): one chain, I = 1000, rho = 0.999, T0 = 0.05, swaps
  (`PAPER_SCHEDULE`). Our defaults (`DEFAULT_SCHEDULE`, below): 16 chains x 150, T0 = 0.0044,
  rho = 0.9, V = ln(cost), mixed moves (swap share 0.32), then the final descent (version 4), at
  most 4,000 cost evaluations per run.

Normalisation (``normalise``)
-----------------------------
Eq. (3) on raw costs (energies of order 1e8-1e10 pJ) with T0 = 0.05 would reject every worse move,
i.e. be plain greedy descent; T0 = 0.05 only has a meaning for a dimensionless V of order one.
The default is ``"log"``: V = ln(cost), so eq. (3) is used verbatim and reads
P = (cost / cost')^(1/T): a move making the cost x % worse is accepted about as a difference of
x / 100 on a unit scale (at T0 = 0.05, 5 % worse is accepted with probability ~1/e; at the end,
T = 0.05 * 0.999^1000 = 0.018, 1.8 % worse). It is scale-free (the same for energy, latency and
EDP and for any layer size), a Metropolis rule on one fixed landscape (detailed balance holds),
and to first order equal to ZigZag's rule. Alternatives:

* ``"zigzag"``: ZigZag's rule P = exp((V / V' - 1) / T) (``zigzag/opt/salsa/engine.py`` in
  KULeuven-MICAS/zigzag), i.e. the difference divided by the proposed cost V'.
* ``"initial"``: V = cost / cost(initial state), one constant per chain.
* ``"best"``: V = cost / best cost so far (the landscape sharpens as the search improves).

Measured with ``scripts/bench_mappers.py --acceptance --max-space 13000000`` (100 seeded runs of
1000 iterations on each of the 8 unique ResNet-34 layers with at most 13 M orderings,
eyeriss_like, energy; fraction of runs reaching the exhaustive optimum / mean gap):

================  ==================  ==================
normalise         rho = 0.999, T0 .05  rho = 0.995, T0 .05
================  ==================  ==================
log (default)     63.9 % / 0.32 %     75.4 % / 0.66 %
zigzag            63.9 % / 0.33 %     76.9 % / 0.59 %
initial           47.6 % / 0.78 %     78.0 % / 0.47 %
================  ==================  ==================

Per layer it ranges from 18 % (layer3.0.conv1) to 99 % (layer4.0.downsample) at rho = 0.999.
``"initial"`` is worst at the paper's parameters: a random initial state costs several times the
optimum, so dividing by it keeps the late phase hot. ZigZag's code cools with 0.995^i, not the
paper's rho = 0.999 (final T 3.3e-4 instead of 0.018): more runs reach the optimum, but the misses
are larger. The paper's 99.9 % / 0.007 % (with ZigZag's cost model) is not reached by one chain of
1000 iterations here; parallel chains raise the rate to 1 - (1 - p)^chains.

Moves (``moves``)
-----------------
``"swap"`` is the paper's neighbourhood (eq. 2). ``"mixed"`` draws a swap with probability
``swap_share`` and otherwise, in equal shares, a block move (a run of 1..`BLOCK_MAX` consecutive
LPFs taken out and reinserted elsewhere) or a segment reversal. Orderings with many LPFs of a few
types have wide plateaus and local optima that no single swap leaves: from the end states of 4
swap chains x 1000 (T0 0.0056, rho 0.9931, ``"initial"``) on four ResNet-34 layers, a steepest
descent over every swap and every single-LPF move improves none, while one over block moves and
reversals lifts the runs at the optimum from 152 to 172 of 200 (50 seeds per layer); annealing
with the mixed moves from the start reaches 93 % of runs (112 of 120, 30 seeds) at the same budget,
swaps 76 %.

Final descent
-------------
Not in the paper. With ``descent`` (default on) the chains of a run share one work unit and are
followed by first-improvement descents (`mappers.loop_order.moves.descend`) over the whole mixed
neighbourhood (every swap, block move of 1..`BLOCK_MAX` LPFs and reversal: about 450-570 distinct
orderings on the ResNet-34 layers below), from the chains' distinct best orderings, best first, each
until a local optimum (version 4: or until it joins an earlier descent, below), while evaluations
remain of ``max_evaluations`` (4,000); orderings a chain already evaluated are looked up, not
re-evaluated. Why: the runs of version 2 (8 chains x 500) that missed the optimum ended, in 10 of 12
misses on layer3.0.conv1 and layer3.0.conv2 (seeds 0-99), one move from it, with 1 or 2 better
orderings among about 500 neighbours (e.g. YCCCKKK CCCC x y KKK, 0.0395 % above KKKCCCY CCCC x y KKK
on layer3.0.conv1: a reversal of the 7 innermost LPFs; test
``test_descend_rescues_a_stuck_salsa_end_on_the_real_model``); random proposals find such a move
with probability ~1/500 each, a scan of the neighbourhood finds it for certain. In version 3 its
evaluations were taken from the chains (16 x 180 instead of 8 x 500; about 2,800 evaluations for the
chains, 1,200 for the descent). The misses left were local optima of the whole neighbourhood (e.g.
KKCyCCCY CCCC x KKKK, 0.43 % above the optimum of layer3.0.conv2; the nearest better ordering is two
moves away through an ordering 2.1 % worse), reached when none of the 16 chains starts in the
optimum's basin. Tried and not kept, at the same budget (layer3.0.conv1 + layer3.0.conv2, 200-300
seeds each, percentage of runs at the optimum): descending only the best end 98.1-98.8 %; 10 x 300
or 12 x 250 chains 98.5-98.8 %; 20 x 140 98.0 %; successive halving of 32 chains (32 x 50, best 12 x
100, best 4 x 150) 98.8 %; order crossover of the 4 best ends before the descent 98.3 % (without it
98.5 %); kicks (2 random moves from the best after 60 evaluations without gain) 79.5 %; T0 0.01-0.03
with rho 0.95-0.97 98.3-99.3 % (default: 98.8-99.3 %; differences within the seed-to-seed noise).

Version 4: descents that stop when they join, in surrogate order
-----------------------------------------------------------------
Version 3's misses, in a local optimum or not, were for want of evaluations: descending every distinct
chain end without a limit reached the optimum in 200 of 200 runs (layer3.0.conv2, seeds 0-199), but a
descent costs 500-900 evaluations (its steps, found in random order, plus the scan that proves the
local optimum), most ends of a run lie in one basin (on layer3.0.conv2 that of the 0.43 % local
optimum) and the ends that lead to the optimum are often worse (e.g. 1.8 % above) and come last.
`mappers.loop_order.moves.descend_ends` (test ``test_descend_ends_joins_an_earlier_basin_on_the_real_model``):

* ends of equal cost (a plateau of orderings the model does not tell apart) are descended once;
* a descent stops when it joins an earlier one: its ordering is on an earlier descent's path, a
  neighbour on such a path is better, or it costs the same as a local optimum already proved;
* with ``surrogate`` (default) the neighbours are scanned lowest predicted cost first, by a ridge
  regression of ln(cost) on position x type indicators fitted to the chains' evaluations (no
  evaluations; `mappers.loop_order.moves.fit_surrogate`): at chain ends of layer3.0.conv2 the first
  better neighbour comes after ~55 evaluations instead of ~130 in random order;
* the cheaper descents get more of the budget: 16 x 150 (about 2,350 evaluations for the chains).

Chosen on seeds 500-1999 of layer3.0.conv1 + layer3.0.conv2 (3,000 runs at the optimum): version 3
98.37 %; joining 98.70 %; + surrogate 99.17 %; + 16 x 150 99.67 % (16 x 120: 99.43 %, 20 x 110:
99.67 %; re-fitting the surrogate after each descent or stopping on any value of an earlier path: no
gain). Measured below ("Default schedule"). Not kept: a first pass giving every end 150 evaluations
before completing the best (94.0 % on seeds 0-499).

Default schedule
----------------
`DEFAULT_SCHEDULE`: the chains' T0 = 0.0044, ``"log"``, mixed moves and swap share 0.32 were chosen by
``sweep tune campaigns/tune_salsa_default.toml`` (docs/salsa_loma.md; 8 x 500, no
descent: six trials tied at zero training gap, all mixed; the default rounds the one that measured
best on issue 13's criterion); rho = 0.9 (the same final temperature range for shorter chains) was
then chosen with the descent, chains x iterations with version 4's descent (above). Measured with
``scripts/salsa_vs_exhaustive.py --defaults --no-speedup --layers layer3.0.conv1,layer3.0.conv2,
layer2.0.downsample,layer4.0.conv1`` (ResNet-34, eyeriss_like, energy, engine "sa"), runs at the
exhaustive optimum, at most 4,000 cost evaluations per run:

=========  ==================================  ==================================
version    seeds 0-99 (400 runs)               seeds 100-499 (``--first-seed 100 --runs 400``)
=========  ==================================  ==================================
4          99.0 % (100 / 96 / 100 / 100 %),    99.6 % (99.25 / 99.25 / 100 / 100 %),
           mean gap 0.0026 %                   mean gap 0.0015 %
3          98.75 % (100 / 95 / 100 / 100 %),   99.5 % (99.0 / 99.0 / 100 / 100 %)
           mean gap 0.0038 %
2          97.0 % (93 / 95 / 100 / 100 %)
=========  ==================================  ==================================

(layers in the order conv1, conv2, downsample, layer4.0.conv1; version 2: 8 x 500, no descent; version
3: 16 x 180 and the plain descent.) The misses of version 4 are all on layer3.0.conv1 / conv2, runs
where no chain ends in the optimum's basin before the budget is spent. The paper's schedule is
`PAPER_SCHEDULE` (no descent).

Dual engine (section IV-A, eq. 1)
---------------------------------
The paper compares the exhaustive time T(n, k) = tau * n! / prod k_i! with the SA time and takes
the faster path. A decision on measured time would make rows depend on machine speed, so
``engine="auto"`` decides on the count: exhaustive when n! / prod k_i! <= chains * iterations *
`AUTO_EXHAUSTIVE_FACTOR`, where the factor is the measured ratio of the time of one SA step (a
single-ordering evaluator call plus the move) to the time per ordering of batched exhaustive
evaluation. The measured tau (seconds per ordering in a batch of 256) and both time estimates are
reported in ``extra`` as information only.

Work units
----------
SA: one unit per chain, each with its own seed from ``numpy.random.SeedSequence(seed).spawn(chains)``
(so chain k is the same whatever else runs); with ``lockstep`` one unit runs all chains together,
one batched evaluator call per iteration, and gives exactly the same chains. With ``descent`` (the
default) one unit runs all chains in lockstep, then the descent, whose visiting order is seeded by
child ``chains`` of the same spawn. Exhaustive: ``chains``
shards of LOMA's enumeration (`mappers.loop_order.loma`). `reduce` keeps the best (first of equal values).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from mappers.base import LayerProblem, Param, SearchResult, WorkUnit, best_of, chain_seeds
from mappers.loop_order.base import (SPATIAL_PARAMS, LoopOrderMapper, least_energy_tie, make_result, problem_counts,
                                     problem_evaluator)
from mappers.loop_order.annealer import (INIT_TRIES, MOVES, NORMALISE, ChainResult, anneal, merged_evaluations,
                                         random_orderings, single_row)
from mappers.loop_order.loma import exhaustive_range
from mappers.loop_order.lpf import iter_permutations, multiset_count, shard_range
from mappers.loop_order.moves import Evaluated, descend_ends, fit_surrogate, fit_surrogate_rows

__all__ = ["AUTO_EXHAUSTIVE_FACTOR", "DEFAULT_SCHEDULE", "INIT_TRIES", "PAPER_SCHEDULE", "ChainResult", "anneal",
           "random_orderings",
           "chain_seeds", "SalsaMapper", "SALSA"]

#: ``engine="auto"`` takes the exhaustive path when the number of orderings is at most
#: chains * iterations * this factor: the time of one SA iteration (single-ordering evaluator
#: call + move + acceptance) over the time per ordering of batched exhaustive evaluation
#: (tau), measured with scripts/bench_mappers.py on ResNet-34 layer1.0.conv1, eyeriss_like, with
#: the numba backend of `costmodel.loopnest.ordering`: 9.5 us / 3.6 us = 2.6, rounded up to 3 (exhaustive is
#: exact, so ties lean to it). Kept at 3 with the one kernel of issue 20 (6.7 us / 1.9 us = 3.5 on
#: layer2.0.conv2, LOMA's lexicographic order now evaluated incrementally): it decides rows. With the defaults
#: (16 chains x 150 iterations) layers of up to 7,200 orderings are searched exhaustively.
AUTO_EXHAUSTIVE_FACTOR = 3

#: The paper's schedule (SALSA section V-A): one chain of 1000 swaps, T0 = 0.05, rho = 0.999.
PAPER_SCHEDULE = {"iterations": 1000, "t0": 0.05, "rho": 0.999, "chains": 1, "normalise": "log", "moves": "swap",
                  "descent": False}
#: SALSA's default schedule: 16 chains x 150 proposals, then the final descent, at most 4,000 cost
#: evaluations per run (issue 13; module docstring, "Final descent" and "Default schedule").
DEFAULT_SCHEDULE = {"iterations": 150, "t0": 0.0044, "rho": 0.9, "chains": 16, "normalise": "log",
                    "moves": "mixed", "swap_share": 0.32, "descent": True, "surrogate": True, "max_evaluations": 4000}


def _final_descent(ev, objective: str, chains: Sequence[ChainResult], budget: int | None,
                   rng: np.random.Generator, surrogate: bool = True,
                   evaluated: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[float, np.ndarray | None, int]:
    """The final descent (module docstring): `mappers.loop_order.moves.descend_ends` from the chains'
    distinct best orderings, while evaluations remain of ``budget`` (None: no limit), looking up what
    any chain evaluated (``evaluated``: the chains' `merged_evaluations` if known), in the scan order of
    a surrogate fitted to the chains' evaluations if ``surrogate``. Returns (best value, its ordering,
    evaluations)."""
    seen: dict[tuple, float] | Evaluated
    if evaluated is None:
        memo: dict[tuple, float] = {}
        for r in chains:
            memo.update(r.memo() or {})
        seen = memo
    else:
        seen = Evaluated(*evaluated)
    ends = list({tuple(r.ordering.tolist()): r.value for r in chains
                 if np.isfinite(r.value) and r.ordering is not None}.items())  # finite value: an ordering
    best = min(chains, key=lambda r: r.value)
    if not ends:
        return best.value, best.ordering, 0
    weights = None
    if surrogate:
        weights = (fit_surrogate(memo, len(ev.counts)) if evaluated is None
                   else fit_surrogate_rows(evaluated[0], evaluated[1], len(ev.counts)))
    value, ordering, used = descend_ends(single_row(ev, objective), ends, 10**12 if budget is None else budget, rng,
                                         seen, weights, many=lambda qs: ev.objective(np.array(qs, dtype=np.int64),
                                                                                     objective).tolist())
    if value < best.value:
        return value, np.array(ordering, dtype=np.int64), used
    return best.value, best.ordering, used


def _measure_tau(ev, objective: str, rows: int = 256) -> float:
    """Seconds per ordering of one batched evaluator call on the first ``rows`` orderings."""
    block = next(iter_permutations(ev.counts, 0, min(rows, multiset_count(ev.counts)), rows))
    t = time.perf_counter()
    ev.objective(block, objective)
    return (time.perf_counter() - t) / len(block)


class SalsaMapper(LoopOrderMapper):
    """SALSA: SA over LPF orderings (eqs. 2-3), dual engine with LOMA's exhaustive search (eq. 1).

    Lifecycle: `units` decides the engine (for "auto", on the count of orderings, see
    `AUTO_EXHAUSTIVE_FACTOR`) and returns SA chains (seeded) or exhaustive shards; `run` runs one
    unit; `reduce` keeps the best and stacks the chains' histories.

    Args:
        evaluator_factory: builds the ordering evaluator (signature of
            ``costmodel.loopnest.ordering.OrderingEvaluator``); None = the real one.
    """

    name = "salsa"
    version = "6"  # 6: the loma rank counts figures within a cycle or 1 ppm as tied (mappers.spatial.tied); 5: spatial_rank "auto" (loma under the latency objective) is the default
    latency_ties = 1  # ties on latency broken by energy (mappers.base.rank_key)
    kind = "loopnest"
    params = (
        Param("engine", "str", "auto", "auto: exhaustive when the space is small enough, else SA (eq. 1)",
              choices=("auto", "sa", "exhaustive")),
        Param("iterations", "int", DEFAULT_SCHEDULE["iterations"], "SA iterations I per chain (paper: 1000)",
              low=0, high=10**8),
        Param("t0", "float", DEFAULT_SCHEDULE["t0"], "initial temperature T0 on the normalised cost (paper: 0.05)",
              low=1e-12),
        Param("rho", "float", DEFAULT_SCHEDULE["rho"], "geometric cooling factor, T_{i+1} = rho T_i (paper: 0.999)",
              low=0.0, high=1.0),
        Param("chains", "int", DEFAULT_SCHEDULE["chains"],
              "independent SA chains (parallel restarts), each its own work unit and seed (paper: 1)",
              low=1, high=10**6),
        Param("lockstep", "bool", False, "run all chains in one unit, one batched evaluator call per iteration"),
        Param("seed", "int", 0, "campaign seed; the chains' seeds are spawned from it (SeedSequence.spawn)",
              low=0),
        Param("normalise", "str", DEFAULT_SCHEDULE["normalise"],
              "V in exp((V - V')/T): ln(cost), cost / initial cost, cost / best so far, or ZigZag's V/V' - 1",
              choices=NORMALISE),
        Param("moves", "str", DEFAULT_SCHEDULE["moves"],
              "proposals: swap (eq. 2, the paper) or mixed (swaps, block moves and reversals)",
              choices=MOVES),
        Param("swap_share", "float", DEFAULT_SCHEDULE["swap_share"], "share of swaps among mixed proposals",
              low=0.0, high=1.0),
        Param("descent", "bool", DEFAULT_SCHEDULE["descent"],
              "after the chains, a first-improvement descent over every mixed move from their best ends "
              "(all chains then run in one work unit)"),
        Param("surrogate", "bool", DEFAULT_SCHEDULE["surrogate"],
              "the final descent scans neighbours lowest predicted cost first, by a linear surrogate of ln(cost) "
              "on position x type fitted to the chains' evaluations (False: in random order)"),
        Param("max_evaluations", "int", DEFAULT_SCHEDULE["max_evaluations"],
              "cost evaluations per run, chains and descent together, at which the descent stops (0: no limit)",
              low=0),
        *SPATIAL_PARAMS,
    )

    def __init__(self, evaluator_factory: Callable | None = None) -> None:
        self.evaluator_factory = evaluator_factory

    def evaluator(self, problem: LayerProblem):
        """The (cached) ordering evaluator of ``problem``."""
        return problem_evaluator(problem, self.evaluator_factory)

    def choose_engine(self, problem: LayerProblem, params: Mapping[str, Any]) -> str:
        """"sa" or "exhaustive": ``params['engine']`` unless "auto", which compares the number of
        orderings n!/prod k_i! with chains * iterations * `AUTO_EXHAUSTIVE_FACTOR`."""
        engine = params.get("engine", "auto")
        if engine != "auto":
            return engine
        # the default evaluator's counts without building it (units are listed in the driver)
        counts = problem_counts(problem) if self.evaluator_factory is None else self.evaluator(problem).counts
        space = multiset_count(counts)
        d = DEFAULT_SCHEDULE
        budget = int(params.get("chains", d["chains"])) * int(params.get("iterations", d["iterations"])) \
            * AUTO_EXHAUSTIVE_FACTOR
        return "exhaustive" if space <= budget else "sa"

    def order_units(self, problem: LayerProblem, params: Mapping[str, Any]) -> list[WorkUnit]:
        """SA: one unit per chain (``spec={'chain': k}``) seeded by `chain_seeds` (params['seed'], chains),
        or one unit with all chains if ``lockstep`` (``spec={'chains': [...], 'seeds': [...]}``) or
        ``descent`` (the same, plus ``'descent_seed'``, child ``chains`` of the same spawn, for the
        descent's visiting order);
        exhaustive: ``chains`` shards."""
        chains = int(params.get("chains", DEFAULT_SCHEDULE["chains"]))
        engine = self.choose_engine(problem, params)
        if engine == "exhaustive":
            return [WorkUnit(kind="exhaustive", shard=i, shards=chains) for i in range(chains)]
        seeds = chain_seeds(int(params.get("seed", 0)), chains + 1)
        if params.get("descent", DEFAULT_SCHEDULE["descent"]):
            return [WorkUnit(kind="sa", seed=seeds[0], spec={"chains": list(range(chains)), "seeds": seeds[:-1],
                                                               "descent_seed": seeds[-1]})]
        seeds = seeds[:-1]
        if params.get("lockstep", False):
            return [WorkUnit(kind="sa", seed=seeds[0], spec={"chains": list(range(chains)), "seeds": seeds})]
        return [WorkUnit(kind="sa", seed=s, spec={"chain": k}) for k, s in enumerate(seeds)]

    def run_order(self, problem: LayerProblem, unit: WorkUnit, params: Mapping[str, Any]) -> SearchResult:
        """Run one unit: SA chain(s) or an exhaustive shard.

        ``extra``: ``space`` (orderings), ``n_loops``, and for SA ``chain``, ``v0``, ``accepted``,
        ``history_kind`` ("proposed"), ``tau_s`` (measured s per batched ordering, information
        only), ``t_exhaustive_est_s`` = tau * space (eq. 1) and ``t_sa_s`` (this run's time).
        For a lockstep unit the result is the best chain; ``history`` has shape (chains, I + 1).
        """
        t_start = time.perf_counter()
        ev = self.evaluator(problem)
        space = multiset_count(ev.counts)
        n_loops = int(np.sum(ev.counts))
        if unit.kind == "exhaustive":
            start, stop = shard_range(space, unit.shard, unit.shards)
            v, o, r, n = exhaustive_range(ev, problem.objective, start, stop)
            return make_result(ev, problem, self.name, "exhaustive", o, v, n, time.perf_counter() - t_start,
                               extra={"rank": r, "space": space, "start": start, "stop": stop, "n_loops": n_loops})
        if unit.kind != "sa":
            raise ValueError(f"salsa cannot run a work unit of kind {unit.kind!r}")
        seeds = unit.spec.get("seeds", [unit.seed])
        ids = unit.spec.get("chains", [unit.spec.get("chain", 0)])
        rngs = [np.random.default_rng(s) for s in seeds]
        q = {**DEFAULT_SCHEDULE, **params}
        res = anneal(ev, problem.objective, rngs, int(q["iterations"]), float(q["t0"]), float(q["rho"]),
                     str(q["normalise"]), str(q["moves"]), float(q["swap_share"]))
        t_sa = time.perf_counter() - t_start
        tau = _measure_tau(ev, problem.objective) if params.get("engine", "auto") == "auto" else None
        best = min(range(len(res)), key=lambda k: res[k].value)
        ch = res[best]
        extra = {"chain": ids[best], "v0": ch.v0, "accepted": ch.accepted, "history_kind": "proposed",
                 "space": space, "n_loops": n_loops, "t_sa_s": t_sa, "tau_s": tau,
                 "t_exhaustive_est_s": None if tau is None else tau * space}
        history = ch.history if len(res) == 1 else np.stack([r.history for r in res]) if \
            len({len(r.history) for r in res}) == 1 else [r.history for r in res]
        evals = sum(r.evaluations for r in res)
        value, ordering = ch.value, ch.ordering
        evaluated = merged_evaluations(res)
        if "descent_seed" in unit.spec:
            value, ordering, used = _final_descent(ev, problem.objective, res, int(q["max_evaluations"]) - evals
                                                   if int(q["max_evaluations"]) else None,
                                                   np.random.default_rng(unit.spec["descent_seed"]),
                                                   bool(q["surrogate"]), evaluated)
            extra.update(descent_evaluations=used, descent_gain=(ch.value - value) / ch.value if value < ch.value
                         else 0.0)
            evals += used
        if problem.objective == "latency":
            ordering = least_energy_tie(ev, value, ordering, [r.memo() for r in res] if evaluated is None
                                        else [evaluated])
        return make_result(ev, problem, self.name, "sa", ordering, value, evals,
                           time.perf_counter() - t_start, seed=seeds[best], history=history, extra=extra)

    def reduce(self, results: Sequence[SearchResult]) -> SearchResult:
        """Best unit (first of equal values, in unit order); SA histories stacked to (chains, I + 1)."""
        out = best_of(results, bool(self.latency_ties))
        hs = [r.history for r in results if r.history is not None]
        if len(results) > 1 and hs:
            rows = [h for h in hs for h in (h if isinstance(h, list) else list(np.atleast_2d(h)))]
            if len({len(h) for h in rows}) == 1:
                out = replace(out, history=np.stack(rows))
            else:
                out = replace(out, history=rows)
        return out


SALSA = SalsaMapper()
