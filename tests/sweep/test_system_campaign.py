"""An architecture search over systems of chips: steps split over chips in a campaign's networks,
their totals the system's (the same figures as `sweep map` of that step with the same split), and the
report's answer: the cheapest system meeting ``[report] slo``, by hand from the totals."""

import json

import pandas as pd
import pytest

from sweep import api
from sweep.engine.store import Store
from costmodel.importers.toml_out import write
from sweep.reports.systems import system_answers

CAMPAIGN = """
name = "sys"
output = "{out}"
networks = [
    {{ model = "gpt2", phase = "prefill", batch = 2, seq = 64, tp = [1, 4], pp = [1, 2] }},
    {{ model = "gpt2", phase = "decode", batch = 2, context = 128, tp = [1, 4], pp = [1, 2] }},
]
objectives = ["latency"]
seeds = [0]

[architectures]
kind = "loopnest"
template = "tpu_like"

[architectures.grid]
array.D1 = [16, 32]

[search]
sampler = "grid"
objectives = ["time_per_token_s", "ttft_s"]

[[mappers]]
name = "loma"
params = {{ lpf_limit = 4 }}

[report]
slo = {{ ttft_s = {ttft}, time_per_token_s = {tpot} }}
"""


def _row(design, name, chips, area, ttft=None, tpot=None, coll=0.0):
    phase = "prefill" if "/prefill/" in name else "decode"
    return {"design_id": design, "network": name, "status": "ok", "phase": phase, "chips": chips,
            "area_mm2": area, "system_area_mm2": chips * area, "ttft_s": ttft, "time_per_token_s": tpot,
            "collectives_s": coll, "tokens_per_s_per_mm2": 1.0}


def test_cheapest_system_meeting_the_targets_by_hand():
    """Design a (10 mm^2) and b (25 mm^2), each on 1 chip and on 4 (tp 4). Targets TTFT <= 1 s, time
    per token <= 50 ms: a on 1 chip (10 mm^2) misses the token target (80 ms), b on 1 chip (25 mm^2)
    misses TTFT (1.5 s), a on 4 chips (40 mm^2) meets both: the cheapest. Front of silicon against
    time per token: a x1 (80 ms), b x1 (60 ms), a x4 (30 ms); b x4 (100 mm^2, 20 ms) too."""
    P, D = "gpt2/prefill/b2/seq64", "gpt2/decode/b2/ctx128"
    t = pd.DataFrame([
        _row("a", P, 1, 10.0, ttft=0.9), _row("a", D, 1, 10.0, tpot=0.080),
        _row("b", P, 1, 25.0, ttft=1.5), _row("b", D, 1, 25.0, tpot=0.060),
        _row("a", P + "/tp4", 4, 10.0, ttft=0.4), _row("a", D + "/tp4", 4, 10.0, tpot=0.030, coll=0.010),
        _row("b", P + "/tp4", 4, 25.0, ttft=0.5), _row("b", D + "/tp4", 4, 25.0, tpot=0.020),
    ])
    ans = system_answers(t, {"ttft_s": 1.0, "time_per_token_s": 0.05})["models"]["gpt2"]
    c = ans["cheapest"]
    assert (c["design_id"], c["chips"], c["system_area_mm2"], c["split"]) == ("a", 4, 40.0, "tp 4 x pp 1")
    assert c["collectives_share"] == pytest.approx(0.010 / 0.030)
    assert [(r["design_id"], r["chips"]) for r in ans["front"]] == [("a", 1), ("b", 1), ("a", 4), ("b", 4)]
    assert [r["meets"] for r in ans["systems"]] == [False, False, True, True]
    assert system_answers(t, {"time_per_token_s": 0.01})["models"]["gpt2"]["cheapest"] is None


def test_campaign_totals_are_the_systems_and_sweep_map_reproduces_them(tmp_path):
    out = tmp_path / "out"
    f = tmp_path / "sys.toml"
    f.write_text(CAMPAIGN.format(out=out, ttft=10.0, tpot=10.0))
    run = api.run_campaign(f, executor="local")
    assert run.ok
    t = Store(run.output).read("totals")
    assert len(t) == 2 * 8 and set(t["chips"].dropna()) == {2, 4, 8}   # one chip: no system columns
    split = t[t["network"] == "gpt2/decode/b2/ctx128/tp4/pp2"].iloc[0]
    assert split["chips"] == 8 and split["system_area_mm2"] == pytest.approx(8 * split["area_mm2"])
    toml = tmp_path / "design.toml"
    arch = Store(run.output).read("archs")
    write(toml, json.loads(arch[arch["design_id"] == split["design_id"]]["arch"].iloc[0]))
    one = api.map_step("gpt2", toml, "loma", "latency", params={"lpf_limit": 4}, phase="decode", batch=2,
                       context=128, system={"tp": 4, "pp": 2})
    assert one.system["time_per_token_s"] == split["time_per_token_s"]
    assert one.system["collectives_s"] == split["collectives_s"]
    from typer.testing import CliRunner
    from sweep.cli import app
    r = CliRunner().invoke(app, ["report", str(run.output), "--json"])
    assert r.exit_code == 0, r.output
    systems = json.loads(r.stdout)["systems"]["models"]["gpt2"]
    assert len(systems["systems"]) == 2 * 4 and systems["cheapest"]["chips"] == 1   # loose targets: 1 chip
    text = CliRunner().invoke(app, ["report", str(run.output)]).output
    assert "gpt2: cheapest system meeting the targets" in " ".join(text.split())


def test_a_system_table_joins_the_chips_as_sweep_map_does(tmp_path):
    """[system] interconnect = pcie4_x16 (31.5 GB/s, one link): the split steps' totals equal `sweep map`
    of that step on that system, and their collectives take longer than on the default nvlink3."""
    f = tmp_path / "sys.toml"
    text = CAMPAIGN.format(out=tmp_path / "pcie", ttft=10.0, tpot=10.0).replace('[[mappers]]', '[system]\ninterconnect = "pcie4_x16"\n\n[[mappers]]')
    f.write_text(text)
    run = api.run_campaign(f, executor="local")
    assert run.ok
    t = Store(run.output).read("totals")
    row = t[t["network"] == "gpt2/decode/b2/ctx128/tp4/pp2"].iloc[0]
    toml = tmp_path / "design.toml"
    arch = Store(run.output).read("archs")
    write(toml, json.loads(arch[arch["design_id"] == row["design_id"]]["arch"].iloc[0]))
    one = api.map_step("gpt2", toml, "loma", "latency", params={"lpf_limit": 4}, phase="decode", batch=2,
                       context=128, system={"tp": 4, "pp": 2, "interconnect": "pcie4_x16"})
    assert one.system["time_per_token_s"] == row["time_per_token_s"]
    nv = api.map_step("gpt2", toml, "loma", "latency", params={"lpf_limit": 4}, phase="decode", batch=2,
                      context=128, system={"tp": 4, "pp": 2})
    assert row["collectives_s"] > nv.system["collectives_s"]


@pytest.mark.parametrize("table, key", [("tp = 4", "system.tp"), ("micro_batches = 2", "system.micro_batches"),
                                        ('interconnect = "nvlink9"', "system.interconnect"),
                                        ("replicas = 0", "system.replicas")])
def test_bad_system_table_exits_2_naming_the_key(tmp_path, table, key):
    from typer.testing import CliRunner
    from sweep.cli import app
    f = tmp_path / "bad.toml"
    f.write_text(CAMPAIGN.format(out=tmp_path / "o", ttft=1, tpot=1).replace('[[mappers]]', f'[system]\n{table}\n\n[[mappers]]'))
    r = CliRunner().invoke(app, ["validate", str(f)])
    assert r.exit_code == 2 and key in " ".join(r.output.split()), r.output
