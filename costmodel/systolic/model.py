"""`evaluate`: the DeepOpt cost of every (hardware point, layer, branch), vectorised."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..workload import Layer
from . import kernels as kn
from .kernels import C_CYC, C_DBITS, C_EACC, C_STALL, C_WR, Geo, compact
from .params import BRANCHES, SystolicParams, SystolicResult, sram_energy_pj_per_bit
from .tiling import split_f, split_x, split_xy, split_xyf

__all__ = ["evaluate"]

_KIB_BITS = 8192.0
#: Flat (point, layer) pairs per block; keeps the kernels' temporaries in the L2 cache.
_CHUNK = 32768


def _as_hw(name: str, v) -> np.ndarray:
    a = np.asarray(v)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array-like, got shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.number):
        raise ValueError(f"{name} must be numeric, got dtype {a.dtype}")
    a = a.astype(np.float64)
    if a.size and (not np.all(np.isfinite(a)) or np.any(a <= 0) or np.any(a != np.round(a))):
        raise ValueError(f"{name} must hold positive integers")
    return a


def _layer_table(layers: Sequence[Layer]):
    """Per-layer model geometry. Returns dict of (L,) float arrays and the FC-b1 mask."""
    cols: dict[str, list[int | bool]] = {k: [] for k in ("R", "S", "sx", "sy", "C", "F", "OX", "OY", "IX", "IY", "mult",
                            "macs", "fc1", "fcb", "samples")}
    for lay in layers:
        if not isinstance(lay, Layer):
            raise ValueError(f"layers must be costmodel.workload.Layer objects, got {type(lay)!r}")
        if lay.kind == "fc":
            c = lay.C * lay.FY * lay.FX
            samples = lay.B * lay.OX * lay.OY
            row = dict(R=1, S=1, sx=1, sy=1, C=c, F=lay.K, OX=samples, OY=1, IX=samples, IY=1,
                       mult=lay.G, macs=c * lay.K * samples, fc1=samples == 1,
                       fcb=samples > 1, samples=samples)
        else:
            row = dict(R=lay.FY, S=lay.FX, sx=lay.SX, sy=lay.SY, C=lay.C, F=lay.K, OX=lay.OX,
                       OY=lay.OY, IX=(lay.OX - 1) * lay.SX + lay.FX,
                       IY=(lay.OY - 1) * lay.SY + lay.FY, mult=lay.G * lay.B,
                       macs=lay.FY * lay.FX * lay.C * lay.OX * lay.OY * lay.K, fc1=False,
                       fcb=False, samples=1)
        for k, v in row.items():
            cols[k].append(v)
    out = {k: np.asarray(v, dtype=bool if k in ("fc1", "fcb") else np.float64)
           for k, v in cols.items()}
    return out


def _compacting(kernel):
    """Wrap a kernel so that it returns the 5-row compact result (``kernels.compact``)."""
    def run(g: Geo, *args, **kw):
        out = kernel(g, *args, **kw)
        if isinstance(out, tuple):
            return (compact(out[0], g.ef, g.ei, g.ep, args[-1]),) + out[1:]
        return compact(out, g.ef, g.ei, g.ep, args[-1])
    return run


_K_XYZIZO = _compacting(kn.k_xyzizo)
_K_XZIYZO = _compacting(kn.k_xziyzo)
_K_XYZOZI = _compacting(kn.k_xyzozi)
_K_XZOYZI = _compacting(kn.k_xzoyzi)
_K_FC_ZF = _compacting(kn.k_fc_zf)
_K_FC_FZ = _compacting(kn.k_fc_fz)


def evaluate(layers: Sequence[Layer], J, K, fsram_kib, isram_kib, psram_kib,
             params: SystolicParams = SystolicParams(), *,
             breakdown: bool = False) -> SystolicResult:
    """DeepOpt energy and delay of every layer on every hardware point with each of the 5 branches.

    Args:
        layers: the L layers (``costmodel.workload.Layer``).
        J: PE-array rows, a 1-D integer array-like of length P.
        K: PE-array columns, a 1-D integer array-like of length P.
        fsram_kib: filter SRAM sizes in KiB (1 KiB = 8192 bits), a 1-D integer array-like of
            length P; each must be a size of the CACTI table (4..512 KiB).
        isram_kib: ifmap SRAM sizes in KiB, as ``fsram_kib``.
        psram_kib: psum SRAM sizes in KiB, as ``fsram_kib``.
        params: technology constants and switches.
        breakdown: also return ``dram_bits`` and ``stall_cycles`` (P, L, 5).

    Returns:
        SystolicResult with ``energy_pj`` (pJ, eq. 12-16), ``cycles`` (eq. 17 compute cycles +
        DRAM stall + ofmap write-back) and ``delay_ok`` (footnote 1), each (P, L, 5); +inf where a
        branch cannot run a layer on a point. Branch order: ``BRANCHES``.

    Raises:
        ValueError: if the hardware arrays differ in length, are not 1-D, hold non-positive or
            non-integer values, if an SRAM size is not in the energy table, or if ``layers`` is
            empty or holds something other than ``Layer``.
    """
    hw = _hardware_arrays(J, K, fsram_kib, isram_kib, psram_kib)
    layers = list(layers)
    if not layers:
        raise ValueError("layers is empty")
    p = params
    P, L = len(hw[0]), len(layers)
    pts = _points(hw, p)
    lt = _layer_table(layers)

    out = _Out(P, L, breakdown)
    groups = (np.flatnonzero(~lt["fc1"]), np.flatnonzero(lt["fc1"]))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for gi, lidx in enumerate(groups):
            n_l = len(lidx)
            if n_l == 0 or P == 0:
                continue
            tab = {k: v[lidx] for k, v in lt.items()}
            out.put(lidx, _evaluate_group(gi == 1, tab, pts, P, n_l, p, breakdown))
    # Infeasible branches are +inf in energy and cycles alike.
    bad = ~np.isfinite(out.energy)
    if bad.any():
        out.energy[bad] = np.inf
        out.cycles[bad] = np.inf
    assert len(BRANCHES) == 5
    return SystolicResult(out.energy, out.cycles, out.delay_ok, out.dram, out.stall)


def _hardware_arrays(J, K, fsram_kib, isram_kib, psram_kib) -> list[np.ndarray]:
    """The five hardware arrays as validated (P,) float64 arrays (`_as_hw`) of equal length."""
    names = ("J", "K", "fsram_kib", "isram_kib", "psram_kib")
    hw = [_as_hw(n, v) for n, v in zip(names, (J, K, fsram_kib, isram_kib, psram_kib))]
    lens = {len(a) for a in hw}
    if len(lens) != 1:
        raise ValueError("J, K, fsram_kib, isram_kib and psram_kib must have equal lengths, got "
                         + ", ".join(f"{n}={len(a)}" for n, a in zip(names, hw)))
    return hw


def _points(hw: list[np.ndarray], p: SystolicParams) -> dict[str, np.ndarray]:
    """Per hardware point, (P,) float64: J, K (PE rows, columns), fs / is_ / ps (filter / ifmap /
    psum SRAM sizes in bits) and e_f / e_i / e_p (their access energies, pJ per bit)."""
    Jf, Kf, fk, ik, pk = hw
    e_f, e_i, e_p = (sram_energy_pj_per_bit(x, p) for x in (fk, ik, pk))
    return dict(J=Jf, K=Kf, fs=fk * _KIB_BITS, is_=ik * _KIB_BITS, ps=pk * _KIB_BITS,
                e_f=e_f, e_i=e_i, e_p=e_p)


class _Out:
    """The (P, L, 5) result arrays: energy (pJ), cycles, delay_ok and, with ``breakdown``, dram
    (bits) and stall (cycles); None otherwise."""

    def __init__(self, P: int, L: int, breakdown: bool):
        self.energy = np.empty((P, L, 5))
        self.cycles = np.empty((P, L, 5))
        self.delay_ok = np.ones((P, L, 5), dtype=bool)
        self.dram = np.empty((P, L, 5)) if breakdown else None
        self.stall = np.empty((P, L, 5)) if breakdown else None

    def put(self, lidx: np.ndarray, flat: dict) -> None:
        """Scatter one layer group's flat (P * n_l, 5) results (`_evaluate_group`) to the layer
        columns ``lidx``."""
        P, n_l = self.energy.shape[0], len(lidx)
        self.energy[:, lidx, :] = flat["e"].reshape(P, n_l, 5)
        self.cycles[:, lidx, :] = flat["c"].reshape(P, n_l, 5)
        self.delay_ok[:, lidx, :] = flat["ok"].reshape(P, n_l, 5)
        if self.dram is not None and self.stall is not None:  # both or neither (``breakdown``)
            self.dram[:, lidx, :] = flat["d"].reshape(P, n_l, 5)
            self.stall[:, lidx, :] = flat["s"].reshape(P, n_l, 5)


def _evaluate_group(fc1: bool, tab: dict, pts: dict, P: int, n_l: int, p: SystolicParams,
                    breakdown: bool) -> dict:
    """The 5 branches of every (point, layer) pair of one layer group, in blocks of `_CHUNK`.

    Args:
        fc1: the group of batch-1 FC layers (else convolutions and batched FC layers).
        tab: `_layer_table` columns of the group's n_l layers. pts: `_points`.

    Returns:
        {"e": energy pJ, "c": cycles, "ok": delay_ok, "d": DRAM bits, "s": stall cycles}, each
        (P * n_l, 5) with the pair (point pi, layer li) at row pi * n_l + li ("d", "s" None
        without ``breakdown``).
    """
    total = P * n_l
    ok = np.ones((total, 5), dtype=bool)
    flat = dict(e=np.empty((total, 5)), c=np.empty((total, 5)), ok=ok,
                d=np.empty((total, 5)) if breakdown else None, s=np.empty((total, 5)) if breakdown else None)
    for a in range(0, total, _CHUNK):
        b = min(total, a + _CHUNK)
        k = np.arange(a, b)
        pi, li = k // n_l, k % n_l
        g = Geo(pts["J"][pi], pts["K"][pi], pts["fs"][pi], pts["is_"][pi], pts["ps"][pi], tab["R"][li],
                tab["S"][li], tab["sx"][li], tab["sy"][li], tab["C"][li], pts["e_f"][pi], pts["e_i"][pi],
                pts["e_p"][pi])
        f = tab["F"][li]
        if fc1:
            rs = _fc1_branches(g, f, p)
        else:
            rs, okz = _conv_branches(g, tab, li, p)
            ok[a:b, 4] = okz
        _store_branches(rs, tab, li, not fc1, p, flat, slice(a, b), breakdown)
    return flat


def _conv_branches(g: Geo, tab: dict, li: np.ndarray, p: SystolicParams) -> tuple[list, np.ndarray]:
    """Compact (5, n) results of the 5 branches for convolutions and batched FC layers (1x1
    convolutions over the batch), and ZiXYZo's delay_ok (n,) bool (footnote 1)."""
    f, wo, eo = tab["F"][li], tab["OX"][li], tab["OY"][li]
    fcb = tab["fcb"][li]
    row = kn._Row(g, wo, f, p)   # depth-1 X stage, shared by the X-first branches
    rs = [split_xy(_K_XYZIZO, g, wo, eo, f, p, row=row),
          split_x(_K_XZIYZO, g, wo, eo, f, p, row=row),
          split_xyf(_K_XYZOZI, g, wo, eo, f, p, row=row),
          split_xyf(_K_XZOYZI, g, wo, eo, f, p, row=row)]
    rz, okz = kn.k_zixyzo(g, wo, eo, f, tab["IX"][li], tab["IY"][li], p)
    rs.append(compact(rz, g.ef, g.ei, g.ep, p))
    if fcb.any():
        # Batched FC = 1x1 conv with the batch as ofmap width; the authors cost it
        # with NzF (= XYZiZo) and NFz (= XYZoZi) only and report NzF in the XZiYZo
        # and ZiXYZo columns, NFz in the XZoYZi column (LOS_Computation.m).
        for col, src in ((1, 0), (4, 0), (3, 2)):
            rs[col] = np.where(fcb, rs[src], rs[col])
        okz = okz | fcb
    return rs, okz


def _fc1_branches(g: Geo, f: np.ndarray, p: SystolicParams) -> list:
    """Compact (5, n) results of the 5 branch columns for batch-1 FC layers: the authors' zF
    schedule in XYZiZo, XZiYZo, ZiXYZo and Fz in XYZoZi, XZoYZi (LOS_Computation.m)."""
    r_zf = _K_FC_ZF(g, f, p)
    r_fz = split_f(_K_FC_FZ, g, f, p)
    return [r_zf, r_zf, r_fz, r_fz, r_zf]


def _store_branches(rs: list, tab: dict, li: np.ndarray, conv_group: bool, p: SystolicParams,
                    flat: dict, rows: slice, breakdown: bool) -> None:
    """Add the MAC + register energy to each branch's access energy and sum its cycles (compute +
    stall + write-back), both times the layer multiplier (groups x batch), into ``flat[...][rows]``.

    With ``p.fc_batch_quirk`` batched FC layers (conv group only) follow the authors' code: MAC
    energy of the whole batch added once more per further image, cycle components rounded up per
    image."""
    macs = tab["macs"][li]
    mult = tab["mult"][li]
    mac_e = macs * (p.e_mac_pj + p.e_rf_per_mac_pj)
    quirk = None
    if p.fc_batch_quirk and conv_group:
        fcb = tab["fcb"][li]
        if fcb.any():
            quirk = (fcb, tab["samples"][li])
    for col, r in enumerate(rs):
        acc_e, dbits = r[C_EACC], r[C_DBITS]
        cyc = r[C_CYC] + r[C_STALL] + r[C_WR]
        if quirk is not None:
            fcb, smp = quirk
            acc_e = acc_e + np.where(fcb, mac_e * (smp - 1.0), 0.0)
            per_img = (np.ceil(r[C_CYC] / smp) + np.ceil(r[C_STALL] / smp)
                       + np.ceil(r[C_WR] / smp)) * smp
            cyc = np.where(fcb, per_img, cyc)
        flat["e"][rows, col] = (acc_e + mac_e) * mult
        flat["c"][rows, col] = cyc * mult
        if breakdown:
            flat["d"][rows, col] = dbits * mult
            flat["s"][rows, col] = r[C_STALL] * mult
