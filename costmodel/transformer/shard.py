"""One chip's share of a transformer step split over several chips: the model shapes that chip
computes under tensor, pipeline and expert parallelism (here, beside the builder that uses them;
`costmodel.system.parallel` re-exports them with the parameters a chip holds).

A split is ``tp`` x ``pp`` x ``ep`` chips (`Split`):

* **tensor parallelism** ``tp`` (Megatron-LM, Shoeybi et al., 2019, Sec. 3): Q, K, V, the FFN's gate
  and up projections split by heads / columns (each chip heads / tp query heads and their K/V heads,
  ffn / tp columns), O and the FFN's down projection by rows (each chip a partial sum of the whole
  hidden state, summed by an all-reduce after attention and after the FFN); the embedding table and
  the LM head split by vocabulary rows (ceil(vocab / tp) each: Megatron pads the vocabulary to a
  multiple of tp); norms, residual adds and the router computed whole on every chip (replicated).
  K/V heads fewer than tp are **replicated**: tp / kv_heads chips hold a copy of each K/V head (its
  projection weights and its cache), each chip one K/V head serving its heads / tp query heads
  (Megatron-LM's and vLLM's GQA layout when tp > num_key_value_heads). An MoE's experts are each split
  by tp like the dense FFN.
* **pipeline parallelism** ``pp`` (GPipe, Huang et al., NeurIPS 2019; Megatron-LM, Narayanan et al.,
  SC'21): the blocks in pp stages of layers / pp consecutive blocks each (pp must divide the blocks);
  the first stage also holds the embedding table, the last the final norm and the LM head. The
  share built is the **last stage** (its blocks, the final norm and the LM head: the heaviest stage,
  the one whose memory and time bound the system; `costmodel.system.serving` adds the others).
* **expert parallelism** ``ep`` for MoE models (GShard, Lepikhin et al., 2021; DeepSpeed-MoE,
  Rajbhandari et al., ICML 2022): the experts spread over ep groups of chips, experts / ep each;
  attention is data parallel across them (each group serves batch / ep of the sequences with its own
  copy of the attention weights and its sequences' KV cache); every MoE block sends each routed token
  to the group holding its expert and back (all-to-all dispatch and combine,
  `costmodel.system.serving`). A group's experts receive batch x tokens x top_k / ep token-expert
  pairs on average (routing uniform, as `costmodel.transformer` assumes) over
  experts_touched(all tokens) / ep distinct experts.

Errors: ValueError whose message starts with the parameter (``tp: 3 does not divide llama3_70b's 64
query heads``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

__all__ = ["Split", "split_of", "check_split", "resolve_split", "shard_config", "kv_replicas", "chip_batch"]


@dataclass(frozen=True)
class Split:
    """How a step is split: ``tp`` x ``pp`` x ``ep`` chips (module docstring); 1 = not split."""

    tp: int = 1
    pp: int = 1
    ep: int = 1

    def __post_init__(self) -> None:
        for k in ("tp", "pp", "ep"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{k}: must be a positive integer, got {v!r}")

    @property
    def chips(self) -> int:
        """Chips of one copy of the model: tp x pp x ep."""
        return self.tp * self.pp * self.ep

    @property
    def split(self) -> bool:
        """Whether the step is split at all (more than one chip)."""
        return self.chips > 1

    def workload(self) -> dict[str, int]:
        """The parts of a step's ``workload`` the split sets: only the degrees above 1 (so a
        one-chip step's workload, and its config hash, are what they were)."""
        return {k: getattr(self, k) for k in ("tp", "pp", "ep") if getattr(self, k) > 1}

    def tags(self) -> str:
        """The step name's suffix: ``/tp8/pp2`` ("" for one chip)."""
        return "".join(f"/{k}{v}" for k, v in self.workload().items())


def split_of(workload: dict[str, Any] | None) -> Split:
    """The `Split` a step's ``workload`` records (``tp``, ``pp``, ``ep``; absent = 1)."""
    w = workload or {}
    return Split(int(w.get("tp") or 1), int(w.get("pp") or 1), int(w.get("ep") or 1))


def check_split(cfg, split: Split, batch: int) -> None:
    """Raise ValueError (naming ``tp``, ``pp`` or ``ep``) unless ``cfg`` (a
    `costmodel.transformer.TransformerConfig`) splits evenly: tp divides the query heads and the
    FFN width, and divides or is a multiple of the K/V heads; pp divides the blocks; ep divides the
    experts of an MoE and the ``batch`` (its attention is data parallel)."""
    if split.tp > 1:
        if cfg.heads % split.tp:
            raise ValueError(f"tp: {split.tp} does not divide {cfg.name}'s {cfg.heads} query heads")
        if cfg.kv_heads % split.tp and split.tp % cfg.kv_heads:
            raise ValueError(f"tp: {split.tp} neither divides nor is a multiple of {cfg.name}'s {cfg.kv_heads} "
                             "K/V heads (each chip holds whole K/V heads, replicated when tp exceeds them)")
        if cfg.attention == "mla":
            raise ValueError(f"tp: {split.tp}: {cfg.name}'s latent attention split over chips is not modelled "
                             "(pp and ep are)")
        for what, width in (("FFN width", cfg.ffn), ("dense FFN width", cfg.dense_ffn),
                            ("shared expert width", cfg.shared_ffn)):
            if width % split.tp:
                raise ValueError(f"tp: {split.tp} does not divide {cfg.name}'s {what} {width}")
    if split.pp > 1 and cfg.layers % split.pp:
        raise ValueError(f"pp: {split.pp} does not divide {cfg.name}'s {cfg.layers} blocks (stages of equal blocks)")
    if split.ep > 1:
        if not cfg.experts:
            raise ValueError(f"ep: {split.ep} applies to a mixture of experts; {cfg.name} has a dense FFN")
        if cfg.experts % split.ep:
            raise ValueError(f"ep: {split.ep} does not divide {cfg.name}'s {cfg.experts} experts")
        if batch % split.ep:
            raise ValueError(f"ep: {split.ep} does not divide the batch {batch} (attention is data parallel "
                             "across the expert-parallel groups: batch / ep sequences each)")


def resolve_split(cfg, batch: int, tp, pp, ep) -> Split:
    """The `Split` of ``tp``, ``pp``, ``ep`` (None: 1), checked against ``cfg`` and the step's
    ``batch`` (`check_split`; ValueError naming the parameter)."""
    vals = []
    for k, v in (("tp", tp), ("pp", pp), ("ep", ep)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ValueError(f"{k}: must be a positive integer, got {v!r}")
        vals.append(1 if v is None else v)
    split = Split(*vals)
    if split.split:
        check_split(cfg, split, batch)
    return split


def kv_replicas(cfg, tp: int) -> int:
    """Chips holding a copy of each K/V head under tensor parallelism ``tp``: tp / kv_heads when tp
    exceeds the K/V heads, else 1."""
    return tp // cfg.kv_heads if tp > cfg.kv_heads else 1


def shard_config(cfg, split: Split):
    """The shapes one chip of ``split`` computes per stage, as a config of the same model: query heads
    / tp, K/V heads / tp (at least 1: replicated), FFN width / tp (each expert's, for an MoE),
    vocabulary ceil(vocab / tp), blocks / pp (the last stage's: its dense blocks, renumbered); hidden
    size, head_dim, the experts and top_k unchanged
    (expert parallelism is applied by the builder, which knows the tokens). ``cfg`` itself when
    ``split`` is one chip.

    Raises:
        ValueError: as `check_split` (batch not checked here).
    """
    if not split.split:
        return cfg
    check_split(cfg, split, split.ep)
    tp = split.tp
    blocks = cfg.layers // split.pp
    first = cfg.layers - blocks  # the last stage's first block
    windows = tuple(i - first for i in cfg.window_blocks if i >= first)
    window = cfg.sliding_window if windows or not cfg.window_blocks else 0  # the stage may have none
    return dataclasses.replace(cfg, heads=cfg.heads // tp, kv_heads=max(1, cfg.kv_heads // tp), ffn=cfg.ffn // tp,
                               dense_ffn=cfg.dense_ffn // tp, shared_ffn=cfg.shared_ffn // tp,
                               vocab=math.ceil(cfg.vocab / tp), layers=blocks,
                               dense_blocks=tuple(i - first for i in cfg.dense_blocks if i >= first),
                               window_blocks=windows, sliding_window=window)


def chip_batch(workload: dict[str, Any]) -> int:
    """Sequences one chip's attention serves: the step's batch / ep."""
    return int(workload.get("batch") or 1) // split_of(workload).ep
