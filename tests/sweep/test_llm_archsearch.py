"""Architecture search over transformer steps: the step objectives (time per token over the decode
steps, time to first token over the prefill steps, energy per token), the serving columns of the
totals, and each design's totals reproduced exactly by `sweep map` of the step's name."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from costmodel.importers.toml_out import write
from costmodel.transformer import build_transformer, parse_step_name
from sweep import api
from sweep.cli import app
from sweep.engine.store import Store
from sweep.search.driver import design_value

runner = CliRunner()

CAMPAIGN = """
name = "as_llm"
output = "{out}"
networks = [{{model = "gpt2", phase = "decode", batch = [1, 4], context = 32}}{prefill}]
objectives = ["latency"]
seeds = [0]

[architectures]
kind = "loopnest"
template = "tpu_like"

[architectures.grid]
array.D1 = [16, 32]
memory.unified_buffer.size_kib = [256, 512]

[search]
sampler = "grid"
objectives = {objectives}

[[mappers]]
name = "loma"
params = {{ lpf_limit = 4 }}
"""


def _write(tmp_path: Path, objectives: str, prefill: bool = True) -> Path:
    p = tmp_path / "c.toml"
    p.write_text(CAMPAIGN.format(out=(tmp_path / "out").as_posix(), objectives=objectives,
                                 prefill=', {model = "gpt2", phase = "prefill", seq = 32}' if prefill else ""))
    return p


def test_a_step_objective_needs_a_step_of_its_phase(tmp_path):
    res = runner.invoke(app, ["validate", str(_write(tmp_path, '["ttft_s"]', prefill=False))])
    assert res.exit_code == 2
    assert "search.objectives" in res.output and "prefill" in res.output
    assert not (tmp_path / "out").exists()


def test_step_names_round_trip():
    for kw in ({"phase": "decode", "batch": 8, "context": 4096, "kv_bits": 4},
               {"phase": "prefill", "batch": 2, "seq": 128, "weight_bits": 4}):
        net = build_transformer("llama3_8b", **kw)
        assert parse_step_name(net.name) == ("llama3_8b", kw)
        assert api.load_network(net.name) == net
    assert parse_step_name("resnet18") is None


def test_design_value_of_step_objectives():
    # geometric means over the steps that have the figure: sqrt(0.01 * 0.04) = 0.02 s
    totals = [{"area_mm2": 5.0, "time_per_token_s": 0.01, "ttft_s": None, "energy_per_token_j": 1e-3},
              {"area_mm2": 5.0, "time_per_token_s": 0.04, "ttft_s": None, "energy_per_token_j": 4e-3},
              {"area_mm2": 5.0, "time_per_token_s": None, "ttft_s": 0.5, "energy_per_token_j": 1e-3}]
    assert design_value(totals, "time_per_token_s") == pytest.approx(0.02)
    assert design_value(totals, "ttft_s") == pytest.approx(0.5)
    assert design_value(totals, "energy_per_token_j") == pytest.approx((1e-3 * 4e-3 * 1e-3) ** (1 / 3))
    assert math.isnan(design_value(totals[:2], "ttft_s"))


@pytest.mark.slow
def test_search_totals_carry_the_serving_figures_and_sweep_map_reproduces_them(tmp_path):
    run = api.run_campaign(_write(tmp_path, '["time_per_token_s", "ttft_s"]'), executor="local")
    assert run.ok
    t = Store(run.output).read("totals")
    assert len(t) == 4 * 3  # 4 designs x 3 steps
    dec = t[t["phase"] == "decode"]
    # tpu_like's clock is 700 MHz (its TOML): seconds = cycles / 7e8; tokens/s = batch / that
    assert (dec["time_per_token_s"] == dec["latency_cycles"] / 700e6).all()
    assert dec["tokens_per_s"].to_numpy() == pytest.approx((dec["batch"] / dec["time_per_token_s"]).to_numpy())
    assert dec["tokens_per_s_per_mm2"].to_numpy() == pytest.approx((dec["tokens_per_s"] / dec["area_mm2"]).to_numpy())
    assert t[t["phase"] == "prefill"]["time_per_token_s"].isna().all()
    # energy = matmuls + vector operations (no overlap)
    assert t["energy_pj"].to_numpy() == pytest.approx((t["matmul_energy_pj"] + t["vector_energy_pj"]).to_numpy())
    # a design's step through `sweep map --network <step name> --arch <design TOML>`: the same totals
    row = dec.iloc[-1]
    toml = tmp_path / "design.toml"
    arch = Store(run.output).read("archs")
    write(toml, json.loads(arch[arch["design_id"] == row["design_id"]]["arch"].iloc[0]))
    one = api.map_network(row["network"], toml, "loma", "latency", params={"lpf_limit": 4})
    assert one.energy_pj == row["energy_pj"] and one.latency_cycles == row["latency_cycles"]
    assert one.llm["time_per_token_s"] == row["time_per_token_s"]


MIX = """
name = "as_mix"
output = "{out}"
objectives = ["latency"]
seeds = [0]
{workload}

[architectures]
kind = "loopnest"
template = "tpu_like"

[architectures.grid]
array.D1 = [16, 32]

[search]
sampler = "grid"
objectives = ["request_latency_s", "energy_per_request_j"]

[[mappers]]
name = "loma"
params = {{ lpf_limit = 4 }}
"""
WORKLOAD = '[workload]\nmodel = "gpt2"\nprompt = 32\noutput = 16\nbatch = 2'


@pytest.mark.parametrize("workload, key", [
    ('[workload]\nmodel = "bert_base"\nprompt = 32\noutput = 16', "workload.model"),
    ('[workload]\nmodel = "gpt2"\noutput = 16', "workload.prompt"),
    ('[workload]\nmodel = "gpt2"\nprompt = 32\noutput = 16\npoints = 1', "workload.points"),
    ('[workload]\nmodel = "gpt2"\nprompt = 32\noutput = 16\nspeed = 2', "workload.speed"),
    ("", "search.objectives"),   # a request objective without a mix
])
def test_bad_serving_mix_exits_2_naming_the_key(tmp_path, workload, key):
    p = tmp_path / "c.toml"
    text = MIX.format(out=(tmp_path / "out").as_posix(), workload=workload)
    if not workload:
        text = text.replace('objectives = ["latency"]', 'objectives = ["latency"]\nnetworks = ["resnet18"]')
    p.write_text(text)
    res = runner.invoke(app, ["validate", str(p)])
    assert res.exit_code == 2 and key in res.output, res.output
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_mix_row_is_the_prefill_plus_the_integrated_decode_steps(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text(MIX.format(out=(tmp_path / "out").as_posix(), workload=WORKLOAD))
    c = api.load_campaign(p)
    # the mix's steps: the prefill and decode at contexts 33, 41 (40.5 rounded), 48
    assert [n.name for n in c.networks] == ["gpt2/prefill/b2/seq32", "gpt2/decode/b2/ctx33",
                                            "gpt2/decode/b2/ctx41", "gpt2/decode/b2/ctx48"]
    run = api.run_campaign(p, executor="local")
    assert run.ok
    t = Store(run.output).read("totals")
    for did, g in t.groupby("design_id"):
        by = g.set_index("network")
        mix = by.loc["gpt2/mix/b2/p32/o16"]
        pre = by.loc["gpt2/prefill/b2/seq32"]
        d = [by.loc[f"gpt2/decode/b2/ctx{c}"] for c in (33, 41, 48)]
        # trapezoid over 33..48 by hand: segment 33..41 holds tokens 33..41 (9 tokens), 41..48 holds
        # 42..48 (7 tokens); weights: w33 = sum_{c=33}^{41} (41 - c)/8 = 36/8 = 4.5,
        # w41 = (9 - 4.5) + sum_{c=42}^{48} (48 - c)/7 = 4.5 + 21/7 = 7.5, w48 = 7 - 3 = 4 (sum 16)
        dec = 4.5 * d[0]["latency_cycles"] + 7.5 * d[1]["latency_cycles"] + 4 * d[2]["latency_cycles"]
        assert mix["latency_cycles"] == pytest.approx(pre["latency_cycles"] + dec)
        assert mix["request_latency_s"] == pytest.approx(mix["latency_cycles"] / 700e6)
        assert mix["requests_per_s"] == pytest.approx(2 / mix["request_latency_s"])
        e = pre["energy_pj"] + 4.5 * d[0]["energy_pj"] + 7.5 * d[1]["energy_pj"] + 4 * d[2]["energy_pj"]
        assert mix["energy_per_request_j"] == pytest.approx(e * 1e-12 / 2)
        assert mix["phase"] == "mix" and mix["status"] == "ok"


@pytest.mark.slow
def test_report_answers_which_design_with_rooflines(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text(MIX.format(out=(tmp_path / "out").as_posix(), workload=WORKLOAD).replace(
        'objectives = ["latency"]', 'objectives = ["latency"]\nnetworks = [{model = "gpt2", phase = "decode", context = 32}]'))
    run = api.run_campaign(p, executor="local")
    from sweep.kinds.registry import build_report
    rep = build_report(run.output, tmp_path / "plots")
    llm = rep["llm"]
    t = Store(run.output).read("totals")
    # best for decode: the least geometric mean of time per token over the decode steps, by hand
    dec = t[t["phase"] == "decode"].groupby("design_id")["time_per_token_s"].apply(
        lambda v: float(np.exp(np.log(v).mean())))
    best = {b["for"]: b for b in llm["best"]}
    assert set(best) == {"prefill", "decode", "mix", "prefill per mm^2", "decode per mm^2", "mix per mm^2"}
    assert best["decode"]["time_per_token_s"] == pytest.approx(dec.min())
    # the most area-efficient for decode: least (time per token x area), by hand
    area = t.drop_duplicates("design_id").set_index("design_id")["area_mm2"]
    assert best["decode per mm^2"]["design_id"] == (dec * area.reindex(dec.index)).idxmin()
    mix = t[t["phase"] == "mix"].set_index("design_id")["request_latency_s"]
    assert best["mix"]["design_id"] == mix.idxmin()
    # each best design's roofline: its decode step at batch 2 is memory-bound on every layer, and each
    # point's latency is the stored row's (the mapping rebuilt from the stored ordering)
    roofs = [r for r in llm["rooflines"] if r["network"].startswith("gpt2/decode")]
    assert roofs and all(pt["bound"] == "memory" for r in roofs for pt in r["points"])
    rows = Store(run.output).read("rows")
    r0 = roofs[0]
    stored = rows[(rows["design_id"] == r0["design_id"]) & (rows["network"] == r0["network"])]
    assert sorted(pt["latency_cycles"] for pt in r0["points"]) == sorted(stored["latency_cycles"].tolist())
    assert (tmp_path / "plots" / "roofline.png").is_file()
    # energy breakdowns add up to the step's matmul + vector energy stored in the totals
    br = next(b for b in llm["breakdowns"] if b["network"] == r0["network"] and b["design_id"] == r0["design_id"])
    tot = t[(t["design_id"] == r0["design_id"]) & (t["network"] == r0["network"])].iloc[0]
    assert br["total_pj"] == pytest.approx(tot["energy_pj"], rel=1e-9)
    # the HTML page says which steps each phase figure averages and gives each step's own figure on
    # the best designs (issue 43, item 3): the decode step's time per token on the best for decode
    r = runner.invoke(app, ["report", str(run.output), "--html", str(tmp_path / "r.html")])
    assert r.exit_code == 0, r.output
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    dec_steps = sorted(set(t.loc[t["phase"] == "decode", "network"]))
    assert f"time per token above: geometric mean over {len(dec_steps)} decode step(s), one value each: " \
           f"{', '.join(dec_steps)}" in page
    assert '"header":{"values":["step","phase","batch","seq / context","figure",' in page
    from sweep.common import fmt
    d0 = best["decode"]["design_id"]
    own = t[(t["design_id"] == d0) & (t["network"] == dec_steps[0])]["time_per_token_s"].iloc[0]
    assert f'"{fmt.seconds(float(own))}"' in page
    # one column per distinct best design, its heading naming every phase it is best for
    import re
    heads = re.findall(r'"([0-9a-f]{16}) \(best for ([^")]*)\)"', page)
    assert len({h for h, _ in heads}) == len(heads) and "decode" in dict(heads)[d0].split(", ")


LLM_GRID = """
name = "as_ws"
output = "{out}"
networks = [{{model = "gpt2", phase = "decode", context = 32}}]
objectives = ["latency"]
[architectures]
kind = "loopnest"
template = "llm_ws"
[architectures.grid]
{grid}
[search]
objectives = ["time_per_token_s"]
[[mappers]]
name = "loma"
params = {{ lpf_limit = 4 }}
"""


@pytest.mark.parametrize("grid, key", [
    ('dram = ["hbm3", "hbm9"]', "architectures.grid.dram"),
    ("clock_mhz = [-1000]", "architectures.grid.clock_mhz"),
    ("memory.unified_buffer.size_kib = [262144]", "architectures.grid.memory.unified_buffer.size_kib"),
    ("dram_units = [0, 2]", "architectures.grid.dram_units"),
])
def test_bad_llm_template_values_exit_2_naming_the_key(tmp_path, grid, key):
    p = tmp_path / "c.toml"
    p.write_text(LLM_GRID.format(out=(tmp_path / "out").as_posix(), grid=grid))
    res = runner.invoke(app, ["run", str(p), "--executor", "local"])
    assert res.exit_code == 2 and key in res.output, res.output
    assert not (tmp_path / "out").exists()


def test_dram_and_clock_axes_make_designs(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text(LLM_GRID.format(out=(tmp_path / "out").as_posix(),
                                 grid='dram = ["lpddr5", "hbm3"]\nclock_mhz = [700, 1400]'))
    c = api.load_campaign(p)
    space = c.architectures
    assert len(space) == 4
    accs = {(v["dram"], v["clock_mhz"]): space.template.design(v) for v in (space.point(i) for i in range(4))}
    # LPDDR5, one x16 channel (llm_ws.toml has units = 1, kept unless dram_units varies): 12.8 GB/s x 8 / 700 MHz
    assert accs[("lpddr5", 700)].memories[-1].read_bw == pytest.approx(12.8e9 * 8 / 700e6)
    # HBM3 one stack at 1.4 GHz: 819.2e9 x 8 / 1.4e9 = 4681.14 bits per cycle
    assert accs[("hbm3", 1400)].memories[-1].read_bw == pytest.approx(819.2e9 * 8 / 1.4e9)
