"""`sweep map` / `sweep eval` on DeepOpt's systolic presets (issue 23, defect 10): a network on one
hardware point gives each layer's LOS branch, energy and cycles and the totals, exactly the row and
the per-layer detail a one-point systolic campaign stores for that point; `sweep eval` says what to
use instead. Before the fix every `sweep map --arch deepopt_*` was refused ("unknown accelerator").
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costmodel.systolic import BRANCHES
from costmodel.workload import Layer
from mappers.systolic.deepopt import pm_value
from sweep.cli import app
from sweep.engine.runner import run_campaign
from sweep.engine.store import Store
from sweep.kinds import load_campaign
from sweep.commands.map_eval import load_arch, map_layer, map_network, resolve_network

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

CAMPAIGN = """
name = "one_point"
output = "{out}"
networks = ["{net}"]
objectives = ["E", "D", "ED", "E2D", "ED2"]

[architectures]
kind = "systolic"
preset = "{preset}"

[[mappers]]
name = "deepopt"
params = {{ network_pm = "{mode}" }}
{extra}
"""


def _campaign(tmp_path: Path, preset: str, net: str, mode: str = "sum", extra: str = ""):
    """Run the systolic campaign of ``preset`` x ``net`` locally; (rows, layers) DataFrames."""
    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN.format(out=(tmp_path / "out").as_posix(), net=net, preset=preset, mode=mode,
                                 extra=extra))
    s = run_campaign(load_campaign(f), executor="local")
    assert s.tasks_failed == 0
    store = Store(tmp_path / "out")
    return store.read("rows"), store.read("layers")


def _cli_json(*args: str) -> dict:
    """`sweep map ... --json` in a real subprocess: the whole stdout is the one JSON document."""
    p = subprocess.run([sys.executable, "-m", "sweep.cli", "map", *args, "--json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_map_equals_the_campaign_row_and_layers_of_the_point(tmp_path):
    """deepopt_table3 (one point) x GoogLeNet-v1: per PM, `sweep map --json`'s totals are the
    campaign's row (LOS energy, cycles, network PM, the five FS PMs, the hardware and its area)
    and its layers are the campaign's per-layer detail (branch, energy, cycles), float for float."""
    rows, layers = _campaign(tmp_path, "deepopt_table3", "googlenet_v1_deepopt")
    assert len(rows) == 5 and len(layers) == 5 * 58
    for pm in ("E", "D", "ED", "E2D", "ED2"):
        res = _cli_json("--network", "googlenet_v1_deepopt", "--arch", "deepopt_table3", "--mapper", "deepopt",
                        "--objective", pm)
        row = rows[rows.pm == pm].iloc[0]
        tot = res["total"]
        assert (tot["energy_pj"], tot["latency_cycles"], tot["pm_value"]) == (row.energy_pj, row.cycles, row.pm_value)
        for b in BRANCHES:
            fs = row[f"fs_{b}"]
            assert tot[f"fs_{b}"] == (fs if fs != float("inf") else None)
        assert res["point"] == {"index": 0, "J": 32, "K": 64, "fsram_kib": 16, "isram_kib": 32, "psram_kib": 8,
                                "area_mm2": row.area_mm2}
        det = layers[layers.pm == pm].sort_values("layer_index")
        assert [r["layer"] for r in res["layers"]] == list(det.layer)
        assert [r["branch"] for r in res["layers"]] == list(det.branch)
        assert [r["energy_pj"] for r in res["layers"]] == list(det.energy_pj)
        assert [r["latency_cycles"] for r in res["layers"]] == list(det.cycles)
        assert tot["edp"] == row.energy_pj * row.cycles
        # the LOS sum by hand: each layer's chosen branch x its repeats
        assert tot["energy_pj"] == pytest.approx(sum(r["energy_pj"] * r["repeat"] for r in res["layers"]), rel=1e-12)
        assert tot["pm_value"] == pytest.approx(
            sum(float(pm_value(r["energy_pj"], r["latency_cycles"], pm)) * r["repeat"] for r in res["layers"]),
            rel=1e-12)


def test_every_point_of_a_preset_and_the_model_parameters(tmp_path):
    """deepopt_table5 (5 points), network PM "product" and the campaign's ``[systolic]
    fc_batch_quirk`` given as ``--param``: `map_network` on ``--point i`` equals the campaign's
    row of point i (points numbered as the campaign numbers them)."""
    rows, _ = _campaign(tmp_path, "deepopt_table5", "alexnet_deepopt", mode="product",
                        extra="[systolic]\nfc_batch_quirk = true\n")
    net = resolve_network("alexnet_deepopt")
    for i in range(5):
        res = map_network(net, load_arch("deepopt_table5", i), "deepopt", "ED2",
                          params={"network_pm": "product", "fc_batch_quirk": True})
        row = rows[(rows.pm == "ED2") & (rows.point == i)].iloc[0]
        assert (res["point"]["J"], res["point"]["K"], res["point"]["psram_kib"]) == (row.J, row.K, row.psram_kib)
        assert (res["total"]["energy_pj"], res["total"]["latency_cycles"], res["total"]["pm_value"]) == \
            (row.energy_pj, row.cycles, row.pm_value)
        assert res["network_pm"] == "product" and res["systolic"] == {"fc_batch_quirk": True}
        assert sum(r["repeat"] for r in res["layers"]) == net.layer_count  # product: one row per execution


def test_one_layer_on_a_point():
    """`sweep map --dims ... --arch deepopt_table3 --mapper deepopt`: the layer's LOS branch is
    the branch of least PM among the allowed ones, its figures those of that branch."""
    from costmodel.systolic import SystolicParams
    from mappers.systolic.deepopt import evaluate_per_image
    layer = Layer(name="c", K=64, C=32, OY=28, OX=28, FY=3, FX=3)
    res = map_layer(layer, load_arch("deepopt_table3"), "deepopt", "E")
    r = evaluate_per_image([layer], [32], [64], [16], [32], [8], SystolicParams())
    e, d = r.energy_pj[0, 0], r.cycles[0, 0]
    best = min(range(len(BRANCHES)), key=lambda b: e[b])
    assert res["branch"] == BRANCHES[best]
    assert (res["energy_pj"], res["latency_cycles"], res["value"]) == (e[best], d[best], e[best])
    assert res["layer"] == "c" and res["point"]["index"] == 0


@pytest.mark.parametrize("args, expect", [
    (["--arch", "deepopt_table5"], ["--point = None", "5 hardware points", "0: J x K = 40 x 32"]),
    (["--arch", "deepopt_table5", "--point", "5"], ["--point = 5", "5 point(s)"]),
    (["--arch", "eyeriss_like", "--point", "0"], ["--point = 0", "only for the systolic presets"]),
    (["--arch", "deepopt_table3", "--param", "network_pm=prod"], ["--param network_pm = 'prod'"]),
    (["--arch", "deepopt_table3", "--param", "fc_batch_quirk=1"], ["--param fc_batch_quirk = 1", "bool"]),
    (["--arch", "deepopt_table3", "--param", "tempreature=1"], ["--param tempreature", "fc_batch_quirk", "network_pm"]),
    (["--arch", "deepopt_table3", "--objective", "edp"], ["--objective = 'edp'", "'ED'"]),
])
def test_bad_input_exit_2_named(args, expect):
    res = runner.invoke(app, ["map", "--network", "alexnet_deepopt", "--mapper", "deepopt", *args])
    assert res.exit_code == 2, res.output
    assert all(e in res.output for e in expect), res.output
    assert "Traceback" not in res.output


def test_mappers_of_the_other_kinds_are_named():
    """A loop-nest mapper on a systolic point and DeepOpt on a loop-nest accelerator: exit 2
    naming --mapper and the mappers that fit; the old "sweep run only" refusal is gone."""
    res = runner.invoke(app, ["map", "--network", "alexnet_deepopt", "--arch", "deepopt_table3", "--mapper", "loma"])
    assert res.exit_code == 2 and "--mapper = 'loma'" in res.output and "['deepopt']" in res.output
    res = runner.invoke(app, ["map", "--dims", "K=8", "--arch", "eyeriss_like", "--mapper", "deepopt"])
    assert res.exit_code == 2 and "deepopt_table3" in res.output and "sweep run" not in res.output


def test_eval_on_a_systolic_preset_says_what_to_use(tmp_path):
    (tmp_path / "m.json").write_text("{}")
    res = runner.invoke(app, ["eval", "--dims", "K=8", "--arch", "deepopt_table5", "--mapping",
                              str(tmp_path / "m.json")])
    assert res.exit_code == 2, res.output
    assert "--arch = 'deepopt_table5'" in res.output
    assert "sweep map --arch deepopt_table5 --mapper deepopt --network N" in res.output


def test_table_shows_branches():
    res = runner.invoke(app, ["map", "--network", "alexnet_deepopt", "--arch", "deepopt_table3", "--mapper",
                              "deepopt", "--objective", "ED"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "LOS branch" in res.output and "network PM ED" in res.output and "FS: XYZiZo" in res.output
