"""Batch evaluator == reference evaluator on the LOMA allocation; mappings, allocation, helpers."""

import json
import math

import numpy as np
import pytest

from costmodel.loopnest.allocation import allocate
from costmodel.loopnest.arch import load_accelerator
from costmodel.loopnest.ordering import BatchCost, OrderingEvaluator
from costmodel.loopnest.reference import evaluate
from costmodel.loopnest.mapping import (Mapping, MappingError, SpatialMapping, format_loop_nest,
                               prime_factors)
from costmodel.workload import Layer

LAYERS = [
    Layer("resnet34_3x3", K=256, C=256, OY=14, OX=14, FY=3, FX=3),
    Layer("alexnet_conv2", K=256, C=48, OY=27, OX=27, FY=5, FX=5),
    Layer("conv1_s2", K=64, C=3, OY=112, OX=112, FY=7, FX=7, SY=2, SX=2),
    Layer("dw", K=1, C=1, G=32, OY=28, OX=28, FY=3, FX=3),
    Layer("fc", K=1000, C=512),
    Layer("downsample_1x1_s2", K=128, C=64, OY=28, OX=28, SY=2, SX=2),   # rows read, not the span
    Layer("dilated", K=32, C=16, OY=12, OX=12, FY=3, FX=3, DY=2, DX=3),
]


def _random_orderings(ev, n, seed):
    rng = np.random.default_rng(seed)
    base = np.repeat(np.arange(len(ev.types)), ev.counts)
    return np.array([rng.permutation(base) for _ in range(n)])


def _reference(layer, acc, ev, o, even):
    try:
        return evaluate(layer, acc, allocate(layer, acc, None, ev.loops(o), even=even))
    except MappingError:
        return None


@pytest.mark.parametrize("arch", ["eyeriss_like", "simba_like", "tpu_like"])
@pytest.mark.parametrize("even", [False, True])
def test_batch_equals_reference_on_random_orderings(arch, even):
    acc = load_accelerator(arch)
    for k, layer in enumerate(LAYERS):
        ev = OrderingEvaluator(layer, acc, even=even)
        ords = _random_orderings(ev, 40, k)
        bc = ev.evaluate(ords)
        for i, o in enumerate(ords):
            r = _reference(layer, acc, ev, o, even)
            if r is None or not r.valid:
                assert not bc.valid[i] and bc.energy_pj[i] == math.inf
                continue
            assert bc.valid[i]
            assert bc.energy_pj[i] == pytest.approx(r.energy_pj, rel=1e-12)
            assert bc.latency_cycles[i] == pytest.approx(r.latency_cycles, rel=1e-12)
            assert bc.edp[i] == pytest.approx(r.edp, rel=1e-12)
            one = ev.evaluate_one(o)
            assert one[0] == pytest.approx(r.energy_pj, rel=1e-12)
            assert one[1] == pytest.approx(r.latency_cycles, rel=1e-12)


def test_types_counts_objective_and_mapping():
    layer, acc = LAYERS[0], load_accelerator("eyeriss_like")
    ev = OrderingEvaluator(layer, acc)
    # temporal bounds after D1: OX 14, D2: FY 3 x K 4: K 64, C 256, OY 14, FX 3 (OX, FY done spatially)
    assert dict(zip(ev.types, ev.counts.tolist())) == {("K", 2): 6, ("C", 2): 8, ("OY", 2): 1, ("OY", 7): 1,
                                                        ("FX", 3): 1}
    assert ev.n_loops == 17
    ords = _random_orderings(ev, 8, 1)
    bc = ev.evaluate(ords)
    assert isinstance(bc, BatchCost) and bc.energy_pj.shape == (8,)
    assert np.array_equal(ev.objective(ords, "energy"), bc.energy_pj)
    assert np.array_equal(ev.objective(ords, "edp"), bc.energy_pj * bc.latency_cycles)
    with pytest.raises(ValueError, match="objective must be one of"):
        ev.objective(ords, "area")
    m = ev.mapping(ords[0])
    assert m.temporal.loops == ev.loops(ords[0])
    assert evaluate(layer, acc, m).energy_pj == pytest.approx(bc.energy_pj[0], rel=1e-12)
    with pytest.raises(ValueError, match="shape"):
        ev.evaluate(ords[:, :5])


def test_factors_override_merges_composites():
    layer, acc = LAYERS[0], load_accelerator("eyeriss_like")
    factors = [("K", 8), ("K", 8), ("C", 16), ("C", 16), ("OY", 14), ("FX", 3)]
    ev = OrderingEvaluator(layer, acc, factors=factors)
    assert ev.n_loops == 6
    ords = _random_orderings(ev, 20, 3)
    bc = ev.evaluate(ords)
    for i, o in enumerate(ords):
        r = evaluate(layer, acc, allocate(layer, acc, None, ev.loops(o)))
        assert bc.energy_pj[i] == pytest.approx(r.energy_pj, rel=1e-12)
    with pytest.raises(MappingError, match="factors of K multiply to 8"):
        OrderingEvaluator(layer, acc, factors=[("K", 8), ("C", 256), ("OY", 14), ("FX", 3)])


def test_prime_factors():
    assert prime_factors(1) == []
    assert prime_factors(12) == [2, 2, 3]
    assert prime_factors(97) == [97]
    assert prime_factors(2 ** 5 * 3 * 49) == [2, 2, 2, 2, 2, 3, 7, 7]
    with pytest.raises(ValueError):
        prime_factors(0)


def test_mapping_dict_roundtrip_and_printer():
    layer, acc = LAYERS[0], load_accelerator("eyeriss_like")
    ev = OrderingEvaluator(layer, acc)
    m = ev.mapping(_random_orderings(ev, 1, 5)[0])
    d = json.loads(json.dumps(m.to_dict()))
    back = Mapping.from_dict(d)
    assert back.temporal == m.temporal and back.boundaries == m.boundaries
    assert evaluate(layer, acc, back).energy_pj == evaluate(layer, acc, m).energy_pj
    # boundaries by memory name
    named = Mapping.from_dict({"temporal": d["temporal"], "boundaries": {
        op: {lv.name: b for lv, b in zip(acc.levels(op), m.boundaries[op])} for op in "WIO"}})
    assert named.resolve(acc).boundaries == m.boundaries
    text = format_loop_nest(m, layer, acc)
    assert text.count("for ") == 17 + 3 and text.count("parfor ") == 3
    assert "parfor OX in [0, 14):" in text
    with pytest.raises(MappingError, match="unknown key"):
        Mapping.from_dict({"temporal": [], "boundaries": {}, "spatial_unrolling": {}})


def test_even_helper_and_even_allocation():
    layer, acc = LAYERS[0], load_accelerator("eyeriss_like")
    ev = OrderingEvaluator(layer, acc, even=True)
    for o in _random_orderings(ev, 10, 7):
        m = ev.mapping(o)
        # I and O share sram_1M: an even mapping cuts both at the same loop
        assert m.boundaries["I"][1] == m.boundaries["O"][2]
    loops = ev.loops(_random_orderings(ev, 1, 8)[0])
    m = Mapping.even(None, loops, {"rf_64B_A": 1, "rf_64B_W": 1, "rf_16B": 1, "sram_8KB": 3, "sram_64KB": 3,
                                   "sram_1M": 6}, acc)
    assert m.boundaries == {"W": (1, 3, 17), "I": (1, 6, 17), "O": (1, 3, 6, 17)}


def test_allocation_hand_case():
    # One per-PE register of 16 bits for O only above the MAC, DRAM on top; K = 4, C = 2; loops
    # innermost first C 2 | K 2 | K 2. O tiles: prefix 0 -> 1 output (partial, 16 bits: C left
    # above), prefix 1 (C) -> 1 output final 8 bits, prefix 2 (C, K2) -> 2 outputs x 8 = 16 bits,
    # prefix 3 -> 32 bits > 16: stop. Costs = remaining iterations x bits: 8*16 = 128, 4*8 = 32,
    # 2*16 = 32 -> tie between prefixes 1 and 2, ZigZag's `<=` keeps the later: boundary 2.
    from costmodel.loopnest.arch import Accelerator, MemoryLevel
    mems = (MemoryLevel("reg", 16, ("O",), 1, 1, 8, 8, 8, False, ()),
            MemoryLevel("dram", None, ("W", "I", "O"), 10, 10, 8, 8, 8, True, ()))
    acc = Accelerator("a", {"D1": 1}, 1.0, mems, SpatialMapping({}), {"W": 8, "I": 8, "O": 16, "O_final": 8})
    layer = Layer("t", K=4, C=2)
    m = allocate(layer, acc, None, (("C", 2), ("K", 2), ("K", 2)))
    assert m.boundaries["O"] == (2, 3)
    ev = OrderingEvaluator(layer, acc)
    ids = [ev.types.index(t) for t in (("C", 2), ("K", 2), ("K", 2))]
    assert ev.evaluate(np.array([ids])).energy_pj[0] == evaluate(layer, acc, m).energy_pj


def _tight_accelerator():
    """A small accelerator with a buffer shared by all three operands (three free prefixes), integer
    and float pJ, tight capacities (invalid orderings occur)."""
    from costmodel.loopnest.arch import Accelerator, MemoryLevel
    pe = ("D1", "D2")
    mems = (MemoryLevel("reg_w", 16, ("W",), 1, 2, 8, 8, 8, False, pe),
            MemoryLevel("reg_o", 32, ("O",), 1.5, 2, 16, 16, 16, False, pe),
            MemoryLevel("reg_i", 24, ("I",), 1, 1, 8, 8, 8, False, ("D1",)),
            MemoryLevel("buf", 1536, ("W", "I", "O"), 6.25, 7, 64, 64, 32, True, ()),
            MemoryLevel("dram", None, ("W", "I", "O"), 200, 200, 64, 64, 64, True, ()))
    sp = SpatialMapping({"D1": (("K", 4),), "D2": (("C", 2),)})
    return Accelerator("tight", {"D1": 4, "D2": 2}, 0.25, mems, sp, {"W": 8, "I": 8, "O": 16, "O_final": 8})


def test_tight_accelerator_three_operand_buffer_equals_reference():
    acc = _tight_accelerator()
    layer = Layer("small", K=16, C=8, OY=6, OX=6, FY=3, FX=3)
    n_valid = n_invalid = 0
    for even in (False, True):
        ev = OrderingEvaluator(layer, acc, even=even)
        ords = _random_orderings(ev, 60, 11)
        bc = ev.evaluate(ords)
        for i, o in enumerate(ords):
            r = _reference(layer, acc, ev, o, even)
            one = ev.evaluate_one(o)
            if r is None or not r.valid:
                assert not bc.valid[i] and not one[3] and one[0] == math.inf
                n_invalid += 1
                continue
            n_valid += 1
            assert bc.energy_pj[i] == pytest.approx(r.energy_pj, rel=1e-12)
            assert bc.latency_cycles[i] == pytest.approx(r.latency_cycles, rel=1e-12)
            assert one[:3] == (bc.energy_pj[i], bc.latency_cycles[i], bc.edp[i])
    assert n_valid > 0 and n_invalid > 0


@pytest.mark.parametrize("arch", ["eyeriss_like", "simba_like", "tpu_like", "tight"])
def test_numba_and_python_backends_identical(arch):
    pytest.importorskip("numba")
    acc = _tight_accelerator() if arch == "tight" else load_accelerator(arch)
    layers = [Layer("small", K=16, C=8, OY=6, OX=6, FY=3, FX=3)] if arch == "tight" else LAYERS
    for even in (False, True):
        for k, layer in enumerate(layers):
            a = OrderingEvaluator(layer, acc, even=even, backend="numba")
            b = OrderingEvaluator(layer, acc, even=even, backend="python")
            assert (a.backend, b.backend) == ("numba", "python")
            ords = _random_orderings(a, 300, 100 + k)
            x, y = a.evaluate(ords), b.evaluate(ords)
            for f in ("energy_pj", "latency_cycles", "edp", "valid"):
                assert np.array_equal(getattr(x, f), getattr(y, f)), (layer.name, even, f)
            for o in ords[:20]:
                assert a.evaluate_one(o) == b.evaluate_one(o) == b.evaluate_one(o.tolist())
            assert a.evaluate(ords[:3]).energy_pj.tolist() == x.energy_pj[:3].tolist()


def test_backend_selection_and_bad_ids(monkeypatch):
    from costmodel.loopnest import ordering as batch
    layer, acc = LAYERS[0], load_accelerator("eyeriss_like")
    monkeypatch.setenv("DSE_SWEEP_NO_NUMBA", "1")
    assert batch.default_backend() == "python"
    assert OrderingEvaluator(layer, acc).backend == "python"
    monkeypatch.delenv("DSE_SWEEP_NO_NUMBA")
    try:
        import numba  # noqa: F401
    except ImportError:
        assert batch.default_backend() == "python"
        return
    ev = OrderingEvaluator(layer, acc)
    assert ev.backend == "numba"
    with pytest.raises(ValueError, match="backend must be one of"):
        OrderingEvaluator(layer, acc, backend="cuda")
    o = _random_orderings(ev, 2, 0)
    o[1, 3] = len(ev.types)
    with pytest.raises(ValueError, match="type id outside"):
        ev.evaluate(o)
    with pytest.raises(ValueError, match="type id outside"):
        ev.evaluate_one(o[1])
    with pytest.raises(ValueError, match="loops"):
        ev.evaluate_one(o[1][:4])


@pytest.mark.parametrize("even", [False, True])
def test_batch_equals_reference_with_an_accumulator(even):
    """An accumulator inside the MAC (the MAC keeps its partial sum across O-irrelevant loops, each
    MAC adds accumulator_pj): every path still equals the reference, padded conv1 included."""
    import dataclasses
    acc = dataclasses.replace(load_accelerator("eyeriss_like"), accumulator_pj=0.3)
    for k, layer in enumerate(LAYERS[:3]):
        ev = OrderingEvaluator(layer, acc, even=even)
        ords = _random_orderings(ev, 30, 100 + k)
        bc = ev.evaluate(ords)
        for i, o in enumerate(ords):
            r = _reference(layer, acc, ev, o, even)
            if r is None or not r.valid:
                assert not bc.valid[i]
                continue
            assert bc.energy_pj[i] == pytest.approx(r.energy_pj, rel=1e-12)
            assert bc.latency_cycles[i] == pytest.approx(r.latency_cycles, rel=1e-12)
            assert ev.evaluate_one(o)[0] == pytest.approx(r.energy_pj, rel=1e-12)


def test_a_bounded_top_memory_of_o_is_checked_again_for_every_ordering():
    """The kernel keeps a memory's LOMA decision while the loops it read are shared (`kernel._kept`);
    O's top level, when bounded, reads every prefix: each must fit at its own precision. By hand,
    K = C = 4 as loops K 2, K 2, C 2, C 2, one PE, O held only in a 40-bit memory (16-bit partial
    sums, 8-bit final outputs):
      A = C C K K (innermost first): tiles of the prefixes 0..4 hold 1, 1, 1, 2, 4 outputs; partial
      while a C loop is above: 16, 16, 16 bits, then final 16, 32 bits: all fit 40;
      B = K K C C: 1, 2, 4, 4 outputs partial = 16, 32, 64, 64 bits: 64 > 40, no allocation.
    Evaluated after A (no shared loop), B must still be invalid, in one batch or call after call."""
    from costmodel.loopnest.arch import Accelerator, MemoryLevel
    mems = (MemoryLevel("o_buf", 40, ("O",), 1.0, 1.0, 8, 64, 64, False, ()),
            MemoryLevel("dram", None, ("W", "I"), 10.0, 10.0, 8, 64, 64, True, ()))
    acc = Accelerator("o_top", {"D1": 1}, 1.0, mems, SpatialMapping({}),
                      {"W": 8, "I": 8, "O": 16, "O_final": 8})
    layer = Layer("k4c4", K=4, C=4)
    for backend in ("numba", "python"):
        ev = OrderingEvaluator(layer, acc, factors=[("K", 2), ("K", 2), ("C", 2), ("C", 2)], backend=backend)
        k, c = ev.types.index(("K", 2)), ev.types.index(("C", 2))
        a, b = [c, c, k, k], [k, k, c, c]
        assert _reference(layer, acc, ev, a, False).valid and _reference(layer, acc, ev, b, False) is None
        assert ev.evaluate([a, b]).valid.tolist() == [True, False]
        assert ev.evaluate_one(a)[3] and not ev.evaluate_one(b)[3]
