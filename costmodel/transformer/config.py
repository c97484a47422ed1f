"""A transformer model's shapes (`TransformerConfig`): what the builder, the parameter count, the
KV-cache footprint and the split over chips read. Made from a Hugging Face ``config.json`` by
`costmodel.transformer.hf` (the bundled models and any user file alike).

Sizes are element counts. The attention is ``gqa`` (multi-head attention is GQA with ``kv_heads =
heads``) or ``mla``, DeepSeek's multi-head latent attention (DeepSeek-V2, arXiv:2405.04434, Sec.
2.1; V3, arXiv:2412.19437, Sec. 2.1.1, unchanged): queries through a rank ``q_lora_rank``
bottleneck (0: a full-rank ``q_proj``), keys and values through a latent of ``kv_lora_rank``
values, plus a RoPE key of ``rope_dim`` values shared by every head; per head ``head_dim`` =
qk_nope_head_dim + qk_rope_head_dim query / key values and ``v_head_dim`` value values. The FFN is
dense (``experts = 0``) or a mixture of experts: ``experts`` routed experts of width ``ffn``,
``top_k`` per token, ``shared_ffn`` the width of the shared expert(s) every token passes (0: none),
``dense_blocks`` the blocks whose FFN is dense (width ``dense_ffn``) instead.

Errors: ValueError naming the model and the key (``transformer 'gpt2': heads 12 is not a multiple
of kv_heads 5``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["TransformerConfig", "MODEL_KINDS", "FFN_KINDS", "ATTENTION_KINDS", "SHAPE_EXCLUDED"]

MODEL_KINDS = ("encoder", "decoder", "vit")
#: gelu: up, act, down; swiglu: gate, up, silu(gate) * up, down; geglu: gate, up, gelu(gate) * up,
#: down (Gemma).
FFN_KINDS = ("gelu", "swiglu", "geglu")
#: gqa: query heads sharing K/V heads (MHA when kv_heads = heads); mla: multi-head latent attention.
ATTENTION_KINDS = ("gqa", "mla")
#: Where biases are: none; q/k/v only (Qwen2: Qwen2Attention's q/k/v projections carry biases, o_proj
#: and the MLP none); all (q/k/v/o and the FFN's projections: GPT-2, BERT, ViT).
BIAS_KINDS = ("none", "qkv", "all")
_CHOICES = {"kind": MODEL_KINDS, "ffn_kind": FFN_KINDS, "norm": ("layernorm", "rmsnorm"),
            "attention": ATTENTION_KINDS, "router": ("softmax", "sigmoid")}
_POSITIVE = ("hidden", "layers", "heads", "kv_heads", "head_dim", "ffn", "max_context", "seq", "batch")
#: The fields that do not shape a step (names and citations): left out of `TransformerConfig.shape`.
#: The checkpoint's precision is in the shapes: a step is costed in it unless its bits are given
#: (`costmodel.transformer.step.served_bits`), so a step rebuilt from its recorded shapes is the same.
SHAPE_EXCLUDED = ("name", "description", "source", "published_params", "published_params_source", "architecture")


@dataclass(frozen=True)
class TransformerConfig:
    """One transformer model (module docstring; `costmodel.transformer.hf` names the config.json
    field behind each). ``published_params`` is the checkpoint's published parameter count (0 where
    none is known, as for a user's file); ``seq``, ``context``, ``batch`` the default step;
    ``checkpoint_weight_bits`` / ``checkpoint_act_bits`` (bits; None: not stated) and
    ``checkpoint_dtype`` the checkpoint's precision as its config.json states it (the default
    precision of its steps, `costmodel.transformer.step.served_bits`).

    Raises:
        ValueError: a mistyped or inconsistent field; the message names the model and the field.
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
    # -- read from config.json since issue 41 (defaults: what the seven first models have)
    architecture: str = ""
    qkv_bias: bool = False        # biases on q/k/v only (Qwen2); ``bias`` is every projection's
    qk_norm: bool = False         # RMSNorm of each head's q and k (Qwen3: q_norm, k_norm, head_dim gains)
    sliding_window: int = 0       # the windowed blocks attend the last sliding_window tokens (0: none)
    window_blocks: tuple[int, ...] = ()  # the blocks with the window (empty: every block, as Mistral)
    post_norms: bool = False      # a norm after attention and after the FFN too (Gemma 2: 4 per block)
    softcap: bool = False         # tanh soft-capping of the attention scores and the final logits (Gemma 2)
    embed_scale: bool = False     # the embeddings times sqrt(hidden) (Gemma)
    attention: str = "gqa"
    q_lora_rank: int = 0          # MLA
    kv_lora_rank: int = 0         # MLA
    rope_dim: int = 0             # MLA: qk_rope_head_dim (part of head_dim)
    v_head_dim: int = 0           # MLA
    shared_ffn: int = 0           # width of the shared expert(s) of an MoE block
    shared_gate: bool = False     # Qwen2-MoE's sigmoid gate (hidden -> 1) on the shared expert's output
    dense_ffn: int = 0            # FFN width of the dense blocks of an MoE model
    dense_blocks: tuple[int, ...] = ()  # indices of the blocks whose FFN is dense (MoE models)
    router: str = "softmax"       # scores of the router: softmax (Mixtral, Qwen) or sigmoid (DeepSeek-V3)
    router_bias: bool = False     # DeepSeek-V3's e_score_correction_bias: one value per routed expert
    routing_groups: tuple[int, int] = (0, 0)  # DeepSeek's (n_group, topk_group); (0, 0): none
    not_modelled: tuple[str, ...] = ()  # what the config has that no operation costs (said in not_costed)
    # -- the checkpoint's precision as its config.json states it (`costmodel.importers.hf_config.checkpoint_precision`:
    # torch_dtype, quantization_config); None / "" when the file says nothing. A step is costed in them unless
    # its weight_bits / act_bits are given (`costmodel.transformer.step.served_bits`).
    checkpoint_weight_bits: int | None = None  # bits of the stored weights (bfloat16: 16; fbgemm_fp8: 8; GPTQ: bits)
    checkpoint_act_bits: int | None = None     # bits of the activations the checkpoint runs with (FP8 dynamic: 8)
    checkpoint_kv_bits: int | None = None      # bits of its KV cache: torch_dtype's (vLLM kv_cache_dtype "auto")
    checkpoint_dtype: str = ""                 # e.g. "bfloat16", "fp8 (fbgemm_fp8)", "int4 (gptq)"

    def _bad(self, key: str, why: str) -> ValueError:
        return ValueError(f"transformer {self.name!r}: {key} {why}")

    def __post_init__(self) -> None:
        object.__setattr__(self, "dense_blocks", tuple(self.dense_blocks))
        object.__setattr__(self, "routing_groups", tuple(self.routing_groups))
        object.__setattr__(self, "not_modelled", tuple(self.not_modelled))
        object.__setattr__(self, "window_blocks", tuple(self.window_blocks))
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type == "int":
                low = 1 if f.name in _POSITIVE else 0
                if isinstance(v, bool) or not isinstance(v, int) or v < low:
                    raise self._bad(f.name, f"must be an integer >= {low}, got {v!r}")
            elif f.type == "bool" and not isinstance(v, bool):
                raise self._bad(f.name, f"must be true or false, got {v!r}")
            elif f.type == "str" and not isinstance(v, str):
                raise self._bad(f.name, f"must be a string, got {v!r}")
        for k in ("checkpoint_weight_bits", "checkpoint_act_bits", "checkpoint_kv_bits"):
            v = getattr(self, k)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise self._bad(k, f"must be None or an integer >= 1 (bits), got {v!r}")
        for k in ("description", "source"):
            if not getattr(self, k):
                raise self._bad(k, "must be a non-empty string")
        for k, choices in _CHOICES.items():
            if getattr(self, k) not in choices:
                raise self._bad(k, f"must be one of {choices}, got {getattr(self, k)!r}")
        self._check_shapes()
        self._check_moe()
        self._check_mla()

    def _check_shapes(self) -> None:
        if self.heads % self.kv_heads:
            raise self._bad("heads", f"{self.heads} is not a multiple of kv_heads {self.kv_heads}")
        decoder, vit = self.kind == "decoder", self.kind == "vit"
        if decoder != (self.context > 0):
            raise self._bad("context", f"{self.context}: decoders need a default context >= 1, "
                            "other kinds have none (0)")
        if vit == (self.vocab > 0):
            raise self._bad("vocab", f"{self.vocab}: a ViT has none (0), text models need one")
        if self.type_vocab and self.kind != "encoder":
            raise self._bad("type_vocab", "is for encoders only")
        if self.pooler and decoder:
            raise self._bad("pooler", "is for encoders and ViTs only")
        for k in ("patch", "image", "channels"):
            if vit != (getattr(self, k) > 0):
                raise self._bad(k, f"{getattr(self, k)}: required (>= 1) for a ViT, 0 otherwise")
        if self.classes and not vit:
            raise self._bad("classes", f"{self.classes}: a classifier is for ViTs only")
        if vit and (self.image % self.patch or self.seq != self.max_positions
                    or self.max_positions != (self.image // self.patch) ** 2 + 1):
            raise self._bad("max_positions", f"{self.max_positions} and seq {self.seq} must both be "
                            f"(image / patch)^2 + 1 with image {self.image} a multiple of patch {self.patch}")
        if self.max_positions not in (0, self.max_context):
            raise self._bad("max_positions", f"{self.max_positions}: 0 (RoPE) or max_context {self.max_context}")
        for k in ("seq", "context"):
            if getattr(self, k) > self.max_context:
                raise self._bad(k, f"{getattr(self, k)} exceeds max_context {self.max_context}")
        if self.sliding_window and (not decoder or self.attention == "mla"):
            raise self._bad("sliding_window", f"{self.sliding_window}: for decoders with GQA attention only")
        bad = [i for i in self.window_blocks if not 0 <= i < self.layers]
        if self.window_blocks and (bad or not self.sliding_window or list(self.window_blocks) != sorted(set(self.window_blocks))):
            raise self._bad("window_blocks", f"{list(self.window_blocks)}: distinct ascending block indices in "
                            f"0..{self.layers - 1}, with a sliding_window")

    def _check_moe(self) -> None:
        if (self.experts == 0) != (self.top_k == 0) or self.top_k > self.experts or self.experts == 1:
            raise self._bad("top_k", f"{self.top_k} with experts {self.experts}: a dense FFN has "
                            "experts = top_k = 0, an MoE 1 <= top_k <= experts, experts >= 2")
        moe_only = {"shared_ffn": self.shared_ffn, "shared_gate": self.shared_gate, "dense_ffn": self.dense_ffn,
                    "dense_blocks": self.dense_blocks, "router_bias": self.router_bias,
                    "routing_groups": any(self.routing_groups)}
        for k, v in moe_only.items():
            if v and not self.experts:
                raise self._bad(k, f"{v!r}: for a mixture of experts (experts >= 2) only")
        if self.shared_gate and not self.shared_ffn:
            raise self._bad("shared_gate", "gates a shared expert: shared_ffn must be >= 1")
        bad = [i for i in self.dense_blocks if not 0 <= i < self.layers]
        if bad or len(set(self.dense_blocks)) != len(self.dense_blocks) or list(self.dense_blocks) != sorted(self.dense_blocks):
            raise self._bad("dense_blocks", f"{list(self.dense_blocks)}: distinct block indices in 0..{self.layers - 1}, "
                            "ascending")
        if self.dense_blocks and not self.dense_ffn:
            raise self._bad("dense_ffn", "must be >= 1 where some blocks are dense (dense_blocks)")
        groups, top = self.routing_groups
        if groups and (self.experts % groups or not 1 <= top <= groups):
            raise self._bad("routing_groups", f"{list(self.routing_groups)}: n_group must divide the {self.experts} "
                            "experts and 1 <= topk_group <= n_group")

    def _check_mla(self) -> None:
        mla = self.attention == "mla"
        for k in ("kv_lora_rank", "rope_dim", "v_head_dim"):
            if mla != (getattr(self, k) > 0):
                raise self._bad(k, f"{getattr(self, k)}: required (>= 1) for MLA attention, 0 otherwise")
        if self.q_lora_rank and not mla:
            raise self._bad("q_lora_rank", f"{self.q_lora_rank}: for MLA attention only")
        if mla and (self.kv_heads != self.heads or self.rope_dim >= self.head_dim or self.kind != "decoder"):
            raise self._bad("attention", f"'mla' needs a decoder, kv_heads = heads (every head its own K/V "
                            f"from the latent) and rope_dim {self.rope_dim} < head_dim {self.head_dim}")

    # -------------------------------------------------------------------- derived shapes

    @property
    def q_dim(self) -> int:  # heads * head_dim: the width of Q (and of the attention output, GQA)
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:  # kv_heads * head_dim: the width of K and of V (GQA)
        return self.kv_heads * self.head_dim

    @property
    def group(self) -> int:  # query heads per K/V head (the GQA group; 1 for multi-head attention)
        return self.heads // self.kv_heads

    @property
    def default_phase(self) -> str:  # decode for decoders, prefill otherwise
        return "decode" if self.kind == "decoder" else "prefill"

    @property
    def moe_blocks(self) -> int:
        """Blocks whose FFN is a mixture of experts (0 for a dense model)."""
        return self.layers - len(self.dense_blocks) if self.experts else 0

    @property
    def cache_width(self) -> int:
        """Values the KV cache holds per token and block: K and V of every K/V head (2 x kv_heads x
        head_dim), or MLA's latent and shared RoPE key (kv_lora_rank + rope_dim: 576 for DeepSeek-V3)."""
        return self.kv_lora_rank + self.rope_dim if self.attention == "mla" else 2 * self.kv_dim

    @property
    def gated(self) -> bool:
        """Whether the FFN is gated (SwiGLU, GeGLU: gate, up, down)."""
        return self.ffn_kind != "gelu"

    @property
    def act(self) -> str:
        """The FFN's activation, a `costmodel.vector` op: silu (SwiGLU) or gelu."""
        return "silu" if self.ffn_kind == "swiglu" else "gelu"

    @property
    def windowed(self) -> int:
        """Blocks with the sliding window: every block (Mistral), those of ``window_blocks`` (Gemma 2:
        every other), or none."""
        if not self.sliding_window:
            return 0
        return len(self.window_blocks) if self.window_blocks else self.layers

    def cached(self, tokens: int) -> int:
        """Tokens a windowed block's KV cache holds (and its decode query attends) for ``tokens`` in
        the sequence: the last ``sliding_window`` (a rolling buffer); all without a window."""
        return min(tokens, self.sliding_window) if self.sliding_window else tokens

    def cache_entries(self, tokens: int) -> int:
        """Token-block entries of the KV cache for ``tokens`` in the sequence: ``tokens`` per block,
        the windowed blocks' `cached` (KV cache values per sequence = this x `cache_width`)."""
        return (self.layers - self.windowed) * tokens + self.windowed * self.cached(tokens)

    def shape(self) -> dict[str, Any]:
        """The fields that shape a step (all but `SHAPE_EXCLUDED`), JSON-able: what a step of a model
        read from a user's file records in its workload (so its task ids follow the shapes, not the
        file's path)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in SHAPE_EXCLUDED}
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    @classmethod
    def from_shape(cls, name: str, shape: dict[str, Any]) -> "TransformerConfig":
        """The config `shape` gave (``name`` its model; description and source say so)."""
        return cls(name=name, description=f"{name} (from its recorded shapes)", source="the step's workload",
                   published_params=0, published_params_source="", **shape)

    def at_accelerator_precision(self) -> "TransformerConfig":
        """A copy whose checkpoint states no precision, so its steps are costed in the accelerator's
        ``[precision]`` where no bits are given (`costmodel.transformer.step.served_bits`); e.g. a
        bfloat16 Llama on an INT8 template as figures before checkpoints' precisions were read.
        Its steps record its shapes (it is no longer the bundled model)."""
        return self.replace(checkpoint_weight_bits=None, checkpoint_act_bits=None, checkpoint_kv_bits=None,
                            checkpoint_dtype="")

    def replace(self, **changes: Any) -> "TransformerConfig":
        """A copy with ``changes`` (`dataclasses.replace`), validated again."""
        return dataclasses.replace(self, **changes)
