"""A grid architecture search that maps only what can change its answer (``[search] sampler =
"grid", prune = "bound"``): every design of the grid is either mapped or shown, by lower bounds
computed without mapping, to be beaten on every figure the answer is read from
(`sweep.search.bounds`: the rule and what it covers).

Rounds. Every design is bounded first (`design_bounds`, about 2 ms a design); the designs are then
taken in `priority_order` (the non-dominated layers of the bounds, a view's designs together) in
rounds of ``search.batch`` x ``run.designs_per_task`` designs. At the start of a round each of its
designs is tested against the figures of every design mapped in earlier rounds (`dominated`):
the beaten ones are *pruned* (stored at once: a ``totals`` and a ``rows`` row per step with status
``"pruned"`` and the bound that beat it), the others mapped as `DesignTask` s of
``run.designs_per_task`` designs (a task keeps a view's designs together: they share every layer
mapping, `sweep.engine.design_tasks.mapped_layer`), in parallel; the round ends when all are
stored. A design's rows are those of mapping it alone: the tasks are the grid's tasks.

Determinism: what a round maps or prunes depends only on the bounds and on the figures of earlier
rounds, never on the executor, the number of workers or the order tasks finish in; an interrupted
run resumed (``--resume``) replays the rounds from what is stored and maps or prunes exactly what
an undisturbed run does.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa

from sweep.common.ids import stable_hash
from sweep.engine.design_tasks import make_task, pruned_tables
from sweep.engine.executor import Executor
from sweep.engine.store import Store
from sweep.engine.tasks import error_table, execute
from sweep.search.bounds import design_bounds, dominated, priority_order

__all__ = ["run_pruned_grid", "mapped_figures", "round_size"]


def round_size(campaign) -> int:
    """Designs per round: ``search.batch`` tasks of ``run.designs_per_task`` designs."""
    return campaign.search.batch * campaign.run.designs_per_task


def mapped_figures(totals: list[dict], dims: tuple[str, ...], networks, workload) -> list[float]:
    """A mapped design's figures on ``dims`` from its totals rows (as `sweep.reports.llm.design_figures`
    reads them: a phase with a step not "ok" has no figure; NaN where none)."""
    by = {t["network"]: t for t in totals}
    out = []

    def fig(t):
        if t is None or t.get("status") != "ok":
            return math.nan
        v = t.get("ttft_s") if t.get("phase") == "prefill" else t.get("time_per_token_s")
        return float(v) if v is not None and math.isfinite(v) else math.nan

    for d in dims:
        kind, name = d.split(":", 1)
        if kind == "step":
            out.append(fig(by.get(name)))
        elif name == "mix":
            t = by.get(workload.name)
            v = t.get("request_latency_s") if t is not None and t.get("status") == "ok" else None
            out.append(float(v) if v is not None and math.isfinite(v) else math.nan)
        else:
            vals = [fig(by.get(n.name)) for n in networks if (n.workload or {}).get("phase") == name]
            ok = vals and all(math.isfinite(v) and v > 0 for v in vals)
            out.append(float(np.exp(np.mean(np.log(vals)))) if ok else math.nan)
    return out


def _stored(store: Store) -> dict[str, list[dict]]:
    """design_id -> its stored totals rows (mapped or pruned)."""
    if not store.fragments("totals"):
        return {}
    out: dict[str, list[dict]] = {}
    for rec in store.read("totals").to_dict("records"):
        out.setdefault(rec["design_id"], []).append(rec)
    return out


def _tasks(campaign, indices: list[int], views: np.ndarray) -> list[list[int]]:
    """``indices`` (in priority order) cut into tasks of about ``run.designs_per_task`` designs,
    never splitting a view's designs."""
    per = campaign.run.designs_per_task
    out: list[list[int]] = []
    cur: list[int] = []
    for k, i in enumerate(indices):
        cur.append(i)
        last_of_view = k + 1 == len(indices) or views[indices[k + 1]] != views[i]
        if len(cur) >= per and last_of_view:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def run_pruned_grid(campaign, summary, *, resume: bool, executor: str, address: str | None,
                    progress: Callable[[int, int], None] | None, flush: Callable[[list], None],
                    say: Callable[[str], None] | None = None) -> dict:
    """Run the pruned grid of ``campaign`` (module docstring) into its output directory (created by
    the caller, `sweep.engine.runner.run_campaign`). ``flush(batch)`` stores (task_id, tables) pairs;
    ``progress(done, total)`` counts designs mapped or pruned; ``say`` prints a line (the bounds'
    progress). ``summary.tasks_run`` / ``tasks_skipped`` count tasks mapped / already stored.

    Returns:
        {"designs", "mapped", "pruned", "rounds", "bounds_s", "driver_s"} of the whole grid: ``bounds_s``
        the bounds of every design, ``driver_s`` the rounds' own work (the pruning tests, the pruned
        designs' rows, the tasks' making, the mapped figures), seconds; the executor's timers
        (submit, wait, get, compute) go to ``summary.timings``.

    Raises:
        KeyboardInterrupt: Ctrl-C / SIGTERM; finished rounds' designs stay stored (``--resume``).
    """
    space, nets, mix = campaign.architectures, list(campaign.networks), campaign.workload
    t0 = time.perf_counter()
    b = design_bounds(campaign, (lambda d, n: say(f"bounds: {d:,} of {n:,} designs")) if say else None)
    bounds_s = time.perf_counter() - t0
    order = priority_order(b)
    stored = _stored(Store(Path(campaign.output)))
    ids = [space.design_id(space.point(int(i))) for i in range(len(space))]
    fig = np.full_like(b.lower, np.nan)
    is_mapped = np.zeros(len(space), dtype=bool)
    n_pruned = n_mapped = rounds = 0
    driver_s = 0.0
    size = round_size(campaign)
    t_ex = time.perf_counter()
    with Executor(executor, address, campaign.run.num_cpus, campaign.run.max_in_flight,
                  campaign.run.max_retries) as ex:
        summary.executor_start_s = time.perf_counter() - t_ex   # starting (or joining) Ray
        for start in range(0, len(order), size):
            rounds += 1
            t1 = time.perf_counter()
            idx = order[start:start + size]
            m = np.flatnonzero(is_mapped)
            beaten = dominated(b.lower[idx], b.area[idx], fig[m], b.area[m])
            prune = [int(i) for i, x in zip(idx, beaten) if x]
            keep = [int(i) for i, x in zip(idx, beaten) if not x]
            batch = []
            if prune:
                new = [i for i in prune if ids[i] not in stored]
                if new:
                    batch.append(_pruned(campaign, new, b, idx, m, fig, ids))
                n_pruned += len(prune)
            todo = [i for i in keep if ids[i] not in stored]
            summary.tasks_skipped += len(_tasks(campaign, [i for i in keep if ids[i] in stored], b.views))
            tasks = [make_task(campaign, t) for t in _tasks(campaign, todo, b.views)]
            driver_s += time.perf_counter() - t1
            for task, tables, error in ex.imap(execute, tasks):
                if error is not None:
                    tables = {"rows": error_table(task, f"{type(error).__name__}: {error}")}
                batch.append((task.task_id, tables))
                for rec in (tables.get("totals") or pa.table({})).to_pylist():
                    stored.setdefault(rec["design_id"], []).append(rec)
                summary.tasks_run += 1
            flush(batch)
            t1 = time.perf_counter()
            for i in keep:
                fig[i] = mapped_figures(stored.get(ids[i], []), b.dims, nets, mix)
                is_mapped[i] = True
            driver_s += time.perf_counter() - t1
            n_mapped += len(keep)
            if progress:
                progress(n_mapped + n_pruned, len(space))
        summary.timings.update(ex.timers)
    return {"designs": len(space), "mapped": n_mapped, "pruned": n_pruned, "rounds": rounds, "bounds_s": bounds_s,
            "driver_s": driver_s}


def _pruned(campaign, new: list[int], b, idx, m, fig, ids) -> tuple[str, dict[str, pa.Table]]:
    """The stored rows of the designs ``new`` pruned in a round: per design and step the bound and
    the mapped design that beats it on the step (`pruned_tables`)."""
    space = campaign.architectures
    why: dict[int, dict[str, str]] = {}
    m = np.asarray(m, dtype=np.int64)
    area_m = b.area[m]
    # per dimension, the mapped designs by (figure, area, index): the first that beats a design is
    # the least figure that does, the smaller design on a tie
    by_dim = []
    for j in range(len(b.dims)):
        f = fig[m, j]
        o = np.lexsort((m, area_m, f))
        o = o[np.isfinite(f[o])]
        by_dim.append((m[o], f[o], area_m[o]))
    for i in new:
        reasons = {}
        for j, d in enumerate(b.dims):
            lo = b.lower[i, j]
            if not math.isfinite(lo):
                continue
            ks, fs, az = by_dim[j]
            ok = ((az < b.area[i]) & (fs <= lo)) | ((az <= b.area[i]) & (fs < lo))
            k = int(ks[int(np.argmax(ok))])
            reasons[d] = (f"pruned: on {d} its lower bound {lo:.6g} s is not below design {ids[k]}'s "
                          f"{fig[k, j]:.6g} s at {b.area[k]:.2f} <= {b.area[i]:.2f} mm^2")
        why[i] = reasons
    designs = [(ids[i], space.point(i)) for i in new]
    task_id = stable_hash({"pruned": [d for d, _ in designs], "campaign": make_task(campaign, new).task_id}, 24)
    return task_id, pruned_tables(campaign, task_id, designs, [why[i] for i in new])
