"""Flexer / static on the multi-NPU presets through the engine and `sweep map`."""

import json

import pytest
from typer.testing import CliRunner

from sweep.kinds import load_campaign
from sweep.cli import app
from sweep.kinds import build_report
from sweep.engine.runner import run_campaign
from sweep.engine.store import Store
from paths import DATA

runner = CliRunner()

CAMPAIGN = """
name = "tiny_npu"
output = "{out}"
networks = [{{ file = "{net}" }}]
objectives = ["latency_bytes"]

[architectures]
kind = "npu"
presets = ["arch1", "arch5"]

[[mappers]]
name = "flexer"
params = {{ min_channels = 4, min_spatial = 7 }}

[[mappers]]
name = "static"
params = {{ min_channels = 4, min_spatial = 7, dataflows = ["oy-ox-c-k", "k-c-oy-ox"] }}

[report]
baseline = "static"
"""


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("npu")
    p = tmp / "c.toml"
    p.write_text(CAMPAIGN.format(out=(tmp / "out").as_posix(), net=(DATA / "tiny_net.csv").as_posix()))
    c = load_campaign(p)
    assert c.kind == "npu" and len(c.architectures) == 2
    s = run_campaign(c, executor="local")
    assert s.tasks_failed == 0
    return c.output


def test_rows_and_report(out):
    rows = Store(out).read("rows")
    assert set(rows["mapper"]) == {"flexer", "static"} and set(rows["arch"]) == {"arch1", "arch5"}
    assert (rows["status"] == "ok").all()
    # the metric is latency (cycles) x transferred bytes of the same schedule
    best = rows.loc[rows.groupby("problem_id")["value"].idxmin()]
    assert (best["value"] == best["latency_cycles"] * best["transferred_bytes"]).all()
    for e, tb in zip(best["extra"], best["transferred_bytes"]):  # bytes by type add up (IN, WT, OT, PS)
        assert sum(json.loads(e)["bytes_by_type"].values()) == tb
    rep = build_report(out)
    labels = {r["mapper"].split("(")[0] for r in rep["networks"]}
    assert labels == {"flexer", "static"}


def test_map_flexer_json_and_bad_objective():
    args = ["map", "--dims", "K=64,C=32,OY=14,OX=14,FY=3,FX=3", "--arch", "arch5", "--mapper", "flexer",
            "--param", "min_channels=16", "--param", "min_spatial=7"]
    res = runner.invoke(app, args + ["--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["metric"] == "latency_bytes" and d["transferred_bytes"] > 0
    assert d["value"] == d["latency_cycles"] * d["transferred_bytes"]
    assert d["energy_pj"] is None
    res = runner.invoke(app, args + ["--objective", "energy"])
    assert res.exit_code == 2 and "--objective = 'energy'" in res.output.replace("\n", " ")
    res = runner.invoke(app, ["map", "--dims", "K=8", "--arch", "arch5", "--mapper", "salsa"])
    assert res.exit_code == 2 and "--mapper = 'salsa'" in res.output.replace("\n", " ")


def test_npu_report_ratios_plots_and_gantt(out, tmp_path):
    """Flexer Figs. 8-10 data: per-layer ratios are static / flexer of the stored best rows, the
    network ratios weight each layer by its repeat count, and the Gantt schedule rebuilt from the
    stored tiling and dataflow has the stored latency (else `write_npu_plots` raises)."""
    rep = build_report(out, tmp_path / "plots")
    rows, probs = Store(out).read("rows"), Store(out).read("problems")
    best = rows.sort_values("value").groupby("problem_id").head(1).merge(
        probs[["problem_id", "network", "layer_index", "repeat"]], on="problem_id")
    lay = {(r["arch"], r["layer_index"]): r for r in rep["npu_layers"]}
    assert len(lay) == len(best) // 2 > 0
    for (arch, li), r in lay.items():
        f = best[(best["mapper"] == "flexer") & (best["arch"] == arch) & (best["layer_index"] == li)].iloc[0]
        s = best[(best["mapper"] == "static") & (best["arch"] == arch) & (best["layer_index"] == li)].iloc[0]
        assert r["speedup"] == pytest.approx(s["latency_cycles"] / f["latency_cycles"])
        assert r["data_reduction"] == pytest.approx(s["transferred_bytes"] / f["transferred_bytes"])
    for n in rep["npu_networks"]:
        b = best[best["arch"] == n["arch"]]
        tot = {m: (b[b["mapper"] == m]["latency_cycles"] * b[b["mapper"] == m]["repeat"]).sum()
               for m in ("flexer", "static")}
        assert n["speedup"] == pytest.approx(tot["static"] / tot["flexer"])
        assert n["max_layer_speedup"] == pytest.approx(max(r["speedup"] for (a, _), r in lay.items() if a == n["arch"]))
    paper = {r["figure"]: r for r in rep["npu_paper"]}   # the paper's stated maxima, Flexer section 5
    assert paper["network_speedup"]["paper"] == 1.67 and paper["layer_speedup_vgg16_arch5"]["paper"] == 2.17
    assert paper["network_speedup"]["ours"] == pytest.approx(max(n["speedup"] for n in rep["npu_networks"]))
    assert paper["network_data_reduction"]["ours"] == pytest.approx(
        max(n["data_reduction"] for n in rep["npu_networks"]))
    names = {p.rsplit("/", 1)[-1] for p in rep["plots"]}
    assert {"npu_networks.png", "npu_reloads.png", "npu_gantt.png"} <= names
    assert all((tmp_path / "plots" / n).stat().st_size > 1000 for n in names)
    res = runner.invoke(app, ["report", str(out)])
    assert res.exit_code == 0 and "speed-up" in res.output and "paper" in res.output


def test_report_best_of_units_breaks_latency_ties_by_bytes():
    """Two units of one latency problem tie on latency: the report keeps the one that moves fewer
    bytes, as the mapper's reduce does; under latency_bytes the first unit of equal value stays."""
    import pandas as pd

    from sweep.reports.npu import _best
    rows = pd.DataFrame({"problem_id": ["p", "p", "q", "q"], "status": "ok", "mapper": "flexer",
                         "objective": ["latency", "latency", "latency_bytes", "latency_bytes"],
                         "value": [100.0, 100.0, 5.0, 5.0], "unit_index": [0, 1, 0, 1],
                         "latency_cycles": [100.0, 100.0, 50.0, 50.0], "transferred_bytes": [900.0, 400.0, 900.0, 400.0],
                         "extra": "{}", "params": "{}", "arch": "arch1"})
    problems = pd.DataFrame({"problem_id": ["p", "q"], "network": "n", "layer": ["a", "b"]})
    best = _best(rows, problems, "flexer").set_index("layer")
    assert best.loc["a", "transferred_bytes"] == 400.0 and best.loc["b", "transferred_bytes"] == 900.0
