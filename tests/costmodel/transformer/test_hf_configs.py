"""Transformers read from their Hugging Face config.json (issue 41): parameter counts equal the
checkpoints' published counts exactly (tests/data/hf/SOURCES.md cites each config and count),
activated parameters as the model cards state them, each field read with the Hugging Face class's
default, and bad files refused naming the file and the field."""

from __future__ import annotations

import json

import pytest

from costmodel.importers.errors import HfConfigError
from costmodel.transformer import (activated_params, build_transformer, list_transformers, param_count,
                                   read_hf_config, transformer_config)
from paths import REPO

HF = REPO / "tests" / "data" / "hf"

#: file -> the published count (tests/data/hf/SOURCES.md): the Hub's safetensors total or
#: num_parameters() as keras-hub's conversion scripts assert it.
PUBLISHED = {
    "mistral_7b_v0_1": 7_241_732_096,
    "qwen2_5_7b": 7_615_616_512,
    "qwen2_5_72b": 72_706_203_648,
    "qwen1_5_moe_a2_7b": 14_315_784_192,
    "qwen3_30b_a3b": 30_532_122_624,
    "llama3_1_8b": 8_030_261_248,
    "gemma_2_2b": 2_614_341_888,
    "gemma_2_9b": 9_241_705_984,
    "gemma_3_1b": 999_885_952,
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_count_equals_the_published_count(name):
    cfg, _ = read_hf_config(HF / f"{name}.json")
    assert param_count(cfg)["total"] == PUBLISHED[name]


def test_every_bundled_model_equals_its_published_count():
    """The seven bundled configs (costmodel/transformer/models/*.json) through the same reader."""
    for name in list_transformers():
        cfg = transformer_config(name)
        assert param_count(cfg)["total"] == cfg.published_params, name


def test_qwen2_5_7b_by_hand():
    """Qwen2.5-7B: hidden 3584, 28 blocks, 28 heads, 4 K/V heads (head_dim 128), FFN 18944, vocab
    152064, untied; q/k/v carry biases (Qwen2Attention), o_proj and the MLP none. Per block: q and o
    3584^2 = 12,845,056 each, k and v 3584 x 512 = 1,835,008 each, biases 3584 + 512 + 512, MLP
    3 x 3584 x 18944 = 203,685,888, norms 2 x 3584: 233,057,792; x 28 = 6,525,618,176; embedding and
    LM head 2 x 152064 x 3584 = 1,089,994,752; final norm 3584: 7,615,616,512."""
    cfg, _ = read_hf_config(HF / "qwen2_5_7b.json")
    block = 2 * 3584 ** 2 + 2 * 3584 * 512 + (3584 + 2 * 512) + 3 * 3584 * 18944 + 2 * 3584
    assert block == 233_057_792
    assert 28 * block + 2 * 152064 * 3584 + 3584 == param_count(cfg)["total"] == 7_615_616_512
    assert cfg.qkv_bias and not cfg.bias
    net = build_transformer(cfg, phase="decode", batch=2, context=100)
    assert next(v for v in net.vector_ops if v.name == "qkv_bias_add").elements == 2 * (3584 + 2 * 512)


def test_moe_models_shared_experts_and_activated_parameters():
    """Qwen1.5-MoE-A2.7B: 24 blocks, 60 experts of width 1408, top 4, one shared expert of 5632
    behind a sigmoid gate (hidden -> 1). Per block: attention 4 x 2048^2 + q/k/v biases 3 x 2048,
    experts 60 x 3 x 2048 x 1408, shared 3 x 2048 x 5632 + 2048, router 2048 x 60, norms 2 x 2048.
    Activated (the card's "2.7B activated"): everything but 56 of the 60 experts per block.
    Qwen3-30B-A3B: 48 blocks, 128 experts of 768, top 8, no shared expert, q/k norms (head_dim
    128 each); the card's 3.3B activated."""
    q15, _ = read_hf_config(HF / "qwen1_5_moe_a2_7b.json")
    expert = 3 * 2048 * 1408
    block = 4 * 2048 ** 2 + 3 * 2048 + 60 * expert + 3 * 2048 * 5632 + 2048 + 2048 * 60 + 2 * 2048
    total = 24 * block + 2 * 151936 * 2048 + 2048
    assert param_count(q15)["total"] == total == 14_315_784_192
    assert activated_params(q15) == total - 24 * 56 * expert == 2_689_173_504   # 2.7 B
    assert q15.shared_ffn == 5632 and q15.shared_gate and not q15.dense_blocks
    q3, _ = read_hf_config(HF / "qwen3_30b_a3b.json")
    assert q3.qk_norm and q3.head_dim == 128 and q3.shared_ffn == 0
    expert3 = 3 * 2048 * 768
    assert activated_params(q3) == param_count(q3)["total"] - 48 * 120 * expert3 == 3_353_032_704  # card: 3.3B


def test_deepseek_v3_main_model_and_checkpoint_by_hand():
    """DeepSeek-V3 (tests/data/hf/deepseek_v3.json): the main model counted by hand from the config,
    then the checkpoint's published total rebuilt from it exactly.

    Per block, MLA: q_a 7168 x 1536, q_b 1536 x 128 x 192, kv_a 7168 x 576, kv_b 512 x 128 x 256,
    o 128 x 128 x 7168, q_a / kv_a norms 1536 + 512; two norms 2 x 7168. The first 3 blocks' FFN is
    dense (3 x 7168 x 18432); the other 58 are MoE: 256 routed + 1 shared expert of 3 x 7168 x 2048,
    router 7168 x 256 and its correction bias 256. Embedding and LM head 129280 x 7168 each, final
    norm 7168: 671,026,419,200 (the README's "671B"). The Hub's 684,531,386,000 adds the MTP module
    (one more MoE block, enorm / hnorm / head norm 3 x 7168, eh_proj 2 x 7168 x 7168, and its stored
    copy of the embedding and head) and one FP32 scale per 128 x 128 block of every FP8 linear weight
    (README_WEIGHTS.md's weight_block_size [128, 128]) of the 62 blocks."""
    cfg, _ = read_hf_config(HF / "deepseek_v3.json")
    h, heads, expert = 7168, 128, 3 * 7168 * 2048
    attention = h * 1536 + 1536 * heads * 192 + h * 576 + 512 * heads * 256 + heads * 128 * h + 1536 + 512
    moe = 257 * expert + h * 256 + 256
    main = 61 * (attention + 2 * h) + 3 * 3 * h * 18432 + 58 * moe + 2 * 129280 * h + h
    assert param_count(cfg)["total"] == main == 671_026_419_200

    def blocks(out: int, inp: int) -> int:
        return -(-out // 128) * -(-inp // 128)
    mla_scales = blocks(1536, h) + blocks(heads * 192, 1536) + blocks(576, h) + blocks(heads * 256, 512) + blocks(h, heads * 128)
    moe_scales = mla_scales + 257 * (2 * blocks(2048, h) + blocks(h, 2048))
    dense_scales = mla_scales + 2 * blocks(18432, h) + blocks(h, 18432)
    mtp = attention + 2 * h + moe + 3 * h + 2 * h * h + 2 * 129280 * h
    assert main + mtp + 3 * dense_scales + 59 * moe_scales == 684_531_386_000
    assert round(activated_params(cfg) / 1e9) == 38  # 37,552,297,472: the paper's "37B activated"
    assert activated_params(cfg) == main - 58 * 248 * expert
    assert cfg.cache_width == 512 + 64 == 576


def test_fields_read_and_defaults_named():
    """A Llama config without num_key_value_heads, head_dim, tie_word_embeddings: the class's
    defaults (MHA, hidden / heads, untied), each named as defaulted."""
    cfg, read = read_hf_config(HF / "mistral_7b_v0_1.json")
    assert cfg.sliding_window == 4096 and cfg.kv_heads == 8 and cfg.head_dim == 128
    assert "head_dim" in read["defaulted"] and "num_key_value_heads" not in read["defaulted"]
    assert read["read"]["hidden_size"] == 4096


def _write(tmp_path, data: dict, name: str = "config.json"):
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return p


def _llama(**changes) -> dict:
    base = json.loads((REPO / "costmodel" / "transformer" / "models" / "llama3_8b.json").read_text())
    base.update(changes)
    return {k: v for k, v in base.items() if v != "<drop>"}


@pytest.mark.parametrize("changes, key, words", [
    ({"hidden_size": "<drop>"}, "hidden_size", "required"),
    ({"num_hidden_layers": -2}, "num_hidden_layers", "negative"),
    ({"num_attention_heads": 24}, "num_attention_heads", "divide hidden_size 4096"),
    ({"num_key_value_heads": 5}, "num_key_value_heads", "must divide num_attention_heads"),
    ({"architectures": ["MambaForCausalLM"]}, "architectures[0]", "not a transformer we can build"),
    ({"architectures": "<drop>"}, "architectures", "required"),
    ({"hidden_act": "gelu"}, "hidden_act", "SiLU"),
    ({"intermediate_size": 1.5}, "intermediate_size", "integer"),
])
def test_bad_configs_name_the_file_and_the_field(tmp_path, changes, key, words):
    p = _write(tmp_path, _llama(**changes))
    with pytest.raises(HfConfigError) as e:
        read_hf_config(p)
    assert e.value.key == key and e.value.source == str(p)
    assert str(e.value).startswith(f"{p}: {key} = ") and words in str(e.value)


def test_a_file_that_is_not_json_or_not_an_object(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{not json")
    with pytest.raises(HfConfigError, match="not JSON"):
        read_hf_config(p)
    p.write_text("[1, 2]")
    with pytest.raises(HfConfigError, match="JSON object"):
        read_hf_config(p)


def test_sliding_window_limits_the_attended_context_and_the_cache():
    """Mistral-7B-v0.1 (sliding_window 4096): a decode step at context 8192 attends the last 4096
    tokens (score: K = 4096) and its cache holds 4096 tokens. A prefill of 8192 tokens is a band:
    query i attends keys i - 4095 .. i, 4096 x 4097 / 2 + 4096 x 4096 = 25,167,872 pairs per head
    and block (the causal triangle would be 33,558,528); computed: the first 4096 queries' triangle
    in blocks, then 32 blocks of 128 queries x (4096 + 127) keys."""
    cfg, _ = read_hf_config(HF / "mistral_7b_v0_1.json")
    net = build_transformer(cfg, phase="decode", context=8192, fusion="unfused")
    score = next(l for l, _ in net if l.name == "score")
    assert score.K == 4096 and cfg.cached(8192) == 4096 and cfg.cached(1000) == 1000
    pre = build_transformer(cfg, phase="prefill", seq=8192, fusion="unfused")  # causal_blocks / band_blocks
    per = 32 * 32  # heads x blocks
    assert pre.workload["attention_pairs"]["exact"] == per * (4096 * 4097 // 2 + 4096 * 4096) == per * 25_167_872
    band = {l.name: (l.B // 4, l.K, r // (8 * 32)) for l, r in pre if l.name.startswith("score_")}
    assert band["score_128x4223"] == (128, 4223, 32)   # B = group 4 x 128 rows; 32 query blocks per K/V head
    triangle = 4096 ** 2 // 2 + 4096 * 128 // 2          # causal_blocks(4096), its diagonal blocks in full
    assert pre.workload["attention_pairs"]["computed"] == per * (triangle + 32 * 128 * 4223)


def test_a_model_from_a_file_records_its_shapes_not_its_path(tmp_path):
    """Two copies of one config at different paths give the same step (name, layers, workload),
    and the workload alone rebuilds it (`config_of`): a worker on another machine needs no file."""
    from costmodel.transformer import config_of
    a = _write(tmp_path, _llama(num_hidden_layers=2), "tiny.json")
    (tmp_path / "other").mkdir()
    b = _write(tmp_path / "other", _llama(num_hidden_layers=2), "tiny.json")
    na, nb = build_transformer(a, phase="decode", context=64), build_transformer(b, phase="decode", context=64)
    from sweep.config.campaign import network_json
    assert network_json(na) == network_json(nb) and na.workload["config"]["layers"] == 2
    again = build_transformer(config_of(na.workload), phase="decode", context=64)
    assert network_json(again) == network_json(na)
    # a bundled model's step records its name only (its task ids are what they were)
    assert "config" not in build_transformer("llama3_8b").workload


def test_gemma_2_by_hand():
    """Gemma 2 2B (tests/data/hf/gemma_2_2b.json): hidden 2304, 26 blocks, 8 heads and 4 K/V heads of
    256, GeGLU 9216, vocab 256000 tied; four RMSNorms per block (before and after attention and
    the MLP). Per block: q and o 2304 x 2048, k and v 2304 x 1024, MLP 3 x 2304 x 9216, norms 4 x
    2304 = 77,865,984; x 26 + embedding 256000 x 2304 + final norm = 2,614,341,888 (published).

    Every other block (the even ones, Gemma2DecoderLayer's is_sliding) attends the last 4096 tokens:
    a decode step at context 8192 has 13 blocks of score K = 8192 and 13 of score_local K = 4096,
    and its cache holds 13 x 8192 + 13 x 4096 token-blocks of 2 x 4 x 256 values: at 16 bits,
    159,744 x 2,048 x 2 B = 654,311,424 B per sequence (a model without windows: 26 x 8192). Up to
    the window nothing differs; a prefill past it is refused naming seq. The scores and the final
    logits are soft-capped (a softcap vector op before each softmax, one on the 256000 logits)."""
    from costmodel.capacity import step_footprint
    from costmodel.loopnest.arch import load_accelerator
    cfg, _ = read_hf_config(HF / "gemma_2_2b.json")
    block = 2 * 2304 * 2048 + 2 * 2304 * 1024 + 3 * 2304 * 9216 + 4 * 2304
    assert block == 77_865_984 and 26 * block + 256000 * 2304 + 2304 == param_count(cfg)["total"]
    assert cfg.window_blocks == tuple(range(0, 26, 2)) and cfg.sliding_window == 4096
    net = build_transformer(cfg, phase="decode", context=8192, kv_bits=16, fusion="unfused")
    att = {l.name: (l.K if l.name.startswith("score") else l.C, r) for l, r in net if l.name.startswith(("score", "context"))}
    assert att == {"score": (8192, 13 * 4), "context": (8192, 13 * 4), "score_local": (4096, 13 * 4),
                   "context_local": (4096, 13 * 4)}
    fp = step_footprint(net, load_accelerator("llm_ws"))
    assert fp.kv_cache_bytes == (13 * 8192 + 13 * 4096) * 2 * 4 * 256 * 2 == 654_311_424
    short = build_transformer(cfg, phase="decode", context=4096)
    assert not any(l.name.endswith("_local") for l, _ in short)
    ops = {v.name: (v.op, v.elements, r) for v, r in zip(net.vector_ops, net.vector_repeats)}
    assert ops["attn_softcap"] == ("softcap", 8 * 8192, 13) and ops["attn_softcap_local"] == ("softcap", 8 * 4096, 13)
    assert ops["logit_softcap"] == ("softcap", 256000, 1) and ops["act"][0] == "gelu"
    assert ops["attn_post_norm"][2] == ops["ffn_post_norm"][2] == 26
    pre = build_transformer(cfg, phase="prefill", seq=8192)  # local blocks: a band; global: the triangle
    exact = 13 * 8192 * 8193 // 2 + 13 * (4096 * 4097 // 2 + 4096 * 4096)
    assert pre.workload["attention_pairs"]["exact"] == 8 * exact


def test_a_pipeline_stage_keeps_its_own_windowed_and_dense_blocks():
    """pp = 2 builds the last stage: Gemma 2 2B's blocks 13..25, of which 14, 16, .., 24 are windowed
    (6 of 13, renumbered 1, 3, .., 11); DeepSeek-V3's 61 blocks do not split in 2 (refused naming pp);
    Qwen3-30B-A3B's stage has no dense block."""
    from costmodel.transformer.shard import Split, shard_config
    gemma, _ = read_hf_config(HF / "gemma_2_2b.json")
    stage = shard_config(gemma, Split(pp=2))
    assert stage.layers == 13 and stage.window_blocks == (1, 3, 5, 7, 9, 11) and stage.windowed == 6
    v3, _ = read_hf_config(HF / "deepseek_v3.json")
    with pytest.raises(ValueError, match="^pp: 2 does not divide"):
        build_transformer(v3, phase="decode", pp=2)
    with pytest.raises(ValueError, match="^tp: 8: .*latent attention"):
        build_transformer(v3, phase="decode", tp=8)


def test_gemma_3_local_and_global_blocks():
    """Gemma 3 1B: five local blocks (the last 512 tokens) per global one, block i global when i + 1
    is a multiple of sliding_window_pattern 6: blocks 5, 11, 17, 23 global, 22 local; q/k norms
    (head_dim 256 each per block), no soft-capping. Per block: q 1152 x 1024, k and v 1152 x 256, o
    1024 x 1152, MLP 3 x 1152 x 6912, 4 norms of 1152 and q/k norms 2 x 256 = 26,842,112; x 26 +
    embedding 262144 x 1152 (tied) + final norm = 999,885,952 (published)."""
    cfg, _ = read_hf_config(HF / "gemma_3_1b.json")
    assert [i for i in range(26) if i not in cfg.window_blocks] == [5, 11, 17, 23]
    assert cfg.qk_norm and not cfg.softcap and cfg.sliding_window == 512
    block = 1152 * 1024 + 2 * 1152 * 256 + 1024 * 1152 + 3 * 1152 * 6912 + 4 * 1152 + 2 * 256
    assert block == 26_842_112 and 26 * block + 262144 * 1152 + 1152 == param_count(cfg)["total"]
    net = build_transformer(cfg, phase="decode", context=4096, fusion="unfused")
    assert {l.name: (l.K, r) for l, r in net if l.name.startswith("score")} == {"score": (4096, 4),
                                                                              "score_local": (512, 22)}


def test_vit_model_has_its_pooler_and_no_classifier(tmp_path):
    """ViTModel (google/vit-base-patch16-224-in21k's layout): the encoder with BertPooler-style pooler
    (768 x 768 + bias, tanh not costed), no classifier. By hand: class token 768, positions 197 x 768,
    patch conv 768 x 3 x 16 x 16 + 768, 12 blocks of 4 x (768^2 + 768) + 768 x 3072 + 3072 +
    3072 x 768 + 768 + 2 LayerNorms (2 x 1536), final LayerNorm 1536, pooler 768^2 + 768:
    86,389,248."""
    data = {"architectures": ["ViTModel"], "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
            "intermediate_size": 3072, "image_size": 224, "patch_size": 16, "num_channels": 3, "qkv_bias": True}
    cfg, _ = read_hf_config(_write(tmp_path, data, "vit_in21k.json"))
    block = 4 * (768 ** 2 + 768) + 768 * 3072 + 3072 + 3072 * 768 + 768 + 2 * 1536
    total = 768 + 197 * 768 + 768 * 3 * 16 * 16 + 768 + 12 * block + 1536 + 768 ** 2 + 768
    assert param_count(cfg)["total"] == total == 86_389_248
    names = {l.name for l, _ in build_transformer(cfg)}
    assert "pooler" in names and "classifier" not in names
