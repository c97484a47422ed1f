"""Generate the shipped SRAM table ``costmodel/data/sram_cacti_<node>nm.csv`` with CACTI (issue 29).

Run once by hand, never by a search: `costmodel.tech.sram` reads the CSV this writes, with numpy
and the standard library only. This script needs CACTI through ``hwcomponents-cacti`` (the
Accelergy project's wrapper, on PyPI), which asks for Python >= 3.12, so it runs in its own venv
outside the repository (the project itself stays on Python 3.11)::

    ~/.pyenv/versions/3.12.1/bin/python -m venv /tmp/cactivenv
    /tmp/cactivenv/bin/pip install hwcomponents-cacti==1.0.40     # pulls hwcomponents

The wheel ships a CACTI binary linked against glibc 2.38, newer than Debian 12's, together with
stale object files built against that glibc; rebuild CACTI from the sources in the wheel (gcc/g++
from Debian; about 15 s)::

    cd /tmp/cactivenv/lib/python3.12/site-packages/hwcomponents_cacti/cacti
    rm -f obj_dbg/*.o cacti && make          # `make` = the wheel's default (dbg) build

Then, from the repository root::

    /tmp/cactivenv/bin/python scripts/cacti_tables.py --node 22 --out costmodel/data/sram_cacti_22nm.csv

What it computes: for each capacity of ``SIZES_KIB`` (powers of two from 4 KiB to 128 MiB and the
1.5x points between them), one ``hwcomponents_cacti.SRAM(tech_node=node / 1e9, width=WORD_BITS,
size=capacity_bits)`` (defaults: one read/write port, one bank; the wrapper's own configuration
file: CACTI cache type "ram", UCA, ITRS low-standby-power cells and periphery, 300 K, access mode
"fast", its design objective weighting leakage within 10 % of the best dynamic energy). At the
nodes CACTI tabulates itself (22, 32, 45, 65, 90 nm) and for a word width that is a multiple of 8
and >= 32 bits, with depth >= 64, the wrapper passes the SRAM to CACTI unchanged and converts
CACTI's nJ / mm^2 / mW to J / m^2 / W; it interpolates or extrapolates only off those points, and
this script refuses such nodes and widths so that every number is CACTI's own.

Columns written (one row per capacity): ``size_kib`` (KiB), ``read_pj_per_bit`` and
``write_pj_per_bit`` (dynamic energy of one access of ``WORD_BITS`` bits, pJ, divided by the word
bits), ``area_mm2`` (CACTI's data-array area, mm^2), ``leakage_mw`` (CACTI's standby leakage of the
bank, subthreshold plus gate, mW), ``access_ns`` and ``cycle_ns`` (CACTI's access and random cycle
time, ns). Header lines starting with ``#`` record the versions, the configuration, the date and
the command.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import math
import re
import sys
from pathlib import Path

#: Capacities, KiB: 4 KiB .. 128 MiB, powers of two and 1.5x between them.
SIZES_KIB: tuple[int, ...] = tuple(sorted(
    {4 * 2 ** k for k in range(16)} | {6 * 2 ** k for k in range(15)}))
#: Bits per access (the word width CACTI is given as block size and bus width).
WORD_BITS = 64
#: Nodes CACTI 7 has its own technology data for (the wrapper interpolates between them).
CACTI_NODES_NM = (22, 32, 45, 65, 90)
COLUMNS = ("size_kib", "read_pj_per_bit", "write_pj_per_bit", "area_mm2", "leakage_mw",
           "access_ns", "cycle_ns")


def cacti_version() -> str:
    """CACTI's version as its ``version_cacti.h`` (in the wrapper's package) states it."""
    import hwcomponents_cacti
    header = Path(hwcomponents_cacti.__file__).parent / "cacti" / "version_cacti.h"
    fields = dict(re.findall(r"#define\s+(VER_\w+)\s+(\S.*?)\s*(?:/\*.*)?$", header.read_text(), re.M))
    return (f"{fields['VER_MAJOR_CACTI']}.{fields['VER_MINOR_CACTI']} "
            f"{fields['VER_COMMENT_CACTI'].strip(chr(34))} ({fields['VER_UPDATE_CACTI'].strip(chr(34))})")


def sram_row(size_kib: int, node_nm: int, word_bits: int) -> dict[str, float]:
    """One SRAM of ``size_kib`` KiB through the wrapper: per-bit energies (pJ), mm^2, mW, ns."""
    from hwcomponents_cacti import SRAM
    sram = SRAM(tech_node=node_nm / 1e9, width=word_bits, size=size_kib * 8192)
    # the wrapper multiplies by 1e9 and interpolates unless it lands exactly on a CACTI node
    # (22e-9 * 1e9 = 22.000000000000004 would blend in 32 nm; 22 / 1e9 * 1e9 == 22.0)
    assert sram.tech_node == node_nm and sram.width == word_bits, (sram.tech_node, sram.width)
    read, write = sram.read(), sram.write()        # one access of `word_bits` bits, J and s
    return {"size_kib": size_kib,
            "read_pj_per_bit": read.energy * 1e12 / word_bits,
            "write_pj_per_bit": write.energy * 1e12 / word_bits,
            "area_mm2": sram.area * 1e6,            # m^2 -> mm^2
            "leakage_mw": sram.leak_power * 1e3,    # W -> mW
            "access_ns": read.latency * 1e9,
            "cycle_ns": sram.cycle_period * 1e9}


def header(node_nm: int, word_bits: int, argv: list[str]) -> list[str]:
    versions = {p: importlib.metadata.version(p) for p in ("hwcomponents-cacti", "hwcomponents")}
    return [
        f"# SRAM energy, area and leakage vs capacity from CACTI {cacti_version()}, at {node_nm} nm,",
        f"# through hwcomponents-cacti {versions['hwcomponents-cacti']} (hwcomponents "
        f"{versions['hwcomponents']}), the Accelergy project's CACTI wrapper; CACTI rebuilt from the "
        "wheel's sources with `make`.",
        f"# Configuration: hwcomponents_cacti.SRAM(tech_node={node_nm}/1e9, width={word_bits}, "
        "size=size_kib*8192 bits): cache type \"ram\" (scratch RAM, no tag), UCA, 1 bank, 1 read/write "
        f"port, block size = bus width = {word_bits} bits, technology {node_nm / 1000:g} um, "
        "temperature 300 K,",
        "# data array cell and peripheral type itrs-lstp, access mode fast, design objective "
        "(delay, dynamic power, leakage, cycle, area) weights 0:0:1000000:0:0 deviate "
        "20:10:100000:100:100 (the wrapper's default_cfg.cfg).",
        f"# Per-bit energies = CACTI's dynamic energy per access (nJ) x 1000 / {word_bits} word bits; "
        "area = CACTI's data-array area (mm^2); leakage = CACTI's standby leakage of the bank, "
        "subthreshold + gate (mW); access_ns, cycle_ns = CACTI's access and random cycle time.",
        f"# Generated {datetime.date.today().isoformat()} by: python {' '.join(argv)}",
    ]


def fmt(value: float) -> str:
    return f"{value:.12g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node", type=int, default=22, help="technology node, nm (CACTI's own: 22..90)")
    parser.add_argument("--word-bits", type=int, default=WORD_BITS, help="bits per access")
    parser.add_argument("--out", type=Path, required=True, help="CSV to write")
    args = parser.parse_args(argv)
    if args.node not in CACTI_NODES_NM:
        parser.error(f"--node {args.node}: CACTI tabulates {CACTI_NODES_NM} nm only; "
                     "the wrapper would interpolate or extrapolate")
    if args.word_bits % 8 or args.word_bits < 32:
        parser.error("--word-bits must be a multiple of 8 and >= 32 (else the wrapper rescales)")
    lines = header(args.node, args.word_bits, [Path(sys.argv[0]).as_posix()] + sys.argv[1:])
    lines.append(",".join(COLUMNS))
    for kib in SIZES_KIB:
        assert kib * 8192 // args.word_bits >= 64, "depth >= 64 (else the wrapper rescales)"
        row = sram_row(kib, args.node, args.word_bits)
        lines.append(",".join(fmt(row[c]) for c in COLUMNS))
        print(lines[-1], flush=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out} ({len(SIZES_KIB)} sizes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
