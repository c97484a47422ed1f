"""Flexer vs the static loop-order baseline on one layer (ResNet-50 by default) and one multi-NPU
preset; the campaign's tile candidates are --max-ops 256 --min-spatial 4 --min-channels 16.

Prints the number of viable tilings, schedules built and time per schedule of each mapper, and
the best schedule's metric (latency x bytes), latency, transferred bytes (by type) and tiling;
then flexer's speed-up and data reduction over static.

Usage: python scripts/bench_flexer.py [--network resnet50] [--layer layer2.x.conv2] [--arch arch5] [--max-ops 512]
       [--min-spatial 1] [--min-channels 8] [--window 6] [--max-open 0] [--metric latency_bytes]
"""

from __future__ import annotations

import argparse
import time

from costmodel.npu import load_npu
from costmodel.zoo import load_network
from mappers.npu.tiled import NPUProblem
from mappers.npu.flexer import FLEXER
from mappers.npu.static import STATIC


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--network", default="resnet50")
    ap.add_argument("--layer", default="layer2.x.conv2")
    ap.add_argument("--arch", default="arch5")
    ap.add_argument("--max-ops", type=int, default=512)
    ap.add_argument("--min-spatial", type=int, default=1)
    ap.add_argument("--min-channels", type=int, default=8)
    ap.add_argument("--window", type=int, default=6)
    ap.add_argument("--max-open", type=int, default=0)
    ap.add_argument("--metric", default="latency_bytes")
    a = ap.parse_args()
    layer = {l.name: l for l, _ in load_network(a.network)}[a.layer]
    prob = NPUProblem(layer, load_npu(a.arch), a.metric)
    common = {"max_ops": a.max_ops, "min_spatial": a.min_spatial, "min_channels": a.min_channels, "metric": a.metric}
    n = len(FLEXER.tiling_list(prob, FLEXER.resolve(common)))
    print(f"{a.layer} K={layer.K} C={layer.C} OY={layer.OY} OX={layer.OX} F={layer.FY}x{layer.FX} S={layer.SY} "
          f"on {a.arch}: {n} viable tilings")
    res = {}
    for m, extra in ((FLEXER, {"window": a.window, "max_open": a.max_open}), (STATIC, {})):
        t0 = time.perf_counter()
        r = m.search(prob, dict(common, **extra))
        wall = time.perf_counter() - t0
        res[m.name] = r
        print(f"{m.name:7s} schedules {r.evaluations:6d}  wall {wall:7.1f} s  {1e3 * wall / r.evaluations:6.2f} ms/schedule"
              f"  metric {r.value:.4g}  latency {r.latency_cycles:.0f} cyc  bytes {r.extra['transferred_bytes']}"
              f" {r.extra['bytes_by_type']}  tiling {r.extra['tiling']} {r.extra['dataflow']}")
    f, s = res["flexer"], res["static"]
    print(f"flexer over static: metric x{s.value / f.value:.3f}  speed-up x{s.latency_cycles / f.latency_cycles:.3f}"
          f"  data reduction x{s.extra['transferred_bytes'] / f.extra['transferred_bytes']:.3f}")


if __name__ == "__main__":
    main()
