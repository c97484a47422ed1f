"""The loop-nest kernel's state: one typed table of everything an evaluator fixes, in one encoding,
and the work arrays the kernel keeps from one call to the next (`workspace`).

An `OrderingEvaluator` fixes a layer, an accelerator, a spatial unrolling and a multiset of
temporal loop types (LPFs, SALSA Sec. II-B). What the kernel (`costmodel.loopnest.kernel`) needs of
them is computed here once, by the reference's own helpers (`reference._Nest`: instances, multicast
groups, real / padded shares), and stored as small integer and float arrays whose column names are
the constants below, the only place they are defined. The kernel reads them; nothing else writes
them.

Operands are indexed 0 W, 1 I, 2 O (`mapping.OPERANDS`); levels of an operand innermost first, as
`Accelerator.levels(op)`; memories in the accelerator's order (innermost first).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .mapping import OPERANDS, RELEVANT
from .reference import _Nest, mac_energy, operand_bits
from .window import WINDOW, window_caps, window_steps

__all__ = ["KernelTables", "KernelRangeError", "KERNEL_MAX_COUNT", "build_tables", "workspace", "views"]

# ---- ft[row, type]: per loop type, the factor it contributes to each cumulative product (1 where
# the type does not count), then 0/1 relevance to W, I, O
T_F, T_W, T_O, T_OIRR, T_IBCG, T_OY, T_FY, T_OX, T_FX = range(9)
N_CUM = 9                   # rows with cumulative products along an ordering
T_REL = 9                   # rows 9, 10, 11: relevant to W, I, O
N_T = 12

# ---- lv[op, li, col]: operand op's level li (the level's own columns), then the transfer link
# below it (between level li - 1, or the MAC for li = 0, and level li)
LV_MEM = 0                  # memory index
LV_WORD = 1                 # word bits (the operand's port, `MemoryLevel.port`)
LV_TOP = 2                  # 1 if the operand's top level
LV_EXT = 3                  # 3..7: spatial extents inside one instance: W: K*C*FY*FX*G, O: B*K*OY*OX*G,
#                             I: B*C*G, OY, FY, OX, FX
LV_UNRED = 8                # O: an O-irrelevant spatial loop is unreduced within the level's scope
LV_G = 9                    # link: multicast / reduction group g
LV_NUP = 10                 # link: instances of the upper level
LV_NLO = 11                 # link: instances of the lower side (the MAC: all PEs)
LV_FINOK = 12               # link: the spatial reduction is complete below the upper level
LV_EVERY = 13               # link: O visits the level at every MAC (no accumulator, li = 0)
LV_WIN = 14                 # link: I's padded window dims unrolled inside the moved tile
LV_MC = 15                  # link: I's reads above count the union along the multicast dims (reference
#                             `_Nest.multicast`); then 16..20 its spatial extents (as LV_EXT), its group
LV_MEXT, LV_MG, LV_MWIN = 16, 21, 22   # g and whether padded window dims are unrolled inside it
N_LV = 23

# ---- lvf[op, li, col]: real / padded shares of the link below level li, and I's window fractions;
# the operand's port at the level (`MemoryLevel.port`)
LVF_SUP, LVF_SLO = 0, 1     # share of the counts at the upper / lower side
LVF_A = 2                   # 2..5: D / P of OY, FY, OX, FX (1.0 where not fractional)
LVF_RBW, LVF_WBW, LVF_RPJ, LVF_WPJ = 6, 7, 8, 9   # bits per cycle read / written; pJ per word read / written
LVF_MSUP, LVF_MA = 10, 11   # multicast union (LV_MC): share of the upper count, 11..14 its window fractions
N_LVF = 15

# ---- mem[mi, col]: memories
M_SIZE = 0                  # size bits, -1 = unbounded
M_NOPS = 1                  # operands it holds (1..3)
M_OP = 2                    # 2..4: their operand indices
M_LI = 5                    # 5..7: the memory's level index in each operand's hierarchy
M_WORD = 8                  # word bits
M_SHARED = 9                # one port for reads and writes
M_NI = 10                   # instances
N_M = 11
# ---- memf[mi, col]
MF_RPJ, MF_WPJ, MF_RBW, MF_WBW = range(4)   # pJ per word read / written; bits per cycle read / written
N_MF = 4

# ---- par[col]: scalars of the layer and the evaluator
P_TOTAL = 0                 # product of all temporal loop factors (compute cycles)
P_BW, P_BI, P_BO, P_BOF = 1, 2, 3, 4        # bits of W, I, O partial sums, O final
P_SY, P_SX, P_DY, P_DX = 5, 6, 7, 8         # strides and dilations divided by their gcd
P_EVEN = 9                  # even mappings only
P_NL = 10                   # 10..12: number of levels of W, I, O
P_RY, P_RX = 13, 14         # rows and columns of real input the layer reads (`window.window_caps`)
N_P = 15


# ---- the kernel's work arrays (`workspace`, `carve`): rows of C after the N_CUM cumulative
# products, of SM, TR, TF and FL
R_REM, R_REMO = N_CUM, N_CUM + 1     # C: products of all / of the O-relevant factors of o[e:]
S_START, S_LO, S_HI, S_CHOICE, S_DEP = range(5)   # SM: per operand / slot / memory
S_FILT = 5                           # SM row 5: 1 where a memory's last decision needed the look-ahead
S_K0 = 6                             # SM rows 6..8: each operand's start when a memory last decided
TR_MEM, TR_W, TR_LO, TR_WIN, TR_WQ, TR_GI = range(6)   # TR (per transfer): memory, is a write, lower
#                 level's memory (-1: the MAC), window if single-buffered, window in force, sorted index
TF_WORDS, TF_CYC = 0, 1              # TF (per transfer): words, cycles
F_PREV, F_PORTS = 0, 1               # FL: PREV holds the previous call's last row; the ports are gathered



@dataclass(frozen=True)
class KernelTables:
    """Everything the kernel reads about one evaluator, as arrays (see the column constants).

    Attributes:
        ft: (N_T, m) int64, per loop type. lv: (3, max levels, N_LV) int64. lvf: (3, max levels,
        N_LVF) float64. mem: (memories, N_M) int64. memf: (memories, N_MF) float64. par: (N_P,)
        int64. mac_e: energy of the layer's real MACs (pJ, `reference.mac_energy`).
    """

    ft: np.ndarray
    lv: np.ndarray
    lvf: np.ndarray
    mem: np.ndarray
    memf: np.ndarray
    par: np.ndarray
    mac_e: float

    def args(self) -> tuple:
        """The tables in the kernel's argument order."""
        return self.ft, self.lv, self.lvf, self.mem, self.memf, self.par, self.mac_e


def _type_table(types) -> np.ndarray:
    """ft of the loop types ((dim, factor) pairs)."""
    ft = np.ones((N_T, len(types)), dtype=np.int64)
    rows = ((T_W, RELEVANT["W"]), (T_O, RELEVANT["O"]), (T_OIRR, None), (T_IBCG, ("B", "C", "G")),
            (T_OY, ("OY",)), (T_FY, ("FY",)), (T_OX, ("OX",)), (T_FX, ("FX",)))
    for j, (d, f) in enumerate(types):
        ft[T_F, j] = f
        for r, dims in rows:
            on = d not in RELEVANT["O"] if dims is None else d in dims
            ft[r, j] = f if on else 1
        for k, op in enumerate(OPERANDS):
            ft[T_REL + k, j] = d in RELEVANT[op]
    return ft


def _level_rows(nest: _Nest, arch, lv, lvf) -> None:
    """Fill lv / lvf: each level's own columns and the link below it."""
    index = {m.name: i for i, m in enumerate(arch.memories)}
    for k, op in enumerate(OPERANDS):
        levels = arch.levels(op)
        for li, m in enumerate(levels):
            row, rowf = lv[k, li], lvf[k, li]
            ext = nest.spatial_ext([a for a in nest.all_dims if a not in m.private_to]).get
            pt = m.port(op)
            row[LV_MEM], row[LV_WORD], row[LV_TOP] = index[m.name], pt.word_bits, li == len(levels) - 1
            rowf[LVF_RBW:LVF_WPJ + 1] = (pt.read_bw, pt.write_bw, pt.read_pj, pt.write_pj)
            if op == "W":
                row[LV_EXT] = ext("K", 1) * ext("C", 1) * ext("FY", 1) * ext("FX", 1) * ext("G", 1)
            elif op == "O":
                row[LV_EXT] = ext("B", 1) * ext("K", 1) * ext("OY", 1) * ext("OX", 1) * ext("G", 1)
                row[LV_UNRED] = nest.unreduced(m.private_to)
            else:
                row[LV_EXT:LV_EXT + 5] = (ext("B", 1) * ext("C", 1) * ext("G", 1), ext("OY", 1), ext("FY", 1),
                                          ext("OX", 1), ext("FX", 1))
            lo_scope = nest.all_dims if li == 0 else levels[li - 1].private_to
            wf = nest.window_frac(op, lo_scope)
            row[LV_G] = nest.group(op, [a for a in lo_scope if a not in m.private_to])
            row[LV_NUP], row[LV_NLO] = nest.instances(m.private_to), nest.instances(lo_scope)
            row[LV_FINOK] = not nest.unreduced(m.private_to)
            row[LV_EVERY] = op == "O" and li == 0 and arch.accumulator_pj is None
            row[LV_WIN] = bool(wf)
            rowf[LVF_SUP] = nest.real_scale(op, m.private_to, wf)
            rowf[LVF_SLO] = nest.real_scale(op, lo_scope, wf)
            rowf[LVF_A:LVF_A + 4] = [wf.get(d, 1.0) for d in WINDOW]
            _multicast_row(nest, op, lo_scope, m.private_to, row, rowf)


def _multicast_row(nest: _Nest, op: str, lo_scope, up_scope, row, rowf) -> None:
    """The link's multicast union columns (LV_MC ..., LVF_MSUP, LVF_MA; reference `_Nest.multicast`)."""
    scope = nest.multicast_scope(op, lo_scope, up_scope)
    if scope is None:
        return
    ext = nest.spatial_ext([a for a in nest.all_dims if a not in scope]).get
    wf = nest.window_frac(op, scope)
    row[LV_MC], row[LV_MWIN] = 1, bool(wf)
    row[LV_MEXT:LV_MEXT + 5] = (ext("B", 1) * ext("C", 1) * ext("G", 1), ext("OY", 1), ext("FY", 1), ext("OX", 1),
                                ext("FX", 1))
    row[LV_MG] = nest.group(op, [a for a in scope if a not in up_scope])
    rowf[LVF_MSUP] = nest.real_scale(op, up_scope, wf)
    rowf[LVF_MA:LVF_MA + 4] = [wf.get(d, 1.0) for d in WINDOW]


#: The largest count the kernel's int64 arithmetic may reach: its largest product is a tile's bits
#: times the loops above the tile, at most (temporal loops x spatial unrolling: the padded MACs) x
#: the widest operand's bits; kept below 2^62 so that no sum of two such counts overflows either.
KERNEL_MAX_COUNT = 1 << 62


class KernelRangeError(ValueError):
    """A layer too large for the kernel's 64-bit integer counts (`KERNEL_MAX_COUNT`)."""


def build_tables(layer, arch, fit, types, counts, even: bool) -> KernelTables:
    """The tables of an evaluator of ``layer`` on ``arch`` with the fitted spatial unrolling ``fit``
    (`SpatialMapping.fit`), the loop types ``types`` ((dim, factor) pairs) and their multiplicities
    ``counts``; ``even``: even mappings only.

    Raises:
        KernelRangeError: padded MACs x the widest operand's bits reach `KERNEL_MAX_COUNT` (a layer of
            more than about 2^57 MACs at 32 bits; the reference, `costmodel.loopnest.reference`,
            counts in Python integers and has no such limit).
    """
    total = 1
    for (_, f), c in zip(types, counts):
        total *= f ** int(c)
    padded = total * math.prod(f for loops in fit.dims.values() for _, f in loops)
    widest = max(operand_bits(layer, arch).values())
    if padded * widest >= KERNEL_MAX_COUNT:
        raise KernelRangeError(
            f"layer {layer.name!r}: {padded:,} MACs (spatially padded) x {widest} bits reach 2^62: more than "
            f"the loop-nest kernel's 64-bit counts hold; split the layer (e.g. along B or K)")
    nest = _Nest(layer, arch, fit, ())
    nlev = [len(arch.levels(op)) for op in OPERANDS]
    lv = np.zeros((3, max(nlev), N_LV), dtype=np.int64)
    lvf = np.ones((3, max(nlev), N_LVF), dtype=np.float64)
    _level_rows(nest, arch, lv, lvf)
    mems = arch.memories
    mem = np.zeros((len(mems), N_M), dtype=np.int64)
    memf = np.zeros((len(mems), N_MF), dtype=np.float64)
    for mi, m in enumerate(mems):
        row = mem[mi]
        row[M_SIZE] = -1 if m.size_bits is None else m.size_bits
        row[M_NOPS] = len(m.operands)
        for j, op in enumerate(m.operands):
            row[M_OP + j] = OPERANDS.index(op)
            row[M_LI + j] = [x.name for x in arch.levels(op)].index(m.name)
        row[M_WORD], row[M_SHARED], row[M_NI] = m.word_bits, bool(m.shared_port), nest.instances(m.private_to)
        memf[mi] = (m.read_pj, m.write_pj, m.read_bw, m.write_bw)
    bits = operand_bits(layer, arch)
    ft = _type_table(types)
    par = np.zeros(N_P, dtype=np.int64)
    par[:P_NL] = (total, bits["W"], bits["I"], bits["O"], bits["O_final"], *window_steps(layer), int(bool(even)))
    par[P_NL:P_NL + 3] = nlev
    par[P_RY], par[P_RX] = window_caps(layer)
    return KernelTables(ft, lv, lvf, mem, memf, par, float(mac_energy(layer, arch)))


def work_sizes(L, nm, nl):
    """Element counts of the int work arrays in `carve`'s order, and of the float workspace."""
    return (((N_CUM + 2) * (L + 1), 9 * max(nm, 3), 9 * nm, 3 * nm * (L + 1), 3 * nm * (L + 1), 3 * nl, nm,
             72 * nl, 4 * nm + 2, 12 * nl, 3 * nl, L, 2, 9 * nl, 3 * nm * (L + 1), nm), 30 * nl + nm)


def carve(wi, wf, L, nm, nl, z):
    """The kernel's work arrays as views of an int workspace wi and a float workspace wf (z: the
    int sizes of `work_sizes`): C, SM, RG, CT, CC, TE, TB, TR, GO, LK, bnd, PREV, FL, TK, TA, BA
    (int); TF, RW, ST (float). Slicing and reshaping only: the kernel compiles this very function."""
    o = [0]
    for x in z:
        o.append(o[-1] + x)
    return (wi[o[0]:o[1]].reshape((N_CUM + 2, L + 1)), wi[o[1]:o[2]].reshape((9, max(nm, 3))),
            wi[o[2]:o[3]].reshape((nm, 3, 3)), wi[o[3]:o[4]].reshape((nm, 3, L + 1)),
            wi[o[4]:o[5]].reshape((nm, 3, L + 1)), wi[o[5]:o[6]].reshape((3, nl)), wi[o[6]:o[7]],
            wi[o[7]:o[8]].reshape((6, 12 * nl)), wi[o[8]:o[9]].reshape((2, 2 * nm + 1)),
            wi[o[9]:o[10]].reshape((3, nl, 4)), wi[o[10]:o[11]].reshape((3, nl)), wi[o[11]:o[12]],
            wi[o[12]:o[13]], wi[o[13]:o[14]].reshape((3, nl, 3)), wi[o[14]:o[15]].reshape((3, nm, L + 1)),
            wi[o[15]:o[16]], wf[0:24 * nl].reshape((2, 12 * nl)),
            wf[24 * nl:30 * nl].reshape((3, nl, 2)), wf[30 * nl:30 * nl + nm])


def views(wi, wf, L: int, nm: int, nl: int) -> tuple:
    """`carve` of a workspace in Python (NumPy views; RW = [-2], bnd = [10], ST = [-1])."""
    return carve(wi, wf, L, nm, nl, work_sizes(L, nm, nl)[0])


def workspace(L: int, nm: int, nl: int) -> tuple[np.ndarray, np.ndarray]:
    """A new (int64, float64) workspace of the kernel for orderings of L loops on nm memories with
    at most nl levels per operand. An evaluator keeps it across calls: its caches record how many
    leading loops the next ordering shares with the one they were computed for."""
    ni, nf = work_sizes(L, nm, nl)
    wi, wf = np.zeros(sum(ni), dtype=np.int64), np.zeros(nf)
    C, SM, RG, _, _, _, _, _, _, LK, _, _, _, TK, _, _, _, _, _ = views(wi, wf, L, nm, nl)
    C[:, 0] = 1
    SM[S_DEP, :] = -1
    RG[:] = -1
    LK[:] = -1
    TK[:] = -1
    return wi, wf
