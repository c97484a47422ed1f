"""Serving on many chips against the LLM peers: GenZ (``genz-llm`` 0.0.16) and ``llm-analysis`` 0.2.2 on
Llama-3-70B and Mixtral-8x7B on A100s, each figure beside ours on the same model, platform and split.

The peers' figures are pinned in ``tests/data/peers_llm/`` (their drivers: ``scripts/peers/``; run in
venvs of their own, every efficiency factor 1). Ours come from `sweep.commands.map_eval.map_network` of
each case's step on the ``a100`` preset re-described with the peer's platform (`PLATFORMS`): the DRAM
bandwidth as the peer states it (GenZ counts 2,039 "GB/s" in binary units: 2.189 TB/s), all of it
sustained, no fixed cost per launch (neither peer has one), the peer's interconnect as our
`costmodel.system.interconnect.Interconnect` (GenZ: 150 GiB/s per link, 1 us per hop and 5 us per
collective; llm-analysis: 300 GB/s, no latency term: its 8 us is a floor per all-reduce, which an
additive model cannot state), and a dense prefill (both peers compute the whole score square). What
stays ours: the loop-nest mapping of every matmul (tiles, reuse, stalls), the vector operations (norms,
softmax, RoPE, residual adds: neither peer costs them in time), and our split (`costmodel.system`).

`compare` gives one row per case: the peer's figure, ours on its platform, the ratio, and the
conventions that differ where the physics does not (`CONVENTIONS`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["PLATFORMS", "CONVENTIONS", "load_peer", "peer_arch", "our_case", "compare"]

#: Each peer's A100 platform as ours: DRAM GB/s per HBM2E stack (5 stacks), interconnect, launch cost;
#: and the attention it models as our ``fusion``: both FlashAttention-style (the score matrix never
#: in DRAM): GenZ's Logit keeps its output and Attend its input on chip (attention.py,
#: ResidencyInfo.C_onchip / A_onchip), llm-analysis's attention traffic is that of flash_attn=True
#: (its default: 2 s b h + 4 n_head s b activations, no s^2 term, analysis.py
#: get_activation_memory_per_layer_attn).
PLATFORMS: dict[str, dict[str, Any]] = {
    "genz": {"gbps_per_unit": 2039 * 2 ** 30 / 1e9 / 5,   # 2,039 x 2^30 B/s (GenZ's unit.py: binary GB)
             "interconnect": {"name": "genz_a100", "links": 1, "gbps_per_link": 150 * 2 ** 30 / 1e9,
                              "latency_us": 1.0, "collective_us": 5.0},
             "file": "genz.json", "platform": "builtin_A100_80GB_GPU", "fusion": "fused"},
    "llm-analysis": {"gbps_per_unit": 2039 / 5,
                     "interconnect": {"name": "llma_a100", "links": 1, "gbps_per_link": 300.0, "latency_us": 0.0},
                     "file": "llm_analysis.json", "platform": "builtin_a100-sxm-80gb", "variant": "swiglu_equiv",
                     "fusion": "fused"},
}

#: Conventions of each peer that differ from ours (their source, from the installed packages).
CONVENTIONS: dict[str, dict[str, str]] = {
    "genz": {
        "prefill": "embedding as a dense GEMM (seq x vocab/tp x hidden, GenZ embedding.py:14); logits over every "
                   "prompt token (get_language_model.py:168); one roofline per op, no vector ops",
        "pp": "latency of one micro-batch of batch/pp through all stages, TTFT not reduced by PP "
              "(get_language_model.py:151-164, llm_decode.py:24)",
        "ep": "attention split over tp x ep chips (attention.py:11), ours data parallel over the ep groups",
        "moe": "ceil(top_k / ep) experts active per chip at decode whatever the batch (ffn.py:97): 2 of Mixtral's "
               "8 read at batch 32, where 64 routed tokens reach all 8 (ours)",
        "memory": "decode weights without the input embedding table; KV per PP stage for a micro-batch",
    },
    "llm-analysis": {
        "prefill": "MLP FLOPs fixed at 16 b s h^2 (analysis.py:913); logits over every prompt token; embedding "
                   "table read whole",
        "decode": "no QK/AV over the context; the KV cache counted twice (load and store, analysis.py:1571); "
                  "8 us floor per all-reduce",
        "pp": "one stage's layers only (latency / pp), no send, no bubble (analysis.py:1303)",
        "ep": "EP divides expert memory only; times unchanged",
        "memory": "embeddings always tied (139.0 GB for 70B, not 141.1); weights not divided by PP",
    },
}

_MODELS = {"Llama-3-70B": "llama3_70b", "Mixtral-8x7B": "mixtral_8x7b"}


def load_peer(peer: str, data_dir: str | Path) -> list[dict[str, Any]]:
    """The pinned records of ``peer`` (`PLATFORMS` key) on its built-in A100 (and, for llm-analysis, the
    SwiGLU-equivalent MLP width): dicts with model, phase, batch, seq_or_context, tp, pp, ep, ttft_s or
    time_per_token_s (s), weights / kv_cache / memory_per_chip_bytes, comm_s, and whether the peer
    refused the case on capacity (``figures_with_capacity_check_disabled``).

    Raises:
        ValueError: ``peer`` unknown, or the file missing.
    """
    if peer not in PLATFORMS:
        raise ValueError(f"peer = {peer!r}: expected one of {list(PLATFORMS)}")
    p = Path(data_dir) / PLATFORMS[peer]["file"]
    if not p.is_file():
        raise ValueError(f"{p}: no such file (the pinned {peer} records)")
    want = PLATFORMS[peer]
    return [r for r in json.loads(p.read_text()) if r.get("platform") == want["platform"]
            and r.get("model_variant", want.get("variant")) == want.get("variant")]


def peer_arch(peer: str):
    """The ``a100`` preset with ``peer``'s DRAM bandwidth, all of it sustained and no fixed cost per
    launch (`PLATFORMS`), as a loop-nest `Accelerator` (its TOML re-read with those three values),
    without the GPU's execution effects (the peers model an ideal roofline chip)."""
    import importlib.resources
    import tempfile

    from costmodel.loopnest.arch import load_accelerator
    text = (importlib.resources.files("costmodel.presets") / "a100.toml").read_text()
    text = re.sub(r"(?m)^launch_overhead_us = .*$", "launch_overhead_us = 0.0", text)
    text = re.sub(r"(?m)^gbps_per_unit = .*$", f"gbps_per_unit = {PLATFORMS[peer]['gbps_per_unit']!r}", text)
    text = re.sub(r"(?m)^sustained = .*$", "sustained = 1.0", text)
    text = re.sub(r'(?m)^name = "a100"', f'name = "a100_as_{peer.replace("-", "_")}"', text)
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(text)
    import dataclasses
    # the peers' chip is the roofline's: no GPU execution effects ([gpu]) and no power figures
    return dataclasses.replace(load_accelerator(f.name), gpu=None, power=None)


def our_case(peer: str, arch, rec: dict[str, Any], mapper: str = "salsa", cache: dict | None = None) -> dict[str, Any]:
    """Our figures for the peer's record ``rec`` on ``arch`` (`peer_arch`) with the peer's interconnect:
    ``latency_s`` (TTFT or time per output token), ``weights_bytes``, ``kv_cache_bytes``, ``fits``,
    ``collectives_s``; ``status`` "does not fit" (with ``reason``) where our capacity rule refuses it."""
    from costmodel.system.serving import System
    from sweep.commands.map_eval import map_network
    from sweep.common.errors import DoesNotFitError
    from costmodel.transformer import build_transformer

    model, phase, b, n = _MODELS[rec["model"]], rec["phase"], int(rec["batch"]), int(rec["seq_or_context"])
    split = {k: int(rec[k]) for k in ("tp", "pp", "ep") if int(rec[k]) > 1}
    step = {"phase": phase, "batch": b, "fusion": PLATFORMS[peer]["fusion"],
            **({"seq": n, "attention": "dense"} if phase == "prefill" else {"context": n})}
    if split.get("ep", 1) > b:  # one sequence cannot be split over expert-parallel groups
        return {"status": "n/a", "reason": f"ep {split['ep']} > batch {b}: attention is data parallel in ours"}
    net = build_transformer(model, **step, **split)
    m = split.get("pp", 1) if phase == "decode" and peer == "genz" else 1   # GenZ's micro-batches of batch / pp
    if b % m:
        m = 1
    system = System.from_dict({**split, "micro_batches": m, "interconnect": PLATFORMS[peer]["interconnect"]})
    try:
        res = map_network(net, arch, mapper, "latency", 0, None, None, cache, system=system)
    except DoesNotFitError as e:
        return {"status": "does not fit", "reason": str(e)}
    mem, s = res["llm"]["memory"], res["system"]
    return {"status": "ok", "latency_s": s["latency_s"], "collectives_s": s["collectives_s"],
            "weights_bytes": mem["weights_bytes"], "kv_cache_bytes": mem["kv_cache_bytes"]}


def compare(peer: str, data_dir: str | Path, mapper: str = "salsa", models=("Llama-3-70B", "Mixtral-8x7B"),
            progress=None) -> list[dict[str, Any]]:
    """One row per pinned case of ``peer``: ``model``, ``phase``, ``batch``, ``n`` (prompt or context),
    ``tp``, ``pp``, ``ep``, ``peer_s`` (its TTFT or time per output token), ``peer_refused`` (its
    capacity check refused it; its figure is with the check off), ``ours_s``, ``ratio`` (ours / peer),
    ``peer_weights_bytes`` / ``ours_weights_bytes``, ``peer_kv_bytes`` / ``ours_kv_bytes``,
    ``status``, ``convention`` (what differs beyond the physics, `CONVENTIONS`)."""
    arch = peer_arch(peer)
    cache: dict = {}
    rows = []
    recs = [r for r in load_peer(peer, data_dir) if r["model"] in models]
    for i, r in enumerate(recs):
        if progress:
            progress(i, len(recs), f"{r['model']} {r['phase']} tp{r['tp']} pp{r['pp']} ep{r['ep']}")
        key = "ttft_s" if r["phase"] == "prefill" else "time_per_token_s"
        ours = our_case(peer, arch, r, mapper, cache)
        conv = CONVENTIONS[peer]
        notes = [conv[k] for k in (r["phase"],) if k in conv]
        notes += [conv["pp"]] if int(r["pp"]) > 1 else []
        notes += [conv["ep"]] if int(r["ep"]) > 1 else []
        notes += [conv["moe"]] if "moe" in conv and r["model"] == "Mixtral-8x7B" and r["phase"] == "decode" else []
        row = {"model": r["model"], "phase": r["phase"], "batch": r["batch"], "n": r["seq_or_context"], "tp": r["tp"],
               "pp": r["pp"], "ep": r["ep"], "peer_s": r.get(key), "peer_refused": bool(r.get("figures_with_capacity_check_disabled")),
               "peer_weights_bytes": r.get("weights_per_chip_bytes"), "peer_kv_bytes": r.get("kv_cache_per_chip_bytes"),
               "status": ours["status"], "ours_s": ours.get("latency_s"), "ours_weights_bytes": ours.get("weights_bytes"),
               "ours_kv_bytes": ours.get("kv_cache_bytes"), "ours_collectives_s": ours.get("collectives_s"),
               "convention": "; ".join(notes), "reason": ours.get("reason", "")}
        row["ratio"] = row["ours_s"] / row["peer_s"] if row["ours_s"] and row["peer_s"] else None
        rows.append(row)
    if progress:
        progress(len(recs), len(recs), "")
    return rows
