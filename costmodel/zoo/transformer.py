"""Transformer models as data (``costmodel/zoo/transformers.toml``: published Hugging Face configs)
and one builder of the operations of a prefill or decode step (issue 28).

A step is a `Network` of matmuls (`Layer` with ``kind="matmul"``: B rows = tokens, C contracted,
K output columns; MACs = B*K*C per execution) plus the vector operations between them
(`VectorOp`). Per block, repeated ``layers`` times (names exact):

* ``q_proj`` (B=T, C=hidden, K=heads*head_dim), ``k_proj``, ``v_proj`` (K=kv_heads*head_dim,
  ``o_role="kv_cache"``: they write the step's new K/V cache entries), ``o_proj``;
* ``score`` (B=(heads/kv_heads)*q_len, C=head_dim, K=attended) and ``context`` (B=group*q_len,
  C=attended, K=head_dim), both ``w_role="kv_cache"``, one execution per (sequence, KV head), so
  repeated batch*kv_heads*layers: a GQA group's query heads share one read of their K/V head;
* FFN: ``ffn_up``, ``ffn_down`` (GELU) or ``ffn_gate``, ``ffn_up``, ``ffn_down`` (SwiGLU); MoE:
  ``router`` (K=experts) and ``expert_gate`` / ``expert_up`` / ``expert_down`` (below).

Outside the blocks: ``lm_head`` (decoders; B=batch: every decode token, and at prefill the last
token of each sequence only), ``pooler`` (BERT, B=batch), ``patch_embed`` (ViT, a convolution
K=hidden, C=channels, FY=FX=SY=SX=patch over OY=OX=image/patch) and ``classifier`` (ViT, B=batch).

T is the tokens of the step: batch*seq at prefill, batch at decode; q_len = seq (prefill) or 1
(decode); attended = seq at prefill and ``context`` at decode (the tokens in the KV cache, the new
one included).

Causal prefill (``attention="causal"``, a decoder's default; ``"dense"`` gives every query every key,
as encoders and ViT always do): query i attends keys 0..i, so a kernel that skips the blocks above
the diagonal computes the rectangles of `causal_blocks` (blocks of `CAUSAL_BLOCK` tokens on the
diagonal in full, masked inside). The score and context matmuls are then one pair per rectangle
shape, ``score_<rows>x<cols>`` (B = group x rows, C = head_dim, K = cols) and ``context_<rows>x<cols>``
(B = group x rows, C = cols, K = head_dim), repeated count x batch x kv_heads x layers; the softmax
covers the computed pairs. ``workload["attention_pairs"]`` gives the pairs ``exact`` (n (n + 1) / 2
per head and sequence) and ``computed`` (with the diagonal blocks): `Network.macs` counts the
computed ones. At decode the mask changes nothing (the new token attends the whole cache).

Mixture of experts (Mixtral, prefill and decode): routing is assumed uniform and independent
across tokens, each token picking a uniformly random set of top_k of the E experts. An expert is
then missed by one token with probability 1 - k/E, so the expected number of distinct experts
touched by T tokens is n_e = E * (1 - (1 - k/E)^T) (linearity of expectation over the experts:
the occupied cells of the classical occupancy problem, Feller, An Introduction to Probability
Theory and Its Applications, vol. 1). Exact for uniform top-k routing; real routers are skewed and
correlated across tokens, so n_e estimates the expert weights a step reads. n_e is rounded to the nearest integer and
clipped to [min(k, E), min(E, T*k)]; the T*k token-expert pairs are split over the n_e experts as
evenly as possible, q, r = divmod(T*k, n_e): ``expert_*`` layers with B=q for n_e - r experts and
``expert_*_hi`` layers with B=q+1 for r experts (absent when r = 0). So the MACs are exactly those
of top_k experts per token, and the weights read are those of n_e experts
(``workload["experts_touched"]``).

Precisions (bits): none given -> no ``fixed_bits`` anywhere (the accelerator's ``[precision]``
applies; `costmodel.loopnest.reference.operand_bits` gives a KV-cache W operand its I precision).
``weight_bits`` (16, 8 or 4) fixes W of the weight layers; ``act_bits`` fixes I and O_final of
every layer (and the ``bits`` of every vector op); ``kv_bits`` (else ``act_bits`` where given)
fixes the cache: W of ``score`` / ``context`` and O_final of ``k_proj`` / ``v_proj``.

Vector ops (`VectorOp`; per block x layers): ``attn_norm``, ``ffn_norm`` (BERT's post-LN norms
carry the same names), ``rope_q``, ``rope_k`` (RoPE models), ``softmax``, ``attn_residual``,
``ffn_residual``, ``act`` (gelu / silu), ``gate_mul`` (SwiGLU), ``bias_add`` (biased models),
``router_softmax``, ``expert_combine``, ``expert_sum`` (MoE); once: ``pos_add`` (learned
positions), ``type_add``, ``embed_norm`` (BERT), ``final_norm`` (decoders, ViT), and the biases of
the outer layers ``patch_embed_bias``, ``classifier_bias``, ``pooler_bias``. What no layer or
vector op costs is listed in ``workload["not_costed"]`` (embedding gathers, the
pooler's tanh, masks, ...; the 1/sqrt(head_dim) score scale is one of softmax's per-element
multiplies, `costmodel.vector.OP_PRIMITIVES`): nothing is dropped silently.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import math
import tomllib
from dataclasses import dataclass, fields
from typing import Any

from costmodel.workload import Layer, Network, VectorOp
from costmodel.zoo.attention import (ATTENTION, CAUSAL_BLOCK, FUSED_TILE, FUSION, attention_layers, causal_blocks,
                                     computed_pairs, fuse_elementwise, fused_attention_ops)
from costmodel.zoo.step import (PHASES, WEIGHT_BITS, Step, positive, resolve_attention, resolve_bits, resolve_step,
                                with_bits)

__all__ = ["TransformerConfig", "list_transformers", "transformer_config", "transformer_info", "parse_step_name",
           "param_count", "build_transformer", "experts_touched", "MODEL_KINDS", "PHASES",
           "WEIGHT_BITS", "WORKLOAD_PARAMS", "ATTENTION", "CAUSAL_BLOCK", "FUSION", "causal_blocks"]

MODEL_KINDS = ("encoder", "decoder", "vit")
#: The keyword parameters of `build_transformer` (a step's workload).
WORKLOAD_PARAMS = ("phase", "batch", "seq", "context", "weight_bits", "act_bits", "kv_bits", "attention", "fusion",
                   "query_tile", "kv_tile", "batched_attention", "tp", "pp", "ep")

_TOML = "transformers.toml"
_CHOICES = {"kind": MODEL_KINDS, "ffn_kind": ("gelu", "swiglu"), "norm": ("layernorm", "rmsnorm")}
_POSITIVE = ("hidden", "layers", "heads", "kv_heads", "head_dim", "ffn", "max_context", "seq",
             "batch", "published_params")


@dataclass(frozen=True)
class TransformerConfig:
    """One model of ``transformers.toml`` (see the file's header for the keys; sizes are element
    counts, ``published_params`` a parameter count).

    Raises:
        ValueError: a missing, unknown, mistyped or inconsistent key; the message names the model
            and the key (e.g. ``transformer 'gpt2': heads 12 is not a multiple of kv_heads 5``).
    """

    name: str
    description: str
    source: str
    kind: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    ffn_kind: str
    vocab: int
    max_positions: int
    max_context: int
    tied_embeddings: bool
    bias: bool
    norm: str
    experts: int
    top_k: int
    seq: int
    batch: int
    published_params: int
    published_params_source: str
    context: int = 0
    type_vocab: int = 0
    pooler: bool = False
    patch: int = 0
    image: int = 0
    channels: int = 0
    classes: int = 0

    def _bad(self, key: str, why: str) -> ValueError:
        return ValueError(f"transformer {self.name!r}: {key} {why}")

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type == "int":
                low = 1 if f.name in _POSITIVE else 0
                if isinstance(v, bool) or not isinstance(v, int) or v < low:
                    raise self._bad(f.name, f"must be an integer >= {low}, got {v!r}")
            elif f.type == "bool" and not isinstance(v, bool):
                raise self._bad(f.name, f"must be true or false, got {v!r}")
            elif f.type == "str" and (not isinstance(v, str) or not v):
                raise self._bad(f.name, f"must be a non-empty string, got {v!r}")
        for k, choices in _CHOICES.items():
            if getattr(self, k) not in choices:
                raise self._bad(k, f"must be one of {choices}, got {getattr(self, k)!r}")
        self._check_shapes()

    def _check_shapes(self) -> None:
        if self.heads % self.kv_heads:
            raise self._bad("heads", f"{self.heads} is not a multiple of kv_heads {self.kv_heads}")
        if (self.experts == 0) != (self.top_k == 0) or self.top_k > self.experts or self.experts == 1:
            raise self._bad("top_k", f"{self.top_k} with experts {self.experts}: a dense FFN has "
                            "experts = top_k = 0, an MoE 1 <= top_k <= experts, experts >= 2")
        decoder, vit = self.kind == "decoder", self.kind == "vit"
        if decoder != (self.context > 0):
            raise self._bad("context", f"{self.context}: decoders need a default context >= 1, "
                            "other kinds have none (0)")
        if vit == (self.vocab > 0):
            raise self._bad("vocab", f"{self.vocab}: a ViT has none (0), text models need one")
        if (self.pooler or self.type_vocab) and self.kind != "encoder":
            raise self._bad("pooler", "and type_vocab are for encoders only")
        for k in ("patch", "image", "channels", "classes"):
            if vit != (getattr(self, k) > 0):
                raise self._bad(k, f"{getattr(self, k)}: required (>= 1) for a ViT, 0 otherwise")
        if vit and (self.image % self.patch or self.seq != self.max_positions
                    or self.max_positions != (self.image // self.patch) ** 2 + 1):
            raise self._bad("max_positions", f"{self.max_positions} and seq {self.seq} must both be "
                            f"(image / patch)^2 + 1 with image {self.image} a multiple of patch {self.patch}")
        if self.max_positions not in (0, self.max_context):
            raise self._bad("max_positions", f"{self.max_positions}: 0 (RoPE) or max_context {self.max_context}")
        for k in ("seq", "context"):
            if getattr(self, k) > self.max_context:
                raise self._bad(k, f"{getattr(self, k)} exceeds max_context {self.max_context}")

    @property
    def q_dim(self) -> int:  # heads * head_dim: the width of Q (and of the attention output)
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:  # kv_heads * head_dim: the width of K and of V
        return self.kv_heads * self.head_dim

    @property
    def group(self) -> int:  # query heads per K/V head (the GQA group; 1 for multi-head attention)
        return self.heads // self.kv_heads

    @property
    def default_phase(self) -> str:  # decode for decoders, prefill otherwise
        return "decode" if self.kind == "decoder" else "prefill"


@functools.lru_cache(maxsize=None)
def _configs() -> dict[str, TransformerConfig]:
    text = (importlib.resources.files(__package__ or "costmodel.zoo") / _TOML).read_text(encoding="utf-8")
    names = {f.name for f in fields(TransformerConfig)} - {"name"}
    required = {f.name for f in fields(TransformerConfig) if f.default is dataclasses.MISSING} - {"name"}
    out = {}
    for name, table in tomllib.loads(text).items():
        unknown, missing = sorted(set(table) - names), sorted(required - set(table))
        if unknown:
            raise ValueError(f"transformer {name!r}: {unknown[0]} is not a key of zoo/{_TOML} "
                             f"(keys: {', '.join(sorted(names))})")
        if missing:
            raise ValueError(f"transformer {name!r}: {missing[0]} is missing from its table in zoo/{_TOML}")
        out[name] = TransformerConfig(name=name, **table)
    return out


def list_transformers() -> list[str]:
    """Names of the transformer models of the zoo, sorted."""
    return sorted(_configs())


def transformer_config(name: str) -> TransformerConfig:
    """The validated `TransformerConfig` of model ``name``.

    Raises:
        KeyError: no such model; the message lists the models.
    """
    try:
        return _configs()[name]
    except KeyError:
        raise KeyError(f"unknown transformer {name!r}; models: {', '.join(list_transformers())}") from None


def transformer_info(name: str) -> dict:
    """Metadata of model ``name`` (a fresh dict): ``name``, ``description``, ``source``,
    ``published_params`` (int), ``published_params_source``, ``kind``, ``path`` (the TOML file),
    ``defaults`` (``phase``, ``batch``, ``seq``, ``context``: None where the phase has none),
    ``config`` (every key of its table). Raises KeyError for an unknown model."""
    c = transformer_config(name)
    defaults = {"phase": c.default_phase, "batch": c.batch, "seq": c.seq,
                "context": c.context if c.kind == "decoder" else None}
    return {"name": name, "description": c.description, "source": c.source,
            "published_params": c.published_params, "published_params_source": c.published_params_source,
            "kind": c.kind, "path": f"zoo/{_TOML}", "defaults": defaults, "config": dataclasses.asdict(c)}


# ----------------------------------------------------------------------------- shapes


def _mm(name: str, C: int, K: int, B: int = 1, **roles) -> Layer:
    return Layer(name, K=K, C=C, B=B, kind="matmul", **roles)


def _attention_weights(cfg: TransformerConfig) -> list[Layer]:
    """The four projections of one block at B=1 (weights: C*K each)."""
    h, q, kv = cfg.hidden, cfg.q_dim, cfg.kv_dim
    return [_mm("q_proj", h, q), _mm("k_proj", h, kv, o_role="kv_cache"),
            _mm("v_proj", h, kv, o_role="kv_cache"), _mm("o_proj", q, h)]


def _ffn_weights(cfg: TransformerConfig, prefix: str) -> list[Layer]:
    """One FFN (the dense one, or one expert) at B=1: [gate,] up (hidden -> ffn), down (ffn -> hidden)."""
    h, f = cfg.hidden, cfg.ffn
    ins = ["gate", "up"] if cfg.ffn_kind == "swiglu" else ["up"]
    return [_mm(f"{prefix}_{n}", h, f) for n in ins] + [_mm(f"{prefix}_down", f, h)]


def _head_weights(cfg: TransformerConfig) -> list[Layer]:
    """The layers outside the blocks at B=1: lm_head (decoders), pooler (BERT), patch_embed and
    classifier (ViT)."""
    h = cfg.hidden
    out = []
    if cfg.kind == "vit":
        g = cfg.image // cfg.patch
        out.append(Layer("patch_embed", K=h, C=cfg.channels, OY=g, OX=g, FY=cfg.patch, FX=cfg.patch,
                         SY=cfg.patch, SX=cfg.patch, kind="conv"))
        out.append(_mm("classifier", h, cfg.classes))
    if cfg.pooler:
        out.append(_mm("pooler", h, h))
    if cfg.kind == "decoder":
        out.append(_mm("lm_head", h, cfg.vocab))
    return out


def param_count(cfg: TransformerConfig) -> dict[str, int]:
    """Parameters (elements) by part, from the shapes the builder uses, and their ``total``.

    Keys (0 where a model has none): ``embeddings`` (token table vocab*hidden, BERT's token types
    type_vocab*hidden, ViT's class token hidden), ``position`` (learned table max_positions*hidden),
    ``attention`` (q/k/v/o weights per block), ``ffn`` (dense FFN weights), ``experts`` (all E
    experts' weights), ``router`` (hidden*E per block), ``norms`` (two per block, BERT's embedding
    norm, the final norm of decoders and ViT; hidden gains, plus hidden biases for LayerNorm),
    ``biases`` (of the block projections, where ``bias``), ``lm_head`` (untied decoders only;
    tied: counted in embeddings), ``pooler``, ``classifier``, ``patch_embed`` (weights + biases:
    these have a bias in every model here). Sources: the models' config.json
    (`TransformerConfig.source`); equal to ``published_params`` (tested).
    """
    L, h = cfg.layers, cfg.hidden
    att, ffn = _attention_weights(cfg), _ffn_weights(cfg, "ffn")
    n_ffn = cfg.experts or 1
    heads = {l.name: l.weight_count + l.K for l in _head_weights(cfg)}  # each with a bias ...
    heads.pop("lm_head", None)                                            # ... but the LM head
    lm_head = cfg.vocab * h if cfg.kind == "decoder" and not cfg.tied_embeddings else 0
    n_norms = 2 * L + (1 if cfg.kind == "encoder" else 0) + (1 if cfg.kind in ("decoder", "vit") else 0)
    out = {
        "embeddings": (cfg.vocab + cfg.type_vocab) * h + (h if cfg.kind == "vit" else 0),
        "position": cfg.max_positions * h,
        "attention": L * sum(l.weight_count for l in att),
        "ffn": 0 if cfg.experts else L * sum(l.weight_count for l in ffn),
        "experts": L * cfg.experts * sum(l.weight_count for l in ffn),
        "router": L * h * cfg.experts,
        "norms": n_norms * h * (2 if cfg.norm == "layernorm" else 1),
        "biases": L * (sum(l.K for l in att) + n_ffn * sum(l.K for l in ffn)) if cfg.bias else 0,
        "lm_head": lm_head,
        "pooler": heads.get("pooler", 0),
        "classifier": heads.get("classifier", 0),
        "patch_embed": heads.get("patch_embed", 0),
    }
    out["total"] = sum(out.values())
    return out


def experts_touched(tokens: int, experts: int, top_k: int) -> int:
    """Expected distinct experts that ``tokens`` tokens route to, each picking a uniform random
    top_k-subset of ``experts``: E*(1 - (1 - k/E)^T), rounded half up and clipped to
    [min(k, E), min(E, T*k)] (module docstring). Counts in, a count out."""
    n = math.floor(experts * (1.0 - (1.0 - top_k / experts) ** tokens) + 0.5)
    return max(min(top_k, experts), min(n, experts, tokens * top_k))


# ----------------------------------------------------------------------------- the step


def _block_layers(cfg: TransformerConfig, st: Step, ep: int = 1) -> tuple[list[Layer], list[int], int | None]:
    """One block's matmuls (B set), their repeats (x layers) and the experts touched (MoE; with
    expert parallelism ``ep``, the tokens of all ``ep`` groups route over all experts and one group's
    share is 1 / ep of the pairs and of the experts touched, `costmodel.system.parallel`)."""
    T, L, hd = st.tokens, cfg.layers, cfg.head_dim
    q, k, v, o = (l.with_(B=T) for l in _attention_weights(cfg))
    instances = st.batch * cfg.kv_heads if st.batched else 1   # side by side in one batched matmul
    per_head = st.batch * cfg.kv_heads * L // instances          # one after another
    att, att_reps = attention_layers(cfg.group, hd, st.q_len, st.attended, st.causal, st.fusion, per_head,
                                     st.query_tile, st.kv_tile, instances)
    layers, reps = [q, k, v, *att, o], [L, L, L, *att_reps, L]
    if not cfg.experts:
        ffn = [l.with_(B=T) for l in _ffn_weights(cfg, "ffn")]
        return layers + ffn, reps + [L] * len(ffn), None
    n_e = experts_touched(T * ep, cfg.experts, cfg.top_k)
    if ep > 1:  # this group's experts: 1 / ep of those touched (at least one), T * top_k pairs
        n_e = max(1, math.floor(n_e / ep + 0.5))
    per, extra = divmod(T * cfg.top_k, n_e)
    layers.append(_mm("router", cfg.hidden, cfg.experts, T))
    reps.append(L)
    for l in _ffn_weights(cfg, "expert"):
        layers.append(l.with_(B=per))
        reps.append((n_e - extra) * L)
        if extra:
            layers.append(l.with_(name=f"{l.name}_hi", B=per + 1))
            reps.append(extra * L)
    return layers, reps, n_e


def _outer_layers(cfg: TransformerConfig, st: Step) -> tuple[list[Layer], list[Layer]]:
    """The layers before the blocks (patch_embed, B=batch images) and after them (classifier /
    pooler / lm_head, B=batch: one row per sequence at prefill, every token at decode)."""
    outer = [l.with_(B=st.batch) for l in _head_weights(cfg)]
    return [l for l in outer if l.name == "patch_embed"], [l for l in outer if l.name != "patch_embed"]


def _vector_ops(cfg: TransformerConfig, st: Step, bits: int | None) -> tuple[list[VectorOp], list[int]]:
    """The vector ops of the step and their repeats (block ops x layers, others once)."""
    T, h, L, B = st.tokens, cfg.hidden, cfg.layers, st.batch
    norm = cfg.norm

    def op(name, kind, elements, inputs=1, rows=1):
        return VectorOp(name, kind, elements, inputs, rows, bits)

    moe_tokens = T * cfg.top_k if cfg.experts else T
    block = [op("attn_norm", norm, T * h, rows=T)]
    if cfg.max_positions == 0:
        block += [op("rope_q", "rope", T * cfg.q_dim), op("rope_k", "rope", T * cfg.kv_dim)]
    heads_rows = B * cfg.heads * st.q_len
    fused_att: list[VectorOp] = []
    fused_reps: list[int] = []
    if st.fusion == "fused":  # the online softmax per tile, beside the tile matmuls
        tiles = tuple(l.name for l in attention_layers(cfg.group, cfg.head_dim, st.q_len, st.attended, st.causal,
                                                       "fused", 1, st.query_tile, st.kv_tile)[0])
        fused_att, fused_reps = fused_attention_ops(cfg.group, cfg.head_dim, st.q_len, st.attended, st.causal,
                                                    B * cfg.kv_heads * L, bits, tiles, st.query_tile, st.kv_tile)
    else:
        block.append(op("softmax", "softmax", B * cfg.heads * _pairs(st), rows=heads_rows))
    block += [op("attn_residual", "add", T * h, inputs=2), op("ffn_norm", norm, T * h, rows=T)]
    if cfg.experts:
        block.append(op("router_softmax", "softmax", T * cfg.experts, rows=T))
    block.append(op("act", "silu" if cfg.ffn_kind == "swiglu" else "gelu", moe_tokens * cfg.ffn))
    if cfg.ffn_kind == "swiglu":
        block.append(op("gate_mul", "mul", moe_tokens * cfg.ffn, inputs=2))
    if cfg.experts:
        block.append(op("expert_combine", "mul", T * cfg.top_k * h, inputs=2))
        if cfg.top_k > 1:
            block.append(op("expert_sum", "add", T * (cfg.top_k - 1) * h, inputs=2))
    block.append(op("ffn_residual", "add", T * h, inputs=2))
    if cfg.bias:
        biased = (T * sum(l.K for l in _attention_weights(cfg))
                  + moe_tokens * sum(l.K for l in _ffn_weights(cfg, "ffn")))
        block.append(op("bias_add", "add", biased))
    pre, post = [], []
    if cfg.kind == "vit":
        pre.append(op("patch_embed_bias", "add", B * (cfg.image // cfg.patch) ** 2 * h))
    if cfg.max_positions:
        pre.append(op("pos_add", "add", T * h, inputs=2))
    if cfg.type_vocab:
        pre.append(op("type_add", "add", T * h, inputs=2))
    if cfg.kind == "encoder":
        pre.append(op("embed_norm", norm, T * h, rows=T))
    if cfg.kind in ("decoder", "vit"):
        post.append(op("final_norm", norm, T * h, rows=T))
    post += [op(f"{n}_bias", "add", B * k) for n, k in (("classifier", cfg.classes), ("pooler", h))
             if k and (n == "classifier" or cfg.pooler)]
    if st.fusion == "fused":
        block = fuse_elementwise(block, cfg.ffn_kind == "swiglu")
    return (pre + block + fused_att + post,
            [1] * len(pre) + [L] * len(block) + fused_reps + [1] * len(post))


def _pairs(st: Step) -> int:
    """Query-key pairs one head computes in the step (`costmodel.zoo.attention.computed_pairs`)."""
    return computed_pairs(st.q_len, st.attended, st.causal, st.fusion, st.query_tile, st.kv_tile)


def _not_costed(cfg: TransformerConfig, st: Step) -> list[str]:
    """What the step does that no layer or vector op of the network costs."""
    T, h = st.tokens, cfg.hidden
    scores = st.batch * cfg.heads * st.q_len * st.attended
    if st.causal:  # the mask applies inside the diagonal blocks only
        diag = st.q_len if st.fusion == "fused" else sum(r * n for r, c, n in causal_blocks(st.q_len)
                                                          if r == c and r <= CAUSAL_BLOCK)
        scores = st.batch * cfg.heads * diag * min(CAUSAL_BLOCK, st.q_len)
    out: list[str] = []  # the 1/sqrt(head_dim) score scale is costed in softmax (costmodel.vector)
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
    return out


def _attention_pairs(cfg: TransformerConfig, st: Step) -> dict[str, int]:
    """Query-key pairs of the step's attention, all heads, sequences and blocks: ``exact`` (those
    the mask keeps: batch x heads x layers x q_len x attended, or x n (n + 1) / 2 for a causal
    prefill of n tokens) and ``computed`` (with the diagonal blocks in full, `causal_blocks`);
    the attention MACs are head_dim x pairs for each of score and context."""
    per = st.batch * cfg.heads * cfg.layers
    exact = st.q_len * (st.q_len + 1) // 2 if st.causal else st.q_len * st.attended
    return {"exact": per * exact, "computed": per * _pairs(st)}


def build_transformer(name: str, *, phase: str | None = None, batch: int | None = None,
                      seq: int | None = None, context: int | None = None,
                      weight_bits: int | None = None, act_bits: int | None = None,
                      kv_bits: int | None = None, attention: str | None = None,
                      fusion: str | None = None, query_tile: int | None = None,
                      kv_tile: int | None = None, batched_attention: bool | None = None,
                      tp: int | None = None, pp: int | None = None, ep: int | None = None) -> Network:
    """The operations of one prefill or decode step of zoo model ``name`` (module docstring).

    Args:
        phase: ``prefill`` (all ``seq`` tokens of each sequence) or ``decode`` (one new token per
            sequence); default ``decode`` for decoders, ``prefill`` for encoders and ViT (which
            have no decode step).
        batch: sequences (images); default the model's ``batch`` (1).
        seq: tokens per sequence of a prefill (ViT: fixed at (image/patch)^2 + 1); default the
            model's ``seq``.
        context: tokens in the KV cache at a decode step, the new token included; default the
            model's ``context``.
        weight_bits: 16, 8 or 4: the weights' precision (bits); act_bits, kv_bits: the
            activations' and the KV cache's precision (bits). None: the accelerator's.
        attention: the prefill's mask, ``causal`` (decoders' default: the blocks of
            `causal_blocks`) or ``dense`` (encoders and ViT, always); no effect at decode.
        fusion: ``unfused`` (default) or ``fused`` (attention as one tiled group, element-wise ops
            in their producers' drain; `costmodel.zoo.attention`).
        query_tile: fused attention's query tile (positions; default 128); fused steps only.
        kv_tile: fused attention's K/V tile (keys; default 128); fused steps only.
        batched_attention: True: attention's batch x kv_heads instances per block are one batched
            matmul each (loop dim G, which a mapper may unroll over an array dim whose hint allows G,
            or order temporally); False / None (default): one instance after another (repeats).
        tp, pp, ep: tensor, pipeline and expert parallelism (None or 1: one chip): the network is
            then ONE chip's share (`costmodel.system.parallel`: heads, K/V heads, FFN and vocabulary
            / tp; the last pipeline stage's blocks / pp with the LM head; batch / ep sequences and
            their experts' share); ``batch`` stays the whole system's.

    Returns:
        A `Network` named ``<model>/prefill/b<batch>/seq<seq>`` or
        ``<model>/decode/b<batch>/ctx<context>``, with ``/w<weight_bits>``, ``/a<act_bits>``,
        ``/kv<kv_bits>`` appended for the precisions given, ``/dense`` for a decoder's dense
        prefill, ``/fused`` for a fused step, ``/qt<query_tile>`` and ``/kt<kv_tile>`` for tiles other than 128, ``/batched`` for batched attention,
        ``/tp<n>/pp<n>/ep<n>`` for a split step's share (degrees above 1); block
        layers repeat ``layers`` times (score / context batch*kv_heads*layers, or ``layers`` with G =
        batch*kv_heads when batched); ``workload`` holds model, phase, batch, seq (None at
        decode), context (None at prefill), tokens (T), weight_bits, act_bits, kv_bits (None where
        not given), attention (the prefill's mask; None at decode), attention_pairs (``exact``,
        ``computed``; of the share for a split step), kind, tp / pp / ep (where above 1), experts_touched (None for a dense FFN), not_costed, and ``note`` when
        seq or context is past a RoPE model's published max_position_embeddings (allowed: RoPE
        defines the shapes; a learned position table is not, and raises).

    Raises:
        KeyError: unknown model.
        ValueError: a bad parameter; the message starts with its key (``phase: ...``): decode on
            an encoder / ViT, ``context`` at prefill or ``seq`` at decode, a non-positive or
            non-integer size or precision, ``weight_bits`` not 16, 8 or 4, seq / context beyond
            the model's max_context.
    """
    cfg = transformer_config(name)
    attention = resolve_attention(cfg, phase, attention)
    st = _with_options(resolve_step(cfg, phase, batch, seq, context, attention), fusion, query_tile, kv_tile,
                       batched_attention)
    bits = resolve_bits(weight_bits, act_bits, kv_bits)
    from costmodel.zoo.shard import resolve_split, shard_config
    split, st_full = resolve_split(cfg, st.batch, tp, pp, ep), st
    if split.split:  # one chip's share
        cfg = shard_config(cfg, split)
        st = dataclasses.replace(st, batch=st.batch // split.ep, tokens=st.tokens // split.ep)
    layers, reps, n_e = _block_layers(cfg, st, split.ep)
    pre, post = _outer_layers(cfg, st)
    layers, reps = pre + layers + post, [1] * len(pre) + reps + [1] * len(post)
    vops, vreps = _vector_ops(cfg, st, act_bits)
    size = f"seq{st.seq}" if st.phase == "prefill" else f"ctx{st.context}"
    workload = {"model": name, "phase": st.phase, "batch": st_full.batch, "seq": st.seq,
                "context": st.context, "tokens": st_full.tokens, "weight_bits": weight_bits,
                "act_bits": act_bits, "kv_bits": kv_bits, "kind": cfg.kind,
                "experts_touched": n_e, "not_costed": _not_costed(cfg, st), "attention": attention,
                "fusion": st.fusion, "query_tile": st.query_tile if st.fusion == "fused" else None,
                "attention_pairs": _attention_pairs(cfg, st)}
    if st.fusion == "fused":  # only here: the workload of an unfused step (its config hash) is what it was
        workload["kv_tile"] = st.kv_tile
    if st.batched:  # likewise: only where set
        workload["batched_attention"] = True
    if max(st.seq or 0, st.context or 0) > cfg.max_context:  # RoPE: the shapes are defined past it
        workload["note"] = (f"{st.seq or st.context} tokens is past {name}'s published max_position_embeddings "
                            f"{cfg.max_context}: RoPE defines the shapes there (a long-context variant of the "
                            "same shapes), the model was not trained for it")
    size += _name_tags(st, (weight_bits, act_bits, kv_bits), attention == "dense" and cfg.kind == "decoder")
    size += split.tags()
    workload.update(split.workload())  # only where split: a one-chip step's workload is what it was
    return Network(f"{name}/{st.phase}/b{st_full.batch}/{size}", tuple(with_bits(l, bits) for l in layers),
                   tuple(reps), cfg.source, tuple(vops), tuple(vreps), workload)


def _with_options(st: Step, fusion, query_tile, kv_tile, batched_attention) -> Step:
    """``st`` with its attention's options (`build_transformer`'s ``fusion``, tiles, ``batched_attention``),
    checked (ValueError naming the option)."""
    if fusion == "auto":
        raise ValueError("fusion: 'auto' is a choice made by mapping every variant (`sweep map --fusion auto`, "
                         f"`sweep.api.map_step`); a step itself is built one of {FUSION}")
    if fusion is not None and fusion not in FUSION:
        raise ValueError(f"fusion: must be one of {FUSION} (or 'auto' when mapping), got {fusion!r}")
    st = dataclasses.replace(st, fusion=fusion or "unfused")
    for key, tile in (("query_tile", query_tile), ("kv_tile", kv_tile)):
        if tile is not None and fusion != "fused":
            raise ValueError(f"{key}: {tile!r} applies to fused attention (fusion='fused'), "
                             f"not to fusion={st.fusion!r}")
    if batched_attention is not None and not isinstance(batched_attention, bool):
        raise ValueError(f"batched_attention: must be true or false, got {batched_attention!r}")
    if batched_attention:
        st = dataclasses.replace(st, batched=True)
    if query_tile is not None:
        st = dataclasses.replace(st, query_tile=positive("query_tile", query_tile))
    if kv_tile is not None:
        st = dataclasses.replace(st, kv_tile=positive("kv_tile", kv_tile))
    return st


def _name_tags(st: Step, given: tuple, dense_decoder: bool) -> str:
    """The step name's tags after its size (`build_transformer`'s Returns): the precisions given
    (``given``: weight_bits, act_bits, kv_bits or None), ``/dense`` for a decoder's dense prefill,
    ``/fused`` with tiles other than the default, ``/batched``."""
    tags = "".join(f"/{tag}{v}" for tag, v in zip(("w", "a", "kv"), given) if v is not None)
    if dense_decoder:  # a decoder's prefill is causal unless named dense
        tags += "/dense"
    if st.fusion == "fused":
        tags += "/fused" + "".join(f"/{tag}{v}" for tag, v in (("qt", st.query_tile), ("kt", st.kv_tile))
                                   if v != FUSED_TILE)
    return tags + ("/batched" if st.batched else "")


#: The parts of a step's name after ``<model>/<phase>/b<batch>/`` and the parameter each sets.
_NAME_TAGS = (("seq", "seq"), ("ctx", "context"), ("w", "weight_bits"), ("a", "act_bits"), ("kv", "kv_bits"),
              ("qt", "query_tile"), ("kt", "kv_tile"), ("tp", "tp"), ("pp", "pp"), ("ep", "ep"))


def parse_step_name(name: str) -> tuple[str, dict[str, Any]] | None:
    """``"llama3_8b/decode/b8/ctx4096/kv4"`` (a step's `Network.name`, as `build_transformer`
    names it) -> ``("llama3_8b", {"phase": "decode", "batch": 8, "context": 4096, "kv_bits": 4})``,
    so that ``build_transformer(model, **params)`` rebuilds that step; None if ``name`` is not a
    step name of a zoo transformer."""
    parts = name.split("/")
    if len(parts) < 3 or parts[0] not in list_transformers() or parts[1] not in PHASES:
        return None
    params: dict[str, Any] = {"phase": parts[1]}
    if not parts[2].startswith("b") or not parts[2][1:].isdigit():
        return None
    params["batch"] = int(parts[2][1:])
    for part in parts[3:]:
        if part == "dense" and "attention" not in params:  # a decoder's prefill named dense
            params["attention"] = "dense"
            continue
        if part == "fused" and "fusion" not in params:
            params["fusion"] = "fused"
            continue
        if part == "batched" and "batched_attention" not in params:
            params["batched_attention"] = True
            continue
        for tag, key in sorted(_NAME_TAGS, key=lambda t: -len(t[0])):  # "kv" before "w" / "a"
            if part.startswith(tag) and part[len(tag):].isdigit() and key not in params:
                params[key] = int(part[len(tag):])
                break
        else:
            return None
    return parts[0], params
