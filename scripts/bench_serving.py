"""Benchmarks of serving requests (issue 53's figures), each on this machine, in one run:

* ``--simulate``: 10,000 requests of the bundled Azure conversation trace (its first 10,000, as
  recorded, and at 2x its rate) served on one core once the cost table exists (goal 1 s, at most 5 s);
* ``--table``: the cost table of Llama-3-8B on ``a100`` (at most 60 s on 2 cores);
* ``--goodput``: the goodput of one design, table included (at most 60 s);
* ``--search``: the architecture search by goodput of campaigns/llm_serving_archsearch.toml (1,296
  designs, mappings shared per chip) into a temporary directory, on the local Ray (at most 15 min on
  2 cores); not part of the default run.

    python scripts/bench_serving.py                       # the first three
    python scripts/bench_serving.py --simulate --repeat 5
    python scripts/bench_serving.py --search [--address ray://...]
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--simulate", action="store_true")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--goodput", action="store_true")
    ap.add_argument("--search", action="store_true")
    ap.add_argument("--campaign", default="campaigns/llm_serving_archsearch.toml")
    ap.add_argument("--address", default=None, help="a Ray cluster for --search (default: a local one)")
    ap.add_argument("--network", default="llama3_8b")
    ap.add_argument("--arch", default="a100")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=None, help="processes mapping the cost table (default: the CPUs)")
    a = ap.parse_args()
    if a.search:
        search(a.campaign, a.address)
        return
    every = not (a.simulate or a.table or a.goodput)

    from costmodel.serving import SLO, read_trace, simulate, summary
    from sweep.serving.serve import Load, serve, setup

    t0 = time.perf_counter()
    st = setup(a.network, a.arch, workers=a.workers)
    table_s = time.perf_counter() - t0
    if every or a.table:
        print(f"cost table of {a.network} on {a.arch}: {table_s:.1f} s ({st.table.meta['grid_points']} grid points, "
              f"{st.table.meta['layers_mapped']} layers, {st.table.meta['workers']} worker processes)")
    if every or a.simulate:
        trace = read_trace("azure_conv_2023", max_context=st.cfg.max_model_len, drop_long=True).head(10000)
        for label, reqs in (("as recorded", trace), ("at 2x its rate", trace.at_rate(2 * trace.rate))):
            simulate(reqs.head(50), st.table, st.cfg, st.num_blocks)          # compiled once
            best = float("inf")
            for _ in range(a.repeat):
                t = time.perf_counter()
                res = simulate(reqs, st.table, st.cfg, st.num_blocks)
                best = min(best, time.perf_counter() - t)
            s = summary(res)
            print(f"10,000 requests {label} ({reqs.rate:.2f} req/s): {res.n_iterations:,} iterations in {best:.3f} s "
                  f"(best of {a.repeat}); P90 TTFT {s['ttft_s']['p90']:.3f} s, P90 TPOT {s['tpot_s']['p90'] * 1e3:.1f} ms, "
                  f"{s['preemptions']} preemptions")
    if every or a.goodput:
        t = time.perf_counter()
        run = serve(st, Load("azure_conv_2023", rate=4.0, requests=2000, drop_long=True), SLO(2.0, 0.1),
                    search_goodput=True)
        gp = run["goodput"]
        print(f"goodput of {a.network} on {a.arch} (2,000 requests of the trace's lengths per rate, P90 TTFT <= 2 s, "
              f"TPOT <= 100 ms): {gp['goodput_rps']:.2f} req/s, {gp['simulations']} simulations in "
              f"{time.perf_counter() - t:.1f} s; with the table {table_s + time.perf_counter() - t:.1f} s")


def search(campaign: str, address: str | None) -> None:
    """Run ``campaign`` into a temporary directory and print its wall time and figures."""
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    import pandas as pd
    out = Path(tempfile.mkdtemp(prefix="bench_search_")) / "out"
    cmd = [sys.executable, "-m", "sweep.cli", "run", campaign, "--out", str(out)]
    if address:
        cmd += ["--address", address]
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - t
    rows = pd.read_parquet(out / "rows")
    ok = rows[rows["status"] == "ok"]
    print(f"{campaign}: {len(rows):,} designs ({len(ok):,} served, {int((ok['goodput_rps'] > 0).sum()):,} meeting the "
          f"SLO at some rate) in {wall:.0f} s ({wall / 60:.1f} min); per served design: table "
          f"{ok['table_build_s'].median():.2f} s, simulations {(ok['wall_s'] - ok['table_build_s']).median():.2f} s "
          f"(medians); best goodput per mm^2 {ok['goodput_per_mm2'].max():.4f} req/s; results in {out}")


if __name__ == "__main__":
    main()
