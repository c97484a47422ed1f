"""SRAM energy per bit, area and leakage by capacity, 4 KiB .. 128 MiB, at 22 nm, from CACTI.

Data: ``costmodel/data/sram_cacti_22nm.csv``, shipped with the package and generated once by
``scripts/cacti_tables.py`` (its docstring says how: a Python 3.12 venv with ``hwcomponents-cacti``,
CACTI rebuilt from the wheel's sources). Nothing here calls CACTI: a search reads the table with
the standard library and numpy. The CSV's ``#`` lines record the versions, the configuration, the
date and the command (`sram_source` returns them).

Source and configuration: CACTI 7.0 ("3DD Prerelease", Aug 2012, as the wrapper's
``version_cacti.h`` states it) through hwcomponents-cacti 1.0.40 (hwcomponents 1.0.114), the
Accelergy project's CACTI wrapper, ``SRAM(tech_node=22/1e9, width=64, size=...)``: cache type
"ram" (a scratchpad: no tags), UCA, **one bank, one read/write port**, a **64-bit word**
(`SRAM_WORD_BITS`: block size = bus width = 64 bits), 22 nm, 300 K, ITRS low-standby-power
(itrs-lstp) cells and periphery, access mode "fast", the wrapper's design objective (the
organisation of least leakage among those within 10 % of the best dynamic energy and 20 % of the
best delay). 22 nm because it is the smallest node CACTI has technology data for (22, 32, 45, 65,
90 nm): below it the wrapper scales CACTI's 22 nm figures by its own rules (energy with the square
root of the node, area linearly), so 22 nm is the closest to today's accelerators (7..4 nm) at which
every number is CACTI's own. Sizes tabulated: powers of two from 4 KiB to 128 MiB and the 1.5x
points between them (4, 6, 8, 12, ... 98304, 131072 KiB: 31 sizes).

Units: energies in pJ per bit (CACTI's dynamic energy of one 64-bit access divided by 64; a
narrower or wider port is *not* modelled: multiply by the bits moved), area in mm^2 (CACTI's
data-array area of the whole SRAM), leakage in mW (standby leakage of the bank, subthreshold plus
gate). Between tabulated sizes every figure is interpolated **log-log** (a power law between
neighbours: ``v0 * (v1 / v0) ** t`` with ``t = log(S / S0) / log(S1 / S0)``); at a tabulated size
the tabulated value comes back exactly. Outside [4 KiB, 128 MiB] the functions raise ValueError.

Caveats, as CACTI reports them: one monolithic bank is a choice, not an optimum for large SRAMs:
CACTI's access time grows from 0.47 ns at 4 KiB to 2.4 ns at 1 MiB and 21 ns at 128 MiB (column
``access_ns``), and at 128 MiB 94 % of the read energy is the H-tree (wires) across the array.
CACTI's organisation search is discrete, so the energy per bit rises in steps (8 -> 12 KiB: x1.66,
12 -> 16 KiB: x1.001); the table is non-decreasing in every energy, area and leakage column
(tests/costmodel/tech/test_sram.py checks it).

Compared with today's model (`costmodel.loopnest.physics`): its SRAM energy per bit is the 65 nm
table ``costmodel/data/sram_energy_pj_per_bit.csv`` (DeepOpt authors' CACTI projection, 4..512
KiB, configuration not published) and its area 32.5457 um^2 per byte at every size (DeepOpt's TSMC
65 nm memory-compiler density), both in `costmodel.tech.deepopt65`. "CACTI 65 nm" below is the same configuration as the shipped table
run at 65 nm (``scripts/cacti_tables.py --node 65``; not shipped), to separate the node from the
rest. Read energies, pJ/bit:

======  ===========  ===========  ==========  ===========  ============  ===========
KiB     65 nm table  CACTI 22 nm  table / 22  CACTI 65 nm  table / C65   C65 / C22
======  ===========  ===========  ==========  ===========  ============  ===========
4       0.1145       0.0183       6.26        0.0964       1.19          5.27
8       0.1687       0.0248       6.79        0.1738       0.97          7.00
16      0.2067       0.0413       5.00        0.3279       0.63          7.94
32      0.2814       0.0592       4.76        0.4703       0.60          7.95
64      0.4603       0.0886       5.20        0.7351       0.63          8.30
128     0.6889       0.1157       5.96        0.9271       0.74          8.02
256     1.2140       0.1853       6.55        1.5716       0.77          8.48
512     1.6422       0.2394       6.86        1.9720       0.83          8.24
======  ===========  ===========  ==========  ===========  ============  ===========

(The 1.5x sizes 6 .. 384 KiB lie in the same bands: table / 22 nm 4.2 .. 6.5, table / C65 0.59 ..
0.89.) Area per byte, um^2: physics.py 32.5457 at every size; CACTI 22 nm 0.76 .. 0.92 over 4..512
KiB (0.74 at 1 MiB, 0.66 at 128 MiB); CACTI 65 nm 6.0 .. 7.0 over 4..512 KiB. So the shipped table
prices an SRAM access 4.2 .. 6.9x cheaper than today's table and its area 35 .. 43x smaller.

What the node explains: in CACTI itself, 65 -> 22 nm divides the read energy per bit by 5.1 .. 8.5
(median 7.9 over the 15 sizes 4..512 KiB) and the area by 7.0 .. 8.7 (median 7.7). That is the expected
scaling: dynamic energy ~ C V^2 with C ~ feature size (22/65 = 0.34) and CACTI's lstp supply
falling from 1.2 V to 0.8 V (0.44) gives 0.15, i.e. /6.6; CACTI's SRAM cell is 146 F^2 at both
nodes, so area ~ F^2 gives /8.7. The node does not explain the rest: today's 65 nm table is 0.59
.. 1.19x CACTI's 65 nm figure with this configuration (different CACTI version, cell type and
objective; DeepOpt's are not published), and physics.py's 32.5457 um^2/byte is 4.7 .. 5.4x CACTI's
65 nm area (a compiled macro's density against CACTI's array estimate). Neither is adjusted here.
"""

from __future__ import annotations

import importlib.resources
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["SRAM_NODE_NM", "SRAM_WORD_BITS", "SRAM_MIN_KIB", "SRAM_MAX_KIB", "SRAM_CSV", "SramTable",
           "sram_table", "sram_source", "sram_read_pj_per_bit", "sram_write_pj_per_bit",
           "sram_area_mm2", "sram_leakage_mw"]

#: Technology node of the table, nm (CACTI's smallest own node).
SRAM_NODE_NM: int = 22
#: Bits per access the table was generated for (CACTI block size and bus width).
SRAM_WORD_BITS: int = 64
#: The table's range, KiB: 4 KiB .. 128 MiB.
SRAM_MIN_KIB: int = 4
SRAM_MAX_KIB: int = 128 * 1024
#: The shipped CSV, in ``costmodel/data``.
SRAM_CSV: str = f"sram_cacti_{SRAM_NODE_NM}nm.csv"

_COLUMNS = ("size_kib", "read_pj_per_bit", "write_pj_per_bit", "area_mm2", "leakage_mw",
            "access_ns", "cycle_ns")


@dataclass(frozen=True)
class SramTable:
    """The CACTI table as float64 arrays, one entry per tabulated size, sizes increasing.

    Units: size_kib KiB; read/write_pj_per_bit pJ/bit (64-bit access); area_mm2 mm^2; leakage_mw
    mW; access_ns, cycle_ns ns. ``source``: the CSV's ``#`` header lines (versions, configuration,
    date, command).
    """
    size_kib: np.ndarray
    read_pj_per_bit: np.ndarray
    write_pj_per_bit: np.ndarray
    area_mm2: np.ndarray
    leakage_mw: np.ndarray
    access_ns: np.ndarray
    cycle_ns: np.ndarray
    source: str


def _read_csv_text() -> str:
    return (importlib.resources.files("costmodel") / "data" / SRAM_CSV).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def sram_table() -> SramTable:
    """The shipped table (`SRAM_CSV`), read once; ValueError if it is malformed."""
    comments, rows, header = [], [], None
    for line in _read_csv_text().splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            comments.append(line.lstrip("# "))
        elif header is None:
            header = line.split(",")
        else:
            rows.append([float(x) for x in line.split(",")])
    if header is None or any(c not in header for c in _COLUMNS):
        raise ValueError(f"{SRAM_CSV}: header {header} lacks one of {_COLUMNS}")
    data = np.asarray(rows, dtype=np.float64)
    cols = {c: data[:, header.index(c)].copy() for c in _COLUMNS}
    if not np.all(np.diff(cols["size_kib"]) > 0):
        raise ValueError(f"{SRAM_CSV}: sizes are not strictly increasing")
    return SramTable(**cols, source="\n".join(comments))


def sram_source() -> str:
    """Where the table comes from: the CSV's header comment lines (CACTI and wrapper versions,
    configuration, date, command)."""
    return sram_table().source


def _interp(size_kib: float, values: np.ndarray) -> float:
    """``values`` at ``size_kib`` KiB, log-log between the neighbouring tabulated sizes; exact at a
    tabulated size; ValueError naming the size outside [4 KiB, 128 MiB]."""
    sizes = sram_table().size_kib
    s = float(size_kib)
    if not (math.isfinite(s) and sizes[0] <= s <= sizes[-1]):
        raise ValueError(f"SRAM size {size_kib!r} KiB is outside the CACTI table's range "
                         f"[4 KiB, 128 MiB] ({sizes[0]:g}..{sizes[-1]:g} KiB)")
    i = int(np.searchsorted(sizes, s))      # sizes[i - 1] < s <= sizes[i]
    if sizes[i] == s:
        return float(values[i])
    s0, s1, v0, v1 = float(sizes[i - 1]), float(sizes[i]), float(values[i - 1]), float(values[i])
    t = math.log(s / s0) / math.log(s1 / s0)
    v = v0 * (v1 / v0) ** t
    return min(max(v, min(v0, v1)), max(v0, v1))   # a rounding ulp never leaves [v0, v1]


def sram_read_pj_per_bit(size_kib: float) -> float:
    """CACTI 22 nm dynamic read energy of an SRAM of ``size_kib`` KiB, pJ per bit (one 64-bit
    access / 64), log-log interpolated between tabulated sizes. ValueError outside 4 KiB..128 MiB."""
    return _interp(size_kib, sram_table().read_pj_per_bit)


def sram_write_pj_per_bit(size_kib: float) -> float:
    """CACTI 22 nm dynamic write energy of an SRAM of ``size_kib`` KiB, pJ per bit (one 64-bit
    access / 64), log-log interpolated between tabulated sizes. ValueError outside 4 KiB..128 MiB."""
    return _interp(size_kib, sram_table().write_pj_per_bit)


def sram_area_mm2(size_kib: float) -> float:
    """CACTI 22 nm area of a whole SRAM of ``size_kib`` KiB (one bank, one port), mm^2, log-log
    interpolated between tabulated sizes. ValueError outside 4 KiB..128 MiB."""
    return _interp(size_kib, sram_table().area_mm2)


def sram_leakage_mw(size_kib: float) -> float:
    """CACTI 22 nm standby leakage (subthreshold + gate) of an SRAM of ``size_kib`` KiB, mW, log-log
    interpolated between tabulated sizes. ValueError outside 4 KiB..128 MiB."""
    return _interp(size_kib, sram_table().leakage_mw)
