"""A campaign's tasks, whatever its kind: expanded and counted through the kind (``campaign.plan``,
`sweep.kinds`), run in-process one at a time (`execute`), and the ``rows`` row of a task that raised
(`error_table`). The task types, each with a deterministic ``task_id`` (same campaign -> same ids)
and a ``run()`` returning its tables: `sweep.engine.systolic_tasks.SystolicTask` (a chunk of
hardware points), `sweep.engine.layer_tasks.LayerTask` (loop-nest and npu problems' units),
`sweep.engine.design_tasks.DesignTask` (designs of an architecture search).
"""

from __future__ import annotations

import traceback
from typing import Iterator, Union

import pyarrow as pa

from sweep.common.ids import canonical_json

from sweep.config.campaign import Campaign
from sweep.engine.design_tasks import DesignTask
from sweep.engine.layer_tasks import LayerTask
from sweep.engine.systolic_tasks import SystolicTask

__all__ = ["AnyTask", "expand", "count_tasks", "execute", "error_table", "TABLES", "CRASHED"]

#: Tables a task writes; ``rows`` is written last and marks a task as stored.
TABLES = ("layers", "problems", "archs", "totals", "rows")
#: A task of any kind.
AnyTask = Union[SystolicTask, LayerTask, DesignTask]


def expand(campaign: Campaign) -> Iterator[AnyTask]:
    """The campaign's tasks in a deterministic order, as its kind expands them
    (``campaign.plan``, `sweep.kinds`): systolic campaigns by mapper, then point chunk
    (`sweep.engine.systolic_tasks.systolic_tasks`); loop-nest and npu campaigns by `sweep.engine.layer_tasks.expand_layers`;
    architecture searches by design (`sweep.engine.design_tasks.design_tasks`; an Optuna search
    asks its designs as it goes, `sweep.search`)."""
    return campaign.plan.expand(campaign)


def count_tasks(campaign: Campaign) -> int:
    """How many tasks `expand` yields, without building them (the kind's count)."""
    return campaign.plan.count(campaign)


def execute(task: AnyTask) -> dict[str, pa.Table]:
    """Run one task in-process (its ``run``); a task that raises becomes one ``rows`` row with status
    "error".

    Returns:
        table name -> Arrow table, every row carrying ``task_id`` and ``status``.
    """
    try:
        return task.run()
    except Exception as e:  # noqa: BLE001 - a failing task becomes a row, the campaign goes on
        return {"rows": error_table(task, f"{type(e).__name__}: {e}", traceback.format_exc())}


#: How the ``error`` of a task the executor gave up on begins (`error_table` with kind "crash").
CRASHED = "crashed: "


def error_table(task: AnyTask, error: str, trace: str = "", kind: str = "raised") -> pa.Table:
    """The ``rows`` of a ``task`` that failed as a whole, status "error": one row per work unit of a
    loop-nest or npu task (its ``problem_id``, ``unit_index``, ``mapper``, ``arch``, ``layer_shape``: which
    problem failed), one row otherwise. No column beyond those its kind's rows have, but ``traceback`` when
    there is one, so a plain reader's schema is the same once the task is run again.

    Args:
        error: what failed (``Type: message``).
        trace: its traceback (the last 4,000 characters are kept).
        kind: "crash" (the executor gave up on the task: a worker process killed, out of memory,
            a lost node; ``error`` then begins with `CRASHED` and ``--resume`` runs it again) or
            "raised" (its code raised).
    """
    head = CRASHED if kind == "crash" else ""
    units = getattr(task, "units", None)
    if not units:
        cols = {"task_id": [task.task_id], "status": ["error"], "mapper": [task.mapper], "error": [head + error]}
        return pa.table(dict(cols, traceback=[trace[-4000:]]) if trace else cols)
    n = len(units)
    cols = {"task_id": [task.task_id] * n, "status": ["error"] * n,
            "problem_id": [u.problem_id for u in units], "unit_index": [u.unit_index for u in units],
            "mapper": [u.mapper for u in units], "arch": [u.arch_name for u in units],
            "layer_shape": [canonical_json(u.problem.instance.layer.hash_fields()) for u in units],
            "error": [head + error] * n}
    return pa.table(dict(cols, traceback=[trace[-4000:]] * n) if trace else cols)
