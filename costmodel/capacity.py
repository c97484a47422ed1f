"""Memory that can run out: what a transformer step must hold in DRAM, against what the
accelerator's DRAM stores.

A step (`costmodel.transformer.build_transformer`) needs, at once (bytes):

* **weights**: every parameter of the model (`costmodel.transformer.param_count`, the
  embedding table and all experts of an MoE included: a step may route to any of them) at the
  weights' precision (the step's ``weight_bits``, else the accelerator's ``[precision] W``, else 8);
* **KV cache**: K and V of every block for every cached token of every sequence: batch x tokens x
  layers x 2 x kv_heads x head_dim (MLA: the latent and the shared RoPE key, kv_lora_rank +
  rope_dim; `costmodel.transformer.TransformerConfig.cache_width`; a sliding window holds its last
  tokens only) x the cache's precision (`costmodel.loopnest.reference.operand_bits`
  of the score matmul's W: the step's ``kv_bits``, else its ``act_bits``, else the accelerator's
  ``[precision] I``). Tokens: the context at decode (the new token included), the prompt at
  prefill (the cache the prefill writes);
* **activations**: the largest set live at once. The residual stream (tokens x hidden, at the
  activations' precision) is held across each block; on top of it one operation at a time holds its
  input and its output: the largest, over the step's matmuls, of one execution's I (B x C) and final
  O (B x K) at their precisions (`operand_bits`). Unfused attention makes the score matmul's output
  (one (sequence, KV head) instance's scores, group x q_len x attended) a candidate; the
  vector operations work in place on a matmul's output or on the residual stream, so they add none.

A step split over chips (``tp``, ``pp``, ``ep`` in its workload, `costmodel.system.parallel`) is one
chip's share: the weights that chip holds (`costmodel.system.parallel.share_params`: heads, FFN and
vocabulary / tp, the last stage's blocks / pp with its LM head, the experts / ep), the cache of its
K/V heads (replicated ones held in full by each chip that holds them) for its batch / ep sequences
and its stage's blocks, and its tokens' residual stream (hidden is not split).

Capacity: a DRAM of a kind (``[dram] kind, units``, `costmodel.tech.dram.dram_capacity_bytes`:
units x the part's GiB as shipped). An accelerator whose DRAM is a plain unbounded level declares
no capacity: its steps are not checked (`Footprint.capacity_bytes` None).

Usable memory: a serving stack does not fill all of it. vLLM fills ``gpu_memory_utilization`` of
each GPU's memory with the weights, the activations and the KV cache and leaves the rest to the
runtime (the CUDA context, NCCL's buffers, the framework's workspace, fragmentation); its default
is 0.9 (vLLM v0.11.0 ``vllm/config/cache.py`` ``CacheConfig.gpu_memory_utilization = 0.9``, set by
``vllm/engine/arg_utils.py`` ``EngineArgs.gpu_memory_utilization`` / ``--gpu-memory-utilization``).
So a step fits when its footprint is at most ``floor(capacity x gpu_memory_utilization)`` bytes
(`Footprint.usable_bytes`), on each chip of a split step; `GPU_MEMORY_UTILIZATION` is the one
default, shared with the serving scheduler (`costmodel.serving.SchedulerConfig`, whose KV blocks
are what that share leaves after the weights and activations). 1.0 counts every byte. The on-chip
home of the activations (TPU v1's unified buffer) is an SRAM the runtime does not use: not scaled.

What is left out (said so, not silently): code, and the on-chip SRAM (tiles live there, not extra
storage).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["Footprint", "step_footprint", "max_batch", "gb", "GPU_MEMORY_UTILIZATION", "check_memory_utilization",
           "capacity_text", "usable_bytes"]

#: The share of each chip's memory that weights, activations and the KV cache may fill by default:
#: vLLM's ``gpu_memory_utilization`` (v0.11.0 ``vllm/config/cache.py`` ``CacheConfig``, 0.9; the
#: engine argument ``EngineArgs.gpu_memory_utilization``, ``--gpu-memory-utilization``). The one
#: default of the capacity checks here and of `costmodel.serving.SchedulerConfig`.
GPU_MEMORY_UTILIZATION = 0.9


def check_memory_utilization(value: Any, key: str = "gpu_memory_utilization") -> float:
    """``value`` as the share of each chip's memory for weights, activations and the KV cache: a
    number in (0, 1] (vLLM's ``gpu_memory_utilization``, module docstring).

    Raises:
        ValueError: ``<key> = <value>: expected a fraction in (0, 1] ...`` (a bool, a non-number,
            NaN, 0 or less, above 1).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value <= 1):
        raise ValueError(f"{key} = {value!r}: expected a fraction in (0, 1], the share of each chip's memory for "
                         f"weights, activations and the KV cache (vLLM's default {GPU_MEMORY_UTILIZATION})")
    return float(value)


def gb(nbytes: float) -> str:
    """``nbytes`` in decimal units, three significant digits at least: ``155.4 GB``, ``8.03 GB``,
    ``9.26 MB``, ``136 kB``."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        v = nbytes / scale
        if v >= 1:
            return f"{v:,.1f} {unit}" if v >= 100 else f"{v:.3g} {unit}"
    return f"{nbytes:.0f} B"


def _share(u: float) -> str:
    """A utilisation in words: two decimals (``0.90``) unless that would round it (``0.925``)."""
    return f"{u:.2f}" if round(u, 2) == u else f"{u:g}"


def capacity_text(capacity_bytes: int, memory: str, gpu_memory_utilization: float) -> str:
    """A chip's memory and the share of it a step may fill (module docstring), in words: ``85.9 GB
    (80 GiB) in 5 HBM2E stacks x 0.90 usable (gpu_memory_utilization) = 77.3 GB (72 GiB)``.

    Args:
        capacity_bytes: the DRAM's capacity (bytes).
        memory: the DRAM in words (``5 HBM2E stacks``).
        gpu_memory_utilization: the usable share, in (0, 1].
    """
    usable = usable_bytes(capacity_bytes, gpu_memory_utilization)
    return (f"{gb(capacity_bytes)} ({capacity_bytes / 2**30:.3g} GiB) in {memory} x {_share(gpu_memory_utilization)} "
            f"usable (gpu_memory_utilization) = {gb(usable)} ({usable / 2**30:.3g} GiB)")


def usable_bytes(capacity_bytes: int, gpu_memory_utilization: float) -> int:
    """What a step may fill of ``capacity_bytes`` (bytes): floor(capacity x gpu_memory_utilization),
    as vLLM's ``requested_memory`` (v1/worker/gpu_worker.py: total memory x the utilisation)."""
    return math.floor(capacity_bytes * gpu_memory_utilization)


@dataclass(frozen=True)
class Footprint:
    """What one transformer step holds in DRAM (module docstring), bytes, and what the accelerator
    stores.

    Attributes:
        weights_bytes, kv_cache_bytes, activations_bytes: the three parts (bytes).
        largest: the operation whose input and output make the largest live activations.
        capacity_bytes: the accelerator's DRAM capacity (bytes), or None (not declared).
        memory: the DRAM in words (``1 HBM2E stack``), "" without a capacity.
        arch: the accelerator's name.
        activations_home, activations_capacity_bytes: where the activations live when it is not the
            DRAM (the outermost level serving I and O: TPU v1's unified buffer, its DRAM holding
            weights only) and that level's size (bytes); "" and None otherwise.
        gpu_memory_utilization: the share of the DRAM the step may fill, in (0, 1] (module
            docstring; vLLM's default 0.9, `GPU_MEMORY_UTILIZATION`).
    """

    weights_bytes: int
    kv_cache_bytes: int
    activations_bytes: int
    largest: str
    capacity_bytes: int | None
    memory: str
    arch: str
    activations_home: str = ""
    activations_capacity_bytes: int | None = None
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION

    @property
    def usable_bytes(self) -> int | None:
        """What the step may fill of the DRAM (bytes): floor(capacity_bytes x gpu_memory_utilization);
        None without a declared capacity."""
        cap = self.capacity_bytes
        return None if cap is None else usable_bytes(cap, self.gpu_memory_utilization)

    @property
    def total_bytes(self) -> int:
        """What the DRAM holds (bytes): weights + KV cache + activations (these only where they live
        in the DRAM)."""
        act = 0 if self.activations_home else self.activations_bytes
        return self.weights_bytes + self.kv_cache_bytes + act

    @property
    def activations_fit(self) -> bool:
        """Whether the activations fit their on-chip home (True where they live in the DRAM)."""
        cap = self.activations_capacity_bytes
        return cap is None or self.activations_bytes <= cap

    @property
    def fits(self) -> bool:
        """True where the step fits the DRAM's usable share (`usable_bytes`; or no capacity is
        declared) and its activations their home."""
        usable = self.usable_bytes
        return (usable is None or self.total_bytes <= usable) and self.activations_fit

    def reason(self) -> str:
        """The numbers in words: ``needs 158.0 GB: weights 70.6 GB, KV cache 85.9 GB, activations
        1.6 GB (...); llm_ws has 17.2 GB (16 GiB) in 1 HBM2E stack x 0.90 usable
        (gpu_memory_utilization) = 15.5 GB (14.4 GiB)`` (`capacity_text`)."""
        need = (f"needs {gb(self.total_bytes)}: weights {gb(self.weights_bytes)}, KV cache "
                f"{gb(self.kv_cache_bytes)}, activations {gb(self.activations_bytes)} (the residual stream "
                f"and {self.largest}'s input and output)")
        if not self.activations_fit:
            return (f"activations {gb(self.activations_bytes)} (the residual stream and {self.largest}'s input and "
                    f"output) exceed {self.arch}'s {self.activations_home} of {gb(self.activations_capacity_bytes or 0)}, "
                    "where they live (the outermost level serving I and O: the DRAM holds weights only)")
        if self.capacity_bytes is None:
            return f"{need}; {self.arch} declares no DRAM capacity (not checked)"
        return f"{need}; {self.arch} has {capacity_text(self.capacity_bytes, self.memory, self.gpu_memory_utilization)}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able figures (bytes), the usable share, ``fits`` and ``reason``."""
        return {"weights_bytes": self.weights_bytes, "kv_cache_bytes": self.kv_cache_bytes,
                "activations_bytes": self.activations_bytes, "total_bytes": self.total_bytes,
                "largest": self.largest, "capacity_bytes": self.capacity_bytes,
                "gpu_memory_utilization": self.gpu_memory_utilization, "usable_bytes": self.usable_bytes,
                "memory": self.memory,
                "activations_home": self.activations_home,
                "activations_capacity_bytes": self.activations_capacity_bytes, "fits": self.fits,
                "reason": self.reason()}


def _capacity(arch) -> tuple[int | None, str]:
    """(bytes, words) of ``arch``'s DRAM, or (None, "") when it is not of a kind."""
    dram = getattr(arch, "dram", None)
    if dram is None:
        return None, ""
    from costmodel.tech.dram import dram_capacity_bytes, dram_spec
    kind, units = dram
    unit = dram_spec(kind).unit.split(",")[0]
    gib = getattr(arch, "dram_gib_per_unit", None)
    return (dram_capacity_bytes(kind, units, gib),
            f"{units} {kind.upper()} {unit}{'s' if units > 1 else ''}" + (f" of {gib:g} GiB" if gib else ""))


def _activations_capacity(arch) -> tuple[str, int | None]:
    """(name, bytes) of the on-chip level activations live in when it is not the DRAM
    (`costmodel.vector.activations_home`: TPU v1's unified buffer), else ("", None)."""
    from costmodel.vector import activations_home
    home = activations_home(arch)
    if home is arch.memories[-1] or home.size_bits is None:
        return "", None
    return home.name, home.size_bits // 8


def step_footprint(network, arch, gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION) -> Footprint | None:
    """The DRAM footprint of a transformer step on ``arch`` (module docstring); None for a network
    that is not a step of a zoo transformer (no ``workload["model"]``).

    Args:
        network: a `costmodel.workload.Network` from `build_transformer`.
        arch: a loop-nest `costmodel.loopnest.arch.Accelerator` (its ``precisions`` and ``dram``).
        gpu_memory_utilization: the share of each chip's DRAM the step may fill (module docstring).

    Raises:
        KeyError: ``workload["model"]`` names no zoo transformer.
        ValueError: ``gpu_memory_utilization`` outside (0, 1] (`check_memory_utilization`).
    """
    u = check_memory_utilization(gpu_memory_utilization)
    from costmodel.loopnest.reference import operand_bits
    from costmodel.transformer import config_of

    w = network.workload or {}
    if not w.get("model"):
        return None
    from costmodel.system.parallel import chip_batch, shard_config, share_params, split_of
    full, split = config_of(w), split_of(w)
    cfg = shard_config(full, split)  # one chip's share of a split step (costmodel.system.parallel)
    layers = [l for l, _ in network]
    weight = next((l for l in layers if l.w_role == "weight"), layers[0])
    kv = next((l for l in layers if l.w_role == "kv_cache"), None)
    wbits = operand_bits(weight, arch)["W"]
    kv_bits = operand_bits(kv, arch)["W"] if kv is not None else operand_bits(weight, arch)["I"]
    act_bits = operand_bits(weight, arch)["I"]
    weights = share_params(full, split) * wbits // 8
    cached = (w.get("context") if w.get("phase") == "decode" else w.get("seq")) or 0
    kv_cache = 0
    if cfg.kind == "decoder":
        kv_cache = chip_batch(w) * cfg.cache_entries(int(cached)) * cfg.cache_width * kv_bits // 8
    residual = int(w["tokens"]) // split.ep * cfg.hidden * act_bits
    best, largest = -1, ""
    for l in layers:
        b = operand_bits(l, arch)
        live = l.B * l.C * l.OY * l.OX * l.G * b["I"] + l.B * l.K * l.OY * l.OX * l.G * b["O_final"]
        if l.kind == "conv":  # ViT's patch embedding: its input is the image, not B x C
            live = l.B * l.C * l.IY * l.IX * b["I"] + l.B * l.K * l.OY * l.OX * b["O_final"]
        if live > best:
            best, largest = live, l.name
    cap, memory = _capacity(arch)
    home, home_bytes = _activations_capacity(arch)
    return Footprint(weights_bytes=int(weights), kv_cache_bytes=int(kv_cache),
                     activations_bytes=(residual + best + 7) // 8, largest=largest,
                     capacity_bytes=cap, memory=memory, arch=getattr(arch, "name", str(arch)),
                     activations_home=home, activations_capacity_bytes=home_bytes, gpu_memory_utilization=u)


_FITS: dict = {}


def max_batch(network, arch, limit: int = 1 << 20,
              gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION) -> int | None:
    """The largest batch at which ``network``'s step (same model, phase, seq or context and
    precisions) fits ``gpu_memory_utilization`` of ``arch``'s DRAM and its activations their home
    (`Footprint.fits`): 0 if not even batch 1 does, ``limit`` if every batch up to it does; None
    when no capacity is declared (neither the DRAM's nor an on-chip home's) or ``network`` is not a
    zoo transformer step.

    The footprint grows with the batch (weights fixed; KV cache and the residual stream linear; the
    largest live operation's size non-decreasing), so the answer is found by bisection on
    `step_footprint` of rebuilt steps (about 20 builds).

    Raises:
        ValueError: ``gpu_memory_utilization`` outside (0, 1] (`check_memory_utilization`).
    """
    from costmodel.transformer import build_transformer, config_of
    from costmodel.transformer.build import step_params

    u = check_memory_utilization(gpu_memory_utilization)
    w = network.workload or {}
    home_bytes = _activations_capacity(arch)[1]
    if not w.get("model") or (_capacity(arch)[0] is None and home_bytes is None):
        return None
    params = step_params(w)
    params.pop("batch")
    ep = int(w.get("ep") or 1)  # expert parallelism: batches in multiples of ep
    model = config_of(w)

    # the footprint depends on the model, the step's parameters, the batch, the precisions and the
    # capacity only: kept per process for the next designs of a grid (same answer, without the rebuilds)
    key = (w["model"], repr(w.get("config")), tuple(sorted((k, repr(v)) for k, v in params.items())),
           tuple(sorted(getattr(arch, "precisions", {}).items())), _capacity(arch)[0], home_bytes, u)

    def fits(b: int) -> bool:
        hit = _FITS.get((key, b))
        if hit is None:
            fp = step_footprint(build_transformer(model, batch=b * ep, **params), arch, u)
            hit = _FITS[(key, b)] = fp is not None and fp.fits
            if len(_FITS) > 65536:
                _FITS.clear()
        return hit

    if not fits(1):
        return 0
    lo, hi = 1, 2
    while hi <= limit and fits(hi):
        lo, hi = hi, hi * 2
    if hi > limit:
        return ep * (limit if fits(limit) else _bisect(fits, lo, limit))
    return ep * _bisect(fits, lo, hi)


def _bisect(fits, lo: int, hi: int) -> int:
    """The largest b in [lo, hi) with fits(b), given fits(lo) and not fits(hi)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo
