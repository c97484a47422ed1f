"""Spatial-unrolling hints: which layer dims each array dim of an accelerator may unroll.

A hint describes what the operational array's interconnect supports, not one unrolling: for each
array dim (``D1``, ``D2``, ...) the loop dims it may unroll, how many of them it may unroll at once
(*mixed* unrolling, e.g. Eyeriss's FY x K on one axis) and the lowest spatial utilisation worth
trying. The mappers turn it into concrete `SpatialMapping` candidates per layer
(`mappers.spatial.spatial_candidates`). The idea and the default of one dim per array dim follow
ZigZag's ``spatial_mapping_hint`` (Mei et al., IEEE TC 2021; ZigZag 3.9.1 mapping YAMLs, whose
mixed generation is off unless enabled); Timeloop expresses the same with per-level spatial factor
and permutation constraints (Parashar et al., ISPASS 2019).

TOML (an accelerator's ``[spatial_hint]`` table, beside or instead of ``[spatial]``)::

    [spatial_hint]
    D1 = ["K", "C"]          # array dim -> loop dims it may unroll (B, K, C, OY, OX, FY, FX, G)
    D2 = ["OX", "OY"]
    max_dims = 2             # optional: loop dims at once per array dim (int, or {D1 = 1, D2 = 2}); default 1
    min_utilization = 0.25   # optional: drop unrollings below this spatial utilisation (0..1); default 0

An array dim the hint does not name may unroll nothing (it stays at factor 1).

Errors: `SpatialHint.from_dict` raises ValueError naming the key (``spatial_hint.D1``, ...) and
the bad value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from .mapping import SPATIAL_DIMS

__all__ = ["SpatialHint"]

_OPTIONS = ("max_dims", "min_utilization")


@dataclass(frozen=True)
class SpatialHint:
    """Allowed spatial unrollings of an operational array.

    Attributes:
        dims: array dim -> the loop dims it may unroll, in the order given (array dims in the
            accelerator's order; an array dim absent here unrolls nothing).
        max_dims: array dim -> how many distinct loop dims it may unroll at once (>= 1).
        min_utilization: lowest spatial utilisation kept, in [0, 1] (MACs / (PEs x temporal
            iterations), `mappers.spatial`).
    """

    dims: dict[str, tuple[str, ...]]
    max_dims: dict[str, int] = field(default_factory=dict)
    min_utilization: float = 0.0

    def allowed(self, array_dim: str) -> tuple[str, ...]:
        """Loop dims ``array_dim`` may unroll (empty: none)."""
        return self.dims.get(array_dim, ())

    def max_mixed(self, array_dim: str) -> int:
        """How many loop dims ``array_dim`` may unroll at once (default 1)."""
        return self.max_dims.get(array_dim, 1)

    def to_dict(self) -> dict[str, Any]:
        """The TOML-shaped table (inverse of `from_dict`)."""
        d: dict[str, Any] = {a: list(v) for a, v in self.dims.items()}
        if self.max_dims:
            d["max_dims"] = dict(self.max_dims)
        if self.min_utilization:
            d["min_utilization"] = self.min_utilization
        return d

    def describe(self) -> str:
        """One line, e.g. ``D1: K|C (<= 2 at once); D2: OX|OY``."""
        parts = []
        for a, v in self.dims.items():
            m = self.max_mixed(a)
            parts.append(f"{a}: {'|'.join(v)}" + (f" (<= {m} at once)" if m > 1 else ""))
        s = "; ".join(parts)
        return s + (f"; utilization >= {self.min_utilization:g}" if self.min_utilization else "")

    @classmethod
    def from_dict(cls, d: Any, array: Mapping[str, int], src: str = "<dict>") -> "SpatialHint":
        """Read a ``[spatial_hint]`` table for an array with dims ``array`` (name -> size).

        Raises:
            ValueError: ``"{src}: spatial_hint.<key> = <value>: expected ..."`` for an unknown array
                dim, an unknown or repeated loop dim, an empty list, a bad ``max_dims`` or
                ``min_utilization``, or a hint naming no array dim.
        """
        def bad(key: str, value: Any, expected: str) -> ValueError:
            return ValueError(f"{src}: spatial_hint.{key} = {value!r}: expected {expected}")

        if not isinstance(d, Mapping):
            raise ValueError(f"{src}: spatial_hint = {d!r}: expected a table such as {{D1 = [\"K\", \"C\"]}}")
        dims: dict[str, tuple[str, ...]] = {}
        for a, v in d.items():
            if a in _OPTIONS:
                continue
            if a not in array:
                raise bad(a, v, f"an array dim of this accelerator ({list(array)}) or one of {list(_OPTIONS)}")
            if (not isinstance(v, list) or not v or any(x not in SPATIAL_DIMS for x in v)
                    or len(set(v)) != len(v)):
                raise bad(a, v, f"a non-empty list of distinct loop dims from {list(SPATIAL_DIMS)}")
        for a in array:  # accelerator order, not the table's
            if a in d:
                dims[a] = tuple(str(x) for x in d[a])
        if not dims:
            raise ValueError(f"{src}: spatial_hint = {dict(d)!r}: expected at least one array dim "
                             f"({list(array)}) with the loop dims it may unroll")
        max_dims: dict[str, int] = {}
        raw = d.get("max_dims", 1)
        if isinstance(raw, Mapping):
            for a, v in raw.items():
                if a not in dims:
                    raise bad(f"max_dims.{a}", v, f"an array dim the hint names ({list(dims)})")
                if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                    raise bad(f"max_dims.{a}", v, "a positive integer")
                max_dims[a] = int(v)
        elif isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
            raise bad("max_dims", raw, "a positive integer or a table {array dim = positive integer}")
        else:
            max_dims = {a: int(raw) for a in dims} if raw != 1 else {}
        max_dims = {a: min(m, len(dims[a])) for a, m in max_dims.items() if min(m, len(dims[a])) > 1}
        u = d.get("min_utilization", 0.0)
        if (isinstance(u, bool) or not isinstance(u, (int, float)) or not math.isfinite(u)
                or not 0.0 <= u <= 1.0):
            raise bad("min_utilization", u, "a number in [0, 1]")
        return cls(dims, max_dims, float(u))
