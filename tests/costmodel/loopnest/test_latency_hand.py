"""Latency worked by hand from the hardware description: a memory replicated over an array dim
(several instances) whose port stalls. Every instance has its own port, so the transfers of one
instance (the total over the instances / instances) are timed at its bandwidth
(`costmodel.loopnest.reference`, latency model: t = words x word_bits / bandwidth / instances).
Pinned on the reference and on the fast evaluator (`OrderingEvaluator`, whose LOMA allocation
must give the boundaries worked here), with its compiled kernel and without it
(``DSE_SWEEP_NO_NUMBA=1``)."""

import pytest

from costmodel.loopnest.arch import Accelerator, MemoryLevel
from costmodel.loopnest.mapping import Mapping, SpatialMapping, TemporalMapping
from costmodel.loopnest.ordering import OrderingEvaluator
from costmodel.loopnest.reference import evaluate
from costmodel.workload import Layer

#: K 2 over the 2 rows (D1), OX 2 over the 2 columns (D2) of a 2 x 2 array.
SPATIAL = SpatialMapping({"D1": (("K", 2),), "D2": (("OX", 2),)})
#: K = 4 (2 spatial x 2 temporal), C = 4, OX = 4 (2 x 2), 1-D 1x1 convolution: 64 MACs.
LAYER = Layer("row_buffer", K=4, C=4, OX=4)
#: Temporal loops innermost first (compute = 2 x 2 x 2 x 2 = 16 cycles).
LOOPS = (("C", 2), ("C", 2), ("K", 2), ("OX", 2))
#: lb holds W's loops [0, 4) and I's loops [0, 3) (I's OX 2 stays above it, in DRAM); O is
#: accumulated in the MACs and written straight to DRAM.
BOUNDARIES = {"W": (4, 4), "I": (3, 4), "O": (4,)}


@pytest.fixture(params=["", "1"], ids=["default", "no_numba"])
def fast(request, monkeypatch):
    """`OrderingEvaluator` of ``arch`` on LAYER: the default backend, then with
    ``DSE_SWEEP_NO_NUMBA=1`` (read when an evaluator is built)."""
    monkeypatch.setenv("DSE_SWEEP_NO_NUMBA", request.param)
    return lambda arch: OrderingEvaluator(LAYER, arch)


def _row_buffer_arch(bw=16, shared=True):
    """A 2 x 2 array, an accumulator in every MAC (0.5 pJ), and

    * lb: one W/I buffer per row (private_to D1: 2 instances, each serving the 2 PEs of its row),
      128 bits, 8-bit words, per instance ONE shared read/write port of ``bw`` = 16 bits per
      cycle (or, ``shared`` False, a read and a write port of ``bw`` each);
    * dram: W, I, O, unbounded, 8-bit words, separate 64-bit read and write ports.
    Precisions W 8, I 8, O partial 16, O final 8 bits."""
    mems = (MemoryLevel("lb", 128, ("W", "I"), 1.0, 1.0, 8, bw, bw, shared, ("D1",)),
            MemoryLevel("dram", None, ("W", "I", "O"), 10.0, 10.0, 8, 64, 64, False, ()))
    return Accelerator("row_buffer", {"D1": 2, "D2": 2}, 1.0, mems, SPATIAL,
                       {"W": 8, "I": 8, "O": 16, "O_final": 8}, accumulator_pj=0.5)


def test_hand_latency_of_a_row_buffer_whose_shared_port_stalls(fast):
    """Compute: 16 cycles (C 2 x C 2 x K 2 x OX 2).

    Allocation (LOMA: least sum of rem x tile bits, jointly <= 128 bits of lb; rem = product of
    the loops above the prefix: 16, 8, 4, 2, 1 for prefixes 0..4). Per lb instance the W tile
    counts C and K (OX, in the row or temporal, is W-irrelevant): prefixes 0..4 hold 1, 2, 4, 8, 8
    weights = 8, 16, 32, 64, 64 bits, cost 128, 128, 128, 128, 64. The I tile holds the row's
    2 OX x C (K is I-irrelevant): 2, 4, 8, 8, 16 inputs = 16, 32, 64, 64, 128 bits, cost 256, 256,
    256, 128, 128. I 4 (128 bits) leaves no room for any W tile; the best fitting pair is W 4 +
    I 3 (64 + 64 = 128 bits, cost 64 + 128 = 192; every other W prefix costs 128, every other
    fitting I prefix 256). lb is then full: 2 x 128 > 128 bits, single-buffered.

    lb traffic per instance (the 2 instances, one per row, each behind its own port):
    * MAC side (reads, window = compute = 16: the MAC link is never single-buffered): a new W and
      I every cycle (the innermost C is relevant to both). W: the row's 2 PEs share one weight
      (OX along the row is W-irrelevant: multicast) -> 1 word per cycle x 16 = 16 words;
      I: 2 distinct inputs per cycle -> 2 x 16 = 32 words. 48 words x 8 bits / 16 bits per
      cycle = 24 cycles.
    * DRAM side (writes, fills): W tile 8 weights = 8 words, loaded once (F = 1); I tile 8 inputs
      = 8 words, loaded F = 2 times (once per value of the OX 2 above it) = 16 words. 24 words x 8 /
      16 = 12 cycles. lb is single-buffered, so a fill may only overlap the last pass of the
      run of loops irrelevant to the operand straddling the boundary: W: the OX 2 at the top of
      lb (K below it is relevant) -> T = 2; I: the K 2 at the top of lb's I loops (OX above is
      relevant, C below it too) -> T = 2. Window 16 // 2 = 8.
    One shared port, windows opening together: the transfers due within 8 cycles (the fills,
    12 cycles) exceed it by 4; all 36 cycles within 16 exceed it by 20. Stall = max(4, 20) = 20.
    Summed over both instances (no per-instance division) the port would need 72 cycles
    (stall 56, latency 72).

    DRAM (1 instance): reads W 8 weights x K 2 rows (16 distinct weights) = 16 words + I 8 x 2
    fills = 16 words: 32 x 8 / 64 = 4 cycles (window 8); writes: 16 final outputs (one visit of
    each, the C loops inside the MAC's accumulator) = 16 words x 8 / 64 = 2 cycles: no stall.

    Latency = 16 + 20 = 36 cycles. Energy: 64 MACs x (1 + 0.5) = 96 pJ; lb (1 pJ per access) W
    32 reads (16 per row) + 16 writes, I 64 + 32; DRAM (10 pJ) 16 + 16 reads + 16 writes:
    96 + 48 + 96 + 480 = 720 pJ."""
    arch = _row_buffer_arch()
    assert [m.size_bits for m in arch.memories] == [128, None]
    rep = evaluate(LAYER, arch, Mapping(SPATIAL, TemporalMapping(LOOPS), BOUNDARIES))
    assert rep.valid, rep.reason
    lb = {op: c[0] for op, c in rep.breakdown["operands"].items() if c[0]["memory"] == "lb"}
    assert lb["W"]["instances"] == lb["I"]["instances"] == 2
    assert (lb["W"]["tile_bits"], lb["I"]["tile_bits"]) == (64, 64)
    assert (lb["W"]["reads"], lb["I"]["reads"]) == (32, 64)        # both rows: 2 x (16, 32)
    assert (lb["W"]["writes"], lb["I"]["writes"]) == (16, 32)      # both rows: 2 x (8, 16)
    assert rep.breakdown["compute_cycles"] == 16
    assert rep.breakdown["stall_cycles"] == {"lb": 20.0, "dram": 0.0}
    assert rep.latency_cycles == 36
    assert rep.energy_pj == 720

    ev = fast(arch)
    ordering = [ev.types.index(t) for t in LOOPS]
    assert ev.loops(ordering) == LOOPS
    assert ev.mapping(ordering).boundaries == BOUNDARIES
    energy, latency, edp, valid = ev.evaluate_one(ordering)
    assert valid and (energy, latency, edp) == (720, 36, 720 * 36)
    batch = ev.evaluate([ordering, ordering])
    assert batch.latency_cycles.tolist() == [36, 36] and batch.energy_pj.tolist() == [720, 720]


@pytest.mark.parametrize("bw, shared, stall", [
    # separate ports: read port 48 words x 8 / 16 = 24 cycles in 16 -> 8; write port 24 x 8 / 16
    # = 12 in 8 -> 4; stall 8 (summed over both rows: 48 - 16 = 32)
    (16, False, 8),
    # shared, 32 bits per cycle: fills 24 x 8 / 32 = 6 in 8 -> none; fills + reads 6 + 12 = 18 in
    # 16 -> 2 (summed over both rows: max(12 - 8, 36 - 16) = 20)
    (32, True, 2),
    # shared, 64 bits per cycle: 3 + 6 = 9 in 16: the row's port keeps up (summed over both rows:
    # 18 - 16 = 2)
    (64, True, 0),
])
def test_hand_latency_of_the_row_buffer_with_other_ports(fast, bw, shared, stall):
    """The case above (the same accesses per lb instance: 48 MAC-side reads within the 16-cycle
    window, 24 fill writes within the 8-cycle window of the single-buffered lb) with lb's ports
    changed; DRAM stays without a stall. Latency = 16 + stall on both evaluators."""
    arch = _row_buffer_arch(bw, shared)
    rep = evaluate(LAYER, arch, Mapping(SPATIAL, TemporalMapping(LOOPS), BOUNDARIES))
    assert rep.breakdown["stall_cycles"] == {"lb": stall, "dram": 0.0}
    assert rep.latency_cycles == 16 + stall and rep.energy_pj == 720
    ev = fast(arch)
    ordering = [ev.types.index(t) for t in LOOPS]
    assert ev.mapping(ordering).boundaries == BOUNDARIES
    assert ev.evaluate_one(ordering)[:2] == (720, 16 + stall)
    assert ev.evaluate([ordering]).latency_cycles.tolist() == [16 + stall]
