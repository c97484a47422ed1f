"""Run a campaign: expand tasks, skip stored ones, execute, write in batches, report progress."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from sweep.config.campaign import Campaign
from sweep.engine.executor import Executor
from sweep.engine.signals import sigterm_as_interrupt
from sweep.engine.store import Store, code_version
from sweep.engine.tasks import AnyTask, count_tasks, error_table, execute, expand

__all__ = ["RunSummary", "run_campaign", "Interrupted"]


#: A completed run whose ``rows`` table has more fragments than this merges them (`Store.compact`).
COMPACT_ABOVE = 32


class Interrupted(Exception):
    """The run was stopped by Ctrl-C; finished tasks were stored and the run can be resumed."""

    def __init__(self, summary: "RunSummary"):
        self.summary = summary
        super().__init__("interrupted")


@dataclass
class RunSummary:
    """What a run did. Times in seconds.

    ``timings`` says where the driver's time went: ``count_s`` counting the tasks for the
    progress bar, ``expand_s`` expanding them (streamed, so
    spread over the run), ``submit_s`` submitting them (Ray argument serialisation, including
    the expansion), ``wait_s`` blocked waiting for results, ``get_s`` fetching and deserialising
    them, ``write_s`` writing Parquet fragments, ``compute_s`` the tasks' own run time summed
    over workers (see `sweep.engine.executor.TIMERS`), ``compact_s`` merging fragments at the end.
    ``fragments`` counts the batches written; ``compacted``: table -> (fragments before, after)
    if the run ended with more than `COMPACT_ABOVE` ``rows`` fragments and merged them.
    ``search``: what an architecture search that decides as it goes did (an Optuna study:
    ``designs``, ``trials``, ``asked``, ``repeats``, ``stopped`` = why it stopped early or "";
    a grid pruned by bound: ``designs``, ``mapped``, ``pruned``, ``rounds``, ``bounds_s``).
    """

    output: str
    tasks_total: int = 0
    tasks_skipped: int = 0
    tasks_run: int = 0
    tasks_failed: int = 0
    rows_written: int = 0
    seconds: float = 0.0
    executor_start_s: float = 0.0
    fragments: int = 0
    compacted: dict = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    rows_by_status: dict[str, int] = field(default_factory=dict)
    first_reason: dict[str, str] = field(default_factory=dict)
    search: dict = field(default_factory=dict)
    #: the run completed a directory that already held tasks (``--resume``): the row counts by
    #: status are of this run's rows
    resumed: bool = False

    def count_rows(self, rows: pa.Table) -> None:
        """Count the ``rows`` of one task by status (``rows_by_status``: "ok", "infeasible",
        "skipped", "error") and keep the first reason (``error`` column) of each status but "ok"
        (``first_reason``); a task with an "error" row counts in ``tasks_failed``."""
        if not rows.num_rows or "status" not in rows.column_names:
            return
        for vc in pc.value_counts(rows.column("status")).to_pylist():
            st = str(vc["values"])
            self.rows_by_status[st] = self.rows_by_status.get(st, 0) + int(vc["counts"])
            if st != "ok" and st not in self.first_reason and "error" in rows.column_names:
                hit = rows.filter(pc.equal(rows.column("status"), st)).column("error")[0].as_py()
                self.first_reason[st] = str(hit or "").strip().splitlines()[0] if hit else ""
        if "error" in self.rows_by_status and pc.any(pc.equal(rows.column("status"), "error")).as_py():
            self.tasks_failed += 1

    @property
    def nothing_feasible(self) -> bool:
        """Rows were written in this run and none has status "ok", some "infeasible"."""
        return not self.rows_by_status.get("ok") and bool(self.rows_by_status.get("infeasible"))


def run_campaign(campaign: Campaign, *, resume: bool = False, executor: str = "ray",
                 address: str | None = None,
                 progress: Callable[[int, int], None] | None = None) -> RunSummary:
    """Run ``campaign`` into ``campaign.output``.

    Args:
        resume: complete an existing output directory of the same campaign (skips stored tasks).
        executor: "ray" or "local".
        address: Ray cluster address (None: ``RAY_ADDRESS`` or a new local Ray).
        progress: called as progress(done, total) after every finished task (and once at start).

    Raises:
        StoreError: the output directory holds something else (nothing is written).
        Interrupted: Ctrl-C; finished tasks are stored.
    """
    t0 = time.perf_counter()
    store = Store(campaign.output)
    store.check_new_or_resumable(campaign.config_hash(), resume)
    done_ids = store.stored_task_ids() if resume else set()   # 100k ids: ~10 MB
    t1 = time.perf_counter()
    total = count_tasks(campaign)
    summary = RunSummary(str(campaign.output), total, resumed=bool(done_ids))
    summary.timings["count_s"] = time.perf_counter() - t1
    store.create({"name": campaign.name, "source": campaign.source,
                  "config_hash": campaign.config_hash(), "config": campaign.resolved_config(),
                  "campaign": campaign.raw, "base_dir": str(Path(campaign.source).resolve().parent),
                  "tasks": total, "report": campaign.report})
    stamp = {"code_version": code_version(), "config_hash": campaign.config_hash()}
    timings = summary.timings
    timings.update(expand_s=0.0, write_s=0.0)

    def todo() -> Iterator[AnyTask]:
        """Tasks not yet stored, expanded lazily (the executor pulls them as slots free up)."""
        it = expand(campaign)
        first = True
        while True:
            t1 = time.perf_counter()
            task = next(it, None)
            timings["expand_s"] += time.perf_counter() - t1
            if task is None:
                return
            if first:  # before the first task reaches a worker (e.g. compile the loop-nest kernel)
                campaign.plan.warm_up(task)
            first = False
            if task.task_id in done_ids:
                summary.tasks_skipped += 1
                continue
            yield task

    if progress:
        progress(len(done_ids), summary.tasks_total)
    buf: list = []
    buf_rows = 0
    last_flush = time.monotonic()

    def flush():
        nonlocal buf, buf_rows, last_flush
        t1 = time.perf_counter()
        n = store.write_batch(buf, stamp=stamp)
        if buf:
            summary.fragments += 1
        summary.rows_written += n
        buf, buf_rows, last_flush = [], 0, time.monotonic()
        timings["write_s"] += time.perf_counter() - t1

    if campaign.plan.runs_study(campaign):
        return _study(campaign, store, stamp, summary, resume, executor, address, progress, t0)
    ex = Executor(executor, address, campaign.run.num_cpus, campaign.run.max_in_flight,
                  campaign.run.max_retries)
    try:
        t1 = time.perf_counter()
        with ex, sigterm_as_interrupt():
            summary.executor_start_s = time.perf_counter() - t1
            for task, tables, error in ex.imap(execute, todo()):
                if error is not None:  # the worker died more than max_retries times, or similar
                    tables = {"rows": error_table(task, f"{type(error).__name__}: {error}")}
                buf.append((task.task_id, tables))
                rows = tables["rows"]
                buf_rows += rows.num_rows
                summary.tasks_run += 1
                summary.count_rows(rows)
                if buf_rows >= campaign.run.flush_rows or time.monotonic() - last_flush > 30:
                    flush()
                if progress:
                    progress(len(done_ids) + summary.tasks_run, summary.tasks_total)
            flush()
        _tidy(store, summary)
    except KeyboardInterrupt:
        flush()
        _tidy(store, summary, compact=False)
        _finish(summary, ex, t0)
        raise Interrupted(summary) from None
    return _finish(summary, ex, t0)


def _tidy(store: Store, summary: RunSummary, compact: bool = True) -> None:
    """The end of a run, finished or interrupted: many small fragments merged (`Store.compact`,
    finished runs only), then every table's fragments given one schema (`Store.unify_schemas`:
    what a plain ``pandas.read_parquet(DIR/<table>)`` needs); the seconds in ``compact_s``."""
    t1 = time.perf_counter()
    if compact and len(store.fragments("rows")) > COMPACT_ABOVE:
        summary.compacted = store.compact()
    store.unify_schemas()
    summary.timings["compact_s"] = summary.timings.get("compact_s", 0.0) + time.perf_counter() - t1


def _study(campaign: Campaign, store: Store, stamp: dict, summary: RunSummary, resume: bool,
                   executor: str, address: str | None, progress, t0: float) -> RunSummary:
    """A campaign whose kind runs a study (an architecture search by Optuna: the kind's
    ``run_study``), each round's tasks stored as one batch."""

    def store_batch(batch):
        for _, tables in batch:
            if "rows" in tables:
                summary.count_rows(tables["rows"])
        t1 = time.perf_counter()
        summary.rows_written += store.write_batch(batch, stamp=stamp)
        summary.fragments += bool(batch)
        summary.timings["write_s"] += time.perf_counter() - t1
    try:
        with sigterm_as_interrupt():
            campaign.plan.run_study(campaign, summary, resume=resume, executor=executor, address=address,
                                    progress=progress, flush=store_batch)
    except KeyboardInterrupt:
        _tidy(store, summary, compact=False)
        summary.seconds = time.perf_counter() - t0
        raise Interrupted(summary) from None
    _tidy(store, summary)  # a batch per round: many small fragments
    summary.seconds = time.perf_counter() - t0
    return summary


def _finish(summary: RunSummary, ex, t0: float) -> RunSummary:
    summary.timings.update(getattr(ex, "timers", {}))
    summary.seconds = time.perf_counter() - t0
    return summary
