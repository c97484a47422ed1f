"""A small architecture search over GPT-2 steps on the LLM template (every DRAM kind, two unit
counts, two clocks, two vector units) for the reuse, bound and pruned-grid tests: SALSA with the
spatial unrolling searched and a short schedule (what is tested is the engine, not the search)."""

from __future__ import annotations

import copy
from typing import Any

CAMPAIGN: dict[str, Any] = {
    "name": "llm_grid", "output": "unused",
    "networks": [{"model": "gpt2", "phase": "decode", "batch": 2, "context": 64, "fusion": "fused"},
                 {"model": "gpt2", "phase": "prefill", "seq": 32, "fusion": "fused"}],
    "objectives": ["latency"], "seeds": [3],
    "architectures": {"kind": "loopnest", "template": "llm_ws", "grid": {
        "array": {"D1": [32], "D2": [32]},
        "memory": {"accumulators": {"size_kib": [64], "word_bits": [1024]},
                   "unified_buffer": {"size_kib": [512], "word_bits": [256]}},
        "dram": ["lpddr5", "ddr5", "hbm2e", "hbm3"], "dram_units": [1, 2], "clock_mhz": [700, 1400],
        "vector": {"lanes": [128, 512]}}},
    "search": {"sampler": "grid", "objectives": ["time_per_token_s"]},
    "mappers": [{"name": "salsa", "params": {"spatial": "search", "chains": 2, "iterations": 20,
                                              "max_evaluations": 120}}],
}


def campaign(**grid: Any) -> dict[str, Any]:
    """A deep copy of `CAMPAIGN` with grid axes replaced (``array={"D1": [16, 32], ...}``)."""
    c = copy.deepcopy(CAMPAIGN)
    c["architectures"]["grid"].update(copy.deepcopy(grid))
    return c
