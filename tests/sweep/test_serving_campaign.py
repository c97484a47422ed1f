"""The ``serving`` campaign kind end to end (`sweep.kinds.serving`, `sweep.engine.serving_tasks`,
`sweep.reports.serving.campaign`): a small campaign (Llama-3.2-1B on a100, two rates, two values of
max_num_seqs, the goodput searched) run in-process; its rows have the shape the kind declares; a
rate's row is what `sweep serve` gives on the same inputs and the goodput is `sweep serve --goodput`'s;
an interrupted run resumed gives the same rows; a design the model does not fit is a row saying why;
bad keys exit 2 naming the key, nothing written; the report prints the goodput table. The cost
table's grids are small (20 points, a few seconds of mapping per task)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from sweep import api
from sweep.cli import app
from sweep.engine.runner import Interrupted, run_campaign
from sweep.engine.serving_tasks import RATE_COLUMNS, flat_summary
from sweep.engine.store import Store
from sweep.kinds import KINDS, load_campaign

runner = CliRunner()
GRIDS = {"tokens": [1, 8, 64, 512, 2048], "seqs": [1, 64, 256], "contexts": [1, 1024, 131072],
         "chunk_q": [2, 512, 2048], "chunk_p": [0, 1024, 131070]}
RATES = (4, 8)
REQUESTS = 150

CAMPAIGN = f"""
name = "serving_small"
output = "OUT"
seeds = [0]

[architectures]
kind = "serving"
presets = ["a100"]

[serving]
network = "llama3_2_1b"
trace = "azure_conv_2023"
drop_long_prompts = true
requests = {REQUESTS}
rates = {list(RATES)}
slo_ttft = 2.0
slo_tpot = 0.1
goodput = true

[serving.scheduler]
max_num_seqs = [64, 256]

[serving.grids]
""" + "\n".join(f"{k} = {v}" for k, v in GRIDS.items()) + "\n"

#: Columns that are wall-clock times (the only ones two runs may differ in), and the run's stamp.
TIMES = ["sim_s", "table_build_s", "wall_s", "code_version", "config_hash"]


def write(tmp, text: str = CAMPAIGN, name: str = "c.toml", out: str = "out"):
    path = tmp / name
    path.write_text(text.replace("OUT", (tmp / out).as_posix()))
    return path


def frames(out) -> dict[str, pd.DataFrame]:
    """Both tables, wall times dropped, in a fixed order."""
    st = Store(out)
    got = {t: st.read(t).drop(columns=TIMES, errors="ignore") for t in ("rows", "rates")}
    return {t: df.sort_values([c for c in ("design", "setting", "rate") if c in df]).reset_index(drop=True)
            for t, df in got.items()}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serving")
    c = load_campaign(write(tmp))
    s = run_campaign(c, executor="local")
    return c, s, frames(c.output)


def test_rows_have_the_shape_the_kind_declares(run):
    c, s, f = run
    assert c.plan is KINDS["serving"] and s.tasks_run == c.plan.count(c) == 2 and s.tasks_failed == 0
    assert {p.name for p in c.output.iterdir() if p.is_dir() and not p.name.startswith(".")} == set(c.plan.tables)
    rows, rates = f["rows"], f["rates"]
    assert list(rows["setting"]) == ["max_num_seqs=256", "max_num_seqs=64"] and (rows["status"] == "ok").all()
    assert len(rates) == 4 and set(zip(rates["setting"], rates["rate"])) == {
        (f"max_num_seqs={m}", float(r)) for m in (64, 256) for r in RATES}
    assert sorted(rows["task_id"]) == sorted(t.task_id for t in c.plan.expand(c))
    for col in ("ttft_p50_s", "tpot_p90_s", "e2e_p99_s", "output_tokens_per_s", "requests_per_s", "slo_attainment",
                "energy_per_request_j", "preemptions", "kv_cache_utilization", "mean_batch"):
        assert rates[col].notna().all(), col
    assert (rates["ttft_p50_s"] <= rates["ttft_p90_s"]).all() and (rates["ttft_p90_s"] <= rates["ttft_p99_s"]).all()
    assert (rates["served"] == REQUESTS).all() and rates["meets_slo"].all()
    g = rows["goodput_rps"]
    assert (g > max(RATES)).all()         # a 1B model on an A100 meets the SLO past every swept rate
    assert np.allclose(rows["goodput_per_mm2"], g / (rows["chips"] * rows["area_mm2"]), rtol=1e-12)
    assert np.allclose(rows["goodput_per_usd"], g / rows["cost_usd"], rtol=1e-12)
    assert (rows["goodput_missed_rps"] > g).all() and (rows["table_grid_points"] == 20).all()
    # more running requests, more goodput: max_num_seqs 64 caps the batch
    assert g.iloc[0] > g.iloc[1]


def test_a_rate_row_is_what_sweep_serve_gives(run):
    """The same inputs through `sweep.api.serve` (= `sweep serve`): every figure equal; the goodput
    search from the first rate gives the row's goodput."""
    _, _, f = run
    kw = dict(trace="azure_conv_2023", drop_long_prompts=True, requests=REQUESTS, slo_ttft=2.0, slo_tpot=0.1,
              scheduler={"max_num_seqs": 64})
    first = api.serve("llama3_2_1b", "a100", rate=RATES[0], goodput=True, grids=GRIDS, workers=1, **kw)
    again = api.serve("llama3_2_1b", "a100", rate=RATES[1], table=first.table, **kw)
    rows, rates = f["rows"].set_index("setting"), f["rates"].set_index(["setting", "rate"])
    for rate, res in ((RATES[0], first), (RATES[1], again)):
        row = rates.loc[("max_num_seqs=64", float(rate))]
        want = flat_summary(res.summary, 0.9)
        for col in RATE_COLUMNS:
            if col not in ("rate", "sim_s"):
                assert row[col] == want[col], (rate, col)
    assert rows.loc["max_num_seqs=64", "goodput_rps"] == first.summary["goodput_rps"]
    assert rows.loc["max_num_seqs=64", "kv_blocks"] == first.setup["num_blocks"]
    # the fixed-batch steps off the same table: a 2,048-token prompt alone (one chunk of the budget
    # of 2,048, vLLM's default here) and a decode iteration of 16 sequences at 2,048 tokens
    t = first.table
    pre = t.iteration(np.array([2048]), np.array([0]))["seconds"]
    dec = t.iteration(np.ones(16, dtype=np.int64), np.full(16, 2047))["seconds"]
    row = rows.loc["max_num_seqs=64"]
    assert row["fixed_prefill_s"] == pytest.approx(pre, rel=1e-12)
    assert row["fixed_decode_s"] == pytest.approx(dec, rel=1e-12)
    assert row["fixed_tokens_per_s_per_mm2"] == pytest.approx(16 / dec / row["system_area_mm2"], rel=1e-12)


def test_interrupt_then_resume_gives_the_same_rows(run, tmp_path):
    c0, _, want = run
    c = load_campaign(write(tmp_path))

    def stop(done, total):
        if done >= 1:
            raise KeyboardInterrupt

    with pytest.raises(Interrupted):
        run_campaign(c, executor="local", progress=stop)
    assert len(Store(c.output).stored_task_ids()) == 1
    s = run_campaign(c, executor="local", resume=True)
    assert s.tasks_skipped == 1 and s.tasks_run == 1
    for t in ("rows", "rates"):
        pd.testing.assert_frame_equal(frames(c.output)[t], want[t])


def test_a_design_the_model_does_not_fit_is_a_row_saying_why(tmp_path):
    """Llama-3-8B's 8-bit weights (W8A8: 8.03e9 parameters x 1 byte = 8.03 GB) in one LPDDR5 channel
    (2 GiB) of a template design: both rows of the task are infeasible with the numbers, nothing is
    mapped, the run does not fail."""
    text = CAMPAIGN.replace('presets = ["a100"]', 'template = "llm_ws"\ngrid = { dram = ["lpddr5"], '
                            'dram_units = [1] }').replace('"llama3_2_1b"', '"llama3_8b"\nweight_bits = 8\nact_bits = 8')
    text = text.replace("max_num_seqs = [64, 256]", "max_num_seqs = 64")
    c = load_campaign(write(tmp_path, text))
    s = run_campaign(c, executor="local")
    assert s.tasks_run == 1 and s.tasks_failed == 0 and s.rows_by_status == {"infeasible": 1}
    st = Store(c.output)
    rows, rates = st.read("rows"), st.read("rates")
    assert rows.loc[0, "design"].startswith("design_") and rows.loc[0, "dram"] == "lpddr5"
    assert rows.loc[0, "area_mm2"] > 0 and pd.isna(rows.loc[0, "goodput_rps"])
    assert "no room for one KV block" in rows.loc[0, "error"] and "weights (8.03 GB)" in rows.loc[0, "error"]
    assert list(rates["status"]) == ["infeasible"] * 2 and rates["ttft_p90_s"].isna().all()
    r = runner.invoke(app, ["report", str(c.output)])
    assert r.exit_code == 0 and "infeasible" in r.output and "no design and setting meets the SLO" in r.output


@pytest.mark.parametrize("old, new, key", [
    ("rates = [4, 8]", "rates = []", "serving.rates"),
    ("rates = [4, 8]", "rates = [4, -1]", "serving.rates[1]"),
    ('network = "llama3_2_1b"', 'network = "bert_base"', "serving.network"),
    ('network = "llama3_2_1b"', 'network = "resnet18"', "serving.network"),
    ("max_num_seqs = [64, 256]", "max_num_seqs = [0, 64]", "serving.scheduler.max_num_seqs"),
    ("max_num_seqs = [64, 256]", "max_num_seqs = 4096", "serving.scheduler.max_num_seqs"),
    ("max_num_seqs = [64, 256]", "max_num_sequences = 64", "serving.scheduler.max_num_sequences"),
    ("tokens = [1, 8, 64, 512, 2048]", "tokens = [0, 8]", "serving.grids.tokens"),
    ("slo_tpot = 0.1", "slo_tpot = -0.1", "serving.slo_tpot"),
    ("slo_ttft = 2.0\nslo_tpot = 0.1", "", "serving.goodput"),
    ('trace = "azure_conv_2023"', 'trace = "nope.csv"', "serving.trace"),
    ("drop_long_prompts = true", "drop_long_prompts = 1", "serving.drop_long_prompts"),
    ("goodput = true", 'goodput = true\nmapper = "deepopt"', "serving.mapper"),
    ("goodput = true", "goodput = true\nparams = { iterations = -5 }", "serving.params.iterations"),
    ("goodput = true", "goodput = true\nweight_bits = 3", "serving.weight_bits"),
    ("goodput = true", "goodput = true\ntp = 3", "serving.tp"),
    ("goodput = true", 'goodput = true\ninterconnect = "carrier_pigeon"', "serving.interconnect"),
    ("goodput = true", "goodput = true\nprompt = 512", "serving.prompt"),
    ('presets = ["a100"]', 'presets = ["arch1"]', "architectures.presets[0]"),
    ('seeds = [0]', 'seeds = [0]\nnetworks = ["resnet18"]', "networks"),
    ('seeds = [0]', 'seeds = [0, 1]', "seeds"),
])
def test_bad_keys_exit_2_naming_the_key(tmp_path, old, new, key):
    assert old in CAMPAIGN
    path = write(tmp_path, CAMPAIGN.replace(old, new))
    r = runner.invoke(app, ["run", str(path), "--executor", "local"])
    assert r.exit_code == 2, r.output
    assert f"{key} = " in r.output, r.output
    assert not (tmp_path / "out").exists()


def test_validate_describes_the_campaign_and_its_time(tmp_path):
    r = runner.invoke(app, ["validate", str(write(tmp_path))])
    assert r.exit_code == 0, r.output
    out = r.output
    assert "valid serving campaign" in out and "2 task(s)" in out and "a100 (preset, 214.4 mm^2)" in out
    assert "max_num_seqs=64, max_num_seqs=256" in out and "150 requests of azure_conv_2023" in out
    assert "TTFT <= 2 s and TPOT <= 0.1 s for >= 90%" in out and "run time:" in out
    assert not (tmp_path / "out").exists()


def test_the_report_prints_the_goodput_table(run, tmp_path):
    c, _, f = run
    r = runner.invoke(app, ["report", str(c.output), "--plots", str(tmp_path / "plots")])
    assert r.exit_code == 0, r.output
    assert "goodput per design and scheduler setting" in r.output and "winner, most goodput: a100 (max_num_seqs=256)" \
        in r.output and "per offered rate" in r.output
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["goodput_front.png", "latency_vs_rate.png"]
    doc = json.loads(runner.invoke(app, ["report", str(c.output), "--json"]).stdout)
    best = f["rows"]["goodput_rps"].max()
    assert doc["designs"][0]["goodput_rps"] == best and doc["winners"]["goodput_rps"]["goodput_rps"] == best
    assert len(doc["per_rate"]) == 4 and {"ttft_p90_s", "tpot_p99_s"} <= set(doc["per_rate"][0])


def test_the_html_page_draws_the_goodput_and_the_latencies(run, tmp_path):
    """`sweep report --html`: one self-contained page, a marker per (design, setting) in each goodput
    panel (silicon, cost) and per (design, setting, rate) in each of the six latency panels."""
    c, _, f = run
    page_file = tmp_path / "r.html"
    r = runner.invoke(app, ["report", str(c.output), "--html", str(page_file)])
    assert r.exit_code == 0, r.output
    page = page_file.read_text()
    m = re.search(r'<script type="application/json" id="sweep-figures">(.*?)</script>', page, re.S)
    figs = json.loads(m.group(1).replace("<\\/", "</"))
    drawn = sum(sum(y is not None for y in t["y"]) for fig in figs for t in fig["figure"]["data"]
                if t.get("type") == "scatter" and "markers" in t.get("mode", "markers"))
    assert len(figs) == 2 and drawn == 2 * len(f["rows"]) + 6 * len(f["rates"])
    assert "<script src=" not in page and "most goodput (req/s): a100" in page


@pytest.mark.slow
def test_ray_gives_the_rows_of_the_local_run(run, tmp_path, ray_session):
    """Designs and specs travel to Ray workers as plain data; each maps its table in its own process."""
    _, _, want = run
    c = load_campaign(write(tmp_path))
    run_campaign(c, executor="ray")
    for t in ("rows", "rates"):
        pd.testing.assert_frame_equal(frames(c.output)[t], want[t])
