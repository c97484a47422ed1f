"""The least DRAM transfer time of a matmul-shaped layer given the on-chip capacities: a lower bound
of the loop-nest model (`costmodel.loopnest.reference`) that counts the re-reads small buffers force,
where the compulsory traffic (every element once, `costmodel.bounds`) does not.

**The model's DRAM traffic.** Take a layer with OY = OX = FY = FX = 1 (a matmul: W is K x C, I is
B x C, O is B x K, G relevant to all three). Each operand x has one irrelevant dim d_x (W: B, I: K,
O: C). Let b_x be the boundary of x's highest on-chip level (the loops below it are held there; the
MAC's one element if x has no on-chip level) and q_x the first x-relevant loop above b_x (the top of
the nest if there is none). The model fetches x's tile F = P / R times (`_Nest.above`: P the loops
above b_x, R the run of x-irrelevant loops directly above it), so x crosses the DRAM X_x =
d_x / E_x times, E_x the extent of d_x below q_x (spatial factors included): W and I are read X_x
times; O is written X_x times (the last at final precision, the others as partial sums) and read
back X_x - 1 times. Padding only adds (real data scaled, words rounded up).

**What the capacities allow.** Order the operands by q. If q_x <= q_y, the loops between b_y and
q_y are d_y loops only, so E_x <= (extent of d_x below q_y) = (extent of d_x in y's tile): d_x is
relevant to y. For the operand z with the highest q the other two dims are exactly z's relevant
ones, so E_x1 x E_x2 <= z's tile <= z's capacity; and E_x1 <= the tile of the middle operand. The
capacity of x's top level in elements: size_bits / (x's least precision) x the instances of the
array dims it is private to (a level shared with other operands counts whole for each: a weaker,
still valid, bound). The least traffic is then the minimum, over the 6 orders, of a convex function
of E_x1 (E_x2 = min(its limits, capacity / E_x1)), found exactly at its boundary, kink or stationary
points (`_least_pair`).

Checked: bound <= mapped on every layer of every mapped design of the bundled LLM search
(docs/archsearch.md), and by hand in tests/costmodel/test_bounds.py.
"""

from __future__ import annotations

import math
from itertools import permutations

__all__ = ["dram_floor"]

#: Each operand's irrelevant dim in a matmul-shaped layer.
IRRELEVANT = {"W": "B", "I": "K", "O": "C"}


def dram_floor(layer, view, prec: dict[str, int], bits: dict[str, int]) -> float | None:
    """The least DRAM transfer time (cycles) of ``layer`` on ``view`` (`Accelerator.for_layer`,
    its outermost memory the DRAM) over every mapping the capacities allow (module docstring), or
    None if the layer is not matmul-shaped (a window dim > 1) or the top memory is bounded.
    ``prec``: each operand's least precision in bits (O: min of partial and final); ``bits``:
    `operand_bits` (the partial-sum precision of O's re-written tiles)."""
    if any(getattr(layer, d) != 1 for d in ("OY", "OX", "FY", "FX")):
        return None
    top = view.memories[-1]
    if top.size_bits is not None:
        return None
    served = [op for op in ("W", "I", "O") if view.levels(op)[-1] is top]
    if not served:
        return 0.0
    size = {d: getattr(layer, d) for d in ("B", "K", "C")}
    foot = {"W": layer.K * layer.C * layer.G, "I": layer.B * layer.C * layer.G, "O": layer.B * layer.K * layer.G}
    cap = {op: _capacity(view, op, prec[op]) for op in served}

    def cost(w_read: float, w_write: float) -> float:
        # (fixed part, per crossing) of each operand's time: W, I read X times; O written X times
        # (the first X - 1 partial) and read back X - 1 times
        lin = {}
        for op in served:
            if op == "O":
                per = foot["O"] * bits["O"] * (w_write + w_read)
                lin[op] = (foot["O"] * prec["O"] * w_write - per, per)
            else:
                lin[op] = (0.0, foot[op] * prec[op] * w_read)
        best = math.inf
        for order in permutations(served):
            fixed = sum(lin[op][0] for op in served)
            if len(order) == 1:
                best = min(best, fixed + lin[order[0]][1])
                continue
            *low, z = order
            x1 = low[0]
            d1 = size[IRRELEVANT[x1]]
            if len(low) == 1:       # two operands: E_x1 <= z's tile
                e1 = min(d1, cap[z])
                t = fixed + lin[x1][1] * max(1.0, d1 / e1) + lin[z][1]
            else:
                x2 = low[1]
                d2 = size[IRRELEVANT[x2]]
                t = fixed + lin[z][1] + _least_pair(lin[x1][1], d1, min(d1, cap[x2], cap[z]),
                                                    lin[x2][1], d2, min(d2, cap[z]), cap[z])
            best = min(best, t)
        return best

    r = 1.0 / top.read_bw
    w = 1.0 / top.write_bw
    if top.shared_port:
        return cost(r, w)
    return max(cost(r, 0.0), cost(0.0, w))


def _capacity(view, op: str, bits: int) -> float:
    """Elements of ``op`` its highest on-chip level holds over all its instances (size / ``bits``
    x the array dims it is private to); the MAC's one element per PE without one."""
    lv = view.levels(op)
    if len(lv) < 2:
        return float(view.pe_count)
    m = lv[-2]
    return m.size_bits / bits * math.prod(view.array[a] for a in m.private_to)


def _least_pair(c1: float, d1: float, u1: float, c2: float, d2: float, u2: float, cap: float) -> float:
    """min over 1 <= e1 <= u1 of c1 max(1, d1 / e1) + c2 max(1, d2 / e2), e2 = min(u2, cap / e1):
    a convex function of e1, so its minimum is at a bound, a kink or the stationary point of
    c1 d1 / e1 + c2 d2 e1 / cap."""
    u1 = max(1.0, u1)

    def f(e1: float) -> float:
        e2 = min(u2, cap / e1)
        return c1 * max(1.0, d1 / e1) + c2 * max(1.0, d2 / e2)

    cands = [1.0, u1, d1, cap * max(1.0, d2 / u2) / d2]
    if c1 > 0 and c2 > 0:
        cands.append(math.sqrt(c1 * d1 * cap / (c2 * d2)))
    return min(f(min(u1, max(1.0, e))) for e in cands)
