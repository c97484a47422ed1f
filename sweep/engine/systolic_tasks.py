"""The tasks of a systolic (DeepOpt) campaign: a `SystolicTask` is one work unit of the mapper
(`mappers.base.Mapper.units`): a chunk of hardware points for every network of the campaign; the
systolic model is vectorised over points and layers, so a chunk of a few thousand points is a second
or so of work (Ray's advice: batch tiny work). ``task_id`` is a sha256 of everything that determines
the task's rows: mapper name, version and parameters, the networks in full, the points (digest) and
their offset, objectives and model parameters. Same campaign -> same ids.

The other kinds' tasks: `sweep.engine.layer_tasks` (loop-nest and npu), `sweep.engine.design_tasks`
(architecture search); what every task shares (expand, count, run, the error row): `sweep.engine.tasks`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterator

import numpy as np
import pyarrow as pa

from costmodel.systolic import SystolicParams
from costmodel.systolic.points import SystolicPoints
from mappers import get_mapper
from mappers.base import WorkUnit
from mappers.systolic.deepopt import AllocationProblem
from sweep.common.ids import stable_hash
from sweep.config.campaign import Campaign, network_json
from sweep.engine.problem import Problem

__all__ = ["SystolicTask", "systolic_tasks"]


@dataclass(frozen=True)
class SystolicTask:
    """One work unit of a systolic (DeepOpt) campaign: a `Problem` of the mapper on one chunk of
    hardware points for every network (its ``instance`` holds only that chunk; ``unit`` names it)."""

    task_id: str
    problem: Problem
    unit: WorkUnit

    @property
    def mapper(self) -> str:
        return self.problem.mapper

    @property
    def size(self) -> int:
        """Work estimate: points x layers."""
        chunk = self.problem.instance
        return len(chunk.points) * sum(len(n) for n in chunk.networks)

    def run(self) -> dict[str, pa.Table]:
        """The unit's tables (`SearchResult.tables`), every row carrying ``task_id`` and ``status``."""
        r = self.problem.run(self.unit)
        out = {name: _to_table(cols, self.task_id) for name, cols in r.tables.items()}
        out.setdefault("rows", _to_table({}, self.task_id))
        return out


def _task_id(mapper: str, params: dict, networks, points: SystolicPoints, offset: int, objectives, systolic) -> str:
    m = get_mapper(mapper)
    doc = {"mapper": mapper, "version": m.version, "params": params,
           "networks": [network_json(n, inputs=False) for n in networks], "points": points.digest(),
           "offset": offset, "objectives": list(objectives), "systolic": systolic}
    return stable_hash(doc, 24)


def systolic_tasks(campaign: Campaign) -> Iterator[SystolicTask]:
    """The tasks of a systolic campaign: one per (mapper, work unit of the whole grid), units in
    the mapper's order."""
    pts = campaign.architectures
    sp = replace(SystolicParams(), **campaign.systolic)
    whole = AllocationProblem(tuple(campaign.networks), pts, tuple(campaign.objectives), sp,
                              chunk_points=campaign.run.chunk_points)
    for spec in campaign.mappers:
        grid = Problem.of(spec.name, whole, spec.params)
        for unit in grid.units():
            start, stop = unit.spec["start"], unit.spec["stop"]
            chunk = pts.take(slice(start, stop))
            tid = _task_id(spec.name, spec.params, campaign.networks, chunk, start,
                           campaign.objectives, campaign.systolic)
            yield SystolicTask(tid, Problem.of(spec.name, replace(whole, points=chunk, point_offset=start),
                                               spec.params), unit)


def _to_table(cols: dict[str, Any], task_id: str) -> pa.Table:
    n = len(next(iter(cols.values()))) if cols else 0
    arrays = {"task_id": pa.array([task_id] * n, pa.string()),
              "status": pa.array(["ok"] * n, pa.string())}
    for k, v in cols.items():
        a = np.asarray(v)
        arrays[k] = pa.array(a.tolist() if a.dtype == object else a)
    return pa.table(arrays)
