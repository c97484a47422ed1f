"""Spatial hints in the full-space mappers (issue 21): cosa, primitive_sa, random5 and hybrid only
return mappings whose spatial unrolling the accelerator's ``[spatial_hint]`` allows; a hint that
allows everything changes nothing; ``hint=False`` ignores the hint; CoSA's constrained optimum is
the best hint-obeying assignment of its own objective (brute force)."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from costmodel.loopnest.arch import accelerator_from_dict, load_accelerator
from costmodel.loopnest.hint import SpatialHint
from costmodel.loopnest.mapping import SPATIAL_DIMS, Mapping
from costmodel.loopnest.reference import evaluate
from costmodel.workload import Layer
from mappers.base import LayerProblem
from mappers.fullspace import COSA, HYBRID, PRIMITIVE_SA, RANDOM5
from mappers.fullspace.cosa import solve_model
from mappers.fullspace.cosa.check import placement_feasible, placement_objective
from mappers.fullspace.cosa.model import build_model
from mappers.fullspace.primitive_sa import PrimitiveSpace

#: Small, fast settings of each mapper (the hint rules do not depend on the budget).
FAST = {"cosa": {"solves": ["0"], "mip_gap": 1e-3}, "random5": {},
        "hybrid": {"threads": 2, "patience": 40, "max_evaluations": 400},
        "primitive_sa": {"iterations": 300}}
MAPPERS = {"cosa": COSA, "random5": RANDOM5, "hybrid": HYBRID, "primitive_sa": PRIMITIVE_SA}


def with_hint(arch, hint: dict | None):
    """``arch`` with its ``[spatial_hint]`` replaced (None: removed)."""
    if hint is None:
        return dataclasses.replace(arch, spatial_hint=None)
    return dataclasses.replace(arch, spatial_hint=SpatialHint.from_dict(hint, arch.array))


def allow_all(arch):
    """A hint that allows every loop dim on every array dim, all at once."""
    return with_hint(arch, {**{a: list(SPATIAL_DIMS) for a in arch.array}, "max_dims": len(SPATIAL_DIMS)})


def unrolled(mapping_dict) -> dict[str, set[str]]:
    """Array dim -> the loop dims unrolled on it with a factor > 1."""
    sp = Mapping.from_dict(mapping_dict).spatial
    return {a: {d for d, f in v if f > 1} for a, v in sp.dims.items()}


def assert_obeys(result, arch, layer):
    """The returned mapping is valid and every array dim unrolls only allowed dims, few enough."""
    assert math.isfinite(result.value), result.extra.get("reason")
    hint = arch.spatial_hint
    m = Mapping.from_dict(result.extra["mapping"])
    assert evaluate(layer, arch, m).valid
    for a, dims in unrolled(result.extra["mapping"]).items():
        assert dims <= set(hint.allowed(a)), (a, dims, hint.allowed(a))
        assert len(dims) <= hint.max_mixed(a), (a, dims)


def tiny_arch(d1=4, d2=2, hint=None):
    d = {"name": "tiny", "mac_pj": 0.5, "array": {"D1": d1, "D2": d2},
         "precision": {"W": 8, "I": 8, "O": 16, "O_final": 8},
         "memory": [
             {"name": "rf", "size_bits": 64, "operands": ["W", "I", "O"], "read_pj": 0.1, "write_pj": 0.1,
              "word_bits": 8, "private_to": "all"},
             {"name": "gb", "size_bits": 2048, "operands": ["W", "I", "O"], "read_pj": 2.0, "write_pj": 2.0,
              "word_bits": 32, "private_to": []},
             {"name": "dram", "operands": ["W", "I", "O"], "read_pj": 50.0, "write_pj": 50.0, "word_bits": 64,
              "private_to": []}]}
    if hint is not None:
        d["spatial_hint"] = hint
    return accelerator_from_dict(d)


SMALL = Layer("small", K=16, C=8, OY=7, OX=7, FY=3, FX=3)
PRESET_LAYERS = {"simba_like": SMALL, "eyeriss_like": Layer("ey", K=16, C=8, OY=14, OX=14, FY=3, FX=3),
                 "tpu_like": Layer("tpu", K=64, C=16, OY=7, OX=7, FY=3, FX=3)}


@pytest.mark.parametrize("mapper", list(MAPPERS))
@pytest.mark.parametrize("preset", list(PRESET_LAYERS))
def test_presets_obey_their_hint(mapper, preset):
    arch = load_accelerator(preset)
    layer = PRESET_LAYERS[preset]
    r = MAPPERS[mapper].search(LayerProblem(layer, arch, objective="latency"), FAST[mapper])
    assert_obeys(r, arch, layer)


@pytest.mark.parametrize("mapper", list(MAPPERS))
def test_hand_made_hint_only_k_on_d1(mapper):
    """Only K on D1, nothing on the other array dims: the mapping unrolls K on D1 alone (K = 16
    and a D1 of 4: every mapper fills it, since the spatial loop saves compute cycles)."""
    simba = load_accelerator("simba_like")
    arch = with_hint(simba, {"D1": ["K"]})
    r = MAPPERS[mapper].search(LayerProblem(SMALL, arch, objective="latency"), FAST[mapper])
    assert_obeys(r, arch, SMALL)
    u = unrolled(r.extra["mapping"])
    assert all(not v for a, v in u.items() if a != "D1")
    # without the hint the same search unrolls more than K on D1
    free = MAPPERS[mapper].search(LayerProblem(SMALL, simba, objective="latency"), dict(FAST[mapper], hint=False))
    assert any(v for a, v in unrolled(free.extra["mapping"]).items() if a != "D1")


@pytest.mark.parametrize("mapper", list(MAPPERS))
def test_allow_all_hint_and_hint_false_equal_no_hint(mapper):
    simba = load_accelerator("simba_like")
    bare = with_hint(simba, None)
    params = FAST[mapper]
    ref = MAPPERS[mapper].search(LayerProblem(SMALL, bare, objective="latency"), params)
    everything = MAPPERS[mapper].search(LayerProblem(SMALL, allow_all(simba), objective="latency"), params)
    off = MAPPERS[mapper].search(LayerProblem(SMALL, simba, objective="latency"), dict(params, hint=False))
    assert everything.value == ref.value and off.value == ref.value
    assert everything.extra["mapping"] == ref.extra["mapping"] == off.extra["mapping"]


@pytest.mark.parametrize("mapper", ["random5", "hybrid", "primitive_sa"])
def test_mixed_limit_on_a_wide_dim(mapper):
    """Eyeriss-like D2 (12 wide) may unroll two of FY, K, C at once; with max 1 only one."""
    ey = load_accelerator("eyeriss_like")
    layer = PRESET_LAYERS["eyeriss_like"]
    for hint in ({"D1": ["OX", "OY"], "D2": ["FY", "K", "C"], "max_dims": {"D2": 1}},
                 {"D1": ["OX", "OY"], "D2": ["FY", "K", "C"], "max_dims": 2}):
        arch = with_hint(ey, hint)
        for seed in (0, 1):
            r = MAPPERS[mapper].search(LayerProblem(layer, arch, objective="energy"), dict(FAST[mapper], seed=seed))
            assert_obeys(r, arch, layer)


def test_cosa_mixed_limit_on_presets():
    """CoSA with mixed unrolling capped at 1 (indicator binaries) and at 2 on eyeriss_like's D2."""
    ey = load_accelerator("eyeriss_like")
    layer = PRESET_LAYERS["eyeriss_like"]
    for m in (1, 2):
        arch = with_hint(ey, {"D1": ["OX", "OY"], "D2": ["FY", "K", "C"], "max_dims": {"D2": m}})
        r = COSA.search(LayerProblem(layer, arch, objective="latency"), FAST["cosa"])
        assert_obeys(r, arch, layer)


# -- primitive space: every draw, initial state and repair obeys the hint -------------------------------

def test_primitive_space_states_obey_hint():
    ey = load_accelerator("eyeriss_like")
    layer = PRESET_LAYERS["eyeriss_like"]
    hint = ey.spatial_hint
    space = PrimitiveSpace(layer, ey, hint)
    rng = np.random.default_rng(0)

    def obeys(sections):
        for k, a in enumerate(space.adims):
            dims = {space.prims[i][0] for i in sections[k]}
            if not dims <= set(hint.allowed(a)) or len(dims) > hint.max_mixed(a):
                return False
        return True

    for seed in range(5):
        s = space.initial(np.random.default_rng(seed))
        assert obeys(s) and space.valid(s)
    cur = space.initial(rng)
    repaired = 0
    for _ in range(300):
        assert obeys(space.random_state(rng))
        prop, _ = space.propose(cur, rng, 0.3)
        fixed, ok = space.repair(prop)
        assert sorted(i for sec in fixed for i in sec) == list(range(space.n))   # nothing lost
        if ok:
            assert obeys(fixed) and space.valid(fixed)
            repaired += not obeys(prop)
            cur = fixed
    assert repaired > 0   # some proposals broke the hint and were repaired


def test_min_utilization_applied_to_random_draws():
    """A floor of half the PEs: every valid random5 draw (and the best) unrolls >= 512 of 1024."""
    simba = load_accelerator("simba_like")
    arch = with_hint(simba, {**simba.spatial_hint.to_dict(), "min_utilization": 0.5})
    layer = Layer("u", K=64, C=64, OY=14, OX=14, FY=3, FX=3)
    r = RANDOM5.search(LayerProblem(layer, arch, objective="latency"), {"valid": 3, "max_samples": 20000})
    assert_obeys(r, arch, layer)
    sp = Mapping.from_dict(r.extra["mapping"]).spatial
    assert math.prod(sp.array_fanout(a) for a in arch.array) >= 512
    space = PrimitiveSpace(layer, arch, arch.spatial_hint)
    rng = np.random.default_rng(0)
    for _ in range(200):
        s = space.random_state(rng)
        v, rep = space.evaluate(s, "latency")
        if math.prod(space.fanouts(s)) < 512:
            assert v == math.inf


# -- CoSA: the constrained MIP against brute force -------------------------------------------------------

def _obeys_assignment(model, choice, hint) -> bool:
    """The test's own reading of the hint on an assignment of the unconstrained model."""
    on: dict[str, dict[str, int]] = {a: {} for a in model.arch.array}
    for f, ((d, p), k) in enumerate(zip(model.factors, choice)):
        pl = model.placements[f][k]
        if pl.kind == "s":
            on[pl.where][d] = on[pl.where].get(d, 1) * p
    for a, dims in on.items():
        if not set(dims) <= set(hint.allowed(a)) or len(dims) > hint.max_mixed(a):
            return False
    used = math.prod(f for v in on.values() for f in v.values())
    return used >= hint.min_utilization * math.prod(model.arch.array.values())


def _brute_force(model, keep) -> float:
    """Least objective of the feasible assignments of ``model`` that ``keep`` accepts (+inf: none)."""
    return min((placement_objective(model, ch) for ch in itertools.product(*[range(len(p)) for p in model.placements])
                if placement_feasible(model, ch) and keep(ch)), default=math.inf)


# Each hint binds: the constrained optimum is worse than the unconstrained one (checked below).
@pytest.mark.parametrize("d1,hint,weights", [
    (4, {"D1": ["K", "C"], "D2": ["K"]}, {}),                                    # K or C on D1, not both
    (12, {"D1": ["K", "C", "OX"], "D2": ["K"], "max_dims": {"D1": 2}}, {}),      # two of three (indicators)
    (4, {"D1": ["OX", "K"], "D2": ["C"], "max_dims": 2, "min_utilization": 1.0},  # the floor: without
     {"w_compute": 0.0}),                                                         # compute cost, fewer PEs win
], ids=["max1", "max2of3", "floor"])
def test_cosa_constrained_optimum_equals_brute_force(d1, hint, weights):
    layer = Layer("t1", K=4, C=2, OX=3)
    free_arch, arch = tiny_arch(d1), tiny_arch(d1, hint=hint)
    free = build_model(layer, free_arch, **weights)
    model = build_model(layer, arch, hint=arch.spatial_hint, **weights)
    status, choice, obj, _, _, _ = solve_model(model, 20.0, 0.0)
    assert status == "optimal"
    best = _brute_force(free, lambda ch: _obeys_assignment(free, ch, arch.spatial_hint))
    assert math.isclose(best, obj, abs_tol=1e-6)
    assert math.isclose(placement_objective(model, choice), obj, abs_tol=1e-6)
    assert obj > _brute_force(free, lambda ch: True) + 1e-3      # the hint binds
    pls = [model.placements[f][k] for f, k in enumerate(choice)]
    assert all(pl.kind != "s" or d in arch.spatial_hint.allowed(pl.where) for (d, _), pl in zip(model.factors, pls))


def test_cosa_unreachable_floor_is_an_infeasible_row():
    """K or C on D1 (4 wide), K on D2 (2): at most 4 of 8 PEs busy, so a floor of 0.75 cannot be met."""
    layer = Layer("t1", K=4, C=2, OX=3)
    arch = tiny_arch(hint={"D1": ["K", "C"], "D2": ["K"], "min_utilization": 0.75})
    free = build_model(layer, tiny_arch())
    assert _brute_force(free, lambda ch: _obeys_assignment(free, ch, arch.spatial_hint)) == math.inf
    r = COSA.search(LayerProblem(layer, arch), {"solves": ["0"]})
    assert r.extra["status"] == "infeasible" and r.value == math.inf


def test_cosa_hint_adds_columns_only_when_needed():
    layer = Layer("t1", K=4, C=2, OX=3)
    bare = build_model(layer, tiny_arch())
    every = tiny_arch(hint={"D1": list(SPATIAL_DIMS), "D2": list(SPATIAL_DIMS), "max_dims": 8})
    same = build_model(layer, every, hint=every.spatial_hint)
    assert (same.num_col, same.num_row, same.c, same.rows, same.cols, same.vals) == \
        (bare.num_col, bare.num_row, bare.c, bare.rows, bare.cols, bare.vals)
    capped = tiny_arch(hint={"D1": ["K", "C", "OX"], "D2": ["K"], "max_dims": {"D1": 2}})
    m = build_model(layer, capped, hint=capped.spatial_hint)
    # D1 (4 wide): K, C, OX can reach it, only 2 at once: 3 indicator binaries; D2 only K: none
    assert m.num_col - sum(len(p) for p in m.placements) == bare.num_col - sum(len(p) for p in bare.placements) + 3
