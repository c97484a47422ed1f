"""Kind ``loopnest``: layers mapped on accelerators with a memory hierarchy
(`costmodel.loopnest`) by the loop-order and full-mapspace mappers (SALSA, LOMA, random, CPEN 513
primitive SA, Random-5 / hybrid, CoSA); `sweep.reports.loopnest` compares them per layer."""

from __future__ import annotations

from typing import Any, Callable

from costmodel.loopnest.reference import MODEL_VERSION
from mappers import get_mapper
from sweep.config.validation import Bad
from sweep.engine.layer_tasks import LayerRules
from sweep.kinds.layers import LayerKind, compile_kernel

__all__ = ["LoopnestKind", "LOOPNEST_OBJECTIVES"]

#: Objectives of loop-nest campaigns: energy (pJ), latency (cycles), EDP (pJ x cycles).
LOOPNEST_OBJECTIVES = ("energy", "latency", "edp")


class LoopnestKind(LayerKind):
    """Named accelerators (presets, TOML files) with an optional ``spatial`` override; problem ids
    carry the loop-nest model's version and, where a mapper searches spatial unrollings, the
    accelerator's hint."""

    name = "loopnest"
    arch_kind = "loopnest"
    mapper_kind = "loopnest"
    objectives = LOOPNEST_OBJECTIVES
    report_module = "sweep.reports.loopnest"
    html_module = "sweep.reports.html.loopnest"
    arch_help = "loop-nest accelerators (eyeriss_like, simba_like, tpu_like or a TOML file)"
    what = "accelerator"
    spatial_override = True
    rules = LayerRules(model=MODEL_VERSION, objective_param=None, hints=True)

    def catalog(self) -> tuple[Callable[[], list[str]], Callable[[Any], Any]]:
        from costmodel.loopnest.arch import list_accelerators, load_accelerator
        return list_accelerators, load_accelerator

    def arch_type(self) -> type:
        from costmodel.loopnest.arch import Accelerator
        return Accelerator

    def check(self, networks: list, archs: Any, mappers: list, bad: Bad) -> None:
        """Mappers that search spatial unrollings (`mappers.spatial.spatial_mode`) need a hint on
        each accelerator, and every layer needs at least one unrolling under it."""
        if archs is None:
            return
        from mappers.base import LayerProblem
        from mappers.spatial import first_missing
        layers = list(dict.fromkeys(l for net in networks for l, _ in net.unique()))
        for i, spec in enumerate(mappers):
            mapper = get_mapper(spec.name)
            if not mapper.searches_spatial:
                continue
            for arch_name, acc in archs.archs:
                if not layers or mapper.spatial_mode(LayerProblem(layers[0], acc, archs.spatial), spec.params) != "search":
                    continue
                if acc.spatial_hint is None:
                    bad(f"mappers[{i}].params.spatial", spec.params.get("spatial"),
                        f"accelerator {arch_name!r} has no [spatial_hint] to search; add one or use \"fixed\"")
                    continue
                if (e := first_missing(layers, acc)) is not None:
                    bad(f"spatial_hint of {arch_name}", acc.spatial_hint.to_dict(), str(e))
        self._check_some_step_fits(networks, archs, bad)

    @staticmethod
    def _check_some_step_fits(networks: list, archs: Any, bad: Bad) -> None:
        """A campaign of transformer steps none of which fits any accelerator's usable DRAM maps
        nothing: a finding naming every step, accelerator and footprint (`step_fits`); a campaign
        where some pair fits runs it (``describe_valid`` lists the others)."""
        from costmodel.capacity import GPU_MEMORY_UTILIZATION, step_footprint
        from sweep.engine.layer_tasks import step_fits
        pairs = [(net, name, acc) for net in networks for name, acc in archs.archs]
        if not pairs or not all(net.workload for net, _, _ in pairs):
            return
        share = getattr(archs, "gpu_memory_utilization", GPU_MEMORY_UTILIZATION)
        if any(step_fits(net, acc, share) for net, _, acc in pairs):
            return
        why = "; ".join(f"{net.name} on {name}: {step_footprint(net, acc, share).reason()}" for net, name, acc in pairs)
        bad("networks", [net.name for net in networks],
            f"no step fits the usable DRAM of any accelerator, so nothing would be mapped: {why}")

    def describe_valid(self, campaign: Any, path: Any) -> str:
        """The counts and the run time (`CampaignKind.describe_valid`), then each transformer step
        that does not fit an accelerator's DRAM and so is not mapped on it."""
        from sweep.engine.layer_tasks import unfit_steps
        text = super().describe_valid(campaign, path)
        unfit = unfit_steps(campaign)
        if unfit:
            text += f"\n  {len(unfit)} step(s) do not fit an accelerator's DRAM and are not mapped there:" + "".join(
                f"\n    {net} on {arch}: {why}" for net, arch, why in unfit)
        return text

    def config_extras(self, campaign: Any) -> dict[str, Any]:
        return {"loopnest_model": self.rules.model}

    def warm_up(self, task: Any) -> None:
        u = task.units[0]
        p = u.problem.instance
        compile_kernel(p.layer, p.arch, p.spatial)
