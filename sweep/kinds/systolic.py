"""Kind ``systolic``: DeepOpt's optimal hardware allocation over a grid of J x K systolic points
(`mappers.systolic.deepopt`, `costmodel.systolic`); `sweep.reports.systolic` reports it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterator

from costmodel.systolic import BRANCHES, SystolicParams
from costmodel.systolic.points import HW_COLUMNS, SystolicPoints
from mappers.systolic.deepopt import PMS, pm_value
from sweep.config.archspace import parse_points
from sweep.config.campaign import parse_systolic
from sweep.config.validation import Bad
from sweep.engine.systolic_tasks import systolic_tasks
from sweep.common.errors import CampaignError, Finding
from sweep.kinds.base import CampaignKind

__all__ = ["SystolicKind"]


def _plain(v: Any) -> Any:
    """A NumPy scalar of a result table as a Python value; non-finite floats as None (JSON null)."""
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and not math.isfinite(v) else v


def _split_params(declared: Any, given: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the mapper's parameters resolved, the `costmodel.systolic.SystolicParams` overrides) of
    ``sweep map --param`` values: model parameters are checked as a campaign's ``[systolic]`` table.

    Raises:
        CampaignError: every bad parameter, named ``--param KEY``.
    """
    from dataclasses import fields

    from mappers.base import check_params
    names, model_names = {p.name for p in declared}, {f.name for f in fields(SystolicParams)}
    findings = [Finding(f"--param {k}", v, f"unknown parameter; known: {sorted(names)} (the mapper's) and "
                        f"{sorted(model_names)} (DeepOpt's model, a campaign's [systolic] table)")
                for k, v in given.items() if k not in names | model_names]
    model = parse_systolic({k: v for k, v in given.items() if k in model_names},
                           lambda key, value, msg: findings.append(
                               Finding(f"--param {key.removeprefix('systolic.')}", value, msg)))
    resolved, probs = check_params(declared, {k: v for k, v in given.items() if k in names})
    findings += [Finding(f"--param {k}", v, m) for k, v, m in probs]
    if findings:
        raise CampaignError("--param", findings)
    return resolved, model


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
    html_module = "sweep.reports.html.systolic"
    arch_help = ("DeepOpt's J x K systolic hardware points, the presets deepopt_* (`sweep list archs`), "
                 "a whole network on one point (--point N of a preset with several)")
    map_note = "; give it a systolic preset (deepopt_table3, ...: `sweep list archs`) and --network"
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

    def estimate(self, campaign: Any) -> Any:
        """Every task: its chunk of points x the networks' layers (`sweep.kinds.estimate`; counted,
        no task built)."""
        from types import SimpleNamespace

        from sweep.engine.problem import Problem
        from sweep.kinds.estimate import Estimate, units_seconds
        c = campaign
        n, step = len(c.architectures), c.run.chunk_points
        est = Estimate()
        for spec in c.mappers:
            for start in range(0, max(n, 1), step):
                chunk = SimpleNamespace(points=range(min(step, n - start)), networks=c.networks)
                est.add(*units_seconds([(Problem(spec.name, chunk, spec.params), None)]))
        return est

    # -- sweep map -----------------------------------------------------------------------------
    def arch_type(self) -> type:
        """The class of this kind's architectures: a set of hardware points."""
        return SystolicPoints

    def map_network(self, network: Any, points: SystolicPoints, mapper_name: str, objective: str,
                    params: dict[str, Any]) -> dict[str, Any]:
        """`sweep map` on one hardware point: ``network`` (its layers as listed, as a campaign runs
        them) scheduled by ``mapper_name`` (DeepOpt) on the single point of ``points`` minimising the
        PM ``objective``; exactly the figures a campaign stores for that point (its ``rows`` row and
        ``layers`` detail: one `AllocationProblem` of that one point, numbered
        ``points.spec["point"]``).

        ``params``: the mapper's parameters (``network_pm``) and `costmodel.systolic.SystolicParams`
        fields (a campaign's ``[systolic]`` table, e.g. ``fc_batch_quirk``).

        Returns:
            ``{"network", "arch_kind", "mapper", "objective", "network_pm", "params", "systolic",
            "point", "layers", "total"}``: ``point`` the hardware (index, J, K, SRAM KiB, area
            mm^2); ``layers`` one row per layer (per execution with ``network_pm="product"``) with
            its LOS ``branch``, ``energy_pj`` (pJ) and ``latency_cycles`` of one execution per
            image, ``edp`` (their product), ``value`` (the layer's PM), ``repeat``; ``total`` the
            network's LOS ``energy_pj`` and ``latency_cycles`` (repeats counted), ``edp`` = their
            product, ``pm_value`` (DeepOpt's network PM) and ``fs_<branch>`` (the network PM of
            fixed scheduling on each branch). Non-finite figures (no branch fits) are None.

        Raises:
            CampaignError: a bad ``--param`` (mapper parameter or model parameter).
        """
        from dataclasses import replace

        from mappers import get_mapper
        from mappers.systolic.deepopt import AllocationProblem
        from sweep.engine.problem import Problem
        resolved, model = _split_params(get_mapper(mapper_name).params, params)
        index = int(points.spec.get("point", 0)) if isinstance(points.spec, dict) else 0
        problem = AllocationProblem((network,), points, (objective,), replace(SystolicParams(), **model),
                                    point_offset=index, chunk_points=len(points))
        sol = Problem(mapper_name, problem, resolved).solve()
        res, wall = sol.best, sol.wall_s
        row = {k: _plain(v[0]) for k, v in res.tables["rows"].items()}
        detail = res.tables["layers"]
        layers = []
        for i in range(len(detail["layer"])):
            e, d = float(detail["energy_pj"][i]), float(detail["cycles"][i])
            layers.append({"layer": str(detail["layer"][i]), "layer_index": int(detail["layer_index"][i]),
                           "repeat": int(detail["repeat"][i]), "branch": str(detail["branch"][i]),
                           "energy_pj": e, "latency_cycles": d, "edp": e * d,
                           "value": float(pm_value(e, d, objective)), "evaluations": len(BRANCHES),
                           "wall_s": None, "engine": res.engine,
                           "macs": network.layers[int(detail["layer_index"][i])].macs})
        energy, cycles = row["energy_pj"], row["cycles"]
        total = {"energy_pj": energy, "latency_cycles": cycles,
                 "edp": None if energy is None or cycles is None else energy * cycles,
                 "pm_value": row["pm_value"], **{f"fs_{b}": row[f"fs_{b}"] for b in BRANCHES},
                 "macs": network.macs, "layers": len(network), "executed_layers": network.layer_count,
                 "evaluations": len(BRANCHES) * len(network), "wall_s": wall,
                 "status": row.get("status", "ok"), **({"reason": row["error"]} if row.get("error") else {})}
        hw = {"index": index, **{k: row[k] for k in (*HW_COLUMNS, "area_mm2")}}
        return {"network": network.name, "arch_kind": self.name, "mapper": mapper_name, "objective": objective,
                "network_pm": res.engine, "params": resolved, "systolic": model, "point": hw,
                "layers": layers, "total": total}
