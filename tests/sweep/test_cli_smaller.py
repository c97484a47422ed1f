"""Smaller things a user meets (issue 30, item 8): README's ``[architectures]`` keys are the
parser's, `sweep run --out` on a folder that is not a result directory fails before any progress
output, `sweep list networks --json` names no path outside the repository, and `sweep validate`
says roughly how long the run will take.

Bad input: exit 2, one line naming the option and the value, nothing written.
"""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from paths import DATA, REPO
from sweep.cli import app

runner = CliRunner()
NET = (DATA / "tiny_net.csv").as_posix()

LOOPS = f"""name = "smaller"
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


def _snapshot(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


# -- README: the [architectures] keys of every kind -----------------------------------------------

def test_readme_names_the_architectures_keys_the_parser_takes():
    """The campaign-file keys for ``[architectures]`` (docs/campaigns.md, once the README's): the systolic forms (``file``, one
    points file) and the named accelerators of loopnest / npu (``files = [...]``, ``presets``)."""
    from sweep.config.archspace import _ARCH_KEYS, _ARCHSET_KEYS

    text = (REPO / "docs" / "campaigns.md").read_text()   # the README's campaign-file text moved there
    section = text.split("# Campaign files\n", 1)[1].split("\n## ", 1)[0]
    arch = section.split("`[architectures]`", 1)[1].split("`[[mappers]]`", 1)[0]
    named = set(re.findall(r"`\[?(?:architectures\.)?(\w+)", arch))
    assert (_ARCH_KEYS | _ARCHSET_KEYS) <= named, sorted((_ARCH_KEYS | _ARCHSET_KEYS) - named)


def test_loopnest_campaign_takes_files_as_the_readme_says(tmp_path):
    acc = tmp_path / "acc.toml"
    from costmodel.loopnest.arch import load_accelerator
    from costmodel.importers.toml_out import write

    write(acc, load_accelerator("eyeriss_like").to_dict())
    text = LOOPS.replace('presets = ["eyeriss_like"]', 'files = ["acc.toml"]').replace("{tmp}", tmp_path.as_posix())
    (tmp_path / "c.toml").write_text(text)
    res = runner.invoke(app, ["validate", str(tmp_path / "c.toml")])
    assert res.exit_code == 0 and "1 accelerator(s)" in res.output, res.output


# -- sweep run --out DIR: a non-empty folder that is not a result directory -----------------------

def test_run_into_a_foreign_folder_fails_before_any_progress(tmp_path):
    (tmp_path / "c.toml").write_text(LOOPS.replace("{tmp}", tmp_path.as_posix()))
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("mine\n")
    before = _snapshot(tmp_path)
    res = runner.invoke(app, ["run", str(tmp_path / "c.toml"), "--out", str(notes), "--executor", "local"],
                        env={"COLUMNS": "80"})
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1, res.output          # no banner, no progress bar: the error alone
    msg = lines[0]
    assert msg.startswith(f"error: {notes}: ") and "not a dse-sweep result directory" in msg, msg
    assert "empty or new folder" in msg and "--out" in msg and "--resume" in msg, msg
    assert _snapshot(tmp_path) == before and not (tmp_path / "out").exists()


# -- sweep validate: roughly how long the run will take ---------------------------------------------

RUN_TIME = re.compile(r"^  run time: (under 1 min|about \d+ min|about [\d.]+ h) on (\d+) CPU\(s\) \(estimate: "
                      r"[\d,]+ task\(s\), [\d,.]+ CPU-min(; [^;]+)?; unit costs measured by scripts/bench_estimate.py\)$",
                      re.M)


def _campaign(tmp_path: Path, text: str):
    from sweep.kinds import load_any

    (tmp_path / "c.toml").write_text(text.replace("{tmp}", tmp_path.as_posix()))
    return load_any(tmp_path / "c.toml")


def test_validate_says_roughly_how_long_on_how_many_cpus(tmp_path):
    (tmp_path / "c.toml").write_text(LOOPS.replace("{tmp}", tmp_path.as_posix()) + "[run]\nnum_cpus = 3\n")
    res = runner.invoke(app, ["validate", str(tmp_path / "c.toml")])
    assert res.exit_code == 0, res.output
    m = RUN_TIME.search(res.output)
    assert m and m[2] == "3", res.output
    assert not (tmp_path / "out").exists()


def test_the_estimate_grows_with_the_budget_and_shrinks_with_the_cpus(tmp_path):
    one_per_task = LOOPS + "[run]\nunits_per_task = 1\n"   # 2 tasks: one per layer
    kind, small = _campaign(tmp_path, one_per_task)
    _, big = _campaign(tmp_path, one_per_task.replace("patience = 20", "patience = 20000"))
    a, b = kind.estimate(small), kind.estimate(big)
    assert a.tasks == b.tasks == kind.count(small) == 2 and not a.missing
    assert b.seconds > 10 * a.seconds
    assert b.wall_s(1) > b.wall_s(2) >= b.longest_s


def test_the_estimate_is_within_a_factor_of_the_measured_time(tmp_path):
    """SALSA on ResNet-18 (2 chains x 2,000 proposals per layer): the estimated seconds of the tasks'
    units against the units' measured wall times, in-process (a factor 5 either way: machines and
    their load differ, an order of magnitude is a wrong model)."""
    import pandas as pd

    from sweep import api
    from sweep.kinds.estimate import TASK_S

    text = LOOPS.replace(f'networks = [{{ file = "{NET}" }}]', 'networks = ["resnet18"]').replace(
        'name = "random"\nparams = { patience = 20 }',
        'name = "salsa"\nparams = { engine = "sa", chains = 2, iterations = 2000, descent = false }')
    kind, c = _campaign(tmp_path, text)
    est = kind.estimate(c)
    api.run_campaign(c, executor="local")
    measured = pd.read_parquet(tmp_path / "out" / "rows")["wall_s"].sum()
    estimated = est.seconds - est.tasks * TASK_S
    assert measured / 5 < estimated < measured * 5, (estimated, measured)


def test_architecture_search_and_systolic_campaigns_say_it_too():
    for name in ("archsearch_eyeriss.toml", "archsearch_eyeriss_nsga2.toml", "area16mm2.toml", "flexer_multinpu.toml"):
        res = runner.invoke(app, ["validate", str(REPO / "campaigns" / name)])
        assert res.exit_code == 0 and RUN_TIME.search(res.output), (name, res.output)


def test_systolic_estimate_counts_the_points_the_tasks_hold():
    """Counted without building the tasks, the same work as the tasks hold (points x layers)."""
    from sweep.kinds import load_any
    from sweep.kinds.estimate import TASK_S, unit_seconds

    kind, c = load_any(REPO / "campaigns" / "area16mm2.toml")
    est = kind.estimate(c)
    tasks = list(kind.expand(c))
    assert est.tasks == len(tasks) == kind.count(c)
    expected = sum(unit_seconds(t.mapper, t.problem.params, t.unit, t.problem.instance) + TASK_S for t in tasks)
    assert abs(est.seconds - expected) < 1e-9 * expected


def test_what_has_no_estimate_is_named(tmp_path, monkeypatch):
    from sweep.kinds import estimate

    monkeypatch.delitem(estimate.COSTS, "random")
    (tmp_path / "c.toml").write_text(LOOPS.replace("{tmp}", tmp_path.as_posix()))
    res = runner.invoke(app, ["validate", str(tmp_path / "c.toml")])
    assert res.exit_code == 0 and "  run time: no estimate for mapper random (no cost model)" in res.output, res.output
    res = runner.invoke(app, ["validate", str(REPO / "campaigns" / "tune_salsa_eyeriss.toml")])
    assert res.exit_code == 0 and "run time: no estimate for kind tune" in res.output, res.output
