"""A Hugging Face ``config.json`` -> `TransformerConfig`: the reader of every transformer we build,
the bundled models (``models/``) and a user's file alike. Standard library only (json); no weights.

``model_type`` picks the configuration class, as transformers' AutoConfig and AutoModelForCausalLM
do (``CONFIG_MAPPING[model_type]``; ``architectures`` is not what they load by), and
``architectures[0]`` the head within it (BertModel or BertForMaskedLM, ViTModel or
ViTForImageClassification). An ``architectures[0]`` of another type we build loses: the file is
read as its model_type's class, with a note saying what the other would build differently (a Qwen2
config labelled LlamaForCausalLM keeps its q/k/v biases). Without a model_type, or with one we do
not know, ``architectures[0]`` decides; an ``architectures[0]`` we do not build is refused.

Each layout reads the fields its Hugging Face config class defines, each with the class's default
when the file leaves it out (`FIELDS`; sizes without a meaningful default are required), and a JSON
null as that class reads None (`NULLS`): the default, a meaning of its own (``q_lora_rank: null``
is a full-rank q_proj, ``sliding_window: null`` no window), or an error where the class would
store None and its model could not be built with it (``hidden_size: null``). A field or value we
cannot model raises `HfConfigError` naming the file, the field and the value
(``architectures[0] = 'MambaForCausalLM': not a transformer we can build``), never a guess.

What is read but is no error comes back as notes (``read_hf_config(...)[1]["notes"]``, one line
each; `sweep map --network F` and `sweep list networks --file F` print them as ``note: ...``): keys
the class does not define (`costmodel.importers.hf_config.unknown_keys`), an ``architectures[0]``
that disagrees with ``model_type``, an implausible model (over 10 T parameters, or a layer over
2^40 MACs per token), and what of the checkpoint's precision could not be read. The precision
itself (``torch_dtype``, ``quantization_config``) goes into the config's ``checkpoint_*`` fields
(`costmodel.importers.hf_config.checkpoint_precision`).

Layouts (``ARCHITECTURES``):

* Llama-like decoders (RoPE, pre-RMSNorm, SwiGLU MLP): ``LlamaForCausalLM`` (Llama 2 / 3 / 3.1 /
  3.2; ``rope_scaling`` changes the RoPE frequencies, not a shape), ``MistralForCausalLM``
  (``sliding_window``: every block attends the last W tokens, its cache a rolling buffer of W; a
  prefill past W a band, `costmodel.transformer.attention.band_blocks`),
  ``MixtralForCausalLM`` (MoE: ``num_local_experts``, ``num_experts_per_tok``), ``Qwen2ForCausalLM``
  (biases on q/k/v, hard-wired in Qwen2Attention), ``Qwen3ForCausalLM`` (``q_norm`` / ``k_norm``),
  ``Qwen2MoeForCausalLM`` (a shared expert of ``shared_expert_intermediate_size`` behind a sigmoid
  gate; ``decoder_sparse_step``, ``mlp_only_layers`` say which blocks are dense),
  ``Qwen3MoeForCausalLM`` (no shared expert), ``DeepseekV2ForCausalLM`` / ``DeepseekV3ForCausalLM``
  (multi-head latent attention; ``n_shared_experts`` x ``moe_intermediate_size`` shared, the first
  ``first_k_dense_replace`` blocks dense, ``moe_layer_freq``; V3's sigmoid router with its
  ``e_score_correction_bias``; the multi-token-prediction module, ``num_nextn_predict_layers``, is
  a training objective left out of the served model, as DeepSeek's inference code does).
  ``attention_bias`` / ``mlp_bias`` are read where the class defines them (Llama; attention_bias:
  Qwen3, DeepSeek); Mistral's and Mixtral's projections have no biases (hard-wired).
* ``Gemma2ForCausalLM``, ``Gemma3ForCausalLM`` (`_gemma`): local (sliding-window) and global blocks.
* ``GPT2LMHeadModel``, ``BertModel`` (and the Bert task classes: their heads are not built),
  ``ViTModel`` (with its pooler) and ``ViTForImageClassification`` (classifier, no pooler).

Not modelled (exit 2 naming the field): the vision-language Gemma 3 (its ``text_config``), Qwen2's
and Qwen3's ``use_sliding_window``, activations other than the layout's,
learned positions other than absolute.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

from costmodel.importers.errors import HfConfigError
from costmodel.importers.hf_config import CLASSES, MODEL_TYPES, Precision, checkpoint_precision, unknown_keys
from costmodel.transformer.config import TransformerConfig
from costmodel.transformer.params import attention_weights, ffn_weights, head_weights, param_count

__all__ = ["read_hf_config", "config_from_hf", "ARCHITECTURES", "FIELDS", "NULLS", "model_name", "DEFAULT_SEQ",
           "DEFAULT_CONTEXT", "MAX_PARAMS", "MAX_LAYER_MACS"]

#: The default step of a model read from a file: a prefill of min(2,048, max context) tokens
#: (encoders 512) and a decode step at min(4,096, max context) cached tokens, batch 1.
DEFAULT_SEQ, DEFAULT_CONTEXT = 2048, 4096
#: Above these a model is noted as implausible (a typo in a size, most often): 10 T parameters, six
#: times the largest published checkpoint (Switch-C, 1.6 T: Fedus et al., arXiv:2101.03961, Table 9),
#: and 2^40 MACs per token in one layer (Llama-3.1-405B's largest, its 16,384 x 53,248 FFN
#: projections, is 8.7e8, under 2^30).
MAX_PARAMS, MAX_LAYER_MACS = 10 ** 13, 2 ** 40
_REQUIRED = object()
#: ``null=`` of a field read: a JSON null is refused, since the class stores None where its model
#: needs a number or a name (``nn.Linear(hidden, None)``, ``ACT2FN[None]``). Any other ``null=`` is
#: the value a null means.
REFUSE = object()


class _Reader:
    """Reads fields of one config.json (of configuration class ``cls``, for messages), recording which
    were read, which took the class's default (absent) and which were null."""

    def __init__(self, data: dict[str, Any], source: str, cls: str):
        self.data, self.source, self.cls = data, source, cls
        self.read: dict[str, Any] = {}
        self.defaulted: list[str] = []
        self.nulls: dict[str, Any] = {}

    def bad(self, key: str, why: str) -> HfConfigError:
        return HfConfigError(self.source, key, self.data.get(key), why)

    def __call__(self, key: str, default: Any = _REQUIRED, kind: type = int, null: Any = REFUSE) -> Any:
        """The value of ``key``: ``default`` when absent (required when none), ``null`` when null (`REFUSE`:
        an error), else the file's value checked against ``kind``."""
        if key not in self.data:
            if default is _REQUIRED:
                raise HfConfigError(self.source, key, None, "required: missing from the config")
            self.defaulted.append(key)
            self.read[key] = default
            return default
        v = self.data[key]
        if v is None:
            if null is REFUSE:
                hint = "give a value" if default is _REQUIRED else f"give a value, or leave the key out for the " \
                    f"class's default ({default!r})"
                raise HfConfigError(self.source, key, None, f"null: {self.cls} keeps None here and its model cannot "
                                    f"be built with it; {hint}")
            self.nulls[key] = self.read[key] = null
            return null
        if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
            raise self.bad(key, "must be an integer")
        if kind is int and v < 0:
            raise self.bad(key, "must not be negative")
        if kind is bool and not isinstance(v, bool):
            raise self.bad(key, "must be true or false")
        if kind is str and not isinstance(v, str):
            raise self.bad(key, "must be a string")
        if kind is float and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise self.bad(key, "must be a number")
        if kind in (list, dict) and not isinstance(v, kind):
            raise self.bad(key, f"must be a JSON {'list' if kind is list else 'object'}")
        self.read[key] = v
        return v

    def positive(self, key: str, default: Any = _REQUIRED, null: Any = REFUSE) -> int:
        """`__call__` of an integer that must be >= 1 where the file gives it."""
        v = self(key, default, null=null)
        if key not in self.nulls and v < 1:
            raise self.bad(key, "must be a positive integer")
        return v


#: Classes whose None num_key_value_heads means num_attention_heads (``if num_key_value_heads is None:
#: num_key_value_heads = num_attention_heads``); elsewhere (Qwen2-MoE, Qwen3-MoE, Gemma) the attention
#: divides by it: refused. Classes whose None head_dim means hidden_size / num_attention_heads
#: (LlamaConfig, MistralConfig, MixtralConfig); elsewhere the attention takes ``config.head_dim`` as is.
_KV_NULL_IS_HEADS = ("LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM",
                     "Qwen3ForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")
_HEAD_DIM_NULL_IS_DEFAULT = ("LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "DeepseekV2ForCausalLM",
                             "DeepseekV3ForCausalLM")


def _attention_sizes(r: _Reader, arch: str, head_dim: int | None = None) -> dict[str, Any]:
    """hidden, layers, heads, kv_heads, head_dim of a decoder (Llama-like field names; ``head_dim``
    the class's default, None: hidden / heads)."""
    hidden, heads = r.positive("hidden_size"), r.positive("num_attention_heads")
    kv = r.positive("num_key_value_heads", heads, null=heads if arch in _KV_NULL_IS_HEADS else REFUSE)
    if heads % kv:
        raise r.bad("num_key_value_heads", f"must divide num_attention_heads {heads}")
    if r.data.get("head_dim") is None and head_dim is None and hidden % heads:
        raise r.bad("num_attention_heads", f"must divide hidden_size {hidden} (no head_dim given)")
    fallback = hidden // heads if head_dim is None else head_dim
    head_dim = r.positive("head_dim", fallback, null=fallback if arch in _HEAD_DIM_NULL_IS_DEFAULT else REFUSE)
    return {"hidden": hidden, "layers": r.positive("num_hidden_layers"), "heads": heads, "kv_heads": kv,
            "head_dim": head_dim}


def _swiglu(r: _Reader) -> None:
    act = r("hidden_act", "silu", str)
    if act != "silu":
        raise r.bad("hidden_act", "this layout's MLP is gated by SiLU (SwiGLU); another gate is not modelled")


#: The bias flags each Llama-like class defines (the others' projections have none, or Qwen2's q/k/v).
_BIAS_FIELDS = {"LlamaForCausalLM": ("attention_bias", "mlp_bias"), "Qwen3ForCausalLM": ("attention_bias",),
                "Qwen3MoeForCausalLM": ("attention_bias",), "DeepseekV2ForCausalLM": ("attention_bias",),
                "DeepseekV3ForCausalLM": ("attention_bias",)}
_QWEN = ("Qwen2ForCausalLM", "Qwen2MoeForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM")


def _llama_like(r: _Reader, arch: str) -> dict[str, Any]:
    """Llama, Mistral, Mixtral, Qwen2 / 3 and their MoE variants (module docstring)."""
    out = _attention_sizes(r, arch)
    _swiglu(r)
    max_ctx = {"LlamaForCausalLM": 2048, "MistralForCausalLM": 131072, "MixtralForCausalLM": 131072,
               "DeepseekV2ForCausalLM": 2048, "DeepseekV3ForCausalLM": 4096}.get(arch, 32768)
    out.update(kind="decoder", vocab=r.positive("vocab_size"), max_positions=0,
               max_context=r.positive("max_position_embeddings", max_ctx), norm="rmsnorm", ffn_kind="swiglu",
               tied_embeddings=r("tie_word_embeddings", False, bool, null=False))
    biases = {k: r(k, False, bool, null=False) for k in _BIAS_FIELDS.get(arch, ())}
    attention_bias, mlp_bias = biases.get("attention_bias", False), biases.get("mlp_bias", False)
    if arch in ("Qwen2ForCausalLM", "Qwen2MoeForCausalLM"):  # Qwen2Attention: bias=True on q/k/v, none on o
        out["qkv_bias"] = True if arch == "Qwen2ForCausalLM" else r("qkv_bias", True, bool, null=False)
    if arch in _QWEN and r("use_sliding_window", False, bool, null=False):
        raise r.bad("use_sliding_window", "sliding-window blocks beside full-attention ones "
                    "(max_window_layers) are not modelled")
    if attention_bias != mlp_bias:
        raise r.bad("attention_bias", f"with mlp_bias = {mlp_bias}: biases on the attention only or the MLP "
                    "only are not modelled (both or neither)")
    out["bias"] = attention_bias
    out["qk_norm"] = arch in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM")
    window = {"MistralForCausalLM": 4096}.get(arch)
    if arch in ("MistralForCausalLM", "MixtralForCausalLM"):  # null: MistralAttention's sliding_window=None
        out["sliding_window"] = r("sliding_window", window, null=0) or 0
    if arch in ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"):
        out.update(_deepseek(r, arch, out))
    else:
        out.update(_llama_ffn(r, arch, out["layers"]))
    r("rope_scaling", {}, dict, null={})  # the RoPE frequencies only (read, so listed): no shape changes
    return out


def _llama_ffn(r: _Reader, arch: str, layers: int) -> dict[str, Any]:
    """The FFN of Llama-like layouts: dense, Mixtral's experts, Qwen's MoE blocks."""
    if arch == "MixtralForCausalLM":
        return {"ffn": r.positive("intermediate_size"), "experts": r.positive("num_local_experts", 8),
                "top_k": r.positive("num_experts_per_tok", 2)}
    if arch not in ("Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM"):
        return {"ffn": r.positive("intermediate_size"), "experts": 0, "top_k": 0}
    qwen2 = arch == "Qwen2MoeForCausalLM"
    experts = r.positive("num_experts", 60 if qwen2 else 128)
    step = r.positive("decoder_sparse_step", 1)
    only = r("mlp_only_layers", [], list, null=[])  # Qwen2MoeConfig: [] if mlp_only_layers is None
    dense = tuple(i for i in range(layers) if i in only or (i + 1) % step)
    out = {"ffn": r.positive("moe_intermediate_size", 1408 if qwen2 else 768), "experts": experts,
           "top_k": r.positive("num_experts_per_tok", 4 if qwen2 else 8), "dense_blocks": dense,
           "dense_ffn": r.positive("intermediate_size", 5632 if qwen2 else 6144) if dense else 0}
    if qwen2:
        shared: int = r("shared_expert_intermediate_size", 5632)
        out.update(shared_ffn=shared, shared_gate=shared > 0)
    return out


def _deepseek(r: _Reader, arch: str, sizes: dict[str, Any]) -> dict[str, Any]:
    """DeepSeek-V2 / V3: multi-head latent attention and the DeepSeekMoE blocks. Nulls as the remote
    modelling_deepseek.py that the configs' auto_map names reads them: q_lora_rank None a full-rank
    q_proj (DeepseekV2Attention), n_routed_experts None no MoE block (DeepseekV2DecoderLayer),
    n_shared_experts None no shared expert (DeepseekV2MoE), n_group / topk_group None no group limit."""
    v3 = arch == "DeepseekV3ForCausalLM"
    nope, rope = r.positive("qk_nope_head_dim", 128), r.positive("qk_rope_head_dim", 64)
    if sizes["kv_heads"] != sizes["heads"]:
        raise r.bad("num_key_value_heads", f"MLA gives every one of the {sizes['heads']} heads its own K and V "
                    "from the latent: it must equal num_attention_heads")
    layers, experts = sizes["layers"], r("n_routed_experts", 256 if v3 else 0, null=0)
    out: dict[str, Any] = {"attention": "mla", "head_dim": nope + rope, "rope_dim": rope,
                           "q_lora_rank": r("q_lora_rank", 1536, null=0) or 0,
                           "kv_lora_rank": r.positive("kv_lora_rank", 512), "v_head_dim": r.positive("v_head_dim", 128)}
    if not experts:
        out.update(ffn=r.positive("intermediate_size"), experts=0, top_k=0)
        return out
    first, freq = r("first_k_dense_replace", 3 if v3 else 0), r.positive("moe_layer_freq", 1)
    dense = tuple(i for i in range(layers) if i < first or i % freq)
    scoring = r("scoring_func", "sigmoid" if v3 else "softmax", str)
    if scoring not in ("softmax", "sigmoid"):
        raise r.bad("scoring_func", "must be softmax or sigmoid")
    method = r("topk_method", "noaux_tc" if v3 else "greedy", str)
    grouped = method in ("noaux_tc", "group_limited_greedy")
    groups = (r("n_group", 8 if v3 else 1, null=None), r("topk_group", 4 if v3 else 1, null=None))
    for key, g in zip(("n_group", "topk_group"), groups):
        if g is None and grouped:
            raise r.bad(key, f"null: topk_method {method!r} routes within groups (MoEGate views the scores by "
                        f"{key}): give a number")
    mtp = r("num_nextn_predict_layers", 1 if v3 else 0, null=0)
    shared = r("n_shared_experts", 1, null=0)
    out.update(ffn=r.positive("moe_intermediate_size", 2048), experts=experts,
               top_k=r.positive("num_experts_per_tok", 8), shared_ffn=shared * r.positive("moe_intermediate_size", 2048),
               dense_blocks=dense, dense_ffn=r.positive("intermediate_size", 18432) if dense else 0, router=scoring,
               router_bias=method == "noaux_tc",
               routing_groups=groups if grouped and groups[0] and groups[0] > 1 else (0, 0))
    if mtp:
        out["not_modelled"] = (f"the multi-token-prediction module (num_nextn_predict_layers = {mtp}): a training "
                               "objective, not part of the served model",)
    return out


def _gemma(r: _Reader, arch: str) -> dict[str, Any]:
    """Gemma 2 (Gemma Team, arXiv:2408.00118, Sec. 2; Gemma2DecoderLayer) and Gemma 3's text model
    (arXiv:2503.19786, Sec. 2; Gemma3DecoderLayer): GQA with head_dim 256, RoPE, a GeGLU MLP,
    RMSNorm before and after each sub-layer (four per block), the embeddings scaled by
    sqrt(hidden), the LM head tied. Gemma 2 soft-caps the attention scores and the final logits
    (tanh) and every other block (the even ones, Gemma2DecoderLayer's ``is_sliding``) attends the
    last ``sliding_window`` tokens; Gemma 3 normalises each head's q and k (q_norm, k_norm) instead
    of capping, and five blocks of every ``sliding_window_pattern`` = 6 are local (block i global
    when (i + 1) is a multiple of it). ``layer_types`` (sliding_attention / full_attention), where
    given, names each block's kind for either. Nulls: a soft-capping field none (Gemma2Model:
    ``if config.final_logit_softcapping is not None``), sliding_window none (no block windowed)."""
    gemma3 = arch == "Gemma3ForCausalLM"
    out = _attention_sizes(r, arch, head_dim=256)
    act = r("hidden_activation", "gelu_pytorch_tanh", str)
    if not act.startswith("gelu"):
        raise r.bad("hidden_activation", "Gemma's MLP is gated by a GELU (GeGLU)")
    if r("attention_bias", False, bool, null=False):
        raise r.bad("attention_bias", "Gemma with attention biases is not modelled")
    layers = out["layers"]
    types = r("layer_types", [], list, null=[])
    if types and len(types) != layers:
        raise r.bad("layer_types", f"must name each of the {layers} blocks")
    pattern = r.positive("sliding_window_pattern", 6) if gemma3 and not types else 2
    windowed = tuple(i for i in range(layers) if (types[i] == "sliding_attention" if types else
                                                  ((i + 1) % pattern != 0 if gemma3 else i % 2 == 0)))
    caps = [r(k, None if gemma3 else d, float, null=None) for k, d in (("attn_logit_softcapping", 50.0),
                                                                       ("final_logit_softcapping", 30.0))]
    if bool(caps[0]) != bool(caps[1]):
        raise r.bad("attn_logit_softcapping", "with final_logit_softcapping: both or neither are modelled")
    window = r.positive("sliding_window", 4096, null=0)
    windowed = windowed if window else ()
    out.update(kind="decoder", vocab=r.positive("vocab_size", 262208 if gemma3 else 256000), max_positions=0,
               max_context=r.positive("max_position_embeddings", 131072 if gemma3 else 8192), norm="rmsnorm",
               ffn_kind="geglu", tied_embeddings=r("tie_word_embeddings", True, bool, null=False), bias=False,
               ffn=r.positive("intermediate_size", 9216), experts=0, top_k=0, post_norms=True, softcap=bool(caps[0]),
               embed_scale=True, qk_norm=gemma3, sliding_window=window if windowed else 0,
               window_blocks=windowed if len(windowed) < layers else ())
    return out


def _gpt2(r: _Reader, arch: str) -> dict[str, Any]:
    hidden, heads = r.positive("n_embd", 768), r.positive("n_head", 12)
    if hidden % heads:
        raise r.bad("n_head", f"must divide n_embd {hidden}")
    act = r("activation_function", "gelu_new", str)
    if not act.startswith("gelu"):
        raise r.bad("activation_function", "GPT-2's MLP is modelled with a GELU")
    positions = r.positive("n_positions", 1024)
    return {"kind": "decoder", "hidden": hidden, "layers": r.positive("n_layer", 12), "heads": heads,
            "kv_heads": heads, "head_dim": hidden // heads,
            "ffn": r.positive("n_inner", 4 * hidden, null=4 * hidden),  # GPT2Block: n_inner None -> 4 x hidden
            "ffn_kind": "gelu", "vocab": r.positive("vocab_size", 50257), "max_positions": positions,
            "max_context": positions, "tied_embeddings": r("tie_word_embeddings", True, bool, null=False),
            "bias": True, "norm": "layernorm", "experts": 0, "top_k": 0}


def _encoder_sizes(r: _Reader, act_key: str) -> dict[str, Any]:
    hidden, heads = r.positive("hidden_size", 768), r.positive("num_attention_heads", 12)
    if hidden % heads:
        raise r.bad("num_attention_heads", f"must divide hidden_size {hidden}")
    act = r(act_key, "gelu", str)
    if not act.startswith("gelu"):
        raise r.bad(act_key, "the encoder's MLP is modelled with a GELU")
    return {"hidden": hidden, "layers": r.positive("num_hidden_layers", 12), "heads": heads, "kv_heads": heads,
            "head_dim": hidden // heads, "ffn": r.positive("intermediate_size", 3072), "ffn_kind": "gelu",
            "norm": "layernorm", "bias": True, "tied_embeddings": False, "experts": 0, "top_k": 0}


def _bert(r: _Reader, arch: str) -> dict[str, Any]:
    if r("position_embedding_type", "absolute", str) != "absolute":
        raise r.bad("position_embedding_type", "only absolute (learned) positions are modelled")
    positions = r.positive("max_position_embeddings", 512)
    out = _encoder_sizes(r, "hidden_act")
    out.update(kind="encoder", vocab=r.positive("vocab_size", 30522), max_positions=positions,
               max_context=positions, type_vocab=r("type_vocab_size", 2), pooler=True)
    if arch != "BertModel":
        out["not_modelled"] = (f"{arch}'s task head: the BertModel encoder and pooler are built",)
    return out


def _vit(r: _Reader, arch: str) -> dict[str, Any]:
    image, patch = r.positive("image_size", 224), r.positive("patch_size", 16)
    if image % patch:
        raise r.bad("image_size", f"must be a multiple of patch_size {patch}")
    if not r("qkv_bias", True, bool, null=False):  # nn.Linear(bias=None): no bias
        raise r.bad("qkv_bias", "ViT without q/k/v biases is not modelled")
    tokens = (image // patch) ** 2 + 1
    out = _encoder_sizes(r, "hidden_act")
    classes = 0
    if arch == "ViTForImageClassification":
        labels = r.data.get("id2label")
        classes = len(labels) if isinstance(labels, dict) and labels else r.positive("num_labels", 2)
    out.update(kind="vit", vocab=0, max_positions=tokens, max_context=tokens, patch=patch, image=image,
               channels=r.positive("num_channels", 3), classes=classes, pooler=arch == "ViTModel", seq=tokens)
    return out


_LLAMA_LIKE = ("LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
               "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")
_BERT = ("BertModel", "BertForMaskedLM", "BertForPreTraining", "BertForSequenceClassification")
#: architectures[0] -> the layout that reads it.
ARCHITECTURES: dict[str, Callable[[_Reader, str], dict[str, Any]]] = {
    **{a: _llama_like for a in _LLAMA_LIKE}, "Gemma2ForCausalLM": _gemma, "Gemma3ForCausalLM": _gemma,
    "GPT2LMHeadModel": _gpt2,
    **{a: _bert for a in _BERT},
    "ViTModel": _vit, "ViTForImageClassification": _vit}
#: Why a known non-fitting architecture is refused (module docstring).
_REFUSED = {"Gemma3ForConditionalGeneration": "a vision-language model: its text_config's decoder is not read yet "
            "(a text-only Gemma 3, Gemma3ForCausalLM, is)"}
#: The config.json fields each layout reads, with the Hugging Face class's default where absent
#: (documentation; `sweep list networks --file` shows which a file left to the default).
FIELDS = {
    "Llama-like": "hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, vocab_size (required); "
                  "num_key_value_heads (= num_attention_heads), head_dim (= hidden_size / num_attention_heads), "
                  "hidden_act (silu), max_position_embeddings (Llama 2,048; Mistral / Mixtral 131,072; Qwen "
                  "32,768; DeepSeek-V2 2,048, V3 4,096), tie_word_embeddings (false), attention_bias / mlp_bias "
                  "(false; Llama both, Qwen3 and DeepSeek attention_bias), rope_scaling (none), sliding_window "
                  "(Mistral 4,096, Mixtral none), use_sliding_window (Qwen: false), qkv_bias (Qwen2-MoE: true)",
    "Mixtral": "num_local_experts (8), num_experts_per_tok (2)",
    "Qwen MoE": "num_experts (Qwen2-MoE 60, Qwen3-MoE 128), num_experts_per_tok (4, 8), moe_intermediate_size "
                "(1,408, 768), shared_expert_intermediate_size (Qwen2-MoE 5,632), decoder_sparse_step (1), "
                "mlp_only_layers ([])",
    "DeepSeek": "q_lora_rank (1,536), kv_lora_rank (512), qk_nope_head_dim (128), "
                "qk_rope_head_dim (64), v_head_dim (128), n_routed_experts (V3 256), n_shared_experts (1), "
                "moe_intermediate_size (2,048), num_experts_per_tok (8), first_k_dense_replace (V3 3), "
                "moe_layer_freq (1), scoring_func (V3 sigmoid), topk_method (V3 noaux_tc), n_group (8), "
                "topk_group (4), num_nextn_predict_layers (V3 1)",
    "Gemma2ForCausalLM": "hidden_size, num_hidden_layers, num_attention_heads (required); num_key_value_heads "
                         "(= heads), head_dim (256), hidden_activation (gelu_pytorch_tanh), vocab_size (256,000), "
                         "intermediate_size (9,216), max_position_embeddings (8,192), tie_word_embeddings (true), "
                         "attention_bias (false), sliding_window (4,096), layer_types (even blocks sliding), "
                         "attn_logit_softcapping (50.0), final_logit_softcapping (30.0)",
    "Gemma3ForCausalLM": "as Gemma 2, with vocab_size (262,208), max_position_embeddings (131,072), "
                         "sliding_window_pattern (6: blocks 5, 11, ... global), the soft-capping fields (none)",
    "GPT2LMHeadModel": "n_embd (768), n_layer (12), n_head (12), n_inner (4 x n_embd), vocab_size (50,257), "
                       "n_positions (1,024), activation_function (gelu_new), tie_word_embeddings (true)",
    "Bert": "hidden_size (768), num_hidden_layers (12), num_attention_heads (12), intermediate_size (3,072), "
            "vocab_size (30,522), max_position_embeddings (512), type_vocab_size (2), hidden_act (gelu), "
            "position_embedding_type (absolute)",
    "ViT": "hidden_size (768), num_hidden_layers (12), num_attention_heads (12), intermediate_size (3,072), "
           "image_size (224), patch_size (16), num_channels (3), qkv_bias (true), hidden_act (gelu); "
           "ViTForImageClassification: len(id2label), else num_labels (2)",
}
#: What a JSON null means, field by field, as the class that reads it treats None (documentation of the
#: ``null=`` of each read above); every field not listed is refused when null (exit 2).
NULLS = {
    "num_key_value_heads": "= num_attention_heads (LlamaConfig, MistralConfig, MixtralConfig, Qwen2Config, "
                           "Qwen3Config, DeepseekV2Config: `if num_key_value_heads is None`); refused for Qwen2-MoE, "
                           "Qwen3-MoE and Gemma (their attention divides by it)",
    "head_dim": "= hidden_size / num_attention_heads (LlamaConfig, MistralConfig, MixtralConfig); refused for Qwen "
                "and Gemma (their attention takes config.head_dim as is)",
    "q_lora_rank": "no query LoRA: one full-rank q_proj, hidden -> heads x (qk_nope_head_dim + qk_rope_head_dim) "
                   "(DeepseekV2Attention: `if config.q_lora_rank is None: self.q_proj = nn.Linear(...)`)",
    "n_routed_experts": "no MoE block, every FFN dense (DeepseekV2DecoderLayer: `config.n_routed_experts is not None "
                        "and ...`)",
    "n_shared_experts": "no shared expert (DeepseekV2MoE: `if config.n_shared_experts is not None`)",
    "n_group, topk_group": "no group limit (MoEGate reads them for group-limited routing only; refused with "
                           "topk_method group_limited_greedy or noaux_tc)",
    "num_nextn_predict_layers": "none",
    "sliding_window": "no window: every block attends the whole context (MistralAttention, Gemma2Attention: "
                      "sliding_window=None)",
    "rope_scaling": "none (the default RoPE)",
    "attn_logit_softcapping, final_logit_softcapping": "no soft-capping (Gemma2: `if ... is not None`)",
    "layer_types": "from the class's pattern", "mlp_only_layers": "[] (Qwen2MoeConfig, Qwen3MoeConfig)",
    "n_inner": "4 x n_embd (GPT2Block: `config.n_inner if config.n_inner is not None else 4 * hidden_size`)",
    "tie_word_embeddings": "untied (PreTrainedModel.tie_weights ties only when it is truthy)",
    "attention_bias, mlp_bias, qkv_bias, use_sliding_window": "false (nn.Linear(bias=None) has no bias; `if "
                                                              "config.use_sliding_window` is not taken)",
}


def model_name(path: str | os.PathLike) -> str:
    """The name of the model in ``path``: its file's stem, or its folder's name for a file named
    ``config.json`` (``models/DeepSeek-V3/config.json`` -> ``DeepSeek-V3``)."""
    p = Path(path)
    return p.parent.resolve().name if p.stem == "config" else p.stem


def _layout(data: dict[str, Any], source: str) -> tuple[str, str | None, list[str]]:
    """The architecture to read ``data`` as (module docstring: model_type first), the disagreeing
    ``architectures[0]`` (None when it agrees) and the notes so far."""
    archs = data.get("architectures")
    if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
        raise HfConfigError(source, "architectures", archs, "required: a list naming the model class, e.g. "
                            "[\"LlamaForCausalLM\"]")
    named, mt, notes = archs[0], data.get("model_type"), []
    if mt is not None and not isinstance(mt, str):
        raise HfConfigError(source, "model_type", mt, "must be a string naming the configuration's type, e.g. "
                            "\"llama\"")
    family = MODEL_TYPES.get(mt or "")
    arch, other = named, None
    if family is not None and named not in family and named in ARCHITECTURES:
        arch, other = family[0], named
    elif mt and family is None and named in ARCHITECTURES:
        notes.append(f"model_type = {mt!r} is the type of no class we build (transformers would need the "
                     f"checkpoint's own code): read as architectures[0] = {named!r}")
    if arch in _REFUSED:
        raise HfConfigError(source, "model_type" if other else "architectures[0]", mt if other else arch,
                            _REFUSED[arch])
    if arch not in ARCHITECTURES:
        raise HfConfigError(source, "architectures[0]", arch, "not a transformer we can build; known: "
                            + ", ".join(sorted(ARCHITECTURES)))
    return arch, other, notes


def _build(data: dict[str, Any], name: str, source: str, arch: str) -> tuple[TransformerConfig, _Reader, Precision]:
    """The config of ``data`` read as ``arch``, the reader (what was read) and the checkpoint's precision."""
    r = _Reader(data, source, CLASSES.get(arch, (arch, None))[0])
    fields = ARCHITECTURES[arch](r, arch)
    max_ctx = fields["max_context"]
    seq = fields.pop("seq", min(DEFAULT_SEQ if fields["kind"] == "decoder" else 512, max_ctx))
    context = min(DEFAULT_CONTEXT, max_ctx) if fields["kind"] == "decoder" else 0
    prec = checkpoint_precision(data, source)
    try:
        cfg = TransformerConfig(name=name, description=f"{arch} read from {source}", source=source,
                                published_params=0, published_params_source="", seq=seq, batch=1, context=context,
                                architecture=arch, checkpoint_weight_bits=prec.weight_bits,
                                checkpoint_act_bits=prec.act_bits, checkpoint_kv_bits=prec.kv_bits,
                                checkpoint_dtype=prec.dtype, **fields)
    except ValueError as e:  # a combination the fields allow one by one but no model has
        raise HfConfigError(source, "architectures[0]", arch, str(e)) from None
    return cfg, r, prec


#: How a bool field that differs between two readings is said (`_differences`).
_PHRASES = {"qkv_bias": "q/k/v biases", "bias": "biases on every projection", "qk_norm": "q/k norms (q_norm, k_norm)",
            "post_norms": "norms after attention and the FFN", "softcap": "soft-capping", "embed_scale":
            "the embedding scale", "shared_gate": "the shared expert's gate", "router_bias": "the router's correction bias",
            "tied_embeddings": "the LM head tied to the embedding"}


def _differences(cfg: TransformerConfig, alt: TransformerConfig) -> str:
    """What reading as ``alt.architecture`` changes against ``cfg`` (its shapes and parameter count)."""
    a, b, parts = cfg.shape(), alt.shape(), []
    for k, v in a.items():
        if v == b[k]:
            continue
        if isinstance(v, bool) and k in _PHRASES:
            parts.append(f"not build the {_PHRASES[k]} of {cfg.architecture}" if v else f"add {_PHRASES[k]}")
        else:
            parts.append(f"have {k} = {b[k]!r} (not {v!r})")
    total, other = param_count(cfg)["total"], param_count(alt)["total"]
    if total != other:
        parts.append(f"count {other:,} parameters, not {total:,}")
    return "; ".join(parts) or "build the same model"


def _eng(n: float) -> str:
    """``n`` in engineering units: 489 T, 1.1 P (k, M, G, T, P, E)."""
    for unit, scale in (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:g}"


def _implausible(cfg: TransformerConfig) -> list[str]:
    """Notes on a model over `MAX_PARAMS` parameters or with a layer over `MAX_LAYER_MACS` MACs per token."""
    out, total = [], param_count(cfg)["total"]
    if total > MAX_PARAMS:
        out.append(f"implausible model: {_eng(total)} parameters ({total:,}), over 10 T: check its sizes "
                   "(hidden_size, num_hidden_layers, intermediate_size, vocab_size, the experts)")
    widths = sorted({cfg.ffn, cfg.dense_ffn, cfg.shared_ffn} - {0})
    layers = attention_weights(cfg) + [l for w in widths for l in ffn_weights(cfg, "ffn", w)] + head_weights(cfg)
    big = max(layers, key=lambda l: l.weight_count)
    if big.weight_count > MAX_LAYER_MACS:
        out.append(f"implausible layer: {big.name} ({big.C:,} x {big.K:,}) takes {_eng(big.weight_count)} MACs per "
                   f"token ({big.weight_count:,}), over 2^40")
    return out


def config_from_hf(data: Any, name: str, source: str) -> tuple[TransformerConfig, dict[str, Any]]:
    """The `TransformerConfig` of the parsed config.json ``data`` (model ``name``; ``source`` the
    file, for messages and the config's ``source``) and what was read: ``{"read": {field: value},
    "defaulted": [fields left to the class's default], "notes": [one line each, module docstring]}``.

    Raises:
        HfConfigError: not a JSON object, no or an unknown ``architectures[0]``, a ``model_type``
            that is not a string, a missing required field, a null the class cannot build with
            (`NULLS`), a negative or mistyped size, heads that do not divide the hidden size, a
            field value we cannot model, a mistyped ``torch_dtype`` or ``quantization_config``;
            the message names ``source``, the field and its value.
    """
    if not isinstance(data, dict):
        raise HfConfigError(source, "(file)", type(data).__name__, "a config.json holds a JSON object")
    arch, other, notes = _layout(data, source)
    cfg, r, prec = _build(data, name, source, arch)
    if other is not None:
        try:
            said = "would " + _differences(cfg, _build(data, name, source, other)[0])
        except HfConfigError as e:
            said = f"does not read ({e.key}: {e.message})"
        notes.append(f"architectures[0] = {other!r} disagrees with model_type = {data['model_type']!r}: read as "
                     f"{arch} (transformers' AutoConfig and AutoModelForCausalLM choose the class by model_type); "
                     f"as {other} it {said}")
    extra = unknown_keys(data, arch)
    if extra:
        notes.append(f"{CLASSES[arch][0]} does not define {', '.join(extra)}: ignored (no layer of {arch} reads "
                     f"{'it' if len(extra) == 1 else 'them'})")
    notes += list(prec.notes) + _implausible(cfg)
    return cfg, {"read": r.read, "defaulted": r.defaulted, "notes": notes}


def read_hf_config(path: str | os.PathLike, name: str | None = None) -> tuple[TransformerConfig, dict[str, Any]]:
    """`config_from_hf` of the file ``path`` (model name ``name``, default `model_name`).

    Raises:
        HfConfigError: the file cannot be read or is not JSON (key ``(file)``), or as `config_from_hf`.
    """
    source = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise HfConfigError(source, "(file)", None, f"cannot read: {e.strerror or e}") from None
    except ValueError as e:
        raise HfConfigError(source, "(file)", None, f"not JSON: {e}") from None
    return config_from_hf(data, name or model_name(path), source)
