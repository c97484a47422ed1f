"""Measure the unit costs of `sweep validate`'s run-time estimate (`sweep.kinds.estimate`).

Usage: python scripts/bench_estimate.py [--keys salsa,orderings,...] [--no-ray]

Per cost key (`sweep.kinds.estimate.unit_work`): a small campaign at one or two budgets, every
work unit run in-process on one core as a task of its own (the mapper and the row it writes:
`sweep.engine.layer_tasks.execute_layers`; systolic: the task) after a warm-up run of the first;
seconds against the work counted, fitted as a + b x work (least squares, non-negative;
``salsa_descent`` on what the SA part leaves). Then a local Ray on every core runs 4 and 512
tiny tasks (one random sample each), twice: START_S (start, first imports and kernel loads) and
TASK_S (per task, on one core). Prints the values for `sweep/kinds/estimate.py` and, per key,
the fitted time of each campaign against the measured one. About 2 minutes on 2 cores; run it
on an otherwise idle machine (other jobs inflate every figure).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from sweep import api  # noqa: E402
from sweep.kinds import estimate as E  # noqa: E402

LOOPS = ["resnet18", "mobilenet_v2"]


def _loopnest(mapper: str, params: dict, networks=LOOPS, arch="eyeriss_like", objective="energy") -> dict:
    return {"name": f"bench_{mapper}", "networks": networks, "objectives": [objective], "seeds": [0],
            "architectures": {"kind": "loopnest", "presets": [arch]},
            "mappers": [{"name": mapper, "params": params}], "run": {"units_per_task": 1}}


#: key -> campaigns (dicts) at different budgets; each campaign's units all have the key first.
CALIBRATION = {
    "salsa": [_loopnest("salsa", {"engine": "sa", "chains": 2, "iterations": it, "descent": False})
              for it in (100, 1000)],
    "orderings": [_loopnest("loma", {"lpf_limit": k}) for k in (5, 7)],
    "salsa_descent": [_loopnest("salsa", {"engine": "sa", "chains": 4, "iterations": 150, "max_evaluations": cap},
                                networks=["resnet18"]) for cap in (1200, 4000)],
    "random": [_loopnest("random", {"patience": pat}) for pat in (100, 500)],
    "primitive_sa": [_loopnest("primitive_sa", {"iterations": it, "hint": False}, networks=["deepbench_ocr"],
                               arch="simba_like") for it in (200, 1000)],
    "random5": [_loopnest("random5", {"valid": v, "hint": False}, networks=["deepbench_ocr"], arch="simba_like")
                for v in (2, 5)],
    "hybrid": [_loopnest("hybrid", {"threads": 2, "patience": pat, "hint": False}, networks=["deepbench_ocr"],
                         arch="simba_like") for pat in (100, 500)],
    "cosa": [_loopnest("cosa", {"time_limit_s": 60.0, "hint": False}, networks=["deepbench_ocr"], arch="simba_like",
                       objective="latency")],
    "flexer": [dict(_loopnest("flexer", {"min_spatial": 4, "min_channels": 16, "max_ops": 256},
                              networks=["squeezenet_v11"]), architectures={"kind": "npu", "presets": ["arch1", "arch5"]},
                    objectives=["latency_bytes"])],
    "static": [dict(_loopnest("static", {"min_spatial": 4, "min_channels": 16, "max_ops": 256},
                              networks=["squeezenet_v11"]), architectures={"kind": "npu", "presets": ["arch1", "arch5"]},
                    objectives=["latency_bytes"])],
    "deepopt": [{"name": "bench_deepopt", "networks": nets, "objectives": ["E", "D", "ED", "E2D", "ED2"],
                 "architectures": {"kind": "systolic", "grid": {"J": {"start": 8, "stop": 32, "step": 4},
                                                                "K": {"start": 8, "stop": 32, "step": 4},
                                                                "fsram_kib": {"pow2": [4, 64]},
                                                                "isram_kib": {"pow2": [4, 64]},
                                                                "psram_kib": {"pow2": [4, 64]}}},
                 "mappers": [{"name": "deepopt"}], "run": {"chunk_points": 1024}}
                for nets in (["alexnet_deepopt"], ["resnet50_deepopt", "vgg16_deepopt"])],
}


def _samples(campaign: dict, tmp: Path) -> list[tuple[float, dict]]:
    """(seconds, work) of every work unit of ``campaign``, each run in-process as a task of its own."""
    from sweep.engine.layer_tasks import LayerTask

    c = api.load_campaign(campaign, output=tmp / campaign["name"])
    out = []
    warm = True
    for task in c.plan.expand(c):
        units = getattr(task, "units", None)
        for u in (units if units is not None else [task]):
            one = LayerTask(task.task_id, (u,)) if units is not None else task
            if warm:  # kernels compiled / loaded, caches as in a running worker
                one.run()
                warm = False
            t0 = time.perf_counter()
            one.run()
            out.append((time.perf_counter() - t0, E.unit_work(u.mapper, u.params, u.unit, u.problem)))
    return out


def _fit(key: str, samples: list[tuple[float, dict]]) -> tuple[float, float]:
    """(a, b) of seconds = a + b x work[key] + (the other keys' known a + b x work), non-negative."""
    from scipy.optimize import nnls

    y = np.array([s - sum(E.COSTS[k][0] + E.COSTS[k][1] * w for k, w in work.items() if k != key)
                  for s, work in samples])
    A = np.array([[1.0, work[key]] for _, work in samples])
    if np.ptp(A[:, 1]) == 0:  # one budget: a per-unit cost only (b from the mean)
        return 0.0, float(y.sum() / max(A[:, 1].sum(), 1e-12))
    (a, b), _ = nnls(A, y)
    return float(a), float(b)


def _ray_overheads(tmp: Path) -> tuple[float, float]:
    """(START_S, TASK_S) from a local Ray on every core running 4 and 512 tiny tasks (one random
    sample each), twice: START_S the run of 4 tasks, TASK_S what 508 more tasks add, per task on
    one core."""
    cpus = os.cpu_count() or 1
    runs: dict[int, list[float]] = {4: [], 512: []}
    for n in (4, 512, 4, 512):
        net = tmp / f"tiny{n}.csv"
        net.write_text("name,K,C,OY,OX,FY,FX,B,G,SY,SX,PY,PX,kind,repeat\n" + "".join(
            f"l{i},8,{8 + i},4,4,1,1,1,1,1,1,0,0,conv,1\n" for i in range(n)))
        c = _loopnest("random", {"patience": 1, "max_samples": 1}, networks=[{"file": str(net)}])
        t0 = time.perf_counter()
        api.run_campaign(c, output=tmp / f"ray{n}_{len(runs[n])}", executor="ray")
        runs[n].append(time.perf_counter() - t0)
        print(f"# ray: {n} tiny tasks in {runs[n][-1]:.2f} s", flush=True)
    few, many = float(np.mean(runs[4])), float(np.mean(runs[512]))
    return few, max(0.0, (many - few) * cpus / 508)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", default=",".join(CALIBRATION), help="cost keys to measure (comma-separated)")
    ap.add_argument("--no-ray", action="store_true", help="skip the Ray start / per-task measurement")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_estimate_") as d:
        tmp = Path(d)
        fitted = {}
        for key in a.keys.split(","):
            runs = [_samples(c, tmp) for c in CALIBRATION[key]]
            E.COSTS[key] = fitted[key] = _fit(key, [s for run in runs for s in run])
            for c, run in zip(CALIBRATION[key], runs):
                est = sum(sum(E.COSTS[k][0] + E.COSTS[k][1] * w for k, w in work.items()) for _, work in run)
                print(f"# {key}: {c['mappers'][0].get('params', {})} {c['networks']}: {len(run)} units, measured {sum(s for s, _ in run):.2f} s, "
                      f"fitted {est:.2f} s", flush=True)
        print("COSTS = {")
        for key, (x, y) in fitted.items():
            print(f'    "{key}": ({x:.3g}, {y:.3g}),')
        print("}")
        if not a.no_ray:
            start, task = _ray_overheads(tmp)
            print(f"START_S = {start:.3g}\nTASK_S = {task:.3g}")


if __name__ == "__main__":
    main()
