"""Search algorithms. Each mapper turns a problem into result rows (see `mappers.base`).

Registry: `get_mapper(name)`; `MAPPER_NAMES` lists what exists. Mappers import `costmodel` only.
"""

from __future__ import annotations

from importlib import import_module

__all__ = ["MAPPER_NAMES", "get_mapper", "mapper_kind"]

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

#: What each mapper maps: "systolic" (DeepOpt hardware points), "npu" (one layer on Flexer's
#: multi-NPU `costmodel.npu.NPUArch`) or "loopnest" (one layer on an `costmodel.loopnest.arch.Accelerator`).
#: Unlisted mappers are loop-nest mappers.
_KIND = {"deepopt": "systolic", "flexer": "npu", "static": "npu"}

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


def mapper_kind(name: str) -> str:
    """"systolic", "loopnest" or "npu": the kind of architecture mapper ``name`` maps."""
    return _KIND.get(name, "loopnest")
