"""Kind ``tune``: `sweep tune`'s tuning of a mapper's annealing schedule (`sweep.config.tune_campaign`);
`sweep.reports.tune` reports the study. A tuning campaign is its own file type (``[space]`` and
``[training]`` tables) run by its own command; this kind answers what `sweep validate`, `sweep
report` and the loaders ask (which files are its own, how to load one, how to describe it, which
report reads its directory) and owns the study loop (`TuneKind.run_study`: `sweep.tune.driver` on
`sweep.study`), as the architecture search's kind owns its own."""

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

    def runs_study(self, campaign: Any) -> bool:
        """A tuning campaign is always an Optuna study."""
        return True

    def run_study(self, campaign: Any, summary: Any = None, *, resume: bool, executor: str, address: str | None,
                  progress: Any = None, flush: Any = None, trials: int | None = None, parallel: int | None = None,
                  num_cpus: int | None = None) -> Any:
        """Run the tuning study of ``campaign`` (a `sweep.config.tune_campaign.TuneCampaign`) until it
        holds ``trials`` finished trials (default: the campaign's), ``parallel`` in flight
        (`sweep.tune.driver.run_tune`: its loop on `sweep.study.StudyDriver`); ``progress(done,
        total)`` after each finished trial. ``summary`` and ``flush`` (the engine's, for task
        campaigns) are not used: the study writes its own rows.

        Returns:
            `sweep.tune.driver.TuneSummary`.

        Raises:
            `sweep.engine.runner.Interrupted` (Ctrl-C / SIGTERM; its ``summary`` the trials so far),
            `sweep.common.errors.ExecutionError` (a reference optimum or the executor failed).
        """
        from sweep.tune.driver import run_tune
        return run_tune(campaign, trials=trials, parallel=parallel, resume=resume, executor=executor, address=address,
                        num_cpus=num_cpus, progress=progress)

    def describe_valid(self, campaign: Any, path: Path) -> str:
        from sweep.common.fmt import words
        t = campaign
        return (f"{path}: valid tuning campaign. {t.mapper} on {t.arch}, {len(t.space)} tuned parameter(s) "
                f"({words(s.name for s in t.space)}), budget {t.budget} per (layer, seed), training {t.training[0]} "
                f"x {len(t.training[1])} layer(s) x {len(t.seeds)} seed(s), held out {t.heldout[0]} x "
                f"{len(t.heldout[1])}, {t.trials} trial(s) -> {t.output}; run it with `sweep tune {path}`\n"
                "  run time: no estimate for kind tune (its pruner stops trials early, after a number of "
                "layers no parameter fixes)")
