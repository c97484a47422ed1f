"""`sweep report` of an architecture search with a dataflow axis, on a hand-made result
directory: the best design of each dataflow per area budget, each dataflow's Pareto front, best
and median EDP, design files carrying the dataflow, text, JSON and the PNG."""

import json
from dataclasses import replace

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from costmodel.loopnest.arch import load_accelerator
from costmodel.loopnest.hint import SpatialHint
from costmodel.loopnest.mapping import SpatialMapping
from sweep.cli import app
from sweep.engine.store import Store
from sweep.kinds import build_report

HINT = {"D1": ["K", "C"], "D2": ["OX", "OY"]}
DATAFLOWS = {"ws": {"spatial": {"D1": [["C", 14]], "D2": [["K", 12]]}},
             "rs": {"spatial": {"D1": [["OY", 14]], "D2": [["FY", 3], ["K", 4]]}},
             "flex": {"spatial_hint": HINT}}
#: design -> (dataflow, area mm2, energy pJ, latency cycles) on tiny_net; EDP = energy x latency
DESIGNS = {
    "a1": ("ws", 1.0, 10.0, 100.0),    # EDP 1000
    "a2": ("ws", 2.0, 5.0, 100.0),     # 500   best ws; dominated by c1 overall
    "a3": ("ws", 3.0, 6.0, 100.0),     # 600   dominated by a2
    "b1": ("rs", 1.0, 8.0, 100.0),     # 800   overall front
    "b2": ("rs", 3.0, 4.0, 100.0),     # 400   overall front, best overall
    "c1": ("flex", 2.0, 4.5, 100.0),   # 450   overall front
}
BUDGETS = [1.5, 2.5, 3.5]


def _arch(df: str) -> str:
    base = load_accelerator("eyeriss_like")
    d = DATAFLOWS[df]
    acc = (replace(base, spatial=SpatialMapping.from_dict(d["spatial"]), spatial_hint=None) if "spatial" in d
           else replace(base, spatial=SpatialMapping({}), spatial_hint=SpatialHint.from_dict(HINT, base.array)))
    return json.dumps(acc.to_dict(), sort_keys=True)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("dfrep") / "out"
    store = Store(out)
    store.create({"name": "df_test", "source": "df.toml", "config_hash": "0" * 64, "tasks": len(DESIGNS),
                  "base_dir": str(out), "report": {},
                  "campaign": {"name": "df_test", "networks": ["tiny_net"]},
                  "config": {"kind": "archsearch", "name": "df_test", "networks": [{"name": "tiny_net"}],
                             "objectives": ["edp"], "seeds": [0], "mappers": [{"name": "salsa", "params": {}}],
                             "architectures": {"template": "eyeriss_like", "params": ["array.D1", "dataflow"],
                                               "axes": {"array.D1": [14], "dataflow": ["ws", "rs", "flex"]},
                                               "dataflows": DATAFLOWS},
                             "search": {"sampler": "grid", "objectives": ["edp"]},
                             "report": {"area_budgets": BUDGETS}}})
    tasks = []
    for i, (name, (df, area, e, lat)) in enumerate(DESIGNS.items()):
        row = {"task_id": f"t{i}", "status": "ok", "design_id": name, "network": "tiny_net", "area_mm2": area,
               "energy_pj": e, "latency_cycles": lat, "edp": e * lat, "seed": 0, "mapper": "salsa",
               "objective": "edp", "array.D1": 14, "dataflow": df}
        layer = {"task_id": f"t{i}", "status": "ok", "design_id": name, "network": "tiny_net", "layer": "conv_a",
                 "repeat": 1, "energy_pj": e, "latency_cycles": lat, "edp": e * lat, "error": None}
        tasks.append((f"t{i}", {"totals": pa.Table.from_pylist([row]), "rows": pa.Table.from_pylist([layer]),
                                "archs": pa.Table.from_pylist([{"task_id": f"t{i}", "design_id": name,
                                                                "arch": _arch(df)}])}))
    store.write_batch(tasks)
    return out, build_report(out, out / "plots")


def _ids(recs):
    return [r["design_id"] for r in recs]


def test_best_design_of_each_dataflow_per_budget(built):
    _, rep = built
    d = rep["networks"]["tiny_net"]["dataflows"]
    assert d["names"] == ["ws", "rs", "flex"] and d["kinds"] == {"ws": "fixed", "rs": "fixed", "flex": "hint"}
    bpb = d["best_per_budget"]
    # ws: 1.5 -> a1 only; 2.5 -> a2 (500) beats a1; 3.5 -> a2 still (a3 is 600)
    assert _ids(bpb["ws"]) == ["a1", "a2", "a2"] and [r["feasible"] for r in bpb["ws"]] == [1, 2, 3]
    assert _ids(bpb["rs"]) == ["b1", "b1", "b2"]
    assert _ids(bpb["flex"]) == [None, "c1", "c1"]       # no flex design of 1.5 mm^2 or less
    assert [r["budget_mm2"] for r in bpb["rs"]] == BUDGETS
    assert bpb["rs"][2]["edp"] == 400.0 and bpb["rs"][2]["params"] == {"array.D1": 14, "dataflow": "rs"}


def test_dataflow_effects_and_fronts(built):
    _, rep = built
    d = rep["networks"]["tiny_net"]["dataflows"]
    # the network's best EDP is b2's 400; ws: 1000, 500, 600 -> best 500, median 600
    assert [(e["dataflow"], e["kind"], e["designs"], e["best_edp"], e["median_edp"], e["best_design_id"])
            for e in d["effects"]] == [("ws", "fixed", 3, 500.0, 600.0, "a2"), ("rs", "fixed", 2, 400.0, 600.0, "b2"),
                                       ("flex", "hint", 1, 450.0, 450.0, "c1")]
    assert [(e["best_vs_best"], e["median_vs_best"]) for e in d["effects"]] == [(1.25, 1.5), (1.0, 1.5), (1.125, 1.125)]
    # per-dataflow fronts: a3 (3, 600) is dominated by a2 (2, 500) within ws
    assert {n: _ids(f) for n, f in d["pareto_area_edp"].items()} == {"ws": ["a1", "a2"], "rs": ["b1", "b2"],
                                                                     "flex": ["c1"]}
    # the overall front: b1 (1, 800), c1 (2, 450), b2 (3, 400)
    assert _ids(rep["networks"]["tiny_net"]["pareto_area_edp"]) == ["b1", "c1", "b2"]


def test_design_files_carry_the_dataflow(built):
    out, rep = built
    # the front's three, then ws's best a2 (off the front), with why
    assert [(x["design_id"], x.get("why")) for x in rep["designs"]] == [
        ("b1", None), ("c1", None), ("b2", None), ("a2", "best design of dataflow 'ws' on tiny_net")]
    files = {x["design_id"]: x["file"] for x in rep["designs"]}
    a2 = load_accelerator(files["a2"])
    assert a2.spatial == SpatialMapping({"D1": (("C", 14),), "D2": (("K", 12),)}) and a2.spatial_hint is None
    c1 = load_accelerator(files["c1"])
    assert c1.spatial == SpatialMapping({}) and c1.spatial_hint.dims == {"D1": ("K", "C"), "D2": ("OX", "OY")}
    head = open(files["a2"]).read()
    assert 'dataflow = "ws"' in head and "best design of dataflow 'ws' on tiny_net" in head
    assert "Pareto front" not in head.split("name =")[0]


def test_text_json_and_png(built):
    out, rep = built
    assert sorted(p.rsplit("/", 1)[1] for p in rep["plots"]) == [
        "archsearch_tiny_net_area_edp.png", "archsearch_tiny_net_dataflows.png", "archsearch_tiny_net_parameters.png"]
    for f in rep["plots"]:
        with open(f, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    r = CliRunner().invoke(app, ["report", str(out), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["networks"]["tiny_net"]["dataflows"]["effects"][1]["best_design_id"] == "b2"
    r = CliRunner().invoke(app, ["report", str(out)], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    assert "best EDP per dataflow and area budget" in r.output and "effect of the dataflow" in r.output
    assert "flex (hint)" in r.output and "dataflow's best" in r.output
