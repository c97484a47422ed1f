"""primitive_sa (SA over the primitive list of the full mapspace) and the random5 / hybrid baselines."""

from __future__ import annotations

import math

import numpy as np
import pytest

from costmodel.loopnest.arch import load_accelerator
from costmodel.loopnest.reference import evaluate
from costmodel.loopnest.mapping import SPATIAL_DIMS
from costmodel.zoo import load_network
from mappers.base import LayerProblem
from mappers.fullspace.baselines import HYBRID, RANDOM5, nth_permutation
from mappers.fullspace.primitive_sa import PRIMITIVE_SA, SEP, PrimitiveSpace, anneal_chain


@pytest.fixture(scope="module")
def simba():
    return load_accelerator("simba_like")


@pytest.fixture(scope="module")
def r50():
    return {l.name: l for l, *_ in load_network("resnet50").unique()}


def _covers(space, sections, check=True):
    """Each dim's spatial x temporal factors multiply to its bound exactly; the mapping checks
    (structure: fan-out, boundaries) if ``check``."""
    space.check_dims(sections)
    mp = space.decode(sections)
    if check:
        mp.check(space.layer, space.arch)
    tp = mp.temporal.dim_products()
    for d in SPATIAL_DIMS:
        assert tp[d] * mp.spatial.factor(d) == getattr(space.layer, d), d


def test_initial_state_valid_on_every_resnet50_layer(simba, r50):
    for layer in r50.values():
        for seed in (0, 1):
            space = PrimitiveSpace(layer, simba)
            s = space.initial(np.random.default_rng(seed))
            _covers(space, s)
            rep = evaluate(layer, simba, space.decode(s))
            assert rep.valid, (layer.name, rep.reason)


@pytest.mark.parametrize("arch_name,net", [("simba_like", "resnext50_32x4d"), ("simba_like", "deepbench_ocr"),
                                           ("eyeriss_like", "deepbench_face")])
def test_initial_state_valid_other_workloads(arch_name, net):
    arch = load_accelerator(arch_name)
    for layer, *_ in load_network(net).unique():
        space = PrimitiveSpace(layer, arch)
        assert evaluate(layer, arch, space.decode(space.initial(np.random.default_rng(0)))).valid, layer.name


def test_capacity_check_agrees_with_cost_model(simba, r50):
    rng = np.random.default_rng(3)
    for name in ("conv1", "layer1.0.conv2", "layer3.0.conv1"):
        space = PrimitiveSpace(r50[name], simba)
        for _ in range(100):
            s = space.random_state(rng)
            assert space.valid(s) == evaluate(space.layer, simba, space.decode(s)).valid


def test_proposals_and_repairs_cover_bounds_exactly(simba, r50):
    space = PrimitiveSpace(r50["layer2.0.conv2"], simba)
    rng = np.random.default_rng(1)
    cur = space.initial(rng)
    for _ in range(300):
        prop, kind = space.propose(cur, rng, 0.3)
        _covers(space, prop, check=space.fanout_ok(prop))
        fixed, ok = space.repair(prop)
        _covers(space, fixed)
        if ok:
            assert space.valid(fixed)
            cur = fixed


def test_block_moves_keep_a_dims_primitives_together(simba, r50):
    space = PrimitiveSpace(r50["layer1.0.conv2"], simba)
    rng = np.random.default_rng(2)
    cur = space.initial(rng)
    for _ in range(200):
        before = space.flat(cur)
        prop, kind = space.propose(cur, rng, 1.0)
        assert kind == "block"
        block = space.last_block
        dims = {space.prims[i][0] for i in block}
        assert len(dims) == 1
        d = dims.pop()
        # before: the block was *all* primitives of d in one section
        secs = [k for k, s in enumerate(cur) if set(block) <= set(s)]
        assert len(secs) == 1
        assert {i for i in cur[secs[0]] if space.prims[i][0] == d} == set(block)
        # after: contiguous in the flat list, hence in one section
        after = space.flat(prop)
        j = after.index(block[0])
        assert after[j:j + len(block)] == block and SEP not in after[j:j + len(block)]
        assert sorted(before) == sorted(after)
        cur = space.repair(prop)[0] if not space.valid(prop) else prop


def test_repair_makes_random_states_valid(simba, r50):
    rng = np.random.default_rng(4)
    space = PrimitiveSpace(r50["layer1.0.conv3"], simba)
    n_invalid = 0
    for _ in range(100):
        s = space.random_state(rng)
        if not space.valid(s):
            n_invalid += 1
            fixed, ok = space.repair(s)
            assert ok and evaluate(space.layer, simba, space.decode(fixed)).valid
    assert n_invalid > 50  # random states are mostly invalid: the repair is exercised


def test_invalid_proposals_never_end_the_chain(simba, r50):
    space = PrimitiveSpace(r50["conv1"], simba)
    r = anneal_chain(space, "energy", np.random.default_rng(0), 400, 0.05, 0.999, 0.3)
    assert len(r["history"]) == 401
    assert r["repaired"] > 0 and r["valid_raw"] < 400
    assert math.isfinite(r["value"]) and r["accepted"] > 0


def test_same_seed_same_result(simba, r50):
    pr = LayerProblem(r50["layer2.x.conv2"], simba, objective="edp")
    a = PRIMITIVE_SA.search(pr, {"iterations": 300, "seed": 7})
    b = PRIMITIVE_SA.search(pr, {"iterations": 300, "seed": 7})
    assert a.value == b.value and a.loops == b.loops and a.extra["mapping"] == b.extra["mapping"]
    assert np.array_equal(a.history, b.history)
    c = PRIMITIVE_SA.search(pr, {"iterations": 300, "seed": 8})
    assert not np.array_equal(a.history, c.history)


def test_result_fields_and_units(simba, r50):
    pr = LayerProblem(r50["layer3.0.conv2"], simba, objective="latency")
    p = {"iterations": 100, "chains": 3, "seed": 1}
    units = PRIMITIVE_SA.units(pr, p)
    assert len(units) == 3 and len({u.seed for u in units}) == 3 and all(u.kind == "sa" for u in units)
    r = PRIMITIVE_SA.search(pr, p)
    assert r.mapper == "primitive_sa" and r.engine == "sa" and r.ordering is None
    assert r.value == r.latency_cycles and r.extra["units"] == 3
    assert 0 <= r.extra["valid_rate"] <= 1
    from costmodel.loopnest.mapping import Mapping
    mp = Mapping.from_dict(r.extra["mapping"])
    rep = evaluate(pr.layer, simba, mp)
    assert rep.valid and rep.latency_cycles == r.value
    assert tuple(tuple(x) for x in r.extra["mapping"]["temporal"]) == r.loops


def test_best_never_worse_than_initial_and_beats_random(simba, r50):
    pr = LayerProblem(r50["layer4.x.conv1"], simba, objective="energy")
    wins = 0
    for seed in range(5):
        r = PRIMITIVE_SA.search(pr, {"iterations": 300, "seed": seed})
        assert r.value <= r.extra["v0"]
        space = PrimitiveSpace(pr.layer, simba)
        rng = np.random.default_rng(1000 + seed)
        rand = min(space.evaluate(space.random_state(rng), "energy")[0] for _ in range(r.evaluations))
        wins += r.value <= rand
    assert wins >= 4


def test_random5_best_of_exactly_five_valid(simba, r50):
    pr = LayerProblem(r50["layer1.0.conv2"], simba, objective="latency")
    r = RANDOM5.search(pr, {"seed": 3})
    h = np.asarray(r.history)
    assert r.extra["valid_found"] == 5 and np.isfinite(h).sum() == 5
    assert math.isfinite(h[-1])  # stops at the 5th valid draw
    assert r.evaluations == len(h)
    assert r.value == min(r.extra["valid_values"]) == h[np.isfinite(h)].min()


def test_hybrid_stops_by_patience(simba, r50):
    pr = LayerProblem(r50["layer3.x.conv1"], simba, objective="energy")
    p = {"threads": 2, "patience": 40, "seed": 0}
    units = HYBRID.units(pr, p)
    assert len(units) == 2
    from mappers.base import check_params
    full, _ = check_params(HYBRID.params, p)
    for u in units:
        r = HYBRID.run(pr, u, full)
        assert r.extra["stopped"] == "patience"
        h = np.asarray(r.history)
        valid = h[np.isfinite(h)]
        best_at = int(np.argmin(valid))
        assert len(valid) - 1 - best_at == 40  # exactly `patience` valid non-improving after the best
        assert valid[best_at] == r.value
    capped = HYBRID.search(pr, {"threads": 1, "patience": 10**6, "max_evaluations": 50})
    assert capped.extra["stopped"] == "max_evaluations" and capped.evaluations == 50


def test_nth_permutation():
    import itertools
    items = ["a", "b", "c", "d"]
    assert [nth_permutation(items, k) for k in range(24)] == [list(p) for p in itertools.permutations(items)]


def test_eyeriss_search(r50):
    arch = load_accelerator("eyeriss_like")
    r = PRIMITIVE_SA.search(LayerProblem(r50["layer2.0.conv2"], arch), {"iterations": 200})
    assert math.isfinite(r.value) and r.value <= r.extra["v0"]
