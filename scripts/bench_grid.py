"""Designs per core-second of an architecture search over LLM steps: each design mapped alone
(what an Optuna study does, one design per task), the same designs mapped with reuse across
designs (`sweep.engine.design_tasks.mapped_layer`: designs of one mapper view share every layer
mapping), and a whole grid pruned by bound (`sweep.search.grid`) from its finished run.

``--sample``: a seeded sample of ``--views`` mapper views of the campaign's grid, with every design
of each view (so the sample has the grid's designs per view on average), mapped in this process on
one core: first each design alone (the mapping cache cleared before each), then all in one task.
Rows are compared (they must be equal but for the wall time) and both rates printed.

``--run DIR --seconds S [--cores K]``: a finished pruned-grid run (``sweep run`` of a campaign with
``prune = "bound"``, its wall time S on K cores): designs of the grid per core-second, and how many
were mapped and pruned.

    python scripts/bench_grid.py --sample campaigns/llm_llama3_8b.toml --views 8
    python scripts/bench_grid.py --run results/llm_llama3_8b --seconds 3600 --cores 2
    python scripts/bench_grid.py --run results/llm_llama3_8b --seconds 3600 --project campaigns/llm_llama3_8b.toml

``--project CAMPAIGN`` (with ``--run``): the run replayed on paper with larger rounds and more
cores (`project`): what a cluster of 8 or 64 nodes would take, from this run's measured terms.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def _rows(tables) -> list[dict]:
    out = []
    for r in tables.to_pylist():
        r = {k: v for k, v in r.items() if k not in ("task_id", "wall_s")}
        out.append({k: ("nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()})
    return out


def sample(path: str, views: int, seed: int) -> dict:
    """Map a sample of views alone and together (module docstring); the rates and the check."""
    import numpy as np

    import sweep.engine.design_tasks as dt
    from sweep.kinds.archsearch import _views
    from sweep.kinds.load import load_campaign

    c = load_campaign(path)
    sp = c.architectures
    v = np.asarray(_views(c, np.arange(len(sp))))
    chosen = np.random.default_rng(seed).choice(np.unique(v), size=views, replace=False)
    idx = [int(i) for i in np.flatnonzero(np.isin(v, chosen))]
    dt.make_task(c, idx[:1]).run()   # compile the kernels
    alone_rows, t0 = [], time.process_time()
    for i in idx:
        dt._MAPPINGS.clear()
        alone_rows += _rows(dt.make_task(c, [i]).run()["rows"])
    alone = time.process_time() - t0
    dt._MAPPINGS.clear()
    t0 = time.process_time()
    together = dt.make_task(c, idx).run()
    reuse = time.process_time() - t0
    same = _rows(together["rows"]) == alone_rows
    return {"campaign": path, "designs": len(idx), "views": views, "grid_designs": len(sp),
            "grid_views": int(len(np.unique(v))), "alone_cpu_s": alone, "reuse_cpu_s": reuse,
            "alone_designs_per_core_s": len(idx) / alone, "reuse_designs_per_core_s": len(idx) / reuse,
            "speedup": alone / reuse, "rows_equal": same}


def run_dir(directory: str, seconds: float, cores: int) -> dict:
    """The grid's designs per core-second from a finished pruned run."""
    from sweep.engine.store import Store
    t = Store(directory).read("totals")
    by = t.groupby("design_id")["status"].agg(lambda s: "pruned" if (s == "pruned").all() else "mapped")
    n = int(len(by))
    mapped = int((by == "mapped").sum())
    return {"directory": directory, "designs": n, "mapped": mapped, "pruned": n - mapped, "seconds": seconds,
            "cores": cores, "designs_per_core_s": n / (seconds * cores),
            "mapped_per_core_s": mapped / (seconds * cores)}


def project(path: str, directory: str, workers: list[int], round_designs: list[int]) -> dict:
    """What the pruned grid of ``path`` (its finished run in ``directory``) would take on more
    workers, on paper: the rounds replayed on the stored figures for each round size (a design the
    run pruned but a larger round would map has no figure: it is counted mapped, at the mean time of
    a mapped design, and prunes nothing, so the mapped count and the time are upper bounds), each
    task's time the sum of its designs' (a design's: its rows' compute seconds; the first design of
    a view carries the view's mappings, the others reuse them), each round as long as
    max(its tasks' sum / W, its longest task) on W workers, plus the bounds of every design (one
    core). The driver's own work per round (in the run's summary: 0.14 s a round on the bundled
    grid) and Ray's per-task cost (milliseconds) are left out."""
    import numpy as np

    from sweep.engine.store import Store
    from sweep.kinds.load import load_campaign
    from sweep.search.bounds import design_bounds, dominated, priority_order
    from sweep.search.grid import _tasks, mapped_figures

    c = load_campaign(path)
    sp = c.architectures
    t0 = time.perf_counter()
    b = design_bounds(c)
    bounds_s = time.perf_counter() - t0
    tot = Store(directory).read("totals")
    by = {d: g.to_dict("records") for d, g in tot.groupby("design_id")}
    ids = [sp.design_id(sp.point(i)) for i in range(len(sp))]
    ran = np.array([any(r["status"] != "pruned" for r in by.get(d, [])) for d in ids])
    fig = np.array([mapped_figures(by[d], b.dims, list(c.networks), c.workload) if m else [np.nan] * len(b.dims)
                    for d, m in zip(ids, ran)])
    rows = Store(directory).read("rows")
    # a layer shared by a design's steps is mapped once and its row figures (wall_s included) copied
    ran_rows = rows[rows["status"] != "pruned"].drop_duplicates(["design_id", "wall_s"])
    spent = ran_rows.groupby("design_id")["wall_s"].sum()
    cost = np.array([float(spent.get(d, 0.0)) for d in ids])
    mean_mapped = float(cost[ran & (cost > 0.01)].mean())
    order = priority_order(b)
    out = {"bounds_s": bounds_s, "designs_run": int(ran.sum()), "compute_s": float(cost.sum()), "sizes": {}}
    for size in round_designs:
        mapped = np.zeros(len(ids), dtype=bool)
        rounds = []
        for start in range(0, len(order), size):
            idx = order[start:start + size]
            m = np.flatnonzero(mapped)
            beat = dominated(b.lower[idx], b.area[idx], fig[m], b.area[m])
            keep = [int(i) for i, x in zip(idx, beat) if not x]
            mapped[keep] = True
            rounds.append([sum(cost[i] if ran[i] else mean_mapped for i in t) for t in _tasks(c, keep, b.views)])
        est = {w: bounds_s + sum(max(sum(r) / w, max(r)) for r in rounds if r) for w in workers}
        out["sizes"][size] = {"mapped_at_most": int(mapped.sum()), "rounds": len(rounds), "hours": {
            w: s / 3600 for w, s in est.items()}}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", metavar="CAMPAIGN")
    ap.add_argument("--views", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--run", metavar="DIR")
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--project", metavar="CAMPAIGN", help="with --run: the time on more workers, on paper")
    ap.add_argument("--workers", default="2,16,128,512", help="worker counts (cores) to project to")
    ap.add_argument("--round-designs", default="24,96,384,1536", help="designs per round to replay")
    ap.add_argument("--json", metavar="FILE")
    a = ap.parse_args()
    out = {}
    if a.sample:
        s = out["sample"] = sample(a.sample, a.views, a.seed)
        print(f"| designs (views) | alone: designs / core-s | with reuse | speed-up | rows equal |\n|---|---:|---:|---:|---|\n"
              f"| {s['designs']} ({s['views']}; grid {s['grid_designs']:,} in {s['grid_views']:,} views) | "
              f"{s['alone_designs_per_core_s']:.3f} | {s['reuse_designs_per_core_s']:.3f} | {s['speedup']:.2f}x | "
              f"{s['rows_equal']} |")
    if a.run:
        if a.seconds is None:
            ap.error("--run needs --seconds (the run's wall time)")
        r = out["run"] = run_dir(a.run, a.seconds, a.cores)
        print(f"| designs | mapped | pruned | wall s x cores | designs / core-s |\n|---:|---:|---:|---:|---:|\n"
              f"| {r['designs']:,} | {r['mapped']:,} | {r['pruned']:,} | {r['seconds']:.0f} x {r['cores']} | "
              f"{r['designs_per_core_s']:.3f} |")
    if a.project:
        if not a.run:
            ap.error("--project needs --run DIR (the finished pruned run)")
        ws = [int(x) for x in a.workers.split(",")]
        p = out["project"] = project(a.project, a.run, ws, [int(x) for x in a.round_designs.split(",")])
        print(f"bounds {p['bounds_s']:.1f} s (one core); {p['designs_run']:,} designs run, {p['compute_s']:,.0f} s of "
              "their rows' compute")
        print("| designs per round | rounds | mapped (at most) | " + " | ".join(f"{w} cores, h" for w in ws) + " |")
        print("|---:|---:|---:|" + "---:|" * len(ws))
        for size, r in p["sizes"].items():
            print(f"| {size:,} | {r['rounds']:,} | {r['mapped_at_most']:,} | "
                  + " | ".join(f"{r['hours'][w]:.2f}" for w in ws) + " |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
