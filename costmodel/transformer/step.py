"""A transformer step's parameters, resolved and checked (`costmodel.transformer.build_transformer`
builds the step from them): the phase, batch, tokens, the attention mask, and the precisions the
step fixes on its layers' operands. Errors are ValueError whose message starts with the parameter's
name (``phase: ...``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from costmodel.workload import Layer
from costmodel.transformer.attention import ATTENTION, FUSED_TILE

#: `costmodel.transformer.TransformerConfig` (not imported: that module imports this one).
TransformerConfig = Any

__all__ = ["PHASES", "WEIGHT_BITS", "ACT_BITS", "KV_BITS", "Step", "Bits", "positive", "resolve_step", "resolve_attention", "resolve_bits",
           "with_bits", "served_bits", "precision_record", "precision_text", "costed_precision"]

PHASES = ("prefill", "decode")
#: The weight precisions `costmodel.transformer.build_transformer` takes (bits): FP16 / BF16 (the
#: published checkpoints), INT8 / FP8, and 4-bit weight-only quantisation (GPTQ: Frantar et al., ICLR
#: 2023; AWQ: Lin et al., MLSys 2024). FP32 weights are not served; 2-bit weights are not modelled.
WEIGHT_BITS = (16, 8, 4)
#: The activation formats inference runs in (bits): FP32, FP16 / BF16, INT8 / FP8, and 4-bit
#: (W4A4, QuaRot: Ashkboos et al., NeurIPS 2024). Other widths are not formats a datapath carries.
ACT_BITS = (32, 16, 8, 4)
#: The KV-cache formats served (bits): FP32, FP16 / BF16, FP8 / INT8 (vLLM's fp8 cache), 4 and 2
#: bits (KIVI, Liu et al., ICML 2024).
KV_BITS = (32, 16, 8, 4, 2)



@dataclass(frozen=True)
class Step:
    """A resolved step: phase, batch (sequences), seq (prompt tokens; None at decode), context
    (cached tokens; None at prefill), tokens T, q_len (query positions per sequence), attended
    (keys each query attends), causal (a causal prefill), fusion (`costmodel.transformer.attention.FUSION`),
    query_tile and kv_tile (fused attention's query tile, positions, and K/V tile, keys), batched
    (attention's sequences x KV heads as one batched matmul per block, loop dim G)."""

    phase: str
    batch: int
    seq: int | None
    context: int | None
    tokens: int      # T
    q_len: int
    attended: int
    causal: bool = False  # a causal prefill: score / context as the blocks of `causal_blocks`
    fusion: str = "fused"  # `costmodel.transformer.attention.FUSION`
    query_tile: int = FUSED_TILE  # fused attention's query tile (positions)
    kv_tile: int = FUSED_TILE  # fused attention's K/V tile (keys)
    batched: bool = False  # attention's instances as the loop dim G of one batched matmul


def positive(key: str, v) -> int:
    """``v`` if it is a positive int; ValueError ``<key>: must be a positive integer`` otherwise."""
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"{key}: must be a positive integer, got {v!r}")
    return v


def resolve_step(cfg: TransformerConfig, phase, batch, seq, context, attention=None) -> Step:
    name = cfg.name
    phase = cfg.default_phase if phase is None else phase
    if phase not in PHASES:
        raise ValueError(f"phase: must be one of {PHASES}, got {phase!r}")
    if phase == "decode" and cfg.kind != "decoder":
        raise ValueError(f"phase: {name} is an {cfg.kind} model with no decode step; "
                         f"phase='decode' is not allowed (use 'prefill')")
    b = positive("batch", cfg.batch if batch is None else batch)
    if phase == "decode":
        if seq is not None:
            raise ValueError(f"seq: a decode step of {name} takes context (tokens in the KV cache, "
                             f"the new one included), not seq; got seq={seq!r}")
        c = positive("context", cfg.context if context is None else context)
        if c > cfg.max_context and cfg.max_positions:  # a learned position table ends there
            raise ValueError(f"context: {c} exceeds {name}'s max_context {cfg.max_context} "
                             f"(its learned position embeddings have {cfg.max_positions} rows)")
        return Step(phase, b, None, c, tokens=b, q_len=1, attended=c)  # windowed blocks: mla.attention_groups
    if context is not None:
        raise ValueError(f"context: a prefill step of {name} takes seq (tokens per sequence), "
                         f"not context; got context={context!r}")
    s = positive("seq", cfg.seq if seq is None else seq)
    if cfg.kind == "vit" and s != cfg.seq:
        raise ValueError(f"seq: {name} takes (image/patch)^2 + 1 = {cfg.seq} tokens per image, got {s}")
    if s > cfg.max_context and cfg.max_positions:
        raise ValueError(f"seq: {s} exceeds {name}'s max_context {cfg.max_context} "
                         f"(its learned position embeddings have {cfg.max_positions} rows)")
    return Step(phase, b, s, None, tokens=b * s, q_len=s, attended=s, causal=attention == "causal")


def resolve_attention(cfg: TransformerConfig, phase: str | None, attention) -> str | None:
    """The mask of a prefill (`ATTENTION`; default causal for decoders, dense otherwise); None at
    decode, where the new token attends every cached token whatever the mask."""
    phase = cfg.default_phase if phase is None else phase
    if attention is not None and attention not in ATTENTION:
        raise ValueError(f"attention: must be one of {ATTENTION}, got {attention!r}")
    if cfg.kind != "decoder" and attention == "causal":
        raise ValueError(f"attention: {cfg.name} is an {cfg.kind} model: its attention is dense "
                         "(every token attends every token); attention='causal' is for decoders")
    if phase == "decode":
        return None
    return attention or ("causal" if cfg.kind == "decoder" else "dense")


@dataclass(frozen=True)
class Bits:
    """The precisions a step fixes (bits; None: the accelerator's): weights, activations, KV cache
    (``kv_bits``, else ``act_bits``)."""

    weight: int | None
    act: int | None
    kv: int | None   # kv_bits, else act_bits


def resolve_bits(weight_bits, act_bits, kv_bits) -> Bits:
    if weight_bits is not None and (isinstance(weight_bits, bool) or weight_bits not in WEIGHT_BITS):
        raise ValueError(f"weight_bits: must be one of {WEIGHT_BITS} (the weight formats served), got {weight_bits!r}")
    for name, v, allowed in (("act_bits", act_bits, ACT_BITS), ("kv_bits", kv_bits, KV_BITS)):
        if v is not None:
            positive(name, v)
            if v not in allowed:
                raise ValueError(f"{name}: must be one of {allowed} (the formats inference runs in), got {v!r}")
    return Bits(weight_bits, act_bits, kv_bits if kv_bits is not None else act_bits)


def with_bits(layer: Layer, bits: Bits) -> Layer:
    """``layer`` with the operands the workload fixes (module docstring)."""
    ch: dict[str, int] = {}
    fixed: set[str] = set()
    w = bits.weight if layer.w_role == "weight" else bits.kv
    if w is not None:
        ch["w_bits"] = w
        fixed.add("W")
    if bits.act is not None:
        ch["i_bits"] = ch["o_bits"] = bits.act
        fixed |= {"I", "O_final"}
    if layer.o_role == "kv_cache" and bits.kv is not None:
        ch["o_bits"] = bits.kv
        fixed.add("O_final")
    if not ch:
        return layer
    return layer.with_(**ch, fixed_bits=tuple(o for o in ("W", "I", "O_final") if o in fixed))


def _served(checkpoint: int | None, allowed: tuple[int, ...]) -> int | None:
    """The format a checkpoint of ``checkpoint`` bits is served in: at most 16 bits (a float32
    checkpoint runs in 16-bit: vLLM's ``dtype="auto"`` serves FP32 and FP16 checkpoints in FP16,
    BF16 ones in BF16), else the narrowest of ``allowed`` that holds it (GPTQ's 3 bits in 4)."""
    if checkpoint is None:
        return None
    return min((b for b in allowed if b >= min(checkpoint, 16)), default=max(allowed))


def served_bits(cfg: TransformerConfig, weight_bits: int | None, act_bits: int | None,
                kv_bits: int | None) -> tuple[int | None, int | None, int | None]:
    """The precisions (bits) a step of model ``cfg`` is costed at: each one given (the campaign's or
    the command line's) wins; else the checkpoint's (``cfg.checkpoint_weight_bits`` /
    ``checkpoint_act_bits``, read from config.json's ``torch_dtype`` and ``quantization_config``:
    `costmodel.importers.hf_config.checkpoint_precision`), as `_served` maps it onto the formats
    served; else None (the accelerator's ``[precision]``). The KV cache: ``kv_bits`` given, else the
    activations' when ``act_bits`` is given (`resolve_bits`), else the checkpoint's torch_dtype
    (``checkpoint_kv_bits``: vLLM's ``kv_cache_dtype="auto"`` keeps the cache in the model's dtype,
    an FP8 checkpoint's in BF16). Returns (weight_bits, act_bits, kv_bits)."""
    w = weight_bits if weight_bits is not None else _served(cfg.checkpoint_weight_bits, WEIGHT_BITS)
    a = act_bits if act_bits is not None else _served(cfg.checkpoint_act_bits, ACT_BITS)
    kv = kv_bits if kv_bits is not None or act_bits is not None else _served(cfg.checkpoint_kv_bits, KV_BITS)
    return w, a, kv


def precision_record(cfg: TransformerConfig, given: tuple, served: tuple) -> dict[str, Any]:
    """A step's ``workload["precision"]``: the bits it is costed at (``weight_bits``, ``act_bits``,
    ``kv_bits``; None: the accelerator's ``[precision]``) and where each comes from (``weight_from``,
    ``act_from``, ``kv_from``: "given", "checkpoint", "activations" for a cache in the given
    activations' precision, or "accelerator"), with ``checkpoint_dtype`` (config.json's, "" when
    unstated)."""
    bits = resolve_bits(*served)
    rec: dict[str, Any] = {"weight_bits": bits.weight, "act_bits": bits.act, "kv_bits": bits.kv}
    for key, g, v in (("weight", given[0], bits.weight), ("act", given[1], bits.act)):
        rec[f"{key}_from"] = "given" if g is not None else "checkpoint" if v is not None else "accelerator"
    rec["kv_from"] = ("given" if given[2] is not None else "activations" if given[1] is not None
                      else "checkpoint" if served[2] is not None else "accelerator")
    rec["checkpoint_dtype"] = cfg.checkpoint_dtype
    return rec


def precision_text(rec: dict[str, Any] | None) -> str:
    """``workload["precision"]`` in words: "W/A/KV 16/16/16 bits (the checkpoint's bfloat16)",
    "W/A/KV 4/8/16 bits (W given; A, KV the checkpoint's fp8 (fbgemm_fp8))", "the accelerator's
    [precision]" when the step fixes none."""
    keys = (("W", "weight"), ("A", "act"), ("KV", "kv"))
    if not rec or all(rec.get(f"{k}_bits") is None for _, k in keys):
        return "the accelerator's [precision]"
    said = {"given": "given", "checkpoint": f"the checkpoint's {rec.get('checkpoint_dtype') or 'dtype'}",
            "activations": "as A", "accelerator": "the accelerator's [precision]"}
    bits = "/".join(str(rec.get(f"{k}_bits")) if rec.get(f"{k}_bits") is not None else "-" for _, k in keys)
    by: dict[str, list[str]] = {}
    for short, k in keys:
        by.setdefault(said.get(str(rec.get(f"{k}_from")), "?"), []).append(short)
    why = next(iter(by)) if len(by) == 1 else "; ".join(f"{', '.join(v)} {w}" for w, v in by.items())
    return f"W/A/KV {bits} bits ({why})"


def costed_precision(rec: dict[str, Any] | None, bits: dict[str, int] | None) -> dict[str, Any] | None:
    """``workload["precision"]`` (`precision_record`) with the accelerator's bits filled in where the
    step fixes none (``bits``: ``weights``, ``activations``, ``kv_cache`` as
    `sweep.engine.totals.step_precisions` reads them off the architecture), ``text`` its
    `precision_text`. None without ``bits`` (an architecture without operand precisions)."""
    if bits is None:
        return None
    out = dict(rec or {"weight_from": "accelerator", "act_from": "accelerator", "kv_from": "accelerator",
                       "checkpoint_dtype": ""})
    for k, b in (("weight_bits", "weights"), ("act_bits", "activations"), ("kv_bits", "kv_cache")):
        out[k] = bits.get(b)
    out["text"] = precision_text(out)
    return out
