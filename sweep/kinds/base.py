"""`CampaignKind`: everything the engine, the CLI and `sweep report` ask of one kind of campaign.

A campaign's kind follows from its file: the ``[architectures]`` table's ``kind`` (``systolic``,
the default; ``loopnest``; ``npu``), a loop-nest ``template`` with a grid (``archsearch``), or
``[space]`` and ``[training]`` tables (``tune``, run by `sweep tune`). Each kind is one subclass in
one module of this package plus one line of `sweep.kinds.registry.KINDS`, as a mapper is one
module plus one line of `mappers.MAPPER_NAMES`. A kind answers:

* **parse**: which campaign files are its own (`CampaignKind.matches`), its objectives (allowed,
  default), its ``[architectures]`` (and ``[search]``) sections (`CampaignKind.parse_sections`),
  cross-checks between sections (`CampaignKind.check`), the keys of its ``[report]`` table, and
  what it adds to the resolved configuration (`CampaignKind.config_extras`, part of the hash);
* **run**: its tasks (`CampaignKind.expand`), how many (`CampaignKind.count`), what to prepare in
  the driver before the first task (`CampaignKind.warm_up`), whether it runs as an Optuna study
  (`CampaignKind.runs_study`) and then runs it (`CampaignKind.run_study`: the study loop lives with
  its kind); the engine reaches these through ``campaign.plan``
  (`sweep.config.campaign.KindPlan`) and never imports this package;
* **rows and report**: the Parquet tables its tasks write (`CampaignKind.tables`, ``rows`` last)
  and the `sweep.reports` module that reads them (`CampaignKind.report`);
* **CLI**: how `sweep run` / `sweep validate` describe it, and (for kinds that map single layers)
  how `sweep map` checks a mapper and an objective against an architecture.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Iterator

from sweep.config.validation import Bad

__all__ = ["CampaignKind", "arch_kind"]


def arch_kind(data: Any) -> Any:
    """The ``kind`` of a campaign file's ``[architectures]`` table as written ("systolic" if the
    table or the key is missing; whatever else is written, unchecked)."""
    arch = data.get("architectures") if isinstance(data, dict) else None
    return arch.get("kind", "systolic") if isinstance(arch, dict) else "systolic"


class CampaignKind:
    """One kind of campaign (see the module docstring). Subclasses set the class attributes and
    override what differs; the defaults describe a kind mapping named architectures layer by layer.

    Attributes:
        name: the kind's name, recorded as ``config.kind`` in every manifest (and so in the
            config hash): never change it for an existing kind.
        arch_kind: the ``[architectures] kind`` value that selects it (None: selected otherwise).
        mapper_kind: the `mappers.base.Mapper.kind` of the mappers it runs (None: none directly).
        objectives: the objectives (PMs) its campaigns may minimise, the default first.
        default_objectives: used when a campaign gives none (default: the first of ``objectives``).
        report_keys: the keys of ``[report]`` its report reads (`sweep.config.report_table`).
        report_module: the `sweep.reports` module that builds and shows its report.
        html_module: the `sweep.reports.html` module that writes its interactive page
            (``build(directory, manifest, out_file, rep)``, `sweep report --html`); "" = none.
        tables: the Parquet tables its tasks write (`sweep.engine.store.Store`), ``rows`` last.
        arch_help: its architectures in a few words for ``--help`` (kinds selected by
            ``[architectures] kind``).
        energy_model: False if its mappers report no energy (rows store NaN, JSON null).
        map_note: what `sweep map` adds when refusing one of its mappers for another kind's
            architecture.
        top_keys: top-level tables of its campaign files beyond `sweep.config.campaign.TOP_KEYS`
            (its own sections, e.g. ``serving``).
        common_tables: False if its campaigns name no ``networks`` and no ``[[mappers]]`` (its own
            sections say what is mapped and how): the common parser then leaves both empty.
    """

    name: ClassVar[str]
    arch_kind: ClassVar[str | None] = None
    mapper_kind: ClassVar[str | None] = None
    objectives: ClassVar[tuple[str, ...]] = ()
    default_objectives: ClassVar[tuple[str, ...] | None] = None
    report_keys: ClassVar[tuple[str, ...]] = ()
    report_module: ClassVar[str]
    html_module: ClassVar[str] = ""
    tables: ClassVar[tuple[str, ...]] = ("rows",)
    arch_help: ClassVar[str] = ""
    map_note: ClassVar[str] = ""
    energy_model: ClassVar[bool] = True
    top_keys: ClassVar[tuple[str, ...]] = ()
    common_tables: ClassVar[bool] = True

    def __repr__(self) -> str:
        return f"<campaign kind {self.name!r}>"

    # -- parse ---------------------------------------------------------------------------------
    def matches(self, data: dict[str, Any]) -> bool:
        """True if the parsed campaign file ``data`` is of this kind (default: its
        ``[architectures] kind`` is `arch_kind`). `sweep.kinds.registry.detect` asks the kinds in
        registry order, so a kind that claims files by other tables comes first."""
        return self.arch_kind is not None and arch_kind(data) == self.arch_kind

    def objective_defaults(self) -> tuple[str, ...]:
        """The objectives of a campaign that names none."""
        return self.default_objectives if self.default_objectives is not None else self.objectives[:1]

    def parse_sections(self, data: dict[str, Any], base_dir: Path, objectives: list, seeds: list,
                       bad: Bad) -> tuple[Any, Any]:
        """The resolved ``[architectures]`` (`sweep.config.campaign.Architectures`, None if
        unusable) and ``[search]`` (None: this kind has no search) of ``data``; findings go to
        ``bad``. The default refuses a ``[search]`` table."""
        if "search" in data:
            bad("search", data["search"], "only for architecture search ([architectures] kind = \"loopnest\" "
                "with a template and a grid)")
        return self.parse_architectures(data.get("architectures"), base_dir, bad), None

    def parse_architectures(self, value: Any, base_dir: Path, bad: Bad) -> Any:
        """The resolved ``[architectures]`` table ``value`` (None if unusable)."""
        raise NotImplementedError

    def check(self, networks: list, archs: Any, mappers: list, bad: Bad) -> None:
        """Cross-checks between sections once the mappers are parsed (default: none)."""

    def check_search(self, search: Any, networks: list, bad: Bad, workload: Any = None) -> None:
        """Cross-checks of the ``[search]`` table against the networks and the ``[workload]`` mix
        (default: none)."""

    def config_extras(self, campaign: Any) -> dict[str, Any]:
        """Entries of `Campaign.resolved_config` beyond the common ones (part of the config hash)."""
        return {}

    # -- run -----------------------------------------------------------------------------------
    def expand(self, campaign: Any) -> Iterator[Any]:
        """The campaign's tasks in a deterministic order; each has ``task_id`` and ``run()``."""
        raise NotImplementedError

    def count(self, campaign: Any) -> int:
        """How many tasks `expand` yields, without building them."""
        raise NotImplementedError

    def warm_up(self, task: Any) -> None:
        """Prepare the driver before the first task reaches a worker (default: nothing)."""

    def runs_study(self, campaign: Any) -> bool:
        """True if the campaign runs as an Optuna study rather than a list of tasks."""
        return False

    def run_study(self, campaign: Any, summary: Any, *, resume: bool, executor: str, address: str | None,
                  progress: Any, flush: Any) -> None:
        """Run the kind's study (`sweep.config.campaign.KindPlan.run_study`); the kinds whose
        `runs_study` can be true own their loop here, so the engine imports no study code.

        Raises:
            NotImplementedError: a kind that never runs a study."""
        raise NotImplementedError(f"campaign kind {self.name!r} runs no study")

    # -- report and CLI ------------------------------------------------------------------------
    def report(self) -> ModuleType:
        """The `sweep.reports` module of this kind: ``build(directory, manifest, plots_dir)``
        and ``show(rep, console)``."""
        return importlib.import_module(self.report_module)

    def describe_archs(self, campaign: Any) -> str:
        """The architectures in a few words, for `sweep run`'s first line."""
        return f"{len(campaign.architectures)} accelerator(s)"

    def estimate(self, campaign: Any) -> Any:
        """How long the campaign's run will take (`sweep.kinds.estimate.Estimate`, its tasks
        counted); the default counts the tasks and has no cost model."""
        from sweep.kinds.estimate import Estimate
        return Estimate(tasks=sum(1 for _ in self.expand(campaign)), missing={f"kind {self.name}": "no cost model"})

    def describe_run(self, campaign: Any) -> str:
        """`sweep run`'s first line, after the campaign's name: what it runs."""
        c = campaign
        return (f"{len(c.networks)} network(s) x {self.describe_archs(c)} x {len(c.mappers)} mapper(s) x "
                f"{len(c.objectives)} objective(s)")

    def describe_valid(self, campaign: Any, path: Path) -> str:
        """What `sweep validate` prints for a valid campaign of this kind: the counts, then the
        estimated run time (`estimate`)."""
        from sweep.common.fmt import words
        from sweep.kinds.estimate import cpus
        c = campaign
        est = self.estimate(c)
        return (f"{path}: valid. {len(c.networks)} network(s), {self.describe_archs(c)}, mappers "
                f"{words(m.name for m in c.mappers)}, objectives {words(c.objectives)}, {est.tasks:,} task(s) -> "
                f"{c.output}\n  {est.line(cpus(c))}")
