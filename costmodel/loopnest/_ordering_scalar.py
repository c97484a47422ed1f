"""The pure-Python single-ordering path of `costmodel.loopnest.ordering.OrderingEvaluator` (backend "numpy").

Kept apart from `costmodel.loopnest.ordering` so that each module stays one job; `OrderingEvaluator`
prepares the per-type tables (``ev._scalar`` etc.) these functions read. The steps, in Python
integers (all counts exact) and floats (energy and latency, summed in the reference's order):

1. `evaluate_one_py`: prefix products of the loop factors along the ordering (the tile of every
   prefix end e = 0..L) and the tile function;
2. `_allocate`: LOMA's bottom-up allocation, memories innermost first (`_best_single`,
   `_best_pair`, `_best_product` pick the prefix(es) of one memory);
3. `_traffic`: reads / writes / fill writes per memory and the access energy (pJ);
4. `_latency`: compute cycles + the worst memory stall (cycles).

The functions are split by step but not further: this is the SA chains' hot path (~0.1-0.2 ms per
call), so the inner loops stay inline (a per-operand split of `_traffic` cost ~2% per call).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .reference import port_stall
from .window import window_rows, window_share, window_steps

__all__ = ["evaluate_one_py"]

_INF = math.inf


def evaluate_one_py(ev, ordering) -> tuple[float, float, float, bool]:
    """`OrderingEvaluator.evaluate_one` in pure Python (the backend "numpy"): the same arithmetic
    as the batch path, one ordering at a time, in Python integers and floats.

    Args:
        ev: the `OrderingEvaluator` (its ``_scalar`` tables, ``bits``, ``layer``, ``even``,
            ``mac_energy``).
        ordering: sequence of ``ev.n_loops`` type ids, innermost loop first.

    Returns:
        (energy_pj, latency_cycles, edp, valid); (inf, inf, inf, False) if LOMA finds no
        allocation that fits.
    """
    o = ordering.tolist() if isinstance(ordering, np.ndarray) else list(ordering)
    if len(o) != ev.n_loops:
        raise ValueError(f"ordering must have {ev.n_loops} loops, got {len(o)}")
    sc = ev._scalar
    f, fW, fO, fOirr, fI = sc["f"], sc["W"], sc["O"], sc["Oirr"], sc["Ibcg"]
    fOY, fFY, fOX, fFX = sc["OY"], sc["FY"], sc["OX"], sc["FX"]
    # prefix products, index e = product over loops[:e]: all factors (cp), the W-/O-relevant,
    # O-irrelevant and I's B*C*G factors, and the per-dim OY, FY, OX, FX factors (sliding window)
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
    SY, SX, DY, DX = window_steps(ev.layer)
    lv = sc["lv"]

    def tile(op, li, e):
        """(elements, bits) of op's tile at its level li when the level holds loops[:e]."""
        k = lv[op][li]
        if op == "W":
            te = cW[e] * k[0]
            return te, te * bits["W"]
        if op == "O":
            te = cO[e] * k[0]
            return te, te * (pb if (k[1] or cOi[e] < oirr_all) else fb)
        te = (cI[e] * k[0] * window_rows(SY, DY, cOY[e] * k[1], cFY[e] * k[2])
              * window_rows(SX, DX, cOX[e] * k[3], cFX[e] * k[4]))
        return te, te * bits["I"]

    layer = ev.layer

    def win(li, e, a):
        """`reference.window_share` of I's tile at level li holding loops[:e], fractions a."""
        k = lv["I"][li]
        return window_share(layer, cOY[e] * k[1], cFY[e] * k[2], cOX[e] * k[3], cFX[e] * k[4], *a)

    bnd = _allocate(sc["mems"], ev.even, tile, cp, total, L)
    if bnd is None:
        return _INF, _INF, _INF, False
    acc, TB, ents = _traffic(sc, bits, tile, o, bnd, cp, cO, total, L, win)
    energy = ev.mac_energy + acc
    latency = _latency(sc["mem_inst"], ents, TB, total)
    return energy, latency, energy * latency, True


def _allocate(mems, even, tile, cp, total, L):
    """LOMA's bottom-up allocation of one ordering (`costmodel.loopnest.allocation`).

    Args:
        mems: ``ev._scalar["mems"]``: (memory, its operands, {op: memory is op's top level}),
            innermost memory first.
        even: even mappings only (all free operands of a memory end at the same loop).
        tile: ``tile(op, li, e) -> (elements, bits)``.
        cp: prefix products of all loop factors (L+1 ints); total = cp[L] (compute cycles).

    Returns:
        {op: [boundary e per level, innermost first]}, or None if some memory cannot hold its
        tiles (the ordering is invalid).
    """
    start = {"W": 0, "I": 0, "O": 0}
    level_of = {"W": 0, "I": 0, "O": 0}
    bnd = {"W": [], "I": [], "O": []}
    for mem, ops, tops in mems:
        size = mem.size_bits
        fixed = 0          # bits of the top-level operands (they take every remaining loop)
        free = []          # (op, [(e, tile bits, LOMA cost) for each candidate prefix end e])
        choice = {}
        for op in ops:
            li = level_of[op]
            if tops[op]:
                if size is not None:
                    for e in range(start[op], L + 1):
                        if tile(op, li, e)[1] > size:
                            return None
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
                return None
        elif len(free) == 1:
            e = _best_single(free[0][1], size, fixed)
            if e is None:
                return None
            choice[free[0][0]] = e
        else:
            best = (_best_pair(free, size, fixed, even) if len(free) == 2
                    else _best_product(free, size, fixed, even))
            if best is None:
                return None
            for (op, _), e in zip(free, best):
                choice[op] = e
        if even and free and len(free) < len(ops) and any(choice[op] != L for op, _ in free):
            return None
        for op in ops:
            bnd[op].append(choice[op])
            start[op] = choice[op]
            level_of[op] += 1
    return bnd


def _best_single(cands, size, fixed):
    """The prefix end of the least LOMA cost (ties -> the longest) whose tile fits beside the
    ``fixed`` bits of the top-level operands; None if none fits."""
    best = None
    for e, tb, cost in cands:
        if size is not None and tb + fixed > size:
            continue
        if best is None or cost <= best[1]:
            best = (e, cost)
    return None if best is None else best[0]


def _best_pair(free, size, fixed, even):
    """(e1, e2): the jointly fitting prefix ends of a memory's two free operands of the least
    summed LOMA cost (first operand slowest, ties -> the last pair); None if no pair fits."""
    (_, cs1), (_, cs2) = free
    cap = math.inf if size is None else size - fixed
    best = None
    bc = 0
    for e1, tb1, c1 in cs1:
        left = cap - tb1
        for e2, tb2, c2 in cs2:
            if tb2 > left or (even and e1 != e2):
                continue
            cost = c1 + c2
            if best is None or cost <= bc:
                best, bc = (e1, e2), cost
    return best


def _best_product(free, size, fixed, even):
    """`_best_pair` for three or more free operands (itertools.product of their candidates)."""
    best = None
    for combo in itertools.product(*[cs for _, cs in free]):
        if size is not None and sum(x[1] for x in combo) + fixed > size:
            continue
        if even and len({x[0] for x in combo}) > 1:
            continue
        cost = sum(x[2] for x in combo)
        if best is None or cost <= best[1]:
            best = (combo, cost)
    return None if best is None else [x[0] for x in best[0]]


def _traffic(sc, bits, tile, o, bnd, cp, cO, total, L, win):
    """Word accesses of the allocated mapping and their energy.

    For each operand and boundary (MAC -> level 0, level l -> l+1): F = total / cp[next relevant
    loop at or above the boundary] tile loads (fills / O visits); W, I: reads above, writes below;
    O: D first visits, F - D partial-sum read-backs, final / partial write-ups.

    Returns:
        (acc, TB, ents): access energy in pJ (float, summed operand by operand, level by level),
        the tile bits held per memory (list indexed like ``arch.memories``) and the transfers
        of the stall model in the reference's order: (memory index, is a write, words, memory
        index of the link's lower level or -1 for the MAC, T of the link).
    """
    nm = len(sc["mem_inst"])
    TB = [0] * nm
    ents = []
    pb, fb = bits["O"], bits["O_final"]
    acc = 0.0
    rel_t = sc["rel"]
    bd_t = sc["bd"]
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
            g, n_up, n_lo, fin_ok, s_up, s_lo, every, wa = bd_t[(op, lo)]
            w_up = info[lo + 1][2]
            bl = 0 if lo < 0 else bnd[op][lo]
            if wa is not None:  # I's window dims unrolled inside the tile: fractional window
                w = win(lo, bl, wa)
                s_up, s_lo = s_up * w, s_lo * w
            j = bl
            if not every:
                while j < L and not rel[o[j]]:
                    j += 1
            F = total // cp[j]
            te = 1 if lo < 0 else te_at[lo]
            mu = info[lo + 1][1]
            if lo < 0:
                ml, T = -1, 1
            else:
                ml = info[lo][1]
                k = bl
                k0 = 0 if lo == 0 else bnd[op][lo - 1]
                while k > k0 and not rel[o[k - 1]]:
                    k -= 1
                T = cp[j] // cp[k]
            if op != "O":
                bb = bits[op]
                rd = F * n_up * ((te * g * bb + w_up - 1) // w_up) * s_up
                reads[lo + 1] += rd
                ents.append((mu, False, rd, ml, T))
                if lo >= 0:
                    wl = info[lo][2]
                    wr = F * n_lo * ((te * bb + wl - 1) // wl) * s_lo
                    writes[lo] += wr
                    ents.append((ml, True, wr, ml, T))
                continue
            D = cO[L] // cO[bl]
            fin = D if fin_ok else 0
            part = F - fin
            rb = F - D
            wu = n_up * (fin * ((te * g * fb + w_up - 1) // w_up)
                         + part * ((te * g * pb + w_up - 1) // w_up)) * s_up
            ru = rb * n_up * ((te * g * pb + w_up - 1) // w_up) * s_up
            writes[lo + 1] += wu
            reads[lo + 1] += ru
            ents.append((mu, True, wu, ml, T))
            ents.append((mu, False, ru, ml, T))
            if lo >= 0:
                wl = info[lo][2]
                rl = n_lo * (fin * ((te * fb + wl - 1) // wl) + part * ((te * pb + wl - 1) // wl)) * s_lo
                wr = rb * n_lo * ((te * pb + wl - 1) // wl) * s_lo
                reads[lo] += rl
                writes[lo] += wr
                ents.append((ml, False, rl, ml, T))
                ents.append((ml, True, wr, ml, T))
        for li in range(nl):
            m, mi, _ = info[li]
            acc = acc + (reads[li] * m.read_pj + writes[li] * m.write_pj)
    return acc, TB, ents


def _latency(mem_inst, ents, TB, compute):
    """Latency in cycles: ``compute`` (the product of all temporal loop factors) + the largest
    memory stall (`costmodel.loopnest.reference._stalls`): per memory port, `port_stall` of its
    transfers (words x word_bits / bandwidth / instances cycles) within their links' windows
    (compute if the lower level is the MAC or double-buffered, else compute // T).

    One pass over ``ents`` sorts the transfers into their ports (keeping the reference's order
    within a port, so every sum adds the same floats in the same order); `port_stall` then takes
    each distinct window once."""
    nm = len(mem_inst)
    db = [m.size_bits is None or 2 * TB[mi] <= m.size_bits for mi, (m, _) in enumerate(mem_inst)]
    cst = [(m.shared_port, m.word_bits, m.read_bw, m.write_bw, ni) for m, ni in mem_inst]
    ts = [[] for _ in range(2 * nm)]
    ws = [[] for _ in range(2 * nm)]
    for emi, is_w, words, ml, T in ents:
        shared, wb, rbw, wbw, ni = cst[emi]
        if is_w:
            g = 2 * emi if shared else 2 * emi + 1
            ts[g].append(words * wb / wbw / ni)
        else:
            g = 2 * emi
            ts[g].append(words * wb / rbw / ni)
        ws[g].append(compute if ml < 0 or db[ml] else compute // T)
    stall = 0.0
    for mi in range(nm):
        s = port_stall(ts[2 * mi], ws[2 * mi], 0.0)
        s = port_stall(ts[2 * mi + 1], ws[2 * mi + 1], s)
        stall = s if mi == 0 else max(stall, s)
    return compute + stall


    w0 = ws[0]
    if ws.count(w0) == len(ws):
        wins = (w0,)
    else:
        wins = set(ws)
    for wk in wins:
        acc = 0.0
        for tj, wj in zip(ts, ws):
            if wj <= wk:
                acc += tj
        x = acc - wk
        if x > s:  # noqa: PLR1730 (the reference's comparison, kept as written)
            s = x
    return s
