"""One chip's share of a split transformer step (`costmodel.transformer.shard`: tensor, pipeline and expert
parallelism, the shapes each chip computes; re-exported here) and the parameters that chip holds
(`share_params`), the figure `costmodel.capacity` checks against its DRAM."""

from __future__ import annotations

from costmodel.transformer.shard import (Split, check_split, chip_batch, kv_replicas, resolve_split, shard_config,
                                 split_of)

__all__ = ["Split", "split_of", "check_split", "resolve_split", "shard_config", "share_params", "kv_replicas",
           "chip_batch"]


def share_params(cfg, split: Split) -> int:
    """Parameters (elements) one chip of ``split`` holds: `costmodel.transformer.param_count` of
    the share (`shard_config`) with the experts / ep, and, with pipeline stages, the last stage's
    outer weights only: its final norm and LM head (a tied LM head is the embedding table, held
    there too), not the first stage's embedding and position tables (the last stage is the heavier
    of the two by the final norm)."""
    from costmodel.transformer import param_count
    parts = param_count(shard_config(cfg, split))
    total = parts["total"]
    if split.ep > 1:
        total -= parts["experts"] - parts["experts"] // split.ep
    if split.pp > 1:
        total -= parts["position"] + (parts["embeddings"] if parts["lm_head"] else 0)
    return total


