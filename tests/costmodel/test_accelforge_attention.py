"""Fused and unfused attention against AccelForge's fused mapper (FFM), pinned: one KV-head group
of Llama-3-8B (4 query heads, head dim 128), 2,048 tokens, dense, 8 bits per value; AccelForge
1.0.467 on its tpu_v4i example (`scripts/accelforge_attention/`, run 2026-11-28, its JSON in
`tests/data/accelforge_attention/`), ours on llm_ws with LOMA (objective energy).

Same on both sides, tensor by tensor, in main-memory bits: Q read once, the output written once;
unfused, the scores written and read and the probabilities written and read once each (ours: the
score matmul's output, the softmax's read and write, the context matmul's input); fused, neither
ever leaves the chip. Different, and why: K and V. AccelForge keeps them whole in tpu_v4i's 128 MiB
global buffer (read once); llm_ws has no on-chip level for the W operand above its 16-bit
registers, and our fused query tile is fixed at 128 positions, so K and V are read once per query
tile: 2,048 / 128 = 16 times (docs/llm.md)."""

from __future__ import annotations

import json

import pytest

from costmodel.loopnest.arch import load_accelerator
from costmodel.loopnest.mapping import Mapping
from costmodel.loopnest.reference import evaluate
from costmodel.vector import vector_cost
from costmodel.workload import VectorOp
from costmodel.transformer.attention import attention_layers
from paths import REPO

DATA = REPO / "tests" / "data" / "accelforge_attention"
T, GROUP, HD = 2048, 4, 128


def _af(mode: str) -> dict:
    d = json.loads((DATA / f"{mode}_T2048_b8_energy.json").read_text())
    assert d["tokens"] == T and d["bits"] == 8 and d["metric"] == "energy"
    return d["MainMemory_bits_per_tensor"]


def _ours(fusion: str) -> dict:
    """Main-memory bits per operand of the attention matmuls (W: K or V, I: Q or P, O: S or the
    output), each layer's LOMA mapping x its repeats; keyed by (layer name, operand)."""
    from sweep import api
    acc = load_accelerator("llm_ws")
    out: dict = {}
    layers, reps = attention_layers(GROUP, HD, T, T, False, fusion, 1)
    for l, r in zip(layers, reps):
        res = api.map_layer(l, acc, "loma", objective="energy", params={"lpf_limit": 7})
        rep = evaluate(l, acc, Mapping.from_dict(res.mapping))
        a = acc.for_layer(l)
        for op, levels in rep.breakdown["operands"].items():
            top = a.levels(op)[-1]
            bits = 0.0 if top.size_bits is not None else (levels[-1]["reads"] + levels[-1]["writes"]) * top.word_bits
            out[(l.name, op)] = out.get((l.name, op), 0.0) + bits * r
    return out


@pytest.fixture(scope="module")
def unfused():
    return _ours("unfused")


@pytest.fixture(scope="module")
def fused():
    return _ours("fused")


def test_unfused_scores_and_probabilities_move_as_accelforge_counts(unfused):
    af = _af("unfused")
    assert unfused[("score", "O")] == af["QK"]["write"] == 4 * T * T * 8
    softmax = vector_cost(VectorOp("softmax", "softmax", GROUP * T * T, rows=GROUP * T), load_accelerator("llm_ws"))
    assert softmax.memory == "dram"          # 2 x 16 MiB does not fit llm_ws's 16 MiB unified buffer
    assert softmax.read_bits == af["QK"]["read"] and softmax.write_bits == af["QK_softmax"]["write"]
    assert unfused[("context", "I")] == af["QK_softmax"]["read"]
    assert unfused[("score", "I")] == af["Q"]["read"] and unfused[("context", "O")] == af["AV"]["write"]
    # K and V: read once by AccelForge (global buffer), re-read by ours (no on-chip W level)
    assert unfused[("score", "W")] >= af["K"]["read"] and unfused[("context", "W")] >= af["V"]["read"]


def test_fused_keeps_scores_on_chip_as_accelforge_does(fused):
    af = _af("fused")
    assert "QK" not in af and "QK_softmax" not in af   # nothing of them in main memory
    onchip = {k: v for k, v in fused.items() if (k[0].startswith("score") and k[1] == "O")
              or (k[0].startswith("context") and k[1] == "I")}
    assert onchip and all(v == 0 for v in onchip.values())
    q = sum(v for (n, op), v in fused.items() if n.startswith("score") and op == "I")
    o = sum(v for (n, op), v in fused.items() if n.startswith("context") and op == "O")
    assert q == af["Q"]["read"] and o == af["AV"]["write"]
    k = sum(v for (n, op), v in fused.items() if n.startswith("score") and op == "W")
    v = sum(v for (n, op), v in fused.items() if n.startswith("context") and op == "W")
    assert k == af["K"]["read"] * (T // 128) and v == af["V"]["read"] * (T // 128)
