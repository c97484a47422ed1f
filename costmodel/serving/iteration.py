"""The work of one serving iteration, as networks the loop-nest model maps.

An iteration of a continuously batched server (Orca, OSDI'22; vLLM) runs one forward pass over
every scheduled sequence: a prefill chunk of q tokens after p tokens already in the KV cache, or a
decode (q = 1 after p = context - 1 cached tokens, the last output token's). With T = sum of q
tokens and S sequences, its operations split into parts whose costs add:

* **dense(T)**: every operation applied token by token, all T tokens as the rows of one matmul
  (q/k/v/o projections, the FFN or the experts the T tokens touch, norms, the final norm, RoPE,
  residual adds, activations): the layers and vector ops of a decode step of batch T at context 1
  (built by `costmodel.transformer.build_transformer`) without its attention and its LM head;
* **head(S)**: the LM head (and Gemma 2's logit soft-cap) on the last position of each scheduled
  sequence: vLLM V1 computes logits for every scheduled request, a partial prefill chunk's sample
  discarded (its model runner's ``logits_indices``, one per request);
* **attention(q, p)** of each sequence: its score, softmax and context over p + q keys, causal
  (query i attends keys 0 .. p + i), fused or unfused as the step model builds it
  (`costmodel.transformer.attention`: `fused_tiles` / `chunk_blocks` with a ``prefix``): a decode
  is exactly the decode step's attention at batch 1, context p + 1; a whole prompt (p = 0) exactly
  the prefill step's.

So an iteration's energy is the sum of its parts'; its latency is too, since every part's
operations run one after another (the overlap of an element-wise op with its producer stays inside
dense(T), that of the online softmax with its tiles inside each sequence's attention), plus the
fixed costs (`costmodel.serving.table`). `iteration_network` builds the whole mixed iteration as
one network, the oracle that the interpolated table is measured against.

Not modelled: multi-head latent attention (MLA: DeepSeek-V2/V3 run prefill tokens in the explicit
form and decode tokens in the absorbed one within one iteration, and a chunk up-projects its cached
prefix; refused with that reason), encoders (no decode).

Errors: ValueError naming the option (``model: ...``, ``q: ...``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

from costmodel.transformer.attention import attention_layers, computed_pairs, fused_attention_ops
from costmodel.transformer.catalog import resolve_model
from costmodel.transformer.config import TransformerConfig
from costmodel.transformer.mla import attention_dims
from costmodel.transformer.step import resolve_bits, served_bits, with_bits
from costmodel.workload import Network, VectorOp

__all__ = ["Deployment", "ATTENTION_OPS", "HEAD_LAYERS", "HEAD_OPS", "dense_part", "head_part", "attention_part",
           "iteration_network", "exact_pairs"]

#: Vector ops of a step that belong to its attention (per sequence), by name prefix.
ATTENTION_OPS = ("softmax", "attn_softcap", "online_softmax", "attn_rescale", "attn_normalize")
#: The layers and vector ops of a step that belong to its head (per sampled sequence).
HEAD_LAYERS = ("lm_head",)
HEAD_OPS = ("logit_softcap",)


@dataclass(frozen=True)
class Deployment:
    """A model as a server runs it: the model, its precisions, how attention runs, and one copy's
    split over chips.

    Attributes:
        model: a bundled name, a config.json path or a `TransformerConfig` (resolved in `config`).
        weight_bits, act_bits, kv_bits: precisions (bits; None: the checkpoint's where its
            config.json states one, else the accelerator's), as
            `costmodel.transformer.build_transformer` takes them.
        fusion: ``fused`` (FlashAttention-style kernels, as every serving stack runs; the default
            here) or ``unfused``.
        query_tile, kv_tile: fused attention's tiles (None: 128 each).
        tp, pp, ep: one copy of the model over tp x pp x ep chips (`costmodel.system.parallel`).
    """

    model: Any
    weight_bits: int | None = None
    act_bits: int | None = None
    kv_bits: int | None = None
    fusion: str = "fused"
    query_tile: int | None = None
    kv_tile: int | None = None
    tp: int = 1
    pp: int = 1
    ep: int = 1

    def __post_init__(self) -> None:
        cfg = resolve_model(self.model)
        if cfg.kind != "decoder":
            raise ValueError(f"model: {cfg.name} is an {cfg.kind} model: serving requests needs a decoder "
                             "(prefill, then one decode step per output token)")
        if cfg.attention == "mla":
            raise ValueError(f"model: {cfg.name} uses multi-head latent attention, which serving does not model yet "
                             "(one iteration runs prefill tokens in MLA's explicit form and decode tokens in the "
                             "absorbed one, and a chunk up-projects its cached prefix)")
        if self.fusion not in ("fused", "unfused"):
            raise ValueError(f"fusion: must be 'fused' or 'unfused', got {self.fusion!r}")
        object.__setattr__(self, "_cfg", cfg)

    @property
    def config(self) -> TransformerConfig:
        """The whole model's `TransformerConfig`."""
        return self._cfg  # type: ignore[attr-defined]

    def step_options(self) -> dict[str, Any]:
        """`build_transformer` keywords shared by every part."""
        opts: dict[str, Any] = {"weight_bits": self.weight_bits, "act_bits": self.act_bits, "kv_bits": self.kv_bits,
                                "fusion": self.fusion}
        if self.fusion == "fused":
            opts.update(query_tile=self.query_tile, kv_tile=self.kv_tile)
        for k in ("tp", "pp", "ep"):
            if getattr(self, k) > 1:
                opts[k] = getattr(self, k)
        return opts

    def precision(self) -> dict[str, Any]:
        """The bits its steps are costed at and where each comes from
        (`costmodel.transformer.step.precision_record`: given, the checkpoint's, or None: the
        accelerator's ``[precision]``), with ``text`` (`precision_text`)."""
        from costmodel.transformer.step import precision_record, precision_text
        given = (self.weight_bits, self.act_bits, self.kv_bits)
        rec = precision_record(self.config, given, served_bits(self.config, *given))
        return {**rec, "text": precision_text(rec)}

    def to_dict(self) -> dict[str, Any]:
        """Its fields (the model by name, or its shapes when read from a file)."""
        d = {k: getattr(self, k) for k in ("weight_bits", "act_bits", "kv_bits", "fusion", "query_tile", "kv_tile",
                                           "tp", "pp", "ep")}
        d["model"] = self.config.name
        return d


def _step(dep: Deployment, **kw) -> Network:
    from costmodel.transformer import build_transformer
    return build_transformer(dep.config, **kw, **dep.step_options())


def _is_attention_op(op: VectorOp) -> bool:
    return op.name.startswith(ATTENTION_OPS)


def _select(net: Network, name: str, layer_ok, op_ok, workload: dict | None = None) -> Network:
    pairs = [(l, r) for l, r in zip(net.layers, net.repeats) if layer_ok(l)]
    ops = [(o, r) for o, r in zip(net.vector_ops, net.vector_repeats) if op_ok(o)]
    return Network(name, tuple(l for l, _ in pairs), tuple(r for _, r in pairs), net.source,
                   tuple(o for o, _ in ops), tuple(r for _, r in ops), workload or {})


def _split_tokens(dep: Deployment, T: int) -> int:
    """T rounded up to a multiple of ep (each expert-parallel group takes an equal share)."""
    return -(-T // dep.ep) * dep.ep


def dense_part(dep: Deployment, T: int) -> Network:
    """dense(T) (module docstring): one chip's share of the token-by-token work of T tokens.

    Raises:
        ValueError: ``T`` < 1.
    """
    if T < 1:
        raise ValueError(f"T: expected at least 1 token, got {T}")
    net = _step(dep, phase="decode", batch=_split_tokens(dep, T), context=1)
    return _select(net, f"{dep.config.name}/dense/T{T}",
                   lambda l: l.w_role != "kv_cache" and l.name not in HEAD_LAYERS,
                   lambda o: not _is_attention_op(o) and o.name not in HEAD_OPS)


def head_part(dep: Deployment, S: int) -> Network:
    """head(S) (module docstring): the LM head on S sequences' last positions."""
    if S < 1:
        raise ValueError(f"S: expected at least 1 sequence, got {S}")
    net = _step(dep, phase="decode", batch=_split_tokens(dep, S), context=1)
    return _select(net, f"{dep.config.name}/head/S{S}", lambda l: l.name in HEAD_LAYERS, lambda o: o.name in HEAD_OPS)


def exact_pairs(q: int, p: int) -> int:
    """Query-key pairs of one head's causal chunk of q queries after p cached keys:
    q p + q (q + 1) / 2 (no window)."""
    return q * p + q * (q + 1) // 2


def attention_part(dep: Deployment, q: int, p: int) -> Network:
    """attention(q, p) of one sequence (module docstring): q > 0 new tokens after p cached ones,
    over every block of one chip's share (its K/V heads; under ep, one sequence of its group).

    q = 1 is the decode step's attention at context p + 1; p = 0 the prefill step's of q tokens;
    otherwise a chunk: `costmodel.transformer.attention.attention_layers` with ``prefix = p``
    (causal), its softmax (unfused) or the online softmax per tile (fused), per attention group
    (Gemma's local blocks: the window).

    Raises:
        ValueError: q < 1 or p < 0; p + q past the model's context (its learned positions).
    """
    if q < 1 or p < 0:
        raise ValueError(f"q, p: expected q >= 1 new tokens after p >= 0 cached ones, got q={q}, p={p}")
    keep = lambda l: l.w_role == "kv_cache"  # noqa: E731
    name = f"{dep.config.name}/attention/q{q}/p{p}"
    ep = {"batch": dep.ep} if dep.ep > 1 else {"batch": 1}
    if q == 1:
        return _select(_step(dep, phase="decode", context=p + 1, **ep), name, keep, _is_attention_op)
    if p == 0:
        return _select(_step(dep, phase="prefill", seq=q, **ep), name, keep, _is_attention_op)
    return _chunk_attention(dep, q, p, name)


def _chunk_attention(dep: Deployment, q: int, p: int, name: str) -> Network:
    """A chunk's attention (q > 1 after p > 0): the prefill step's attention rules with a prefix."""
    from costmodel.transformer.attention import FUSED_TILE
    from costmodel.transformer.shard import resolve_split, shard_config
    full = dep.config
    split = resolve_split(full, dep.ep, dep.tp, dep.pp, dep.ep)
    cfg = shard_config(full, split) if split.split else full
    d = attention_dims(cfg, "prefill")
    attended = p + q
    W = cfg.sliding_window or 0
    if cfg.windowed and attended > W:
        groups = ([("", cfg.layers, W)] if cfg.windowed == cfg.layers else
                  [("", cfg.layers - cfg.windowed, 0), ("_local", cfg.windowed, W)])
    else:
        groups = [("", cfg.layers, 0)]
    fused = dep.fusion == "fused"
    tq, tk = dep.query_tile or FUSED_TILE, dep.kv_tile or FUSED_TILE
    w_bits, act_bits, kv_bits = served_bits(cfg, dep.weight_bits, dep.act_bits, dep.kv_bits)
    bits = resolve_bits(w_bits, act_bits, kv_bits)
    layers, reps, ops, op_reps = [], [], [], []
    for suffix, blocks, window in groups:
        att, att_reps = attention_layers(d.group, d.qk_dim, q, attended, True, dep.fusion, d.kv_heads * blocks,
                                         tq, tk, v_dim=d.v_dim, window=window, prefix=p)
        att = [l.with_(name=l.name + suffix) for l in att] if suffix else att
        layers += [with_bits(l, bits) for l in att]
        reps += att_reps
        if fused:
            got, got_reps = fused_attention_ops(d.group, d.v_dim, q, attended, True, d.kv_heads * blocks, act_bits,
                                                tuple(l.name for l in att), tq, tk, window, prefix=p)
            for o, r in zip(got, got_reps):
                if cfg.softcap and o.op == "online_softmax":
                    ops.append(dataclasses.replace(o, name=o.name.replace("online_softmax", "attn_softcap") + suffix,
                                                   op="softcap"))
                    op_reps.append(r)
                ops.append(dataclasses.replace(o, name=o.name + suffix) if suffix else o)
                op_reps.append(r)
        else:
            n = cfg.heads * computed_pairs(q, attended, True, "unfused", window=window, prefix=p)
            rows = cfg.heads * q
            if cfg.softcap:
                ops.append(VectorOp(f"attn_softcap{suffix}", "softcap", n, 1, rows, act_bits))
                op_reps.append(blocks)
            ops.append(VectorOp(f"softmax{suffix}", "softmax", n, 1, rows, act_bits))
            op_reps.append(blocks)
    return Network(name, tuple(layers), tuple(reps), full.source, tuple(ops), tuple(op_reps), {})


def iteration_network(dep: Deployment, seqs: Sequence[tuple[int, int]], padded: int | None = None) -> Network:
    """The whole mixed iteration as one network: dense(T) + head(S) + each sequence's attention
    (``seqs``: (q, p) per scheduled sequence; T = sum of q, S = len(seqs)); equal layers and ops
    merged (repeats added). ``padded``: the dense part on that many tokens (a CUDA-graph batch
    padded up to its capture size, `costmodel.serving.scheduler.capture_sizes`). Its ``workload``
    names the model and the split, so `costmodel.llm.step_launches` counts its kernel launches.

    Raises:
        ValueError: no sequence; ``padded`` below T; as `attention_part`.
    """
    if not seqs:
        raise ValueError("seqs: an iteration schedules at least one sequence")
    T = sum(q for q, _ in seqs)
    if padded is not None and padded < T:
        raise ValueError(f"padded: {padded} tokens is fewer than the iteration's {T}")
    parts = [dense_part(dep, padded or T), head_part(dep, len(seqs))] + [attention_part(dep, q, p) for q, p in seqs]
    layers: dict = {}
    ops: dict = {}
    for part in parts:
        for l, r in zip(part.layers, part.repeats):
            layers[l] = layers.get(l, 0) + r
        for o, r in zip(part.vector_ops, part.vector_repeats):
            ops[o] = ops.get(o, 0) + r
    workload = {"model": dep.config.name, "phase": "iteration", "tokens": T, "sequences": len(seqs)}
    if not _bundled(dep.config):
        workload["config"] = dep.config.shape()
    for k in ("tp", "pp", "ep"):
        if getattr(dep, k) > 1:
            workload[k] = getattr(dep, k)
    return Network(f"{dep.config.name}/iteration/T{T}/S{len(seqs)}", tuple(layers), tuple(layers.values()),
                   dep.config.source, tuple(ops), tuple(ops.values()), workload)


def _bundled(cfg: TransformerConfig) -> bool:
    from costmodel.transformer.catalog import is_bundled
    return is_bundled(cfg)
