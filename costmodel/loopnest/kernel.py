"""The one fast path of the loop-nest model: LOMA allocation + cost of loop orderings, compiled.

`costmodel.loopnest.reference` states every physics rule; this module computes the same numbers
for many orderings of one evaluator's loop multiset (`costmodel.loopnest.ordering`), reading the
evaluator's state from `costmodel.loopnest.tables` (column names there). Per ordering, four steps,
each a function of its own:

* `_prefix`: cumulative products of the loop factors along the ordering (every prefix's tile
  extents) and suffix products (the loops left above a boundary);
* `_allocate`: LOMA's bottom-up memory allocation (`allocation.allocate`, Symons et al., AICAS
  2021), the same candidates, cost and tie-breaking;
* `_traffic`: fills, multicast reads, partial-sum read-backs and write-ups per transfer link and
  the energy (the reference's "Transfers", "Outputs" and "Energy"), with the window of the input
  tile (`_window_share`, the reference's fractional unrolling);
* `_latency`: the stall model per port (`reference.port_stall`).

Counts are exact int64 before the real / padded share (a float) is applied; floats are added in the
reference's order, so results equal ``reference.evaluate(layer, arch, allocate(...))`` bit for bit
(``tests/costmodel/loopnest/test_kernel_fuzz.py`` fuzzes it over random accelerators and layers).

Incremental evaluation: a tile, a LOMA candidate or a transfer count of a prefix of e loops
depends on those e loops only (for any ordering of the evaluator's loop multiset, the loops left
above a prefix multiply to the total over the prefix). The evaluator keeps one workspace across
calls (`tables.workspace`), and each cached figure records how many leading loops the current ordering
still shares with the one it was computed for (`_shared`): a memory's LOMA decision (`_kept`), a
candidate scan (resumed past the shared loops), a level's tile and a link's transfers are reused
while the loops they read are shared and the boundaries below them are unchanged. LOMA's
lexicographic enumeration changes the outermost loops fastest, so most figures carry over (1.7x
on layer2.0.conv2); an SA move leaves the loops below it.

The functions are plain Python decorated with `_jit`: compiled by Numba (``cache=True``: machine
code cached in ``__pycache__``) when the module is loaded as `costmodel.loopnest.kernel` and numba
is importable and not disabled (``DSE_SWEEP_NO_NUMBA=1``; the cache key also holds a hash of the
kernel's source files, `KERNEL_SOURCES`, so a change in any of them recompiles it); `python_kernel` loads this same file a
second time with `_jit` the identity, the interpreted twin used by ``backend="python"``.
`evaluate_batch` borrows every array it is given (`borrow`: views without Numba's reference
counting, which took most of its time in the helpers' array arguments: 2.3-2.8x on LOMA's conv3_2).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from types import ModuleType

import numpy as np

from .tables import (LV_EVERY, LV_EXT, LV_FINOK, LV_G, LV_MC, LV_MEXT, LV_MG, LV_MWIN, LVF_MA, LVF_MSUP, LV_MEM, LV_NLO, LV_NUP, LV_TOP, LV_UNRED, LV_WIN,
                     LV_WORD, LVF_A, LVF_RBW, LVF_RPJ, LVF_SLO, LVF_SUP, LVF_WBW, LVF_WPJ, M_LI, M_NI, M_NOPS,
                     M_OP, M_SHARED, M_SIZE, N_CUM, P_BI, P_BO, P_BOF, P_BW, P_DX, P_DY, P_EVEN, P_NL, P_RX, P_RY, P_SX, P_SY, P_TOTAL, R_REM, R_REMO, S_CHOICE, S_DEP, S_FILT, S_HI, S_K0, S_LO, S_START, T_F, T_FX,
                     T_FY, T_IBCG, T_O, T_OIRR, T_OX, T_OY, T_REL, T_W, TF_CYC, TF_WORDS, TR_GI, TR_LO, TR_MEM,
                     TR_W, TR_WIN, TR_WQ, F_PORTS, F_PREV, carve, work_sizes)

from .borrow import borrow_intrinsic
from .window import window_rows

__all__ = ["evaluate_batch", "python_kernel", "numba_disabled", "JIT", "KERNEL_SOURCES"]


def numba_disabled() -> bool:
    """True if the environment variable ``DSE_SWEEP_NO_NUMBA`` is 1, true, yes or on."""
    return os.environ.get("DSE_SWEEP_NO_NUMBA", "").strip().lower() in ("1", "true", "yes", "on")


def _numba_jit(**kw):
    """numba's ``njit(cache=True, error_model="numpy", **kw)``, or None when this copy is the
    interpreted twin, numba is disabled (`numba_disabled`) or not installed."""
    if globals().get("__interpreted__") or numba_disabled():
        return None
    try:
        from numba import njit
    except ImportError:
        return None
    return njit(cache=True, error_model="numpy", **kw)


_nj = _numba_jit()
_nj_inline = _numba_jit(inline="always")
#: True if this module's functions are compiled
JIT = _nj is not None


def _jit(fn):
    return fn if _nj is None else _nj(fn)


#: `borrow.borrow_intrinsic` when compiled (views without reference counting), else the identity
_borrow = (lambda a: a) if _nj is None else borrow_intrinsic()


def _inline(fn):
    """`_jit`, inlined into its callers at Numba IR level (no call with a dozen array arguments;
    measured faster than plain calls on the whole kernel)."""
    return fn if _nj_inline is None else _nj_inline(fn)


_rows = _inline(window_rows)   # the model's own rule, compiled


@_inline
def _tile_bits(op, li, e, L, C, lv, par):
    """(elements, bits) of operand op's tile at level li holding the loops [0, e) (reference
    "Tile"): O at partial-sum precision while an O-irrelevant loop lies above e or is unreduced."""
    if op == 0:
        te = C[T_W, e] * lv[0, li, LV_EXT]
        return te, te * par[P_BW]
    if op == 2:
        te = C[T_O, e] * lv[2, li, LV_EXT]
        if lv[2, li, LV_UNRED] != 0 or C[T_OIRR, e] < C[T_OIRR, L]:
            return te, te * par[P_BO]
        return te, te * par[P_BOF]
    iy = _rows(par[P_SY], par[P_DY], C[T_OY, e] * lv[1, li, LV_EXT + 1], C[T_FY, e] * lv[1, li, LV_EXT + 2], par[P_RY])
    ix = _rows(par[P_SX], par[P_DX], C[T_OX, e] * lv[1, li, LV_EXT + 3], C[T_FX, e] * lv[1, li, LV_EXT + 4], par[P_RX])
    te = C[T_IBCG, e] * lv[1, li, LV_EXT] * iy * ix
    return te, te * par[P_BI]


@_inline
def _window_share(li, e, C, lv, lvf, op, up, par):
    """`window.window_share` of I's tile at level li (-1: the MAC's one element) holding the loops
    [0, e), window dims scaled by the fractions lvf[op, up, LVF_A ..] of the link below level up
    (the same operations; `window_share` itself calls an uncompiled `window_rows`)."""
    oy = C[T_OY, e] * (1 if li < 0 else lv[1, li, LV_EXT + 1])
    fy = C[T_FY, e] * (1 if li < 0 else lv[1, li, LV_EXT + 2])
    ox = C[T_OX, e] * (1 if li < 0 else lv[1, li, LV_EXT + 3])
    fx = C[T_FX, e] * (1 if li < 0 else lv[1, li, LV_EXT + 4])
    iy = _rows(par[P_SY], par[P_DY], oy, fy, par[P_RY])
    ix = _rows(par[P_SX], par[P_DX], ox, fx, par[P_RX])
    iyr = _rows(par[P_SY], par[P_DY], oy * lvf[op, up, LVF_A], fy * lvf[op, up, LVF_A + 1], par[P_RY])
    ixr = _rows(par[P_SX], par[P_DX], ox * lvf[op, up, LVF_A + 2], fx * lvf[op, up, LVF_A + 3], par[P_RX])
    return (iyr * ixr) / (iy * ix)


@_inline
def _union(e, C, lv, lvf, up, par):
    """(elements, group g, share) of the reads above the link below I's level ``up`` whose lower
    instances receive their tiles (holding the loops [0, e)) by multicast: reference
    `_Nest.multicast` (the union tile's window and share, the same operations)."""
    oy = C[T_OY, e] * lv[1, up, LV_MEXT + 1]
    fy = C[T_FY, e] * lv[1, up, LV_MEXT + 2]
    ox = C[T_OX, e] * lv[1, up, LV_MEXT + 3]
    fx = C[T_FX, e] * lv[1, up, LV_MEXT + 4]
    iy = _rows(par[P_SY], par[P_DY], oy, fy, par[P_RY])
    ix = _rows(par[P_SX], par[P_DX], ox, fx, par[P_RX])
    s = lvf[1, up, LVF_MSUP]
    if lv[1, up, LV_MWIN] != 0:
        iyr = _rows(par[P_SY], par[P_DY], oy * lvf[1, up, LVF_MA], fy * lvf[1, up, LVF_MA + 1], par[P_RY])
        ixr = _rows(par[P_SX], par[P_DX], ox * lvf[1, up, LVF_MA + 2], fx * lvf[1, up, LVF_MA + 3], par[P_RX])
        s = s * ((iyr * ixr) / (iy * ix))
    return C[T_IBCG, e] * lv[1, up, LV_MEXT] * iy * ix, lv[1, up, LV_MG], s


@_inline
def _prefix(O, i, k0, ft, C):
    """C[r, e] = product of factor row r over O[i, :e] (rows < N_CUM), recomputed from e = k0 + 1
    (the columns up to k0 are the previous row's); C[R_REM, e] / C[R_REMO, e] = product of all / of
    the O-relevant factors of O[i, e:]. Returns False if a type id is out of range."""
    L = O.shape[1]
    m = ft.shape[1]
    for e in range(k0, L):
        t = O[i, e]
        if t < 0 or t >= m:
            return False
        for r in range(N_CUM):
            C[r, e + 1] = C[r, e] * ft[r, t]
    C[R_REM, L] = 1
    C[R_REMO, L] = 1
    for e in range(L - 1, -1, -1):
        t = O[i, e]
        C[R_REM, e] = C[R_REM, e + 1] * ft[T_F, t]
        C[R_REMO, e] = C[R_REMO, e + 1] * ft[T_O, t]
    return True


@_inline
def _scan(op, li, e0, L, size, C, lv, par, CT, CC, mi, j):
    """Tile bits CT[mi, j, e] and LOMA cost CC[mi, j, e] = (loops left above) x bits of operand op at
    level li for the prefixes e = e0, e0 + 1, ... up to the first whose tile overflows ``size``
    (-1: unbounded). Returns that first overflowing e, or L + 1. The tile formula of `_tile_bits`
    with the level's constants held in registers."""
    cap = size if size >= 0 else 1 << 62
    k0 = lv[op, li, LV_EXT]
    if op == 0:
        b = par[P_BW]
        for e in range(e0, L + 1):
            tb = C[T_W, e] * k0 * b
            if tb > cap:
                return e
            CT[mi, j, e] = tb
            CC[mi, j, e] = C[R_REM, e] * tb
        return L + 1
    if op == 2:
        pb = par[P_BO]
        fb = par[P_BOF]
        unred = lv[2, li, LV_UNRED] != 0
        irr = C[T_OIRR, L]
        for e in range(e0, L + 1):
            te = C[T_O, e] * k0
            tb = te * pb if unred or C[T_OIRR, e] < irr else te * fb
            if tb > cap:
                return e
            CT[mi, j, e] = tb
            CC[mi, j, e] = C[R_REM, e] * tb
        return L + 1
    k1, k2, k3, k4 = lv[1, li, LV_EXT + 1], lv[1, li, LV_EXT + 2], lv[1, li, LV_EXT + 3], lv[1, li, LV_EXT + 4]
    sy, dy, sx, dx, b = par[P_SY], par[P_DY], par[P_SX], par[P_DX], par[P_BI]
    ry, rx = par[P_RY], par[P_RX]
    for e in range(e0, L + 1):
        iy = _rows(sy, dy, C[T_OY, e] * k1, C[T_FY, e] * k2, ry)
        ix = _rows(sx, dx, C[T_OX, e] * k3, C[T_FX, e] * k4, rx)
        tb = C[T_IBCG, e] * k0 * iy * ix * b
        if tb > cap:
            return e
        CT[mi, j, e] = tb
        CC[mi, j, e] = C[R_REM, e] * tb
    return L + 1


@_inline
def _candidates(mi, L, C, lv, mem, par, SM, RG, CT, CC):
    """LOMA's candidates at memory mi (`allocation.allocate`): per operand slot j, the prefixes of
    its unallocated loops, shortest first up to the first whose tile overflows mi on its own, in
    the range SM[S_LO, j] .. SM[S_HI, j]; a top level takes all loops (one candidate, cost 0), and
    every prefix up to all loops must fit; slots past the memory's operands get one empty
    candidate. A scan resumes where the last scan of the same slot and start is still valid: RG[mi,
    0/1, j] its range, RG[mi, 2, j] how many leading loops the current ordering still shares with
    the ordering it was made for (a tile of the prefix e depends on those e loops only). Returns the deepest
    loop index the candidates read (+1, at most L), or -1 if some operand has no candidate."""
    size = mem[mi, M_SIZE]
    dep = 0
    for j in range(3):
        if j >= mem[mi, M_NOPS]:
            SM[S_LO, j], SM[S_HI, j], CT[mi, j, 0], CC[mi, j, 0] = 0, 1, 0, 0
            continue
        op = mem[mi, M_OP + j]
        li = mem[mi, M_LI + j]
        s = SM[S_START, op]
        top = lv[op, li, LV_TOP] != 0
        if top and (op != 2 or size < 0):
            # W and I tiles grow with the prefix, so all loops fit iff the tile of all loops does, and
            # that tile is the same for every ordering (no loop read); an unbounded memory checks none
            tb = 0 if size < 0 else _tile_bits(op, li, L, L, C, lv, par)[1]
            if size >= 0 and tb > size:
                return -1
            SM[S_LO, j], SM[S_HI, j], CT[mi, j, L], CC[mi, j, L] = L, L + 1, tb, 0
            continue
        e0 = max(s, min(RG[mi, 1, j], RG[mi, 2, j] + 1)) if RG[mi, 0, j] == s else s
        hi = _scan(op, li, e0, L, size, C, lv, par, CT, CC, mi, j)
        RG[mi, 0, j], RG[mi, 1, j], RG[mi, 2, j] = s, hi, L
        if top:
            if hi <= L:
                return -1
            SM[S_LO, j], SM[S_HI, j], CC[mi, j, L] = L, L + 1, 0
            dep = L
            continue
        if hi == s:
            return -1
        SM[S_LO, j], SM[S_HI, j] = s, hi
        dep = max(dep, min(hi, L))
    return dep


@_inline
def _checked_above(mi, mu, mem):
    """Whether the look-ahead checks memory mu above mi: bounded, and holding one of mi's operands
    (a memory holding none of them keeps the least tiles the decision below mi checked)."""
    if mem[mu, M_SIZE] < 0:
        return False
    for j in range(mem[mu, M_NOPS]):
        for k in range(mem[mi, M_NOPS]):
            if mem[mu, M_OP + j] == mem[mi, M_OP + k]:
                return True
    return False


@_inline
def _slot_above(mi, op, li, mem, lv):
    """The slot of mi whose end bounds operand op's tile at its level li above (-1 when li is op's
    top level, which holds all loops, or op is not one of mi's operands: the tile starts where op
    starts)."""
    slot = -1
    if lv[op, li, LV_TOP] == 0:
        for k in range(mem[mi, M_NOPS]):
            if mem[mi, M_OP + k] == op:
                slot = k
    return slot


@_inline
def _tile_above(mi, mu, j, e1, e2, e3, L, C, lv, mem, par, SM):
    """The bits of the j-th operand of memory mu above mi when mi's slots end at e1, e2, e3: its
    tile holds all loops at its top level, the loops below the slot's end if it is one of mi's
    operands (`_slot_above`), else the loops from where it starts."""
    op = mem[mu, M_OP + j]
    li = mem[mu, M_LI + j]
    k = _slot_above(mi, op, li, mem, lv)
    e = (L if lv[op, li, LV_TOP] != 0 else SM[S_START, op]) if k < 0 else (e1 if k == 0 else (e2 if k == 1 else e3))
    return _tile_bits(op, li, e, L, C, lv, par)[1]


@_inline
def _fits_above(mi, e1, e2, e3, L, C, lv, mem, par, SM):
    """`allocation.allocate`'s look-ahead: whether every memory above mi it checks
    (`_checked_above`) can hold the least tiles left to it when mi's operand slots end at e1, e2,
    e3 (each operand no further loops below its top level, all loops at its top; the others from
    where they start)."""
    for mu in range(mi + 1, mem.shape[0]):
        if _checked_above(mi, mu, mem):
            need = 0
            for j in range(mem[mu, M_NOPS]):
                need += _tile_above(mi, mu, j, e1, e2, e3, L, C, lv, mem, par, SM)
            if need > mem[mu, M_SIZE]:
                return False
    return True


@_inline
def _ahead_tables(mi, L, C, lv, mem, par, SM, TA, base):
    """`_fits_above`'s terms for every combination of memory mi's candidates at once, into the
    workspace's TA and base: TA[k, mu, e]
    the bits of slot k's operand at memory mu when slot k ends at e (0 where mu does not hold it or
    holds its top level: those are in base), base[mu] the bits of mu's other tiles, -1 for a memory
    `_fits_above` does not check. Then ``base[mu] + TA[0, mu, e1] + TA[1, mu, e2] + TA[2, mu, e3]``
    is `_fits_above`'s need of mu, each tile computed once per candidate instead of once per
    combination (the A100's register file decides most of its allocations by the look-ahead: 2x
    faster on scripts/silicon_a100.py, the same choices). Only the entries `_choose` reads are
    written: base for every memory, TA[k, mu, SM[S_LO, k] .. SM[S_HI, k]] of the memories checked
    (the others' TA read as 0: slot k's operand not held there)."""
    nm = mem.shape[0]
    for mu in range(nm):
        base[mu] = -1
    for mu in range(mi + 1, nm):
        if not _checked_above(mi, mu, mem):
            continue
        base[mu] = 0
        for k in range(3):
            for e in range(SM[S_LO, k], SM[S_HI, k]):
                TA[k, mu, e] = 0
        for j in range(mem[mu, M_NOPS]):
            k = _slot_above(mi, mem[mu, M_OP + j], mem[mu, M_LI + j], mem, lv)
            if k < 0:   # the same tile for every combination
                base[mu] += _tile_above(mi, mu, j, 0, 0, 0, L, C, lv, mem, par, SM)
                continue
            for e in range(SM[S_LO, k], SM[S_HI, k]):
                TA[k, mu, e] = _tile_above(mi, mu, j, e, e, e, L, C, lv, mem, par, SM)
    return TA, base


@_inline
def _choose(mi, mem, par, SM, CT, CC, look, TA, base):
    """The combination of candidates (one per operand slot) of least total cost whose tiles fit mi
    jointly and, if look and where base[mu] >= 0, leave memory mu room for its tiles
    (`_ahead_tables`: the look-ahead; look False checks nothing); ties to the last in the order where the first
    operand varies slowest (ZigZag's ``<=``); even mappings: all operands end at the same loop.
    Writes SM[S_CHOICE, j]; False if none.

    The combinations are visited in the reverse of that order, each slot's deepest candidate
    first, and one replaces the best only if it costs strictly less: the first of the least cost
    met backwards is the last of them forwards, the same choice. Deeper candidates mostly cost less
    (more reuse below the memory above), so a cheap one is met early, and then an e1 (or e1, e2)
    whose cost plus the least cost of the remaining slots is not below the best is skipped whole:
    every combination under it costs at least as much (floating-point addition is monotone, so the
    partial sums compare the same way). On the a100 preset, whose register file decides most
    allocations by the look-ahead, one ordering's evaluation went 28-31 -> 5.3-6.0 us
    (``scripts/bench_costmodel.py --arch a100``). (A binary search over the last operand's candidates,
    whose tile bits mostly grow with the prefix, measured no faster: a memory has few candidates.)"""
    size = mem[mi, M_SIZE]
    nops = mem[mi, M_NOPS]
    even = par[P_EVEN] != 0
    found = False
    bc = 0
    m2 = np.inf   # the least cost of slots 1 and 2: a bound on what e1 (or e1, e2) can still reach
    for e in range(SM[S_LO, 1], SM[S_HI, 1]):
        m2 = min(m2, CC[mi, 1, e])
    m3 = np.inf
    for e in range(SM[S_LO, 2], SM[S_HI, 2]):
        m3 = min(m3, CC[mi, 2, e])
    for e1 in range(SM[S_HI, 0] - 1, SM[S_LO, 0] - 1, -1):
        if found and CC[mi, 0, e1] + m2 + m3 >= bc:
            continue   # every combination with e1 costs at least the best (rounding is monotone)
        for e2 in range(SM[S_HI, 1] - 1, SM[S_LO, 1] - 1, -1):
            if found and CC[mi, 0, e1] + CC[mi, 1, e2] + m3 >= bc:
                continue
            for e3 in range(SM[S_HI, 2] - 1, SM[S_LO, 2] - 1, -1):
                if size >= 0 and CT[mi, 0, e1] + CT[mi, 1, e2] + CT[mi, 2, e3] > size:
                    continue
                if even and ((nops > 1 and e2 != e1) or (nops > 2 and e3 != e1)):
                    continue
                c = CC[mi, 0, e1] + CC[mi, 1, e2] + CC[mi, 2, e3]
                if found and c >= bc:
                    continue
                room = True
                for mu in range(base.shape[0] if look else 0):
                    if base[mu] >= 0 and base[mu] + TA[0, mu, e1] + TA[1, mu, e2] + TA[2, mu, e3] > mem[mu, M_SIZE]:
                        room = False
                        break
                if room:
                    found = True
                    bc = c
                    SM[S_CHOICE, 0], SM[S_CHOICE, 1], SM[S_CHOICE, 2] = e1, e2, e3
    return found


@_inline
def _decide(mi, L, C, lv, mem, par, SM, CT, CC, TA, BA):
    """`allocation.allocate`'s choice at memory mi: ZigZag's least-cost combination when the memories
    above can complete it (then it is also the least among those they can: the same choice), else
    the least among those they can (SM[S_FILT, mi] = 1: such a decision is never kept, since which
    combinations the memories above can complete depends on more than the loops it read). False if
    none. TA, BA: the workspace's look-ahead tables (`_ahead_tables`)."""
    SM[S_FILT, mi] = 0
    if _choose(mi, mem, par, SM, CT, CC, False, TA, BA):
        if _fits_above(mi, SM[S_CHOICE, 0], SM[S_CHOICE, 1], SM[S_CHOICE, 2], L, C, lv, mem, par, SM):
            return True
    SM[S_FILT, mi] = 1
    _ahead_tables(mi, L, C, lv, mem, par, SM, TA, BA)
    return _choose(mi, mem, par, SM, CT, CC, True, TA, BA)


@_inline
def _kept(mi, mem, lv, SM, RG):
    """Memory mi's last decision still holds: it succeeded, every operand it scanned starts where
    it started then, and the current ordering shares with that one's every loop it read (SM[S_DEP]
    leading loops; RG[mi, 2, j] how many it shares, `_shared`)."""
    if SM[S_DEP, mi] < 0 or SM[S_FILT, mi] != 0:
        return False
    for j in range(mem[mi, M_NOPS]):
        op = mem[mi, M_OP + j]
        if lv[op, mem[mi, M_LI + j], LV_TOP] != 0 and (op != 2 or mem[mi, M_SIZE] < 0):
            continue   # all loops, the same tile for every ordering: no loop read
        if RG[mi, 0, j] != SM[S_START, op] or SM[S_DEP, mi] > RG[mi, 2, j]:
            return False
    return True


@_inline
def _kept_fits(mi, L, C, lv, mem, par, SM, RG, bnd):
    """Whether memory mi's kept decision (its ends in bnd) still leaves the memories above room for
    their tiles: certainly when every operand starts where it did and the current ordering shares
    the loops those starts span (the look-ahead's tiles are the same), else `_fits_above` with the
    current starts."""
    n = mem[mi, M_NOPS]
    shared = L
    for j in range(n):
        if RG[mi, 2, j] < shared:
            shared = RG[mi, 2, j]
    same = True
    for op in range(3):
        if SM[S_K0 + op, mi] != SM[S_START, op] or SM[S_START, op] > shared:
            same = False
    if same:
        return True
    e1 = bnd[mem[mi, M_OP], mem[mi, M_LI]]
    e2 = bnd[mem[mi, M_OP + 1], mem[mi, M_LI + 1]] if n > 1 else 0
    e3 = bnd[mem[mi, M_OP + 2], mem[mi, M_LI + 2]] if n > 2 else 0
    return _fits_above(mi, e1, e2, e3, L, C, lv, mem, par, SM)


@_inline
def _allocate(L, C, lv, mem, par, SM, RG, CT, CC, bnd, TA, BA):
    """LOMA's bottom-up allocation of the ordering (memories innermost first) into bnd[op, li];
    a memory whose last decision still holds (`_kept`) keeps it. Returns False if no allocation
    fits (a memory cannot hold even the tiles below it, or no combination of tiles fits it)."""
    for op in range(3):
        SM[S_START, op] = 0
    for mi in range(mem.shape[0]):
        nops = mem[mi, M_NOPS]
        if _kept(mi, mem, lv, SM, RG) and _kept_fits(mi, L, C, lv, mem, par, SM, RG, bnd):
            for j in range(nops):
                SM[S_START, mem[mi, M_OP + j]] = bnd[mem[mi, M_OP + j], mem[mi, M_LI + j]]
            continue
        SM[S_DEP, mi] = _candidates(mi, L, C, lv, mem, par, SM, RG, CT, CC)
        if SM[S_DEP, mi] < 0 or not _decide(mi, L, C, lv, mem, par, SM, CT, CC, TA, BA):
            SM[S_DEP, mi] = -1
            return False
        for op in range(3):  # the starts the look-ahead read (`_kept_fits`)
            SM[S_K0 + op, mi] = SM[S_START, op]
        for j in range(nops):
            op = mem[mi, M_OP + j]
            bnd[op, mem[mi, M_LI + j]] = SM[S_CHOICE, j]
            SM[S_START, op] = SM[S_CHOICE, j]
    return True


@_inline
def _put(TR, TF, q, op, li, w, ml, win, words, lv, lvf, mem):
    """Record transfer q at operand op's level li: its memory, a write (1) or a read (0), the
    link's lower memory ml (-1: the MAC), its window if ml is single-buffered (compute cycles // T
    of the link), its words and its cycles at the memory's port: words x the operand's word bits /
    its bandwidth / instances (reference `_stalls`, per-operand ports)."""
    mi = lv[op, li, LV_MEM]
    TR[TR_MEM, q] = mi
    TR[TR_W, q] = w
    TR[TR_LO, q] = ml
    TR[TR_WIN, q] = win
    TF[TF_WORDS, q] = words
    TF[TF_CYC, q] = words * lv[op, li, LV_WORD] / (lvf[op, li, LVF_WBW] if w != 0 else lvf[op, li, LVF_RBW]) / mem[mi, M_NI]


@_inline
def _link(op, up, O, i, L, C, ft, lv, lvf, mem, par, bnd, TE, RW, TR, TF, ne):
    """The transfers across the link below operand op's level ``up`` (from level up - 1, or the
    MAC for up = 0): F = P / R tile loads (stationarity; every MAC for O without an accumulator);
    W, I: multicast reads above, fills below; O: write-ups (final on a tile's last visit once the
    spatial reduction is complete), partial-sum read-backs. Adds the counts to RW[op, li, 0 reads /
    1 writes] and records the transfers from index ne in the reference's order. Returns (the new
    ne, how many leading loops of the ordering the link's figures depend on)."""
    lo = up - 1
    w_up = lv[op, up, LV_WORD]
    g = lv[op, up, LV_G]
    s_up = lvf[op, up, LVF_SUP]
    s_lo = lvf[op, up, LVF_SLO]
    bl = 0 if lo < 0 else bnd[op, lo]
    if lv[op, up, LV_WIN] != 0:  # I's padded window dims unrolled inside the moved tile: a fractional window
        w = _window_share(lo, bl, C, lv, lvf, op, up, par)
        s_up = s_up * w
        s_lo = s_lo * w
    j = bl
    dep = bl
    if lv[op, up, LV_EVERY] == 0:
        while j < L and ft[T_REL + op, O[i, j]] == 0:
            j += 1
        dep = min(j + 1, L)
    F = C[R_REM, j]
    te = 1 if lo < 0 else TE[op, lo]
    ml = -1
    T = 1
    if lo >= 0:
        ml = lv[op, lo, LV_MEM]
        k = bl
        k0 = 0 if lo == 0 else bnd[op, lo - 1]
        while k > k0 and ft[T_REL + op, O[i, k - 1]] == 0:
            k -= 1
        for q in range(k, j):
            T *= ft[T_F, O[i, q]]
    win = C[T_F, L] // T
    if op != 2:
        bb = par[P_BW] if op == 0 else par[P_BI]
        tu, gu, su = te, g, s_up
        if lv[op, up, LV_MC] != 0:   # multicast: the distinct data of the lower instances along its dims
            tu, gu, su = _union(bl, C, lv, lvf, up, par)
        rd = F * lv[op, up, LV_NUP] * ((tu * gu * bb + w_up - 1) // w_up) * su
        RW[op, up, 0] += rd
        _put(TR, TF, ne, op, up, 0, ml, win, rd, lv, lvf, mem)
        if lo < 0:
            return ne + 1, dep
        wl = lv[op, lo, LV_WORD]
        wr = F * lv[op, up, LV_NLO] * ((te * bb + wl - 1) // wl) * s_lo
        RW[op, lo, 1] += wr
        _put(TR, TF, ne + 1, op, lo, 1, ml, win, wr, lv, lvf, mem)
        return ne + 2, dep
    pb = par[P_BO]
    fb = par[P_BOF]
    D = C[R_REMO, bl]
    fin = D if lv[op, up, LV_FINOK] != 0 else 0
    part = F - fin
    rb = F - D
    n_up = lv[op, up, LV_NUP]
    wu = n_up * (fin * ((te * g * fb + w_up - 1) // w_up) + part * ((te * g * pb + w_up - 1) // w_up)) * s_up
    ru = rb * n_up * ((te * g * pb + w_up - 1) // w_up) * s_up
    RW[op, up, 1] += wu
    RW[op, up, 0] += ru
    _put(TR, TF, ne, op, up, 1, ml, win, wu, lv, lvf, mem)
    _put(TR, TF, ne + 1, op, up, 0, ml, win, ru, lv, lvf, mem)
    if lo < 0:
        return ne + 2, dep
    wl = lv[op, lo, LV_WORD]
    n_lo = lv[op, up, LV_NLO]
    fin_lo = 0 if lv[op, lo, LV_UNRED] != 0 else fin   # read out at the lower level's own precision
    rl = n_lo * (fin_lo * ((te * fb + wl - 1) // wl) + (F - fin_lo) * ((te * pb + wl - 1) // wl)) * s_lo
    wr = rb * n_lo * ((te * pb + wl - 1) // wl) * s_lo
    RW[op, lo, 0] += rl
    RW[op, lo, 1] += wr
    _put(TR, TF, ne + 2, op, lo, 0, ml, win, rl, lv, lvf, mem)
    _put(TR, TF, ne + 3, op, lo, 1, ml, win, wr, lv, lvf, mem)
    return ne + 4, dep


@_inline
def _relink(op, up, RW, TF, ne):
    """Add the recorded words of the link below op's level ``up`` (unchanged since they were
    computed) to RW in `_link`'s order. Returns the new ne."""
    if op != 2:
        RW[op, up, 0] += TF[TF_WORDS, ne]
        if up == 0:
            return ne + 1
        RW[op, up - 1, 1] += TF[TF_WORDS, ne + 1]
        return ne + 2
    RW[op, up, 1] += TF[TF_WORDS, ne]
    RW[op, up, 0] += TF[TF_WORDS, ne + 1]
    if up == 0:
        return ne + 2
    RW[op, up - 1, 0] += TF[TF_WORDS, ne + 2]
    RW[op, up - 1, 1] += TF[TF_WORDS, ne + 3]
    return ne + 4


@_inline
def _traffic(O, i, L, C, ft, lv, lvf, mem, par, bnd, TE, TK, RW, TB, TR, TF, LK):
    """Tiles, access counts and energy of the allocated ordering (reference `_level_tiles`,
    `_boundary_accesses`, "Energy"): TB[mi] = tile bits memory mi holds per instance; RW per
    (operand, level); the transfers in TR / TF in the reference's order. A level's tile is kept
    (TE, TK[op, li]: its boundary, loops still shared, bits) while its loops are unchanged; a link whose figures
    depend on no more leading loops than the current ordering shares with the one they were
    computed for (LK[op, up]: that dependence, the boundaries below, the loops still shared), and
    whose boundaries are unchanged, keeps its recorded transfers. Returns (energy of the memories
    in pJ, summed as the reference sums it, number of transfers)."""
    for mi in range(mem.shape[0]):
        TB[mi] = 0
    ne = 0
    acc = 0.0
    for op in range(3):
        nl = par[P_NL + op]
        for li in range(nl):
            RW[op, li, 0] = 0.0
            RW[op, li, 1] = 0.0
            b = bnd[op, li]
            if TK[op, li, 0] != b or b > TK[op, li, 1]:   # the tile of loops [0, b) changed
                te, tb = _tile_bits(op, li, b, L, C, lv, par)
                TE[op, li], TK[op, li, 0], TK[op, li, 1], TK[op, li, 2] = te, b, L, tb
            TB[lv[op, li, LV_MEM]] += TK[op, li, 2]
        for up in range(nl):
            b1 = 0 if up < 1 else bnd[op, up - 1]
            b2 = 0 if up < 2 else bnd[op, up - 2]
            if 0 <= LK[op, up, 0] <= LK[op, up, 3] and LK[op, up, 1] == b1 and LK[op, up, 2] == b2:
                ne = _relink(op, up, RW, TF, ne)
                continue
            ne, dep = _link(op, up, O, i, L, C, ft, lv, lvf, mem, par, bnd, TE, RW, TR, TF, ne)
            LK[op, up, 0], LK[op, up, 1], LK[op, up, 2], LK[op, up, 3] = dep, b1, b2, L
        for li in range(nl):
            acc = acc + (RW[op, li, 0] * lvf[op, li, LVF_RPJ] + RW[op, li, 1] * lvf[op, li, LVF_WPJ])
    return acc, ne


@_inline
def _port_of(TR, q, mem):
    """The port of transfer q: 2 mi for memory mi's shared or read port, 2 mi + 1 for its write port."""
    mi = TR[TR_MEM, q]
    return 2 * mi + 1 if TR[TR_W, q] != 0 and mem[mi, M_SHARED] == 0 else 2 * mi


@_inline
def _ports(ne, TR, GO, mem):
    """Gather the transfers by port, each port's in the reference's order (a stable counting sort):
    TR[TR_GI, GO[0, g] .. GO[0, g + 1]] are port g's. The ports of the transfers are the same for
    every ordering of an evaluator (each link records the same transfers), so this runs once."""
    nm = mem.shape[0]
    for g in range(2 * nm + 1):
        GO[0, g] = 0
    for q in range(ne):
        GO[0, _port_of(TR, q, mem) + 1] += 1
    for g in range(2 * nm):
        GO[0, g + 1] += GO[0, g]
        GO[1, g] = GO[0, g]
    for q in range(ne):
        g = _port_of(TR, q, mem)
        TR[TR_GI, GO[1, g]] = q
        GO[1, g] += 1


@_inline
def _latency(ne, TR, TF, GO, mem, TB, total, ST):
    """Stall cycles of the allocated ordering (reference `_stalls` / `port_stall`): each transfer
    takes TF[TF_CYC] cycles at its memory's port within its link's window (all compute cycles if
    the lower level is the MAC or double-buffered, else total // T); per port the largest excess
    of the transfers whose windows lie within one window (ports gathered by `_ports`, so the same
    floats add in the same order; each distinct window summed once); a memory stalls as its worst
    port (ST[mi]). Returns the largest stall (cycles)."""
    for q in range(ne):
        ml = TR[TR_LO, q]
        db = ml < 0 or mem[ml, M_SIZE] < 0 or 2 * TB[ml] <= mem[ml, M_SIZE]
        TR[TR_WQ, q] = total if db else TR[TR_WIN, q]
    stall = 0.0
    for mi in range(mem.shape[0]):
        s = 0.0
        for g in range(2 * mi, 2 * mi + 2):
            for k in range(GO[0, g], GO[0, g + 1]):
                wk = TR[TR_WQ, TR[TR_GI, k]]
                dup = False
                for q in range(GO[0, g], k):
                    if TR[TR_WQ, TR[TR_GI, q]] == wk:
                        dup = True
                        break
                if dup:
                    continue
                a = 0.0
                for q in range(GO[0, g], GO[0, g + 1]):
                    if TR[TR_WQ, TR[TR_GI, q]] <= wk:
                        a += TF[TF_CYC, TR[TR_GI, q]]
                if a - wk > s:
                    s = a - wk
        ST[mi] = s
        stall = s if mi == 0 else max(stall, s)
    return stall


@_inline
def _shared(k, RG, LK, TK):
    """A new ordering shares its first k loops with the previous one: the cached scans (RG[:, 2]),
    links (LK[:, :, 3]) and tiles (TK[:, :, 1]) share no more with it than with the previous one."""
    for mi in range(RG.shape[0]):
        for j in range(3):
            RG[mi, 2, j] = min(RG[mi, 2, j], k)
    for op in range(3):
        for up in range(LK.shape[1]):
            LK[op, up, 3] = min(LK[op, up, 3], k)
            TK[op, up, 1] = min(TK[op, up, 1], k)


_sizes = _inline(work_sizes)
_carve = _inline(carve)


def _make_evaluate_batch(sources: str):
    """`evaluate_batch`, compiled as a closure over ``sources`` (`KERNEL_SOURCES`) alone: Numba keys
    its on-disk cache by this file's time stamp and by a closure's values, so a change in a file
    the kernel compiles from (tables.py, window.py, borrow.py) recompiles it too."""

    def evaluate_batch(O, ft, lv, lvf, mem, memf, par, mac_e, out, wi, wf):
        """Costs of the orderings O (n, L) of loop-type ids, innermost loop first, into out (4, n):
        energy (pJ), latency (cycles), EDP, valid (1.0 / 0.0); invalid orderings (no allocation fits)
        get inf costs. memf is not read (each operand's port at a level is in lvf). wi / wf: the evaluator's workspace (`tables.workspace`); after the call its RW,
        bnd and ST (`tables.carve`) hold the access counts, boundaries and stalls of the last row evaluated. Returns
        the index of the first row with a type id out of range (rows from there on are not
        evaluated), else -1."""
        O, ft, lv, lvf, mem, par, out, wi, wf = (_borrow(O), _borrow(ft), _borrow(lv), _borrow(lvf), _borrow(mem),
                                                 _borrow(par), _borrow(out), _borrow(wi), _borrow(wf))  # no counting
        assert len(sources) > 0   # the closure's value: part of the cache key
        n, L = O.shape
        nm = mem.shape[0]
        C, SM, RG, CT, CC, TE, TB, TR, GO, LK, bnd, PREV, FL, TK, TA, BA, TF, RW, ST = _carve(
            wi, wf, L, nm, lv.shape[1], _sizes(L, nm, lv.shape[1])[0])
        total = par[P_TOTAL]
        for i in range(n):
            k = 0
            if i > 0:
                while k < L and O[i, k] == O[i - 1, k]:
                    k += 1
            elif FL[F_PREV] != 0:
                while k < L and O[0, k] == PREV[k]:
                    k += 1
            FL[F_PREV] = 0
            _shared(k, RG, LK, TK)
            if not _prefix(O, i, k, ft, C):
                return i
            if not _allocate(L, C, lv, mem, par, SM, RG, CT, CC, bnd, TA, BA):
                out[0, i], out[1, i], out[2, i], out[3, i] = np.inf, np.inf, np.inf, 0.0
                continue
            e, ne = _traffic(O, i, L, C, ft, lv, lvf, mem, par, bnd, TE, TK, RW, TB, TR, TF, LK)
            if FL[F_PORTS] == 0:
                _ports(ne, TR, GO, mem)
                FL[F_PORTS] = 1
            energy = mac_e + e
            latency = float(total) + _latency(ne, TR, TF, GO, mem, TB, total, ST)
            out[0, i], out[1, i], out[2, i], out[3, i] = energy, latency, energy * latency, 1.0
        for e in range(L):
            PREV[e] = O[n - 1, e]
        FL[F_PREV] = 1 if n > 0 else 0
        return -1

    return _jit(evaluate_batch)


#: sha256 of the source files the kernel compiles from
KERNEL_SOURCES = hashlib.sha256(b"".join((Path(__file__).parent / f).read_bytes()
                                         for f in ("kernel.py", "tables.py", "window.py", "borrow.py"))).hexdigest()
evaluate_batch = _make_evaluate_batch(KERNEL_SOURCES)

def python_kernel():
    """This module loaded a second time, interpreted (its `_jit` the identity): the kernel that
    ``backend="python"`` runs, the same source as the compiled one. Cached after the first call."""
    global _PY
    if not JIT:
        import sys
        return sys.modules[__name__]
    if _PY is None:
        import importlib.util
        spec = importlib.util.spec_from_file_location(__name__ + "_py", __file__)
        assert spec is not None and spec.loader is not None  # a .py file location has both
        mod = importlib.util.module_from_spec(spec)
        setattr(mod, "__interpreted__", True)  # read by the copy's _jit (globals()); not a declared attribute
        spec.loader.exec_module(mod)
        _PY = mod
    return _PY


_PY: ModuleType | None = None
