"""Benchmark: the whole main campaign (campaigns/area16mm2.toml) after Ray has started.

Starts a local Ray (2 CPUs by default), then times `run_campaign` into a fresh temporary output
directory, and prints points, tasks, rows and seconds. Usage:

    python scripts/bench_area16mm2.py [--num-cpus 2] [--campaign campaigns/area16mm2.toml]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaign", default=str(Path(__file__).parent.parent / "campaigns/area16mm2.toml"))
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--executor", default="ray", choices=["ray", "local"])
    args = ap.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

    from sweep.kinds import load_campaign
    from sweep.engine.runner import run_campaign

    out = Path(tempfile.mkdtemp(prefix="bench_area16_")) / "out"
    c = load_campaign(args.campaign, output=out)
    t_ray = 0.0
    if args.executor == "ray":
        import ray
        t0 = time.perf_counter()
        ray.init(num_cpus=args.num_cpus, include_dashboard=False, configure_logging=False)
        t_ray = time.perf_counter() - t0
    t0 = time.perf_counter()
    s = run_campaign(c, executor=args.executor)
    wall = time.perf_counter() - t0
    print(f"campaign {c.name}: {len(c.architectures):,} points x {len(c.networks)} networks x "
          f"{len(c.objectives)} PMs; {s.tasks_run} tasks, {s.rows_written:,} rows")
    print(f"ray start {t_ray:.1f} s; campaign wall time after Ray started: {wall:.1f} s "
          f"({args.executor}, {args.num_cpus} CPUs)")
    if args.executor == "ray":
        import ray
        ray.shutdown()
    shutil.rmtree(out.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
