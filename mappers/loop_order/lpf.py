"""Loop prime factors (LPFs) and multiset permutations: counting, ranking, sharding, enumeration.

A loop ordering of a layer is a permutation of its temporal LPFs; LPFs of the same loop dimension
and size are interchangeable, so the orderings are the *multiset permutations* of the LPF types.
Here a multiset is given by ``counts`` (shape (m,), ``counts[i]`` = multiplicity k_i of type i)
and an ordering by an int array of type ids of length n = sum(counts), innermost loop first.

* `multiset_count`: n! / prod k_i!, the size of the space (SALSA paper, eq. 1 without tau).
* `rank` / `unrank`: the bijection between orderings and 0 .. count-1 in lexicographic order of
  the type ids (exact for any size: Python ints).
* `shard_range`: shard i of s gets one contiguous rank range, so exhaustive shards need no
  coordination and together cover every ordering exactly once.
* `iter_permutations`: consecutive orderings of a rank range, in batches, built from cached
  tables of complete sub-trees (a few million orderings per second).
* `merge_lpfs`: LOMA's ``lpf_limit`` (merge the two smallest factors of the dimension with the most
  factors until at most ``limit`` remain).

Sources: V. J. B. Jung et al., "SALSA: Simulated Annealing based Loop-Ordering Scheduler for DNN
Accelerators", AICAS 2023 (sections II-B, II-C, eq. 1); A. Symons, L. Mei, M. Verhelst, "LOMA:
Fast auto-scheduling on DNN accelerators through loop-order-based memory allocation", AICAS 2021.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Iterator, Sequence

import numpy as np

from costmodel.loopnest.mapping import prime_factors  # noqa: E402  (re-exported)

__all__ = ["prime_factors", "lpf_types", "expand", "multiset_count", "rank", "unrank", "shard_range",
           "iter_permutations", "merge_lpfs"]


def lpf_types(factors: Sequence[tuple[str, int]]) -> tuple[tuple[tuple[str, int], ...], np.ndarray]:
    """Unique LPF types of a list of loops and their multiplicities.

    Args:
        factors: loops as (dim, factor), any order.

    Returns:
        (types, counts): types in order of first appearance; counts int64 of shape (m,).
    """
    seen: dict[tuple[str, int], int] = {}
    for f in factors:
        key = (str(f[0]), int(f[1]))
        seen[key] = seen.get(key, 0) + 1
    return tuple(seen), np.array(list(seen.values()), dtype=np.int64)


def expand(counts: Sequence[int]) -> np.ndarray:
    """The smallest ordering (rank 0) of a multiset: type ids ascending, shape (n,) int64."""
    c = _check_counts(counts)
    return np.repeat(np.arange(len(c), dtype=np.int64), c)


def _check_counts(counts: Sequence[int]) -> list[int]:
    c = [int(k) for k in np.asarray(counts).ravel()] if not isinstance(counts, list) else [int(k) for k in counts]
    if any(k < 0 for k in c):
        raise ValueError(f"multiplicities must be >= 0, got {c}")
    return c


def multiset_count(counts: Sequence[int]) -> int:
    """Number of distinct permutations of a multiset: n! / prod_i k_i! (exact Python int).

    SALSA eq. (1) without the time per evaluation tau: T(n, k) = tau * n! / prod k_i!.

    Args:
        counts: multiplicities k_i >= 0, shape (m,).

    Raises:
        ValueError: a negative multiplicity.
    """
    c = _check_counts(counts)
    out = math.factorial(sum(c))
    for k in c:
        out //= math.factorial(k)
    return out


def unrank(r: int, counts: Sequence[int]) -> np.ndarray:
    """The ordering of lexicographic rank ``r`` among the permutations of the multiset ``counts``.

    Args:
        r: 0 <= r < multiset_count(counts) (Python int; any size).
        counts: multiplicities, shape (m,).

    Returns:
        Type ids, int64 of shape (n,), n = sum(counts).

    Raises:
        ValueError: ``r`` out of range or a negative multiplicity.
    """
    c = _check_counts(counts)
    total = multiset_count(c)
    r = int(r)
    if not 0 <= r < total:
        raise ValueError(f"rank must be in [0, {total}), got {r}")
    n = sum(c)
    out = np.empty(n, dtype=np.int64)
    for pos in range(n):
        rem = n - pos
        for t, k in enumerate(c):
            if k == 0:
                continue
            block = total * k // rem  # permutations of the rest starting with type t
            if r < block:
                out[pos] = t
                c[t] -= 1
                total = block
                break
            r -= block
    return out


def rank(perm: Sequence[int], counts: Sequence[int]) -> int:
    """Lexicographic rank of ``perm`` among the permutations of the multiset ``counts``.

    Inverse of `unrank`. Returns a Python int.

    Raises:
        ValueError: ``perm`` is not a permutation of the multiset.
    """
    c = _check_counts(counts)
    p = [int(t) for t in np.asarray(perm).ravel()]
    if len(p) != sum(c) or any(not 0 <= t < len(c) for t in p) or np.bincount(p, minlength=len(c)).tolist() != c:
        raise ValueError(f"{p} is not a permutation of the multiset with counts {c}")
    total = multiset_count(c)
    n = len(p)
    r = 0
    for pos, t in enumerate(p):
        rem = n - pos
        for u in range(t):
            if c[u]:
                r += total * c[u] // rem
        total = total * c[t] // rem
        c[t] -= 1
    return r


def shard_range(total: int, shard: int, shards: int) -> tuple[int, int]:
    """Contiguous rank range [start, stop) of shard ``shard`` of ``shards`` over ``total`` items.

    Ranges of shards 0 .. shards-1 partition [0, total) in order; sizes differ by at most one.

    Raises:
        ValueError: shards < 1, shard outside [0, shards) or total < 0.
    """
    if shards < 1 or not 0 <= shard < shards or total < 0:
        raise ValueError(f"need total >= 0 and 0 <= shard < shards, got total={total}, shard={shard}, shards={shards}")
    return total * shard // shards, total * (shard + 1) // shards


#: Sub-tree tables of at most this many rows are cached (complete lexicographic tables).
_TABLE_ROWS = 4096
#: Byte budget of the table cache (least recently used tables are dropped beyond it).
_CACHE_BYTES = 64 << 20


class _Tables:
    """LRU cache of complete permutation tables of small multisets, keyed by their counts."""

    def __init__(self) -> None:
        self._d: OrderedDict[tuple[int, ...], np.ndarray] = OrderedDict()
        self._bytes = 0

    def get(self, counts: tuple[int, ...], size: int) -> np.ndarray:
        tab = self._d.get(counts)
        if tab is not None:
            self._d.move_to_end(counts)
            return tab
        n = sum(counts)
        tab = np.empty((size, n), dtype=np.uint8)
        if n:
            _fill(list(counts), n, size, 0, size, tab, self)
        self._d[counts] = tab
        self._bytes += tab.nbytes
        while self._bytes > _CACHE_BYTES and len(self._d) > 1:
            _, old = self._d.popitem(last=False)
            self._bytes -= old.nbytes
        return tab


_TABLES = _Tables()


def _fill(c: list[int], n: int, total: int, lo: int, hi: int, out: np.ndarray, tables: _Tables) -> None:
    """Write rows lo..hi-1 of the lexicographic permutations of multiset ``c`` (n items,
    ``total`` permutations) into ``out`` (hi - lo, n)."""
    if n == 0:
        return
    off = 0
    for t, k in enumerate(c):
        if k == 0:
            continue
        block = total * k // n
        a = lo if lo > off else off
        b = hi if hi < off + block else off + block
        if a < b:
            dst = out[a - lo:b - lo]
            dst[:, 0] = t
            c[t] -= 1
            if n > 1:
                if a == off and b == off + block and block <= _TABLE_ROWS:
                    dst[:, 1:] = tables.get(tuple(c), block)
                else:
                    _fill(c, n - 1, block, a - off, b - off, dst[:, 1:], tables)
            c[t] += 1
        off += block
        if off >= hi:
            break


def iter_permutations(counts: Sequence[int], start: int = 0, stop: int | None = None,
                      batch: int = 4096, dtype=np.int64) -> Iterator[np.ndarray]:
    """Consecutive orderings of ranks start .. stop-1 (lexicographic), in batches.

    Args:
        counts: multiplicities, shape (m,).
        start, stop: rank range; ``stop`` None = `multiset_count` (Python ints, any size).
        batch: rows per yielded array (the last one may be shorter).
        dtype: integer dtype of the yielded arrays.

    Yields:
        Arrays of shape (b, n), b <= batch; row j of the whole stream has rank start + j.

    Raises:
        ValueError: bad range or batch < 1.

    Complete sub-trees of up to 4096 rows are copied from cached tables, so the Python work per
    batch is O(n * m) and the rest is memory copies.
    """
    c = _check_counts(counts)
    total = multiset_count(c)
    stop = total if stop is None else int(stop)
    start = int(start)
    if not 0 <= start <= stop <= total:
        raise ValueError(f"need 0 <= start <= stop <= {total}, got start={start}, stop={stop}")
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    n = sum(c)
    buf = np.empty((batch, n), dtype=np.uint8 if len(c) <= 256 else np.int64)
    lo = start
    while lo < stop:
        hi = min(lo + batch, stop)
        out = buf[: hi - lo]
        _fill(c, n, total, lo, hi, out, _TABLES)
        yield out.astype(dtype)
        lo = hi


def merge_lpfs(factors: Sequence[tuple[str, int]], limit: int | None) -> list[tuple[str, int]]:
    """LOMA's ``lpf_limit``: merge LPFs until at most ``limit`` remain.

    The rule of ZigZag's LOMA engine (``LomaEngine.limit_lpfs`` / ``update_min_lpf_factor`` in
    KULeuven-MICAS/zigzag, ``zigzag/opt/loma/engine.py``): the limit is first raised to the number
    of distinct loop dimensions (each dimension keeps at least one loop); then, while more than
    ``limit`` factors remain, take the dimension with the most factors (ties: the first one, here
    in order of first appearance in ``factors``) and replace its two smallest factors by their
    product.

    Args:
        factors: loops as (dim, factor), e.g. the LPFs of a layer.
        limit: maximum number of loops; None = no limit.

    Returns:
        The merged loops, grouped by dimension (order of first appearance), factors ascending.

    Raises:
        ValueError: limit < 1.

    Example: ``[(K,2),(K,2),(K,2),(C,3),(C,2)]`` with limit 3 -> K: merge 2*2 -> [(K,2),(K,4),
    (C,2),(C,3)] -> now K and C both have 2, K first: [(K,8),(C,2),(C,3)].
    """
    if limit is not None and (isinstance(limit, bool) or int(limit) < 1):
        raise ValueError(f"lpf_limit must be >= 1, got {limit!r}")
    per_dim: dict[str, list[int]] = {}
    for d, f in factors:
        per_dim.setdefault(str(d), []).append(int(f))
    for v in per_dim.values():
        v.sort()
    n = sum(len(v) for v in per_dim.values())
    if limit is not None:
        lim = max(int(limit), len(per_dim))
        while n > lim:
            dim = max(per_dim, key=lambda d: len(per_dim[d]))  # max keeps the first of equals
            v = per_dim[dim]
            merged = v[0] * v[1]
            del v[:2]
            v.append(merged)
            v.sort()
            n -= 1
    return [(d, f) for d, v in per_dim.items() for f in v]
