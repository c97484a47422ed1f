"""The first `sweep map` in a fresh environment compiles the loop-nest kernel (Numba, 10-20 s) and
says so on stderr (issue 23, defect 8; before the fix it was silent); with the cache warm it says
nothing. NUMBA_CACHE_DIR points Numba's on-disk cache at an empty folder: a cold cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from campaign_util import tiny_loopnest
from sweep.common.notice import COMPILE_NOTICE

ROOT = Path(__file__).resolve().parents[2]
MAP = ["map", "--dims", "K=16,C=8,OY=8,OX=8,FY=3,FX=3", "--arch", "eyeriss_like", "--mapper", "loma",
       "--param", "lpf_limit=4", "--json"]


def _map(cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("DSE_SWEEP_NO_NUMBA", None)
    return subprocess.run([sys.executable, "-m", "sweep.cli", *MAP], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
def test_cold_cache_says_it_compiles_warm_cache_is_quiet(tmp_path):
    pytest.importorskip("numba")
    cold = _map(tmp_path)
    assert cold.returncode == 0, cold.stderr
    assert cold.stderr.count("compiling the cost model once (about 15 s)") == 1, cold.stderr
    assert json.loads(cold.stdout)["mapper"] == "loma"  # never on stdout
    assert any(tmp_path.rglob("*.nbi"))  # the cache was written there
    warm = _map(tmp_path)
    assert warm.returncode == 0, warm.stderr
    assert COMPILE_NOTICE not in warm.stderr and "compiling" not in warm.stderr
    assert json.loads(warm.stdout) == {**json.loads(cold.stdout), "wall_s": json.loads(warm.stdout)["wall_s"]}


@pytest.mark.parametrize("arch", [["--arch", "arch1", "--mapper", "static"],
                                  ["--arch", "deepopt_table3", "--mapper", "deepopt"]])
def test_other_architectures_never_load_the_kernel(tmp_path, arch):
    """The notice's listener is installed for loop-nest accelerators only: `sweep map` on a
    multi-NPU arch or a systolic point imports neither the kernel nor numba (Python's import log)."""
    args = ["map", "--dims", "K=16,C=16,OY=8,OX=8,FY=3,FX=3", *arch, "--json"]
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "sweep.cli", *args], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")}
    assert "sweep.commands.map_eval" in imported
    assert not {"numba", "costmodel.loopnest.kernel"} & imported


@pytest.mark.slow
def test_sweep_run_on_a_cold_cache_says_it_compiles_once(tmp_path):
    """`sweep run` compiles the kernel in the driver's warm-up before the first task: on a cold
    cache it says so once on stderr (before the fix: a progress bar at 0 for 15 s, silent)."""
    pytest.importorskip("numba")
    camp = tmp_path / "c.toml"
    camp.write_text(tiny_loopnest("cold"))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("DSE_SWEEP_NO_NUMBA", None)
    p = subprocess.run([sys.executable, "-m", "sweep.cli", "run", str(camp), "--out", str(tmp_path / "out"),
                        "--executor", "local"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("compiling the cost model once") == 1, p.stderr
