"""primitive_sa: simulated annealing over the CPEN 513 *primitive list* of the full mapspace.

Source: the CPEN 513 course report "simulated annealing for Timeloop mappings" (primitive list
representation; its three failures are fixed here) and this codebase's SA conventions (`mappers.loop_order.salsa`).

State: the primitive list
-------------------------
Every prime factor of every loop dim of the layer is a *primitive* ``(dim, prime)`` (K = 64 gives six
(K, 2)). The state is one flat list of primitives and ``S - 1`` indistinguishable separators that cut
it into ``S = A + M`` sections, left to right:

* sections ``0 .. A-1``: the spatial unrolling on the accelerator's array dims (``arch.array`` order);
* sections ``A .. A+M-1``: the temporal loops of the memories ``arch.memories`` (innermost first),
  each section's loops innermost first; the last section is the top memory (DRAM).

Decoding (`PrimitiveSpace.decode`) gives a `costmodel.loopnest.mapping.Mapping`: per array dim the product of
its primitives per loop dim (fan-out = product of the section); temporal loops = the temporal sections
concatenated, adjacent primitives of the same dim *within one section* merged into one loop (the same
nest); the same dim may appear several times in one level (the cost model allows it), so the report's
"merged primitive" ambiguity (which position does a merged loop take?) does not arise. Boundaries:
an **even mapping cut at the level separators** (`Mapping.even`): memory m holds the loops of the
temporal sections 0 .. m, the same cut for every operand it serves. Since memories are ordered
innermost first, every operand's boundaries are non-decreasing. Every decoded state covers each dim's
bound exactly (product of its primitives, no padding). ``problem.spatial`` and ``problem.even`` are
ignored: the spatial unrolling is part of the searched space and the mapping is always even.

The report's three failures, and the fixes
------------------------------------------
1. *Random-shuffle initial states are invalid* -> `PrimitiveSpace.initial`: a valid construction.
   Start with every primitive temporal at DRAM (valid: inner memories only hold the spatial tile);
   fill each array dim's spatial section greedily (primitives in seeded random order, the dims of the
   accelerator's default unrolling of that array dim first) while the fan-out fits; then, in seeded
   random order, move each DRAM primitive into the innermost memory section where the state stays
   valid (capacity checked). The result is checked with the cost model.
2. *Merged primitives moved one at a time* -> three moves on the flat list (probabilities):
   ``block`` (``p_block``, default 0.3): all primitives of one dim within one section (the section
   and dim of a uniformly random primitive) are removed together and re-inserted as one contiguous
   block at a uniformly random position of the list (another level, a spatial slot, or elsewhere in
   the same level); ``swap`` ((1 - p_block) / 2): two uniformly random positions holding different
   tokens exchange (a primitive with a separator moves a boundary); ``move`` ((1 - p_block) / 2): one
   primitive removed and re-inserted at a uniformly random position.
3. *Dead ends on invalid states* -> **repair**, no penalty (`PrimitiveSpace.repair`): a proposal
   whose fan-out exceeds an array dim gets that section's last primitives moved to the outermost DRAM
   position; then, while a memory's tiles exceed its capacity, the innermost such memory's separator
   moves inward by one primitive (lower separators clipped with it; the loop order is unchanged), and
   if its boundary is already 0 a spatial primitive goes to DRAM. This strictly shrinks that memory's
   loop set, so it ends (capped at ``4 n + 16`` steps; a proposal still invalid is rejected and the
   chain stays on its current valid state). The chain therefore only ever holds valid states.
   ``extra['valid_rate']`` = fraction of raw proposals valid *before* repair.

Spatial hint (issue 21)
-----------------------
When the accelerator has a ``[spatial_hint]`` (`costmodel.loopnest.hint.SpatialHint`; the mapper's
``hint`` param, default True, False ignores it) a primitive may enter spatial section a only if its
dim is in ``hint.allowed(a)`` and the section then unrolls at most ``hint.max_mixed(a)`` distinct
dims (`PrimitiveSpace.can_enter`). The initial fill only adds primitives that may enter, filling
the array dims that allow the fewest loop dims first (simba_like: D3 and D4, then the PE axes, so
conv1's C = 3 goes to the vector width D3 rather than to a PE axis that could hold K); a proposal
that breaks the hint (`PrimitiveSpace.hint_ok`) is repaired first by sending, section by section and
left to right, every primitive that could not have entered to the outermost DRAM position (then the
fan-out and capacity repairs as above, which only take primitives out of spatial sections); the
random states of `mappers.fullspace.baselines` draw each primitive's section among those it may
enter. ``min_utilization`` (product of the array dims' fan-outs / PEs: the primitives divide the
bounds, so no padding) is applied at evaluation (`PrimitiveSpace.evaluate`): a state below it
evaluates to +inf (invalid), so random5 / hybrid count it as an invalid draw and the annealer
rejects it; a chain whose greedy initial state is below it finds nothing (+inf). Without a hint
every rule above is the unconstrained one (the same draws and results as version 1).

The capacity check used by the construction and the repair (`PrimitiveSpace.over_capacity`) computes
the tiles exactly as `costmodel.loopnest.reference.evaluate` (footprints, partial/final output precision); the
decoded state is always evaluated by `evaluate`, which has the last word.

Annealing: as `mappers.loop_order.salsa`: V = ln(cost), P = exp((V - V') / T_i), T_i = t0 * rho^i, the best
state kept; proposals whose decoded mapping this chain has already evaluated are looked up, not
re-evaluated (``evaluations`` counts cost-model calls). ``history`` = objective of the initial state
then of every proposal (after repair; +inf if still invalid).

Latency ties (issue 38; ``latency_ties`` = 1): the acceptance criterion stays on the objective (eq. 3
above), so the chain walks exactly as before the rule; the best state kept is chosen by the tie rule
(`mappers.fullspace.ties.beats`): under the latency objective a state of equal latency and lower
energy (then equal energy and fewer DRAM bits) replaces the best. A proposal whose latency is at most
the best's is always accepted (V' <= V), so every state of the best latency the chain evaluated is
compared. Chains are reduced by latency, then energy (`mappers.base.best_of`). Energy and EDP
results are those of version 2.
"""

from __future__ import annotations

import math
import time
from typing import Any, Mapping as _Mapping, Sequence

import numpy as np

from costmodel.loopnest.reference import evaluate, footprint, operand_bits
from costmodel.loopnest.mapping import OPERANDS, RELEVANT, SPATIAL_DIMS, Mapping, SpatialMapping, prime_factors
from mappers.annealing import log_accept_arg
from mappers.base import (LayerMapper, LayerProblem, LoopNestDetail, Param, SearchResult, WorkUnit, chain_seeds,
                          objective_value, resolve_params)
from mappers.fullspace.ties import beats

__all__ = ["PrimitiveSpace", "PrimitiveSAMapper", "PRIMITIVE_SA", "chain_seeds", "resolve_params",
           "make_fullspace_result", "MOVES", "HINT_PARAM", "problem_space"]

#: Move kinds of the annealer.
MOVES = ("block", "swap", "move")

SEP = -1  # separator token in the flat list

#: The ``hint`` param of the mappers on `PrimitiveSpace` (primitive_sa, random5, hybrid); left out of
#: the resolved params unless given, so existing problem ids are unchanged.
HINT_PARAM = Param("hint", "bool", True, "obey the accelerator's [spatial_hint] (allowed loop dims per array "
                   "dim, max dims at once, min utilisation); False: any unrolling", omit_default=True)



class PrimitiveSpace:
    """The primitive-list mapspace of one layer on one accelerator (see the module docstring).

    A state is a list of ``S`` sections (lists of primitive ids): ``A`` spatial ones (array dims in
    order) then ``M`` temporal ones (memories innermost first). `flat` / `unflat` convert to and
    from the flat list with separators, on which the moves act.
    """

    def __init__(self, layer, arch, hint=None) -> None:
        """``hint``: a `SpatialHint` the spatial sections obey (None: any primitive anywhere)."""
        self.layer, self.arch, self.hint = layer, arch, hint
        self.prims: list[tuple[str, int]] = [(d, p) for d in SPATIAL_DIMS for p in prime_factors(getattr(layer, d))]
        self.n = len(self.prims)
        self.adims = list(arch.array)
        self.asize = [arch.array[a] for a in self.adims]
        self.A = len(self.adims)
        self.M = len(arch.memories)
        self.S = self.A + self.M
        self.bits = operand_bits(layer, arch)
        # per memory: operands it holds, array dims *inside* one instance, array dims it is private to
        self.mem_ops = [[op for op in OPERANDS if op in m.operands] for m in arch.memories]
        self.mem_inside = [[i for i, a in enumerate(self.adims) if a not in m.private_to] for m in arch.memories]
        self.mem_private = [[i for i, a in enumerate(self.adims) if a in m.private_to] for m in arch.memories]
        # per array dim: the loop dims the hint allows (None: any) and how many at once
        # without a hint every dim is allowed (read only under a hint, like max_mix)
        self.allow = [frozenset(SPATIAL_DIMS if hint is None else hint.allowed(a)) for a in self.adims]
        self.max_mix = [len(SPATIAL_DIMS) if hint is None else hint.max_mixed(a) for a in self.adims]
        self.min_util = 0.0 if hint is None else hint.min_utilization

    # -- representation -------------------------------------------------------------------------
    def flat(self, sections: Sequence[Sequence[int]]) -> list[int]:
        out: list[int] = []
        for k, s in enumerate(sections):
            if k:
                out.append(SEP)
            out.extend(s)
        return out

    def unflat(self, seq: Sequence[int]) -> list[list[int]]:
        out: list[list[int]] = [[]]
        for t in seq:
            if t == SEP:
                out.append([])
            else:
                out[-1].append(t)
        return out

    def fanouts(self, sections) -> list[int]:
        return [math.prod(self.prims[i][1] for i in sections[k]) for k in range(self.A)]

    def key(self, sections) -> tuple:
        """Canonical key of the decoded mapping (equal keys = equal mappings)."""
        sp = tuple(tuple(sorted(self._merge_spatial(sections[k]).items())) for k in range(self.A))
        tm = tuple(tuple(self._merge_temporal(sections[self.A + m])) for m in range(self.M))
        return sp, tm

    def _merge_spatial(self, sec) -> dict[str, int]:
        out: dict[str, int] = {}
        for i in sec:
            d, p = self.prims[i]
            out[d] = out.get(d, 1) * p
        return out

    def _merge_temporal(self, sec) -> list[tuple[str, int]]:
        out: list[list] = []
        for i in sec:
            d, p = self.prims[i]
            if out and out[-1][0] == d:
                out[-1][1] *= p
            else:
                out.append([d, p])
        return [(d, f) for d, f in out]

    def decode(self, sections) -> Mapping:
        """The even `Mapping` of a state (spatial per array dim, temporal innermost first)."""
        spatial = SpatialMapping({a: tuple(self._merge_spatial(sections[k]).items())
                                  for k, a in enumerate(self.adims) if sections[k]})
        loops: list[tuple[str, int]] = []
        cut: dict[str, int] = {}
        for m, mem in enumerate(self.arch.memories):
            loops.extend(self._merge_temporal(sections[self.A + m]))
            cut[mem.name] = len(loops)
        cut.pop(self.arch.memories[-1].name)
        return Mapping.even(spatial, loops, cut, self.arch)

    def check_dims(self, sections) -> None:
        """Assert that every dim's primitives multiply to its bound (each primitive exactly once)."""
        ids = sorted(i for s in sections for i in s)
        assert ids == list(range(self.n)), ids

    # -- validity --------------------------------------------------------------------------------
    def fanout_ok(self, sections) -> bool:
        return all(f <= s for f, s in zip(self.fanouts(sections), self.asize))

    def can_enter(self, sec: Sequence[int], i: int, k: int) -> bool:
        """Whether primitive ``i`` may join spatial section ``k`` (holding ``sec``) under the hint:
        its dim allowed on that array dim, the section's distinct dims still <= the max."""
        if self.hint is None:
            return True
        d = self.prims[i][0]
        if d not in self.allow[k]:
            return False
        dims = {self.prims[j][0] for j in sec}
        return d in dims or len(dims) < self.max_mix[k]

    def hint_ok(self, sections) -> bool:
        """Whether every spatial section obeys the hint (allowed dims, at most max distinct)."""
        if self.hint is None:
            return True
        for k in range(self.A):
            dims = {self.prims[i][0] for i in sections[k]}
            if len(dims) > self.max_mix[k] or not dims <= self.allow[k]:
                return False
        return True

    def utilization(self, sections) -> float:
        """Spatial utilisation: product of the array dims' fan-outs / PEs."""
        return math.prod(self.fanouts(sections)) / math.prod(self.asize)

    def over_capacity(self, sections) -> int | None:
        """Index of the innermost memory whose tiles exceed its capacity, None if all fit.

        Same tiles as `costmodel.loopnest.reference.evaluate`: the footprint of the temporal loops below the
        memory's boundary and of the spatial loops inside one instance; O at partial precision if an
        O-irrelevant loop lies above the boundary or an O-irrelevant spatial loop sits on an array
        dim the memory is private to."""
        on = [self._merge_spatial(sections[k]) for k in range(self.A)]
        o_rel = RELEVANT["O"]
        # O-irrelevant temporal primitives above each boundary: count from the top
        temporal = [self.prims[i] for m in range(self.M) for i in sections[self.A + m]]
        n_irr_total = sum(1 for d, _ in temporal if d not in o_rel)
        ext: dict[str, int] = {}
        n_irr_below = 0
        for m, mem in enumerate(self.arch.memories):
            for i in sections[self.A + m]:
                d, p = self.prims[i]
                ext[d] = ext.get(d, 1) * p
                if d not in o_rel:
                    n_irr_below += 1
            if mem.size_bits is None:
                continue
            e = dict(ext)
            for k in self.mem_inside[m]:
                for d, f in on[k].items():
                    e[d] = e.get(d, 1) * f
            total = 0
            for op in self.mem_ops[m]:
                te = footprint(op, e, self.layer)
                if op == "O":
                    partial = n_irr_total > n_irr_below or any(
                        d not in o_rel and f > 1 for k in self.mem_private[m] for d, f in on[k].items())
                    total += te * (self.bits["O"] if partial else self.bits["O_final"])
                else:
                    total += te * self.bits[op]
            if total > mem.size_bits:
                return m
        return None

    def valid(self, sections) -> bool:
        return self.fanout_ok(sections) and self.hint_ok(sections) and self.over_capacity(sections) is None

    # -- initial state and repair ------------------------------------------------------------------
    def initial(self, rng: np.random.Generator) -> list[list[int]]:
        """A valid state by greedy construction (see the module docstring, failure 1)."""
        sec: list[list[int]] = [[] for _ in range(self.S)]
        top = self.S - 1
        order = [int(i) for i in rng.permutation(self.n)]
        pool = list(order)
        default = self.arch.spatial
        # with a hint, the array dims that may unroll fewest loop dims are filled first
        fill = range(self.A) if self.hint is None else sorted(range(self.A), key=lambda k: len(self.allow[k]))
        for k in fill:
            a = self.adims[k]
            pref = {d for d, _ in default.dims.get(a, ())}
            cand = sorted(pool, key=lambda i: (self.prims[i][0] not in pref, pool.index(i)))
            f = 1
            for i in cand:
                p = self.prims[i][1]
                if f * p <= self.asize[k] and self.can_enter(sec[k], i, k):
                    sec[k].append(i)
                    f *= p
                    pool.remove(i)
                    sec[top] = list(pool)
                    if self.over_capacity(sec) is not None:
                        sec[k].pop()
                        pool.append(i)
                        f //= p
        sec[top] = list(pool)
        if not self.valid(sec):  # spatial tiles too big for some memory: drop the spatial fill
            sec = [[] for _ in range(self.S)]
            sec[top] = list(order)
        for i in [int(j) for j in rng.permutation(sec[top])]:
            sec[top].remove(i)
            for m in range(self.M - 1):
                sec[self.A + m].append(i)
                if self.over_capacity(sec) is None:
                    break
                sec[self.A + m].pop()
            else:
                sec[top].append(i)
        return sec

    def repair(self, sections) -> tuple[list[list[int]], bool]:
        """A valid state close to ``sections`` (see the module docstring, failure 3).

        Returns (state, ok); ok False if the step cap was reached (the caller rejects it)."""
        sec = [list(s) for s in sections]
        top = self.S - 1
        for k in range(self.A):
            if self.hint is not None:  # what could not have entered goes to DRAM, left to right
                keep: list[int] = []
                for i in sec[k]:
                    (keep if self.can_enter(keep, i, k) else sec[top]).append(i)
                sec[k] = keep
            while math.prod(self.prims[i][1] for i in sec[k]) > self.asize[k]:
                sec[top].append(sec[k].pop())
        for _ in range(4 * self.n + 16):
            m = self.over_capacity(sec)
            if m is None:
                return sec, True
            # boundary of memory m = primitives in temporal sections 0..m; move it inward by one
            j = m
            while j >= 0 and not sec[self.A + j]:
                j -= 1
            if j < 0:  # boundary already 0: move a spatial primitive out
                full = max((k for k in range(self.A) if sec[k]), default=None)
                if full is None:
                    return sec, False
                sec[top].append(sec[full].pop())
                continue
            sec[self.A + m + 1].insert(0, sec[self.A + j].pop())
        return sec, self.over_capacity(sec) is None

    # -- random states (baselines) -----------------------------------------------------------------
    def random_state(self, rng: np.random.Generator) -> list[list[int]]:
        """A random state: each primitive (random order) to a uniformly random section among the
        temporal ones and the spatial ones it still fits (fan-out) and may enter (hint), then each
        section shuffled.
        Capacity is not considered (the cost model decides validity)."""
        sec: list[list[int]] = [[] for _ in range(self.S)]
        fan = [1] * self.A
        for i in rng.permutation(self.n).tolist():
            p = self.prims[i][1]
            opts = [k for k in range(self.A) if fan[k] * p <= self.asize[k] and self.can_enter(sec[k], i, k)]
            opts += list(range(self.A, self.S))
            k = opts[int(rng.integers(len(opts)))]
            if k < self.A:
                fan[k] *= p
            sec[k].append(i)
        return [[s[j] for j in rng.permutation(len(s)).tolist()] for s in sec]

    # -- moves ---------------------------------------------------------------------------------------
    def propose(self, sections, rng: np.random.Generator, p_block: float) -> tuple[list[list[int]], str]:
        """One move on the flat list (block / swap / move, see the module docstring). After a block
        move ``self.last_block`` holds the moved primitive ids (in their new, contiguous order)."""
        seq = self.flat(sections)
        L = len(seq)
        u = rng.random()
        if u < p_block:
            kind = "block"
            i = self._random_prim_pos(seq, rng)
            d = self.prims[seq[i]][0]
            lo = i
            while lo > 0 and seq[lo - 1] != SEP:
                lo -= 1
            hi = i
            while hi < L - 1 and seq[hi + 1] != SEP:
                hi += 1
            block = [t for t in seq[lo:hi + 1] if self.prims[t][0] == d]
            rest = seq[:lo] + [t for t in seq[lo:hi + 1] if self.prims[t][0] != d] + seq[hi + 1:]
            j = int(rng.integers(len(rest) + 1))
            seq = rest[:j] + block + rest[j:]
            self.last_block = list(block)
        elif u < p_block + (1 - p_block) / 2:
            kind = "swap"
            for _ in range(1000):
                i, j = (int(x) for x in rng.integers(L, size=2))
                a, b = seq[i], seq[j]
                if a == b or (a != SEP and b != SEP and self.prims[a] == self.prims[b]):
                    continue
                seq[i], seq[j] = b, a
                break
        else:
            kind = "move"
            i = self._random_prim_pos(seq, rng)
            t = seq.pop(i)
            j = int(rng.integers(L))
            seq.insert(j, t)
        return self.unflat(seq), kind

    @staticmethod
    def _random_prim_pos(seq, rng) -> int:
        pos = [k for k, t in enumerate(seq) if t != SEP]
        return pos[int(rng.integers(len(pos)))]

    # -- evaluation ------------------------------------------------------------------------------------
    def evaluate(self, sections, objective: str):
        """(objective value, CostReport) of a state with the cost model; +inf below the hint's
        ``min_utilization``."""
        rep = evaluate(self.layer, self.arch, self.decode(sections))
        if self.min_util > 0 and self.utilization(sections) < self.min_util - 1e-12:
            return math.inf, rep
        return objective_value(rep, objective), rep


def problem_space(problem: LayerProblem, params: _Mapping[str, Any]) -> PrimitiveSpace:
    """The `PrimitiveSpace` of ``problem``, under its accelerator's spatial hint unless
    ``params["hint"]`` is False (an accelerator without a hint: unconstrained)."""
    hint = problem.arch.spatial_hint if params.get("hint", True) else None
    return PrimitiveSpace(problem.layer, problem.arch, hint)


def make_fullspace_result(space: PrimitiveSpace, problem: LayerProblem, mapper: str, engine: str, best,
                          value: float, report, evaluations: int, wall_s: float, seed: int | None,
                          history=None, extra: dict | None = None) -> SearchResult:
    """A `SearchResult` of a full-mapspace search; ``extra['mapping']`` the best `Mapping` as a dict."""
    extra = dict(extra or {})
    if best is None or not math.isfinite(value):
        return SearchResult(mapper, engine, problem.objective, math.inf, math.inf, math.inf,
                            int(evaluations), wall_s, seed, history, extra)
    mp = space.decode(best)
    extra["mapping"] = mp.to_dict()
    return SearchResult(mapper, engine, problem.objective, float(value), float(report.energy_pj),
                        float(report.latency_cycles), int(evaluations), wall_s, seed, history, extra,
                        detail=LoopNestDetail(tuple((str(d), int(f)) for d, f in mp.temporal.loops)))


def anneal_chain(space: PrimitiveSpace, objective: str, rng: np.random.Generator, iterations: int,
                 t0: float, rho: float, p_block: float) -> dict[str, Any]:
    """One primitive-list annealing chain (see the module docstring). Returns a dict with the
    best state/value/report, the initial state and value, evaluations, counters and history."""
    cur = space.initial(rng)
    v, rep = space.evaluate(cur, objective)
    evals = 1
    init_state, v_init = [list(s) for s in cur], v
    if not math.isfinite(v):  # construction disagrees with the cost model (should not happen)
        return dict(best=None, value=math.inf, report=rep, init=init_state, v0=v, evaluations=evals, accepted=0,
                    valid_raw=0, repaired=0, rejected_invalid=0, moves={}, history=np.array([v]))
    best, best_v, best_rep = cur, v, rep
    memo = {space.key(cur): (v, rep)}
    hist = [v]
    accepted = valid_raw = repaired = rejected = 0
    moves = {k: 0 for k in MOVES}
    moves_acc = {k: 0 for k in MOVES}
    log_u = np.log(np.maximum(rng.random(iterations), 1e-300)).tolist()
    t = t0
    for it in range(iterations):
        prop, kind = space.propose(cur, rng, p_block)
        moves[kind] += 1
        if space.valid(prop):
            valid_raw += 1
            ok = True
        else:
            prop, ok = space.repair(prop)
            repaired += 1
        if not ok:
            rejected += 1
            hist.append(math.inf)
            t *= rho
            continue
        k = space.key(prop)
        got = memo.get(k)
        if got is None:
            got = memo[k] = space.evaluate(prop, objective)
            evals += 1
        vn, rn = got
        hist.append(vn)
        if math.isfinite(vn) and log_u[it] < log_accept_arg(v, vn, v, t, "log"):
            cur, v = prop, vn
            accepted += 1
            moves_acc[kind] += 1
            if beats(vn, rn, best_v, best_rep, objective, space.arch):  # latency ties: energy, then DRAM bits
                best, best_v, best_rep = prop, vn, rn
        elif not math.isfinite(vn):
            rejected += 1
        t *= rho
    return dict(best=best, value=best_v, report=best_rep, init=init_state, v0=v_init, evaluations=evals,
                accepted=accepted, valid_raw=valid_raw, repaired=repaired, rejected_invalid=rejected,
                moves=moves, moves_accepted=moves_acc, history=np.array(hist))


class PrimitiveSAMapper(LayerMapper):
    """SA over the primitive list of the full mapspace (tiling, order and spatial unrolling at once).

    `units`: one WorkUnit(kind="sa") per chain, seeds from `chain_seeds` (seed, chains); `run` runs
    one chain; `reduce` = `best_of` (latency ties by energy); `search` = all units in-process, reduced.
    """

    name = "primitive_sa"
    version = "2"  # 2: obeys the accelerator's spatial hint (module docstring)
    latency_ties = 1  # best state and chains: latency ties broken by energy, then DRAM bits (module docstring)
    kind = "loopnest"
    params = (
        Param("iterations", "int", 2000, "SA proposals per chain", low=0, high=10**8),
        Param("t0", "float", 0.05, "initial temperature T0 (on V = ln cost)", low=1e-12),
        Param("rho", "float", 0.999, "geometric cooling factor, T_{i+1} = rho T_i", low=0.0, high=1.0),
        Param("chains", "int", 1, "independent SA chains, each its own work unit and seed", low=1, high=10**6),
        Param("seed", "int", 0, "seed; the chains' seeds are spawned from it (SeedSequence.spawn)", low=0),
        Param("p_block", "float", 0.3, "probability of a block move (all primitives of one dim in one level); "
              "swap and single move share the rest equally", low=0.0, high=1.0),
        HINT_PARAM,
    )

    def units(self, problem: LayerProblem, params: _Mapping[str, Any]) -> list[WorkUnit]:
        seeds = chain_seeds(int(params.get("seed", 0)), int(params.get("chains", 1)))
        return [WorkUnit(kind="sa", seed=s, spec={"chain": k}) for k, s in enumerate(seeds)]

    def run(self, problem: LayerProblem, unit: WorkUnit, params: _Mapping[str, Any]) -> SearchResult:
        """One chain. ``extra``: mapping, valid_rate (raw proposals valid before repair), v0 (initial
        value), initial_mapping, accepted, repaired, rejected_invalid, moves, chain, n_primitives."""
        if unit.kind != "sa":
            raise ValueError(f"primitive_sa cannot run a work unit of kind {unit.kind!r}")
        t_start = time.perf_counter()
        space = problem_space(problem, params)
        iters = int(params.get("iterations", 2000))
        r = anneal_chain(space, problem.objective, np.random.default_rng(unit.seed), iters,
                         float(params.get("t0", 0.05)), float(params.get("rho", 0.999)),
                         float(params.get("p_block", 0.3)))
        extra = {"valid_rate": r["valid_raw"] / iters if iters else 1.0, "v0": r["v0"],
                 "initial_mapping": space.decode(r["init"]).to_dict(), "accepted": r["accepted"],
                 "repaired": r["repaired"], "rejected_invalid": r["rejected_invalid"], "moves": r["moves"],
                 "moves_accepted": r.get("moves_accepted", {}), "chain": unit.spec.get("chain", 0),
                 "n_primitives": space.n, "history_kind": "proposed"}
        return make_fullspace_result(space, problem, self.name, "sa", r["best"], r["value"], r["report"],
                                     r["evaluations"], time.perf_counter() - t_start, unit.seed, r["history"], extra)



PRIMITIVE_SA = PrimitiveSAMapper()
