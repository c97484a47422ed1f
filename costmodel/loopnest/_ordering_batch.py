"""The vectorised NumPy batch path of `costmodel.loopnest.ordering.OrderingEvaluator` (backend "numpy").

Kept apart from `costmodel.loopnest.ordering` (like `costmodel.loopnest._ordering_scalar`): the
evaluator prepares the per-type tables (``ev._fac``, ``ev._lv``, ``ev._bd`` etc.) these functions
read. Every array has a leading axis over the n orderings; "prefix end" e = 0..L indexes the
prefix loops[:e] of an ordering of L loops. The steps:

1. `_Prefixes`: cumulative products of the loop factors along each ordering, i.e. every prefix's
   tile at once (`_Prefixes.tiles`);
2. `_allocate`: LOMA's bottom-up allocation, memories innermost first, as argmins over masked
   cost arrays (`_candidates`, `_choose_single`, `_choose_joint`);
3. `_next_relevant` + `_traffic` / `_operand_traffic`: word accesses and access energy (pJ);
4. `_latency`: compute cycles + the worst memory stall.

Counts are exact int64; energy is summed in the reference's order, so the results equal the
scalar path and `costmodel.loopnest.reference.evaluate` bit for bit.
"""

from __future__ import annotations

import numpy as np

from .mapping import OPERANDS
from .window import window_rows, window_share, window_steps

__all__ = ["evaluate_numpy"]

#: the masked-out LOMA cost (larger than any real cost, small enough not to overflow in sums)
_BIG = np.iinfo(np.int64).max // 4


def evaluate_numpy(ev, O_: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Costs of a batch of orderings with NumPy.

    Args:
        ev: the `OrderingEvaluator`.
        O_: (n, L) intp array of type ids, innermost loop first, n >= 1, L = ``ev.n_loops``.

    Returns:
        (energy_pj, latency_cycles, edp, valid), each of shape (n,); inf costs where invalid.
    """
    n = O_.shape[0]
    pre = _Prefixes(ev, O_)
    valid, bnd = _allocate(ev, pre)
    nxt, prv = _next_relevant(ev, O_)
    acc, TB, ents = _traffic(ev, pre, bnd, nxt, prv)
    energy = ev.mac_energy + acc
    latency = _latency(ev, ents, TB, n)
    edp = energy * latency
    inf = np.inf
    energy = np.where(valid, energy, inf)
    latency = np.where(valid, latency, inf)
    edp = np.where(valid, edp, inf)
    return energy, latency, edp, valid


class _Prefixes:
    """Prefix products of the loop factors of n orderings, all (n, L+1) int64, column e = the
    product over loops[:e]:

    cp (all factors), rem = total // cp (the factors left above e), cW / cO (W- / O-relevant),
    cOirr (O-irrelevant), cI (I's B, C, G), cOY, cFY, cOX, cFX (per dim, for I's sliding window);
    o_partial (bool): an O-irrelevant loop is left above e (O tiles at partial-sum precision).
    """

    def __init__(self, ev, O_: np.ndarray):
        n, L = O_.shape
        self.ev, self.n, self.L = ev, n, L
        self.rows = np.arange(n)
        cp = np.empty((n, L + 1), dtype=np.int64)
        cp[:, 0] = 1
        np.cumprod(ev._f[O_], axis=1, out=cp[:, 1:])
        self.cp = cp
        self.rem = ev._total // cp
        self.cW = ev._cum("W", O_)
        self.cO = ev._cum("O", O_)
        cOirr = ev._cum("Oirr", O_)
        self.o_partial = cOirr < cOirr[:, L:L + 1]
        self.cI = ev._cum("Ibcg", O_)
        self.cOY, self.cFY = ev._cum("OY", O_), ev._cum("FY", O_)
        self.cOX, self.cFX = ev._cum("OX", O_), ev._cum("FX", O_)
        self._tiles: dict = {}

    def tiles(self, op: str, li: int) -> tuple[np.ndarray, np.ndarray]:
        """(n, L+1) tile elements and tile bits of ``op`` at its level ``li`` for every prefix end
        e (temporal loops[:e] x the spatial loops inside one instance of the level); cached."""
        key = (op, li)
        if key in self._tiles:
            return self._tiles[key]
        ev = self.ev
        bits = ev.bits
        ext = ev._lv[op][li]["ext"]
        g = ext.get
        if op == "W":
            te = self.cW * (g("K", 1) * g("C", 1) * g("FY", 1) * g("FX", 1) * g("G", 1))
            tb = te * bits["W"]
        elif op == "O":
            te = self.cO * (g("B", 1) * g("K", 1) * g("OY", 1) * g("OX", 1) * g("G", 1))
            if ev._lv[op][li]["unreduced"]:
                tb = te * bits["O"]
            else:
                tb = te * np.where(self.o_partial, bits["O"], bits["O_final"])
        else:
            sy, sx, dy, dx = window_steps(ev.layer)
            iy = window_rows(sy, dy, self.cOY * g("OY", 1), self.cFY * g("FY", 1))
            ix = window_rows(sx, dx, self.cOX * g("OX", 1), self.cFX * g("FX", 1))
            te = self.cI * (g("B", 1) * g("C", 1) * g("G", 1)) * iy * ix
            tb = te * bits["I"]
        self._tiles[key] = (te, tb)
        return te, tb

    def window(self, li, a):
        """`reference.window_share` of I's tile at level li for every prefix end e, (n, L+1)."""
        g = self.ev._lv["I"][li]["ext"].get
        return window_share(self.ev.layer, self.cOY * g("OY", 1), self.cFY * g("FY", 1),
                            self.cOX * g("OX", 1), self.cFX * g("FX", 1), *a)


# ---------------------------------------------------------------------- allocation (LOMA)
def _allocate(ev, pre: _Prefixes) -> tuple[np.ndarray, dict]:
    """LOMA's bottom-up allocation of every ordering (`costmodel.loopnest.allocation`).

    Returns:
        (valid, bnd): valid (n,) bool, False where a memory cannot hold its tiles;
        bnd {op: [(n,) int64 prefix end per level, innermost level first]}.
    """
    n, L = pre.n, pre.L
    valid = np.ones(n, dtype=bool)
    start = {op: np.zeros(n, dtype=np.int64) for op in OPERANDS}
    level_of = {op: 0 for op in OPERANDS}
    bnd = {op: [] for op in OPERANDS}
    ecol = np.arange(L + 1)[None, :]
    for mem in ev.arch.memories:
        ops = list(mem.operands)
        size = mem.size_bits
        fixed_bits, free, choice, ok = _candidates(ev, pre, mem, level_of, start, ecol)
        if ok is not None:
            valid &= ok
        if size is not None and not free:
            valid &= fixed_bits <= size
        elif len(free) == 1:
            choice[free[0][0]], ok = _choose_single(free[0], size, fixed_bits, L)
            valid &= ok
        elif free:
            ends, ok = _choose_joint(free, size, fixed_bits, ev.even, n)
            valid &= ok
            for (op, *_), e in zip(free, ends):
                choice[op] = e
        if ev.even and len(ops) > 1 and free and len(free) < len(ops):
            # a free operand sharing a memory with a top-level one must also end at L
            for op, *_ in free:
                valid &= choice[op] == L
        for op in ops:
            e = choice[op]
            bnd[op].append(e)
            start[op] = e
            level_of[op] += 1
    return valid, bnd


def _candidates(ev, pre: _Prefixes, mem, level_of: dict, start: dict, ecol: np.ndarray):
    """The choices of the operands of memory ``mem`` at their current levels.

    A top-level operand takes every remaining loop (prefix end L; it fits alone iff no prefix from
    its start on overflows); any other operand may end at e >= its start, before the first prefix
    whose tile alone overflows ``mem`` (all e if ``mem`` is unbounded).

    Returns:
        (fixed_bits, free, choice, ok): fixed_bits (n,) the top-level operands' tile bits;
        free [(op, cand (n, L+1) bool, LOMA cost rem x tile bits (n, L+1), tile bits (n, L+1))];
        choice {top-level op: (n,) L}; ok (n,) bool, False where a top-level tile overflows
        (None if ``mem`` is unbounded or is no operand's top level).
    """
    n, L = pre.n, pre.L
    size = mem.size_bits
    ok = None
    fixed_bits = np.zeros(n, dtype=np.int64)
    free = []
    choice = {}
    for op in mem.operands:
        li = level_of[op]
        _, tb = pre.tiles(op, li)
        if ev._lv[op][li]["top"]:
            if size is not None:
                over = (tb > size) & (ecol >= start[op][:, None])
                fit = ~over.any(axis=1)
                ok = fit if ok is None else ok & fit
            fixed_bits = fixed_bits + tb[:, L]
            choice[op] = np.full(n, L, dtype=np.int64)
            continue
        ge = ecol >= start[op][:, None]
        if size is None:
            cand = ge
        else:
            over = (tb > size) & ge
            first = np.where(over.any(axis=1), over.argmax(axis=1), L + 1)
            cand = ge & (ecol < first[:, None])
        free.append((op, cand, pre.rem * tb, tb))
    return fixed_bits, free, choice, ok


def _choose_single(free_op: tuple, size, fixed_bits: np.ndarray, L: int) -> tuple[np.ndarray, np.ndarray]:
    """The prefix end of the least LOMA cost of a memory's only free operand (ties -> the longest
    prefix), among those fitting beside the top-level tiles. Returns (end (n,) int64, ok (n,))."""
    _, cand, cost, tb = free_op
    if size is not None:
        cand = cand & (tb + fixed_bits[:, None] <= size)
    c = np.where(cand, cost, _BIG)
    return L - np.argmin(c[:, ::-1], axis=1), cand.any(axis=1)


def _choose_joint(free: list, size, fixed_bits: np.ndarray, even: bool, n: int) -> tuple[list, np.ndarray]:
    """The jointly fitting prefix ends of k >= 2 free operands of one memory of the least summed
    LOMA cost: an argmin over an (n, w_1, ..., w_k) grid of prefix ends (restricted to the columns
    any row can use); first operand slowest, ties -> the last combination (ZigZag's ``<=``).
    With ``even`` all operands must end at the same loop index.

    Returns:
        ([(n,) int64 end per free operand], ok (n,) bool).
    """
    k = len(free)
    los, his = [], []
    for _, cand, _, _ in free:
        anyc = cand.any(axis=0)
        cols = np.flatnonzero(anyc)
        lo_, hi_ = (int(cols[0]), int(cols[-1]) + 1) if len(cols) else (0, 1)
        los.append(lo_)
        his.append(hi_)
    widths = [h - l for l, h in zip(los, his)]
    shape = [n] + widths
    cost = np.zeros(shape, dtype=np.int64)
    fits = np.ones(shape, dtype=bool)
    tot = np.broadcast_to(fixed_bits.reshape([n] + [1] * k), shape).copy()
    for j, (_, cand, cst, tb) in enumerate(free):
        sl = [slice(None)] + [None] * k
        sl[1 + j] = slice(None)
        sl = tuple(sl)
        w = slice(los[j], his[j])
        cost = cost + cst[:, w][sl]
        fits = fits & cand[:, w][sl]
        tot = tot + tb[:, w][sl]
    if size is not None:
        fits &= tot <= size
    if even:   # all free operands end at the same loop index
        for j in range(1, k):
            eq = np.equal.outer(np.arange(los[0], his[0]), np.arange(los[j], his[j]))
            shp = [1] * (k + 1)
            shp[1], shp[1 + j] = widths[0], widths[j]
            fits &= eq.reshape(shp)
    flat = np.where(fits, cost, _BIG).reshape(n, -1)
    ok = fits.reshape(n, -1).any(axis=1)
    idx = flat.shape[1] - 1 - np.argmin(flat[:, ::-1], axis=1)
    ends = [e.astype(np.int64) + los[j] for j, e in enumerate(np.unravel_index(idx, widths))]
    return ends, ok


# ---------------------------------------------------------------------- accesses, energy, latency
def _next_relevant(ev, O_: np.ndarray) -> tuple[dict, dict]:
    """({op: (n, L+1) int64 nxt}, {op: (n, L+1) int64 prv}): nxt = the index of the first
    op-relevant loop at or after each position (L if none; column L is L), a reverse running
    minimum: the tile of a level whose boundary is at e stays put through the op-irrelevant loops
    loops[e:next], so it is loaded total // cp[next] times. prv[:, e] = 1 + the index of the last
    op-relevant loop before e (0 if none), a running maximum: the op-irrelevant run below e is
    loops[prv:e]."""
    n, L = O_.shape
    pos = np.arange(L)
    nxt, prv = {}, {}
    for op in OPERANDS:
        r = ev._rel[op][O_]
        idx = np.where(r, pos, L)
        nr = np.empty((n, L + 1), dtype=np.int64)
        nr[:, L] = L
        nr[:, :L] = np.minimum.accumulate(idx[:, ::-1], axis=1)[:, ::-1]
        nxt[op] = nr
        pv = np.zeros((n, L + 1), dtype=np.int64)
        pv[:, 1:] = np.maximum.accumulate(np.where(r, pos + 1, 0), axis=1)
        prv[op] = pv
    return nxt, prv


def _traffic(ev, pre: _Prefixes, bnd: dict, nxt: dict, prv: dict):
    """Word accesses of the allocated mappings and their energy.

    Returns:
        (acc, TB, ents): acc (n,) float access energy in pJ (summed operand by operand, level by
        level, like the reference); TB per memory (list indexed like ``arch.memories``) the (n,)
        tile bits it holds; ents the transfers of the stall model in the reference's order:
        (memory index, is a write, (n,) words, memory index of the link's lower level or -1 for
        the MAC, (n,) T of the link or 1).
    """
    n = pre.n
    nm = len(ev.arch.memories)
    TB = [np.zeros(n, dtype=np.int64) for _ in range(nm)]
    ents: list = []
    acc = np.zeros(n)
    for op in OPERANDS:
        info = ev._lv[op]
        reads, writes = _operand_traffic(ev, pre, op, bnd[op], nxt[op], prv[op], TB, ents)
        for li in range(len(info)):
            m = info[li]["mem"]
            acc = acc + (reads[li] * m.read_pj + writes[li] * m.write_pj)
    return acc, TB, ents


def _operand_traffic(ev, pre: _Prefixes, op: str, bnd_op: list, nxt_op: np.ndarray, prv_op: np.ndarray, TB: list,
                     ents: list):
    """Reads and writes (words scaled to the real data, (n,) float or 0) of ``op`` at each of its levels, innermost first.

    For every boundary (MAC -> level 0, level l -> l+1): F = total // cp[next relevant loop] tile
    loads. W, I: F x n_up x ceil(tile x g x bits / word) reads above, F x n_lo x ceil(tile x bits /
    word) writes below. O: of the F visits D are first visits, F - D partial-sum read-backs; final
    (or partial) write-ups. Adds the level tiles' bits to ``TB`` (in place, per memory) and the
    transfers of every link to ``ents`` (see `_traffic`).
    """
    bits = ev.bits
    pb, fb = bits["O"], bits["O_final"]
    total, L, rows = ev._total, pre.L, pre.rows
    cp, cO = pre.cp, pre.cO
    info = ev._lv[op]
    nl = len(info)
    reads = [0] * nl
    writes = [0] * nl
    te_at = []
    for li in range(nl):
        b = bnd_op[li]
        te, tb = pre.tiles(op, li)
        te_at.append(te[rows, b])
        TB[ev._mem_index[info[li]["mem"].name]] += tb[rows, b]
    for lo in range(-1, nl - 1):
        bd = ev._bd[(op, lo)]
        up = info[lo + 1]["mem"]
        w_up = up.word_bits
        bl = 0 if lo < 0 else bnd_op[lo]
        if bd["every"]:
            F = total
        else:
            F = total // cp[rows, nxt_op[rows, bl]] if lo >= 0 else total // cp[rows, nxt_op[:, 0]]
        te = 1 if lo < 0 else te_at[lo]
        g, n_up, n_lo = bd["g"], bd["n_up"], bd["n_lo"]
        s_up, s_lo = bd["s_up"], bd["s_lo"]
        if bd["win"] is not None:  # I's window dims unrolled inside the tile: fractional window
            w = pre.window(lo, bd["win"])[rows, bl]
            s_up, s_lo = s_up * w, s_lo * w
        mu = ev._mem_index[up.name]
        if lo < 0:
            ml, T = -1, 1
        else:
            ml = ev._mem_index[info[lo]["mem"].name]
            k = prv_op[rows, bl]
            if lo > 0:
                k = np.maximum(k, bnd_op[lo - 1])
            T = cp[rows, nxt_op[rows, bl]] // cp[rows, k]
        if op != "O":
            bb = bits[op]
            rd = F * n_up * ((te * g * bb + w_up - 1) // w_up) * s_up
            reads[lo + 1] = reads[lo + 1] + rd
            ents.append((mu, False, rd, ml, T))
            if lo >= 0:
                wl = info[lo]["mem"].word_bits
                wr = F * n_lo * ((te * bb + wl - 1) // wl) * s_lo
                writes[lo] = writes[lo] + wr
                ents.append((ml, True, wr, ml, T))
            continue
        D = cO[:, L] // cO[rows, bl] if lo >= 0 else cO[:, L]
        fin = D if bd["fin_ok"] else 0
        part = F - fin
        rb = F - D
        wu = n_up * (fin * ((te * g * fb + w_up - 1) // w_up) + part * ((te * g * pb + w_up - 1) // w_up)) * s_up
        ru = rb * n_up * ((te * g * pb + w_up - 1) // w_up) * s_up
        writes[lo + 1] = writes[lo + 1] + wu
        reads[lo + 1] = reads[lo + 1] + ru
        ents.append((mu, True, wu, ml, T))
        ents.append((mu, False, ru, ml, T))
        if lo >= 0:
            wl = info[lo]["mem"].word_bits
            rl = n_lo * (fin * ((te * fb + wl - 1) // wl) + part * ((te * pb + wl - 1) // wl)) * s_lo
            wr = rb * n_lo * ((te * pb + wl - 1) // wl) * s_lo
            reads[lo] = reads[lo] + rl
            writes[lo] = writes[lo] + wr
            ents.append((ml, False, rl, ml, T))
            ents.append((ml, True, wr, ml, T))
    return reads, writes


def _latency(ev, ents: list, TB: list, n: int) -> np.ndarray:
    """(n,) float latency in cycles: compute cycles (product of all temporal loop factors) + the
    largest memory stall (`costmodel.loopnest.reference._stalls`): per memory port, the largest
    excess over the transfers whose windows lie within one window (`reference.port_stall`),
    windows = compute if the link's lower level is the MAC or double-buffered, else compute // T."""
    compute = ev._total
    mems = ev.arch.memories
    db = [np.ones(n, dtype=bool) if m.size_bits is None else 2 * TB[mi] <= m.size_bits for mi, m in enumerate(mems)]
    stall = np.zeros(n)
    for mi, m in enumerate(mems):
        ni = ev._nest.instances(m.private_to)
        s = np.zeros(n)
        for port in ((None,) if m.shared_port else (False, True)):
            ts, ws = [], []
            for emi, is_w, words, ml, T in ents:
                if emi != mi or (port is not None and is_w != port):
                    continue
                ts.append(words * m.word_bits / (m.write_bw if is_w else m.read_bw) / ni + np.zeros(n))
                ws.append(np.full(n, compute, dtype=np.int64) if ml < 0
                          else np.where(db[ml], compute, compute // T))
            for wk in ws:
                acc = np.zeros(n)
                for tj, wj in zip(ts, ws):
                    acc = acc + np.where(wj <= wk, tj, 0.0)
                s = np.maximum(s, acc - wk)
        stall = s if mi == 0 else np.maximum(stall, s)
    return compute + stall
