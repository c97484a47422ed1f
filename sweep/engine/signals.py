"""Signals of a driver process: SIGTERM stops a run like Ctrl-C (`sigterm_as_interrupt`); Ctrl-C
waits until an import that must not be cut in half has completed (`interrupts_deferred`); while
Ray starts, runs and stops, the first Ctrl-C only raises a flag the driver's loop reads between Ray
calls and a second one ends the process at once (`interrupts_flagged`).

Why a flag: a KeyboardInterrupt raised inside Ray's calls in the driver (`ray.wait`, `ray.get`,
submitting a task), and the `ray.cancel(force=True)` that followed it, raced with Ray's core
worker completing a task: Ray 2.60 aborted the driver with ``task_manager.cc: Check failed: it !=
submissible_tasks_.end() Tried to complete task that was not pending`` (exit 1, no resume line,
the dashboard and runtime-env agents left running; 2 of 21 Ctrl-Cs sent 0.3-0.7 s after a run's
first fragment, 2 cores).
"""

from __future__ import annotations

import contextlib
import os
import signal
from typing import Callable, Iterator

__all__ = ["sigterm_as_interrupt", "interrupts_deferred", "interrupts_flagged", "Flag", "FORCED_EXIT_CODE",
           "set_forced_exit_note"]

#: The exit code of a run stopped by a second Ctrl-C (or SIGTERM): 128 + SIGINT, as a shell reports
#: a process ended by Ctrl-C, and as a first Ctrl-C ends a run once its work is stored.
FORCED_EXIT_CODE = 130

_NOTE = ["interrupted again: stopped at once; what was stored so far stays and --resume completes it"]


def set_forced_exit_note(text: str) -> None:
    """The line a second Ctrl-C prints before the process ends (`interrupts_flagged`), e.g. with the
    command that resumes the run."""
    _NOTE[0] = text


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM (a batch scheduler, `kill`, `timeout`) acts as Ctrl-C does at that
    moment: it calls the SIGINT handler in force (under `interrupts_flagged`: a raised flag, then a
    forced exit) or, with Python's default one, raises KeyboardInterrupt in the main thread; so a
    run stops as on Ctrl-C: finished work is stored and the run is resumable. Enter it after Ray
    has started, so it replaces Ray's own handler for the driver; the previous handler is restored
    afterwards. Outside the main thread it does nothing."""
    def handler(signum, frame):
        act = signal.getsignal(signal.SIGINT)
        if callable(act) and act is not signal.default_int_handler:
            act(signum, frame)
            return
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


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[list[int]]:
    """Within the block, SIGINT (Ctrl-C) and SIGTERM are recorded instead of acted on; the list it
    yields holds the signals that arrived, in order. For work that must not be cut in half:
    importing the command line or ``ray`` (a KeyboardInterrupt inside a compiled module's import
    can be swallowed there, or leave a partly initialised module whose exit hook fails). The caller
    acts on the recorded signals once the block is done (e.g. raise KeyboardInterrupt). Ray itself is
    started and stopped under `interrupts_flagged` (a KeyboardInterrupt inside `ray.init` left a
    half-connected core worker that crashed the interpreter at exit: exit 139, issue 23). The
    previous handlers are restored afterwards. Outside the main thread it does nothing (the list
    stays empty)."""
    got: list[int] = []
    with _handling(lambda signum, frame: got.append(signum), keep_ignored=False):
        yield got


@contextlib.contextmanager
def _handling(handler: Callable, keep_ignored: bool) -> Iterator[None]:
    """Install ``handler`` for SIGINT and SIGTERM within the block (not over a SIG_IGN when
    ``keep_ignored``), restoring the previous handlers after; outside the main thread, nothing."""
    previous = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            if not (keep_ignored and signal.getsignal(sig) is signal.SIG_IGN):
                previous[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread
        for sig, h in previous.items():
            signal.signal(sig, h)
        previous = {}
    try:
        yield
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)


class Flag:
    """The signals (SIGINT, SIGTERM) a driver received while `interrupts_flagged` held, in order, and
    what to do before a forced exit (``at_forced_exit``: callables run in order, errors ignored)."""

    def __init__(self) -> None:
        self.signals: list[int] = []
        self.at_forced_exit: list[Callable[[], None]] = []

    def __bool__(self) -> bool:
        return bool(self.signals)

    def force_exit(self) -> None:
        """Run ``at_forced_exit`` (e.g. kill the local Ray's processes), print the note
        (`set_forced_exit_note`) on stderr and end the process with `FORCED_EXIT_CODE`, without
        unwinding (no traceback, no exit hooks: Ray's would wait for what is being stopped).
        Fragments being written are lost whole, never half (`sweep.engine.store`: written aside,
        then renamed)."""
        for fn in self.at_forced_exit:
            try:
                fn()
            except Exception:  # noqa: BLE001 - exiting anyway
                pass
        try:
            os.write(2, ("\n" + _NOTE[0] + "\n").encode())
        finally:
            os._exit(FORCED_EXIT_CODE)


@contextlib.contextmanager
def interrupts_flagged() -> Iterator[Flag]:
    """Within the block, the first SIGINT (Ctrl-C) or SIGTERM only records itself in the `Flag` it
    yields (nothing is raised, so never inside a Ray call); the driver's loop reads the flag between
    its Ray calls, stores what has finished and stops (`sweep.engine.executor.Executor`). A second
    one calls `Flag.force_exit`: exit 130 at once. A SIGINT ignored when the block starts (a job
    started in the background by a shell without job control) stays ignored. The previous handlers
    are restored afterwards. Outside the main thread it does nothing (the flag stays down)."""
    flag = Flag()

    def handler(signum, frame):
        if flag.signals:
            flag.force_exit()
        flag.signals.append(signum)
    with _handling(handler, keep_ignored=True):
        yield flag
