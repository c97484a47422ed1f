"""Shared mappings against each design's own (``[serving] mappings = "shared"`` vs ``"own"``): for a
seeded sample of a serving campaign's designs, the cost table re-costed from the chip's reference
mappings (`sweep.serving.shared_mappings`) and the table mapped on the design itself, compared
entry by entry (every grid point's time and energy), and the goodput each gives under the
campaign's load and SLO.

    python scripts/serving_shared_mappings.py                                  # 12 designs of the search
    python scripts/serving_shared_mappings.py --campaign campaigns/llm_serving_archsearch.toml --designs 24
    python scripts/serving_shared_mappings.py --top 5 --results results/llm_serving_archsearch   # its 5 best

Prints a line per design (its chip, DRAM and clock; table time error max and mean; energy error max
and mean; goodput shared vs own) and the totals: the figures quoted in docs/serving.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

PARTS = ("dense", "head", "decode", "chunk")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--campaign", default="campaigns/llm_serving_archsearch.toml")
    ap.add_argument("--designs", type=int, default=12, help="designs sampled (feasible ones)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--top", type=int, default=0, help="instead of a sample: the N best by goodput per mm^2 of --results")
    ap.add_argument("--results", default="results/llm_serving_archsearch", help="the campaign's results (for --top)")
    a = ap.parse_args()

    from costmodel.serving import SLO
    from sweep.engine.serving_tasks import reference_designs
    from sweep.kinds import load_campaign
    from sweep.serving.serve import Load, serve, setup

    c = load_campaign(a.campaign)
    sp = c.search
    designs = list(c.architectures.designs)
    refs = reference_designs(designs)
    rng = np.random.default_rng(a.seed)
    order = rng.permutation(len(designs))
    if a.top:
        import pandas as pd
        rows = pd.read_parquet(f"{a.results}/rows").sort_values("goodput_per_mm2", ascending=False)
        at = {d.design_id: i for i, d in enumerate(designs)}
        order = [at[i] for i in rows["design_id"].head(a.top)]
        a.designs = a.top
    slo = SLO(sp.slo.get("ttft_s"), sp.slo.get("tpot_s"), sp.slo.get("attainment", 0.9))
    setting = sp.settings()[0]
    kw = dict(mapper=sp.mapper, objective=sp.objective, seed=c.seeds[0], params=dict(sp.params) or None,
              scheduler=dict(setting), grids=sp.grids, workers=1, **sp.deployment)
    load = Load(rate=float(sp.rates[0]), **sp.load)
    done, t_err, j_err, g_err = 0, [], [], []
    print(f"{a.campaign}: {len(designs):,} designs; sampling {a.designs} feasible (seed {a.seed})")
    for i in order:
        if done >= a.designs:
            break
        d = designs[int(i)]
        acc = d.accelerator()
        try:
            t0 = time.perf_counter()
            own = setup(sp.network, acc, **kw)
            own_s = time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001 - an infeasible design is skipped
            print(f"  {d.note}: skipped ({str(e).splitlines()[0][:90]})")
            continue
        t0 = time.perf_counter()
        shared = setup(sp.network, acc, mapping_refs=tuple(r.accelerator() for r in refs[d.design_id]), **kw)
        sh_s = time.perf_counter() - t0
        te, je = [], []
        for p in PARTS:
            for unit, acc_list in (("s", te), ("j", je)):
                a_ = np.asarray(getattr(shared.table, f"{p}_{unit}"), dtype=float).ravel()
                b_ = np.asarray(getattr(own.table, f"{p}_{unit}"), dtype=float).ravel()
                ok = b_ > 0
                acc_list.extend((a_[ok] / b_[ok] - 1.0).tolist())
        g_own = serve(own, load, slo, search_goodput=True)["goodput"]["goodput_rps"]
        g_sh = serve(shared, load, slo, search_goodput=True)["goodput"]["goodput_rps"]
        te_a, je_a = np.abs(te), np.abs(je)
        t_err += te
        j_err += je
        g_err.append(g_sh / g_own - 1.0 if g_own else 0.0)
        mine = " (a reference)" if d.design_id in {r.design_id for r in refs[d.design_id]} else ""
        print(f"  {d.note}{mine}: time |err| max {te_a.max():.2%} mean {te_a.mean():.3%} (signed mean "
              f"{np.mean(te):+.3%}); energy |err| max {je_a.max():.2%} mean {je_a.mean():.2%}; goodput shared "
              f"{g_sh:.3f} vs own {g_own:.3f} req/s ({g_err[-1]:+.2%}); table own {own_s:.1f} s, shared {sh_s:.1f} s "
              "(references mapped once per process)", flush=True)
        done += 1
    if not g_err:
        return
    t_all, j_all, g_all = np.abs(t_err), np.abs(j_err), np.asarray(g_err)
    print(f"over {done} designs, {len(t_all):,} table entries: time |err| max {t_all.max():.2%}, mean {t_all.mean():.3%}, "
          f"{np.mean(t_all <= 0.01):.1%} within 1%; energy |err| max {j_all.max():.2%}, mean {j_all.mean():.2%}; "
          f"goodput shared/own - 1: min {g_all.min():+.2%}, max {g_all.max():+.2%}, mean |.| {np.abs(g_all).mean():.2%}")


if __name__ == "__main__":
    main()
