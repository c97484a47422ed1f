"""Ties on the latency objective are broken by energy, for every mapper (issue 38; LOMA and SALSA:
`tests/mappers/loop_order/test_latency_ties.py`). Each mapper runs a compute-bound problem whose
latency-optimal candidates differ in energy and must return, of the candidates it visited, one of
least latency and, among those, of least energy. The oracle re-costs every visited candidate with the
reference model (`costmodel.loopnest.reference.evaluate`; DeepOpt and the npu mappers: their own
models). Unit reduction is checked on each mapper too, and the energy objective keeps the first of
equal values.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from costmodel.llm import dram_traffic
from costmodel.loopnest.arch import accelerator_from_dict, load_accelerator
from costmodel.loopnest.mapping import MappingError
from costmodel.loopnest.reference import evaluate
from costmodel.npu import NPUArch
from costmodel.systolic import SystolicParams
from costmodel.workload import Layer
from costmodel.zoo import load_network
from mappers import get_mapper
from mappers.base import LayerProblem, SearchResult
from mappers.fullspace.baselines import HYBRID, RANDOM5
from mappers.fullspace.cosa import COSA, decode, decode_loma, parse_solve, solve_model
from mappers.fullspace.cosa.model import build_model
from mappers.fullspace.primitive_sa import PRIMITIVE_SA, PrimitiveSpace
from mappers.fullspace.ties import beats, dram_bits
from mappers.loop_order.base import problem_evaluator
from mappers.loop_order.random import RANDOM, stop_index
from mappers.loop_order.salsa import random_orderings
from mappers.npu import tiled
from mappers.npu.tiled import NPUProblem, TiledNPUMapper
from mappers.systolic.deepopt import PMS, evaluate_per_image, los

# A 2-MAC array under one register file and DRAM, ports wide enough that no transfer stalls: a
# mapping's latency is its compute cycles (MACs / 1 or / 2), and mappings of equal cycles differ in
# what they move.
TOY = {"name": "tie_toy", "mac_pj": 1.0, "array": {"D1": 2},
       "precision": {"W": 8, "I": 8, "O": 8, "O_final": 8}, "spatial": {"D1": [["K", 2]]},
       "memory": [{"name": "rf", "size_bits": 256, "operands": ["W", "I", "O"], "read_pj": 1.0, "write_pj": 1.0,
                   "word_bits": 8, "read_bw": 4096, "write_bw": 4096, "private_to": "all"},
                  {"name": "dram", "operands": ["W", "I", "O"], "read_pj": 50.0, "write_pj": 50.0, "word_bits": 8,
                   "read_bw": 4096, "write_bw": 4096}]}


@pytest.fixture(scope="module")
def toy():
    return LayerProblem(Layer("toy", K=4, C=4, OY=2, OX=2), accelerator_from_dict(TOY), objective="latency")


@pytest.fixture(scope="module")
def simba():
    return load_accelerator("simba_like")


def _lex_best(costs):
    """(least latency, least energy at that latency, how many costs at it, distinct energies at it)
    of (latency, energy) pairs; +inf latencies (invalid) ignored."""
    ok = [(la, e) for la, e in costs if math.isfinite(la)]
    lat = min(la for la, _ in ok)
    en = [e for la, e in ok if la == lat]
    return lat, min(en), len(en), len(set(en))


def _record_states(monkeypatch) -> list:
    """Every state `PrimitiveSpace.evaluate` costs from now on, as (value, decoded mapping)."""
    seen: list = []
    orig = PrimitiveSpace.evaluate

    def rec(self, sections, objective):
        v, rep = orig(self, sections, objective)
        seen.append((v, self.decode(sections)))
        return v, rep
    monkeypatch.setattr(PrimitiveSpace, "evaluate", rec)
    return seen


def _recost(problem, seen):
    """The reference's (latency, energy) of each visited mapping the mapper found valid."""
    out = []
    for v, m in seen:
        if math.isfinite(v):
            c = evaluate(problem.layer, problem.arch, m)
            out.append((c.latency_cycles, c.energy_pj))
    return out


# -- full-space mappers: primitive_sa, random5, hybrid -------------------------------------------------

@pytest.mark.parametrize("mapper, params", [pytest.param(PRIMITIVE_SA, {"iterations": 150, "chains": 2}, id="primitive_sa"),
                                            pytest.param(RANDOM5, {"valid": 8}, id="random5"),
                                            pytest.param(HYBRID, {"threads": 2, "patience": 30}, id="hybrid")])
def test_fullspace_mappers_keep_the_least_energy_of_the_fastest_visited(toy, monkeypatch, mapper, params):
    seen = _record_states(monkeypatch)
    p = mapper.resolve(params)
    units = []
    for u in mapper.units(toy, p):   # each unit against the states it visited
        start = len(seen)
        r = mapper.run(toy, u, p)
        lat, lo, n, distinct = _lex_best(_recost(toy, seen[start:]))
        assert r.value == r.latency_cycles == lat and r.energy_pj == lo
        units.append((r, n, distinct))
    assert any(n > 1 and d > 1 for _, n, d in units)     # ties that differ in energy were met
    lat, lo, _, _ = _lex_best(_recost(toy, seen))        # and the reduction against them all
    best = mapper.reduce([r for r, _, _ in units])
    assert (best.value, best.energy_pj) == (lat, lo)


def test_primitive_sa_walk_is_unchanged_by_the_rule(toy, monkeypatch):
    """The acceptance stays on the objective: the chain's history and counters are those of the
    energy-blind rule; only the best state kept differs (the least energy of the fastest)."""
    import mappers.fullspace.primitive_sa as psa
    p = PRIMITIVE_SA.resolve({"iterations": 150})
    (u,) = PRIMITIVE_SA.units(toy, p)
    new = PRIMITIVE_SA.run(toy, u, p)
    monkeypatch.setattr(psa, "beats", lambda v, rep, bv, brep, obj, arch: v < bv)   # the rule off
    old = PRIMITIVE_SA.run(toy, u, p)
    assert np.array_equal(new.history, old.history) and new.evaluations == old.evaluations
    assert {k: new.extra[k] for k in ("accepted", "repaired", "moves")} == \
        {k: old.extra[k] for k in ("accepted", "repaired", "moves")}
    assert new.value == old.value and new.energy_pj < old.energy_pj


# -- cosa: the decodes of a solve and the solves ------------------------------------------------------

def _cosa_candidates(problem, params):
    """Per solve (work unit), the reference's (latency, energy) of its two decodes (even, LOMA)."""
    p = COSA.resolve(params)
    out = []
    for spec in p["solves"]:
        w, halve = parse_solve(spec)
        model = build_model(problem.layer, problem.arch, p["w_util"], p["w_compute"], p["w_traffic"],
                            p["pad_primes_over"], port_width=p["port_width"], dram_ranks=p["dram_ranks"],
                            split_levels=p["split_levels"], reuse_eps=p["reuse_eps"], stall_w=w, halve=halve,
                            hint=None)
        _, choice, *_ = solve_model(model, p["time_limit_s"], p["mip_gap"])
        cands = []
        for dec in (decode, decode_loma):
            try:
                c = evaluate(problem.layer, problem.arch, dec(model, choice))
            except MappingError:
                continue
            cands.append((c.latency_cycles if c.valid else math.inf, c.energy_pj))
        out.append(cands)
    return out


@pytest.mark.parametrize("layer", [Layer("conv", K=128, C=64, OY=8, OX=8, FY=3, FX=3),   # decodes of one solve tie
                                   Layer("fc", K=64, C=256, B=8, kind="matmul")],         # solves tie
                         ids=lambda l: l.name)
def test_cosa_keeps_the_least_energy_of_the_fastest_decode(simba, layer):
    problem = LayerProblem(layer, simba, objective="latency")
    params = {"hint": False}
    cands = _cosa_candidates(problem, params)
    p = COSA.resolve(params)
    units = [COSA.run(problem, u, p) for u in COSA.units(problem, p)]
    for r, c in zip(units, cands):   # within a solve: its decodes
        lat, lo, _, _ = _lex_best(c)
        assert (r.value, r.energy_pj) == (lat, lo)
    lat, lo, n, distinct = _lex_best([x for c in cands for x in c])    # across solves
    assert n > 1 and distinct > 1
    best = COSA.reduce(units)
    assert (best.value, best.energy_pj) == (lat, lo) and best.extra["solve_values"] == [r.value for r in units]


# -- random (loop orders): the samples, re-drawn --------------------------------------------------------

def test_random_keeps_the_least_energy_of_the_fastest_sample_and_its_patience(simba):
    """The samples of a run re-drawn from its seed and re-costed by the reference: the result is the
    lexicographic (latency, energy) minimum, and the run stopped at the first sample after which
    ``patience`` valid samples in a row did not improve on that order."""
    problem = LayerProblem(Layer("mm", K=256, C=64, B=128, kind="matmul"), simba, objective="latency")
    params = {"spatial": "fixed", "patience": 25, "seed": 1, "batch": 16}
    (u,) = RANDOM.units(problem, RANDOM.resolve(params))
    r = RANDOM.search(problem, params)
    ev = problem_evaluator(problem)
    costs = []
    for o in random_orderings(np.random.default_rng(u.seed), ev.counts, r.evaluations):
        try:
            c = evaluate(problem.layer, problem.arch, ev.mapping(o))
            costs.append((c.latency_cycles, c.energy_pj) if c.valid else (math.inf, math.inf))
        except MappingError:
            costs.append((math.inf, math.inf))
    lat, lo, n, distinct = _lex_best(costs)
    assert n > 1 and distinct > 1
    assert (r.value, r.energy_pj) == (lat, lo)
    best, streak = (math.inf, math.inf), 0   # the stopping rule, one sample at a time
    for k, c in enumerate(costs):
        if c < best:
            best, streak = c, 0
        elif math.isfinite(c[0]):
            streak += 1
    assert r.extra["stopped_by"] == "patience" and streak == 25 and costs[-1] >= best


def _stop_one_by_one(vals, energy, patience):
    best, streak = (math.inf, math.inf), 0
    for k, c in enumerate(zip(vals, energy)):
        if c < best:
            best, streak = c, 0
        elif math.isfinite(c[0]):
            streak += 1
            if streak >= patience:
                return k, best
    return None, best


@given(st.lists(st.tuples(st.sampled_from([1.0, 2.0, 3.0, np.inf]), st.sampled_from([1.0, 2.0, 3.0])),
                min_size=1, max_size=40), st.integers(1, 6), st.integers(1, 9))
def test_stop_rule_with_energy_ties_in_sample_order(pairs, patience, split):
    vals = np.array([v for v, _ in pairs])
    energy = np.array([e if math.isfinite(v) else math.inf for v, e in pairs])
    want_end, want_best = _stop_one_by_one(vals, energy, patience)
    best, best_e, streak, end = math.inf, math.inf, 0, None
    for s in range(0, len(vals), split):
        e, best, streak, i = stop_index(vals[s:s + split], best, streak, patience, energy[s:s + split], best_e)
        if i is not None:
            best_e = float(energy[s + i])
        if e is not None:
            end = s + e
            break
    assert end == want_end and (best, best_e) == want_best


# -- unit reduction, and the energy objective -------------------------------------------------------------

LOOPNEST_TIE_MAPPERS = ["loma", "salsa", "random", "primitive_sa", "random5", "hybrid", "cosa"]


@pytest.mark.parametrize("name", LOOPNEST_TIE_MAPPERS)
def test_reduce_breaks_latency_ties_by_energy_only_under_latency(name):
    m = get_mapper(name)
    assert m.latency_ties == 1 and m.id_version("latency") == f"{m.version}+ties1"
    assert m.id_version("energy") == m.id_version("edp") == m.version
    mk = lambda obj, e: SearchResult(name, "x", obj, 10.0, e, 10.0, 1, 0.0, extra={"solver_s": 0.0})
    assert m.reduce([mk("latency", 5.0), mk("latency", 3.0), mk("latency", 4.0)]).energy_pj == 3.0
    assert m.reduce([mk("energy", 5.0), mk("energy", 3.0)]).energy_pj == 5.0   # first of equal values


def test_beats_by_hand_and_dram_bits(simba):
    arch = accelerator_from_dict(TOY)
    layer = Layer("toy", K=4, C=4, OY=2, OX=2)

    def rep(e, w_dram):
        lv = lambda r: [{"reads": 0, "writes": 0}, {"reads": r, "writes": 0}]
        return SimpleNamespace(energy_pj=e, breakdown={"operands": {"W": lv(w_dram), "I": lv(1), "O": lv(1)}})
    assert dram_bits(rep(1.0, 3), arch) == (3 + 1 + 1) * 8
    assert beats(9.0, rep(9.0, 9), 10.0, rep(1.0, 1), "latency", arch)          # faster wins
    assert beats(10.0, rep(2.0, 9), 10.0, rep(3.0, 1), "latency", arch)         # equal latency: energy
    assert beats(10.0, rep(3.0, 1), 10.0, rep(3.0, 2), "latency", arch)         # equal energy: DRAM bits
    assert not beats(10.0, rep(3.0, 2), 10.0, rep(3.0, 2), "latency", arch)     # all equal: the first stays
    assert not beats(10.0, rep(2.0, 1), 10.0, rep(3.0, 2), "energy", arch)      # other objectives: value only
    assert not beats(10.0, rep(2.0, 1), 10.0, rep(3.0, 2), "edp", arch)
    assert beats(10.0, rep(2.0, 1), math.inf, None, "latency", arch)
    assert not beats(math.inf, rep(2.0, 1), math.inf, rep(3.0, 1), "latency", arch)
    # on a real mapping dram_bits is costmodel.llm's DRAM traffic
    space = PrimitiveSpace(layer, arch)
    m = space.decode(space.initial(np.random.default_rng(0)))
    assert dram_bits(evaluate(layer, arch, m), arch) == sum(dram_traffic(layer, arch, m).values())


# -- DeepOpt: LOS under the delay PM ----------------------------------------------------------------------

def test_deepopt_los_delay_ties_go_to_the_least_energy():
    net = load_network("googlenet_v1_deepopt")
    layers, reps = [l for l, _ in net], np.array(net.repeats)
    pts = np.array([(8, 8, 4, 4, 4), (8, 8, 4, 4, 16), (32, 64, 16, 32, 8), (48, 36, 16, 16, 64)]).T
    res = evaluate_per_image(layers, *pts, SystolicParams(fc_batch_quirk=True))
    value, best, energy, cycles = los(res, reps, "D")
    moved = 0
    for p in range(pts.shape[1]):
        want_e = 0.0
        for li in range(len(layers)):
            ok = [b for b in range(5) if res.delay_ok[p, li, b] and np.isfinite(res.cycles[p, li, b])]
            d = min(res.cycles[p, li, b] for b in ok)
            tied = [b for b in ok if res.cycles[p, li, b] == d]
            e = min(res.energy_pj[p, li, b] for b in tied)
            assert res.cycles[p, li, best[p, li]] == d and res.energy_pj[p, li, best[p, li]] == e
            moved += res.energy_pj[p, li, tied[0]] > e     # DeepOpt's first branch would not be it
            want_e += reps[li] * e
        assert energy[p] == pytest.approx(want_e, rel=1e-12)
    assert moved > 0
    for pm in PMS:   # the other PMs: the first branch of least PM, as DeepOpt's code
        if pm != "D":
            v, b, _, _ = los(res, reps, pm)
            pmv = np.where(res.delay_ok, res.energy_pj ** PMS[pm][0] * res.cycles ** PMS[pm][1], np.inf) \
                if PMS[pm][1] else res.energy_pj
            assert np.array_equal(b, np.argmin(pmv, axis=2))


# -- npu (flexer, static): the latency metric, ties by transferred bytes -------------------------------------

class _Fake(TiledNPUMapper):
    """Two schedules per tiling whose figures the test sets (`tiled.summarize` replaced)."""

    name, version = "fake_npu", "0"

    def schedules(self, g, params, cutoff=None):
        for j in range(2):
            yield f"s{j}", ("fake", j)


def test_npu_latency_ties_go_to_fewer_bytes(monkeypatch):
    rng = np.random.default_rng(5)
    figures: list = []

    def fake_summarize(eng, metric, reps=1):
        lat = float(rng.choice([100, 120]))
        b = int(rng.integers(1000, 2000))
        figures.append((lat, b))
        return {"latency": lat, "transferred_bytes": b, "bytes_by_type": {}, "value": lat, "reloads": {},
                "peak_buffer_bytes": 0}
    monkeypatch.setattr(tiled, "summarize", fake_summarize)
    m = _Fake()
    problem = NPUProblem(Layer("point", K=96, C=64, OY=6, OX=6), NPUArch("t2", cores=2, buffer_bytes=16 * 1024,
                                                                          bandwidth=32), "latency")
    p = m.resolve({"metric": "latency", "prune": False, "tilings_per_unit": 3, "max_ops": 48, "min_spatial": 2,
                   "min_channels": 16})
    units = m.units(problem, p)
    assert len(units) > 2
    results = []
    for u in units:
        start = len(figures)
        r = m.run(problem, u, p)
        lat = min(la for la, _ in figures[start:])
        assert (r.value, r.extra["transferred_bytes"]) == (lat, min(b for la, b in figures[start:] if la == lat))
        results.append(r)
    lat = min(la for la, _ in figures)
    first = next(b for la, b in figures if la == lat)
    assert first > min(b for la, b in figures if la == lat)       # the first of the fastest is not the best
    best = m.reduce(results)
    assert (best.value, best.extra["transferred_bytes"]) == (lat, min(b for la, b in figures if la == lat))
    assert best.evaluations == sum(r.evaluations for r in results)
    mk = lambda b: SearchResult("f", "list", "latency_bytes", 10.0, math.nan, 10.0, 1, 0.0,
                                extra={"transferred_bytes": b})
    assert m.reduce([mk(5), mk(3)]).extra["transferred_bytes"] == 5   # other metrics: the first of equal values
    assert get_mapper("flexer").latency_ties == get_mapper("static").latency_ties == 1
