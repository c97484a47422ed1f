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
from mappers.fullspace.cosa import COSA, DEFAULT_SOLVES, decode, solve_model
from mappers.fullspace.cosa.model import build_model
from mappers.fullspace.cosa.check import placement_feasible, placement_objective


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
                       and (pl.where, pl.rank) == model.chain[z])
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
    units = COSA.units(LayerProblem(TINY_LAYERS[0], simba), COSA.resolve({}))
    assert COSA.name == "cosa" and [u.spec["solve"] for u in units] == list(DEFAULT_SOLVES)
    assert len(COSA.units(LayerProblem(TINY_LAYERS[0], simba), COSA.resolve({"solves": ["0"]}))) == 1
    assert {p.name for p in COSA.params} == {"w_util", "w_compute", "w_traffic", "time_limit_s", "mip_gap",
                                              "pad_primes_over", "decode", "port_width", "dram_ranks",
                                              "split_levels", "reuse_eps", "solves", "hint"}
    with pytest.raises(ValueError):
        COSA.resolve({"nope": 1})


def test_padding_large_prime(simba):
    layer = Layer("prime", K=16, C=4, OX=13)
    r = COSA.search(LayerProblem(layer, simba, objective="latency"), {"pad_primes_over": 7})
    assert r.extra["padded"] == {"OX": 13} and math.isfinite(r.value)


# -- port width, DRAM ranks, split levels, decode both ways (version 2) --------------------------------

def narrow_port_arch():
    """tiny_arch with the register file private to D1 only, so D2 lies inside one rf instance, and an
    rf port of 8 bits per cycle: one 8-bit W or I element per cycle (O, 16-bit, at least one)."""
    d = tiny_arch().to_dict()
    d["memory"][0].update(private_to=["D1"], read_bw=8, write_bw=8)
    return accelerator_from_dict(d)


@pytest.mark.parametrize("opts", [dict(), dict(dram_ranks=0), dict(split_levels=False, port_width=False)],
                         ids=["v2", "no_dram_ranks", "merged_no_port"])
def test_mip_optimum_equals_brute_force_variants(opts):
    arch = narrow_port_arch()
    layer = TINY_LAYERS[0]
    model = build_model(layer, arch, **opts)
    status, choice, obj, _, _, _ = solve_model(model, 20.0, 0.0)
    assert status == "optimal"
    assert math.isclose(placement_objective(model, choice), obj, abs_tol=1e-6)
    best = min(placement_objective(model, ch) for ch in itertools.product(*[range(len(p)) for p in model.placements])
               if placement_feasible(model, ch))
    assert math.isclose(best, obj, abs_tol=1e-6)


def test_port_width_holds_in_decoded_mappings(simba):
    """simba_like: the input buffer reads 64 bits (8 inputs of 8 bits) and the accumulation buffer
    192 bits (8 partial sums of 24 bits) per cycle; the spatial loops inside a PE (D3, D4) must not
    ask more. Without the rows the MIP does ask more on these layers. Every solve's mapping is
    checked (the kept one under latency is, since issue 38's tie rule, the least energy of the solves
    of equal latency: on layer b without the rows a solve that fits)."""
    bits = {"I": 8, "O": 24}
    over = 0
    # hint=False: simba_like's spatial hint (C alone on D3, K alone on D4) already keeps within the
    # ports (8 inputs, 8 partial sums per cycle), so the rows only matter in the unconstrained space
    # of the paper (with the hint: 0 of 4 over, with or without the rows)
    for layer in (Layer("a", K=64, C=64, OY=14, OX=14, FY=3, FX=3), Layer("b", K=256, C=64, OY=7, OX=7)):
        for pw in (True, False):
            problem = LayerProblem(layer, simba, objective="latency")
            params = COSA.resolve({"port_width": pw, "mip_gap": 1e-3, "hint": False})
            for u in COSA.units(problem, params):
                r = COSA.run(problem, u, params)
                m = Mapping.from_dict(r.extra["mapping"])
                per_cycle = {v: math.prod(f for a in ("D3", "D4") for d, f in m.spatial.dims.get(a, ())
                                          if d in RELEVANT[v]) for v in bits}
                fits = all(per_cycle[v] * bits[v] <= simba.levels(v)[0].read_bw for v in bits)
                assert fits or not pw
                over += not fits
    assert over >= 1


def test_dram_decode_follows_ranks():
    """Hand case on tiny_arch, t1 (K=4, C=2, OX=3): K2 in the rf, OX3 at the global buffer's rank 0,
    C2 at DRAM rank 0 and K2 at DRAM rank 2 (rank 1 empty): loops innermost first K2, OX3, C2, K2,
    the DRAM loops in rank order; every operand's global-buffer tile ends below the DRAM loops."""
    arch = tiny_arch()
    model = build_model(TINY_LAYERS[0], arch)
    gb, dram = model.gb, model.gb + 1
    want = {0: ("t", 0, -1), 1: ("t", dram, 2), 2: ("t", dram, 0), 3: ("t", gb, 0)}
    assert [d for d, _ in model.factors] == ["K", "K", "C", "OX"]
    choice = [next(k for k, pl in enumerate(model.placements[f]) if (pl.kind, pl.where, pl.rank) == want[f])
              for f in range(4)]
    m = decode(model, choice)
    assert m.temporal.loops == (("K", 2), ("OX", 3), ("C", 2), ("K", 2))
    assert all(b == (1, 2, 4) for b in m.boundaries.values())
    want.update({1: ("t", dram, 0), 2: ("t", dram, 2)})   # swapping the DRAM ranks swaps the loops
    choice = [next(k for k, pl in enumerate(model.placements[f]) if (pl.kind, pl.where, pl.rank) == want[f])
              for f in range(4)]
    assert decode(model, choice).temporal.loops == (("K", 2), ("OX", 3), ("K", 2), ("C", 2))


def test_best_decode_not_worse_than_either(simba):
    from mappers.fullspace.cosa import best_decode
    for layer in (Layer("c", K=64, C=32, OY=14, OX=14, FY=3, FX=3), Layer("d", K=128, C=256, OY=7, OX=7)):
        model = build_model(layer, simba)
        _, choice, _, _, _, _ = solve_model(model, 20.0, 1e-3)
        for obj in ("latency", "energy"):
            vals = {w: best_decode(model, choice, obj, (w,))[3] for w in ("even", "loma")}
            vals = {w: (math.inf if r is None or not r.valid else
                        (r.latency_cycles if obj == "latency" else r.energy_pj)) for w, r in vals.items()}
            way, m, _, rep = best_decode(model, choice, obj)
            got = rep.latency_cycles if obj == "latency" else rep.energy_pj
            assert got == min(vals.values()) and vals[way] == got


def test_objective_matches_direct_evaluation_on_simba(simba):
    """The HiGHS optimum on simba_like (split levels, DRAM ranks, port rows, tie-break) equals the
    direct evaluation of its assignment, which is feasible; the tie-break moves the paper's
    objective by less than its own total."""
    layer = Layer("e", K=32, C=16, OY=14, OX=14, FY=3, FX=3)
    model = build_model(layer, simba)
    status, choice, obj, _, _, _ = solve_model(model, 30.0, 0.0)
    assert status == "optimal" and placement_feasible(model, choice)
    assert math.isclose(placement_objective(model, choice), obj, abs_tol=1e-6)
    plain = build_model(layer, simba, reuse_eps=0.0)
    _, choice0, obj0, _, _, _ = solve_model(plain, 30.0, 0.0)
    assert placement_objective(plain, choice) - obj0 <= 0.002 * math.log(14 * 14) + 1e-6
