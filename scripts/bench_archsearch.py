"""Benchmarks of architecture search on the loop-nest model (issue 14).

Three measurements, each printing a Markdown table (``--json F`` also writes the numbers):

``--timing DIR``: where the time of a finished grid run went (``sweep run
campaigns/archsearch_eyeriss.toml``, timed by the caller): designs, layer mappings and their
compute seconds from the stored rows; with ``--wall S`` (the run's wall time) designs/s and
mappings/s overall.

``--scaling CAMPAIGN [--designs 96]``: the same campaign on a seeded random sample of designs,
once on a local Ray with 1 CPU and once with 2: wall time without Ray's start, and the speed-up.

``--quality DIR [--seeds 5] [--fraction 0.2]``: search quality against the grid's best design.
The grid run's stored totals are the objective (a design's value is the geometric mean over the
networks of its EDP, `sweep.search.driver.design_value`), so no layer is mapped again: TPE and
NSGA-II (the samplers and the round structure of `sweep.search.driver`: ``batch`` trials asked,
then told; invalid points told infeasible) and uniform random sampling each get
``fraction x designs`` distinct valid designs (points outside the space and repeats are free:
they map nothing); reported per sampler over the seeds: the gap of the best EDP found to the
grid's best, how many runs came within 2 %, and the distinct designs evaluated.

``--projection [--designs 100000]``: a synthetic architecture search of about 100,000 designs
(an eyeriss_like grid of array shapes and global-buffer sizes, one tiny layer, the Timeloop-like
``random`` mapper with 8 samples) run on a local Ray with 2 CPUs: the driver's own cost per
design (validation and expansion, task ids, Ray submission and result fetching, Parquet writes:
the driver's busy seconds) and the designs/s it can feed, from which a cluster run of the real
campaign (``--real DIR``: its stored CPU-s per design) is projected as max(designs x CPU-s per
design / workers, designs / driver rate).

    python scripts/bench_archsearch.py --timing results/archsearch_eyeriss --wall 612
    python scripts/bench_archsearch.py --scaling campaigns/archsearch_eyeriss.toml --designs 96
    python scripts/bench_archsearch.py --quality results/archsearch_eyeriss --seeds 5
    python scripts/bench_archsearch.py --projection --designs 100000
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def timing(directory: Path, wall: float | None) -> dict:
    from sweep.engine.store import Store
    st = Store(directory)
    rows, totals = st.read("rows"), st.read("totals")
    designs = totals["design_id"].nunique()
    mapped = rows.drop_duplicates(["design_id", "layer"])   # a layer shared by networks maps once
    out = {"designs": int(designs), "layer_mappings": int(len(mapped)),
           "compute_s": float(mapped["wall_s"].sum()), "evaluations": int(mapped["evaluations"].sum())}
    out["compute_s_per_design"] = out["compute_s"] / designs
    out["ms_per_mapping"] = 1e3 * out["compute_s"] / out["layer_mappings"]
    if wall:
        out.update(wall_s=wall, designs_per_s=designs / wall, mappings_per_s=out["layer_mappings"] / wall)
    return out


def scaling(campaign: Path, designs: int) -> dict:
    import tomllib
    from sweep.kinds import parse_campaign
    from sweep.engine.runner import run_campaign
    data = tomllib.loads(campaign.read_text())
    data["search"] = {"sampler": "random", "trials": designs, "seed": 0, "objectives": ["edp"]}
    out = {"designs": designs}
    for cpus in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            data["run"] = dict(data.get("run", {}), num_cpus=cpus)
            c = parse_campaign(data, source=str(campaign), base_dir=campaign.parent, output=Path(tmp) / "out")
            s = run_campaign(c, executor="ray")
            out[f"cpus{cpus}_s"] = s.seconds - s.executor_start_s
            out[f"cpus{cpus}_ray_start_s"] = s.executor_start_s
    out["speedup"] = out["cpus1_s"] / out["cpus2_s"]
    return out


def _lookup(directory: Path):
    """The grid run's campaign (design space) and design_id -> per-network totals."""
    from sweep.kinds import load_campaign
    from sweep.engine.store import Store
    c = load_campaign(Store(directory).manifest()["source"])   # design ids do not depend on the order
    known: dict[str, list[dict]] = {}
    for rec in Store(directory).read("totals").to_dict("records"):
        known.setdefault(rec["design_id"], []).append(rec)
    return c, known


def _search(c, known, sampler: str, seed: int, trials: int, batch: int, target: float = math.inf) -> tuple[float, int, int | None]:
    """One search over the stored totals: (best EDP value found, distinct designs evaluated,
    distinct designs evaluated when the best first reached ``target`` or None).

    The budget ``trials`` counts distinct valid designs evaluated (each costs a design's layer
    mappings); points outside the space and repeats cost nothing and do not count, up to
    10 x ``trials`` asked points."""
    from dataclasses import replace

    import optuna

    from sweep.search.driver import design_value, make_sampler, suggest, tell
    space = c.architectures
    best, seen, reached = math.inf, set(), None

    def record(i: int) -> None:
        """Design ``i`` evaluated: count it, keep the best EDP and when it first reached ``target``."""
        nonlocal best, reached
        did = space.design_id(space.point(i))
        seen.add(did)
        best = min(best, design_value(known[did], "edp"))
        if reached is None and best <= target:
            reached = len(seen)
    if sampler == "random":
        rng = np.random.default_rng(seed)
        for _ in range(10 * trials):
            if len(seen) >= trials:
                break
            p = [axis[rng.integers(len(axis))] for axis in (space.axes[n] for n in space.names)]
            i = space.index_of(p)
            if i is not None:
                record(i)
        return best, len(seen), reached
    objectives = ("edp",) if sampler == "tpe" else ("edp", "area_mm2")
    spec = replace(c.search, sampler=sampler, seed=seed, batch=batch, objectives=objectives)
    study = optuna.create_study(sampler=make_sampler(spec, seed), directions=["minimize"] * len(objectives))
    done = 0
    while len(seen) < trials and done < 10 * trials:
        ts = [study.ask() for _ in range(min(batch, trials - len(seen)))]
        idx = [space.index_of(suggest(t, space)) for t in ts]
        for t, i in zip(ts, idx):
            tell(study, t, space, known, i, objectives)
            if i is not None:
                record(i)
        done += len(ts)
    return best, len(seen), reached


def quality(directory: Path, seeds: int, fraction: float, batch: int = 4) -> dict:
    from sweep.search.driver import design_value
    c, known = _lookup(directory)
    n = len(c.architectures)
    grid_best = min(design_value(v, "edp") for v in known.values())
    trials = int(fraction * n)
    out = {"designs": n, "budget_designs": trials, "grid_best_edp": grid_best, "samplers": {}}
    for sampler in ("tpe", "nsga2", "random"):
        runs = []
        for seed in range(seeds):
            t0 = time.perf_counter()
            best, seen, reached = _search(c, known, sampler, seed, trials, batch, 1.02 * grid_best)
            runs.append({"seed": seed, "gap_pct": 100 * (best / grid_best - 1), "designs": seen,
                         "designs_to_2pct": reached, "seconds": time.perf_counter() - t0})
        gaps = [r["gap_pct"] for r in runs]
        to2 = [r["designs_to_2pct"] for r in runs if r["designs_to_2pct"] is not None]
        out["samplers"][sampler] = {"runs": runs, "within_2pct": sum(g <= 2 for g in gaps),
                                    "median_designs_to_2pct": float(np.median(to2)) if to2 else None,
                                    "mean_gap_pct": float(np.mean(gaps)), "max_gap_pct": float(np.max(gaps)),
                                    "max_designs": max(r["designs"] for r in runs)}
    return out


SYNTH = """
name = "archsearch_synthetic"
networks = [{{file = "{net}"}}]
objectives = ["energy"]
[architectures]
kind = "loopnest"
template = "eyeriss_like"
[architectures.grid]
array.D1 = {{start = 1, stop = {d1}, step = 1}}
array.D2 = {{start = 3, stop = 42, step = 1}}
memory.sram_1M.size_kib = {{start = 64, stop = 1013, step = 19}}
[[mappers]]
name = "random"
params = {{patience = 8, max_samples = 8, batch = 8}}
[run]
designs_per_task = 50
num_cpus = 2
"""


def projection(designs: int, real: dict | None) -> dict:
    from sweep.kinds import load_campaign
    from sweep.engine.runner import run_campaign
    with tempfile.TemporaryDirectory() as tmp:
        net = Path(tmp) / "one.csv"
        net.write_text("name,K,C,OY,OX,FY,FX,B,G,SY,SX,PY,PX,kind,repeat\nl0,4,4,4,4,1,1,1,1,1,1,0,0,conv,1\n")
        d1 = max(1, round(designs / (40 * 50)))
        p = Path(tmp) / "synth.toml"
        p.write_text(SYNTH.format(net=net.as_posix(), d1=d1))
        t0 = time.perf_counter()
        c = load_campaign(p, output=Path(tmp) / "out")
        expand_s = time.perf_counter() - t0
        s = run_campaign(c, executor="ray")
        n = len(c.architectures)
        run_s = s.seconds - s.executor_start_s
        compute = s.timings.get("compute_s", 0.0)
    t = s.timings
    driver_s = expand_s + sum(t.get(k, 0.0) for k in ("expand_s", "submit_s", "get_s", "write_s", "compact_s"))
    out = {"designs": n, "validate_s": expand_s, "run_s": run_s, "ray_start_s": s.executor_start_s,
           "compute_s": compute, "driver_busy_s": driver_s, "driver_designs_per_s": n / driver_s,
           "timings": t}
    if real:
        per = real["compute_s_per_design"]
        for workers in (64, 256, 1024):
            out[f"projected_100k_on_{workers}_cpus_s"] = max(1e5 * per / workers, 1e5 / out["driver_designs_per_s"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timing", type=Path)
    ap.add_argument("--wall", type=float)
    ap.add_argument("--scaling", type=Path)
    ap.add_argument("--quality", type=Path)
    ap.add_argument("--projection", action="store_true")
    ap.add_argument("--designs", type=int)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--fraction", type=float, default=0.2)
    ap.add_argument("--real", type=Path, help="grid result dir whose per-design compute feeds the projection")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    res = {}
    if a.timing:
        res["timing"] = timing(a.timing, a.wall)
    if a.scaling:
        res["scaling"] = scaling(a.scaling, a.designs or 96)
    if a.quality:
        q = res["quality"] = quality(a.quality, a.seeds, a.fraction)
        print(f"\n{q['designs']} designs, at most {q['budget_designs']} distinct designs per search, grid best EDP {q['grid_best_edp']:.4g}\n")
        print("| sampler | runs within 2% | mean gap | max gap | designs to reach 2% (median) | distinct designs |\n"
              "|---|---|---|---|---|---|")
        for k, v in q["samplers"].items():
            print(f"| {k} | {v['within_2pct']}/{len(v['runs'])} | {v['mean_gap_pct']:.2f}% | "
                  f"{v['max_gap_pct']:.2f}% | {v['median_designs_to_2pct']} | {v['max_designs']} "
                  f"({100 * v['max_designs'] / q['designs']:.1f}%) |")
    if a.projection:
        real = timing(a.real, None) if a.real else None
        res["projection"] = projection(a.designs or 100_000, real)
    print(json.dumps({k: v for k, v in res.items() if k != "quality"}, indent=1, default=float))
    if a.json:
        a.json.write_text(json.dumps(res, indent=1, default=float))


if __name__ == "__main__":
    main()
