"""What counting a campaign uses instead of building (issue 32, item 4): `Mapper.unit_count` equals
``len(units(...))``, `mappers.loop_order.base.problem_counts` the ordering evaluator's counts, and
`mappers.spatial.has_candidate` whether `spatial_candidates` finds any unrolling, on the problems of
the bundled campaigns (every layer campaign's problems; an architecture search's layers on its
first, middle and last valid designs) and on a hint no unrolling satisfies."""

import glob
from dataclasses import replace
from pathlib import Path

import pytest

from costmodel.loopnest.arch import Accelerator, MemoryLevel
from costmodel.loopnest.hint import SpatialHint
from costmodel.loopnest.mapping import SpatialMapping
from costmodel.workload import Layer
from mappers import get_mapper
from mappers.base import LayerProblem
from mappers.loop_order.base import LoopOrderMapper, spatial_object, problem_counts, problem_evaluator
from mappers.spatial import NoSpatialCandidate, first_missing, has_candidate, spatial_candidates
from sweep.kinds import load_any

ROOT = Path(__file__).resolve().parents[2]
CAMPAIGNS = sorted(Path(p).name for p in glob.glob(str(ROOT / "campaigns" / "*.toml")))


def _problems(kind, c):
    """(mapper name, problem, params) of a loaded bundled campaign: a layer campaign's unique
    problems, an architecture search's unique layers on its first, middle and last valid designs."""
    if kind.name in ("loopnest", "npu"):
        from sweep.engine.layer_tasks import _problems as problems
        for _, _, prob in problems(c, kind.rules)[0]:
            yield prob.mapper, prob.instance, prob.params
    elif kind.name == "archsearch":
        sp, spec = c.architectures, c.mappers[0]
        params = dict(spec.params, seed=c.seeds[0])
        layers = {l.hash_fields().__repr__(): l for net in c.networks for l, _ in net.unique()}
        for i in sorted({0, len(sp) // 2, len(sp) - 1}):
            acc = sp.template.design(sp.point(i))
            for layer in layers.values():
                yield spec.name, LayerProblem(layer, acc, None, c.objectives[0]), params


@pytest.mark.parametrize("name", CAMPAIGNS)
def test_unit_count_and_lpf_counts_match_what_they_replace(name):
    kind, c = load_any(ROOT / "campaigns" / name)
    if kind.name not in ("loopnest", "npu", "archsearch"):
        pytest.skip("no layer problems (systolic: DeepOpt's grid; tune)")
    seen = 0
    for m, prob, params in _problems(kind, c):
        mapper = get_mapper(m)
        try:
            units = mapper.units(prob, params)
        except NoSpatialCandidate:
            with pytest.raises(NoSpatialCandidate):
                mapper.unit_count(prob, params)
            continue
        assert mapper.unit_count(prob, params) == len(units), (name, m, prob.layer.name)
        if isinstance(mapper, LoopOrderMapper):
            for u in units:
                p = prob if u.spec.get("spatial") is None else replace(prob, spatial=spatial_object(u.spec["spatial"]))
                for limit in (None, params.get("lpf_limit"), 3):
                    assert problem_counts(p, limit) == [int(k) for k in problem_evaluator(p, None, limit).counts]
        seen += 1
    assert seen


def _mem(name, ops, size, private=()):
    return MemoryLevel(name, size, tuple(ops), 1.0, 1.0, 8, 1024, 1024, False, tuple(private))


def test_has_candidate_and_first_missing():
    array = {"D1": 4, "D2": 4}
    allpe = tuple(array)
    mems = [_mem("rw", "W", 1 << 20, allpe), _mem("ri", "I", 1 << 20, allpe), _mem("ro", "O", 1 << 20, allpe),
            _mem("dram", "WIO", None)]

    def arch(hint):
        return Accelerator("t", dict(array), 1.0, tuple(mems), SpatialMapping({}),
                           {"W": 8, "I": 8, "O": 16, "O_final": 8}, spatial_hint=hint)

    ok = arch(SpatialHint.from_dict({"D1": ["K"], "D2": ["OX"]}, array))
    tight = arch(SpatialHint.from_dict({"D1": ["K"], "D2": ["OX"], "min_utilization": 0.9}, array))
    layers = [Layer(name="a", K=8, C=4, OY=4, OX=8), Layer(name="l", K=3, C=4, OY=4, OX=3)]
    for acc in (ok, tight):
        for layer in layers:
            try:
                spatial_candidates(layer, acc, keep=1)
                found = True
            except NoSpatialCandidate:
                found = False
            assert has_candidate(layer, acc) is found
    assert first_missing(layers, ok) is None
    e = first_missing(layers, tight)
    with pytest.raises(NoSpatialCandidate) as want:
        spatial_candidates(layers[1], tight, keep=1)
    assert isinstance(e, NoSpatialCandidate) and str(e) == str(want.value)
    with pytest.raises(ValueError, match="no \\[spatial_hint\\]"):
        has_candidate(layers[0], arch(None))


def test_the_seed_enters_params_in_one_place():
    """`Mapper.with_seed`: a seeded mapper (SALSA) gets the problem's seed, a deterministic one
    (LOMA) does not; None adds nothing; ``keep`` leaves a user's seed; the input is not changed."""
    from mappers import get_mapper
    salsa, loma = get_mapper("salsa"), get_mapper("loma")
    assert salsa.seeded and not loma.seeded
    given = {"chains": 2, "seed": 9}
    assert salsa.with_seed(given, 3) == {"chains": 2, "seed": 3}
    assert salsa.with_seed(given, 3, keep=True) == {"chains": 2, "seed": 9} and given == {"chains": 2, "seed": 9}
    assert salsa.with_seed(None, None) == {} and loma.with_seed({"lpf_limit": 4}, 3) == {"lpf_limit": 4}


def test_mappers_declare_whether_the_hint_is_part_of_their_problem():
    """`Mapper.uses_hint` (what the problem id follows): a loop-order mapper when it searches the
    unrolling, a full-space mapper unless ``hint = false``, a mapper of another kind never."""
    from costmodel.loopnest.arch import load_accelerator
    from costmodel.workload import Layer
    from mappers import get_mapper
    layer, acc = Layer("l", K=16, C=16, OY=8, OX=8, FY=3, FX=3), load_accelerator("eyeriss_like")
    loma, cosa, deepopt = get_mapper("loma"), get_mapper("cosa"), get_mapper("deepopt")
    prob = loma.make_problem(layer, acc, None, "energy")
    assert loma.searches_spatial and not cosa.searches_spatial and not deepopt.searches_spatial
    assert not loma.uses_hint(prob, {}) and loma.uses_hint(prob, {"spatial": "search"})
    assert cosa.uses_hint(prob, {}) and not cosa.uses_hint(prob, {"hint": False})
    assert not deepopt.uses_hint(None, {}) and deepopt.spatial_mode(None, {}) == "fixed"
