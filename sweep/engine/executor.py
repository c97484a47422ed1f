"""Executors: where tasks run. Both yield ``(task, tables)`` in completion order.

* `LocalExecutor`: in this process, one task after another (debugging, tests, tiny runs).
* `RayExecutor`: Ray tasks, a local Ray started in-process by default or an existing cluster
  (``address`` / ``RAY_ADDRESS``). At most ``max_in_flight`` tasks are pending (Ray's
  limit-pending-tasks pattern, `ray.wait`), a task whose worker dies is retried by Ray
  (``max_retries``) and, if it still fails, becomes an error row; results are consumed in
  completion order. Tasks are deterministic, so the rows do not depend on the executor.
"""

from __future__ import annotations

import os
import time
from typing import Iterable, Iterator

import pyarrow as pa

from sweep.engine.tasks import Task, error_table, execute

__all__ = ["LocalExecutor", "RayExecutor", "make_executor", "TIMERS"]

#: Where the driver's time goes, in seconds, accumulated in ``executor.timers``:
#: ``submit_s`` creating Ray tasks (serialising their arguments), ``wait_s`` blocked in
#: ``ray.wait`` (the cluster computing, scheduling), ``get_s`` fetching and deserialising results,
#: ``compute_s`` the tasks' own run time summed over workers (CPU-seconds of useful work).
TIMERS = ("submit_s", "wait_s", "get_s", "compute_s")


def _timed_execute(task: Task) -> tuple[dict[str, pa.Table], float]:
    t0 = time.perf_counter()
    tables = execute(task)
    return tables, time.perf_counter() - t0


class LocalExecutor:
    """Runs tasks in-process, in order."""

    name = "local"

    def __init__(self):
        self.timers = dict.fromkeys(TIMERS, 0.0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def imap(self, tasks: Iterable[Task]) -> Iterator[tuple[Task, dict[str, pa.Table]]]:
        for t in tasks:
            tables, dt = _timed_execute(t)
            self.timers["compute_s"] += dt
            yield t, tables


class RayExecutor:
    """Runs tasks as Ray tasks with bounded in-flight work.

    Args:
        address: Ray cluster address; None = ``RAY_ADDRESS`` or, if unset, a new local Ray.
        num_cpus: CPUs of a new local Ray (None = all cores). Ignored for an existing cluster.
        max_in_flight: pending tasks at most (None = 2 x cluster CPUs).
        max_retries: Ray retries when a worker process dies.
    """

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None,
                 max_in_flight: int | None = None, max_retries: int = 3):
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.num_cpus = num_cpus
        self.max_in_flight = max_in_flight
        self.max_retries = max_retries
        self._started = False
        self._pending: list = []
        self.timers = dict.fromkeys(TIMERS, 0.0)

    def __enter__(self):
        import ray
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if not ray.is_initialized():
            kw = dict(include_dashboard=False, log_to_driver=True, configure_logging=False)
            if self.address:
                ray.init(address=self.address, **kw)
            else:
                ray.init(num_cpus=self.num_cpus, **kw)
            self._started = True
        self._remote = ray.remote(_timed_execute).options(max_retries=self.max_retries,
                                                            retry_exceptions=False)
        return self

    def __exit__(self, *exc):
        import ray
        for ref in self._pending:
            ray.cancel(ref, force=True)
        self._pending = []
        if self._started:
            ray.shutdown()
        return False

    def imap(self, tasks: Iterable[Task]) -> Iterator[tuple[Task, dict[str, pa.Table]]]:
        import ray
        from ray.exceptions import RayError

        limit = self.max_in_flight or max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        by_ref: dict = {}
        it = iter(tasks)
        exhausted = False
        tm = self.timers
        while True:
            t0 = time.perf_counter()
            while not exhausted and len(by_ref) < limit:
                t = next(it, None)
                if t is None:
                    exhausted = True
                    break
                by_ref[self._remote.remote(t)] = t
            t1 = time.perf_counter()
            tm["submit_s"] += t1 - t0
            self._pending = list(by_ref)
            if not by_ref:
                return
            done, _ = ray.wait(self._pending, num_returns=len(by_ref), timeout=0)
            if not done:
                done, _ = ray.wait(self._pending, num_returns=1)
            t2 = time.perf_counter()
            tm["wait_s"] += t2 - t1
            for ref in done:
                t = by_ref.pop(ref)
                t3 = time.perf_counter()
                try:
                    tables, dt = ray.get(ref)
                    tm["compute_s"] += dt
                except RayError as e:  # worker died more than max_retries times, or similar
                    tables = {"rows": error_table(t, f"{type(e).__name__}: {e}")}
                tm["get_s"] += time.perf_counter() - t3
                yield t, tables


def make_executor(kind: str, address: str | None = None, num_cpus: int | None = None,
                  max_in_flight: int | None = None, max_retries: int = 3):
    """`LocalExecutor` for ``"local"``, `RayExecutor` for ``"ray"``."""
    if kind == "local":
        return LocalExecutor()
    if kind == "ray":
        return RayExecutor(address, num_cpus, max_in_flight, max_retries)
    raise ValueError(f"unknown executor {kind!r}; expected 'ray' or 'local'")
