"""A served load's report: the summary as text, and PNG plots read at a glance: the batch and the
KV cache's use over time, and (after a goodput search) the latency percentiles against the request
rate with the SLO drawn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from sweep.common import fmt
from sweep.reports.plots import figure, save

__all__ = ["serving_plots", "summary_lines", "read_serving"]


def read_serving(directory: str | Path) -> dict[str, Any]:
    """``DIR/summary.json`` of a `sweep serve` result."""
    return json.loads((Path(directory) / "summary.json").read_text())


def _binned(files: list, num_blocks: int, bins: int = 400) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bin centres s, time-weighted mean sequences per iteration, KV blocks used %) over ``bins``
    equal spans of the run, read file by file (bounded memory however many iterations)."""
    import pyarrow.parquet as pq
    lo, hi = np.inf, -np.inf
    for f in files:
        t = pq.read_table(f, columns=["start_s", "duration_s"])
        if t.num_rows:
            st, du = t["start_s"].to_numpy(), t["duration_s"].to_numpy()
            lo, hi = min(lo, float(st.min())), max(hi, float((st + du).max()))
    if not np.isfinite(lo):
        return np.zeros(0), np.zeros(0), np.zeros(0)
    edges = np.linspace(lo, hi, bins + 1)
    w, seq, used = np.zeros(bins), np.zeros(bins), np.zeros(bins)
    for f in files:
        t = pq.read_table(f, columns=["start_s", "duration_s", "sequences", "kv_blocks_used"])
        st, du = t["start_s"].to_numpy(), t["duration_s"].to_numpy()
        idx = np.clip(np.searchsorted(edges, st, side="right") - 1, 0, bins - 1)
        w += np.bincount(idx, weights=du, minlength=bins)
        seq += np.bincount(idx, weights=du * t["sequences"].to_numpy(), minlength=bins)
        used += np.bincount(idx, weights=du * t["kv_blocks_used"].to_numpy(), minlength=bins)
    ok = w > 0
    mid = (edges[:-1] + edges[1:]) / 2
    return mid[ok], seq[ok] / w[ok], 100 * used[ok] / w[ok] / max(1, num_blocks)


def serving_plots(directory: str | Path, plots: str | Path) -> list[str]:
    """Write ``timeline.png`` (sequences per iteration and KV blocks used, over time) and, with a
    goodput curve, ``latency_vs_rate.png`` into ``plots``; return the paths."""
    d = Path(directory)
    doc = read_serving(d)
    plots = Path(plots)
    plots.mkdir(parents=True, exist_ok=True)
    written = []
    files = sorted((d / "iterations").glob("*.parquet"))
    x, b, k = _binned(files, doc["num_blocks"])
    if len(x):
        fig, ax = figure(figsize=(7, 3.6))
        ax.plot(x, b, color="tab:blue", lw=1)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("sequences per iteration", color="tab:blue")
        ax2 = ax.twinx()
        ax2.plot(x, k, color="tab:red", lw=1)
        ax2.set_ylabel("KV cache used (%)", color="tab:red")
        ax2.set_ylim(0, 105)
        s = doc["summary"]
        written.append(save(fig, plots / "timeline.png",
                            title=f"{doc['setup']['network']} on {doc['setup']['arch']}: batch and KV cache "
                                  f"({s['requests']:,} requests, {s['preemptions']:,} preemptions)"))
    gp = doc.get("goodput")
    if gp and gp.get("curve"):
        curve = gp["curve"]
        rates = [c["rate"] for c in curve]
        fig, axes = figure(1, 2, figsize=(10, 3.8))
        slo = doc["slo"]
        for ax, key, target, label in ((axes[0], "ttft_s", slo.get("ttft_s"), "TTFT (s)"),
                                       (axes[1], "tpot_s", slo.get("tpot_s"), "time per output token (s)")):
            for p, style in (("p50", "-"), ("p90", "--"), ("p99", ":")):
                ax.plot(rates, [c[key][p] if c[key][p] is not None else np.nan for c in curve], style, marker=".",
                        label=p.upper())
            if target:
                ax.axhline(target, color="k", lw=0.8)
                ax.text(rates[0], target, " SLO", va="bottom", fontsize=8)
            ax.axvline(gp["goodput_rps"], color="tab:green", lw=0.8)
            ax.set_yscale("log")
            ax.set_xlabel("request rate (req/s)")
            ax.set_ylabel(label)
            ax.legend(fontsize=8)
        written.append(save(fig, plots / "latency_vs_rate.png",
                            title=f"goodput {fmt.sig(gp['goodput_rps'])} req/s at {slo['attainment']:.0%} attainment "
                                  f"({gp['simulations']} simulations)"))
    return written


def summary_lines(doc: dict[str, Any]) -> list[str]:
    """The summary of a served load as lines of text (`sweep serve`'s and `sweep report`'s)."""
    s, st, kv = doc["summary"], doc["setup"], doc["kv_cache"]
    sch = st["scheduler"]
    dep = st["deployment"]
    split = ", ".join(f"{k} {dep[k]}" for k in ("tp", "pp", "ep") if (dep.get(k) or 1) > 1) or "one chip"
    lay = s.get("layout") or {}
    pools = (f"; prefill pool {lay['prefill']['instances']} x {lay['prefill']['arch']} (tp {lay['prefill']['tp']}), "
             f"decode pool {lay['decode']['instances']} x {lay['decode']['arch']} (tp {lay['decode']['tp']}), K/V over "
             f"{lay['link']} (mean {fmt.seconds(s.get('kv_transfer_s'))} a request); {lay['chips']} chips"
             if "prefill" in lay else f"; {lay['replicas']} colocated copies, {lay['chips']} chips" if lay else "")
    prec = (st.get("precision") or {}).get("text")
    lines = [f"{st['network']} on {st['arch']} ({split}; {dep['fusion']} attention; "
             f"{prec + '; ' if prec else ''}mapper {st['mapper']}{pools}): "
             f"{s['requests']:,} requests from {doc['requests_source']}",
             f"scheduler (vLLM V1): max_num_seqs {sch['max_num_seqs']}, max_num_batched_tokens "
             f"{sch['max_num_batched_tokens']:,}, block_size {sch['block_size']}, chunked prefill "
             f"{'on' if sch['chunked_prefill'] else 'off'}, max_model_len {sch['max_model_len']:,}, graphs {sch['graphs']}; "
             f"host {fmt.seconds(st['host_s'])} per iteration, {fmt.sig(st['launch_us'])} us per launch",
             f"KV cache: {doc['num_blocks']:,} blocks of {sch['block_size']} tokens ({doc['num_blocks'] * sch['block_size']:,} "
             f"tokens, {kv['block_bytes'] / 1e6:.3g} MB each per chip)"
             + ("" if kv.get("given") else
                f" from {kv['capacity_bytes'] / 1e9:.1f} GB x {kv['gpu_memory_utilization']} - weights "
                f"{kv['weights_bytes'] / 1e9:.2f} GB - activations {kv['activations_bytes'] / 1e9:.3f} GB per chip")]
    head = f"{'':10}{'mean':>12}{'P50':>12}{'P90':>12}{'P99':>12}"
    lines.append(head)
    for k, name in (("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("e2e_s", "E2E"), ("queue_s", "queueing")):
        v = s[k]
        lines.append(f"{name:10}" + "".join(f"{fmt.seconds(v[p]):>12}" for p in ("mean", "p50", "p90", "p99")))
    slo = doc["slo"]
    att = s.get("slo_attainment")
    lines.append(f"throughput {fmt.sig(s['output_tokens_per_s'])} output tokens/s, {fmt.sig(s['requests_per_s'])} "
                 f"requests/s over {fmt.seconds(s['span_s'])} (offered {fmt.sig(s['offered_rate'])} req/s); "
                 f"{s['iterations']:,} iterations, mean batch {fmt.sig(s['mean_batch'])} sequences, KV cache "
                 f"{(s['kv_cache_utilization'] or 0):.1%} used; {s['preemptions']:,} preemptions; "
                 f"{s['refused']:,} refused, {s['truncated']:,} cut at max_model_len"
                 + (f", {s['dropped']:,} left out of the trace (prompt past the context)" if s.get("dropped") else ""))
    e_req = s["energy_per_request_j"]
    e_tok = s["energy_per_output_token_j"]
    lines.append(f"energy {fmt.energy(None if e_req is None else e_req * 1e12)} per request, "
                 f"{fmt.energy(None if e_tok is None else e_tok * 1e12)} per output token")
    if att is not None:
        tgt = " and ".join(f"{n} <= {fmt.seconds(slo[k])}" for k, n in (("ttft_s", "TTFT"), ("tpot_s", "TPOT"))
                           if slo.get(k))
        lines.append(f"SLO ({tgt}): {att:.1%} of requests meet it")
    gp = doc.get("goodput")
    if gp and gp["bracket"][1] is None:   # never missed: a finite load the system serves even all at once
        lines.append(f"goodput: not bounded by this load: the SLO holds for >= {slo['attainment']:.0%} of the "
                     f"requests up to {fmt.sig(gp['goodput_rps'])} req/s, all of them all but at once "
                     f"({gp['simulations']} simulations); serve more requests (--requests, --duration) to find it")
    elif gp:
        lines.append(f"goodput {fmt.sig(gp['goodput_rps'])} req/s (the highest rate with >= {slo['attainment']:.0%} "
                     f"meeting the SLO; bracket {fmt.sig(gp['bracket'][0])}..{fmt.sig(gp['bracket'][1])} req/s, "
                     f"{gp['simulations']} simulations)")
    return lines
