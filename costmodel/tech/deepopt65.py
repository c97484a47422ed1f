"""DeepOpt's 65 nm technology data: SRAM energy per bit by capacity, SRAM area per byte, PE area.

The figures the DeepOpt authors used (S. D. Manasi and S. S. Sapatnekar, "DeepOpt: Optimized
Scheduling of CNN Workloads for ASIC-based Systolic Deep Learning Accelerators", ASP-DAC 2021,
Sec. 4.2; their public MATLAB code, ``manasiumn37/DeepOpt``), read by both cost models: the
DeepOpt systolic model (`costmodel.systolic`: its energy and its hardware grid's area) and the
loop-nest model's physics (`costmodel.loopnest.physics`: scaled memory energies and design area
of every accelerator that names no ``tech``; `costmodel.tech.sram` is the CACTI 22 nm alternative).

* SRAM energy per bit (`sram_energy_table`): a CACTI-projected 65 nm table, pJ per bit for every
  integer SRAM size 4..512 KiB, shipped as ``costmodel/data/sram_energy_pj_per_bit.csv`` (from
  the authors' repository: ``data/E_EySRAM_perbit.mat`` with ``data/SRAMSize.mat``, J/bit
  converted to pJ/bit; the CACTI configuration is not published). The file's ``#`` lines say so.
* SRAM area per byte (`A_SRAM_UM2_PER_BYTE`): 32.545670202636720 um^2 per byte at every size,
  "SRAM area per byte ... from TSMC 65 nm memory compiler" (``src/OHA_Main.m``
  ``Area_SRAM_per_byte``).
* PE area (`A_PE_UM2`): 0.1 * area(2 KiB SRAM) / 0.9 = 7405.95 um^2 per PE (8-bit multiplier,
  32-bit adder and registers), from a post place-and-route systolic array whose PE logic is 10 %
  and its 2 KiB local SRAM 90 % of the area (``src/OHA_Main.m`` ``Area_per_PE``).

Units: areas in um^2, energies in pJ per bit, sizes in KiB (8192 bits). Nothing here interpolates
or checks a size: the systolic model looks the table up exactly
(`costmodel.systolic.params.sram_energy_pj_per_bit`), the loop-nest physics interpolates it
linearly and continues it above 512 KiB (`costmodel.loopnest.physics.sram_pj_per_bit`).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = ["A_SRAM_UM2_PER_BYTE", "A_PE_UM2", "SRAM_ENERGY_CSV", "sram_energy_table"]

#: SRAM area per byte, um^2 (TSMC 65 nm memory compiler; DeepOpt OHA_Main.m).
A_SRAM_UM2_PER_BYTE: float = 32.545670202636720
#: Area of one PE (8-bit multiplier + 32-bit adder + registers), um^2:
#: 0.1 * area(2 KiB SRAM) / 0.9 (DeepOpt OHA_Main.m).
A_PE_UM2: float = 0.1 * (A_SRAM_UM2_PER_BYTE * 2 * 1024) / 0.9

#: The shipped 65 nm SRAM energy table (path): columns sram_kib (KiB), energy_pj_per_bit (pJ/bit),
#: integer sizes 4..512 KiB (CACTI 65 nm, DeepOpt authors' data/E_EySRAM_perbit.mat).
SRAM_ENERGY_CSV: str = str(Path(__file__).resolve().parent.parent / "data" / "sram_energy_pj_per_bit.csv")


@lru_cache(maxsize=8)
def sram_energy_table(path: str = SRAM_ENERGY_CSV) -> tuple[np.ndarray, np.ndarray]:
    """The SRAM energy table at ``path`` (default: the shipped 65 nm table, `SRAM_ENERGY_CSV`):
    (sizes in KiB, energy in pJ/bit), both float64 1-D arrays, sizes increasing.

    Lines starting with ``#`` and the header line are skipped.
    """
    rows = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line or line.startswith("#") or line[0].isalpha():
                continue
            a, b = line.split(",")[:2]
            rows.append((float(a), float(b)))
    arr = np.asarray(rows, dtype=np.float64)
    order = np.argsort(arr[:, 0])
    return arr[order, 0].copy(), arr[order, 1].copy()
