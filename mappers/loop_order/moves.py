"""Moves on LPF orderings, their random proposal streams, and a first-improvement descent.

An ordering is a list of LPF type ids, innermost first (`mappers.loop_order.lpf`). Three moves:

* ``swap(o, i, j)``: SALSA's neighbourhood (Jung et al., AICAS 2023, eq. 2);
* ``block_move(o, i, L, j)``: a run of L consecutive LPFs taken out and put back at position j of
  the rest (L = 1 is an insertion);
* ``reverse(o, i, j)``: the segment o[i:j] reversed.

`PairStream` draws swaps (eq. 2), `MoveStream` the "mixed" proposals of `mappers.loop_order.salsa`.
`neighbourhood` lists every distinct ordering one move away, and `descend` walks it down to a local
optimum (SALSA's final descent, not in the paper; `mappers.loop_order.salsa`, "Final descent").
`descend_ends` runs the descents of version 4 from several starting orderings, stopping those that
join an earlier one; `fit_surrogate` fits the scan order they use.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

__all__ = ["BLOCK_MAX", "swap", "block_move", "reverse", "PairStream", "MoveStream", "move_positions", "neighbours", "neighbour_rows", "row_hashes",
           "neighbourhood", "descend",
           "descend_ends", "fit_surrogate", "fit_surrogate_rows", "Evaluated", "SURROGATE_RIDGE"]

#: Ridge penalty of `fit_surrogate` (on indicator features; only keeps the normal equations regular).
SURROGATE_RIDGE = 1e-3

#: Longest run of LPFs a block move carries.
BLOCK_MAX = 4


def swap(o: list, i: int, j: int) -> list:
    """``o`` with positions i and j exchanged (a new list)."""
    p = list(o)
    p[i], p[j] = p[j], p[i]
    return p


def block_move(o: list, i: int, length: int, j: int) -> list:
    """``o[i:i+length]`` taken out and inserted before position j of what remains (0 <= j <= n - length)."""
    block, rest = o[i:i + length], o[:i] + o[i + length:]
    return rest[:j] + block + rest[j:]


def reverse(o: list, i: int, j: int) -> list:
    """``o`` with the segment o[i:j] reversed (a new list)."""
    p = list(o)
    p[i:j] = p[i:j][::-1]
    return p


class PairStream:
    """Swap proposals (eq. 2) of one chain: pair indices drawn in chunks from its Generator."""

    def __init__(self, rng: np.random.Generator, pairs, chunk: int) -> None:
        self.rng, self.pairs, self.chunk = rng, pairs, chunk
        self.buf: list[int] = rng.integers(0, len(pairs), size=chunk).tolist()
        self.pos = 0

    def more(self) -> None:
        """Extend the buffer by one chunk of draws."""
        self.buf.extend(self.rng.integers(0, len(self.pairs), size=self.chunk).tolist())

    def propose(self, o: list) -> list:
        """``o`` with a uniformly random pair (i, j), o[i] != o[j], swapped (rejection sampling)."""
        buf, pos, pairs = self.buf, self.pos, self.pairs
        while True:
            if pos == len(buf):
                self.more()
            i, j = pairs[buf[pos]]
            pos += 1
            if o[i] != o[j]:
                self.pos = pos
                return swap(o, i, j)


class MoveStream:
    """Mixed proposals of one chain (``moves="mixed"``), four uniforms of its Generator per draw:
    a swap of positions i, j with probability ``swap_share``; else, in equal shares, a block move
    (a run of L = 1..`BLOCK_MAX` consecutive LPFs taken out and put back at another position) or a
    segment reversal (o[i:j] reversed). A draw that leaves the ordering unchanged is redrawn."""

    def __init__(self, rng: np.random.Generator, n: int, chunk: int, swap_share: float) -> None:
        self.rng, self.n, self.chunk, self.share = rng, n, 4 * chunk, swap_share
        self.buf: list[float] = rng.random(self.chunk).tolist()
        self.pos = 0

    def more(self) -> None:
        """Extend the buffer by one chunk of uniforms."""
        self.buf.extend(self.rng.random(self.chunk).tolist())

    def propose(self, o: list) -> list:
        """A new ordering (a list) one mixed move away from ``o``."""
        n = self.n
        while True:
            if self.pos + 4 > len(self.buf):
                self.more()
            u0, u1, u2, u3 = self.buf[self.pos:self.pos + 4]
            self.pos += 4
            if u0 < self.share:
                p = swap(o, int(u1 * n), int(u2 * n))
            elif u0 < self.share + (1.0 - self.share) / 2.0:
                length = 1 + int(u1 * min(BLOCK_MAX, n - 1))
                i = int(u2 * (n - length + 1))
                p = block_move(o, i, length, int(u3 * (n - length + 1)))
            else:
                i, j = sorted((int(u1 * (n + 1)), int(u2 * (n + 1))))
                p = reverse(o, i, j)
            if p != o:
                return p


@functools.lru_cache(maxsize=64)
def move_positions(n: int, block_max: int = BLOCK_MAX) -> np.ndarray:
    """Every move of `neighbourhood` on n positions as the positions it reads, int64 (m, n): the
    ordering one move away from o is ``o[P[k]]`` (a move permutes positions, whatever o holds), in
    `neighbourhood`'s order (swaps i < j, block moves by length, start and target, reversals)."""
    ident = list(range(n))
    rows = [swap(ident, i, j) for i in range(n) for j in range(i + 1, n)]
    rows += [block_move(ident, i, length, j) for length in range(1, min(block_max, n - 1) + 1)
             for i in range(n - length + 1) for j in range(n - length + 1)]
    rows += [reverse(ident, i, j) for i in range(n + 1) for j in range(i + 2, n + 1)]
    out = np.array(rows, dtype=np.int64).reshape(len(rows), n)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=64)
def _hash_weights(n: int) -> np.ndarray:
    """Fixed odd 64-bit multipliers of `row_hashes` for rows of n entries."""
    w = np.random.default_rng(0x5A15A).integers(1, 2**63, size=n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    w.setflags(write=False)
    return w


def row_hashes(rows: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of ``rows`` (int, (m, n)): sum_i rows[:, i] * w_i modulo 2^64 with
    fixed odd multipliers w. Equal rows hash equal; a match is only a candidate (callers confirm it)."""
    return rows.astype(np.uint64) @ _hash_weights(rows.shape[1])   # (an integer product wraps mod 2^64)


def neighbour_rows(o) -> tuple[np.ndarray, np.ndarray]:
    """`neighbours` of ``o`` as (orderings (m, n) int64, their `row_hashes` (m,)), without building
    tuples: every move of `move_positions` applied at once, the first of equal rows kept (found by
    hash, each repeat confirmed equal to the first of its hash; the dictionary path on a collision),
    ``o`` dropped."""
    a = np.asarray(o, dtype=np.int64)
    n = a.shape[0]
    if n < 2:
        nb = neighbours(o)[1]
        return nb, row_hashes(nb)
    au = a.astype(np.uint64)
    w = _hash_weights(n)
    rows_u = au[move_positions(n)]
    rows = rows_u.view(np.int64)             # (type ids are >= 0: the same bits)
    h = rows_u @ w                           # `row_hashes`
    order = np.argsort(h)
    hs = h[order]
    new = np.empty(len(hs), dtype=bool)
    new[0] = True
    np.not_equal(hs[1:], hs[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    first = np.minimum.reduceat(order, starts)   # each hash's first row
    rep = np.repeat(first, np.diff(np.append(starts, len(hs))))
    rest = ~new
    if not (rows[order[rest]] == rows[rep[rest]]).all():   # two distinct rows of one hash: exact path
        nb = neighbours(o)[1]
        return nb, row_hashes(nb)
    first.sort()
    same = np.flatnonzero(h[first] == au @ w)
    drop = same[(rows[first[same]] == a).all(axis=1)]
    if drop.size:
        first = np.delete(first, drop)
    return rows[first], h[first]


def neighbours(o, block_max: int = BLOCK_MAX) -> tuple[list[tuple], np.ndarray]:
    """`neighbourhood` of ``o`` and the same orderings as an int64 array (one row each): every
    move of `move_positions` applied at once, the first of equal orderings kept, ``o`` dropped."""
    a = np.asarray(o, dtype=np.int64)
    found = dict.fromkeys(map(tuple, a[move_positions(a.shape[0], block_max)].tolist()))
    found.pop(tuple(a.tolist()), None)
    nb = list(found)
    return nb, np.array(nb, dtype=np.int64).reshape(len(nb), a.shape[0])


def neighbourhood(o: list, block_max: int = BLOCK_MAX) -> list[tuple]:
    """Every distinct ordering one move away from ``o`` (swaps, block moves of 1..``block_max``
    LPFs, reversals), each once, ``o`` itself excluded, in a fixed order (swaps, then block moves
    by length, then reversals; an ordering reached by several moves at its first). The set
    `MoveStream` draws from (with ``block_max`` = `BLOCK_MAX`). Computed by `neighbours`."""
    return neighbours(o, block_max)[0]


def _same(a: float, b: float) -> bool:
    """Equal costs to a relative 1e-12 (the plateau test of `descend_ends`)."""
    return abs(a - b) <= 1e-12 * abs(b)


def fit_surrogate(seen: dict[tuple, float], ntypes: int, ridge: float = SURROGATE_RIDGE) -> np.ndarray | None:
    """Weights W (n, ntypes) of a linear surrogate of ln(cost): ln cost(o) ~ c + sum_i W[i, o[i]].

    Ridge regression (penalty ``ridge`` on every coefficient, intercept included) of the log of the
    finite, positive objectives in ``seen`` (ordering -> objective) on position x type indicators
    (`fit_surrogate_rows` of its items in order). No evaluations; None when ``seen`` holds no such
    ordering."""
    keys = [k for k, v in seen.items() if 0.0 < v < np.inf]
    if not keys:
        return None
    return fit_surrogate_rows(np.array(keys, dtype=np.int64), np.array([seen[k] for k in keys]), ntypes, ridge)


def fit_surrogate_rows(orderings: np.ndarray, values: np.ndarray, ntypes: int,
                       ridge: float = SURROGATE_RIDGE) -> np.ndarray | None:
    """`fit_surrogate` of the rows ``orderings`` (m, n) with objectives ``values`` (m,), those
    neither finite nor positive left out. The normal equations: the indicators' counts X'X exact
    (a float32 product of 0/1 entries, each count below 2^24), X'y by ``np.bincount`` (sums in a fixed
    order: the rows'); solved once, (n * ntypes + 1)^2."""
    ok = (values > 0.0) & (values < np.inf)
    if not ok.any():
        return None
    o = orderings[ok]
    y = np.log(values[ok])
    m, n = o.shape
    d = n * ntypes + 1
    idx = np.hstack([np.arange(n) * ntypes + o, np.full((m, 1), n * ntypes)])
    if m < 1 << 24:   # X'X of the 0/1 indicators X in float32: exact counts (each < 2^24), by BLAS
        x = np.zeros((m, d), dtype=np.float32)
        np.put_along_axis(x, idx, 1.0, axis=1)
        a = (x.T @ x).astype(np.float64)
    else:
        a = np.bincount((idx[:, :, None] * d + idx[:, None, :]).ravel(), minlength=d * d).reshape(d, d).astype(np.float64)
    b = np.bincount(idx.ravel(), weights=np.repeat(y, n + 1), minlength=d)
    w = np.linalg.solve(a + ridge * np.eye(d), b)
    return w[:-1].reshape(n, ntypes)


class Evaluated:
    """The orderings evaluated so far and their objectives, for the final descent: ordering tuple ->
    objective, as `descend` reads a dict (``get``, ``seen[q] = value``), without building tuples
    for what the chains evaluated. Those come as arrays (`mappers.loop_order.annealer.merged_evaluations`:
    distinct rows) and are found by `row_hashes` (``lookup``, given the row's hash; a hash match is
    confirmed row by row); what the descent adds is kept in a dict."""

    def __init__(self, orderings: np.ndarray, values: np.ndarray) -> None:
        self.rows, self.values = orderings, values.tolist()
        self.index = dict(zip(row_hashes(orderings).tolist(), range(len(orderings))))
        self.added: dict[tuple, float] = {}

    def lookup(self, q: tuple, h: int) -> float | None:
        """The objective of ordering ``q`` whose `row_hashes` value is ``h``, or None."""
        i = self.index.get(h)
        if i is not None and tuple(self.rows[i].tolist()) == q:
            return self.values[i]
        return self.added.get(q)

    def get(self, q: tuple, default=None):
        """The objective of ordering ``q``, or ``default``."""
        v = self.lookup(q, int(row_hashes(np.array([q], dtype=np.int64))[0]))
        return default if v is None else v

    def __setitem__(self, q: tuple, value: float) -> None:
        self.added[q] = value


def _scan_order(nb: np.ndarray, rng: np.random.Generator, weights: np.ndarray | None) -> list[int]:
    """Indices of the orderings ``nb`` (rows) in scan order: a random permutation, stably sorted by
    the surrogate if any."""
    perm = rng.permutation(len(nb))
    if weights is not None and len(nb):
        score = weights[np.arange(nb.shape[1]), nb].sum(axis=1)
        perm = perm[np.argsort(score[perm], kind="stable")]
    return perm.tolist()


#: Speculative evaluations of `descend_ends` with a batch evaluator: the first batch of a scan and
#: the most the batches grow to (doubling while the scan goes on).
AHEAD_FIRST, AHEAD_MAX = 4, 64


def _ahead(many, q, pos, order, rows, hashes, lookup, spec, width) -> float:
    """``q``'s objective from one call of ``many`` that also evaluates the next ``width - 1``
    orderings of ``order`` (after ``pos``) not known yet; those wait in ``spec`` (not counted, not
    in ``seen``) until the scan reaches them."""
    batch = [q]
    for k in order[pos + 1:]:
        if len(batch) >= width:
            break
        p = tuple(rows[k].tolist())
        if p not in spec and lookup(p, hashes[k]) is None:
            batch.append(p)
    vals = many(batch)
    spec.update(zip(batch[1:], vals[1:]))
    return vals[0]


def _descend(f, start, value, budget, rng, seen, weights=None, stop=None, many=None, spec=None):
    """`descend` with the reason it ended: "local", "budget" or "joined" (``stop(cur, v, rows, hashes)``
    said so, given the current ordering's neighbours as `neighbour_rows`). With ``many`` (objectives
    of a list of orderings, the same numbers as ``f``) evaluations run in growing batches ahead of the
    scan (`_ahead`, kept in the dict ``spec`` until reached): the same scan, counts and ``seen``."""
    cur, v, used = start, value, 0
    lookup = seen.lookup if isinstance(seen, Evaluated) else (lambda q, h: seen.get(q))
    spec = {} if spec is None else spec
    while True:
        rows, h = neighbour_rows(cur)
        if stop is not None and stop(cur, v, rows, h):
            return v, cur, used, "joined"
        hashes = h.tolist()
        order = _scan_order(rows, rng, weights)
        width = AHEAD_FIRST
        for pos, k in enumerate(order):
            q = tuple(rows[k].tolist())
            vn = lookup(q, hashes[k])
            if vn is None:
                if used >= budget:
                    return v, cur, used, "budget"
                vn = spec.pop(q, None)
                if vn is None:
                    if many is None:
                        vn = f(list(q))
                    else:
                        vn = _ahead(many, q, pos, order, rows, hashes, lookup, spec, width)
                        width = min(2 * width, AHEAD_MAX)
                seen[q] = vn
                used += 1
            if vn < v * (1.0 - 1e-12):
                cur, v = q, vn
                break
        else:
            return v, cur, used, "local"


def descend(f: Callable[[list], float], start: tuple, value: float, budget: int, rng: np.random.Generator,
            seen: dict[tuple, float] | Evaluated, weights: np.ndarray | None = None) -> tuple[float, tuple, int]:
    """First-improvement descent over `neighbourhood` from ``start`` (objective ``value``).

    The neighbours of the current ordering are visited in a random order (``rng.permutation``),
    stably sorted by the surrogate ``weights`` (`fit_surrogate`, lowest predicted cost first) if
    given; the first strictly better one (by a relative 1e-12, so that floating-point noise is no
    move) becomes current, and the scan restarts there. It stops at a local optimum (no neighbour better) or when
    ``budget`` evaluations are spent. Orderings in ``seen`` (ordering -> objective) are looked up, not
    evaluated; every evaluation is added to it.

    Args:
        f: objective of one ordering given as a list (+inf: invalid).
        start, value: the starting ordering (tuple of type ids) and its objective.
        budget: evaluations allowed (>= 0).
        rng: the Generator of the visiting order.
        seen: the evaluations known so far (updated in place): a dict, or an `Evaluated`.
        weights: surrogate weights (n, types) ordering the scan, or None (random order).

    Returns:
        (best objective, its ordering, evaluations made).
    """
    v, cur, used, _ = _descend(f, start, value, budget, rng, seen, weights)
    return v, cur, used


def descend_ends(f: Callable[[list], float], ends: list[tuple[tuple, float]], budget: int, rng: np.random.Generator,
                 seen: dict[tuple, float] | Evaluated, weights: np.ndarray | None = None,
                 log: list | None = None,
                 many: Callable[[list[tuple]], list[float]] | None = None) -> tuple[float, tuple | None, int]:
    """Descents (`descend`) from several orderings in turn, each stopped once it joins an earlier one.

    ``ends`` (ordering, objective) are taken best first (ties: in the order given); an end whose
    objective equals (to a relative 1e-12) that of a better-ranked end is skipped: equal costs of
    distinct orderings come from orderings the cost model does not tell apart (a plateau), whose
    descents lead to the same place. A descent stops ("joined") when its current ordering

    * lies on the path of an earlier descent (every ordering it went through), or has a neighbour on
      such a path with a lower objective (the earlier descent's basin: from there the move is
      downhill), or
    * costs the same as a local optimum an earlier descent ended in (its plateau).

    So only the first descent into a basin pays for the full scan that proves its local optimum
    (~500 evaluations); later ones stop on arrival. All descents share ``seen`` (looked up, not
    re-evaluated) and the budget; the loop stops when it is spent.

    Args:
        f, rng, seen, weights: as for `descend` (one Generator for all the descents, in turn).
        ends: starting orderings (tuples of type ids) and their objectives.
        budget: evaluations allowed, all descents together.
        log: if a list, one (start objective, end objective, evaluations, reason) per descent, with
            reason "local", "budget" or "joined".
        many: objectives of a list of orderings (the numbers ``f`` gives, one evaluator call): if
            given, evaluations run in batches ahead of the scans (`_descend`); the same result.

    Returns:
        (best objective, its ordering, evaluations made); the best of ``ends`` if nothing improves it
        ((+inf, None, 0) without ends).
    """
    ends = sorted(ends, key=lambda e: e[1])
    best_v, best_o = (ends[0][1], ends[0][0]) if ends else (float("inf"), None)
    path: dict[tuple, float] = {}
    local: list[float] = []

    def joined(cur, v, rows, h):
        if cur in path or any(_same(v, x) for x in local):
            return True
        lower = [q for q, x in path.items() if x < v]   # a neighbour on a path, below v
        if not lower:
            return False
        hit = np.flatnonzero(np.isin(h, row_hashes(np.array(lower, dtype=np.int64))))
        return any(path.get(q, v) < v for q in map(tuple, rows[hit].tolist()))

    used, last = 0, None
    spec: dict[tuple, float] = {}   # evaluated ahead of the scans (`_ahead`)
    for o, v in ends:
        if last is not None and _same(v, last):
            continue
        last = v
        if used >= budget:
            break
        trail = [o]

        def stop(cur, x, rows, h, trail=trail):
            if cur != trail[-1]:
                trail.append(cur)
            return joined(cur, x, rows, h)

        vd, od, k, why = _descend(f, o, v, budget - used, rng, seen, weights, stop, many, spec)
        used += k
        if log is not None:
            log.append((v, vd, k, why))
        if why == "local":
            local.append(vd)
        for q in trail:
            path.setdefault(q, seen.get(q, v))
        if vd < best_v:
            best_v, best_o = vd, od
    return best_v, best_o, used

