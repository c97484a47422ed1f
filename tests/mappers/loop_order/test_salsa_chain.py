"""The compiled SALSA chains (`mappers.loop_order.chain`) follow the Python chains of
`mappers.loop_order.annealer` draw for draw: the same best value and ordering, history, accepted
moves, evaluation counts and memo, for one chain and for chains in lockstep, every normalisation,
both move kinds, every objective, and chains whose pre-drawn buffer runs out (the caller extends it
from the chain's Generator). The Python chains are the oracle: they draw through `PairStream` /
`MoveStream` and accept through `mappers.annealing.log_accept_arg`, code the compiled loop does not
call."""

from __future__ import annotations

import numpy as np
import pytest

import mappers.loop_order.annealer as annealer
from costmodel.loopnest.arch import load_accelerator
from costmodel.loopnest.kernel import JIT
from costmodel.loopnest.ordering import OrderingEvaluator
from costmodel.workload import Layer
from mappers.loop_order.chain import KERNEL_SOURCES, compiled
from mappers.loop_order.salsa import DEFAULT_SCHEDULE

pytestmark = pytest.mark.skipif(not JIT, reason="numba is off: there is no compiled chain")

CONV = Layer("c", K=128, C=64, OY=28, OX=28, FY=3, FX=3)
#: temporal K 256 = 2^8 and C 3 on eyeriss_like (OX 14, FY 3 x K 4 unrolled): 28 of the 36 pairs
#: swap equal LPFs, so most swap draws are rejected and a chain's first buffer runs out
REPEATS = Layer("r", K=1024, C=3, OY=1, OX=14, FY=3, FX=1)


@pytest.fixture(scope="module")
def arch():
    return load_accelerator("eyeriss_like")


def _both(ev, objective, seeds, **kw):
    """(compiled chains, Python chains) of the same seeds."""
    assert compiled(ev)
    a = annealer.anneal(ev, objective, [np.random.default_rng(s) for s in seeds], **kw)
    orig = annealer.compiled
    annealer.compiled = lambda ev: False
    try:
        b = annealer.anneal(ev, objective, [np.random.default_rng(s) for s in seeds], **kw)
    finally:
        annealer.compiled = orig
    return a, b


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.value == y.value and x.v0 == y.v0
        assert np.array_equal(x.ordering, y.ordering)
        assert (x.evaluations, x.accepted) == (y.evaluations, y.accepted)
        assert np.array_equal(x.history, y.history)
        assert list(x.memo().items()) == list(y.memo().items())   # same keys, values and order


@pytest.mark.parametrize("normalise", ["log", "initial", "best", "zigzag"])
@pytest.mark.parametrize("moves", ["swap", "mixed"])
def test_one_chain_follows_the_python_chain(arch, normalise, moves):
    ev = OrderingEvaluator(CONV, arch, backend="numba")
    a, b = _both(ev, "energy", [3], iterations=400, t0=0.05, rho=0.99, normalise=normalise, moves=moves)
    _same(a, b)
    assert a[0].accepted > 10 and a[0].value < a[0].v0   # the chain moved and improved


@pytest.mark.parametrize("objective", ["energy", "latency", "edp"])
def test_lockstep_chains_follow_the_python_chains(arch, objective):
    ev = OrderingEvaluator(CONV, arch, backend="numba")
    d = DEFAULT_SCHEDULE
    a, b = _both(ev, objective, range(8), iterations=150, t0=d["t0"], rho=d["rho"], normalise="log",
                 moves="mixed", swap_share=d["swap_share"])
    _same(a, b)


@pytest.mark.parametrize("moves", ["swap", "mixed"])
def test_a_buffer_that_runs_out_is_extended_as_the_stream_extends_it(arch, moves, monkeypatch):
    ev = OrderingEvaluator(REPEATS, arch, backend="numba")
    extended = []
    for cls in (annealer.PairStream, annealer.MoveStream):
        more = cls.more
        monkeypatch.setattr(cls, "more", lambda self, more=more: (extended.append(1), more(self))[1])
    a, b = _both(ev, "energy", [0, 1], iterations=300, t0=0.05, rho=0.99, moves=moves)
    _same(a, b)
    assert extended   # a buffer ran out (in both paths)


def test_repeated_proposals_are_looked_up_not_counted(arch):
    """At zero temperature after a while a chain keeps proposing from one state: repeats are
    common, and both paths count only the first evaluation of each ordering."""
    ev = OrderingEvaluator(REPEATS, arch, backend="numba")
    a, b = _both(ev, "energy", [5], iterations=600, t0=1e-12, rho=0.5, moves="swap")
    _same(a, b)
    assert a[0].evaluations < 600   # repeats happened and were not counted


def test_the_python_backend_keeps_the_python_chain(arch):
    assert not compiled(OrderingEvaluator(CONV, arch, backend="python"))
    assert len(KERNEL_SOURCES) == 64
