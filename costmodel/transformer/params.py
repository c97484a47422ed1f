"""A transformer's weights: the matrices of each part at B = 1 (what the step builder sizes with the
tokens) and the parameter counts from them (`param_count`, equal to each bundled checkpoint's
published count, tested; `activated_params`, the weights one token passes through).

Shapes: a matmul ``Layer`` maps C inputs to K outputs; its weights are C x K.
"""

from __future__ import annotations

from costmodel.transformer.config import TransformerConfig
from costmodel.workload import Layer

__all__ = ["mm", "attention_weights", "ffn_weights", "head_weights", "param_count", "activated_params"]


def mm(name: str, C: int, K: int, B: int = 1, **roles) -> Layer:
    """A matmul layer: B rows, C contracted, K outputs (weights C x K)."""
    return Layer(name, K=K, C=C, B=B, kind="matmul", **roles)


def attention_weights(cfg: TransformerConfig) -> list[Layer]:
    """One block's attention projections at B = 1, in the order the step runs them.

    GQA: q_proj (hidden -> heads x head_dim), k_proj, v_proj (hidden -> kv_heads x head_dim; they
    write the KV cache), o_proj. MLA (DeepSeek-V2, arXiv:2405.04434, Eq. 9-19 and its released
    modelling code): q_a_proj (hidden -> q_lora_rank) and q_b_proj (-> heads x head_dim), or one
    q_proj when q_lora_rank = 0; kv_a_proj (hidden -> kv_lora_rank + rope_dim: the latent and the
    shared RoPE key, what the cache holds); kv_b_proj (kv_lora_rank -> heads x (nope + v_head_dim):
    each head's key and value from the latent); o_proj (heads x v_head_dim -> hidden).
    """
    h = cfg.hidden
    if cfg.attention != "mla":
        q, kv = cfg.q_dim, cfg.kv_dim
        return [mm("q_proj", h, q), mm("k_proj", h, kv, o_role="kv_cache"),
                mm("v_proj", h, kv, o_role="kv_cache"), mm("o_proj", q, h)]
    nope = cfg.head_dim - cfg.rope_dim
    qs = ([mm("q_a_proj", h, cfg.q_lora_rank), mm("q_b_proj", cfg.q_lora_rank, cfg.q_dim)] if cfg.q_lora_rank
          else [mm("q_proj", h, cfg.q_dim)])
    return qs + [mm("kv_a_proj", h, cfg.kv_lora_rank + cfg.rope_dim, o_role="kv_cache"),
                 mm("kv_b_proj", cfg.kv_lora_rank, cfg.heads * (nope + cfg.v_head_dim)),
                 mm("o_proj", cfg.heads * cfg.v_head_dim, h)]


def ffn_weights(cfg: TransformerConfig, prefix: str, width: int | None = None) -> list[Layer]:
    """One FFN (a dense one, one expert or the shared expert) at B = 1: [gate,] up (hidden ->
    ``width``, default ``cfg.ffn``), down (``width`` -> hidden), named ``<prefix>_gate`` ..."""
    h, f = cfg.hidden, cfg.ffn if width is None else width
    ins = ["gate", "up"] if cfg.gated else ["up"]
    return [mm(f"{prefix}_{n}", h, f) for n in ins] + [mm(f"{prefix}_down", f, h)]


def head_weights(cfg: TransformerConfig) -> list[Layer]:
    """The layers outside the blocks at B = 1: patch_embed and classifier (ViT), pooler (BERT,
    ViTModel), lm_head (decoders)."""
    h = cfg.hidden
    out = []
    if cfg.kind == "vit":
        g = cfg.image // cfg.patch
        out.append(Layer("patch_embed", K=h, C=cfg.channels, OY=g, OX=g, FY=cfg.patch, FX=cfg.patch,
                         SY=cfg.patch, SX=cfg.patch, kind="conv"))
        if cfg.classes:
            out.append(mm("classifier", h, cfg.classes))
    if cfg.pooler:
        out.append(mm("pooler", h, h))
    if cfg.kind == "decoder":
        out.append(mm("lm_head", h, cfg.vocab))
    return out


def _weights(layers: list[Layer]) -> int:
    return sum(l.weight_count for l in layers)


def _norms(cfg: TransformerConfig) -> int:
    """Norm parameters: two norms per block (four with ``post_norms``, Gemma 2), BERT's embedding norm,
    the final norm of decoders and ViT (hidden gains, plus biases for LayerNorm); Qwen3's q_norm / k_norm (head_dim each per
    block); MLA's q_a_layernorm and kv_a_layernorm (q_lora_rank, kv_lora_rank per block)."""
    L, h = cfg.layers, cfg.hidden
    n = (4 if cfg.post_norms else 2) * L + (1 if cfg.kind == "encoder" else 0) + (1 if cfg.kind in ("decoder", "vit") else 0)
    out = n * h * (2 if cfg.norm == "layernorm" else 1)
    if cfg.qk_norm:
        out += L * 2 * cfg.head_dim
    if cfg.attention == "mla":
        out += L * (cfg.q_lora_rank + cfg.kv_lora_rank)
    return out


def param_count(cfg: TransformerConfig) -> dict[str, int]:
    """Parameters (elements) by part, from the shapes the builder uses, and their ``total``.

    Keys (0 where a model has none): ``embeddings`` (token table vocab x hidden, BERT's token types
    type_vocab x hidden, ViT's class token hidden), ``position`` (learned table max_positions x
    hidden), ``attention`` (the projections of every block, `attention_weights`), ``ffn`` (the dense
    FFNs: every block's, or an MoE model's dense blocks'), ``experts`` (every routed expert of every
    MoE block), ``shared_experts`` (the shared expert of every MoE block, with Qwen2-MoE's gate,
    hidden x 1), ``router`` (hidden x experts per MoE block, plus DeepSeek-V3's correction bias,
    experts), ``norms`` (`_norms`), ``biases`` (of the block projections: every one where ``bias``,
    q/k/v where ``qkv_bias``), ``lm_head`` (untied decoders only; tied: counted in embeddings),
    ``pooler``, ``classifier``, ``patch_embed`` (weights + biases). Sources: the models'
    config.json; equal to ``published_params`` (tested).
    """
    L, h = cfg.layers, cfg.hidden
    att, ffn = attention_weights(cfg), ffn_weights(cfg, "ffn")
    moe, dense = cfg.moe_blocks, len(cfg.dense_blocks)
    heads = {l.name: l.weight_count + l.K for l in head_weights(cfg)}  # each with a bias ...
    heads.pop("lm_head", None)                                           # ... but the LM head
    n_ffn = cfg.experts or 1
    biases = 0
    if cfg.bias:
        biases = L * (sum(l.K for l in att) + n_ffn * sum(l.K for l in ffn))
    elif cfg.qkv_bias:
        biases = L * (cfg.q_dim + 2 * cfg.kv_dim)
    shared = _weights(ffn_weights(cfg, "shared", cfg.shared_ffn)) + (h if cfg.shared_gate else 0) if cfg.shared_ffn else 0
    out = {
        "embeddings": (cfg.vocab + cfg.type_vocab) * h + (h if cfg.kind == "vit" else 0),
        "position": cfg.max_positions * h,
        "attention": L * _weights(att),
        "ffn": (dense * _weights(ffn_weights(cfg, "ffn", cfg.dense_ffn)) if dense else 0) if cfg.experts
        else L * _weights(ffn),
        "experts": moe * cfg.experts * _weights(ffn),
        "shared_experts": moe * shared,
        "router": moe * (h * cfg.experts + (cfg.experts if cfg.router_bias else 0)),
        "norms": _norms(cfg),
        "biases": biases,
        "lm_head": cfg.vocab * h if cfg.kind == "decoder" and not cfg.tied_embeddings else 0,
        "pooler": heads.get("pooler", 0),
        "classifier": heads.get("classifier", 0),
        "patch_embed": heads.get("patch_embed", 0),
    }
    out["total"] = sum(out.values())
    return out


def activated_params(cfg: TransformerConfig) -> int:
    """Parameters one token passes through: `param_count`'s total with only ``top_k`` of each MoE
    block's routed experts (the shared experts, the router and everything else counted whole);
    the total for a dense model. DeepSeek-V3: 37.6 B of 671 B (its paper: "37B activated")."""
    parts = param_count(cfg)
    if not cfg.experts:
        return parts["total"]
    return parts["total"] - parts["experts"] + cfg.moe_blocks * cfg.top_k * _weights(ffn_weights(cfg, "expert"))
