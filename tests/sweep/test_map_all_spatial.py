"""`sweep map` with ``spatial_candidates = "all"`` and objective latency skips the unrollings whose
latency bound exceeds the best found: the same best as running every unit (the oracle: each unit
run, the minimum taken), with fewer units run."""

from dataclasses import replace

from costmodel.loopnest.arch import load_accelerator
from costmodel.loopnest.hint import SpatialHint
from costmodel.workload import Layer
from mappers import get_mapper
from mappers.base import check_params
from mappers.spatial import spatial_candidates
from sweep.commands.map_eval import map_layer
from sweep.engine.problem import Problem

PARAMS = {"spatial": "search", "spatial_candidates": "all", "iterations": 60}


def _small_gpu():
    """The a100 preset's form on a 6 x 2 x 2 x 4 array (hint as the preset's: D1 B / K, two at once)."""
    arr = {"D1": 6, "D2": 2, "D3": 2, "D4": 4}
    hint = SpatialHint.from_dict({"D1": ["B", "K"], "D2": ["B"], "D3": ["K"], "D4": ["C"], "max_dims": {"D1": 2}}, arr)
    return replace(load_accelerator("a100"), name="a100_small", array=arr, spatial_hint=hint)


def test_exhaustive_spatial_skips_by_bound_with_the_same_best():
    acc = _small_gpu()
    layer = Layer("g", kind="matmul", B=12, C=16, K=30)
    n = len(spatial_candidates(layer, acc, keep=None))
    r = map_layer(layer, acc, "salsa", "latency", 0, dict(PARAMS))
    prob = Problem.layer("salsa", layer, acc, objective="latency", params=dict(PARAMS), seed=0, keep_seed=True)
    prob = prob.with_params(check_params(get_mapper("salsa").params, prob.params)[0])
    every = prob.solve()                                   # every unit of every candidate run
    assert r["spatial_candidates"] == n > 20
    assert r["value"] == min(x.value for x in every.results) == every.best.value
    assert r["units"] < len(every.results) / 4             # most candidates cannot beat the bound
    # the best is at least the compute floor: MACs / PEs cycles (12 x 16 x 30 on 96 PEs = 60)
    assert r["latency_cycles"] >= layer.macs / acc.pe_count
