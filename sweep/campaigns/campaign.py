"""Campaign files (TOML) -> a validated, resolved `Campaign`.

A campaign names what to sweep: networks, architectures (a preset, a file, explicit points, or a
parameter grid with constraints), mappers with their parameters, objectives (PMs), seeds, the
output directory and run options. `load_campaign` reports *every* problem it finds, each with its
TOML key path and value, in one `CampaignError`; nothing runs on an invalid campaign.

Example (see ``campaigns/area16mm2.toml``)::

    name = "area16mm2"
    output = "results/area16mm2"
    networks = ["googlenet_v1_deepopt", "alexnet_deepopt"]
    objectives = ["E", "D", "ED", "E2D", "ED2"]

    [architectures]
    kind = "systolic"
    [architectures.grid]
    J = { start = 8, stop = 64, step = 2 }
    K = { start = 8, stop = 64, step = 2 }
    fsram_kib = [4, 8, 16, 32, 64, 128, 256]
    ...
    constraints = ["J * K <= 2106", "area_mm2 <= 16"]

    [[mappers]]
    name = "deepopt"
    params = { network_pm = "sum" }

    [run]
    chunk_points = 4096

``[[mappers]]`` entries may also name a ``params_file``: a TOML file (relative to the campaign)
whose ``[mappers.<name>]`` table gives parameters, e.g. the ``best_params.toml`` of `sweep tune`;
inline ``params`` override the file's values. ``[report]`` holds options of `sweep report`; its keys
depend on the architecture kind (`sweep.campaigns.report_table`).

`parse_campaign` checks each table in a function of its own (`sweep.campaigns.archspace`,
`sweep.campaigns.networks`, `sweep.campaigns.report_table` and the ``_parse_*`` / ``_check_*``
functions here); what it shares with tuning campaigns is in `sweep.campaigns.validation`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from costmodel.loopnest.reference import MODEL_VERSION
from costmodel.systolic import SystolicParams
from costmodel.systolic.points import SystolicPoints
from costmodel.workload import Network
from mappers import MAPPER_NAMES, get_mapper, mapper_kind
from mappers.base import check_params
from mappers.systolic.deepopt import PMS
from sweep.campaigns.archspace import ArchSet, parse_architectures
from sweep.campaigns.designspace import check_dataflow_mappers, is_design_space, parse_design_space, parse_search
from sweep.campaigns.validation import (NOT_FINITE, Bad, Findings, check_table, is_finite, is_number,
                                    is_tune_campaign, read_params_file, read_toml)
from sweep.campaigns.networks import parse_networks
from sweep.campaigns.report_table import parse_report
from sweep.errors import CampaignError, Finding
from sweep.ids import stable_hash

__all__ = ["Campaign", "MapperSpec", "RunOptions", "Architectures", "load_campaign", "parse_campaign",
           "LOOPNEST_OBJECTIVES", "NPU_OBJECTIVES"]

#: Objectives of loop-nest campaigns: energy (pJ), latency (cycles), EDP (pJ x cycles).
LOOPNEST_OBJECTIVES = ("energy", "latency", "edp")
#: Objectives of multi-NPU (Flexer) campaigns: latency (cycles) x transferred bytes, latency, bytes.
NPU_OBJECTIVES = ("latency_bytes", "latency", "bytes")
#: The resolved ``[architectures]`` of a campaign: the hardware points of a ``kind = "systolic"``
#: campaign, or the accelerators (with an optional spatial override) of a ``"loopnest"`` or
#: ``"npu"`` campaign. Both have ``len()`` and ``describe()`` (JSON-able, part of the config hash).
Architectures = Union[SystolicPoints, ArchSet]

_TOP_KEYS = {"name", "description", "output", "networks", "objectives", "seeds", "architectures",
             "mappers", "run", "systolic", "report", "search"}
_MAPPER_KEYS = ("name", "params", "params_file")
_RUN_KEYS = {"chunk_points": (int, 1, 10**7), "units_per_task": (int, 1, 10**5),
             "designs_per_task": (int, 1, 10**4),
             "max_in_flight": (int, 1, 10**5),
             "num_cpus": (int, 1, 4096), "flush_rows": (int, 1, 10**9),
             "max_retries": (int, 0, 100)}


@dataclass(frozen=True)
class MapperSpec:
    """A mapper with its resolved parameters (defaults filled in)."""

    name: str
    params: dict[str, Any]


@dataclass(frozen=True)
class RunOptions:
    """How to run; none of these change results (they are not part of any task_id).

    chunk_points and units_per_task change how work is grouped into tasks, so they are part of
    the task_ids.
    """

    chunk_points: int = 4096          # systolic campaigns: hardware points per task
    units_per_task: int = 8           # loop-nest campaigns: mapper work units per task
    designs_per_task: int = 2         # architecture search: designs per task (all their layers)
    max_in_flight: int | None = None   # default: 2 x Ray CPUs
    num_cpus: int | None = None        # local Ray only; default: all cores
    flush_rows: int = 500_000          # rows buffered before a Parquet fragment is written
    max_retries: int = 3               # Ray retries of a task whose worker died


@dataclass(frozen=True)
class Campaign:
    """A validated campaign. ``architectures`` is the resolved `Architectures` of its ``kind``: the
    systolic hardware point set (columns) or the loop-nest / multi-NPU accelerators."""

    name: str
    source: str
    output: Path
    networks: tuple[Network, ...]
    objectives: tuple[str, ...]
    seeds: tuple[int, ...]
    architectures: Architectures       # SystolicPoints (kind "systolic") or ArchSet ("loopnest", "npu")
    mappers: tuple[MapperSpec, ...]
    systolic: dict[str, Any]
    run: RunOptions
    report: dict[str, Any]
    kind: str = "systolic"             # "systolic" (DeepOpt allocation), "loopnest" or "npu" (layer mapping),
                                       # "archsearch" (a loop-nest template grid, `sweep.campaigns.designspace`)
    description: str = ""
    search: Any = None                 # archsearch: the [search] table (`SearchSpec`)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    def resolved_config(self) -> dict[str, Any]:
        """Everything that determines the results, as JSON-able data (networks in full)."""
        return {
            "name": self.name,
            "networks": [_network_json(n) for n in self.networks],
            "objectives": list(self.objectives),
            "seeds": list(self.seeds),
            "architectures": self.architectures.describe(),
            "mappers": [{"name": m.name, "params": m.params} for m in self.mappers],
            "systolic": self.systolic,
            "chunk_points": self.run.chunk_points,
            "units_per_task": self.run.units_per_task,
            "kind": self.kind,
            **({"loopnest_model": MODEL_VERSION} if self.kind in ("loopnest", "archsearch") else {}),
            **({"search": self.search.describe(), "designs_per_task": self.run.designs_per_task}
               if self.kind == "archsearch" else {}),
        }

    def config_hash(self) -> str:
        """sha256 of `resolved_config` (stable JSON)."""
        return stable_hash(self.resolved_config())


def _network_json(net: Network) -> dict[str, Any]:
    return {"name": net.name,
            "layers": [dict(l.__dict__) for l in net.layers],
            "repeats": list(net.repeats)}



def load_campaign(path: str | Path, output: str | Path | None = None) -> Campaign:
    """Read and validate a campaign file.

    Args:
        path: the TOML file. Relative file names inside it are resolved against its folder.
        output: overrides the file's ``output`` (the CLI's ``--out``).

    Raises:
        CampaignError: the file cannot be read or parsed, or has problems (all are listed).
    """
    p = Path(path)
    data = read_toml(p)
    if is_tune_campaign(data):
        raise CampaignError(str(p), [Finding("<file>", str(p), "a tuning campaign ([space] and [training] tables): "
                                             "run it with `sweep tune`")])
    return parse_campaign(data, source=str(p), base_dir=p.parent, output=output)


def parse_campaign(data: dict[str, Any], source: str = "<campaign>", base_dir: Path | None = None,
                   output: str | Path | None = None) -> Campaign:
    """Validate parsed TOML ``data``; see `load_campaign`. Each table has its own function; every
    finding of every table is collected before the one `CampaignError` is raised."""
    base_dir = base_dir or Path(".")
    findings = Findings()
    bad = findings.bad
    check_table(data, "", _TOP_KEYS, bad)
    name, out = _parse_name_output(data, output, bad)
    networks = parse_networks(data.get("networks"), base_dir, bad)
    kind = _arch_kind(data.get("architectures"))
    objectives = _parse_objectives(data, kind, bad)
    seeds = _parse_seeds(data.get("seeds", [0]), bad)
    systolic = _check_systolic(data.get("systolic", {}), bad)
    search = None
    if kind == "archsearch":
        archs = parse_design_space(data["architectures"], base_dir, bad)
        search = parse_search(data.get("search"), len(archs) if archs is not None else None, bad)
        _check_archsearch(data, objectives, seeds, bad)
    else:
        archs = parse_architectures(data.get("architectures"), base_dir, bad)
        if "search" in data:
            bad("search", data["search"], "only for architecture search ([architectures] kind = \"loopnest\" "
                "with a template and a grid)")
    mappers = _parse_mappers(data.get("mappers"), kind, base_dir, bad)
    if kind == "loopnest" and archs is not None:
        _check_spatial_search(networks, archs, mappers, bad)
    if kind == "archsearch":
        check_dataflow_mappers(archs, mappers, networks, bad)
    run = _check_run(data.get("run", {}), bad)
    report = parse_report(data.get("report", {}), kind, _network_names(data.get("networks"), networks),
                          _mapper_names(data.get("mappers")), bad)
    findings.raise_if_any(source)
    return Campaign(name=name, source=source, output=Path(out), networks=tuple(networks), kind=kind,
                    objectives=tuple(objectives), seeds=tuple(seeds), architectures=archs,
                    mappers=tuple(mappers), systolic=systolic, run=run, report=report,
                    description=str(data.get("description", "")), raw=data, search=search)


def _parse_name_output(data: dict[str, Any], output: str | Path | None, bad: Bad) -> tuple[Any, Any]:
    """``name`` (required) and ``output`` (``--out`` wins; default ``results/<name>``)."""
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        bad("name", name, "required: a non-empty string")
    out = output if output is not None else data.get("output")
    if out is None:
        out = f"results/{name}" if isinstance(name, str) and name.strip() else None
    if out is not None and not isinstance(out, (str, Path)):
        bad("output", out, "expected a path string")
    return name, out


def _arch_kind(arch_raw: Any) -> str:
    """``architectures.kind`` as given (default "systolic"; `parse_architectures` checks it), or
    "archsearch" for a loop-nest template with a grid (`sweep.campaigns.designspace`)."""
    if is_design_space(arch_raw):
        return "archsearch"
    return arch_raw.get("kind", "systolic") if isinstance(arch_raw, dict) else "systolic"


def _check_archsearch(data: dict[str, Any], objectives: list, seeds: list, bad: Bad) -> None:
    """Architecture search maps with one mapper, one objective and one seed: a design's totals
    are one number each (several are several campaigns)."""
    if len(objectives) != 1:
        bad("objectives", objectives, "architecture search maps every layer for one objective: give one")
    if len(seeds) != 1:
        bad("seeds", seeds, "architecture search maps with one seed: give one")
    if isinstance(data.get("mappers"), list) and len(data["mappers"]) != 1:
        bad("mappers", [m.get("name") if isinstance(m, dict) else m for m in data["mappers"]],
            "architecture search maps every design's layers with one mapper: give one [[mappers]] entry")


def _parse_objectives(data: dict[str, Any], kind: str, bad: Bad) -> list:
    """``objectives``: DeepOpt's PMs (systolic, default all), or one of the loop-nest / multi-NPU
    objectives (default the first)."""
    allowed = {"systolic": list(PMS), "npu": list(NPU_OBJECTIVES)}.get(kind, list(LOOPNEST_OBJECTIVES))
    if kind == "archsearch" and "objectives" not in data:
        return ["edp"]
    objectives = data.get("objectives", allowed if kind == "systolic" else [allowed[0]])
    if not isinstance(objectives, list) or not objectives:
        bad("objectives", objectives, f"expected a non-empty list of {allowed}")
        return []
    for i, o in enumerate(objectives):
        if o not in allowed:
            bad(f"objectives[{i}]", o, f"unknown objective for {kind} architectures; known: {allowed}")
    if len(set(map(str, objectives))) != len(objectives):
        bad("objectives", objectives, "duplicate entries")
    return objectives


def _parse_seeds(seeds: Any, bad: Bad) -> list[int]:
    """``seeds``: the seeds of stochastic mappers (default [0])."""
    if not isinstance(seeds, list) or not seeds or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
        bad("seeds", seeds, "expected a non-empty list of integers >= 0")
        return [0]
    return seeds


def _parse_mappers(raw_m: Any, kind: str, base_dir: Path, bad: Bad) -> list[MapperSpec]:
    """``[[mappers]]``: each a mapper of the campaign's architecture kind with its parameters."""
    if not isinstance(raw_m, list) or not raw_m:
        bad("mappers", raw_m, "required: a non-empty array of tables, e.g. [[mappers]] name = \"deepopt\"")
        return []
    specs = (_parse_mapper(m, f"mappers[{i}]", kind, base_dir, bad) for i, m in enumerate(raw_m))
    return [s for s in specs if s is not None]


def _parse_mapper(m: Any, key: str, kind: str, base_dir: Path, bad: Bad) -> MapperSpec | None:
    """One ``[[mappers]]`` entry at ``key``: ``name``, inline ``params`` over a ``params_file``'s,
    each checked by the mapper's declared `mappers.base.Param`; None if unusable."""
    if not isinstance(m, dict):
        bad(key, m, "expected a table with 'name' and optional 'params'")
        return None
    for k in m:
        if k not in _MAPPER_KEYS:
            bad(f"{key}.{k}", m[k], f"unknown key; known: {list(_MAPPER_KEYS)}")
    mname = m.get("name")
    if mname not in MAPPER_NAMES:
        bad(f"{key}.name", mname, f"unknown mapper; known: {list(MAPPER_NAMES)}")
        return None
    if mapper_kind(mname) != ("loopnest" if kind == "archsearch" else kind):
        bad(f"{key}.name", mname, f"maps {mapper_kind(mname)} architectures, but the campaign's "
            f"architectures.kind is {kind!r}")
        return None
    params = m.get("params", {})
    if not isinstance(params, dict):
        bad(f"{key}.params", params, "expected a table")
        return None
    from_file = {}
    if "params_file" in m:
        from_file = read_params_file(m["params_file"], mname, base_dir, f"{key}.params_file", bad)
        if from_file is None:
            return None
    resolved, pprobs = check_params(get_mapper(mname).params, {**from_file, **params})
    for pk, pv, msg in pprobs:
        where = f"{key}.params.{pk}" if pk in params else f"{key}.params_file[{m['params_file']}].{pk}"
        bad(where, pv, msg)
    return MapperSpec(mname, resolved)


def _check_spatial_search(networks: list[Network], archs, mappers: list[MapperSpec], bad: Bad) -> None:
    """Mappers that search spatial unrollings (`mappers.spatial.spatial_mode`) need a hint on each
    accelerator, and every layer needs at least one unrolling under it."""
    from mappers.base import LayerProblem
    from mappers.spatial import first_missing, spatial_mode
    layers = list(dict.fromkeys(l for net in networks for l, _ in net.unique()))
    for i, spec in enumerate(mappers):
        if not any(p.name == "spatial" for p in get_mapper(spec.name).params):
            continue
        for arch_name, acc in archs.archs:
            if not layers or spatial_mode(LayerProblem(layers[0], acc, archs.spatial), spec.params) != "search":
                continue
            if acc.spatial_hint is None:
                bad(f"mappers[{i}].params.spatial", spec.params.get("spatial"),
                    f"accelerator {arch_name!r} has no [spatial_hint] to search; add one or use \"fixed\"")
                continue
            if (e := first_missing(layers, acc)) is not None:
                bad(f"spatial_hint of {arch_name}", acc.spatial_hint.to_dict(), str(e))


def _mapper_names(raw_m: Any) -> list[str]:
    """The mapper names a campaign lists (for ``report.baseline``), in order, each once."""
    names = [m.get("name") for m in raw_m if isinstance(m, dict)] if isinstance(raw_m, list) else []
    return list(dict.fromkeys(n for n in names if isinstance(n, str)))


def _network_names(raw: Any, networks: list[Network]) -> list[str]:
    """The network names of a campaign (for ``report.network``): zoo names and loaded files."""
    names = [n for n in raw if isinstance(n, str)] if isinstance(raw, list) else []
    return list(dict.fromkeys(names + [n.name for n in networks]))


def _check_run(run: Any, bad: Bad) -> RunOptions:
    """``[run]``: how to run (`RunOptions`), each an integer in its range."""
    if not isinstance(run, dict):
        bad("run", run, "expected a table")
        return RunOptions()
    vals = {}
    for k, v in run.items():
        if k not in _RUN_KEYS:
            bad(f"run.{k}", v, f"unknown key; known: {sorted(_RUN_KEYS)}")
            continue
        typ, lo, hi = _RUN_KEYS[k]
        if not isinstance(v, typ) or isinstance(v, bool) or not lo <= v <= hi:
            bad(f"run.{k}", v, f"expected an integer in [{lo}, {hi}]")
            continue
        vals[k] = v
    return RunOptions(**vals)


def _check_systolic(sys_: Any, bad: Bad) -> dict[str, Any]:
    """``[systolic]``: overrides of `costmodel.systolic.SystolicParams` (bools, or finite positive numbers)."""
    if not isinstance(sys_, dict):
        bad("systolic", sys_, "expected a table of systolic model parameters")
        return {}
    fields = {f.name: f for f in dataclasses.fields(SystolicParams)}
    defaults = SystolicParams()
    out = {}
    for k, v in sys_.items():
        if k not in fields:
            bad(f"systolic.{k}", v, f"unknown parameter; known: {sorted(fields)}")
            continue
        d = getattr(defaults, k)
        if isinstance(d, bool):
            ok = isinstance(v, bool)
        elif isinstance(d, (int, float)):
            if is_number(v) and not is_finite(v):
                bad(f"systolic.{k}", v, NOT_FINITE)
                continue
            ok = is_number(v) and v > 0
        else:
            ok = True
        if not ok:
            bad(f"systolic.{k}", v, f"expected {'a bool' if isinstance(d, bool) else 'a positive number'} (default {d!r})")
            continue
        out[k] = v
    return out
