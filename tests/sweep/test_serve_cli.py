"""`sweep serve` and `sweep.api.serve` as a user meets them: the summary's stable JSON keys, the
Parquet files, the goodput search, and bad input refused naming the option (or file, row and column)
with exit 2 and nothing written. A cost table of small grids is built once (the deployment's own),
so each command here serves without mapping."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from costmodel.serving import Deployment
from sweep import api
from sweep.cli import app
from sweep.commands.map_eval import load_arch
from sweep.serving.table_build import build_cost_table

runner = CliRunner()
NET = ["--network", "llama3_2_1b", "--arch", "a100"]


@pytest.fixture(scope="module")
def table_file(tmp_path_factory):
    grids = {"tokens": [1, 8, 64, 512, 2048], "seqs": [1, 64, 256], "contexts": [1, 1024, 131072],
             "chunk_q": [2, 512, 2048], "chunk_p": [0, 1024, 131070]}
    t = build_cost_table(Deployment("llama3_2_1b"), load_arch("a100"), "salsa", "latency", 0, None, max_tokens=2048,
                         max_seqs=256, max_context=131072, grids=grids, workers=1)
    p = tmp_path_factory.mktemp("table") / "cost_table.json"
    p.write_text(t.dumps())
    return str(p)


def serve(args, table_file):
    return runner.invoke(app, ["serve", *NET, "--table", table_file, *args])


def test_json_summary_has_the_stable_keys(table_file):
    r = serve(["--rate", "5", "--requests", "200", "--prompt", "lognormal:800:0.8", "--output", "lognormal:150:0.8",
               "--slo-ttft", "2", "--slo-tpot", "0.1", "--json"], table_file)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    for k in ("ttft_s", "tpot_s", "e2e_s"):
        assert set(doc[k]) == {"mean", "p50", "p90", "p99"}
        assert doc[k]["p50"] <= doc[k]["p90"] <= doc[k]["p99"]
    for k in ("output_tokens_per_s", "requests_per_s", "slo_attainment", "goodput_rps", "energy_per_request_j",
              "preemptions"):
        assert k in doc
    assert doc["requests"] == 200 and doc["served"] == 200 and 0 < doc["slo_attainment"] <= 1
    assert doc["goodput_rps"] is None


def test_out_writes_parquet_a_reader_takes(tmp_path, table_file):
    out = tmp_path / "res"
    r = serve(["--trace", "azure_conv_2023", "--drop-long-prompts", "--requests", "300", "--out", str(out)], table_file)
    assert r.exit_code == 0, r.output
    req = pd.read_parquet(out / "requests")
    it = pd.read_parquet(out / "iterations")
    assert len(req) == 300 and (req["status"] == "ok").all()
    doc = json.loads((out / "summary.json").read_text())
    assert len(it) == doc["summary"]["iterations"]
    assert it["tokens"].sum() == req["prompt_tokens"].sum() + (req["output_tokens"] - 1).sum()
    assert np.allclose(req["ttft_s"], req["first_token_s"] - req["arrival_s"])
    assert (out / "plots" / "timeline.png").is_file()
    assert "TTFT" in r.output and "KV cache" in r.output


def test_goodput_is_searched_and_stated(table_file, tmp_path):
    r = serve(["--rate", "5", "--requests", "300", "--prompt", "lognormal:800:0.8", "--output", "lognormal:150:0.8",
               "--slo-ttft", "0.5", "--slo-tpot", "0.05", "--goodput", "--json", "--out", str(tmp_path / "g")],
              table_file)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    gp = doc["goodput"]
    assert doc["goodput_rps"] == gp["goodput_rps"] > 0
    good, bad = gp["bracket"]
    assert bad > good and (bad - good) <= 0.02 * bad
    att = {p["rate"]: p["attainment"] for p in gp["points"]}
    assert att[good] >= 0.9 > att[bad]
    assert gp["simulations"] == len(gp["points"])
    assert (tmp_path / "g" / "plots" / "latency_vs_rate.png").is_file()


def test_a_load_served_even_all_at_once_says_the_goodput_is_unbounded(table_file):
    """20 short requests under a loose SLO: met at every rate the doubling tries (the load is finite:
    at any rate they all arrive all but at once), so no rate bounds the goodput, and the text says so."""
    r = serve(["--rate", "4", "--requests", "20", "--prompt", "64", "--output", "8", "--slo-ttft", "60",
               "--slo-tpot", "1", "--goodput"], table_file)
    assert r.exit_code == 0, r.output
    assert "goodput: not bounded by this load" in r.output and "serve more requests" in r.output


def test_api_serve_equals_the_cli(table_file):
    from costmodel.serving import CostTable
    t = CostTable.from_dict(json.loads(open(table_file).read()))
    res = api.serve("llama3_2_1b", "a100", rate=5, requests=200, prompt="lognormal:800:0.8",
                    output="lognormal:150:0.8", table=t)
    r = serve(["--rate", "5", "--requests", "200", "--prompt", "lognormal:800:0.8", "--output", "lognormal:150:0.8",
               "--json"], table_file)
    doc = json.loads(r.stdout)
    assert res.summary["ttft_s"] == doc["ttft_s"] and res.summary["iterations"] == doc["iterations"]
    assert len(res.requests) == 200 and len(res.iterations) == doc["iterations"]


@pytest.mark.parametrize("args, key", [
    (["--rate", "0", "--requests", "10"], "--rate"),
    (["--rate", "-2", "--requests", "10"], "--rate"),
    (["--rate", "1"], "--requests"),
    ([], "--rate"),
    (["--rate", "1", "--requests", "10", "--prompt", "lognormal:x"], "--prompt"),
    (["--rate", "1", "--requests", "10", "--max-num-batched-tokens", "8"], "--max-num-batched-tokens"),
    (["--rate", "1", "--requests", "10", "--block-size", "0"], "--block-size"),
    (["--rate", "1", "--requests", "10", "--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
    (["--rate", "1", "--requests", "10", "--max-num-seqs", "0"], "--max-num-seqs"),
    (["--rate", "1", "--requests", "10", "--graphs", "sometimes"], "--graphs"),
    (["--rate", "1", "--requests", "10", "--pp", "3"], "--pp"),            # 16 blocks in 3 stages
    (["--rate", "1", "--requests", "10", "--slo-ttft", "-1"], "--slo-ttft"),
    (["--rate", "1", "--requests", "10", "--goodput"], "--slo-ttft"),
    (["--rate", "1", "--requests", "10", "--column", "prompt"], "--column"),
])
def test_bad_options_exit_2_naming_the_option_and_write_nothing(args, key, tmp_path, table_file):
    out = tmp_path / "never"
    r = serve([*args, "--out", str(out)], table_file)
    assert r.exit_code == 2, r.output
    assert key in r.output
    assert not out.exists()


@pytest.mark.parametrize("text, where", [
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,2\n1,zz,2\n", "row 2, column num_prefill_tokens"),
    ("arrived_at,num_prefil_tokens,num_decode_tokens\n0,10,2\n", "no prompt column"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n5,10,2\n1,10,2\n", "row 2, column arrived_at"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,0\n", "row 1, column num_decode_tokens"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n0,200000,2\n", "longer than the model's context of 131,072"),
])
def test_a_bad_trace_exits_2_naming_file_row_and_column(text, where, tmp_path, table_file):
    f = tmp_path / "t.csv"
    f.write_text(text)
    out = tmp_path / "never"
    r = serve(["--trace", str(f), "--out", str(out)], table_file)
    assert r.exit_code == 2 and where in r.output and "t.csv" in r.output, r.output
    assert not out.exists()


@pytest.mark.parametrize("args, key", [(["--network", "bert_base"], "--network"), (["--network", "nope"], "--network"),
                                       (["--arch", "arch1"], "--arch")])
def test_models_and_chips_serving_cannot_use_are_named(args, key):
    r = runner.invoke(app, ["serve", "--network", "llama3_2_1b", "--arch", "a100", *args, "--rate", "1",
                            "--requests", "5"])
    assert r.exit_code == 2 and key in r.output, r.output


def test_a_table_of_another_deployment_is_refused(table_file):
    r = runner.invoke(app, ["serve", "--network", "llama3_8b", "--arch", "a100", "--table", table_file, "--rate", "1",
                            "--requests", "5"])
    assert r.exit_code == 2 and "--table" in r.output and "made for" in r.output
