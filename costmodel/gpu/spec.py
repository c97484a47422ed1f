"""A GPU preset's execution and power figures: TOML tables ``[gpu]`` and ``[power]`` of a loop-nest
accelerator (`costmodel.loopnest.arch`), and ``[array_by_bits]``, the array at narrower operands.

``[gpu]`` (all optional but ``kernel_us``; `GpuSpec`)::

    kernel_us = 2.5            # us: the device time of a minimal kernel (launch to completion on the
                               # GPU, no host cost; a CUDA graph removes the host's, not this)
    sm_dram_gbps = 25.0        # GB/s: the DRAM bandwidth one CTA of a memory-bound kernel draws on
                               # its own (its bytes in flight / the DRAM latency, Little's law)
    gemm_dram_fraction = 0.88  # of the peak: what a GEMM streaming its weights at small batch reaches
    cta_tiles = [[128, 256], [256, 128], [128, 128], [64, 128], [128, 64], [64, 64]]
                               # the CTA output tiles (rows M x columns N) the GEMM library picks from
    graph_phases = ["decode"]  # the step phases a serving stack replays as a CUDA graph (no host
                               # launch cost; vLLM captures decode); [] = every phase launched eagerly
    source = "..."

``[power]`` (`PowerSpec`)::

    tdp_w = 400.0              # W: the board's power limit (datasheet)
    idle_w = 50.0              # W: the chip's power when idle (a measurement, cited)
    base_clock_mhz = 1275.0    # MHz: the clock the board guarantees under a full load within tdp_w
                               # (datasheet); a kernel bound by the tensor cores runs at it
    source = "..."

``[array_by_bits]``: ``8 = { D4 = 32 }`` replaces array dims when the accelerator's ``[precision]``
W and I are both at most 8 bits (an FP8 tensor core's doubled reduction per clock); the smallest key
that covers both operands applies (`array_for_bits`).

Errors: ValueError naming the file, the key and the value (``a.toml: gpu.kernel_us = -1: ...``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GpuSpec", "PowerSpec", "DEFAULT_CTA_TILES", "gpu_from_dict", "power_from_dict", "array_for_bits",
           "at_step_bits", "by_bits_table", "gpu_tables"]

#: CUTLASS's tensor-core threadblock tiles for FP16/BF16 GEMMs on SM80 (its profiler's default
#: set, `cutlass/tools/library/scripts/generator.py`, GenerateSM80_TensorOp_16816: 256x128,
#: 128x256, 256x64, 64x256, 128x128, 128x64, 64x128, 64x64), rows M x columns N.
DEFAULT_CTA_TILES: tuple[tuple[int, int], ...] = ((256, 128), (128, 256), (256, 64), (64, 256), (128, 128),
                                                  (128, 64), (64, 128), (64, 64))


def _bad(src: str, key: str, v: Any, what: str) -> ValueError:
    return ValueError(f"{src}: {key} = {v!r}: expected {what}")


def _pos(src: str, key: str, v: Any, *, zero: bool = False, at_most: float | None = None) -> float:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and (v >= 0 if zero else v > 0)
    if not ok or (at_most is not None and v > at_most):
        what = "a finite number " + (">= 0" if zero else "> 0") + ("" if at_most is None else f" and <= {at_most}")
        raise _bad(src, key, v, what)
    return float(v)


@dataclass(frozen=True)
class GpuSpec:
    """How a GPU runs kernels (module docstring): ``kernel_us`` (us), ``sm_dram_gbps`` (GB/s per
    CTA, None = no per-CTA limit), ``gemm_dram_fraction`` (of the peak DRAM bandwidth, None = the
    ``[dram] sustained`` figure), ``cta_tiles`` ((M, N) pairs), ``source``, ``graph_phases`` (the
    phases replayed as a CUDA graph: "prefill", "decode")."""

    kernel_us: float
    sm_dram_gbps: float | None = None
    gemm_dram_fraction: float | None = None
    cta_tiles: tuple[tuple[int, int], ...] = DEFAULT_CTA_TILES
    source: str = ""
    graph_phases: tuple[str, ...] = ("decode",)

    def to_dict(self) -> dict[str, Any]:
        """The TOML-shaped table (inverse of `gpu_from_dict`)."""
        d: dict[str, Any] = {"kernel_us": self.kernel_us, "graph_phases": list(self.graph_phases)}
        if self.sm_dram_gbps is not None:
            d["sm_dram_gbps"] = self.sm_dram_gbps
        if self.gemm_dram_fraction is not None:
            d["gemm_dram_fraction"] = self.gemm_dram_fraction
        if self.cta_tiles != DEFAULT_CTA_TILES:
            d["cta_tiles"] = [list(t) for t in self.cta_tiles]
        if self.source:
            d["source"] = self.source
        return d


@dataclass(frozen=True)
class PowerSpec:
    """A chip's power figures (module docstring): ``tdp_w`` and ``idle_w`` (W), ``base_clock_mhz``
    (MHz, None = the boost clock under every load), ``source``."""

    tdp_w: float
    idle_w: float | None = None
    base_clock_mhz: float | None = None
    source: str = field(default="")

    def to_dict(self) -> dict[str, Any]:
        """The TOML-shaped table (inverse of `power_from_dict`)."""
        d: dict[str, Any] = {"tdp_w": self.tdp_w}
        for k in ("idle_w", "base_clock_mhz"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        if self.source:
            d["source"] = self.source
        return d


def _table(d: Any, src: str, name: str, known: tuple[str, ...], required: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(d, dict):
        raise _bad(src, name, d, f"a table with the keys {list(known)}")
    for k in d:
        if k not in known:
            raise _bad(src, f"{name}.{k}", d[k], f"a known key; known keys: {list(known)}")
    for k in required:
        if k not in d:
            raise ValueError(f"{src}: {name}.{k}: missing (known keys: {list(known)})")
    if not isinstance(d.get("source", ""), str):
        raise _bad(src, f"{name}.source", d["source"], "a string")
    return d


def gpu_from_dict(d: Any, src: str = "<dict>") -> GpuSpec:
    """`GpuSpec` from a ``[gpu]`` table.

    Raises:
        ValueError: an unknown key, a missing ``kernel_us``, a value out of range (named).
    """
    d = _table(d, src, "gpu", ("kernel_us", "sm_dram_gbps", "gemm_dram_fraction", "cta_tiles", "graph_phases", "source"),
               ("kernel_us",))
    phases = d.get("graph_phases", ["decode"])
    if not isinstance(phases, list) or any(p not in ("prefill", "decode") for p in phases):
        raise _bad(src, "gpu.graph_phases", phases, 'a list of phases from ["prefill", "decode"]')
    tiles = d.get("cta_tiles", [list(t) for t in DEFAULT_CTA_TILES])
    if (not isinstance(tiles, list) or not tiles
            or any(not isinstance(t, list) or len(t) != 2 or any(isinstance(x, bool) or not isinstance(x, int) or x < 1
                                                                 for x in t) for t in tiles)):
        raise _bad(src, "gpu.cta_tiles", tiles, "a non-empty list of [rows M, columns N] pairs of positive integers")
    frac = d.get("gemm_dram_fraction")
    sm = d.get("sm_dram_gbps")
    return GpuSpec(_pos(src, "gpu.kernel_us", d["kernel_us"], zero=True),
                   None if sm is None else _pos(src, "gpu.sm_dram_gbps", sm),
                   None if frac is None else _pos(src, "gpu.gemm_dram_fraction", frac, at_most=1.0),
                   tuple((int(a), int(b)) for a, b in tiles), d.get("source", ""), tuple(phases))


def power_from_dict(d: Any, src: str = "<dict>", clock_mhz: float | None = None) -> PowerSpec:
    """`PowerSpec` from a ``[power]`` table; ``clock_mhz`` (the boost clock) bounds
    ``base_clock_mhz``.

    Raises:
        ValueError: an unknown key, a missing ``tdp_w``, ``idle_w`` above ``tdp_w``, a base clock
            above the boost clock (named).
    """
    d = _table(d, src, "power", ("tdp_w", "idle_w", "base_clock_mhz", "source"), ("tdp_w",))
    tdp = _pos(src, "power.tdp_w", d["tdp_w"])
    idle = None if d.get("idle_w") is None else _pos(src, "power.idle_w", d["idle_w"], zero=True, at_most=tdp)
    base = d.get("base_clock_mhz")
    base = None if base is None else _pos(src, "power.base_clock_mhz", base, at_most=clock_mhz)
    return PowerSpec(tdp, idle, base, d.get("source", ""))


def array_for_bits(array: dict[str, int], table: Any, precisions: dict[str, int], src: str = "<dict>") -> dict[str, int]:
    """The array at the operands' precision: ``array`` with the dims of the smallest
    ``[array_by_bits]`` key N such that ``precisions`` W and I are both at most N bits replaced
    (``array`` itself when no key covers them, or W / I are not set).

    Raises:
        ValueError: a key that is not a positive integer, an entry that is not a table of the
            array's dims with positive integers.
    """
    if not isinstance(table, dict):
        raise _bad(src, "array_by_bits", table, "a table of {bits = {dim = size}}, e.g. 8 = { D4 = 32 }")
    entries = {}
    for k, v in table.items():
        if not str(k).isdigit() or int(k) < 1:
            raise _bad(src, f"array_by_bits.{k}", v, "a key of operand bits (a positive integer)")
        if (not isinstance(v, dict) or not v or any(a not in array for a in v)
                or any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in v.values())):
            raise _bad(src, f"array_by_bits.{k}", v, f"a table of array dims from {list(array)} with positive integers")
        entries[int(k)] = v
    w, i = precisions.get("W"), precisions.get("I")
    if w is None or i is None:
        return dict(array)
    fit = [b for b in entries if max(w, i) <= b]
    return {**array, **entries[min(fit)]} if fit else dict(array)


def at_step_bits(acc: Any, layers: Any) -> Any:
    """``acc`` with the array of the narrowest ``[array_by_bits]`` entry that covers the W and I
    operands of every weight matmul in ``layers`` (`costmodel.workload.Layer`s, their bits as
    `costmodel.loopnest.reference.operand_bits` gives them: a step's ``weight_bits`` / ``act_bits``):
    an FP8 step on an H100 runs at twice the BF16 rate. ``acc`` itself when it has no such table,
    no weight matmul, or no entry covers them (the array only widens)."""
    import dataclasses

    from ..loopnest.reference import operand_bits
    table = getattr(acc, "array_by_bits", None)
    mats = [l for l in layers if getattr(l, "w_role", "weight") == "weight"]
    if not table or not mats:
        return acc
    bits = [operand_bits(l, acc) for l in mats]
    w, i = max(b["W"] for b in bits), max(b["I"] for b in bits)
    arr = array_for_bits(dict(acc.array), table, {"W": w, "I": i})
    return acc if arr == acc.array else dataclasses.replace(acc, array=arr)


def by_bits_table(d: dict[str, Any], arr: dict[str, int], precisions: dict[str, int], src: str):
    """(an accelerator TOML's ``[array_by_bits]`` table or None, its array at the operands'
    precision, `array_for_bits`).

    Raises:
        ValueError: as `array_for_bits`.
    """
    table = d.get("array_by_bits")
    if table is None:
        return None, arr
    return {str(k): dict(v) for k, v in table.items()}, array_for_bits(arr, table, precisions, src)


def gpu_tables(d: dict[str, Any], src: str, clock: float) -> tuple[Any, Any, str | None]:
    """An accelerator TOML's ``[gpu]`` (`GpuSpec`) and ``[power]`` (`PowerSpec`) tables and its
    ``interconnect`` name, each None when absent.

    Raises:
        ValueError: as `gpu_from_dict` and `power_from_dict`; an ``interconnect`` that is not a
            non-empty string.
    """
    gpu = gpu_from_dict(d["gpu"], src) if "gpu" in d else None
    power = power_from_dict(d["power"], src, clock) if "power" in d else None
    link = d.get("interconnect")
    if link is not None and (not isinstance(link, str) or not link):
        raise _bad(src, "interconnect", link, "the name of a bundled interconnect (costmodel.system.interconnect)")
    return gpu, power, link
