"""Psum-SRAM sub-volumes (DeepOpt Sec. 2.5, eq. 10): split an ofmap into blocks the psum SRAM holds.

When the psum SRAM cannot hold the extent a branch wants to keep open (a full ofmap row of
F_uv planes, E rows, or all F planes), the dimension is replaced by its effective value and the
branch is applied to every sub-volume: ``floor(dim / dim_eff)`` identical full blocks plus one
remainder block. This follows the authors' decomposition order exactly (X first, then Y, then
F), including two of its simplifications:

* after a G_eff split the full-width blocks are costed once per ofmap row (E_eff = 1 there);
* in the three-way split of XYZoZi / XZoYZi, the filter extent of the remainder blocks is the
  F_eff of the first block.

All functions are element-wise over flat arrays; sub-blocks are evaluated only on the elements
that need them (compressed index sets), so the common no-split case costs one kernel call.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .kernels import CYC, N_ROWS, Geo
from .params import SystolicParams

Kernel = Callable[..., tuple]


def _sub(kernel: Kernel, g: Geo, idx, wo, eo, f, p):
    return kernel(g.take(idx), wo[idx], eo[idx], f[idx], p)


def split_xy(kernel: Kernel, g: Geo, wo, eo, f, p: SystolicParams) -> np.ndarray:
    """Cost of an ofmap block (wo x eo x f) with G_eff / E_eff sub-volumes (XYZiZo style).

    Returns a (9, n) array of element counts / cycles (see kernels.py).
    """
    r1, wx, ey, _ = kernel(g, wo, eo, f, p)
    need = ((wx < wo) | (ey < eo)) & np.isfinite(r1[CYC])
    if not need.any():
        return r1
    idx = np.flatnonzero(need)
    gs = g.take(idx)
    wo_s, eo_s, f_s = wo[idx], eo[idx], f[idx]
    wx_s, ey_s = wx[idx], ey[idx]
    acc = np.zeros((N_ROWS, len(idx)))
    xe = wx_s < wo_s
    px = np.floor(wo_s / wx_s)
    acc += np.where(xe, r1[:, idx] * (eo_s * px), 0.0)
    w_rem = np.where(xe, wo_s - wx_s * px, wo_s)
    done = xe & (w_rem == 0)
    e_rem = eo_s.copy()
    m2 = ~done & (ey_s < eo_s)
    if m2.any():
        i2 = np.flatnonzero(m2)
        r2, _, ey2, _ = _sub(kernel, gs, i2, w_rem, eo_s, f_s, p)
        py = np.floor(eo_s[i2] / ey2)
        acc[:, i2] += r2 * py
        e_rem[i2] = eo_s[i2] - ey2 * py
        done[i2] = e_rem[i2] == 0
    if not done.all():
        i3 = np.flatnonzero(~done)
        acc[:, i3] += _sub(kernel, gs, i3, w_rem, e_rem, f_s, p)[0]
    out = r1.copy()
    out[:, idx] = acc
    return out


def split_x(kernel: Kernel, g: Geo, wo, eo, f, p: SystolicParams) -> np.ndarray:
    """Cost with G_eff sub-volumes only (XZiYZo: the psum SRAM holds one row segment)."""
    r1, wx, _, _ = kernel(g, wo, eo, f, p)
    need = (wx < wo) & np.isfinite(r1[CYC])
    if not need.any():
        return r1
    idx = np.flatnonzero(need)
    px = np.floor(wo[idx] / wx[idx])
    out = r1.copy()
    out[:, idx] = r1[:, idx] * px
    w_rem = wo[idx] - wx[idx] * px
    m = w_rem > 0
    if m.any():
        i2 = idx[m]
        w2 = wo.copy()
        w2[idx] = w_rem
        out[:, i2] += _sub(kernel, g, i2, w2, eo, f, p)[0]
    return out


def split_xyf(kernel: Kernel, g: Geo, wo, eo, f, p: SystolicParams) -> np.ndarray:
    """Cost with G_eff, E_eff and F_eff sub-volumes (XYZoZi / XZoYZi)."""
    r1, wx, ey, fe = kernel(g, wo, eo, f, p)
    need = ((wx < wo) | (ey < eo) | (fe < f)) & np.isfinite(r1[CYC])
    if not need.any():
        return r1
    idx = np.flatnonzero(need)
    gs = g.take(idx)
    wo_s, eo_s, f_s = wo[idx], eo[idx], f[idx]
    wx_s, ey_s, fe_s = wx[idx], ey[idx], fe[idx]
    r1_s = r1[:, idx]
    acc = np.zeros((N_ROWS, len(idx)))
    xe = wx_s < wo_s
    px = np.floor(wo_s / wx_s)
    acc += np.where(xe, r1_s * (eo_s * px), 0.0)
    w_rem = np.where(xe, wo_s - wx_s * px, wo_s)
    f_sub = np.where(xe, fe_s, f_s)
    # Remaining columns when the block has a single row (batched FC): one more block.
    m1 = xe & (w_rem > 0) & (ey_s == eo_s)
    if m1.any():
        i1 = np.flatnonzero(m1)
        acc[:, i1] += _sub(kernel, gs, i1, w_rem, eo_s, fe_s, p)[0]
    my = (w_rem > 0) & (ey_s < eo_s)
    if my.any():
        i2 = np.flatnonzero(my)
        r2, _, ey2, _ = _sub(kernel, gs, i2, w_rem, eo_s, f_sub, p)
        py = np.floor(eo_s[i2] / ey2)
        acc[:, i2] += r2 * py
        e_rem = eo_s[i2] - ey2 * py
        m3 = e_rem > 0
        if m3.any():
            i3 = i2[m3]
            e_all = eo_s.copy()
            e_all[i3] = e_rem[m3]
            acc[:, i3] += _sub(kernel, gs, i3, w_rem, e_all, fe_s, p)[0]
    mf = fe_s < f_s
    if mf.any():
        only_f = mf & ~xe & ~my
        acc[:, only_f] = r1_s[:, only_f]
        pf = np.floor(f_s / fe_s)
        acc[:, mf] *= pf[mf]
        f_rem = f_s - fe_s * pf
        m4 = mf & (f_rem > 0)
        if m4.any():
            i4 = np.flatnonzero(m4)
            acc[:, i4] += split_xy(kernel, gs.take(i4), wo_s[i4], eo_s[i4], f_rem[i4], p)
    out = r1.copy()
    out[:, idx] = acc
    return out


def split_f(kernel: Kernel, g: Geo, f, p: SystolicParams) -> np.ndarray:
    """FC Fz branch: F_eff filter blocks plus a remainder block."""
    r1, fe = kernel(g, f, p)
    need = (fe < f) & np.isfinite(r1[CYC])
    if not need.any():
        return r1
    idx = np.flatnonzero(need)
    pf = np.floor(f[idx] / fe[idx])
    out = r1.copy()
    out[:, idx] = r1[:, idx] * pf
    f_rem = f[idx] - fe[idx] * pf
    m = f_rem > 0
    if m.any():
        i2 = idx[m]
        out[:, i2] += kernel(g.take(i2), f_rem[m], p)[0]
    return out
