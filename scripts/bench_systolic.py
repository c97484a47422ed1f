"""Benchmark costmodel.systolic.evaluate: GoogLeNet-v1 (DeepOpt's 58 layers) x random grid points.

Usage: python scripts/bench_systolic.py [n_points] [repeats]
Prints (point, layer) pairs per second for all 5 branches together (single process).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from costmodel.systolic.area import deepopt_grid  # noqa: E402
from costmodel.systolic import evaluate  # noqa: E402
from costmodel.workload import Layer  # noqa: E402
from costmodel.zoo import load_network  # noqa: E402

def googlenet_layers() -> list[Layer]:
    """DeepOpt's GoogLeNet-v1 table from the zoo (58 layers)."""
    return [l for l, _ in load_network("googlenet_v1_deepopt")]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    layers = googlenet_layers()
    grid = deepopt_grid()
    rng = np.random.default_rng(0)
    pick = rng.choice(len(grid["J"]), size=n, replace=False)
    hw = [grid[k][pick] for k in ("J", "K", "fsram_kib", "isram_kib", "psram_kib")]
    evaluate(layers, *(a[:50] for a in hw))  # warm-up
    best = np.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        res = evaluate(layers, *hw)
        best = min(best, time.perf_counter() - t0)
    pairs = n * len(layers)
    print(f"{len(layers)} layers x {n} points = {pairs} pairs, 5 branches: best of {reps} "
          f"{best:.3f} s -> {pairs / best / 1e6:.2f} M pairs/s "
          f"(finite energy: {np.isfinite(res.energy_pj).mean():.1%})")


if __name__ == "__main__":
    main()
