"""Numbers and collections as a person reads them, the same way in every command and report.

Every figure in human text (tables, summaries, CLI messages) goes through here with the same
number of significant digits (`DIGITS`); ``--json`` output keeps the raw numbers. No heavy
imports: `sweep --help` and `sweep list` stay quick.

* `energy` (pJ in): the largest of pJ, nJ, uJ, mJ, J that shows the value as at least 1, e.g.
  12_714_590_470.3 pJ -> ``12.71 mJ``;
* `cycles` (cycles in): ``950 cycles``, ``12.35 kcycles``, ``3.402 Mcycles``, ``1.000 Gcycles``;
* `edp` (pJ x cycles in): scientific, ``1.234e+18 pJ*cycles``;
* `area` (mm^2 in): ``15.87 mm^2``;
* `sig`: any number to `DIGITS` significant digits, no unit;
* `counts` (``{"ok": 72, "error": 3}`` -> ``72 ok, 3 error``) and `words` (``["edp"]`` -> ``edp``)
  in place of Python reprs;
* `print_wide`: a Rich table printed as wide as its content needs, never cut to the terminal.

None, NaN and infinities read ``n/a``, ``inf`` and ``-inf`` in every formatter.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

__all__ = ["DIGITS", "area", "bits", "counts", "cycles", "edp", "energy", "print_wide", "seconds", "sig", "words"]

#: Significant digits of every figure in human text.
DIGITS = 4

#: (scale, name) of the energy units, smallest first: values in pJ.
_ENERGY = ((1.0, "pJ"), (1e3, "nJ"), (1e6, "uJ"), (1e9, "mJ"), (1e12, "J"))
#: (scale, name) of times: values in s.
_SECONDS = ((1e-9, "ns"), (1e-6, "us"), (1e-3, "ms"), (1.0, "s"))
#: (scale, name) of data volumes: values in bits, shown in bytes (B, KB, MB, GB, TB: powers of 10).
_BYTES = ((8.0, "B"), (8e3, "kB"), (8e6, "MB"), (8e9, "GB"), (8e12, "TB"))
#: (scale, prefix) of cycle counts, smallest first.
_CYCLES = ((1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T"))


def _special(v: Any) -> str | None:
    """The text of a value that is not a finite number (None, NaN, +-inf), else None."""
    if v is None:
        return "n/a"
    f = float(v)
    if math.isnan(f):
        return "n/a"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return None


def _round_sig(v: float, digits: int) -> float:
    """``v`` rounded to ``digits`` significant digits (0 stays 0)."""
    if v == 0:
        return 0.0
    return round(v, digits - 1 - math.floor(math.log10(abs(v))))


def _fixed(v: float, digits: int) -> str:
    """``v`` (already rounded to ``digits`` significant digits) in positional notation, with
    trailing zeros kept so that every figure shows ``digits`` digits (``12.70``); integers of
    more digits as they are (``12345``)."""
    if v == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    return f"{v:.{decimals}f}"


def sig(v: Any, digits: int = DIGITS) -> str:
    """``v`` to ``digits`` significant digits: positional from 1e-3 to below 10**digits
    (``0.01235``, ``12.35``, ``1235``), scientific otherwise (``1.235e+06``, ``1.235e-05``)."""
    s = _special(v)
    if s is not None:
        return s
    r = _round_sig(float(v), digits)
    if r != 0 and not 1e-3 <= abs(r) < 10 ** digits:
        return f"{r:.{digits - 1}e}"
    return _fixed(r, digits)


def _scaled(v: Any, units: tuple[tuple[float, str], ...], digits: int) -> tuple[str, str]:
    """(number text, unit) of ``v`` in the largest unit of ``units`` that shows it as at least 1
    after rounding to ``digits`` significant digits (999.96 pJ -> 1.000 nJ)."""
    f = float(v)
    scale, name = units[0]
    for s, n in units:
        if abs(_round_sig(f / s, digits)) >= 1:
            scale, name = s, n
    return _fixed(_round_sig(f / scale, digits), digits), name


def _in_units(v: Any, units: tuple[tuple[float, str], ...], digits: int) -> str:
    """``v`` as "<number> <unit>" in the unit of ``units`` that fits (`_scaled`); n/a, inf, -inf
    for None, NaN and infinities."""
    sp = _special(v)
    if sp is not None:
        return sp
    num, unit = _scaled(v, units, digits)
    return f"{num} {unit}"


def energy(pj: Any, digits: int = DIGITS) -> str:
    """An energy given in pJ in the unit that fits: ``12.71 mJ`` for 12,714,590,470.3 pJ."""
    return _in_units(pj, _ENERGY, digits)


def seconds(s: Any, digits: int = DIGITS) -> str:
    """A time given in s in the unit that fits: ``12.35 ms`` for 0.012345 s."""
    return _in_units(s, _SECONDS, digits)


def bits(b: Any, digits: int = DIGITS) -> str:
    """A data volume given in bits, in bytes with a decimal prefix: ``16.06 GB`` for 1.285e11 bits."""
    return _in_units(b, _BYTES, digits)


def cycles(n: Any, digits: int = DIGITS) -> str:
    """A latency in cycles with a k/M/G/T prefix: ``950 cycles``, ``3.402 Mcycles``."""
    s = _special(n)
    if s is not None:
        return s
    f = float(n)
    if abs(_round_sig(f, digits)) < 1000:  # a whole number of cycles as it is, a mean over seeds to `digits` digits
        return f"{int(f) if f == int(f) else _fixed(_round_sig(f, digits), digits)} cycles"
    num, prefix = _scaled(n, _CYCLES, digits)
    return f"{num} {prefix}cycles"


def edp(v: Any, digits: int = DIGITS, unit: bool = True) -> str:
    """An energy-delay product (pJ x cycles) in scientific notation: ``1.234e+18 pJ*cycles``
    (``unit=False``: the number only, for a table whose header names the unit)."""
    s = _special(v)
    num = s if s is not None else f"{_round_sig(float(v), digits):.{digits - 1}e}"
    return f"{num} pJ*cycles" if unit and s is None else num


def area(mm2: Any, digits: int = DIGITS) -> str:
    """An area in mm^2: ``15.87 mm^2``."""
    s = _special(mm2)
    return s if s is not None else f"{sig(mm2, digits)} mm^2"


def counts(by_name: Mapping[str, Any]) -> str:
    """``{"ok": 72, "error": 3}`` as ``72 ok, 3 error`` (thousands separated; empty: ``none``)."""
    return ", ".join(f"{int(n):,} {k}" for k, n in by_name.items()) or "none"


def words(items: Iterable[Any]) -> str:
    """``["edp", "energy"]`` as ``edp, energy`` (empty: ``none``)."""
    return ", ".join(str(x) for x in items) or "none"


def print_wide(console: Any, renderable: Any) -> None:
    """Print ``renderable`` (a Rich table) on ``console``, on a console as wide as its content
    needs when that is wider than ``console`` (nothing cut or wrapped; the terminal may fold the
    long lines, a pipe or file keeps them whole); same output file, colours and markup. A table
    is made at least as wide as its title, up to ``console``'s width."""
    from rich.console import Console
    from rich.measure import Measurement

    title = getattr(renderable, "title", None)
    if isinstance(title, str) and isinstance(getattr(renderable, "min_width", None), (int, type(None))):
        # a title on one line while it fits the terminal, not folded to a narrow table's width
        renderable.min_width = max(renderable.min_width or 0, min(len(title), console.width))
    probe = Console(width=100_000, file=console.file)
    need = Measurement.get(probe, probe.options, renderable).maximum
    if need <= console.width:
        console.print(renderable)
        return
    Console(file=console.file, width=need, force_terminal=console.is_terminal, no_color=console.no_color,
            color_system=console.color_system, soft_wrap=False).print(renderable)
