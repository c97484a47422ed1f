"""Flexer's open-chain bound (`open_chain_limit`), chain-first candidate window and largest-first
placement: the bound holds in every produced schedule, a small schedule checked by hand, and the
VGG16 conv3_2 tiling on arch5 where the unbounded window spilled partial sums (issue 13)."""

import pytest

from costmodel.npu import NPUArch, Tiling, load_npu
from costmodel.workload import Layer
from mappers.npu import flexer as flexer_mod
from mappers.npu.flexer import flexer_schedule, open_chain_limit
from mappers.npu.graph import build_dfg, summarize, validate
from mappers.npu.static import STATIC

VGG_CONV3_2 = Layer("conv3_2", K=256, C=256, OY=56, OX=56, FY=3, FX=3, PY=1, PX=1)
SMALL = Layer("small", K=64, C=32, OY=8, OX=8, FY=3, FX=3)
POINT = Layer("point", K=96, C=64, OY=6, OX=6)


def _arch(n, kib, bw=32):
    return NPUArch(f"t{n}", cores=n, buffer_bytes=int(kib * 1024), bandwidth=bw)


def _max_open(g, dataflow, monkeypatch, **kw):
    """Schedule ``g`` recording the committed sets; the largest number of chains open after a set
    (first op of the chain committed, last not yet), and the engine."""
    sets = []
    orig = flexer_mod._State.commit

    def commit(self, ops):
        sets.append(tuple(ops))
        return orig(self, ops)

    monkeypatch.setattr(flexer_mod._State, "commit", commit)
    eng = flexer_schedule(g, dataflow, **kw)
    opened, peak = set(), 0
    for ops in sets:
        for o in ops:
            t = g.op_out[o]
            if g.op_pred[o] < 0:
                assert t not in opened
                opened.add(t)
            if g.op_succ[o] < 0:
                opened.discard(t)
        peak = max(peak, len(opened))
    assert not opened and sum(map(len, sets)) == g.n_ops
    return peak, eng


def test_open_chain_limit_by_hand():
    g = build_dfg(VGG_CONV3_2, load_npu("arch5"), Tiling(14, 28, 32, 64))
    # IN (14+2)*(28+2)*32 = 15360, WT 9*32*64 = 18432, OT 14*28*64*4 = 100352 B; 256 KiB buffer
    assert (262144 - 15360 - 18432) // 100352 == 2 == open_chain_limit(g)
    assert open_chain_limit(g, capacity=100352 + 15360 + 18432) == 1   # always at least one


@pytest.mark.parametrize("layer,arch,tiling", [
    (SMALL, _arch(2, 16), Tiling(4, 4, 8, 32)), (SMALL, _arch(4, 12), Tiling(2, 8, 8, 32)),
    (SMALL, _arch(2, 6), Tiling(4, 4, 8, 32)), (POINT, _arch(4, 8), Tiling(3, 6, 16, 32)),
    (POINT, _arch(3, 24), Tiling(6, 6, 16, 48))])
@pytest.mark.parametrize("dataflow", ["oy-ox-c-k", "k-c-oy-ox", "c-k-oy-ox"])
def test_open_chains_never_exceed_the_bound(layer, arch, tiling, dataflow, monkeypatch):
    g = build_dfg(layer, arch, tiling)
    assert g.counts[2] > 1   # chains of more than one tCONV
    peak, eng = _max_open(g, dataflow, monkeypatch)
    assert validate(eng) == []
    assert 1 <= peak <= open_chain_limit(g)
    peak1, eng1 = _max_open(g, dataflow, monkeypatch, max_open=1)
    assert peak1 == 1 and validate(eng1) == []
    assert eng1.bytes["PS"] == 0   # one open chain always fits beside one IN and WT tile


def test_small_schedule_by_hand():
    """1x1 conv, 2 chains of 2 tCONVs, OT 4 KiB in a 6 KiB buffer: one chain at a time.
    IN/WT tiles 512 B = 16 cycles at 32 B/cycle; a tCONV (16 x 32 weights, 32 pixels) 125 cycles;
    final write-back 1 KiB = 32 cycles."""
    g = build_dfg(Layer("pw", K=32, C=32, OY=8, OX=8), _arch(2, 6), Tiling(4, 8, 16, 32))
    assert open_chain_limit(g) == 1
    eng = flexer_schedule(g, "oy-ox-c-k")
    assert validate(eng) == []
    assert eng.trace() == [
        ("dram", 0, 16, "load IN(0, 0, 0)"), ("dram", 16, 32, "load WT(0, 0)"),
        ("core0", 32, 157, "tCONV(0, 0, 0, 0)"),
        ("dram", 32, 48, "load WT(1, 0)"),               # the free KiB, while the first op runs
        ("dram", 157, 173, "load IN(0, 0, 1)"),          # in place of IN(0, 0, 0), dead at 157
        ("core1", 173, 298, "tCONV(0, 0, 1, 0)"),
        ("dram", 298, 330, "writeback OT(0, 0, 0)"),
        ("dram", 330, 346, "load IN(1, 0, 0)"),          # the second chain after the first is closed
        ("core0", 346, 471, "tCONV(1, 0, 0, 0)"),
        ("dram", 471, 487, "load IN(1, 0, 1)"),
        ("core1", 487, 612, "tCONV(1, 0, 1, 0)"),
        ("dram", 612, 644, "writeback OT(1, 0, 0)")]
    assert eng.bytes == {"IN": 2048, "WT": 1024, "OT": 2048, "PS": 0}


def test_vgg16_conv3_2_tiling_no_spills_and_not_worse_than_static(monkeypatch):
    """Issue 13: on this tiling (two 98 KiB partial sums fit the 256 KiB buffer) the first-window
    scheduler opened up to 4 chains and spilled 22-45 MB of partial sums (0.05-0.14x the static
    schedule's latency x bytes). Now no partial sum is spilled, and every dataflow's schedule is at
    most 0.1 % worse than the best static schedule of the tiling (9.0798e12)."""
    g = build_dfg(VGG_CONV3_2, load_npu("arch5"), Tiling(14, 28, 32, 64))
    static = min(summarize(e, "latency_bytes")["value"]
                 for _, e in STATIC.schedules(g, STATIC.resolve({})) if e is not None)
    for df in ("oy-ox-c-k", "k-c-oy-ox", "c-k-oy-ox"):
        peak, eng = _max_open(g, df, monkeypatch)
        assert peak <= 2 and eng.bytes["PS"] == 0 and validate(eng) == []
        assert summarize(eng, "latency_bytes")["value"] <= 1.001 * static
