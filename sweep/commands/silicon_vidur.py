"""Our GPU presets against Vidur's A100 kernel times (`tests/data/vidur_a100/`, its SOURCE.md): each
operation of a Llama-3-8B / 70B block at TP 1-8 and 1 to 32,768 tokens, FlashInfer attention
(`tests/data/peers_serving/vidur_a100_llama3_8b_attention_subset.csv`) and the decode and prefill
steps as the sums of their operations.

Vidur's times are CUDA-kernel times (no host cost), so ours are the kernels' alone: the loop-nest
mapping (SALSA, objective latency) with the GPU's execution effects (`costmodel.gpu.kernels`: the
device's fixed time per kernel, CTA tiles and waves, the base clock of a tensor-bound kernel, DRAM
by access pattern and CTAs) and no host launch cost. Nothing is fitted to these points.

Point classes (`vidur_points`): ``gemm`` (the fused q/k/v projection, o_proj, the fused gate/up
projection, down_proj; banded by the measured time: >= 0.25 ms, 0.05-0.25 ms, < 0.05 ms),
``vector`` (the two RMSNorms, RoPE, SiLU-and-mul, the residual add), ``attention_prefill`` and
``attention_decode`` (FlashInfer), and ``step`` (our whole Llama-3-8B step, fused attention,
without its LM head, against 32 x the block's measured operations: decode at batch 1 / 8 / 32
against 1,024 cached keys, prefill of 512 / 2,048 tokens).

Errors: ValueError for a missing data file.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MODELS", "TOKENS", "VPoint", "vidur_points", "compare_vidur", "class_summary"]

#: The two models' shapes (the profile files' own columns): heads, KV heads, width, FFN width.
MODELS = {"llama-3-8b": (32, 8, 4096, 14336), "llama-3-70b": (64, 8, 8192, 28672)}
#: The token counts compared (the powers of two the profiles hold).
TOKENS = tuple(2 ** i for i in range(16))
_HD = 128
_STEP_DECODE = ((1, 1024), (8, 1024), (32, 1024))
_STEP_PREFILL = (512, 2048)
_ATT_DECODE = tuple((b, kv) for b in (1, 2, 4, 8, 16, 32, 64) for kv in (1024, 4096))
_ATT_PREFILL = (256, 512, 1024, 2048, 4096, 8192)


@dataclass(frozen=True)
class VPoint:
    """One measured kernel: ``cls`` (module docstring), ``label``, ``measured_s`` (s), ``kind``
    (gemm, vector, attention_decode, attention_prefill) and its ``shape``."""

    cls: str
    label: str
    measured_s: float
    kind: str
    shape: dict


def _ops(model: str, tp: int, t: int) -> dict[str, tuple[str, dict]]:
    """(kind, shape) of each block operation of Vidur's mlp profile for one TP rank at ``t`` tokens."""
    h, kv, d, f = MODELS[model]
    return {
        "attn_pre_proj": ("gemm", {"m": t, "k": d, "n": (h + 2 * kv) * _HD // tp}),
        "attn_post_proj": ("gemm", {"m": t, "k": h * _HD // tp, "n": d}),
        "mlp_up_proj": ("gemm", {"m": t, "k": d, "n": 2 * f // tp}),
        "mlp_down_proj": ("gemm", {"m": t, "k": f // tp, "n": d}),
        "input_layernorm": ("vector", {"op": "rmsnorm", "elements": t * d, "rows": t, "inputs": 1}),
        "post_attention_layernorm": ("vector", {"op": "rmsnorm", "elements": t * d, "rows": t, "inputs": 1}),
        "attn_rope": ("vector", {"op": "rope", "elements": t * (h + kv) // tp * _HD, "rows": t, "inputs": 1}),
        "mlp_act": ("vector", {"op": "silu", "elements": t * f // tp, "rows": t, "inputs": 2}),
        "add": ("vector", {"op": "add", "elements": t * d, "rows": t, "inputs": 2}),
    }


def _read(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        raise ValueError(f"{path}: missing (Vidur's A100 profiles, tests/data/vidur_a100/SOURCE.md)")
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _attention(path: Path) -> list[VPoint]:
    rows = _read(path)
    pts = []
    for b, kv in _ATT_DECODE:
        r = [x for x in rows if x["is_prefill"] == "False" and int(x["batch_size"]) == b
             and int(float(x["kv_cache_size"])) == kv]
        if r:
            pts.append(VPoint("attention_decode", f"b{b} kv{kv}", float(r[0]["time_stats.attn_decode.median"]) * 1e-3,
                              "attention_decode", {"b": b, "kv": kv}))
    for t in _ATT_PREFILL:
        r = [x for x in rows if x["is_prefill"] == "True" and int(x["prefill_chunk_size"]) == t
             and int(float(x["kv_cache_size"])) == 0 and int(x["batch_size"]) == 1]
        if r:
            pts.append(VPoint("attention_prefill", f"{t} tokens", float(r[0]["time_stats.attn_prefill.median"]) * 1e-3,
                              "attention_prefill", {"t": t}))
    return pts


def vidur_points(directory: str | Path, attention_csv: str | Path, tokens: tuple[int, ...] = TOKENS) -> list[VPoint]:
    """Every compared point (module docstring) of the profiles in ``directory`` and the attention
    subset ``attention_csv``, the block operations at ``tokens`` (default `TOKENS`).

    Raises:
        ValueError: a file missing.
    """
    d = Path(directory)
    pts: list[VPoint] = []
    for model in MODELS:
        seen = set()
        for r in _read(d / f"mlp_{model}.csv"):
            tp, t = int(r["tp"]), int(r["num_tokens"])
            if t not in tokens or (tp, t) in seen:   # the profiles repeat some rows: the first kept
                continue
            seen.add((tp, t))
            for name, (kind, shape) in _ops(model, tp, t).items():
                ms = float(r[f"{name}_ms"])
                cls = "vector" if kind == "vector" else ("gemm >= 0.25 ms" if ms >= 0.25 else
                                                         "gemm 0.05-0.25 ms" if ms >= 0.05 else "gemm < 0.05 ms")
                pts.append(VPoint(cls, f"{model} tp{tp} {t} {name}", ms * 1e-3, kind, shape))
    return pts + _attention(Path(attention_csv))


class _Ours:
    """Our kernel times on one accelerator, memoised by shape (a point's time, s)."""

    def __init__(self, acc: Any, mapper: str, params: dict | None) -> None:
        self.acc, self.mapper, self.params, self._memo, self.step_cache = acc, mapper, params, {}, {}

    def gemm(self, m: int, n: int, k: int, g: int = 1, w_role: str = "weight") -> Any:
        from costmodel.gpu.kernels import gemm_time
        from costmodel.workload import Layer
        from sweep import api
        key = (m, n, k, g, w_role)
        if key not in self._memo:
            layer = Layer(f"g{m}x{n}x{k}x{g}", kind="matmul", B=m, C=k, K=n, G=g, w_role=w_role)
            r = api.map_layer(layer, self.acc, self.mapper, "latency", params=self.params)
            floor = r.latency_cycles / (self.acc.clock_mhz * 1e6)
            self._memo[key] = gemm_time(m, n, k, self.acc, g=g, floor_s=floor)
        return self._memo[key]

    def vector(self, shape: dict) -> Any:
        from costmodel.gpu.kernels import vector_time
        from costmodel.vector import vector_cost
        from costmodel.workload import VectorOp
        op = VectorOp("v", shape["op"], shape["elements"], inputs=shape["inputs"], rows=shape["rows"], bits=16)
        return vector_time(vector_cost(op, self.acc), self.acc, shape["rows"])

    def decode_attention(self, b: int, kv: int, heads: int = 32, kv_heads: int = 8) -> Any:
        """FlashInfer decode (`costmodel.gpu.kernels.decode_attention_time`)."""
        from costmodel.gpu.kernels import decode_attention_time
        return decode_attention_time(b, kv, heads, kv_heads, _HD, self.acc)

    def prefill_attention(self, t: int, heads: int = 32, kv_heads: int = 8) -> Any:
        """FlashAttention-2-style causal prefill (`costmodel.gpu.kernels.prefill_attention_time`)."""
        from costmodel.gpu.kernels import prefill_attention_time
        from costmodel.vector import OP_PRIMITIVES
        p = OP_PRIMITIVES["online_softmax"]
        lane = p.add + p.mul + p.special * self.acc.vector.special_cycles
        return prefill_attention_time(t, heads, kv_heads, _HD, self.acc, lane)


def _ours_s(o: _Ours, p: VPoint) -> tuple[float, str]:
    if p.kind == "gemm":
        k = o.gemm(**p.shape)
    elif p.kind == "vector":
        k = o.vector(p.shape)
    elif p.kind == "attention_decode":
        k = o.decode_attention(**p.shape)
    else:
        k = o.prefill_attention(**p.shape)
    return k.time_s, k.bound


def compare_vidur(directory: str | Path, attention_csv: str | Path, arch: Any = "a100", mapper: str = "salsa",
                  params: dict | None = None, classes: tuple[str, ...] | None = None,
                  progress: Any = None, tokens: tuple[int, ...] = TOKENS) -> list[dict[str, Any]]:
    """Each point (`vidur_points`) beside ours on ``arch`` (a preset with ``[gpu]``), plus the
    ``step`` class (Llama-3-8B, TP 1: our step against 32 blocks of the operations, module docstring);
    ``tokens``: the block operations' token counts (a subset of `TOKENS`; the steps' own always).

    Returns:
        one dict per point: ``cls``, ``label``, ``measured_s``, ``ours_s``, ``ratio``, ``error``
        (ratio - 1), ``bound`` (what binds ours, `costmodel.gpu.kernels.KernelTime`).

    Raises:
        ValueError: a file missing; an accelerator without ``[gpu]``.
    """
    from sweep import api
    acc = api.load_accelerator(arch)
    o = _Ours(acc, mapper, params)
    pts = [p for p in vidur_points(directory, attention_csv, tokens) if classes is None or p.cls in classes]
    out = []
    for i, p in enumerate(pts):
        if progress is not None:
            progress(i, len(pts), p.label)
        t, bound = _ours_s(o, p)
        out.append({"cls": p.cls, "label": p.label, "measured_s": p.measured_s, "ours_s": t,
                    "ratio": t / p.measured_s, "error": t / p.measured_s - 1, "bound": bound})
    if classes is None or "step" in classes:
        out += _steps(o, vidur_points(directory, attention_csv))
    return out


def _steps(o: _Ours, pts: list[VPoint]) -> list[dict[str, Any]]:
    """Llama-3-8B at TP 1, our whole step (the zoo's ``llama3_8b`` with fused attention, mapped as
    `sweep map` maps it, no host launch cost) without its LM head and final norm (Vidur's profile
    has neither), against 32 x (the block's measured operations at the step's tokens + its
    attention)."""
    import dataclasses
    from costmodel.transformer import build_transformer
    from sweep.commands.map_eval import map_network
    acc = dataclasses.replace(o.acc, launch_overhead_us=0.0)
    dev = acc.gpu.kernel_us * 1e-6 if acc.gpu is not None else 0.0
    by = {p.label: p for p in pts}
    rows = []
    for label, phase, t, a in ([(f"decode b{b} kv{kv}", "decode", b, f"b{b} kv{kv}") for b, kv in _STEP_DECODE]
                               + [(f"prefill {t}", "prefill", t, f"{t} tokens") for t in _STEP_PREFILL]):
        if a not in by:
            continue
        ops = [by[f"llama-3-8b tp1 {t} {n}"] for n in _ops("llama-3-8b", 1, t)]
        measured = 32 * (sum(p.measured_s for p in ops) + by[a].measured_s)
        kw = {"batch": t, "context": _STEP_DECODE[0][1]} if phase == "decode" else {"batch": 1, "seq": t}
        net = build_transformer("llama3_8b", phase=phase, fusion="fused", **kw)
        res = map_network(net, acc, o.mapper, "latency", 0, o.params, cache=o.step_cache, traffic=False)
        hz = acc.clock_mhz * 1e6
        head = sum(r["latency_cycles"] * r["repeat"] for r in res["layers"] if r["layer"] == "lm_head")
        fin = sum(r["latency_cycles"] * r["repeat"] for r in (res.get("vector") or {}).get("ops", [])
                  if r["name"] == "final_norm")
        ours = (res["total"]["latency_cycles"] - head - fin) / hz - 2 * dev
        rows.append({"cls": "step", "label": f"llama-3-8b {label}", "measured_s": measured, "ours_s": ours,
                     "ratio": ours / measured, "error": ours / measured - 1, "bound": "step"})
    return rows


def class_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per class: points, MAPE (%), geomean of ours / measured, the largest |error| (%), points more
    than 15% off."""
    out = []
    for c in dict.fromkeys(r["cls"] for r in rows):
        sel = [r for r in rows if r["cls"] == c]
        out.append({"cls": c, "points": len(sel), "mape": 100 * sum(abs(r["error"]) for r in sel) / len(sel),
                    "geomean": math.exp(sum(math.log(r["ratio"]) for r in sel) / len(sel)),
                    "max_error": 100 * max(abs(r["error"]) for r in sel),
                    "over_15": sum(abs(r["error"]) > 0.15 for r in sel)})
    return out
