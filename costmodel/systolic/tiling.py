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

from .kernels import CYC, Geo
from .params import SystolicParams

Kernel = Callable[..., tuple]


def _sub(kernel: Kernel, g: Geo, idx, wo, eo, f, p):
    return kernel(g.take(idx), wo[idx], eo[idx], f[idx], p)


def split_xy(kernel: Kernel, g: Geo, wo, eo, f, p: SystolicParams, row=None) -> np.ndarray:
    """Cost of an ofmap block (wo x eo x f) with G_eff / E_eff sub-volumes (XYZiZo style).

    ``row``: optional precomputed depth-1 stage of the first block (shared between branches).

    floor(G/G_eff) full-width blocks (each costed per ofmap row, E_eff = 1 there), then the
    remaining columns with floor(E/E_eff) full-height blocks and one remainder block.
    Returns the kernel's result rows summed over all sub-volumes.
    """
    r1, wx, ey, _ = kernel(g, wo, eo, f, p, row=row)
    need = ((wx < wo) | (ey < eo)) & np.isfinite(r1[CYC])
    if not need.any():
        return r1
    xe = need & (wx < wo)
    px = np.floor(wo / wx)
    py = np.floor(eo / ey)
    out = r1 * np.where(xe, eo * px, np.where(need, py, 1.0))
    w_rem = np.where(xe, wo - wx * px, wo)
    e_rem = np.where(xe, eo, eo - ey * py)
    m2 = xe & (w_rem > 0) & (ey < eo)
    if m2.any():
        i2 = np.flatnonzero(m2)
        r2, _, ey2, _ = _sub(kernel, g, i2, w_rem, eo, f, p)
        py2 = np.floor(eo[i2] / ey2)
        out[:, i2] += r2 * py2
        e_rem[i2] = eo[i2] - ey2 * py2
    m3 = need & (w_rem > 0) & (e_rem > 0)
    if m3.any():
        i3 = np.flatnonzero(m3)
        out[:, i3] += _sub(kernel, g, i3, w_rem, e_rem, f, p)[0]
    return out


def split_x(kernel: Kernel, g: Geo, wo, eo, f, p: SystolicParams, row=None) -> np.ndarray:
    """Cost with G_eff sub-volumes only (XZiYZo: the psum SRAM holds one row segment)."""
    r1, wx, _, _ = kernel(g, wo, eo, f, p, row=row)
    need = (wx < wo) & np.isfinite(r1[CYC])
    if not need.any():
        return r1
    px = np.where(need, np.floor(wo / wx), 1.0)
    out = r1 * px
    w_rem = np.where(need, wo - wx * px, 0.0)
    m = w_rem > 0
    if m.any():
        i2 = np.flatnonzero(m)
        out[:, i2] += _sub(kernel, g, i2, w_rem, eo, f, p)[0]
    return out


def split_xyf(kernel: Kernel, g: Geo, wo, eo, f, p: SystolicParams, row=None) -> np.ndarray:
    """Cost with G_eff, E_eff and F_eff sub-volumes (XYZoZi / XZoYZi).

    The X/Y decomposition of ``split_xy`` is done for F_eff filters and repeated floor(F/F_eff)
    times; the remaining filters form one more block decomposed by ``split_xy``.
    """
    r1, wx, ey, fe = kernel(g, wo, eo, f, p, row=row)
    need = ((wx < wo) | (ey < eo) | (fe < f)) & np.isfinite(r1[CYC])
    if not need.any():
        return r1
    xe = need & (wx < wo)
    ff = need & (fe < f)
    px = np.floor(wo / wx)
    py = np.floor(eo / ey)
    pf = np.where(ff, np.floor(f / fe), 1.0)
    w_rem = np.where(xe, wo - wx * px, wo)
    my = need & (w_rem > 0) & (ey < eo)
    out = r1 * (np.where(xe, eo * px, np.where(my, py, 1.0)) * pf)
    e_rem = np.where(xe, eo, eo - ey * py)
    m2 = xe & my
    if m2.any():
        i2 = np.flatnonzero(m2)
        r2, _, ey2, _ = _sub(kernel, g, i2, w_rem, eo, fe, p)
        py2 = np.floor(eo[i2] / ey2)
        out[:, i2] += r2 * (py2 * pf[i2])
        e_rem[i2] = eo[i2] - ey2 * py2
    m3 = need & (w_rem > 0) & (e_rem > 0) & (xe | my)
    if m3.any():
        i3 = np.flatnonzero(m3)
        out[:, i3] += _sub(kernel, g, i3, w_rem, e_rem, fe, p)[0] * pf[i3]
    f_rem = f - fe * pf
    m4 = ff & (f_rem > 0)
    if m4.any():
        i4 = np.flatnonzero(m4)
        out[:, i4] += split_xy(kernel, g.take(i4), wo[i4], eo[i4], f_rem[i4], p)
    return out


def split_f(kernel: Kernel, g: Geo, f, p: SystolicParams) -> np.ndarray:
    """FC Fz branch: F_eff filter blocks plus a remainder block."""
    r1, fe = kernel(g, f, p)
    need = (fe < f) & np.isfinite(r1[CYC])
    if not need.any():
        return r1
    pf = np.where(need, np.floor(f / fe), 1.0)
    out = r1 * pf
    f_rem = np.where(need, f - fe * pf, 0.0)
    m = f_rem > 0
    if m.any():
        i2 = np.flatnonzero(m)
        out[:, i2] += kernel(g.take(i2), f_rem[i2], p)[0]
    return out
