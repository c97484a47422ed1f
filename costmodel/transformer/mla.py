"""Multi-head latent attention (MLA; DeepSeek-V2, arXiv:2405.04434, Sec. 2.1, Eq. 9-19; DeepSeek-V3,
arXiv:2412.19437, Sec. 2.1.1, unchanged): the attention half of a DeepSeek block in the two forms
its inference runs.

Per token and block: the query through a rank ``q_lora_rank`` bottleneck (``q_a_proj``, RMSNorm,
``q_b_proj`` -> heads x (nope + rope) values); ``kv_a_proj`` (hidden -> kv_lora_rank + rope_dim:
the latent c_KV and one RoPE key shared by every head): **the cache holds these** (576 values per
token and block for V3, against 2 x 128 x 192 = 49,152 for the same heads as plain MHA).

* **Explicit form, at prefill**: ``kv_b_proj`` turns the latent of each of the T tokens into every
  head's key (nope part) and value; attention is then multi-head over heads of nope + rope = 192
  query / key values and v_head_dim = 128 value values (one K/V head per query head, group 1).
* **Absorbed form, at decode**: W_UK is folded into the query side and W_UV into the output side
  (DeepSeek-V2 Sec. 2.1.2: "W^UK can be absorbed into W^Q, and W^UV can be absorbed into W^O";
  the released inference code's ``absorb`` path): each head's nope query is multiplied by its slice
  of kv_b_proj's key half (``q_absorb``: B = T, C = nope, K = kv_lora_rank, one per head), so all
  heads attend the cached latent directly: one "K/V head" of kv_lora_rank + rope_dim = 576 values
  shared by all heads (score: B = heads x q_len, C = 576; context: K = kv_lora_rank = 512, the
  latent as V), then ``o_absorb`` (each head's slice of the value half, kv_lora_rank ->
  v_head_dim) before o_proj.

Why each: a decode step's explicit form would run kv_b_proj over every cached token at every step
(context x kv_lora_rank x heads x (nope + v) MACs: 16.8 M per cached token and block for V3) where
the absorbed form reads the 576-value cache once (heads x (576 + 512) = 139 k MACs per cached
token); a prefill computes each token's K and V once anyway, and the explicit form's heads are 3x
(score: 192 against 576) and 4x (context: 128 against 512) narrower.
"""

from __future__ import annotations

from typing import NamedTuple

from costmodel.transformer.attention import attention_layers
from costmodel.transformer.config import TransformerConfig
from costmodel.transformer.params import attention_weights, mm
from costmodel.transformer.step import Step
from costmodel.workload import Layer

__all__ = ["AttentionDims", "AttentionGroup", "attention_dims", "attention_groups", "mla_form", "mla_layers"]


class AttentionDims(NamedTuple):
    """The attention matmuls' shape in a step: ``group`` query heads per K/V head, ``qk_dim`` (a
    query / key head's width: score's C), ``v_dim`` (a value head's: context's K), ``kv_heads`` (K/V
    heads per sequence and block)."""

    group: int
    qk_dim: int
    v_dim: int
    kv_heads: int


class AttentionGroup(NamedTuple):
    """Blocks whose attention attends the same keys: their layers' name ``suffix`` ("" or
    ``_local``), ``blocks`` (how many), ``attended`` (keys: a decode query's; a prefill's sequence),
    ``window`` (a prefill's sliding window, `costmodel.transformer.attention.band_blocks`; 0: none)."""

    suffix: str
    blocks: int
    attended: int
    window: int = 0


def attention_groups(cfg: TransformerConfig, st: Step) -> list[AttentionGroup]:
    """The step's blocks by the keys they attend: one group of every block, unless a sliding window
    binds (a step past it) on some blocks only (Gemma: local blocks attend the last
    ``sliding_window`` tokens, ``_local``, the others every one). Every block windowed (Mistral):
    one group. Past the window a decode query attends the window's keys; a causal prefill's query
    i keys i - window + 1 .. i (a band)."""
    window = cfg.cached(st.attended)
    if not cfg.windowed or window == st.attended:
        return [AttentionGroup("", cfg.layers, st.attended)]
    local = (AttentionGroup("", cfg.layers, window) if st.phase == "decode" else
             AttentionGroup("", cfg.layers, st.attended, cfg.sliding_window))
    if cfg.windowed == cfg.layers:
        return [local]
    return [AttentionGroup("", cfg.layers - cfg.windowed, st.attended), local._replace(suffix="_local",
                                                                                        blocks=cfg.windowed)]


def mla_form(cfg: TransformerConfig, phase: str) -> str | None:
    """``absorbed`` at decode, ``explicit`` at prefill for an MLA model (module docstring); None
    otherwise."""
    if cfg.attention != "mla":
        return None
    return "absorbed" if phase == "decode" else "explicit"


def attention_dims(cfg: TransformerConfig, phase: str) -> AttentionDims:
    """GQA: (heads / kv_heads, head_dim, head_dim, kv_heads); MLA explicit: (1, nope + rope,
    v_head_dim, heads); MLA absorbed: (heads, kv_lora_rank + rope_dim, kv_lora_rank, 1)."""
    form = mla_form(cfg, phase)
    if form == "absorbed":
        return AttentionDims(cfg.heads, cfg.kv_lora_rank + cfg.rope_dim, cfg.kv_lora_rank, 1)
    if form == "explicit":
        return AttentionDims(1, cfg.head_dim, cfg.v_head_dim, cfg.heads)
    return AttentionDims(cfg.group, cfg.head_dim, cfg.head_dim, cfg.kv_heads)


def mla_layers(cfg: TransformerConfig, st: Step) -> tuple[list[Layer], list[int]]:
    """One block's attention matmuls of an MLA model (B set) and their repeats (x blocks; per head
    for the absorbed form's q_absorb / o_absorb; attention per sequence and K/V head, or batched,
    as `costmodel.transformer.attention.attention_layers`), in the order they run."""
    T, L = st.tokens, cfg.layers
    w = {l.name: l.with_(B=T) for l in attention_weights(cfg)}
    q = [w[n] for n in ("q_a_proj", "q_b_proj", "q_proj") if n in w]
    d = attention_dims(cfg, st.phase)
    instances = st.batch * d.kv_heads if st.batched else 1
    per_head = st.batch * d.kv_heads * L // instances
    att, att_reps = attention_layers(d.group, d.qk_dim, st.q_len, st.attended, st.causal, st.fusion, per_head,
                                     st.query_tile, st.kv_tile, instances, v_dim=d.v_dim)
    if mla_form(cfg, st.phase) == "explicit":
        return ([*q, w["kv_a_proj"], w["kv_b_proj"], *att, w["o_proj"]],
                [L] * len(q) + [L, L, *att_reps, L])
    nope = cfg.head_dim - cfg.rope_dim
    q_absorb = mm("q_absorb", nope, cfg.kv_lora_rank, T)
    o_absorb = mm("o_absorb", cfg.kv_lora_rank, cfg.v_head_dim, T)
    H = cfg.heads * L
    return ([*q, q_absorb, w["kv_a_proj"], *att, o_absorb, w["o_proj"]],
            [L] * len(q) + [H, L, *att_reps, H, L])
