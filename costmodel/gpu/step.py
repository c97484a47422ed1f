"""A GPU's execution effects in a transformer step: each matmul layer as the library's kernel
(`costmodel.gpu.kernels.gemm_time`, the loop-nest mapping its floor), the fixed cost of each launch
split into the host's part and the device's, and the phases replayed as a CUDA graph.

`layer_kernel`: a layer of a step (`costmodel.workload.Layer`, a matmul: M = B x OY x OX rows, N =
K columns, K = C x FY x FX reduction, G instances) on a GPU preset; its compulsory DRAM traffic is
each operand once that is not kept on chip (``Layer.onchip``: a fused attention tile's scores), at
the operands' bits (the accelerator's ``[precision]``, else the layer's). A layer that reads the KV
cache with at most 64 query rows per instance (decode attention) streams it with one CTA per
instance (FlashInfer's decode kernel: a CTA per sequence and KV head), rule d's per-CTA limit.

`launch_cost_us`: (host, device) microseconds per launch: the host's is the accelerator's
``launch_overhead_us`` (or the system's) except in a phase listed in ``[gpu] graph_phases`` (a CUDA
graph replays the step's kernels without the host: vLLM captures decode), the device's the
``[gpu] kernel_us`` every kernel pays.
"""

from __future__ import annotations

from typing import Any

import math

from .kernels import KernelTime, compute_clock_hz, dram_bytes_per_s, gemm_time, is_gpu

__all__ = ["layer_kernel", "launch_cost_us", "DECODE_ROWS", "fused_attention_scale"]

#: Query rows per instance up to which a KV-cache matmul is decode attention (FlashInfer's decode
#: kernel serves up to a CTA tile's 64 rows; more rows run as a prefill / GEMM kernel).
DECODE_ROWS = 64


def _bits(layer: Any, arch: Any) -> tuple[int, int, int]:
    p = getattr(arch, "precisions", {}) or {}
    fixed = set(getattr(layer, "fixed_bits", ()) or ())
    w = layer.w_bits if "W" in fixed or "W" not in p else p["W"]
    i = layer.i_bits if "I" in fixed or "I" not in p else p["I"]
    o = layer.o_bits if "O_final" in fixed or "O_final" not in p else p["O_final"]
    return int(w), int(i), int(o)


def layer_kernel(layer: Any, arch: Any, cycles: float, concurrent: int | None = 1) -> KernelTime | None:
    """The GPU kernel of ``concurrent`` executions of ``layer`` launched as one (a block's
    attention over every sequence and KV head is one batched kernel: `costmodel.llm.step_launches`)
    on ``arch``, one execution's loop-nest mapping taking ``cycles`` (at the boost clock); None
    when ``arch`` has no ``[gpu]`` table, ``layer`` is not a matmul, or ``cycles`` is not finite.
    Its ``time_s`` is the whole kernel's and includes the device's fixed time (``fixed_s``), which
    the step counts per launch instead (`launch_cost_us`). ``concurrent`` None: the executions
    launched with it are not known (a serving iteration's part, one sequence's attention costed on
    its own and the batch's summed): no per-CTA limit, the batch's CTAs together fill the device.
    """
    if not is_gpu(arch) or getattr(layer, "kind", None) not in ("matmul", "conv") or cycles is None \
            or not cycles < float("inf"):
        return None
    d = layer.dims()
    m, n, k, g = d["B"] * d["OY"] * d["OX"], d["K"], d["C"] * d["FY"] * d["FX"], d["G"] * max(1, concurrent or 1)
    wb, ib, ob = _bits(layer, arch)
    on = set(layer.onchip)
    nbytes = g * ((0 if "I" in on else m * k * ib) + (0 if "W" in on else k * n * wb)
                  + (0 if "O" in on else m * n * ob)) / 8
    ctas = g if layer.w_role == "kv_cache" and m <= DECODE_ROWS and concurrent is not None else None
    return gemm_time(m, n, k, arch, g=g, in_bits=max(wb, ib), out_bits=ob,
                     floor_s=cycles * max(1, concurrent or 1) / (arch.clock_mhz * 1e6), dram_bytes=nbytes, ctas=ctas)


def launch_cost_us(arch: Any, phase: str | None, host_us: float | None = None) -> tuple[float, float]:
    """(host, device) us per kernel launch of a step in ``phase`` ("prefill", "decode", None) on
    ``arch``; ``host_us`` overrides the accelerator's ``launch_overhead_us`` (a system's)."""
    host = getattr(arch, "launch_overhead_us", 0.0) if host_us is None else host_us
    gpu = getattr(arch, "gpu", None)
    if gpu is None:
        return host, 0.0
    if phase is not None and phase in gpu.graph_phases:
        host = 0.0
    return host, gpu.kernel_us


def fused_attention_scale(items: list[tuple[Any, int, float]], arch: Any, blocks: int | None) -> float:
    """The factor (>= 1) on the loop-nest cycles of a step's fused attention tiles (``items``: each
    on-chip KV-cache tile layer with its repeats and its cycles per execution) that makes them the
    GPU's fused attention kernel, one per block (FlashAttention / FlashInfer): every tile of a
    block runs inside that one kernel, so the block's tiles are costed together, not as kernels of
    their own. Its tensor-core work (the tiles' MACs) at the power-bound clock over all SMs, its
    DRAM traffic (each tile's operands that are not on chip: Q, K, V, O) at the sustained rate; a
    decode kernel (at most `DECODE_ROWS` query rows a tile) streams K and V with one CTA per
    sequence and KV head (the tiles named ``*_first`` open one each), each at most ``sm_dram_gbps``
    (rule d of `costmodel.gpu.kernels`). ``blocks`` None (a serving part: the batch's CTAs not
    known): no per-CTA limit. The loop nest stays the floor (factor 1)."""
    if not items or not is_gpu(arch):
        return 1.0
    sms = int(arch.array.get("D1", 1))
    macs_per_sm = math.prod(v for d, v in arch.array.items() if d != "D1")
    macs = nbytes = loopnest = 0.0
    ctas, decode = 0, True
    for layer, rep, cycles in items:
        d = layer.dims()
        m, n, k, g = d["B"] * d["OY"] * d["OX"], d["K"], d["C"] * d["FY"] * d["FX"], d["G"]
        wb, ib, ob = _bits(layer, arch)
        on = set(layer.onchip)
        macs += rep * g * m * n * k
        nbytes += rep * g * ((0 if "I" in on else m * k * ib) + (0 if "W" in on else k * n * wb)
                             + (0 if "O" in on else m * n * ob)) / 8
        loopnest += rep * cycles
        decode &= m <= DECODE_ROWS
        if layer.name.split("_")[-1] == "first" or "_first" in layer.name:
            ctas += rep * g
    compute = macs / (sms * macs_per_sm) / compute_clock_hz(arch)
    bw = dram_bytes_per_s(arch)
    spec = arch.gpu
    if decode and blocks and ctas and spec.sm_dram_gbps is not None:
        bw = min(bw, ctas / blocks * spec.sm_dram_gbps * 1e9)
    gpu_s = max(compute, nbytes / bw)
    loop_s = loopnest / (arch.clock_mhz * 1e6)
    return max(1.0, gpu_s / loop_s) if loop_s > 0 else 1.0
