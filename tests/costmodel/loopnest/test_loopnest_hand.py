"""Hand-worked cases of the reference evaluator, each also checked against the literal walk
(`test_loopnest_oracle.check`: every documented relation between the model and the walk)."""

import dataclasses
import math

import pytest

from costmodel.loopnest.arch import Accelerator, MemoryLevel, load_accelerator
from costmodel.loopnest.reference import evaluate
from costmodel.loopnest.mapping import Mapping, SpatialMapping, TemporalMapping
from costmodel.workload import Layer
from loopnest_oracle import real_macs, walk
from test_loopnest_oracle import check


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
    rep = check(layer, arch, m)
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


def test_hand_strided_1x1_reads_every_other_input():
    # Layer: K=1, C=1, OX=4, FX=1, stride SX=2 (a 1x1 downsample, 1-D): outputs 0..3 read inputs
    # 0, 2, 4, 6 -> 4 inputs, though the window spans SX (OX - 1) + 1 = 7 columns. One PE (K 1
    # over D1); loops innermost first OX 4, all in the registers; rI holds the whole row.
    layer = Layer("s2", K=1, C=1, OX=4, FX=1, SX=2)
    assert layer.IX == 7
    sp = SpatialMapping({"D1": (("K", 1),)})
    arch = _mini_arch(sp)
    m = Mapping(sp, TemporalMapping((("OX", 4),)), {"W": (1, 1), "I": (1, 1), "O": (1, 1)})
    rep = check(layer, arch, m)
    by = {(c["operand"], c["memory"]): c for op in rep.breakdown["operands"].values() for c in op}
    # rI tile: the 4 inputs read (4 x 8 bits = 4 words of rI), loaded once from DRAM: 4 DRAM reads
    # and 4 rI writes (the span would move 7); the MAC reads rI once per cycle: 4 reads.
    assert by[("I", "rI")]["tile_elems"] == 4
    assert by[("I", "dram")]["reads"] == 4 and by[("I", "rI")]["writes"] == 4
    assert by[("I", "rI")]["reads"] == 4
    # A dilated 1-D filter: FX 2 at DX 3, OX 2 (stride 1): inputs {0, 3, 1, 4} -> 4 read of the
    # span 1 + 3 + 1 = 5 (input 2 is skipped).
    dil = Layer("d3", K=1, C=1, OX=2, FX=2, DX=3)
    m = Mapping(sp, TemporalMapping((("OX", 2), ("FX", 2))), {"W": (2, 2), "I": (2, 2), "O": (2, 2)})
    rep = check(dil, arch, m)
    by = {(c["operand"], c["memory"]): c for op in rep.breakdown["operands"].values() for c in op}
    assert by[("I", "rI")]["tile_elems"] == 4 and by[("I", "dram")]["reads"] == 4


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
    rep = check(layer, arch, m)
    o = rep.breakdown["operands"]["O"]
    assert (o[0]["fills"], o[0]["readbacks"]) == (2, 0)
    # C above the O register with OX between: loops OX 2 | C 4, rO boundary 1 (OX inside).
    m2 = Mapping(None, TemporalMapping((("OX", 2), ("C", 4))), {"W": (2, 2), "I": (2, 2), "O": (1, 2)})
    o2 = check(layer, arch, m2).breakdown["operands"]["O"]
    assert (o2[0]["fills"], o2[0]["readbacks"]) == (1, 0)
    # rO holding nothing (boundary 0) with loops OX 2 | C 4: visits = 8 / 1 (OX relevant is
    # directly above) = 8, D = 2 -> 6 read-backs; 8 write-ups to DRAM: 2 final (8 bits -> 1 word)
    # + 6 partial (16 bits -> 2 words) = 14 DRAM writes; read-backs 6 * 2 = 12 DRAM reads.
    m3 = Mapping(None, TemporalMapping((("OX", 2), ("C", 4))), {"W": (2, 2), "I": (2, 2), "O": (0, 2)})
    r3 = check(layer, arch, m3)
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


def test_hand_no_free_accumulation_and_the_accumulator():
    """K=1, C=4, one PE; loops C 4, everything in the per-PE registers (rO word 16 bits, psum 16,
    final 8 bits).

    No accumulator: each of the 4 MACs writes its partial sum to rO (3 partial + 1 final, one word
    each) and the 3 later ones first read the previous partial sum back (the first accumulation
    reads nothing): rO writes 4, reads 3 + 1 (the final output written up to DRAM, 8 bits = 1
    DRAM word). With an accumulator of 0.25 pJ the MAC keeps the sum over C: rO gets 1 final write,
    is read once for the write-up; energy + 4 MACs x 0.25 pJ."""
    layer = Layer("acc", K=1, C=4)
    arch = _mini_arch()
    m = Mapping(None, TemporalMapping((("C", 4),)), {"W": (1, 1), "I": (1, 1), "O": (1, 1)})
    rep = check(layer, arch, m)
    ro = {c["memory"]: c for c in rep.breakdown["operands"]["O"]}["rO"]
    assert (ro["writes"], ro["reads"]) == (4, 4)
    acc = dataclasses.replace(arch, accumulator_pj=0.25)
    rep2 = check(layer, acc, m)
    ro2 = {c["memory"]: c for c in rep2.breakdown["operands"]["O"]}["rO"]
    assert (ro2["writes"], ro2["reads"]) == (1, 1)
    # energy difference: rO accesses (4 + 4 - 1 - 1) x 1 pJ saved, 4 x 0.25 pJ of accumulations added
    assert rep.energy_pj - rep2.energy_pj == pytest.approx(6 * 1.0 - 4 * 0.25)


def test_hand_unrolling_that_does_not_divide_the_layer():
    """K=1, C=1, OX=2, FX=3 with FX unrolled over 2 PEs (D1): FX is padded to 2 x ceil(3/2) = 4;
    PE0 computes fx 0 and 2, PE1 fx 1 and 3 (3 is padding: PE1 idles in the 2nd FX slice).
    Loops OX 2 (innermost), FX 2, all in the per-PE registers; real MACs 2 x 3 = 6 (padded 8).

    * rO writes from the MAC (no accumulator): one per real MAC = 6 (padded nest: 2 PEs x 4 = 8).
    * W: a weight stays in the MAC across the OX loop; each real weight (fx 0, 1, 2) is read from
      rW once: 3 reads (padded 4), rW filled with its 3 real weights: 3 writes (padded 4), DRAM
      sends 3 words.
    * rO read-backs: the documented share, 2 PEs x (4 visits - 2 outputs) x 3/4 = 3. The walk
      counts per PE: PE0 reads back its 2 outputs at fx 2, PE1 idles at fx 3: 2 (the share counts
      the idle slice on average, as ZigZag does).
    * The write-up to DRAM: each PE reads its 2 partial sums (its outputs still lack the other
      PE's filter taps): literally 2 x 16 bits = 2 rO words per PE = 4; the model reads them at
      the precision rO holds them (model version 4; before, at the reduced write's 8 bits),
      2 x 16 bits = 2 words per PE x 2 PEs x 3/4 = 3."""
    layer = Layer("pad", K=1, C=1, OX=2, FX=3)
    sp = SpatialMapping({"D1": (("FX", 2),)})
    arch = _mini_arch(sp)
    m = Mapping(sp, TemporalMapping((("OX", 2), ("FX", 2))), {"W": (2, 2), "I": (2, 2), "O": (2, 2)})
    rep = check(layer, arch, m)
    assert real_macs(layer, arch, m) == 6 == layer.macs
    by = {(c["operand"], c["memory"]): c for op in rep.breakdown["operands"].values() for c in op}
    assert by[("O", "rO")]["writes"] == pytest.approx(6)
    # + the write-up to DRAM (reduced over D1 on the way: final there): 2 partial sums x 16 bits
    # = two 16-bit rO words per PE, 2 PEs x 3/4
    assert by[("O", "rO")]["reads"] == pytest.approx(3 + 2 * 2 * 3 / 4)
    assert by[("O", "dram")]["writes"] == 2   # the 2 real outputs, 8 bits each: DRAM is not padded
    assert by[("W", "rW")]["reads"] == pytest.approx(3)
    assert by[("W", "rW")]["writes"] == pytest.approx(3)
    assert by[("W", "dram")]["reads"] == pytest.approx(3)
    lit = walk(layer, arch, m)
    assert lit[("O", "rO")]["writes"] == 6                # one partial sum per real MAC, as the model
    assert lit[("O", "rO")]["reads"] == 2 + 4             # read-backs 2 + write-up 2 x 2 words
    assert lit[("W", "rW")]["reads"] == 3 and lit[("W", "rW")]["writes"] == 3


def test_hand_fractional_window_of_the_input():
    """OY=2, FY=3 (stride 1, K=C=OX=FX=1): the input has SY (OY-1) + FY = 4 rows. FY unrolled over
    the 2 PEs of D1 is padded to 4 (temporal FY 2): the padded nest spans 1 + 4 = 5 input rows.
    I: a per-PE register rI, a buffer gI shared by both PEs (it holds the whole input), DRAM.
    Loops OY 2, FY 2, all below gI. gI's tile holds the spatial FY, so FY's real share 3/4 enters
    its window as a fractional extent (ZigZag's fractional unrolling, FY 2 x 3/4 x 2 = 3): rows
    1 x (2 - 1) + (3 - 1) + 1 = 4 = the real input, not 5 x 3/4 = 3.75 (less than the input).

    * DRAM reads = gI writes = 4 (one 8-bit word per real input element), energy 4 x 10 pJ.
    * rI (private to D1: FY is over its instances) keeps the count share: per element one MAC
      read, rI filled 2 PEs x 4 visits x 3/4 = 6 times; gI reads 6 (distinct data per PE).
    The walk: DRAM reads 4 (rows 0..3: PE1's filter row 3 is padding), gI reads 6 (one per real
    MAC: PE0 fy 0 and 2, PE1 fy 1, each for oy 0 and 1)."""
    layer = Layer("win", K=1, C=1, OY=2, FY=3)
    sp = SpatialMapping({"D1": (("FY", 2),)})
    mems = (MemoryLevel("rW", None, ("W",), 1.0, 1.0, 8, 8, 8, False, ("D1",)),
            MemoryLevel("rI", None, ("I",), 1.0, 1.0, 8, 8, 8, False, ("D1",)),
            MemoryLevel("rO", None, ("O",), 1.0, 1.0, 16, 16, 16, False, ("D1",)),
            MemoryLevel("gI", None, ("I",), 2.0, 3.0, 8, 8, 8, False, ()),
            MemoryLevel("dram", None, ("W", "I", "O"), 10.0, 10.0, 8, 8, 8, True, ()))
    arch = Accelerator("win", {"D1": 2}, 1.0, mems, sp, {"W": 8, "I": 8, "O": 16, "O_final": 8})
    m = Mapping(sp, TemporalMapping((("OY", 2), ("FY", 2))), {"W": (2, 2), "I": (0, 2, 2), "O": (2, 2)})
    rep = check(layer, arch, m)
    by = {(c["operand"], c["memory"]): c for op in rep.breakdown["operands"].values() for c in op}
    assert by[("I", "gI")]["tile_elems"] == 5                  # capacity: the padded window
    assert by[("I", "dram")]["reads"] == pytest.approx(4)      # the 4 real input rows
    assert by[("I", "gI")]["writes"] == pytest.approx(4)
    assert by[("I", "gI")]["reads"] == pytest.approx(6)        # 2 PEs x 4 x 3/4: the 6 real MACs
    assert by[("I", "rI")]["writes"] == pytest.approx(6)
    assert by[("I", "rI")]["reads"] == pytest.approx(6)
    assert layer.macs == 6
    lit = walk(layer, arch, m)
    assert (lit[("I", "dram")]["reads"], lit[("I", "gI")]["writes"], lit[("I", "gI")]["reads"]) == (4, 4, 6)
    assert lit[("I", "gI")]["tile"] == 5 and lit[("I", "gI")]["tile_real"] == 4


def _buf_arch(size_bits, buf_bw, dram_bw):
    """One PE; a buffer for W, I and O (size_bits, 8-bit words, separate read / write ports of
    buf_bw bits per cycle); DRAM (unbounded, 8-bit words, one shared port of dram_bw bits/cycle)."""
    mems = (MemoryLevel("buf", size_bits, ("W", "I", "O"), 1.0, 1.0, 8, buf_bw, buf_bw, False, ()),
            MemoryLevel("dram", None, ("W", "I", "O"), 10.0, 10.0, 8, dram_bw, dram_bw, True, ()))
    return Accelerator("buf", {"D1": 1}, 1.0, mems, SpatialMapping({}), {"W": 8, "I": 8, "O": 16, "O_final": 8})


@pytest.mark.parametrize("size_bits, buf_bw, dram_bw, latency", [
    (600, 64, 64, 16),    # double-buffered, traffic hidden under compute
    (300, 64, 64, 16),    # single-buffered buf: its fills fit the window of its link (16 cycles)
    (600, 64, 8, 33),     # DRAM port bound: 33 cycles of traffic for 16 of compute
])
def test_hand_latency_stalls_and_double_buffering(size_bits, buf_bw, dram_bw, latency):
    """K=1, C=16, one PE, loops C 16 all in buf (W, I, O), no accumulator.

    Accesses: buf reads = W 16 + I 16 (one per MAC) + O read-backs 15 x 2 words (16-bit psums)
    + 1 (the final 8-bit output written up) = 63; buf writes = W 16 + I 16 (fills) + O 1 final
    word + 15 x 2 partial words = 63. DRAM: reads 16 + 16 = 32, writes 1. Tiles in buf: W 16 x 8
    + I 16 x 8 + O 1 x 8 (final: no C loop above) = 264 bits; compute = 16 cycles.

    * buf 600 bits >= 2 x 264: double-buffered; buf time max(63, 63) x 8 / 64 = 7.875 <= 16,
      DRAM (32 + 1) x 8 / 64 = 4.125 <= 16: latency 16.
    * buf 300 bits: holds the tiles once, not twice: the link DRAM -> buf may only transfer in
      buf's window, compute // T with T the op-irrelevant run straddling the boundary (W, I: the
      C loop is relevant, T = 1, window 16; O: C 16 irrelevant, T = 16, window 1). buf read port
      63 x 8 / 64 = 7.875 (W, I, O, every window 16 but O's 1 final word read in window 1:
      0.125 <= 1), write port 7.875 <= 16, DRAM 4.125 <= 16: latency 16 (the first fill before
      the first MAC, ZigZag's on-loading, is not modelled).
    * DRAM at 8 bits per cycle (shared port): (32 + 1) x 8 / 8 = 33 cycles, unbounded (double-
      buffered): stall 33 - 16 = 17, latency 33."""
    layer = Layer("lat", K=1, C=16)
    arch = _buf_arch(size_bits, buf_bw, dram_bw)
    m = Mapping(None, TemporalMapping((("C", 16),)), {"W": (1, 1), "I": (1, 1), "O": (1, 1)})
    rep = check(layer, arch, m)
    buf = [c for op in rep.breakdown["operands"].values() for c in op if c["memory"] == "buf"]
    assert sum(c["reads"] for c in buf) == 63 and sum(c["writes"] for c in buf) == 63
    assert sum(c["tile_bits"] for c in buf) == 264
    assert rep.breakdown["compute_cycles"] == 16
    assert rep.latency_cycles == latency
    # 200 bits cannot hold the 264 bits of tiles once: invalid
    assert not evaluate(layer, _buf_arch(200, 64, 64), m).valid


def _rf_sram_arch(rf_bits, shared=True):
    """Two PEs (D1 = 2, K 2 unrolled); W and I straight from DRAM (wide ports); per PE an O
    register file rf (16-bit words, wide ports, rf_bits); one O SRAM for both PEs (16-bit words,
    16 bits per cycle, one shared read / write port unless ``shared`` is False)."""
    mems = (MemoryLevel("dram", None, ("W", "I"), 1.0, 1.0, 8, 1024, 1024, False, ()),
            MemoryLevel("rf", rf_bits, ("O",), 1.0, 1.0, 16, 1024, 1024, False, ("D1",)),
            MemoryLevel("sram", None, ("O",), 1.0, 1.0, 16, 16, 16, shared, ()))
    return Accelerator("rf_sram", {"D1": 2}, 1.0, mems, SpatialMapping({"D1": (("K", 2),)}),
                       {"W": 8, "I": 8, "O": 16, "O_final": 8})


@pytest.mark.parametrize("rf_bits, shared, stall", [
    (16, True, 6),     # rf full: window 8 // 2 = 4, both directions in it: 6 + 4 - 4
    (32, True, 2),     # rf double-buffered: window 8: 6 + 4 - 8
    (16, False, 2),    # separate ports: write port 6 - 4, read port 4 - 4
])
def test_hand_port_stall_of_a_single_buffered_register_file(rf_bits, shared, stall):
    """The sram_8KB -> rf_16B situation of eyeriss_like in small (ZigZag's window rule).

    Layer K 2, C 4, OX 2; K 2 on the array; temporal loops innermost first C 2 | OX 2, C 2 with
    the rf boundary after the first C 2 (rf holds one 16-bit partial sum per PE: 16 bits).
    Compute = 2 x 2 x 2 = 8 cycles. Link rf -> sram: F = 4 visits (OX 2 x C 2 above, the OX loop
    directly above is O-relevant so R = 1), D = 2 first visits, 2 read-backs. Per visit the two
    PEs' outputs (g = K 2) move together: write-ups 2 final x ceil(2 x 8 / 16) = 2 words + 2
    partial x ceil(2 x 16 / 16) = 4 words = 6 words = 6 cycles at 16 bits per cycle; read-backs
    2 x 2 words = 4 cycles. rf (16 bits) holds its tile once, not twice: the link may transfer
    only in rf's window = compute // T, T = the O-irrelevant run straddling the boundary = the
    C 2 at the top of rf's loops (the OX above is relevant) = 2: window 4 cycles. On one shared
    port both directions fall in the same window: stall = 6 + 4 - 4 = 6, latency 14. A full
    window (wrong T, or rf of 32 bits, double-buffered): 6 + 4 - 8 = 2, latency 10; separate
    ports: max(6 - 4, 4 - 4) = 2. Directions not added (each against its own window, ZigZag's
    sum of positive excesses): (6 - 4) + 0 = 2."""
    layer = Layer("rf_sram", K=2, C=4, OX=2)
    m = Mapping(None, TemporalMapping((("C", 2), ("OX", 2), ("C", 2))), {"W": (3,), "I": (3,), "O": (1, 3)})
    rep = check(layer, _rf_sram_arch(rf_bits, shared), m)
    o = rep.breakdown["operands"]["O"]
    assert (o[1]["writes"], o[1]["reads"]) == (6, 4)
    assert rep.breakdown["compute_cycles"] == 8
    assert rep.breakdown["stall_cycles"]["sram"] == stall
    assert rep.latency_cycles == 8 + stall


def _ports_arch(word, read_pj, read_bw):
    """l1 (I and O, ports per operand where the arguments are tables; write_pj 2, write_bw 2048,
    separate read and write ports), then a DRAM of 512-bit words (10 pJ); no MAC energy."""
    from costmodel.loopnest.arch import accelerator_from_dict
    return accelerator_from_dict({
        "name": "ports", "mac_pj": 0.0, "array": {"D1": 1}, "precision": {"W": 8, "I": 8, "O": 8, "O_final": 8},
        "memory": [{"name": "l1", "operands": ["I", "O"], "word_bits": word, "read_pj": read_pj, "write_pj": 2.0,
                    "read_bw": read_bw, "write_bw": 2048},
                   {"name": "dram", "operands": ["W", "I", "O"], "read_pj": 10.0, "write_pj": 10.0, "word_bits": 512,
                    "shared_port": True}]})


def test_hand_per_operand_ports():
    """K = C = 1, OX 256, all in l1: the I tile and the O tile are 256 x 8 = 2048 bits each. l1's
    I port is 512 bits wide, its O port 2048 (gemm_l1_l3's l1 in ZigZag): the I fill from DRAM is
    4 accesses of 512 bits, the O write-up to DRAM 1 access of 2048 (a 2048-bit port moving
    4 x 512 bits); with one 2048-bit word for both, the I fill would be 1 access."""
    layer = Layer("p", K=1, C=1, OX=256)
    m = Mapping(SpatialMapping({}), TemporalMapping((("OX", 256),)), {"W": (1,), "I": (1, 1), "O": (1, 1)})
    arch = _ports_arch({"I": 512, "O": 2048}, {"I": 1.0, "O": 3.0}, {"I": 256, "O": 2048})
    rep = check(layer, arch, m)
    by = {(c["operand"], c["memory"]): c for op in rep.breakdown["operands"].values() for c in op}
    # I: 256 reads into the MAC (one 512-bit word each), 4 writes (2048 / 512) from DRAM's 4
    assert (by[("I", "l1")]["reads"], by[("I", "l1")]["writes"], by[("I", "dram")]["reads"]) == (256, 4, 4)
    # O: 256 writes from the MAC (no accumulator), 1 read (2048 / 2048) to DRAM's 4 writes
    assert (by[("O", "l1")]["reads"], by[("O", "l1")]["writes"], by[("O", "dram")]["writes"]) == (1, 256, 4)
    # energy: I at l1 256 x 1 + 4 x 2, O at l1 1 x 3 + 256 x 2, DRAM (4 + 4 + 1 weight) x 10
    assert rep.energy_pj == 256 + 8 + 3 + 512 + 90
    # l1's read port: I 256 x 512 / 256 = 512 cycles + O 1 x 2048 / 2048 = 1, in the 256 compute
    # cycles: stall 257; its write port: I 4 x 512 / 2048 = 1 + O 256 x 2048 / 2048 = 256: stall 1
    assert rep.breakdown["stall_cycles"]["l1"] == 257 and rep.latency_cycles == 256 + 257
    # today's form (one port, the widest word, its energy, its bandwidth): a quarter of the I fill
    wide = check(layer, _ports_arch(2048, 3.0, 2048), m)
    by = {(c["operand"], c["memory"]): c for op in wide.breakdown["operands"].values() for c in op}
    assert by[("I", "l1")]["writes"] == 1 and wide.energy_pj == 256 * 3 + 2 + 3 + 512 + 90
    # a table whose values are all equal is the scalar: the same accelerator
    assert _ports_arch({"I": 2048, "O": 2048}, 3.0, {"I": 2048, "O": 2048}) == _ports_arch(2048, 3.0, 2048)


def _diag_arch(multicast):
    """A 4 x 3 array fed by one input buffer ``gb`` (8-bit words, 1 pJ; one instance), W and O in
    per-PE registers, then DRAM; ``multicast``: the TOML table, or None."""
    from costmodel.loopnest.arch import accelerator_from_dict
    d = {"name": "diag", "mac_pj": 0.0, "array": {"D1": 4, "D2": 3}, "precision": {"W": 8, "I": 8, "O": 8, "O_final": 8},
         "spatial": {"D1": [["OX", 4]], "D2": [["FX", 3]]},
         "memory": [{"name": "rW", "operands": ["W"], "word_bits": 8, "read_pj": 0.0, "write_pj": 0.0, "private_to": "all"},
                    {"name": "rO", "operands": ["O"], "word_bits": 8, "read_pj": 0.0, "write_pj": 0.0, "private_to": "all"},
                    {"name": "gb", "operands": ["I"], "word_bits": 8, "read_pj": 1.0, "write_pj": 1.0},
                    {"name": "dram", "operands": ["W", "I", "O"], "read_pj": 10.0, "write_pj": 10.0, "word_bits": 8,
                     "shared_port": True}]}
    if multicast is not None:
        d["multicast"] = multicast
    return accelerator_from_dict(d)


def test_hand_multicast_of_inputs_across_array_dims():
    """OX 4 on D1 x FX 3 on D2, stride 1, C 2 temporal: each cycle the 12 PEs need inputs ox + fx,
    4 + 3 - 1 = 6 distinct. Without multicast gb sends every PE its own input: 12 reads a cycle,
    24 in all; with ``multicast = { I = ["D1", "D2"] }`` the 6 distinct ones: 12 in all. Over D1
    only, the 3 columns of FX each get the union of their 4 OX PEs' inputs (4): 12 a cycle; over D2
only, the 4 rows of OX the union of their 3 FX PEs' (3): 12 a cycle."""
    layer = Layer("diag", K=1, C=2, OX=4, FX=3)
    m = Mapping(None, TemporalMapping((("C", 2),)), {"W": (0, 1), "I": (0, 1), "O": (0, 1)})
    reads = {}
    for mc in (None, {"I": ["D1", "D2"]}, {"I": ["D2", "D1"]}, {"I": ["D1"]}, {"I": ["D2"]}):
        rep = check(layer, _diag_arch(mc), m)
        by = _by_mem(rep)
        reads[str(mc)] = by[("I", "gb")]["reads"]
        assert by[("I", "gb")]["writes"] == by[("I", "dram")]["reads"] == 2 * 6   # the input, once
    assert reads == {"None": 24, "{'I': ['D1', 'D2']}": 12, "{'I': ['D2', 'D1']}": 12, "{'I': ['D1']}": 24,
                     "{'I': ['D2']}": 24}
    assert walk(layer, _diag_arch({"I": ["D1", "D2"]}), m)[("I", "gb")]["reads_e"] == 12
    rep = evaluate(layer, _diag_arch({"I": ["D1", "D2"]}), m)
    assert rep.energy_pj == 12 * 1.0 + 12 * 1.0 + 12 * 10.0 + 6 * 10.0 + 4 * 10.0  # I at gb r / w; I, W, O at DRAM
    # the key is validated, named with its value; accelerators without it keep their repr (ids)
    with pytest.raises(ValueError, match=r"multicast.W = \['D1'\]"):
        _diag_arch({"W": ["D1"]})
    with pytest.raises(ValueError, match=r"multicast.I = \['D3'\]"):
        _diag_arch({"I": ["D3"]})
    assert "multicast" not in repr(_diag_arch(None)) and "multicast=(('I', ('D1', 'D2')),)" in repr(
        _diag_arch({"I": ["D1", "D2"]}))


def _by_mem(rep):
    return {(c["operand"], c["memory"]): c for op in rep.breakdown["operands"].values() for c in op}
