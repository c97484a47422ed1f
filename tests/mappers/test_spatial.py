"""Spatial-unrolling candidates under a hint (`mappers.spatial`): the set against a brute force over
every factor vector, the capacity rule against the reference model, the ranking worked by hand, the
bandwidth and capacity exclusions, and the loop-order mappers' search over candidates."""

import itertools
import math

import pytest

from costmodel.loopnest.arch import Accelerator, MemoryLevel, load_accelerator
from costmodel.loopnest.hint import SpatialHint
from costmodel.loopnest.mapping import Mapping, SpatialMapping, TemporalMapping
from costmodel.loopnest.reference import evaluate
from costmodel.workload import Layer
from mappers import get_mapper
from mappers.base import LayerProblem, check_params
from mappers.spatial import NoSpatialCandidate, spatial_candidates, spatial_mode

DIMS = ("B", "K", "C", "OY", "OX", "FY", "FX", "G")


def _mem(name, ops, size, bw=1024, private=()):
    return MemoryLevel(name, size, tuple(ops), 1.0, 1.0, 8, bw, bw, False, tuple(private))


def _arch(array, mems, hint, spatial=None):
    return Accelerator("t", dict(array), 1.0, tuple(mems), SpatialMapping(spatial or {}),
                       {"W": 8, "I": 8, "O": 16, "O_final": 8}, spatial_hint=hint)


def _roomy(array, hint):
    """Per-PE register files big enough for any spatial tile, so only the hint rules bind."""
    allpe = tuple(array)
    return _arch(array, [_mem("rw", "W", 1 << 20, private=allpe), _mem("ri", "I", 1 << 20, private=allpe),
                         _mem("ro", "O", 1 << 20, private=allpe), _mem("dram", "WIO", None)], hint)


def _as_set(cands):
    return {tuple(sorted((a, tuple(v)) for a, v in c.spatial.dims.items())) for c in cands}


def _brute_force(layer, arch, hint):
    """Every factor vector (each array dim x loop dim: a factor 1..size) kept when it obeys the rules
    stated in the module docstring, checked one by one; capacity by the reference model (an
    all-temporal-at-DRAM mapping of the unrolling is valid iff every memory holds its spatial tile)."""
    axes = list(arch.array)
    per_axis = []
    for a in axes:
        size = arch.array[a]
        opts = []
        allowed = hint.allowed(a)
        for fs in itertools.product(range(1, size + 1), repeat=len(allowed)):
            if math.prod(fs) > size:
                continue
            used = [(d, f) for d, f in zip(allowed, fs) if f > 1]
            if len(used) > hint.max_mixed(a):
                continue
            if any(min(getattr(layer, d), size) % f for d, f in used):  # factors divide min(bound, size)
                continue
            opts.append(tuple(used))
        per_axis.append(opts)
    out = set()
    for combo in itertools.product(*per_axis):
        tot = {}
        for o in combo:
            for d, f in o:
                tot[d] = tot.get(d, 1) * f
        if any(f > getattr(layer, d) for d, f in tot.items()):
            continue
        sp = SpatialMapping({a: o for a, o in zip(axes, combo) if o})
        temporal = [(d, b) for d, b in sp.temporal_bounds(layer).items() if b > 1]
        bounds = {op: [0] * (len(arch.levels(op)) - 1) + [len(temporal)] for op in "WIO"}
        rep = evaluate(layer, arch, Mapping(sp, TemporalMapping(tuple(temporal)), bounds))
        if rep.valid:
            out.add(tuple(sorted((a, tuple(o)) for a, o in zip(axes, combo) if o)))
    return out


@pytest.mark.parametrize("layer, array, hint", [
    (Layer("l1", K=6, C=4, OX=5), {"D1": 4, "D2": 3}, {"D1": ["K", "C"], "D2": ["OX"]}),
    (Layer("l2", K=8, C=6, OY=3, OX=4, FY=3), {"D1": 6, "D2": 4},
     {"D1": ["K", "C", "FY"], "D2": ["OX", "OY", "K"], "max_dims": 2}),
    (Layer("l3", K=12, C=5, OX=7, FX=3, SX=2), {"D1": 8, "D2": 5},
     {"D1": ["K", "C", "OX"], "D2": ["FX", "C"], "max_dims": {"D1": 3}}),
])
def test_candidates_equal_a_brute_force_over_every_factor_vector(layer, array, hint):
    h = SpatialHint.from_dict(hint, array)
    arch = _roomy(array, h)
    got = spatial_candidates(layer, arch, keep=None)
    assert _as_set(got) == _brute_force(layer, arch, h)
    assert len(got) == len(_as_set(got))  # no duplicates


def test_capacity_rule_agrees_with_the_reference_model():
    # an O buffer shared by the 4 PEs of D2 holding 2 partial sums (32 bits at 16 bits): OX may unroll
    # at most 2 ways on D2; W and I per PE are roomy
    array = {"D1": 3, "D2": 4}
    h = SpatialHint.from_dict({"D1": ["K"], "D2": ["OX", "C"]}, array)
    arch = _arch(array, [_mem("rw", "W", 1 << 16, private=("D1", "D2")), _mem("ri", "I", 1 << 16, private=("D1", "D2")),
                         _mem("ro", "O", 32, private=("D1",)), _mem("dram", "WIO", None)], h)
    layer = Layer("l", K=3, C=4, OX=8)
    got = _as_set(spatial_candidates(layer, arch, keep=None))
    assert got == _brute_force(layer, arch, h)
    ox = {dict(c).get("D2", ((None, 1),))[0] for c in got}
    assert ("OX", 2) in ox and ("OX", 4) not in ox  # 4 psums x 16 bits > 32 bits: excluded
    assert ("C", 4) in ox  # C is irrelevant to O: the buffer still holds one psum


def test_bandwidth_rule_caps_a_factor_on_a_shared_innermost_memory():
    # one W buffer feeds all of D1 and reads 16 bits per cycle = 2 weights of 8 bits: K (W-relevant)
    # may unroll at most 2 ways on D1; OX (W-irrelevant, a multicast) is not capped
    array = {"D1": 4, "D2": 1}
    h = SpatialHint.from_dict({"D1": ["K", "OX"]}, array)
    arch = _arch(array, [_mem("wb", "W", 1 << 16, bw=16, private=()), _mem("ri", "I", 1 << 16, private=("D1", "D2")),
                         _mem("ro", "O", 1 << 16, private=("D1", "D2")), _mem("dram", "WIO", None)], h)
    got = _as_set(spatial_candidates(Layer("l", K=8, C=2, OX=4), arch, keep=None))
    d1 = {c[0][1] for c in got if c}
    assert (("K", 2),) in d1 and (("K", 4),) not in d1
    assert (("OX", 4),) in d1


def test_ranking_worked_by_hand():
    # K=6, C=4, OX=5 on 4 x 3 PEs; D1 may unroll K or C (divisors of min(bound, 4) = 4: 2, 4),
    # D2 may unroll OX (divisors of min(5, 3) = 3: 3). Utilisation = prod_d bound_d / ceil(bound_d / F_d) / 12:
    #   C4 + OX3: 4 x (5 / 2) / 12 = 0.8333   K4 + OX3: (6 / 2) x 2.5 / 12 = 0.625
    #   K2 + OX3: (6 / 3) x 2.5 / 12 = 0.4167 = C2 + OX3: (4 / 2) x 2.5 / 12; both have largest factor 3:
    #   K2 is first (D1's options by product, then hint order K before C)
    array = {"D1": 4, "D2": 3}
    arch = _roomy(array, SpatialHint.from_dict({"D1": ["K", "C"], "D2": ["OX"]}, array))
    got = spatial_candidates(Layer("l", K=6, C=4, OX=5), arch, keep=4)
    assert [c.spatial.dims for c in got] == [
        {"D1": (("C", 4),), "D2": (("OX", 3),)}, {"D1": (("K", 4),), "D2": (("OX", 3),)},
        {"D1": (("K", 2),), "D2": (("OX", 3),)}, {"D1": (("C", 2),), "D2": (("OX", 3),)}]
    assert [round(c.utilization, 4) for c in got] == [0.8333, 0.625, 0.4167, 0.4167]
    # the top k of the branch and bound are the first k of the whole ranked set
    full = spatial_candidates(Layer("l", K=6, C=4, OX=5), arch, keep=None)
    for k in (1, 2, 3, 5):
        assert [c.spatial for c in spatial_candidates(Layer("l", K=6, C=4, OX=5), arch, keep=k)] == \
            [c.spatial for c in full[:k]]


def test_top_k_matches_the_full_ranking_on_a_preset_network():
    acc = load_accelerator("eyeriss_like")
    for layer in (Layer("a", K=64, C=3, OY=112, OX=112, FY=7, FX=7, SY=2, SX=2), Layer("b", K=1000, C=512),
                  Layer("c", K=32, C=32, OY=14, OX=14, FY=3, FX=3, G=32)):
        full = spatial_candidates(layer, acc, keep=None)
        key = [(-c.utilization, c.max_factor, c.key) for c in full]
        assert key == sorted(key)
        assert [c.spatial for c in spatial_candidates(layer, acc, keep=3)] == [c.spatial for c in full[:3]]


def test_min_utilization_and_no_candidate_error():
    array = {"D1": 4, "D2": 3}
    h = SpatialHint.from_dict({"D1": ["K"], "D2": ["OX"], "min_utilization": 0.9}, array)
    with pytest.raises(NoSpatialCandidate, match="layer 'l'.*utilization >= 0.9"):
        spatial_candidates(Layer("l", K=6, C=4, OX=5), _roomy(array, h), keep=3)


def test_spatial_mode_defaults_and_params_stay_out_of_resolved_rows():
    acc = load_accelerator("eyeriss_like")
    layer = Layer("l", K=16, C=16, OX=14, OY=14, FY=3, FX=3)
    assert spatial_mode(LayerProblem(layer, acc), {}) == "fixed"  # the preset has [spatial]
    hint_only = Accelerator(**{**acc.__dict__, "spatial": SpatialMapping({})})
    assert spatial_mode(LayerProblem(layer, hint_only), {}) == "search"
    assert spatial_mode(LayerProblem(layer, hint_only), {"spatial": "fixed"}) == "fixed"
    # a campaign that does not name them keeps its resolved params (part of problem ids and rows)
    resolved, probs = check_params(get_mapper("loma").params, {"lpf_limit": 6})
    assert not probs and not {"spatial", "spatial_candidates", "spatial_rank"} & set(resolved)
    _, probs = check_params(get_mapper("salsa").params, {"spatial_candidates": 0})
    assert probs and probs[0][0] == "spatial_candidates"
    assert not check_params(get_mapper("salsa").params, {"spatial_candidates": "all"})[1]


def test_search_over_all_candidates_is_at_least_as_good_as_the_fixed_unrolling():
    # eyeriss_like's fixed unrolling (OX 14 | FY 3 x K 4) is in its hint's set, and LOMA is exhaustive
    acc = load_accelerator("eyeriss_like")
    layer = Layer("l", K=32, C=16, OY=14, OX=14, FY=3, FX=3)
    loma = get_mapper("loma")
    fixed = loma.search(LayerProblem(layer, acc), {"lpf_limit": 5})
    cands = spatial_candidates(layer, acc, keep=None)
    assert SpatialMapping({"D1": (("OX", 14),), "D2": (("FY", 3), ("K", 4))}) in [c.spatial for c in cands]
    best = loma.search(LayerProblem(layer, acc), {"lpf_limit": 5, "spatial": "search", "spatial_candidates": "all"})
    assert best.value <= fixed.value
    assert best.extra["spatial_candidates"] == len(cands) and best.extra["units"] == len(cands)
    # the best unit's unrolling is the one whose own fixed search gives that value
    sp = SpatialMapping.from_dict(__import__("json").loads(best.extra["spatial"]))
    again = loma.search(LayerProblem(layer, acc, sp), {"lpf_limit": 5})
    assert again.value == best.value


def test_units_are_candidates_times_the_mappers_own_units():
    acc = load_accelerator("eyeriss_like")
    layer = Layer("l", K=32, C=16, OY=14, OX=14, FY=3, FX=3)
    salsa = get_mapper("salsa")
    p = {"engine": "sa", "chains": 2, "iterations": 50, "descent": False, "spatial": "search"}
    units = salsa.units(LayerProblem(layer, acc), p)
    assert len(units) == 3 * 2
    assert [u.spec["spatial_index"] for u in units] == [0, 0, 1, 1, 2, 2]
    assert units[0].seed == units[2].seed  # the same chain seeds on every candidate


def test_the_hint_excludes_a_better_unrolling_it_does_not_allow():
    # tpu_like's hint: rows (D1) may unroll C / FY / FX, columns (D2) only K. On K = C = 8, OX = 32 an
    # OX unrolling would fill a whole axis, but OX is not allowed: the best is C 8 x K 8 = 64 of 1,024 PEs
    acc = load_accelerator("tpu_like")
    got = spatial_candidates(Layer("l", K=8, C=8, OX=32), acc, keep=None)
    assert all(d != "OX" for c in got for loops in c.spatial.dims.values() for d, _ in loops)
    assert got[0].spatial.dims == {"D1": (("C", 8),), "D2": (("K", 8),)}
    assert got[0].utilization == 64 / 1024


def test_fixed_is_the_accelerators_unrolling_as_before():
    # spatial = "fixed" (or absent) runs the preset's unrolling, fitted to the layer: FY 3 -> 1 on a 1x1 conv
    acc = load_accelerator("eyeriss_like")
    layer = Layer("l", K=32, C=16, OY=14, OX=14)
    loma = get_mapper("loma")
    absent = loma.search(LayerProblem(layer, acc), {"lpf_limit": 5})
    fixed = loma.search(LayerProblem(layer, acc), {"lpf_limit": 5, "spatial": "fixed"})
    assert (absent.value, absent.loops) == (fixed.value, fixed.loops)
    assert absent.extra["spatial"] == '{"D1":[["OX",14]],"D2":[["FY",1],["K",4]]}'
    assert absent.extra["spatial_candidates"] == 1
