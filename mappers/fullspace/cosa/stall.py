"""Refill stall of a single-buffered innermost memory as a convex term of the CoSA MIP (not in the
paper; ``stall_w`` of `mappers.fullspace.cosa`).

CoSA's objective (12) counts compute cycles (6) but no stall. Our latency model
(`costmodel.loopnest.reference`, "Latency") stalls a memory that cannot hold two tiles: it can be
refilled only while its tile is used for the last time. The innermost memory m0 of an operand v at
MIP level 0 that cannot hold even two elements of v (simba_like: ``weight_reg``, one 8-bit weight per
MAC) is such a memory: every period of T = product of the loop factors at MIP level 0 (log-extent
u = sum_f log(p_f) x[f, level 0]) it is refilled from v's next memory m1 (``weight_buffer``), which
takes t cycles, of which only the last cycle of the period overlaps compute. So the layer's latency
is C (1 + (t - 1) / T') with T' >= T (T' also holds the run of v-irrelevant loops above level 0,
which the decoded order fixes and the MIP does not see) - simba_like: t = 64 distinct weights of a
PE x 8 bit / 64 bit/cycle = 8 cycles, so T = 7 doubles the latency and T = 98 adds 7 %.

The term, in log-cycles like Comp (6): z >= softplus(sigma - u) = log(1 + t / T) (an upper bound of
log(1 + (t - 1) / T'), equal up to the 1 / T and the unseen run), where sigma = log t is linear in X:

* read side, per instance of m1: sigma_r = log(bits_v / read_bw(m1)) + the log-extent of the
  v-relevant spatial factors on array dims inside one m1 instance (not in ``m1.private_to``; the
  distinct elements it sends, multicast counted once) + the v-relevant factors at level 0 (the tile);
* write side, per instance of m0: sigma_w = log(bits_v / write_bw(m0)) + the v-relevant factors at
  level 0.

The memories work in parallel (latency = C + the worst memory's stall), so one column z >= 0 takes
the maximum of both sides' terms; softplus is convex, and z is bounded below by its tangents at
``TANGENTS`` (one row per side and tangent point): z - s'(a) (sigma - u) >= s(a) - a s'(a), with
s(a) = log(1 + e^a), s'(a) = 1 / (1 + e^-a). Minimising z w_compute stall_w picks the largest
tangent, which lies below softplus by at most 0.031 (tangents 0.5 apart; exact at the points).
"""

from __future__ import annotations

import math

from costmodel.loopnest.mapping import RELEVANT

__all__ = ["TANGENTS", "add_refill_stall", "softplus_pwl", "refill_sides", "stall_term"]

#: Tangent points of softplus (log(t / T) from -6 to 8, step 0.5).
TANGENTS = tuple(-6.0 + 0.5 * i for i in range(29))


def _sp(a: float) -> float:
    return math.log1p(math.exp(a))


def _dsp(a: float) -> float:
    return 1.0 / (1.0 + math.exp(-a))


def softplus_pwl(x: float) -> float:
    """max(0, max over ``TANGENTS`` a of the tangent of softplus at a, at x): the value z takes in the
    MIP for sigma - u = x (dimensionless, log-cycles)."""
    return max(0.0, max(_sp(a) + _dsp(a) * (x - a) for a in TANGENTS))


def refill_sides(b, bits: dict[str, int]) -> list[tuple[float, list[tuple[int, float]]]]:
    """The sides (sigma - u) of every single-buffered innermost memory of builder ``b``
    (`mappers.fullspace.cosa.model._ModelBuilder`): a list of (constant, [(X column, coefficient)])
    with sigma - u = constant + sum coefficient x (natural-log units; module docstring). Empty if
    no memory at MIP level 0 is single-buffered for one element of its operands."""
    out = []
    lvl0 = [(f, k, pl) for f in range(len(b.factors)) for k, pl in enumerate(b.placements[f])
            if pl.kind == "t" and pl.where == 0]
    for mi in b.groups[0]:
        m0 = b.mems[mi]
        if m0.unbounded:
            continue
        for v in m0.operands:
            levels = b.arch.levels(v)
            if m0.size_bits >= 2 * bits[v] or len(levels) < 2 or levels[0] is not m0:
                continue
            m1, rel = levels[1], RELEVANT[v]
            tile = [(b.xcol[f][k], b.logp[f]) for f, k, _ in lvl0 if b.factors[f][0] in rel]
            minus_u = [(b.xcol[f][k], -b.logp[f]) for f, k, _ in lvl0]
            group = [(b.xcol[f][k], b.logp[f]) for f, (d, _) in enumerate(b.factors) if d in rel
                     for k, pl in enumerate(b.placements[f]) if pl.kind == "s" and pl.where not in m1.private_to]
            out.append((math.log(bits[v] / m1.read_bw), group + tile + minus_u))
            out.append((math.log(bits[v] / m0.write_bw), tile + minus_u))
    return out


def add_refill_stall(b, bits: dict[str, int], weight: float) -> list:
    """Add the refill-stall column z (cost ``weight``, log-cycles, >= 0) and its tangent rows to
    builder ``b`` (module docstring). Returns the sides (`refill_sides`; empty: nothing added)."""
    sides = refill_sides(b, bits)
    if not sides:
        return sides
    z = b.col(weight, 0.0, math.inf, False)
    for const, terms in sides:
        for a in TANGENTS:
            s = _dsp(a)
            merged: dict[int, float] = {}
            for j, w in terms:
                merged[j] = merged.get(j, 0.0) + w
            b.row([(z, 1.0)] + [(j, -s * w) for j, w in merged.items()], _sp(a) - a * s + s * const, math.inf)
    return sides


def stall_term(sides, columns) -> float:
    """z of an assignment: max(0, max over ``sides`` of `softplus_pwl` (sigma - u)) with the X
    columns in ``columns`` (a set: the chosen placement of every factor) at 1, all others 0
    (log-cycles; 0 without sides)."""
    return max([0.0] + [softplus_pwl(c + sum(w for j, w in terms if j in columns)) for c, terms in sides])
