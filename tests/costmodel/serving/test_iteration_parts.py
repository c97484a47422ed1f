"""An iteration's parts add up to the step model's steps: a whole prompt is the prefill step, a
batch of decodes the decode step, layer for layer and vector op for vector op (so their mapped
costs add too: every part's operations run one after another)."""

from collections import Counter

import pytest

from costmodel.serving import Deployment, attention_part, dense_part, head_part, iteration_network
from costmodel.transformer import build_transformer
from tests.paths import DATA

HF = DATA / "hf"

MODELS = [("llama3_8b", "fused"), ("llama3_8b", "unfused"), ("mixtral_8x7b", "fused"),
          (str(HF / "gemma_2_2b.json"), "fused"), (str(HF / "gemma_2_2b.json"), "unfused"),
          (str(HF / "qwen2_5_7b.json"), "fused"), (str(HF / "mistral_7b_v0_1.json"), "fused")]


def bag(*nets, times=None):
    """Layers with their executions; vector ops by kind with their elements and rows in all (an
    unfused decode step's softmax is one op over every sequence, the parts' one per sequence: the
    same elements; a vector op costs by its elements and rows, `costmodel.vector`)."""
    layers, ops = Counter(), Counter()
    for k, net in enumerate(nets):
        m = 1 if times is None else times[k]
        for l, r in zip(net.layers, net.repeats):
            layers[l] += r * m
        for o, r in zip(net.vector_ops, net.vector_repeats):
            key = (o.name, o.op, o.inputs, o.bits, o.in_flight, o.overlaps, o.onchip)
            ops[key + ("elements",)] += o.elements * r * m
            ops[key + ("rows",)] += o.rows * r * m
    return layers, ops


@pytest.mark.parametrize("model, fusion", MODELS)
def test_a_whole_prompt_is_the_prefill_step(model, fusion):
    dep = Deployment(model, fusion=fusion)
    for T in (1000, 5000):
        step = build_transformer(dep.config, phase="prefill", seq=T, fusion=fusion)
        assert bag(dense_part(dep, T), head_part(dep, 1), attention_part(dep, T, 0)) == bag(step)


@pytest.mark.parametrize("model, fusion", MODELS)
def test_a_batch_of_decodes_is_the_decode_step(model, fusion):
    dep = Deployment(model, fusion=fusion)
    b, c = 8, 6000
    step = build_transformer(dep.config, phase="decode", batch=b, context=c, fusion=fusion)
    parts = bag(dense_part(dep, b), head_part(dep, b), attention_part(dep, 1, c - 1), times=[1, 1, b])
    assert parts == bag(step)


def test_a_mixed_iteration_is_its_parts():
    dep = Deployment("llama3_8b")
    it = iteration_network(dep, [(300, 700), (1, 99), (1, 4000), (50, 0)])
    assert bag(it) == bag(dense_part(dep, 352), head_part(dep, 4), attention_part(dep, 300, 700),
                          attention_part(dep, 1, 99), attention_part(dep, 1, 4000), attention_part(dep, 50, 0))
    assert it.workload["tokens"] == 352 and it.workload["sequences"] == 4


def test_a_chunk_after_a_prefix_attends_its_prefix():
    dep = Deployment("llama3_8b", fusion="unfused")
    att = attention_part(dep, 256, 1024)
    macs = sum(l.macs * r for l, r in zip(att.layers, att.repeats))
    # 32 heads x 32 blocks x (pairs computed: 2 query blocks of 128 over 1,152 and 1,280 keys) x 128 x 2 matmuls
    assert macs == 32 * 32 * (128 * 1152 + 128 * 1280) * 128 * 2


@pytest.mark.parametrize("model, match", [("bert_base", "encoder"), (str(HF / "deepseek_v3.json"), "latent")])
def test_what_serving_does_not_model_is_refused(model, match):
    with pytest.raises(ValueError, match=match):
        Deployment(model)
