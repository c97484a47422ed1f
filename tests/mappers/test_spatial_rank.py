"""The spatial ranks (`mappers.spatial`): ``loma`` (a coarse exhaustive LOMA probe of a utilisation
pool, pruned by each candidate's lower bound) and ``auto`` (the loop-order mappers' default).

Oracles: the probe of every pool candidate without pruning (the pruning must not change what is
kept), each candidate's latency bound (no kept candidate can be one the bound rules out), and the
exhaustive spatial search (every unrolling, SALSA on each: what ``spatial_candidates = "all"`` runs)
on the h100 preset's 57,344-wide FFN GEMM, where utilisation's top 3 leave a temporal count with a
prime factor of 109 or 163 that cannot be tiled."""

from dataclasses import replace

import numpy as np
import pytest

from costmodel.bounds import layer_bound
from costmodel.loopnest.arch import load_accelerator
from costmodel.workload import Layer
from mappers import get_mapper
from mappers.base import check_params
from costmodel.loopnest.mapping import prime_factors
from mappers.loop_order.lpf import lpf_types, merge_lpfs, multiset_count
from mappers.spatial import LOMA_PROBE_ORDERINGS, _enumerate, loma_values, spatial_candidates
from sweep.engine.problem import Problem

GEMMS = [("h100", 4096, 8192, 57344), ("h100", 4096, 57344, 8192), ("h100", 8192, 8192, 8192),
         ("a100", 2048, 12288, 12288), ("a100", 8, 4096, 28672), ("a100", 8192, 256, 256)]


@pytest.mark.parametrize("arch,m,k,n", GEMMS)
def test_pruned_probe_keeps_what_probing_every_candidate_keeps(arch, m, k, n):
    acc = load_accelerator(arch)
    layer = Layer(f"g{m}x{k}x{n}", kind="matmul", B=m, C=k, K=n)
    pool = _enumerate(layer, acc, acc.spatial_hint, 12)
    every = loma_values(layer, acc, [c.spatial for c in pool], "latency")
    bounds = [layer_bound(layer, acc, c.utilization).latency_cycles for c in pool]
    top = sorted(range(len(pool)), key=lambda i: (every[i], i))[:3]
    want = [top[0]] + [i for i in top[1:] if bounds[i] < every[top[0]]]
    got = spatial_candidates(layer, acc, keep=3, rank="loma", objective="latency")
    assert [c.spatial.to_json() for c in got] == [pool[i].spatial.to_json() for i in want]
    assert [c.probe for c in got] == [float(every[i]) for i in want]
    # a probe value is a real mapping's latency: never below the candidate's bound
    assert all(every[i] >= bounds[i] * (1 - 1e-9) for i in range(len(pool)))


def test_probe_is_an_exhaustive_loma_at_the_largest_lpf_limit_within_the_budget():
    acc = load_accelerator("a100")
    layer = Layer("g", kind="matmul", B=512, C=4096, K=4096)
    c = spatial_candidates(layer, acc, keep=1, rank="utilization")[0]
    tb = c.spatial.temporal_bounds(layer)
    loops = [(d, p) for d in "BCK" for p in prime_factors(tb[d])]
    # the limit by hand: the largest number of loops whose LOMA merge has <= 2,520 orderings
    limit = max(n for n in range(1, len(loops) + 1)
                if multiset_count(lpf_types(merge_lpfs(loops, n))[1]) <= LOMA_PROBE_ORDERINGS)
    assert 6 <= limit < len(loops)
    loma = get_mapper("loma")
    prob = Problem.layer("loma", layer, acc, objective="latency", params={"lpf_limit": limit}, seed=0)
    inst = replace(prob.instance, spatial=c.spatial)
    params = check_params(loma.params, {"lpf_limit": limit})[0]
    r = loma.reduce([loma.run(inst, u, params) for u in loma.units(inst, params)])
    assert loma_values(layer, acc, [c.spatial], "latency")[0] == r.latency_cycles


def key(cands):
    return [c.spatial.to_json() for c in cands]


def test_auto_is_loma_under_latency_and_utilization_otherwise():
    acc = load_accelerator("h100")
    layer = Layer("g", kind="matmul", B=4096, C=8192, K=57344)
    for obj, same in (("latency", "loma"), ("energy", "utilization"), ("edp", "utilization")):
        assert key(spatial_candidates(layer, acc, keep=3, rank="auto", objective=obj)) == \
            key(spatial_candidates(layer, acc, keep=3, rank=same, objective=obj))
    assert key(spatial_candidates(layer, acc, keep=3, rank="loma", objective="latency")) != \
        key(spatial_candidates(layer, acc, keep=3, rank="utilization"))
    with pytest.raises(ValueError, match="spatial rank 'best'"):
        spatial_candidates(layer, acc, keep=3, rank="best")


def _salsa(layer, acc, params):
    p = Problem.layer("salsa", layer, acc, objective="latency", params=params, seed=0, keep_seed=True)
    p = p.with_params(check_params(get_mapper("salsa").params, p.params)[0])
    return p.solve(p.units(), skip_by_floor=params.get("spatial_candidates") == "all").best


@pytest.mark.slow
def test_default_rank_reaches_the_exhaustive_spatial_search_where_utilisation_misses():
    acc = load_accelerator("h100")
    layer = Layer("ffn_up", kind="matmul", B=4096, C=8192, K=57344)
    best = _salsa(layer, acc, {"spatial": "search", "spatial_candidates": "all"}).latency_cycles
    default = _salsa(layer, acc, {"spatial": "search"}).latency_cycles
    util = _salsa(layer, acc, {"spatial": "search", "spatial_rank": "utilization"}).latency_cycles
    assert default <= best * 1.03          # the bar
    assert util > best * 1.3               # utilisation's top 3 (B3 x K44, B4 x K33, B2 x K66) miss
    # the exhaustive best is near the compute floor (MACs / PEs)
    assert best < layer.macs / acc.pe_count * 1.02
    assert np.isfinite(best)
