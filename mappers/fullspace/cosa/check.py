"""The CoSA MIP's objective and constraints evaluated directly on a placement, without the
linearisation (`mappers.fullspace.cosa.model` builds the linear model): the reference the tests
compare the HiGHS optimum and the linearised auxiliary variables against.
"""

from __future__ import annotations

import math
from typing import Sequence

from costmodel.loopnest.reference import operand_bits
from costmodel.loopnest.mapping import OPERANDS, RELEVANT, SPATIAL_DIMS
from mappers.fullspace.cosa.hint import hint_satisfied
from mappers.fullspace.cosa.model import _EPS, CosaModel, Placement
from mappers.fullspace.cosa.stall import stall_term

__all__ = ["placement_objective", "placement_feasible", "port_ok"]


def _mem_inside(model: CosaModel, mi: int, pl: Placement) -> bool:
    gidx = {m: g for g, ms in enumerate(model.groups) for m in ms}
    if pl.kind == "t":
        return pl.where <= gidx[mi]
    return pl.where not in model.arch.memories[mi].private_to


def placement_objective(model: CosaModel, choice: Sequence[int]) -> float:
    """Eq. (12) of an assignment computed directly (products, no linearisation).

    Args:
        choice: per factor the index into ``model.placements[f]``.

    Returns:
        -w_U Util + w_C Comp + w_T Traf - reuse_eps Reuse + stall_w w_C z in natural-log units (z: the
        refill stall of `mappers.fullspace.cosa.stall.stall_term`; Reuse: the log of the
        level-0 loops irrelevant to level 0's operands; the MIP objective of that assignment,
        with Y at its least value: Y[v, q] = 1 iff a v-relevant factor sits at chain position
        <= q).
    """
    w_util, w_comp, w_traf = model.weights
    arch, layer = model.arch, model.layer
    bits = operand_bits(layer, arch)
    pls = [model.placements[f][k] for f, k in enumerate(choice)]
    lp = [math.log(p) for _, p in model.factors]
    util = 0.0
    for mi, m in enumerate(arch.memories):
        if m.unbounded:
            continue
        for v in m.operands:
            util += math.log(bits[v]) + sum(lp[f] for f, (d, _) in enumerate(model.factors)
                                            if d in RELEVANT[v] and _mem_inside(model, mi, pls[f]))
    comp = sum(lp[f] for f, pl in enumerate(pls) if pl.kind == "t")
    traf = 0.0
    gb = model.gb
    for v in OPERANDS:
        for f, (d, _) in enumerate(model.factors):
            pl, rel = pls[f], d in RELEVANT[v]
            if rel and pl.kind == "t" and gb is not None and pl.where < gb:
                traf += lp[f]
            if rel and pl.kind == "s" and (pl.where in model.inner_arr or pl.where in model.chip_arr):
                traf += lp[f]
            if pl.kind == "t" and (gb is None or pl.where > gb) and pl.rank < 0:
                traf += lp[f]
        pos = {f: model.chain.index((pl.where, pl.rank)) for f, pl in enumerate(pls) if pl.kind == "t" and pl.rank >= 0}
        ranks_rel = [q for f, q in pos.items() if model.factors[f][0] in RELEVANT[v]]
        if ranks_rel:
            zmin = min(ranks_rel)
            traf += sum(lp[f] for f, q in pos.items() if q >= zmin)
    ops0 = {v for mi in model.groups[0] for v in arch.memories[mi].operands}
    reuse = sum(lp[f] for f, pl in enumerate(pls) if pl.kind == "t" and pl.where == 0
                and not any(model.factors[f][0] in RELEVANT[v] for v in ops0))
    chosen = {model.xcol[f][k] for f, k in enumerate(choice)}
    stall = model.options.get("stall_w", 0.0) * w_comp * stall_term(model.options.get("stall_sides", []), chosen)
    return w_util * util + w_comp * comp + w_traf * traf - model.options.get("reuse_eps", 0.0) * reuse + stall


def placement_feasible(model: CosaModel, choice: Sequence[int]) -> bool:
    """Eqs. (2)-(4) of an assignment checked directly: fan-out per array dim, the model's spatial
    hint if any (allowed loop dims, mixed limit, utilisation floor), the (halo-bounded,
    evenly shared) capacity of every bounded memory and, if the model has them, the port-width
    rows (v-relevant spatial factors inside an instance of v's innermost memory x bits_v <= its
    bandwidth)."""
    arch, layer = model.arch, model.layer
    pls = [model.placements[f][k] for f, k in enumerate(choice)]
    for a, size in arch.array.items():
        if math.prod(p for (d, p), pl in zip(model.factors, pls) if pl.kind == "s" and pl.where == a) > size:
            return False
    hint = model.options.get("hint")
    if hint is not None:
        sp: dict = {a: {} for a in arch.array}
        for (d, p), pl in zip(model.factors, pls):
            if pl.kind == "s":
                sp[pl.where][d] = sp[pl.where].get(d, 1) * p
        util = math.prod(f for v in sp.values() for f in v.values()) / math.prod(arch.array.values())
        if not hint_satisfied(hint, sp, util):
            return False
    bits = operand_bits(layer, arch)
    if model.options.get("port_width") and not all(port_ok(model, pls, v, bits) for v in OPERANDS):
        return False
    for mi, m in enumerate(arch.memories):
        if m.unbounded:
            continue
        ext = {d: 1 for d in SPATIAL_DIMS}
        for (d, p), pl in zip(model.factors, pls):
            if _mem_inside(model, mi, pl):
                ext[d] *= p
        for v in m.operands:
            if v == "I":
                n = ext["B"] * ext["C"] * ext["G"]
                for od, fd, s, dl in (("OY", "FY", layer.SY, layer.DY), ("OX", "FX", layer.SX, layer.DX)):
                    n *= max(s * ext[od], dl * ext[fd]) * (2 if ext[fd] > 1 else 1)
            else:
                n = math.prod(ext[d] for d in RELEVANT[v])
            size = m.size_bits / (2 if m.name in model.options.get("halve", ()) else 1)
            if math.log(n * bits[v]) > math.log(size / len(m.operands)) + _EPS:
                return False
    return True


def port_ok(model: CosaModel, pls: Sequence[Placement], v: str, bits: dict[str, int]) -> bool:
    """Whether operand ``v``'s distinct elements per cycle inside one instance of its innermost
    memory m (product of the v-relevant spatial factors on dims not in ``m.private_to``) times
    bits_v fit m's port (read_bw; for O min(read_bw, write_bw), bits per cycle; at least one
    element per cycle always fits)."""
    m = model.arch.levels(v)[0]
    bw = m.read_bw if v != "O" else min(m.read_bw, m.write_bw)
    n = math.prod(p for (d, p), pl in zip(model.factors, pls)
                  if pl.kind == "s" and d in RELEVANT[v] and pl.where not in m.private_to)
    return n <= max(1.0, bw / bits[v]) * (1 + _EPS)
