"""The vector operations of a transformer step (`VectorOp`, between its matmuls) and what no
operation costs (`not_costed`); `costmodel.transformer.build` assembles the step.

Per block (x blocks): ``attn_norm``, ``ffn_norm`` (BERT's post-LN norms carry the same names),
``q_a_norm`` / ``kv_a_norm`` (MLA's latent norms), ``rope_q``, ``rope_k`` (RoPE models; MLA rotates
its rope_dim parts only), ``q_norm`` / ``k_norm`` (Qwen3), ``softmax``, ``attn_residual``,
``ffn_residual``, ``act`` (gelu / silu), ``gate_mul`` (SwiGLU), ``bias_add`` (biased models; Qwen2's
q/k/v biases: ``qkv_bias_add``);
MoE blocks: ``router_softmax`` (or ``router_sigmoid``, DeepSeek-V3), ``expert_combine``,
``expert_sum``, and for a shared expert ``shared_act``, ``shared_gate_mul``, ``shared_add`` (plus
Qwen2-MoE's ``shared_gate_sigmoid`` and ``shared_scale``); an MoE model's dense blocks: ``dense_act``,
``dense_gate_mul``. Once: ``pos_add`` (learned positions), ``type_add``, ``embed_norm`` (BERT),
``final_norm`` (decoders, ViT), and the biases of the outer layers ``patch_embed_bias``,
``classifier_bias``, ``pooler_bias``.
"""

from __future__ import annotations

from dataclasses import replace

from costmodel.transformer.attention import (CAUSAL_BLOCK, attention_layers, causal_blocks, computed_pairs,
                                             fuse_elementwise, fused_attention_ops)
from costmodel.transformer.config import TransformerConfig
from costmodel.transformer.mla import attention_dims, attention_groups
from costmodel.transformer.params import attention_weights, ffn_weights
from costmodel.transformer.step import Step
from costmodel.workload import VectorOp

__all__ = ["vector_ops", "not_costed", "pairs"]


def pairs(st: Step, window: int = 0) -> int:
    """Query-key pairs one head computes in the step (`costmodel.transformer.attention.computed_pairs`;
    ``window``: a prefill's sliding window)."""
    return computed_pairs(st.q_len, st.attended, st.causal, st.fusion, st.query_tile, st.kv_tile, window)


def _op(bits: int | None):
    def op(name, kind, elements, inputs=1, rows=1):
        return VectorOp(name, kind, elements, inputs, rows, bits)
    return op


def _attention_ops(cfg: TransformerConfig, st: Step, bits: int | None) -> tuple[list[VectorOp], list[int]]:
    """A block's ops up to the FFN and their repeats: norms, RoPE, the scores' soft-cap and softmax
    (unfused; per attention group, `attention_groups`), the attention residual, ffn_norm."""
    T, h, op = st.tokens, cfg.hidden, _op(bits)
    block = [op("attn_norm", cfg.norm, T * h, rows=T)]
    if cfg.attention == "mla":
        if cfg.q_lora_rank:
            block.append(op("q_a_norm", "rmsnorm", T * cfg.q_lora_rank, rows=T))
        block += [op("kv_a_norm", "rmsnorm", T * cfg.kv_lora_rank, rows=T),
                  op("rope_q", "rope", T * cfg.heads * cfg.rope_dim, rows=T),
                  op("rope_k", "rope", T * cfg.rope_dim, rows=T)]
    elif cfg.max_positions == 0:
        block += [op("rope_q", "rope", T * cfg.q_dim, rows=T), op("rope_k", "rope", T * cfg.kv_dim, rows=T)]
    if cfg.qk_norm:
        block += [op("q_norm", "rmsnorm", T * cfg.q_dim, rows=T * cfg.heads),
                  op("k_norm", "rmsnorm", T * cfg.kv_dim, rows=T * cfg.kv_heads)]
    reps = [cfg.layers] * len(block)
    rows = st.batch * cfg.heads * st.q_len
    for g in attention_groups(cfg, st) if st.fusion != "fused" else ():
        n = st.batch * cfg.heads * pairs(replace(st, attended=g.attended), g.window)
        if cfg.softcap:
            block.append(op(f"attn_softcap{g.suffix}", "softcap", n, rows=rows))
            reps.append(g.blocks)
        block.append(op(f"softmax{g.suffix}", "softmax", n, rows=rows))
        reps.append(g.blocks)
    tail = [op("attn_post_norm", cfg.norm, T * h, rows=T)] if cfg.post_norms else []
    tail += [op("attn_residual", "add", T * h, inputs=2, rows=T), op("ffn_norm", cfg.norm, T * h, rows=T)]
    return block + tail, reps + [cfg.layers] * len(tail)


def _moe_ops(cfg: TransformerConfig, st: Step, bits: int | None) -> list[VectorOp]:
    """An MoE block's FFN ops: the router's scores, the experts' activation and gate, the weighted
    combine and sum of the top_k outputs, the shared expert's."""
    T, h, op = st.tokens, cfg.hidden, _op(bits)
    pairs_ = T * cfg.top_k
    out = [op(f"router_{cfg.router}", cfg.router, T * cfg.experts, rows=T) if cfg.router == "sigmoid"
           else op("router_softmax", "softmax", T * cfg.experts, rows=T)]
    out.append(op("act", cfg.act, pairs_ * cfg.ffn))
    if cfg.gated:
        out.append(op("gate_mul", "mul", pairs_ * cfg.ffn, inputs=2))
    out.append(op("expert_combine", "mul", pairs_ * h, inputs=2))
    if cfg.top_k > 1:
        out.append(op("expert_sum", "add", T * (cfg.top_k - 1) * h, inputs=2))
    if cfg.shared_ffn:
        out += [op("shared_act", cfg.act, T * cfg.shared_ffn), op("shared_gate_mul", "mul", T * cfg.shared_ffn, inputs=2)]
        if cfg.shared_gate:
            out += [op("shared_gate_sigmoid", "sigmoid", T, rows=T), op("shared_scale", "mul", T * h, inputs=2)]
        out.append(op("shared_add", "add", T * h, inputs=2))
    return out


def _dense_ops(cfg: TransformerConfig, st: Step, bits: int | None, prefix: str = "") -> list[VectorOp]:
    """A dense FFN's ops: the activation and (SwiGLU) the gate multiply; ``prefix`` ``dense_`` for
    the dense blocks of an MoE model."""
    T, op = st.tokens, _op(bits)
    width = cfg.dense_ffn if prefix else cfg.ffn
    out = [op(f"{prefix}act", cfg.act, T * width, rows=T)]
    if cfg.gated:
        out.append(op(f"{prefix}gate_mul", "mul", T * width, inputs=2, rows=T))
    return out


def _bias_ops(cfg: TransformerConfig, st: Step, bits: int | None) -> list[VectorOp]:
    """The bias adds of a block's projections: all of them (``bias``) or q/k/v (``qkv_bias``)."""
    T, op = st.tokens, _op(bits)
    if cfg.bias:
        moe_tokens = T * cfg.top_k if cfg.experts else T
        return [op("bias_add", "add", T * sum(l.K for l in attention_weights(cfg))
                   + moe_tokens * sum(l.K for l in ffn_weights(cfg, "ffn")))]
    if cfg.qkv_bias:
        return [op("qkv_bias_add", "add", T * (cfg.q_dim + 2 * cfg.kv_dim))]
    return []


def _block_ops(cfg: TransformerConfig, st: Step, bits: int | None) -> tuple[list[VectorOp], list[int]]:
    """Every block's ops and their repeats: one list x blocks for a model whose blocks are alike;
    for an MoE model with dense blocks, the attention ops x blocks, the dense FFN's x dense blocks,
    the MoE FFN's x MoE blocks, the FFN residual and biases x blocks."""
    L, op = cfg.layers, _op(bits)
    (att, att_reps), tail = _attention_ops(cfg, st, bits), []
    if cfg.post_norms:
        tail.append(op("ffn_post_norm", cfg.norm, st.tokens * cfg.hidden, rows=st.tokens))
    tail += [op("ffn_residual", "add", st.tokens * cfg.hidden, inputs=2, rows=st.tokens)] + _bias_ops(cfg, st, bits)
    if not cfg.experts:
        ffn = _dense_ops(cfg, st, bits)
        return att + ffn + tail, att_reps + [L] * len(ffn + tail)
    moe, dense = _moe_ops(cfg, st, bits), _dense_ops(cfg, st, bits, "dense_") if cfg.dense_blocks else []
    return (att + dense + moe + tail,
            att_reps + [len(cfg.dense_blocks)] * len(dense) + [cfg.moe_blocks] * len(moe) + [L] * len(tail))


def _fused_attention(cfg: TransformerConfig, st: Step, bits: int | None) -> tuple[list[VectorOp], list[int]]:
    """Fused attention's online softmax, rescale and normalisation per tile (`fused_attention_ops`)."""
    d = attention_dims(cfg, st.phase)
    ops: list[VectorOp] = []
    reps: list[int] = []
    for g in attention_groups(cfg, st):
        tiles = tuple(l.name + g.suffix for l in attention_layers(d.group, d.qk_dim, st.q_len, g.attended, st.causal,
                                                                  "fused", 1, st.query_tile, st.kv_tile, v_dim=d.v_dim,
                                                                  window=g.window)[0])
        got, got_reps = fused_attention_ops(d.group, d.v_dim, st.q_len, g.attended, st.causal,
                                            st.batch * d.kv_heads * g.blocks, bits, tiles, st.query_tile, st.kv_tile,
                                            g.window)
        for o, r in zip(got, got_reps):
            if cfg.softcap and o.op == "online_softmax":  # the cap before each tile's softmax, on chip as it
                ops.append(replace(o, name=o.name.replace("online_softmax", "attn_softcap") + g.suffix, op="softcap",
                                   rows=o.rows))
                reps.append(r)
            ops.append(replace(o, name=o.name + g.suffix) if g.suffix else o)
            reps.append(r)
    return ops, reps


def vector_ops(cfg: TransformerConfig, st: Step, bits: int | None,
               layers: set[str] | None = None) -> tuple[list[VectorOp], list[int]]:
    """The vector ops of the step and their repeats (block ops x blocks, others once; module
    docstring), ``bits`` the activations' precision (None: the accelerator's), ``layers`` the
    names of the step's matmuls (a fused step's element-wise ops overlap those that produce their
    input, `costmodel.transformer.attention.fuse_elementwise`)."""
    T, h, B = st.tokens, cfg.hidden, st.batch
    op = _op(bits)
    block, reps = _block_ops(cfg, st, bits)
    fused_att: list[VectorOp] = []
    fused_reps: list[int] = []
    if st.fusion == "fused":  # the online softmax per tile, beside the tile matmuls
        fused_att, fused_reps = _fused_attention(cfg, st, bits)
        block = fuse_elementwise(block, cfg.gated, layers)
    pre, post = [], []
    if cfg.embed_scale:
        pre.append(op("embed_scale", "mul", T * h))
    if cfg.kind == "vit":
        pre.append(op("patch_embed_bias", "add", B * (cfg.image // cfg.patch) ** 2 * h))
    if cfg.max_positions:
        pre.append(op("pos_add", "add", T * h, inputs=2))
    if cfg.type_vocab:
        pre.append(op("type_add", "add", T * h, inputs=2))
    if cfg.kind == "encoder":
        pre.append(op("embed_norm", cfg.norm, T * h, rows=T))
    if cfg.kind in ("decoder", "vit"):
        post.append(op("final_norm", cfg.norm, T * h, rows=T))
    if cfg.softcap and cfg.kind == "decoder":
        post.append(op("logit_softcap", "softcap", B * cfg.vocab, rows=B))
    post += [op(f"{n}_bias", "add", B * k) for n, k in (("classifier", cfg.classes), ("pooler", h))
             if k and (n == "classifier" or cfg.pooler)]
    return pre + block + fused_att + post, [1] * len(pre) + reps + fused_reps + [1] * len(post)


def not_costed(cfg: TransformerConfig, st: Step) -> list[str]:
    """What the step does that no layer or vector op of the network costs (the 1/sqrt(head_dim)
    score scale is costed in softmax, `costmodel.vector`)."""
    T, h = st.tokens, cfg.hidden
    scores = st.batch * cfg.heads * st.q_len * st.attended
    if st.causal:  # the mask applies inside the diagonal blocks only
        diag = st.q_len if st.fusion == "fused" else sum(r * n for r, c, n in causal_blocks(st.q_len)
                                                          if r == c and r <= CAUSAL_BLOCK)
        scores = st.batch * cfg.heads * diag * min(CAUSAL_BLOCK, st.q_len)
    out: list[str] = []
    if cfg.vocab:
        out.insert(0, f"embedding gather ({T} x {h} reads: T x hidden; a memory read, not an op)")
    if cfg.type_vocab:
        out.append(f"token-type and position embedding gathers ({T} x {h} reads each)")
    if cfg.kind == "decoder" and st.phase == "prefill" or cfg.kind == "encoder":
        what = "causal" if cfg.kind == "decoder" else "padding"
        where = " on the diagonal blocks" if st.causal else ""
        out.append(f"{what} attention mask{where} ({scores} adds per block, assumed folded into softmax)")
    if cfg.kind == "decoder":
        out.append(f"sampling from the {cfg.vocab} logits of each sequence (outside the model)")
    if cfg.pooler:
        out.append(f"pooler tanh ({st.batch} x {h} = batch x hidden; no vector op is a tanh)")
    if cfg.kind == "vit":
        out.append(f"class-token concatenation and position-table read ({T} x {h}: a copy)")
    if cfg.max_positions == 0:
        out.append("RoPE sin/cos tables (precomputed per position)")
    if cfg.experts:
        out.append(f"router top-{cfg.top_k} selection and renormalisation of the {cfg.top_k} "
                   f"weights ({T} x {cfg.experts} = T x experts)")
    if any(cfg.routing_groups):
        g, k = cfg.routing_groups
        out.append(f"group-limited routing: the best {k} of {g} expert groups per token, then the top-{cfg.top_k} "
                   "experts in them (selection only; the experts touched are counted as for uniform routing)")
    return out + list(cfg.not_modelled)
