"""Solve the CoSA MIP for every unique layer of ResNet-50, ResNeXt-50 (32x4d) and DeepBench (OCR,
Face) on simba_like, one core, and print per layer: status, HiGHS seconds, MIP objective, modelled
latency (cycles) and energy (pJ); then the median and max solver time (the paper's Gurobi: 4.2 s
average).

``--compare``: per layer of ``--nets`` (default resnet50) the objective of cosa, random5, hybrid
(threads 8, patience 500, as campaigns/cosa_simba.toml) and, on the ``--random-layers``, the loop-order
random search (`random`, defaults); then the geomean speed-ups of cosa over random5 and hybrid, the
geomean ratio of random's objective to cosa's on the random layers (> 1: cosa better) and the solve
times. ``--no-hint``: cosa, random5 and hybrid ignore simba_like's ``[spatial_hint]`` (the papers'
unrestricted set-up, as ``campaigns/cosa_simba.toml``); without it they follow the hint.
``--cache FILE`` keeps the baselines' results (JSON) between runs; ``--cosa k=v,...`` passes
cosa params (e.g. ``dram_ranks=0``; ``solves=0`` gives version 2's single solve; several
solves separated by ``;``, e.g. ``solves=0;1:weight_buffer``). One run from scratch: about 4.5 min on one core (hybrid's walks
are most of it); with the cache filled, about 40 s.

Usage: python scripts/bench_cosa.py [--objective latency] [--time-limit 60] [--gap 1e-4] [--nets a,b]
       python scripts/bench_cosa.py --compare [--no-hint] [--cache /tmp/cosa_baselines.json] [--cosa k=v,...]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time

from costmodel.loopnest.arch import load_accelerator
from costmodel.zoo import load_network
from mappers import get_mapper
from mappers.base import LayerProblem, objective_index
from mappers.fullspace.cosa import COSA

NETS = ("resnet50", "resnext50_32x4d", "deepbench_ocr", "deepbench_face")
RANDOM_LAYERS = ("layer3.0.conv2", "layer1.0.conv2", "layer4.x.conv1")
BASELINES = {"random5": {}, "hybrid": {"threads": 8, "patience": 500}, "random": {}}


def _gm(xs) -> float:
    return math.exp(statistics.mean(math.log(x) for x in xs)) if xs else math.nan


def _value(kv: str):
    """A --cosa value: true / false / none, an int, a float, else the string."""
    low = kv.lower()
    if low in ("true", "false", "none"):
        return {"true": True, "false": False, "none": None}[low]
    for t in (int, float):
        try:
            return t(kv)
        except ValueError:
            pass
    return kv


def compare(a, arch, params) -> None:
    """Print the per-layer comparison and its summary (module docstring)."""
    cache = json.load(open(a.cache)) if a.cache and os.path.exists(a.cache) else {}
    rl = set(a.random_layers.split(","))
    sp5, sph, rr, secs, t0 = [], [], [], [], time.perf_counter()
    print(f"{'network':16s} {'layer':22s} {'cosa':>10s} {'random5':>10s} {'hybrid':>10s} {'random':>10s} "
          f"{'decode':>6s} {'solver_s':>8s}")
    for net in a.nets.split(","):
        for layer, _ in load_network(net).unique():
            prob = LayerProblem(layer, arch, objective=a.objective)
            r = COSA.search(prob, params)
            secs.append(r.extra.get("solver_s_max", r.extra["solver_s"]))
            vals = {}
            for name, bp in BASELINES.items():
                if name == "random" and layer.name not in rl:
                    continue
                if a.no_hint and name in ("random5", "hybrid"):
                    bp = {**bp, "hint": False}
                key = f"{net}/{layer.name}/{name}/{a.objective}" + ("/nohint" if a.no_hint else "")
                if key not in cache:
                    cache[key] = get_mapper(name).search(prob, bp).value
                vals[name] = cache[key]
            sp5.append(vals["random5"] / r.value)
            sph.append(vals["hybrid"] / r.value)
            if "random" in vals:
                rr.append(vals["random"] / r.value)
            print(f"{net:16s} {layer.name:22s} {r.value:10.4g} {vals['random5']:10.4g} {vals['hybrid']:10.4g} "
                  f"{vals.get('random', math.nan):10.4g} {str(r.extra.get('decode')):>6s} "
                  f"{secs[-1]:8.2f}", flush=True)
    if a.cache:
        json.dump(cache, open(a.cache, "w"), indent=0)
    print(f"\nlayers {len(secs)}  geomean speed-up of cosa over random5 {_gm(sp5):.2f}x  over hybrid {_gm(sph):.2f}x  "
          f"random/cosa on {len(rr)} layers {_gm(rr):.3f}  (cosa/random {1 / _gm(rr):.3f})\n"
          f"solver_s (longest solve of a layer) mean {statistics.mean(secs):.2f}  median {statistics.median(secs):.2f}  max {max(secs):.2f}  "
          f"total wall {time.perf_counter() - t0:.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--objective", default="latency", choices=["energy", "latency", "edp"])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--gap", type=float, default=1e-4)
    ap.add_argument("--nets", default=None)
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--cache", default=None)
    ap.add_argument("--cosa", default="", help="extra cosa params k=v,... (true/false/none/numbers)")
    ap.add_argument("--random-layers", default=",".join(RANDOM_LAYERS))
    ap.add_argument("--no-hint", action="store_true",
                    help="ignore simba_like's [spatial_hint] in cosa, random5 and hybrid (hint = false: the "
                         "papers' unrestricted set-up, as campaigns/cosa_simba.toml); default: they follow it")
    a = ap.parse_args()
    arch = load_accelerator("simba_like")
    params = {"time_limit_s": a.time_limit, "mip_gap": a.gap, **({"hint": False} if a.no_hint else {})}
    params.update({k: _value(v) for k, v in (kv.split("=") for kv in a.cosa.split(",") if kv)})
    if "solves" in params:
        params["solves"] = [str(x) for x in str(params["solves"]).split(";")]
    objective_index(a.objective)
    if a.compare:
        a.nets = a.nets or "resnet50"
        return compare(a, arch, params)
    a.nets = a.nets or ",".join(NETS)
    times, statuses = [], {}
    t0 = time.perf_counter()
    print(f"{'network':16s} {'layer':28s} {'status':10s} {'solver_s':>8s} {'mip_obj':>9s} {'latency_cyc':>12s} "
          f"{'energy_pJ':>12s} {'cols':>5s} {'rows':>5s}")
    for net in a.nets.split(","):
        for layer, _ in load_network(net).unique():
            r = COSA.search(LayerProblem(layer, arch, objective=a.objective), params)
            e = r.extra
            times.append(e.get("solver_s_max", e["solver_s"]))
            statuses[e["status"]] = statuses.get(e["status"], 0) + 1
            print(f"{net:16s} {layer.name:28s} {e['status']:10s} {e['solver_s']:8.2f} {e['mip_objective']:9.3f} "
                  f"{r.latency_cycles:12.4g} {r.energy_pj:12.4g} {e.get('n_cols', 0):5d} {e.get('n_rows', 0):5d}",
                  flush=True)
    print(f"\nlayers {len(times)}  statuses {statuses}  solver_s median {statistics.median(times):.2f}  "
          f"mean {statistics.mean(times):.2f}  max {max(times):.2f}  total wall {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
