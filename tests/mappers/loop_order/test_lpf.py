"""mappers.loop_order.lpf: multiset permutation counting, rank/unrank, shards, batched enumeration, LPF merging."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from mappers.loop_order.lpf import (expand, iter_permutations, lpf_types, merge_lpfs, multiset_count, prime_factors, rank,
                         shard_range, unrank)

small_counts = st.lists(st.integers(0, 3), min_size=1, max_size=4).filter(lambda c: 0 < sum(c) <= 7)


def _lex(counts):
    return sorted(set(itertools.permutations(expand(counts).tolist())))


@given(small_counts)
def test_count_rank_unrank_match_itertools(counts):
    perms = _lex(counts)
    assert multiset_count(counts) == len(perms)
    for r, p in enumerate(perms):
        assert tuple(unrank(r, counts).tolist()) == p
        assert rank(p, counts) == r


@given(small_counts, st.integers(1, 50))
def test_iter_permutations_is_lexicographic_and_complete(counts, batch):
    perms = _lex(counts)
    rows = np.concatenate(list(iter_permutations(counts, 0, None, batch)))
    assert [tuple(r) for r in rows.tolist()] == perms
    assert all(len(b) <= batch for b in iter_permutations(counts, 0, None, batch))


@given(small_counts, st.integers(1, 6), st.integers(1, 17))
def test_shards_partition_the_space(counts, shards, batch):
    total = multiset_count(counts)
    got = []
    for i in range(shards):
        a, b = shard_range(total, i, shards)
        got += [tuple(r) for blk in iter_permutations(counts, a, b, batch) for r in blk.tolist()]
    assert got == _lex(counts)


def test_counts_are_exact_for_big_multisets():
    counts = [6, 4, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]  # 24 loops
    n = sum(counts)
    expect = math.factorial(n) // (math.factorial(6) * math.factorial(4) * math.factorial(3) * 2)
    assert multiset_count(counts) == expect
    assert expect > 2**63  # beyond int64
    for r in (0, 1, expect // 3, expect - 1, 12345678901234567890):
        assert rank(unrank(r, counts), counts) == r
    assert unrank(0, counts).tolist() == expand(counts).tolist()
    assert unrank(expect - 1, counts).tolist() == expand(counts)[::-1].tolist()


def test_iter_permutations_deep_range_matches_unrank():
    counts = [4, 6, 3, 1, 2, 1]
    start = 10**9 + 7
    blocks = list(iter_permutations(counts, start, start + 10_000, 4096))
    rows = np.concatenate(blocks)
    assert len(rows) == 10_000 and [len(b) for b in blocks] == [4096, 4096, 1808]
    for j in (0, 1, 4095, 4096, 9999):
        assert rows[j].tolist() == unrank(start + j, counts).tolist()
    # consecutive rows are strictly increasing lexicographically
    a, b = rows[:-1], rows[1:]
    first = np.argmax(a != b, axis=1)
    assert np.all(a[np.arange(len(a)), first] < b[np.arange(len(b)), first])


@pytest.mark.parametrize("call, match", [
    (lambda: unrank(60, [2, 1, 3]), "rank must be in"),
    (lambda: unrank(-1, [2, 1]), "rank must be in"),
    (lambda: rank([0, 0, 1], [1, 2]), "not a permutation"),
    (lambda: multiset_count([1, -1]), ">= 0"),
    (lambda: shard_range(10, 3, 3), "shard"),
    (lambda: list(iter_permutations([1, 1], 0, 3)), "start <= stop"),
    (lambda: list(iter_permutations([1, 1], 0, 2, 0)), "batch"),
    (lambda: merge_lpfs([("K", 2)], 0), "lpf_limit"),
    (lambda: prime_factors(0), "positive"),
])
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_empty_multiset():
    assert multiset_count([]) == 1 and multiset_count([0, 0]) == 1
    (blk,) = list(iter_permutations([0], 0, None))
    assert blk.shape == (1, 0)


def test_prime_factors_and_types():
    assert prime_factors(1) == [] and prime_factors(56) == [2, 2, 2, 7] and prime_factors(97) == [97]
    types, counts = lpf_types([("K", 2), ("C", 3), ("K", 2), ("C", 2)])
    assert types == (("K", 2), ("C", 3), ("C", 2)) and counts.tolist() == [2, 1, 1]


@pytest.mark.parametrize("factors, limit, expect", [
    # no limit / already within the limit: only grouped and sorted
    ([("K", 2), ("C", 3), ("K", 2)], None, [("K", 2), ("K", 2), ("C", 3)]),
    ([("K", 2), ("C", 3)], 5, [("K", 2), ("C", 3)]),
    # K has the most factors: its two smallest (2, 2) merge to 4; then K = [2, 4], C = [2, 3]: tie,
    # K comes first: 2 * 4 = 8
    ([("K", 2), ("K", 2), ("K", 2), ("C", 3), ("C", 2)], 3, [("K", 8), ("C", 2), ("C", 3)]),
    # C 2^6 and OY 2^3 x 7 (ResNet-like), limit 6, by hand: C [2]*6, OY [2,2,2,7] (10 factors)
    # -> C [2,2,2,2,4] (9) -> C [2,2,4,4] (8) -> tie 4/4, C first: C [4,4,4] (7) -> OY [2,4,7] (6)
    ([("C", 2)] * 6 + [("OY", 2)] * 3 + [("OY", 7)], 6,
     [("C", 4), ("C", 4), ("C", 4), ("OY", 2), ("OY", 4), ("OY", 7)]),
    # the limit is raised to the number of dimensions (every dimension keeps one loop)
    ([("K", 2), ("K", 3), ("C", 5), ("OX", 7)], 1, [("K", 6), ("C", 5), ("OX", 7)]),
    # merged factors are re-sorted among the others: [2,2,3,3] -> [3,3,4] -> [4,9] -> [36]
    ([("K", 2), ("K", 2), ("K", 3), ("K", 3)], 1, [("K", 36)]),
])
def test_merge_lpfs_by_hand(factors, limit, expect):
    assert merge_lpfs(factors, limit) == expect


def test_merge_lpfs_keeps_products():
    f = [("K", 2)] * 5 + [("C", 3)] * 2 + [("C", 2)] * 3 + [("OY", 7)]
    for limit in range(1, 12):
        m = merge_lpfs(f, limit)
        assert len(m) == max(limit, 3) or len(m) == len(f)
        for d in ("K", "C", "OY"):
            assert math.prod(x for e, x in m if e == d) == math.prod(x for e, x in f if e == d)
