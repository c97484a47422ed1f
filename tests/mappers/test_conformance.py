"""One conformance suite that every registered mapper passes (Optuna's BasicSamplerTestCase idea).

For each mapper in `mappers.MAPPER_NAMES`, on a small problem of its kind:

* the declaration: name as registered, a version string, a kind of `KINDS`, unique `Param` names
  whose defaults pass their own check, `ExtraColumn` declarations;
* `units` gives a non-empty, deterministic list of `WorkUnit`;
* `run` is deterministic (same unit, same result) and `reduce` keeps the best unit, first of
  equal values, with evaluations summed;
* the reported cost is the physics' cost, recomputed independently: loop-nest results by the
  reference evaluator `costmodel.loopnest.reference.evaluate` on the decoded mapping; npu results
  as latency x bytes of the schedule and never below the tiling's lower bound; DeepOpt's best
  point by brute force over the per-point rows;
* loop-ordering mappers are never better than the brute-force optimum of their space
  (itertools over every ordering of the LPFs, each evaluated alone), and reach it on this layer.

Each check is parametrised over the mappers it applies to (lists built from the registry and each
mapper's ``kind`` or package family), so none is skipped inside a test; each mapper runs once for
the module (the ``cases`` fixture).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import fields

import numpy as np
import pytest

from costmodel.loopnest.arch import load_accelerator
from costmodel.loopnest.mapping import Mapping
from costmodel.loopnest.reference import evaluate
from costmodel.npu import load_npu, tilings
from costmodel.systolic.points import SystolicPoints
from costmodel.workload import Layer, Network
from mappers import MAPPER_NAMES, declared_columns, get_mapper
from mappers.base import (KINDS, AllocationDetail, ExtraColumn, LayerProblem, LoopNestDetail, Param, SearchResult,
                          WorkUnit)
from mappers.loop_order.base import problem_evaluator
from mappers.npu.graph import build_dfg, lower_bound
from mappers.npu.tiled import NPUProblem
from mappers.systolic.deepopt import AllocationProblem

LAYER = Layer(name="small", K=16, C=8, OY=7, OX=7, FY=3, FX=3)

#: Small budgets so that every mapper runs in about a second here.
FAST = {"primitive_sa": {"iterations": 300}, "hybrid": {"threads": 2, "patience": 50},
        "salsa": {"engine": "sa", "iterations": 300, "chains": 2}, "random": {"patience": 100}}


def _problem(mapper):
    if mapper.kind == "loopnest":
        return mapper.make_problem(LAYER, load_accelerator("eyeriss_like"), None, "energy")
    if mapper.kind == "npu":
        return mapper.make_problem(LAYER, load_npu("arch1"), None, "latency_bytes")
    nets = (Network("a", (Layer(name="c1", K=32, C=16, OY=14, OX=14, FY=3, FX=3),
                          Layer(name="fc", K=10, C=64)), (1, 2)),
            Network("b", (Layer(name="c1", K=8, C=3, OY=28, OX=28, FY=5, FX=5),), (1,)))
    J = np.array([8, 16, 16, 32, 8, 16, 32]); K = np.array([8, 16, 32, 32, 16, 8, 16])
    kib = np.array([16, 32, 64, 64, 8, 16, 128])
    pts = SystolicPoints(J=J, K=K, fsram_kib=kib, isram_kib=kib[::-1].copy(), psram_kib=np.full(7, 16),
                         area_mm2=np.zeros(7), spec={"test": True})
    return AllocationProblem(nets, pts, pms=("ED", "E"), chunk_points=3)


def _family(mapper) -> str:
    """The package family of a mapper (`mappers` docstring: one package per family), e.g.
    "loop_order" for ``mappers.loop_order.salsa``."""
    return type(mapper).__module__.split(".")[1]


def _names(pred) -> list:
    """pytest params: the registered mappers (registry order) for which ``pred(mapper)`` holds."""
    return [pytest.param(n, id=n) for n in MAPPER_NAMES if pred(get_mapper(n))]


#: Every registered mapper; those of each kind; the loop-ordering family (`mappers.loop_order`:
#: LPF orderings of a fixed unrolling, whose whole space the brute force below can enumerate).
ALL = _names(lambda m: True)
LOOPNEST = _names(lambda m: m.kind == "loopnest")
NPU = _names(lambda m: m.kind == "npu")
SYSTOLIC = _names(lambda m: m.kind == "systolic")
LOOP_ORDER = _names(lambda m: _family(m) == "loop_order")


@pytest.fixture(scope="module")
def cases():
    """name -> (mapper, problem, resolved params, units, unit results, reduced result), each mapper
    run once for the module (on first use)."""
    memo = {}

    def get(name):
        if name not in memo:
            m = get_mapper(name)
            prob = _problem(m)
            p = m.resolve(FAST.get(m.name, {}))
            units = m.units(prob, p)
            results = [m.run(prob, u, p) for u in units]
            memo[name] = (m, prob, p, units, results, m.reduce(results))
        return memo[name]
    return get


@pytest.fixture
def case(cases, name):
    return cases(name)


def test_parametrisation_covers_the_registry():
    """Every registered mapper is in ALL and in exactly one kind's list; the loop-ordering family
    is loma, salsa and random (all loop-nest mappers)."""
    def ids(params):
        return [p.values[0] for p in params]
    assert ids(ALL) == list(MAPPER_NAMES)
    assert sorted(ids(LOOPNEST) + ids(NPU) + ids(SYSTOLIC)) == sorted(MAPPER_NAMES)
    assert ids(LOOP_ORDER) == ["loma", "salsa", "random"] and set(ids(LOOP_ORDER)) <= set(ids(LOOPNEST))


@pytest.mark.parametrize("name", ALL)
def test_declaration(case):
    m = case[0]
    assert get_mapper(m.name) is m
    assert isinstance(m.version, str) and m.version
    assert m.kind in KINDS
    assert all(isinstance(p, Param) for p in m.params)
    assert len({p.name for p in m.params}) == len(m.params)
    for p in m.params:
        assert p.check(p.default) is None, (p.name, p.default)
    assert all(isinstance(c, ExtraColumn) and c.type in ("float", "int", "str") for c in m.columns)


@pytest.mark.parametrize("name", ALL)
def test_make_problem_builds_the_kinds_problem(name):
    """A mapper of one layer builds its own kind's problem (the engine names no problem type) and
    refuses an architecture of another kind; DeepOpt maps no single layer."""
    m = get_mapper(name)
    acc, npu = load_accelerator("eyeriss_like"), load_npu("arch1")
    if m.kind == "systolic":
        with pytest.raises(TypeError):
            m.make_problem(LAYER, acc)
        return
    own, other = (acc, npu) if m.kind == "loopnest" else (npu, acc)
    p = m.make_problem(LAYER, own, None, "latency")
    assert isinstance(p, LayerProblem if m.kind == "loopnest" else NPUProblem)
    assert (p.layer, p.arch, p.objective) == (LAYER, own, "latency")
    with pytest.raises(TypeError):
        m.make_problem(LAYER, other)


def test_declared_columns_do_not_clash_with_engine_columns():
    from sweep.engine.layer_tasks import _HEAD, _TAIL
    names = [c.name for c in declared_columns()]
    assert len(names) == len(set(names)) and not set(names) & set(_HEAD + _TAIL)


@pytest.mark.parametrize("name", ALL)
def test_units_are_deterministic(case):
    m, prob, p, units = case[:4]
    assert units and all(isinstance(u, WorkUnit) for u in units)
    assert m.units(prob, p) == units


def _same(a: SearchResult, b: SearchResult) -> bool:
    keep = [f.name for f in fields(SearchResult) if f.name not in ("wall_s", "extra", "tables", "history")]
    ea = {k: v for k, v in a.extra.items() if not k.endswith("_s")}
    eb = {k: v for k, v in b.extra.items() if not k.endswith("_s")}
    va = [getattr(a, k) for k in keep]
    vb = [getattr(b, k) for k in keep]
    return repr(va) == repr(vb) and repr(ea) == repr(eb)


@pytest.mark.parametrize("name", ALL)
def test_run_is_deterministic(case):
    m, prob, p, units, results, _ = case
    assert _same(m.run(prob, units[0], p), results[0])


@pytest.mark.parametrize("name", ALL)
def test_result_detail_is_the_kinds(case):
    """A found result's kind-specific fields are in its kind's typed detail: the loops (and for the
    loop-order mappers the ordering) of a loop-nest result, DeepOpt's PM mode (also its engine);
    npu results have none and no energy (NaN)."""
    m, _, p, _, _, best = case
    assert math.isfinite(best.value)
    if m.kind == "loopnest":
        assert isinstance(best.detail, LoopNestDetail) and best.loops == best.detail.loops and best.loops
        assert (best.ordering is not None) == (_family(m) == "loop_order")
    elif m.kind == "systolic":
        assert best.detail == AllocationDetail(p["network_pm"]) and best.engine == p["network_pm"]
        assert best.loops is None and best.ordering is None
    else:
        assert best.detail is None and best.loops is None and math.isnan(best.energy_pj)


@pytest.mark.parametrize("name", ALL)
def test_reduce_keeps_the_first_best(case):
    m, _, _, _, results, best = case
    values = [r.value for r in results]
    i = values.index(min(values))
    assert best.value == results[i].value
    assert best.latency_cycles == results[i].latency_cycles
    assert best.energy_pj == results[i].energy_pj or math.isnan(best.energy_pj)   # npu: no energy model
    assert best.evaluations == sum(r.evaluations for r in results)
    assert best.extra.get("units", len(results)) == len(results)


def _mapping_of(m, prob, r) -> Mapping:
    if "mapping" in r.extra:
        return Mapping.from_dict(r.extra["mapping"])
    return problem_evaluator(prob, lpf_limit=None).mapping(np.asarray(r.ordering))


@pytest.mark.parametrize("name", LOOPNEST)
def test_loopnest_cost_is_the_reference_cost(case):
    """Loop-nest mappers: the decoded mapping of the best result, costed again by the reference
    evaluator, is valid and gives the reported energy, latency and value (objective "energy")."""
    m, prob, p, units, results, best = case
    assert np.isfinite(best.value)
    rep = evaluate(prob.layer, prob.arch, _mapping_of(m, prob, best))
    assert rep.valid
    assert rep.energy_pj == pytest.approx(best.energy_pj, rel=1e-9)
    assert rep.latency_cycles == pytest.approx(best.latency_cycles, rel=1e-9)
    assert best.value == pytest.approx(rep.energy_pj, rel=1e-9)   # objective "energy"


@pytest.mark.parametrize("name", NPU)
def test_npu_cost_is_latency_times_bytes_above_the_lower_bound(case):
    """NPU mappers: the value is latency x transferred bytes of the schedule and never below the
    lower bound of the best tiling."""
    m, prob, p, units, results, best = case
    assert np.isfinite(best.value)
    assert best.value == best.latency_cycles * best.extra["transferred_bytes"]
    floor = min(lower_bound(build_dfg(prob.layer, prob.arch, t), "latency_bytes")
                for t in tilings(prob.layer, prob.arch, p["min_spatial"], p["min_channels"], p["max_ops"]))
    assert best.value >= floor


@pytest.mark.parametrize("name", SYSTOLIC)
def test_systolic_best_point_is_the_brute_force_best_row(case):
    """DeepOpt: the reduced value is the best point of the first network and first PM, found again
    by brute force over the per-point rows of every unit."""
    m, prob, p, units, results, best = case
    assert np.isfinite(best.value)
    rows = {k: np.concatenate([r.tables["rows"][k] for r in results]) for k in results[0].tables["rows"]}
    sel = (rows["network"] == "a") & (rows["pm"] == "ED")
    assert sorted(rows["point"][sel].tolist()) == list(range(7))
    assert best.value == rows["pm_value"][sel].min()
    assert best.extra["point"] == int(rows["point"][sel][np.argmin(rows["pm_value"][sel])])


@pytest.mark.parametrize("name", LOOP_ORDER)
def test_loop_order_mappers_reach_the_brute_force_optimum(case):
    m, prob, p, _, _, best = case
    ev = problem_evaluator(prob)
    lpfs = [t for t, k in zip(range(len(ev.counts)), np.asarray(ev.counts)) for _ in range(int(k))]
    values = [float(ev.objective(np.array([o], dtype=np.int64), "energy")[0])
              for o in set(itertools.permutations(lpfs))]
    assert best.value >= min(values)
    assert best.value == min(values)   # a small space: every mapper finds its optimum
