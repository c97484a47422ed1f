"""Kind ``systolic``: DeepOpt's optimal hardware allocation over a grid of J x K systolic points
(`mappers.systolic.deepopt`, `costmodel.systolic`); `sweep.reports.systolic` reports it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from mappers.systolic.deepopt import PMS
from sweep.campaigns.archspace import parse_points
from sweep.campaigns.validation import Bad
from sweep.engine.tasks import systolic_tasks
from sweep.kinds.base import CampaignKind

__all__ = ["SystolicKind"]


class SystolicKind(CampaignKind):
    """Hardware points (preset, file, explicit points or a constrained grid) x networks, every
    DeepOpt PM (`mappers.systolic.deepopt.PMS`) by default; a task is one chunk of
    ``run.chunk_points`` points for every network (the model is vectorised over points)."""

    name = "systolic"
    arch_kind = "systolic"
    mapper_kind = "systolic"
    objectives = tuple(PMS)
    default_objectives = tuple(PMS)
    report_keys = ("fs_point", "worst_case_window")
    report_module = "sweep.reports.systolic"
    arch_help = "DeepOpt's systolic grid, `sweep run` only"
    map_note = "; it runs in `sweep run` campaigns only"
    tables = ("layers", "rows")

    def parse_architectures(self, value: Any, base_dir: Path, bad: Bad) -> Any:
        return parse_points(value, base_dir, bad)

    def expand(self, campaign: Any) -> Iterator[Any]:
        return systolic_tasks(campaign)

    def count(self, campaign: Any) -> int:
        """(mappers) x (point chunks): arithmetic, no task is built."""
        n, step = len(campaign.architectures), campaign.run.chunk_points
        return len(campaign.mappers) * max(1, -(-n // step))

    def describe_archs(self, campaign: Any) -> str:
        return f"{len(campaign.architectures):,} hardware point(s)"
