"""Evaluating an annealer's schedule at a fixed evaluation budget, and reference optima.

This is the part of `sweep tune` that needs neither Optuna nor Ray: given a mapper (``salsa`` or
``primitive_sa``), a candidate schedule and a set of layers and seeds, run the mapper and measure
how far its best cost is from the layer's reference optimum. `sweep.tune.driver` asks Optuna for
schedules and runs `evaluate_layer` as Ray tasks (or in-process).

Fixed evaluation budget
-----------------------
A trial must not win by running longer, so every (layer, seed) gets the same number of SA
*proposals* ``budget`` = chains x iterations (SALSA, Jung et al., AICAS 2023, sec. IV: I
iterations per chain; the paper's defaults T0 = 0.05, rho = 0.999, I = 1000 are one chain of
1000). If the schedule tunes ``chains`` (parallel restarts), ``iterations = budget // chains``;
if it tunes ``iterations``, ``chains = budget // iterations``; the campaign validator requires
the tuned values to divide the budget, so chains x iterations == budget exactly (`derive_params`
raises otherwise). ``salsa`` runs with ``engine = "sa"``: its dual engine would otherwise answer
small spaces exhaustively, and without its final descent unless the campaign fixes ``descent``
(the descent's evaluations are not proposals of the schedule being tuned). `LayerOutcome.proposals`
counts the proposals from the chains'
histories (what the mapper actually did); ``evaluations`` is the mapper's own count of cost-model
calls, which is at most the proposals plus the random draws for the initial states (a chain
looks up a state it has already evaluated instead of re-evaluating it; `mappers.loop_order.salsa`).

Gap and reach
-------------
The relative gap of a cost ``v`` to the reference ``r`` is ``(v - r) / r`` (0 = optimal, 0.01 = 1 %
worse), capped at `GAP_CAP` (also for "no valid mapping found", v = +inf) so that Optuna always
receives finite objective values. A run *reaches* the optimum when its gap <= `REACH_TOL`
(1e-9, i.e. equal up to floating point). ``evals_to_reach(g)``: proposals, counted in lockstep
over the chains (k proposals in each of c chains = c x k proposals), until the best cost so far of
any chain is within gap g; a run that never gets there counts the whole budget (censored).

Reference optima
----------------
`reference_plan` decides per layer: LOMA's exhaustive search (`mappers.loop_order.loma`) when the ordering
space n! / prod k_i! is at most ``max_orderings`` and the mapper searches orderings (``salsa``;
LOMA's space is SALSA's space, so the reference is the true optimum), else a long run of the
tuned mapper itself (``fallback_chains`` x ``fallback_iterations`` at the mapper's defaults:
the "best cost ever seen"; `sweep.tune.driver` also keeps the best cost any trial found). The LOMA
evaluator does about 250,000 orderings/s per core (docs/salsa_loma.md), so 2e6 orderings take ~8 s.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from mappers import get_mapper
from mappers.base import LayerProblem, WorkUnit
from mappers.annealing import TUNABLE_MAPPERS, derive_params
from sweep.engine.problem import Problem

__all__ = ["TUNABLE_MAPPERS", "GAP_CAP", "REACH_TOL", "derive_params", "relative_gap", "evals_to_reach",
           "layer_problem", "LayerOutcome", "evaluate_layer", "reference_plan", "run_reference_unit",
           "reduce_reference", "summarise_gaps"]

#: Largest relative gap reported (1000 %); also the gap of a run without a valid mapping.
GAP_CAP = 10.0
#: A run reaches the optimum when its relative gap is at most this.
REACH_TOL = 1e-9


def relative_gap(value: float, reference: float) -> float:
    """(value - reference) / reference, capped at `GAP_CAP`; +inf / NaN values give `GAP_CAP`.

    >>> relative_gap(101.0, 100.0)
    0.01
    """
    if not math.isfinite(value) or not math.isfinite(reference) or reference <= 0:
        return GAP_CAP
    return min((value - reference) / reference, GAP_CAP)


def evals_to_reach(histories: Sequence[np.ndarray], reference: float, gap: float) -> int:
    """Proposals until the best cost so far of any chain is within ``gap`` of ``reference``.

    Args:
        histories: per chain, the objective of the initial state then of each proposal, shape
            (iterations + 1,) (`SearchResult.history` of one SA unit).
        reference: the reference optimum (same units as the history).
        gap: relative gap target (0 = the optimum itself, up to `REACH_TOL`).

    Returns:
        c x k for the first history index k (k proposals per chain, index 0 = the initial state)
        at which some chain is within the target, with c the number of chains; c x iterations if
        never.
    """
    target = reference * (1.0 + max(gap, REACH_TOL))
    c = len(histories)
    first = None
    for h in histories:
        hit = np.flatnonzero(np.asarray(h, dtype=float) <= target)
        if len(hit):
            first = hit[0] if first is None else min(first, hit[0])
    total = c * max(len(h) - 1 for h in histories)
    return total if first is None else int(c * first)


@functools.lru_cache(maxsize=64)
def layer_problem(network: str, layer: str, arch: str, objective: str) -> LayerProblem:
    """The `LayerProblem` of zoo ``network``'s layer named ``layer`` on accelerator ``arch``
    (preset name or TOML path), cached per process so that a worker reuses the (cached) ordering
    evaluator across tasks.

    Raises:
        KeyError: unknown network or layer. ValueError: unknown accelerator.
    """
    from costmodel.loopnest.arch import load_accelerator
    from costmodel.zoo import load_network
    net = load_network(network)
    for lay, _ in net.unique():
        if lay.name == layer:
            return LayerProblem(lay, load_accelerator(arch), None, objective)
    raise KeyError(f"network {network!r} has no layer {layer!r}")


@dataclass
class LayerOutcome:
    """One schedule on one layer over several seeds (lists in seed order).

    ``values``: best objective per seed (pJ, cycles or pJ x cycles); ``gaps``: relative gaps to
    ``reference``; ``proposals``: SA proposals per seed (== budget); ``evaluations``: cost-model
    calls per seed (`SearchResult.evaluations` summed over chains); ``to_reach``: `evals_to_reach`
    at ``reach_gap`` per seed; ``wall_s``: seconds for all seeds.
    """

    layer: str
    seeds: list[int]
    reference: float
    values: list[float]
    gaps: list[float]
    proposals: list[int]
    evaluations: list[int]
    to_reach: list[int]
    reach_gap: float
    wall_s: float
    extra: dict = field(default_factory=dict)

    @property
    def mean_gap(self) -> float:
        return float(np.mean(self.gaps))

    @property
    def reach_rate(self) -> float:
        """Fraction of seeds whose gap <= `REACH_TOL`."""
        return float(np.mean([g <= REACH_TOL for g in self.gaps]))

    def to_dict(self) -> dict:
        return asdict(self)


def evaluate_layer(mapper_name: str, problem: LayerProblem, params: Mapping[str, Any], seeds: Sequence[int],
                   reference: float, reach_gap: float = 0.0, layer: str = "") -> LayerOutcome:
    """Run the mapper with resolved ``params`` (see `derive_params`) once per seed on ``problem``.

    Every work unit of the mapper runs in this process (`sweep.tune.driver` parallelises over layers and
    trials, not inside a run).
    """
    t = time.perf_counter()
    values, gaps, props, evals, reach = [], [], [], [], []
    for s in seeds:
        sol = Problem.of(mapper_name, problem, params, int(s)).solve()
        best, hists = sol.best, sol.histories()
        values.append(float(best.value))
        gaps.append(relative_gap(best.value, reference))
        props.append(int(sum(len(h) - 1 for h in hists)))
        evals.append(int(best.evaluations))
        reach.append(evals_to_reach(hists, reference, reach_gap) if hists else int(props[-1]))
    return LayerOutcome(layer or getattr(problem.layer, "name", ""), [int(s) for s in seeds], float(reference),
                        values, gaps, props, evals, reach, float(reach_gap), time.perf_counter() - t)


def reference_plan(mapper_name: str, problem: LayerProblem, max_orderings: int, shards: int = 1,
                   fallback_chains: int = 8, fallback_iterations: int = 20000, fallback_seed: int = 12345
                   ) -> tuple[str, int | None, list[tuple[str, dict, WorkUnit]]]:
    """How to compute a layer's reference optimum: (method, space, units).

    method "loma" (exhaustive, ``shards`` units) when ``mapper_name`` is ``salsa`` and the ordering
    space is at most ``max_orderings``; else "sa_long": one unit per chain of the tuned mapper
    at its default schedule with ``fallback_chains`` x ``fallback_iterations`` proposals.
    Each unit is (mapper name, resolved params, WorkUnit) for `run_reference_unit`. ``space`` is
    the number of orderings (None for ``primitive_sa``, whose space is not an ordering space).
    """
    space = None
    if mapper_name == "salsa":
        loma = get_mapper("loma")
        p = loma.resolve({"shards": shards})
        space = loma.space_size(problem, p)
        if space <= max_orderings:
            return "loma", space, [("loma", p, u) for u in Problem.of("loma", problem, p).units()]
    m = get_mapper(mapper_name)
    extra = {"engine": "sa", "descent": False} if mapper_name == "salsa" else {}   # one unit per chain
    p = m.resolve({**extra, "chains": fallback_chains, "iterations": fallback_iterations, "seed": fallback_seed})
    return "sa_long", space, [(mapper_name, p, u) for u in Problem.of(mapper_name, problem, p).units()]


def run_reference_unit(mapper_name: str, problem: LayerProblem, params: dict, unit: WorkUnit):
    """One unit of a reference computation (a LOMA shard or a long SA chain); history dropped."""
    from dataclasses import replace
    r = Problem.of(mapper_name, problem, params).run(unit)
    return replace(r, history=None)


def reduce_reference(results) -> tuple[float, float]:
    """(best value, summed wall seconds) of a reference's unit results."""
    return float(min(r.value for r in results)), float(sum(r.wall_s for r in results))


def summarise_gaps(outcomes: Sequence[LayerOutcome]) -> dict[str, float]:
    """Mean over layers of the per-layer mean gap, reach rate and mean evals-to-reach; layers
    weigh equally whatever their number of seeds."""
    if not outcomes:
        return {"mean_gap": float("nan"), "reach_rate": float("nan"), "mean_to_reach": float("nan")}
    return {"mean_gap": float(np.mean([o.mean_gap for o in outcomes])),
            "reach_rate": float(np.mean([o.reach_rate for o in outcomes])),
            "mean_to_reach": float(np.mean([np.mean(o.to_reach) for o in outcomes]))}
