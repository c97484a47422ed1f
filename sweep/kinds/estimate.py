"""How long a campaign will take, roughly: the last line of `sweep validate`.

A work unit's time is ``a + b x work``: ``work`` is counted from the mapper's parameters and the
unit (SA proposals, samples up to the patience, enumerated orderings, MIP solves, tilings,
hardware points x layers; `unit_work`), ``a`` and ``b`` are that mapper's seconds per unit and
per unit of work, measured on one core by ``scripts/bench_estimate.py`` (`COSTS`). A task adds
`TASK_S` (scheduling, storing); the run adds `START_S` (a local Ray and its workers' start). The
wall time on K CPUs is the start plus the tasks' sum over the tasks that run at once, at least
the longest task: what a run takes on an otherwise idle machine with K cores. Checked against
runs of reduced bundled campaigns (the commit that added this module): in-process, the units'
time within 25% of the estimate (archsearch, npu, cosa_simba's five mappers, salsa_eyeriss's
four); with Ray on 2 cores that other jobs shared, 1.0-1.7x the estimate.

What is not estimated is said so: a mapper with no cost model here, the kinds whose run time
the parameters do not fix (``tune``: its pruner stops trials early).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["COSTS", "START_S", "TASK_S", "Estimate", "unit_work", "unit_seconds", "units_seconds", "cpus"]

#: What a work unit costs on one core, in-process: key of `unit_work` -> (seconds per unit that
#: has the key, seconds per unit of work). Measured by ``python scripts/bench_estimate.py`` (Intel
#: Xeon, 2 cores, 2026-11-26; the same benchmark an hour apart, with other jobs on the machine,
#: gave up to 2x these: the estimate is good to about that).
COSTS: dict[str, tuple[float, float]] = {
    "salsa": (0.000852, 9.41e-06),        # per SA proposal (chains x iterations)
    "salsa_descent": (0.0147, 1.45e-05),  # per evaluation the final descent may use (up to max_evaluations)
    "orderings": (0.00105, 2.46e-06),     # per ordering enumerated (LOMA, SALSA's exhaustive engine)
    "random": (0.0014, 8.14e-06),         # per sample, up to the patience
    "primitive_sa": (0, 0.000298),        # per proposal (iterations)
    "random5": (0.00178, 0.00154),        # per valid mapping drawn
    "hybrid": (0, 0.000733),              # per evaluation, up to the patience
    "cosa": (0, 1.25),                    # per MIP solve (HiGHS; DeepBench OCR layers on simba_like)
    "flexer": (0.301, 0),                 # per unit (its tilings are pruned: no per-tiling trend)
    "static": (0.405, 4.71e-05),          # per unit, per tiling
    "deepopt": (0.00148, 2.91e-06),       # per hardware point x layer (all objectives at once)
}
#: A local Ray's start and its workers' first imports / kernel loads, seconds (same benchmark).
START_S = 8.49
#: Per task on one core: sending it, receiving and storing its rows, seconds (same benchmark).
TASK_S = 0.0063


def _salsa_work(params: Mapping[str, Any], unit, problem) -> dict[str, float]:
    if unit.kind == "exhaustive":
        return {"orderings": _orderings(problem, params, None, unit)}
    chains = len(unit.spec.get("chains", [0]))
    sa = chains * int(params.get("iterations", 150))
    if not params.get("descent", True):
        return {"salsa": float(sa)}
    cap = int(params.get("max_evaluations", 4000))
    # the descent runs until the cap (chains and descent together) or a local optimum; no cap: about as long as the chains
    return {"salsa": float(sa), "salsa_descent": float(max(0, cap - sa) if cap else sa)}


def _orderings(problem, params: Mapping[str, Any], lpf_limit, unit) -> float:
    """Orderings one exhaustive unit enumerates (0 if LOMA skips the problem: ``max_orderings``)."""
    from dataclasses import replace

    from mappers.loop_order.base import problem_counts, spatial_object
    from mappers.loop_order.lpf import multiset_count, shard_range

    if unit.spec.get("spatial") is not None:   # a spatial candidate
        problem = replace(problem, spatial=spatial_object(unit.spec["spatial"]))
    total = multiset_count(problem_counts(problem, lpf_limit))   # no evaluator built
    limit = params.get("max_orderings")
    if limit is not None and total > int(limit):
        return 0.0
    start, stop = shard_range(total, unit.shard, unit.shards)
    return float(stop - start)


def unit_work(mapper: str, params: Mapping[str, Any], unit, problem) -> dict[str, float] | None:
    """The work of one of ``mapper``'s work units (`mappers.base.WorkUnit`) on ``problem``: amount
    per key of `COSTS` (each key's seconds a + b x amount); None if this module has no cost model
    for the mapper."""
    p = params
    if mapper == "salsa":
        return _salsa_work(p, unit, problem)
    if mapper == "loma":
        return {"orderings": _orderings(problem, p, p.get("lpf_limit"), unit)}
    if mapper == "random":                      # samples, the patience's worth (it stops about there)
        return {"random": float(min(int(p.get("max_samples", 100_000)), int(p.get("patience", 500))))}
    if mapper == "primitive_sa":
        return {"primitive_sa": float(int(p.get("iterations", 2000)))}
    if mapper == "random5":
        return {"random5": float(int(p.get("valid", 5)))}
    if mapper == "hybrid":
        return {"hybrid": float(min(int(p.get("max_evaluations", 100_000)), int(p.get("patience", 500))))}
    if mapper == "cosa":                        # one MIP solve
        return {"cosa": 1.0}
    if mapper in ("flexer", "static"):          # the unit's tilings
        return {mapper: float(unit.spec.get("stop", 0) - unit.spec.get("start", 0))}
    if mapper == "deepopt":                     # hardware points x layers
        return {"deepopt": float(len(problem.points) * sum(len(n) for n in problem.networks))}
    return None


def unit_seconds(mapper: str, params: Mapping[str, Any], unit, problem) -> float | None:
    """Estimated seconds of one work unit on one core (None: no cost model for ``mapper``); a
    CoSA solve at most its ``time_limit_s``."""
    work = unit_work(mapper, params, unit, problem)
    if work is None or not all(k in COSTS for k in work):
        return None
    s = sum(COSTS[k][0] + COSTS[k][1] * w for k, w in work.items())
    if mapper == "cosa":
        s = min(s, float(params.get("time_limit_s", 60.0)) + COSTS["cosa"][0])
    return s


def units_seconds(units) -> tuple[float | None, str, str]:
    """(summed `unit_seconds` of ``units``, "", "") or (None, what has no estimate, why); ``units``
    are (`sweep.engine.problem.Problem`, its `WorkUnit` or None) pairs."""
    total = 0.0
    for prob, unit in units:
        try:
            s = unit_seconds(prob.mapper, prob.params, unit, prob.instance)
        except Exception:  # noqa: BLE001 - an estimate never fails validation; the run reports the error
            return None, f"mapper {prob.mapper}", "its work could not be counted"
        if s is None:
            return None, f"mapper {prob.mapper}", "no cost model"
        total += s
    return total, "", ""


def cpus(campaign: Any) -> int:
    """The CPUs a run of ``campaign`` gets on this machine: ``[run] num_cpus``, else all cores."""
    n = getattr(getattr(campaign, "run", None), "num_cpus", None)
    return int(n or os.cpu_count() or 1)


def _duration(s: float) -> str:
    if s < 60:
        return "under 1 min"
    if s < 5400:
        return f"about {max(1, round(s / 60))} min"
    return f"about {s / 3600:.1f} h"


@dataclass
class Estimate:
    """The run time of a campaign's tasks, summed as they are counted (`add`).

    Attributes:
        tasks: tasks counted.
        seconds: their estimated seconds on one core, `TASK_S` each included.
        longest_s: the longest task's.
        parallel: the most tasks that run at once whatever the CPUs (an Optuna study's batch);
            None = one per CPU.
        missing: what has no estimate (a mapper, a kind), with why.
        note: a clause the estimate line adds (what was counted, e.g. the distinct mapper views).
    """

    tasks: int = 0
    seconds: float = 0.0
    longest_s: float = 0.0
    parallel: int | None = None
    missing: dict[str, str] = field(default_factory=dict)
    note: str = ""

    def add(self, seconds: float | None, what: str = "", why: str = "no cost model") -> None:
        """Count one task of ``seconds`` on one core (its units' sum; None: ``what`` has no
        estimate, because ``why``)."""
        self.tasks += 1
        if seconds is None:
            self.missing.setdefault(what, why)
            return
        s = seconds + TASK_S
        self.seconds += s
        self.longest_s = max(self.longest_s, s)

    def wall_s(self, n_cpus: int) -> float:
        """Estimated wall time on ``n_cpus`` CPUs: start, then the tasks spread over what runs at once."""
        at_once = max(1, min(n_cpus, self.parallel or n_cpus, self.tasks or 1))
        return START_S + max(self.seconds / at_once, self.longest_s)

    def line(self, n_cpus: int) -> str:
        """``run time: about N min on K CPU(s) (estimate: ...)``, or what has no estimate and why."""
        if self.missing:
            by_why: dict[str, list[str]] = {}
            for what, why in self.missing.items():
                by_why.setdefault(why, []).append(what)
            return "run time: " + "; ".join(f"no estimate for {', '.join(w)} ({why})" for why, w in by_why.items())
        return (f"run time: {_duration(self.wall_s(n_cpus))} on {n_cpus} CPU(s) (estimate: {self.tasks:,} task(s), "
                f"{self.seconds / 60:,.1f} CPU-min" + (f"; {self.note}" if self.note else "")
                + "; unit costs measured by scripts/bench_estimate.py)")
