"""The pure-Python single-ordering path of `costmodel.loopnest.ordering.OrderingEvaluator` (backend "numpy").

Kept apart from `costmodel.loopnest.ordering` so that each module stays one job; `OrderingEvaluator`
prepares the per-type tables (``ev._scalar`` etc.) this function reads.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

__all__ = ["evaluate_one_py"]

def evaluate_one_py(ev, ordering) -> tuple[float, float, float, bool]:
    """`OrderingEvaluator.evaluate_one` in pure Python (the backend "numpy"): the same arithmetic
    as the batch path, one ordering at a time, in Python integers and floats."""
    o = ordering.tolist() if isinstance(ordering, np.ndarray) else list(ordering)
    if len(o) != ev.n_loops:
        raise ValueError(f"ordering must have {ev.n_loops} loops, got {len(o)}")
    sc = ev._scalar
    f, fW, fO, fOirr, fI = sc["f"], sc["W"], sc["O"], sc["Oirr"], sc["Ibcg"]
    fOY, fFY, fOX, fFX = sc["OY"], sc["FY"], sc["OX"], sc["FX"]
    cp, cW, cO, cOi, cI, cOY, cFY, cOX, cFX = [1], [1], [1], [1], [1], [1], [1], [1], [1]
    a = b_ = c = d = e_ = g_ = h = i_ = k_ = 1
    for t in o:
        a *= f[t]; cp.append(a)
        b_ *= fW[t]; cW.append(b_)
        c *= fO[t]; cO.append(c)
        d *= fOirr[t]; cOi.append(d)
        e_ *= fI[t]; cI.append(e_)
        g_ *= fOY[t]; cOY.append(g_)
        h *= fFY[t]; cFY.append(h)
        i_ *= fOX[t]; cOX.append(i_)
        k_ *= fFX[t]; cFX.append(k_)
    L = len(o)
    total = a
    oirr_all = d
    bits = ev.bits
    pb, fb = bits["O"], bits["O_final"]
    SY, SX, DY, DX = ev.layer.SY, ev.layer.SX, ev.layer.DY, ev.layer.DX

    def tile(op, li, e):
        k = sc["lv"][op][li]
        if op == "W":
            te = cW[e] * k[0]
            return te, te * bits["W"]
        if op == "O":
            te = cO[e] * k[0]
            return te, te * (pb if (k[1] or cOi[e] < oirr_all) else fb)
        te = (cI[e] * k[0] * (SY * (cOY[e] * k[1] - 1) + DY * (cFY[e] * k[2] - 1) + 1)
              * (SX * (cOX[e] * k[3] - 1) + DX * (cFX[e] * k[4] - 1) + 1))
        return te, te * bits["I"]

    inf = math.inf
    start = {"W": 0, "I": 0, "O": 0}
    level_of = {"W": 0, "I": 0, "O": 0}
    bnd = {"W": [], "I": [], "O": []}
    for mem, ops, tops in sc["mems"]:
        size = mem.size_bits
        fixed = 0
        free = []
        choice = {}
        for op in ops:
            li = level_of[op]
            if tops[op]:
                if size is not None:
                    for e in range(start[op], L + 1):
                        if tile(op, li, e)[1] > size:
                            return inf, inf, inf, False
                fixed += tile(op, li, L)[1]
                choice[op] = L
                continue
            cands = []
            for e in range(start[op], L + 1):
                tb = tile(op, li, e)[1]
                if size is not None and tb > size:
                    break
                cands.append((e, tb, (total // cp[e]) * tb))
            free.append((op, cands))
        if not free:
            if size is not None and fixed > size:
                return inf, inf, inf, False
        elif len(free) == 1:
            op, cands = free[0]
            best = None
            for e, tb, cost in cands:
                if size is not None and tb + fixed > size:
                    continue
                if best is None or cost <= best[1]:
                    best = (e, cost)
            if best is None:
                return inf, inf, inf, False
            choice[op] = best[0]
        elif len(free) == 2:
            (op1, cs1), (op2, cs2) = free
            cap = math.inf if size is None else size - fixed
            best = None
            bc = 0
            even = ev.even
            for e1, tb1, c1 in cs1:
                left = cap - tb1
                for e2, tb2, c2 in cs2:
                    if tb2 > left or (even and e1 != e2):
                        continue
                    cost = c1 + c2
                    if best is None or cost <= bc:
                        best, bc = (e1, e2), cost
            if best is None:
                return inf, inf, inf, False
            choice[op1], choice[op2] = best
        else:
            best = None
            for combo in itertools.product(*[cs for _, cs in free]):
                if size is not None and sum(x[1] for x in combo) + fixed > size:
                    continue
                if ev.even and len({x[0] for x in combo}) > 1:
                    continue
                cost = sum(x[2] for x in combo)
                if best is None or cost <= best[1]:
                    best = (combo, cost)
            if best is None:
                return inf, inf, inf, False
            for (op, _), x in zip(free, best[0]):
                choice[op] = x[0]
        if ev.even and free and len(free) < len(ops):
            if any(choice[op] != L for op, _ in free):
                return inf, inf, inf, False
        for op in ops:
            bnd[op].append(choice[op])
            start[op] = choice[op]
            level_of[op] += 1

    nm = len(ev.arch.memories)
    R, Wr, FW, TB = [0] * nm, [0] * nm, [0] * nm, [0] * nm
    acc = 0.0
    rel_t = sc["rel"]
    for op in ("W", "I", "O"):
        info = sc["info"][op]
        rel = rel_t[op]
        nl = len(info)
        reads = [0] * nl
        writes = [0] * nl
        te_at = []
        for li in range(nl):
            te, tb = tile(op, li, bnd[op][li])
            te_at.append(te)
            TB[info[li][1]] += tb
        for lo in range(-1, nl - 1):
            g, n_up, n_lo, fin_ok = sc["bd"][(op, lo)]
            w_up = info[lo + 1][2]
            bl = 0 if lo < 0 else bnd[op][lo]
            j = bl
            while j < L and not rel[o[j]]:
                j += 1
            F = total // cp[j]
            te = 1 if lo < 0 else te_at[lo]
            if op != "O":
                bb = bits[op]
                reads[lo + 1] += F * n_up * ((te * g * bb + w_up - 1) // w_up)
                if lo >= 0:
                    wl = info[lo][2]
                    wr = F * n_lo * ((te * bb + wl - 1) // wl)
                    writes[lo] += wr
                    FW[info[lo][1]] += wr
                continue
            D = cO[L] // cO[bl]
            fin = D if fin_ok else 0
            part = F - fin
            rb = F - D
            writes[lo + 1] += n_up * (fin * ((te * g * fb + w_up - 1) // w_up)
                                      + part * ((te * g * pb + w_up - 1) // w_up))
            reads[lo + 1] += rb * n_up * ((te * g * pb + w_up - 1) // w_up)
            if lo >= 0:
                wl = info[lo][2]
                reads[lo] += n_lo * (fin * ((te * fb + wl - 1) // wl) + part * ((te * pb + wl - 1) // wl))
                wr = rb * n_lo * ((te * pb + wl - 1) // wl)
                writes[lo] += wr
                FW[info[lo][1]] += wr
        for li in range(nl):
            m, mi, _ = info[li]
            acc = acc + (reads[li] * m.read_pj + writes[li] * m.write_pj)
            R[mi] += reads[li]
            Wr[mi] += writes[li]
    energy = ev.mac_energy + acc
    compute = total
    stall = 0.0
    for mi, (m, ni) in enumerate(sc["mem_inst"]):
        t_r = R[mi] * m.word_bits / m.read_bw / ni
        t_w = Wr[mi] * m.word_bits / m.write_bw / ni
        t = t_r + t_w if m.shared_port else max(t_r, t_w)
        if m.size_bits is None or 2 * TB[mi] <= m.size_bits:
            s = max(0.0, t - compute)
        else:
            t_f = FW[mi] * m.word_bits / m.write_bw / ni
            s = t_f + max(0.0, t - t_f - compute)
        stall = s if mi == 0 else max(stall, s)
    latency = compute + stall
    return energy, latency, energy * latency, True
