"""SALSA's annealing chains (Jung et al., AICAS 2023, eqs. 2-3): the initial state, the proposals,
the acceptance and the bookkeeping of one chain or of several in lockstep, as
`mappers.loop_order.salsa` describes them (its module docstring: the annealer, the normalisations,
the mixed moves). The `SalsaMapper` runs them; `sweep tune` and the benchmarks call `anneal` directly.

Two paths with the same trajectory for the same seeds: on the compiled loop-nest kernel the chains
run in `mappers.loop_order.chain.run_chains` (moves, acceptance and memo compiled with the kernel),
on any other evaluator (the interpreted kernel, test stubs) in Python (`_anneal_one`,
`_anneal_lockstep`). ``tests/mappers/loop_order/test_salsa_chain.py`` holds them equal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from mappers.annealing import log_accept_arg
from mappers.base import objective_index
from mappers.loop_order.lpf import expand
from mappers.loop_order.moves import BLOCK_MAX, MoveStream, PairStream, row_hashes

__all__ = ["INIT_TRIES", "MOVES", "NORMALISE", "ChainResult", "anneal", "merged_evaluations", "random_orderings",
           "single_row"]

#: Random orderings tried at most for a valid initial state.
INIT_TRIES = 1000

#: The normalisations of eq. 3's cost (`mappers.loop_order.salsa`, "Normalisation").
NORMALISE = ("initial", "best", "log", "zigzag")
#: Proposal kinds: SALSA's swap (eq. 2) only, or swaps mixed with block moves and reversals.
MOVES = ("swap", "mixed")


def random_orderings(rng: np.random.Generator, counts, size: int) -> np.ndarray:
    """``size`` uniformly random orderings of the multiset ``counts``, int64 of shape (size, n).

    Each row uses n doubles of ``rng`` (sorted keys), so a stream drawn in pieces equals one drawn
    at once.
    """
    base = expand(counts)
    keys = rng.random((size, len(base)))
    return base[np.argsort(keys, axis=1, kind="stable")]



@dataclass
class ChainResult:
    """One annealing chain.

    ``value`` best objective (+inf: no valid state found); ``ordering`` its type ids (n,) or None;
    ``v0`` the initial state's objective; ``evaluations`` evaluator rows (initial tries + one per
    proposal not evaluated before by this chain; repeats are looked up); ``accepted`` accepted
    moves; ``history`` (iterations + 1,) objective of the initial state then of every *proposed*
    state (accepted or not), in evaluation order; ``seen`` the orderings the chain evaluated
    (tuple -> objective; None if it did not run), which the final descent looks up: read it with
    `memo` (a compiled chain builds it on first use from ``trace``).
    """

    value: float
    ordering: np.ndarray | None
    v0: float
    evaluations: int
    accepted: int
    history: np.ndarray
    seen: dict | None = field(default=None, repr=False, compare=False)
    trace: tuple | None = field(default=None, repr=False, compare=False)

    def memo(self) -> dict | None:
        """``seen``; for a compiled chain (``trace``: its orderings (iterations + 1, n), the initial
        state first, and their objectives) built on first use, the same dict as a Python chain's."""
        if self.seen is None and self.trace is not None:
            orderings, values = self.trace
            self.seen = dict(zip(map(tuple, orderings.tolist()), values.tolist()))
        return self.seen


def merged_evaluations(chains: Sequence[ChainResult]) -> tuple[np.ndarray, np.ndarray] | None:
    """What the chains evaluated, each ordering once, as arrays: (orderings (m, n) int64, objectives
    (m,)), in the order of the dict their memos merge into (``seen.update(chain.memo())`` chain by
    chain: first evaluations first). Built from the compiled chains' traces without tuples (rows
    matched by `mappers.loop_order.moves.row_hashes`, confirmed row by row). None when a chain ran
    in Python (it has a memo dict, no trace), when no chain ran, or when a match is not confirmed
    (the dict path then gives the answer)."""
    traces = []
    for r in chains:
        if r.trace is not None:
            traces.append(r.trace)
        elif r.seen is not None:
            return None
    if not traces:
        return None
    o = np.concatenate([t[0] for t in traces])
    v = np.concatenate([t[1] for t in traces])
    _, first, inv = np.unique(row_hashes(o), return_index=True, return_inverse=True)
    at = first[inv]
    if not ((o == o[at]).all() and (v == v[at]).all()):
        return None
    first.sort()
    return o[first], v[first]


def _initial(ev, objective: str, rng: np.random.Generator):
    """A random valid ordering: first of up to INIT_TRIES random draws (1, then batches of 111)."""
    tried = 0
    size = 1
    while tried < INIT_TRIES:
        cand = random_orderings(rng, ev.counts, size)
        vals = ev.objective(cand, objective)
        tried += size
        ok = np.flatnonzero(np.isfinite(vals))
        if len(ok):
            return cand[ok[0]], float(vals[ok[0]]), tried
        size = min(111, INIT_TRIES - tried)
    return cand[0], float("inf"), tried


def anneal(ev, objective: str, rngs: Sequence[np.random.Generator], iterations: int = 1000, t0: float = 0.05,
           rho: float = 0.999, normalise: str = "log", moves: str = "swap",
           swap_share: float = 1.0 / 3.0) -> list[ChainResult]:
    """Run ``len(rngs)`` annealing chains; several run in lockstep (one evaluator call per iteration).

    Chain k uses only ``rngs[k]``, in a fixed order (initial state, acceptance uniforms, pair
    indices), and the same floating-point operations either way, so a chain gives exactly the same
    result alone (scalar fast path) or in lockstep with others.

    Acceptance (eq. 3) is tested as log(u) < (V - V') / T with u uniform in [0, 1), i.e.
    u < exp((V - V') / T); V normalised as ``normalise`` says (see the module docstring).
    Invalid proposals (+inf) are always rejected.

    Args:
        ev: ordering evaluator (``counts``, ``objective(orderings, objective)``).
        objective: "energy" | "latency" | "edp".
        rngs: one Generator per chain.
        iterations: I, proposals per chain.
        t0, rho: initial temperature and geometric cooling factor, T_i = t0 * rho^i, i = 0 .. I-1.
        normalise: "log" | "initial" | "best" | "zigzag" (see the module docstring).
        moves: "swap" (eq. 2) or "mixed" (swaps with probability ``swap_share``, else block moves
            and segment reversals in equal shares; see the module docstring).
        swap_share: share of swaps among "mixed" proposals, in [0, 1].

    Returns:
        One `ChainResult` per chain.

    Raises:
        ValueError: unknown ``normalise``.
    """
    if normalise not in NORMALISE:
        raise ValueError(f"normalise must be one of {NORMALISE}, got {normalise!r}")
    if moves not in MOVES:
        raise ValueError(f"moves must be one of {MOVES}, got {moves!r}")
    counts = np.asarray(ev.counts)
    n = int(counts.sum())
    init = [_initial(ev, objective, r) for r in rngs]
    if (counts > 0).sum() < 2 or iterations == 0:
        return [ChainResult(x, o if np.isfinite(x) else None, x, k, 0, np.array([x])) for o, x, k in init]
    temps = (t0 * rho ** np.arange(iterations)).tolist()
    iu, ju = np.triu_indices(n, 1)
    pairs = list(zip(iu.tolist(), ju.tolist()))
    draws: list[tuple[np.ndarray, PairStream | MoveStream] | None] = []  # None: no valid start
    for (o, x, k), r in zip(init, rngs):
        if not np.isfinite(x):
            draws.append(None)
            continue
        with np.errstate(divide="ignore"):
            log_u = np.log(r.random(iterations))
        stream = (PairStream(r, pairs, 2 * iterations + 16) if moves == "swap"
                  else MoveStream(r, n, 2 * iterations + 16, swap_share))
        draws.append((log_u, stream))
    if compiled(ev):
        return _anneal_compiled(ev, objective, init, draws, temps, normalise, moves == "mixed")
    if len(rngs) == 1:
        (o, x, k), = init
        if draws[0] is None:
            return [ChainResult(x, None, x, k, 0, np.array([x]))]
        return [_anneal_one(ev, objective, o, x, k, draws[0], temps, normalise)]
    return _anneal_lockstep(ev, objective, init, draws, temps, normalise)


def compiled(ev) -> bool:
    """`mappers.loop_order.chain.compiled`, imported only for an evaluator on the "numba" backend
    (which has loaded the kernel already: other kinds of accelerator never import numba)."""
    if getattr(ev, "backend", None) != "numba":
        return False
    from mappers.loop_order.chain import compiled as on_kernel
    return on_kernel(ev)


def _anneal_compiled(ev, objective, init, draws, temps, normalise, mixed: bool) -> list[ChainResult]:
    """The live chains in `mappers.loop_order.chain.run_chains` (compiled, the same trajectory as
    `_anneal_one` / `_anneal_lockstep`), each buffer extended from its stream's Generator whenever
    it runs out; each chain's memo (`ChainResult.memo`) built from its proposals when asked for."""
    from mappers.loop_order.chain import NORMALISE_CODE, run_chains
    live = [k for k, d in enumerate(draws) if d is not None]
    out: list[ChainResult] = [ChainResult(x, None, x, e, 0, np.array([x])) for _, x, e in init]
    if not live:
        return out
    R, iters = len(live), len(temps)
    streams = [draws[k][1] for k in live]
    cur = np.array([init[k][0] for k in live], dtype=np.int64)
    n = cur.shape[1]
    v = np.array([init[k][1] for k in live])
    ref, best_v, best_o = v.copy(), v.copy(), cur.copy()
    accepted, evals = np.zeros(R, dtype=np.int64), np.zeros(R, dtype=np.int64)
    hist = np.empty((iters + 1, R))
    hist[0] = v
    props = np.empty((iters + 1, R, n), dtype=np.int64)
    props[0] = cur
    tab = np.full((R, 1 << (2 * iters + 2).bit_length()), -1, dtype=np.int64)
    log_u = np.array([draws[k][0] for k in live], dtype=np.float64).reshape(R, iters)  # (R, I)
    pairs = np.array(streams[0].pairs if not mixed else [(0, 0)], dtype=np.int64).reshape(-1, 2)
    pos = np.zeros(R, dtype=np.int64)
    share = float(streams[0].share) if mixed else 0.0
    row, res, t = np.empty((1, n), dtype=np.int64), np.empty((4, 1)), np.asarray(temps, dtype=np.float64)
    start = 0
    while start >= 0:
        end = np.array([len(st.buf) for st in streams], dtype=np.int64)
        buf = np.zeros((R, int(end.max())), dtype=np.float64 if mixed else np.int64)
        for r, st in enumerate(streams):
            buf[r, :end[r]] = st.buf
        bufi, buff = (np.zeros((R, 1), dtype=np.int64), buf) if mixed else (buf, np.zeros((R, 1)))
        start = run_chains(start, cur, v, ref, best_v, best_o, accepted, evals, hist, props, tab, log_u, t,
                           NORMALISE_CODE[normalise], mixed, bufi, buff, pos, end, pairs[:, 0].copy(),
                           pairs[:, 1].copy(), share, BLOCK_MAX, objective_index(objective), row, res,
                           *ev._args, ev._wi, ev._wf)
        if start >= 0:
            streams[start % R].more()
    for r, k in enumerate(live):
        out[k] = ChainResult(float(best_v[r]), best_o[r].copy(), init[k][1], init[k][2] + int(evals[r]),
                             int(accepted[r]), hist[:, r].copy(), None, (props[:, r], hist[:, r]))
    return out


def single_row(ev, objective: str) -> Callable[[list], float]:
    """Objective of one ordering given as a list: the evaluator's scalar ``evaluate_one`` if it
    has one (same numbers as the batched path, without NumPy per call), else a 1-row batch."""
    one = getattr(ev, "evaluate_one", None)
    if one is not None:
        k = objective_index(objective)
        return lambda o: float(one(o)[k])
    return lambda o: float(ev.objective(np.array([o], dtype=np.int64), objective)[0])


def _anneal_one(ev, objective, o, x, k, draws, temps, normalise) -> ChainResult:
    """One chain, scalar bookkeeping around single-ordering evaluator calls.

    Proposals already evaluated by this chain are looked up (same value, no evaluator call)."""
    log_u, stream = draws[0].tolist(), draws[1]
    f = single_row(ev, objective)
    cur = o.tolist()
    v = v0 = x
    best_v, best_o = x, tuple(cur)
    memo = {best_o: x}
    ref = v0
    hist = [x]
    accepted = 0
    evals = k
    isinf = math.isinf
    for it in range(len(temps)):
        p = stream.propose(cur)
        key = tuple(p)
        vn = memo.get(key)
        if vn is None:
            vn = memo[key] = f(p)
            evals += 1
        hist.append(vn)
        if not isinf(vn) and log_u[it] < log_accept_arg(v, vn, ref, temps[it], normalise):
            cur, v = p, vn
            accepted += 1
            if vn < best_v:
                best_v, best_o = vn, key
                if normalise == "best":
                    ref = best_v
    return ChainResult(best_v, np.array(best_o, dtype=np.int64), v0, evals, accepted, np.array(hist), memo)


def _anneal_lockstep(ev, objective, init, draws, temps, normalise) -> list[ChainResult]:
    """Several chains, one batched evaluator call per iteration for the proposals not seen before
    by their chain (dead chains, without a valid initial state, do not run)."""
    live = [k for k, d in enumerate(draws) if d is not None]
    log_u = {k: draws[k][0].tolist() for k in live}
    iters = len(temps)
    cur = [init[k][0].tolist() for k in live]
    v = [init[k][1] for k in live]
    ref = list(v)
    best_v = list(v)
    best_o = [tuple(o) for o in cur]
    memo = [{best_o[r]: v[r]} for r in range(len(live))]
    evals = [init[k][2] for k in live]
    hist = np.empty((iters + 1, len(live)))
    hist[0] = v
    accepted = [0] * len(live)
    props: list[list] = [[] for _ in live]
    keys = [()] * len(live)
    vals = [0.0] * len(live)
    isinf = math.isinf
    for it in range(iters):
        todo = []
        for r, k in enumerate(live):
            props[r] = p = draws[k][1].propose(cur[r])
            keys[r] = key = tuple(p)
            got = memo[r].get(key)
            if got is None:
                todo.append(r)
            else:
                vals[r] = got
        if todo:
            out = ev.objective(np.array([keys[r] for r in todo], dtype=np.int64), objective).tolist()
            for r, vn in zip(todo, out):
                vals[r] = memo[r][keys[r]] = float(vn)
                evals[r] += 1
        hist[it + 1] = vals
        t = temps[it]
        for r in range(len(live)):
            vn = vals[r]
            if not isinf(vn) and log_u[live[r]][it] < log_accept_arg(v[r], vn, ref[r], t, normalise):
                cur[r], v[r] = props[r], vn
                accepted[r] += 1
                if vn < best_v[r]:
                    best_v[r], best_o[r] = vn, keys[r]
                    if normalise == "best":
                        ref[r] = vn
    out = []
    for k in range(len(init)):
        o, x, e = init[k]
        if k in live:
            r = live.index(k)
            out.append(ChainResult(best_v[r], np.array(best_o[r], dtype=np.int64), x, evals[r], accepted[r],
                                   hist[:, r].copy(), memo[r]))
        else:
            out.append(ChainResult(x, None, x, e, 0, np.array([x])))
    return out
