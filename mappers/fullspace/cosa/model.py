"""CoSA's prime-factor allocation MIP as arrays for HiGHS (`build_model`); `mappers.fullspace.cosa`
solves, decodes and runs it as a mapper.

Source: Q. Huang et al., "CoSA: Scheduling by Constrained Optimization for Spatial Accelerators",
ISCA 2021, section III, equations (1)-(12). Logarithms are natural throughout: a "log-extent" is the
natural log of a loop bound or of a tile's element count.

**Variables.** Every loop bound of the layer (B, K, C, OY, OX, FY, FX, G; K and C per group) is
split into prime factors (j, n). The binary X[(j, n), i, k] of the paper becomes one binary per
factor and *placement*:

* temporal at MIP level g: one level per memory, innermost first; a run of consecutive memories
  with the same ``private_to`` and disjoint operands (simba_like's PE buffers) is ordered by size,
  smallest innermost (simba_like: weight_reg | acc | input | weight buffer | global buffer | DRAM;
  ``split_levels=False``: the run is one merged level, as before version 2); a temporal loop at
  level g lies inside the tiles of every memory of level >= g;
* temporal at a *ranked* level at permutation rank z (z = 0 innermost): the global buffer (the
  outermost bounded level, Z ranks, Z = number of loop dims with factors) and, with
  ``dram_ranks`` = R > 0, the DRAM (every level above the global buffer, min(Z, R) ranks; the
  paper's code ranks only the global buffer). The ranks form one *stationarity chain*, innermost
  first: the global buffer's ranks, then the DRAM's; chain position q = (level, rank). With R < Z
  several dims may share a DRAM rank (decoded as one position, dims in `DECODE_ORDER`): R = 3 is
  the default because R = Z gave the same latencies on all 24 unique ResNet-50 layers with 5x the
  worst solve time (23.7 s against 4.75 s);
* spatial on array dim a (D1..D4): the spatial factors of the paper's levels mapped directly to the
  accelerator's array dims; a spatial loop on a is inside the tile of memory m iff a is not in
  ``m.private_to``.

Eq. (3): each factor takes exactly one placement. Eq. (4): per array dim a,
sum log(p) x[f, a] <= log(size_a). Eq. (2): per bounded memory m and operand v it holds,
log(tile elements) + log(bits_v) <= log(size_bits / |operands of m|) (the capacity is split evenly
between the operands of a shared memory: the log form cannot express a sum of tiles; this is an
inner approximation, so every solution fits). Precisions are `costmodel.loopnest.reference.operand_bits`
(O at partial-sum precision, an upper bound).

**Port width** (not in the paper; ``port_width``). Per operand v with innermost memory m (simba_like:
I input_buffer, O acc_buffer, W weight_reg): the v-relevant spatial factors on the array dims inside
one instance of m (those not in ``m.private_to``: D3, D4) are the distinct elements m delivers per
cycle, so sum log(p) x[f, a] <= max(0, log(bw_m / bits_v)) with bw_m the read bandwidth (for O the
smaller of read and write), bits per cycle (simba_like: 64 / 8 = 8 inputs, 192 / 24 = 8 partial sums
per cycle; weight_reg is per MAC, so W gets no row). For I the product form bounds the halo extent
from above, so the row is sound.

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
and T_v (10) the log of transfers: sum_q Y[v, q] l_q over the chain positions q (global buffer ranks
then DRAM ranks), with l_q = sum_f log(p_f) x[f, q] the log-extent of position q and Y (9):
Y[v, q] >= x[f, q] for f relevant to v, Y[v, q] >= Y[v, q-1] (Y binary): every loop outside v's
innermost relevant chain loop multiplies v's transfers, so a DRAM loop counts for v only from v's
innermost relevant chain loop outward (W bypasses the global buffer in simba_like, so W's reuse depends on
the DRAM order). Without DRAM ranks (``dram_ranks=0``, the paper's code) the chain is the global
buffer's ranks and T_v also adds every loop above the global buffer, for every operand.

**Tie-break** (not in the paper; ``reuse_eps``, default 0.002): cost -reuse_eps * log(p) on every
temporal placement at level 0 of a factor irrelevant to level 0's operands (simba_like: OY, OX, B
in weight_reg): among schedules of (nearly) equal objective it prefers the longest refill period of
the innermost memory, which the objective ignores (a single-buffered register stalls while it is
refilled). It can only reorder schedules whose objectives differ by less than its total, at most
reuse_eps * log(OY OX B) (0.019 on ResNet-50's conv1, 112 x 112 outputs; the HiGHS gap of 1e-4 on
objectives near 150 allows 0.015 anyway); the smallest single term of the paper's objective is
0.1 log 2 = 0.069.

**Version 3 options** (not in the paper; off by default here, chosen per solve by
`mappers.fullspace.cosa`): ``stall_w`` adds the refill stall of a single-buffered innermost memory
(`mappers.fullspace.cosa.stall`: one column, 29 tangent rows per side, after the tie-break costs);
``halve`` makes the capacity rows (2) of the named memories count half their size.

**Linearisation.** The quadratic term of (10), sum_z Y[v, z] l_z with Y binary and l_z = sum_f
log(p_f) x[f, z] the log-extent of chain position z (written z here, q above), is rewritten as
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

**Order of columns and rows** (part of the model: HiGHS' search depends on it). `build_model`
appends, in this order: the X columns (factor by factor in `SPATIAL_DIMS` order, placements as in
`_ModelBuilder.add_placements`); the (3) rows; the symmetry-breaking columns and rows (only with
``symmetry=True``); the (4) rows; per bounded memory and operand, the halo columns u, h with their
rows (operand I) then the (2) row; the objective costs of X for (5) and (6); then per operand v in
`OPERANDS` the costs of (7), (8) and the loops above the global buffer (only without DRAM ranks),
and per chain position q the column Y[v, q], its (9) rows, and (if v-irrelevant factors can sit
at q) s[v, q] and its McCormick rows. After the (4) rows: the hint's columns and rows (if any), then
the port-width rows; the tie-break costs after (6).

**Spatial hint** (``hint``, a `SpatialHint` or None = no change): allowed placements, mixed unrolling
and the utilisation floor, `mappers.fullspace.cosa.hint`.

**Padding.** The model is built on the padded layer (``pad_primes_over``; see the Padding section
of `mappers.fullspace.cosa`, which fits the decoded mapping back to the real layer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from costmodel.loopnest.mapping import OPERANDS, RELEVANT, SPATIAL_DIMS, prime_factors
from costmodel.loopnest.reference import operand_bits
from mappers.fullspace.cosa.hint import add_mixed_rows, add_utilisation_row, spatial_allowed
from mappers.fullspace.cosa.stall import add_refill_stall

__all__ = ["Placement", "CosaModel", "build_model"]

_EPS = 1e-6
_INF = math.inf


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
        gb: index of the global buffer's level (the innermost level with permutation ranks) or
            None; ``Z`` ranks per ranked level; ``chain`` the (level, rank) positions of the
            stationarity chain, innermost first (the global buffer's ranks, then the DRAM's).
        c, lb, ub, integer: column costs, bounds, integrality (n,); rows as COO (rows, cols, vals)
            with ``rlo``, ``rhi`` (m,); ``offset`` the constant of the objective.
        tcols, ycols: (v, q) -> column of s = (1 - Y) l^irr (the linearised product) / of Y at
            chain position q.
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
    chain: list
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
    options: dict = field(default_factory=dict)

    @property
    def num_col(self) -> int:
        return len(self.c)

    @property
    def num_row(self) -> int:
        return len(self.rlo)


def _groups(arch, split: bool = True) -> list[list[int]]:
    """The MIP levels: memory indices innermost first. Consecutive bounded memories with the same
    ``private_to`` and disjoint operands (simba_like's PE buffers) form one run; ``split`` gives each
    memory of a run its own level, smallest ``size_bits`` innermost (simba_like: accumulation <
    input < weight buffer), else the run is one merged level."""
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
    if split:
        out = [[i] for g in out for i in sorted(g, key=lambda k: (arch.memories[k].size_bits, k))]
    return out


def _pad_layer(layer, pad_over: int | None):
    """(layer with every prime factor p > ``pad_over`` of a bound padded to p + 1, {dim: real bound}
    of the padded dims); ``pad_over`` None: (layer, {})."""
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


def _permutation_level(groups, mems) -> int | None:
    """Index of the global buffer (the outermost bounded level, the only one with permutation
    ranks), or None when every level is bounded or none is."""
    bounded = [g for g, ms in enumerate(groups) if not any(mems[i].unbounded for i in ms)]
    return max(bounded) if bounded and max(bounded) < len(groups) - 1 else None


def _array_split(arch, groups, gb) -> tuple[tuple, tuple]:
    """(array dims inside a PE, chip-level array dims): the dims not private to the level below the
    global buffer, and those private to it but not to the global buffer (both empty without gb)."""
    mems, arr = arch.memories, list(arch.array)
    if gb is not None and gb > 0:
        pe_priv = set(mems[groups[gb - 1][0]].private_to)
        gb_priv = set(mems[groups[gb][0]].private_to)
    else:
        pe_priv, gb_priv = set(), set()
    inner_arr = tuple(a for a in arr if a not in pe_priv)
    chip_arr = tuple(a for a in arr if a in pe_priv and a not in gb_priv)
    return inner_arr, chip_arr


class _ModelBuilder:
    """A CoSA MIP under construction: the layout (factors, levels, placements) and the columns,
    rows and objective appended so far; one method per equation group of the paper.

    Columns: ``c`` (objective cost), ``lb``, ``ub``, ``integer`` (n,); rows: COO triplets ``rows``,
    ``cols``, ``vals`` (nnz,) with bounds ``rlo``, ``rhi`` (m,); ``offset`` the objective constant.
    Coefficients of X are log-extents (natural log of prime factors).
    """

    def __init__(self, layer, arch, pad_primes_over: int | None, split_levels: bool = True,
                 dram_ranks: int = 3, hint=None):
        self.real, self.hint = layer, hint
        self.layer, self.padded = _pad_layer(layer, pad_primes_over)
        self.arch, self.mems = arch, arch.memories
        self.groups = _groups(arch, split_levels)
        self.gidx = {mi: g for g, ms in enumerate(self.groups) for mi in ms}
        self.gb = _permutation_level(self.groups, self.mems)
        self.factors = [(d, p) for d in SPATIAL_DIMS for p in prime_factors(getattr(self.layer, d))]
        self.logp = [math.log(p) for _, p in self.factors]
        dims_used = {d for d, _ in self.factors}
        self.Z = max(1, len(dims_used)) if self.gb is not None else 0
        gb = self.gb
        self.rank_levels = [] if gb is None else list(range(gb, len(self.groups) if dram_ranks > 0 else gb + 1))
        self.chain = [(g, z) for g in self.rank_levels for z in range(self.Z if g == gb else min(self.Z, dram_ranks))]
        self.arr = list(arch.array)
        self.inner_arr, self.chip_arr = _array_split(arch, self.groups, self.gb)
        self.c: list[float] = []
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integer: list[bool] = []
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.rlo: list[float] = []
        self.rhi: list[float] = []
        self.offset = 0.0
        self.placements: list[list[Placement]] = []
        self.xcol: list[list[int]] = []
        self.tcols: dict = {}
        self.ycols: dict = {}
        self.halve: frozenset = frozenset()

    # -- primitives ------------------------------------------------------------------------------

    def col(self, cost=0.0, lo=0.0, hi=1.0, is_int=True) -> int:
        """Append a column; return its index."""
        self.c.append(cost); self.lb.append(lo); self.ub.append(hi); self.integer.append(is_int)
        return len(self.c) - 1

    def row(self, terms, lo, hi) -> None:
        """Append the row lo <= sum coef * x[j] <= hi of ``terms`` [(j, coef)] (zeros dropped)."""
        r = len(self.rlo)
        for j, v in terms:
            if v != 0.0:
                self.rows.append(r); self.cols.append(j); self.vals.append(float(v))
        self.rlo.append(lo); self.rhi.append(hi)

    def add_cost(self, j: int, w: float) -> None:
        """Add ``w`` to the objective cost of column ``j``."""
        self.c[j] += w

    def inside(self, mi: int, pl: Placement) -> bool:
        """Whether a loop at ``pl`` lies inside the tile of memory ``mi`` (matrix B of the paper)."""
        if pl.kind == "t":
            return pl.where <= self.gidx[mi]
        return pl.where not in self.mems[mi].private_to

    def x_inside(self, mi: int, dims) -> list[tuple[int, float]]:
        """[(X column, log p)] of the placements inside memory ``mi`` of the factors of ``dims``
        (factor by factor, placements in order)."""
        return [(self.xcol[f][k], self.logp[f]) for f, (d, _) in enumerate(self.factors) if d in dims
                for k, pl in enumerate(self.placements[f]) if self.inside(mi, pl)]

    def at_rank(self, q: int) -> list[tuple[int, int]]:
        """[(factor, X column)] of the placements at position ``q`` of the stationarity chain
        (``chain[q]`` = (level, rank))."""
        g, z = self.chain[q]
        return [(f, self.xcol[f][k]) for f in range(len(self.factors))
                for k, pl in enumerate(self.placements[f]) if pl.kind == "t" and pl.where == g and pl.rank == z]

    # -- variables and constraints ---------------------------------------------------------------

    def add_placements(self) -> None:
        """The binaries X (the paper's X[(j, n), i, k]): per factor f, one column (cost 0, [0, 1],
        integer) per placement - temporal at every level without ranks, temporal at each position
        (level, rank) of the stationarity chain, spatial on each array dim at least p wide (and,
        with a hint, allowed to unroll the factor's dim). Fills
        ``placements[f]`` and ``xcol[f]`` (both of length |placements of f|)."""
        for d, p in self.factors:
            pls = [Placement("t", g, -1) for g in range(len(self.groups)) if g not in self.rank_levels]
            pls += [Placement("t", g, z) for g, z in self.chain]
            pls += [Placement("s", a) for a in self.arr
                    if self.arch.array[a] >= p and spatial_allowed(self.hint, a, d)]
            self.placements.append(pls)
            self.xcol.append([self.col() for _ in pls])

    def add_assignment_rows(self) -> None:
        """Eq. (3): each factor takes exactly one placement; one row per factor,
        sum_k x[f, k] = 1 (dimensionless)."""
        for f in range(len(self.factors)):
            self.row([(j, 1.0) for j in self.xcol[f]], 1.0, 1.0)

    def add_symmetry_rows(self) -> None:
        """Symmetry breaking (no optimum is lost; not in the paper): identical consecutive factors
        (same dim and prime) take placements in non-decreasing index order (one row per pair,
        sum_k k x[f, k] - sum_k k x[f+1, k] <= 0); per ranked level, ranks are used from the
        innermost without gaps: per rank z a continuous e[z] in [0, 1] with e[z] >= x at z (one row
        per X column at z), e[z] <= sum of x at z, and e[z-1] >= e[z] (rank z+1 used => z used)."""
        for f in range(len(self.factors) - 1):
            if self.factors[f] == self.factors[f + 1]:
                self.row([(j, float(k)) for k, j in enumerate(self.xcol[f])]
                         + [(j, -float(k)) for k, j in enumerate(self.xcol[f + 1])], -_INF, 0.0)
        used = []
        for q, (_, z) in enumerate(self.chain):
            at_z = [j for _, j in self.at_rank(q)]
            e = self.col(0.0, 0.0, 1.0, False)
            used.append(e)
            for j in at_z:
                self.row([(e, 1.0), (j, -1.0)], 0.0, _INF)
            self.row([(e, 1.0)] + [(j, -1.0) for j in at_z], -_INF, 0.0)
            if z > 0:
                self.row([(used[q - 1], 1.0), (e, -1.0)], 0.0, _INF)

    def add_fanout_rows(self) -> None:
        """Eq. (4): spatial resources; one row per array dim a with spatial placements,
        sum_f log(p_f) x[f, a] <= log(size_a) + eps (log of PE / MAC counts)."""
        for a in self.arr:
            terms = [(self.xcol[f][k], self.logp[f]) for f in range(len(self.factors))
                     for k, pl in enumerate(self.placements[f]) if pl.kind == "s" and pl.where == a]
            if terms:
                self.row(terms, -_INF, math.log(self.arch.array[a]) + _EPS)

    def add_port_rows(self, bits: dict[str, int]) -> None:
        """Port width (not in the paper; see the module docstring): per operand v, its innermost
        memory m delivers at most bw_m / bits_v distinct elements per cycle to the array dims inside
        one instance of m (those not in ``m.private_to``). One row per operand with v-relevant
        spatial placements there: sum_f log(p_f) x[f, a] <= max(0, log(bw_m / bits_v)) + eps
        (log-elements per cycle; product form for I's halo dims, an upper bound; bw_m = read_bw,
        for O min(read_bw, write_bw), bits per cycle)."""
        for v in OPERANDS:
            m = self.arch.levels(v)[0]
            bw = m.read_bw if v != "O" else min(m.read_bw, m.write_bw)
            terms = [(self.xcol[f][k], self.logp[f]) for f, (d, _) in enumerate(self.factors) if d in RELEVANT[v]
                     for k, pl in enumerate(self.placements[f]) if pl.kind == "s" and pl.where not in m.private_to]
            if terms:
                self.row(terms, -_INF, max(0.0, math.log(bw / bits[v])) + _EPS)

    def add_capacity_rows(self, bits: dict[str, int]) -> None:
        """Eq. (2): buffer capacity; one row per bounded memory m and operand v it holds,
        log(tile elements of v in m) <= log(size_bits(m) / |operands of m|) + eps - log(bits_v)
        (log-elements; ``bits`` the precision per operand, bits/element; the memories named in
        ``halve`` count half their size, to leave room for double buffering). The tile counts the
        v-relevant factors inside m (matrices A and B); for I the OY/OX/FY/FX part is the halo
        bound of `input_halo_terms`, whose columns and rows precede the row."""
        for mi, m in enumerate(self.mems):
            if m.unbounded:
                continue
            share = math.log(m.size_bits / len(m.operands) / (2 if m.name in self.halve else 1)) + _EPS
            for v in m.operands:
                rel = RELEVANT[v] - ({"OY", "OX", "FY", "FX"} if v == "I" else set())
                terms = self.x_inside(mi, rel)
                if v == "I":
                    terms += self.input_halo_terms(mi)
                self.row(terms, -_INF, share - math.log(bits[v]))

    def input_halo_terms(self, mi: int) -> list[tuple[int, float]]:
        """Eq. (2) for the input: the log-extent of I's tile along Y and X in memory ``mi``,
        log IY <= u + log(2) h (module docstring, Input halo). Per axis (skipped when no OY/FY
        factor can be inside and the stride is 1): a continuous u >= 0 with two rows
        u - log-extent(OY) >= log SY and u - log-extent(FY) >= log DY, and, if an FY factor can be
        inside, a continuous h in [0, 1] with one row h - x[f, p] >= 0 per FY factor f (over its
        placements p inside). Returns the terms [(u, 1), (h, log 2)] of the capacity row."""
        layer, terms = self.layer, []
        for od, fd, s, dl in (("OY", "FY", layer.SY, layer.DY), ("OX", "FX", layer.SX, layer.DX)):
            ins = {dd: self.x_inside(mi, (dd,)) for dd in (od, fd)}
            if not ins[od] and not ins[fd] and s == 1:
                continue
            u = self.col(0.0, 0.0, _INF, False)
            self.row([(u, 1.0)] + [(j, -w) for j, w in ins[od]], math.log(s), _INF)
            self.row([(u, 1.0)] + [(j, -w) for j, w in ins[fd]], math.log(dl), _INF)
            terms.append((u, 1.0))
            if ins[fd]:
                h = self.col(0.0, 0.0, 1.0, False)
                for f, (d, _) in enumerate(self.factors):
                    if d == fd:
                        self.row([(h, 1.0)] + [(self.xcol[f][k], -1.0) for k, pl in enumerate(self.placements[f])
                                               if self.inside(mi, pl)], 0.0, _INF)
                terms.append((h, math.log(2.0)))
        return terms

    # -- objective (12) --------------------------------------------------------------------------

    def add_utilisation(self, bits: dict[str, int], w_util: float) -> None:
        """Eq. (5), weighted by ``w_util`` (the minimised objective's -w_U): Util = sum over bounded
        memories m and their operands v of log(bits_v) + sum_f log(p_f) x[f, p] over v-relevant
        factors (matrix A, product form also for I) placed inside m. Adds to X costs (log-elements)
        and to ``offset`` (the log-precision constants, log bits); no columns or rows."""
        for mi, m in enumerate(self.mems):
            if m.unbounded:
                continue
            for v in m.operands:
                self.offset += w_util * math.log(bits[v])
                for j, lp in self.x_inside(mi, RELEVANT[v]):
                    self.add_cost(j, w_util * lp)

    def add_innermost_reuse(self, eps: float) -> None:
        """Tie-break (not in the paper): cost -eps * log(p_f) on every temporal placement at MIP level
        0 of a factor irrelevant to all operands of level 0's memories (log of the iterations the
        innermost memory keeps its tile: the refill period of a register). No columns or rows."""
        ops = {v for mi in self.groups[0] for v in self.mems[mi].operands}
        for f, (d, _) in enumerate(self.factors):
            if any(d in RELEVANT[v] for v in ops):
                continue
            for k, pl in enumerate(self.placements[f]):
                if pl.kind == "t" and pl.where == 0:
                    self.add_cost(self.xcol[f][k], -eps * self.logp[f])

    def add_compute(self, w_compute: float) -> None:
        """Eq. (6), weighted by ``w_compute``: Comp = sum_f log(p_f) over temporal placements (the log
        of the compute cycles per PE). Adds to X costs; no columns or rows."""
        for f in range(len(self.factors)):
            for k, pl in enumerate(self.placements[f]):
                if pl.kind == "t":
                    self.add_cost(self.xcol[f][k], w_compute * self.logp[f])

    def traffic_weight(self, v: str, d: str, pl: Placement) -> float:
        """How many of the linear traffic terms of operand ``v`` (each 0 or 1) a factor of dim ``d`` at
        ``pl`` enters: D_v (7) (v-relevant, temporal below the global buffer or spatial inside a
        PE), L_v (8) (v-relevant, spatial on a chip-level dim), T_v (10) (any loop at a level
        above the global buffer without ranks; every loop at all without a global buffer)."""
        relf, gb, w = d in RELEVANT[v], self.gb, 0.0
        if relf and pl.kind == "t" and gb is not None and pl.where < gb:
            w += 1.0                      # D_v temporal
        if relf and pl.kind == "s" and pl.where in self.inner_arr:
            w += 1.0                      # D_v spatial inside a PE
        if relf and pl.kind == "s" and pl.where in self.chip_arr:
            w += 1.0                      # L_v
        if pl.kind == "t" and (gb is None or pl.where > gb) and pl.rank < 0:
            w += 1.0                      # T_v: loops above the global buffer
        return w

    def add_linear_traffic(self, v: str, w_traffic: float) -> None:
        """Eqs. (7), (8) and the part of (10) above the global buffer for operand ``v``, weighted by
        ``w_traffic``: cost w_traffic * `traffic_weight` * log(p_f) on each X column (log-elements /
        log-transfers). No columns or rows."""
        for f, (d, _) in enumerate(self.factors):
            for k, pl in enumerate(self.placements[f]):
                w = self.traffic_weight(v, d, pl)
                if w:
                    self.add_cost(self.xcol[f][k], w_traffic * w * self.logp[f])

    def add_rank_traffic(self, v: str, w_traffic: float) -> None:
        """Eqs. (9)-(10) for operand ``v`` along the stationarity chain (the global buffer's ranks,
        then the DRAM's), linearised (module docstring): T_v = sum_q l_q - sum_q s[v, q]. Per chain
        position q: the binary Y[v, q] (cost 0); cost w_traffic * log(p_f) on every X column at q
        (the sum of l_q); (9) rows Y[v, q] - x[f, q] >= 0 for v-relevant f and Y[v, q] -
        Y[v, q-1] >= 0; if v-irrelevant factors can sit at q, the continuous s[v, q] in [0, M_v]
        (cost -w_traffic, log-transfers) with the McCormick rows s <= l^irr, s + M_v Y <= M_v,
        s + M_v Y - l^irr >= 0. Fills ``ycols`` and ``tcols`` (keys (v, q))."""
        rel = RELEVANT[v]
        Mv = sum(self.logp[f] for f, (d, _) in enumerate(self.factors) if d not in rel)
        for z in range(len(self.chain)):
            y = self.col(0.0, 0.0, 1.0, True)
            self.ycols[v, z] = y
            at_z = self.at_rank(z)
            for f, j in at_z:
                self.add_cost(j, w_traffic * self.logp[f])
            for f, j in at_z:                      # (9)
                if self.factors[f][0] in rel:
                    self.row([(y, 1.0), (j, -1.0)], 0.0, _INF)
            if z > 0:
                self.row([(y, 1.0), (self.ycols[v, z - 1], -1.0)], 0.0, _INF)
            lirr = [(j, self.logp[f]) for f, j in at_z if self.factors[f][0] not in rel]
            if not lirr:
                continue
            s_ = self.col(-w_traffic, 0.0, Mv, False)
            self.tcols[v, z] = s_
            # s = (1 - Y) * l^irr exactly: McCormick of a binary and a continuous in [0, Mv]
            self.row([(s_, 1.0)] + [(j, -w) for j, w in lirr], -_INF, 0.0)        # s <= l
            self.row([(s_, 1.0), (y, Mv)], -_INF, Mv)                              # s <= Mv (1 - Y)
            self.row([(s_, 1.0), (y, Mv)] + [(j, -w) for j, w in lirr], 0.0, _INF)   # s >= l - Mv Y

    def model(self, weights: tuple[float, float, float]) -> CosaModel:
        """The finished `CosaModel` (the builder's lists, not copies)."""
        return CosaModel(layer=self.layer, real_layer=self.real, arch=self.arch, weights=weights,
                         factors=self.factors, placements=self.placements, xcol=self.xcol, groups=self.groups,
                         gb=self.gb, Z=self.Z, chain=self.chain, inner_arr=self.inner_arr, chip_arr=self.chip_arr, c=self.c,
                         lb=self.lb, ub=self.ub, integer=self.integer, rows=self.rows, cols=self.cols,
                         vals=self.vals, rlo=self.rlo, rhi=self.rhi, offset=self.offset, tcols=self.tcols,
                         ycols=self.ycols, padded=self.padded)


def build_model(layer, arch, w_util: float = -0.1, w_compute: float = 10.0, w_traffic: float = 1.0,
                pad_primes_over: int | None = None, symmetry: bool = False, port_width: bool = True,
                dram_ranks: int = 3, split_levels: bool = True, reuse_eps: float = 0.002,
                stall_w: float = 0.0, halve: tuple = (), hint=None) -> CosaModel:
    """Build the MIP (eqs. 2-12) of ``layer`` on ``arch``.

    Args:
        layer: `costmodel.workload.Layer`; arch: `costmodel.loopnest.arch.Accelerator`.
        w_util: weight of Util (5) as it enters the minimised objective (the paper's -w_U).
        w_compute, w_traffic: weights of Comp (6) and Traf (11).
        pad_primes_over: pad prime factors larger than this (None = never).
        symmetry: add symmetry-breaking rows (identical factors ordered, ranks packed); off by
            default: they slow HiGHS down 2-5x on ResNet-50 layers.
        port_width: add the port-width rows (`_ModelBuilder.add_port_rows`).
        dram_ranks: number of permutation ranks (at most Z) of the DRAM (every level above the
            global buffer), chained after the global buffer's; 0: only the global buffer has ranks
            and every loop above it enters every operand's T_v (the paper's code).
        split_levels: one MIP level per PE buffer (`_groups`); False: one merged level.
        reuse_eps: weight of the innermost-reuse tie-break (`_ModelBuilder.add_innermost_reuse`);
            0 = off.
        stall_w: weight, relative to ``w_compute``, of the refill stall of a single-buffered
            innermost memory (`mappers.fullspace.cosa.stall`); 0 = off.
        halve: names of memories whose capacity row (2) counts half their size (room for a double
            buffer, which the latency model rewards); unknown names are ignored.
        hint: a `SpatialHint` the spatial placements obey (`mappers.fullspace.cosa.hint`); None:
            any loop dim on any array dim.

    Returns:
        `CosaModel` (natural logarithms throughout).
    """
    b = _ModelBuilder(layer, arch, pad_primes_over, split_levels, dram_ranks, hint)
    b.halve = frozenset(halve)
    b.add_placements()                          # X
    b.add_assignment_rows()                     # (3)
    if symmetry:
        b.add_symmetry_rows()
    b.add_fanout_rows()                         # (4)
    if hint is not None:                        # the accelerator's spatial hint (not in the paper)
        add_mixed_rows(b, hint)
        add_utilisation_row(b, hint)
    bits = operand_bits(b.layer, arch)
    if port_width:
        b.add_port_rows(bits)                   # port width (not in the paper)
    b.add_capacity_rows(bits)                   # (2), with the input halo bound
    b.add_utilisation(bits, w_util)             # (5)
    b.add_compute(w_compute)                    # (6)
    if reuse_eps:
        b.add_innermost_reuse(reuse_eps)           # tie-break (not in the paper)
    stall_sides = add_refill_stall(b, bits, stall_w * w_compute) if stall_w else []  # not in the paper
    for v in OPERANDS:                          # (7)-(11)
        b.add_linear_traffic(v, w_traffic)
        b.add_rank_traffic(v, w_traffic)
    m = b.model((w_util, w_compute, w_traffic))
    m.options.update(port_width=port_width, dram_ranks=dram_ranks, split_levels=split_levels, symmetry=symmetry,
                     reuse_eps=reuse_eps, stall_w=stall_w, halve=tuple(halve),
                     stall_sides=stall_sides, hint=hint)
    return m
