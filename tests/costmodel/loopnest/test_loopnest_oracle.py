"""The reference evaluator against the brute-force walker (tests/loopnest_oracle.py), plus hand
calculations. Access counts must be EQUAL (integers), on random tiny layers, accelerators and
(uneven) mappings."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from costmodel.loopnest.arch import Accelerator, MemoryLevel, load_accelerator
from costmodel.loopnest.reference import evaluate
from costmodel.loopnest.mapping import Mapping, SpatialMapping, TemporalMapping, prime_factors
from costmodel.workload import Layer
from loopnest_oracle import walk

DIMS = ("B", "K", "C", "OY", "OX", "FY", "FX", "G")


@st.composite
def tiny_case(draw):
    # layer: dims 1..4, strides/dilations 1..2, at most ~400 MACs so the walk stays fast
    sizes = {}
    budget = 400
    for d in draw(st.permutations(DIMS)):
        hi = max(1, min(4, budget))
        v = draw(st.integers(1, hi))
        sizes[d] = v
        budget //= v
    layer = Layer("tiny", **sizes, SY=draw(st.integers(1, 2)), SX=draw(st.integers(1, 2)),
                  DY=draw(st.integers(1, 2)), DX=draw(st.integers(1, 2)),
                  w_bits=draw(st.sampled_from([4, 8])), i_bits=draw(st.sampled_from([4, 8])),
                  o_bits=8, o_partial_bits=draw(st.sampled_from([16, 24])))
    # array: 1 or 2 dims of size 1..4
    nd = draw(st.integers(1, 2))
    array = {f"D{i + 1}": draw(st.integers(1, 4)) for i in range(nd)}
    # spatial unrolling: up to two loops per array dim, factors may exceed the layer (clipped)
    spatial = {}
    for a, size in array.items():
        loops = []
        left = size
        for _ in range(draw(st.integers(0, 2))):
            if left < 2:
                break
            f = draw(st.integers(2, left))
            loops.append((draw(st.sampled_from(DIMS)), f))
            left //= f
        if loops:
            spatial[a] = tuple(loops)
    sp = SpatialMapping(spatial)
    # memories innermost first with shrinking scopes: per PE, partial scope, array, DRAM
    dims = list(array)
    mid_scope = tuple(draw(st.lists(st.sampled_from(dims), unique=True, max_size=len(dims))))
    scopes = [tuple(dims), mid_scope, ()]
    mems = []
    for i, scope in enumerate(scopes):
        for j in range(draw(st.integers(0, 2))):
            ops = draw(st.lists(st.sampled_from(["W", "I", "O"]), unique=True, min_size=1, max_size=3))
            mems.append(MemoryLevel(f"m{i}{j}", None, tuple(ops), 1.0 + i, 2.0 + i,
                                    draw(st.sampled_from([4, 8, 16, 24, 64])), 8.0, 8.0,
                                    draw(st.booleans()), scope))
    mems.append(MemoryLevel("dram", None, ("W", "I", "O"), 100.0, 100.0, draw(st.sampled_from([8, 64])),
                            16.0, 16.0, True, ()))
    prec = draw(st.sampled_from([{}, {"W": 8, "I": 8, "O": 16, "O_final": 8}]))
    arch = Accelerator("tiny_acc", array, 0.5, tuple(mems), SpatialMapping({}), prec)
    # temporal loops: prime factors of the padded temporal bounds, sometimes merged, shuffled
    tb = sp.temporal_bounds(layer)
    loops = [(d, p) for d in DIMS for p in prime_factors(tb[d])]
    if len(loops) >= 2 and draw(st.booleans()):
        i = draw(st.integers(0, len(loops) - 2))
        if loops[i][0] == loops[i + 1][0]:
            loops[i:i + 2] = [(loops[i][0], loops[i][1] * loops[i + 1][1])]
    if draw(st.booleans()):
        loops.insert(draw(st.integers(0, len(loops))), ("K", 1))  # a factor-1 loop is transparent
    loops = draw(st.permutations(loops))
    n = len(loops)
    bounds = {}
    for op in ("W", "I", "O"):
        k = len(arch.levels(op))
        cuts = sorted(draw(st.lists(st.integers(0, n), min_size=k - 1, max_size=k - 1)))
        bounds[op] = tuple(cuts) + (n,)
    return layer, arch, Mapping(sp, TemporalMapping(tuple(loops)), bounds)


def _compare(layer, arch, mapping):
    rep = evaluate(layer, arch, mapping)
    assert rep.breakdown, rep.reason
    oracle = walk(layer, arch, mapping)
    for op, levels in rep.breakdown["operands"].items():
        for c in levels:
            o = oracle.get((op, c["memory"]), {"reads": 0, "writes": 0, "fills": 0, "readbacks": 0})
            got = {k: c[k] for k in ("reads", "writes")}
            want = {k: o[k] for k in ("reads", "writes")}
            assert got == want, (op, c["memory"], got, want)
            if c["memory"] != arch.levels(op)[-1].name:
                assert c["fills"] == o["fills"], (op, c["memory"])
                assert c["readbacks"] == o["readbacks"], (op, c["memory"])
    return rep


@settings(max_examples=300)
@given(tiny_case())
def test_access_counts_equal_the_brute_force_walk(case):
    layer, arch, mapping = case
    _compare(layer, arch, mapping)


@settings(max_examples=100)
@given(tiny_case())
def test_energy_is_the_sum_of_counted_accesses(case):
    layer, arch, mapping = case
    rep = evaluate(layer, arch, mapping)
    oracle = walk(layer, arch, mapping)
    e = layer.macs * arch.mac_pj
    for (op, mem), c in oracle.items():
        m = arch.memory(mem)
        e += c["reads"] * m.read_pj + c["writes"] * m.write_pj
    assert rep.valid
    assert rep.energy_pj == pytest.approx(e, rel=1e-12)
    assert rep.latency_cycles >= math.prod(f for _, f in mapping.temporal.loops)


def _mini_arch(spatial=None, word=8):
    """A per-PE register for each operand, then DRAM; 2 PEs along D1."""
    mems = (MemoryLevel("rW", None, ("W",), 1.0, 1.0, word, 8, 8, False, ("D1",)),
            MemoryLevel("rI", None, ("I",), 1.0, 1.0, word, 8, 8, False, ("D1",)),
            MemoryLevel("rO", None, ("O",), 1.0, 1.0, 16, 16, 16, False, ("D1",)),
            MemoryLevel("dram", None, ("W", "I", "O"), 10.0, 10.0, 8, 8, 8, True, ()))
    return Accelerator("mini", {"D1": 2}, 1.0, mems, spatial or SpatialMapping({}),
                       {"W": 8, "I": 8, "O": 16, "O_final": 8})


def test_hand_weight_stationary_1d_conv():
    # Layer: K=2, C=1, OX=4, FX=3 (1-D conv, stride 1): IX = 4 + 3 - 1 = 6. MACs = 2*4*3 = 24.
    # Spatial: K 2 over D1 (2 PEs). Temporal loops innermost first: OX 4, FX 3, all in the registers.
    layer = Layer("h", K=2, C=1, OX=4, FX=3)
    sp = SpatialMapping({"D1": (("K", 2),)})
    arch = _mini_arch(sp)
    m = Mapping(sp, TemporalMapping((("OX", 4), ("FX", 3))), {"W": (2, 2), "I": (2, 2), "O": (2, 2)})
    rep = _compare(layer, arch, m)
    by = {(c["operand"], c["memory"]): c for op in rep.breakdown["operands"].values() for c in op}
    # W at the MAC: OX (irrelevant to W) is innermost, so a weight stays for 4 cycles:
    #   loads = 12 / 4 = 3 per PE, one 8-bit read each -> 3 * 2 PEs = 6 reads of rW.
    assert by[("W", "rW")]["reads"] == 6
    # rW tile = 3 weights per PE = 24 bits = 3 words; loaded once: 2 PEs * 3 = 6 writes; DRAM reads:
    #   the two PEs hold different K (relevant) -> 2 tiles of 3 * 8 bits = 48 bits = 6 reads.
    assert by[("W", "rW")]["writes"] == 6 and by[("W", "dram")]["reads"] == 6
    # I at the MAC: every iteration changes OX or FX -> 12 loads per PE, 24 rI reads.
    # rI tile = IX 6 elements (48 bits = 6 words), one load; K is irrelevant to I -> multicast:
    #   DRAM reads 6 (not 12), rI writes 2 PEs * 6 = 12.
    assert by[("I", "rI")]["reads"] == 24
    assert by[("I", "dram")]["reads"] == 6 and by[("I", "rI")]["writes"] == 12
    # O at the MAC: OX changes every cycle (innermost, relevant): 12 visits per PE of which
    #   D = 4 (distinct OX) are first visits -> 8 read-backs; 12 write-ups, the last visit of each
    #   output (the FX = 2 pass) final. rO word 16 bits, one element (8 or 16 bits) = 1 word:
    #   write-ups 12 visits * 2 PEs = 24 writes, read-backs 8 * 2 PEs = 16 reads; plus the write-up
    #   of the rO tile to DRAM: 4 final outputs * 8 bits = 32 bits = 2 words per PE -> 4 reads.
    assert by[("O", "rO")]["writes"] == 24 and by[("O", "rO")]["reads"] == 16 + 4
    # rO -> DRAM: one visit, final: 4 outputs * 8 bits per PE, two PEs (K relevant) -> 2 * 32 / 8 = 8 writes.
    assert by[("O", "dram")]["writes"] == 8
    # energy = 24 MACs * 1 pJ + register accesses * 1 pJ + DRAM accesses * 10 pJ
    reg = 6 + 6 + 24 + 12 + 24 + 20
    dram = 6 + 6 + 8
    assert rep.energy_pj == 24 + reg + 10 * dram


def test_hand_partial_sums_and_read_back():
    # K=1, C=4, OX=2: loops innermost first OX 2 | C 4, the register holds only the OX loop
    # (boundary 1). The C loop above is O-irrelevant but the OX tile is inside, so the O tile
    # (2 outputs) stays in rO across C: one visit, no read-back. Now put C below and OX above:
    # loops C 4 | OX 2 with rO boundary 1 (holds C): O tile = 1 output, visits = 2 (OX relevant),
    # D = 2, no read-back. Finally loops OX 2 | C 4 with boundary 1 (rO holds OX only) but C
    # above: visits = 4*2/... -> the run of irrelevant loops directly above (C 4) keeps the tile:
    # F = 4 / 4 = 1.
    layer = Layer("h2", K=1, C=4, OX=2)
    arch = _mini_arch()
    m = Mapping(None, TemporalMapping((("C", 4), ("OX", 2))), {"W": (2, 2), "I": (2, 2), "O": (1, 2)})
    rep = _compare(layer, arch, m)
    o = rep.breakdown["operands"]["O"]
    assert (o[0]["fills"], o[0]["readbacks"]) == (2, 0)
    # C above the O register with OX between: loops OX 2 | C 4, rO boundary 1 (OX inside).
    m2 = Mapping(None, TemporalMapping((("OX", 2), ("C", 4))), {"W": (2, 2), "I": (2, 2), "O": (1, 2)})
    o2 = _compare(layer, arch, m2).breakdown["operands"]["O"]
    assert (o2[0]["fills"], o2[0]["readbacks"]) == (1, 0)
    # rO holding nothing (boundary 0) with loops OX 2 | C 4: visits = 8 / 1 (OX relevant is
    # directly above) = 8, D = 2 -> 6 read-backs; 8 write-ups to DRAM: 2 final (8 bits -> 1 word)
    # + 6 partial (16 bits -> 2 words) = 14 DRAM writes; read-backs 6 * 2 = 12 DRAM reads.
    m3 = Mapping(None, TemporalMapping((("OX", 2), ("C", 4))), {"W": (2, 2), "I": (2, 2), "O": (0, 2)})
    r3 = _compare(layer, arch, m3)
    o3 = {c["memory"]: c for c in r3.breakdown["operands"]["O"]}
    assert (o3["rO"]["fills"], o3["rO"]["readbacks"]) == (8, 6)
    assert (o3["dram"]["writes"], o3["dram"]["reads"]) == (14, 12)


def test_capacity_and_structure_errors_are_reported():
    acc = load_accelerator("eyeriss_like")
    # K = 8 over K 4 spatial -> K 2 temporal; C = 16 -> C 2^4. All loops in the per-PE RFs: the W
    # tile is K 2 x C 16 x FX 3 = 96 weights = 768 bits > 512 bits of rf_64B_W.
    layer = Layer("l", K=8, C=16, OY=2, OX=14, FY=3, FX=3)
    loops = (("K", 2), ("C", 2), ("C", 2), ("C", 2), ("C", 2), ("OY", 2), ("FX", 3))
    m = Mapping(None, TemporalMapping(loops), {"W": (7, 7, 7), "I": (0, 7, 7), "O": (0, 0, 7, 7)})
    r = evaluate(layer, acc, m)
    assert not r.valid and "capacity exceeded at rf_64B_W: tiles need 768 bits > 512" in r.reason
    assert r.energy_pj == math.inf
    bad = Mapping(None, TemporalMapping(loops[:-1]), {"W": (0, 0, 6), "I": (0, 0, 6), "O": (0, 0, 0, 6)})
    r = evaluate(layer, acc, bad)
    assert not r.valid and "temporal factors of FX multiply to 1, expected 3" in r.reason
    wide = Mapping(SpatialMapping({"D1": (("OX", 15),)}), TemporalMapping(loops), {"W": (0, 0, 7), "I": (0, 0, 7), "O": (0, 0, 0, 7)})
    assert "fan-out 15 on D1 exceeds" in evaluate(layer, acc, wide).reason
    dec = Mapping(None, TemporalMapping(loops), {"W": (3, 2, 7), "I": (0, 0, 7), "O": (0, 0, 0, 7)})
    assert "non-decreasing" in evaluate(layer, acc, dec).reason
