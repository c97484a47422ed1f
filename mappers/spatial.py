"""Spatial-unrolling candidates of a layer under an accelerator's hint (every loop-nest mapper).

Given a layer and an accelerator with a `costmodel.loopnest.hint.SpatialHint`, `spatial_candidates`
enumerates the spatial unrollings the hint allows and keeps the best ``keep`` of them; the loop-order
mappers (loma, salsa, random) run their temporal search on each (one set of work units per
candidate) and keep the best (`mappers.loop_order.base`).

**The set.** For each array dim ``a`` of size ``S_a`` and each loop dim ``d`` the hint allows on
it, the unrolling factors are the divisors of ``m = min(bound_d, S_a, cap_{d,a})``: a factor need
not divide the layer's bound (K 14 on K = 64 runs ceil(64 / 14) = 5 temporal iterations, the last
one partly idle: the model pads, `SpatialMapping.fit`), but it divides ``m``. An array dim unrolls
nothing, one loop dim, or up to ``hint.max_mixed(a)`` distinct loop dims at once (*mixed*, factors
> 1 each) whose product is at most ``S_a``. Across array dims the total factor of a loop dim is at
most its bound. These are ZigZag 3.9.1's rules (``SpatialMappingGeneratorStage``: divisors of the
maximal unrolling, mixed products bounded by the array dim, total unrolling bounded by the layer).
Two hardware rules prune the set (source: the same stage; Mei et al., IEEE TC 2021, Sec. IV):

* *bandwidth*: ``cap_{d,a}`` = the innermost memory of an operand that ``d`` is relevant to, when
  one instance of it feeds the whole array dim ``a`` (``a`` not in its ``private_to``), supplies at
  most ``floor(bandwidth / precision)`` distinct elements per cycle (read bandwidth for W and I,
  write bandwidth and partial-sum precision for O), so ``d`` unrolls at most that many ways on ``a``
  (ZigZag caps the factor the same way);
* *capacity*: the innermost memory of each operand must hold the operand's spatial tile of one
  instance (the elements the array dims it spans read, with the input window
  ``SY (oy - 1) + DY (fy - 1) + 1`` rows, likewise columns) at the operand's precision. ZigZag
  shrinks an offending factor; here the candidate is dropped (its every temporal mapping would
  be invalid).

An empty unrolling (nothing unrolled) is always in the set unless ``min_utilization`` removes it.

**The ranking.** ``utilization`` = MACs / (PEs x temporal iterations) = ``prod_d (bound_d /
ceil(bound_d / F_d)) / PEs`` with ``F_d`` the total factor of ``d`` (padding counts as idle), highest
first; ties go to the smaller largest factor ``max_d F_d`` (ZigZag's *diversity* term: one loop
dim unrolled very wide leans on one operand's bandwidth), then to the candidate's position in the
enumeration (array dims in order, options of each by descending product then hint order).

Utilisation sees padding only. It is blind to two things that decide a GPU-sized array's latency:
whether the temporal counts left after padding can be split between the memory levels (on the
h100 preset, B=4096, C=8192, K=57344 unrolled B4 x K33 on the SMs leaves K 218 = 2 x 109 temporal
iterations: the prime 109 cannot be tiled, so the shared memory's tile loses reuse and its port
stalls, 1.36x the compute floor, against 1.011x for B11 x K12 at 0.7% less utilisation) and the
bandwidth each level must then feed (B132 on the SMs tiles well but every SM reads all of W from
the one L2: 2.0x). So with ``rank = "loma"`` a pool of the
``4 keep`` (at least 12) best by utilisation is probed by a coarse exhaustive temporal search:
LOMA of at most `LOMA_PROBE_ORDERINGS` orderings (the LPFs merged, `loma_values`), a real mapping's cost
that includes every tile and port. Candidates are probed in utilisation order, and one whose
lower bound (`costmodel.bounds.layer_bound` at its utilisation: compute, every port, forced DRAM
re-reads) is at least the ``keep``-th best probe value so far is not probed: it cannot enter the
kept ones. The ``keep`` best by probe value are kept, except that one whose bound is at least the
best probe value is dropped (a mapping that good exists on another candidate), so between 1 and
``keep`` candidates go to the temporal search. "At least" is up to a tie (`tied`: within one
cycle under the latency objective, else within `TIE_RTOL`, one part per million): on a memory-bound layer (a decode GEMM reads all of W from DRAM once whatever the
unrolling) every candidate's bound is the same DRAM floor, the first probe reaches it, and the
others are neither probed nor kept; a probe itself stops at the first batch of orderings that
reaches the candidate's bound. Under the latency objective this keeps one candidate where the rule
without the tolerance kept three equal ones (SALSA ran on each), so the latency is the same; of
the probed candidates that tie the best latency the one whose probe found the least energy at it
is kept (the latency objective breaks its ties by energy). With ``rank = "probe"`` the pool is re-ranked by
the best of 64 seeded random temporal orderings on each (`probe_values`; random orderings are a
noisy rank). ``rank = "auto"`` (the default of the loop-order mappers' ``spatial_rank``) is
``loma`` under the latency objective, where the misses above were measured, and ``utilization``
under energy and EDP (on eyeriss_like's and tpu_like's hints the top 3 by utilisation come within
5.0% and 1.45% of the best candidate's energy, docs/archsearch.md). Ties go to utilisation order. ``keep = None`` keeps every candidate in utilisation
order whatever the rank (all of them run, so the order cannot change the best).
``scripts/bench_spatial_choice.py`` measures the rules against the exhaustive spatial search.

**Speed.** The top ``keep`` come from a branch and bound over the array dims (options sorted by
product; ``prod(factors) / S_a`` bounds the utilisation a dim can still contribute), so a 128 x 128
array with 4 loop dims on each axis needs milliseconds (``scripts/bench_spatial.py``) instead of the
full cross product (ZigZag's issue #119).

Errors: `spatial_candidates` raises `NoSpatialCandidate` (a ValueError) naming the layer, the
accelerator and the hint when no unrolling survives.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from costmodel.loopnest.mapping import RELEVANT, SPATIAL_DIMS, SpatialMapping
from costmodel.loopnest.reference import operand_bits

__all__ = ["SpatialCandidate", "NoSpatialCandidate", "spatial_candidates", "spatial_mode", "first_missing", "has_candidate", "axis_options", "utilization",
           "probe_values", "loma_values", "RANKS", "LOMA_PROBE_ORDERINGS", "probe_loops", "tied", "TIE_RTOL",
           "TIE_CYCLES"]

#: Ranking rules of `spatial_candidates`.
RANKS = ("auto", "loma", "utilization", "probe")

_PROBE_ORDERINGS = 64
#: Orderings the ``loma`` rank's probe may enumerate per candidate (the LPFs merged until so few remain).
LOMA_PROBE_ORDERINGS = 2520
#: Relative difference under which the ``loma`` rank counts two figures as equal (`tied`).
TIE_RTOL = 1e-6
#: Latency difference (cycles) under which the ``loma`` rank counts two latencies as equal.
TIE_CYCLES = 1.0


def tied(bound: float, value: float, objective: str) -> bool:
    """Whether a candidate whose lower bound is ``bound`` cannot beat ``value`` by more than a tie:
    ``bound >= value - tol`` with ``tol`` = max(`TIE_CYCLES`, `TIE_RTOL` x value) under the latency
    objective (cycles: a mapping faster by a fraction of a clock is not faster on silicon; the
    model's bandwidth terms give fractional cycles, and the bounds carry a 1e-12 safety margin
    against rounding), else `TIE_RTOL` x value (pJ, pJ x cycles)."""
    if not math.isfinite(value):   # nothing to beat (no k-th value yet, or no valid ordering)
        return False
    return bound >= value - _tie_tol(value, objective)


def _tie_tol(value, objective: str):
    """The tie tolerance of `tied` at a finite ``value`` (a float or an array)."""
    tol = TIE_RTOL * np.abs(value)
    return np.maximum(tol, TIE_CYCLES) if objective == "latency" else tol


class NoSpatialCandidate(ValueError):
    """No spatial unrolling of the layer satisfies the accelerator's hint and its memories."""


@dataclass(frozen=True)
class SpatialCandidate:
    """One spatial unrolling and its ranking figures.

    Attributes:
        spatial: the unrolling (factors <= the layer's bounds).
        utilization: MACs / (PEs x temporal iterations), in (0, 1].
        max_factor: the largest total factor of one loop dim.
        key: per array dim the index of its option in `axis_options` (the last tie-break).
        probe: best objective of the probe orderings (``rank = "probe"``), else None.
    """

    spatial: SpatialMapping
    utilization: float
    max_factor: int
    key: tuple[int, ...]
    probe: float | None = None


def _divisors(n: int) -> list[int]:
    return [f for f in range(1, n + 1) if n % f == 0]


def _bandwidth_caps(layer, arch) -> dict[tuple[str, str], int]:
    """cap[(d, a)]: most ways loop dim d may unroll on array dim a under the innermost memories'
    bandwidth (absent = no cap)."""
    bits = operand_bits(layer, arch)
    caps: dict[tuple[str, str], int] = {}
    for op in ("W", "I", "O"):
        m = arch.levels(op)[0]
        bw = m.write_bw if op == "O" else m.read_bw
        n = max(1, int(bw // bits[op]))
        for a in arch.array:
            if a in m.private_to:
                continue
            for d in RELEVANT[op]:
                caps[(d, a)] = min(caps.get((d, a), n), n)
    return caps


def axis_options(layer, arch, hint, array_dim: str) -> list[tuple[tuple[str, int], ...]]:
    """The unrollings array dim ``array_dim`` may take for ``layer`` under ``hint``.

    Returns:
        Options as tuples of (loop dim, factor > 1) in hint order, the empty option (nothing
        unrolled) included, sorted by descending product (ties in generation order).
    """
    size = arch.array[array_dim]
    caps = _bandwidth_caps(layer, arch)
    pools = {}
    for d in hint.allowed(array_dim):
        m = min(getattr(layer, d), size, caps.get((d, array_dim), size))
        f = [x for x in _divisors(m) if x > 1]
        if f:
            pools[d] = f
    dims = list(pools)
    out: list[tuple[tuple[str, int], ...]] = [()]
    for k in range(1, min(hint.max_mixed(array_dim), len(dims)) + 1):
        for combo in itertools.combinations(dims, k):
            for fs in itertools.product(*(pools[d] for d in combo)):
                if math.prod(fs) <= size:
                    out.append(tuple(zip(combo, fs)))
    order = sorted(range(len(out)), key=lambda i: (-math.prod(f for _, f in out[i]), i))
    return [out[i] for i in order]


def utilization(layer, pe_count: int, totals: dict[str, int]) -> float:
    """MACs / (PEs x temporal iterations) for total spatial factors ``totals`` (loop dim -> F_d)."""
    u = 1.0
    for d, f in totals.items():
        b = getattr(layer, d)
        u *= b / -(-b // f)
    return u / pe_count


def _tile_fits(layer, arch, bits, totals_by_axis: list[dict[str, int]], axes: list[str]) -> bool:
    """Capacity rule: each operand's innermost memory holds its spatial tile of one instance."""
    for op in ("W", "I", "O"):
        m = arch.levels(op)[0]
        if m.size_bits is None:
            continue
        f = {d: 1 for d in SPATIAL_DIMS}
        for a, tot in zip(axes, totals_by_axis):
            if a in m.private_to:
                continue
            for d, x in tot.items():
                f[d] *= x
        if op == "W":
            n = f["K"] * f["C"] * f["FY"] * f["FX"] * f["G"]
        elif op == "O":
            n = f["B"] * f["K"] * f["OY"] * f["OX"] * f["G"]
        else:
            iy = layer.SY * (f["OY"] - 1) + layer.DY * (f["FY"] - 1) + 1
            ix = layer.SX * (f["OX"] - 1) + layer.DX * (f["FX"] - 1) + 1
            n = f["B"] * f["C"] * f["G"] * iy * ix
        if n * bits[op] > m.size_bits:
            return False
    return True


class _Found(Exception):
    """`_enumerate` with ``first``: a candidate survived (args[0]); the search stops."""


def _enumerate(layer, arch, hint, keep: int | None, first: bool = False) -> list[SpatialCandidate]:
    axes = list(arch.array)
    opts = [axis_options(layer, arch, hint, a) if a in hint.dims else [()] for a in axes]
    sizes = [arch.array[a] for a in axes]
    bound = {d: getattr(layer, d) for d in SPATIAL_DIMS}
    best_rest = [1.0] * (len(axes) + 1)
    for i in range(len(axes) - 1, -1, -1):
        best_rest[i] = best_rest[i + 1] * max(math.prod(f for _, f in o) for o in opts[i]) / sizes[i]
    bits = operand_bits(layer, arch)
    pe = arch.pe_count
    kept: list[tuple] = []   # (rank key, candidate), ascending = best first
    floor = hint.min_utilization

    def leaf(chosen: list[int]) -> None:
        per_axis = [dict(opts[i][j]) for i, j in enumerate(chosen)]
        totals: dict[str, int] = {}
        for t in per_axis:
            for d, x in t.items():
                totals[d] = totals.get(d, 1) * x
        u = utilization(layer, pe, totals)
        if u < floor or not _tile_fits(layer, arch, bits, per_axis, axes):
            return
        mx = max(totals.values(), default=1)
        key = (-u, mx, tuple(chosen))
        if keep is not None and len(kept) == keep and key >= kept[-1][0]:
            return
        sp = SpatialMapping({a: opts[i][j] for i, (a, j) in enumerate(zip(axes, chosen)) if opts[i][j]})
        if first:
            raise _Found(SpatialCandidate(sp, u, mx, tuple(chosen)))
        bisect.insort(kept, (key, SpatialCandidate(sp, u, mx, tuple(chosen))))
        if keep is not None and len(kept) > keep:
            kept.pop()

    def visit(i: int, ub: float, chosen: list[int], totals: dict[str, int]) -> None:
        if i == len(axes):
            leaf(chosen)
            return
        for j, o in enumerate(opts[i]):
            u = ub * math.prod(f for _, f in o) / sizes[i]
            if keep is not None and len(kept) == keep and u * best_rest[i + 1] < -kept[-1][0][0]:
                break  # options are sorted by product: none further can reach the kept ones
            if u * best_rest[i + 1] < floor:
                break
            t = dict(totals)
            ok = True
            for d, x in o:
                t[d] = t.get(d, 1) * x
                if t[d] > bound[d]:
                    ok = False
            if ok:
                visit(i + 1, u, chosen + [j], t)

    try:
        visit(0, 1.0, [], {})
    except _Found as e:   # ``first``: the first survivor in enumeration order (not the best)
        return [e.args[0]]
    return [c for _, c in kept]


def probe_values(layer, arch, spatials, objective: str = "energy", orderings: int = _PROBE_ORDERINGS,
                 seed: int = 0, even: bool = False) -> np.ndarray:
    """Best ``objective`` over ``orderings`` seeded random temporal orderings of each unrolling.

    A cheap estimate of what a temporal search will find on a spatial candidate (the same
    orderings for every candidate of a layer: the LPF multiset depends on the unrolling, so the
    permutations are drawn per candidate from one seed). Shape (len(spatials),); +inf where no
    sampled ordering is valid.
    """
    from costmodel.loopnest.ordering import OrderingEvaluator
    from mappers.base import objective_index
    out = np.full(len(spatials), np.inf)
    for i, sp in enumerate(spatials):
        ev = OrderingEvaluator(layer, arch, spatial=sp, even=even)
        base = np.repeat(np.arange(len(ev.counts), dtype=np.int64), np.asarray(ev.counts, dtype=np.int64))
        if base.size == 0:
            o = base[None, :]
        else:
            rng = np.random.default_rng(seed)
            o = np.stack([rng.permutation(base) for _ in range(orderings)])
        cost = ev.evaluate(o)
        vals = np.asarray((cost.energy_pj, cost.latency_cycles, cost.edp)[objective_index(objective)], dtype=float)
        vals = np.where(np.asarray(cost.valid), vals, np.inf)
        out[i] = float(vals.min())
    return out


def probe_loops(loops, max_orderings: int = LOMA_PROBE_ORDERINGS) -> list[tuple[str, int]]:
    """The loops of the ``loma`` rank's probe: ``loops`` (LPFs as (dim, factor)) merged by LOMA's
    rule (`mappers.loop_order.lpf.merge_lpfs`) at the largest ``lpf_limit`` whose orderings number
    at most ``max_orderings`` (n! / prod k_i!, equal LPFs interchangeable)."""
    return list(_probe_loops(tuple((str(d), int(f)) for d, f in loops), int(max_orderings)))


@functools.lru_cache(maxsize=4096)
def _probe_loops(loops: tuple[tuple[str, int], ...], max_orderings: int) -> tuple[tuple[str, int], ...]:
    """`probe_loops`, kept per loops (the candidates of a layer often leave the same temporal loops)."""
    from mappers.loop_order.lpf import lpf_types, merge_lpfs, multiset_count
    n = len(loops)
    while True:
        m = merge_lpfs(loops, max(n, 1))
        if n <= 1 or multiset_count([int(k) for k in lpf_types(m)[1]]) <= max_orderings:
            return tuple(m)
        n -= 1


def loma_values(layer, arch, spatials, objective: str = "energy", max_orderings: int = LOMA_PROBE_ORDERINGS,
                even: bool = False, floors=None) -> np.ndarray:
    """Best ``objective`` of an exhaustive LOMA search of at most ``max_orderings`` orderings on each
    unrolling.

    Each unrolling's temporal LPFs are merged (`probe_loops`: LOMA's rule at the largest LPF limit
    whose orderings number at most ``max_orderings``) and every ordering of them is costed
    (bottom-up allocation). The value is that of a real mapping of the candidate, so it
    sees what utilisation cannot: whether the temporal counts left after padding split between the
    memory levels (a count with a large prime factor cannot, and the tile at the inner levels loses
    reuse) and the bandwidth each level must then feed. Shape (len(spatials),); +inf where no
    ordering is valid.

    ``floors`` (optional, one per unrolling, in the objective's unit): a lower bound of the value
    (`costmodel.bounds.layer_bound`). The orderings are then costed in growing batches (64, 256,
    1,024, 4,096) and an unrolling's search stops once a batch reaches its floor up to a tie
    (`tied`: nothing can be better by more), so a layer at its compute or memory floor costs a fraction
    of the orderings.

    Source: the LPF limit is LOMA's (Symons, Mei, Verhelst, AICAS 2021, Sec. III-B). A budget of
    orderings, not of loops, keeps more split points where factors repeat (2^7 of one dim counts
    once): at 6 loops (720 orderings) the probe missed the tiling LOMA at 7 loops finds on
    simba_like (Llama-3-8B ffn_gate at batch 128: 17.3 M against 13.8 M cycles).
    """
    out = np.full(len(spatials), np.inf)
    for i, sp in enumerate(spatials):
        out[i] = _loma_probe(layer, arch, sp, objective, max_orderings, even,
                             None if floors is None else floors[i])[0]
    return out


def _loma_probe(layer, arch, sp, objective: str, max_orderings: int, even: bool,
                floor: float | None) -> tuple[float, float]:
    """One unrolling's probe (`loma_values`): (best ``objective``, the least energy (pJ) of the
    orderings tied with it (`tied`); +inf, +inf if none is valid). ``floor``: stop at it (None =
    every ordering)."""
    from costmodel.loopnest.ordering import OrderingEvaluator
    from mappers.base import objective_index
    from costmodel.loopnest.mapping import prime_factors
    from costmodel.workload import LOOP_DIMS
    from mappers.loop_order.lpf import iter_permutations, multiset_count
    k = objective_index(objective)
    sp.fit(layer)   # (raises as the evaluator would)
    tb = sp.temporal_bounds(layer)
    loops = [(d, p) for d in LOOP_DIMS for p in prime_factors(tb[d])]
    ev = OrderingEvaluator(layer, arch, spatial=sp, factors=probe_loops(loops, max_orderings), even=even)
    counts = [int(c) for c in ev.counts]
    blocks = (iter_permutations(counts, 0, None, 4096) if floor is None
              else _growing_blocks(counts, multiset_count(counts)))
    best, near = np.inf, []   # near: (values, energies) of each batch's orderings tied with its best
    for block in blocks:
        cost = ev.evaluate(block)
        vals = np.where(np.asarray(cost.valid), np.asarray((cost.energy_pj, cost.latency_cycles, cost.edp)[k],
                                                           dtype=float), np.inf)
        if not vals.size:
            continue
        best = min(best, float(vals.min()))
        fin = np.isfinite(vals)
        v = vals[fin]
        sel = v - _tie_tol(v, objective) <= best
        near.append((v[sel], np.asarray(cost.energy_pj, dtype=float)[fin][sel]))
        if floor is not None and tied(floor, best, objective):
            break
    energy = np.inf
    for v, e in near:   # (a later batch may have lowered the best)
        sel = v - _tie_tol(v, objective) <= best
        if sel.any():
            energy = min(energy, float(e[sel].min()))
    return best, energy


def _growing_blocks(counts: list[int], total: int):
    """Every ordering of the multiset ``counts`` (``total`` of them), in batches of 64, 256, 1,024,
    then 4,096 (`mappers.loop_order.lpf.iter_permutations` over consecutive rank ranges)."""
    from mappers.loop_order.lpf import iter_permutations
    start, size = 0, 64
    while start < total:
        stop = min(total, start + size)
        yield from iter_permutations(counts, start, stop, stop - start)
        start, size = stop, min(4 * size, 4096)


def _bound_value(layer, arch, u: float, objective: str) -> float:
    """A lower bound of ``objective`` for any mapping at utilisation ``u`` (`costmodel.bounds`)."""
    from costmodel.bounds import layer_bound
    try:
        b = layer_bound(layer, arch, u)
    except ValueError:   # an operand no on-chip memory serves: no bound, nothing skipped
        return 0.0
    return {"latency": b.latency_cycles, "energy": b.energy_pj}.get(objective, b.latency_cycles * b.energy_pj)


def _loma_rank(layer, arch, pool: list[SpatialCandidate], keep: int, objective: str,
               even: bool) -> tuple[np.ndarray, list[int]]:
    """The ``loma`` rank of a utilisation-ordered pool: (probe value per pool entry, +inf where
    not probed; the kept pool indices, best first).

    Candidates are probed (`loma_values`, stopping at the candidate's bound) in utilisation order;
    one whose lower bound (`costmodel.bounds.layer_bound` at its utilisation) is at least the
    ``keep``-th best probe value so far is not probed: it cannot enter the kept ones. Of the
    ``keep`` best by probe value, one whose bound is at least the best probe value is dropped (a
    mapping that good is known on another candidate), so between 1 and ``keep`` candidates are
    kept. "At least" is up to a tie (`tied`). Under the latency objective the first kept is, of
    those ``keep`` whose probe value ties the best, the one whose probe found the least energy at
    that latency (the latency objective breaks its ties by energy; the others are dropped, their
    bounds tie the best).
    """
    vals = np.full(len(pool), np.inf)
    energy = np.full(len(pool), np.inf)
    bounds = [_bound_value(layer, arch, c.utilization, objective) for c in pool]
    probed: list[int] = []
    for i, c in enumerate(pool):
        kth = sorted(vals[j] for j in probed)[keep - 1] if len(probed) >= keep else np.inf
        if tied(bounds[i], kth, objective):
            continue
        vals[i], energy[i] = _loma_probe(layer, arch, c.spatial, objective, LOMA_PROBE_ORDERINGS, even, bounds[i])
        probed.append(i)
    order = sorted(probed, key=lambda i: (vals[i], i))[:keep]
    best = vals[order[0]]
    first = order[0]
    if objective == "latency" and math.isfinite(best):
        first = min((i for i in order if tied(best, vals[i], objective)), key=lambda i: (energy[i], vals[i], i))
    return vals, [first] + [i for i in order if i != first and not tied(bounds[i], best, objective)]


def spatial_mode(problem, params) -> str:
    """"fixed" or "search": ``params['spatial']`` if given; else fixed when the problem or the
    accelerator has a spatial unrolling, search when the accelerator has only a hint."""
    v = params.get("spatial")
    if v is not None:
        return str(v)
    arch = problem.arch
    if problem.spatial is not None or getattr(getattr(arch, "spatial", None), "dims", True):
        return "fixed"
    return "search" if getattr(arch, "spatial_hint", None) is not None else "fixed"


_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 512


def spatial_candidates(layer, arch, hint=None, keep: int | None = 3, rank: str = "utilization",
                       objective: str = "energy", even: bool = False) -> list[SpatialCandidate]:
    """The best ``keep`` spatial unrollings of ``layer`` on ``arch`` under ``hint`` (module docstring).

    Args:
        layer: a `costmodel.workload.Layer`.
        arch: a loop-nest `Accelerator`.
        hint: the `SpatialHint`; None = ``arch.spatial_hint``.
        keep: how many to keep (None = all, best first).
        rank: `RANKS`: "auto" (loma under the latency objective, else utilization), "loma",
            "utilization" or "probe".
        objective: what the probe minimises ("energy", "latency", "edp").
        even: even mapping in the probe.

    Returns:
        Candidates, best first (deterministic). Results are cached per (layer, accelerator
        identity, hint, keep, rank, objective, even).

    Raises:
        NoSpatialCandidate: no unrolling survives (message names the layer, accelerator and hint).
        ValueError: no hint, or an unknown ``rank``.
    """
    hint = hint if hint is not None else arch.spatial_hint
    if hint is None:
        raise ValueError(f"accelerator {arch.name!r} has no [spatial_hint]: spatial = \"search\" needs one "
                         f"(or use spatial = \"fixed\")")
    if rank not in RANKS:
        raise ValueError(f"spatial rank {rank!r}: expected one of {list(RANKS)}")
    if rank == "auto":
        rank = "loma" if objective == "latency" else "utilization"
    try:
        ckey = (layer, id(arch), repr(hint), keep, rank, objective if rank != "utilization" else None, even)
        hit = _CACHE.get(ckey)
    except TypeError:
        ckey, hit = None, None
    if hit is not None:
        _CACHE.move_to_end(ckey)
        return hit[1]
    if rank == "utilization" or keep is None:   # every candidate runs: the order cannot change the best
        out = _enumerate(layer, arch, hint, keep)
    else:
        pool = _enumerate(layer, arch, hint, max(4 * keep, 12))
        if not pool:
            vals, order = np.zeros(0), []
        elif rank == "probe":
            vals = probe_values(layer, arch, [c.spatial for c in pool], objective, even=even)
            order = sorted(range(len(pool)), key=lambda i: (vals[i], i))[:keep]
        else:
            vals, order = _loma_rank(layer, arch, pool, keep, objective, even)
        out = [SpatialCandidate(pool[i].spatial, pool[i].utilization, pool[i].max_factor, pool[i].key,
                                float(vals[i])) for i in order]
    if not out:
        raise _no_candidate(layer, arch, hint)
    if ckey is not None:
        _CACHE[ckey] = (arch, out)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return out


def _no_candidate(layer, arch, hint) -> NoSpatialCandidate:
    return NoSpatialCandidate(
        f"layer {layer.name!r}: no spatial unrolling on accelerator {arch.name!r} satisfies its hint "
        f"({hint.describe()}) and the innermost memories' capacity; allow more loop dims in "
        f"[spatial_hint] or lower min_utilization")


def has_candidate(layer, arch, hint=None) -> bool:
    """Whether ``spatial_candidates(layer, arch, hint)`` finds any unrolling, without ranking
    them: the enumeration stops at the first survivor (campaign validation).

    Raises:
        ValueError: no hint (as `spatial_candidates`).
    """
    hint = hint if hint is not None else arch.spatial_hint
    if hint is None:
        spatial_candidates(layer, arch, keep=1)   # its error
    return bool(_enumerate(layer, arch, hint, None, first=True))


def first_missing(layers, arch) -> NoSpatialCandidate | None:
    """The error of the first of ``layers`` with no unrolling under ``arch``'s hint, or None
    (campaign validation: every layer must have one; `has_candidate`, which ranks nothing)."""
    for layer in layers:
        if not has_candidate(layer, arch):
            return _no_candidate(layer, arch, arch.spatial_hint)
    return None
