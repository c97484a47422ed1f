"""DeepOpt cost model of a J x K systolic array with filter / ifmap / psum SRAMs, vectorised.

Model of S. D. Manasi and S. S. Sapatnekar, "DeepOpt: Optimized Scheduling of CNN Workloads for
ASIC-based Systolic Deep Learning Accelerators", ASP-DAC 2021, re-derived from the paper and the
authors' public MATLAB code (github.com/manasiumn37/DeepOpt, ``src/`` and ``src/private/``) as
closed forms over NumPy arrays: ``evaluate`` costs P hardware points x L layers x 5 branches at
once (a few hundred array operations per block of (point, layer) pairs, no per-point loop).

Public interface: ``BRANCHES``, ``SystolicParams``, ``SystolicResult``, ``evaluate``.

What is modelled (paper section / equation):

* Unit volume (eq. 1): C_uv = min(floor(J/S), C) channels on the PE rows, F_uv = min(K, F)
  filters on the columns. Compute cycles (eq. 17) are counted as the authors' code counts them:
  G*R cycles per ofmap row of F_uv planes, times E, ceil(C/C_uv) and ceil(F/F_uv), so that
  cycles >= N_MAC / (C_uv * S * F_uv) with equality when C_uv | C and F_uv | F.
* SRAM accesses: per-cycle counts of Table 2 (eqs. 2-8) for the innermost X_a or Z_i path,
  times the loop multiplier of eq. (9). Ratios C/C_uv and F/F_uv enter SRAM counts
  fractionally and cycle counts with ceil() (authors' code). With unit stride each ifmap element
  of the R rows is read once per row pass (eq. 3 with sliding reuse).
* DRAM accesses per branch (Sec. 2.5) with the psum-SRAM effective extents G_eff, E_eff, F_eff
  (eq. 10, F_eff rounded down to a multiple of F_uv) and the ifmap / filter reloads when the
  SRAMs are too small (eq. 11, refined as in the authors' code: data processed in alternating
  order so that what is still resident is not reloaded). Every branch writes the ofmap once.
* Energy (eqs. 12-16): E = N_MAC*(e_add32 + e_mul8) + N_MAC*(b_f + b_i + 2 b_p)*e_R
  + sum_SRAM accesses*b*e_S(size) + (filter + ifmap + ofmap DRAM bits)*e_D, with e_S from the
  CACTI 65 nm table (``costmodel/data/sram_energy_pj_per_bit.csv``, read by
  `costmodel.tech.deepopt65`, which also holds the SRAM and PE areas) per SRAM size.
* Delay (Sec. 3.2): eq. (17) compute cycles + DRAM stall cycles + ofmap write-back cycles. DRAM
  loads take ceil(bits/128) cycles per stage and overlap the previous stage's compute;
  stall = max(0, load - compute); later ofmap rows load only the U*W*C_uv new ifmap elements;
  the ofmap write-back is serial (not overlapped).
* Feasibility (branch -> +inf): the filter SRAM must hold one R x S x C_uv x F_uv block, the
  ifmap SRAM the R rows of the (effective) ofmap-row window (Z_i-first: one R x S x C_uv window,
  and the psum SRAM F_uv partial sums), and J >= S. Footnote 1: ZiXYZo is kept for the energy
  metric but flagged ``delay_ok = False`` (cycles +inf, as the authors set its stall to Inf)
  where the filter SRAM cannot hold R*S*C*F_uv*b_f bits.

Layers: a grouped layer (G > 1, also depthwise) costs G times one group (AlexNet conv2/4/5:
DeepOpt doubles energy and cycles); a convolution with batch B > 1 costs B times one image. FC
layers (``kind == "fc"``) follow the authors: with batch 1 their two FC schedules (zF in the
XYZiZo, XZiYZo and ZiXYZo columns, Fz in XYZoZi and XZoYZi); with batch B > 1 a 1x1 convolution
whose ofmap width is B, costed with XYZiZo (their NzF, also reported in the XZiYZo and ZiXYZo
columns) and XYZoZi (their NFz, also in the XZoYZi column). Results are for one execution of
the layer, i.e. the whole batch.

Where the authors' code was followed rather than the paper (all deliberate, to reproduce the
paper's Table 3/4, which that code produced):

1. Eq. (11) says the ifmap is reloaded ceil(F/F_uv) times when it does not fit; the code (and
   this model) reloads only the part not resident in the ifmap SRAM (whole rows) for every
   further filter set.
2. The ifmap width / height are recomputed from the ofmap: W = (G-1)*U + S, H = (E-1)*U + R
   (the authors pass the padded input size, which differs only when padding is fractional);
   dilation is not modelled (DeepOpt has none).
3. Sub-volume decomposition (eq. 10) follows the code's order, including its two
   simplifications listed in ``tiling.py``.
4. The MAC energy is one 32-bit add + one 8-bit multiply (``Opt_Hardware_Allocation.m``), and
   the ofmap write-back uses b_o = 8 bits (eq. 16 writes b_i; equal here).
5. Batched FC layers: the code divides SRAM/DRAM counts by the batch (per image) but adds the
   MAC and register energy of the whole batch, and rounds each cycle component up per image.
   Default here is the physically right count; ``SystolicParams(fc_batch_quirk=True)``
   reproduces the code's numbers (scaled to one execution of the whole batch).
6. ZiXYZo's stall is undefined (+inf cycles) when R*S*C*F_uv filters do not fit the filter
   SRAM (footnote 1 and ``ZtoXtoYtoF.m``); its energy is still computed.
7. Pipeline fill cycles ((J' - 1) per layer) are neglected, as in the paper and the code's
   returned cycle counts.
8. SRAM counts: with unit stride the ifmap SRAM is read once per element of the R rows of a
   row pass (R*W*C_uv) instead of eq. (3)'s S*C_uv per cycle (eq. 3 is used for stride > 1);
   for the second and later channel blocks every filter row reads and writes the psum
   (2R*G*F_uv per row instead of eq. 5's (2R-1)*G*F_uv).
9. For 1x1 convolutions with stride 2 (DeepOpt's ResNet-50) the code's per-row ifmap reload
   W*U*C + W*(R-U)*evicted has a negative second term; it is reproduced, so XZiYZo / ZiXYZo
   DRAM traffic can grow with the ifmap SRAM there. Likewise a larger psum SRAM can increase
   traffic or even make a branch infeasible (a wider G_eff whose R-row window no longer fits
   the ifmap SRAM); fSRAM and iSRAM are otherwise monotone.
10. Where J < S (C_uv = 0, e.g. AlexNet conv1 on J = 8) the authors' code fails (division by
    zero); here every branch is +inf for that layer.

Verification: ``tests/costmodel/systolic/test_systolic.py`` checks hand-derived counts and a table of results of
the authors' MATLAB functions run under GNU Octave (energy, cycles and DRAM bits of all five
branches agree to the 10 printed digits; ~3,000 further random cases agreed in development).

Units: energies in pJ, cycles in clock cycles, SRAM sizes in KiB (8192 bits), accesses in
elements internally and bits in ``dram_bits``.
"""

from .model import evaluate
from .params import BRANCHES, TECH_SCALE, SystolicParams, SystolicResult, sram_energy_pj_per_bit

__all__ = ["BRANCHES", "TECH_SCALE", "SystolicParams", "SystolicResult", "evaluate",
           "sram_energy_pj_per_bit"]
