"""Signals of a driver process: SIGTERM stops a run like Ctrl-C (`sigterm_as_interrupt`); Ctrl-C
waits until Ray has finished starting or stopping (`interrupts_deferred`)."""

from __future__ import annotations

import contextlib
import signal
from typing import Iterator

__all__ = ["sigterm_as_interrupt", "interrupts_deferred"]


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM (a batch scheduler, `kill`, `timeout`) raises KeyboardInterrupt
    in the main thread, so a run stops as on Ctrl-C: finished work is stored and the run is
    resumable. Enter it after Ray has started, so it replaces Ray's own handler for the driver;
    the previous handler is restored afterwards. Outside the main thread it does nothing."""
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


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[list[int]]:
    """Within the block, SIGINT (Ctrl-C) and SIGTERM are recorded instead of acted on; the list it
    yields holds the signals that arrived, in order. For work that must not be cut in half:
    starting or stopping Ray in the driver, where a KeyboardInterrupt raised inside `ray.init`
    leaves a half-connected core worker that crashes the interpreter at exit (exit 139 instead of
    130, issue 23). The caller acts on the recorded signals once the block is done (e.g. shut Ray
    down, then raise KeyboardInterrupt). The previous handlers are restored afterwards. Outside the
    main thread it does nothing (the list stays empty)."""
    got: list[int] = []

    def handler(signum, frame):
        got.append(signum)
    previous = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread
        yield got
        return
    try:
        yield got
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)
