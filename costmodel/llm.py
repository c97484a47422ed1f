"""The figures of an LLM inference step: DRAM traffic by what it carries (weights, KV cache,
activations) and the serving metrics (time to first token, time per output token, tokens/s,
energy per token).

A transformer step (`costmodel.zoo.transformer`) is one prefill of ``batch`` prompts of ``seq``
tokens, or one decode step of ``batch`` sequences (one new token each, attending to ``context``
cached tokens). Its layers run one after another, then its vector operations (no overlap, no
fusion, as the totals of `costmodel.vector` and the loop-nest layers are summed), so:

* latency (s) = latency (cycles) / (clock_mhz x 10^6), the accelerator's clock;
* prefill: ``ttft_s`` = the step's latency (the first output token needs the whole prompt);
  ``tokens_per_s`` = prompt tokens processed per second = batch x seq / ttft_s;
  ``energy_per_token_j`` = energy / (batch x seq);
* decode: ``time_per_token_s`` = the step's latency (every sequence gets one token per step);
  ``tokens_per_s`` = batch / time_per_token_s; ``energy_per_token_j`` = energy / batch.

DRAM traffic of a matmul (`dram_traffic`) is read off the loop-nest model's cost report at the
outermost memory level (an unbounded level: DRAM): word accesses x the level's word width. Its W
operand carries weights, or the KV cache where ``layer.w_role == "kv_cache"`` (attention's score
and context matmuls); its I operand activations; its O operand activations, or new KV cache
entries where ``layer.o_role == "kv_cache"`` (the K and V projections write the cache).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["ROLES", "dram_traffic", "step_metrics"]

#: What DRAM traffic carries.
ROLES = ("weights", "kv_cache", "activations")


def dram_traffic(layer, arch, mapping) -> dict[str, float]:
    """Bits moved at the outermost memory level by one execution of ``layer`` under ``mapping``
    on ``arch``, by role: ``{"weights", "kv_cache", "activations"}`` (bits; reads and writes). A
    level with a capacity (``size_bits`` set: on chip) moves nothing off chip: all zeros.

    Raises:
        ValueError: the mapping is invalid on ``arch`` (the cost model's reason).
    """
    from costmodel.loopnest.reference import evaluate

    rep = evaluate(layer, arch, mapping)
    if not rep.valid:
        raise ValueError(f"layer {layer.name!r}: invalid mapping: {rep.reason}")
    out = dict.fromkeys(ROLES, 0.0)
    role = {"W": "kv_cache" if layer.w_role == "kv_cache" else "weights", "I": "activations",
            "O": "kv_cache" if layer.o_role == "kv_cache" else "activations"}
    for op, levels in rep.breakdown["operands"].items():
        top = arch.levels(op)[-1]
        if top.size_bits is not None:
            continue
        lv = levels[-1]
        out[role[op]] += (lv["reads"] + lv["writes"]) * top.word_bits
    return out


def step_metrics(workload: dict[str, Any], energy_pj: float | None, latency_cycles: float | None,
                 clock_mhz: float) -> dict[str, Any]:
    """The serving figures of one transformer step (see the module docstring).

    Args:
        workload: `costmodel.workload.Network.workload` (``phase``, ``batch``, ``seq``).
        energy_pj: the step's energy (pJ), matmuls and vector operations; None if unknown.
        latency_cycles: the step's latency (cycles); None if unknown.
        clock_mhz: the accelerator's clock (MHz).

    Returns:
        ``latency_s``, ``energy_j``, ``tokens`` (per step), ``tokens_per_s``,
        ``energy_per_token_j``, and ``ttft_s`` (prefill) or ``time_per_token_s`` (decode); a
        figure whose inputs are unknown or infinite (no valid mapping) is None.
    """
    phase, batch = workload.get("phase"), int(workload.get("batch") or 1)
    tokens = batch * int(workload.get("seq") or 1) if phase == "prefill" else batch

    lat_s = latency_cycles / (clock_mhz * 1e6) if latency_cycles is not None and math.isfinite(latency_cycles) else None
    e_j = energy_pj * 1e-12 if energy_pj is not None and math.isfinite(energy_pj) else None
    out: dict[str, Any] = {"phase": phase, "latency_s": lat_s, "energy_j": e_j, "tokens": tokens,
                           "tokens_per_s": tokens / lat_s if lat_s else None,
                           "energy_per_token_j": e_j / tokens if e_j is not None else None}
    out["ttft_s" if phase == "prefill" else "time_per_token_s"] = lat_s
    return out
