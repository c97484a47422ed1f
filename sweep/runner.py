"""Run a campaign: expand tasks, skip stored ones, execute, write in batches, report progress."""

from __future__ import annotations

import contextlib
import signal
import time
from dataclasses import dataclass
from typing import Callable

from sweep.campaign import Campaign
from sweep.executor import make_executor
from sweep.store import Store
from sweep.tasks import expand

__all__ = ["RunSummary", "run_campaign", "Interrupted"]


class Interrupted(Exception):
    """The run was stopped by Ctrl-C; finished tasks were stored and the run can be resumed."""

    def __init__(self, summary: "RunSummary"):
        self.summary = summary
        super().__init__("interrupted")


@dataclass
class RunSummary:
    """What a run did. Times in seconds."""

    output: str
    tasks_total: int = 0
    tasks_skipped: int = 0
    tasks_run: int = 0
    tasks_failed: int = 0
    rows_written: int = 0
    seconds: float = 0.0
    executor_start_s: float = 0.0


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
    tasks = list(expand(campaign))
    done_ids = store.stored_task_ids() if resume else set()
    todo = [t for t in tasks if t.task_id not in done_ids]
    summary = RunSummary(str(campaign.output), len(tasks), len(tasks) - len(todo))
    store.create({"name": campaign.name, "source": campaign.source,
                  "config_hash": campaign.config_hash(), "config": campaign.resolved_config(),
                  "tasks": len(tasks), "report": campaign.report})
    if progress:
        progress(summary.tasks_skipped, summary.tasks_total)
    buf: list = []
    buf_rows = 0
    last_flush = time.monotonic()

    def flush():
        nonlocal buf, buf_rows, last_flush
        summary.rows_written += store.write_batch(buf)
        buf, buf_rows, last_flush = [], 0, time.monotonic()

    if todo and campaign.kind == "loopnest":  # (npu mappers have no compiled kernel)
        _warm_up(todo[0])
    ex = make_executor(executor, address, campaign.run.num_cpus, campaign.run.max_in_flight,
                       campaign.run.max_retries)
    try:
        t1 = time.perf_counter()
        with ex, _sigterm_as_interrupt():
            summary.executor_start_s = time.perf_counter() - t1
            for task, tables in ex.imap(todo):
                buf.append((task.task_id, tables))
                rows = tables["rows"]
                buf_rows += rows.num_rows
                summary.tasks_run += 1
                if rows.num_rows and rows.column("status")[0].as_py() != "ok":
                    summary.tasks_failed += 1
                if buf_rows >= campaign.run.flush_rows or time.monotonic() - last_flush > 30:
                    flush()
                if progress:
                    progress(summary.tasks_skipped + summary.tasks_run, summary.tasks_total)
            flush()
    except KeyboardInterrupt:
        flush()
        summary.seconds = time.perf_counter() - t0
        raise Interrupted(summary) from None
    summary.seconds = time.perf_counter() - t0
    return summary


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """Within the block, SIGTERM (a batch scheduler, `kill`, `timeout`) stops the run like Ctrl-C:
    finished tasks are stored and the run is resumable. Installed after Ray has started, so it
    replaces Ray's own handler for the driver; the previous handler is restored afterwards."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _warm_up(task) -> None:
    """Compile (or load from the on-disk cache) the loop-nest evaluator's kernel once in the
    driver, so that Ray workers starting together load it instead of each compiling it."""
    try:
        from costmodel.batch import OrderingEvaluator
        u = task.units[0]
        ev = OrderingEvaluator(u.problem.layer, u.problem.arch, u.problem.spatial)
        import numpy as np
        ev.evaluate(np.repeat(np.arange(len(ev.counts)), ev.counts)[None, :])
    except Exception:  # noqa: BLE001 - a warm-up only; the task itself reports real errors
        pass
