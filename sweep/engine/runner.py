"""Run a campaign: expand tasks, skip stored ones, execute, write in batches, report progress."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from sweep.common.errors import ClusterLostError
from sweep.config.campaign import Campaign
from sweep.engine.executor import Executor
from sweep.engine.signals import sigterm_as_interrupt
from sweep.engine.store import Store, code_version
from sweep.engine.store.repair import Mended, repair
from sweep.engine.tasks import CRASHED, AnyTask, count_tasks, error_table, execute, expand

__all__ = ["RunSummary", "run_campaign", "Interrupted"]


#: A completed run whose ``rows`` table has more fragments than this merges them (`Store.compact`).
COMPACT_ABOVE = 32
#: Seconds at most between a result's arrival and its commit (also ``[run] flush_rows`` rows): what a
#: driver killed outright (SIGKILL, its machine lost) can lose.
FLUSH_S = 5.0


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
    #: tasks already stored in the directory when the run started (``--resume`` skips them; a
    #: grid pruned by bound: its mapped tasks, not the batches of pruned designs' rows)
    tasks_before: int = 0
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
    #: what ``--resume`` mended before running (`sweep.engine.store.repair`), None on a new run
    mended: Mended | None = None
    #: tasks of the whole directory (this run's and earlier ones) stored with an "error" row at the end
    #: of a ``--resume``, by kind ("crash": the executor gave up again; "raised": the code raised)
    errors_stored: dict[str, int] = field(default_factory=dict)

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

    def interrupted_text(self) -> str:
        """What an interrupted run stored, in the units of `done_text`: the tasks stored by this run
        and in all (what ``--resume`` then counts as already stored: `tasks_before`); a grid pruned
        by bound first its designs done (``search``: mapped + pruned, of the grid's)."""
        head, g = "", self.search
        if "pruned" in g:
            head = (f"{g['mapped'] + g['pruned']:,} of {g['designs']:,} designs done ({g['mapped']:,} mapped, "
                    f"{g['pruned']:,} pruned by the bound), ")
        total = "" if g else f" of {self.tasks_total:,}"
        return (head + f"{self.tasks_run:,} task(s) stored by this run, {self.tasks_before + self.tasks_run:,}{total} "
                       f"in all, in {self.output}")

    def done_text(self, study: bool) -> str:
        """A finished run: tasks run, already stored (an Optuna ``study``: suggestions answered from
        storage), failed, rows; a grid pruned by bound first its designs done of the grid's (mapped +
        pruned: every design is one or the other)."""
        head, g = "", self.search
        if "pruned" in g:
            head = (f"{g['mapped'] + g['pruned']:,}/{g['designs']:,} designs ({g['mapped']:,} mapped, "
                    f"{g['pruned']:,} pruned by the bound): ")
        skipped = ("suggested design(s) told their stored figures" if study and "pruned" not in g
                   else "already stored")
        return (head + f"{self.tasks_run:,} task(s) run, {self.tasks_skipped:,} {skipped}, {self.tasks_failed} failed, "
                       f"{self.rows_written:,} rows in {self.seconds:.1f} s (executor start "
                       f"{self.executor_start_s:.1f} s) -> {self.output}")

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
        progress: called as progress(done, total) after every finished task (and once at start):
            tasks stored of the campaign's tasks; for a campaign that runs a study (an Optuna
            search, a grid pruned by bound), designs done of its designs (the study's own count).

    Raises:
        StoreError: the output directory holds something else, or cannot be written (nothing is
            written, nothing started).
        Interrupted: Ctrl-C or SIGTERM; the tasks finished by then are stored (with the Ray
            executor the signal only raises a flag read between Ray calls:
            `sweep.engine.executor`), the executor stopped, and the run can be resumed.
    """
    t0 = time.perf_counter()
    store = Store(campaign.output)
    store.check_new_or_resumable(campaign.config_hash(), resume)
    store.check_writable()
    t1 = time.perf_counter()
    total = count_tasks(campaign)
    count_s = time.perf_counter() - t1
    with store:
        store.mkdir()
        store.acquire()   # the writer lock, held to the end of the run
        if not store.create(_manifest(campaign, total)) or resume:
            store.check_new_or_resumable(campaign.config_hash(), resume)   # (a run that began meanwhile)
        mended = repair(store) if resume else None
        done_ids = store.stored_task_ids() if resume else set()   # 100k ids: ~10 MB
        summary = RunSummary(str(campaign.output), total, tasks_before=len(done_ids), resumed=bool(done_ids),
                             mended=mended)
        summary.timings["count_s"] = count_s
        return _run(campaign, store, summary, done_ids, resume, executor, address, progress, t0)


def _run(campaign: Campaign, store: Store, summary: "RunSummary", done_ids: set[str], resume: bool,
         executor: str, address: str | None, progress, t0: float) -> "RunSummary":
    """`run_campaign` once the directory is locked and mended: the tasks not stored, run and
    committed in batches."""
    stamp = {"code_version": code_version(), "config_hash": campaign.config_hash()}
    timings = summary.timings
    timings.update(expand_s=0.0, write_s=0.0)

    study = campaign.plan.runs_study(campaign)
    if progress and not study:   # a study counts its own unit (designs) from its start
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

    if study:
        return _study(campaign, store, stamp, summary, resume, executor, address, progress, t0)
    ex = Executor(executor, address, campaign.run.num_cpus, campaign.run.max_in_flight,
                  campaign.run.max_retries)
    interrupted = False
    try:
        t1 = time.perf_counter()
        with ex, sigterm_as_interrupt():
            summary.executor_start_s = time.perf_counter() - t1
            try:
                for task, tables, error in ex.imap(execute, _todo(campaign, done_ids, summary)):
                    if error is not None:  # the worker died more than max_retries times, or similar
                        tables = {"rows": error_table(task, f"{type(error).__name__}: {error}", kind="crash")}
                    buf.append((task.task_id, tables))
                    rows = tables["rows"]
                    buf_rows += rows.num_rows
                    summary.tasks_run += 1
                    summary.count_rows(rows)
                    if buf_rows >= campaign.run.flush_rows or time.monotonic() - last_flush > FLUSH_S:
                        flush()
                    if progress:
                        progress(len(done_ids) + summary.tasks_run, summary.tasks_total)
            except KeyboardInterrupt:
                interrupted = True
            except ClusterLostError:
                flush()   # every result received is committed; the caller says how to resume
                raise
            flush()   # what finished, stored before Ray stops (a second Ctrl-C meanwhile: exit at once)
    except KeyboardInterrupt:   # while Ray started or stopped, or (local executor) while storing
        interrupted = True
        flush()
    try:
        _tidy(store, summary, compact=not interrupted)
        if resume and not interrupted:
            summary.errors_stored = errors_stored(store)
    except KeyboardInterrupt:   # (local executor) compacting: crash-safe, every task stays stored
        interrupted = True
    _finish(summary, ex, t0)
    if interrupted:
        raise Interrupted(summary)
    return summary


def errors_stored(store: Store) -> dict[str, int]:
    """Tasks of ``store`` with a row of status "error", by ``error_kind`` ("crash": the executor gave
    up on it, run again by ``--resume``; "raised": the code raised)."""
    rows = store.read("rows")
    if rows.empty or "status" not in rows or "error" not in rows:
        return {}
    bad = rows[rows["status"] == "error"]
    crashed = bad["error"].fillna("").str.startswith(CRASHED)
    out = {"crash": bad.loc[crashed, "task_id"].nunique(), "raised": bad.loc[~crashed, "task_id"].nunique()}
    return {k: int(n) for k, n in out.items() if n}


def _todo(campaign: Campaign, done_ids: set[str], summary: RunSummary) -> Iterator[AnyTask]:
    """Tasks not yet stored, expanded lazily (the executor pulls them as slots free up); the time
    spent expanding in ``summary.timings["expand_s"]``, the tasks skipped in ``tasks_skipped``."""
    it = expand(campaign)
    first = True
    while True:
        t1 = time.perf_counter()
        task = next(it, None)
        summary.timings["expand_s"] += time.perf_counter() - t1
        if task is None:
            return
        if first:  # before the first task reaches a worker (e.g. compile the loop-nest kernel)
            campaign.plan.warm_up(task)
        first = False
        if task.task_id in done_ids:
            summary.tasks_skipped += 1
            continue
        yield task


def _manifest(campaign: Campaign, tasks: int) -> dict:
    """What ``manifest.json`` records of a run (`Store.create`); a grid pruned by bound also its
    ``designs`` (how many tasks it stores depends on what the bound prunes; its designs do not)."""
    m = {"name": campaign.name, "source": campaign.source, "config_hash": campaign.config_hash(),
         "config": campaign.resolved_config(), "campaign": campaign.raw,
         "base_dir": str(Path(campaign.source).resolve().parent), "tasks": tasks, "report": campaign.report}
    if getattr(getattr(campaign, "search", None), "prune", "none") != "none":
        m["designs"] = len(campaign.architectures)
    return m


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
