"""The multi-NPU model of Flexer (Min, Kwon, Egger, CGO 2023): n NPU cores sharing a global buffer
in front of one DRAM channel, and the tilings of a layer on it.

* `NPUArch`: cores, global buffer bytes, DRAM bandwidth (bytes/cycle), a ``rows x cols`` PE array
  per core (32 x 32), clock (1 GHz), element bytes (data 1, partial sums 4 -- our defaults; the
  paper does not give them). Presets arch1..arch8 are Table 1 of the paper
  (``costmodel/presets/npu.toml``); `load_npu` reads a preset name or a TOML file path.
* `conv_cycles`: latency of one tiled convolution (tCONV) on one core, SCALE-Sim's weight-
  stationary fold model (Samajdar et al., "SCALE-Sim: Systolic CNN Accelerator Simulator",
  arXiv:1811.02883; the ws compute loop of ``scalesim/compute/systolic_compute_ws.py``): the
  R*S*C_t x K_t weight matrix is cut into ceil(R*S*C_t/rows) x ceil(K_t/cols) folds, and each fold
  streams T = OY_t*OX_t output pixels through the array in 2*rows + cols + T - 2 cycles; minus one
  for the first fold's overlap.
* `transfer_cycles`: ceil(bytes / bandwidth), one DRAM channel shared by all cores.
* `Tiling` / `tilings`: tile sizes of (OY, OX, C, K). Per dimension D the candidate sizes are
  D, ceil(D/2), ceil(D/4), ... down to a minimum (``min_spatial`` for OY/OX, ``min_channels`` for
  C/K) -- halving, so edge tiles are allowed (the last tile of a dimension may be smaller). A tiling is
  viable when one tCONV's input tile (with halo), weight tile and partial-sum output tile fit the
  buffer together and it has at most ``max_ops`` tCONVs (a bound on scheduling time; the paper
  enumerates "all viable tilings" without saying which).
"""

from __future__ import annotations

import itertools
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["NPUArch", "load_npu", "list_npus", "conv_cycles", "transfer_cycles", "Tiling", "tilings",
           "candidate_sizes", "tile_bytes"]

_PRESETS = Path(__file__).parent / "presets" / "npu.toml"


@dataclass(frozen=True)
class NPUArch:
    """A multi-NPU: ``cores`` PE arrays of ``rows`` x ``cols`` sharing ``buffer_bytes`` of global
    buffer; one DRAM channel of ``bandwidth`` bytes/cycle; clock in Hz; element sizes in bytes."""

    name: str
    cores: int
    buffer_bytes: int
    bandwidth: float
    rows: int = 32
    cols: int = 32
    clock_hz: float = 1e9
    data_bytes: int = 1
    psum_bytes: int = 4

    kind = "npu"  # class attribute: lets an engine tell this arch family apart

    def __post_init__(self) -> None:
        for f in ("cores", "buffer_bytes", "rows", "cols", "data_bytes", "psum_bytes"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"NPUArch {self.name!r}: {f} must be a positive integer, got {v!r}")
        if not self.bandwidth > 0 or not self.clock_hz > 0:
            raise ValueError(f"NPUArch {self.name!r}: bandwidth and clock_hz must be > 0")

    def with_(self, **changes) -> "NPUArch":
        from dataclasses import replace
        return replace(self, **changes)


def _from_dict(name: str, d: dict) -> NPUArch:
    d = dict(d)
    if "buffer_kib" in d:
        d["buffer_bytes"] = int(d.pop("buffer_kib") * 1024)
    d.pop("description", None)
    return NPUArch(name=d.pop("name", name), **d)


def list_npus() -> list[str]:
    """Names of the shipped presets (arch1..arch8)."""
    return list(tomllib.loads(_PRESETS.read_text()))


def load_npu(name_or_path: str | Path) -> NPUArch:
    """A preset by name (``"arch5"``) or a TOML file with the `NPUArch` fields at top level
    (``buffer_kib`` accepted for ``buffer_bytes``).

    Raises:
        KeyError: unknown preset name.
    """
    p = Path(str(name_or_path))
    if p.suffix == ".toml" and p.exists():
        return _from_dict(p.stem, tomllib.loads(p.read_text()))
    presets = tomllib.loads(_PRESETS.read_text())
    if str(name_or_path) not in presets:
        raise KeyError(f"unknown NPU preset {name_or_path!r}; known: {sorted(presets)}")
    return _from_dict(str(name_or_path), presets[str(name_or_path)])


def conv_cycles(R: int, S: int, C_t: int, K_t: int, T: int, rows: int = 32, cols: int = 32) -> int:
    """Cycles of one tCONV on a rows x cols weight-stationary array (SCALE-Sim ws fold model):
    ceil(R*S*C_t/rows) * ceil(K_t/cols) * (2*rows + cols + T - 2) - 1, T = output pixels."""
    return math.ceil(R * S * C_t / rows) * math.ceil(K_t / cols) * (2 * rows + cols + T - 2) - 1


def transfer_cycles(nbytes: float, bandwidth: float) -> int:
    """Cycles to move ``nbytes`` over a DRAM channel of ``bandwidth`` bytes/cycle."""
    return int(math.ceil(nbytes / bandwidth))


@dataclass(frozen=True, order=True)
class Tiling:
    """Tile sizes of OY, OX, C (per group) and K (per group)."""

    oy_t: int
    ox_t: int
    c_t: int
    k_t: int

    def counts(self, layer) -> tuple[int, int, int, int]:
        """Number of tiles along OY, OX, C, K."""
        return (math.ceil(layer.OY / self.oy_t), math.ceil(layer.OX / self.ox_t),
                math.ceil(layer.C / self.c_t), math.ceil(layer.K / self.k_t))

    def n_ops(self, layer) -> int:
        a, b, c, d = self.counts(layer)
        return a * b * c * d

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.oy_t, self.ox_t, self.c_t, self.k_t)


def candidate_sizes(D: int, minimum: int = 1) -> list[int]:
    """D, ceil(D/2), ceil(D/4), ... while >= ``minimum`` (D itself always), descending."""
    out: list[int] = []
    t = 1
    while True:
        s = math.ceil(D / t)
        if s < minimum and out:
            break
        if not out or s != out[-1]:
            out.append(s)
        if s == 1:
            break
        t *= 2
    return out


def tile_bytes(layer, arch: NPUArch, oy_t: int, ox_t: int, c_t: int, k_t: int) -> tuple[int, int, int]:
    """(input tile with halo, weight tile, partial-sum output tile) in bytes."""
    iy = layer.SY * (oy_t - 1) + layer.DY * (layer.FY - 1) + 1
    ix = layer.SX * (ox_t - 1) + layer.DX * (layer.FX - 1) + 1
    return (iy * ix * c_t * arch.data_bytes, layer.FY * layer.FX * c_t * k_t * arch.data_bytes,
            oy_t * ox_t * k_t * arch.psum_bytes)


def tilings(layer, arch: NPUArch, min_spatial: int = 1, min_channels: int = 8, max_ops: int = 512) -> list[Tiling]:
    """Viable tilings of ``layer`` on ``arch``, sorted (deterministic order): candidate sizes per
    dimension (see module doc), one tCONV's tiles fit the buffer, at most ``max_ops`` tCONVs."""
    cands = [candidate_sizes(layer.OY, min_spatial), candidate_sizes(layer.OX, min_spatial),
             candidate_sizes(layer.C, min_channels), candidate_sizes(layer.K, min_channels)]
    out = []
    for oy, ox, c, k in itertools.product(*cands):
        t = Tiling(oy, ox, c, k)
        if sum(tile_bytes(layer, arch, oy, ox, c, k)) > arch.buffer_bytes:
            continue
        if t.n_ops(layer) > max_ops:
            continue
        out.append(t)
    return sorted(out)
