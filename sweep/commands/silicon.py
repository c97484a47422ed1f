"""Our figures against a measured chip: the ``a100`` preset against LLMCompass's A100 measurements.

LLMCompass's artifact (Zhang et al., ISCA 2024; github.com/PrincetonUniversity/LLMCompass, commit
2e015fd, ``ae/figure5/*/real_hardware/*_A100.csv``, copied to ``tests/data/llmcompass_a100/`` with
their source) holds what an A100 80GB SXM measured, each point the median wall time of a PyTorch
call followed by ``torch.cuda.synchronize()`` (so each includes the call's fixed cost):

* ``matmul``: GEMMs ``M x K`` times ``K x N`` (BF16 on the tensor cores, FP16 in the panel title: the
  same 312 TFLOPS on an A100), M = 64 .. 32,768 at N = K = 12,288, and N = K
  = 64 .. 32,768 at M = 8,192 (columns M, N, K, time, TFLOPS);
* ``softmax`` and ``layernorm``: FP16 rows, M x N = 4,096 x (32 .. 32,768) and (32 .. 32,768) x
  4,096, as throughput in elements per ns (= G elements/s, M N / time / 1e9);
* ``gelu``: FP16 vectors of 2^10 .. 2^29 elements, throughput in G elements/s;
* ``transformer`` / ``transformerAR``: one GPT-3 175B block (d_model 12,288, 96 heads) split over 4
  GPUs by tensor parallelism, batch 8, in prefill (2,048 tokens) and in decode (one token against a
  KV cache of 3,072 + 1), one GPU's share of each operation in seconds, in the order `GPT3_OPS`.
  Q_K_V is LLMCompass's Q projection timed once and counted three times; its block's layer norm is
  timed with LLMCompass's launch overhead subtracted (their ``run_on_gpu``), the other operations
  with it.

`compare_a100` maps each point on the ``a100`` preset (the GEMMs and the block's matmuls with a
loop-nest mapper, objective latency; a batched matmul's instances as the loop dim G; the vector
operations by `costmodel.vector.vector_cost`) and adds the preset's fixed cost per launch
(``launch_overhead_us``) once per kernel. Each row says what binds in our model: ``compute`` (at the
mapping's spatial utilisation), a memory level (its stall), the ``vector unit`` or the ``fixed cost``.
Nothing here is fitted to these measurements (the preset's figures and their sources:
``costmodel/presets/a100.toml``).

Errors: ValueError for a data directory without the files.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["GPT3_OPS", "Point", "load_points", "compare_a100", "series_summary", "mape"]

#: The operations of LLMCompass's GPT-3 block breakdown, in its CSV order (the two all-reduces are
#: measured but not compared: one chip is what this model costs).
GPT3_OPS = ("Q_K_V", "Q_mul_K", "A_mul_V", "Wo_proj", "W1_proj", "W2_proj", "Softmax", "LayerNorm_MHA",
            "LayerNorm_FFN", "GeLU", "AllReduce_MHA", "AllReduce_FFN")

_FILES = ("matmul_A100.csv", "softmax_A100.csv", "layernorm_A100.csv", "gelu_A100.csv", "transformer_A100.csv",
          "transformerAR_A100.csv")

# GPT-3 175B (Brown et al., 2020, Table 2.1): d_model 12,288, 96 heads of 128; LLMCompass's split: 4
# GPUs by tensor parallelism, batch 8, 2,048 tokens of prompt, decode against 2,048 + 1,024 cached.
_D, _HEADS, _TP, _BATCH, _SEQ, _KV = 12288, 96, 4, 8, 2048, 3072 + 1


@dataclass(frozen=True)
class Point:
    """One measured point: ``series`` (gemm_m, gemm_nk, softmax_n, softmax_m, layernorm_n,
    layernorm_m, gelu, gpt3_prefill, gpt3_decode), a label, the measured time (s), what is
    mapped (``kind`` "matmul" or "vector", the shape) and how many kernels it launches."""

    series: str
    label: str
    measured_s: float
    kind: str
    shape: dict
    launches: int = 1


def _rows(path: Path) -> list[list[float]]:
    with path.open(newline="") as f:
        return [[float(x.strip().removesuffix("ms").removesuffix("Tflops")) for x in r] for r in csv.reader(f) if r]


def load_points(directory: str | Path) -> list[Point]:
    """Every measured point of the artifact's A100 files in ``directory`` (module docstring).

    Raises:
        ValueError: a file missing from ``directory``.
    """
    d = Path(directory)
    missing = [f for f in _FILES if not (d / f).is_file()]
    if missing:
        raise ValueError(f"{d}: missing {missing} (LLMCompass ae/figure5 A100 measurements)")
    pts: list[Point] = []
    gemm = _rows(d / "matmul_A100.csv")
    for i, (m, n, k, ms, _) in enumerate(gemm):   # the file: the M sweep, then the N = K sweep
        series = "gemm_m" if i < len(gemm) // 2 else "gemm_nk"
        pts.append(Point(series, f"{int(m)}x{int(k)}x{int(n)}", ms * 1e-3, "matmul",
                         {"B": int(m), "C": int(k), "K": int(n)}))
    for op in ("softmax", "layernorm"):
        rows = _rows(d / f"{op}_A100.csv")
        for i, (m, n, gel) in enumerate(rows):   # the file: N swept at M = 4,096, then M at N = 4,096
            series = f"{op}_n" if i < len(rows) // 2 else f"{op}_m"
            pts.append(Point(series, f"{int(m)}x{int(n)}", m * n / gel / 1e9, "vector",
                             {"op": op, "elements": int(m * n), "rows": int(m)}))
    for n, gel in _rows(d / "gelu_A100.csv"):
        pts.append(Point("gelu", f"{int(n)}", n / gel / 1e9, "vector", {"op": "gelu", "elements": int(n), "rows": 1}))
    for phase, f in (("prefill", "transformer_A100.csv"), ("decode", "transformerAR_A100.csv")):
        times = [r[0] for r in _rows(d / f)]
        for name, t in zip(GPT3_OPS, times):
            if name.startswith("AllReduce"):
                continue
            kind, shape, launches = _gpt3_op(name, phase)
            pts.append(Point(f"gpt3_{phase}", name, t, kind, shape, launches))
    return pts


def _gpt3_op(name: str, phase: str) -> tuple[str, dict, int]:
    """(kind, shape, launches) of one GPU's share of a GPT-3 block operation (LLMCompass's
    TransformerBlockInitComputationTP / AutoRegressionTP): heads 96 / 4 = 24 per GPU."""
    rows = _BATCH * (_SEQ if phase == "prefill" else 1)
    heads = _HEADS // _TP
    hd = _D // _HEADS
    q, kv = (_SEQ, _SEQ) if phase == "prefill" else (1, _KV)
    g = _BATCH * heads
    return {
        "Q_K_V": ("matmul", {"B": rows, "C": _D, "K": _D // _TP}, 3),
        "Q_mul_K": ("matmul", {"B": q, "C": hd, "K": kv, "G": g, "w_role": "kv_cache"}, 1),
        "A_mul_V": ("matmul", {"B": q, "C": kv, "K": hd, "G": g, "w_role": "kv_cache"}, 1),
        "Wo_proj": ("matmul", {"B": rows, "C": _D // _TP, "K": _D}, 1),
        "W1_proj": ("matmul", {"B": rows, "C": _D, "K": 4 * _D // _TP}, 1),
        "W2_proj": ("matmul", {"B": rows, "C": 4 * _D // _TP, "K": _D}, 1),
        "Softmax": ("vector", {"op": "softmax", "elements": g * q * kv, "rows": g * q}, 1),
        "LayerNorm_MHA": ("vector", {"op": "layernorm", "elements": rows * _D, "rows": rows}, 1),
        "LayerNorm_FFN": ("vector", {"op": "layernorm", "elements": rows * _D, "rows": rows}, 1),
        "GeLU": ("vector", {"op": "gelu", "elements": rows * 4 * _D // _TP, "rows": 1}, 1),
    }[name]


def _bound(report: Any) -> tuple[str, float]:
    """What binds a matmul in our model: the memory of the largest stall, else compute; and the
    spatial utilisation."""
    b = report.breakdown
    stalls = b["stall_cycles"]
    worst = max(stalls, key=stalls.get) if stalls else None
    util = float(b.get("utilization", math.nan))
    if worst is not None and stalls[worst] > 0.05 * b["compute_cycles"]:
        return worst, util
    return "compute", util


def compare_a100(directory: str | Path, arch: Any = "a100", mapper: str = "salsa", series: tuple[str, ...] | None = None,
                 progress: Any = None, params: dict[str, Any] | None = None, gpu: bool | None = None) -> list[dict[str, Any]]:
    """Each measured point of ``directory`` (`load_points`) beside ours on ``arch`` (a preset name,
    TOML path or Accelerator; default the ``a100`` preset), the matmuls mapped by ``mapper`` with
    ``params`` (its parameters, `sweep.api.map_layer`), objective latency.

    Returns:
        one dict per point: ``series``, ``label``, ``measured_s``, ``ours_s`` (the mapping's or the
        vector op's time + launches x the fixed cost), ``fixed_s`` (that fixed cost), ``ratio``
        (ours / measured), ``error`` (ratio - 1), ``bound`` (what binds ours: compute, a memory
        level, the vector unit, or the fixed cost when it is more than half of ours),
        ``utilization`` (matmuls: the spatial utilisation of the mapping), ``mapper``.

    Raises:
        ValueError: as `load_points`; `sweep.api` errors for a bad arch or mapper.

    ``gpu``: each kernel timed with the GPU's execution effects (`costmodel.gpu.kernels`: CTA tiles
    and waves, the base clock of a tensor-bound kernel, DRAM by CTAs), the mapping's time its
    floor, and the device's fixed time per kernel beside the host's per launch (these are eager
    PyTorch calls: no graph); None: when the arch has a ``[gpu]`` table.
    """
    from costmodel.loopnest.mapping import Mapping
    from costmodel.loopnest.reference import evaluate
    from costmodel.vector import vector_cost
    from costmodel.workload import Layer, VectorOp
    from sweep import api

    acc = api.load_accelerator(arch)
    hz = acc.clock_mhz * 1e6
    gpu = getattr(acc, "gpu", None) is not None if gpu is None else gpu
    launch_s = (acc.launch_overhead_us + (acc.gpu.kernel_us if gpu else 0.0)) * 1e-6
    pts = [p for p in load_points(directory) if series is None or p.series in series]
    out = []
    for i, p in enumerate(pts):
        if progress is not None:
            progress(i, len(pts), f"{p.series} {p.label}")
        util = math.nan
        if p.kind == "matmul":
            layer = Layer(f"{p.series}_{p.label}", kind="matmul", **p.shape)
            r = api.map_layer(layer, acc, mapper, "latency", params=params)
            bound, util = _bound(evaluate(layer, acc, Mapping.from_dict(r.mapping)))
            t = r.latency_cycles / hz
            if gpu:
                from costmodel.gpu.kernels import gemm_time
                k = gemm_time(p.shape["B"], p.shape["K"], p.shape["C"], acc, g=p.shape.get("G", 1), floor_s=t)
                t, bound = k.time_s - k.fixed_s, k.bound
        else:
            c = vector_cost(VectorOp(p.label, p.shape["op"], p.shape["elements"], rows=p.shape["rows"]), acc)
            t = c.latency_cycles / hz
            bound = "vector unit" if c.compute_cycles >= c.transfer_cycles else c.memory
            if gpu:
                from costmodel.gpu.kernels import vector_time
                k = vector_time(c, acc, max(p.shape["rows"], p.shape["elements"] // 4096))
                t, bound = k.time_s - k.fixed_s, k.bound
        fixed = p.launches * launch_s
        ours = p.launches * t + fixed
        if fixed > 0.5 * ours:
            bound = "fixed cost"
        out.append({"series": p.series, "label": p.label, "measured_s": p.measured_s, "ours_s": ours,
                    "fixed_s": fixed, "ratio": ours / p.measured_s, "error": ours / p.measured_s - 1,
                    "bound": bound, "utilization": util, "mapper": mapper})
    if progress is not None:
        progress(len(pts), len(pts), "")
    return out


def mape(rows: list[dict[str, Any]]) -> float:
    """Mean absolute percentage error of ``rows`` (%): mean of |ours / measured - 1| x 100."""
    return 100.0 * sum(abs(r["error"]) for r in rows) / len(rows) if rows else math.nan


def series_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per series (in first-seen order): points, MAPE (%), the largest |error| (%), points more
    than 15% off; and for the GEMMs the MAPE of those measured at 0.25 ms or more (the issue's
    goal). The GPT-3 blocks also get their sum of the ten operations (ours / measured)."""
    out = []
    for s in dict.fromkeys(r["series"] for r in rows):
        sel = [r for r in rows if r["series"] == s]
        row = {"series": s, "points": len(sel), "mape": mape(sel), "max_error": 100 * max(abs(r["error"]) for r in sel),
               "over_15": sum(abs(r["error"]) > 0.15 for r in sel)}
        if s.startswith("gemm"):
            big = [r for r in sel if r["measured_s"] >= 0.25e-3]
            row["mape_ge_0_25ms"] = mape(big)
        if s.startswith("gpt3"):
            m, o = sum(r["measured_s"] for r in sel), sum(r["ours_s"] for r in sel)
            row["block_measured_s"], row["block_ours_s"], row["block_error"] = m, o, 100 * (o / m - 1)
        out.append(row)
    return out
