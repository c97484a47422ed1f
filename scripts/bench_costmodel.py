"""Benchmark the loop-nest kernel (`costmodel.loopnest.ordering.OrderingEvaluator`) on one core.

Usage: python scripts/bench_costmodel.py [--arch eyeriss_like] [--repeats 3] [--backend numba python]
                                         [--skip-first-call]

Prints, per backend ("numba": the compiled kernel; "python": the same kernel interpreted):

* LOMA: orderings/s of the exhaustive search of ResNet-18 layer2.0.conv2 (K = C = 128, 28 x 28,
  3 x 3; ZigZag's conv3_2) on ``--arch`` with ``lpf_limit`` 10 (907,200 orderings, LOMA's
  lexicographic order, `mappers.loop_order.loma.exhaustive_range`: what ``sweep map --mapper loma
  --param lpf_limit=10`` runs);
* random orderings/s at batch 1, 64 and 4096 and the cost of one ``evaluate_one`` call (us) on four
  layers with all their LPFs (every call a different ordering: no reuse between calls);
* SALSA: seconds of one warm 1,000-iteration chain (`mappers.loop_order.salsa.anneal`, the paper's
  schedule) on layer2.0.conv2;
* the first call in a fresh process (``python -c``: import, evaluator, first evaluation) with the
  compiled kernel already in numba's cache (numba only; ``--skip-first-call`` leaves it out).

Times are process CPU times (``time.process_time``), best of ``--repeats``, so another job on the
machine inflates them less than wall time; BLAS threads are irrelevant (no BLAS calls) but pinned
to 1. The python backend runs a tenth of the work and extrapolates.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from costmodel.loopnest.arch import load_accelerator  # noqa: E402
from costmodel.loopnest.mapping import prime_factors  # noqa: E402
from costmodel.loopnest.ordering import OrderingEvaluator  # noqa: E402
from costmodel.workload import LOOP_DIMS, Layer  # noqa: E402
from mappers.loop_order.loma import exhaustive_range  # noqa: E402
from mappers.loop_order.lpf import merge_lpfs, multiset_count  # noqa: E402
from mappers.loop_order.salsa import PAPER_SCHEDULE, anneal  # noqa: E402

CONV3_2 = Layer("resnet18_layer2.0.conv2", K=128, C=128, OY=28, OX=28, FY=3, FX=3)
LAYERS = [
    Layer("resnet34_3x3_256", K=256, C=256, OY=14, OX=14, FY=3, FX=3),
    Layer("resnet34_3x3_64", K=64, C=64, OY=56, OX=56, FY=3, FX=3),
    Layer("alexnet_conv2", K=256, C=48, OY=27, OX=27, FY=5, FX=5),
    Layer("resnet50_1x1", K=1024, C=256, OY=14, OX=14),
]


def best_of(fn, repeats: int) -> float:
    """Smallest process time of ``repeats`` calls of fn (s)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def loma_rate(acc, backend: str, repeats: int) -> tuple[int, float]:
    """(orderings, orderings/s) of LOMA's exhaustive search of conv3_2 at lpf_limit 10."""
    tb = acc.spatial.temporal_bounds(CONV3_2)
    factors = merge_lpfs([(d, p) for d in LOOP_DIMS for p in prime_factors(tb[d])], 10)
    ev = OrderingEvaluator(CONV3_2, acc, factors=factors, backend=backend)
    total = multiset_count(ev.counts)
    stop = total if backend == "numba" else total // 10
    exhaustive_range(ev, "energy", 0, min(stop, 4096))   # warm
    return total, stop / best_of(lambda: exhaustive_range(ev, "energy", 0, stop), repeats)


def random_rates(acc, backend: str, repeats: int) -> None:
    rng = np.random.default_rng(0)
    scale = 1 if backend == "numba" else 10
    print(f"{'layer':<20} {'LPFs':>4} {'bs=1':>10} {'bs=64':>10} {'bs=4096':>10} {'one (us)':>9}")
    for layer in LAYERS:
        ev = OrderingEvaluator(layer, acc, backend=backend)
        base = np.repeat(np.arange(len(ev.types)), ev.counts)
        res = []
        for bs, reps in ((1, 2000), (64, 40), (4096, 2)):
            n = max(1, reps // scale)
            batches = [np.array([rng.permutation(base) for _ in range(bs)]) for _ in range(n)]
            res.append(bs * n / best_of(lambda: [ev.evaluate(b) for b in batches], repeats))
        ones = [rng.permutation(base).tolist() for _ in range(2000 // scale)]   # distinct orderings
        t1 = best_of(lambda: [ev.evaluate_one(o) for o in ones], repeats) / len(ones)
        print(f"{layer.name:<20} {ev.n_loops:>4} {res[0]:>10,.0f} {res[1]:>10,.0f} {res[2]:>10,.0f} {t1 * 1e6:>9.2f}")


def salsa_chain(acc, backend: str, repeats: int) -> float:
    """Seconds of one warm 1,000-iteration SALSA chain (the paper's schedule) on conv3_2."""
    ev = OrderingEvaluator(CONV3_2, acc, backend=backend)
    kw = {k: PAPER_SCHEDULE[k] for k in ("iterations", "t0", "rho", "normalise", "moves")}
    anneal(ev, "energy", [np.random.default_rng(0)], **kw)
    return best_of(lambda: anneal(ev, "energy", [np.random.default_rng(1)], **kw), repeats)


def first_call(arch: str) -> str:
    """Wall time of import + evaluator + first evaluate_one in a fresh process (cache present)."""
    code = ("import time; t0 = time.perf_counter()\n"
            "import numpy as np\n"
            "from costmodel.loopnest.arch import load_accelerator\n"
            "from costmodel.loopnest.ordering import OrderingEvaluator\n"
            "from costmodel.workload import Layer\n"
            f"ev = OrderingEvaluator(Layer('c', K=128, C=128, OY=28, OX=28, FY=3, FX=3), load_accelerator({arch!r}))\n"
            "ev.evaluate_one(np.repeat(np.arange(len(ev.types)), ev.counts))\n"
            "print(f'{time.perf_counter() - t0:.2f}')\n")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)   # fills the cache
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="eyeriss_like")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--backend", nargs="+", default=["numba", "python"], choices=["numba", "python"])
    ap.add_argument("--skip-first-call", action="store_true")
    args = ap.parse_args()
    acc = load_accelerator(args.arch)
    print(f"arch {acc.name}; one core, process CPU time, best of {args.repeats}")
    for backend in args.backend:
        print(f"[{backend}]")
        total, rate = loma_rate(acc, backend, args.repeats)
        print(f"LOMA conv3_2 lpf_limit 10: {total:,} orderings, {rate:,.0f} orderings/s")
        random_rates(acc, backend, args.repeats)
        print(f"SALSA chain of 1,000 iterations (paper schedule), warm: "
              f"{salsa_chain(acc, backend, args.repeats) * 1e3:.1f} ms")
        if backend == "numba" and not args.skip_first_call:
            print(f"first call in a fresh process (cache present): {first_call(args.arch)} s")


if __name__ == "__main__":
    main()
