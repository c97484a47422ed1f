"""Loop-nest and npu campaigns: (unique layer x architecture x mapper x objective x seed)
problems, their work units batched into tasks, and how a task runs.

A *problem* is one layer on one accelerator with one mapper, its parameters, an objective and a
seed; identical layers (same shape) of any network share one problem. The mapper splits a problem
into work units (SA chains, exhaustive shards); up to ``run.units_per_task`` units form one task.
Each unit becomes one ``rows`` row (its best value, cost, evaluations, wall time); the best of a
problem is the minimum over its unit rows (`SearchResult` reduction, ties to the lowest unit), so
a run can be resumed at any point with nothing to re-reduce. The ``problems`` table maps every
(network, layer) to its problem_id; it is written with the task holding the problem's unit 0. A
transformer step that does not fit an accelerator's DRAM (`step_fits`: its usable share,
``[architectures] gpu_memory_utilization``, `memory_share`) has no problems on it; problem ids do
not hold that share (no mapping depends on it), only which problems there are.

Columns of ``rows``: those every unit has (`_HEAD`, `_TAIL`: ids, cost, the mapping, the rest of
the result's ``extra`` as JSON) and, between them, the `mappers.base.ExtraColumn` figures that the
registered loop-nest and npu mappers declare (`mappers.declared_columns`), null where a unit's
mapper does not have them: every fragment has the same schema, and this module names no
mapper's field.

Determinism: every column except the measured ``wall_s`` and ``solver_s`` is a function of the
campaign.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from typing import Any, Iterator, NamedTuple

import numpy as np
import pyarrow as pa

from mappers import declared_columns, get_mapper
from mappers.base import WorkUnit
from sweep.common.ids import canonical_json, stable_hash
from sweep.engine.problem import Problem, problem_id

__all__ = ["LayerRules", "LayerTask", "LayerUnit", "expand_layers", "count_layer_tasks", "execute_layers", "problem_id",
           "step_fits", "unfit_steps", "memory_share"]


class LayerRules(NamedTuple):
    """How a kind's problems are built (`sweep.kinds.layers.LayerKind.rules`).

    Attributes:
        model: the cost model's version in every problem id
            (`costmodel.loopnest.reference.MODEL_VERSION`), or None (no loop-nest model).
        objective_param: the mapper parameter the campaign objective is also passed as (Flexer's
            and static's ``metric``), or None.
        hints: whether a mapper may depend on the accelerator's spatial hint (then the hint is in
            the problem id where it does, `_searched_hint`).
    """

    model: int | None
    objective_param: str | None
    hints: bool


@dataclass(frozen=True)
class LayerUnit:
    """One work unit of one problem (`sweep.engine.problem.Problem`), with what the rows need to
    say where it came from."""

    problem_id: str
    unit_index: int
    problem: Problem
    arch_name: str
    unit: WorkUnit
    aliases: tuple[tuple[str, int, str, int], ...] = ()   # (network, layer index, layer, repeat), on unit 0

    @property
    def mapper(self) -> str:
        return self.problem.mapper

    @property
    def params(self) -> dict[str, Any]:
        return self.problem.params

    @property
    def seed(self) -> int | None:
        return self.problem.seed


@dataclass(frozen=True)
class LayerTask:
    """A batch of work units; ``task_id`` = sha256 of their problem_ids and unit indices."""

    task_id: str
    units: tuple[LayerUnit, ...]
    mapper: str = "layers"

    def run(self) -> dict[str, pa.Table]:
        """`execute_layers` (self)."""
        return execute_layers(self)


def _seeds_for(mapper: str, seeds) -> list:
    """Seeded mappers run once per campaign seed; deterministic ones once (seed None)."""
    return list(seeds) if get_mapper(mapper).seeded else [None]


def _problems(campaign, rules: LayerRules) -> tuple[list[tuple[str, str, Problem]], dict[str, list]]:
    """The unique problems in order, as (problem_id, arch name, `Problem`), and the (network,
    layer index, layer name, repeat) aliases of each problem_id. The accelerator's hint is in a
    problem's id where its mapper declares that it depends on it (`Problem.uses_hint`)."""
    problems: list[tuple[str, str, Problem]] = []
    aliases: dict[str, list] = {}
    model, spatial = rules.model, campaign.architectures.spatial
    share = memory_share(campaign)
    for net in campaign.networks:
        fitting = [(a, acc) for a, acc in campaign.architectures.archs if step_fits(net, acc, share)]
        for li, (layer, rep) in enumerate(net.unique()):
            if model is None:   # only the loop-nest model reads the unpadded input size: not in the id
                layer = layer.with_(in_rows=None, in_cols=None)
            for arch_name, acc in fitting:
                arch_desc = repr(acc)
                for spec in campaign.mappers:
                    for objective in campaign.objectives:
                        version = get_mapper(spec.name).id_version(objective)
                        for seed in _seeds_for(spec.name, campaign.seeds):
                            prob = Problem.layer(spec.name, layer, acc, objective=objective, params=spec.params,
                                                 seed=seed, spatial=spatial, objective_param=rules.objective_param)
                            hint = acc.spatial_hint if rules.hints and prob.uses_hint() else None
                            pid = problem_id(layer, arch_desc, spatial, spec.name, version, prob.params,
                                             objective, seed, model, hint)
                            alias = (net.name, li, layer.name, rep)
                            if pid in aliases:  # identical layer elsewhere: add an alias only
                                aliases[pid].append(alias)
                                continue
                            aliases[pid] = [alias]
                            problems.append((pid, arch_name, prob))
    return problems, aliases


def memory_share(campaign) -> float:
    """The share of each DRAM a campaign's transformer steps may fill: ``[architectures]
    gpu_memory_utilization`` (`sweep.config.archspace.parse_memory_share`), else vLLM's 0.9
    (`costmodel.capacity.GPU_MEMORY_UTILIZATION`)."""
    from costmodel.capacity import GPU_MEMORY_UTILIZATION
    return getattr(campaign.architectures, "gpu_memory_utilization", GPU_MEMORY_UTILIZATION)


def step_fits(network, acc, gpu_memory_utilization: float | None = None) -> bool:
    """False only for a transformer step whose DRAM footprint exceeds ``gpu_memory_utilization``
    (None: vLLM's 0.9) of a loop-nest accelerator's declared capacity
    (`costmodel.capacity.step_footprint`): its layers are not mapped on that accelerator (`sweep
    validate` and the report say so); True for everything else."""
    if not network.workload or getattr(acc, "dram", None) is None:
        return True
    from costmodel.capacity import GPU_MEMORY_UTILIZATION, step_footprint
    fp = step_footprint(network, acc, GPU_MEMORY_UTILIZATION if gpu_memory_utilization is None
                        else gpu_memory_utilization)
    return fp is None or fp.fits


def unfit_steps(campaign) -> list[tuple[str, str, str]]:
    """(step name, arch name, the footprint in words) of each transformer step that does not fit
    the usable share (`memory_share`) of an accelerator of a layer campaign, in campaign order."""
    from costmodel.capacity import step_footprint
    share = memory_share(campaign)
    out = []
    for net in campaign.networks:
        for arch_name, acc in campaign.architectures.archs:
            if not step_fits(net, acc, share):
                out.append((net.name, arch_name, step_footprint(net, acc, share).reason()))
    return out


def count_layer_tasks(campaign, rules: LayerRules) -> int:
    """How many tasks `expand_layers` yields: the problems' work units (`Problem.unit_count`,
    which lists no unit where counting is cheaper), batched."""
    problems, _ = _problems(campaign, rules)
    units = sum(prob.unit_count() for _, _, prob in problems)
    return -(-units // campaign.run.units_per_task)


def expand_layers(campaign, rules: LayerRules) -> Iterator[LayerTask]:
    """The campaign's tasks in a deterministic order (problem order, then unit order), streamed.

    Two passes: the first finds the unique problems and the (network, layer) aliases of each (one
    small `Problem` per unique problem: references to shared Layer/Accelerator objects, a 24-hex
    id); the second asks each problem for its work units only when the tasks reach it, so the
    driver never holds every unit or task at once (see scripts/bench_scale.py).
    """
    problems, aliases = _problems(campaign, rules)
    step = campaign.run.units_per_task
    batch: list[LayerUnit] = []
    for pid, arch_name, prob in problems:
        for ui, wu in enumerate(prob.units()):
            batch.append(LayerUnit(pid, ui, prob, arch_name, wu, tuple(aliases[pid]) if ui == 0 else ()))
            if len(batch) == step:
                yield _layer_task(batch)
                batch = []
    if batch:
        yield _layer_task(batch)


def _layer_task(units: list[LayerUnit]) -> LayerTask:
    batch = tuple(units)
    tid = stable_hash([(u.problem_id, u.unit_index, u.aliases) for u in batch], 24)
    return LayerTask(tid, batch)


#: The row columns every loop-nest / npu unit has, around the mappers' declared columns
#: (`mappers.declared_columns`), which sit between ``_HEAD`` and ``_TAIL``.
_HEAD = ("problem_id", "unit_index", "mapper", "params", "arch", "layer_shape", "objective",
         "seed", "unit_kind", "unit_seed", "shard", "shards", "engine", "value", "energy_pj",
         "latency_cycles", "edp", "evaluations", "wall_s", "loops", "mapping")
_TAIL = ("extra", "error", "history")


def _flat_history(history) -> list[float] | None:
    """A unit's ``history`` as the row's flat list of floats: one chain's (I + 1,) as is; several
    chains in one unit ((chains, I + 1) or a list of per-chain arrays) chain after chain."""
    if history is None:
        return None
    parts = history if isinstance(history, list) else [history]
    return [float(x) for h in parts for x in np.ravel(np.asarray(h, dtype=float))]


#: Keys of `SearchResult.extra` stored in their own columns or too large for every row.
_BULKY = frozenset({"mapping", "trace", "initial_mapping", "valid_values", "spatial", "spatial_candidates"})


def _unit_row(u: LayerUnit, r, err: str, wall_s: float, columns) -> dict[str, Any]:
    """The ``rows`` row of one unit: its result ``r`` (None if it failed with ``err``)."""
    layer = u.problem.instance.layer
    vals = {
        "problem_id": u.problem_id, "unit_index": u.unit_index, "mapper": u.mapper,
        "params": canonical_json(u.params), "arch": u.arch_name,
        "layer_shape": canonical_json(layer.hash_fields()),
        "objective": u.problem.objective, "seed": u.seed, "unit_kind": u.unit.kind,
        "unit_seed": u.unit.seed, "shard": u.unit.shard, "shards": u.unit.shards,
        "engine": None, "value": None, "energy_pj": None, "latency_cycles": None, "edp": None,
        "evaluations": None, "wall_s": wall_s, "loops": None, "mapping": None, "error": err,
        "extra": None, "history": None}
    for c in columns:
        vals[c.name] = None
    if r is None:
        return vals
    vals.update(
        engine=r.engine, value=r.value, energy_pj=r.energy_pj, latency_cycles=r.latency_cycles, edp=r.edp,
        evaluations=r.evaluations, wall_s=r.wall_s,
        loops=canonical_json(r.loops) if r.loops is not None else None,
        mapping=canonical_json(r.extra["mapping"]) if isinstance(r.extra.get("mapping"), dict) else None,
        # the rest of the mapper's extra (e.g. flexer's bytes_by_type, reloads, tiling), as JSON
        # (timings, keys ending in "_s", are measurements and stay out of it: rows are deterministic)
        extra=canonical_json({k: v for k, v in r.extra.items() if k not in _BULKY and not k.endswith("_s")}),
        history=_flat_history(r.history))
    for c in columns:
        vals[c.name] = c.value(r.extra)
    return vals


def execute_layers(task: LayerTask) -> dict[str, pa.Table]:
    """Run every unit of ``task`` in-process. A failing unit becomes a row with status "error"
    (``error``: the exception and its traceback); a unit that found nothing valid (value +inf) a
    row with status "infeasible" (``error``: the reason, `mappers.base.result_status`).

    Returns:
        ``rows`` (one row per unit: the columns of every unit, then the mappers' declared
        columns) and, if the task holds a problem's unit 0, ``problems`` (its (network, layer)
        aliases).
    """
    columns = declared_columns(("loopnest", "npu"))
    keys = (*_HEAD, *(c.name for c in columns), *_TAIL)
    rows: dict[str, list] = {k: [] for k in ("task_id", "status", *keys)}
    aliases: dict[str, list] = {k: [] for k in ("task_id", "problem_id", "network", "layer_index",
                                                "layer", "repeat", "arch", "mapper", "objective", "seed")}
    for u in task.units:
        t0 = time.perf_counter()
        try:
            r = u.problem.run(u.unit)
            status, err = u.problem.status(r)
        except Exception as e:  # noqa: BLE001 - a failing unit is a row, the campaign goes on
            r, status = None, "error"
            err = f"{type(e).__name__}: {e}\n{traceback.format_exc()[-2000:]}"
        vals = _unit_row(u, r, err, time.perf_counter() - t0, columns)
        rows["task_id"].append(task.task_id)
        rows["status"].append(status)
        for k in keys:
            rows[k].append(vals[k])
        for net, li, lname, rep in u.aliases:
            for k, v in (("task_id", task.task_id), ("problem_id", u.problem_id), ("network", net),
                         ("layer_index", li), ("layer", lname), ("repeat", rep), ("arch", u.arch_name),
                         ("mapper", u.mapper), ("objective", u.problem.objective), ("seed", u.seed)):
                aliases[k].append(v)
    out = {"rows": pa.table(rows)}
    if aliases["task_id"]:
        out["problems"] = pa.table(aliases)
    return out
