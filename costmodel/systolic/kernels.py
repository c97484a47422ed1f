"""Closed-form, element-wise cost kernels: one call costs one psum-SRAM sub-volume of a layer.

Every kernel works on flat float64 arrays (one element per (hardware point, layer) pair) and
returns a (9, n) array with the rows named by the ``CYC .. DO`` constants below (all counts are
*elements*, not bits, as in the authors' code), plus the effective extents of eq. (10) that the
tiling layer (``tiling.py``) needs. Infeasible elements (an SRAM below the branch's minimum
working set, or an array too short for one filter row) get +inf in every row.

Notation (paper Fig. 1/3): R x S filter, C channels, F filters, E x G ofmap, U stride;
C_uv = min(floor(J/S), C), F_uv = min(K, F) (eq. 1); n_C = C/C_uv, n_F = F/F_uv (eq. 9 uses the
fractional ratios for SRAM counts and ceil() for cycle counts, as the authors' code does).
"""

from __future__ import annotations

from dataclasses import dataclass

from typing import Any

import numpy as np

from .params import SystolicParams

# Row indices of a kernel result.
CYC, STALL, WR, SF, SI, SP, DF, DI, DO = range(9)
N_ROWS = 9

_max0 = np.maximum


@dataclass
class Geo:
    """Per-element inputs of the kernels (flat float64 arrays of equal length)."""

    J: np.ndarray    # PE rows
    K: np.ndarray    # PE columns
    fs: np.ndarray   # filter SRAM, bits
    is_: np.ndarray  # ifmap SRAM, bits
    ps: np.ndarray   # psum SRAM, bits
    R: np.ndarray    # filter rows (FY)
    S: np.ndarray    # filter columns (FX)
    sx: np.ndarray   # horizontal stride
    sy: np.ndarray   # vertical stride
    C: np.ndarray    # input channels (per group)
    ef: np.ndarray | None = None  # filter-SRAM energy, pJ/bit (only for ``compact``)
    ei: np.ndarray | None = None  # ifmap-SRAM energy, pJ/bit
    ep: np.ndarray | None = None  # psum-SRAM energy, pJ/bit

    def take(self, idx: np.ndarray) -> "Geo":
        vals: list[Any] = [  # arrays; the energies may be None
            None if (v := getattr(self, k)) is None else v[idx]
            for k in self.__dataclass_fields__]
        return Geo(*vals)

    def __len__(self) -> int:
        return len(self.J)


def load_cycles(bits, p: SystolicParams):
    """Cycles to move ``bits`` over the DRAM link: whole blocks, then ceil(bits / bandwidth)."""
    if p.dram_block_bits == p.dram_bw_bits_per_cycle:
        return np.ceil(bits / p.dram_bw_bits_per_cycle)
    blocks = np.ceil(bits / p.dram_block_bits) * p.dram_block_bits
    return np.ceil(blocks / p.dram_bw_bits_per_cycle)


def _finish(res: np.ndarray, bad: np.ndarray) -> np.ndarray:
    if bad.any():
        res[:, np.flatnonzero(bad)] = np.inf
    return res


# Rows of a compacted result (see ``compact``).
C_CYC, C_STALL, C_WR, C_EACC, C_DBITS = range(5)


def compact(res: np.ndarray, ef, ei, ep, p: SystolicParams) -> np.ndarray:
    """Fold a (9, n) kernel result into (5, n): cycles, stall, write-back cycles, access energy
    in pJ (eqs. 15-16 without the MAC/RF terms) and DRAM bits. ``ef, ei, ep``: SRAM pJ/bit."""
    out = np.empty((5, res.shape[1]))
    out[:3] = res[:3]
    dbits = res[DF] * p.b_f + res[DI] * p.b_i + res[DO] * p.b_o
    out[C_DBITS] = dbits
    out[C_EACC] = (res[SF] * (p.b_f * ef) + res[SI] * (p.b_i * ei) + res[SP] * (p.b_p * ep)
                   + dbits * p.e_dram_pj_per_bit)
    return out


class _Row:
    """Depth-1 stage X (sub-path X_a, Sec. 2.2): one ofmap row of F_uv planes from C_uv channels.

    Per-cycle SRAM traffic of Table 2 / eqs. (2), (3), (5), accumulated over the G*R cycles of
    the row; the row width is limited by the psum SRAM (G_eff of eq. 10). DRAM traffic of the
    first row: the R x S x C_uv x F_uv filter block and R ifmap rows of C_uv channels; the load
    overlaps the row's compute, the excess is a stall (Sec. 3.2, Fig. 8).

    ``cyc`` (G x R cycles a row; the kernels multiply by E, ceil(C/C_uv) and ceil(F/F_uv)) is
    eq. (17), by design not SCALE-Sim's weight-stationary count: DeepOpt puts only S x C_uv
    channels on the J rows and runs the R filter rows as R passes (R x ceil(C/C_uv) row folds where
    SCALE-Sim packs ceil(R*S*C/J)), and counts no pipeline fill or drain. On 1x1 layers SCALE-Sim
    3.0.0 gives exactly eq. 17 + folds x (2J + K - 2) - 1 (folds = ceil(C/C_uv) x ceil(F/F_uv));
    with larger filters it can fall below eq. 17, where its packing saves more than the fill
    (tests/costmodel/systolic/test_scalesim_deepopt.py, docs/flexer.md "SCALE-Sim").
    """

    __slots__ = ("cu", "fu", "wx", "wix", "cyc", "sf", "si", "sp", "fb", "ib", "stall", "slack",
                 "bad")

    def __init__(self, g: Geo, wo: np.ndarray, f: np.ndarray, p: SystolicParams):
        self.cu = cu = np.minimum(np.floor(g.J / g.S), g.C)           # eq. (1)
        self.fu = fu = np.minimum(g.K, f)                              # eq. (1)
        self.fb = fb = g.R * g.S * cu * fu * p.b_f                     # filter block, bits
        fits = wo * fu * p.b_p <= g.ps
        self.wx = wx = np.where(fits, wo, np.floor(g.ps / (fu * p.b_p)))  # G_eff, eq. (10)
        self.wix = wix = (wx - 1) * g.sx + g.S                         # ifmap columns read
        self.ib = ib = g.R * wix * cu * p.b_i                          # R ifmap rows, bits
        self.bad = (cu < 1) | (wx < 1) | (fb > g.fs) | (ib > g.is_)
        self.cyc = cyc = wx * g.R                                      # G x R cycles
        self.sf = fb / p.b_f                                           # eq. (2) x G R
        # eq. (3) x G R; with unit stride each ifmap element of the R rows is read once.
        self.si = np.where(g.sx == 1, g.R * wix * cu, cyc * g.S * cu)
        self.sp = wx * fu * (2 * g.R - 1)                              # eq. (5) x G R
        d = cyc - load_cycles(fb + ib, p)
        self.stall = _max0(-d, 0.0)
        self.slack = _max0(d, 0.0)


def _rows_fit(g: Geo, row: _Row, eo, p: SystolicParams):
    """Depth-2 Y after X: E_eff rows of the psum SRAM (eq. 10) and the per-row stall.

    Each further ofmap row loads only U*W*C_uv new ifmap elements (Sec. 3.2).
    Returns (E_eff, ifmap rows H_eff, stall_xy, slack_xy).
    """
    rows = np.floor(g.ps / (row.wx * row.fu * p.b_p))
    ey = np.minimum(rows, eo)
    hiy = (ey - 1) * g.sy + g.R
    d = row.cyc - load_cycles(g.sy * row.wix * row.cu * p.b_i, p)
    stall = row.stall + _max0(-d, 0.0) * (ey - 1)
    slack = row.slack + _max0(d, 0.0) * (ey - 1)
    return ey, hiy, stall, slack


def k_xyzizo(g: Geo, wo, eo, f, p: SystolicParams, row: _Row | None = None):
    """XYZiZo on an ofmap block of wo columns, eo rows, f filters.

    DRAM: filters R*S*C*F once; the ifmap once if W*H*C fits the ifmap SRAM, else every further
    filter set (ceil(F/F_uv) - 1 of them) reloads what did not stay in the SRAM, processing the
    channels in alternating order (the paper's eq. (11) without the reuse of the resident rows).
    Returns (res (9, n), G_eff, E_eff, F).
    """
    row = _Row(g, wo, f, p) if row is None else row
    cu, fu, wx, wix = row.cu, row.fu, row.wx, row.wix
    ey, hiy, stall_xy, slack_xy = _rows_fit(g, row, eo, p)
    n_c = g.C / cu
    c_c = np.ceil(n_c)
    n_f = f / fu
    c_f = np.ceil(n_f)
    res = np.empty((N_ROWS, len(g)))
    res[CYC] = row.cyc * ey * c_c * c_f
    res[SF] = row.sf * ey * n_c * n_f
    res[SI] = row.si * ey * n_c * c_f
    res[SP] = (row.sp * ey + 2 * wx * fu * g.R * ey * (c_c - 1)) * n_f
    res[DF] = g.R * g.S * g.C * f
    vol = wix * hiy * g.C
    full = vol * p.b_i <= g.is_
    rows_in = np.floor(g.is_ / (wix * p.b_i))
    res[DI] = np.where(full, vol, vol + (vol - wix * rows_in) * (c_f - 1))
    res[DO] = ey * wx * f
    res[WR] = load_cycles(ey * wx * f * p.b_o, p)
    # Stall over Z (channel blocks) ...
    none_slack = slack_xy <= 0
    two_blocks = g.fs >= 2 * row.fb
    partial = np.ceil((stall_xy - slack_xy) * (n_c - 1))
    st_z = np.where(stall_xy <= slack_xy, 0.0, partial)
    st_xyz = np.where(none_slack | ~two_blocks, np.ceil(stall_xy * n_c), stall_xy + st_z)
    # ... and over Zo (filter sets): channel blocks still resident in the ifmap SRAM need no
    # ifmap load, only the filter block.
    st_fx = _max0(load_cycles(row.fb, p) - row.cyc, 0.0)
    blocks_in = np.floor(g.is_ / (wix * hiy * cu * p.b_i))
    rev = np.where(full, np.ceil(st_fx * n_c),
                   st_fx * blocks_in + np.ceil(stall_xy * (n_c - blocks_in)))
    res[STALL] = np.where(none_slack, st_xyz + np.ceil(rev * (n_f - 1)), np.ceil(st_xyz * n_f))
    return _finish(res, row.bad), wx, ey, f


def k_xyzozi(g: Geo, wo, eo, f, p: SystolicParams, row: _Row | None = None):
    """XYZoZi on an ofmap block: F_eff filters (a multiple of F_uv) share the psum SRAM.

    DRAM: filters R*S*C*F_eff once; per channel block the W*H*C_uv ifmap once if it fits, else
    the rows that did not stay are reloaded for every further filter set; times C/C_uv.
    Returns (res, G_eff, E_eff, F_eff).
    """
    row = _Row(g, wo, f, p) if row is None else row
    cu, fu, wx, wix = row.cu, row.fu, row.wx, row.wix
    ey, hiy, stall_xy, slack_xy = _rows_fit(g, row, eo, p)
    planes = np.floor(g.ps / (wx * ey * p.b_p))
    fe = np.where(planes >= f, f, np.floor(planes / fu) * fu)        # F_eff
    n_c = g.C / cu
    c_c = np.ceil(n_c)
    n_fe = fe / fu
    c_fe = np.ceil(n_fe)
    res = np.empty((N_ROWS, len(g)))
    res[CYC] = row.cyc * ey * c_fe * c_c
    res[SF] = row.sf * ey * n_fe * n_c
    res[SI] = row.si * ey * c_fe * n_c
    res[SP] = row.sp * ey * n_fe + 2 * wx * fu * g.R * ey * n_fe * (c_c - 1)
    res[DF] = g.R * g.S * g.C * fe
    blk = wix * hiy * cu
    fit = blk * p.b_i <= g.is_
    rows_in = np.floor(g.is_ / (wix * cu * p.b_i))
    di_blk = np.where(fit, blk, blk + wix * (hiy - rows_in) * cu * (c_fe - 1))
    res[DI] = di_blk * n_c
    res[DO] = ey * wx * fe
    res[WR] = load_cycles(ey * wx * fe * p.b_o, p)
    st_fx = _max0(load_cycles(row.fb, p) - row.cyc, 0.0)
    case1 = np.where(fit, stall_xy + np.ceil(st_fx * (n_fe - 1)), np.ceil(stall_xy * n_fe))
    partial = np.where(st_fx <= slack_xy, 0.0, np.ceil((st_fx - slack_xy) * (n_fe - 1)))
    case3 = np.where(st_fx <= 0, stall_xy,
                     np.where(g.fs >= 2 * row.fb, stall_xy + partial,
                              stall_xy + np.ceil(st_fx * (n_fe - 1))))
    st_xyf = np.where(slack_xy <= 0, case1, np.where(stall_xy <= 0, 0.0, case3))
    res[STALL] = np.ceil(st_xyf * n_c)
    return _finish(res, row.bad), wx, ey, fe


def k_xzoyzi(g: Geo, wo, eo, f, p: SystolicParams, row: _Row | None = None):
    """XZoYZi on an ofmap block: the psum SRAM holds F_eff planes of one row, then E_eff rows.

    DRAM: per channel slab the R*S*C_uv*F_eff filters once if they fit the filter SRAM, else the
    evicted planes are reloaded for every further row; times C/C_uv; the ifmap W*H*C once.
    Returns (res, G_eff, E_eff, F_eff).
    """
    row = _Row(g, wo, f, p) if row is None else row
    cu, fu, wx, wix = row.cu, row.fu, row.wx, row.wix
    n_c = g.C / cu
    c_c = np.ceil(n_c)
    fits_all = wx * f * p.b_p <= g.ps
    fe = np.where(fits_all, f, np.floor(np.floor(g.ps / (wx * p.b_p)) / fu) * fu)
    n_fe = fe / fu
    c_fe = np.ceil(n_fe)
    # Zo after X: one filter block per set, overlapped with the previous set's row.
    d_f = row.cyc - load_cycles(row.fb, p)
    stall_xf = row.stall + np.ceil(_max0(-d_f, 0.0) * (n_fe - 1))
    slack_xf = row.slack + _max0(d_f, 0.0) * (c_fe - 1)
    rows = np.floor(g.ps / (wx * fe * p.b_p))
    ey = np.minimum(rows, eo)
    hiy = (ey - 1) * g.sy + g.R
    res = np.empty((N_ROWS, len(g)))
    res[CYC] = row.cyc * c_fe * ey * c_c
    res[SF] = row.sf * n_fe * ey * n_c
    res[SI] = row.si * c_fe * ey * n_c
    res[SP] = row.sp * n_fe * ey + 2 * wx * fu * g.R * n_fe * ey * (c_c - 1)
    planes_in = np.floor(g.fs / (g.R * g.S * p.b_f))
    tot = fe * cu
    df_slab = g.R * g.S * cu * fe + np.where(planes_in >= tot, 0.0,
                                             g.R * g.S * (tot - planes_in) * (ey - 1))
    res[DF] = df_slab * n_c
    res[DI] = wix * hiy * g.C
    res[DO] = ey * wx * fe
    res[WR] = load_cycles(ey * wx * fe * p.b_o, p)
    por = g.sy * wix * cu * p.b_i
    st_ix = _max0(load_cycles(por, p) - row.cyc, 0.0)
    st_fx = _max0(-d_f, 0.0)
    sets_in = np.floor(g.fs / row.fb)
    rev = st_ix + np.where(g.fs >= g.R * g.S * cu * fe * p.b_f, 0.0,
                           np.ceil(st_fx * (n_fe - sets_in)))
    case1 = stall_xf + rev * (ey - 1)
    partial = np.where(st_ix <= slack_xf, 0.0, (st_ix - slack_xf) * (ey - 1))
    case3 = np.where(st_ix <= 0, stall_xf,
                     np.where(g.is_ >= row.ib + por, stall_xf + partial,
                              stall_xf + st_ix * (ey - 1)))
    st_xfy = np.where(slack_xf <= 0, case1, np.where(stall_xf <= 0, 0.0, case3))
    res[STALL] = np.ceil(st_xfy * n_c)
    return _finish(res, row.bad), wx, ey, fe


def k_xziyzo(g: Geo, wo, eo, f, p: SystolicParams, row: _Row | None = None):
    """XZiYZo on an ofmap block of wo columns (all rows; only G_eff can come from the psum SRAM).

    DRAM: filters R*S*C*F_uv per filter set if they fit the filter SRAM, else the evicted planes
    are reloaded for every further ofmap row; ifmap W*H*C if the W*R*C window fits, else
    W*R*C + (W*U*C + W*(R-U)*evicted)*(E-1); further filter sets reload what is not resident.
    Returns (res, G_eff, E, F).
    """
    row = _Row(g, wo, f, p) if row is None else row
    cu, fu, wx, wix = row.cu, row.fu, row.wx, row.wix
    n_c = g.C / cu
    c_c = np.ceil(n_c)
    n_f = f / fu
    c_f = np.ceil(n_f)
    ey = eo
    hiy = (ey - 1) * g.sy + g.R
    stall_xz = np.ceil(row.stall * n_c)
    slack_xz = row.slack * c_c
    res = np.empty((N_ROWS, len(g)))
    res[CYC] = row.cyc * c_c * ey * c_f
    res[SF] = row.sf * n_c * ey * n_f
    res[SI] = row.si * n_c * ey * c_f
    res[SP] = (row.sp + (c_c - 1) * 2 * wx * fu * g.R) * ey * n_f
    planes_in = np.floor(g.fs / (g.R * g.S * p.b_f))
    tot = fu * g.C
    rsck = g.R * g.S * g.C * fu
    res[DF] = (rsck + np.where(planes_in >= tot, 0.0,
                               g.R * g.S * (tot - planes_in) * (ey - 1))) * n_f
    win_in = np.floor(g.is_ / (wix * g.R * p.b_i))               # W x R windows resident
    vol = wix * hiy * g.C
    di_set = np.where(win_in >= g.C, vol,
                      g.R * wix * g.C + (wix * g.sy * g.C + wix * (g.R - g.sy) * (g.C - win_in))
                      * (ey - 1))
    res[DI] = np.where(vol * p.b_i <= g.is_, vol,
                       di_set + (di_set - wix * g.R * win_in) * (c_f - 1))
    res[DO] = ey * wx * f
    res[WR] = load_cycles(ey * wx * f * p.b_o, p)
    # Stall, further rows: only the new ifmap rows if the W*R*C window fits, else the full R rows;
    # plus the filter block where the filter SRAM cannot hold R*S*C*F_uv.
    full_f = g.fs >= rsck * p.b_f
    ifx = np.where(g.is_ >= wix * g.R * g.C * p.b_i, g.sy * wix * cu * p.b_i, row.ib)
    ld = load_cycles(ifx, p)
    rev_a = np.ceil(_max0(ld - row.cyc, 0.0) * n_c)
    slack_xzy = slack_xz + _max0(row.cyc - ld, 0.0) * c_c * (ey - 1)
    sets_in = np.floor(g.fs / row.fb)
    st_lo = _max0(ld - row.cyc, 0.0)
    st_hi = _max0(load_cycles(ifx + row.fb, p) - row.cyc, 0.0)
    rev_b = st_lo * sets_in + np.ceil(st_hi * (n_c - sets_in))
    st_xzy = stall_xz + np.where(full_f, rev_a, rev_b) * (ey - 1)
    # Further filter sets: the next set's filters may be prefetched into the spare filter SRAM.
    extra = np.minimum(rsck * p.b_f, g.fs - rsck * p.b_f)
    saved = np.minimum(slack_xzy, load_cycles(extra, p))
    nxt = _max0(st_xzy - saved, 0.0)
    no_overlap = (g.fs <= rsck * p.b_f) | (slack_xzy <= 0)
    st1 = np.where(no_overlap, np.ceil(st_xzy * n_f), st_xzy + np.ceil(nxt * (n_f - 1)))
    res[STALL] = np.where(slack_xz <= 0, st1, 0.0)
    return _finish(res, row.bad), wx, eo, f


def k_zixyzo(g: Geo, wo, eo, f, wi, hi, p: SystolicParams):
    """ZiXYZo: output-stationary, each ofmap pixel reduced over all channels first (Z_i, Table 2).

    DRAM: filters R*S*C*F_uv per filter set if they fit the filter SRAM, else the evicted planes
    are reloaded for every output pixel; ifmap W*H*C if the R*W*C window fits, W*R*C +
    (W*U*C + evicted*(R-U)*C)*(E-1) if at least the R*S*C window fits, else the per-row count
    times E. Stall cycles are only defined when the filter SRAM holds R*S*C*F_uv (footnote 1);
    elsewhere the stall is +inf.
    Returns (res, delay_ok).
    """
    cu = np.minimum(np.floor(g.J / g.S), g.C)
    fu = np.minimum(g.K, f)
    n_c = g.C / cu
    c_c = np.ceil(n_c)
    n_f = f / fu
    c_f = np.ceil(n_f)
    bad = (cu < 1) | (g.R * g.S * cu * fu * p.b_f > g.fs) | (fu * p.b_p > g.ps) | \
          (g.R * g.S * cu * p.b_i > g.is_)
    cyc_z = c_c * g.R
    rsck = g.R * g.S * g.C * fu
    rsc = g.R * g.S * g.C
    res = np.empty((N_ROWS, len(g)))
    res[CYC] = cyc_z * wo * eo * c_f
    res[SF] = fu * cu * g.S * n_c * g.R * wo * eo * n_f
    res[SI] = n_c * g.R * g.S * cu * wo * eo * c_f
    res[SP] = fu * wo * eo * n_f
    planes_in = np.floor(g.fs / (g.R * g.S * p.b_f))
    tot = fu * g.C
    res[DF] = (rsck + np.where(planes_in >= tot, 0.0,
                               g.R * g.S * (tot - planes_in) * (wo * eo - 1))) * n_f
    rs_in = np.floor(g.is_ / (g.S * g.R * p.b_i))          # R x S windows resident
    zr_in = np.floor(g.is_ / (g.C * g.R * p.b_i))          # R x C ifmap columns resident
    di_row = np.where(rs_in >= g.C, wi * g.R * g.C,
                      rsc + (g.R * g.sx * g.C + g.R * (g.S - g.sx) * (g.C - rs_in)) * (wo - 1))
    di_set = np.where(zr_in >= wi, wi * hi * g.C,
                      np.where(rs_in >= g.C,
                               g.R * wi * g.C + (wi * g.sy * g.C + (wi - zr_in) * (g.R - g.sy)
                                                 * g.C) * (eo - 1),
                               di_row * eo))
    vol = wi * hi * g.C
    res[DI] = np.where(vol * p.b_i <= g.is_, vol,
                       di_set + (di_set - g.C * g.R * zr_in) * (c_f - 1))
    res[DO] = eo * wo * f
    res[WR] = load_cycles(eo * wo * f * p.b_o, p)
    # Stall (defined only when R*S*C*F_uv filters stay in the filter SRAM).
    full_f = g.fs >= rsck * p.b_f
    d_z = cyc_z - load_cycles(rsck * p.b_f + rsc * p.b_i, p)
    poe = load_cycles(g.sx * g.R * g.C * p.b_i, p)
    stall_zx = _max0(-d_z, 0.0) + _max0(poe - cyc_z, 0.0) * (wo - 1)
    slack_zx = _max0(d_z, 0.0) + _max0(cyc_z - poe, 0.0) * (wo - 1)
    izr = np.where(g.is_ >= wi * g.R * g.C * p.b_i, g.sy * g.R * g.C * p.b_i, rsc * p.b_i)
    ld = load_cycles(izr, p)
    stall_zxy = np.where(stall_zx <= 0, 0.0,
                         stall_zx + _max0(ld - cyc_z, 0.0) * wo * (eo - 1))
    slack_zxy = slack_zx + _max0(cyc_z - ld, 0.0) * wo * (eo - 1)
    extra = np.minimum(rsck * p.b_f, g.fs - rsck * p.b_f)
    saved = np.minimum(slack_zxy, load_cycles(extra, p))
    nxt = _max0(stall_zxy - saved, 0.0)
    no_overlap = (g.fs <= rsck * p.b_f) | (slack_zxy <= 0)
    st = np.where(stall_zxy <= 0, 0.0,
                  np.where(no_overlap, np.ceil(stall_zxy * n_f),
                           stall_zxy + np.ceil(nxt * (n_f - 1))))
    res[STALL] = np.where(full_f, st, np.inf)
    return _finish(res, bad), full_f


def k_fc_zf(g: Geo, f, p: SystolicParams):
    """FC layer without batching, channels first (the authors' zF branch).

    Each weight is read once from DRAM and SRAM; the C-element input vector is read once from
    DRAM if it fits the ifmap SRAM, else the non-resident part is reloaded for every filter set.
    """
    cu = np.minimum(g.J, g.C)
    fu = np.minimum(g.K, f)
    n_f = f / fu
    c_f = np.ceil(n_f)
    c_c = np.ceil(g.C / cu)
    bad = (cu * fu * p.b_f > g.fs) | (fu * p.b_p > g.ps) | (cu * p.b_i > g.is_)
    res = np.empty((N_ROWS, len(g)))
    res[CYC] = c_c * c_f
    res[SF] = g.C * f
    res[DF] = g.C * f
    fit = g.C * p.b_i <= g.is_
    in_sram = np.floor(g.is_ / p.b_i)
    res[DI] = np.where(fit, g.C, g.C + (g.C - in_sram) * (c_f - 1))
    res[SI] = g.C * c_f
    res[SP] = f
    res[DO] = f
    res[WR] = load_cycles(f * p.b_o, p)
    st_z = _max0(load_cycles(g.C * fu * p.b_f + g.C * p.b_i, p) - c_c, 0.0)
    reload = np.where(fit, 0.0, (g.C - in_sram) * p.b_i)
    st_f = _max0(load_cycles(g.C * fu * p.b_f + reload, p) - c_c, 0.0)
    res[STALL] = st_z + np.ceil(st_f * (n_f - 1))
    return _finish(res, bad)


def k_fc_fz(g: Geo, f, p: SystolicParams):
    """FC layer without batching, filters first (the authors' Fz branch) on F_eff filters.

    The psum SRAM holds F_eff (a multiple of F_uv) partial sums. Returns (res, F_eff).
    """
    cu = np.minimum(g.J, g.C)
    fu = np.minimum(g.K, f)
    fe = np.where(f * p.b_p <= g.ps, f, np.floor(np.floor(g.ps / p.b_p) / fu) * fu)
    bad = (cu * fu * p.b_f > g.fs) | (cu * p.b_i > g.is_) | (fe < 1)
    n_c = g.C / cu
    c_c = np.ceil(n_c)
    c_fe = np.ceil(fe / fu)
    res = np.empty((N_ROWS, len(g)))
    res[CYC] = c_fe * c_c
    res[SF] = g.C * fe
    res[DF] = g.C * fe
    res[SI] = g.C
    res[DI] = g.C
    res[SP] = fe + 2 * fe * (c_c - 1)
    res[DO] = fe
    res[WR] = load_cycles(fe * p.b_o, p)
    st_f = _max0(load_cycles(cu * fe * p.b_f + cu * p.b_i, p) - c_fe, 0.0)
    res[STALL] = np.ceil(st_f * n_c)
    return _finish(res, bad), np.where(bad, f, fe)
