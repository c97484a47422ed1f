"""Every ``--json`` output and every JSON file written is strict RFC 8259 (issue 30, item 3): no
``Infinity`` / ``NaN``, which ``jq``, JavaScript and Go reject; an infinite or missing value is
``null``. Before the fix `sweep map --json` of a layer with no valid mapping printed
``"value": Infinity``. Each document is read by a parser that refuses those constants.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from paths import DATA, REPO
from sweep.cli import app
from sweep.common.ids import canonical_json, finite, stable_hash, strict_json

TINY_NET = DATA / "tiny_net.csv"
#: CoSA with no time to solve: no valid mapping, every figure infinite.
NO_MAPPING = ["--dims", "K=16,C=8,OY=8,OX=8,FY=3,FX=3", "--arch", "eyeriss_like", "--mapper", "cosa",
              "--param", "time_limit_s=0.0"]


def _refuse(constant: str):
    raise ValueError(f"non-standard JSON constant {constant}")


def strict_loads(text: str):
    """``text`` parsed as strict JSON (``NaN``, ``Infinity``, ``-Infinity`` raise)."""
    return json.loads(text, parse_constant=_refuse)


def cli(*args: str) -> str:
    r = CliRunner().invoke(app, list(args), env={"COLUMNS": "250", "RAY_USAGE_STATS_ENABLED": "0"})
    assert r.exit_code == 0, r.output
    return r.stdout


def test_strict_json_writes_null_for_non_finite_numbers():
    doc = {"a": math.inf, "b": [-math.inf, math.nan, 1.5], "c": (np.float64("inf"), np.float32(2.0)),
           "d": {"e": None, "f": "inf", "g": 3, "h": True}, "p": Path("x")}
    assert strict_loads(strict_json(doc)) == {"a": None, "b": [None, None, 1.5], "c": [None, "2.0"],
                                              "d": {"e": None, "f": "inf", "g": 3, "h": True}, "p": "x"}
    assert strict_loads(strict_json({"x": np.float32("inf")}, default=float)) == {"x": None}
    assert finite({"x": [1, 2.5]}) == {"x": [1, 2.5]}


def test_finite_documents_are_written_as_before():
    doc = {"b": [1, 2.5, "s", None, True], "a": {"z": 1e300, "y": (1, 2)}, "p": Path("x"), "n": np.int64(3)}
    assert strict_json(doc, sort_keys=True) == canonical_json(doc)
    doc.pop("p")
    assert strict_json(doc, indent=1, default=float) == json.dumps(doc, indent=1, default=float)


def test_ids_are_unchanged():
    """Hashing is not sanitised: an id of data holding an infinity stays what it was."""
    assert canonical_json({"v": math.inf}) == '{"v": Infinity}'
    assert stable_hash({"v": math.inf}) != stable_hash({"v": None})


def test_map_json_without_a_valid_mapping_is_strict():
    """As a user runs it (a real process, stdout whole): the infinite figures are null."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    p = subprocess.run([sys.executable, "-m", "sweep.cli", "map", *NO_MAPPING, "--json"], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=300)
    doc = strict_loads(p.stdout)
    assert doc["mapper"] == "cosa"
    for key in ("value", "energy_pj", "latency_cycles", "edp"):
        assert key in doc and doc[key] is None, (key, doc.get(key))


@pytest.mark.parametrize("args", [("archs",), ("mappers",), ("networks",), ("mappers", "cosa"),
                                  ("mappers", "salsa"), ("networks", "resnet34")])
def test_list_json_is_strict(args):
    strict_loads(cli("list", *args, "--json"))


CAMPAIGN = """
name = "strict_json"
output = "{out}"
networks = [{{ file = "{net}" }}]
objectives = ["energy"]

[architectures]
kind = "loopnest"
presets = ["eyeriss_like"]

[[mappers]]
name = "cosa"
params = {{ time_limit_s = 0.0 }}

[[mappers]]
name = "random"
params = {{ max_samples = 50 }}
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    from sweep.kinds import load_campaign
    from sweep.engine.runner import run_campaign
    tmp = tmp_path_factory.mktemp("strict")
    p = tmp / "c.toml"
    p.write_text(CAMPAIGN.format(out=(tmp / "out").as_posix(), net=TINY_NET.as_posix()))
    run_campaign(load_campaign(p), executor="local")
    return tmp / "out"


def test_manifest_is_strict(run_dir):
    m = strict_loads((run_dir / "manifest.json").read_text())
    assert m["name"] == "strict_json"


def test_report_json_is_strict(run_dir):
    """The report of a run whose CoSA rows have no valid mapping (infinite values) parses strictly."""
    text = cli("report", str(run_dir), "--json")
    assert "Infinity" not in text and "NaN" not in text
    strict_loads(text)
