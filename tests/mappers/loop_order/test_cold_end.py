"""The annealers past the smallest temperature a float holds: T_i = T0 rho^i is exactly 0 after
i > ln(5e-324 / T0) / ln(rho) iterations (about 7,050 at SALSA's default T0 = 0.0044, rho = 0.9),
where exp((V - V') / T) has its limit: accept a move that does not raise the cost, refuse one
that does (a greedy descent). Before the fix a long chain divided by zero (``sweep tune``'s
reference runs of 20,000 iterations at the default schedule failed with ZeroDivisionError)."""

import math

import numpy as np

from costmodel.loopnest.arch import load_accelerator
from costmodel.workload import Layer
from mappers import get_mapper
from mappers.base import LayerProblem
from mappers.annealing import log_accept_arg

LAYER = Layer("small", K=8, C=16, OY=7, OX=7, FY=3, FX=3)


def test_the_bound_at_zero_temperature_is_the_limit():
    for normalise in ("log", "zigzag", "initial", "best"):
        assert log_accept_arg(2.0, 1.0, 1.0, 0.0, normalise) == math.inf     # better: accepted
        assert log_accept_arg(1.0, 1.0, 1.0, 0.0, normalise) == math.inf     # equal: accepted, as at any T > 0
        assert log_accept_arg(1.0, 2.0, 1.0, 0.0, normalise) == -math.inf    # worse: refused
        # the same decisions as at a tiny positive temperature
        assert log_accept_arg(2.0, 1.0, 1.0, 1e-300, normalise) > 0 > log_accept_arg(1.0, 2.0, 1.0, 1e-300, normalise)


def test_salsa_and_primitive_sa_run_past_the_underflow():
    """Both annealers finish 8,000 iterations at rho = 0.9 (T is 0 from iteration ~7,050 on) with a
    valid cost no better than the exhaustive optimum (LOMA over every ordering)."""
    assert 0.05 * 0.9 ** np.arange(8000)[-1] == 0.0
    arch = load_accelerator("eyeriss_like")
    prob = LayerProblem(LAYER, arch, None, "energy")
    best = get_mapper("loma").search(prob, {"max_orderings": 10**7}).value
    salsa = get_mapper("salsa").search(prob, {"chains": 1, "iterations": 8000, "rho": 0.9, "t0": 0.05,
                                              "engine": "sa", "descent": False, "seed": 3})
    assert math.isfinite(salsa.value) and salsa.value >= best * (1 - 1e-12)
    psa = get_mapper("primitive_sa").search(prob, {"chains": 1, "iterations": 8000, "rho": 0.9, "t0": 0.05, "seed": 3})
    assert math.isfinite(psa.value)
