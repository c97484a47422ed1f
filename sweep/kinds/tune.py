"""Kind ``tune``: `sweep tune`'s tuning of a mapper's annealing schedule (`sweep.config.tune_campaign`,
`sweep.tune.driver` on `sweep.study`); `sweep.reports.tune` reports the study. A tuning campaign
is its own file type (``[space]`` and ``[training]`` tables) run by its own command, so this kind
answers only what `sweep validate`, `sweep report` and the loaders ask: which files are its own,
how to load one, how to describe it, which report reads its directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sweep.config.tune_campaign import load_tune_campaign
from sweep.config.validation import is_tune_campaign
from sweep.kinds.base import CampaignKind

__all__ = ["TuneKind"]


class TuneKind(CampaignKind):
    """A study over the schedule parameters: ``rows`` (one per finished trial), plus the reference
    optima and the held-out comparison as single Parquet files beside them."""

    name = "tune"
    report_module = "sweep.reports.tune"
    html_module = "sweep.reports.html.tune"
    tables = ("rows",)

    def matches(self, data: dict[str, Any]) -> bool:
        return is_tune_campaign(data)

    def load(self, path: Path, output: Path | None = None) -> Any:
        """The validated `sweep.config.tune_campaign.TuneCampaign` of ``path``.

        Raises:
            CampaignError: every problem of the file, each with key and value.
        """
        return load_tune_campaign(path, output)

    def describe_valid(self, campaign: Any, path: Path) -> str:
        from sweep.common.fmt import words
        t = campaign
        return (f"{path}: valid tuning campaign. {t.mapper} on {t.arch}, {len(t.space)} tuned parameter(s) "
                f"({words(s.name for s in t.space)}), budget {t.budget} per (layer, seed), training {t.training[0]} "
                f"x {len(t.training[1])} layer(s) x {len(t.seeds)} seed(s), held out {t.heldout[0]} x "
                f"{len(t.heldout[1])}, {t.trials} trial(s) -> {t.output}; run it with `sweep tune {path}`\n"
                "  run time: no estimate for kind tune (its pruner stops trials early, after a number of "
                "layers no parameter fixes)")
