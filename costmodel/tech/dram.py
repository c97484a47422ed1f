"""DRAM kinds as a design parameter: bandwidth, energy per bit and interface area, each figure with
its source (``costmodel/data/dram_kinds.csv``, one row per figure with a source and a status:
published, estimate or choice).

Kinds (`DRAM_KINDS`) and the unit that scales:

=======  =======================  ========  ========  ===============  ==========  =======  ======
kind     unit                     GB/s      pJ/bit    PHY mm^2 / unit  GiB / unit  default  range
=======  =======================  ========  ========  ===============  ==========  =======  ======
lpddr5   x16 channel, 6400 MT/s   12.8      5.0 (e)   0.725 (e)        2           4        1..32
ddr5     64-bit channel, 4800     38.4      14.0 (e)  2.9 (e)          32 (c)      2        1..12
hbm2e    stack, 1024 x 3.2 Gb/s   409.6     3.9 (e)   10.45 (e)        16          1        1..8
hbm3     stack, 1024 x 6.4 Gb/s   819.2     3.9 (e)   10.45 (e)        16          1        1..8
=======  =======================  ========  ========  ===============  ==========  =======  ======

(e) = an estimate, (c) = our choice; `DramSpec.sources` and ``estimates`` say whose and from what. Bandwidths are the
JEDEC speed grades (JESD209-5, JESD79-5, JESD235C, JESD238). Energies: HBM2's 3.9 pJ/bit of
O'Connor et al. (Fine-Grained DRAM, MICRO 2017), used for HBM2E and HBM3; LPDDR5 and DDR5 are our
estimates placed against that paper's HBM2 (3.9) and GDDR5 (14) figures, no LPDDR5 or DDR5
measurement is used. PHY areas: the LLMCompass area model (Zhang et al., ISCA 2024: HBM2E 10.45
mm^2 per stack, DDR5 1.45 mm^2 per 32 bits), itself an estimate from die photos; LPDDR5 and HBM3
scaled or carried over from it. Capacities (GiB = 2^30 bytes: DRAM dies come in binary densities)
are the parts as shipped: an 8-high stack of 16 Gb dies for HBM2E (the five stacks of NVIDIA's
A100 80GB) and HBM3 (H100 SXM5's five), 2 GiB per LPDDR5 x16 channel (Apple M1 Max: 64 GB on 32
channels), one 32 GB RDIMM per DDR5 channel (our choice); `dram_capacity_bytes`.

**DRAM as a memory level** (`costmodel.loopnest.arch.dram_level`, which builds it from this data): the outermost, unbounded `MemoryLevel` of a loop-nest
accelerator (`costmodel.loopnest.arch`), one bus for reads and writes (``shared_port`` True, one
instance: ``private_to`` ()):

* bandwidth in bits per cycle = units x GB/s x sustained x 8e9 / (clock_mhz x 1e6): by default
  the peak rate (``sustained`` = 1: no efficiency factor for refresh, bank conflicts or read/write
  turnaround); ``read_bw`` = ``write_bw`` = that exact, usually fractional, number. A chip preset
  may state what its DRAM sustains (``[dram] sustained = 0.88``: the fraction of the peak a
  streaming kernel reaches on that chip, measured and cited in the preset) and a pin rate other
  than the JEDEC grade (``gbps_per_unit``); both default to the grade's peak, so the presets and
  templates without them are unchanged. The fraction applies to every transfer at the level;
  it only shows where a layer is bound by DRAM (elsewhere the transfer hides under compute);
* ``word_bits`` (the access granularity: the model counts a transfer as whole words, rounded up) is
  by default the largest power of two not above the bits per cycle, at least 8 (HBM3, one stack at
  1 GHz: 6553.6 bits per cycle, word 4096). A power of two, as DRAM bursts are, so a transfer of a
  power-of-two tile is a whole number of words and no partial word is charged; the bandwidth stays
  exact, so the word sets the energy per access and the rounding, not the time per bit. Tiles
  smaller than a word pay for the whole word: pass a smaller ``word_bits`` (a burst) where that
  matters;
* ``read_pj`` = ``write_pj`` = pJ/bit x word_bits: one energy per bit moved, read or written (the
  sources give one figure); standby and refresh power (a cost per second) are not modelled.

**The clock.** The accelerator clock (`Accelerator.clock_mhz`) changes what a DRAM delivers per
cycle: bits per cycle = bytes/s x 8 / Hz, so halving the clock doubles the bits per cycle and halves
the cycles of a DRAM-bound layer (its transfer cycles = bits / bits per cycle), while each cycle
lasts twice as long (seconds = cycles / (clock_mhz x 1e6)): a DRAM-bound layer takes the same
seconds at any clock, a compute-bound one takes seconds in inverse proportion to the clock. Energy
per MAC and per access does not change with the clock here: there is no voltage / frequency model
(a lower clock would allow a lower supply voltage and less energy per operation in silicon; no
cited model of that is used, so MAC energy per operation is the same at every clock), and DRAM
energy is per bit moved, independent of the clock.

Errors: ValueError naming the key and the value (``dram = 'hbm9'`` lists the kinds; ``units``,
``clock_mhz``, ``word_bits``, ``operands``, ``name``).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any


__all__ = ["DRAM_KINDS", "DramSpec", "dram_spec", "dram_bits_per_cycle", "dram_rate", "default_word_bits",
           "dram_area_mm2", "dram_capacity_bytes"]

_DATA = Path(__file__).resolve().parent.parent / "data" / "dram_kinds.csv"
_NUMBERS = ("gbps_per_unit", "pj_per_bit", "phy_area_mm2_per_unit", "capacity_gib_per_unit")
_COUNTS = ("default_units", "min_units", "max_units")
_QUANTITIES = ("unit",) + _NUMBERS + _COUNTS
_STATUS = ("published", "estimate", "choice")


@dataclass(frozen=True)
class DramSpec:
    """One DRAM kind.

    Attributes:
        name: the kind (``"hbm3"``).
        unit: what scales (``"stack"``, ``"x16 channel"``, ``"64-bit channel"``).
        gbps_per_unit: peak bandwidth of one unit, GB/s (1e9 bytes/s).
        pj_per_bit: energy per bit read or written, pJ.
        phy_area_mm2_per_unit: the interface (PHY) area one unit takes on the accelerator die, mm^2.
        capacity_gib_per_unit: what one unit stores, GiB (2^30 bytes).
        default_units, min_units, max_units: the default count of units and the allowed range.
        sources: quantity -> its source (every quantity above but ``name``; read-only).
        estimates: the quantities whose figure is an estimate.
    """

    name: str
    unit: str
    gbps_per_unit: float
    pj_per_bit: float
    phy_area_mm2_per_unit: float
    capacity_gib_per_unit: float
    default_units: int
    min_units: int
    max_units: int
    sources: Mapping[str, str] = field(default_factory=dict, hash=False)
    estimates: frozenset[str] = frozenset()


def _bad(key: str, value: Any, expected: str) -> ValueError:
    return ValueError(f"{key} = {value!r}: expected {expected}")


def _rows(path: Path) -> list[dict[str, str]]:
    """The data rows of the table (lines starting with '#' are comments)."""
    with path.open(newline="") as f:
        lines = [ln for ln in f if not ln.startswith("#")]
    return list(csv.DictReader(lines))


def _spec(kind: str, rows: dict[str, dict[str, str]], src: str) -> DramSpec:
    """A `DramSpec` from the rows of one kind (quantity -> row); ValueError naming the file, the
    kind and the quantity if one is missing or not a positive number."""
    missing = [q for q in _QUANTITIES if q not in rows]
    if missing:
        raise ValueError(f"{src}: kind {kind!r}: missing quantities {missing}")
    vals: dict[str, Any] = {"unit": rows["unit"]["value"]}
    for q in _NUMBERS + _COUNTS:
        raw = rows[q]["value"]
        try:
            v = float(raw)
        except ValueError:
            v = math.nan
        if not (math.isfinite(v) and v > 0) or (q in _COUNTS and not v.is_integer()):
            raise ValueError(f"{src}: {kind}.{q} = {raw!r}: expected a positive "
                             f"{'integer' if q in _COUNTS else 'number'}")
        vals[q] = int(v) if q in _COUNTS else v
    if not vals["min_units"] <= vals["default_units"] <= vals["max_units"]:
        raise ValueError(f"{src}: {kind}.default_units = {vals['default_units']}: expected "
                         f"{vals['min_units']}..{vals['max_units']}")
    for q, r in rows.items():
        if r["status"] not in _STATUS or not r["source"].strip():
            raise ValueError(f"{src}: {kind}.{q}: expected a status in {list(_STATUS)} and a source")
    return DramSpec(kind, sources=MappingProxyType({q: r["source"] for q, r in rows.items()}),
                    estimates=frozenset(q for q, r in rows.items() if r["status"] == "estimate"), **vals)


@lru_cache(maxsize=1)
def _table() -> dict[str, DramSpec]:
    """kind -> `DramSpec`, in the file's order."""
    by_kind: dict[str, dict[str, dict[str, str]]] = {}
    for r in _rows(_DATA):
        if r["quantity"] not in _QUANTITIES:
            raise ValueError(f"{_DATA}: {r['kind']}.{r['quantity']}: unknown quantity; known: {list(_QUANTITIES)}")
        by_kind.setdefault(r["kind"], {})[r["quantity"]] = r
    return {k: _spec(k, rows, str(_DATA)) for k, rows in by_kind.items()}


#: The DRAM kinds, in the data file's order.
DRAM_KINDS: tuple[str, ...] = tuple(_table())


def dram_spec(kind: str) -> DramSpec:
    """The `DramSpec` of ``kind`` (one of `DRAM_KINDS`).

    Raises:
        ValueError: ``dram = 'hbm9': expected one of [...]``.
    """
    table = _table()
    if not isinstance(kind, str) or kind not in table:
        raise _bad("dram", kind, f"one of {list(table)}")
    return table[kind]


def _units(spec: DramSpec, units: Any) -> int:
    if isinstance(units, bool) or not isinstance(units, int) or not spec.min_units <= units <= spec.max_units:
        raise _bad("units", units, f"an integer from {spec.min_units} to {spec.max_units} "
                                   f"({spec.name} units: {spec.unit})")
    return units


def _clock(clock_mhz: Any) -> float:
    ok = isinstance(clock_mhz, (int, float)) and not isinstance(clock_mhz, bool)
    if not ok or not math.isfinite(clock_mhz) or clock_mhz <= 0:
        raise _bad("clock_mhz", clock_mhz, "a finite number > 0 (the accelerator clock in MHz)")
    return float(clock_mhz)


def dram_bits_per_cycle(kind: str, units: int, clock_mhz: float, gbps_per_unit: float | None = None,
                        sustained: float = 1.0) -> float:
    """DRAM bandwidth in bits per accelerator cycle: units x GB/s x sustained x 8e9 / (clock_mhz x 1e6).

    ``gbps_per_unit`` (GB/s of one unit; None = the kind's JEDEC grade) states a part run at another
    pin rate than the grade (NVIDIA's A100 80GB: five HBM2E stacks at 2,039 GB/s in all, 407.8 each,
    not 409.6); ``sustained`` (0 < s <= 1) the fraction of that peak a chip sustains when streaming
    (module docstring: a measured figure per chip, 1.0 = the peak).

    Raises:
        ValueError: a bad kind, count, clock, ``gbps_per_unit`` or ``sustained``, naming it.
    """
    spec = dram_spec(kind)
    rate = spec.gbps_per_unit if gbps_per_unit is None else dram_rate("gbps_per_unit", gbps_per_unit)
    frac = dram_rate("sustained", sustained)
    return _units(spec, units) * rate * frac * 8e9 / (_clock(clock_mhz) * 1e6)


def dram_rate(key: str, value: Any) -> float:
    """``value`` checked as ``dram.<key>``: ``gbps_per_unit`` (GB/s) or ``gib_per_unit`` (GiB, a part
    whose stacks or channels hold another capacity than the kind's) a finite number > 0,
    ``sustained`` a number in (0, 1].

    Raises:
        ValueError: ``dram.sustained = 1.5: expected ...``.
    """
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    if key == "sustained":
        if not ok or value > 1:
            raise _bad("dram.sustained", value, "a number in (0, 1]: the fraction of the peak bandwidth sustained")
    elif not ok:
        raise _bad(f"dram.{key}", value, "a finite number > 0 (" + ("GiB" if key == "gib_per_unit" else "GB/s")
                   + " of one unit)")
    return float(value)


def default_word_bits(bits_per_cycle: float) -> int:
    """The default DRAM word: the largest power of two not above ``bits_per_cycle``, at least 8."""
    whole = int(bits_per_cycle)
    return max(8, 1 << (whole.bit_length() - 1)) if whole >= 1 else 8


def dram_area_mm2(kind: str, units: int) -> float:
    """Interface (PHY) area on the accelerator die of ``units`` units of ``kind``, mm^2."""
    spec = dram_spec(kind)
    return _units(spec, units) * spec.phy_area_mm2_per_unit


def dram_capacity_bytes(kind: str, units: int, gib_per_unit: float | None = None) -> int:
    """What ``units`` units of ``kind`` store, bytes: units x capacity_gib_per_unit x 2^30 (the
    parts as shipped, module docstring), or x ``gib_per_unit`` when a chip's parts differ (TPU v4's
    HBM2 stacks of 8 GiB).

    Raises:
        ValueError: an unknown kind, a unit count out of the kind's range or a bad ``gib_per_unit``
            (naming the key).
    """
    spec = dram_spec(kind)
    gib = spec.capacity_gib_per_unit if gib_per_unit is None else dram_rate("gib_per_unit", gib_per_unit)
    return int(_units(spec, units) * gib * 2**30)
