"""`sweep report` and `sweep list` on real results, checked against the stored rows."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from sweep.kinds import load_campaign
from sweep.cli import app
from sweep.kinds import build_report
from sweep.engine.runner import run_campaign
from sweep.engine.store import Store

from campaign_util import write_tiny

runner = CliRunner()


@pytest.fixture(scope="module")
def tiny_out(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rep")
    c = load_campaign(write_tiny(tmp, flush=1000))
    run_campaign(c, executor="local")
    return c.output


def test_report_optimum_is_the_minimum_of_the_rows(tiny_out, tmp_path):
    rows = Store(tiny_out).read("rows")
    rep = build_report(tiny_out, tmp_path / "plots")
    assert len(rep["optimal"]) == 2 * 3
    for r in rep["optimal"]:
        g = rows[(rows["network"] == r["network"]) & (rows["pm"] == r["pm"])]
        assert r["pm_value"] == g["pm_value"].min()
        assert r["improvement_over_worst"] == pytest.approx(g["pm_value"].max() / g["pm_value"].min())
        best = g.loc[g["pm_value"].idxmin()]
        assert (r["J"], r["K"], r["fsram_kib"]) == (best["J"], best["K"], best["fsram_kib"])
        # the stored per-layer schedule of the optimum: one branch per layer
        n_layers = 8 if r["network"] == "alexnet_deepopt" else 26
        assert len(r["layer_branches"]) == n_layers
    p = rep["penalty_ED"]
    for a in p["networks"]:
        assert p["percent"][a][a] == 0.0
        assert all(v >= 0 for v in p["percent"][a].values())
    # Table 3 style FS penalties are never negative (LOS is optimal per layer)
    for per in rep["fs_penalty"]["networks"].values():
        for vals in per.values():
            assert all(v is None or v >= -1e-9 for v in vals.values())
    for f in rep["plots"]:
        with open(f, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_report_cli_json_and_text(tiny_out):
    res = runner.invoke(app, ["report", str(tiny_out), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["tasks_stored"] == data["tasks_expected"] == 9
    res = runner.invoke(app, ["report", str(tiny_out)])
    assert res.exit_code == 0 and "Table 4" in res.output and "Table 5" in res.output


@pytest.mark.parametrize("setup, fragment", [
    (lambda d: None, "no such directory"),
    (lambda d: d.mkdir(), "not a dse-sweep result directory"),
    (lambda d: (d.mkdir(), (d / "manifest.json").write_text("{oops")), "unreadable manifest"),
    (lambda d: (d.mkdir(), (d / "manifest.json").write_text('{"format": "other"}')), "not a dse-sweep manifest"),
])
def test_report_bad_directory_exit_2(tmp_path, setup, fragment):
    d = tmp_path / "r"
    setup(d)
    res = runner.invoke(app, ["report", str(d)])
    assert res.exit_code == 2 and fragment in res.output


def test_report_foreign_parquet_named_and_not_read(tiny_out, tmp_path):
    """A Parquet file no run wrote (no task_id column, or not Parquet at all) in a table folder: never
    read, named by the report (exit 0, the results as before) and by `sweep check` (exit 1)."""
    import shutil
    d = tmp_path / "copy"
    shutil.copytree(tiny_out, d)
    before = runner.invoke(app, ["report", str(d), "--json"]).stdout
    for body in (None, b"not parquet"):
        f = d / "rows" / "part-zzzz.parquet"
        pd.DataFrame({"x": [1]}).to_parquet(f) if body is None else f.write_bytes(body)
        res = runner.invoke(app, ["report", str(d)])
        assert res.exit_code == 0 and "part-zzzz.parquet" in res.output and "not read" in res.output
        assert runner.invoke(app, ["report", str(d), "--json"]).stdout == before
        res = runner.invoke(app, ["check", str(d)])
        assert res.exit_code == 1 and "foreign: rows/part-zzzz.parquet" in res.output


def test_report_of_a_directory_without_catalog_still_reads_every_fragment(tiny_out, tmp_path):
    """A directory written before the catalog existed (no fragments.log): every fragment counts, as
    then, and an unreadable one is refused naming it (exit 2)."""
    import shutil
    d = tmp_path / "legacy"
    shutil.copytree(tiny_out, d)
    (d / "fragments.log").unlink()
    assert runner.invoke(app, ["report", str(d)]).exit_code == 0
    pd.DataFrame({"x": [1]}).to_parquet(d / "rows" / "part-zzzz.parquet")
    res = runner.invoke(app, ["report", str(d)])
    assert res.exit_code == 2 and "no task_id column" in res.output
    (d / "rows" / "part-zzzz.parquet").write_bytes(b"not parquet")
    res = runner.invoke(app, ["report", str(d)])
    assert res.exit_code == 2 and "unreadable Parquet fragment" in res.output


def test_list_networks_json_has_published_macs():
    from costmodel.zoo import network_info
    res = runner.invoke(app, ["list", "networks", "--json"])
    assert res.exit_code == 0
    nets = {n["name"]: n for n in json.loads(res.output)}
    assert nets["vgg16"]["total_macs"] == pytest.approx(15.47e9, rel=1e-3)  # torchvision 15.47 GFLOPS
    assert nets["resnet50"]["executed_layers"] == 54
    for name, n in nets.items():
        if "step" in n:  # a transformer: its parameters are published, not its MACs
            assert n["published_params"] == network_info(name)["published_params"]
            continue
        assert n["total_macs"] == pytest.approx(int(network_info(name)["published_macs"]), rel=0.06)
    # the transformers list their default step and published parameter counts (Llama 3 8B: the
    # checkpoint's 8,030,261,248, as its model card and safetensors index give it)
    assert nets["llama3_8b"]["published_params"] == 8_030_261_248
    assert nets["llama3_8b"]["step"].startswith("llama3_8b/")


def test_list_mappers_and_archs():
    res = runner.invoke(app, ["list", "mappers"])
    assert res.exit_code == 0 and "deepopt" in res.output and "network_pm" in res.output
    res = runner.invoke(app, ["list", "archs", "--json"])
    assert "deepopt_table3" in {a["name"] for a in json.loads(res.output)}
    res = runner.invoke(app, ["list", "widgets"])
    assert res.exit_code == 2


def test_product_network_pm_end_to_end(tmp_path):
    """network_pm = "product": (sum E)(sum D) never above that of the per-layer (sum) schedule."""
    path = write_tiny(tmp_path, flush=1000)
    text = path.read_text().replace('name = "deepopt"', 'name = "deepopt"\nparams = { network_pm = "product" }')
    path.write_text(text.replace('objectives = ["E", "D", "ED"]', 'objectives = ["ED"]'))
    c = load_campaign(path)
    run_campaign(c, executor="local")
    prod = Store(c.output).read("rows").sort_values(["network", "point"]).reset_index(drop=True)
    assert (prod["network_pm"] == "product").all()
    assert np.allclose(prod["pm_value"], prod["energy_pj"] * prod["cycles"], rtol=1e-12)
    path2 = write_tiny(tmp_path, out=tmp_path / "sum", flush=1000, name="sum.toml")
    path2.write_text(path2.read_text().replace('objectives = ["E", "D", "ED"]', 'objectives = ["ED"]'))
    c2 = load_campaign(path2)
    run_campaign(c2, executor="local")
    s = Store(c2.output).read("rows").sort_values(["network", "point"]).reset_index(drop=True)
    assert (prod["pm_value"] <= s["energy_pj"] * s["cycles"] * (1 + 1e-12)).all()
