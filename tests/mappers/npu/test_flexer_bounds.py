"""The bounds that make the Flexer / static tiling sweep fast must never change its answer:
`lower_bound` and `Engine.bound` are lower bounds of every schedule, a cut-off schedule is one that
would have lost, and the pruned search returns the exhaustive search's best (value, tiling and
schedule) -- also with ties."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel.npu import NPUArch, tilings
from costmodel.workload import Layer
from mappers.npu.tiled import NPUProblem
from mappers.npu.flexer import FLEXER, flexer_schedule
from mappers.npu.memory import find_victims
from mappers.npu.graph import DATAFLOWS, Cutoff, build_dfg, latency_lower_bound, lower_bound, summarize
from mappers.npu.static import STATIC, effective_order, static_schedule

LAYERS = [Layer("small", K=64, C=32, OY=8, OX=8, FY=3, FX=3),
          Layer("strided", K=48, C=24, OY=7, OX=5, FY=3, FX=3, SY=2, SX=2),
          Layer("point", K=96, C=64, OY=6, OX=6),
          Layer("batched", K=32, C=16, OY=4, OX=4, B=2)]
ARCHS = [NPUArch("t2", cores=2, buffer_bytes=16 * 1024, bandwidth=32),
         NPUArch("t4", cores=4, buffer_bytes=8 * 1024, bandwidth=16)]
PARAMS = {"max_ops": 48, "min_spatial": 2, "min_channels": 16}


def _schedules(layer, arch):
    for t in tilings(layer, arch, 2, 16, 48):
        g = build_dfg(layer, arch, t)
        for df in DATAFLOWS[::4]:
            yield g, flexer_schedule(g, df)
            for stationary in ("IN", "WT", "OT"):
                yield g, static_schedule(g, df, stationary)


@pytest.mark.parametrize("layer", LAYERS, ids=lambda l: l.name)
@pytest.mark.parametrize("arch", ARCHS, ids=lambda a: a.name)
def test_lower_bounds_hold_for_every_schedule(layer, arch):
    reps = layer.B * layer.G
    n = 0
    for g, eng in _schedules(layer, arch):
        if eng is None:
            continue
        n += 1
        assert latency_lower_bound(g) <= eng.latency
        for metric in ("latency_bytes", "latency", "bytes"):
            final = summarize(eng, metric, reps)["value"]
            assert lower_bound(g, metric, reps) <= final
            # the in-schedule bound of the finished engine is the final value itself
            assert eng.bound(metric, reps, latency_lower_bound(g)) == final
    assert n > 10


@pytest.mark.parametrize("sched", ["flexer", "static"])
def test_cutoff_cuts_exactly_the_losers(sched):
    layer, arch = LAYERS[0], ARCHS[1]
    for t in tilings(layer, arch, 2, 16, 48)[:6]:
        g = build_dfg(layer, arch, t)
        run = (lambda c: flexer_schedule(g, "k-c-oy-ox", cutoff=c)) if sched == "flexer" else \
              (lambda c: static_schedule(g, "k-c-oy-ox", "WT", cutoff=c))
        full = run(None)
        if full is None:
            continue
        v = summarize(full, "latency_bytes")["value"]
        floor = latency_lower_bound(g)
        tie = run(Cutoff("latency_bytes", 1, v, floor))  # a tie is finished, identically
        assert tie is not None and (tie.latency, tie.transferred()) == (full.latency, full.transferred())
        assert run(Cutoff("latency_bytes", 1, math.nextafter(v, 0), floor)) is None


@pytest.mark.parametrize("mapper", [FLEXER, STATIC], ids=lambda m: m.name)
@pytest.mark.parametrize("metric", ["latency_bytes", "latency", "bytes"])
def test_pruned_search_equals_exhaustive(mapper, metric):
    extra = {} if mapper is FLEXER else {"dataflows": list(DATAFLOWS[::3])}
    for layer in LAYERS:
        for arch in ARCHS:
            p = NPUProblem(layer, arch)
            a = mapper.search(p, dict(PARAMS, metric=metric, prune=True, **extra))
            b = mapper.search(p, dict(PARAMS, metric=metric, prune=False, **extra))
            key = lambda r: (r.value, r.latency_cycles, r.extra.get("transferred_bytes"), r.extra.get("tiling"),
                             r.extra.get("dataflow"))
            assert key(a) == key(b)
            assert a.evaluations <= b.evaluations


def test_static_dataflows_differing_in_single_tile_loops_are_one_schedule():
    layer, arch = LAYERS[2], ARCHS[0]   # K=96 C=64 OY=OX=6
    t = next(t for t in tilings(layer, arch, 6, 16, 48) if t.oy_t == 6 and t.ox_t == 6)
    g = build_dfg(layer, arch, t)
    assert effective_order(g, "oy-ox-c-k") == effective_order(g, "c-oy-k-ox") == ("c", "k")
    a, b = static_schedule(g, "oy-ox-c-k"), static_schedule(g, "c-oy-k-ox")
    assert a.trace() == b.trace() and a.bytes == b.bytes
    # and the mapper builds that schedule once per stationary choice, not once per dataflow
    labels = [lab for lab, _ in STATIC.schedules(g, STATIC.resolve({}))]
    assert len({lab.split("/")[0] for lab in labels}) == 2   # the c-k and k-c orders


def _victims_oracle(segs, size, pinned, remaining):
    """Algorithm 2 by brute force: every start, its shortest sufficient end without a pinned tile."""
    best = None
    for s in range(len(segs)):
        spill = dis = blocks = 0
        for e in range(s, len(segs)):
            _, sz, t, _ = segs[e]
            if t >= 0 and t in pinned:
                break
            spill += sz
            dis += sz * remaining[t] if t >= 0 else 0
            blocks += t >= 0
            if spill >= size:
                if best is None or (spill - size, dis, blocks) < best[0]:
                    best = ((spill - size, dis, blocks), (s, e))
                break
    return None if best is None else best[1]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 9), st.integers(-1, 5)), min_size=1, max_size=12),
       st.integers(1, 40), st.sets(st.integers(0, 5), max_size=3), st.lists(st.integers(0, 4), min_size=6, max_size=6))
def test_find_victims_equals_brute_force(pieces, size, pinned, remaining):
    segs, addr = [], 0
    for sz, t in pieces:
        segs.append((addr, sz, t, 0))
        addr += sz
    assert find_victims(segs, size, pinned, remaining) == _victims_oracle(segs, size, pinned, remaining)
