"""Our NCCL all-reduce (`costmodel.system.nccl`) against measured A100 all-reduces.

Three measured sets (nothing is fitted to them), each point costed with `nccl_collective`:

* ``vidur_dgx``: `tests/data/vidur_a100/all_reduce_dgx.csv`, an A100 DGX (8 x A100 80GB SXM4,
  NVSwitch), columns ``gpus, devices_per_node, bytes, all_reduce_ms``; 2 KiB .. 64 MiB, 994 sizes; the
  median CUDA-kernel time of 11 back-to-back all-reduces (Vidur's profiler; `SOURCE.md` there). Ours on
  ``nvlink3`` with ``devices_per_node`` GPUs per node (the rows across nodes cross ``ib_hdr``).
* ``vidur_pairwise``: `all_reduce_pairwise_nvlink.csv`, 4 x A100 80GB PCIe with NVLink bridges between
  pairs (2 and 4 ranks); ours on ``nvlink3_bridge`` (4 ranks cross PCIe Gen4).
* ``llmcompass``: `tests/data/llmcompass_a100/allreduce_A100.csv`, 4 A100 SXM over NVLink, 8 B .. 16 GiB,
  the median wall time of one call + synchronisation through PyTorch; ours on ``nvlink3``.

`points` gives every point, `summarize` per set and GPU count: points, MAPE, the largest error, points
more than 15% off, and per size band (`BANDS`) the mean of ours and of the measured times. `decompose`
splits a band's miss into its two measured parts: the least-squares line of the measured times against
the bytes (its intercept: a fixed time per all-reduce, us; its slope as a bus bandwidth, 2 (p - 1) / p x
bytes / time, GB/s) beside the same line through ours (NCCL's latency and bandwidth of its choices).

Errors: FileNotFoundError when a CSV is absent; ValueError for a malformed row.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from .interconnect import interconnect
from .nccl import nccl_collective

__all__ = ["DATA", "BANDS", "Point", "Summary", "Line", "points", "summarize", "decompose"]

#: The repository's measured data (tests/data).
DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
#: Size bands (label, lowest bytes, highest bytes excluded).
BANDS = (("< 64 KiB", 0, 64 << 10), ("64 KiB-1 MiB", 64 << 10, 1 << 20), ("1-16 MiB", 1 << 20, 16 << 20),
         (">= 16 MiB", 16 << 20, float("inf")))


@dataclass(frozen=True)
class Point:
    """One measured all-reduce: ``set``, ``gpus``, ``per_node`` (GPUs per node), ``bytes``,
    ``measured_s`` and ``ours_s`` (s), NCCL's ``algorithm`` / ``protocol`` for it."""

    set: str
    gpus: int
    per_node: int
    bytes: int
    measured_s: float
    ours_s: float
    algorithm: str
    protocol: str

    @property
    def error(self) -> float:
        """(ours - measured) / measured."""
        return (self.ours_s - self.measured_s) / self.measured_s


@dataclass(frozen=True)
class Summary:
    """One set at one GPU count: ``n`` points, ``mape`` and ``max_error`` (fractions, absolute),
    ``over_15`` points more than 15% off, ``bands``: (label, points, mean ours s, mean measured s, MAPE)."""

    set: str
    gpus: int
    per_node: int
    n: int
    mape: float
    max_error: float
    over_15: int
    bands: tuple[tuple[str, int, float, float, float], ...]


def _ours(name: str, gpus: int, per_node: int, nbytes: int, set_: str, measured: float) -> Point:
    net = interconnect(name)
    c = nccl_collective("all_reduce", nbytes, gpus, net, per_node if per_node < gpus else None)
    return Point(set_, gpus, per_node, nbytes, measured, c.time_us * 1e-6, c.algorithm, c.protocol)


def _vidur(path: Path, set_: str, net: str) -> list[Point]:
    out = []
    with path.open() as f:
        for row in csv.DictReader(f):
            try:
                g, d, b = int(row["gpus"]), int(row["devices_per_node"]), int(row["bytes"])
                ms = float(row["all_reduce_ms"])
            except (KeyError, ValueError) as e:
                raise ValueError(f"{path}: row {row!r}: {e}") from None
            out.append(_ours(net, g, d, b, set_, ms * 1e-3))
    return out


def _llmcompass(path: Path) -> list[Point]:
    out = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        try:
            b, us = line.split(",")
            out.append(_ours("nvlink3", 4, 4, int(b), "llmcompass", float(us) * 1e-6))
        except ValueError as e:
            raise ValueError(f"{path}: line {line!r}: {e}") from None
    return out


def points(data: Path = DATA) -> list[Point]:
    """Every measured point of the three sets with ours (module docstring).

    Raises:
        FileNotFoundError: a CSV is absent. ValueError: a malformed row.
    """
    return (_vidur(data / "vidur_a100" / "all_reduce_dgx.csv", "vidur_dgx", "nvlink3")
            + _vidur(data / "vidur_a100" / "all_reduce_pairwise_nvlink.csv", "vidur_pairwise", "nvlink3_bridge")
            + _llmcompass(data / "llmcompass_a100" / "allreduce_A100.csv"))


def _mape(pts: list[Point]) -> float:
    return sum(abs(p.error) for p in pts) / len(pts) if pts else 0.0


def summarize(pts: list[Point]) -> list[Summary]:
    """Per (set, gpus, per_node), in the order first met (module docstring)."""
    groups: dict[tuple[str, int, int], list[Point]] = {}
    for p in pts:
        groups.setdefault((p.set, p.gpus, p.per_node), []).append(p)
    out = []
    for (set_, g, d), grp in groups.items():
        bands = []
        for label, lo, hi in BANDS:
            sub = [p for p in grp if lo <= p.bytes < hi]
            if sub:
                bands.append((label, len(sub), sum(p.ours_s for p in sub) / len(sub),
                              sum(p.measured_s for p in sub) / len(sub), _mape(sub)))
        out.append(Summary(set_, g, d, len(grp), _mape(grp), max(abs(p.error) for p in grp),
                           sum(abs(p.error) > 0.15 for p in grp), tuple(bands)))
    return out


@dataclass(frozen=True)
class Line:
    """A band's least-squares line ``time = intercept + bytes / (bus GB/s x p / (2 (p - 1)))`` for the
    measured times and for ours: ``intercept_us`` (us), ``busbw_gbps`` (GB/s; inf when flat or falling)."""

    set: str
    gpus: int
    per_node: int
    band: str
    n: int
    measured_intercept_us: float
    measured_busbw_gbps: float
    ours_intercept_us: float
    ours_busbw_gbps: float


def _fit(xs: list[float], ys: list[float], p: int) -> tuple[float, float]:
    """(intercept us, bus GB/s) of the least-squares line of ``ys`` (s) over ``xs`` (bytes)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    bus = 2 * (p - 1) / p / slope / 1e9 if slope > 0 else float("inf")
    return (my - slope * mx) * 1e6, bus


def decompose(pts: list[Point]) -> list[Line]:
    """Per (set, gpus, per_node, band) with at least 3 sizes: the measured line and ours (module
    docstring)."""
    groups: dict[tuple[str, int, int, str], list[Point]] = {}
    for p in pts:
        band = next(label for label, lo, hi in BANDS if lo <= p.bytes < hi)
        groups.setdefault((p.set, p.gpus, p.per_node, band), []).append(p)
    out = []
    for (set_, g, d, band), grp in groups.items():
        if len({p.bytes for p in grp}) < 3:
            continue
        xs = [float(p.bytes) for p in grp]
        mi, mb = _fit(xs, [p.measured_s for p in grp], g)
        oi, ob = _fit(xs, [p.ours_s for p in grp], g)
        out.append(Line(set_, g, d, band, len(grp), mi, mb, oi, ob))
    return out
