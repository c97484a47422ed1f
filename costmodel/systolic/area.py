"""Chip area of a DeepOpt systolic accelerator (65 nm), and the authors' hardware-allocation grid.

Area model (DeepOpt authors' code, ``manasiumn37/DeepOpt`` ``src/OHA_Main.m``; paper Sec. 4.2):

    area = J*K*A_PE + (fSRAM + iSRAM + pSRAM) [KiB] * 1024 * A_SRAM_byte

* A_SRAM_byte = 32.54567 um^2 per byte: "SRAM area per byte ... from TSMC 65 nm memory
  compiler" (OHA_Main.m ``Area_SRAM_per_byte = 32.545670202636720``).
* A_PE = 0.1 * area(2 KiB SRAM) / 0.9 = 0.1 * (2048 * A_SRAM_byte) / 0.9 = 7405.95 um^2: from a
  post place-and-route systolic array whose PE logic is 10 % and its 2 KiB local SRAM 90 % of
  the area (OHA_Main.m ``Area_per_PE``).

Both are technology data shared with the loop-nest model: they live in `costmodel.tech.deepopt65`
(``A_SRAM_UM2_PER_BYTE``, ``A_PE_UM2``) and are re-exported here.

The authors' hardware-allocation grid (OHA_Main.m, exhaustive search), exactly:

* Area budget A = 4000 um x 4000 um = 16 mm^2; a point is kept iff area <= A (the code uses
  ``Chip_Area <= Area_budget``; the paper's "deviation of 10 %" window is not in the code).
* SRAM sizes: each of fSRAM, iSRAM, pSRAM is a power of two from 4 KiB (minimum) up to
  2^floor(log2(max)), max = (A - 2 * 4 KiB of SRAM - 8*8 PEs) / A_SRAM_byte / 1024 = 457.9 KiB,
  i.e. {4, 8, 16, 32, 64, 128, 256} KiB.
* PE array: J (rows) = 8, 10, 12, ... and K (columns) = 8, 10, 12, ... (step 2) up to
  Max_row = Max_col = floor(Max_PE / 8) = 263, where Max_PE = floor((A - 3 * 4 KiB of SRAM) /
  A_PE) = 2106 (so J*K <= 2106 also follows from the area test); the aspect ratio must satisfy
  min(J, K) >= 0.5 * max(J, K). (The code's comment suggests min_row = 12 for AlexNet, whose
  11x11 conv1 needs J >= 11; the default grid keeps min_row = 8 and such layers are +inf.)
* Minimum SRAMs (register-file contents of the array must fit): fSRAM*8192 >= 8*J*K bits,
  iSRAM*8192 >= 8*J bits, pSRAM*8192 >= 32*K bits (b_f = b_i = 8, b_p = 32).

With these rules the grid has 70,631 points (``deepopt_grid()``); the reference README's
"about 70,600" refers to this count.
"""

from __future__ import annotations

import math

import numpy as np

from costmodel.tech.deepopt65 import A_PE_UM2, A_SRAM_UM2_PER_BYTE

__all__ = ["A_SRAM_UM2_PER_BYTE", "A_PE_UM2", "AREA_BUDGET_MM2", "area_mm2", "deepopt_grid"]

#: The paper's area budget, mm^2 (OHA_Main.m: 4000 um x 4000 um).
AREA_BUDGET_MM2: float = 16.0


def area_mm2(J, K, fsram_kib, isram_kib, psram_kib):
    """Chip area in mm^2: J*K*A_PE + (fSRAM + iSRAM + pSRAM) * 1024 * A_SRAM_byte.

    Args:
        J, K: PE rows and columns (scalars or array-likes, broadcast together).
        fsram_kib, isram_kib, psram_kib: SRAM sizes in KiB.

    Returns:
        float64 ndarray of the broadcast shape, or a Python float if all inputs are scalars.

    Raises:
        ValueError: if any input is negative or not finite, or the shapes do not broadcast.
    """
    args = [np.asarray(a, dtype=np.float64) for a in (J, K, fsram_kib, isram_kib, psram_kib)]
    for name, a in zip(("J", "K", "fsram_kib", "isram_kib", "psram_kib"), args):
        if not np.all(np.isfinite(a)) or np.any(a < 0):
            raise ValueError(f"{name} must be finite and non-negative")
    try:
        j, k, f, i, p = np.broadcast_arrays(*args)
    except ValueError as exc:
        raise ValueError(f"input shapes do not broadcast: {exc}") from None
    um2 = j * k * A_PE_UM2 + (f + i + p) * 1024.0 * A_SRAM_UM2_PER_BYTE
    out = um2 * 1e-6
    if out.ndim == 0:
        return float(out)
    return out


def deepopt_grid(budget_mm2: float = AREA_BUDGET_MM2, min_rows: int = 8, min_cols: int = 8,
                 step: int = 2, min_sram_kib: int = 4) -> dict[str, np.ndarray]:
    """The authors' exhaustive hardware grid (rules in the module docstring).

    Returns:
        dict with int64 arrays ``J, K, fsram_kib, isram_kib, psram_kib`` and float64 ``area_mm2``,
        in the authors' loop order (J, K, fSRAM, iSRAM, pSRAM).
    """
    budget = budget_mm2 * 1e6
    a_min = min_sram_kib * 1024 * A_SRAM_UM2_PER_BYTE
    max_sram_kib = (budget - 2 * a_min - min_rows * min_cols * A_PE_UM2) / A_SRAM_UM2_PER_BYTE / 1024
    sizes = 2.0 ** np.arange(math.ceil(math.log2(min_sram_kib)), math.floor(math.log2(max_sram_kib)) + 1)
    max_pe = math.floor((budget - 3 * a_min) / A_PE_UM2)
    js = np.arange(min_rows, max_pe // min_cols + 1, step)
    ks = np.arange(min_cols, max_pe // min_rows + 1, step)
    J, K, F, I, P = np.meshgrid(js, ks, sizes, sizes, sizes, indexing="ij")
    J, K, F, I, P = (x.ravel() for x in (J, K, F, I, P))
    ok = np.minimum(J, K) >= 0.5 * np.maximum(J, K)
    area_um2 = J * K * A_PE_UM2 + (F + I + P) * 1024 * A_SRAM_UM2_PER_BYTE
    ok &= area_um2 <= budget
    ok &= (F * 8192 >= 8 * J * K) & (I * 8192 >= 8 * J) & (P * 8192 >= 32 * K)
    return {"J": J[ok].astype(np.int64), "K": K[ok].astype(np.int64),
            "fsram_kib": F[ok].astype(np.int64), "isram_kib": I[ok].astype(np.int64),
            "psram_kib": P[ok].astype(np.int64), "area_mm2": area_um2[ok] * 1e-6}
