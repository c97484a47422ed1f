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
    """README's campaign-file keys for ``[architectures]``: the systolic forms (``file``, one
    points file) and the named accelerators of loopnest / npu (``files = [...]``, ``presets``)."""
    from sweep.campaigns.archspace import _ARCH_KEYS, _ARCHSET_KEYS

    text = (REPO / "README.md").read_text()
    section = text.split("\n## Campaign files\n", 1)[1].split("\n## ", 1)[0]
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
