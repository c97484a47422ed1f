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
    cols = {k: [] for k in ("R", "S", "sx", "sy", "C", "F", "OX", "OY", "IX", "IY", "mult",
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
        J, K: PE-array rows and columns, 1-D integer array-likes of length P.
        fsram_kib, isram_kib, psram_kib: filter / ifmap / psum SRAM sizes in KiB (1 KiB = 8192
            bits), 1-D integer array-likes of length P; each must be a size of the CACTI table
            (4..512 KiB).
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
    names = ("J", "K", "fsram_kib", "isram_kib", "psram_kib")
    hw = [_as_hw(n, v) for n, v in zip(names, (J, K, fsram_kib, isram_kib, psram_kib))]
    lens = {len(a) for a in hw}
    if len(lens) != 1:
        raise ValueError("J, K, fsram_kib, isram_kib and psram_kib must have equal lengths, got "
                         + ", ".join(f"{n}={len(a)}" for n, a in zip(names, hw)))
    layers = list(layers)
    if not layers:
        raise ValueError("layers is empty")
    p = params
    P, L = len(hw[0]), len(layers)
    Jf, Kf, fk, ik, pk = hw
    e_f, e_i, e_p = (sram_energy_pj_per_bit(x, p) for x in (fk, ik, pk))
    fs, is_, ps = fk * _KIB_BITS, ik * _KIB_BITS, pk * _KIB_BITS
    lt = _layer_table(layers)

    energy = np.empty((P, L, 5))
    cycles = np.empty((P, L, 5))
    delay_ok = np.ones((P, L, 5), dtype=bool)
    dram = np.empty((P, L, 5)) if breakdown else None
    stall = np.empty((P, L, 5)) if breakdown else None
    e_per_mac = p.e_mac_pj + p.e_rf_per_mac_pj

    groups = (np.flatnonzero(~lt["fc1"]), np.flatnonzero(lt["fc1"]))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for gi, lidx in enumerate(groups):
            n_l = len(lidx)
            if n_l == 0 or P == 0:
                continue
            tab = {k: v[lidx] for k, v in lt.items()}
            total = P * n_l
            e_out = np.empty((total, 5))
            c_out = np.empty((total, 5))
            ok_out = np.ones((total, 5), dtype=bool)
            d_out = np.empty((total, 5)) if breakdown else None
            s_out = np.empty((total, 5)) if breakdown else None
            for a in range(0, total, _CHUNK):
                b = min(total, a + _CHUNK)
                k = np.arange(a, b)
                pi, li = k // n_l, k % n_l
                g = Geo(Jf[pi], Kf[pi], fs[pi], is_[pi], ps[pi], tab["R"][li], tab["S"][li],
                        tab["sx"][li], tab["sy"][li], tab["C"][li], e_f[pi], e_i[pi], e_p[pi])
                f, wo, eo = tab["F"][li], tab["OX"][li], tab["OY"][li]
                if gi == 0:
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
                    ok_out[a:b, 4] = okz
                else:
                    r_zf = _K_FC_ZF(g, f, p)
                    r_fz = split_f(_K_FC_FZ, g, f, p)
                    # zF in XYZiZo, XZiYZo, ZiXYZo; Fz in XYZoZi, XZoYZi (LOS_Computation.m).
                    rs = [r_zf, r_zf, r_fz, r_fz, r_zf]
                macs = tab["macs"][li]
                mult = tab["mult"][li]
                mac_e = macs * e_per_mac
                quirk = None
                if p.fc_batch_quirk and gi == 0:
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
                    e_out[a:b, col] = (acc_e + mac_e) * mult
                    c_out[a:b, col] = cyc * mult
                    if breakdown:
                        d_out[a:b, col] = dbits * mult
                        s_out[a:b, col] = r[C_STALL] * mult
            energy[:, lidx, :] = e_out.reshape(P, n_l, 5)
            cycles[:, lidx, :] = c_out.reshape(P, n_l, 5)
            delay_ok[:, lidx, :] = ok_out.reshape(P, n_l, 5)
            if breakdown:
                dram[:, lidx, :] = d_out.reshape(P, n_l, 5)
                stall[:, lidx, :] = s_out.reshape(P, n_l, 5)
    # Infeasible branches are +inf in energy and cycles alike.
    bad = ~np.isfinite(energy)
    if bad.any():
        energy[bad] = np.inf
        cycles[bad] = np.inf
    assert len(BRANCHES) == 5
    return SystolicResult(energy, cycles, delay_ok, dram, stall)
