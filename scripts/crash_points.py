"""Crash a run, a resume and a compaction at every file-system operation of a small campaign, and
check that the next command leaves the rows of an undisturbed run.

Each command runs in its own process with `sweep.engine.store.fsops.HOOK` counting the store's
operations (write, the middle of a write, fsync, rename, unlink, mkdir) and ending the process with
``os._exit`` (as SIGKILL or a power cut would: no cleanup, no buffers flushed by Python) at the
N-th; ``--mode enospc`` raises "No space left on device" there instead. Then the next command runs
undisturbed (``sweep run --resume`` after a run or a resume, ``sweep report`` and then ``sweep
compact`` after a compaction), and every table of the directory is compared, as a multiset of rows
over every column but the measured timings, with an undisturbed run's, both as
``pandas.read_parquet(DIR/<table>)`` reads it and as the store does (`same_tables`).

    python scripts/crash_points.py [--scenario run|resume|compact|all] [--mode kill|enospc]
        [--every K] [--dir /tmp/crash_points]

prints one line per point and a summary (points, outcomes); exit 1 if any point differs.
tests/sweep/engine/test_crash_points.py runs a sample of the points.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from synthetic_campaign import write_campaign  # noqa: E402

#: Columns that measure the run (seconds), not its results.
MEASURED = ("wall_s", "solver_s", "table_build_s", "sim_s")

#: The process a crash point runs: argv = [N, mode, count file, sweep arguments...].
BOOT = r"""
import errno, os, sys
from sweep.engine.store import fsops
n, mode, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
seen = [0]
def hook(op, path):
    seen[0] += 1
    if seen[0] == n:
        if mode == "kill":
            os._exit(137)
        raise OSError(errno.ENOSPC, "No space left on device", str(path))
fsops.HOOK = hook
import atexit
atexit.register(lambda: open(log, "w").write(str(seen[0])))
sys.argv = ["sweep"] + sys.argv[4:]
import sweep
sweep.main()
"""


def env() -> dict[str, str]:
    e = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", DSE_SWEEP_NO_BROWSER="1")
    e.pop("RAY_ADDRESS", None)
    return e


def sweep_at(n: int, args: list[str], work: Path, mode: str = "kill") -> tuple[int, int | None, str]:
    """``sweep ARGS`` crashed at its ``n``-th store operation (0: never). Returns (exit code,
    operations counted if it ended by itself, else None; stderr's tail)."""
    log = work / "ops.count"
    log.unlink(missing_ok=True)
    p = subprocess.run([sys.executable, "-c", BOOT, str(n), mode, str(log), *args], env=env(),
                       capture_output=True, text=True, timeout=300)
    ops = int(log.read_text()) if log.exists() else None
    return p.returncode, ops, p.stderr[-1500:]


def tables_of(d: Path, plain: bool) -> dict:
    """Every table of result directory ``d`` as a sorted DataFrame of strings, measured columns
    dropped: read by pandas from the folder (``plain``) or by the store."""
    import pandas as pd

    from sweep.engine.store import Store
    out = {}
    for t in sorted(p.name for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")):
        df = pd.read_parquet(d / t) if plain else Store(d).read(t)
        df = df.drop(columns=[c for c in MEASURED if c in df]).astype(str)
        out[t] = df[sorted(df.columns)].sort_values(sorted(df.columns)).reset_index(drop=True)
    return out


def same_tables(a: Path, b: Path) -> str:
    """"" if directories ``a`` and ``b`` hold the same rows in every table for both readers, else
    what differs."""
    import pandas as pd
    for plain in (True, False):
        x, y = tables_of(a, plain), tables_of(b, plain)
        who = "pandas.read_parquet" if plain else "the store"
        if set(x) != set(y):
            return f"{who}: tables {sorted(x)} vs {sorted(y)}"
        for t in x:
            try:
                pd.testing.assert_frame_equal(x[t], y[t])
            except AssertionError as e:
                return f"{who}: {t}: {len(x[t])} rows vs {len(y[t])}: {str(e).splitlines()[0:3]}"
    return ""


@dataclass
class Bench:
    """A small campaign (6 tasks, a batch each: ``rows`` and ``problems`` fragments), its undisturbed
    result, a half-done directory (for resumes) and a complete one of 6 + 6 fragments (for
    compactions)."""

    work: Path
    campaign: Path
    reference: Path
    half: Path
    full: Path

    def run_args(self, out: Path, resume: bool = False) -> list[str]:
        return ["run", str(self.campaign), "--executor", "local", "--out", str(out)] + (["--resume"] if resume else [])


def bench(work: Path, tasks: int = 6) -> Bench:
    """Write the campaign and its reference directories under ``work`` (removed first)."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    camp = write_campaign(work / "campaign", tasks, layers=tasks, samples=8, flush_rows=1)
    b = Bench(work, camp, work / "reference", work / "half", work / "full")
    for d in (b.reference, b.full):
        rc, ops, err = sweep_at(0, b.run_args(d), work)
        assert rc == 0, err
    rc, ops, _ = sweep_at(0, b.run_args(work / "count"), work)
    shutil.rmtree(work / "count")
    rc, _, err = sweep_at(ops // 2, b.run_args(b.half), work)   # killed halfway through its commits
    assert rc == 137 and (b.half / "manifest.json").exists(), err
    return b


def points(b: Bench, scenario: str) -> int:
    """How many store operations the scenario's disturbed command makes when undisturbed."""
    d = b.work / f"count-{scenario}"
    shutil.rmtree(d, ignore_errors=True)
    args = _prepare(b, scenario, d)
    rc, ops, err = sweep_at(0, args, b.work)
    assert rc == 0 and ops, err
    shutil.rmtree(d)
    return ops


def _prepare(b: Bench, scenario: str, d: Path) -> list[str]:
    """Make ``d`` the scenario's starting directory; the disturbed command's arguments."""
    if scenario == "run":
        return b.run_args(d)
    if scenario == "resume":
        shutil.copytree(b.half, d, symlinks=True)
        return b.run_args(d, resume=True)
    shutil.copytree(b.full, d, symlinks=True)
    return ["compact", str(d)]


def crash_once(b: Bench, scenario: str, n: int, mode: str = "kill") -> tuple[str, str]:
    """Crash the scenario's command at operation ``n``, run the next command, compare. Returns
    (outcome, "" or what differs): outcome "crashed" (killed there), "failed" (the injected error
    ended it with exit 1), "finished" (n beyond its operations)."""
    d = b.work / f"{scenario}-{mode}-{n}"
    shutil.rmtree(d, ignore_errors=True)
    args = _prepare(b, scenario, d)
    rc, ops, err = sweep_at(n, args, b.work, mode)
    outcome = "crashed" if rc == 137 else "failed" if rc == 1 else "finished" if rc == 0 else f"exit {rc}"
    if outcome.startswith("exit"):
        return outcome, err
    if mode == "enospc" and rc == 1 and "No space left on device" not in err:
        return outcome, f"no one-line cause: {err[-300:]}"
    nxt = [["report", str(d)], ["compact", str(d)]] if scenario == "compact" else [b.run_args(d, resume=True)]
    for args in nxt:
        rc2, _, err2 = sweep_at(0, args, b.work)
        if rc2 != 0:
            return outcome, f"next command {args[0]} exit {rc2}: {err2[-600:]}"
    diff = same_tables(d, b.reference)
    if not diff:
        shutil.rmtree(d)
    return outcome, diff


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", choices=("run", "resume", "compact", "all"), default="all")
    ap.add_argument("--mode", choices=("kill", "enospc"), default="kill")
    ap.add_argument("--every", type=int, default=1, help="test every K-th point (default: all)")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/crash_points"))
    a = ap.parse_args(argv)
    b = bench(a.dir)
    bad, counts = 0, {}
    for sc in (("run", "resume", "compact") if a.scenario == "all" else (a.scenario,)):
        total = points(b, sc)
        for n in range(1, total + 1, a.every):
            outcome, diff = crash_once(b, sc, n, a.mode)
            counts[(sc, outcome, bool(diff))] = counts.get((sc, outcome, bool(diff)), 0) + 1
            bad += bool(diff)
            print(f"{sc} {a.mode} at op {n}/{total}: {outcome}, {'DIFFERS: ' + diff if diff else 'identical rows'}",
                  flush=True)
    for (sc, outcome, differs), k in sorted(counts.items()):
        print(f"{sc}: {k} point(s) {outcome}, {'DIFFERENT' if differs else 'identical'}")
    print(f"{sum(counts.values())} points, {bad} with different rows")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
