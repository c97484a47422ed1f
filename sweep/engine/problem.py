"""The spine: one problem, from its parts to its answer, for every path that maps.

A `Problem` is a mapper, the mapper's own problem instance (`mappers.base.LayerProblem` for a
loop-nest layer, `mappers.npu.tiled.NPUProblem`, `mappers.systolic.deepopt.AllocationProblem`),
its parameters and the seed (a field: the parameters the mapper runs with get it in one place,
`Mapper.with_seed`). Its identity is `problem_id` (what determines the result), its work is its
`units`, each unit runs anywhere (`Problem.run`: in-process, or in a Ray worker after pickling the
problem and the unit), and `Problem.solve` runs them all in-process and reduces them to one
`Solution`, the one result type every path reads its figures from.

Every path goes through here: ``sweep map`` (`sweep.commands.map_eval`), a loop-nest / npu
campaign's tasks (`sweep.engine.layer_tasks`: one row per unit, reduced when read), a systolic
campaign's chunks (`sweep.engine.systolic_tasks`), an architecture search's designs
(`sweep.engine.design_tasks`) and its run-time estimate (`sweep.kinds.archsearch`), and the
tuning of an annealing schedule (`sweep.tune.objective`). No other module of ``sweep/`` asks a
mapper for its problem, its units, to run a unit or to reduce (``tests/test_layout.py``), so a
change to how a problem becomes its answer is made here once.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np

from mappers import get_mapper
from mappers.base import SearchResult, WorkUnit, result_status
from sweep.common.ids import stable_hash

__all__ = ["Problem", "Solution", "problem_id"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One mapper on one problem instance with its parameters and seed.

    Attributes:
        mapper: a registered mapper's name (`mappers.get_mapper`).
        instance: the mapper's problem (`Mapper.make_problem`'s type, or the grid of a systolic
            campaign: `mappers.systolic.deepopt.AllocationProblem`).
        params: the parameters the mapper runs with: the given ones with the seed entered where the
            mapper is seeded (`Mapper.with_seed`); resolved (defaults filled) when the caller
            resolved them.
        seed: the problem's seed (a campaign seed; None for a deterministic mapper in a campaign).
    """

    mapper: str
    instance: Any
    params: dict[str, Any]
    seed: int | None = None

    @classmethod
    def of(cls, mapper: str, instance: Any, params: Mapping[str, Any] | None = None, seed: int | None = None,
           *, keep_seed: bool = False) -> "Problem":
        """The problem of ``mapper`` on ``instance``; ``seed`` enters ``params`` if the mapper is
        seeded (``keep_seed``: a seed already in ``params`` wins, as a user's ``--param seed=``).

        Raises:
            KeyError: unknown mapper.
        """
        m = get_mapper(mapper)
        return cls(mapper, instance, m.with_seed(params, seed, keep=keep_seed), seed)

    @classmethod
    def layer(cls, mapper: str, layer: Any, arch: Any, *, objective: str, params: Mapping[str, Any] | None = None,
              seed: int | None = None, spatial: Any = None, objective_param: str | None = None,
              keep_seed: bool = False) -> "Problem":
        """The problem of mapping one ``layer`` (`costmodel.workload.Layer`) on ``arch`` (an
        accelerator of the mapper's kind) for ``objective``; ``spatial`` a fixed spatial unrolling
        (None: the accelerator's), ``objective_param`` the mapper parameter the objective is also
        passed as (Flexer's ``metric``), ``seed`` / ``keep_seed`` as `of`.

        Raises:
            KeyError: unknown mapper. TypeError: the mapper does not map one layer, or ``arch`` is
                not of its kind (`Mapper.make_problem`).
        """
        m = get_mapper(mapper)
        params = m.with_seed(params, seed, keep=keep_seed)
        if objective_param is not None:
            params[objective_param] = objective
        return cls(mapper, m.make_problem(layer, arch, spatial, objective), params, seed)

    @property
    def objective(self) -> str | None:
        """The instance's objective (None for an instance without one, a systolic grid)."""
        return getattr(self.instance, "objective", None)

    def with_params(self, params: Mapping[str, Any]) -> "Problem":
        """The same problem with ``params`` (e.g. resolved by `mappers.base.check_params`)."""
        return replace(self, params=dict(params))

    def uses_hint(self) -> bool:
        """True if the accelerator's ``[spatial_hint]`` changes the answer (`Mapper.uses_hint`)."""
        return get_mapper(self.mapper).uses_hint(self.instance, self.params)

    def units(self) -> list[WorkUnit]:
        """The mapper's independent work units, in its deterministic order (`Mapper.units`).

        Raises:
            ValueError: the mapper cannot split this problem (e.g. a spatial search without a hint).
        """
        return get_mapper(self.mapper).units(self.instance, self.params)

    def unit_count(self) -> int:
        """``len(units())``, without building them where the mapper counts cheaper."""
        return get_mapper(self.mapper).unit_count(self.instance, self.params)

    def run(self, unit: WorkUnit) -> SearchResult:
        """One work unit in this process (`Mapper.run`); deterministic."""
        return get_mapper(self.mapper).run(self.instance, unit, self.params)

    def status(self, result: SearchResult) -> tuple[str, str]:
        """(status, reason) of ``result``: "ok", "skipped" or "infeasible" with a reason a person
        can act on (`mappers.base.result_status`)."""
        return result_status(get_mapper(self.mapper), self.instance, result, self.params)

    def solve(self, units: Sequence[WorkUnit] | None = None, skip_by_floor: bool = False) -> "Solution":
        """Every work unit in this process (``units``: `units()` already listed), reduced to the
        best (`Mapper.reduce`: ties to the first unit); wall time in seconds from the first unit
        listed to the status known. ``skip_by_floor``: in order, a unit whose floor
        (`Mapper.unit_floor`) exceeds the best value found so far is not run: the same best (its
        value cannot tie), fewer evaluations (only the units run count)."""
        t0 = time.perf_counter()
        m = get_mapper(self.mapper)
        listed = list(self.units() if units is None else units)
        if skip_by_floor:
            run, best = [], math.inf
            for u in listed:
                floor = m.unit_floor(self.instance, u, self.params)
                if floor is not None and floor > best:
                    continue
                run.append(m.run(self.instance, u, self.params))
                best = min(best, run[-1].value)
            results = tuple(run)
        else:
            results = tuple(m.run(self.instance, u, self.params) for u in listed)
        best = m.reduce(results)
        status, reason = self.status(best)
        return Solution(self, best, results, status, reason, time.perf_counter() - t0)


@dataclass(frozen=True, slots=True)
class Solution:
    """A problem's answer: the best of its units and what a row, ``--json`` or the API reads.

    Attributes:
        problem: the `Problem` solved.
        best: the reduced `SearchResult` (value in the objective's unit; energy pJ, latency
            cycles, EDP pJ x cycles; ``extra`` the mapper's own figures).
        results: every unit's result, in unit order.
        status: "ok", "skipped" or "infeasible" (`Problem.status`); ``reason`` says why if not ok.
        wall_s: seconds spent (measured: never part of an id).
    """

    problem: Problem
    best: SearchResult
    results: tuple[SearchResult, ...]
    status: str
    reason: str
    wall_s: float

    def histories(self) -> list[np.ndarray]:
        """Every annealing chain's history (objective after each proposal, index 0 the initial
        state), chain after chain over the units; [] for mappers without one."""
        out: list[np.ndarray] = []
        for r in self.results:
            h = r.history
            if h is None:
                continue
            if isinstance(h, list):
                out += [np.asarray(x) for x in h]
                continue
            h = np.asarray(h)
            out += [h] if h.ndim == 1 else list(h)
        return out


def problem_id(layer: Any, arch_desc: str, spatial: Any, mapper: str, version: str, params: Mapping[str, Any],
               objective: str, seed: int | None, model: int | None = None, hint: Any = None) -> str:
    """sha256 (24 hex digits) of everything that determines a layer problem's result: the layer's
    shape (`Layer.hash_fields`), the accelerator's repr ``arch_desc``, the fixed ``spatial``
    unrolling's repr, mapper name, ``version`` and ``params`` (seed included), ``objective``,
    ``seed``; ``model`` the cost model's version (`costmodel.loopnest.reference.MODEL_VERSION`
    for loop-nest problems), ``hint`` the accelerator's spatial hint when the mapper depends on it
    (`Problem.uses_hint`: it is not in the accelerator's repr)."""
    doc = {"layer": layer.hash_fields(), "arch": arch_desc,
           "spatial": repr(spatial), "mapper": mapper, "version": version, "params": dict(params),
           "objective": objective, "seed": seed}
    if model is not None:
        doc["model"] = model
    if hint is not None:
        doc["spatial_hint"] = hint.to_dict()
    return stable_hash(doc, 24)
