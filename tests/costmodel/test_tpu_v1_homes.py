"""One rule for where a tensor lives, for matmuls and vector operations alike (issue 43, item 6): on
TPU v1 the DRAM holds weights only (its TOML: the weight memory, operands ["W"]); activations live
in the 24 MiB unified buffer, the outermost level serving I and O. A step whose live activations
exceed it is refused before mapping, naming it; the vector operations read and write there, not the
DRAM. Every other preset's DRAM serves I and O: nothing changes there."""

from __future__ import annotations

import pytest

from costmodel.capacity import step_footprint
from costmodel.loopnest.arch import load_accelerator
from costmodel.transformer import build_transformer, transformer_config
from costmodel.vector import network_vector_costs, vector_totals

UB = 24 * 2**20  # tpu_v1.toml: unified_buffer size_bits / 8 (Jouppi et al., ISCA 2017, Sec. 2: 24 MiB)


def test_llama_prefill_activations_exceed_the_unified_buffer_by_hand():
    """Llama-3-8B prefill of 2,048 tokens at 8 bits: the residual stream 2,048 x 4,096 B = 8,388,608 B
    plus the largest live operation, ffn_gate's input 2,048 x 4,096 and output 2,048 x 14,336 B
    (37,748,736 B): 46,137,344 B > 25,165,824 B. Half the tokens fit: 4,194,304 + 18,874,368 =
    23,068,672 B. (8 bits: tpu_v1's [precision], the bfloat16 checkpoint's unstated; unfused.)"""
    arch = load_accelerator("tpu_v1")
    llama = transformer_config("llama3_8b").at_accelerator_precision()
    fp = step_footprint(build_transformer(llama, phase="prefill", seq=2048, fusion="unfused"), arch)
    assert fp.activations_bytes == 2048 * 4096 + 2048 * (4096 + 14336) == 46_137_344
    assert fp.activations_home == "unified_buffer" and fp.activations_capacity_bytes == UB
    assert not fp.fits and "unified_buffer" in fp.reason() and "DRAM holds weights only" in fp.reason()
    half = step_footprint(build_transformer(llama, phase="prefill", seq=1024, fusion="unfused"), arch)
    assert half.activations_bytes == 23_068_672 and half.fits


def test_vector_ops_live_with_the_activations_not_in_the_weight_memory():
    """A decode step's vector operations on tpu_v1: unfused, every op in the unified buffer, 0 DRAM
    bits (they read and wrote the weight-only DRAM before); on tpu_like (DRAM serves I and O) they
    stay in DRAM. Fused (the default), an element-wise op in its producer's drain with no other
    input (RoPE of q and k, SiLU: `costmodel.vector` rule (a)) touches no memory ("-"); the others
    are in the unified buffer, none in the DRAM."""
    net = build_transformer("mixtral_8x7b", phase="decode", batch=4, context=512, fusion="unfused")
    v1 = network_vector_costs(net, load_accelerator("tpu_v1"))
    assert {r["memory"] for r in v1} == {"unified_buffer"} and vector_totals(v1)["dram_bits"] == 0
    like = network_vector_costs(net, load_accelerator("tpu_like"))
    assert {r["memory"] for r in like} == {"dram"} and vector_totals(like)["dram_bits"] > 0
    fused = network_vector_costs(build_transformer("mixtral_8x7b", phase="decode", batch=4, context=512),
                                 load_accelerator("tpu_v1"))
    assert {r["name"] for r in fused if r["memory"] == "-"} == {"rope_q", "rope_k", "act"}
    assert {r["memory"] for r in fused} == {"unified_buffer", "-"} and vector_totals(fused)["dram_bits"] == 0


@pytest.mark.parametrize("preset", ["a100", "eyeriss_like", "llm_ws", "simba_like", "tpu_like", "tpu_v4"])
def test_presets_whose_dram_serves_activations_keep_them_there(preset):
    fp = step_footprint(build_transformer("llama3_2_1b", phase="decode", context=256), load_accelerator(preset))
    assert fp.activations_home == "" and fp.activations_capacity_bytes is None
