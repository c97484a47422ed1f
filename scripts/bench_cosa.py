"""Solve the CoSA MIP for every unique layer of ResNet-50, ResNeXt-50 (32x4d) and DeepBench (OCR,
Face) on simba_like, one core, and print per layer: status, HiGHS seconds, MIP objective, modelled
latency (cycles) and energy (pJ); then the median and max solver time (the paper's Gurobi: 4.2 s
average).

Usage: python scripts/bench_cosa.py [--objective latency] [--time-limit 60] [--gap 1e-4] [--nets a,b]
"""

from __future__ import annotations

import argparse
import statistics
import time

from costmodel.loopnest.arch import load_accelerator
from costmodel.zoo import load_network
from mappers.base import LayerProblem
from mappers.fullspace.cosa import COSA

NETS = ("resnet50", "resnext50_32x4d", "deepbench_ocr", "deepbench_face")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--objective", default="latency", choices=["energy", "latency", "edp"])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--gap", type=float, default=1e-4)
    ap.add_argument("--nets", default=",".join(NETS))
    a = ap.parse_args()
    arch = load_accelerator("simba_like")
    params = {"time_limit_s": a.time_limit, "mip_gap": a.gap}
    times, statuses = [], {}
    t0 = time.perf_counter()
    print(f"{'network':16s} {'layer':28s} {'status':10s} {'solver_s':>8s} {'mip_obj':>9s} {'latency_cyc':>12s} "
          f"{'energy_pJ':>12s} {'cols':>5s} {'rows':>5s}")
    for net in a.nets.split(","):
        for layer, _ in load_network(net).unique():
            r = COSA.search(LayerProblem(layer, arch, objective=a.objective), params)
            e = r.extra
            times.append(e["solver_s"])
            statuses[e["status"]] = statuses.get(e["status"], 0) + 1
            print(f"{net:16s} {layer.name:28s} {e['status']:10s} {e['solver_s']:8.2f} {e['mip_objective']:9.3f} "
                  f"{r.latency_cycles:12.4g} {r.energy_pj:12.4g} {e.get('n_cols', 0):5d} {e.get('n_rows', 0):5d}",
                  flush=True)
    print(f"\nlayers {len(times)}  statuses {statuses}  solver_s median {statistics.median(times):.2f}  "
          f"mean {statistics.mean(times):.2f}  max {max(times):.2f}  total wall {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
