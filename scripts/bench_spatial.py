"""Benchmark the spatial-unrolling search (`mappers.spatial`, ``spatial = "search"`` on the loop-order mappers).

Usage: python scripts/bench_spatial.py [--generation] [--cost] [--ray] [--ranking] [--networks resnet18 ...]

* ``--generation``: time of `spatial_candidates` (keep 3 and all) per unique layer of the networks on a
  128 x 128 eyeriss_like array with a hint of 4 loop dims per array dim, mixed up to 4 (ZigZag's issue
  #119: generation on large arrays), and on the 14 x 12 preset with its own hint.
* ``--cost``: process CPU time of SALSA (``--salsa`` params) per layer on eyeriss_like, fixed unrolling
  vs ``spatial = "search"`` with 3 candidates (all units in-process, summed over the network's unique
  layers); target <= 3.5x.
* ``--ray``: wall time per layer of the fixed mapper (its units in-process, as ``sweep map`` runs them)
  vs the search's units spread over 2 warm Ray workers (one task per unit); target <= 2x.
* ``--ranking``: for every unique layer, LOMA (``lpf_limit`` 5) on EVERY candidate, then how close the
  top 3 by utilisation and by probe come to the best of all (gap of the network energy, layers whose
  best candidate is in the top 3).

Times exclude the kernel's compile (one warm-up call first). Results print as plain text.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from costmodel.loopnest.arch import load_accelerator  # noqa: E402
from costmodel.loopnest.hint import SpatialHint  # noqa: E402
from costmodel.loopnest.mapping import SpatialMapping  # noqa: E402
from costmodel.zoo import load_network  # noqa: E402
from mappers import get_mapper  # noqa: E402
from mappers.base import LayerProblem  # noqa: E402
from mappers.spatial import spatial_candidates  # noqa: E402

SALSA = {"engine": "sa", "iterations": 1000, "chains": 2, "descent": False}


def _layers(networks):
    seen = {}
    for n in networks:
        for layer, _ in load_network(n).unique():
            seen.setdefault(tuple(sorted((k, v) for k, v in layer.__dict__.items() if k != "name")), layer)
    return list(seen.values())


def generation(networks) -> None:
    base = load_accelerator("eyeriss_like")
    big = replace(base, name="eyeriss_128x128", array={"D1": 128, "D2": 128}, spatial=SpatialMapping({}),
                  spatial_hint=SpatialHint.from_dict({"D1": ["K", "C", "OX", "OY"], "D2": ["K", "C", "OX", "OY"],
                                                      "max_dims": 4}, {"D1": 128, "D2": 128}))
    layers = _layers(networks)
    for acc in (base, big):
        for keep in (3, None):
            n, worst, total = 0, 0.0, 0.0
            for layer in layers:
                t = time.perf_counter()
                c = spatial_candidates(layer, acc, keep=keep)
                dt = time.perf_counter() - t
                total += dt
                worst = max(worst, dt)
                n += len(c)
            print(f"generation {acc.name} ({acc.spatial_hint.describe()}), keep {keep or 'all'}: "
                  f"{len(layers)} layers, {n} candidates, {total * 1e3:.1f} ms total, "
                  f"{total / len(layers) * 1e3:.2f} ms/layer mean, {worst * 1e3:.1f} ms worst")


def _units(mapper, prob, params):
    return [(u, params) for u in mapper.units(prob, params)]


def cost(networks, params) -> None:
    acc = load_accelerator("eyeriss_like")
    salsa = get_mapper("salsa")
    layers = _layers(networks)
    salsa.search(LayerProblem(layers[0], acc), {**params, "iterations": 10})  # compile / warm
    tot = {"fixed": 0.0, "search": 0.0}
    energy = {"fixed": 0.0, "search": 0.0}
    for layer in layers:
        for mode in ("fixed", "search"):
            p = {**params, "spatial": mode}
            t = time.process_time()
            r = salsa.search(LayerProblem(layer, acc), p)
            tot[mode] += time.process_time() - t
            energy[mode] += r.energy_pj
    print(f"cost: salsa {params} on eyeriss_like, {len(layers)} unique layers of {networks}: fixed "
          f"{tot['fixed']:.2f} CPU-s, search (3 candidates) {tot['search']:.2f} CPU-s = "
          f"{tot['search'] / tot['fixed']:.2f}x; sum of layer energies fixed {energy['fixed']:.4g} pJ, "
          f"search {energy['search']:.4g} pJ ({energy['search'] / energy['fixed'] - 1:+.1%})")


def ray_wall(networks, params) -> None:
    import ray
    acc = load_accelerator("eyeriss_like")
    salsa = get_mapper("salsa")
    layers = _layers(networks)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        @ray.remote(num_cpus=1)
        def run(prob, unit, p):
            return get_mapper("salsa").run(prob, unit, p)

        for _ in range(2):  # warm both workers (imports, kernel load)
            ray.get([run.remote(LayerProblem(layers[0], acc), u, {**params, "iterations": 10})
                     for u in salsa.units(LayerProblem(layers[0], acc), {**params, "iterations": 10})])
        fixed = search = 0.0
        for layer in layers:
            prob = LayerProblem(layer, acc)
            t = time.perf_counter()
            salsa.search(prob, {**params, "spatial": "fixed"})
            fixed += time.perf_counter() - t
            p = {**params, "spatial": "search"}
            t = time.perf_counter()
            salsa.reduce(ray.get([run.remote(prob, u, p) for u in salsa.units(prob, p)]))
            search += time.perf_counter() - t
        print(f"ray: {len(layers)} layers, fixed in-process {fixed:.2f} s, search on 2 Ray workers {search:.2f} s "
              f"= {search / fixed:.2f}x wall")
    finally:
        ray.shutdown()


def ranking(networks, arch_name: str) -> None:
    acc = load_accelerator(arch_name)
    acc = replace(acc, spatial=SpatialMapping({}))
    loma = get_mapper("loma")
    layers = _layers(networks)
    best_all = {"all": 0.0, "utilization": 0.0, "probe": 0.0}
    hits = {"utilization": 0, "probe": 0}
    for layer in layers:
        allc = spatial_candidates(layer, acc, keep=None)
        vals = {c.spatial.to_json(): loma.search(LayerProblem(layer, acc, c.spatial), {"lpf_limit": 5}).value
                for c in allc}
        best = min(vals.values())
        best_all["all"] += best
        for rank in ("utilization", "probe"):
            top = spatial_candidates(layer, acc, keep=3, rank=rank)
            v = min(vals[c.spatial.to_json()] for c in top)
            best_all[rank] += v
            hits[rank] += v == best
    n = len(layers)
    print(f"ranking on {arch_name} (hint {acc.spatial_hint.describe()}), {n} unique layers of {networks}, LOMA "
          f"lpf_limit 5 on every candidate: best of all {best_all['all']:.4g} pJ (sum over unique layers); top 3 by "
          f"utilization {best_all['utilization']:.4g} ({best_all['utilization'] / best_all['all'] - 1:+.2%}, best "
          f"in top 3 on {hits['utilization']}/{n} layers); top 3 by probe {best_all['probe']:.4g} "
          f"({best_all['probe'] / best_all['all'] - 1:+.2%}, {hits['probe']}/{n})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generation", action="store_true")
    ap.add_argument("--cost", action="store_true")
    ap.add_argument("--ray", action="store_true")
    ap.add_argument("--ranking", action="store_true")
    ap.add_argument("--arch", default="eyeriss_like", help="preset for --ranking (its hint, no fixed unrolling)")
    ap.add_argument("--networks", nargs="+", default=["resnet18"])
    a = ap.parse_args()
    everything = not (a.generation or a.cost or a.ray or a.ranking)
    if a.generation or everything:
        generation(a.networks)
    if a.cost or everything:
        cost(a.networks, SALSA)
    if a.ray or everything:
        ray_wall(a.networks, SALSA)
    if a.ranking or everything:
        ranking(a.networks, a.arch)


if __name__ == "__main__":
    main()
