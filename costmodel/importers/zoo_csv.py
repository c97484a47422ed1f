"""Network CSV files (the zoo's format, also accepted as user files) -> `Network` objects.

A network file (``costmodel/zoo/<name>.csv`` for the zoo) is:

* leading comment lines of metadata, ``# key: value``. Required keys: ``name`` (equal to the
  file's stem for zoo files), ``description``, ``source``, ``published_macs`` (an integer, total
  MACs per inference at the file's batch) and ``published_macs_source``. Optional: ``tolerance``
  (relative, for comparing our conv+FC MAC total with ``published_macs``; default 0.005) and any
  other keys (``note``, ``input``, ...). A comment line whose text is indented by two or more
  spaces (``#   more text``) continues the previous key's value; a key given twice is joined
  with a space.
* a CSV header ``name,K,C,OY,OX,FY,FX,B,G,SY,SX,PY,PX,kind,repeat`` (``repeat`` may be omitted,
  default 1; ``DY,DX`` may be added, default 1; ``in_rows,in_cols``, the unpadded input's rows
  and columns, may be added, a cell may be empty (not known); column order is free);
* one row per distinct layer. K and C are per group (see `costmodel.workload.Layer`); ``kind`` is
  ``conv``, ``fc`` (a 1x1 conv on a 1x1 map, batch in B) or ``dwconv`` (depthwise: G channels,
  C = 1 per group). PY/PX may be fractional (DeepOpt's tables use 1.5 and 2.5). ``repeat`` is how
  many times the layer runs per inference. Blank lines and ``#`` lines after the header are
  ignored.

Only convolution and fully-connected layers are listed: pooling, activations, normalisation and
element-wise adds are not, so `Network.macs` counts conv + FC multiply-accumulates only.

Public API: `parse_network_text`, `read_network_csv`, `ParsedNetwork`, `COLUMNS`,
`DEFAULT_TOLERANCE`, `REQUIRED_META`; errors: `ZooCsvError` (a ValueError).
"""

from __future__ import annotations

import csv
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from costmodel.importers.errors import ZooCsvError
from costmodel.workload import Layer, Network

__all__ = ["parse_network_text", "read_network_csv", "ParsedNetwork", "COLUMNS", "DEFAULT_TOLERANCE",
           "REQUIRED_META", "ZooCsvError"]

#: Relative tolerance used when a data file has no ``# tolerance:`` line.
DEFAULT_TOLERANCE = 0.005

#: The canonical column order of a network file.
COLUMNS = ("name", "K", "C", "OY", "OX", "FY", "FX", "B", "G", "SY", "SX", "PY", "PX", "kind", "repeat")

_REQUIRED_COLUMNS = frozenset(COLUMNS) - {"repeat"}
_OPTIONAL_COLUMNS = {"repeat": 1, "DY": 1, "DX": 1, "in_rows": None, "in_cols": None}
_INT_COLUMNS = ("K", "C", "OY", "OX", "FY", "FX", "B", "G", "SY", "SX", "DY", "DX", "repeat", "in_rows", "in_cols")
_MAY_BE_EMPTY = ("in_rows", "in_cols")
_FLOAT_COLUMNS = ("PY", "PX")
_KINDS = ("conv", "fc", "dwconv")
#: The metadata keys a zoo file must have.
REQUIRED_META = ("name", "description", "source", "published_macs", "published_macs_source")

_META_RE = re.compile(r"^ ?([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*?)\s*$")  # after the '#'
_CONT_RE = re.compile(r"^\s{2,}(\S.*?)\s*$")  # after the '#': indented text continues a value


@dataclass(frozen=True)
class ParsedNetwork:
    """A network file read: the `Network` and its metadata (see `parse_network_text`)."""

    network: Network
    info: dict


def _err(path: str, line: int, col: int | None, colname: str | None, msg: str) -> ZooCsvError:
    where = f"{path}:{line}"
    if col is not None:
        where += f": column {col} ({colname!r})"
    return ZooCsvError(f"{where}: {msg}")


def parse_network_text(text: str, path: str, default_name: str) -> ParsedNetwork:
    """Parse the text of a network file (format: the module docstring).

    Args:
        text: the file's contents. path: the file name used in error messages.
        default_name: the network's name if the file has no ``# name:`` line.

    Raises:
        ZooCsvError: (a ValueError) for a missing or bad header, a bad row or cell, no layer rows
            or bad ``published_macs`` / ``tolerance`` metadata; the message names the file and line.
    """
    lines = text.splitlines()
    meta, header_idx = _parse_meta(lines)
    if header_idx is None:
        raise ZooCsvError(f"{path}: no CSV header line found (expected {','.join(COLUMNS)})")
    header = _parse_header(lines[header_idx], path, header_idx + 1)

    layers: list[Layer] = []
    repeats: list[int] = []
    names: dict[str, int] = {}
    for i in range(header_idx + 1, len(lines)):
        raw = lines[i]
        lineno = i + 1
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        layer, repeat = _parse_row(raw, header, path, lineno, names)
        layers.append(layer)
        repeats.append(repeat)

    if not layers:
        raise ZooCsvError(f"{path}: no layer rows after the header")
    info = _network_info(meta, path, default_name)
    network = Network(info["name"], tuple(layers), tuple(repeats), meta.get("source", ""))
    return ParsedNetwork(network, info)


def _parse_meta(lines: list[str]) -> tuple[dict[str, str], int | None]:
    """The ``# key: value`` metadata before the header (continuation lines joined, a repeated key
    joined with a space) and the index of the header line (None if there is none)."""
    meta: dict[str, str] = {}
    last_key: str | None = None
    for i, raw in enumerate(lines):
        s = raw.strip()
        if not s:
            continue
        if not s.startswith("#"):
            return meta, i
        body = s[1:]
        c = _CONT_RE.match(body)
        m = None if c else _META_RE.match(body)
        if c:
            if last_key is not None:
                meta[last_key] = f"{meta[last_key]} {c.group(1)}".strip()
        elif m:
            key, val = m.group(1), m.group(2)
            meta[key] = f"{meta[key]} {val}".strip() if key in meta else val
            last_key = key
    return meta, None


def _parse_header(line: str, path: str, header_line: int) -> list[str]:
    """The column names of the CSV header (1-based line ``header_line``): known, unique, with
    every required column."""
    header = [h.strip() for h in next(csv.reader([line]))]
    seen: set[str] = set()
    for j, h in enumerate(header, start=1):
        if h not in _REQUIRED_COLUMNS and h not in _OPTIONAL_COLUMNS:
            raise _err(path, header_line, j, h, f"unknown column; expected {','.join(COLUMNS)}"
                       " (optionally DY,DX,in_rows,in_cols)")
        if h in seen:
            raise _err(path, header_line, j, h, "duplicate column")
        seen.add(h)
    missing = sorted(_REQUIRED_COLUMNS - seen, key=COLUMNS.index)
    if missing:
        raise ZooCsvError(f"{path}:{header_line}: header lacks column(s) {', '.join(missing)}")
    return header


def _parse_row(raw: str, header: list[str], path: str, lineno: int, names: dict[str, int]) -> tuple[Layer, int]:
    """(layer, repeat) of one data row (1-based line ``lineno``). ``names``: layer name -> line of
    the rows so far (checked for duplicates, updated)."""
    cells = [c.strip() for c in next(csv.reader([raw]))]
    if len(cells) != len(header):
        raise ZooCsvError(f"{path}:{lineno}: expected {len(header)} columns, got {len(cells)}")
    row: dict[str, object] = dict(_OPTIONAL_COLUMNS)
    for j, (col, cell) in enumerate(zip(header, cells), start=1):
        row[col] = _parse_cell(cell, col, path, lineno, j)

    def colerr(col: str, msg: str) -> ZooCsvError:
        return _err(path, lineno, header.index(col) + 1, col, msg)

    lname = cast(str, row["name"])   # the name column is parsed as its text
    if lname in names:
        raise colerr("name", f"duplicate layer name {lname!r} (first on line {names[lname]})")
    names[lname] = lineno
    kind = row["kind"]
    if kind == "fc":
        for col in ("OY", "OX", "FY", "FX", "SY", "SX", "G"):
            if row[col] != 1:
                raise colerr(col, f"an fc layer needs {col} = 1, got {row[col]!r}")
    if kind == "dwconv" and row["C"] != 1:
        raise colerr("C", f"a dwconv layer has C = 1 per group (G = channels), got {row['C']!r}")
    repeat = row.pop("repeat")
    try:
        layer = Layer(**row)  # type: ignore[arg-type]
    except (TypeError, ValueError) as e:
        raise ZooCsvError(f"{path}:{lineno}: {e}") from None
    return layer, repeat  # type: ignore[return-value]


def _parse_cell(cell: str, col: str, path: str, lineno: int, j: int) -> object:
    """The value of one cell of column ``col`` (1-based column ``j``): a positive int, a finite
    float >= 0 (an int if integral), a layer kind or, for ``name``, the text."""
    if cell == "" and col in _MAY_BE_EMPTY:
        return None
    if cell == "":
        raise _err(path, lineno, j, col, "empty value")
    if col in _INT_COLUMNS:
        try:
            v = int(cell)
        except ValueError:
            raise _err(path, lineno, j, col, f"not an integer: {cell!r}") from None
        if v < 1:
            raise _err(path, lineno, j, col, f"must be a positive integer, got {cell!r}")
        return v
    if col in _FLOAT_COLUMNS:
        try:
            f = float(cell)
        except ValueError:
            raise _err(path, lineno, j, col, f"not a number: {cell!r}") from None
        if not (f >= 0) or f == float("inf"):
            raise _err(path, lineno, j, col, f"must be a finite number >= 0, got {cell!r}")
        return int(f) if f.is_integer() else f
    if col == "kind" and cell not in _KINDS:
        raise _err(path, lineno, j, col, f"must be one of {'|'.join(_KINDS)}, got {cell!r}")
    return cell  # kind or name


def _network_info(meta: dict[str, str], path: str, default_name: str) -> dict:
    """The info dict: the metadata with ``name`` (default ``default_name``), ``published_macs`` as
    an int (if given), ``tolerance`` as a float >= 0 (default `DEFAULT_TOLERANCE`) and ``path``."""
    info: dict = dict(meta)
    info["name"] = meta.get("name", default_name)
    if "published_macs" in meta:
        try:
            info["published_macs"] = int(meta["published_macs"].replace("_", ""))
        except ValueError:
            raise ZooCsvError(f"{path}: published_macs must be an integer, got {meta['published_macs']!r}") from None
    try:
        info["tolerance"] = float(meta["tolerance"]) if "tolerance" in meta else DEFAULT_TOLERANCE
    except ValueError:
        raise ZooCsvError(f"{path}: tolerance must be a number, got {meta['tolerance']!r}") from None
    if not info["tolerance"] >= 0:
        raise ZooCsvError(f"{path}: tolerance must be >= 0, got {meta['tolerance']!r}")
    info["path"] = path
    return info


def read_network_csv(path: str | os.PathLike) -> ParsedNetwork:
    """Read a network CSV file (`parse_network_text`; the name defaults to the file's stem).

    Raises:
        ZooCsvError: an unreadable file, or as `parse_network_text`.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ZooCsvError(f"{p}: cannot read network file: {e}") from None
    return parse_network_text(text, str(p), p.stem)
