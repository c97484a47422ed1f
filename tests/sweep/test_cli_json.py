"""Under ``--json`` the whole stdout is one JSON document (issue 23, defect 2), for every mapper
`sweep map` takes and every command with ``--json``, each run as a user runs it: a real
subprocess, whose stdout is read whole (``json.loads``). Before the fix `sweep map --mapper cosa
--json` printed HiGHS's banner ("Running HiGHS 1.x ...", written from C when a process builds its
first solver) before the JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mappers import MAPPER_NAMES, mapper_kind

ROOT = Path(__file__).resolve().parents[2]
TINY_NET = ROOT / "tests" / "data" / "tiny_net.csv"
LOOPNEST = ["--dims", "K=16,C=8,OY=8,OX=8,FY=3,FX=3", "--arch", "eyeriss_like"]
NPU = ["--dims", "K=16,C=16,OY=8,OX=8,FY=3,FX=3", "--arch", "arch1"]
SYSTOLIC = ["--network", "alexnet_deepopt", "--arch", "deepopt_table3"]
#: Small budgets, so each run is about a second.
BUDGET = {"loma": ["lpf_limit=4"], "salsa": ["iterations=50"], "random": ["max_samples=200"],
          "primitive_sa": ["iterations=200"], "hybrid": ["threads=1", "patience=20", "max_evaluations=200"]}
#: The arguments naming an architecture of each mapper kind.
ARCH = {kind: args for kind, args in (("loopnest", LOOPNEST), ("npu", NPU), ("systolic", SYSTOLIC))}


def sweep(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    return subprocess.run([sys.executable, "-m", "sweep.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def only_json(p: subprocess.CompletedProcess):
    """The one JSON document that is the whole of ``p``'s stdout (exit 0)."""
    assert p.returncode == 0, p.stderr
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError as e:
        raise AssertionError(f"stdout is not one JSON document ({e}); it starts {p.stdout[:300]!r}") from None


def test_every_mapper_kind_is_covered():
    assert {mapper_kind(m) for m in MAPPER_NAMES} <= set(ARCH)


@pytest.mark.parametrize("mapper", MAPPER_NAMES)
def test_map_json_is_the_whole_stdout(mapper):
    params = [a for p in BUDGET.get(mapper, []) for a in ("--param", p)]
    doc = only_json(sweep("map", *ARCH[mapper_kind(mapper)], "--mapper", mapper, *params, "--json"))
    assert doc["mapper"] == mapper


def test_map_network_and_eval_json(tmp_path):
    """`sweep map --network` (no --layer) and `sweep eval` of the mapping `sweep map` found: the
    cost `eval` reports is the cost `map` reported for it."""
    whole = only_json(sweep("map", "--network", str(TINY_NET), "--arch", "eyeriss_like", "--mapper", "cosa",
                            "--json"))
    assert [r["layer"] for r in whole["layers"]] == ["conv_a", "conv_b"]
    one = only_json(sweep("map", "--network", str(TINY_NET), "--layer", "conv_a", "--arch", "eyeriss_like",
                          "--mapper", "cosa", "--json"))
    (tmp_path / "m.json").write_text(json.dumps(one["mapping"]))
    rep = only_json(sweep("eval", "--network", str(TINY_NET), "--layer", "conv_a", "--arch", "eyeriss_like",
                          "--mapping", str(tmp_path / "m.json"), "--json"))
    assert rep["energy_pj"] == one["energy_pj"] and rep["latency_cycles"] == one["latency_cycles"]


@pytest.mark.parametrize("args", [["networks"], ["archs"], ["mappers"], ["networks", "--file", str(TINY_NET)]])
def test_list_json(args):
    assert only_json(sweep("list", *args, "--json"))


def test_report_json(tmp_path):
    from campaign_util import write_tiny
    from sweep.engine.runner import run_campaign
    from sweep.kinds import load_campaign
    run_campaign(load_campaign(write_tiny(tmp_path)), executor="local")
    rep = only_json(sweep("report", str(tmp_path / "out"), "--json"))
    assert rep["directory"] == str(tmp_path / "out")


def test_the_guard_sends_what_the_work_prints_to_stderr():
    """Besides silencing HiGHS at the source: whatever a command's work writes to file descriptor
    1 under --json (from C, from Python, from Rich) reaches stderr, and the JSON alone stdout."""
    code = ("import ctypes, os, sys\n"
            "from sweep.cli import _json_only, _echo_json, out\n"
            "with _json_only(True):\n"
            "    ctypes.CDLL(None).printf(b'from C\\n')\n"
            "    os.write(1, b'raw fd 1\\n')\n"
            "    print('from print')\n"
            "    out.print('from rich')\n"
            "    _echo_json({'a': [1, 2]})\n"
            "    print('after the document')\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"a": [1, 2]}
    assert all(s in p.stderr for s in ("from C", "raw fd 1", "from print", "from rich", "after the document"))


def test_highs_is_silent_at_the_source():
    """The CoSA solve itself, outside any CLI guard, prints nothing on stdout."""
    code = ("from sweep.commands.map_eval import load_arch, map_layer, parse_dims\n"
            "map_layer(parse_dims('K=16,C=8,OY=8,OX=8,FY=3,FX=3'), load_arch('eyeriss_like'), 'cosa')\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
