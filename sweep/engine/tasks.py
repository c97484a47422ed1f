"""A campaign expanded into tasks, each with a deterministic ``task_id``, and how one task runs.

A task is one mapper on a chunk of hardware points for every network of the campaign: the
systolic model is vectorised over points and layers, so a chunk of a few thousand points is a
second or so of work (Ray's advice: batch tiny work). ``task_id`` is a sha256 of everything that
determines the task's rows: mapper name, version and parameters, the networks in full, the
points (digest) and their offset, objectives and model parameters. Same campaign -> same ids.
"""

from __future__ import annotations

import hashlib
import json
import traceback
from dataclasses import dataclass, replace
from typing import Any, Iterator

import numpy as np
import pyarrow as pa

from costmodel.systolic import SystolicParams
from costmodel.workload import Network
from mappers import get_mapper
from costmodel.systolic.points import SystolicPoints
from sweep.campaigns.campaign import Campaign, _network_json

__all__ = ["Task", "expand", "count_tasks", "execute", "TABLES"]

#: Tables a task writes; ``rows`` is written last and marks a task as stored.
TABLES = ("layers", "problems", "rows")


@dataclass(frozen=True)
class Task:
    """One unit of work: ``mapper`` with ``params`` on ``points`` for each of ``networks``."""

    task_id: str
    mapper: str
    params: dict[str, Any]
    networks: tuple[Network, ...]
    points: SystolicPoints
    point_offset: int
    objectives: tuple[str, ...]
    systolic: dict[str, Any]

    @property
    def size(self) -> int:
        """Work estimate: points x layers."""
        return len(self.points) * sum(len(n) for n in self.networks)


def _task_id(mapper: str, params: dict, networks, points: SystolicPoints, offset: int, objectives, systolic) -> str:
    m = get_mapper(mapper)
    doc = {"mapper": mapper, "version": m.version, "params": params,
           "networks": [_network_json(n) for n in networks], "points": points.digest(),
           "offset": offset, "objectives": list(objectives), "systolic": systolic}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:24]


def expand(campaign: Campaign) -> Iterator[Task]:
    """The campaign's tasks in a deterministic order (mapper, then point chunk); loop-nest
    campaigns expand through `sweep.engine.layer_tasks.expand_layers`."""
    if campaign.kind in ("loopnest", "npu"):
        from sweep.engine.layer_tasks import expand_layers
        yield from expand_layers(campaign)
        return
    pts = campaign.architectures
    n = len(pts)
    step = campaign.run.chunk_points
    for spec in campaign.mappers:
        for start in range(0, n, step):
            chunk = pts.take(slice(start, min(n, start + step)))
            tid = _task_id(spec.name, spec.params, campaign.networks, chunk, start,
                           campaign.objectives, campaign.systolic)
            yield Task(tid, spec.name, dict(spec.params), campaign.networks, chunk, start,
                       campaign.objectives, dict(campaign.systolic))


def count_tasks(campaign: Campaign) -> int:
    """How many tasks `expand` yields, without building them: arithmetic for systolic campaigns,
    the unique problems' work units otherwise (`sweep.engine.layer_tasks.count_layer_tasks`)."""
    if campaign.kind == "systolic":
        n, step = len(campaign.architectures), campaign.run.chunk_points
        return len(campaign.mappers) * -(-n // step)
    from sweep.engine.layer_tasks import count_layer_tasks
    return count_layer_tasks(campaign)


def _to_table(cols: dict[str, Any], task_id: str) -> pa.Table:
    n = len(next(iter(cols.values()))) if cols else 0
    arrays = {"task_id": pa.array([task_id] * n, pa.string()),
              "status": pa.array(["ok"] * n, pa.string())}
    for k, v in cols.items():
        a = np.asarray(v)
        arrays[k] = pa.array(a.tolist() if a.dtype == object else a)
    return pa.table(arrays)


def execute(task: Task) -> dict[str, pa.Table]:
    """Run one task in-process; a failure becomes one ``rows`` row with status "error".

    Returns:
        table name -> Arrow table, every row carrying ``task_id`` and ``status``.
    """
    from mappers.systolic.deepopt import AllocationProblem
    from sweep.engine.layer_tasks import LayerTask, execute_layers

    if isinstance(task, LayerTask):
        return execute_layers(task)
    try:
        mapper = get_mapper(task.mapper)
        sp = replace(SystolicParams(), **task.systolic)
        parts: dict[str, list[pa.Table]] = {}
        for net in task.networks:
            idx = np.arange(task.point_offset, task.point_offset + len(task.points), dtype=np.int64)
            prob = AllocationProblem(network=net, points=task.points, point_index=idx,
                                     pms=task.objectives, systolic=sp)
            for name, cols in mapper.run(prob, task.params).items():
                parts.setdefault(name, []).append(_to_table(cols, task.task_id))
        out = {name: pa.concat_tables(ts) for name, ts in parts.items()}
        out.setdefault("rows", _to_table({}, task.task_id))
        return out
    except Exception as e:  # noqa: BLE001 - a failing task becomes a row, the campaign goes on
        return {"rows": error_table(task, f"{type(e).__name__}: {e}", traceback.format_exc())}


def error_table(task: Task, error: str, trace: str = "") -> pa.Table:
    """The single ``rows`` row recording that ``task`` failed."""
    return pa.table({"task_id": [task.task_id], "status": ["error"], "mapper": [task.mapper],
                     "error": [error], "traceback": [trace[-4000:]]})
