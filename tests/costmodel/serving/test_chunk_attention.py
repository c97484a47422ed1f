"""A chunk of a chunked prefill (q queries after p cached keys) attends as causal attention with a
prefix: every pair at or below the shifted diagonal computed once, none above it outside the
diagonal blocks or tiles (brute-force cover); p = 0 is the prefill's, q = 1 the decode's."""

import itertools

import pytest

from costmodel.transformer.attention import (CAUSAL_BLOCK, causal_blocks, chunk_blocks, computed_pairs, fused_tiles)


def cover_unfused(q, p, window=0, block=CAUSAL_BLOCK):
    """The pairs (query i, key j) the blocks of `chunk_blocks` compute, laid out as a kernel walks
    them: query blocks of `block`, each over the keys its rows attend."""
    seen = {}
    for q0 in range(0, q, block):
        rows = min(block, q - q0)
        hi = p + q0 + rows
        lo = max(0, p + q0 - window + 1) if window else 0
        for i in range(q0, q0 + rows):
            for j in range(lo, hi):
                seen[(i, j)] = seen.get((i, j), 0) + 1
    return seen


def needed(q, p, window=0):
    return {(i, j) for i in range(q) for j in range(p + i + 1) if not window or j > p + i - window}


@pytest.mark.parametrize("q, p, window", [(5, 3, 0), (300, 100, 0), (129, 1, 0), (256, 1000, 0), (300, 700, 256),
                                          (130, 20, 64)])
def test_unfused_chunk_blocks_cover_every_attended_pair_once(q, p, window):
    seen = cover_unfused(q, p, window)
    assert all(seen[k] == 1 for k in seen)
    assert needed(q, p, window) <= set(seen)
    extra = set(seen) - needed(q, p, window)
    assert all(j > p + i or (window and j <= p + i - window) for i, j in extra)   # only masked corners
    assert sum(r * c * n for r, c, n in chunk_blocks(q, p, window)) == len(seen)
    assert computed_pairs(q, p + q, True, "unfused", window=window, prefix=p) == len(seen)


def test_unfused_chunk_without_prefix_is_the_prefill():
    assert chunk_blocks(1000, 0) == causal_blocks(1000)


@pytest.mark.parametrize("q, p, tq, tk", [(300, 100, 128, 128), (64, 1000, 128, 64), (1, 4095, 128, 128),
                                          (257, 0, 64, 128)])
def test_fused_tiles_after_a_prefix_cover_the_shifted_triangle(q, p, tq, tk):
    tiles = fused_tiles(q, p + q, True, tq, tk, prefix=p)
    # rebuild each query tile's K/V tiles: keys 0 .. prefix + last query of the tile
    total = 0
    for qi in range(-(-q // tq)):
        rows = min(tq, q - qi * tq)
        hi = p + qi * tq + rows
        total += rows * hi
    assert sum(r * c * n for (r, c, _, _), n in tiles.items()) == total
    # exactly one first and one last tile per query tile
    assert sum(n for (_, _, f, _), n in tiles.items() if f) == -(-q // tq)
    assert sum(n for (_, _, _, l), n in tiles.items() if l) == -(-q // tq)
    exact = q * p + q * (q + 1) // 2
    assert total >= exact and total - exact <= q * min(tq, q)   # the masked part of the diagonal tiles


def test_a_one_query_chunk_is_a_decode():
    for c in (1, 100, 4096):
        assert fused_tiles(1, c, True, prefix=c - 1) == fused_tiles(1, c, False)
        assert computed_pairs(1, c, True, "unfused", prefix=c - 1) == c
