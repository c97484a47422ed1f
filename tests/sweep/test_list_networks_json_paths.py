"""`sweep list networks --json` (the zoo, and each network's layers) names where every network
comes from as its upstream file, never as a path of one machine (absolute) or a path outside the
repository (``../shared/...``): issue 30, item 8."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from sweep.cli import app

runner = CliRunner()


def _json(args: list[str]):
    res = runner.invoke(app, ["list", "networks", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _strings(doc, where="$"):
    """(JSON path, string) of every string in ``doc``."""
    if isinstance(doc, str):
        yield where, doc
    elif isinstance(doc, dict):
        for k, v in doc.items():
            yield from _strings(v, f"{where}.{k}")
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _strings(v, f"{where}[{i}]")


def _local_paths(doc) -> list[str]:
    """Strings of ``doc`` that hold a word starting with ``/`` or ``..`` (an absolute path, a
    path outside the repository)."""
    return [f"{where} = {s!r}" for where, s in _strings(doc)
            if any(w.startswith(("/", "..")) for w in re.split(r"[\s,;()\[\]'\"]+", s))]


ZOO = [row["name"] for row in _json([])]


def test_the_zoo_sources_name_no_local_path():
    rows = _json([])
    assert rows and all(row["source"] for row in rows)
    assert not any(row["source"].startswith(("/", "..")) for row in rows)
    assert not _local_paths(rows)


@pytest.mark.parametrize("name", ZOO)
def test_a_networks_layers_name_no_local_path(name):
    assert not _local_paths(_json([name]))


def test_deepopt_tables_name_the_authors_files():
    sources = {row["name"]: row["source"] for row in _json([])}
    assert "data/ResNet50_Input_File.txt" in sources["resnet50_deepopt"]
    assert "data/GoogleNet_v1_Input_File.txt" in sources["googlenet_v1_deepopt"]
    assert "data/SqueezeNet_v11_Input_File.txt" in sources["squeezenet_v11_deepopt"]
    assert "src/Network_Parameters.m" in sources["alexnet_deepopt"]
    assert "src/Network_Parameters.m" in sources["vgg16_deepopt"]
