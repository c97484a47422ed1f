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
  shuts down a Ray it started, which ends what is still pending.

Ctrl-C and SIGTERM while Ray runs (`sweep.engine.signals.interrupts_flagged`): the first only
raises a flag, read between Ray calls (`ray.wait` waits in slices of `POLL_S`), never a
KeyboardInterrupt inside one; `imap` then yields the calls finished by that moment and raises
KeyboardInterrupt in the caller's loop, which stores them; leaving the ``with`` block shuts Ray
down (about 2 s on 2 cores) and ends whatever the local Ray left running (`_RayProcesses`). No
`ray.cancel`: its forced form raced with a task completing and aborted the driver (the Check
failed of `sweep.engine.signals`); a driver's shutdown ends its job, and Ray's raylets then stop
that job's workers (Ray's ``NodeManager::HandleJobFinished``). A second signal ends the process at
once with exit 130 after killing the local Ray's processes.

A lost cluster (the head node gone: the driver's raylet broke its pipe, or the GCS stopped answering
while the driver waited, `PROBE_S`) raises `ClusterLostError` from `imap` at once, after the calls
finished by then were yielded; leaving the ``with`` block then cancels and shuts down nothing.

A call that raises (or whose worker died more than ``max_retries`` times) yields its exception as
``error`` and the stream goes on: the caller decides what a failure means (an error row for
`sweep run`, a failed trial for `sweep tune`). The calls are deterministic, so results do not
depend on the executor; `ordered` collects them in call order.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from typing import Any, Callable, Iterable, Iterator

__all__ = ["Executor", "Later", "ordered", "TIMERS", "EXECUTORS", "POLL_S"]

#: The executor kinds.
EXECUTORS = ("ray", "local")

#: Where the driver's time goes, in seconds, accumulated in ``Executor.timers``:
#: ``submit_s`` creating Ray tasks (serialising their arguments), ``wait_s`` blocked in
#: ``ray.wait`` (the cluster computing, scheduling), ``get_s`` fetching and deserialising results,
#: ``compute_s`` the calls' own run time summed over workers (CPU-seconds of useful work).
TIMERS = ("submit_s", "wait_s", "get_s", "compute_s")

#: Seconds `ray.wait` blocks at most before the driver reads its interrupt flag again: how late a
#: Ctrl-C is noticed while no call finishes.
POLL_S = 0.2
#: Seconds the processes of a local Ray get, after `ray.shutdown`, to end on SIGTERM before SIGKILL.
REAP_S = 3.0
#: While no call finishes, the GCS is asked every this many seconds whether it still answers; the
#: second silence in a row means the head node is lost (`ClusterLostError`).
PROBE_S = 3.0


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


class Later(Exception):
    """Raised by the iterator `Executor.imap` reads its items from: no item can be given until a
    pending call finishes (`imap` asks again after yielding the next result; with no call pending
    it is an error)."""


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
        self._procs = _RayProcesses()
        self._signals = contextlib.ExitStack()
        self.flag: Any = None   # the interrupt flag while Ray runs (`interrupts_flagged`)
        self.lost = False       # the cluster went away (`ClusterLostError`)
        self._silent = 0        # GCS probes in a row that got no answer

    def __enter__(self) -> "Executor":
        if self.name == "ray":
            from sweep.engine.signals import interrupts_flagged
            ray = _import_ray()
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            self.flag = self._signals.enter_context(interrupts_flagged())
            self.flag.at_forced_exit.append(self._procs.kill)
            try:
                if not ray.is_initialized():
                    self._start_ray(ray)
                self._remote = ray.remote(_timed).options(max_retries=self.max_retries, retry_exceptions=False)
            except BaseException:
                self._signals.close()
                self.flag = None
                raise
        return self

    def _start_ray(self, ray) -> None:
        """`ray.init` with Ctrl-C / SIGTERM only flagged until it returns (`interrupts_flagged`,
        entered by `__enter__`): a KeyboardInterrupt inside it left a half-started driver that
        segfaulted at exit (exit 139, 1 run in 3 with Ctrl-C 2.3-2.6 s after `sweep run` on 2
        cores). A flagged signal then stops the fully started Ray and raises KeyboardInterrupt (exit
        130); a second one meanwhile ends the process at once. The processes a new local Ray starts
        are noted (`_RayProcesses`) so that none outlives it."""
        from sweep.engine import cluster
        kw = dict(include_dashboard=False, log_to_driver=True, configure_logging=False)
        if self.address:  # the cluster's token as Ray finds it; one line if it cannot be joined
            with _quiet_token_notice():
                cluster.use_available_token()
            cluster.check_reachable(self.address)
        if self.flag:  # a signal before Ray starts: do not start it
            raise KeyboardInterrupt
        with _quiet_token_notice():
            try:
                if self.address:
                    ray.init(address=self.address, **kw)
                else:  # "local": a new Ray, whatever ray_current_cluster names or runs beside
                    self._procs.before = _children(os.getpid())
                    try:
                        ray.init(address="local", num_cpus=self.num_cpus, **kw)
                    finally:
                        self._procs.roots = _children(os.getpid()) - self._procs.before
                        self._procs.before = None
                self._started = True
            except Exception as e:
                if not self.flag:  # a real start-up failure, not the interrupt's side effect
                    if self.address:
                        raise cluster.connect_failed(self.address, e) from None
                    raise
        if self.flag:
            self._started = self._started or ray.is_initialized()  # (ray.init may have half-connected)
            self._stop_ray(ray)
            raise KeyboardInterrupt

    def _stop_ray(self, ray) -> None:
        """Shut down a Ray this executor started, then end what the local Ray left running
        (`_RayProcesses.reap`). Meanwhile a first Ctrl-C is only flagged (the run is stopping anyway)
        and, once one came, the next ends the process at once (`interrupts_flagged`). A Ray started
        by someone else stays up: the calls still pending there are cancelled (not forced:
        ``ray.cancel(force=True)`` races with a call completing, module docstring)."""
        if self.lost:   # every call to the GCS would wait on a head that is gone
            self._pending, self._started = [], False
            self._procs.kill()
            return
        if not self._started:
            for ref in self._pending:
                ray.cancel(ref)
        self._pending = []
        if self._started:
            ray.shutdown()
            self._started = False
        self._procs.reap()

    def __exit__(self, *exc) -> bool:
        if self.name == "ray":
            import ray
            try:
                self._stop_ray(ray)
            finally:
                self._signals.close()
                self.flag = None
        return False

    def _beat(self) -> None:
        if self.beat is not None:
            self.beat()

    def imap(self, fn: Callable[[Any], Any], items: Iterable[Any], limit: int | None = None
             ) -> Iterator[tuple[Any, Any, BaseException | None]]:
        """``(item, fn(item), None)``, or ``(item, None, error)`` for a call that failed, in
        completion order, with at most ``limit`` (default ``max_in_flight``) calls pending.
        ``fn`` must be a module-level function (Ray sends it by reference). ``items`` is read
        lazily, one item whenever a call may start; its ``__next__`` may raise `Later` (nothing to
        start until a pending call finishes: it is asked again after the next result).

        Raises:
            KeyboardInterrupt: (Ray) a Ctrl-C or SIGTERM came (module docstring): raised after the
                calls finished by then are yielded, or at once if it came before this call; calls
                that failed after it are not yielded (a worker stopped with the run is no failure
                of its call; ``--resume`` runs them again)."""
        if self.name == "local":
            yield from self._imap_local(fn, items)
        else:
            yield from self._imap_ray(fn, items, limit)

    def _imap_local(self, fn, items):
        it = iter(items)
        while True:
            try:
                item = next(it)
            except StopIteration:
                return
            except Later:   # nothing pending here: an item source that waits on none is stuck
                raise RuntimeError("imap: the items said Later with no call pending") from None
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

        if self.flag:
            raise KeyboardInterrupt
        limit = limit or self.max_in_flight or max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        by_ref: dict = {}
        it = iter(items)
        exhausted = False
        tm = self.timers
        last_beat = time.monotonic()
        while True:
            t0 = time.perf_counter()
            while not exhausted and len(by_ref) < limit and not self.flag:
                try:
                    item = next(it, _END)
                except Later:
                    if not by_ref:
                        raise RuntimeError("imap: the items said Later with no call pending") from None
                    break   # asked again once a call finishes
                if item is _END:
                    exhausted = True
                    break
                by_ref[self._remote.remote(fn, item)] = item
            t1 = time.perf_counter()
            tm["submit_s"] += t1 - t0
            self._pending = list(by_ref)
            if not by_ref:
                if self.flag:
                    raise KeyboardInterrupt
                return
            done = self._wait(ray, len(by_ref), 0)
            quiet_since = time.monotonic()
            while not done and not self.flag:
                done = self._wait(ray, 1, POLL_S)
                if self.beat and time.monotonic() - last_beat >= self.beat_s:
                    self._beat()
                    last_beat = time.monotonic()
                if not done and time.monotonic() - quiet_since >= PROBE_S:
                    self._probe(ray)
                    quiet_since = time.monotonic()
            if self.flag:  # everything finished by now is the caller's to store, then stop
                done = self._wait(ray, len(by_ref), 0)
            tm["wait_s"] += time.perf_counter() - t1
            yield from self._results(ray, done, by_ref)
            if self.beat:
                self._beat()
                last_beat = time.monotonic()
            if self.flag:
                self._pending = list(by_ref)
                raise KeyboardInterrupt

    def _wait(self, ray, n: int, timeout: float) -> list:
        """``ray.wait`` on the pending calls; a driver whose raylet is gone (the head node lost:
        "Broken pipe") raises `ClusterLostError`."""
        try:
            return ray.wait(self._pending, num_returns=n, timeout=timeout)[0]
        except (OSError, ray.exceptions.RaySystemError) as e:
            raise self._lost(e) from None

    def _probe(self, ray) -> None:
        """Raise `ClusterLostError` if the GCS did not answer twice in a row (`PROBE_S`)."""
        from sweep.engine.cluster import gcs_answers
        try:
            gcs = ray.get_runtime_context().gcs_address
        except Exception:  # noqa: BLE001 - no address to ask: nothing to probe
            return
        if gcs_answers(gcs):
            self._silent = 0
            return
        self._silent += 1
        if self._silent >= 2:
            raise self._lost(ConnectionError(f"its GCS at {gcs} does not answer"))

    def _lost(self, cause: BaseException):
        """The `ClusterLostError` of a lost cluster; from now on nothing is cancelled or shut down
        (the calls to a lost GCS would hang)."""
        from sweep.common.errors import ClusterLostError
        self.lost = True
        self._pending = []
        where = self.address or "this machine (a local Ray)"
        why = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
        return ClusterLostError(f"the Ray cluster at {where} was lost ({why}); what finished before is stored")

    def _results(self, ray, done: list, by_ref: dict):
        """``(item, result, error)`` of the finished calls ``done`` (removed from ``by_ref``); once
        the interrupt flag is up, only the calls that succeeded."""
        tm = self.timers
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
            if error is None or not self.flag:
                yield item, result, error


class _RayProcesses:
    """The processes a new local Ray started in this driver (``roots``: its direct children that
    appeared during `ray.init`: the GCS, the raylet, the log monitor, ...) and theirs (workers,
    the dashboard and runtime-env agents). Linux (``/proc``); elsewhere it does nothing."""

    def __init__(self) -> None:
        self.roots: set[int] = set()
        self.before: set[int] | None = None   # this driver's children before `ray.init` (while it runs)

    def _tree(self) -> dict[int, str]:
        """pid -> start time (``/proc/PID/stat`` field 22) of every live process of the tree."""
        procs = _proc_table()
        out: dict[int, str] = {}
        todo = [p for p in self.roots if p in procs]
        while todo:
            pid = todo.pop()
            if pid in out:
                continue
            out[pid] = procs[pid][1]
            todo += [c for c, (ppid, _) in procs.items() if ppid == pid]
        return out

    def reap(self, grace_s: float = REAP_S) -> list[int]:
        """End what is still running after `ray.shutdown` (normally nothing): SIGTERM, then SIGKILL
        after ``grace_s`` seconds. Returns the pids it signalled."""
        tree = self._tree()
        if not tree:
            self.roots = set()
            return []
        _signal_all(tree, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and _alive(tree):
            time.sleep(0.05)
        _signal_all(_alive(tree), signal.SIGKILL)
        self.roots = set()
        return sorted(tree)

    def kill(self) -> None:
        """SIGKILL every process of the tree at once (a forced exit; during `ray.init`, the
        children this driver has gained since it began, and theirs)."""
        if not self.roots and self.before is not None:
            self.roots = _children(os.getpid()) - self.before
        _signal_all(self._tree(), signal.SIGKILL)


def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, start time) of every process but zombies, from ``/proc`` ({} without it)."""
    out: dict[int, tuple[int, str]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] not in ("Z", "X"):
            out[int(name)] = (int(fields[1]), fields[19])
    return out


def _children(pid: int) -> set[int]:
    """The live child processes of ``pid``."""
    return {c for c, (ppid, _) in _proc_table().items() if ppid == pid}


def _alive(tree: dict[int, str]) -> dict[int, str]:
    """The processes of ``tree`` (pid -> start time) still running (same pid, same start time)."""
    now = _proc_table()
    return {p: t for p, t in tree.items() if p in now and now[p][1] == t}


def _signal_all(tree: dict[int, str], sig: int) -> None:
    for pid in _alive(tree):
        try:
            os.kill(pid, sig)
        except OSError:
            pass


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
