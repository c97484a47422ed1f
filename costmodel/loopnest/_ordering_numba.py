"""Numba kernels of `costmodel.loopnest.ordering.OrderingEvaluator`: one compiled loop per ordering.

Imported lazily by `costmodel.loopnest.ordering` (only when numba is installed and not disabled with
``DSE_SWEEP_NO_NUMBA=1``). The kernels are generic over layers and accelerators: everything
specific to one evaluator is passed in as small integer / float tables built by
``OrderingEvaluator._numba_tables`` (layouts below). The arithmetic is that of the NumPy path of
`OrderingEvaluator.evaluate` operation for operation (exact int64 counts, float64 energy summed in
the same order, the same tie-breaking of LOMA's prefix choice), so both paths give identical
results; ``tests/costmodel/loopnest/test_ordering.py`` checks it.

One entry point, `evaluate_batch` (single orderings go through it as a (1, L) view), so one
compilation: ``cache=True`` caches the machine code in ``costmodel/__pycache__`` (or numba's user
cache directory if that is read-only). The first call in a fresh environment compiles for ~8-10 s
(mostly numba's type inference of `_row`); later processes load the cache in ~0.5 s.

Where the kernel departs from the NumPy code's formulation (not its results): the remaining
products above a prefix end, ``total // cumprod[e]`` and ``cumprod_O[L] // cumprod_O[e]``, are
computed as suffix products (equal for any permutation of the loop multiset, the evaluator's
input contract), and integer division uses ``error_model="numpy"`` (no zero-division checks; all
divisors are word widths >= 1).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# rows of the per-type table ft (m = number of loop types): cumulative-product factors, then
# relevance of W, I, O (0/1)
T_F, T_W, T_O, T_OIRR, T_IBCG, T_OY, T_FY, T_OX, T_FX = range(9)
T_REL = 9          # rows 9, 10, 11: relevant to W, I, O
N_T = 12

# columns of the per (operand, level) table lv[op, li, :] (op: 0 W, 1 I, 2 O)
LV_MEM, LV_WORD, LV_TOP, LV_K0, LV_K1, LV_K2, LV_K3, LV_K4 = range(8)
# the boundary below level li (between li - 1, or the MAC for li = 0, and li)
LV_G, LV_NUP, LV_NLO, LV_FINOK, LV_EVERY, LV_WIN = range(8, 14)
N_LV = 14
# columns of the per (operand, level) float table lvf[op, li, :]: real / padded scales of the
# counts at the upper and the lower side of the boundary below level li, and (LV_WIN set: I's
# padded window dims unrolled inside the lower tile) the fractions of OY, FY, OX, FX of
# `reference.window_share`
LVF_SUP, LVF_SLO, LVF_AOY, LVF_AFY, LVF_AOX, LVF_AFX = range(6)
N_LVF = 6

# columns of the per-memory int table mem[mi, :]
M_SIZE, M_NOPS, M_OP0, M_LI0, M_WORD, M_SHARED, M_NI, M_PJINT = 0, 1, 2, 5, 8, 9, 10, 11
N_M = 12
# columns of the per-memory float table memf[mi, :]
MF_RPJ, MF_WPJ, MF_RBW, MF_WBW = range(4)
N_MF = 4

# par: layer / evaluator scalars
P_TOTAL, P_BW, P_BI, P_BO, P_BOF, P_SY, P_SX, P_DY, P_DX, P_EVEN = range(10)
P_NL0 = 10         # 10, 11, 12: number of levels of W, I, O
N_P = 13


@njit(cache=True, error_model="numpy")
def _tile(op, li, e, C, lv, par):
    """(tile elements, tile bits) of operand op at level li holding the loops [0, e)."""
    if op == 0:
        te = C[T_W, e] * lv[0, li, LV_K0]
        return te, te * par[P_BW]
    if op == 2:
        te = C[T_O, e] * lv[2, li, LV_K0]
        if lv[2, li, LV_K1] != 0 or C[T_OIRR, e] < C[T_OIRR, C.shape[1] - 1]:
            return te, te * par[P_BO]
        return te, te * par[P_BOF]
    iy = _rows(par[P_SY], par[P_DY], C[T_OY, e] * lv[1, li, LV_K1], C[T_FY, e] * lv[1, li, LV_K2])
    ix = _rows(par[P_SX], par[P_DX], C[T_OX, e] * lv[1, li, LV_K3], C[T_FX, e] * lv[1, li, LV_K4])
    te = C[T_IBCG, e] * lv[1, li, LV_K0] * iy * ix
    return te, te * par[P_BI]


@njit(cache=True, error_model="numpy")
def _rows(s, d, o, f):
    """`reference.window_rows`: min(s (o - 1) + d (f - 1) + 1, o f) at reduced stride and dilation."""
    span = s * (o - 1) + d * (f - 1) + 1
    read = o * f
    return span if span <= read else read


@njit(cache=True, error_model="numpy")
def _window_share(li, e, C, lv, a, par):
    """`reference.window_share` of I's tile at level li holding the loops [0, e), fractions a."""
    oy = C[T_OY, e] * lv[1, li, LV_K1]
    fy = C[T_FY, e] * lv[1, li, LV_K2]
    ox = C[T_OX, e] * lv[1, li, LV_K3]
    fx = C[T_FX, e] * lv[1, li, LV_K4]
    iy = _rows(par[P_SY], par[P_DY], oy, fy)
    ix = _rows(par[P_SX], par[P_DX], ox, fx)
    iyr = _rows(par[P_SY], par[P_DY], oy * a[LVF_AOY], fy * a[LVF_AFY])
    ixr = _rows(par[P_SX], par[P_DX], ox * a[LVF_AOX], fx * a[LVF_AFX])
    return (iyr * ixr) / (iy * ix)


@njit(cache=True, error_model="numpy")
def _row(o, ft, lv, lvf, mem, memf, par, mac_e, C, rem, remo, ctb, ccost, clo, chi, cj, choice, start, bnd, te_at,
         reads, writes, ei, ef, TB, wv, tv, gi, goff, dbm):
    """Energy, latency, EDP and status (1 valid, 0 invalid, -1 type id out of range) of ordering o.

    The remaining arguments are scratch arrays (see `_scratch`); ei (4, E) / ef (E,) hold the
    transfers of the stall model in the reference's order: memory index, is a write, memory index
    of the link's lower level (-1: the MAC), T of the link / words; wv (E,) / tv (E,) their windows
    and cycles, gi (E,) their indices sorted by port (2 mi: memory mi's shared or read port,
    2 mi + 1: its write port; stable), goff (2 nm + 1,) the ports' offsets into gi, dbm (2 nm,)
    memory mi double-buffered, then the fill positions of the sort."""
    inf = np.inf
    L = o.shape[0]
    m = ft.shape[1]
    total = par[P_TOTAL]
    even = par[P_EVEN] != 0
    # ---- cumulative products of the per-type factors along the ordering; suffix products of all
    # factors (rem[e] = total // C[T_F, e]) and of the O-relevant ones (C[T_O, L] // C[T_O, e]):
    # equal to those quotients for a permutation of the loop multiset, without divisions
    for r in range(9):
        C[r, 0] = 1
    for i in range(L):
        t = o[i]
        if t < 0 or t >= m:
            return inf, inf, inf, -1
        for r in range(9):
            C[r, i + 1] = C[r, i] * ft[r, t]
    rem[L] = 1
    remo[L] = 1
    for i in range(L - 1, -1, -1):
        t = o[i]
        rem[i] = rem[i + 1] * ft[T_F, t]
        remo[i] = remo[i + 1] * ft[T_O, t]
    # ---- allocation (LOMA), memories innermost first
    nm = mem.shape[0]
    for k in range(3):
        start[k] = 0
    for mi in range(nm):
        size = mem[mi, M_SIZE]
        bounded = size >= 0
        nops = mem[mi, M_NOPS]
        fixed = 0
        nfree = 0
        for j in range(nops):
            op = mem[mi, M_OP0 + j]
            li = mem[mi, M_LI0 + j]
            s = start[op]
            if lv[op, li, LV_TOP] != 0:
                if bounded:
                    for e in range(s, L + 1):
                        if _tile(op, li, e, C, lv, par)[1] > size:
                            return inf, inf, inf, 0
                fixed += _tile(op, li, L, C, lv, par)[1]
                choice[j] = L
                continue
            hi = s
            for e in range(s, L + 1):
                tb = _tile(op, li, e, C, lv, par)[1]
                if bounded and tb > size:
                    break
                ctb[nfree, e] = tb
                ccost[nfree, e] = rem[e] * tb
                hi = e + 1
            clo[nfree] = s
            chi[nfree] = hi
            cj[nfree] = j
            nfree += 1
        if nfree == 0:
            if bounded and fixed > size:
                return inf, inf, inf, 0
        elif nfree == 1:
            best = -1
            bc = 0
            for e in range(clo[0], chi[0]):
                if bounded and ctb[0, e] + fixed > size:
                    continue
                c = ccost[0, e]
                if best < 0 or c <= bc:
                    best = e
                    bc = c
            if best < 0:
                return inf, inf, inf, 0
            choice[cj[0]] = best
        elif nfree == 2:
            cap = size - fixed
            b1 = -1
            b2 = -1
            bc = 0
            for e1 in range(clo[0], chi[0]):
                left = cap - ctb[0, e1]
                c1 = ccost[0, e1]
                for e2 in range(clo[1], chi[1]):
                    if bounded and ctb[1, e2] > left:
                        continue
                    if even and e1 != e2:
                        continue
                    c = c1 + ccost[1, e2]
                    if b1 < 0 or c <= bc:
                        b1 = e1
                        b2 = e2
                        bc = c
            if b1 < 0:
                return inf, inf, inf, 0
            choice[cj[0]] = b1
            choice[cj[1]] = b2
        else:
            cap = size - fixed
            b1 = -1
            b2 = -1
            b3 = -1
            bc = 0
            for e1 in range(clo[0], chi[0]):
                for e2 in range(clo[1], chi[1]):
                    for e3 in range(clo[2], chi[2]):
                        if bounded and ctb[0, e1] + ctb[1, e2] + ctb[2, e3] > cap:
                            continue
                        if even and (e1 != e2 or e1 != e3):
                            continue
                        c = ccost[0, e1] + ccost[1, e2] + ccost[2, e3]
                        if b1 < 0 or c <= bc:
                            b1 = e1
                            b2 = e2
                            b3 = e3
                            bc = c
            if b1 < 0:
                return inf, inf, inf, 0
            choice[cj[0]] = b1
            choice[cj[1]] = b2
            choice[cj[2]] = b3
        if even and nfree > 0 and nfree < nops:
            for k in range(nfree):
                if choice[cj[k]] != L:
                    return inf, inf, inf, 0
        for j in range(nops):
            op = mem[mi, M_OP0 + j]
            bnd[op, mem[mi, M_LI0 + j]] = choice[j]
            start[op] = choice[j]
    # ---- cost of the allocated mapping
    for mi in range(nm):
        TB[mi] = 0
    ne = 0
    acc = 0.0
    pb = par[P_BO]
    fb = par[P_BOF]
    for op in range(3):
        nl = par[P_NL0 + op]
        for li in range(nl):
            reads[li] = 0.0
            writes[li] = 0.0
            te, tb = _tile(op, li, bnd[op, li], C, lv, par)
            te_at[li] = te
            TB[lv[op, li, LV_MEM]] += tb
        bb = par[P_BW] if op == 0 else par[P_BI]
        for up in range(nl):
            lo = up - 1
            w_up = lv[op, up, LV_WORD]
            g = lv[op, up, LV_G]
            n_up = lv[op, up, LV_NUP]
            n_lo = lv[op, up, LV_NLO]
            s_up = lvf[op, up, LVF_SUP]
            s_lo = lvf[op, up, LVF_SLO]
            bl = 0 if lo < 0 else bnd[op, lo]
            if lv[op, up, LV_WIN] != 0:  # I's window dims unrolled inside the tile: fractional window
                w = _window_share(lo, bl, C, lv, lvf[op, up], par)
                s_up = s_up * w
                s_lo = s_lo * w
            j = bl
            if lv[op, up, LV_EVERY] == 0:
                while j < L and ft[T_REL + op, o[j]] == 0:
                    j += 1
            F = rem[j]
            te = 1 if lo < 0 else te_at[lo]
            mu = lv[op, up, LV_MEM]
            ml = -1
            T = 1
            if lo >= 0:
                ml = lv[op, lo, LV_MEM]
                k = bl
                k0 = 0 if lo == 0 else bnd[op, lo - 1]
                while k > k0 and ft[T_REL + op, o[k - 1]] == 0:
                    k -= 1
                T = C[T_F, j] // C[T_F, k]
            if op != 2:
                rd = F * n_up * ((te * g * bb + w_up - 1) // w_up) * s_up
                reads[up] += rd
                ei[0, ne], ei[1, ne], ei[2, ne], ei[3, ne], ef[ne] = mu, 0, ml, T, rd
                ne += 1
                if lo >= 0:
                    wl = lv[op, lo, LV_WORD]
                    wr = F * n_lo * ((te * bb + wl - 1) // wl) * s_lo
                    writes[lo] += wr
                    ei[0, ne], ei[1, ne], ei[2, ne], ei[3, ne], ef[ne] = ml, 1, ml, T, wr
                    ne += 1
                continue
            D = remo[bl]
            fin = D if lv[op, up, LV_FINOK] != 0 else 0
            part = F - fin
            rb = F - D
            wu = n_up * (fin * ((te * g * fb + w_up - 1) // w_up) + part * ((te * g * pb + w_up - 1) // w_up)) * s_up
            ru = rb * n_up * ((te * g * pb + w_up - 1) // w_up) * s_up
            writes[up] += wu
            reads[up] += ru
            ei[0, ne], ei[1, ne], ei[2, ne], ei[3, ne], ef[ne] = mu, 1, ml, T, wu
            ne += 1
            ei[0, ne], ei[1, ne], ei[2, ne], ei[3, ne], ef[ne] = mu, 0, ml, T, ru
            ne += 1
            if lo >= 0:
                wl = lv[op, lo, LV_WORD]
                rl = n_lo * (fin * ((te * fb + wl - 1) // wl) + part * ((te * pb + wl - 1) // wl)) * s_lo
                wr = rb * n_lo * ((te * pb + wl - 1) // wl) * s_lo
                reads[lo] += rl
                writes[lo] += wr
                ei[0, ne], ei[1, ne], ei[2, ne], ei[3, ne], ef[ne] = ml, 0, ml, T, rl
                ne += 1
                ei[0, ne], ei[1, ne], ei[2, ne], ei[3, ne], ef[ne] = ml, 1, ml, T, wr
                ne += 1
        for li in range(nl):
            mi = lv[op, li, LV_MEM]
            acc = acc + (reads[li] * memf[mi, MF_RPJ] + writes[li] * memf[mi, MF_WPJ])
    energy = mac_e + acc
    # ---- stalls (reference._stalls): per memory port, the largest excess of the transfers whose
    # windows (total if the link's lower level is the MAC or double-buffered, else total // T)
    # lie within one window. Each transfer's window wv and cycles tv are computed once (tv with
    # the reference's operations: words * word_bits / bandwidth / instances); a stable counting
    # sort gathers each port's transfers in the reference's order into gi, so the sums over them
    # add the same floats in the same order; each distinct window is summed once (equal windows,
    # equal sums; the running maximum, replaced only by a strictly larger excess, does not depend
    # on the order of the windows)
    for mi in range(nm):
        size = mem[mi, M_SIZE]
        dbm[mi] = 1 if size < 0 or 2 * TB[mi] <= size else 0
    for g in range(2 * nm + 1):
        goff[g] = 0
    for kk in range(ne):
        mi = ei[0, kk]
        ml = ei[2, kk]
        wv[kk] = total if ml < 0 or dbm[ml] != 0 else total // ei[3, kk]
        isw = ei[1, kk] != 0
        bw = memf[mi, MF_WBW] if isw else memf[mi, MF_RBW]
        tv[kk] = ef[kk] * mem[mi, M_WORD] / bw / mem[mi, M_NI]
        g = 2 * mi + 1 if isw and mem[mi, M_SHARED] == 0 else 2 * mi
        goff[g + 1] += 1
    for g in range(2 * nm):
        goff[g + 1] += goff[g]
    for g in range(2 * nm):
        dbm[g] = goff[g]          # fill positions (dbm reused)
    for kk in range(ne):
        mi = ei[0, kk]
        g = 2 * mi + 1 if ei[1, kk] != 0 and mem[mi, M_SHARED] == 0 else 2 * mi
        gi[dbm[g]] = kk
        dbm[g] += 1
    compute = float(total)
    stall = 0.0
    for mi in range(nm):
        s = 0.0
        for g in range(2 * mi, 2 * mi + 2):
            g0 = goff[g]
            g1 = goff[g + 1]
            for k in range(g0, g1):
                wk = wv[gi[k]]
                dup = False
                for q in range(g0, k):
                    if wv[gi[q]] == wk:
                        dup = True
                        break
                if dup:
                    continue
                a = 0.0
                for q in range(g0, g1):
                    jj = gi[q]
                    if wv[jj] <= wk:
                        a += tv[jj]
                x = a - wk
                if x > s:
                    s = x
        stall = s if mi == 0 else max(stall, s)
    latency = compute + stall
    return energy, latency, energy * latency, 1


@njit(cache=True, error_model="numpy")
def _window(ml, T, total, mem, TB):
    """The window (cycles) of a transfer whose link's lower level is memory ml (-1: the MAC)."""
    if ml < 0:
        return total
    size = mem[ml, M_SIZE]
    if size < 0 or 2 * TB[ml] <= size:
        return total
    return total // T


@njit(cache=True, error_model="numpy")
def _scratch(L, nm, par):
    nl = max(par[P_NL0], par[P_NL0 + 1], par[P_NL0 + 2])
    C = np.empty((11, L + 1), dtype=np.int64)         # 9 cumulative products, rem, remo
    ctb = np.empty((3, L + 1), dtype=np.int64)
    ccost = np.empty((3, L + 1), dtype=np.int64)
    small = np.empty((5, 3), dtype=np.int64)           # clo, chi, cj, choice, start
    bnd = np.zeros((3, nl), dtype=np.int64)
    te_at = np.empty(nl, dtype=np.int64)
    lvl = np.empty((2, nl), dtype=np.float64)          # reads, writes (scaled to the real data)
    ne = 4 * (par[P_NL0] + par[P_NL0 + 1] + par[P_NL0 + 2])
    ei = np.empty((4, ne), dtype=np.int64)             # transfers: memory, is a write, lower memory, T
    ef = np.empty(ne, dtype=np.float64)                # transfers: words
    tb = np.empty(nm, dtype=np.int64)                  # TB
    wv = np.empty((2, ne), dtype=np.int64)             # transfers: window; one port's transfer indices
    tv = np.empty(ne, dtype=np.float64)                # transfers: cycles
    goff = np.empty((2, 2 * nm + 1), dtype=np.int64)   # port offsets into gi; double-buffered / fill positions
    return C, ctb, ccost, small, bnd, te_at, lvl, ei, ef, tb, wv, tv, goff


@njit(cache=True, error_model="numpy")
def evaluate_batch(O, ft, lv, lvf, mem, memf, par, mac_e, out):
    """Costs of the orderings O (n, L) into out (4, n): energy, latency, edp, valid (1.0 / 0.0).

    Returns the first row with a type id out of range (the rows from there on are not evaluated),
    else -1. The only entry point (one compilation): `evaluate_one` passes a (1, L) view."""
    C, ctb, ccost, sm, bnd, te_at, lvl, ei, ef, tb, wv, tv, goff = _scratch(O.shape[1], mem.shape[0], par)
    for i in range(O.shape[0]):
        e, la, d, st = _row(O[i], ft, lv, lvf, mem, memf, par, mac_e, C, C[9], C[10], ctb, ccost, sm[0], sm[1],
                            sm[2], sm[3], sm[4], bnd, te_at, lvl[0], lvl[1], ei, ef, tb, wv[0], tv, wv[1], goff[0],
                            goff[1])
        if st < 0:
            return i
        out[0, i] = e
        out[1, i] = la
        out[2, i] = d
        out[3, i] = 1.0 if st == 1 else 0.0
    return -1
