"""Kind ``archsearch``: architecture search over a loop-nest template's parameter grid (array,
memories, optionally the dataflow), every design's layers mapped with one mapper; a grid, a seeded
random sample or an Optuna study (`sweep.search.driver`) picks the designs
(`sweep.config.designspace`, `sweep.engine.design_tasks`); `sweep.reports.archsearch` reports the
fronts and the best design per area budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from costmodel.loopnest.reference import MODEL_VERSION
from sweep.config.designspace import check_dataflow_mappers, check_step_objectives, parse_design_space, parse_search
from sweep.config.validation import Bad
from sweep.engine.design_tasks import count_design_tasks, design_tasks, selected
from sweep.kinds.base import CampaignKind, arch_kind
from sweep.kinds.layers import compile_kernel
from sweep.kinds.loopnest import LOOPNEST_OBJECTIVES
from sweep.study import runs_study

__all__ = ["ArchsearchKind"]


class ArchsearchKind(CampaignKind):
    """``[architectures] kind = "loopnest"`` with a ``template`` and a ``grid`` (and ``[search]``):
    one mapper, one objective (default EDP), one seed; a task is ``run.designs_per_task`` designs
    (grid / random) or one asked design (an Optuna study)."""

    name = "archsearch"
    mapper_kind = "loopnest"
    objectives = LOOPNEST_OBJECTIVES
    default_objectives = ("edp",)
    report_keys = ("area_budgets", "top_k", "network", "slo")
    report_module = "sweep.reports.archsearch"
    html_module = "sweep.reports.html.archsearch"
    tables = ("archs", "totals", "rows")

    def matches(self, data: dict[str, Any]) -> bool:
        """A loop-nest ``[architectures]`` with a ``template`` (a design space, not named accelerators)."""
        arch = data.get("architectures")
        return arch_kind(data) == "loopnest" and isinstance(arch, dict) and "template" in arch

    def parse_sections(self, data: dict[str, Any], base_dir: Path, objectives: list, seeds: list,
                       bad: Bad) -> tuple[Any, Any]:
        """The design space and the ``[search]`` table; a design's totals are one number each, so
        one mapper, one objective and one seed (several are several campaigns)."""
        archs = parse_design_space(data["architectures"], base_dir, bad)
        search = parse_search(data.get("search"), len(archs) if archs is not None else None, bad)
        if len(objectives) != 1:
            bad("objectives", objectives, "architecture search maps every layer for one objective: give one")
        if len(seeds) != 1:
            bad("seeds", seeds, "architecture search maps with one seed: give one")
        if isinstance(data.get("mappers"), list) and len(data["mappers"]) != 1:
            bad("mappers", [m.get("name") if isinstance(m, dict) else m for m in data["mappers"]],
                "architecture search maps every design's layers with one mapper: give one [[mappers]] entry")
        return archs, search

    def check(self, networks: list, archs: Any, mappers: list, bad: Bad) -> None:
        check_dataflow_mappers(archs, mappers, networks, bad)

    def check_search(self, search: Any, networks: list, bad: Bad, workload: Any = None) -> None:
        """A step objective (time_per_token_s, ttft_s, energy_per_token_j) needs a step of its
        phase, a request objective a [workload] mix."""
        check_step_objectives(search, networks, bad, workload)

    def config_extras(self, campaign: Any) -> dict[str, Any]:
        return {"loopnest_model": MODEL_VERSION, "search": campaign.search.describe(),
                "designs_per_task": campaign.run.designs_per_task}

    def expand(self, campaign: Any) -> Iterator[Any]:
        """Grid / random: the selected designs in order (an Optuna study asks its designs as it goes)."""
        return design_tasks(campaign)

    def count(self, campaign: Any) -> int:
        return count_design_tasks(campaign)

    def runs_study(self, campaign: Any) -> bool:
        """An Optuna study, or a grid pruned by bound (`sweep.search.grid`): both decide what to
        map as they go."""
        return runs_study(campaign.search.sampler, self.name) or campaign.search.prune != "none"

    def run_study(self, campaign: Any, summary: Any, *, resume: bool, executor: str, address: str | None,
                  progress: Any, flush: Any) -> None:
        """The Optuna search over designs (`sweep.search.driver.run_search`), or the pruned grid
        (`sweep.search.grid.run_pruned_grid`)."""
        if campaign.search.prune != "none":
            from sweep.search.grid import run_pruned_grid
            summary.search = run_pruned_grid(campaign, summary, resume=resume, executor=executor, address=address,
                                             progress=progress, flush=flush)
            return
        from sweep.search.driver import run_search
        run_search(campaign, summary, resume=resume, executor=executor, address=address,
                   progress=progress, flush=flush)

    def warm_up(self, task: Any) -> None:
        """The first design's first layer."""
        _, values = task.designs[0]
        compile_kernel(task.networks[0].layers[0], task.template.design(values), None)

    def describe_archs(self, campaign: Any) -> str:
        return f"{len(campaign.architectures):,} design(s) of {campaign.architectures.template.base.name}"

    def estimate(self, campaign: Any) -> Any:
        """Every design costs what the middle valid design's layers cost (each unique layer's units
        as the mapper's parameters say, `sweep.kinds.estimate`), once per *view*: designs that differ
        only where the mapper does not look (the vector unit) share their mappings
        (`sweep.engine.design_tasks.mapped_layer`), so a grid or a random sample costs its distinct
        views; an Optuna study maps ``batch`` designs at once; a grid pruned by bound costs at most
        its views (how many it prunes is known only as it runs)."""
        from sweep.kinds.estimate import Estimate
        c = campaign
        optuna = runs_study(c.search.sampler, self.name)
        est = Estimate(parallel=c.search.batch if optuna else None)
        design_s, what, why = _design_seconds(c)
        if optuna:
            for _ in range(c.search.trials):
                est.add(design_s, what, why)
            return est
        idx = selected(c)
        views = _views(c, idx)
        per = c.run.designs_per_task
        for start in range(0, len(idx), per):
            k = len(set(views[start:start + per]))
            est.add(None if design_s is None else k * design_s, what, why)
        est.note = (f"{len(set(views)):,} distinct mapper view(s) of {len(idx):,} design(s)"
                    + (", at most: pruning by bound maps fewer" if c.search.prune != "none" else ""))
        return est

    def describe_valid(self, campaign: Any, path: Path) -> str:
        """The counts, then the grid, the valid designs, what was dropped and why, the search, the
        estimated run time."""
        from sweep.common.fmt import words
        from sweep.kinds.estimate import cpus
        c = campaign
        sp, s = c.architectures, c.search
        return "\n".join([
            f"{path}: valid architecture search. {len(c.networks)} network(s), mapper {c.mappers[0].name}, "
            f"objective {c.objectives[0]}, {self.count(c):,} task(s) -> {c.output}",
            _network_line(c),
            f"  template {sp.template_ref}, parameters {words(sp.names)}",
            f"  {sp.total:,} grid point(s), {len(sp):,} valid design(s); dropped: "
            + (", ".join(f"{k}: {v:,}" for k, v in sp.dropped.items()) or "none"),
            f"  area of the valid designs {sp.area_mm2.min():.2f}..{sp.area_mm2.max():.2f} mm^2",
            f"  search: {s.sampler}" + (f", {s.trials} trial(s), seed {s.seed}" if s.trials else "")
            + (f", pruned by bound in rounds of {s.batch * c.run.designs_per_task} designs" if s.prune != "none" else "")
            + f", objectives {words(s.objectives)}",
            f"  {self.estimate(c).line(cpus(c))}"])


def _network_line(campaign: Any) -> str:
    """Every network the campaign runs by name, the serving mix's own steps apart (they join the
    networks written in the file: issue 43's "8 networks" for 4 written)."""
    from sweep.config.networks import mix_networks
    names = [n.name for n in campaign.networks]
    mix = {n.name for n in mix_networks(campaign.workload, lambda *a: None)} if campaign.workload else set()
    written = [n for n in names if n not in mix]
    added = [n for n in names if n in mix]
    line = f"  networks ({len(names)}): " + ", ".join(written)
    return line + (f"; the serving mix's steps: {', '.join(added)}" if added else "")


def _views(campaign: Any, idx) -> list[int]:
    """The `mapper_view` of each design of ``idx`` as a small integer (equal = shared mappings)."""
    from sweep.engine.design_tasks import mapper_view
    sp = campaign.architectures
    seen: dict[str, int] = {}
    memo: dict = {}
    return [seen.setdefault(mapper_view(sp.template.design(sp.point(int(i)), memo=memo)), len(seen)) for i in idx]


def _design_seconds(campaign: Any) -> tuple[float | None, str, str]:
    """(estimated seconds to map every unique layer of the networks on one design, "", "") or
    (None, what has no estimate, why): the middle valid design stands for all. A layer no mapping of that
    design fits costs nothing (its row is an error)."""
    from sweep.common.ids import canonical_json
    from sweep.engine.problem import Problem
    from sweep.kinds.estimate import units_seconds

    c = campaign
    sp, spec, objective = c.architectures, c.mappers[0], c.objectives[0]
    if not len(sp):
        return 0.0, "", ""
    acc = sp.template.design(sp.point(len(sp) // 2))
    layers = {canonical_json(l.hash_fields()): l for net in c.networks for l, _ in net.unique()}
    total = 0.0
    from mappers import get_mapper
    params = dict(spec.params)
    if any(p.name == "spatial_rank" for p in get_mapper(spec.name).params):
        # the units of the top candidates by utilisation: as many as any rank keeps (the probe ranks
        # keep at most as many), without the probes' kernel runs
        params["spatial_rank"] = "utilization"
    for layer in layers.values():
        prob = Problem.layer(spec.name, layer, acc, objective=objective, params=params, seed=c.seeds[0])
        try:
            units = prob.units()
        except Exception:  # noqa: BLE001 - no mapping fits: an error row, no time
            continue
        s, what, why = units_seconds((prob, u) for u in units)
        if s is None:
            return None, what, why
        total += s
    return total, "", ""
