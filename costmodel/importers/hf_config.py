"""What a Hugging Face ``config.json`` says beside a transformer's shapes: the keys each
configuration class defines (`CLASSES`, so that a key none defines can be named), which class a
``model_type`` means (`MODEL_TYPES`), and the checkpoint's precision (`checkpoint_precision`:
``torch_dtype`` and ``quantization_config``). Standard library only; the shapes themselves are read
by `costmodel.transformer.hf`.

Sources: the configuration classes of transformers (``models/<type>/configuration_<type>.py``: the
keyword arguments of ``LlamaConfig.__init__`` and its peers, v4.40 to v4.57, and the fields of the
v5 dataclass configs), the remote-code ``configuration_deepseek.py`` that DeepSeek-V2 / V3's
``auto_map`` names, ``PretrainedConfig.__init__`` for the keys every class takes (`GENERIC_KEYS`),
and transformers' quantizer configs (``utils/quantization_config.py``: ``FbgemmFp8Config``,
``FineGrainedFP8Config`` (``quant_method = "fp8"``), ``GPTQConfig``, ``AwqConfig``,
``BitsAndBytesConfig``).

Errors: `HfConfigError` naming the file, the key and its value (a ``torch_dtype`` that is not a
string, a ``quantization_config`` that is not an object, GPTQ / AWQ ``bits`` that are not a width).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from costmodel.importers.errors import HfConfigError

__all__ = ["GENERIC_KEYS", "CLASSES", "MODEL_TYPES", "unknown_keys", "Precision", "checkpoint_precision",
           "DTYPE_BITS"]

#: Keys every configuration class takes (``PretrainedConfig.__init__`` and what ``save_pretrained``
#: and the Hub add): never named as unknown.
GENERIC_KEYS = frozenset((
    "architectures", "model_type", "torch_dtype", "dtype", "transformers_version", "_name_or_path", "name_or_path",
    "_commit_hash", "auto_map", "quantization_config", "initializer_range", "bos_token_id", "eos_token_id",
    "pad_token_id", "sep_token_id", "decoder_start_token_id", "tie_word_embeddings", "use_cache", "return_dict",
    "output_hidden_states", "output_attentions", "torchscript", "use_bfloat16", "pruned_heads",
    "chunk_size_feed_forward", "is_encoder_decoder", "is_decoder", "add_cross_attention",
    "cross_attention_hidden_size", "tie_encoder_decoder", "finetuning_task", "id2label", "label2id", "num_labels",
    "tokenizer_class", "prefix", "problem_type", "task_specific_params", "_attn_implementation",
    "attn_implementation", "_attn_implementation_autoset", "gradient_checkpointing", "tf_legacy_loss",
    "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups", "diversity_penalty",
    "temperature", "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences", "output_scores",
    "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values",
    "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens"))

_ROPE = ("rope_theta", "rope_scaling", "rope_parameters")
_DECODER = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "hidden_act", "max_position_embeddings", "rms_norm_eps", "attention_dropout") + _ROPE
_LLAMA = _DECODER + ("pretraining_tp", "attention_bias", "mlp_bias", "head_dim")
_MISTRAL = _DECODER + ("head_dim", "sliding_window")
_MIXTRAL = _MISTRAL + ("num_experts_per_tok", "num_local_experts", "output_router_logits", "router_aux_loss_coef",
                       "router_jitter_noise")
_QWEN2 = _DECODER + ("use_sliding_window", "sliding_window", "max_window_layers", "layer_types")
_QWEN_MOE = ("decoder_sparse_step", "moe_intermediate_size", "num_experts_per_tok", "num_experts", "norm_topk_prob",
             "output_router_logits", "router_aux_loss_coef", "mlp_only_layers")
#: DeepseekV2Config (remote configuration_deepseek.py and transformers' own), DeepseekV3Config adds two.
_DEEPSEEK = _DECODER + ("moe_intermediate_size", "n_shared_experts", "n_routed_experts", "ep_size",
                        "routed_scaling_factor", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "v_head_dim",
                        "qk_nope_head_dim", "topk_method", "n_group", "topk_group", "num_experts_per_tok",
                        "moe_layer_freq", "first_k_dense_replace", "norm_topk_prob", "scoring_func", "aux_loss_alpha",
                        "seq_aux", "pretraining_tp", "attention_bias", "mlp_bias", "head_dim")
_GEMMA2 = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
           "num_key_value_heads", "head_dim", "hidden_activation", "max_position_embeddings", "rms_norm_eps",
           "attention_bias", "attention_dropout", "query_pre_attn_scalar", "sliding_window", "final_logit_softcapping",
           "attn_logit_softcapping", "cache_implementation", "layer_types", "use_bidirectional_attention") + _ROPE
_GPT2 = ("vocab_size", "n_positions", "n_ctx", "n_embd", "n_layer", "n_head", "n_inner", "activation_function",
         "resid_pdrop", "embd_pdrop", "attn_pdrop", "layer_norm_epsilon", "summary_type", "summary_use_proj",
         "summary_activation", "summary_proj_to_labels", "summary_first_dropout", "scale_attn_weights",
         "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn")
_BERT = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "hidden_act",
         "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
         "layer_norm_eps", "position_embedding_type", "classifier_dropout")
_VIT = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "hidden_act",
        "hidden_dropout_prob", "attention_probs_dropout_prob", "layer_norm_eps", "image_size", "patch_size",
        "num_channels", "qkv_bias", "encoder_stride", "pooler_output_size", "pooler_act")
_BERT_HEADS = ("BertModel", "BertForMaskedLM", "BertForPreTraining", "BertForSequenceClassification")

#: architectures[0] -> (its configuration class, the keys that class defines beside `GENERIC_KEYS`).
#: Qwen2Config, Qwen2MoeConfig and Qwen3MoeConfig name no head_dim, but their attention reads
#: ``getattr(config, "head_dim", hidden_size // num_attention_heads)``: listed.
CLASSES: dict[str, tuple[str, frozenset[str]]] = {
    "LlamaForCausalLM": ("LlamaConfig", frozenset(_LLAMA)),
    "MistralForCausalLM": ("MistralConfig", frozenset(_MISTRAL)),
    "MixtralForCausalLM": ("MixtralConfig", frozenset(_MIXTRAL)),
    "Qwen2ForCausalLM": ("Qwen2Config", frozenset(_QWEN2 + ("head_dim",))),
    "Qwen3ForCausalLM": ("Qwen3Config", frozenset(_QWEN2 + ("head_dim", "attention_bias"))),
    "Qwen2MoeForCausalLM": ("Qwen2MoeConfig", frozenset(_QWEN2 + _QWEN_MOE + ("shared_expert_intermediate_size",
                                                                              "qkv_bias", "head_dim"))),
    "Qwen3MoeForCausalLM": ("Qwen3MoeConfig", frozenset(_DECODER + _QWEN_MOE + ("attention_bias", "use_sliding_window",
                                                                                "sliding_window", "head_dim"))),
    "DeepseekV2ForCausalLM": ("DeepseekV2Config", frozenset(_DEEPSEEK)),
    "DeepseekV3ForCausalLM": ("DeepseekV3Config", frozenset(_DEEPSEEK + ("num_nextn_predict_layers",
                                                                         "rope_interleave"))),
    "Gemma2ForCausalLM": ("Gemma2Config", frozenset(_GEMMA2)),
    "Gemma3ForCausalLM": ("Gemma3TextConfig", frozenset(_GEMMA2 + ("rope_local_base_freq", "sliding_window_pattern"))),
    "GPT2LMHeadModel": ("GPT2Config", frozenset(_GPT2)),
    **{a: ("BertConfig", frozenset(_BERT)) for a in _BERT_HEADS},
    "ViTModel": ("ViTConfig", frozenset(_VIT)), "ViTForImageClassification": ("ViTConfig", frozenset(_VIT)),
}

#: model_type -> the classes of that type we build, the first the one transformers' AutoModelForCausalLM
#: (AutoModel for the encoders) instantiates for it (``CONFIG_MAPPING`` / ``MODEL_FOR_CAUSAL_LM_MAPPING``).
MODEL_TYPES: dict[str, tuple[str, ...]] = {
    "llama": ("LlamaForCausalLM",), "mistral": ("MistralForCausalLM",), "mixtral": ("MixtralForCausalLM",),
    "qwen2": ("Qwen2ForCausalLM",), "qwen3": ("Qwen3ForCausalLM",), "qwen2_moe": ("Qwen2MoeForCausalLM",),
    "qwen3_moe": ("Qwen3MoeForCausalLM",), "deepseek_v2": ("DeepseekV2ForCausalLM",),
    "deepseek_v3": ("DeepseekV3ForCausalLM",), "gemma2": ("Gemma2ForCausalLM",),
    "gemma3_text": ("Gemma3ForCausalLM",), "gemma3": ("Gemma3ForConditionalGeneration",),
    "gpt2": ("GPT2LMHeadModel",), "bert": _BERT_HEADS, "vit": ("ViTModel", "ViTForImageClassification"),
}


def unknown_keys(data: dict[str, Any], arch: str) -> list[str]:
    """The keys of ``data`` that neither ``arch``'s configuration class (`CLASSES`) nor
    `PretrainedConfig` (`GENERIC_KEYS`) defines, sorted: the class keeps them as attributes that no
    layer of its model reads. Empty for an architecture not in `CLASSES`."""
    if arch not in CLASSES:
        return []
    known = CLASSES[arch][1] | GENERIC_KEYS
    return sorted(k for k in data if k not in known)


#: A checkpoint's torch dtype name (``torch_dtype``, or ``dtype`` as transformers >= 4.56 writes it) -> bits.
DTYPE_BITS = {"float64": 64, "double": 64, "float32": 32, "float": 32, "bfloat16": 16, "float16": 16, "half": 16,
              "float8_e4m3fn": 8, "float8_e4m3fnuz": 8, "float8_e5m2": 8, "float8_e5m2fnuz": 8, "float8_e8m0fnu": 8}


@dataclass(frozen=True)
class Precision:
    """A checkpoint's precision as its config.json states it: ``weight_bits`` and ``act_bits`` (the
    activations the quantized matmuls take; None where the file says nothing), ``dtype`` (a name:
    ``bfloat16``, ``fp8 (fbgemm_fp8)``, ``int4 (gptq)``, ``nf4 (bitsandbytes)``; "" when none) and
    ``notes`` (what could not be read, one line each); ``kv_bits`` the KV cache's, torch_dtype's
    (vLLM's ``kv_cache_dtype="auto"`` keeps the cache in the model's dtype, an FP8 checkpoint's too)."""

    weight_bits: int | None = None
    act_bits: int | None = None
    dtype: str = ""
    notes: tuple[str, ...] = ()
    kv_bits: int | None = None


def _dtype(data: dict[str, Any], source: str, key: str, notes: list[str]) -> tuple[int | None, str]:
    v = data.get(key)
    if v is None:
        return None, ""
    if not isinstance(v, str):
        raise HfConfigError(source, key, v, "must be a string naming a torch dtype, e.g. \"bfloat16\"")
    name = v.removeprefix("torch.")
    bits = DTYPE_BITS.get(name)
    if bits is None and name != "auto":
        notes.append(f"{key} = {v!r} is not a torch dtype we know ({', '.join(sorted(DTYPE_BITS))}): the "
                     "checkpoint's precision is not read from it")
    return bits, name if bits else ""


def _width(source: str, q: dict[str, Any], key: str, default: int | None) -> int:
    v = q.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 16:
        raise HfConfigError(source, f"quantization_config.{key}", v, "must be the quantized weights' width in "
                            "bits, an integer 1..16")
    return v


def _quantized(q: dict[str, Any], source: str, bits: int | None, notes: list[str]) -> tuple[int | None, int | None, str]:
    """(weight bits, activation bits, dtype name) of ``quantization_config`` ``q``; ``bits`` torch_dtype's."""
    method = q.get("quant_method")
    if method is None and (q.get("load_in_4bit") or q.get("load_in_8bit")):
        method = "bitsandbytes"   # BitsAndBytesConfig of transformers < 4.31 wrote no quant_method
    if method in ("fbgemm_fp8", "fp8"):   # FbgemmFp8Config: FP8 weights, activations quantized per row at run time
        scheme = q.get("activation_scheme", "dynamic")
        if scheme in ("dynamic", "static"):
            return 8, 8, f"fp8 ({method})"
        notes.append(f"quantization_config.activation_scheme = {scheme!r} is neither dynamic nor static: the "
                     "activations' precision is torch_dtype's")
        return 8, bits, f"fp8 ({method})"
    if method in ("gptq", "awq"):         # weight-only: activations stay in torch_dtype
        width = _width(source, q, "bits", 4 if method == "awq" else None)
        return width, bits, f"int{width} ({method})"
    if method == "bitsandbytes":
        if q.get("load_in_4bit"):
            compute = q.get("bnb_4bit_compute_dtype")
            act = DTYPE_BITS.get(compute.removeprefix("torch.")) if isinstance(compute, str) else None
            return 4, act or bits, f"{q.get('bnb_4bit_quant_type') or 'fp4'} (bitsandbytes)"
        if q.get("load_in_8bit"):
            return 8, bits, "int8 (bitsandbytes)"
        notes.append("quantization_config: bitsandbytes with neither load_in_4bit nor load_in_8bit: the precision is "
                     "torch_dtype's")
        return bits, bits, ""
    notes.append(f"quantization_config.quant_method = {method!r} is not read (we read fbgemm_fp8, fp8, gptq, awq, "
                 "bitsandbytes): the precision is torch_dtype's")
    return bits, bits, ""


def checkpoint_precision(data: dict[str, Any], source: str) -> Precision:
    """The precision the checkpoint of config.json ``data`` (file ``source``) is stored and run in.

    ``torch_dtype`` (or ``dtype``): float32 -> 32 bits, bfloat16 / float16 -> 16, float8_* -> 8,
    weights and activations alike. ``quantization_config`` over it: ``fbgemm_fp8`` / ``fp8``
    (FbgemmFp8Config, FineGrainedFP8Config) -> FP8 weights, 8 bits, and activations 8 bits when
    ``activation_scheme`` is dynamic (the default) or static; ``gptq`` / ``awq`` -> weights of
    ``bits`` (AWQ's default 4), activations in torch_dtype; ``bitsandbytes`` -> ``load_in_4bit`` 4
    bits (activations in ``bnb_4bit_compute_dtype``, else torch_dtype), ``load_in_8bit`` 8 bits;
    any other method -> a note, torch_dtype's precision. The quantized figures are those of the
    quantized linear layers: ``modules_to_not_convert`` (kept in torch_dtype) is said in a note.

    Raises:
        HfConfigError: ``torch_dtype`` / ``dtype`` not a string, ``quantization_config`` not a JSON
            object, GPTQ / AWQ ``bits`` not an integer 1..16 (GPTQ has no default).
    """
    notes: list[str] = []
    key = "torch_dtype" if data.get("torch_dtype") is not None or "dtype" not in data else "dtype"
    bits, name = _dtype(data, source, key, notes)
    q = data.get("quantization_config")
    if q is None:
        return Precision(bits, bits, name, tuple(notes), bits)
    if not isinstance(q, dict):
        raise HfConfigError(source, "quantization_config", q, "must be a JSON object (transformers' quantizer "
                            "config, with quant_method)")
    weights, acts, qname = _quantized(q, source, bits, notes)
    kept = q.get("modules_to_not_convert") or q.get("ignore") or []
    if qname and isinstance(kept, list) and kept:
        notes.append(f"quantization_config keeps {len(kept)} module(s) in {name or 'torch_dtype'} "
                     f"(modules_to_not_convert: {', '.join(map(str, kept[:3]))}{', ...' if len(kept) > 3 else ''}): "
                     f"{qname} is the precision of the quantized linear layers")
    return Precision(weights, acts, qname or name, tuple(notes), bits)
