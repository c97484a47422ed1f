"""Serving side by side with Vidur (microsoft/vidur, MLSys'24) on the same requests
(`scripts/serving_vidur.py` prints it; docs/serving.md shows it): the pinned run's requests served by
ours, the batches each simulator formed, and our per-operation costs against Vidur's measured A100
kernels. Vidur's run: ``tests/data/peers_serving/vidur_sarathi_conv.json`` (SOURCES.md there)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["PINNED", "OPS", "ours_setup", "serve_pinned", "batch_figures", "per_op", "load_pinned"]

REPO = Path(__file__).resolve().parents[2]
PINNED = REPO / "tests/data/peers_serving/vidur_sarathi_conv.json"
#: Vidur's operations (per block, vidur/entities/execution_time.py) and ours that do the same work.
OPS = {"attn_pre_proj": ("q_proj", "k_proj", "v_proj"), "attn_post_proj": ("o_proj",),
       "mlp_up_proj": ("ffn_gate", "ffn_up"), "mlp_down_proj": ("ffn_down",), "mlp_act": ("act", "gate_mul"),
       "attn_rope": ("rope_q", "rope_k"), "input_layernorm": ("attn_norm",), "post_attention_layernorm": ("ffn_norm",),
       "add": ("attn_residual", "ffn_residual")}


def ours_setup(table_file: str | None):
    from costmodel.serving import CostTable
    from sweep.serving.serve import setup
    sched = {"max_num_seqs": 256, "max_num_batched_tokens": 2048, "block_size": 16, "graphs": "graph"}
    table = CostTable.from_dict(json.loads(Path(table_file).read_text())) if table_file else None
    return setup("llama3_8b", "a100", launch_us=0.0, host_s=0.0, scheduler=sched, table=table)


def serve_pinned(st, pinned: dict, scale: float = 1.0):
    """Our run of Vidur's requests; ``scale``: every part's time x that (costs matched to Vidur's,
    to compare the scheduling alone)."""
    from costmodel.serving import CostTable, Requests, simulate
    r = pinned["requests"]
    reqs = Requests(np.asarray(r["arrival_s"]), np.asarray(r["prefill_tokens"]),
                    np.asarray(r["decode_tokens"]) + 1, "Vidur's 300 requests")
    table = st.table
    if scale != 1.0:
        d = table.to_dict()
        for k in ("dense_s", "head_s", "decode_s", "chunk_s"):
            d[k] = (np.asarray(d[k]) * scale).tolist()
        table = CostTable.from_dict(d)
    return simulate(reqs, table, st.cfg, st.num_blocks)


def batch_figures(tokens, prefill, decode, size, time_s) -> dict:
    tokens, prefill, decode, size = (np.asarray(x) for x in (tokens, prefill, decode, size))
    kinds = {"prefill_only": int(((decode == 0) & (prefill > 0)).sum()),
             "decode_only": int(((prefill == 0) & (decode > 0)).sum()),
             "mixed": int(((prefill > 0) & (decode > 0)).sum())}
    dec = (prefill == 0) & (decode > 0)
    return {"iterations": len(tokens), **kinds, "size_p50": float(np.percentile(size, 50)),
            "size_p90": float(np.percentile(size, 90)), "size_max": int(size.max()), "mean_size": float(size.mean()),
            "tokens_total": int(tokens.sum()), "decode_iteration_p50_ms": float(np.median(np.asarray(time_s)[dec]) * 1e3),
            "busy_s": float(np.sum(time_s))}


def per_op(st, T: int, pinned: dict) -> list[dict]:
    """Ours per block (ms) of each Vidur operation at T tokens against Vidur's measured kernel."""
    from costmodel.serving import dense_part
    from sweep.commands.map_eval import map_network
    net = dense_part(st.dep, T)
    res = map_network(net, st.arch, "salsa", "latency", 0, None)
    clock = st.arch.clock_mhz * 1e3    # cycles per ms
    L = st.dep.config.layers
    by_shape = {l.shape_key(): row["latency_cycles"] for (l, _), row in zip(net.unique(), res["layers"])}
    ours: dict[str, float] = {}
    for l, rep in net:       # every layer by its own name (equal shapes share one mapping)
        ours[l.name] = ours.get(l.name, 0.0) + by_shape[l.shape_key()] * rep / L / clock
    for v in (res.get("vector") or {}).get("ops", []):   # a vector op's own time (a fused one overlaps its producer)
        ours[v["name"]] = ours.get(v["name"], 0.0) + v["latency_cycles"] * v["repeat"] / L / clock
    vk = pinned["kernels_ms_per_layer"][str(T)]
    out = []
    for op, names in OPS.items():
        o = sum(ours.get(n, 0.0) for n in names)
        out.append({"op": op, "tokens": T, "vidur_ms": vk[op], "ours_ms": o, "ratio": o / vk[op] if vk[op] else None})
    return out


def load_pinned(path: Path = PINNED) -> dict:
    """The pinned Vidur run."""
    return json.loads(Path(path).read_text())
