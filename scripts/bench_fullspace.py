"""primitive_sa vs random sampling at equal evaluations, random5 and hybrid, on the full mapspace.

For a few ResNet-50 layers on simba_like: primitive_sa (``--iterations``, one chain, ``--seeds`` seeds)
against uniform random sampling of the same primitive-list space (`PrimitiveSpace.random_state`) with
exactly as many cost-model evaluations as the SA run made (the issue's acceptance: SA must beat it),
then random5 (CoSA's Random 5x) and hybrid (Timeloop-Hybrid-like, 8 threads, patience 500). Prints a
table of the objective (geomean over seeds for SA / random), evaluations and wall time.

    python scripts/bench_fullspace.py [--objective latency] [--layers conv1,layer3.0.conv1] [--seeds 3]

primitive_sa, random5 and hybrid ignore the accelerator's ``[spatial_hint]`` (``hint = false``)
unless ``--hint``: the random sampling they are compared with draws from the unrestricted space.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from costmodel.loopnest.arch import load_accelerator
from costmodel.zoo import load_network
from mappers.base import LayerProblem
from mappers.fullspace.baselines import HYBRID, RANDOM5
from mappers.fullspace.primitive_sa import PRIMITIVE_SA, PrimitiveSpace

DEFAULT_LAYERS = "conv1,layer1.0.conv2,layer2.0.conv1,layer3.0.conv1,layer4.x.conv2"


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def random_sampling(problem, evaluations: int, seed: int) -> float:
    space = PrimitiveSpace(problem.layer, problem.arch)
    rng = np.random.default_rng(10_000 + seed)
    return min(space.evaluate(space.random_state(rng), problem.objective)[0] for _ in range(evaluations))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objective", default="latency", choices=("energy", "latency", "edp"))
    ap.add_argument("--layers", default=DEFAULT_LAYERS)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--arch", default="simba_like")
    ap.add_argument("--hint", action="store_true",
                    help="primitive_sa, random5 and hybrid follow the accelerator's [spatial_hint] (default: "
                         "not, like the random sampling they are compared with, which draws from the whole space)")
    a = ap.parse_args()
    arch = load_accelerator(a.arch)
    layers = {l.name: l for l, *_ in load_network("resnet50").unique()}
    hdr = (f"{'layer':<16} {'SA':>12} {'rand@=ev':>12} {'SA/rand':>8} {'wins':>5} {'SA ev':>6} {'SA s':>6} "
           f"{'random5':>12} {'r5 ev':>6} {'hybrid':>12} {'hy ev':>7} {'hy s':>6}")
    print(f"# {a.arch}, objective {a.objective}, primitive_sa {a.iterations} iterations x {a.seeds} seeds")
    print(hdr)
    ratios = []
    for name in a.layers.split(","):
        pr = LayerProblem(layers[name], arch, objective=a.objective)
        sa, rnd, evs, ts = [], [], [], []
        for s in range(a.seeds):
            t = time.perf_counter()
            r = PRIMITIVE_SA.search(pr, {"iterations": a.iterations, "seed": s, "hint": a.hint})
            ts.append(time.perf_counter() - t)
            sa.append(r.value)
            evs.append(r.evaluations)
            rnd.append(random_sampling(pr, r.evaluations, s))
        wins = sum(x <= y for x, y in zip(sa, rnd))
        r5 = RANDOM5.search(pr, {"seed": 0, "hint": a.hint})
        t = time.perf_counter()
        hy = HYBRID.search(pr, {"seed": 0, "hint": a.hint})
        t_hy = time.perf_counter() - t
        g_sa, g_r = geomean(sa), geomean(rnd)
        ratios.append(g_sa / g_r)
        print(f"{name:<16} {g_sa:>12.4g} {g_r:>12.4g} {g_sa / g_r:>8.3f} {wins:>2}/{a.seeds:<2} {int(np.mean(evs)):>6} "
              f"{np.mean(ts):>6.2f} {r5.value:>12.4g} {r5.evaluations:>6} {hy.value:>12.4g} {hy.evaluations:>7} "
              f"{t_hy:>6.2f}")
    print(f"geomean SA / random sampling at equal evaluations: {geomean(ratios):.3f}")


if __name__ == "__main__":
    main()
