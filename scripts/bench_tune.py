"""Acceptance of issue 6: `sweep tune` on a campaign, the held-out table, and kill-and-resume.

1. ``sweep tune CAMPAIGN --out OUT`` (a fresh directory), timed; then the held-out comparison of
   the tuned vs the default schedule at the same budget (``OUT/heldout.parquet``) as a Markdown
   table: per layer and overall mean relative gap, rate of reaching the exhaustive optimum, mean
   proposals until the optimum (censored at the budget), with the seeds.
2. With ``--kill-trials N``: the same campaign into ``OUT-kill`` (reference optima copied from
   OUT, so only trials run), SIGKILL of the driver's process group once ``--kill-after`` trial
   rows exist, then ``--resume``; checks that the study ends with exactly N finished trials, none
   counted twice, and no RUNNING trial left.

    python scripts/bench_tune.py [--campaign campaigns/tune_salsa_eyeriss.toml] [--out /tmp/tune]
        [--kill-trials 20 --kill-after 6] [--skip-tune]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path


def _sweep(*args) -> list[str]:
    return [sys.executable, "-m", "sweep.cli", *args]


def heldout_markdown(out: Path) -> str:
    import pandas as pd
    from sweep.tune.driver import heldout_summary
    h = heldout_summary(pd.read_parquet(out / "heldout.parquet"))
    d, t = h["default"], h["tuned"]
    lines = [f"seeds {t['seeds'][0]}..{t['seeds'][-1]} ({len(t['seeds'])} per layer and schedule)", "",
             "| layer | default gap % | tuned gap % | default reach | tuned reach | default evals to opt | "
             "tuned evals to opt |", "|---|---:|---:|---:|---:|---:|---:|"]
    for lay in d["layers"]:
        a, b = d["layers"][lay], t["layers"][lay]
        lines.append(f"| {lay} | {100 * a['mean_gap']:.4f} | {100 * b['mean_gap']:.4f} | {100 * a['reach']:.0f} % | "
                     f"{100 * b['reach']:.0f} % | {a['to_opt']:.0f} | {b['to_opt']:.0f} |")
    lines.append(f"| **all** | {100 * d['mean_gap']:.4f} | {100 * t['mean_gap']:.4f} | {100 * d['reach_rate']:.1f} % | "
                 f"{100 * t['reach_rate']:.1f} % | {d['mean_evals_to_optimum']:.0f} | "
                 f"{t['mean_evals_to_optimum']:.0f} |")
    return "\n".join(lines)


def kill_and_resume(campaign: str, out: Path, src: Path, trials: int, after: int) -> str:
    from optuna.trial import TrialState
    from sweep.tune.driver import open_study, read_trials
    from sweep.config.tune_campaign import load_tune_campaign
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for f in ("manifest.json", "references.parquet"):  # same campaign: reuse the reference optima
        shutil.copy(src / f, out / f)
    cmd = _sweep("tune", campaign, "--out", str(out), "--trials", str(trials), "--resume")
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    while proc.poll() is None and len(list((out / "rows").glob("part-*.parquet"))) < after:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = read_trials(out)
    c = load_tune_campaign(campaign, output=out)
    running = sum(t.state == TrialState.RUNNING for t in open_study(c, out).trials)
    t1 = time.perf_counter()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    t2 = time.perf_counter()
    rows = read_trials(out)
    states = [t.state for t in open_study(c, out).trials]
    fin = states.count(TrialState.COMPLETE) + states.count(TrialState.PRUNED)
    ok = (res.returncode == 0 and fin == trials and rows["trial"].is_unique and len(rows) == len(states)
          and TrialState.RUNNING not in states)
    return (f"killed after {t1 - t0:.1f} s with {len(before)} trial rows and {running} RUNNING trial(s) in the "
            f"journal; `--resume` ({t2 - t1:.1f} s, exit {res.returncode}) -> {fin} finished trials "
            f"({states.count(TrialState.COMPLETE)} complete, {states.count(TrialState.PRUNED)} pruned), "
            f"{states.count(TrialState.FAIL)} FAIL (orphans, re-enqueued), {len(rows)} rows, unique trial numbers: "
            f"{rows['trial'].is_unique}; {'OK' if ok else 'FAILED'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaign", default="campaigns/tune_salsa_eyeriss.toml")
    ap.add_argument("--out", default="/tmp/bench_tune")
    ap.add_argument("--kill-trials", type=int, default=0)
    ap.add_argument("--kill-after", type=int, default=6)
    ap.add_argument("--skip-tune", action="store_true", help="reuse OUT (already tuned)")
    args = ap.parse_args()
    out = Path(args.out)
    if not args.skip_tune:
        shutil.rmtree(out, ignore_errors=True)
        t = time.perf_counter()
        res = subprocess.run(_sweep("tune", args.campaign, "--out", str(out)), capture_output=True, text=True,
                             env=dict(os.environ, RAY_USAGE_STATS_ENABLED="0"))
        print(f"sweep tune {args.campaign} --out {out}: exit {res.returncode}, {time.perf_counter() - t:.1f} s wall")
        print("\n".join(l for l in res.stderr.splitlines() if l.startswith(("done", "best", "held-out"))))
        if res.returncode:
            print(res.stderr)
            sys.exit(1)
    print(heldout_markdown(out))
    if args.kill_trials:
        print(kill_and_resume(args.campaign, Path(str(out) + "-kill"), out, args.kill_trials, args.kill_after))


if __name__ == "__main__":
    main()
