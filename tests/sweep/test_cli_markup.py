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
