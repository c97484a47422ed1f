"""What a user meets at the command line (issue 23, defects 1, 3, 5, 7, 9): one seed rule at every
entry point, one finding per bad ``[search] trials``, text for people (no Python reprs, long lines
unwrapped, no ``<bool>`` in `--help`, no Ray token notice), `sweep list networks NAME` and `sweep
list mappers` with structured parameters, and a failed run's `sweep report`.

Bad input: exit 2, the message names the key or option and the value, no traceback, and the
temporary directory (campaign, output directory) is byte-for-byte unchanged.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paths import CAMPAIGNS, DATA, REPO
from sweep.cli import app

runner = CliRunner()
BIG = 2 ** 70                      # the seed: beyond a signed 64-bit Parquet column
NET = (DATA / "tiny_net.csv").as_posix()

LOOPS = f"""name = "user"
output = "{{tmp}}/out"
networks = [{{ file = "{NET}" }}]
objectives = ["energy"]
seeds = [0]
[architectures]
kind = "loopnest"
presets = ["eyeriss_like"]
[[mappers]]
name = "random"
params = {{ patience = 20 }}
"""
SEARCH = f"""name = "user_search"
output = "{{tmp}}/out"
networks = [{{ file = "{NET}" }}]
objectives = ["edp"]
seeds = [0]
[architectures]
kind = "loopnest"
template = "eyeriss_like"
[architectures.grid]
array.D1 = [7, 14]
array.D2 = [6, 12]
[[mappers]]
name = "salsa"
params = {{ chains = 1, iterations = 30, descent = false }}
[search]
sampler = "random"
trials = 2
seed = 0
"""
TUNE = (CAMPAIGNS / "tune_salsa_eyeriss.toml").read_text()
MAP = ["map", "--arch", "eyeriss_like", "--mapper", "random", "--dims", "K=8,C=8,OY=4,OX=4",
       "--param", "patience=5"]


def _sub(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _snapshot(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _bad(tmp_path: Path, files: dict[str, str], args: list[str]) -> str:
    """Run ``args`` on ``files``: exit 2, no traceback, nothing written; the message, one line."""
    for name, text in files.items():
        (tmp_path / name).write_text(text.replace("{tmp}", tmp_path.as_posix()))
    before = _snapshot(tmp_path)
    res = runner.invoke(app, [a.replace("{tmp}", tmp_path.as_posix()) for a in args])
    msg = re.sub(r"[\s│╭╮╰╯─]+", " ", res.output)
    assert res.exit_code == 2, (msg, res.exception)
    assert "Traceback" not in res.output and not isinstance(res.exception, (KeyError, OverflowError)), msg
    assert _snapshot(tmp_path) == before
    assert not (tmp_path / "out").exists()
    return msg


RULE = "expected an integer >= 0 and <= 4294967295"
RUN = ["run", "{tmp}/c.toml", "--executor", "local"]
VALIDATE = ["validate", "{tmp}/c.toml"]


# -- defect 3: one seed rule everywhere ---------------------------------------------------------

@pytest.mark.parametrize("files, key", [
    ({"c.toml": _sub(LOOPS, "seeds = [0]", f"seeds = [{BIG}]")}, f"seeds = [{BIG}]: seeds[0] = {BIG}: {RULE}"),
    ({"c.toml": _sub(LOOPS, "seeds = [0]", "seeds = [1, 4294967296]")}, f"seeds[1] = 4294967296: {RULE}"),
    ({"c.toml": _sub(LOOPS, "seeds = [0]", "seeds = [-1]")}, f"seeds[0] = -1: {RULE}"),
    ({"c.toml": _sub(LOOPS, "patience = 20", f"patience = 20, seed = {BIG}")},
     f"mappers[0].params.seed = {BIG}: {RULE}"),
    ({"c.toml": _sub(SEARCH, "seed = 0", f"seed = {BIG}")}, f"search.seed = {BIG}: {RULE}"),
], ids=["seeds-2**70", "seeds-2**32", "seeds-negative", "mapper-param-seed", "search-seed"])
@pytest.mark.parametrize("command", [RUN, VALIDATE], ids=["run", "validate"])
def test_campaign_seed_rule(tmp_path, files, key, command):
    assert key in _bad(tmp_path, files, command)


@pytest.mark.parametrize("old, new, key", [
    ("seeds = [", f"seeds = [{BIG}, ", f"seeds = [{BIG}, "),
    ('name = "tpe"                  # tpe | cmaes | random\nseed = 0', f'name = "tpe"\nseed = {BIG}',
     f"sampler.seed = {BIG}: {RULE}"),
    ("seeds = [1000, ", f"seeds = [{2 ** 32}, ", f"heldout.seeds = [{2 ** 32}, "),
], ids=["training-seeds", "sampler-seed", "heldout-seeds"])
def test_tuning_campaign_seed_rule(tmp_path, old, new, key):
    text = _sub(TUNE, old, new).replace('output = "results/tune_salsa_eyeriss"', 'output = "{tmp}/out"')
    msg = _bad(tmp_path, {"t.toml": text}, ["tune", "{tmp}/t.toml", "--executor", "local"])
    assert key in msg and RULE in msg


@pytest.mark.parametrize("args, option", [
    (["--seed", "-1"], "'--seed': -1"),                       # was reported as `--param seed`
    (["--seed", str(BIG)], f"'--seed': {BIG}"),
    (["--seed", "4294967296"], "'--seed': 4294967296"),
    (["--param", f"seed={BIG}"], f"'--param seed': seed={BIG}"),
    (["--param", "seed=-1"], "'--param seed': seed=-1"),
])
def test_map_seed_rule(tmp_path, args, option):
    msg = _bad(tmp_path, {}, MAP + args)
    assert option in msg and RULE in msg


def test_largest_seed_is_accepted_everywhere(tmp_path):
    """2**32 - 1 passes `sweep validate` and `sweep map` (the rule's upper end)."""
    (tmp_path / "c.toml").write_text(_sub(LOOPS, "seeds = [0]", "seeds = [4294967295]")
                                     .replace("{tmp}", tmp_path.as_posix()))
    assert runner.invoke(app, VALIDATE[:1] + [str(tmp_path / "c.toml")]).exit_code == 0
    res = runner.invoke(app, MAP + ["--seed", "4294967295", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["params"]["seed"] == 4294967295


# -- defect 5: [search] trials ------------------------------------------------------------------

@pytest.mark.parametrize("trials, rng", [("0", "[1, 4]"), ("1000000000000", "[1, 4]"), ("2.5", "[1, 4]")])
def test_search_trials_one_finding_with_the_range(tmp_path, trials, rng):
    """The grid of 2 x 2 designs has 4 valid designs: trials must be in [1, 4]; one finding."""
    msg = _bad(tmp_path, {"c.toml": _sub(SEARCH, "trials = 2", f"trials = {trials}")}, VALIDATE)
    assert f"search.trials = {trials}: expected an integer in {rng}" in msg
    assert "1 problem(s)" in msg and "None" not in msg and "positive integer" not in msg


# -- defect 9: sweep list -----------------------------------------------------------------------

def test_list_networks_name_gives_the_layers():
    """resnet18's conv1: K 64, C 3, 112 x 112 outputs, 7 x 7 filter, stride 2: 64*3*112*112*49
    = 118,013,952 MACs; 21 layers, 12 unique."""
    res = runner.invoke(app, ["list", "networks", "resnet18"], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert "21 layer(s), 12 unique" in res.output
    row = next(line for line in res.output.splitlines() if " conv1 " in line)
    assert re.search(r"conv1 .* 64 .* 3 .* 112 .* 112 .* 7 .* 7 .* 118,013,952", row), row
    js = json.loads(runner.invoke(app, ["list", "networks", "resnet18", "--json"]).output)
    first = js["layers"][0]
    assert (first["name"], first["K"], first["C"], first["FY"], first["SY"], first["macs"]) == \
        ("conv1", 64, 3, 7, 2, 64 * 3 * 112 * 112 * 49)
    assert js["total_macs"] == sum(l["macs"] * l["repeat"] for l in js["layers"])


@pytest.mark.parametrize("args, fragment", [
    (["list", "networks", "resnet19"], "NAME = 'resnet19': no zoo network of that name"),
    (["list", "mappers", "salsaa"], "NAME = 'salsaa': unknown mapper"),
    (["list", "archs", "eyeriss_lik"], "NAME = 'eyeriss_lik': unknown accelerator; loop-nest presets"),
    (["list", "archs", "arch1"], "NAME = 'arch1': arch1 is not a loop-nest accelerator"),
    (["list", "networks", "resnet18", "--file", "x.csv"], "--file = 'x.csv': give a zoo NAME"),
])
def test_list_bad_name(tmp_path, args, fragment):
    assert fragment in _bad(tmp_path, {}, args)


def test_list_mappers_json_has_structured_params():
    rows = json.loads(runner.invoke(app, ["list", "mappers", "--json"]).output)
    salsa = {p["name"]: p for p in next(r for r in rows if r["name"] == "salsa")["params"]}
    assert salsa["rho"] == {"name": "rho", "type": "float", "default": 0.9, "range": [0.0, 1.0], "choices": None,
                            "doc": salsa["rho"]["doc"]} and "cooling" in salsa["rho"]["doc"]
    assert salsa["normalise"]["choices"] == ["initial", "best", "log", "zigzag"] and salsa["normalise"]["range"] is None
    assert salsa["seed"]["range"] == [0, 2 ** 32 - 1]                 # the one seed rule
    assert salsa["iterations"]["range"] == [0, 100_000_000]
    one = json.loads(runner.invoke(app, ["list", "mappers", "salsa", "--json"]).output)
    assert one["params"] == next(r for r in rows if r["name"] == "salsa")["params"]


def test_list_mappers_text_is_whole():
    """Every parameter of every mapper is printed whole (no ellipsis); one row per parameter."""
    res = runner.invoke(app, ["list", "mappers"], env={"COLUMNS": "80"})
    assert res.exit_code == 0 and "…" not in res.output and "max_evaluations" in res.output
    res = runner.invoke(app, ["list", "mappers", "cosa"], env={"COLUMNS": "80"})
    assert "…" not in res.output
    rows = [line for line in res.output.splitlines() if re.match(r"│ \w+ +│", line)]
    assert [line.split("│")[1].strip() for line in rows][:3] == ["w_util", "w_compute", "w_traffic"]


# -- defect 7: text for people ------------------------------------------------------------------

@pytest.mark.parametrize("command", [[], ["run"], ["map"], ["eval"], ["list"], ["report"], ["tune"], ["validate"],
                                     ["import"], ["import", "zigzag"], ["rerun"], ["compact"]])
def test_help_has_no_bool_or_list_metavars(command):
    res = runner.invoke(app, command + ["--help"], env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output
    assert "<bool>" not in res.output and "<list[str]>" not in res.output


def test_validate_prints_one_line_per_message(tmp_path):
    """A long message is not folded at 80 columns: the output directory stays whole on its line."""
    deep = tmp_path / ("a_rather_long_folder_name_" * 3) / "out"
    (tmp_path / "c.toml").write_text(LOOPS.replace("{tmp}/out", deep.as_posix()))
    res = runner.invoke(app, ["validate", str(tmp_path / "c.toml")], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert any(line.endswith(f"-> {deep.as_posix()}") for line in res.output.splitlines()), res.output


def test_failed_run_message_and_report(tmp_path, monkeypatch):
    """`sweep run` with failing tasks: exit 1 and the hint on one line; the report it recommends
    then says what failed in words (no Python repr, no traceback) and reports the rest."""
    from mappers import get_mapper

    def boom(self, problem, unit, params):
        raise RuntimeError("boom")
    monkeypatch.setattr(type(get_mapper("random")), "run", boom)
    (tmp_path / "c.toml").write_text(LOOPS.replace("{tmp}", tmp_path.as_posix()))
    res = runner.invoke(app, ["run", str(tmp_path / "c.toml"), "--executor", "local"], env={"COLUMNS": "80"})
    assert res.exit_code == 1, res.output
    out = (tmp_path / "out").as_posix()
    assert any(line.endswith(f"first error per mapper and layer: `sweep report {out}`)")
               for line in res.output.splitlines()), res.output
    rep = runner.invoke(app, ["report", out], env={"COLUMNS": "80"})
    assert rep.exit_code == 0 and "Traceback" not in rep.output and "{'" not in rep.output, rep.output
    assert "rows: 2 error" in rep.output and "every row failed" in rep.output
    assert "random / tiny_net / conv_a: 1 row(s): RuntimeError: boom" in rep.output


def test_local_ray_start_is_quiet(tmp_path):
    """A new local Ray (RAY_AUTH_MODE unset) logs "Token authentication is enabled for this Ray
    cluster ..." on every start; the executor's start does not."""
    code = ("from sweep.engine.executor import Executor\n"
            "with Executor('ray', num_cpus=1) as ex:\n"
            "    print(sorted(r for _, r, _ in ex.imap(abs, [-1, -2])))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_ADDRESS")}
    env.update(RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=str(REPO))
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[1, 2]"
    assert "Token authentication is enabled" not in p.stderr, p.stderr


def test_help_flows_docstring_paragraphs_and_keeps_example_lines():
    """`--help` joins a docstring's lines within a paragraph (before: the source's line breaks,
    "... with --network" / "and no --layer, ..." on two lines at any width) and keeps an
    indented example one command per line."""
    wide = {"COLUMNS": "250", "TERMINAL_WIDTH": "250"}
    text = CliRunner().invoke(app, ["--help"], env=wide).output
    assert "(same task_ids and rows; refused with exit 2 if its input files" in text
    text = CliRunner().invoke(app, ["report", "--help"], env=wide).output
    assert "parameter importances (PNGs, default DIR/plots) and the held-out gap" in text
    text = CliRunner().invoke(app, ["import", "zigzag", "--help"], env=wide).output
    lines = [line.strip() for line in text.splitlines()]
    assert "sweep import zigzag --accelerator tpu_like.yaml --mapping tpu_like_map.yaml --out tpu_zz.toml" in lines
    assert any(line.startswith("sweep map --arch tpu_zz.toml") for line in lines)
