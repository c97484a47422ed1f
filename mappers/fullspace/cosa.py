"""CoSA: one-shot scheduling by a mixed-integer program over prime factors, solved with HiGHS.

Source: Q. Huang, M. Kang, G. Dinh, T. Norell, A. Kalaiah, J. Demmel, J. Wawrzynek, Y. S. Shao,
"CoSA: Scheduling by Constrained Optimization for Spatial Accelerators", ISCA 2021 (section III,
equations (1)-(12)); objective weights as in the authors' code (utilisation -0.1, compute 10,
traffic 1).

**Variables.** Every loop bound of the layer (B, K, C, OY, OX, FY, FX, G; K and C per group) is
split into prime factors (j, n). The binary X[(j, n), i, k] of the paper becomes one binary per
factor and *placement*:

* temporal at MIP level g: the memories are grouped, innermost first, into levels (consecutive
  memories with the same ``private_to`` and disjoint operands form one level, e.g. simba_like:
  weight_reg | acc, weight, input buffers | global buffer | DRAM); a temporal loop at level g lies
  inside the tiles of every memory of level >= g;
* temporal at the global buffer (the outermost bounded level) at permutation rank z (z = 0
  innermost, Z = number of loop dims with factors) - only this level gets ranks;
* spatial on array dim a (D1..D4): the spatial factors of the paper's levels mapped directly to the
  accelerator's array dims; a spatial loop on a is inside the tile of memory m iff a is not in
  ``m.private_to``.

Eq. (3): each factor takes exactly one placement. Eq. (4): per array dim a,
sum log(p) x[f, a] <= log(size_a). Eq. (2): per bounded memory m and operand v it holds,
log(tile elements) + log(bits_v) <= log(size_bits / |operands of m|) (the capacity is split evenly
between the operands of a shared memory: the log form cannot express a sum of tiles; this is an
inner approximation, so every solution fits). Precisions are `costmodel.loopnest.reference.operand_bits`
(O at partial-sum precision, an upper bound).

**Input halo.** The input tile extent IY = SY (OY_t - 1) + DY (FY_t - 1) + 1 is not a product.
The capacity rows bound it soundly: IY <= SY*OY_t when FY_t = 1, and IY <= 2 max(SY*OY_t, DY*FY_t)
otherwise, i.e. log IY <= u + log(2) h with continuous u >= log SY + log OY_t, u >= log DY +
log FY_t and h in [0, 1], h >= x[f, p] for every FY factor f inside the tile (h = 1 exactly when a
halo exists). u and h appear only on the <= side of capacity rows, so they can always be taken at
their lower bounds (max and OR of binaries): the rows are exact for the bound, which
over-estimates IY by at most 2x when a halo is present and not at all otherwise. The objective
terms use CoSA's matrix A (OY, OX, FY, FX relevant to I: the product form), which is linear.

**Objective (12)**, minimised: ``-w_util * Util + w_compute * Comp + w_traffic * Traf`` with
Util (5) = sum over bounded memories and their operands of log(tile) (+ log precision, a constant);
Comp (6) = sum of log(p) over temporal placements; Traf (11) = sum_v D_v + L_v + T_v where D_v (7)
is the log of v's tile below the global buffer (temporal levels below it and spatial dims inside a
PE), L_v (8) the v-relevant spatial factors on the chip-level array dims (multicast / unicast),
and T_v (10) the log of transfers: sum_z Y[v, z] l_z + (all loops above the global buffer), with
l_z = sum_f log(p_f) x[f, z] the log-extent of rank z and Y (9): Y[v, z] >= x[f, z] for f relevant
to v, Y[v, z] >= Y[v, z-1] (Y binary).

**Linearisation.** The quadratic term of (10), sum_z Y[v, z] l_z with Y binary and l_z = sum_f
log(p_f) x[f, z] the log-extent of rank z, is rewritten as
    T_v = sum_z l_z - sum_z s[v, z],   s[v, z] = (1 - Y[v, z]) l^irr_{v, z},
where l^irr_{v, z} sums only the v-irrelevant factors of rank z: whenever a v-relevant factor sits at
z, (9) forces Y[v, z] = 1, so (1 - Y) l_z = (1 - Y) l^irr. s is the stationary run below the first
v-relevant rank. The product of the binary (1 - Y) and the bounded continuous l^irr in [0, M_v]
(M_v = log of the product of all v-irrelevant factors, the tightest valid bound) is linearised by
its McCormick envelope
    s <= l^irr,   s <= M_v (1 - Y),   s >= l^irr - M_v Y,   s >= 0,
which is exact for a binary Y (Y = 1: s = 0; Y = 0: s = l^irr): one continuous column and 4 rows per
(v, z) with irrelevant factors, instead of one McCormick product (3 rows) per (v, factor, rank) for
Y * X. (The first two rows alone would do when w_traffic > 0, since the objective maximises s; the
other two keep s = product for any weights.) Compared with the direct form t = Y l_z with
M = log of all factors, the smaller M_v gives a tighter LP relaxation: HiGHS solves ResNet-50 layers
3-20x faster with the same optima.

**Padding.** A dimension whose bound has a prime factor p > ``pad_primes_over`` is padded to
bound / p * (p + 1) (p + 1 is even, so it splits). The MIP and the mapping are built on the padded
layer; the decoded mapping is then fitted to the real layer (outermost temporal factor of the dim
rounded down so the factors cover ceil(bound / spatial)); if that is impossible, the padded layer
is evaluated (``extra["padded_eval"]``) - padding costs up to (p + 1) / p more MACs, cycles and
traffic on that dimension. Default: no padding.

Outcomes: optimal, time_limit (the incumbent if any, else value inf), infeasible (value inf),
error (value inf); the solver never raises out of `CosaMapper.run`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any, Mapping as _Mapping, Sequence

import numpy as np

from costmodel.loopnest.reference import evaluate, operand_bits
from costmodel.loopnest.mapping import (OPERANDS, RELEVANT, SPATIAL_DIMS, Mapping, MappingError, SpatialMapping,
                               TemporalMapping, prime_factors)
from mappers.base import ExtraColumn, LayerProblem, Mapper, Param, SearchResult, WorkUnit, objective_value

__all__ = ["CosaMapper", "COSA", "CosaModel", "build_model", "solve_model", "decode", "DECODE_ORDER"]

#: Order (innermost first) of the merged loops of one dim at a level without permutation ranks.
DECODE_ORDER = ("FX", "FY", "OX", "OY", "C", "K", "B", "G")

_EPS = 1e-6


@dataclass(frozen=True)
class Placement:
    """Where one prime factor goes: ("t", level, rank) temporal (rank -1 outside the global
    buffer) or ("s", array_dim, -1) spatial."""

    kind: str
    where: Any
    rank: int = -1


@dataclass
class CosaModel:
    """The MIP of one layer on one accelerator, as arrays for HiGHS plus the index maps to decode.

    Attributes:
        layer: the (possibly padded) layer the model is built on; ``real_layer`` the given one.
        factors: list of (dim, prime), the rows of X.
        placements: per factor the list of allowed `Placement` s; ``xcol[f][p]`` its column.
        groups: memory levels of the MIP (lists of memory indices into ``arch.memories``).
        gb: index of the permutation level (global buffer) or None; ``Z`` ranks.
        c, lb, ub, integer: column costs, bounds, integrality (n,); rows as COO (rows, cols, vals)
            with ``rlo``, ``rhi`` (m,); ``offset`` the constant of the objective.
        tcols, ycols: (v, z) -> column of s = (1 - Y) l^irr (the linearised product) / of Y.
    """

    layer: Any
    real_layer: Any
    arch: Any
    weights: tuple[float, float, float]
    factors: list
    placements: list
    xcol: list
    groups: list
    gb: int | None
    Z: int
    inner_arr: tuple
    chip_arr: tuple
    c: list
    lb: list
    ub: list
    integer: list
    rows: list
    cols: list
    vals: list
    rlo: list
    rhi: list
    offset: float
    tcols: dict
    ycols: dict
    padded: dict

    @property
    def num_col(self) -> int:
        return len(self.c)

    @property
    def num_row(self) -> int:
        return len(self.rlo)


def _groups(arch) -> list[list[int]]:
    out: list[list[int]] = []
    for i, m in enumerate(arch.memories):
        if out:
            last = [arch.memories[k] for k in out[-1]]
            same = all(set(x.private_to) == set(m.private_to) for x in last)
            disjoint = all(not set(x.operands) & set(m.operands) for x in last)
            if same and disjoint and not any(x.unbounded for x in last) and not m.unbounded:
                out[-1].append(i)
                continue
        out.append([i])
    return out


def _pad_layer(layer, pad_over: int | None):
    if pad_over is None:
        return layer, {}
    changes, padded = {}, {}
    for d in SPATIAL_DIMS:
        n = getattr(layer, d)
        for p in prime_factors(n):
            if p > pad_over:
                n = n // p * (p + 1)
        if n != getattr(layer, d):
            changes[d], padded[d] = n, getattr(layer, d)
    return (replace(layer, **changes) if changes else layer), padded


def build_model(layer, arch, w_util: float = -0.1, w_compute: float = 10.0, w_traffic: float = 1.0,
                pad_primes_over: int | None = None, symmetry: bool = False) -> CosaModel:
    """Build the MIP (eqs. 2-12) of ``layer`` on ``arch``.

    Args:
        layer: `costmodel.workload.Layer`; arch: `costmodel.loopnest.arch.Accelerator`.
        w_util: weight of Util (5) as it enters the minimised objective (the paper's -w_U).
        w_compute, w_traffic: weights of Comp (6) and Traf (11).
        pad_primes_over: pad prime factors larger than this (None = never).
        symmetry: add symmetry-breaking rows (identical factors ordered, ranks packed); off by
            default: they slow HiGHS down 2-5x on ResNet-50 layers.

    Returns:
        `CosaModel` (natural logarithms throughout).
    """
    real = layer
    layer, padded = _pad_layer(layer, pad_primes_over)
    mems = arch.memories
    groups = _groups(arch)
    gidx = {mi: g for g, ms in enumerate(groups) for mi in ms}
    bounded_groups = [g for g, ms in enumerate(groups) if not any(mems[i].unbounded for i in ms)]
    gb = max(bounded_groups) if bounded_groups and max(bounded_groups) < len(groups) - 1 else None
    factors = [(d, p) for d in SPATIAL_DIMS for p in prime_factors(getattr(layer, d))]
    dims_used = sorted({d for d, _ in factors}, key=SPATIAL_DIMS.index)
    Z = max(1, len(dims_used)) if gb is not None else 0
    arr = list(arch.array)
    if gb is not None and gb > 0:
        pe_priv = set(mems[groups[gb - 1][0]].private_to)
        gb_priv = set(mems[groups[gb][0]].private_to)
    else:
        pe_priv, gb_priv = set(), set()
    inner_arr = tuple(a for a in arr if a not in pe_priv)
    chip_arr = tuple(a for a in arr if a in pe_priv and a not in gb_priv)

    c: list[float] = []
    lb: list[float] = []
    ub: list[float] = []
    integer: list[bool] = []

    def col(cost=0.0, lo=0.0, hi=1.0, is_int=True) -> int:
        c.append(cost); lb.append(lo); ub.append(hi); integer.append(is_int)
        return len(c) - 1

    placements, xcol = [], []
    for d, p in factors:
        pls = [Placement("t", g, -1) for g in range(len(groups)) if g != gb]
        if gb is not None:
            pls += [Placement("t", gb, z) for z in range(Z)]
        pls += [Placement("s", a) for a in arr if arch.array[a] >= p]
        placements.append(pls)
        xcol.append([col() for _ in pls])

    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    rlo: list[float] = []
    rhi: list[float] = []

    def row(terms, lo, hi):
        r = len(rlo)
        for j, v in terms:
            if v != 0.0:
                rows.append(r); cols.append(j); vals.append(float(v))
        rlo.append(lo); rhi.append(hi)

    inf = math.inf
    logp = [math.log(p) for _, p in factors]

    def inside_mem(mi: int, pl: Placement) -> bool:
        if pl.kind == "t":
            return pl.where <= gidx[mi]
        return pl.where not in mems[mi].private_to

    # (3) each factor placed once
    for f in range(len(factors)):
        row([(j, 1.0) for j in xcol[f]], 1.0, 1.0)
    # symmetry breaking (no optimum is lost): identical factors (same dim and prime) take
    # placements in non-decreasing index order; permutation ranks are used from the innermost
    # without gaps (rank z+1 used => rank z used; e[z] continuous, forced to 0 by an empty rank)
    for f in range(len(factors) - 1):
        if symmetry and factors[f] == factors[f + 1]:
            row([(j, float(k)) for k, j in enumerate(xcol[f])]
                + [(j, -float(k)) for k, j in enumerate(xcol[f + 1])], -inf, 0.0)
    if gb is not None and symmetry:
        used = []
        for z in range(Z):
            at_z = [xcol[f][k] for f in range(len(factors)) for k, pl in enumerate(placements[f])
                    if pl.kind == "t" and pl.where == gb and pl.rank == z]
            e = col(0.0, 0.0, 1.0, False)
            used.append(e)
            for j in at_z:
                row([(e, 1.0), (j, -1.0)], 0.0, inf)
            row([(e, 1.0)] + [(j, -1.0) for j in at_z], -inf, 0.0)
            if z > 0:
                row([(used[z - 1], 1.0), (e, -1.0)], 0.0, inf)
    # (4) fan-out per array dim
    for a in arr:
        terms = [(xcol[f][k], logp[f]) for f in range(len(factors))
                 for k, pl in enumerate(placements[f]) if pl.kind == "s" and pl.where == a]
        if terms:
            row(terms, -inf, math.log(arch.array[a]) + _EPS)
    # (2) capacity
    bits = operand_bits(layer, arch)
    halo = {"Y": ("OY", "FY", layer.SY, layer.DY), "X": ("OX", "FX", layer.SX, layer.DX)}
    for mi, m in enumerate(mems):
        if m.unbounded:
            continue
        share = math.log(m.size_bits / len(m.operands)) + _EPS
        for v in m.operands:
            rel = RELEVANT[v] - ({"OY", "OX", "FY", "FX"} if v == "I" else set())
            terms = [(xcol[f][k], logp[f]) for f, (d, _) in enumerate(factors) if d in rel
                     for k, pl in enumerate(placements[f]) if inside_mem(mi, pl)]
            if v == "I":
                for ax, (od, fd, s, dl) in halo.items():
                    ins = {dd: [(xcol[f][k], logp[f]) for f, (d, _) in enumerate(factors) if d == dd
                                for k, pl in enumerate(placements[f]) if inside_mem(mi, pl)] for dd in (od, fd)}
                    if not ins[od] and not ins[fd] and s == 1:
                        continue
                    u = col(0.0, 0.0, inf, False)
                    row([(u, 1.0)] + [(j, -w) for j, w in ins[od]], math.log(s), inf)
                    row([(u, 1.0)] + [(j, -w) for j, w in ins[fd]], math.log(dl), inf)
                    terms.append((u, 1.0))
                    if ins[fd]:
                        h = col(0.0, 0.0, 1.0, False)
                        for f, (d, _) in enumerate(factors):
                            if d == fd:
                                row([(h, 1.0)] + [(xcol[f][k], -1.0) for k, pl in enumerate(placements[f])
                                                  if inside_mem(mi, pl)], 0.0, inf)
                        terms.append((h, math.log(2.0)))
            row(terms, -inf, share - math.log(bits[v]))

    # objective
    def add_cost(j, w):
        c[j] += w

    offset = 0.0
    # (5) utilisation: product form (matrix A), all bounded memories and their operands
    for mi, m in enumerate(mems):
        if m.unbounded:
            continue
        for v in m.operands:
            offset += w_util * math.log(bits[v])
            for f, (d, _) in enumerate(factors):
                if d in RELEVANT[v]:
                    for k, pl in enumerate(placements[f]):
                        if inside_mem(mi, pl):
                            add_cost(xcol[f][k], w_util * logp[f])
    # (6) compute
    for f in range(len(factors)):
        for k, pl in enumerate(placements[f]):
            if pl.kind == "t":
                add_cost(xcol[f][k], w_compute * logp[f])
    # (7)-(11) traffic
    M = sum(logp)
    tcols, ycols = {}, {}
    for v in OPERANDS:
        for f, (d, _) in enumerate(factors):
            relf = d in RELEVANT[v]
            for k, pl in enumerate(placements[f]):
                w = 0.0
                if relf and pl.kind == "t" and gb is not None and pl.where < gb:
                    w += 1.0                      # D_v temporal
                if relf and pl.kind == "s" and pl.where in inner_arr:
                    w += 1.0                      # D_v spatial inside a PE
                if relf and pl.kind == "s" and pl.where in chip_arr:
                    w += 1.0                      # L_v
                if pl.kind == "t" and (gb is None or pl.where > gb):
                    w += 1.0                      # T_v: loops above the global buffer
                if w:
                    add_cost(xcol[f][k], w_traffic * w * logp[f])
        # T_v = sum_z Y[v,z] l_z written as (all rank loops) - sum_z s[v,z], where s[v,z] =
        # (1 - Y[v,z]) l^irr_{v,z} is the extent of the v-irrelevant loops of rank z below the
        # first v-relevant rank (the stationary run); exact (see the module docstring)
        Mv = sum(logp[f] for f, (d, _) in enumerate(factors) if d not in RELEVANT[v])
        for z in range(Z):
            y = col(0.0, 0.0, 1.0, True)
            ycols[v, z] = y
            at_z = [(f, xcol[f][k]) for f in range(len(factors)) for k, pl in enumerate(placements[f])
                    if pl.kind == "t" and pl.where == gb and pl.rank == z]
            for f, j in at_z:
                add_cost(j, w_traffic * logp[f])
            for f, j in at_z:                      # (9)
                if factors[f][0] in RELEVANT[v]:
                    row([(y, 1.0), (j, -1.0)], 0.0, inf)
            if z > 0:
                row([(y, 1.0), (ycols[v, z - 1], -1.0)], 0.0, inf)
            lirr = [(j, logp[f]) for f, j in at_z if factors[f][0] not in RELEVANT[v]]
            if not lirr:
                continue
            s_ = col(-w_traffic, 0.0, Mv, False)
            tcols[v, z] = s_
            # s = (1 - Y) * l^irr exactly: McCormick of a binary and a continuous in [0, Mv]
            row([(s_, 1.0)] + [(j, -w) for j, w in lirr], -inf, 0.0)        # s <= l
            row([(s_, 1.0), (y, Mv)], -inf, Mv)                              # s <= Mv (1 - Y)
            row([(s_, 1.0), (y, Mv)] + [(j, -w) for j, w in lirr], 0.0, inf)   # s >= l - Mv Y
    return CosaModel(layer=layer, real_layer=real, arch=arch, weights=(w_util, w_compute, w_traffic),
                     factors=factors, placements=placements, xcol=xcol, groups=groups, gb=gb, Z=Z,
                     inner_arr=inner_arr, chip_arr=chip_arr, c=c, lb=lb, ub=ub, integer=integer, rows=rows,
                     cols=cols, vals=vals, rlo=rlo, rhi=rhi, offset=offset, tcols=tcols, ycols=ycols,
                     padded=padded)


def solve_model(model: CosaModel, time_limit_s: float = 60.0, mip_gap: float = 1e-4):
    """Solve with HiGHS (threads=1, no output).

    Returns:
        (status, choice or None, mip_objective, mip_gap, solver_s, col_values or None); status one
        of "optimal", "time_limit", "infeasible", "error". Never raises for solver outcomes.
    """
    import highspy
    from scipy.sparse import coo_matrix
    t0 = time.perf_counter()
    try:
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        h.setOptionValue("time_limit", float(time_limit_s))
        h.setOptionValue("mip_rel_gap", float(mip_gap))
        h.setOptionValue("random_seed", 0)
        lp = highspy.HighsLp()
        n, m = model.num_col, model.num_row
        lp.num_col_, lp.num_row_ = n, m
        lp.col_cost_ = np.asarray(model.c, dtype=float)
        lp.col_lower_ = np.asarray(model.lb, dtype=float)
        lp.col_upper_ = np.asarray(model.ub, dtype=float)
        lp.row_lower_ = np.asarray(model.rlo, dtype=float)
        lp.row_upper_ = np.asarray(model.rhi, dtype=float)
        lp.offset_ = float(model.offset)
        A = coo_matrix((model.vals, (model.rows, model.cols)), shape=(m, n)).tocsc()
        A.sum_duplicates()
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = A.indptr.astype(np.int32)
        lp.a_matrix_.index_ = A.indices.astype(np.int32)
        lp.a_matrix_.value_ = A.data.astype(float)
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, m
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                           for i in model.integer]
        h.passModel(lp)
        h.run()
        st = h.getModelStatus()
        info = h.getInfo()
        S = highspy.HighsModelStatus
        has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
        if st == S.kOptimal:
            status = "optimal"
        elif st == S.kTimeLimit:
            status = "time_limit"
        elif st in (S.kInfeasible, S.kUnboundedOrInfeasible):
            status = "infeasible"
        else:
            status = "error"
        secs = time.perf_counter() - t0
        if not has_sol or status in ("infeasible", "error"):
            return status, None, math.inf, math.inf, secs, None
        x = np.asarray(h.getSolution().col_value)
        choice = [int(np.argmax([x[j] for j in cols])) for cols in model.xcol]
        return status, choice, float(info.objective_function_value), float(info.mip_gap), secs, x
    except Exception:  # noqa: BLE001 - solver failures become rows
        return "error", None, math.inf, math.inf, time.perf_counter() - t0, None


def decode(model: CosaModel, choice: Sequence[int]) -> Mapping:
    """The `Mapping` of an assignment: spatial per array dim (factors of one dim merged), temporal
    loops innermost first by level (global buffer in rank order, other levels in `DECODE_ORDER`),
    boundaries per operand = number of loops at levels <= the level of each of its memories."""
    arch = model.arch
    pls = [model.placements[f][k] for f, k in enumerate(choice)]
    sp: dict[str, dict[str, int]] = {a: {} for a in arch.array}
    slots: dict[tuple[int, int], dict[str, int]] = {}
    for (d, p), pl in zip(model.factors, pls):
        if pl.kind == "s":
            sp[pl.where][d] = sp[pl.where].get(d, 1) * p
        else:
            s = slots.setdefault((pl.where, pl.rank), {})
            s[d] = s.get(d, 1) * p
    spatial = SpatialMapping({a: tuple((d, f) for d, f in sorted(v.items(), key=lambda x: SPATIAL_DIMS.index(x[0])))
                              for a, v in sp.items() if v})
    loops: list[tuple[str, int]] = []
    count_at_level: dict[int, int] = {}
    for g in range(len(model.groups)):
        ranks = sorted(r for (gg, r) in slots if gg == g)
        for r in ranks:
            s = slots[g, r]
            for d in DECODE_ORDER:
                if s.get(d, 1) > 1:
                    loops.append((d, s[d]))
        count_at_level[g] = len(loops)
    gidx = {mi: g for g, ms in enumerate(model.groups) for mi in ms}
    bnd = {}
    for op in OPERANDS:
        bnd[op] = tuple(count_at_level[gidx[arch.memories.index(m)]] for m in arch.levels(op))
        bnd[op] = bnd[op][:-1] + (len(loops),)
    return Mapping(spatial, TemporalMapping(tuple(loops)), bnd)


def _fit_padded(mapping: Mapping, model: CosaModel) -> Mapping | None:
    """Fit a mapping of the padded layer to the real one (None if the factors cannot cover it)."""
    real = model.real_layer
    sp = mapping.spatial.fit(real)
    need = sp.temporal_bounds(real)
    loops = list(mapping.temporal.loops)
    for d in model.padded:
        idx = [i for i, (dd, _) in enumerate(loops) if dd == d]
        inner = math.prod(loops[i][1] for i in idx[:-1])
        if not idx:
            continue
        if need[d] % inner:
            return None
        loops[idx[-1]] = (d, need[d] // inner)
    m = Mapping(sp, TemporalMapping(tuple(loops)), mapping.boundaries)
    try:
        m.check(real, model.arch)
    except MappingError:
        return None
    return m


class CosaMapper(Mapper):
    """CoSA's one-shot MIP scheduler (HiGHS). One work unit per problem (kind "mip").

    `run` builds the MIP (`build_model`), solves it (`solve_model`), decodes (`decode`), checks
    (`Mapping.check`) and evaluates (`costmodel.loopnest.reference.evaluate`) the mapping.
    """

    name = "cosa"
    version = "1"
    kind = "loopnest"
    columns = (ExtraColumn("solver_status", "str", "HiGHS model status of the solve", key="status"),
               ExtraColumn("solver_s", "float", "HiGHS wall time, s (measured, not deterministic)"),
               ExtraColumn("mip_gap", "float", "relative MIP gap at the end of the solve"),
               ExtraColumn("mip_objective", "float", "the MIP's objective value (CoSA Eq. 13)"))
    params = (
        Param("w_util", "float", -0.1, "weight of buffer utilisation (5) in the minimised objective (12)"),
        Param("w_compute", "float", 10.0, "weight of compute (6) in (12)"),
        Param("w_traffic", "float", 1.0, "weight of traffic (11) in (12)", low=0.0),
        Param("time_limit_s", "float", 60.0, "HiGHS time limit per solve, seconds", low=0.0),
        Param("mip_gap", "float", 1e-4, "HiGHS relative MIP gap", low=0.0, high=1.0),
        Param("pad_primes_over", "int", None, "pad loop bounds' prime factors above this (p -> p+1); "
              "absent = no padding", low=2),
    )

    def units(self, problem: LayerProblem, params: _Mapping[str, Any]) -> list[WorkUnit]:
        """One MIP solve."""
        return [WorkUnit(kind="mip")]

    def run(self, problem: LayerProblem, unit: WorkUnit, params: _Mapping[str, Any]) -> SearchResult:
        """Solve and evaluate (``params`` resolved). ``problem.spatial`` and ``problem.even`` are
        ignored (CoSA chooses the unrolling; its mapping is even per MIP level). Never raises for
        solver outcomes."""
        p = params
        t0 = time.perf_counter()
        inf = math.inf
        extra: dict[str, Any] = {}
        try:
            model = build_model(problem.layer, problem.arch, p["w_util"], p["w_compute"], p["w_traffic"],
                                p["pad_primes_over"])
            status, choice, obj, gap, secs, _ = solve_model(model, p["time_limit_s"], p["mip_gap"])
            extra.update(status=status, solver_s=secs, mip_gap=gap, mip_objective=obj,
                         n_cols=model.num_col, n_rows=model.num_row)
        except Exception as e:  # noqa: BLE001
            status, choice = "error", None
            extra.update(status="error", solver_s=0.0, mip_gap=inf, mip_objective=inf, error=repr(e))
        if choice is None:
            return SearchResult(self.name, "mip", problem.objective, inf, inf, inf, None, None, 0,
                                time.perf_counter() - t0, extra=extra)
        mapping = decode(model, choice)
        layer = model.real_layer
        if model.padded:
            fitted = _fit_padded(mapping, model)
            if fitted is None:
                layer = model.layer
                extra["padded_eval"] = True
            else:
                mapping = fitted
        extra["padded"] = dict(model.padded)
        extra["mapping"] = mapping.to_dict()
        rep = evaluate(layer, problem.arch, mapping)
        if not rep.valid:
            extra["reason"] = rep.reason
            return SearchResult(self.name, "mip", problem.objective, inf, inf, inf, None,
                                tuple(mapping.temporal.loops), 1, time.perf_counter() - t0, extra=extra)
        return SearchResult(self.name, "mip", problem.objective, objective_value(rep, problem.objective),
                            float(rep.energy_pj), float(rep.latency_cycles), None, tuple(mapping.temporal.loops),
                            1, time.perf_counter() - t0, extra=extra)


COSA = CosaMapper()
