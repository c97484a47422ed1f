"""Mappings of one layer onto an accelerator: spatial unrolling, temporal loops, memory boundaries.

Terms as in ZigZag / LOMA / SALSA (Mei et al., IEEE TC 2021; Symons et al., AICAS 2021; Jung et al.):

* **Spatial unrolling** (`SpatialMapping`): per array dimension of the accelerator ("D1", "D2", ...)
  the loops unrolled over it, e.g. ``{"D1": (("OX", 14),), "D2": (("FY", 3), ("K", 4))}``. The
  product of the factors on one array dimension may not exceed its size.
* **Temporal mapping** (`TemporalMapping`): the temporal loops, **innermost first**, as
  ``(dim, factor)``. For each loop dimension d the temporal factors multiply to
  ``ceil(bound_d / spatial_d)`` where ``spatial_d`` is the spatial factor of d clipped to the layer
  (`SpatialMapping.fit`): a non-divisible unrolling pads the dimension (under-utilisation).
* **Memory-level boundaries** (`Mapping.boundaries`): for each operand ("W", "I", "O") and each of
  its memory levels (``arch.levels(op)``, innermost first) the number of temporal loops, counted
  from the innermost, that sit at or below that level. Non-decreasing; the top level (DRAM) holds
  all loops. Different operands may cut the same loop list at different places (*uneven* mapping,
  ZigZag); an *even* mapping cuts every operand of a shared memory at the same place
  (`Mapping.even`).

File format (JSON or TOML, read by `Mapping.from_dict`, written by `Mapping.to_dict`)::

    {
      "spatial":  {"D1": [["OX", 14]], "D2": [["FY", 3], ["K", 4]]},
      "temporal": [["FX", 3], ["C", 2], ["K", 4], ["OY", 14], ...],     # innermost first
      "boundaries": {"W": [1, 2, 9], "I": [2, 4, 9], "O": [0, 3, 5, 9]} # per level, innermost first
    }

``boundaries[op]`` may also be a table memory name -> count (``{"rf_64B_W": 1, ...}``), which is
resolved against the accelerator by `Mapping.resolve`. ``spatial`` may be omitted (the
accelerator's default unrolling is then used by the evaluators).
"""

from __future__ import annotations

import json
import numbers

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping as _Mapping

__all__ = ["SpatialMapping", "TemporalMapping", "Mapping", "MappingError", "prime_factors",
           "format_loop_nest", "OPERANDS", "RELEVANT", "SPATIAL_DIMS"]

#: The three operands of a convolution, in canonical order.
OPERANDS = ("W", "I", "O")

#: Loop dimensions relevant to each operand. I is *partially* relevant to OY/FY and OX/FX (through
#: IY = SY*(OY-1)+DY*(FY-1)+1); the models treat partial relevance as relevance (a change of any of
#: them changes the input tile).
RELEVANT: dict[str, frozenset[str]] = {
    "W": frozenset({"K", "C", "FY", "FX", "G"}),
    "I": frozenset({"B", "C", "OY", "OX", "FY", "FX", "G"}),
    "O": frozenset({"B", "K", "OY", "OX", "G"}),
}

SPATIAL_DIMS = ("B", "K", "C", "OY", "OX", "FY", "FX", "G")


class MappingError(ValueError):
    """A mapping that does not fit the layer or the accelerator; the message says why."""


def prime_factors(n: int) -> list[int]:
    """Prime factors of ``n`` in ascending order, with multiplicity (``prime_factors(12) == [2, 2, 3]``).

    ``prime_factors(1) == []``. Raises ValueError for n < 1.
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"prime_factors: n must be a positive integer, got {n!r}")
    n = int(n)
    out: list[int] = []
    p = 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def _pairs(seq: Iterable, what: str) -> tuple[tuple[str, int], ...]:
    out = []
    for item in seq:
        try:
            d, f = item
        except (TypeError, ValueError):
            raise MappingError(f"{what}: expected [dim, factor] pairs, got {item!r}") from None
        if d not in SPATIAL_DIMS:
            raise MappingError(f"{what}: unknown loop dimension {d!r}; known: {list(SPATIAL_DIMS)}")
        if isinstance(f, bool) or not isinstance(f, int) or f < 1:
            raise MappingError(f"{what}: factor of {d} must be a positive integer, got {f!r}")
        out.append((str(d), int(f)))
    return tuple(out)


@dataclass(frozen=True)
class SpatialMapping:
    """Spatial unrolling: array dimension -> tuple of (loop dim, factor).

    Example: ``SpatialMapping({"D1": (("OX", 14),), "D2": (("FY", 3), ("K", 4))})``.
    """

    dims: dict[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dims", {str(a): _pairs(v, f"spatial[{a!r}]") for a, v in dict(self.dims).items()})

    def factor(self, dim: str) -> int:
        """Total spatial factor of loop dimension ``dim`` over all array dims (unclipped)."""
        return math.prod(f for loops in self.dims.values() for d, f in loops if d == dim)

    def array_fanout(self, array_dim: str) -> int:
        """Product of the factors unrolled over ``array_dim``."""
        return math.prod(f for _, f in self.dims.get(array_dim, ()))

    def fit(self, layer) -> "SpatialMapping":
        """The unrolling clipped to the layer: each factor at most what is left of its dimension.

        Factors of a loop dim are taken in array-dim order; factor ``f`` of dim d becomes
        ``min(f, ceil(bound_d / product of the earlier clipped factors of d))``. A 3-wide FY unrolling
        on a layer with FY = 1 becomes 1; OX 14 on OX = 7 becomes 7; OX 14 on OX = 20 stays 14
        (then 2 temporal iterations cover 28 >= 20: under-utilisation).
        """
        done: dict[str, int] = {}
        out = {}
        for a, loops in self.dims.items():
            new = []
            for d, f in loops:
                bound = getattr(layer, d)
                left = -(-bound // done.get(d, 1))
                g = min(f, left)
                done[d] = done.get(d, 1) * g
                new.append((d, g))
            out[a] = tuple(new)
        return SpatialMapping(out)

    def temporal_bounds(self, layer) -> dict[str, int]:
        """Temporal bound of every loop dim after this (fitted) unrolling: ceil(bound / spatial)."""
        fitted = self.fit(layer)
        return {d: -(-getattr(layer, d) // fitted.factor(d)) for d in SPATIAL_DIMS}

    def to_dict(self) -> dict[str, list[list]]:
        """``{array dim: [[loop dim, factor], ...]}``, array dims in this unrolling's order."""
        return {a: [[d, f] for d, f in loops] for a, loops in self.dims.items()}

    @classmethod
    def from_dict(cls, d: _Mapping[str, Any]) -> "SpatialMapping":
        """The unrolling of `to_dict`'s form (a TOML ``[spatial]`` table, a mapping's ``spatial``).

        Raises:
            MappingError: ``d`` is not a table of array dim -> [[loop dim, factor], ...].
        """
        if not isinstance(d, _Mapping):
            raise MappingError(f"spatial: expected a table array dim -> [[dim, factor], ...], got {d!r}")
        try:
            return cls({a: tuple(tuple(x) for x in v) for a, v in d.items()})
        except TypeError:
            raise MappingError(f"spatial: expected a table array dim -> [[dim, factor], ...], got {d!r}") from None

    def to_json(self) -> str:
        """The one text form of an unrolling, from the spatial candidate a work unit carries to the
        ``spatial`` column of a row: compact JSON of `to_dict`, e.g.
        ``{"D1":[["OX",14]],"D2":[["FY",3],["K",4]]}``, array dims in this unrolling's order (the
        order `fit` clips in, so `from_json` gives back an unrolling that fits every layer the same)."""
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "SpatialMapping":
        """The unrolling of `to_json`'s text.

        Raises:
            MappingError: ``text`` is not JSON of `to_dict`'s form.
        """
        try:
            d = json.loads(text)
        except (TypeError, ValueError) as e:
            raise MappingError(f"spatial: not JSON of {{array dim: [[dim, factor], ...]}}: {text!r} ({e})") from None
        return cls.from_dict(d)


@dataclass(frozen=True)
class TemporalMapping:
    """Temporal loops, innermost first, each (loop dim, factor)."""

    loops: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "loops", _pairs(self.loops, "temporal"))

    def __len__(self) -> int:
        return len(self.loops)

    def __iter__(self):
        return iter(self.loops)

    def dim_products(self) -> dict[str, int]:
        """Product of the temporal factors of each loop dim (1 where absent)."""
        out = {d: 1 for d in SPATIAL_DIMS}
        for d, f in self.loops:
            out[d] *= f
        return out


@dataclass(frozen=True)
class Mapping:
    """A complete mapping: spatial unrolling, temporal loops, per-operand memory-level boundaries.

    ``boundaries[op][l]`` = number of temporal loops (from the innermost) at or below the l-th
    memory level of operand ``op`` (``arch.levels(op)[l]``). ``spatial`` None = the accelerator's
    default unrolling.
    """

    spatial: SpatialMapping | None
    temporal: TemporalMapping
    boundaries: dict[str, tuple[int, ...]]

    def __post_init__(self) -> None:
        if not isinstance(self.temporal, TemporalMapping):
            object.__setattr__(self, "temporal", TemporalMapping(tuple(self.temporal)))
        if self.spatial is not None and not isinstance(self.spatial, SpatialMapping):
            object.__setattr__(self, "spatial", SpatialMapping(dict(self.spatial)))
        b: dict[str, Any] = {}   # tuples, or tables by memory name until `resolve`
        for op, v in dict(self.boundaries).items():
            if op not in OPERANDS:
                raise MappingError(f"boundaries: unknown operand {op!r}; expected one of {OPERANDS}")
            if isinstance(v, _Mapping):
                b[op] = dict(v)   # memory name -> count; resolved against an accelerator later
                continue
            vals = tuple(v)
            for x in vals:
                if isinstance(x, bool) or not isinstance(x, int):
                    raise MappingError(f"boundaries[{op!r}]: expected integers, got {x!r}")
            b[op] = vals
        object.__setattr__(self, "boundaries", b)

    @classmethod
    def even(cls, spatial: SpatialMapping | None, temporal, memory_boundaries: _Mapping[str, int], arch) -> "Mapping":
        """An even mapping: one boundary per physical memory, shared by all operands it serves.

        ``memory_boundaries``: memory name -> number of temporal loops at or below it; the top
        memory may be omitted (it holds all loops). Raises MappingError for unknown memory names.
        """
        temporal = temporal if isinstance(temporal, TemporalMapping) else TemporalMapping(tuple(temporal))
        names = {m.name for m in arch.memories}
        for k in memory_boundaries:
            if k not in names:
                raise MappingError(f"even boundaries: unknown memory {k!r}; known: {sorted(names)}")
        b = {}
        for op in OPERANDS:
            levels = arch.levels(op)
            b[op] = tuple(len(temporal) if i == len(levels) - 1 else int(memory_boundaries.get(m.name, 0))
                          for i, m in enumerate(levels))
        return cls(spatial, temporal, b)

    def resolve(self, arch) -> "Mapping":
        """Boundaries given as memory name -> count turned into per-level tuples for ``arch``."""
        b = {}
        for op, v in self.boundaries.items():
            if isinstance(v, dict):
                levels = arch.levels(op)
                names = [m.name for m in levels]
                for k in v:
                    if k not in names:
                        raise MappingError(f"boundaries[{op!r}]: memory {k!r} does not serve {op}; "
                                           f"its levels are {names}")
                b[op] = tuple(len(self.temporal) if i == len(levels) - 1 else int(v.get(n, 0))
                              for i, n in enumerate(names))
            else:
                b[op] = v
        return Mapping(self.spatial, self.temporal, b)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (see the module docstring for the format)."""
        out: dict[str, Any] = {}
        if self.spatial is not None:
            out["spatial"] = self.spatial.to_dict()
        out["temporal"] = [[d, f] for d, f in self.temporal.loops]
        out["boundaries"] = {op: (dict(v) if isinstance(v, dict) else list(v)) for op, v in self.boundaries.items()}
        return out

    @classmethod
    def from_dict(cls, d: _Mapping[str, Any]) -> "Mapping":
        """Inverse of `to_dict`. Raises MappingError naming the bad key."""
        if not isinstance(d, _Mapping):
            raise MappingError(f"mapping: expected a table, got {type(d).__name__}")
        unknown = set(d) - {"spatial", "temporal", "boundaries"}
        if unknown:
            raise MappingError(f"mapping: unknown key(s) {sorted(unknown)}; expected spatial, temporal, boundaries")
        if "temporal" not in d or "boundaries" not in d:
            raise MappingError("mapping: keys 'temporal' and 'boundaries' are required")
        sp = SpatialMapping.from_dict(d["spatial"]) if d.get("spatial") is not None else None
        tm = TemporalMapping(tuple(tuple(x) for x in d["temporal"]))
        if not isinstance(d["boundaries"], _Mapping):
            raise MappingError(f"mapping: 'boundaries' must be a table operand -> list, got {d['boundaries']!r}")
        bnd: dict[str, Any] = {op: (dict(v) if isinstance(v, _Mapping) else tuple(v))  # as __post_init__'s
                               for op, v in d["boundaries"].items()}
        return cls(sp, tm, bnd)

    def check(self, layer, arch) -> None:
        """Structural validation against a layer and an accelerator (not capacity).

        Raises:
            MappingError: spatial fan-out greater than an array dim, unknown array dim, temporal
                factors not multiplying to ceil(bound / spatial) for some dim, or malformed
                boundaries (wrong count of levels, decreasing, out of range, top level not all).
        """
        sp = self.spatial if self.spatial is not None else arch.spatial
        for a in sp.dims:
            if a not in arch.array:
                raise MappingError(f"spatial: unknown array dim {a!r}; {arch.name} has {list(arch.array)}")
            if sp.array_fanout(a) > arch.array[a]:
                raise MappingError(f"spatial fan-out {sp.array_fanout(a)} on {a} exceeds the array dim "
                                   f"size {arch.array[a]}")
        need = sp.temporal_bounds(layer)
        have = self.temporal.dim_products()
        for dm in SPATIAL_DIMS:
            if have[dm] != need[dm]:
                raise MappingError(f"temporal factors of {dm} multiply to {have[dm]}, expected {need[dm]} "
                                   f"(= ceil({getattr(layer, dm)} / spatial {sp.fit(layer).factor(dm)}))")
        n = len(self.temporal)
        for op in OPERANDS:
            levels = arch.levels(op)
            b = self.boundaries.get(op)
            if b is None:
                raise MappingError(f"boundaries: operand {op} missing")
            if isinstance(b, dict):
                raise MappingError("boundaries given by memory name: call Mapping.resolve(arch) first")
            if len(b) != len(levels):
                raise MappingError(f"boundaries[{op!r}]: {len(b)} values for {len(levels)} levels "
                                   f"{[m.name for m in levels]}")
            prev = 0
            for m, x in zip(levels, b):
                if x < prev or x > n:
                    raise MappingError(f"boundaries[{op!r}]: {list(b)} must be non-decreasing within [0, {n}]")
                prev = x
            if b[-1] != n:
                raise MappingError(f"boundaries[{op!r}]: the top level {levels[-1].name} must hold all {n} loops, "
                                   f"got {b[-1]}")


def format_loop_nest(mapping: Mapping, layer, arch) -> str:
    """The mapping as a loop nest in the papers' style, outermost loop first.

    Each temporal loop line names, per operand, the memory level it is allocated to; the spatial
    unrolling follows as ``parfor`` lines. Example line::

        for K in [0, 4):                 W: sram_64KB   I: sram_1M   O: sram_8KB
    """
    mapping = mapping.resolve(arch)
    sp = mapping.spatial if mapping.spatial is not None else arch.spatial
    loops = mapping.temporal.loops
    lines = [f"# {layer.name} on {arch.name}  (temporal loops outermost first)"]
    width = 0
    body = []
    for depth, i in enumerate(reversed(range(len(loops)))):
        d, f = loops[i]
        where = []
        for op in OPERANDS:
            levels = arch.levels(op)
            b = mapping.boundaries.get(op, ())
            lvl = next((levels[j].name for j, x in enumerate(b) if i < x), levels[-1].name)
            where.append(f"{op}: {lvl}")
        text = "  " * depth + f"for {d} in [0, {f}):"
        width = max(width, len(text))
        body.append((text, "   ".join(where)))
    depth = len(loops)
    for a, sl in sp.fit(layer).dims.items():
        for d, f in sl:
            text = "  " * depth + f"parfor {d} in [0, {f}):"
            width = max(width, len(text))
            body.append((text, f"({a})"))
    for text, note in body:
        lines.append(f"{text:<{width + 2}} {note}")
    return "\n".join(lines)
