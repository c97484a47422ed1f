"""Bad campaign input: every problem named with its key and value, exit code 2, nothing written."""

import re

import pytest
from typer.testing import CliRunner

from sweep.kinds import load_campaign
from sweep.cli import app
from sweep.common.errors import CampaignError

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


# -- [report] tables and NaN / infinities, through the CLI --------------------------------------------
# A case: (id, campaign text, key, regex the finding's message must match). The finding must read
# "- <key> = <value>: <message>"; `sweep validate` and `sweep run` exit 2 and write nothing.
LOOPS = """
name = "loops"
output = "OUT"
networks = ["resnet34"]
objectives = ["energy"]

[architectures]
kind = "loopnest"
presets = ["eyeriss_like"]

[[mappers]]
name = "salsa"
params = { engine = "sa", iterations = 50 }

[[mappers]]
name = "random"
"""
NPU = """
name = "npu"
output = "OUT"
networks = ["resnet34"]
objectives = ["latency_bytes"]

[architectures]
kind = "npu"
presets = ["arch1"]

[[mappers]]
name = "flexer"

[[mappers]]
name = "static"
"""
FINITE = r"expected a finite (number|float) \(NaN and infinities are refused\)"

REPORT_CASES = [
    ("systolic-unknown", BASE + '\n[report]\nfs_piont = { J = 32 }\n', "report.fs_piont",
     r"unknown key for kind 'systolic'; known: \['fs_point', 'worst_case_window'\]"),
    ("systolic-loopnest-key", BASE + '\n[report]\nbaseline = "random"\n', "report.baseline",
     r"unknown key for kind 'systolic'"),
    ("fs-point-key", BASE + '\n[report]\nfs_point = { J = 32, X = 4 }\n', "report.fs_point.X", r"unknown key"),
    ("fs-point-zero", BASE + '\n[report]\nfs_point = { J = 0 }\n', "report.fs_point.J", r"positive integer"),
    ("fs-point-type", BASE + '\n[report]\nfs_point = 32\n', "report.fs_point", r"expected a table"),
    ("window-range", BASE + '\n[report]\nworst_case_window = 1.5\n', "report.worst_case_window", r"\[0, 1\]"),
    ("window-nan", BASE + '\n[report]\nworst_case_window = nan\n', "report.worst_case_window", FINITE),
    ("report-type", "report = 3\n" + BASE, "report", r"expected a table"),
    ("loopnest-unknown", LOOPS + '\n[report]\nbaseline = "random"\nnetwrok = "resnet34"\n', "report.netwrok",
     r"unknown key for kind 'loopnest'; known: \['baseline', 'network'\]"),
    ("loopnest-systolic-key", LOOPS + '\n[report]\nfs_point = { J = 32 }\n', "report.fs_point",
     r"unknown key for kind 'loopnest'"),
    ("loopnest-baseline-absent", LOOPS + '\n[report]\nbaseline = "loma"\n', "report.baseline",
     r"one of the campaign's mappers \['salsa', 'random'\]"),
    ("loopnest-baseline-type", LOOPS + '\n[report]\nbaseline = 3\n', "report.baseline", r"campaign's mappers"),
    ("loopnest-network-absent", LOOPS + '\n[report]\nnetwork = "vgg16"\n', "report.network",
     r"one of the campaign's networks \['resnet34'\]"),
    ("npu-unknown", NPU + '\n[report]\nbaseline = "static"\nmapers = "flexer"\n', "report.mapers",
     r"unknown key for kind 'npu'; known: \['baseline', 'mapper', 'network'\]"),
    ("npu-mapper-absent", NPU + '\n[report]\nmapper = "salsa"\n', "report.mapper", r"campaign's mappers"),
]
NONFINITE_CASES = [
    ("systolic-param-nan", BASE + "\n[systolic]\ne_mul8_pj = nan\n", "systolic.e_mul8_pj", "nan: " + FINITE),
    ("systolic-param-inf", BASE + "\n[systolic]\ne_mul8_pj = inf\n", "systolic.e_mul8_pj", "inf: " + FINITE),
    ("area-budget-inf", _edit(BASE, 'constraints = ["area_mm2 <= 16"]',
                              'constraints = ["area_mm2 <= 16"]\narea_budget_mm2 = inf'),
     "architectures.grid.area_budget_mm2", "inf: " + FINITE),
    ("area-budget-nan", _edit(BASE, 'constraints = ["area_mm2 <= 16"]',
                              'constraints = ["area_mm2 <= 16"]\narea_budget_mm2 = nan'),
     "architectures.grid.area_budget_mm2", FINITE),
    ("area-fraction-nan", _edit(BASE, 'constraints = ["area_mm2 <= 16"]',
                                'constraints = ["area_mm2 <= 16"]\narea_budget_mm2 = 16.0\nmin_area_fraction = nan'),
     "architectures.grid.min_area_fraction", FINITE),
    ("constraint-overflow", _edit(BASE, '"area_mm2 <= 16"', '"area_mm2 <= 1e999"'),
     "architectures.grid.constraints[0]", r"only finite numbers"),
    ("run-inf", _edit(BASE, "chunk_points = 8", "chunk_points = inf"), "run.chunk_points", r"expected an integer"),
    ("seeds-nan", _edit(LOOPS, 'objectives = ["energy"]', 'objectives = ["energy"]\nseeds = [nan]'), "seeds",
     r"seeds\[0\] = nan: expected an integer >= 0 and <= 4294967295"),
    ("mapper-param-nan", _edit(LOOPS, "iterations = 50", "iterations = 50, t0 = nan"), "mappers[0].params.t0",
     r"nan: expected a finite float"),
    ("mapper-param-inf", _edit(LOOPS, "iterations = 50", "iterations = 50, rho = -inf"), "mappers[0].params.rho",
     r"-inf: expected a finite float"),
    ("npu-param-inf", _edit(NPU, 'name = "flexer"', 'name = "flexer"\nparams = { min_channels = inf }'),
     "mappers[0].params.min_channels", r"expected a int"),
]


def _finding(output: str, key: str, match: str) -> bool:
    """Some line of ``output`` is the finding ``- key = value: message`` with ``match`` in it."""
    return any(line.strip().startswith(f"- {key} = ") and re.search(match, line) for line in output.splitlines())


def _snapshot(root):
    return sorted((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*"))


@pytest.mark.parametrize("text, key, match", [c[1:] for c in REPORT_CASES + NONFINITE_CASES],
                         ids=[c[0] for c in REPORT_CASES + NONFINITE_CASES])
def test_report_and_non_finite_findings_exit_2(tmp_path, text, key, match):
    out = tmp_path / "out"
    path = tmp_path / "c.toml"
    path.write_text(text.replace("OUT", out.as_posix()))
    before = _snapshot(tmp_path)
    for cmd in (["validate", str(path)], ["run", str(path), "--executor", "local"]):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 2, (cmd, res.output, res.exception)
        assert str(path) in res.output
        assert _finding(res.output, key, match), (cmd, key, match, res.output)
        assert _snapshot(tmp_path) == before and not out.exists()


def test_report_tables_of_every_kind_accepted(tmp_path):
    """The keys `sweep report` reads, with good values, validate (and never enter the config hash)."""
    cases = [(BASE, '[report]\nfs_point = { J = 32, K = 64 }\nworst_case_window = 0.2\n'),
             (LOOPS, '[report]\nbaseline = "random"\nnetwork = "resnet34"\n'),
             (NPU, '[report]\nbaseline = "static"\nmapper = "flexer"\nnetwork = "resnet34"\n')]
    for i, (text, report) in enumerate(cases):
        path = tmp_path / f"c{i}.toml"
        path.write_text(text.replace("OUT", (tmp_path / "o").as_posix()))
        plain = load_campaign(path)
        path.write_text(text.replace("OUT", (tmp_path / "o").as_posix()) + "\n" + report)
        c = load_campaign(path)
        assert c.report and c.config_hash() == plain.config_hash()
        res = runner.invoke(app, ["validate", str(path)])
        assert res.exit_code == 0, res.output
    assert not (tmp_path / "o").exists()


def test_shipped_campaigns_load():
    """Every campaigns/*.toml (with its [report] table) is valid."""
    from paths import CAMPAIGNS
    from sweep.config.validation import is_tune_campaign, read_toml
    from sweep.config.tune_campaign import load_tune_campaign

    for p in sorted(CAMPAIGNS.glob("*.toml")):
        c = (load_tune_campaign if is_tune_campaign(read_toml(p)) else load_campaign)(p)
        assert len(c.config_hash()) == 64, p


def test_npu_messages_name_npu(tmp_path):
    """An npu campaign's findings say "npu" (not "loopnest"); a missing npu file is a finding, not a crash."""
    text = _edit(NPU, 'presets = ["arch1"]', 'presets = ["arch9"]\nfiles = ["nope.toml"]\ncolour = 1')
    path = tmp_path / "c.toml"
    path.write_text(text.replace("OUT", (tmp_path / "o").as_posix()))
    with pytest.raises(CampaignError) as ei:
        load_campaign(path)
    found = {p.key: p.message for p in ei.value.problems}
    assert "for kind 'npu'" in found["architectures.colour"]
    assert found["architectures.presets[0]"].startswith("unknown multi-NPU architecture")
    assert "nope.toml" in found["architectures.files[0]"]
    assert not any("loopnest" in m for m in found.values())
