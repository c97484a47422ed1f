"""The one bounded executor of `sweep run` and `sweep tune`: where calls run, at most N at once.

`Executor` ("local" or "ray") runs ``fn(item)`` for a stream of items and yields
``(item, result, error)`` in completion order:

* "local": in this process, one call after another (debugging, tests, tiny runs).
* "ray": Ray tasks, a local Ray started in-process by default (quietly: without Ray's
  token-authentication notice, and never the cluster ``ray_current_cluster`` names) or an
  existing cluster (``address`` / ``RAY_ADDRESS``; its token and the one-line errors of joining
  it: `sweep.engine.cluster`). At most ``max_in_flight`` calls are pending (Ray's
  limit-pending-tasks pattern, `ray.wait`), items are pulled from the stream only as slots free
  up (so a lazy stream is never listed), a call whose worker dies is retried by Ray
  (``max_retries``), results are consumed in completion order, and leaving the ``with`` block
  cancels what is still pending and shuts down a Ray it started.

A call that raises (or whose worker died more than ``max_retries`` times) yields its exception as
``error`` and the stream goes on: the caller decides what a failure means (an error row for
`sweep run`, a failed trial for `sweep tune`). The calls are deterministic, so results do not
depend on the executor; `ordered` collects them in call order.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from typing import Any, Callable, Iterable, Iterator

__all__ = ["Executor", "ordered", "TIMERS", "EXECUTORS"]

#: The executor kinds.
EXECUTORS = ("ray", "local")

#: Where the driver's time goes, in seconds, accumulated in ``Executor.timers``:
#: ``submit_s`` creating Ray tasks (serialising their arguments), ``wait_s`` blocked in
#: ``ray.wait`` (the cluster computing, scheduling), ``get_s`` fetching and deserialising results,
#: ``compute_s`` the calls' own run time summed over workers (CPU-seconds of useful work).
TIMERS = ("submit_s", "wait_s", "get_s", "compute_s")


#: The logger of Ray's token-authentication set-up, and the start of the warning it logs on every
#: new local Ray when ``RAY_AUTH_MODE`` is unset ("Token authentication is enabled for this Ray
#: cluster. Set RAY_AUTH_MODE=disabled to opt out. ..."): the secure default, not news on every
#: `sweep run`. Other records of that logger (a missing or invalid token) still show.
_TOKEN_LOGGER = "ray._private.authentication.authentication_token_setup"
_TOKEN_NOTICE = "Token authentication is enabled for this Ray cluster"


class _DropTokenNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(_TOKEN_NOTICE)


@contextlib.contextmanager
def _quiet_token_notice():
    """While it lasts, Ray's token-authentication notice (`_TOKEN_NOTICE`) is not logged; token
    authentication itself stays as Ray sets it up."""
    logger, drop = logging.getLogger(_TOKEN_LOGGER), _DropTokenNotice()
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


def _timed(fn: Callable[[Any], Any], item: Any) -> tuple[Any, float]:
    """``fn(item)`` and its run time in seconds (module level: Ray pickles it by reference)."""
    t0 = time.perf_counter()
    out = fn(item)
    return out, time.perf_counter() - t0


class Executor:
    """Runs ``fn(item)`` calls in-process or as Ray tasks with bounded in-flight work.

    Args:
        kind: "local" or "ray" (`EXECUTORS`).
        address: Ray cluster address; None = ``RAY_ADDRESS`` or, if unset, a new local Ray.
        num_cpus: CPUs of a new local Ray (None = all cores). Ignored for an existing cluster.
        max_in_flight: pending calls at most (None = 2 x the cluster's CPUs); `imap` may lower it.
        max_retries: Ray retries of a call whose worker process died.
        beat: called after every completed call and at least every ``beat_s`` seconds while
            waiting (a driver's heartbeat); None = never.
        beat_s: seconds between beats while blocked on Ray.

    Raises:
        ValueError: unknown ``kind``.
    """

    def __init__(self, kind: str = "ray", address: str | None = None, num_cpus: int | None = None,
                 max_in_flight: int | None = None, max_retries: int = 3,
                 beat: Callable[[], None] | None = None, beat_s: float = 10.0):
        if kind not in EXECUTORS:
            raise ValueError(f"unknown executor {kind!r}; expected 'ray' or 'local'")
        self.name = kind
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.num_cpus, self.max_in_flight, self.max_retries = num_cpus, max_in_flight, max_retries
        self.beat, self.beat_s = beat, beat_s
        self.timers = dict.fromkeys(TIMERS, 0.0)
        self._started = False
        self._pending: list = []

    def __enter__(self) -> "Executor":
        if self.name == "ray":
            ray = _import_ray()
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            if not ray.is_initialized():
                self._start_ray(ray)
            self._remote = ray.remote(_timed).options(max_retries=self.max_retries, retry_exceptions=False)
        return self

    def _start_ray(self, ray) -> None:
        """`ray.init` with Ctrl-C / SIGTERM held back until it returns (`interrupts_deferred`): a
        KeyboardInterrupt inside it left a half-started driver that segfaulted at exit (exit 139,
        1 run in 3 with Ctrl-C 2.3-2.6 s after `sweep run` on 2 cores). A signal that arrived
        meanwhile then stops the fully started Ray and raises KeyboardInterrupt (exit 130)."""
        from sweep.engine import cluster
        from sweep.engine.signals import interrupts_deferred
        kw = dict(include_dashboard=False, log_to_driver=True, configure_logging=False)
        if self.address:  # the cluster's token as Ray finds it; one line if it cannot be joined
            with _quiet_token_notice():
                cluster.use_available_token()
            cluster.check_reachable(self.address)
        with interrupts_deferred() as got, _quiet_token_notice():
            try:
                if self.address:
                    ray.init(address=self.address, **kw)
                else:  # "local": a new Ray, whatever ray_current_cluster names or runs beside
                    ray.init(address="local", num_cpus=self.num_cpus, **kw)
                self._started = True
            except Exception as e:
                if not got:  # a real start-up failure, not the interrupt's side effect
                    if self.address:
                        raise cluster.connect_failed(self.address, e) from None
                    raise
        if got:
            self._started = self._started or ray.is_initialized()  # (ray.init may have half-connected)
            self._stop_ray(ray)
            raise KeyboardInterrupt

    def _stop_ray(self, ray) -> None:
        """Cancel what is pending and shut down a Ray this executor started, with Ctrl-C held back
        until it is down; a second Ctrl-C meanwhile is dropped (the run is stopping anyway)."""
        from sweep.engine.signals import interrupts_deferred
        with interrupts_deferred():
            for ref in self._pending:
                ray.cancel(ref, force=True)
            self._pending = []
            if self._started:
                ray.shutdown()
                self._started = False

    def __exit__(self, *exc) -> bool:
        if self.name == "ray":
            import ray
            self._stop_ray(ray)
        return False

    def _beat(self) -> None:
        if self.beat is not None:
            self.beat()

    def imap(self, fn: Callable[[Any], Any], items: Iterable[Any], limit: int | None = None
             ) -> Iterator[tuple[Any, Any, BaseException | None]]:
        """``(item, fn(item), None)``, or ``(item, None, error)`` for a call that failed, in
        completion order, with at most ``limit`` (default ``max_in_flight``) calls pending.
        ``fn`` must be a module-level function (Ray sends it by reference)."""
        if self.name == "local":
            yield from self._imap_local(fn, items)
        else:
            yield from self._imap_ray(fn, items, limit)

    def _imap_local(self, fn, items):
        for item in items:
            try:
                out, dt = _timed(fn, item)
                self.timers["compute_s"] += dt
                result, error = out, None
            except Exception as e:  # noqa: BLE001 - the caller decides what a failed call means
                result, error = None, e
            self._beat()
            yield item, result, error

    def _imap_ray(self, fn, items, limit):
        import ray

        limit = limit or self.max_in_flight or max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        by_ref: dict = {}
        it = iter(items)
        exhausted = False
        tm = self.timers
        while True:
            t0 = time.perf_counter()
            while not exhausted and len(by_ref) < limit:
                item = next(it, _END)
                if item is _END:
                    exhausted = True
                    break
                by_ref[self._remote.remote(fn, item)] = item
            t1 = time.perf_counter()
            tm["submit_s"] += t1 - t0
            self._pending = list(by_ref)
            if not by_ref:
                return
            done, _ = ray.wait(self._pending, num_returns=len(by_ref), timeout=0)
            while not done:
                done, _ = ray.wait(self._pending, num_returns=1, timeout=self.beat_s if self.beat else None)
                self._beat()
            tm["wait_s"] += time.perf_counter() - t1
            for ref in done:
                item = by_ref.pop(ref)
                t3 = time.perf_counter()
                try:
                    result, dt = ray.get(ref)
                    tm["compute_s"] += dt
                    error = None
                except Exception as e:  # noqa: BLE001 - RayTaskError, a worker died too often, ...
                    result, error = None, e
                tm["get_s"] += time.perf_counter() - t3
                yield item, result, error


_END = object()


def ordered(executor: Executor, fn: Callable[[Any], Any], items: list, limit: int | None = None) -> list:
    """``[fn(item) for item in items]`` through ``executor`` (at most ``limit`` pending), in call
    order, with the exception object in place of a failed call's result."""
    out: list = [None] * len(items)
    for (i, _), result, error in executor.imap(_indexed_call(fn), list(enumerate(items)), limit):
        out[i] = error if error is not None else result
    return out


class _indexed_call:
    """``fn`` applied to the item of an (index, item) pair (picklable: a class at module level)."""

    def __init__(self, fn: Callable[[Any], Any]):
        self.fn = fn

    def __call__(self, pair: tuple[int, Any]) -> Any:
        return self.fn(pair[1])


def _import_ray():
    """``import ray`` with Ctrl-C / SIGTERM held back until it completes (`interrupts_deferred`),
    then KeyboardInterrupt if one came: an interrupt inside the import left a partly initialised
    ``ray`` whose own exit hook (its ``shutdown``, registered early in the import) printed a
    traceback at exit (``AttributeError: partially initialized module 'ray'``; seen once with
    Ctrl-C 1.5 s after `sweep run` on 2 cores)."""
    from sweep.engine.signals import interrupts_deferred
    with interrupts_deferred() as got:
        import ray
    if got:
        raise KeyboardInterrupt
    return ray
