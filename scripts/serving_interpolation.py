"""How close the serving cost table's interpolation comes to mapping the same mixed iteration
directly: iterations held out of a served trace (their scheduled (q, p) per sequence, recorded as
the scheduler formed them), each mapped as one network (`costmodel.serving.iteration_network`,
`sweep.commands.map_eval.map_network`, the same mapper and seed) and priced by the table; the
device's time and energy compared (launches and the host's time are counts, the same in both, and
left out). A batch of up to 512 tokens is padded to vLLM's CUDA-graph capture size in both, as the
simulation runs it.

    python scripts/serving_interpolation.py                         # llama3_8b on a100, 60 iterations
    python scripts/serving_interpolation.py --network mixtral_8x7b --arch llm_ws --iterations 30 --json out.json
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def held_out(table, cfg, num_blocks, rate: float, count: int, n: int, seed: int) -> list[list[tuple[int, int]]]:
    """``n`` iterations of the bundled conversation trace's lengths at ``rate`` req/s, as the
    reference loop forms them, drawn evenly over the run (every kind: prefill-heavy, mixed,
    decode-only)."""
    from costmodel.serving import read_trace, synthetic
    from costmodel.serving.reference import simulate_reference
    trace = read_trace("azure_conv_2023", max_context=cfg.max_model_len, drop_long=True)
    reqs = synthetic(rate, count=count, prompt="trace", output="trace", lengths_from=trace, seed=seed)
    seen: list[list[tuple[int, int]]] = []
    orig = table.attention

    def spy(q, p):
        seen.append(list(zip(np.asarray(q).tolist(), np.asarray(p).tolist())))
        return orig(q, p)

    table.attention = spy
    try:
        simulate_reference(reqs, table, cfg, num_blocks)
    finally:
        table.attention = orig
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(len(seen), size=min(n, len(seen)), replace=False))
    return [seen[i] for i in idx]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--network", default="llama3_8b")
    ap.add_argument("--arch", default="a100")
    ap.add_argument("--mapper", default="salsa")
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--rate", type=float, default=6.0, help="req/s of the held-out run (near the a100's capacity)")
    ap.add_argument("--requests", type=int, default=600)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the per-iteration figures here")
    a = ap.parse_args()

    from costmodel.serving import iteration_network
    from sweep.commands.map_eval import map_network
    from sweep.serving.serve import setup
    t0 = time.perf_counter()
    st = setup(a.network, a.arch, mapper=a.mapper, launch_us=0.0, host_s=0.0)
    print(f"cost table: {st.table.meta['grid_points']} grid points, {st.table.meta['layers_mapped']} layers, "
          f"{time.perf_counter() - t0:.1f} s")
    its = held_out(st.table, st.cfg, st.num_blocks, a.rate, a.requests, a.iterations, a.seed)
    cache: dict = {}
    rows = []
    clock = st.arch.clock_mhz * 1e6
    from costmodel.serving import capture_sizes
    sizes = capture_sizes(st.cfg.max_num_seqs, st.cfg.max_num_batched_tokens)
    for k, seqs in enumerate(its):
        T = sum(q for q, _ in seqs)
        padded = next((c for c in sizes if c >= T), T)   # vLLM pads a graph batch up to its capture size
        net = iteration_network(st.dep, seqs, padded)
        net = type(net)(net.name, net.layers, net.repeats, net.source, net.vector_ops, net.vector_repeats, {})
        res = map_network(net, st.arch, a.mapper, "latency", 0, None, cache=cache)
        direct_s = res["total"]["latency_cycles"] / clock
        direct_j = res["total"]["energy_pj"] * 1e-12 * st.dep.tp * st.dep.ep
        q = np.array([s[0] for s in seqs])
        p = np.array([s[1] for s in seqs])
        ds, dj, _ = st.table.dense(padded)
        hs, hj = st.table.head(len(seqs))
        a_s, a_j = st.table.attention(q, p)
        tab_s = ds + hs + float(a_s.sum()) / st.table.ep
        tab_j = dj + hj + float(a_j.sum())
        rows.append({"tokens": int(q.sum()), "padded": padded, "sequences": len(seqs), "prefill_sequences": int((q > 1).sum()),
                     "direct_s": direct_s, "table_s": tab_s, "err_s": tab_s / direct_s - 1,
                     "direct_j": direct_j, "table_j": tab_j, "err_j": tab_j / direct_j - 1})
        print(f"{k + 1:3d}/{len(its)} T {q.sum():5d} S {len(seqs):3d} (prefill {int((q > 1).sum())}): direct "
              f"{direct_s * 1e3:8.3f} ms, table {tab_s * 1e3:8.3f} ms ({rows[-1]['err_s']:+.2%}); energy "
              f"{rows[-1]['err_j']:+.2%}", flush=True)
    es = np.abs([r["err_s"] for r in rows])
    ej = np.abs([r["err_j"] for r in rows])
    print(f"{a.network} on {a.arch}, {len(rows)} held-out iterations: time |error| mean {es.mean():.2%}, max "
          f"{es.max():.2%} ({(es <= 0.02).mean():.0%} within 2%); energy mean {ej.mean():.2%}, max {ej.max():.2%}; "
          f"{time.perf_counter() - t0:.0f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"network": a.network, "arch": a.arch, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
