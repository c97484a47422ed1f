"""Benchmark the loop-nest batch evaluator: orderings per second on one core.

Usage: python scripts/bench_costmodel.py [--arch eyeriss_like] [--seconds 1.0] [--backend numba numpy]

Prints, per backend ("numba": the compiled kernel; "numpy": vectorised NumPy batches and the pure
Python `evaluate_one`) and for a few layers, orderings/s of `OrderingEvaluator.evaluate` at batch
sizes 1, 64 and 4096, the cost of one `evaluate_one` call (the scalar path used by SA chains, ms),
and the seconds of one 1000-iteration SA-like loop (random swap, `evaluate_one` on the list, keep
if not worse). For numba also the time of the first call (JIT compile, or loading the kernels
from numba's cache when they were compiled before). Threads of BLAS libraries are irrelevant (no
BLAS calls) but pinned to 1 anyway.
"""

from __future__ import annotations

import argparse
import os
import random
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from costmodel.loopnest.arch import load_accelerator  # noqa: E402
from costmodel.loopnest.ordering import OrderingEvaluator, _numba_kernels  # noqa: E402
from costmodel.workload import Layer  # noqa: E402

LAYERS = [
    Layer("resnet34_3x3_256", K=256, C=256, OY=14, OX=14, FY=3, FX=3),
    Layer("resnet34_3x3_64", K=64, C=64, OY=56, OX=56, FY=3, FX=3),
    Layer("alexnet_conv2", K=256, C=48, OY=27, OX=27, FY=5, FX=5),
    Layer("resnet50_1x1", K=1024, C=256, OY=14, OX=14),
]


def rate(fn, batch, seconds):
    n = 0
    t0 = time.perf_counter()
    while True:
        fn()
        n += batch
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return n / dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="eyeriss_like")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--backend", nargs="+", default=["numba", "numpy"], choices=["numba", "numpy"])
    args = ap.parse_args()
    acc = load_accelerator(args.arch)
    print(f"arch {acc.name}; orderings/s per core")
    for backend in args.backend:
        if backend == "numba":
            t0 = time.perf_counter()
            if _numba_kernels() is None:
                print("numba: not installed, skipped")
                continue
            t1 = time.perf_counter()
            ev = OrderingEvaluator(LAYERS[0], acc, backend="numba")
            o = np.repeat(np.arange(len(ev.types)), ev.counts)
            ev.evaluate_one(o)
            t2 = time.perf_counter()
            ev.evaluate(np.array([o] * 16))
            t3 = time.perf_counter()
            print(f"numba: import {t1 - t0:.2f} s; first evaluate_one {t2 - t1:.2f} s, first evaluate "
                  f"{t3 - t2:.2f} s (JIT compile, or cache load if compiled before)")
        rng = np.random.default_rng(0)
        print(f"[{backend}]")
        print(f"{'layer':<20} {'LPFs':>4} {'bs=1':>10} {'bs=64':>10} {'bs=4096':>10} {'one (ms)':>9} "
              f"{'SA 1000 (s)':>11}")
        for layer in LAYERS:
            ev = OrderingEvaluator(layer, acc, backend=backend)
            base = np.repeat(np.arange(len(ev.types)), ev.counts)
            res = []
            for bs in (1, 64, 4096):
                ords = np.array([rng.permutation(base) for _ in range(bs)])
                res.append(rate(lambda: ev.evaluate(ords), bs, args.seconds))
            one = ords[0].tolist()
            r1 = rate(lambda: ev.evaluate_one(one), 1, args.seconds)
            # an SA-like chain as mappers.loop_order.salsa runs it: 1000 swaps on a list, one evaluation each
            cur = list(one)
            n = len(cur)
            pick = random.Random(0).randrange
            t0 = time.perf_counter()
            best = ev.evaluate_one(cur)[0]
            for _ in range(1000):
                i, j = pick(n), pick(n)
                cur[i], cur[j] = cur[j], cur[i]
                v = ev.evaluate_one(cur)[0]
                if v <= best:
                    best = v
                else:
                    cur[i], cur[j] = cur[j], cur[i]
            sa = time.perf_counter() - t0
            print(f"{layer.name:<20} {ev.n_loops:>4} {res[0]:>10.0f} {res[1]:>10.0f} {res[2]:>10.0f} "
                  f"{1e3 / r1:>9.4f} {sa:>11.4f}")


if __name__ == "__main__":
    main()
