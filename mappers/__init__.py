"""Search algorithms. Each mapper turns a problem into result rows (see `mappers.base`).

Registry: `get_mapper(name)`; `MAPPER_NAMES` lists what exists. Mappers import `costmodel` only.
"""

from __future__ import annotations

from importlib import import_module

__all__ = ["MAPPER_NAMES", "get_mapper"]

_REGISTRY = {"deepopt": ("mappers.deepopt", "DEEPOPT")}

#: Names of the mappers a campaign can use.
MAPPER_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def get_mapper(name: str):
    """The mapper object named ``name``.

    Raises:
        KeyError: unknown name (the message lists the known ones).
    """
    if name not in _REGISTRY:
        raise KeyError(f"unknown mapper {name!r}; known: {list(MAPPER_NAMES)}")
    module, attr = _REGISTRY[name]
    return getattr(import_module(module), attr)
