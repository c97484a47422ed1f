"""Moves on LPF orderings, their random proposal streams, and a first-improvement descent.

An ordering is a list of LPF type ids, innermost first (`mappers.loop_order.lpf`). Three moves:

* ``swap(o, i, j)``: SALSA's neighbourhood (Jung et al., AICAS 2023, eq. 2);
* ``block_move(o, i, L, j)``: a run of L consecutive LPFs taken out and put back at position j of
  the rest (L = 1 is an insertion);
* ``reverse(o, i, j)``: the segment o[i:j] reversed.

`PairStream` draws swaps (eq. 2), `MoveStream` the "mixed" proposals of `mappers.loop_order.salsa`.
`neighbourhood` lists every distinct ordering one move away, and `descend` walks it down to a local
optimum (SALSA's final descent, not in the paper; `mappers.loop_order.salsa`, "Final descent").
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["BLOCK_MAX", "swap", "block_move", "reverse", "PairStream", "MoveStream", "neighbourhood", "descend"]

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

    def propose(self, o: list) -> list:
        """``o`` with a uniformly random pair (i, j), o[i] != o[j], swapped (rejection sampling)."""
        buf, pos, pairs = self.buf, self.pos, self.pairs
        while True:
            if pos == len(buf):
                buf.extend(self.rng.integers(0, len(pairs), size=self.chunk).tolist())
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

    def propose(self, o: list) -> list:
        """A new ordering (a list) one mixed move away from ``o``."""
        n = self.n
        while True:
            if self.pos + 4 > len(self.buf):
                self.buf.extend(self.rng.random(self.chunk).tolist())
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


def neighbourhood(o: list, block_max: int = BLOCK_MAX) -> list[tuple]:
    """Every distinct ordering one move away from ``o`` (swaps, block moves of 1..``block_max``
    LPFs, reversals), each once, ``o`` itself excluded, in a fixed order (swaps, then block moves
    by length, then reversals). The set `MoveStream` draws from (with ``block_max`` = `BLOCK_MAX`)."""
    n = len(o)
    out: dict[tuple, None] = {}
    for i in range(n):
        for j in range(i + 1, n):
            if o[i] != o[j]:
                out[tuple(swap(o, i, j))] = None
    for length in range(1, min(block_max, n - 1) + 1):
        for i in range(n - length + 1):
            for j in range(n - length + 1):
                out[tuple(block_move(o, i, length, j))] = None
    for i in range(n + 1):
        for j in range(i + 2, n + 1):
            out[tuple(reverse(o, i, j))] = None
    out.pop(tuple(o), None)
    return list(out)


def descend(f: Callable[[list], float], start: tuple, value: float, budget: int, rng: np.random.Generator,
            seen: dict[tuple, float]) -> tuple[float, tuple, int]:
    """First-improvement descent over `neighbourhood` from ``start`` (objective ``value``).

    The neighbours of the current ordering are visited in a random order (``rng.permutation``); the
    first strictly better one (by a relative 1e-12, so that floating-point noise is no move) becomes
    current, and the scan restarts there. It stops at a local optimum (no neighbour better) or when
    ``budget`` evaluations are spent. Orderings in ``seen`` (ordering -> objective) are looked up, not
    evaluated; every evaluation is added to it.

    Args:
        f: objective of one ordering given as a list (+inf: invalid).
        start, value: the starting ordering (tuple of type ids) and its objective.
        budget: evaluations allowed (>= 0).
        rng: the Generator of the visiting order.
        seen: the evaluations known so far (updated in place).

    Returns:
        (best objective, its ordering, evaluations made).
    """
    cur, v, used = start, value, 0
    while True:
        nb = neighbourhood(list(cur))
        for k in rng.permutation(len(nb)).tolist():
            q = nb[k]
            vn = seen.get(q)
            if vn is None:
                if used >= budget:
                    return v, cur, used
                vn = seen[q] = f(list(q))
                used += 1
            if vn < v * (1.0 - 1e-12):
                cur, v = q, vn
                break
        else:
            return v, cur, used
