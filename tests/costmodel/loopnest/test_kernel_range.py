"""The kernel's 64-bit counts: a layer just inside `KERNEL_MAX_COUNT` gives the reference's figures
(Python integers, no limit), one beyond it is refused naming the layer, never a wrapped number
(issue 57: a layer of more than 2^63 MACs was "ok" at 5.14e18 pJ from `sweep map`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from costmodel.loopnest.allocation import allocate
from costmodel.loopnest.arch import load_accelerator
from costmodel.loopnest.mapping import MappingError
from costmodel.loopnest.ordering import OrderingEvaluator
from costmodel.loopnest.reference import evaluate
from costmodel.loopnest.tables import KERNEL_MAX_COUNT, KernelRangeError
from costmodel.workload import Layer


@pytest.fixture(scope="module")
def eyeriss():
    return load_accelerator("eyeriss_like")


def test_a_layer_near_the_limit_gives_the_references_figures(eyeriss):
    # 2^16 x 2^18 x 2^9 x 1,792 x 3 = 2^43 x 5,376 MACs (no padding on OX 14, FY 3 x K 4) x 16 bits
    # (O's partial sums): 2^59.4, within 2^62; every tile-bit x loops-above product is below it
    layer = Layer("big", K=1 << 16, C=1 << 18, OY=1 << 9, OX=1792, FY=3, FX=1)
    assert layer.macs * 16 < KERNEL_MAX_COUNT < 2 * layer.macs * 16 * 4
    ev = OrderingEvaluator(layer, eyeriss, backend="numba" if _jit() else "python")
    rng = np.random.default_rng(0)
    base = np.repeat(np.arange(len(ev.types)), ev.counts)
    checked = 0
    for _ in range(40):
        o = rng.permutation(base)
        e, lat, _, valid = ev.evaluate_one(o)
        try:
            ref = evaluate(layer, eyeriss, allocate(layer, eyeriss, None, ev.loops(o)))
        except MappingError:
            assert not valid
            continue
        assert valid and ref.valid
        assert math.isclose(e, ref.energy_pj, rel_tol=1e-12) and math.isclose(lat, ref.latency_cycles, rel_tol=1e-12)
        assert e > 1e17   # pJ: counts near 2^60, where a wrapped int64 would show
        checked += 1
    assert checked >= 5


def test_a_layer_beyond_the_limit_is_refused(eyeriss):
    layer = Layer("huge", K=1 << 31, C=1 << 31, OY=1 << 16, OX=1 << 16)   # 2^94 MACs
    with pytest.raises(KernelRangeError, match=r"layer 'huge': .* MACs \(spatially padded\) x 16 bits reach 2\^62"):
        OrderingEvaluator(layer, eyeriss)
    just = Layer("just", K=1 << 19, C=1 << 18, OY=1 << 9, OX=1792, FY=3, FX=1)   # 2^46 x 5,376 x 16 > 2^62
    with pytest.raises(KernelRangeError):
        OrderingEvaluator(just, eyeriss)


def _jit() -> bool:
    from costmodel.loopnest.kernel import JIT
    return JIT
