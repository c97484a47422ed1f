"""`sweep map --tp/--pp/--ep/--system` and `sweep.api.map_step(system=...)`: a step on several chips
from the command line and the API, the same figures both ways, and bad input named (exit 2)."""

import json

import pytest
from typer.testing import CliRunner

from sweep import api
from sweep.cli import app

runner = CliRunner()
STEP = ["--network", "llama3_70b", "--phase", "decode", "--batch", "8", "--context", "1024", "--arch", "a100",
        "--mapper", "salsa"]


def _json(args):
    r = runner.invoke(app, ["map", *STEP, *args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_tp8_from_the_cli_equals_the_api_and_a_system_file(tmp_path):
    cli = _json(["--tp", "8", "--launch-us", "0"])
    assert cli["network"] == "llama3_70b/decode/b8/ctx1024/tp8"
    sys_ = cli["system"]
    assert sys_["chips"] == 8 and sys_["label"] == "8 chips: tp 8 (nvlink3)"
    assert sys_["time_per_token_s"] == cli["llm"]["time_per_token_s"]
    assert sys_["collectives_s"] > 0 and sys_["tokens_per_s"] == pytest.approx(8 / sys_["latency_s"])
    f = tmp_path / "sys.toml"
    f.write_text('[system]\nchips = 8\ninterconnect = "nvlink3"\nlaunch_overhead_us = 0\n')
    assert _json(["--system", str(f)])["system"]["latency_s"] == sys_["latency_s"]
    res = api.map_step("llama3_70b", "a100", "salsa", phase="decode", batch=8, context=1024,
                       system={"tp": 8, "launch_overhead_us": 0})
    assert res.system["latency_s"] == sys_["latency_s"] and res.llm["memory"]["fits"]


def test_text_output_names_the_collectives():
    r = runner.invoke(app, ["map", *STEP, "--tp", "4", "--pp", "2"])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "system: 8 chips: tp 4, pp 2 (nvlink3)" in out
    assert "all-reduce of the hidden state" in out and "send/receive of the activations between stages" in out
    assert "memory per chip:" in out and "tokens/s for the system" in out


@pytest.mark.parametrize("args, key, what", [
    (["--tp", "3"], "--tp", "does not divide llama3_70b's 64 query heads"),
    (["--pp", "3"], "--pp", "does not divide llama3_70b's 80 blocks"),
    (["--ep", "2"], "--ep", "applies to a mixture of experts"),
    (["--interconnect", "nvlink9"], "--interconnect", "nvlink9"),
    (["--tp", "8", "--micro-batches", "3"], "--micro-batches", "does not divide the batch 8"),
    (["--chips", "6", "--tp", "8"], "--chips", "expected tp x pp x ep x replicas = 8"),
])
def test_bad_system_input_exits_2_naming_the_option(args, key, what):
    r = runner.invoke(app, ["map", *STEP, *args])
    assert r.exit_code == 2, r.output
    out = " ".join(r.output.split())
    assert key in out and what in out


def test_system_file_errors_name_the_key(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text("[system]\ntp = 8\nlinks = 4\n")
    r = runner.invoke(app, ["map", *STEP, "--system", str(f)])
    assert r.exit_code == 2 and "system.links = 4: no such key" in " ".join(r.output.split())
    r = runner.invoke(app, ["map", *STEP, "--system", str(tmp_path / "missing.toml")])
    assert r.exit_code == 2 and "cannot read" in r.output


def test_a_70b_that_does_not_fit_one_chip_says_so():
    r = runner.invoke(app, ["map", "--network", "llama3_70b", "--phase", "decode", "--batch", "32", "--context",
                            "4096", "--arch", "a100", "--mapper", "salsa", "--tp", "2"])
    assert r.exit_code == 1
    out = " ".join(r.output.split())
    assert "does not fit" in out and "weights 70.6 GB" in out
