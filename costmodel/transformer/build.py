"""One builder of the operations of a transformer's prefill or decode step (issue 28; the models
come from their Hugging Face config.json since issue 41, `costmodel.transformer.hf`).

A step is a `Network` of matmuls (`Layer` with ``kind="matmul"``: B rows = tokens, C contracted,
K output columns; MACs = B*K*C per execution) plus the vector operations between them
(`VectorOp`, `costmodel.transformer.ops`). Per block, repeated ``layers`` times (names exact):

* attention, GQA: ``q_proj`` (B=T, C=hidden, K=heads*head_dim), ``k_proj``, ``v_proj``
  (K=kv_heads*head_dim, ``o_role="kv_cache"``: they write the step's new K/V cache entries),
  ``o_proj``; ``score`` (B=(heads/kv_heads)*q_len, C=head_dim, K=attended) and ``context``
  (B=group*q_len, C=attended, K=head_dim), both ``w_role="kv_cache"``, one execution per
  (sequence, KV head), so repeated batch*kv_heads*layers: a GQA group's query heads share one read
  of their K/V head. MLA (DeepSeek): `costmodel.transformer.mla` (``q_a_proj``, ``q_b_proj``,
  ``kv_a_proj``, ``kv_b_proj`` at prefill, ``q_absorb`` / ``o_absorb`` at decode, ``o_proj``);
* FFN: ``ffn_up``, ``ffn_down`` (GELU) or ``ffn_gate``, ``ffn_up``, ``ffn_down`` (SwiGLU); MoE:
  ``router`` (K=experts), ``expert_gate`` / ``expert_up`` / ``expert_down``, the shared expert's
  ``shared_*`` and an MoE model's dense blocks' ``ffn_*`` (`costmodel.transformer.ffn`).

Outside the blocks: ``lm_head`` (decoders; B=batch: every decode token, and at prefill the last
token of each sequence only), ``pooler`` (BERT, ViTModel; B=batch), ``patch_embed`` (ViT, a
convolution K=hidden, C=channels, FY=FX=SY=SX=patch over OY=OX=image/patch) and ``classifier`` (ViT,
B=batch).

T is the tokens of the step: batch*seq at prefill, batch at decode; q_len = seq (prefill) or 1
(decode); attended = seq at prefill and ``context`` at decode (the tokens in the KV cache, the new
one included; the last ``sliding_window`` of them for Mistral-style windows).

Causal prefill (``attention="causal"``, a decoder's default; ``"dense"`` gives every query every key,
as encoders and ViT always do): query i attends keys 0..i, so a kernel that skips the blocks above
the diagonal computes the rectangles of `causal_blocks` (blocks of `CAUSAL_BLOCK` tokens on the
diagonal in full, masked inside). The score and context matmuls are then one pair per rectangle
shape, ``score_<rows>x<cols>`` (B = group x rows, C = head_dim, K = cols) and ``context_<rows>x<cols>``
(B = group x rows, C = cols, K = head_dim), repeated count x batch x kv_heads x layers; the softmax
covers the computed pairs. ``workload["attention_pairs"]`` gives the pairs ``exact`` (n (n + 1) / 2
per head and sequence) and ``computed`` (with the diagonal blocks): `Network.macs` counts the
computed ones. At decode the mask changes nothing (the new token attends the whole cache).

Precisions (bits): each given wins; else the checkpoint's (config.json's ``torch_dtype`` /
``quantization_config``: a bfloat16 Llama is costed in 16 bits, an FP8 checkpoint's weights and
activations in 8; `costmodel.transformer.step.served_bits`); none given or stated -> no
``fixed_bits`` (the accelerator's ``[precision]`` applies; `costmodel.loopnest.reference.operand_bits`
gives a KV-cache W operand its I precision). ``workload["precision"]`` records the bits costed and
where each comes from.
``weight_bits`` (16, 8 or 4) fixes W of the weight layers; ``act_bits`` fixes I and O_final of
every layer (and the ``bits`` of every vector op); ``kv_bits`` (else ``act_bits`` where given)
fixes the cache: W of ``score`` / ``context`` and O_final of the layers that write the cache.

What no layer or vector op costs is listed in ``workload["not_costed"]`` (embedding gathers, the
pooler's tanh, masks, ...): nothing is dropped silently.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from costmodel.transformer.attention import (ATTENTION, CAUSAL_BLOCK, FUSED_TILE, FUSION, attention_layers,
                                             causal_blocks)
from costmodel.transformer.catalog import is_bundled, list_transformers, resolve_model
from costmodel.transformer.config import TransformerConfig
from costmodel.transformer.ffn import ffn_layers
from costmodel.transformer.mla import attention_dims, attention_groups, mla_form, mla_layers
from costmodel.transformer.ops import not_costed, pairs, vector_ops
from costmodel.transformer.params import attention_weights, head_weights
from costmodel.transformer.step import (PHASES, WEIGHT_BITS, Step, positive, precision_record, resolve_attention,
                                        resolve_bits, resolve_step, served_bits, with_bits)
from costmodel.workload import Layer, Network

__all__ = ["build_transformer", "parse_step_name", "step_params", "WORKLOAD_PARAMS", "PHASES", "WEIGHT_BITS", "ATTENTION",
           "CAUSAL_BLOCK", "FUSION", "causal_blocks"]

#: The keyword parameters of `build_transformer` (a step's workload).
WORKLOAD_PARAMS = ("phase", "batch", "seq", "context", "weight_bits", "act_bits", "kv_bits", "attention", "fusion",
                   "query_tile", "kv_tile", "batched_attention", "tp", "pp", "ep")


def _block_layers(cfg: TransformerConfig, st: Step, ep: int = 1) -> tuple[list[Layer], list[int], int | None]:
    """One block's matmuls (B set), their repeats (x layers) and the experts touched (MoE,
    `costmodel.transformer.ffn.ffn_layers`)."""
    if cfg.attention == "mla":
        layers, reps = mla_layers(cfg, st)
    else:
        T, L = st.tokens, cfg.layers
        q, k, v, o = (l.with_(B=T) for l in attention_weights(cfg))
        d = attention_dims(cfg, st.phase)
        instances = st.batch * d.kv_heads if st.batched else 1   # side by side in one batched matmul
        layers, reps = [q, k, v], [L, L, L]
        for g in attention_groups(cfg, st):
            per_head = st.batch * d.kv_heads * g.blocks // instances          # one after another
            att, att_reps = attention_layers(d.group, d.qk_dim, st.q_len, g.attended, st.causal, st.fusion, per_head,
                                             st.query_tile, st.kv_tile, instances, window=g.window)
            layers += [l.with_(name=l.name + g.suffix) for l in att] if g.suffix else att
            reps += att_reps
        layers, reps = layers + [o], reps + [L]
    ffn, ffn_reps, n_e = ffn_layers(cfg, st.tokens, ep)
    return layers + ffn, reps + ffn_reps, n_e


def _outer_layers(cfg: TransformerConfig, st: Step) -> tuple[list[Layer], list[Layer]]:
    """The layers before the blocks (patch_embed, B=batch images) and after them (classifier /
    pooler / lm_head, B=batch: one row per sequence at prefill, every token at decode)."""
    outer = [l.with_(B=st.batch) for l in head_weights(cfg)]
    return [l for l in outer if l.name == "patch_embed"], [l for l in outer if l.name != "patch_embed"]


def _attention_pairs(cfg: TransformerConfig, st: Step) -> dict[str, int]:
    """Query-key pairs of the step's attention, all heads, sequences and blocks: ``exact`` (those
    the mask keeps: batch x heads x layers x q_len x attended, or x n (n + 1) / 2 for a causal
    prefill of n tokens) and ``computed`` (with the diagonal blocks in full, `causal_blocks`);
    the attention MACs are head_dim x pairs for each of score and context."""
    out = {"exact": 0, "computed": 0}
    for g in attention_groups(cfg, st):
        per, sg = st.batch * cfg.heads * g.blocks, dataclasses.replace(st, attended=g.attended)
        n, w = st.q_len, g.window
        exact = (n * (n + 1) // 2 if not w or n <= w else w * (w + 1) // 2 + (n - w) * w) if st.causal else n * g.attended
        out["exact"] += per * exact
        out["computed"] += per * pairs(sg, g.window)
    return out


def build_transformer(model: str | TransformerConfig, *, phase: str | None = None, batch: int | None = None,
                      seq: int | None = None, context: int | None = None,
                      weight_bits: int | None = None, act_bits: int | None = None,
                      kv_bits: int | None = None, attention: str | None = None,
                      fusion: str | None = None, query_tile: int | None = None,
                      kv_tile: int | None = None, batched_attention: bool | None = None,
                      tp: int | None = None, pp: int | None = None, ep: int | None = None) -> Network:
    """The operations of one prefill or decode step of ``model`` (module docstring): a bundled
    model's name (`costmodel.transformer.list_transformers`), a Hugging Face config.json's path, or
    a `TransformerConfig`.

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
            activations' and the KV cache's precision (bits). None: the checkpoint's where its
            config.json states one (`served_bits`), else the accelerator's.
        attention: the prefill's mask, ``causal`` (decoders' default: the blocks of
            `causal_blocks`) or ``dense`` (encoders and ViT, always); no effect at decode.
        fusion: ``fused`` (default, as every LLM serving stack runs: attention as one tiled
            FlashAttention-style group, element-wise ops in their producers' drain;
            `costmodel.transformer.attention`) or ``unfused`` (every operation through memory).
        query_tile: fused attention's query tile (positions; default 128); fused steps only.
        kv_tile: fused attention's K/V tile (keys; default 128); fused steps only.
        batched_attention: True: attention's batch x kv_heads instances per block are one batched
            matmul each (loop dim G, which a mapper may unroll over an array dim whose hint allows G,
            or order temporally); False / None (default): one instance after another (repeats).
        tp: tensor parallelism (None or 1: one chip): the network is then ONE chip's share
            (`costmodel.system.parallel`: heads, K/V heads, FFN and vocabulary / tp); ``batch``
            stays the whole system's, as with ``pp`` and ``ep``.
        pp: pipeline parallelism (None or 1: one chip): the last pipeline stage's blocks / pp
            with the LM head.
        ep: expert parallelism (None or 1: one chip): batch / ep sequences and their experts'
            share.

    Returns:
        A `Network` named ``<model>/prefill/b<batch>/seq<seq>`` or
        ``<model>/decode/b<batch>/ctx<context>``, with ``/w<weight_bits>``, ``/a<act_bits>``,
        ``/kv<kv_bits>`` appended for the precisions given, ``/dense`` for a decoder's dense
        prefill, ``/unfused`` for an unfused step, ``/qt<query_tile>`` and ``/kt<kv_tile>`` for tiles other than 128, ``/batched`` for batched attention,
        ``/tp<n>/pp<n>/ep<n>`` for a split step's share (degrees above 1); block
        layers repeat ``layers`` times (score / context batch*kv_heads*layers, or ``layers`` with G =
        batch*kv_heads when batched); ``workload`` holds model, phase, batch, seq (None at
        decode), context (None at prefill), tokens (T), weight_bits, act_bits, kv_bits (None where
        not given), attention (the prefill's mask; None at decode), attention_pairs (``exact``,
        ``computed``; of the share for a split step), kind, tp / pp / ep (where above 1),
        experts_touched (None for a dense FFN), not_costed, ``mla_form`` (MLA models: explicit or
        absorbed), ``config`` (a model not bundled: its shapes, `TransformerConfig.shape`), and ``note`` when
        seq or context is past a RoPE model's published max_position_embeddings (allowed: RoPE
        defines the shapes; a learned position table is not, and raises).

    Raises:
        KeyError: unknown model.
        HfConfigError: (a ValueError) a config.json we cannot read or model (file, field, value).
        ValueError: a bad parameter; the message starts with its key (``phase: ...``): decode on
            an encoder / ViT, ``context`` at prefill or ``seq`` at decode, a non-positive or
            non-integer size or precision, ``weight_bits`` not 16, 8 or 4, seq / context beyond
            the model's max_context.
    """
    cfg = resolve_model(model)
    attention = resolve_attention(cfg, phase, attention)
    st = _with_options(resolve_step(cfg, phase, batch, seq, context, attention), fusion, query_tile, kv_tile,
                       batched_attention)
    served = served_bits(cfg, weight_bits, act_bits, kv_bits)  # given, else the checkpoint's
    bits = resolve_bits(*served)
    from costmodel.transformer.shard import resolve_split, shard_config
    split, st_full, whole = resolve_split(cfg, st.batch, tp, pp, ep), st, cfg
    if split.split:  # one chip's share
        cfg = shard_config(cfg, split)
        st = dataclasses.replace(st, batch=st.batch // split.ep, tokens=st.tokens // split.ep)
    layers, reps, n_e = _block_layers(cfg, st, split.ep)
    pre, post = _outer_layers(cfg, st)
    layers, reps = pre + layers + post, [1] * len(pre) + reps + [1] * len(post)
    vops, vreps = vector_ops(cfg, st, served[1], {l.name for l in layers})
    workload = _workload(whole, cfg, st, st_full, (weight_bits, act_bits, kv_bits), attention, n_e)
    workload["precision"] = precision_record(whole, (weight_bits, act_bits, kv_bits), served)
    size = f"seq{st.seq}" if st.phase == "prefill" else f"ctx{st.context}"
    size += _name_tags(st, (weight_bits, act_bits, kv_bits), attention == "dense" and cfg.kind == "decoder")
    size += split.tags()
    workload.update(split.workload())  # only where split: a one-chip step's workload is what it was
    return Network(f"{cfg.name}/{st.phase}/b{st_full.batch}/{size}", tuple(with_bits(l, bits) for l in layers),
                   tuple(reps), cfg.source, tuple(vops), tuple(vreps), workload)


def _workload(whole: TransformerConfig, cfg: TransformerConfig, st: Step, st_full: Step, given: tuple,
              attention: str | None, n_e: int | None) -> dict[str, Any]:
    """A step's ``workload`` (`build_transformer`'s Returns) from the whole model ``whole``, the share
    ``cfg`` and ``st`` one chip builds, the whole step ``st_full`` and the precisions ``given``."""
    weight_bits, act_bits, kv_bits = given
    workload = {"model": cfg.name, "phase": st.phase, "batch": st_full.batch, "seq": st.seq,
                "context": st.context, "tokens": st_full.tokens, "weight_bits": weight_bits,
                "act_bits": act_bits, "kv_bits": kv_bits, "kind": cfg.kind,
                "experts_touched": n_e, "not_costed": not_costed(cfg, st), "attention": attention,
                "fusion": st.fusion, "query_tile": st.query_tile if st.fusion == "fused" else None,
                "attention_pairs": _attention_pairs(cfg, st)}
    if st.fusion == "fused":
        workload["kv_tile"] = st.kv_tile
    if st.batched:  # likewise: only where set
        workload["batched_attention"] = True
    if mla_form(cfg, st.phase):  # likewise
        workload["mla_form"] = mla_form(cfg, st.phase)
    if max(st.seq or 0, st.context or 0) > cfg.max_context:  # RoPE: the shapes are defined past it
        workload["note"] = (f"{st.seq or st.context} tokens is past {cfg.name}'s published max_position_embeddings "
                            f"{cfg.max_context}: RoPE defines the shapes there (a long-context variant of the "
                            "same shapes), the model was not trained for it")
    if not is_bundled(whole):  # a model from a file: its shapes travel with the step
        workload["config"] = whole.shape()
    return workload


def step_params(workload: dict[str, Any]) -> dict[str, Any]:
    """The `build_transformer` keywords that rebuild the step whose ``workload`` is given (with its
    model, `costmodel.transformer.config_of`): phase, batch, seq, context, the precisions, and the
    options set (mask, fusion and tiles, batched attention, tp / pp / ep)."""
    params = {k: workload.get(k) for k in ("phase", "batch", "seq", "context", "weight_bits", "act_bits", "kv_bits")}
    for k in ("attention", "query_tile", "kv_tile", "batched_attention", "tp", "pp", "ep"):
        if workload.get(k) is not None:
            params[k] = workload[k]
    if workload.get("fusion") == "unfused":  # fused is the default
        params["fusion"] = "unfused"
    return params


def _with_options(st: Step, fusion, query_tile, kv_tile, batched_attention) -> Step:
    """``st`` with its attention's options (`build_transformer`'s ``fusion``, tiles, ``batched_attention``),
    checked (ValueError naming the option)."""
    if fusion == "auto":
        raise ValueError("fusion: 'auto' is a choice made by mapping every variant (`sweep map --fusion auto`, "
                         f"`sweep.api.map_step`); a step itself is built one of {FUSION}")
    if fusion is not None and fusion not in FUSION:
        raise ValueError(f"fusion: must be one of {FUSION} (or 'auto' when mapping), got {fusion!r}")
    st = dataclasses.replace(st, fusion=fusion or "fused")
    for key, tile in (("query_tile", query_tile), ("kv_tile", kv_tile)):
        if tile is not None and st.fusion != "fused":
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
    ``/unfused`` for an unfused step, fused tiles other than the default, ``/batched``."""
    tags = "".join(f"/{tag}{v}" for tag, v in zip(("w", "a", "kv"), given) if v is not None)
    if dense_decoder:  # a decoder's prefill is causal unless named dense
        tags += "/dense"
    if st.fusion == "unfused":  # fused is the default (as LLMs are served), unnamed
        tags += "/unfused"
    else:
        tags += "".join(f"/{tag}{v}" for tag, v in (("qt", st.query_tile), ("kt", st.kv_tile)) if v != FUSED_TILE)
    return tags + ("/batched" if st.batched else "")


#: The parts of a step's name after ``<model>/<phase>/b<batch>/`` and the parameter each sets.
_NAME_TAGS = (("seq", "seq"), ("ctx", "context"), ("w", "weight_bits"), ("a", "act_bits"), ("kv", "kv_bits"),
              ("qt", "query_tile"), ("kt", "kv_tile"), ("tp", "tp"), ("pp", "pp"), ("ep", "ep"))


def parse_step_name(name: str, any_model: bool = False) -> tuple[str, dict[str, Any]] | None:
    """``"llama3_8b/decode/b8/ctx4096/kv4"`` (a step's `Network.name`, as `build_transformer`
    names it) -> ``("llama3_8b", {"phase": "decode", "batch": 8, "context": 4096, "kv_bits": 4})``,
    so that ``build_transformer(model, **params)`` rebuilds that step; None if ``name`` is not a
    step name of a zoo transformer (``any_model``: of any model, one read from a config.json too)."""
    parts = name.split("/")
    if len(parts) < 3 or not (any_model or parts[0] in list_transformers()) or parts[1] not in PHASES:
        return None
    params: dict[str, Any] = {"phase": parts[1]}
    if not parts[2].startswith("b") or not parts[2][1:].isdigit():
        return None
    params["batch"] = int(parts[2][1:])
    for part in parts[3:]:
        if part == "dense" and "attention" not in params:  # a decoder's prefill named dense
            params["attention"] = "dense"
            continue
        if part in ("fused", "unfused") and "fusion" not in params:  # "fused": the default, named
            params["fusion"] = part
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
