"""The dataflow as an architecture-search axis: [architectures.dataflows], the grid parameter
``dataflow``, invalid points, design identity, and bad dataflows (exit 2 naming the key, nothing
written)."""

from __future__ import annotations

from pathlib import Path

import pytest
from costmodel.loopnest.mapping import SpatialMapping
from sweep.kinds import load_campaign
from sweep.common.errors import CampaignError
from sweep.common.ids import stable_hash
from test_designspace import assert_bad, eyeriss_area, write

DATAFLOWS = """
[architectures.dataflows.ws]
spatial = { D1 = [["C", 14]], D2 = [["K", 12]] }
[architectures.dataflows.rs]
spatial = { D1 = [["OY", 14]], D2 = [["FY", 3], ["K", 4]] }
[architectures.dataflows.flex]
spatial_hint = { D1 = ["K", "C"], D2 = ["OX", "OY"], max_dims = 2 }
"""


def space(tmp_path: Path, grid: str, dataflows: str = DATAFLOWS, name: str = "as.toml"):
    """``dataflows`` go before [[mappers]]: inside [architectures]."""
    return load_campaign(write(tmp_path, grid + "\n" + dataflows, name=name)).architectures


def test_dataflow_axis_points_invalid_ones_and_areas(tmp_path):
    sp = space(tmp_path, 'array.D1 = [7, 14]\narray.D2 = [2, 12]\ndataflow = ["ws", "rs", "flex"]')
    # 2 x 2 x 3 = 12 points; rs unrolls FY 3 on D2 and D2 = 2 cannot hold it (D1 7 and 14): 2 dropped;
    # ws on D2 = 2 unrolls K 2, flex has no unrolling to fit
    assert sp.names == ("array.D1", "array.D2", "dataflow") and sp.axes["dataflow"] == ("ws", "rs", "flex")
    assert sp.total == 12 and len(sp) == 10 and sp.dropped == {"spatial does not fit": 2}
    pts = [sp.point(i) for i in range(len(sp))]
    assert pts[:3] == [{"array.D1": 7, "array.D2": 2, "dataflow": "ws"},
                       {"array.D1": 7, "array.D2": 2, "dataflow": "flex"},
                       {"array.D1": 7, "array.D2": 12, "dataflow": "ws"}]
    assert {"array.D1": 14, "array.D2": 2, "dataflow": "rs"} not in pts
    # the dataflow does not change the area: 7 x 12 PEs with the template's memories
    a = eyeriss_area(84, 512 + 512 + 128, 8 + 64 + 1024)
    assert [x for p, x in zip(pts, sp.area_mm2) if (p["array.D1"], p["array.D2"]) == (7, 12)] == pytest.approx([a] * 3)
    # the designs: ws follows the array (C 7, K 12), flex is an empty unrolling with the hint
    d = sp.template.design(pts[2])
    assert d.spatial == SpatialMapping({"D1": (("C", 7),), "D2": (("K", 12),)}) and d.spatial_hint is None
    d = sp.template.design(pts[1])
    assert d.spatial == SpatialMapping({}) and d.spatial_hint.dims == {"D1": ("K", "C"), "D2": ("OX", "OY")}
    # a suggested point back to its design (Optuna asks names); off-grid values are no design
    assert sp.index_of([7, 12, "ws"]) == 2 and sp.index_of([14, 2, "rs"]) is None
    assert sp.index_of([7, 12, "os"]) is None and sp.index_of([8, 12, "ws"]) is None


def test_design_identity_holds_the_dataflow_definition(tmp_path):
    grid = 'array.D1 = [7, 14]\ndataflow = ["ws", "flex"]'
    a = space(tmp_path, grid, name="a.toml")
    b = space(tmp_path, grid, DATAFLOWS.replace('D2 = [["K", 12]]', 'D2 = [["K", 6]]'), name="b.toml")
    c = space(tmp_path, grid, DATAFLOWS.replace('max_dims = 2', 'max_dims = 1'), name="c.toml")
    ws, flex = {"array.D1": 7, "dataflow": "ws"}, {"array.D1": 7, "dataflow": "flex"}
    # another ws unrolling (K 6) or another hint (max_dims 1): another design under the same name
    assert a.design_id(ws) != b.design_id(ws) and a.design_id(flex) == b.design_id(flex)
    assert a.design_id(flex) != c.design_id(flex) and a.design_id(ws) == c.design_id(ws)
    assert a.describe()["dataflows"]["ws"] == {"spatial": {"D1": [["C", 14]], "D2": [["K", 12]]}}
    assert a.describe()["axes"]["dataflow"] == ["ws", "flex"]
    # without dataflows the identity is what it always was: the template and the values
    plain = space(tmp_path, 'array.D1 = [7, 14]', dataflows="", name="p.toml")
    assert plain.design_id({"array.D1": 7}) == stable_hash(
        {"template": repr(plain.template.base), "values": {"array.D1": 7}}, 16)
    assert "dataflows" not in plain.describe()


@pytest.mark.parametrize("grid, dataflows, key, words", [
    ('dataflow = ["ws"]', "", "architectures.grid.dataflow", "no dataflow is defined"),
    ('dataflow = ["ws", "os"]', DATAFLOWS, "architectures.grid.dataflow", "unknown dataflow"),
    ('dataflow = "ws"', DATAFLOWS, "architectures.grid.dataflow", "non-empty list"),
    ('dataflow = ["ws", "ws"]', DATAFLOWS, "architectures.grid.dataflow", "distinct"),
    ('array.D1 = [7]', DATAFLOWS, "architectures.dataflows", "not searched"),
    ('dataflow = ["x"]', '[architectures.dataflows.x]\nspatial = { D1 = [["C", 2]] }\nspatial_hint = { D1 = ["K"] }',
     "architectures.dataflows.x", "exactly one of spatial"),
    ('dataflow = ["x"]', '[architectures.dataflows.x]\ndescription = "nothing"',
     "architectures.dataflows.x", "exactly one of spatial"),
    ('dataflow = ["x"]', '[architectures.dataflows.x]\nspatial_hint = { D1 = ["K"], max_dims = 0 }',
     "architectures.dataflows.x.spatial_hint", "spatial_hint.max_dims = 0"),
    ('dataflow = ["x"]', '[architectures.dataflows.x]\nspatial = { D2 = [["K", 13]] }',
     "architectures.dataflows.x.spatial", "exceeds its size 12"),
    ('dataflow = ["ws"]\nconstraints = ["dataflow == 1"]', DATAFLOWS, "architectures.grid.constraints[0]", ""),
])
def test_bad_dataflows_exit_2_naming_the_key_and_write_nothing(tmp_path, grid, dataflows, key, words):
    assert_bad(write(tmp_path, grid + "\n" + dataflows), tmp_path / "out", key, words)


@pytest.mark.parametrize("mapper, dataflows, keys", [
    ('name = "salsa"', DATAFLOWS, []),                                    # default: ws, rs fixed, flex searched
    ('name = "salsa"\nparams = {spatial = "fixed"}', DATAFLOWS, ["mappers[0].params.spatial"]),  # flex not searched
    # ws and rs have no hint to search
    ('name = "salsa"\nparams = {spatial = "search"}', DATAFLOWS, ["mappers[0].params.spatial"] * 2),
    ('name = "primitive_sa"', DATAFLOWS, ["mappers[0].name"]),            # searches no unrolling
    ('name = "primitive_sa"', DATAFLOWS.split("[architectures.dataflows.flex]")[0], []),      # fixed only: fine
    # utilisation 1 on D1 = 14 from K or C: tiny_net's conv_a has K 8, C 4; no unrolling
    ('name = "salsa"', DATAFLOWS.replace("max_dims = 2", "min_utilization = 1.0"),
     ["architectures.dataflows.flex.spatial_hint"]),
])
def test_the_mapper_can_map_every_dataflow(tmp_path, mapper, dataflows, keys):
    from sweep.config.validation import Findings
    from sweep.config.designspace import check_dataflow_mappers
    names = '["ws", "rs", "flex"]' if "flex" in dataflows else '["ws", "rs"]'
    text = write(tmp_path, f"dataflow = {names}\n" + dataflows).read_text()
    p = tmp_path / "m.toml"
    p.write_text(text.split("[[mappers]]")[0] + "[[mappers]]\n" + mapper + "\n")
    if keys:  # campaign validation runs the check: exit 2 naming the keys
        with pytest.raises(CampaignError) as err:
            load_campaign(p)
        assert [x.key for x in err.value.problems] == keys
        return
    c = load_campaign(p)
    f = Findings()
    check_dataflow_mappers(c.architectures, list(c.mappers), list(c.networks), f.bad)
    assert f.items == []
