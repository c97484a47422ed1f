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
stored. A later round whose decision the rounds still running cannot change starts its tasks at
once (`sweep.search.rounds`: the rule, and the check that the decision taken ahead is the one the
figures give). A design's rows are those of mapping it alone: the tasks are the grid's tasks.

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

from sweep.common.errors import ClusterLostError
from sweep.common.ids import stable_hash
from sweep.engine.design_tasks import make_task, pruned_tables
from sweep.engine.executor import Executor
from sweep.engine.store import Store
from sweep.engine.tasks import error_table, execute
from sweep.search.bounds import design_bounds, priority_order
from sweep.search.rounds import Rounds

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


def _stored_tasks(store: Store) -> set[str]:
    """task_ids of the stored mapped tasks (rows not "pruned": a batch of pruned designs' rows has a
    task_id of its own, no task of the grid's)."""
    if not store.fragments("rows"):
        return set()
    rows = store.read("rows", columns=["task_id", "status"])
    return set(rows.loc[rows["status"] != "pruned", "task_id"].astype(str))


class _Done:
    """The designs of a pruned grid done so far, mapped or pruned, stored by this run or an earlier
    one: ``info`` (`RunSummary.search`: ``mapped``, ``pruned``) counts those stored, ``progress`` is
    told (designs done, designs of the grid) as tasks finish, the round's not yet stored included."""

    def __init__(self, info: dict, stored: dict[str, list[dict]], progress):
        self.info, self.progress = info, progress
        self.pruned = {d for d, recs in stored.items() if any(r.get("status") == "pruned" for r in recs)}
        self.mapped = set(stored) - self.pruned
        self.staged: tuple[set, set] = (set(), set())   # (mapped, pruned) of the batch being made
        self.told = -1
        self.commit()

    def add(self, design_ids, pruned: bool = False) -> None:
        """Designs of the batch being made (stored with it: `commit`)."""
        done = self.pruned if pruned else self.mapped
        self.staged[pruned].update(d for d in design_ids if d not in done)
        self._tell()

    def commit(self) -> None:
        """The batch is stored: its designs count as done."""
        self.mapped |= self.staged[0]
        self.pruned |= self.staged[1]
        self.staged = (set(), set())
        self.info.update(mapped=len(self.mapped), pruned=len(self.pruned))
        self._tell()

    def _tell(self) -> None:
        n = len(self.mapped) + len(self.pruned) + len(self.staged[0]) + len(self.staged[1])
        if self.progress and n != self.told:
            self.progress(n, self.info["designs"])
        self.told = n


def run_pruned_grid(campaign, summary, *, resume: bool, executor: str, address: str | None,
                    progress: Callable[[int, int], None] | None, flush: Callable[[list], None],
                    say: Callable[[str], None] | None = None) -> dict:
    """Run the pruned grid of ``campaign`` (module docstring) into its output directory (created by
    the caller, `sweep.engine.runner.run_campaign`). ``flush(batch)`` stores (task_id, tables) pairs:
    a round's at its end, or the part finished when interrupted; ``progress(done, total)`` counts
    designs done (mapped or pruned, stored) of the grid's designs, after every task; ``say`` prints a
    line (the bounds' progress). ``summary.tasks_run`` / ``tasks_skipped`` count the mapped tasks run /
    already stored, ``summary.tasks_before`` the mapped tasks stored when the run started.

    Returns:
        ``summary.search``: {"designs", "mapped", "pruned", "rounds", "bounds_s", "driver_s"} of the
        whole grid (``mapped`` + ``pruned`` = ``designs`` once it is done; kept current while it runs):
        ``bounds_s`` the bounds of every design, ``driver_s`` the rounds' own work (the pruning tests,
        the pruned designs' rows, the tasks' making, the mapped figures), seconds; the executor's
        timers (submit, wait, get, compute) go to ``summary.timings``.

    Raises:
        KeyboardInterrupt: Ctrl-C / SIGTERM; what finished is stored (``--resume`` completes it).
    """
    space, nets, mix = campaign.architectures, list(campaign.networks), campaign.workload
    info = summary.search = {"designs": len(space), "mapped": 0, "pruned": 0, "rounds": 0, "bounds_s": 0.0,
                             "driver_s": 0.0}
    t0 = time.perf_counter()
    b = design_bounds(campaign, (lambda d, n: say(f"bounds: {d:,} of {n:,} designs")) if say else None)
    info["bounds_s"] = time.perf_counter() - t0
    order = priority_order(b)
    store = Store(Path(campaign.output))
    stored, stored_tasks = _stored(store), _stored_tasks(store)
    summary.tasks_before = len(stored_tasks)
    done = _Done(info, stored, progress)
    pruned_ids: set[str] = set()   # task_ids of the batches of pruned designs' rows
    ids = [space.design_id(space.point(int(i))) for i in range(len(space))]
    fig = np.full_like(b.lower, np.nan)
    size = round_size(campaign)
    rounds = [order[s:s + size] for s in range(0, len(order), size)]

    def finish(j, beaten, task_ids, results) -> list[int]:
        """Store round j: its pruned designs' rows and its tasks' results; its mapped designs."""
        t1 = time.perf_counter()
        idx = rounds[j]
        m = np.flatnonzero(plan.mapped)
        prune = [int(i) for i, x in zip(idx, beaten) if x]
        keep = [int(i) for i, x in zip(idx, beaten) if not x]
        batch: list = []
        new = [i for i in prune if ids[i] not in stored]
        if new:
            batch.append(_pruned(campaign, new, b, idx, m, fig, ids))
            pruned_ids.add(batch[-1][0])
        done.add([ids[i] for i in prune], pruned=True)   # stored with this batch
        summary.tasks_skipped += sum(1 for t in task_ids if t in stored_tasks)
        for t in task_ids:
            if t in stored_tasks:   # stored earlier (a failed task's designs have no totals row)
                done.mapped.update(designs_of[t])
        batch += [_result(task, tables, error) for task, tables, error in results.values()]
        flush(batch)
        summary.tasks_run += sum(1 for tid, _ in batch if tid not in pruned_ids)
        done.commit()
        for i in keep:
            fig[i] = mapped_figures(stored.get(ids[i], []), b.dims, nets, mix)
        info["rounds"] += 1
        info["driver_s"] += time.perf_counter() - t1
        return keep

    def tasks_of(keep: list[int]) -> list:
        tasks = [make_task(campaign, t) for t in _tasks(campaign, keep, b.views)]
        designs_of.update((t.task_id, [d for d, _ in t.designs]) for t in tasks)
        return tasks

    def _result(task, tables, error) -> tuple[str, dict]:
        if error is not None:
            tables = {"rows": error_table(task, f"{type(error).__name__}: {error}", kind="crash")}
        return task.task_id, tables

    designs_of: dict[str, list[str]] = {}
    plan = Rounds(rounds, b.lower, b.area, tasks_of, stored_tasks, finish, fig)
    t_ex = time.perf_counter()
    with Executor(executor, address, campaign.run.num_cpus, campaign.run.max_in_flight,
                  campaign.run.max_retries) as ex:
        summary.executor_start_s = time.perf_counter() - t_ex   # starting (or joining) Ray
        try:
            for task, tables, error in ex.imap(execute, plan):
                for rec in ((tables or {}).get("totals") or pa.table({})).to_pylist():
                    stored.setdefault(rec["design_id"], []).append(rec)
                done.add([d for d, _ in task.designs])
                plan.take(task, tables, error)
            if not plan.done():
                raise RuntimeError("pruned grid: rounds left unfinished")
        except (KeyboardInterrupt, ClusterLostError):   # every task finished is stored
            held = [_result(*r) for r in plan.unfinished_results().values()]
            if held:
                flush(held)
                summary.tasks_run += len(held)
                done.commit()
            raise
        finally:
            summary.timings.update(ex.timers)
            info["driver_s"] += plan.decide_s
    return info


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
