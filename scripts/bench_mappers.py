"""Benchmark the loop-ordering mappers on eyeriss_like (single core unless said otherwise).

Usage: python scripts/bench_mappers.py [--reference] [--exhaustive-rows N] [--sa-runs R]

Prints, for the ResNet-34 3x3 layer layer1.0.conv1 (K = C = 64, 56 x 56, 3 x 3):
* evaluator construction time and the cost of one single-ordering evaluator call;
* one SA run of 1000 iterations (default SALSA parameters): median wall time over R seeds, and the
  time per chain of 16 chains in lockstep;
* exhaustive throughput: orderings per second per core of the LOMA enumeration + batched
  evaluation, and of the enumeration alone (`mappers.loop_order.lpf.iter_permutations`);
* the measured tau (s per ordering, batched) and the ratio SA step / tau that
  `mappers.loop_order.salsa.AUTO_EXHAUSTIVE_FACTOR` is based on;
* exhaustive speed-up of 2 shards in 2 processes over 1 (a layer of about 1-2 M orderings);
* one random-mapper run (patience 500).

The SA-vs-exhaustive acceptance of issue 3 is `scripts/salsa_vs_exhaustive.py`.

``--reference`` uses the one-at-a-time reference model instead of `costmodel.loopnest.ordering` (slow; only to
check the script).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from costmodel.loopnest.arch import load_accelerator  # noqa: E402
from costmodel.zoo import load_network  # noqa: E402
from mappers.base import LayerProblem  # noqa: E402
from mappers.loop_order.base import problem_evaluator
from mappers.loop_order.loma import LomaMapper, exhaustive_range  # noqa: E402
from mappers.loop_order.lpf import iter_permutations, multiset_count  # noqa: E402
from mappers.loop_order.random import RandomMapper  # noqa: E402
from mappers.loop_order.salsa import AUTO_EXHAUSTIVE_FACTOR, SalsaMapper, anneal, chain_seeds  # noqa: E402


def _factory(reference: bool):
    if reference:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        from test_loop_mappers import RefEvaluator
        return RefEvaluator
    from costmodel.loopnest.ordering import OrderingEvaluator
    return OrderingEvaluator


def _layer(name: str):
    net = load_network("resnet34")
    return next(l for l in net.layers if l.name == name)


def _shard(args):
    layer_name, shard, shards, reference = args
    prob = LayerProblem(_layer(layer_name), load_accelerator("eyeriss_like"))
    m = LomaMapper(_factory(reference))
    from mappers.base import WorkUnit
    return m.run(prob, WorkUnit("exhaustive", shard=shard, shards=shards), {"batch": 4096})


def _optimum(args):
    name, shard, shards = args
    from mappers.base import WorkUnit
    prob = LayerProblem(_unique_layer(name), load_accelerator("eyeriss_like"))
    m = LomaMapper(_factory(False))
    return m.run(prob, WorkUnit("exhaustive", shard=shard, shards=shards), {"batch": 4096})


def _unique_layer(name: str):
    return next(l for l in load_network("resnet34").unique().layers if l.name == name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", action="store_true", help="use the reference model (slow)")
    ap.add_argument("--exhaustive-rows", type=int, default=200_000, help="orderings for the throughput figure")
    ap.add_argument("--sa-runs", type=int, default=7, help="seeds for the SA timing")
    ap.add_argument("--no-shards", action="store_true", help="skip the 2-process sharding figure")
    a = ap.parse_args()
    factory = _factory(a.reference)
    arch = load_accelerator("eyeriss_like")
    layer = _layer("layer1.0.conv1")
    prob = LayerProblem(layer, arch, objective="energy")

    t = time.perf_counter()
    ev = factory(layer, arch)
    t_build = time.perf_counter() - t
    space = multiset_count(ev.counts)
    print(f"layer {layer.name} (K={layer.K} C={layer.C} OY={layer.OY} OX={layer.OX} FY={layer.FY} FX={layer.FX}) "
          f"on eyeriss_like: {ev.n_loops} LPFs, {len(ev.types)} types, {space:,} orderings")
    print(f"evaluator construction: {t_build * 1e3:.2f} ms")

    rng = np.random.default_rng(0)
    from mappers.loop_order.salsa import random_orderings
    one = random_orderings(rng, ev.counts, 1)
    reps = 200 if a.reference else 2000
    t = time.perf_counter()
    for _ in range(reps):
        ev.objective(one, "energy")
    t_one = (time.perf_counter() - t) / reps
    print(f"single-ordering objective call: {t_one * 1e6:.1f} us")

    # one SA run of 1000 iterations (default parameters), several seeds
    iters = 1000
    times, vals = [], []
    for s in chain_seeds(0, a.sa_runs):
        t = time.perf_counter()
        (ch,) = anneal(ev, "energy", [np.random.default_rng(s)], iters)
        times.append(time.perf_counter() - t)
        vals.append(ch.value)
    t_sa = statistics.median(times)
    print(f"SA, 1 chain x {iters} iterations: median {t_sa:.4f} s (min {min(times):.4f}, max {max(times):.4f}) "
          f"over {a.sa_runs} seeds; {t_sa / iters * 1e6:.1f} us per iteration")
    sm = SalsaMapper(factory)
    t = time.perf_counter()
    res = sm.search(prob, {"engine": "sa", "seed": 0})
    print(f"salsa mapper (evaluator cached, + result assembly): {time.perf_counter() - t:.4f} s, "
          f"value {res.value:.6g} pJ")
    c = 16
    t = time.perf_counter()
    anneal(ev, "energy", [np.random.default_rng(s) for s in chain_seeds(1, c)], iters)
    t_ls = time.perf_counter() - t
    print(f"SA, {c} chains in lockstep: {t_ls:.3f} s, {t_ls / c:.4f} s per chain")

    # exhaustive throughput
    rows = min(a.exhaustive_rows, space) if not a.reference else min(2000, space)
    t = time.perf_counter()
    exhaustive_range(ev, "energy", 0, rows, 4096)
    t_ex = time.perf_counter() - t
    t = time.perf_counter()
    n = 0
    for blk in iter_permutations(ev.counts, 0, min(2_000_000, space), 4096):
        n += len(blk)
    t_enum = time.perf_counter() - t
    tau = t_ex / rows
    print(f"exhaustive (enumerate + evaluate, batches of 4096): {rows / t_ex:,.0f} orderings/s per core "
          f"(tau = {tau * 1e6:.2f} us)")
    print(f"enumeration alone: {n / t_enum:,.0f} orderings/s")
    step = t_sa / iters
    print(f"SA step / tau = {step / tau:.1f} (AUTO_EXHAUSTIVE_FACTOR = {AUTO_EXHAUSTIVE_FACTOR}); "
          f"eq. 1 estimate of the full exhaustive search: {tau * space:,.0f} s")

    # 2 shards on 2 processes vs 1
    if not a.no_shards and not a.reference:
        name = "layer4.x.conv1"  # 512 x 512 x 7 x 7, 3x3
        ev2 = problem_evaluator(LayerProblem(_layer(name), arch), factory)
        total = multiset_count(ev2.counts)
        print(f"sharding: {name}, {ev2.n_loops} LPFs, {total:,} orderings")
        if total <= 5_000_000:
            t = time.perf_counter()
            r1 = _shard((name, 0, 1, False))
            t1 = time.perf_counter() - t
            with ProcessPoolExecutor(2) as pool:
                list(pool.map(_shard, [(name, 0, 1, False)] * 2))  # warm both workers (imports)
                t = time.perf_counter()
                r2 = list(pool.map(_shard, [(name, i, 2, False) for i in range(2)]))
                t2 = time.perf_counter() - t
            same = min(r2, key=lambda r: r.value).value == r1.value
            print(f"  1 shard in-process: {t1:.2f} s; 2 shards on 2 processes: {t2:.2f} s; "
                  f"speed-up {t1 / t2:.2f}x; same optimum: {same}")
        else:
            print("  (too large, skipped)")

    rm = RandomMapper(factory)
    t = time.perf_counter()
    r = rm.search(prob, {"seed": 0})
    print(f"random (patience 500): {time.perf_counter() - t:.3f} s, {r.evaluations} samples, value {r.value:.6g} pJ "
          f"({r.value / min(vals):.3f} x the best SA value)")


if __name__ == "__main__":
    main()
