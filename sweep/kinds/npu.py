"""Kind ``npu``: layers scheduled on Flexer's multi-NPU architectures (`costmodel.npu`) by Flexer
and the best static schedule; `sweep.reports.npu` compares them. These mappers have no energy
model: rows store NaN energy, JSON null."""

from __future__ import annotations

from typing import Any, Callable

from sweep.engine.layer_tasks import LayerRules
from sweep.kinds.layers import LayerKind

__all__ = ["NPUKind", "NPU_OBJECTIVES"]

#: Objectives of multi-NPU (Flexer) campaigns: latency (cycles) x transferred bytes, latency, bytes.
NPU_OBJECTIVES = ("latency_bytes", "latency", "bytes")


class NPUKind(LayerKind):
    """Flexer's presets arch1..arch8 or TOML files; the objective is also the mappers' ``metric``
    parameter (the schedule's figure of merit)."""

    name = "npu"
    arch_kind = "npu"
    mapper_kind = "npu"
    objectives = NPU_OBJECTIVES
    report_keys = ("baseline", "mapper", "network")
    report_module = "sweep.reports.npu"
    html_module = "sweep.reports.html.npu"
    arch_help = "the multi-NPU archs arch1..arch8"
    what = "multi-NPU architecture"
    rules = LayerRules(model=None, objective_param="metric", hints=False)
    energy_model = False

    def catalog(self) -> tuple[Callable[[], list[str]], Callable[[Any], Any]]:
        from costmodel.npu import list_npus, load_npu
        return list_npus, load_npu

    def arch_type(self) -> type:
        from costmodel.npu import NPUArch
        return NPUArch
