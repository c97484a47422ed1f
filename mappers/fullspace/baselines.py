"""Random baselines over the full mapspace (tiling, loop order, spatial unrolling), on the same
primitive-list states and decoding as `mappers.fullspace.primitive_sa` (`PrimitiveSpace`).

* ``random5`` -- CoSA's "Random (5x)" (Huang et al., ISCA 2021, section V): draw random mappings
  (`PrimitiveSpace.random_state`: every primitive to a uniformly random section among the temporal
  levels and the array dims it still fits, each section shuffled) until ``valid`` (5) of them are valid
  in the cost model, keep the best. ``max_samples`` caps the draws (then fewer than ``valid`` may
  have been found: ``extra['valid_found']``). One work unit.
* ``hybrid`` -- Timeloop-Hybrid-like (Parashar et al., ISPASS 2019: random index factorization,
  linear permutation): each of ``threads`` work units (own seed from `chain_seeds`) repeatedly draws a
  random tiling (a random state: which primitives sit in which level / array dim), merges each
  level's primitives per dim into one loop, and walks linearly over the permutations of the loops of
  all levels (mixed-radix rank over the levels' permutations, from a random start, ``perms`` ranks per
  tiling). Validity does not depend on the order within levels, so an invalid first permutation
  skips the tiling. A thread stops after ``patience`` (500) consecutive *valid* non-improving
  mappings (invalid ones neither count nor reset; Timeloop's victory condition) or at
  ``max_evaluations``. `reduce` keeps the best thread (evaluations summed).

Both draw only spatial placements the accelerator's ``[spatial_hint]`` allows (param ``hint``, default
True; `PrimitiveSpace.random_state`: a primitive's section among those it may enter, so every mapping
obeys the hint) and count a draw below the hint's ``min_utilization`` as invalid (version 2; without a
hint, or with ``hint=False``, the draws of version 1).

Both count ``evaluations`` = cost-model calls (every draw is evaluated; invalid ones included).

Latency ties (issue 38; ``latency_ties`` = 1 on both): under the latency objective a mapping of equal
latency and lower energy (then equal energy and fewer DRAM bits) is better
(`mappers.fullspace.ties.beats`): random5 keeps it, and a hybrid thread counts it as an improvement
that resets its patience, as Timeloop's victory condition counts the mappings that are not better
under its lexicographic ``optimization-metrics`` (a thread's draws do not depend on its comparisons,
so it evaluates what it did before and possibly more: its latency is never worse). Threads are
reduced by latency, then energy (`mappers.base.best_of`). Energy and EDP results are those of version 2.
"""

from __future__ import annotations

import math
import time
from typing import Any, Mapping as _Mapping, Sequence

import numpy as np

from mappers.base import LayerMapper, LayerProblem, Param, SearchResult, WorkUnit
from mappers.fullspace.primitive_sa import HINT_PARAM, chain_seeds, make_fullspace_result, problem_space
from mappers.fullspace.ties import beats

__all__ = ["Random5Mapper", "HybridMapper", "RANDOM5", "HYBRID", "nth_permutation"]


def nth_permutation(items: Sequence, k: int) -> list:
    """The k-th (0-based) lexicographic permutation of ``items`` (positions; k < len(items)!)."""
    pool = list(items)
    out = []
    for i in range(len(pool), 0, -1):
        f = math.factorial(i - 1)
        j, k = divmod(k, f)
        out.append(pool.pop(j))
    return out


class Random5Mapper(LayerMapper):
    """Best of the first ``valid`` valid random full-space mappings (CoSA's Random (5x)); latency
    ties broken by energy, then DRAM bits (module docstring)."""

    name = "random5"
    version = "2"  # 2: spatial hints
    latency_ties = 1  # latency ties broken by energy, then DRAM bits (module docstring)
    kind = "loopnest"
    params = (
        Param("valid", "int", 5, "valid random mappings to draw; the best is kept", low=1, high=10**6),
        Param("seed", "int", 0, "seed of the random draws", low=0),
        Param("max_samples", "int", 100000, "cap on the draws (valid or not)", low=1, high=10**9),
        HINT_PARAM,
    )

    def units(self, problem: LayerProblem, params: _Mapping[str, Any]) -> list[WorkUnit]:
        return [WorkUnit(kind="random", seed=chain_seeds(int(params.get("seed", 0)), 1)[0])]

    def run(self, problem: LayerProblem, unit: WorkUnit, params: _Mapping[str, Any]) -> SearchResult:
        """``history`` = objective of every draw (+inf invalid); ``extra``: valid_found, valid_values,
        valid_rate, mapping."""
        t0 = time.perf_counter()
        space = problem_space(problem, params)
        rng = np.random.default_rng(unit.seed)
        want, cap = int(params.get("valid", 5)), int(params.get("max_samples", 100000))
        best, best_v, best_rep = None, math.inf, None
        hist: list[float] = []
        valid_vals: list[float] = []
        while len(valid_vals) < want and len(hist) < cap:
            s = space.random_state(rng)
            v, rep = space.evaluate(s, problem.objective)
            hist.append(v)
            if math.isfinite(v):
                valid_vals.append(v)
                if beats(v, rep, best_v, best_rep, problem.objective, space.arch):  # latency ties: energy, DRAM
                    best, best_v, best_rep = s, v, rep
        extra = {"valid_found": len(valid_vals), "valid_values": valid_vals,
                 "valid_rate": len(valid_vals) / len(hist)}
        return make_fullspace_result(space, problem, self.name, "random", best, best_v, best_rep, len(hist),
                                     time.perf_counter() - t0, unit.seed, np.array(hist), extra)



class HybridMapper(LayerMapper):
    """Timeloop-Hybrid-like: random tiling, linear walk over loop permutations, per-thread patience;
    latency ties broken by energy, then DRAM bits, which counts as an improvement (module docstring)."""

    name = "hybrid"
    version = "2"  # 2: spatial hints
    latency_ties = 1  # latency ties broken by energy, then DRAM bits; such a tie-break resets patience
    kind = "loopnest"
    params = (
        Param("threads", "int", 8, "independent search threads, each its own work unit and seed", low=1,
              high=10**6),
        Param("patience", "int", 500, "a thread stops after this many consecutive valid non-improving mappings",
              low=1, high=10**9),
        Param("perms", "int", 16, "permutations walked linearly per random tiling", low=1, high=10**9),
        Param("max_evaluations", "int", 100000, "cap on the evaluations of one thread", low=1, high=10**9),
        Param("seed", "int", 0, "seed; the threads' seeds are spawned from it (SeedSequence.spawn)", low=0),
        HINT_PARAM,
    )

    def units(self, problem: LayerProblem, params: _Mapping[str, Any]) -> list[WorkUnit]:
        seeds = chain_seeds(int(params.get("seed", 0)), int(params.get("threads", 8)))
        return [WorkUnit(kind="hybrid", seed=s, spec={"thread": k}) for k, s in enumerate(seeds)]

    def run(self, problem: LayerProblem, unit: WorkUnit, params: _Mapping[str, Any]) -> SearchResult:
        """One thread. ``history`` = objective of every evaluated mapping; ``extra``: stopped
        ("patience" | "max_evaluations"), streak, tilings, valid_rate, thread, mapping."""
        t0 = time.perf_counter()
        space = problem_space(problem, params)
        rng = np.random.default_rng(unit.seed)
        patience, perms = int(params.get("patience", 500)), int(params.get("perms", 16))
        cap = int(params.get("max_evaluations", 100000))
        A = space.A
        best, best_v, best_rep = None, math.inf, None
        hist: list[float] = []
        streak, tilings, n_valid = 0, 0, 0
        stopped = "max_evaluations"
        while len(hist) < cap and stopped != "patience":
            tiling = space.random_state(rng)
            tilings += 1
            # one loop per dim per level: the level's primitives grouped by dim
            levels = []
            for s in tiling[A:]:
                groups: dict[str, list[int]] = {}
                for i in s:
                    groups.setdefault(space.prims[i][0], []).append(i)
                levels.append(list(groups.values()))
            radix = [math.factorial(len(g)) for g in levels]
            total = math.prod(radix)
            start = int(rng.integers(total)) if total < 2**62 else int(rng.integers(2**62))
            for step in range(min(perms, total)):
                r = (start + step) % total
                sec = [list(x) for x in tiling[:A]]
                for g, q in zip(levels, radix):
                    r, k = divmod(r, q)
                    sec.append([i for grp in nth_permutation(g, k) for i in grp])
                v, rep = space.evaluate(sec, problem.objective)
                hist.append(v)
                if not math.isfinite(v):
                    break  # validity does not depend on the order: next tiling
                n_valid += 1
                if beats(v, rep, best_v, best_rep, problem.objective, space.arch):  # latency ties: energy, DRAM
                    best, best_v, best_rep, streak = sec, v, rep, 0
                else:
                    streak += 1
                    if streak >= patience:
                        stopped = "patience"
                        break
                if len(hist) >= cap:
                    break
        extra = {"stopped": stopped, "streak": streak, "tilings": tilings, "thread": unit.spec.get("thread", 0),
                 "valid_rate": n_valid / len(hist) if hist else 0.0, "patience": patience}
        return make_fullspace_result(space, problem, self.name, "hybrid", best, best_v, best_rep, len(hist),
                                     time.perf_counter() - t0, unit.seed, np.array(hist), extra)



RANDOM5 = Random5Mapper()
HYBRID = HybridMapper()
