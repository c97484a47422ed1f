"""CoSA mapper (mappers.fullspace.cosa): decoded mappings, MIP optimum vs brute force, exact linearisation,
solver outcomes as rows."""

import itertools
import math

import numpy as np
import pytest

from costmodel.loopnest.arch import accelerator_from_dict, load_accelerator
from costmodel.loopnest.reference import evaluate
from costmodel.loopnest.mapping import RELEVANT, SPATIAL_DIMS, Mapping
from costmodel.workload import Layer
from mappers.base import LayerProblem
from mappers.fullspace.cosa import COSA, decode, solve_model
from mappers.fullspace.cosa_model import build_model
from mappers.fullspace.cosa_check import placement_feasible, placement_objective


def tiny_arch(reg_bits=64, gb_bits=2048):
    return accelerator_from_dict({
        "name": "tiny", "mac_pj": 0.5, "array": {"D1": 2, "D2": 2},
        "precision": {"W": 8, "I": 8, "O": 16, "O_final": 8},
        "memory": [
            {"name": "rf", "size_bits": reg_bits, "operands": ["W", "I", "O"], "read_pj": 0.1, "write_pj": 0.1,
             "word_bits": 8, "private_to": "all"},
            {"name": "gb", "size_bits": gb_bits, "operands": ["W", "I", "O"], "read_pj": 2.0, "write_pj": 2.0,
             "word_bits": 32, "private_to": []},
            {"name": "dram", "operands": ["W", "I", "O"], "read_pj": 50.0, "write_pj": 50.0, "word_bits": 64,
             "private_to": []},
        ]})


TINY_LAYERS = [Layer("t1", K=4, C=2, OX=3), Layer("t2", K=2, C=2, OY=2, FY=3)]


@pytest.fixture(scope="module")
def simba():
    return load_accelerator("simba_like")


def test_decoded_mapping_valid_on_simba(simba):
    layer = Layer("small", K=16, C=8, OY=7, OX=7, FY=3, FX=3)
    r = COSA.search(LayerProblem(layer, simba, objective="latency"), {"mip_gap": 1e-3})
    assert r.extra["status"] == "optimal" and r.engine == "mip" and r.ordering is None
    m = Mapping.from_dict(r.extra["mapping"])
    m.check(layer, simba)                       # structure: fan-out, factor products, boundaries
    rep = evaluate(layer, simba, m)             # capacity
    assert rep.valid and math.isclose(rep.latency_cycles, r.value) and math.isclose(rep.energy_pj, r.energy_pj)
    for a, size in simba.array.items():
        assert m.spatial.array_fanout(a) <= size
    tp = m.temporal.dim_products()
    for d in SPATIAL_DIMS:                      # every prime factor placed exactly once
        assert tp[d] * m.spatial.factor(d) == getattr(layer, d)
    assert r.loops == tuple(m.temporal.loops)


@pytest.mark.parametrize("layer", TINY_LAYERS, ids=lambda l: l.name)
def test_mip_optimum_equals_brute_force(layer):
    arch = tiny_arch()
    model = build_model(layer, arch)
    status, choice, obj, _, _, _ = solve_model(model, 20.0, 0.0)
    assert status == "optimal"
    assert math.isclose(placement_objective(model, choice), obj, abs_tol=1e-6)
    assert placement_feasible(model, choice)
    best = math.inf
    for ch in itertools.product(*[range(len(p)) for p in model.placements]):
        if placement_feasible(model, ch):
            best = min(best, placement_objective(model, ch))
    assert math.isclose(best, obj, abs_tol=1e-6)
    m = decode(model, choice)
    m.check(layer, arch)
    assert evaluate(layer, arch, m).valid


def _t_interval(model, j, x):
    """Feasible interval of column j given all other columns fixed at x (from the rows)."""
    lo, hi = model.lb[j], model.ub[j]
    rows = np.asarray(model.rows); cols = np.asarray(model.cols); vals = np.asarray(model.vals)
    for r in set(rows[cols == j].tolist()):
        sel = rows == r
        a = vals[sel & (cols == j)].sum()
        rest = sum(v * x[c] for c, v in zip(cols[sel], vals[sel]) if c != j)
        rlo, rhi = (model.rlo[r] - rest) / a, (model.rhi[r] - rest) / a
        if a < 0:
            rlo, rhi = rhi, rlo
        lo, hi = max(lo, rlo), min(hi, rhi)
    return lo, hi


def test_linearisation_exact_for_random_binaries(simba):
    layer = Layer("lin", K=8, C=4, OY=6, OX=6, FY=3, FX=3)
    model = build_model(layer, simba)
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = np.zeros(model.num_col)
        choice = [int(rng.integers(len(p))) for p in model.placements]
        for f, k in enumerate(choice):
            x[model.xcol[f][k]] = 1.0
        for y in model.ycols.values():
            x[y] = float(rng.integers(2))
        for (v, z), t in model.tcols.items():
            lirr = sum(math.log(p) for f, (d, p) in enumerate(model.factors)
                       if d not in RELEVANT[v] and (pl := model.placements[f][choice[f]]).kind == "t"
                       and pl.where == model.gb and pl.rank == z)
            prod = (1.0 - x[model.ycols[v, z]]) * lirr
            lo, hi = _t_interval(model, t, x)
            assert lo == pytest.approx(prod, abs=1e-9) and hi == pytest.approx(prod, abs=1e-9)
        assert model.tcols


def test_infeasible_is_a_row_not_an_error():
    arch = tiny_arch(reg_bits=4)  # cannot hold one 8-bit element
    r = COSA.search(LayerProblem(TINY_LAYERS[0], arch))
    assert r.extra["status"] == "infeasible" and r.value == math.inf


def test_tiny_time_limit(simba):
    layer = Layer("conv", K=64, C=64, OY=56, OX=56, FY=3, FX=3)
    r = COSA.search(LayerProblem(layer, simba), {"time_limit_s": 0.001})
    assert r.extra["status"] in ("time_limit", "optimal")
    assert r.value == math.inf or r.value > 0


def test_params_and_units(simba):
    assert COSA.name == "cosa" and len(COSA.units(LayerProblem(TINY_LAYERS[0], simba), {})) == 1
    assert {p.name for p in COSA.params} == {"w_util", "w_compute", "w_traffic", "time_limit_s", "mip_gap",
                                              "pad_primes_over"}
    with pytest.raises(ValueError):
        COSA.resolve({"nope": 1})


def test_padding_large_prime(simba):
    layer = Layer("prime", K=16, C=4, OX=13)
    r = COSA.search(LayerProblem(layer, simba, objective="latency"), {"pad_primes_over": 7})
    assert r.extra["padded"] == {"OX": 13} and math.isfinite(r.value)
