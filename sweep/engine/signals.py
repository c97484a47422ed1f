"""Signals of a driver process: SIGTERM stops a run like Ctrl-C (`sigterm_as_interrupt`)."""

from __future__ import annotations

import contextlib
import signal
from typing import Iterator

__all__ = ["sigterm_as_interrupt"]


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
