"""The time of one kernel on a GPU preset (an accelerator with a ``[gpu]`` table,
`costmodel.gpu.spec`): what a library's kernel does that the loop nest's ideal schedule does not.

Every rule is physics with its inputs from the preset (each figure's source is in the preset's TOML):

(a) **A kernel's fixed time on the device**, ``kernel_us``: launch to completion of a minimal kernel
    on the GPU (grid set-up, the first loads' latency, the drain), paid by every kernel whether
    its host launch is eager or replayed from a CUDA graph. The host's launch cost is the
    accelerator's ``launch_overhead_us``, counted per launch by the step (`costmodel.llm`), not here.
(b) **The clock a power-bound kernel sustains**: a kernel bound by the tensor cores draws the
    board's full power, and the board holds its power limit by running at its base clock
    (``[power] base_clock_mhz``: the clock the datasheet guarantees at ``tdp_w`` under full load);
    every other kernel runs at the boost clock (``clock_mhz``). Without ``base_clock_mhz``, the
    boost clock throughout.
(c) **A GEMM's CTA tiles and waves**: the library cuts the M x N output into CTA tiles of one of
    ``cta_tiles`` (M rows x N columns; a tile that does not divide pads), runs ``ceil(tiles x
    splits / SMs)`` waves of one tile per SM (the tail wave as long as a full one) and, when the
    tiles are fewer than the SMs, splits the reduction K over ``splits`` = the SMs a tile's share
    leaves (at most K / 128 parts, powers of two, as split-K libraries do; its partial sums
    written and reduced at DRAM). A tile takes ``max(M_t N_t K_s / MACs per SM per clock,
    (M_t + N_t) K_s x bytes / (L2 bytes per clock / SMs))`` cycles: the tensor cores' issue rate
    against what the L2 delivers to one SM (the preset's L2 read bandwidth shared by the SMs). The
    library picks the tile and split of least time, as a heuristic that knows the shape does.
(d) **DRAM as a kernel reaches it**: a GEMM's compulsory traffic (each operand once, the output
    once, the split-K partials) at ``gemm_dram_fraction`` of the peak (default ``[dram]
    sustained``); a vector kernel's at ``[dram] sustained``, but at most ``sm_dram_gbps`` per CTA
    it runs (one CTA per row: a norm, a rotary embedding, an activation over one token use one
    CTA each, so one decode token cannot fill the HBM).

`gemm_time` and `vector_time` return the kernel's seconds with what binds it; a time is never below
what the loop-nest mapping of the same kernel gives (``floor_s``: the ideal schedule at the boost
clock), so the rules only add what a library pays.

Errors: ValueError for an accelerator without ``[gpu]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["vector_ctas", "ELEMENTS_PER_CTA", "KernelTime", "compute_clock_hz", "dram_bytes_per_s", "gemm_time", "vector_time", "is_gpu",
           "decode_attention_time", "prefill_attention_time", "Q_TILE"]

#: Query rows per CTA of a FlashAttention-2-style prefill kernel (Dao, "FlashAttention-2", 2023,
#: Sec. 3.1: a CTA per query block and head; 128 rows for head dim 128 on A100, its Sec. 4).
Q_TILE = 128

#: Elements one CTA of a one-dimensional element-wise kernel covers (1,024 threads x 4 elements, a
#: grid-stride kernel's usual shape); a row-wise kernel runs one CTA per row instead.
ELEMENTS_PER_CTA = 4096


def vector_ctas(op: Any) -> int:
    """CTAs of a vector kernel: one per row (``op.rows`` > 1: a norm, a softmax, a per-token
    activation, RoPE or residual add as vLLM writes them, one CTA per token), else one per
    `ELEMENTS_PER_CTA` elements."""
    return op.rows if op.rows > 1 else max(1, math.ceil(op.elements / ELEMENTS_PER_CTA))


@dataclass(frozen=True)
class KernelTime:
    """One kernel: ``time_s`` (s, with the fixed time), ``fixed_s``, ``compute_s`` and
    ``dram_s`` (s), ``bound`` (``compute``, ``l2``, ``dram``, ``cta`` (the per-CTA DRAM limit),
    ``fixed`` or ``loop nest``), ``detail`` (the tile, splits and waves of a GEMM)."""

    time_s: float
    fixed_s: float
    compute_s: float
    dram_s: float
    bound: str
    detail: str = ""


def is_gpu(acc: Any) -> bool:
    """True when ``acc`` has a ``[gpu]`` table."""
    return getattr(acc, "gpu", None) is not None


def _spec(acc: Any):
    if not is_gpu(acc):
        raise ValueError(f"accelerator {getattr(acc, 'name', acc)!r} has no [gpu] table (costmodel.gpu.spec)")
    return acc.gpu


def compute_clock_hz(acc: Any) -> float:
    """Hz of a kernel bound by the tensor cores: the base clock of ``[power]``, else the boost clock."""
    power = getattr(acc, "power", None)
    mhz = power.base_clock_mhz if power is not None and power.base_clock_mhz else acc.clock_mhz
    return mhz * 1e6


def dram_bytes_per_s(acc: Any, fraction: float | None = None) -> float:
    """Bytes/s of the DRAM (the outermost level, which already holds ``[dram] sustained``) or, with
    ``fraction``, the peak times ``fraction``."""
    top = acc.memories[-1]
    sustained = getattr(acc, "dram_sustained", 1.0) or 1.0
    bits_per_cycle = top.read_bw if fraction is None else top.read_bw / sustained * fraction
    return bits_per_cycle / 8 * acc.clock_mhz * 1e6


def _l2_bytes_per_clock_per_sm(acc: Any, sms: int) -> float:
    """The L2's read bandwidth (the memory below the DRAM) shared by the SMs, bytes per clock."""
    if len(acc.memories) < 2:
        return math.inf
    return acc.memories[-2].read_bw / 8 / sms


def gemm_time(m: int, n: int, k: int, acc: Any, *, g: int = 1, in_bits: int = 16, out_bits: int = 16,
              floor_s: float = 0.0, dram_bytes: float | None = None, ctas: int | None = None) -> KernelTime:
    """Seconds of one GEMM kernel of ``g`` instances of (M x K) x (K x N) on ``acc`` (module
    docstring, rules a-d); ``floor_s`` the loop-nest mapping's time of the same GEMM;
    ``dram_bytes`` its compulsory DRAM traffic when not every operand moves (a fused tile's on-chip
    scores); ``ctas``: the CTAs that stream its DRAM operand when fewer than the tiles (a decode
    attention kernel: one per sequence and KV head), each at most ``sm_dram_gbps`` (rule d).

    Raises:
        ValueError: ``acc`` without ``[gpu]``.
    """
    spec = _spec(acc)
    sms = int(acc.array.get("D1", 1))
    macs_per_sm = math.prod(v for d, v in acc.array.items() if d != "D1")
    l2 = _l2_bytes_per_clock_per_sm(acc, sms)
    hz = compute_clock_hz(acc)
    bw = dram_bytes_per_s(acc, spec.gemm_dram_fraction)
    ib, ob = in_bits / 8, out_bits / 8
    base_bytes = g * ((m * k + k * n) * ib + m * n * ob) if dram_bytes is None else dram_bytes
    if ctas is not None and spec.sm_dram_gbps is not None:
        bw = min(bw, ctas * spec.sm_dram_gbps * 1e9)
    best = None
    for tm, tn in spec.cta_tiles:
        tiles = g * math.ceil(m / tm) * math.ceil(n / tn)
        splits = 1
        while tiles * splits * 2 <= sms and k // (splits * 2) >= 128:
            splits *= 2
        ks = math.ceil(k / splits)
        issue = tm * tn * ks / macs_per_sm
        feed = (tm + tn) * ks * ib / l2
        waves = math.ceil(tiles * splits / sms)
        compute = waves * max(issue, feed) / hz
        partial = 2 * g * m * n * 4 * splits if splits > 1 else 0.0
        dram = (base_bytes + partial) / bw
        t = max(compute, dram)
        if best is None or t < best[0]:
            bound = "dram" if dram >= compute else ("l2" if feed > issue else "compute")
            best = (t, compute, dram, bound, f"tile {tm}x{tn}, split-K {splits}, {waves} wave(s)")
    assert best is not None   # cta_tiles is never empty (gpu_from_dict)
    t, compute, dram, bound, detail = best
    if floor_s > t:
        t, bound = floor_s, "loop nest"
    fixed = spec.kernel_us * 1e-6
    return KernelTime(t + fixed, fixed, compute, dram, bound if t > 0 or fixed == 0 else "fixed", detail)


def vector_time(cost: Any, acc: Any, ctas: int) -> KernelTime:
    """Seconds of one vector kernel on ``acc`` from its `costmodel.vector.VectorCost` ``cost``
    (its compute cycles at the boost clock and its DRAM bits), run as ``ctas`` CTAs (rule d: one
    per row for the row-wise kernels).

    Raises:
        ValueError: ``acc`` without ``[gpu]``.
    """
    spec = _spec(acc)
    hz = acc.clock_mhz * 1e6
    compute = cost.compute_cycles / hz
    bw = dram_bytes_per_s(acc)
    bound = "dram"
    if spec.sm_dram_gbps is not None and ctas * spec.sm_dram_gbps * 1e9 < bw:
        bw, bound = ctas * spec.sm_dram_gbps * 1e9, "cta"
    dram = cost.dram_bits / 8 / bw
    t = max(compute, dram, cost.latency_cycles / hz)
    if compute >= dram:
        bound = "vector unit"
    fixed = spec.kernel_us * 1e-6
    if fixed > t:
        bound = "fixed"
    return KernelTime(t + fixed, fixed, compute, dram, bound)


def decode_attention_time(batch: int, context: int, heads: int, kv_heads: int, head_dim: int, acc: Any,
                          bits: int = 16) -> KernelTime:
    """Seconds of one decode-attention kernel (FlashInfer's, as a serving stack runs it): one CTA per
    (sequence, KV head) reads that head's K and V of ``context`` cached tokens (``batch x context x
    kv_heads x head_dim x 2 x bits / 8`` bytes) at the DRAM's sustained rate, at most
    ``sm_dram_gbps`` per CTA (rule d); its arithmetic (2 x heads x context x head_dim MACs per
    sequence) is negligible beside that and is not counted.

    Raises:
        ValueError: ``acc`` without ``[gpu]``.
    """
    spec = _spec(acc)
    nbytes = batch * context * kv_heads * head_dim * 2 * bits / 8
    ctas = batch * kv_heads
    bw, bound = dram_bytes_per_s(acc), "dram"
    if spec.sm_dram_gbps is not None and ctas * spec.sm_dram_gbps * 1e9 < bw:
        bw, bound = ctas * spec.sm_dram_gbps * 1e9, "cta"
    fixed = spec.kernel_us * 1e-6
    dram = nbytes / bw
    return KernelTime(dram + fixed, fixed, 0.0, dram, bound, f"{ctas} CTAs")


def prefill_attention_time(tokens: int, heads: int, kv_heads: int, head_dim: int, acc: Any, score_lane_cycles: float,
                           bits: int = 16) -> KernelTime:
    """Seconds of one causal prefill-attention kernel of ``tokens`` tokens (FlashAttention-2's
    schedule, Dao 2023, Alg. 1): one CTA per (query block of `Q_TILE` rows, head), ``ceil(tokens /
    Q_TILE) x heads`` CTAs in waves over the SMs; a CTA's query block i attends to (i + 1) x
    `Q_TILE` keys, so a CTA takes on average ``Q_TILE x (tokens / 2) x head_dim x 2`` MACs on the
    tensor cores (QK^T and PV) at the power-bound clock (rule b), then the online softmax of its
    ``Q_TILE x tokens / 2`` scores on the SM's share of the vector lanes, ``score_lane_cycles``
    lane-cycles a score (`costmodel.vector`'s ``online_softmax`` primitives, an exp at the vector
    unit's ``special_cycles``: 3 + 1 + 16 = 20 on the A100): the same warps do both, one after
    the other (FlashAttention-2 does not overlap them; FlashAttention-3 on Hopper does). The
    traffic (Q, K, V read once, O written) is its DRAM part.

    Raises:
        ValueError: ``acc`` without ``[gpu]``, or one without a vector unit.
    """
    spec = _spec(acc)
    if acc.vector is None:
        raise ValueError(f"accelerator {acc.name!r}: prefill attention needs a [vector] table")
    sms = int(acc.array.get("D1", 1))
    macs_per_sm = math.prod(v for d, v in acc.array.items() if d != "D1")
    lanes = acc.vector.lanes / sms
    scores = Q_TILE * tokens / 2
    mma = Q_TILE * (tokens / 2) * head_dim * 2 / macs_per_sm / compute_clock_hz(acc)
    soft = scores * score_lane_cycles / lanes / (acc.clock_mhz * 1e6)
    ctas = math.ceil(tokens / Q_TILE) * heads
    waves = ctas / sms if ctas >= sms else 1.0      # the causal blocks' unequal lengths balance over waves
    compute = waves * (mma + soft)
    nbytes = tokens * head_dim * (2 * heads + 2 * kv_heads) * bits / 8
    dram = nbytes / dram_bytes_per_s(acc)
    fixed = spec.kernel_us * 1e-6
    t = max(compute, dram)
    return KernelTime(t + fixed, fixed, compute, dram, "compute" if compute >= dram else "dram",
                      f"{ctas} CTAs, softmax {soft / (mma + soft):.0%} of a CTA")
