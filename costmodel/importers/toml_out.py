"""The one TOML writer of dse-sweep: accelerator files (`sweep import zigzag`, the design files of
`sweep report`), tuned parameters (`sweep tune`'s best_params.toml) and single TOML values on a
command line (``sweep map --param KEY=VALUE``).

Everything goes through `tomli_w` (strings, keys, escapes, tables, arrays of tables), so every text
written here reads back with `tomllib` to what was given (tests: `tests/costmodel/importers/
test_toml_out.py`). What this module adds:

* values made plain first: NumPy scalars -> Python scalars (``.item()``), tuples -> lists, and a
  ``None`` value in a table left out (TOML has no null);
* arrays on one line: tomli-w writes one element per line; with ``multiline_strings`` off (always
  here) a raw newline in its output is never inside a string (a newline in a string is written
  ``\\n``), so each ``[`` / ``,`` + newline + indent is joined back: ``[["K", 16]]``;
* a comment header: each line of ``header`` as ``# line`` before the first key (control characters
  other than the tab, which TOML forbids in comments, written as ``\\uXXXX``).

Public API: `dumps`, `write`, `value`.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomli_w

__all__ = ["dumps", "write", "value"]

# characters TOML forbids in a comment (control characters but the tab): written as \uXXXX
_NOT_IN_COMMENT = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# tomli-w's structural line breaks of an array: after "[", between elements, before "]"
_BREAK = re.compile(r"(\[|,)\n *(\])?")


def _plain(v: Any) -> Any:
    """``v`` with NumPy scalars as Python scalars, tuples as lists, table keys as ``str(key)`` and None
    values of tables left out."""
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items() if x is not None}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if not isinstance(v, (bool, int, float, str)) and hasattr(v, "item"):  # a NumPy scalar
        return v.item()
    return v


def _one_line(text: str) -> str:
    def join(m: re.Match) -> str:
        if m.group(2):                         # ",\n]": the trailing comma and the close
            return "]"
        return "[" if m.group(1) == "[" else ", "
    return _BREAK.sub(join, text)


def dumps(d: Mapping[str, Any], header: str = "") -> str:
    """The TOML text of the table ``d`` (nested tables as ``[name]``, lists of tables as
    ``[[name]]``, arrays on one line), after ``header`` as comment lines (``# ...``).

    Raises:
        TypeError: a value TOML cannot hold (e.g. an object, or a table key that is not a string).
    """
    lines = [_NOT_IN_COMMENT.sub(lambda m: f"\\u{ord(m.group()):04x}", ln) for ln in header.splitlines()]
    head = "".join(f"# {ln}\n" if ln else "#\n" for ln in lines)
    return head + _one_line(tomli_w.dumps(_plain(d)))


def value(v: Any) -> str:
    """One TOML value on one line, as ``KEY = <this>`` or ``--param KEY=<this>`` reads it:
    ``true``, ``3``, ``0.5``, ``"a \\"b\\""``, ``["x", 1]``, ``{ a = 1 }``.

    Raises:
        TypeError: a value TOML cannot hold (``None`` included).
    """
    if v is None:
        raise TypeError("cannot write None as a TOML value (TOML has no null)")
    # wrapped twice: a list of lists is never an array of tables, so tomli-w writes it (and every
    # table inside it) inline
    return _one_line(tomli_w.dumps({"v": [[_plain(v)]]}))[len("v = [["):-len("]]\n")]


def write(path: str | os.PathLike, d: Mapping[str, Any], header: str = "") -> Path:
    """Write `dumps` of ``d`` to ``path`` atomically (a temp file in the same folder, then renamed:
    a reader never sees half a file). Returns ``path``.

    Raises:
        TypeError: as `dumps`. OSError: the folder cannot be written.
    """
    path = Path(path)
    text = dumps(d, header)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
