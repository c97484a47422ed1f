"""Constants, parameters and result container of the DeepOpt systolic-array cost model.

Every default below is the value of the DeepOpt paper (Manasi & Sapatnekar, ASP-DAC'21, Sec. 4)
as set in the authors' public MATLAB code (``manasiumn37/DeepOpt``, ``src/OHA_Main.m``), and
summarised in ``../shared/reference/README.md``. The 65 nm SRAM energy table is technology data
shared with the loop-nest model: it lives in `costmodel.tech.deepopt65` (`sram_energy_table`,
re-exported here); this module looks it up exactly (`sram_energy_pj_per_bit`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from costmodel.tech.deepopt65 import SRAM_ENERGY_CSV, sram_energy_table

__all__ = [
    "BRANCHES",
    "TECH_SCALE",
    "SystolicParams",
    "SystolicResult",
    "sram_energy_table",
    "sram_energy_pj_per_bit",
]

#: The five non-pruned schedules of DeepOpt Sec. 2.6, innermost loop first. The last axis of
#: every (P, L, 5) result array follows this order. The authors' code calls them
#: xyzF, xzyF, xyFz, xFyz and zxyF.
BRANCHES: tuple[str, ...] = ("XYZiZo", "XZiYZo", "XYZoZi", "XZoYZi", "ZiXYZo")

#: Technology scaling 45 nm / 0.9 V -> 65 nm / 1.0 V used by the authors (OHA_Main.m):
#: s = (65/45) * (1/0.9)^2 = 1.78326.
TECH_SCALE: float = (65.0 / 45.0) * (1.0 / 0.9) ** 2

#: 16-bit MAC energy at 65 nm: (0.03 pJ * 2 + 0.2 pJ * 4) * s (8-bit add scaled linearly and
#: 8-bit multiply quadratically from Horowitz ISSCC'14; OHA_Main.m) = 1.5336 pJ.
_E_MAC16_PJ: float = (0.03 * 2 + 0.2 * 4) * TECH_SCALE


@dataclass(frozen=True)
class SystolicParams:
    """Technology and architecture constants of the DeepOpt model.

    Units: bit widths in bits, energies in pJ (per operation or per bit), bandwidth in
    bits/cycle.
    """

    # Bit widths (paper Sec. 4.2: b_f = b_i = 8, b_p = 32; ofmap written back with 8 bits,
    # OHA_Main.m bw_ofmap = 8).
    b_f: int = 8
    b_i: int = 8
    b_p: int = 32
    b_o: int = 8
    #: Off-chip bandwidth, paper Sec. 4.1 ("128 bits/cycle"); OHA_Main.m BW_DRAM.
    dram_bw_bits_per_cycle: int = 128
    #: DRAM transfers are rounded up to whole blocks of this size (OHA_Main.m DRAM_block_size).
    dram_block_bits: int = 128
    #: One 32-bit add: 0.1 pJ * s (Horowitz ISSCC'14, scaled; OHA_Main.m Energy_Add32).
    e_add32_pj: float = 0.1 * TECH_SCALE
    #: One 8-bit multiply: 0.2 pJ * s (Horowitz ISSCC'14, scaled; OHA_Main.m Energy_Mul8).
    e_mul8_pj: float = 0.2 * TECH_SCALE
    #: Register-file access per bit: E_MAC16 / 16 (Eyeriss ISCA'16 ratio; OHA_Main.m E_RF_to_ALU).
    e_rf_pj_per_bit: float = _E_MAC16_PJ / 16.0
    #: DRAM access per bit: 200 * E_MAC16 / 16 (Eyeriss ISCA'16 ratio; OHA_Main.m E_DRAM_to_SRAM).
    e_dram_pj_per_bit: float = 200.0 * _E_MAC16_PJ / 16.0
    #: CSV file with columns sram_kib, energy_pj_per_bit (CACTI 65 nm, authors' data/E_EySRAM_perbit.mat;
    #: `costmodel.tech.deepopt65.SRAM_ENERGY_CSV`).
    sram_energy_csv: str = SRAM_ENERGY_CSV
    #: True = reproduce the authors' per-image accounting of batched FC layers (their code divides
    #: the SRAM/DRAM counts by the batch and takes ceil(cycles/batch) per cycle component, but adds
    #: the MAC and register energy of the *whole* batch). Our results are per execution of the
    #: layer (whole batch), so in this mode the MAC+RF term of batched FC layers is multiplied by B
    #: and cycles are B * sum(ceil(c_i / B)); dividing by B then gives the authors' numbers.
    #: False (default) = the physically right count.
    fc_batch_quirk: bool = False

    @property
    def e_mac_pj(self) -> float:
        """Energy of one 8-bit MAC (one 32-bit add + one 8-bit multiply), pJ (eq. 13's e_MAC)."""
        return self.e_add32_pj + self.e_mul8_pj

    @property
    def e_rf_per_mac_pj(self) -> float:
        """Register energy per MAC, pJ: (b_f + b_i + 2 b_p) * e_R (eq. 14)."""
        return (self.b_f + self.b_i + 2 * self.b_p) * self.e_rf_pj_per_bit


def sram_energy_pj_per_bit(kib, params: SystolicParams | None = None) -> np.ndarray:
    """SRAM access energy per bit (pJ/bit) for SRAM sizes ``kib`` (KiB), looked up exactly in the
    table ``params.sram_energy_csv`` (default: the 65 nm table of `costmodel.tech.deepopt65`).

    Raises:
        ValueError: if a size is not one of the tabulated sizes (integers 4..512 KiB).
    """
    sizes, energy = sram_energy_table((params or SystolicParams()).sram_energy_csv)
    kib = np.asarray(kib, dtype=np.float64)
    idx = np.searchsorted(sizes, kib)
    idx_c = np.clip(idx, 0, len(sizes) - 1)
    ok = sizes[idx_c] == kib
    if not np.all(ok):
        bad = np.unique(kib[~ok])[:5]
        raise ValueError(
            f"SRAM sizes {bad.tolist()} KiB are not in the CACTI table "
            f"(integers {sizes[0]:g}..{sizes[-1]:g} KiB)")
    return energy[idx_c]


@dataclass(frozen=True)
class SystolicResult:
    """Cost of every (hardware point, layer, branch) triple.

    Attributes:
        energy_pj: (P, L, 5) float64, energy of one execution of layer l (all G groups and the
            whole batch B) on hardware point p with branch b, pJ (eq. 12). +inf where the branch
            cannot run the layer on that hardware.
        cycles: (P, L, 5) float64, compute cycles (eq. 17, as counted by the authors' code) plus
            DRAM stall cycles plus the serial ofmap write-back cycles. +inf where the branch cannot
            run, and for ZiXYZo where ``delay_ok`` is False (the authors leave its stall undefined).
        delay_ok: (P, L, 5) bool, False where footnote 1 of the paper excludes the branch from
            delay-based metrics (ZiXYZo when the filter SRAM cannot hold R*S*C*F_uv*b_f bits).
            Every branch may be used for the energy metric.
        dram_bits: optional (P, L, 5) float64, DRAM traffic in bits (filter + ifmap reads and
            ofmap write-back); None unless ``evaluate(..., breakdown=True)``.
        stall_cycles: optional (P, L, 5) float64, DRAM stall cycles; None unless breakdown.
    """

    energy_pj: np.ndarray
    cycles: np.ndarray
    delay_ok: np.ndarray
    dram_bits: np.ndarray | None = field(default=None)
    stall_cycles: np.ndarray | None = field(default=None)
