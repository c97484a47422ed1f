"""Architecture-search campaigns: template grids, invalid points, constraints, the area window,
[search], and bad grids (exit 2 naming the key, nothing written)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from costmodel.systolic.area import A_PE_UM2, A_SRAM_UM2_PER_BYTE
from paths import REPO
from sweep.kinds import load_campaign, parse_campaign
from sweep.cli import app
from sweep.common.errors import CampaignError

BASE = """
name = "as"
networks = [{{file = "{net}"}}]
objectives = ["edp"]
[architectures]
kind = "loopnest"
template = "eyeriss_like"
[architectures.grid]
{grid}
[[mappers]]
name = "salsa"
params = {{chains = 1, iterations = 50, descent = false}}
{extra}
"""
TINY_NET = (REPO / "tests" / "data" / "tiny_net.csv").as_posix()


def write(tmp_path: Path, grid: str, extra: str = "", name: str = "as.toml") -> Path:
    p = tmp_path / name
    p.write_text(BASE.format(net=TINY_NET, grid=grid, extra=extra))
    return p


def eyeriss_area(pes: int, rf_bits_per_pe: int, sram_kib: float) -> float:
    """By hand: PEs x DeepOpt's PE area + every on-chip byte x DeepOpt's SRAM density, mm^2."""
    return (pes * A_PE_UM2 + (pes * rf_bits_per_pe / 8 + sram_kib * 1024) * A_SRAM_UM2_PER_BYTE) * 1e-6


def test_grid_expands_with_areas_by_hand(tmp_path):
    c = load_campaign(write(tmp_path, 'array.D1 = [7, 14]\nmemory.sram_1M.size_kib = {pow2 = [256, 1024]}'))
    sp = c.architectures
    assert c.kind == "archsearch" and sp.names == ("array.D1", "memory.sram_1M.size_kib")
    assert sp.total == 6 and len(sp) == 6 and sp.dropped == {}
    # last name fastest: (7, 256), (7, 512), (7, 1024), (14, 256), ...
    assert sp.point(1) == {"array.D1": 7, "memory.sram_1M.size_kib": 512}
    want = [eyeriss_area(d1 * 12, 512 + 512 + 128, 8 + 64 + gb) for d1 in (7, 14) for gb in (256, 512, 1024)]
    np.testing.assert_allclose(sp.area_mm2, want, rtol=1e-12)
    # the template's own point is the preset's area
    assert sp.area_mm2[5] == pytest.approx(eyeriss_area(168, 1152, 1096), rel=1e-12)


def test_invalid_points_are_dropped_and_counted(tmp_path):
    # rf_16B's word is 24 bits: 16 bits cannot hold one word; D2 = 2 cannot unroll FY 3
    c = load_campaign(write(tmp_path, 'array.D2 = [2, 12]\nmemory.rf_16B.size_bits = [16, 128, 256]'))
    sp = c.architectures
    assert sp.total == 6 and len(sp) == 2
    # a point with two problems counts under the first found (the memories, then the array):
    # (2, 16) and (12, 16) too small; (2, 128) and (2, 256) spatial
    assert sp.dropped == {"spatial does not fit": 2, "too small for one word": 2}
    assert [sp.point(i) for i in range(2)] == [{"array.D2": 12, "memory.rf_16B.size_bits": 128},
                                               {"array.D2": 12, "memory.rf_16B.size_bits": 256}]


def test_constraints_with_dotted_names_and_the_area_window(tmp_path):
    budget = (eyeriss_area(84, 1152, 1096) + eyeriss_area(168, 1152, 1096)) / 2
    grid = ('array.D1 = [7, 14, 28]\narray.D2 = [6, 12, 24]\n'
            'constraints = ["array.D1 * array.D2 <= 200", "array.D1 <= array.D2 * 2"]\n'
            f'area_budget_mm2 = {budget!r}')
    sp = load_campaign(write(tmp_path, grid)).architectures
    # by hand: PE counts (D1, D2) -> 42 (7,6), 84 (7,12), 168 (7,24), 84 (14,6), 168 (14,12),
    # 336 (14,24), 168 (28,6), 336 (28,12), 672 (28,24); "<= 200" drops 3; "D1 <= 2 D2" then
    # drops (14,6) and (28,6); the budget between the areas of 84 and 168 PEs drops (7,24), (14,12)
    assert [sp.point(i) for i in range(len(sp))] == [{"array.D1": 7, "array.D2": 6}, {"array.D1": 7, "array.D2": 12}]
    assert sp.dropped == {"constraints[0]: array.D1 * array.D2 <= 200": 3,
                          "constraints[1]: array.D1 <= array.D2 * 2": 2, "area window": 2}


@pytest.mark.parametrize("grid, key, words", [
    ('array.D3 = [4]', "architectures.grid.array.D3", "unknown parameter"),
    ('memory.nope.size_bits = [64]', "architectures.grid.memory.nope.size_bits", "unknown parameter"),
    ('memory.sram_1M.size_kib = [2048]', "architectures.grid.memory.sram_1M.size_kib", "outside the physics model"),
    ('memory.sram_64KB.size_kib = [2]', "architectures.grid.memory.sram_64KB.size_kib", "outside the physics model"),
    ('memory.rf_64B_W.size_bits = [65536]', "architectures.grid.memory.rf_64B_W.size_bits", "outside the physics model"),
    ('array.D1 = [0, 14]', "architectures.grid.array.D1", "positive"),
    ('array.D1 = [7, 14]\nconstraints = ["array.D1 > 100"]', "architectures.grid", "no valid design"),
    ('array.D1 = [7, 14]\narea_budget_mm2 = 1.0', "architectures.grid", "no valid design"),
    ('array.D1 = [7]\nconstraints = ["array.D9 > 1"]', "architectures.grid.constraints[0]", "unknown name"),
])
def test_bad_grids_exit_2_naming_the_key_and_write_nothing(tmp_path, grid, key, words):
    out = tmp_path / "out"
    assert_bad(write(tmp_path, grid, extra=f'output = "{out.as_posix()}"'.replace("output", "# output")),
               out, key, words)


def assert_bad(p: Path, out: Path, key: str, words: str) -> None:
    """Campaign ``p`` has a problem at ``key`` whose message holds ``words``; `sweep run` exits 2
    naming the key and writes nothing to ``out``."""
    with pytest.raises(CampaignError) as ei:
        load_campaign(p)
    assert any(f.key == key and words in f.message for f in ei.value.problems), ei.value.problems
    r = CliRunner().invoke(app, ["run", str(p), "--out", str(out), "--executor", "local"])
    assert r.exit_code == 2 and key in r.output
    assert not out.exists()


@pytest.mark.parametrize("search, key", [
    ('sampler = "anneal"', "search.sampler"),
    ('sampler = "tpe"', "search.trials"),                  # trials required
    ('sampler = "grid"\ntrials = 3', "search.trials"),     # grid takes every design
    ('sampler = "random"\ntrials = 99', "search.trials"),  # more than the 2 designs
    ('objectives = ["edp", "area_mm2", "energy_pj"]', "search.objectives"),
    ('objectives = ["power"]', "search.objectives"),
    ('sampler = "nsga2"\ntrials = 4\nbatch = 0', "search.batch"),
    ('colour = "red"', "search.colour"),
])
def test_bad_search_tables(tmp_path, search, key):
    with pytest.raises(CampaignError) as ei:
        load_campaign(write(tmp_path, "array.D1 = [7, 14]", extra=f"[search]\n{search}"))
    assert key in [f.key for f in ei.value.problems]


def test_one_mapper_objective_and_seed(tmp_path):
    p = write(tmp_path, "array.D1 = [7, 14]", extra='[[mappers]]\nname = "loma"')
    with pytest.raises(CampaignError) as ei:
        load_campaign(p)
    assert "mappers" in [f.key for f in ei.value.problems]
    data = {"name": "x", "networks": ["resnet18"], "objectives": ["edp", "energy"], "seeds": [0, 1],
            "architectures": {"kind": "loopnest", "template": "eyeriss_like", "grid": {"array": {"D1": [7]}}},
            "mappers": [{"name": "salsa"}]}
    with pytest.raises(CampaignError) as ei:
        parse_campaign(data)
    assert {"objectives", "seeds"} <= {f.key for f in ei.value.problems}


def test_bundled_campaigns_validate():
    for name in ("archsearch_eyeriss", "archsearch_eyeriss_nsga2"):
        c = load_campaign(REPO / "campaigns" / f"{name}.toml")
        sp = c.architectures
        assert len(sp.names) == 6 and sp.total == 3 * 3 * 5 * 4 * 4 * 3
        assert len({(v[0], v[1]) for v in sp.values}) >= 6          # array shapes
        assert len(sp) >= 1000 and sp.area_mm2.max() <= 16.0
    r = CliRunner().invoke(app, ["validate", str(REPO / "campaigns" / "archsearch_eyeriss.toml")])
    assert r.exit_code == 0 and "valid design(s)" in r.output and "area window" in r.output


def test_list_archs_names_each_template_parameter():
    import json
    r = CliRunner().invoke(app, ["list", "archs", "--json"])
    rows = {x["name"]: x for x in json.loads(r.output)}
    params = rows["eyeriss_like"]["grid_parameters"]
    # 2 array dims; 6 bounded memories x (size_bits, size_kib, word_bits); DRAM's word only; vector.lanes
    assert len(params) == 2 + 6 * 3 + 1 + 1 and "vector.lanes" in params and "memory.sram_1M.size_kib" in params and "memory.dram.word_bits" in params
    assert "memory.dram.size_bits" not in params


def test_grid_keys_written_quoted_dotted_or_as_tables_are_one_campaign(tmp_path):
    """The three TOML spellings of the same grid give the same designs and the same config hash
    (so `--resume` accepts a file whose grid was rewritten in another form); before, the quoted
    form hashed differently from the dotted one."""
    forms = {
        "dotted": 'array.D1 = [7, 14]\nmemory.sram_1M.size_kib = [256, 1024]',
        "quoted": '"array.D1" = [7, 14]\n"memory.sram_1M.size_kib" = [256, 1024]',
        "tables": '[architectures.grid.array]\nD1 = [7, 14]\n[architectures.grid.memory.sram_1M]\nsize_kib = [256, 1024]',
    }
    camps = {k: load_campaign(write(tmp_path, g, name=f"{k}.toml")) for k, g in forms.items()}
    hashes = {k: c.config_hash() for k, c in camps.items()}
    assert len(set(hashes.values())) == 1, hashes
    ids = {k: [c.architectures.design_id(c.architectures.point(i)) for i in range(len(c.architectures))]
           for k, c in camps.items()}
    assert ids["dotted"] == ids["quoted"] == ids["tables"] and len(ids["dotted"]) == 4


def test_grid_expansion_equals_designs_built_one_by_one(tmp_path):
    """parse_design_space (one memo for the grid) keeps the same points, areas and drop counts as
    building every grid point with the plain ArchTemplate.design."""
    import itertools
    from costmodel.loopnest.physics import design_area_mm2
    from costmodel.loopnest.template import InvalidDesign
    grid = ('array.D1 = [2, 7, 14]\narray.D2 = [6, 12]\nmemory.rf_64B_W.size_bits = [4, 128, 512]\n'
            'memory.rf_64B_W.word_bits = [8, 16]\nmemory.sram_1M.size_kib = [256, 1024]\n'
            'constraints = ["array.D1 * array.D2 <= 100"]')
    sp = load_campaign(write(tmp_path, grid)).architectures
    t = sp.template
    pts, areas, dropped = [], [], {}
    for combo in itertools.product(*(sp.axes[n] for n in sp.names)):
        try:
            areas.append(design_area_mm2(t.design(dict(zip(sp.names, combo)))))
        except InvalidDesign as e:
            dropped[e.reason] = dropped.get(e.reason, 0) + 1
            continue
        pts.append([float(v) for v in combo])
    keep = np.asarray(pts)[:, 0] * np.asarray(pts)[:, 1] <= 100
    assert dropped["too small for one word"] > 0
    assert sp.values.tolist() == np.asarray(pts)[keep].tolist()
    assert [a.hex() for a in sp.area_mm2] == [a.hex() for a, k in zip(areas, keep) if k]
    assert sp.dropped == dropped | {"constraints[0]: array.D1 * array.D2 <= 100": int((~keep).sum())}
