"""Hugging Face configs read as their classes read them: a JSON null as each class treats None (the
default, a meaning of its own, or an error), model_type before architectures[0], notes (keys the
class does not define, a disagreeing architectures[0], an implausible model) and the checkpoint's
precision (torch_dtype, quantization_config). Expected figures are worked by hand from the classes'
layers (transformers' modelling_*.py, DeepSeek's modelling_deepseek.py) and the model cards."""

from __future__ import annotations

import json

import pytest

from costmodel.importers.errors import HfConfigError
from costmodel.importers.hf_config import checkpoint_precision
from costmodel.transformer import build_transformer, param_count, read_hf_config
from costmodel.transformer.params import attention_weights
from paths import REPO

HF = REPO / "tests" / "data" / "hf"
MODELS = REPO / "costmodel" / "transformer" / "models"


def _data(path, **changes) -> dict:
    d = json.loads(path.read_text())
    d.update(changes)
    return {k: v for k, v in d.items() if v != "<drop>"}


def _read(tmp_path, data: dict, name: str = "model.json"):
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return read_hf_config(p)


# ------------------------------------------------------------------ DeepSeek-V2-Lite: q_lora_rank null

def test_deepseek_v2_lite_full_rank_query_by_hand():
    """DeepSeek-V2-Lite (tests/data/hf/deepseek_v2_lite.json): "q_lora_rank": null is a full-rank
    q_proj (DeepseekV2Attention: ``if config.q_lora_rank is None: self.q_proj = nn.Linear(hidden,
    heads * q_head_dim)``). Per block, MLA: q_proj 2048 x 16 x (128 + 64) = 6,291,456, kv_a 2048 x
    (512 + 64) = 1,179,648, kv_a_layernorm 512, kv_b 512 x 16 x (128 + 128) = 2,097,152, o 16 x 128 x
    2048 = 4,194,304: 13,763,072; two norms 2 x 2048. Block 0's FFN is dense, 3 x 2048 x 10944 =
    67,239,936; blocks 1..26 are MoE: 64 routed experts of 3 x 2048 x 1408 = 8,650,752 each
    (553,648,128), two shared (3 x 2048 x 2816 = 17,301,504), router 2048 x 64 = 131,072:
    571,080,704. Embedding and LM head 2 x 102400 x 2048, final norm 2048: 15,706,484,224, the model
    card's "15.7B" total."""
    cfg, read = read_hf_config(HF / "deepseek_v2_lite.json")
    attention = 2048 * 16 * 192 + 2048 * 576 + 512 + 512 * 16 * 256 + 16 * 128 * 2048
    assert attention == 13_763_072
    moe = 64 * 3 * 2048 * 1408 + 3 * 2048 * 2 * 1408 + 2048 * 64
    assert moe == 571_080_704
    total = 27 * (attention + 2 * 2048) + 3 * 2048 * 10944 + 26 * moe + 2 * 102400 * 2048 + 2048
    assert param_count(cfg)["total"] == total == 15_706_484_224
    assert round(total / 1e8) / 10 == 15.7
    q = [(l.name, l.C, l.K) for l in attention_weights(cfg) if l.name.startswith("q")]
    assert q == [("q_proj", 2048, 16 * 192)] and cfg.q_lora_rank == 0 and read["read"]["q_lora_rank"] == 0
    assert cfg.shared_ffn == 2 * 1408 and cfg.dense_blocks == (0,) and cfg.top_k == 6 and cfg.routing_groups == (0, 0)


def test_a_default_rank_query_path_is_what_null_is_not(tmp_path):
    """The same file without q_lora_rank takes the class's default rank 1,536: q_a (2048 x 1536),
    its norm (1536) and q_b (1536 x 3072) instead of q_proj (2048 x 3072), 27 x (3,145,728 + 1,536 +
    4,718,592 - 6,291,456) = 42,508,800 more parameters, and the query path's MACs per token 7,864,320
    / 6,291,456 = 1.25 times the full-rank one's (decode, each projection once per block)."""
    full, _ = read_hf_config(HF / "deepseek_v2_lite.json")
    lora, _ = _read(tmp_path, _data(HF / "deepseek_v2_lite.json", q_lora_rank="<drop>"))
    assert lora.q_lora_rank == 1536
    assert param_count(lora)["total"] - param_count(full)["total"] == 27 * (2048 * 1536 + 1536 + 1536 * 3072 - 2048 * 3072) \
        == 42_508_800

    def query_macs(cfg) -> int:
        net = build_transformer(cfg, phase="decode", batch=1, context=128, fusion="unfused")
        return sum(l.macs * r for l, r in net if l.name in ("q_proj", "q_a_proj", "q_b_proj"))
    assert query_macs(full) == 27 * 2048 * 3072
    assert query_macs(lora) * 4 == query_macs(full) * 5


# ------------------------------------------------------------------ nulls, field by field

LLAMA, MISTRAL, GEMMA2 = MODELS / "llama3_8b.json", HF / "mistral_7b_v0_1.json", HF / "gemma_2_2b.json"
QWEN3_MOE, DSV3, GPT2 = HF / "qwen3_30b_a3b.json", HF / "deepseek_v3.json", MODELS / "gpt2.json"


@pytest.mark.parametrize("path, key, check", [
    (LLAMA, "num_key_value_heads", lambda c: c.kv_heads == 32),              # LlamaConfig: None -> heads
    (LLAMA, "head_dim", lambda c: c.head_dim == 4096 // 32),                 # None -> hidden / heads
    (LLAMA, "rope_scaling", lambda c: c.head_dim == 128),                    # none: the default RoPE
    (LLAMA, "tie_word_embeddings", lambda c: not c.tied_embeddings),
    (MISTRAL, "sliding_window", lambda c: c.sliding_window == 0),            # MistralAttention: no window
    (GEMMA2, "sliding_window", lambda c: c.sliding_window == 0 and c.window_blocks == ()),
    (GEMMA2, "tie_word_embeddings", lambda c: not c.tied_embeddings),        # tie_weights: None is falsy
    (GPT2, "n_inner", lambda c: c.ffn == 4 * 768),                           # GPT2Block: 4 x hidden
    (QWEN3_MOE, "mlp_only_layers", lambda c: c.dense_blocks == ()),
    (DSV3, "n_shared_experts", lambda c: c.shared_ffn == 0),                 # DeepseekV2MoE: no shared expert
    (DSV3, "n_routed_experts", lambda c: c.experts == 0 and c.ffn == 18432),  # every block's FFN dense
    (DSV3, "num_nextn_predict_layers", lambda c: c.not_modelled == ()),
])
def test_a_null_means_what_the_class_makes_of_none(tmp_path, path, key, check):
    cfg, read = _read(tmp_path, _data(path, **{key: None}))
    assert check(cfg)


def test_gemma_2_null_soft_capping_is_no_capping(tmp_path):
    """Gemma2Config's soft-capping fields default to 50.0 / 30.0 when absent, but null is no capping
    (Gemma2ForCausalLM: ``if self.config.final_logit_softcapping is not None``): no softcap op."""
    absent, _ = _read(tmp_path, _data(GEMMA2, attn_logit_softcapping="<drop>", final_logit_softcapping="<drop>"))
    null, _ = _read(tmp_path, _data(GEMMA2, attn_logit_softcapping=None, final_logit_softcapping=None))
    assert absent.softcap and not null.softcap
    ops = {v.op for v in build_transformer(null, phase="decode", context=64, fusion="unfused").vector_ops}
    assert "softcap" not in ops


@pytest.mark.parametrize("path, key", [
    (LLAMA, "hidden_size"), (LLAMA, "intermediate_size"), (LLAMA, "vocab_size"), (LLAMA, "hidden_act"),
    (LLAMA, "max_position_embeddings"), (QWEN3_MOE, "num_key_value_heads"), (QWEN3_MOE, "head_dim"),
    (GEMMA2, "num_key_value_heads"), (GEMMA2, "head_dim"), (DSV3, "kv_lora_rank"), (DSV3, "first_k_dense_replace"),
    (DSV3, "n_group"), (GPT2, "n_embd"), (MODELS / "bert_base.json", "type_vocab_size"),
])
def test_a_null_the_class_cannot_build_with_is_refused(tmp_path, path, key):
    """The class stores None where its model needs a number or a name (nn.Linear(hidden, None),
    ACT2FN[None], a division by num_key_value_heads, DeepSeek-V3's grouped routing by n_group):
    an error naming the file, the key and the value, never the default."""
    with pytest.raises(HfConfigError) as e:
        _read(tmp_path, _data(path, **{key: None}))
    assert e.value.key == key and e.value.value is None and "null" in e.value.message


def test_a_refused_null_exits_2_naming_the_key(tmp_path):
    from typer.testing import CliRunner

    from sweep.cli import app
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(_data(LLAMA, intermediate_size=None)))
    res = CliRunner().invoke(app, ["list", "networks", "--file", str(p)])
    assert res.exit_code == 2 and "intermediate_size = None" in res.output and "null" in res.output


def test_bias_and_window_flags_are_read_where_the_class_defines_them(tmp_path):
    """MistralConfig defines no attention_bias (MistralAttention's projections: bias=False): a file
    that sets it builds no biases and is told the key is ignored. Qwen2MoeConfig's qkv_bias false
    drops the q/k/v biases: Qwen1.5-MoE-A2.7B loses 24 x 3 x 2048 = 147,456 parameters. Qwen3's
    use_sliding_window (sliding blocks past max_window_layers) is refused like Qwen2's."""
    cfg, read = _read(tmp_path, _data(MISTRAL, attention_bias=True, mlp_bias=True))
    assert not cfg.bias and read["notes"] == ["MistralConfig does not define attention_bias, mlp_bias: ignored (no "
                                              "layer of MistralForCausalLM reads them)"]
    q15 = HF / "qwen1_5_moe_a2_7b.json"
    cfg, _ = _read(tmp_path, _data(q15, qkv_bias=False))
    assert not cfg.qkv_bias and param_count(cfg)["total"] == 14_315_784_192 - 24 * 3 * 2048
    with pytest.raises(HfConfigError) as e:
        _read(tmp_path, _data(QWEN3_MOE, use_sliding_window=True))
    assert e.value.key == "use_sliding_window"


# ------------------------------------------------------------------ model_type before architectures[0]

def test_a_qwen2_config_labelled_llama_keeps_its_qkv_biases(tmp_path):
    """Qwen2.5-7B's config with architectures ["LlamaForCausalLM"] and model_type "qwen2": read as
    Qwen2ForCausalLM (AutoConfig / AutoModelForCausalLM dispatch on model_type), its q/k/v biases
    built; the note says LlamaForCausalLM would not build them: 28 x (3584 + 512 + 512) = 129,024
    fewer parameters, 7,615,616,512 - 129,024 = 7,615,487,488."""
    cfg, read = _read(tmp_path, _data(HF / "qwen2_5_7b.json", architectures=["LlamaForCausalLM"]))
    assert cfg.architecture == "Qwen2ForCausalLM" and cfg.qkv_bias
    assert param_count(cfg)["total"] == 7_615_616_512
    note = next(n for n in read["notes"] if n.startswith("architectures[0]"))
    assert "'LlamaForCausalLM' disagrees with model_type = 'qwen2'" in note and "read as Qwen2ForCausalLM" in note
    assert "not build the q/k/v biases of Qwen2ForCausalLM" in note
    assert f"count {7_615_616_512 - 28 * (3584 + 2 * 512):,} parameters, not 7,615,616,512" in note


def test_without_model_type_or_with_an_unknown_one_architectures_decides(tmp_path):
    cfg, read = _read(tmp_path, _data(HF / "qwen2_5_7b.json", architectures=["LlamaForCausalLM"], model_type="<drop>"))
    assert cfg.architecture == "LlamaForCausalLM" and not cfg.qkv_bias
    assert not any(n.startswith("architectures[0]") for n in read["notes"])
    cfg, read = _read(tmp_path, _data(LLAMA, model_type="my_llama"))
    assert cfg.architecture == "LlamaForCausalLM"
    assert read["notes"] == ["model_type = 'my_llama' is the type of no class we build (transformers would need the "
                             "checkpoint's own code): read as architectures[0] = 'LlamaForCausalLM'"]


@pytest.mark.parametrize("changes, key", [
    ({"model_type": 3}, "model_type"),
    ({"model_type": "gemma3"}, "model_type"),          # the vision-language Gemma 3's type: refused by it
])
def test_model_type_errors_name_it(tmp_path, changes, key):
    with pytest.raises(HfConfigError) as e:
        _read(tmp_path, _data(HF / "gemma_3_1b.json", **changes))
    assert e.value.key == key


# ------------------------------------------------------------------ notes: unknown keys, implausible sizes

def test_keys_the_class_does_not_define_are_named(tmp_path):
    """LlamaConfig defines rope_theta, pretraining_tp ... and PretrainedConfig the generic keys
    (torch_dtype, eos_token_id, quantization_config ...): only the two keys neither defines are named."""
    _, read = read_hf_config(HF / "llama3_1_8b.json")
    assert read["notes"] == []
    _, read = _read(tmp_path, _data(LLAMA, moe_every=2, use_mrope=True, _name_or_path="x", label2id={}))
    assert read["notes"] == ["LlamaConfig does not define moe_every, use_mrope: ignored (no layer of LlamaForCausalLM "
                             "reads them)"]
    _, read = read_hf_config(HF / "qwen2_5_7b.json")   # the Hub's own file: Qwen2Config has no use_mrope
    assert read["notes"] == ["Qwen2Config does not define use_mrope: ignored (no layer of Qwen2ForCausalLM reads it)"]


def test_an_implausible_model_is_noted_in_engineering_units(tmp_path):
    """Llama 3 8B with num_hidden_layers 3,200,000 (a typo): per block q and o 4096^2, k and v 4096 x
    1024, MLP 3 x 4096 x 14336, norms 2 x 4096 = 218,112,000; x 3,200,000 + embedding and head 2 x
    128256 x 4096 + final norm 4096 = 697,959,450,677,248: "698 T". With one block and
    intermediate_size 270,000,000 instead, ffn_gate is 4,096 x 270,000,000 = 1.106e12 MACs per token,
    over 2^40 = 1.0995e12, while the model (3.32e12 parameters) stays under 10 T."""
    block = 2 * 4096 ** 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert block == 218_112_000
    total = 3_200_000 * block + 2 * 128256 * 4096 + 4096
    cfg, read = _read(tmp_path, _data(LLAMA, num_hidden_layers=3_200_000))
    assert param_count(cfg)["total"] == total == 697_959_450_677_248
    assert read["notes"] == [f"implausible model: 698 T parameters ({total:,}), over 10 T: check its sizes "
                             "(hidden_size, num_hidden_layers, intermediate_size, vocab_size, the experts)"]
    _, read = _read(tmp_path, _data(LLAMA, num_hidden_layers=1, intermediate_size=270_000_000))
    assert 4096 * 270_000_000 > 2 ** 40
    assert read["notes"] == ["implausible layer: ffn_gate (4,096 x 270,000,000) takes 1.11 T MACs per token "
                             "(1,105,920,000,000), over 2^40"]
    _, read = read_hf_config(HF / "deepseek_v3.json")   # 671 B: plausible
    assert read["notes"] == []


def test_the_notes_are_printed_by_the_commands(tmp_path):
    """`sweep list networks --file F` prints each note as ``note: ...``; `sweep map --network F
    --json` prints them on stderr and keeps stdout one JSON object."""
    from typer.testing import CliRunner

    from sweep.cli import app
    tiny = _data(HF / "qwen2_5_7b.json", architectures=["LlamaForCausalLM"], num_hidden_layers=1, vocab_size=1000,
                 hidden_size=256, num_attention_heads=4, num_key_value_heads=2, intermediate_size=512)
    p = tmp_path / "tiny.json"
    p.write_text(json.dumps(tiny))
    res = CliRunner().invoke(app, ["list", "networks", "--file", str(p), "--fusion", "unfused"])
    assert res.exit_code == 0, res.output
    lines = [l for l in res.output.splitlines() if l.startswith("note: ")]
    assert len(lines) == 2 and "disagrees with model_type = 'qwen2'" in lines[0] and "use_mrope" in lines[1]
    res = CliRunner().invoke(app, ["map", "--network", str(p), "--phase", "decode", "--context", "64", "--fusion",
                                   "unfused", "--arch", "tpu_like", "--mapper", "loma", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["network"] == "tiny/decode/b1/ctx64/unfused"   # fused is the default, unfused named
    assert sum(l.startswith("note: ") for l in res.stderr.splitlines()) == 2


# ------------------------------------------------------------------ the checkpoint's precision

def test_llama_3_1_405b_fp8_checkpoint_precision_and_count():
    """meta-llama/Llama-3.1-405B-Instruct-FP8: torch_dtype bfloat16, quantization_config fbgemm_fp8
    with activation_scheme dynamic: FP8 weights (8 bits) and activations (8 bits). Its shapes by
    hand: per block q and o 16384^2, k and v 16384 x 1024 (8 K/V heads of 128), MLP 3 x 16384 x
    53248, norms 2 x 16384 = 3,187,703,808; x 126 + embedding and head 2 x 128256 x 16384 + final
    norm 16384 = 405,853,388,800 (the model card's "405B")."""
    cfg, read = read_hf_config(HF / "llama3_1_405b_instruct_fp8.json")
    assert (cfg.checkpoint_weight_bits, cfg.checkpoint_act_bits, cfg.checkpoint_dtype) == (8, 8, "fp8 (fbgemm_fp8)")
    block = 2 * 16384 ** 2 + 2 * 16384 * 1024 + 3 * 16384 * 53248 + 2 * 16384
    assert block == 3_187_703_808
    assert param_count(cfg)["total"] == 126 * block + 2 * 128256 * 16384 + 16384 == 405_853_388_800
    assert read["notes"] == ["quantization_config keeps 7 module(s) in bfloat16 (modules_to_not_convert: "
                             "model.layers.0.mlp.down_proj, model.layers.0.mlp.gate_proj, model.layers.0.mlp.up_proj, "
                             "...): fp8 (fbgemm_fp8) is the precision of the quantized linear layers"]


@pytest.mark.parametrize("fields, expected", [
    ({"torch_dtype": "float32"}, (32, 32, "float32")),
    ({"torch_dtype": "bfloat16"}, (16, 16, "bfloat16")),
    ({"torch_dtype": "float16"}, (16, 16, "float16")),
    ({"dtype": "torch.float8_e4m3fn"}, (8, 8, "float8_e4m3fn")),       # transformers >= 4.56 writes "dtype"
    ({}, (None, None, "")),
    ({"torch_dtype": "bfloat16", "quantization_config": {"quant_method": "fp8", "activation_scheme": "static"}},
     (8, 8, "fp8 (fp8)")),
    ({"torch_dtype": "float16", "quantization_config": {"quant_method": "gptq", "bits": 4}}, (4, 16, "int4 (gptq)")),
    ({"torch_dtype": "float16", "quantization_config": {"quant_method": "awq"}}, (4, 16, "int4 (awq)")),
    ({"torch_dtype": "float32", "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True,
                                                        "bnb_4bit_quant_type": "nf4",
                                                        "bnb_4bit_compute_dtype": "bfloat16"}},
     (4, 16, "nf4 (bitsandbytes)")),
    ({"torch_dtype": "float16", "quantization_config": {"load_in_8bit": True}}, (8, 16, "int8 (bitsandbytes)")),
])
def test_checkpoint_precision(fields, expected):
    p = checkpoint_precision(fields, "f.json")
    assert (p.weight_bits, p.act_bits, p.dtype) == expected and p.notes == ()


@pytest.mark.parametrize("fields, expected, words", [
    ({"torch_dtype": "bfloat16", "quantization_config": {"quant_method": "compressed-tensors"}}, (16, 16, "bfloat16"),
     "'compressed-tensors' is not read"),
    ({"torch_dtype": "int8"}, (None, None, ""), "'int8' is not a torch dtype we know"),
    ({"torch_dtype": "bfloat16", "quantization_config": {"quant_method": "fp8", "activation_scheme": "none"}},
     (8, 16, "fp8 (fp8)"), "'none' is neither dynamic nor static"),
])
def test_precision_not_read_is_a_note(fields, expected, words):
    p = checkpoint_precision(fields, "f.json")
    assert (p.weight_bits, p.act_bits, p.dtype) == expected and len(p.notes) == 1 and words in p.notes[0]


@pytest.mark.parametrize("fields, key", [
    ({"torch_dtype": 16}, "torch_dtype"),
    ({"quantization_config": "fp8"}, "quantization_config"),
    ({"quantization_config": {"quant_method": "gptq"}}, "quantization_config.bits"),
    ({"quantization_config": {"quant_method": "gptq", "bits": 32}}, "quantization_config.bits"),
])
def test_mistyped_precision_fields_are_refused(fields, key):
    with pytest.raises(HfConfigError) as e:
        checkpoint_precision(fields, "f.json")
    assert e.value.key == key and str(e.value).startswith(f"f.json: {key} = ")


def test_a_file_models_step_rebuilt_from_its_workload_keeps_its_precision(tmp_path):
    """The checkpoint_* fields are in `TransformerConfig.shape`: a step of a file model is costed in
    its checkpoint's precision (no bits given), so the step rebuilt from its workload alone
    (`config_of` + `step_params`, as a worker on another machine does) must be at the same bits.
    A bfloat16 file: every layer's W, I, O_final fixed at 16 bits; the same file with fbgemm_fp8
    (FbgemmFp8Config: FP8 weights, activations quantized per row at run time, the dynamic scheme):
    W and I at 8, the KV cache k_proj writes at torch_dtype's 16; a file stating no dtype: no fixed
    bits."""
    from costmodel.transformer import config_of
    from costmodel.transformer.build import step_params
    from sweep.config.campaign import network_json
    plain = _data(LLAMA, num_hidden_layers=2, torch_dtype="<drop>")
    bf16 = dict(plain, torch_dtype="bfloat16")
    fp8 = dict(plain, torch_dtype="bfloat16", quantization_config={"quant_method": "fbgemm_fp8"})
    steps = {}
    for d, data in (("plain", plain), ("bf16", bf16), ("fp8", fp8)):
        (tmp_path / d).mkdir()
        (tmp_path / d / "tiny.json").write_text(json.dumps(data))
        for fusion in ("fused", "unfused"):
            net = build_transformer(tmp_path / d / "tiny.json", phase="decode", context=64, fusion=fusion)
            again = build_transformer(config_of(net.workload), **step_params(net.workload))
            assert list(again) == list(net) and again.name == net.name, (d, fusion)
            assert network_json(again) == network_json(net), (d, fusion)
            steps[d, fusion] = net
    q = {d: next(l for l, _ in steps[d, "unfused"] if l.name == "q_proj") for d in ("plain", "bf16", "fp8")}
    assert q["plain"].fixed_bits == ()
    assert (q["bf16"].w_bits, q["bf16"].i_bits, q["bf16"].fixed_bits) == (16, 16, ("W", "I", "O_final"))
    assert (q["fp8"].w_bits, q["fp8"].i_bits, q["fp8"].fixed_bits) == (8, 8, ("W", "I", "O_final"))
    assert next(l for l, _ in steps["fp8", "unfused"] if l.name == "k_proj").o_bits == 16
    assert steps["fp8", "unfused"].workload["config"]["checkpoint_weight_bits"] == 8
    a, _ = read_hf_config(tmp_path / "plain" / "tiny.json")
    assert (a.checkpoint_weight_bits, a.checkpoint_act_bits, a.checkpoint_dtype) == (None, None, "")
    assert a == a.replace(checkpoint_weight_bits=None, checkpoint_act_bits=None, checkpoint_dtype="")


def _bits(net, name):
    l = next(l for l, _ in net if l.name == name)
    return l.w_bits, l.i_bits, l.o_bits


def test_the_fp8_405b_checkpoint_is_costed_at_8_8_16_bits():
    """meta-llama/Llama-3.1-405B-Instruct-FP8 (quantization_config fbgemm_fp8, activation_scheme
    dynamic; torch_dtype bfloat16): weights and activations in FP8, 8 bits; the KV cache in the
    model's dtype, 16 bits (vLLM's kv_cache_dtype "auto" keeps it in torch_dtype). So q_proj reads
    8-bit weights and inputs and writes 8 bits; k_proj writes the cache at 16; score reads the
    16-bit cache (its W) with 8-bit queries. weight_bits=4 given replaces W only."""
    cfg, _ = read_hf_config(HF / "llama3_1_405b_instruct_fp8.json")
    net = build_transformer(cfg, phase="decode", context=256, fusion="unfused")
    assert (_bits(net, "q_proj"), _bits(net, "k_proj"), _bits(net, "score")) == ((8, 8, 8), (8, 8, 16), (16, 8, 8))
    assert net.workload["precision"] == {"weight_bits": 8, "act_bits": 8, "kv_bits": 16, "weight_from": "checkpoint",
                                         "act_from": "checkpoint", "kv_from": "checkpoint",
                                         "checkpoint_dtype": "fp8 (fbgemm_fp8)"}
    w4 = build_transformer(cfg, phase="decode", context=256, fusion="unfused", weight_bits=4)
    assert (_bits(w4, "q_proj"), _bits(w4, "k_proj"), _bits(w4, "score")) == ((4, 8, 8), (4, 8, 16), (16, 8, 8))
    rec = w4.workload["precision"]
    assert (rec["weight_from"], rec["act_from"], rec["kv_from"]) == ("given", "checkpoint", "checkpoint")


def test_precision_text_says_the_bits_and_where_they_come_from():
    """`precision_text`'s documented strings: the FP8 405B checkpoint's own 8/8/16, the same with
    weight_bits=4 given, a bfloat16 Llama's 16/16/16, and a step that fixes none (GPT-2's config
    states no dtype)."""
    from costmodel.transformer.step import precision_text
    cfg, _ = read_hf_config(HF / "llama3_1_405b_instruct_fp8.json")
    fp8 = build_transformer(cfg, phase="decode", context=256)
    w4 = build_transformer(cfg, phase="decode", context=256, weight_bits=4)
    assert precision_text(fp8.workload["precision"]) == "W/A/KV 8/8/16 bits (the checkpoint's fp8 (fbgemm_fp8))"
    assert precision_text(w4.workload["precision"]) == (
        "W/A/KV 4/8/16 bits (W given; A, KV the checkpoint's fp8 (fbgemm_fp8))")
    assert precision_text(build_transformer("llama3_8b").workload["precision"]) == (
        "W/A/KV 16/16/16 bits (the checkpoint's bfloat16)")
    assert precision_text(build_transformer("gpt2").workload["precision"]) == "the accelerator's [precision]"
    assert precision_text(None) == "the accelerator's [precision]"
