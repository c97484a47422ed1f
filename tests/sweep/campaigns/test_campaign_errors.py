"""Bad campaign input: every problem named with its key and value, exit code 2, nothing written."""

import re

import pytest
from typer.testing import CliRunner

from sweep.campaigns.campaign import load_campaign
from sweep.cli import app
from sweep.errors import CampaignError

from campaign_util import TINY

runner = CliRunner()


def _edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


BASE = TINY.format(out="OUT", flush=1, chunk=8)

CASES = [
    # (id, campaign text, expected fragment of the message)
    ("unknown-top-key", BASE + '\nnmae = "x"\n', "nmae = 'x': unknown key"),
    ("unknown-network", _edit(BASE, '"alexnet_deepopt"', '"resnet51"'), "networks[0] = 'resnet51': unknown network"),
    ("network-file-missing", _edit(BASE, '"alexnet_deepopt"', '{file = "nope.csv"}'), "networks[0].file = 'nope.csv'"),
    ("bad-objective", _edit(BASE, '"ED"]', '"EDP"]'), "objectives[2] = 'EDP': unknown objective for systolic"),
    ("objectives-type", _edit(BASE, 'objectives = ["E", "D", "ED"]', 'objectives = "ED"'), "objectives = 'ED'"),
    ("zero-step", _edit(BASE, "step = 4 }\nK", "step = 0 }\nK"), "architectures.grid.J = {'start': 16, 'stop': 24, 'step': 0}"),
    ("negative-size", _edit(BASE, "fsram_kib = [16, 32]", "fsram_kib = [-16, 32]"), "architectures.grid.fsram_kib = [-16, 32]: values must be positive"),
    ("wrong-type", _edit(BASE, "isram_kib = [16, 32]", 'isram_kib = ["16", 32]'), "architectures.grid.isram_kib"),
    ("missing-axis", _edit(BASE, "psram_kib = [8, 16]\n", ""), "architectures.grid.psram_kib = None: required"),
    ("bad-constraint-name", _edit(BASE, '"area_mm2 <= 16"', '"area <= 16"'), "architectures.grid.constraints[0] = 'area <= 16': unknown name 'area'"),
    ("no-feasible-point", _edit(BASE, '"area_mm2 <= 16"', '"area_mm2 <= 0.01"'), "no hardware point satisfies the constraints"),
    ("unknown-preset", _edit(BASE, "[architectures.grid]", 'preset = "nope"\n[architectures.grid]'), "give exactly one of preset, file, points or grid"),
    ("unknown-mapper", _edit(BASE, 'name = "deepopt"', 'name = "deepop"'), "mappers[0].name = 'deepop': unknown mapper"),
    ("bad-mapper-param", _edit(BASE, 'name = "deepopt"', 'name = "deepopt"\nparams = { network_pm = "prod" }'), "mappers[0].params.network_pm = 'prod': expected one of ['sum', 'product']"),
    ("unknown-mapper-param", _edit(BASE, 'name = "deepopt"', 'name = "deepopt"\nparams = { tempreature = 1 }'), "mappers[0].params.tempreature = 1: unknown parameter"),
    ("zero-chunk", _edit(BASE, "chunk_points = 8", "chunk_points = 0"), "run.chunk_points = 0"),
    ("unknown-systolic", BASE + "\n[systolic]\nb_x = 8\n", "systolic.b_x = 8: unknown parameter"),
    ("negative-systolic", BASE + "\n[systolic]\ndram_bw_bits_per_cycle = -1\n", "systolic.dram_bw_bits_per_cycle = -1"),
    ("malformed-toml", BASE + "\nname = = 3\n", "not valid TOML"),
    ("no-mappers", _edit(BASE, '[[mappers]]\nname = "deepopt"\n', ""), "mappers = None: required"),
]


@pytest.mark.parametrize("text, fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_campaign_exit_2_nothing_written(tmp_path, text, fragment):
    out = tmp_path / "out"
    path = tmp_path / "c.toml"
    path.write_text(text.replace("OUT", out.as_posix()))
    for cmd in (["validate", str(path)], ["run", str(path), "--executor", "local"]):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 2, res.output
        msg = re.sub(r"\s+", " ", res.output)
        assert fragment in msg, msg
        assert str(path) in msg
    assert not out.exists()


def test_all_problems_reported_at_once(tmp_path):
    text = _edit(_edit(BASE, '"alexnet_deepopt"', '"resnet51"'), "chunk_points = 8", "chunk_points = -1")
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(CampaignError) as ei:
        load_campaign(path)
    keys = [p.key for p in ei.value.problems]
    assert "networks[0]" in keys and "run.chunk_points" in keys


def test_missing_campaign_file(tmp_path):
    res = runner.invoke(app, ["run", str(tmp_path / "none.toml")])
    assert res.exit_code == 2 and "cannot read" in res.output


def test_valid_campaign_validates(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(BASE.replace("OUT", (tmp_path / "o").as_posix()))
    res = runner.invoke(app, ["validate", str(path)])
    assert res.exit_code == 0, res.output
    assert "72 hardware" in res.output and "9 task(s)" in res.output
    assert not (tmp_path / "o").exists()
