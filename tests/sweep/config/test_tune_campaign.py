"""Tuning-campaign validation (every bad key -> CampaignError naming it, exit 2, nothing written)
and ``params_file`` in `sweep run` campaigns."""

import re

import pytest
from typer.testing import CliRunner

from sweep.kinds import parse_campaign
from sweep.cli import app
from sweep.common.errors import CampaignError
from sweep.config.tune_campaign import load_tune_campaign, parse_tune_campaign
from tests.tune_util import write_tune
from paths import CAMPAIGNS


def test_tiny_campaign_is_valid(tmp_path):
    c = load_tune_campaign(write_tune(tmp_path))
    assert c.mapper == "salsa" and c.budget == 200 and c.seeds == (0, 1)
    assert [s.name for s in c.space] == ["t0", "rho", "chains"]
    assert c.space[0].log and c.space[2].choices == (1, 2, 4)
    assert c.training == ("resnet34", ("fc", "layer4.0.downsample"))
    assert c.sampler["name"] == "tpe" and c.pruner["name"] == "median"
    assert len(c.config_hash()) == 64


def _base():
    import tomllib
    from tests.tune_util import TINY_TUNE
    return tomllib.loads(TINY_TUNE.format(out="x", trials=4, sampler="tpe", pruner="median",
                                          objectives='["gap"]', mapper="salsa"))


def _set(d, path, value):
    keys = path.split(".")
    for k in keys[:-1]:
        d = d[k]
    d[keys[-1]] = value


@pytest.mark.parametrize("path, value, key, match", [
    ("sampler.name", "bayes", "sampler.name", "expected one of"),
    ("space.t0", {"low": 0.5, "high": 0.1}, "space.t0.low", "low > high"),
    ("space.t0", {"low": 0.0, "high": 0.1, "log": True}, "space.t0.log", "log = true needs low > 0"),
    ("space.rho", {"low": 0.9, "high": 1.5}, "space.rho.high", "expected <= 1"),
    ("mapper", "loma", "mapper", "one of"),
    ("space.temperature", {"low": 0.1, "high": 1.0}, "space.temperature", "unknown parameter of salsa"),
    ("space.seed", {"low": 0, "high": 9}, "space.seed", "set by the tuner"),
    ("space.chains", {"choices": [1, 3]}, "space.chains", "do not divide budget"),
    ("space.normalise", {"low": 0, "high": 1}, "space.normalise", "give {choices"),
    ("training.layers", ["fc", "layer9.conv"], "training.layers[1]", "no such unique layer"),
    ("training.network", "resnet99", "training.network", "unknown zoo network"),
    ("heldout.seeds", [1, 100], "heldout.seeds", "distinct from the training seeds"),
    ("heldout.defaults", {"t0": 0.05, "iterations": 150}, "heldout.defaults", "does not divide"),
    ("objectives", ["gap", "time"], "objectives", "expected"),
    ("pruner.name", "hyperband", "pruner.name", "expected one of"),
    ("budget", 0, "budget", "integer"),
    ("fixed", {"engine": "auto"}, "fixed.engine", "set by the tuner"),
    ("arch", "eyeriss_xl", "arch", "unknown accelerator"),
    ("colour", "red", "colour", "unknown key"),
])
def test_bad_values_name_their_key(path, value, key, match):
    data = _base()
    _set(data, path, value)
    with pytest.raises(CampaignError) as e:
        parse_tune_campaign(data)
    assert any(p.key == key and re.search(re.escape(match), p.message) for p in e.value.problems), e.value


def test_two_objectives_need_no_pruner_and_not_cmaes():
    data = _base()
    data["objectives"] = ["gap", "evals_to_reach"]
    data["sampler"]["name"] = "cmaes"
    with pytest.raises(CampaignError) as e:
        parse_tune_campaign(data)
    keys = {p.key for p in e.value.problems}
    assert keys == {"sampler.name", "pruner.name"}
    data["sampler"]["name"] = "tpe"
    del data["pruner"]
    assert parse_tune_campaign(data).pruner["name"] == "none"


def test_cli_bad_campaign_exits_2_and_writes_nothing(tmp_path):
    p = write_tune(tmp_path, extra='\n[storage2]\nx = 1\n')
    res = CliRunner().invoke(app, ["tune", str(p)])
    assert res.exit_code == 2
    assert "storage2" in res.output
    assert not (tmp_path / "out").exists()


# -- params_file in `sweep run` campaigns -------------------------------------------------------------
RUN = """
name = "pf"
output = "{out}"
networks = ["resnet34"]
objectives = ["energy"]
[architectures]
kind = "loopnest"
presets = ["eyeriss_like"]
[[mappers]]
name = "salsa"
{mapper}
"""


def _run_campaign(tmp_path, mapper_lines):
    import tomllib
    return parse_campaign(tomllib.loads(RUN.format(out=(tmp_path / "o").as_posix(), mapper=mapper_lines)),
                          "pf.toml", tmp_path)


def test_params_file_is_merged_under_inline_params(tmp_path):
    (tmp_path / "tuned").mkdir()
    (tmp_path / "tuned" / "s.toml").write_text("[mappers.salsa]\nt0 = 0.2\nrho = 0.995\nchains = 4\n"
                                               "iterations = 250\n[mappers.loma]\nshards = 9\n")
    c = _run_campaign(tmp_path, 'params_file = "tuned/s.toml"\nparams = { rho = 0.99 }')
    p = c.mappers[0].params
    assert (p["t0"], p["rho"], p["chains"], p["iterations"]) == (0.2, 0.99, 4, 250)   # inline rho wins
    assert p["engine"] == "auto"                                                       # defaults still filled
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("content, match", [
    (None, "cannot read"),
    ("[mappers.salsa\n", "not valid TOML"),
    ("[mappers.loma]\nshards = 2\n", r"no \[mappers.salsa\] table"),
])
def test_params_file_problems_name_key_and_path(tmp_path, content, match):
    if content is not None:
        (tmp_path / "s.toml").write_text(content)
    with pytest.raises(CampaignError) as e:
        _run_campaign(tmp_path, 'params_file = "s.toml"')
    (p,) = e.value.problems
    assert p.key == "mappers[0].params_file" and p.value == "s.toml" and re.search(match, p.message)


def test_params_file_bad_value_is_reported_with_the_file(tmp_path):
    (tmp_path / "s.toml").write_text("[mappers.salsa]\nrho = 2.0\n")
    with pytest.raises(CampaignError) as e:
        _run_campaign(tmp_path, 'params_file = "s.toml"')
    (p,) = e.value.problems
    assert p.key == "mappers[0].params_file[s.toml].rho" and "<= 1" in p.message


def test_validate_knows_tuning_campaigns_and_run_refuses_them(tmp_path):
    """`sweep validate` summarises a tuning campaign; `sweep run` on one exits 2 pointing to `sweep tune`."""
    from typer.testing import CliRunner

    from sweep.cli import app

    camp = CAMPAIGNS / "tune_salsa_eyeriss.toml"
    r = CliRunner().invoke(app, ["validate", str(camp)])
    text = " ".join(r.output.split())
    assert r.exit_code == 0 and "valid tuning campaign" in text and "budget 1000" in text
    r = CliRunner().invoke(app, ["run", str(camp), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "sweep tune" in " ".join(r.output.split()) and not (tmp_path / "o").exists()


def test_tune_refuses_a_campaign_of_tasks_in_one_line(tmp_path):
    """`sweep tune` on a `sweep run` campaign: one finding pointing to `sweep run` (not a finding per
    tuning key it lacks and per task key it has), exit 2, nothing written."""
    r = CliRunner().invoke(app, ["tune", str(CAMPAIGNS / "salsa_eyeriss.toml"), "--out", str(tmp_path / "o")])
    text = " ".join(r.output.split())
    assert r.exit_code == 2 and "1 problem(s)" in text and "run it with `sweep run`" in text, text
    assert "architectures, mappers, networks" in text and not (tmp_path / "o").exists()


# -- NaN / infinities (and a [report] table) in tuning campaigns, through the CLI -------------------------
# A case: (id, text replaced in the tiny tuning campaign, replacement, key, regex of the message). The
# finding must read "- <key> = <value>: <message>"; `sweep validate` and `sweep tune` exit 2 and
# write nothing.
FINITE_FLOAT = r"expected a finite float \(NaN and infinities are refused\)"
TUNE_NONFINITE = [
    ("space-low-nan", "t0 = { low = 0.005,", "t0 = { low = nan,", "space.t0.low", "nan: " + FINITE_FLOAT),
    ("space-high-inf", "high = 0.5, log = true", "high = inf, log = true", "space.t0.high", "inf: " + FINITE_FLOAT),
    ("space-low-neg-inf-log", "t0 = { low = 0.005,", "t0 = { low = -inf,", "space.t0.low", FINITE_FLOAT),
    ("space-both-nan", "rho = { low = 0.98, high = 0.9999 }", "rho = { low = nan, high = nan }", "space.rho.low",
     FINITE_FLOAT),
    ("space-int-nan", "chains = { choices = [1, 2, 4] }", "chains = { low = 1, high = nan }", "space.chains.high",
     r"expected a int"),
    ("space-float-choice-inf", "rho = { low = 0.98, high = 0.9999 }", "rho = { choices = [0.99, inf] }",
     "space.rho.choices", "inf: " + FINITE_FLOAT),
    ("fixed-nan", "parallel = 2", "parallel = 2\nfixed = { normalise = 'log', t0 = nan }", "fixed.t0", FINITE_FLOAT),
    ("defaults-inf", "defaults = { t0 = 0.05,", "defaults = { t0 = inf,", "heldout.defaults.t0",
     "inf: " + FINITE_FLOAT),
    ("reach-gap-nan", "parallel = 2", "parallel = 2\nreach_gap = nan", "reach_gap",
     r"expected a finite number \(NaN and infinities are refused\)"),
    ("reach-gap-inf", "parallel = 2", "parallel = 2\nreach_gap = inf", "reach_gap", r"finite number"),
    ("budget-inf", "budget = 200", "budget = inf", "budget", r"expected an integer"),
    ("reference-nan", "max_orderings = 200000", "max_orderings = nan", "reference.max_orderings",
     r"positive integer"),
    ("report-table", "parallel = 2", "parallel = 2\n[report]\nbaseline = 'salsa'", "report", r"unknown key"),
]


@pytest.mark.parametrize("old, new, key, match", [c[1:] for c in TUNE_NONFINITE], ids=[c[0] for c in TUNE_NONFINITE])
def test_tune_non_finite_exit_2_named_nothing_written(tmp_path, old, new, key, match):
    p = write_tune(tmp_path)
    text = p.read_text()
    assert old in text, old
    p.write_text(text.replace(old, new, 1))
    before = sorted(str(x) for x in tmp_path.rglob("*"))
    for cmd in (["validate", str(p)], ["tune", str(p), "--out", str(tmp_path / "tout"), "--executor", "local"]):
        res = CliRunner().invoke(app, cmd)
        assert res.exit_code == 2, (cmd, res.output, res.exception)
        lines = [ln.strip() for ln in res.output.splitlines()]
        assert any(ln.startswith(f"- {key} = ") and re.search(match, ln) for ln in lines), (cmd, key, res.output)
        assert sorted(str(x) for x in tmp_path.rglob("*")) == before
