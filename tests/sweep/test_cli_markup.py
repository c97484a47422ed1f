"""Text that passes through Rich keeps its square brackets (issue 30, item 4): a mapper doc's
``[spatial]``, a help string's ``[systolic]``, a campaign named or stored under a path with
``[...]`` in it. Rich reads ``[word]`` as markup and drops it; before the fix `sweep validate` of
``c[spatial].toml`` printed ``/tmp/.../c.toml: valid`` and `sweep run` dropped the campaign's
``[spatial]`` from its name.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mappers import MAPPER_NAMES, get_mapper
from sweep.cli import app

ROOT = Path(__file__).resolve().parents[2]
TINY_NET = ROOT / "tests" / "data" / "tiny_net.csv"
ENV = {"COLUMNS": "250", "RAY_USAGE_STATS_ENABLED": "0"}
#: A bracketed word, as TOML tables and Rich tags are written.
BRACKETED = re.compile(r"\[+[A-Za-z_][^\]\s]*\]+")


def invoke(*args: str):
    r = CliRunner().invoke(app, list(args), env=ENV)
    assert r.exit_code == 0, r.output
    return r


@pytest.mark.parametrize("name", MAPPER_NAMES)
def test_list_mapper_keeps_every_bracketed_word(name):
    out = invoke("list", "mappers", name).stdout
    for p in get_mapper(name).params:
        for token in BRACKETED.findall(p.help):
            assert token in out, (name, p.name, token)
    assert "[[mappers]]" in out


def test_map_help_keeps_bracketed_words():
    assert "[systolic]" in invoke("map", "--help").stdout


CAMPAIGN = """
name = "demo [spatial] name"
output = "{out}"
networks = [{{ file = "{net}" }}]
objectives = ["energy"]

[architectures]
kind = "loopnest"
presets = ["eyeriss_like"]

[[mappers]]
name = "random"
params = {{ max_samples = 20 }}
"""


def test_validate_and_run_keep_brackets_in_names_and_paths(tmp_path):
    out = tmp_path / "out [dram]"
    p = tmp_path / "c[spatial].toml"
    p.write_text(CAMPAIGN.format(out=out.as_posix(), net=TINY_NET.as_posix()))
    assert f"{p}: valid" in invoke("validate", str(p)).output
    text = invoke("run", str(p), "--executor", "local").output
    assert "campaign demo [spatial] name:" in text
    assert f"-> {out}" in text


def _commands(cmd, path=()):
    """(path, click command) of every command and subcommand of the CLI."""
    yield path, cmd
    if hasattr(cmd, "commands"):
        for name, sub in cmd.commands.items():
            yield from _commands(sub, (*path, name))


def test_every_help_keeps_its_bracketed_words():
    """Issue 43: `sweep map --help` read "an accelerator whose  allows G" (the option's
    ``[spatial_hint]`` eaten as markup). Every option's bracketed words reach every --help."""
    import typer
    checked = 0
    for path, cmd in _commands(typer.main.get_command(app)):
        tokens = {t for p in cmd.params for t in BRACKETED.findall((getattr(p, "help", None) or "").replace("\\[", "["))}
        if not tokens:
            continue
        out = invoke(*path, "--help").stdout
        for t in tokens:
            assert t in out, (path, t)
            checked += 1
    assert checked >= 3
