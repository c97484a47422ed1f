"""One writer per result directory: an advisory lock on ``DIR/.lock``.

Every command that writes a directory (``sweep run`` and ``--resume``, ``rerun``, ``compact``; a
report that finishes an interrupted commit) holds an exclusive ``flock`` on ``DIR/.lock`` while it
writes; the file names the holder (pid, host, command, start time) so that a refusal can say who
it is. The kernel drops the lock when its process ends, however it ends (SIGKILL included), so a
crashed run never leaves the directory locked. ``sweep tune``'s drivers share a directory by
design (one Optuna study, several drivers): each takes the lock only around its own commits.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path

from sweep.common.errors import StoreBusyError, StoreIOError

__all__ = ["LOCK", "WriterLock"]

LOCK = ".lock"


class WriterLock:
    """The exclusive writer lock of directory ``root`` (which must exist).

    Args:
        root: the result directory.
        command: what the holder is doing, shown to a refused writer (default: this process's
            command line).
    """

    def __init__(self, root: Path, command: str | None = None):
        self.path = Path(root) / LOCK
        self.command = command or " ".join(["sweep"] + sys.argv[1:])[:200]
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder(self) -> str:
        """Who holds the lock, as the lock file says: ``pid 123 on host h (`sweep run ...`, since
        01:02:03)``, or "another process" if the file says nothing readable."""
        try:
            h = json.loads(self.path.read_text() or "{}")
            since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(h["since"])))
            return f"pid {h['pid']} on host {h['host']} (`{h['command']}`, since {since})"
        except (OSError, ValueError, KeyError, TypeError):
            return "another process"

    def acquire(self, wait_s: float = 0.0) -> bool:
        """Take the lock, waiting up to ``wait_s`` seconds for a holder to let go. Re-entrant.

        Returns:
            True if this call took it, False if it was already held by this object.

        Raises:
            StoreBusyError: another process holds it (its pid, host and command named).
            StoreIOError: the lock file cannot be created (a read-only directory, no permission).
        """
        if self._fd is not None:
            return False
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise StoreIOError(f"{self.path.parent}: cannot write into the result directory "
                               f"({e.strerror or type(e).__name__}); nothing was changed") from None
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() >= deadline:
                    os.close(fd)
                    if e.errno not in (errno.EAGAIN, errno.EACCES):
                        raise StoreIOError(f"{self.path}: cannot lock ({e.strerror}); nothing was changed") from None
                    raise StoreBusyError(f"{self.path.parent}: in use by {self.holder()}; one command writes a "
                                         "result directory at a time: wait for it to end, or stop it (its "
                                         "results stay and --resume completes them)") from None
                time.sleep(0.05)
        self._fd = fd
        me = {"pid": os.getpid(), "host": socket.gethostname(), "command": self.command, "since": time.time()}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(me).encode(), 0)
        except OSError:
            pass   # the lock holds without its note (a full disk): a refusal then says "another process"
        return True

    def release(self) -> None:
        """Let go of the lock (the file stays: removing it would race with a waiting writer)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def is_free(self) -> bool:
        """Whether no other process holds the lock now (True if this object holds it, or if the
        directory cannot be locked at all). Takes and drops it; changes nothing."""
        if self._fd is not None or not self.path.parent.is_dir():
            return True
        try:
            fd = os.open(self.path, os.O_RDONLY) if self.path.exists() else None
        except OSError:
            return True
        if fd is None:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return True
        except OSError:
            return False
        finally:
            os.close(fd)
