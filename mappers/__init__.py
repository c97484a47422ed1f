"""Search algorithms, one package per family; every mapper implements `mappers.base.Mapper`.

* `mappers.loop_order`: loop orderings of a fixed spatial unrolling (LPF multisets): ``loma``
  (exhaustive, sharded), ``salsa`` (simulated annealing), ``random`` (Timeloop-like).
* `mappers.fullspace`: the whole mapspace (tiling, order, unrolling): ``primitive_sa`` (CPEN 513),
  ``random5`` and ``hybrid`` (CoSA's baselines), ``cosa`` (CoSA's MIP on HiGHS).
* `mappers.npu`: tiled layers on Flexer's multi-NPU: ``flexer`` (out-of-order list scheduling),
  ``static`` (the best static loop order).
* `mappers.systolic`: ``deepopt`` (DeepOpt's LOS / FS over J x K systolic hardware points).

The registry below names every mapper once; each mapper's class says its ``kind``, ``version``,
``params`` and declared ``columns``. Mappers import `costmodel` only.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from mappers.base import KINDS, ExtraColumn

__all__ = ["MAPPER_NAMES", "get_mapper", "mapper_kind", "mappers_by_kind", "declared_columns"]

_REGISTRY = {"deepopt": ("mappers.systolic.deepopt", "DEEPOPT"),
             "loma": ("mappers.loop_order.loma", "LOMA"),
             "salsa": ("mappers.loop_order.salsa", "SALSA"),
             "random": ("mappers.loop_order.random", "RANDOM"),
             "primitive_sa": ("mappers.fullspace.primitive_sa", "PRIMITIVE_SA"),
             "random5": ("mappers.fullspace.baselines", "RANDOM5"),
             "hybrid": ("mappers.fullspace.baselines", "HYBRID"),
             "cosa": ("mappers.fullspace.cosa", "COSA"),
             "flexer": ("mappers.npu.flexer", "FLEXER"),
             "static": ("mappers.npu.static", "STATIC")}

#: Names of the mappers a campaign can use, in registry order.
MAPPER_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def get_mapper(name: str):
    """The mapper object (a `mappers.base.Mapper`) named ``name``.

    Raises:
        KeyError: unknown name (the message lists the known ones).
    """
    m = _LOADED.get(name)
    if m is None:
        if name not in _REGISTRY:
            raise KeyError(f"unknown mapper {name!r}; known: {list(MAPPER_NAMES)}")
        module, attr = _REGISTRY[name]
        m = _LOADED[name] = getattr(import_module(module), attr)
    return m


#: The mapper objects already imported (`get_mapper` is called once per problem by the engine).
_LOADED: dict[str, Any] = {}


def mapper_kind(name: str) -> str:
    """The kind of architecture mapper ``name`` maps (its ``kind``: one of `mappers.base.KINDS`).

    Raises:
        KeyError: unknown name.
    """
    return get_mapper(name).kind


def mappers_by_kind() -> dict[str, list[str]]:
    """Mapper names grouped by kind (`mappers.base.KINDS` order), registry order within a kind."""
    out: dict[str, list[str]] = {k: [] for k in KINDS}
    for name in MAPPER_NAMES:
        out[mapper_kind(name)].append(name)
    return out


def declared_columns(kinds: tuple[str, ...] | None = None) -> tuple[ExtraColumn, ...]:
    """The `ExtraColumn` declarations of every registered mapper (of ``kinds``, None = all), in
    registry order, each name once: the mapper-specific columns of the engine's row schema."""
    seen: dict[str, ExtraColumn] = {}
    for name in MAPPER_NAMES:
        m = get_mapper(name)
        if kinds is None or m.kind in kinds:
            for c in m.columns:
                seen.setdefault(c.name, c)
    return tuple(seen.values())
