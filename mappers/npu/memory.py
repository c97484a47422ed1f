"""Global-buffer memory map and Flexer's placement/spilling policy (section 4.1, Algorithm 2).

The map is a list of segments ``(addr, size, tile, avail)`` sorted by address and covering
[0, capacity): ``tile`` >= 0 is a resident tile, -1 a free piece that became free at time
``avail``. Free pieces are not merged eagerly, so that the block of a dead tile stays an
identifiable piece for in-place replacement (adjacent free pieces with equal ``avail`` are merged).

Placement of one tile (`place_tile`):

1. in-place replacement: the first free piece of exactly the tile's size (the block of a dead
   tile of equal size -- dead tiles are freed as soon as their last use is scheduled);
2. best fit: the smallest run of adjacent free pieces that holds the tile (ties: lowest address),
   the tile placed at the start of the run;
3. spilling (`find_victims`, Algorithm 2): the contiguous sequence of segments, not crossing a
   pinned tile (one used by the operation set being placed), whose size covers the tile with the
   least fragmentation (covered size - required size), then the least lost reuse
   (sum size x remaining uses), then the fewest blocks. Our choice where the paper is silent: free
   pieces may be part of the sequence (they cost nothing), and the scan stops extending a sequence at
   its first sufficient end (Algorithm 2, line 34).

The functions are pure over the segment list (they return new lists), so the scheduler can try an
operation set on a copy and commit it later with the same deterministic decisions.
"""

from __future__ import annotations

from typing import Callable, Sequence

__all__ = ["new_map", "find_inplace", "best_fit", "find_victims", "place_tile", "used_bytes", "coalesce"]

Seg = tuple  # (addr, size, tile, avail)


def new_map(capacity: int) -> list[Seg]:
    return [(0, int(capacity), -1, 0)]


def used_bytes(segs: Sequence[Seg]) -> int:
    return sum(s[1] for s in segs if s[2] >= 0)


def find_inplace(segs: Sequence[Seg], size: int) -> int | None:
    """Index of the first free piece of exactly ``size`` bytes, else None."""
    for i, (a, s, t, _) in enumerate(segs):
        if t < 0 and s == size:
            return i
    return None


def best_fit(segs: Sequence[Seg], size: int) -> int | None:
    """Index of the first piece of the smallest run of adjacent free pieces >= ``size``, else None."""
    best, best_len = None, None
    i, n = 0, len(segs)
    while i < n:
        if segs[i][2] >= 0:
            i += 1
            continue
        j, tot = i, 0
        while j < n and segs[j][2] < 0:
            tot += segs[j][1]
            j += 1
        if tot >= size and (best_len is None or tot < best_len):
            best, best_len = i, tot
        i = j
    return best


def find_victims(segs: Sequence[Seg], size: int, pinned, remaining: Sequence[int]) -> tuple[int, int] | None:
    """Algorithm 2: the segment range [start, end] to free for ``size`` bytes (see module doc),
    or None if no sequence without a pinned tile is large enough. For every start the shortest
    sufficient end (found by a two-pointer scan, O(segments)); the least fragmentation, then the
    least lost reuse, then the fewest blocks; ties to the lowest start."""
    n = len(segs)
    best = None
    start = end = 0
    spill = dis = blocks = 0  # of the window [start, end)
    while start < n:
        while spill < size and end < n:
            t = segs[end][2]
            if t >= 0 and t in pinned:
                break
            spill += segs[end][1]
            if t >= 0:
                dis += segs[end][1] * remaining[t]
                blocks += 1
            end += 1
        if spill < size:
            if end >= n:
                break
            # segs[end] is pinned: no start up to it reaches past it
            start = end = end + 1
            spill = dis = blocks = 0
            continue
        cand = (spill - size, dis, blocks)
        if best is None or cand < best[0]:
            best = (cand, (start, end - 1))
        _, sz, t, _ = segs[start]  # drop segment `start` from the window
        spill -= sz
        if t >= 0:
            dis -= sz * remaining[t]
            blocks -= 1
        start += 1
    return None if best is None else best[1]


def coalesce(segs: list[Seg]) -> list[Seg]:
    """Merge adjacent free pieces with equal ``avail``."""
    out: list[Seg] = []
    for sg in segs:
        if out and sg[2] < 0 and out[-1][2] < 0 and out[-1][3] == sg[3]:
            a, s, _, av = out[-1]
            out[-1] = (a, s + sg[1], -1, av)
        else:
            out.append(sg)
    return out


def _take(segs: list[Seg], i: int, size: int, tile: int) -> tuple[list[Seg], int, int]:
    """Put ``tile`` at the start of free piece i, consuming following free pieces; returns
    (new segs, address, time the covered space is free)."""
    addr = segs[i][0]
    avail, got, j = 0, 0, i
    while got < size:
        a, s, t, av = segs[j]
        assert t < 0, "placement over a resident tile"
        avail = max(avail, av)
        got += s
        j += 1
    rest = []
    if got > size:
        a, s, t, av = segs[j - 1]
        rest = [(addr + size, got - size, -1, av)]
    return segs[:i] + [(addr, size, tile, avail)] + rest + segs[j:], addr, avail


def place_tile(segs: list[Seg], tile: int, size: int, pinned, remaining: Sequence[int],
               evict: Callable[[int], int] | None = None) -> tuple[list[Seg], int, int, list[int]] | None:
    """Place ``tile`` by in-place replacement, best fit, then Algorithm 2 spilling.

    ``evict(t)`` is called for each victim and returns the time its space is free (None = trial:
    time 0). Returns (new segs, address, time the space is free, victims) or None if it cannot fit.
    """
    victims: list[int] = []
    i = find_inplace(segs, size)
    if i is None:
        i = best_fit(segs, size)
    if i is None:
        r = find_victims(segs, size, pinned, remaining)
        if r is None:
            return None
        segs = list(segs)
        for k in range(r[0], r[1] + 1):
            a, s, t, av = segs[k]
            if t >= 0:
                victims.append(t)
                segs[k] = (a, s, -1, evict(t) if evict else 0)
        i = r[0]
    segs, addr, avail = _take(list(segs), i, size, tile)
    return segs, addr, avail, victims
