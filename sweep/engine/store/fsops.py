"""The file-system operations of a result directory, each durable and each through one hook.

Every change the store makes to a directory is one of these calls: `write` (a new file's bytes,
flushed and fsynced), `replace` (an atomic rename), `unlink`, `fsync_dir` (so a rename or an unlink
survives a power cut), `mkdir`. Before each, `HOOK` (None in normal use) is called with the
operation's name and path; a crash test sets it to count the operations and end the process at the
N-th (``"write"`` is announced twice: before the first byte, ``"write-half"`` after half the bytes,
a torn write), or to raise an ``OSError`` (a full disk, a read-only remount). SQLite's test VFS
does the same for its journal (https://sqlite.org/testing.html, "crash testing").

An ``OSError`` of the file system becomes `StoreIOError` naming the path and the cause: one line,
exit 1 at the command line, the directory left as the last completed commit made it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from sweep.common.errors import StoreIOError

__all__ = ["HOOK", "write", "append", "truncate", "replace", "unlink", "fsync_dir", "mkdir", "io_error"]

#: Called as HOOK(operation, path) before each operation; None: no test is watching.
HOOK: Callable[[str, Path], None] | None = None


def _at(op: str, path: Path) -> None:
    if HOOK is not None:
        HOOK(op, path)


def io_error(path: Path, e: OSError, doing: str) -> StoreIOError:
    """The one-line error of a failed operation: ``PATH: cannot DOING (CAUSE)``, and what stays."""
    cause = e.strerror or type(e).__name__
    return StoreIOError(f"{path}: cannot {doing} ({cause}); what was committed before stays and the "
                        "directory can be resumed once the cause is fixed")


def write(path: Path, data: bytes, mode: str = "wb") -> None:
    """Create ``path`` (replacing a file of that name) holding ``data``, flushed and fsynced
    (``mode`` "ab": append ``data`` to it instead).

    Raises:
        StoreIOError: the file system refused (no space, read-only, permissions).
    """
    try:
        _at("write", path)
        with open(path, mode) as f:
            half = len(data) // 2
            f.write(data[:half])
            if HOOK is not None:
                f.flush()
                _at("write-half", path)
            f.write(data[half:])
            f.flush()
            _at("fsync", path)
            os.fsync(f.fileno())
    except OSError as e:
        raise io_error(path, e, "write") from None


def append(path: Path, data: bytes) -> None:
    """Append ``data`` to ``path``, flushed and fsynced (`write`; a crash inside leaves a prefix of
    ``data`` at the end).

    Raises:
        StoreIOError: the file system refused.
    """
    write(path, data, "ab")


def truncate(path: Path, size: int) -> None:
    """Cut ``path`` to its first ``size`` bytes and fsync it.

    Raises:
        StoreIOError: the file system refused.
    """
    def cut() -> None:
        with open(path, "r+b") as f:
            f.truncate(size)
            f.flush()
            os.fsync(f.fileno())
    _do("truncate", path, "truncate", cut)


def _do(op: str, path: Path, doing: str, fn: Callable[[], object]) -> None:
    """``fn()`` announced to `HOOK` as ``op`` on ``path``; an OSError becomes `io_error`."""
    try:
        _at(op, path)
        fn()
    except OSError as e:
        raise io_error(path, e, doing) from None


def replace(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst`` atomically (POSIX ``rename``), replacing ``dst``.

    Raises:
        StoreIOError: the file system refused.
    """
    _do("rename", dst, "rename into place", lambda: os.replace(src, dst))


def unlink(path: Path) -> None:
    """Remove ``path`` if it exists.

    Raises:
        StoreIOError: the file system refused.
    """
    _do("unlink", path, "remove", lambda: path.unlink(missing_ok=True))


def fsync_dir(path: Path) -> None:
    """fsync a directory, so that the renames and removals in it are durable.

    Raises:
        StoreIOError: the file system refused.
    """
    try:
        _at("fsync", path)
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        raise io_error(path, e, "open") from None
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (22,):   # EINVAL: a file system without directory fsync
            raise io_error(path, e, "fsync") from None
    finally:
        os.close(fd)


def mkdir(path: Path) -> None:
    """Create ``path`` and its parents if missing.

    Raises:
        StoreIOError: the file system refused.
    """
    if not path.is_dir():
        _do("mkdir", path, "create the directory", lambda: path.mkdir(parents=True, exist_ok=True))
