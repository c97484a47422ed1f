"""The scheduler's settings, as vLLM's V1 engine takes them, and the paged KV cache's size.

Every rule and default follows vLLM v0.11.0 (the V1 engine; file paths in its source tree):

=====================================  =========================================================  ===============================
setting                                default                                                    vLLM v0.11.0
=====================================  =========================================================  ===============================
``max_num_seqs``                       256 (1,024 on a device of >= 70 GiB that is not an A100)   engine/arg_utils.py
                                                                                                  ``_set_default_args``,
                                                                                                  OPENAI_API_SERVER (`vllm serve`)
``max_num_batched_tokens``             2,048 (8,192 on a device of >= 70 GiB, not an A100)        same
``block_size``                         16 tokens                                                  platforms/cuda.py
``gpu_memory_utilization``             0.9                                                        config/cache.py
chunked prefill                        on ("V1 always uses chunked prefills")                     engine/arg_utils.py
``long_prefill_token_threshold``       0 (off)                                                    config/scheduler.py
``max_model_len``                      the model's max_position_embeddings                        config/model.py
policy                                 FCFS                                                       config/scheduler.py
CUDA graphs                            FULL_AND_PIECEWISE: decode-only batches replay a full      config/compilation.py,
                                       graph, prefill and mixed ones a piecewise graph            v1/cudagraph_dispatcher.py
                                       (attention launched outside it), batches padded up to
                                       the capture sizes [1, 2, 4, 8, 16, ..., min(2 x
                                       max_num_seqs, 512)] tokens; larger batches run eagerly
=====================================  =========================================================  ===============================

With chunked prefill off, vLLM sets ``max_num_batched_tokens`` to ``max_model_len`` (a prompt is
never split), as here.

**KV blocks** (`kv_blocks`; v1/worker/gpu_worker.py ``determine_available_memory``, v1/core/
kv_cache_utils.py): the memory left for the cache on each chip is capacity x
``gpu_memory_utilization`` - weights - the peak activations of a forward pass of
``max_num_batched_tokens`` tokens (vLLM profiles one such pass); blocks = that // (block_size x
the bytes one token's K and V take on the chip over all its blocks: blocks x 2 x its K/V heads x
head_dim x the cache's bytes), the least over the chips. Under tp the K/V heads are split (a chip
holds kv_heads / tp, at least one); under ep each group holds its own sequences' cache, so the
system holds ep x the blocks of one chip. A sliding-window model's cache is sized for full
attention here (vLLM v0.11.0's hybrid allocator frees the blocks past a local layer's window: a
deviation that understates such a model's capacity). vLLM also subtracts its non-torch memory
(the CUDA context, NCCL buffers): not modelled (a few hundred MB of an 80 GB device). One block
(the null block) is reserved.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from costmodel.capacity import GPU_MEMORY_UTILIZATION, check_memory_utilization

__all__ = ["SchedulerConfig", "vllm_defaults", "kv_blocks", "capture_sizes", "GRAPH_MODES", "SOURCE"]

SOURCE = "vLLM v0.11.0 (V1 engine): v1/core/sched/scheduler.py, v1/core/kv_cache_manager.py, engine/arg_utils.py"
#: How kernel launches are paid: ``vllm`` (FULL_AND_PIECEWISE, module docstring), ``eager`` (every
#: kernel launched every iteration), ``graph`` (every iteration replayed, no launch cost).
GRAPH_MODES = ("vllm", "eager", "graph")


def vllm_defaults(device_gib: float | None, device_name: str = "") -> dict[str, int]:
    """vLLM v0.11.0's ``max_num_seqs`` and ``max_num_batched_tokens`` for `vllm serve` on a device
    of ``device_gib`` GiB named ``device_name`` (engine/arg_utils.py ``_set_default_args``: 1,024 and
    8,192 at >= 70 GiB unless the name has "a100", else 256 and 2,048)."""
    if device_gib is not None and device_gib >= 70 and "a100" not in device_name.lower():
        return {"max_num_seqs": 1024, "max_num_batched_tokens": 8192}
    return {"max_num_seqs": 256, "max_num_batched_tokens": 2048}


def capture_sizes(max_num_seqs: int, max_num_batched_tokens: int) -> list[int]:
    """vLLM v0.11.0's CUDA-graph capture sizes (tokens): [1, 2, 4] + 8, 16, ... up to
    min(2 x max_num_seqs, 512), none above max_num_batched_tokens."""
    top = min(2 * max_num_seqs, 512)
    return [s for s in [1, 2, 4] + list(range(8, top + 1, 8)) if s <= max_num_batched_tokens]


def _int(key: str, v: Any, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ValueError(f"{key} = {v!r}: expected a whole number >= {lo}")
    return v


@dataclass(frozen=True)
class SchedulerConfig:
    """A V1 scheduler's settings (module docstring).

    Attributes:
        max_num_seqs: at most this many requests running.
        max_num_batched_tokens: the token budget of one iteration.
        block_size: tokens per KV block.
        chunked_prefill: split prompts over iterations (True) or schedule a prompt whole.
        max_model_len: the longest sequence (prompt + output tokens) served.
        gpu_memory_utilization: the share of each chip's memory the server may use (the one meaning and
            default of `costmodel.capacity`: the capacity checks of steps, systems and campaigns).
        long_prefill_token_threshold: at most this many prompt tokens of one request per iteration
            (0: no limit).
        num_blocks: the KV blocks, when given instead of derived from the memory (`kv_blocks`).
        graphs: how launches are paid (`GRAPH_MODES`).
        host_s: the host's time per iteration (s): scheduling, input preparation, sampling,
            detokenisation; None: the cost table's.

    Raises:
        ValueError: ``<key> = <value>: expected ...``: a count below 1, a token budget smaller than
            a block or than max_num_seqs (vLLM refuses that too), a utilisation outside (0, 1].
    """

    max_num_seqs: int = 256
    max_num_batched_tokens: int = 2048
    block_size: int = 16
    chunked_prefill: bool = True
    max_model_len: int = 8192
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION   # the capacity model's one default (costmodel.capacity)
    long_prefill_token_threshold: int = 0
    num_blocks: int | None = None
    graphs: str = "vllm"
    host_s: float | None = None

    def __post_init__(self) -> None:
        _int("max_num_seqs", self.max_num_seqs, 1)
        _int("block_size", self.block_size, 1)
        _int("max_model_len", self.max_model_len, 1)
        _int("long_prefill_token_threshold", self.long_prefill_token_threshold, 0)
        _int("max_num_batched_tokens", self.max_num_batched_tokens, 1)
        if self.max_num_batched_tokens < self.block_size:
            raise ValueError(f"max_num_batched_tokens = {self.max_num_batched_tokens}: smaller than a block "
                             f"(block_size = {self.block_size} tokens)")
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ValueError(f"max_num_batched_tokens = {self.max_num_batched_tokens}: smaller than max_num_seqs = "
                             f"{self.max_num_seqs} (every running request needs a token per iteration)")
        if not self.chunked_prefill and self.max_num_batched_tokens < self.max_model_len:
            raise ValueError(f"max_num_batched_tokens = {self.max_num_batched_tokens}: with chunked prefill off it "
                             f"must hold a whole prompt, at least max_model_len = {self.max_model_len}")
        check_memory_utilization(self.gpu_memory_utilization)
        if self.num_blocks is not None:
            _int("num_blocks", self.num_blocks, 1)
        if self.graphs not in GRAPH_MODES:
            raise ValueError(f"graphs = {self.graphs!r}: expected one of {list(GRAPH_MODES)}")
        if self.host_s is not None and (isinstance(self.host_s, bool) or not isinstance(self.host_s, (int, float))
                                        or not math.isfinite(self.host_s) or self.host_s < 0):
            raise ValueError(f"host_s = {self.host_s!r}: expected seconds >= 0")

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def kv_blocks(capacity_bytes: float | None, weights_bytes: float, activations_bytes: float,
              token_bytes: float, cfg: SchedulerConfig) -> dict[str, Any]:
    """The KV blocks of one chip (module docstring).

    Args:
        capacity_bytes: the chip's memory (bytes); None: undeclared (then ``cfg.num_blocks`` must
            be given).
        weights_bytes: the weights the chip holds (bytes).
        activations_bytes: the peak live activations of a pass of max_num_batched_tokens tokens.
        token_bytes: one token's K and V on the chip over all its blocks (bytes).
        cfg: the settings (``gpu_memory_utilization``, ``block_size``, ``num_blocks``).

    Returns:
        ``num_blocks`` (usable, the null block reserved), ``block_bytes``, ``kv_bytes`` (the memory
        left for the cache), ``tokens`` (num_blocks x block_size), and the inputs.

    Raises:
        ValueError: no capacity and no ``num_blocks``; weights and activations leave no room for a
            block (the numbers given).
    """
    block = token_bytes * cfg.block_size
    out = {"capacity_bytes": capacity_bytes, "weights_bytes": weights_bytes, "activations_bytes": activations_bytes,
           "token_bytes": token_bytes, "block_bytes": block, "gpu_memory_utilization": cfg.gpu_memory_utilization}
    if cfg.num_blocks is not None:
        out.update(num_blocks=cfg.num_blocks, kv_bytes=cfg.num_blocks * block, tokens=cfg.num_blocks * cfg.block_size,
                   given=True)
        return out
    if capacity_bytes is None:
        raise ValueError("num_blocks: the accelerator declares no memory capacity ([dram] kind): give the KV "
                         "blocks (--num-blocks)")
    left = capacity_bytes * cfg.gpu_memory_utilization - weights_bytes - activations_bytes
    n = int(left // block) - 1 if left > 0 else 0
    if n < 1:
        raise ValueError(f"gpu_memory_utilization = {cfg.gpu_memory_utilization}: {capacity_bytes / 1e9:.2f} GB x "
                         f"{cfg.gpu_memory_utilization} leaves {max(left, 0) / 1e9:.3f} GB after the weights "
                         f"({weights_bytes / 1e9:.2f} GB) and activations ({activations_bytes / 1e9:.3f} GB): no room "
                         f"for one KV block of {block / 1e6:.3f} MB (more memory, more chips, fewer weight bits)")
    out.update(num_blocks=n, kv_bytes=left, tokens=n * cfg.block_size, given=False)
    return out
