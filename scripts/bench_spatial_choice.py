"""The default spatial choice against the exhaustive spatial search, per GEMM, objective latency.

    python scripts/bench_spatial_choice.py                      # the h100 preset's largest GEMMs
    python scripts/bench_spatial_choice.py --arch a100 --gemm 1024x12288x12288

For each GEMM (M x K x N = B x C x K of a matmul layer) SALSA (its default parameters, seed 0) runs
on the unrollings of three rules: ``utilization`` (the default: the top 3 by utilisation), ``probe``
(the top 3 of a pool of 12 re-ranked by 64 random orderings each) and ``all`` (every candidate, in
utilisation order, a candidate whose latency bound exceeds the best found not run: what ``sweep map
--param spatial_candidates=all`` does). Printed per rule: latency as a multiple of the compute floor
(MACs / PEs cycles), its gap to ``all``, the unrolling kept, units listed and run, and the wall
time (s, the kernel's compile excluded by a warm-up).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from costmodel.loopnest.arch import load_accelerator  # noqa: E402
from costmodel.workload import Layer  # noqa: E402
from mappers import get_mapper  # noqa: E402
from mappers.base import check_params  # noqa: E402
from sweep.engine.problem import Problem  # noqa: E402

#: The h100 issue's GEMMs: a 57,344-wide FFN projection, 8,192^3, a 7,168-wide projection.
H100_GEMMS = ("4096x8192x57344", "8192x8192x8192", "4096x8192x7168")
RULES = {"utilization": {"spatial": "search"},
         "probe": {"spatial": "search", "spatial_rank": "probe"},
         "all": {"spatial": "search", "spatial_candidates": "all"}}


def solve(layer, acc, params: dict):
    """(best SearchResult, units listed, units run, wall s) of SALSA on ``layer`` under ``params``."""
    p = Problem.layer("salsa", layer, acc, objective="latency", params=params, seed=0, keep_seed=True)
    p = p.with_params(check_params(get_mapper("salsa").params, p.params)[0])
    t = time.perf_counter()
    units = p.units()
    sol = p.solve(units, skip_by_floor=params.get("spatial_candidates") == "all")
    return sol.best, len(units), len(sol.results), time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="h100", help="loop-nest preset or TOML with a [spatial_hint] (default h100)")
    ap.add_argument("--gemm", action="append", default=None, metavar="MxKxN",
                    help="a GEMM of M rows, reduction K, N columns (repeatable; default the h100 set)")
    a = ap.parse_args(argv)
    acc = load_accelerator(a.arch)
    solve(Layer("warm", kind="matmul", B=64, C=64, K=64), acc, RULES["utilization"])
    for g in a.gemm or H100_GEMMS:
        m, k, n = (int(x) for x in g.lower().split("x"))
        layer = Layer(f"gemm_{g}", kind="matmul", B=m, C=k, K=n)
        floor = layer.macs / acc.pe_count
        res = {r: solve(layer, acc, p) for r, p in RULES.items()}
        ref = res["all"][0].latency_cycles
        print(f"\n{g} on {acc.name}: compute floor {floor / (acc.clock_mhz * 1e3):.3f} ms")
        print(f"  {'rule':<12} {'x floor':>8} {'vs all':>8} {'ms':>8} {'units':>7} {'run':>6} {'wall s':>7}  unrolling")
        for r, (best, listed, ran, wall) in res.items():
            lat = best.latency_cycles
            print(f"  {r:<12} {lat / floor:8.4f} {lat / ref:8.4f} {lat / (acc.clock_mhz * 1e3):8.3f} {listed:7d} {ran:6d} "
                  f"{wall:7.2f}  {best.extra.get('spatial')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
