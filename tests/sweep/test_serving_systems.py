"""A systems search in a serving campaign: ``[serving] tp = [1, 2]`` (or ``ep``) is an axis, each
split a setting of its own. The tp = 2 row is what `sweep serve --tp 2` gives on the same inputs,
its silicon and cost are two chips', and a split the model cannot take is refused naming the key."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from sweep import api
from sweep.cli import app
from sweep.engine.runner import run_campaign
from sweep.kinds import load_campaign
from tests.sweep.test_serving_campaign import CAMPAIGN, GRIDS, REQUESTS, frames, write

runner = CliRunner()
TP = CAMPAIGN.replace("goodput = true\n", "goodput = true\ntp = [1, 2]\n").replace(
    "max_num_seqs = [64, 256]", "max_num_seqs = 64")


def test_tp_is_an_axis_each_split_a_row_as_sweep_serve_gives(tmp_path):
    c = load_campaign(write(tmp_path, TP))
    s = run_campaign(c, executor="local")
    assert s.tasks_run == 2 and s.tasks_failed == 0
    rows = frames(c.output)["rows"].set_index("setting")
    assert list(rows.index) == ["tp=1", "tp=2"] and list(rows["tp"]) == [1, 2]
    one, two = rows.loc["tp=1"], rows.loc["tp=2"]
    assert (one["chips"], two["chips"]) == (1, 2)
    assert two["system_area_mm2"] == pytest.approx(2 * one["system_area_mm2"], rel=1e-12)
    assert two["cost_usd"] == pytest.approx(2 * one["cost_usd"], rel=1e-12)
    got = api.serve("llama3_2_1b", "a100", rate=4, goodput=True, grids=GRIDS, workers=1, tp=2,
                    trace="azure_conv_2023", drop_long_prompts=True, requests=REQUESTS, slo_ttft=2.0,
                    slo_tpot=0.1, scheduler={"max_num_seqs": 64})
    assert two["goodput_rps"] == got.summary["goodput_rps"]
    assert two["kv_blocks"] == got.setup["num_blocks"]
    assert two["goodput_per_mm2"] == pytest.approx(two["goodput_rps"] / two["system_area_mm2"], rel=1e-12)


@pytest.mark.parametrize("new, key", [("tp = [1, 3]", "serving.tp"), ("tp = []", "serving.tp"),
                                      ("ep = [1, 1]", "serving.ep"), ("pp = [2, 3]", "serving.pp")])
def test_a_bad_split_axis_exits_2_naming_the_key(tmp_path, new, key):
    text = CAMPAIGN.replace("goodput = true\n", f"goodput = true\n{new}\n")
    r = runner.invoke(app, ["validate", str(write(tmp_path, text))])
    assert r.exit_code == 2 and key in r.output, r.output
