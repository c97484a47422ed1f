"""An accelerator's spatial hint as constraints of the CoSA MIP (`mappers.fullspace.cosa.model`).

A `costmodel.loopnest.hint.SpatialHint` says, per array dim a, which loop dims a may unroll
(``hint.allowed(a)``), how many distinct ones at once (``hint.max_mixed(a)``) and the lowest spatial
utilisation worth running (``min_utilization``). In the MIP (natural logs, as everywhere there):

* *allowed dims*: a prime factor of dim d has no spatial placement on a unless d is in
  ``hint.allowed(a)`` (`spatial_allowed`, used by `_ModelBuilder.add_placements`; no column, so
  HiGHS never sees the placement);
* *mixed unrolling*: when fewer loop dims may share a than could reach it (``max_mixed(a)`` < the
  number of dims with a spatial placement on a), one binary u[a, d] per such dim d with
  x[f, a] - u[a, d] <= 0 for every factor f of d (u = 1 when any factor of d is on a) and
  sum_d u[a, d] <= max_mixed(a) (`add_mixed_rows`);
* *utilisation*: the decoded mapping's spatial factors divide the (possibly padded) bounds, so its
  utilisation is prod(spatial factors) / PEs and ``min_utilization`` u_min > 0 is one row
  sum over spatial placements of log(p) x[f, a] >= log(u_min x PEs) - eps (`add_utilisation_row`;
  with ``pad_primes_over`` it bounds the padded layer's utilisation, an upper bound of the real
  one). A layer too small to reach it makes the MIP infeasible (a row with status "infeasible").

The columns and rows come after the spatial-resource rows (4). An accelerator without a hint (or
``hint=False`` on the mapper) builds exactly the model of before; a hint that allows every loop dim
everywhere, at most all at once, with no utilisation floor, adds nothing.
"""

from __future__ import annotations

import math

__all__ = ["spatial_allowed", "add_mixed_rows", "add_utilisation_row", "hint_satisfied"]

_EPS = 1e-6


def spatial_allowed(hint, array_dim: str, dim: str) -> bool:
    """Whether a factor of loop dim ``dim`` may be placed spatially on ``array_dim`` (no hint: yes)."""
    return hint is None or dim in hint.allowed(array_dim)


def add_mixed_rows(b, hint) -> int:
    """The mixed-unrolling limit on builder ``b`` (a `_ModelBuilder` after its placements): per array
    dim a with more candidate loop dims than ``hint.max_mixed(a)``, binaries u[a, d] (cost 0),
    rows x[f, a] - u[a, d] <= 0 and sum_d u[a, d] <= max_mixed(a). Returns the number of u columns."""
    n = 0
    for a in b.arr:
        by_dim: dict[str, list[int]] = {}
        for f, (d, _) in enumerate(b.factors):
            for k, pl in enumerate(b.placements[f]):
                if pl.kind == "s" and pl.where == a:
                    by_dim.setdefault(d, []).append(b.xcol[f][k])
        cap = hint.max_mixed(a)
        if len(by_dim) <= cap:
            continue
        us = []
        for d, cols in by_dim.items():
            u = b.col(0.0, 0.0, 1.0, True)
            us.append(u)
            for j in cols:
                b.row([(j, 1.0), (u, -1.0)], -math.inf, 0.0)
        b.row([(u, 1.0) for u in us], -math.inf, float(cap))
        n += len(us)
    return n


def add_utilisation_row(b, hint) -> None:
    """``hint.min_utilization`` > 0 as one row on builder ``b``: the log of the spatial factors'
    product >= log(min_utilization x PEs) - eps (log-PEs). Nothing when the floor is 0."""
    u = hint.min_utilization
    if u <= 0:
        return
    terms = [(b.xcol[f][k], b.logp[f]) for f in range(len(b.factors))
             for k, pl in enumerate(b.placements[f]) if pl.kind == "s"]
    b.row(terms, math.log(u * math.prod(b.arch.array.values())) - _EPS, math.inf)


def hint_satisfied(hint, spatial_by_array: dict, exact_util: float | None = None) -> bool:
    """Whether per-array-dim spatial factors ``{a: {loop dim: factor}}`` obey ``hint``: every loop
    dim with a factor > 1 on a is allowed there, at most ``max_mixed(a)`` of them, and (if
    ``exact_util`` is given, the mapping's utilisation) it is >= ``min_utilization``."""
    if hint is None:
        return True
    for a, dims in spatial_by_array.items():
        used = [d for d, f in dims.items() if f > 1]
        if any(d not in hint.allowed(a) for d in used) or len(used) > hint.max_mixed(a):
            return False
    return exact_util is None or exact_util >= hint.min_utilization - 1e-12
