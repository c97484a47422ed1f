"""Side by side with Vidur (microsoft/vidur, MLSys'24) on the same requests: the batches each
simulator formed, the latencies users saw, and the difference decomposed into the per-operation
costs (Vidur's measured A100 kernels against our mapped ones).

Vidur's run is pinned in ``tests/data/peers_serving/vidur_sarathi_conv.json`` (made by
``scripts/peers/vidur_driver.py``: 300 requests of the Azure conversation trace's lengths at Poisson
2 req/s, Llama-3-8B on one A100, Vidur's Sarathi scheduler with a 2,048-token chunk and a batch cap of
256, blocks of 16; its random-forest predictor on its shipped A100 profiles). Ours serves the same
requests (same arrivals and lengths; Vidur counts its decode tokens after the prefill, so our output
is decode + 1: the prefill's token, then one per decode) under vLLM V1's rules with the same budget,
cap and block size, each iteration priced by the ``a100`` preset's cost table like for like: no
launch cost and no host time (Vidur's kernel times carry neither; its CPU overhead is off by default).

    python scripts/serving_vidur.py [--table cost_table.json] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from sweep.commands.peers_serving import PINNED, batch_figures, ours_setup, per_op, serve_pinned


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", help="an a100 cost table for llama3_8b (cost_table.json of sweep serve --out)")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    pinned = json.loads(PINNED.read_text())
    st = ours_setup(a.table)
    from costmodel.serving import request_figures
    vb = pinned["batches"]
    runs = {"vidur": None}
    res = serve_pinned(st, pinned)
    d0 = batch_figures(res.iterations["tokens"], res.iterations["prefill_tokens"], res.iterations["decode_tokens"],
                       res.iterations["sequences"], res.iterations["duration_s"])
    vfig = batch_figures(vb["tokens"], vb["prefill_tokens"], vb["decode_tokens"], vb["size"], vb["time_s"])
    scale = vfig["decode_iteration_p50_ms"] / d0["decode_iteration_p50_ms"]
    runs = {"ours": res, "ours, costs x %.3f" % scale: serve_pinned(st, pinned, scale)}
    batches = {"vidur": vfig}
    lat: dict = {}
    vr = pinned["requests"]
    for name, r in runs.items():
        it = r.iterations
        batches[name] = batch_figures(it["tokens"], it["prefill_tokens"], it["decode_tokens"], it["sequences"],
                                      it["duration_s"])
        f = request_figures(r)
        for k in ("ttft_s", "e2e_s", "tpot_s"):
            o = f[k][np.isfinite(f[k])]
            for p in (50, 90, 99):
                row = lat.setdefault(f"{k} P{p}", {"vidur": float(np.percentile(np.asarray(vr[k]), p))})
                row[name] = float(np.percentile(o, p))
    ops = per_op(st, 8, pinned) + per_op(st, 2048, pinned)
    doc = {"batches": batches, "latency": lat, "per_op": ops, "source": pinned["source"], "scale": scale,
           "attention_profile": pinned["attention_profile"]}
    names = list(batches)
    print(f"Vidur ({pinned['source']}) and ours on the same 300 requests (Llama-3-8B, A100, chunk / budget 2,048, "
          f"cap 256, blocks of 16); the last column: our costs scaled by {scale:.3f}, Vidur's median decode iteration "
          "over ours, so that the scheduling alone differs")
    print(f"{'batches':26}" + "".join(f"{n:>22}" for n in names))
    for k in batches["vidur"]:
        print(f"{k:26}" + "".join(f"{batches[n][k]:>22,.4g}" for n in names))
    print(f"{'latency (s)':26}" + "".join(f"{n:>22}" for n in names))
    for k, row in lat.items():
        print(f"{k:26}" + "".join(f"{row[n]:>22.4f}" for n in names))
    print(f"{'op (ms per block)':26}{'tokens':>8}{'Vidur':>10}{'ours':>10}{'ours/Vidur':>12}")
    for r in ops:
        print(f"{r['op']:26}{r['tokens']:>8}{r['vidur_ms']:>10.4f}{r['ours_ms']:>10.4f}{(r['ratio'] or 0):>12.3f}")
    if a.json:
        Path(a.json).write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    sys.exit(main())
