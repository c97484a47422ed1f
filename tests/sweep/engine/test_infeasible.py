"""Results with nothing feasible (issue 30, item 2): their own status ("infeasible", or "skipped"
for a search a mapper declines) with a reason a person can act on, counted by the run, the
reports and `sweep map`, which exit 1 when nothing is feasible."""

import json
import math
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from costmodel.loopnest.allocation import capacity_floor
from costmodel.loopnest.arch import load_accelerator
from costmodel.zoo import load_network, load_network_file
from mappers import get_mapper
from mappers.base import LayerProblem, result_status
from paths import DATA
from sweep.cli import app

runner = CliRunner()
TINY = load_network_file(DATA / "tiny_net.csv")
CONV_B = TINY.layers[1]   # K 16, C 8, OY = OX = 7, 1x1


def _eyeriss(**sizes):
    """eyeriss_like with the named memories resized (bits)."""
    acc = load_accelerator("eyeriss_like")
    mems = tuple(replace(m, size_bits=sizes.get(m.name, m.size_bits)) for m in acc.memories)
    return replace(acc, memories=mems)


def _toml(tmp_path, **sizes):
    """eyeriss_like's preset file with the named memories' size_bits replaced, as a new TOML."""
    from pathlib import Path

    import costmodel.presets
    text = (Path(costmodel.presets.__file__).parent / "eyeriss_like.toml").read_text()
    for name, bits in sizes.items():
        head = f'name = "{name}"\nsize_bits = '
        i = text.index(head) + len(head)
        j = text.index("\n", i)
        text = text[:i] + str(bits) + text[j:]
    p = tmp_path / "small.toml"
    p.write_text(text)
    return p


# -- the floor: can any mapping fit? --------------------------------------------------------------

@pytest.mark.parametrize("sizes, memory, need", [
    ({"rf_16B": 7}, "rf_16B", "16 bits > 7"),        # one output per PE fits 7 bits at neither 16 nor 8 bits
    ({"rf_64B_A": 4}, "rf_64B_A", "8 bits > 4"),     # one 8-bit input per PE does not fit 4 bits
    ({"sram_8KB": 100}, "sram_8KB", "> 100"),        # the array's outputs (7 x 4 = 28 x 16 bits) do not fit
])
def test_floor_names_the_memory_that_overflows(sizes, memory, need):
    why = capacity_floor(CONV_B, _eyeriss(**sizes))
    assert f"capacity exceeded at {memory}" in why and need in why
    assert "more bits" in why   # what to change


def test_floor_by_hand_at_the_limit():
    """sram_8KB holds the O tile of one array pass: OX 7 x K 4 = 28 outputs (FY 3 clips to 1 on a
    1x1 layer), 448 bits at the partial-sum precision (16 bits) and 224 at the final one (8 bits), the
    latter when the reduction loops (C) sit below it. 224 fits, 223 does not; the reason names the
    partial tile of the first test mapping."""
    assert capacity_floor(CONV_B, _eyeriss(sram_8KB=224)) == ""
    assert "tiles need 448 bits > 223" in capacity_floor(CONV_B, _eyeriss(sram_8KB=223))


@pytest.mark.parametrize("sizes", [{}, {"rf_16B": 7}, {"rf_16B": 16}, {"rf_64B_A": 4}, {"sram_8KB": 223},
                                   {"sram_8KB": 224}, {"sram_8KB": 447}, {"sram_8KB": 448}, {"sram_8KB": 1024},
                                   {"rf_64B_W": 7}])
def test_floor_agrees_with_exhaustive_search(sizes):
    """Oracle: loma's exhaustive search over every ordering finds a valid mapping exactly when the
    floor says one exists, at the limits too (224 bits: O at its final precision; 448: see
    `test_lookahead_allocates_at_the_limit`)."""
    acc = _eyeriss(**sizes)
    r = get_mapper("loma").search(LayerProblem(CONV_B, acc, None, "energy"), {})
    assert math.isfinite(r.value) == (capacity_floor(CONV_B, acc) == "")


def test_lookahead_allocates_at_the_limit():
    """At sram_8KB = 448 bits the floor mapping fits, but ZigZag's greedy allocation puts a K loop
    in rf_16B first and then overflows sram_8KB, for every ordering; the look-ahead (only
    combinations the memories above can complete) allocates them. The ordering LOMA keeps is one
    that the allocation without the look-ahead refuses."""
    from costmodel.loopnest.allocation import allocate
    from costmodel.loopnest.mapping import MappingError
    acc = _eyeriss(sram_8KB=448)
    loma = get_mapper("loma")
    p = loma.resolve({})
    prob = LayerProblem(CONV_B, acc, None, "energy")
    r = loma.search(prob, p)
    st, why = result_status(loma, prob, r, p)
    assert st == "ok" and why == ""
    loops = tuple(tuple(x) for x in r.detail.loops)
    from costmodel.loopnest.reference import evaluate
    assert evaluate(CONV_B, acc, allocate(CONV_B, acc, None, loops)).valid
    with pytest.raises(MappingError, match="sram_8KB"):
        allocate(CONV_B, acc, None, loops, lookahead=False)


def test_loma_scan_stops_where_o_shrinks_to_its_final_precision():
    """rf_16B = 8 bits holds one output at its final precision (8 bits) but not as a 16-bit partial
    sum: a valid mapping keeps the reduction loops (C) below rf_16B (the floor's second test
    mapping, valid by the reference). LOMA's candidate scan stops at the first prefix whose tile
    overflows (the empty one: a partial sum), assuming tiles only grow with the prefix, which O's
    does not when its precision drops; so it misses the mapping, and the reason says one exists."""
    acc = _eyeriss(rf_16B=8)
    assert capacity_floor(CONV_B, acc) == ""
    loma = get_mapper("loma")
    p = loma.resolve({})
    prob = LayerProblem(CONV_B, acc, None, "energy")
    st, why = result_status(loma, prob, loma.search(prob, p), p)
    assert st == "infeasible" and "although one exists" in why


def test_search_shortfall_says_a_mapping_exists():
    """Where a valid mapping exists but a search found none (a result of +inf), the reason says so
    (not "nothing fits") and names what to do."""
    acc = _eyeriss(sram_8KB=448)
    loma = get_mapper("loma")
    p = loma.resolve({})
    prob = LayerProblem(CONV_B, acc, None, "energy")
    missed = replace(loma.search(prob, p), value=math.inf, energy_pj=math.inf, latency_cycles=math.inf, detail=None)
    st, why = result_status(loma, prob, missed, p)
    assert st == "infeasible" and "although one exists" in why and "full-space mapper" in why


# -- status and reason of a result -----------------------------------------------------------------

def test_status_of_results():
    acc = _eyeriss(rf_16B=7)
    prob = LayerProblem(CONV_B, acc, None, "energy")
    salsa = get_mapper("salsa")
    p = salsa.resolve({"iterations": 50, "chains": 1})
    st, why = result_status(salsa, prob, salsa.search(prob, p), p)
    assert st == "infeasible" and "rf_16B" in why
    ok = LayerProblem(CONV_B, _eyeriss(), None, "energy")
    assert result_status(salsa, ok, salsa.search(ok, p), p) == ("ok", "")
    loma = get_mapper("loma")
    q = loma.resolve({"max_orderings": 2})
    st, why = result_status(loma, ok, loma.search(ok, q), q)
    assert st == "skipped" and why.startswith("search skipped:") and "max_orderings 2" in why


def test_cosa_time_limit_reason():
    cosa = get_mapper("cosa")
    prob = LayerProblem(CONV_B, load_accelerator("simba_like"), None, "energy")
    p = cosa.resolve({"time_limit_s": 0.0, "hint": False})
    r = cosa.search(prob, p)
    assert r.value == math.inf
    st, why = result_status(cosa, prob, r, p)
    assert st == "infeasible" and "time_limit_s = 0.0" in why and "raise time_limit_s" in why


def test_deepopt_reasons():
    """AlexNet conv1 (11 x 11) needs J >= 11 array rows (DeepOpt section 3.1); 4 KiB SRAMs hold no
    branch's blocks of it; a feasible point is ok."""
    from costmodel.systolic import SystolicParams
    from costmodel.systolic.points import SystolicPoints
    from mappers.systolic.deepopt import DEEPOPT, AllocationProblem

    a = lambda *v: np.array(v, dtype=float)  # noqa: E731
    pts = SystolicPoints(J=a(8, 32, 32), K=a(32, 64, 64), fsram_kib=a(16, 16, 4), isram_kib=a(32, 32, 4),
                         psram_kib=a(8, 8, 4), area_mm2=a(1, 1, 1))
    prob = AllocationProblem((load_network("alexnet"),), pts, ("E",), SystolicParams(), point_offset=0,
                             chunk_points=3)
    rows = DEEPOPT.search(prob, {}).tables["rows"]
    assert list(rows["status"]) == ["infeasible", "ok", "infeasible"]
    assert "fewer rows J than the filter width S = 11 (J >= 11 needed)" in rows["error"][0] and rows["error"][1] == ""
    assert "layer conv1" in rows["error"][2] and "no branch's blocks fit the SRAMs" in rows["error"][2]
    assert np.isinf(rows["pm_value"][0]) and np.isfinite(rows["pm_value"][1])


# -- sweep map ------------------------------------------------------------------------------------

def test_map_infeasible_exits_1_with_reason(tmp_path):
    arch = _toml(tmp_path, rf_16B=7)
    res = runner.invoke(app, ["map", "--dims", "K=16,C=8,OY=7,OX=7", "--arch", str(arch), "--mapper", "salsa",
                              "--param", "iterations=50"])
    assert res.exit_code == 1, res.output
    assert "no valid mapping of" in res.output and "capacity exceeded at rf_16B" in res.output
    res = runner.invoke(app, ["map", "--dims", "K=16,C=8,OY=7,OX=7", "--arch", str(arch), "--mapper", "salsa",
                              "--param", "iterations=50", "--json"])
    assert res.exit_code == 1
    doc = json.loads(res.stdout)   # strict JSON: inf is null
    assert doc["status"] == "infeasible" and doc["value"] is None and "rf_16B" in doc["reason"]


def test_map_network_one_layer_infeasible(tmp_path):
    """With rf_64B_A at 4 bits no 8-bit input fits a PE: the table, one line per layer and exit 1."""
    arch = _toml(tmp_path, rf_64B_A=4)
    res = runner.invoke(app, ["map", "--network", str(DATA / "tiny_net.csv"), "--arch", str(arch),
                              "--mapper", "salsa", "--param", "iterations=50"])
    assert res.exit_code == 1, res.output
    assert "no valid mapping of conv_a" in res.output and "no valid mapping of conv_b" in res.output
    assert "2 of 2 layer(s) have no valid mapping" in res.output


# -- a campaign where nothing is feasible ---------------------------------------------------------

CAMPAIGN = """
name = "nothing_fits"
output = "{out}"
networks = [{{ file = "{net}" }}]
objectives = ["energy"]

[architectures]
kind = "loopnest"
presets = ["simba_like"]

[[mappers]]
name = "cosa"
params = {{ time_limit_s = 0.0, hint = false, solves = ["0"] }}
"""


def test_run_with_nothing_feasible(tmp_path):
    from sweep.engine.tasks import expand
    from sweep.kinds import load_campaign

    p = tmp_path / "c.toml"
    out = tmp_path / "out"
    p.write_text(CAMPAIGN.format(out=out.as_posix(), net=(DATA / "tiny_net.csv").as_posix()))
    res = runner.invoke(app, ["run", str(p), "--executor", "local"])
    assert res.exit_code == 1, res.output
    assert "row(s) infeasible; the first: HiGHS stopped at time_limit_s = 0.0 s" in res.output
    assert "nothing feasible" in res.output and "0 failed" in res.output
    rows = pq.read_table(out / "rows").to_pandas()
    assert set(rows["status"]) == {"infeasible"} and rows["error"].str.contains("raise time_limit_s").all()
    # the status and reason are row data: the task ids are those the campaign expands to
    assert set(rows["task_id"]) == {t.task_id for t in expand(load_campaign(p))}
    rep = runner.invoke(app, ["report", str(out)])
    assert rep.exit_code == 0, rep.output
    assert "rows: 2 infeasible" in rep.output and "no row finished (2 infeasible; 1 task(s))" in rep.output
    assert "infeasible: cosa / tiny_net / conv_a: 1 row(s): HiGHS stopped" in rep.output


def test_design_layer_and_totals_infeasible():
    """An architecture-search design whose memories hold no tile of a layer: the layer row and the
    network's totals row are "infeasible" with the layer named (not "error")."""
    from sweep.engine.design_tasks import _map_layer
    from sweep.engine.problem import Problem
    p = get_mapper("salsa").resolve({"iterations": 50, "chains": 1})
    row = _map_layer(Problem("salsa", LayerProblem(CONV_B, _eyeriss(rf_16B=7), None, "energy"), p))
    assert row["status"] == "infeasible" and "capacity exceeded at rf_16B" in row["error"]
    assert row["value"] == math.inf


def test_report_groups_several_reasons():
    """One (status, mapper, network, layer) group whose rows give three reasons: the most common
    first with its share, the next two, and how many more."""
    import pandas as pd

    from sweep.reports.summary import failures
    why = ["A"] * 5 + ["B"] * 3 + ["C"] * 2 + ["D"]
    rows = pd.DataFrame({"task_id": ["t"] * 11, "status": ["infeasible"] * 11, "mapper": ["deepopt"] * 11,
                         "network": ["n"] * 11, "error": why})
    (g,) = failures(rows)["groups"]
    assert (g["rows"], g["error"], g["other_reasons"]) == (11, "A", 1)
    assert g["more_reasons"] == [{"rows": 3, "error": "B"}, {"rows": 2, "error": "C"}]


def test_systolic_chunk_where_a_network_fits_nowhere(tmp_path):
    """A systolic grid whose first chunk holds only J = 8 arrays: AlexNet's 11 x 11 conv1 fits no LOS
    branch there (J >= 11 needed), so that chunk has no AlexNet detail rows; the ``layers`` table's
    columns keep their types (``point`` int64), the store merges the chunks and the run finishes
    (it used to stop with "Unable to merge: Field point has incompatible types: double vs int64")."""
    from sweep import api
    camp = {"name": "j8", "networks": ["alexnet_deepopt", "squeezenet_v11_deepopt"], "objectives": ["E"],
            "architectures": {"kind": "systolic", "grid": {"J": [8, 16], "K": [16], "fsram_kib": [64],
                                                             "isram_kib": [64], "psram_kib": [64]}},
            "mappers": [{"name": "deepopt"}], "run": {"chunk_points": 1}}
    run = api.run_campaign(camp, tmp_path / "out")
    assert run.ok
    layers = pq.read_table(tmp_path / "out" / "layers")
    assert layers.schema.field("point").type == pa.int64()
    nets = layers.to_pandas().groupby("point")["network"].unique()
    assert list(nets[0]) == ["squeezenet_v11_deepopt"]                       # J = 8: AlexNet fits no branch
    assert sorted(nets[1]) == ["alexnet_deepopt", "squeezenet_v11_deepopt"]  # J = 16: both
    rows = pq.read_table(tmp_path / "out" / "rows").to_pandas()
    j8 = rows[(rows["J"] == 8) & (rows["network"] == "alexnet_deepopt")]
    assert list(j8["status"]) == ["infeasible"] and "J >= 11" in j8["error"].iloc[0]
