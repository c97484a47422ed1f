"""What the two kinds that map named architectures layer by layer share (``loopnest``, ``npu``):
an ``[architectures]`` of presets and files (`sweep.config.archspace.parse_archset`), tasks of
(unique layer x architecture x mapper x objective x seed) problems' work units
(`sweep.engine.layer_tasks`), and the loop-nest kernel's warm-up (also used by ``archsearch``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator

from sweep.config.archspace import parse_archset
from sweep.config.validation import Bad
from sweep.engine.layer_tasks import LayerRules, count_layer_tasks, expand_layers
from sweep.kinds.base import CampaignKind

__all__ = ["LayerKind", "compile_kernel"]


class LayerKind(CampaignKind):
    """A kind whose campaigns map every unique layer of the networks on each named architecture
    (`sweep.engine.layer_tasks`); tasks write ``problems`` (network/layer aliases) and ``rows``.

    Attributes:
        what: what one architecture is called in messages ("accelerator").
        spatial_override: whether ``[architectures] spatial`` is allowed.
        rules: how problems are built (`sweep.engine.layer_tasks.LayerRules`).
        arch_type: the architecture class its mappers take (`sweep map` picks the kind by it).
    """

    what: ClassVar[str]
    spatial_override: ClassVar[bool] = False
    rules: ClassVar[LayerRules]
    report_keys = ("baseline", "network")
    tables = ("problems", "rows")

    def catalog(self) -> tuple[Callable[[], list[str]], Callable[[Any], Any]]:
        """(list the presets, load a preset name or a file path) of this kind's architectures."""
        raise NotImplementedError

    def arch_type(self) -> type:
        """The class of this kind's architectures."""
        raise NotImplementedError

    def parse_architectures(self, value: Any, base_dir: Path, bad: Bad) -> Any:
        if not isinstance(value, dict):
            bad("architectures", value, "required: a table with presets and/or files")
            return None
        list_presets, load = self.catalog()
        return parse_archset(value, base_dir, bad, list_presets, load, self.what, self.spatial_override)

    def expand(self, campaign: Any) -> Iterator[Any]:
        return expand_layers(campaign, self.rules)

    def count(self, campaign: Any) -> int:
        return count_layer_tasks(campaign, self.rules)

    def estimate(self, campaign: Any) -> Any:
        """Every task's units, each as its mapper's parameters say (`sweep.kinds.estimate`)."""
        from sweep.kinds.estimate import Estimate, units_seconds
        est = Estimate()
        for task in self.expand(campaign):
            est.add(*units_seconds((u.problem, u.unit) for u in task.units))
        return est


def compile_kernel(layer: Any, arch: Any, spatial: Any) -> None:
    """Compile (or load from the on-disk cache) the loop-nest evaluator's kernel once in the driver
    by evaluating one ordering of ``layer`` on ``arch``, so Ray workers starting together load it
    instead of each compiling it; on a cold cache it says so on stderr (`sweep.common.notice`). Never
    raises: a task reports real errors itself."""
    from sweep.common.notice import compile_notice
    try:
        import numpy as np

        from costmodel.loopnest.ordering import OrderingEvaluator
        with compile_notice(arch):  # a cold cache says so (`sweep.common.notice`)
            ev = OrderingEvaluator(layer, arch, spatial)
            ev.evaluate(np.repeat(np.arange(len(ev.counts)), ev.counts)[None, :])
    except Exception:  # noqa: BLE001 - a warm-up only
        pass
