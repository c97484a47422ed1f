"""Scale benchmark of the engine: a synthetic campaign of 100,000+ tiny tasks on 1, 2 and 4 Ray
worker processes (a local Ray with ``num_cpus`` = 1, 2, 4), one fresh driver process per run.

Per run: tasks/s and rows/s (over the whole run, Ray start excluded), the driver's peak RSS
(``resource.getrusage``, MiB; Ray's workers and raylet not included), the Parquet files written,
and where the driver's time went (`sweep.engine.runner.RunSummary.timings`: expansion, submission,
waiting, fetching/deserialising, writing; plus compute = task run time summed over workers).
Prints a Markdown table and writes it with the raw JSON next to the campaign.

    python scripts/bench_scale.py [--tasks 100000] [--units-per-task 1] [--cpus 1 2 4]
        [--dir /tmp/bench_scale]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from synthetic_campaign import write_campaign  # noqa: E402

CHILD = r"""
import json, resource, sys, time
from sweep.kinds import load_campaign
from sweep.engine.runner import run_campaign
from sweep.engine.store import Store
c = load_campaign(sys.argv[1])
s = run_campaign(c, executor="ray")
files = sum(1 for p in c.output.rglob("*.parquet"))
print(json.dumps({"tasks": s.tasks_run, "rows": s.rows_written, "failed": s.tasks_failed,
                  "seconds": s.seconds, "executor_start_s": s.executor_start_s,
                  "fragments": s.fragments, "parquet_files": files, "timings": s.timings,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "stored_ok": len(Store(c.output).stored_task_ids()) == s.tasks_run}))
"""


def run_one(directory: Path, tasks: int, cpus: int, units_per_task: int) -> dict:
    d = directory / f"cpus{cpus}"
    shutil.rmtree(d, ignore_errors=True)
    toml = write_campaign(d, tasks, units_per_task=units_per_task, num_cpus=cpus)
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    res = subprocess.run([sys.executable, "-c", CHILD, str(toml)], env=env, capture_output=True,
                         text=True, timeout=3600)
    if res.returncode != 0:
        raise SystemExit(f"run with {cpus} CPU(s) failed:\n{res.stderr[-3000:]}")
    r = json.loads(res.stdout.strip().splitlines()[-1])
    r["cpus"] = cpus
    return r


def markdown(results: list[dict], load: str) -> str:
    lines = [f"load average before the runs: {load}", "",
             "| worker processes | tasks | rows | run s | tasks/s | rows/s | driver peak RSS MiB | "
             "Parquet files | count s | expand s | submit s | wait s | get s | write s | compute s (sum) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        t = r["timings"]
        run_s = r["seconds"] - r["executor_start_s"]
        lines.append(f"| {r['cpus']} | {r['tasks']:,} | {r['rows']:,} | {run_s:.1f} | {r['tasks'] / run_s:,.0f} | "
                     f"{r['rows'] / run_s:,.0f} | {r['peak_rss_mib']:.0f} | {r['parquet_files']} | "
                     f"{t.get('count_s', 0):.1f} | {t['expand_s']:.1f} | {t['submit_s'] - t['expand_s']:.1f} | {t['wait_s']:.1f} | "
                     f"{t['get_s']:.1f} | {t['write_s']:.1f} | {t['compute_s']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=100_000)
    ap.add_argument("--units-per-task", type=int, default=1)
    ap.add_argument("--cpus", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/bench_scale"))
    a = ap.parse_args()
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    results = []
    for cpus in a.cpus:
        r = run_one(a.dir, a.tasks, cpus, a.units_per_task)
        print(json.dumps(r), flush=True)
        results.append(r)
    md = markdown(results, load) + f"\n\nload average after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}; " \
        f"{os.cpu_count()} cores (4 workers on 2 cores is oversubscribed)"
    print(md)
    (a.dir / "results.md").write_text(md + "\n")
    (a.dir / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
