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
depend on the architecture kind (`sweep.config.report_table`).

This module holds the `Campaign` and the checks of the tables every kind has (name and output,
seeds, ``[[mappers]]``, ``[run]``, ``[systolic]``); the kind of a campaign (`sweep.kinds`) parses
its own sections and drives `sweep.kinds.parse_campaign`, which calls these. Each table is checked
in a function of its own (here, `sweep.config.archspace`, `sweep.config.networks`,
`sweep.config.report_table`); what they share with tuning campaigns is in
`sweep.config.validation`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Protocol, Union

from costmodel.systolic import SystolicParams
from costmodel.systolic.points import SystolicPoints
from costmodel.workload import Network
from mappers import MAPPER_NAMES, get_mapper, mapper_kind
from mappers.base import check_params
from sweep.config.archspace import ArchSet
from sweep.config.validation import (NOT_FINITE, Bad, check_seed, check_seeds, is_finite, is_number,
                                     read_params_file)
from sweep.common.ids import stable_hash

__all__ = ["Campaign", "KindPlan", "MapperSpec", "RunOptions", "Architectures", "TOP_KEYS", "parse_name_output",
           "parse_objectives", "parse_seeds", "parse_mappers", "parse_run", "parse_systolic", "mapper_names",
           "network_names", "network_json"]

#: The resolved ``[architectures]`` of a campaign: the hardware points of a ``kind = "systolic"``
#: campaign, or the accelerators (with an optional spatial override) of a ``"loopnest"`` or
#: ``"npu"`` campaign. Both have ``len()`` and ``describe()`` (JSON-able, part of the config hash).
Architectures = Union[SystolicPoints, ArchSet]

#: The top-level keys of a campaign file (each kind reads the ones it uses).
TOP_KEYS = {"name", "description", "output", "networks", "objectives", "seeds", "architectures",
             "mappers", "run", "systolic", "report", "search", "workload", "system"}
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


class KindPlan(Protocol):
    """What the engine asks of a campaign's kind (`sweep.kinds.base.CampaignKind` implements it; the
    engine reaches it as ``campaign.plan`` and never imports `sweep.kinds`)."""

    name: str

    def expand(self, campaign: "Campaign") -> Iterator[Any]:
        """The campaign's tasks in a deterministic order (each with ``task_id`` and ``run()``)."""
        ...

    def count(self, campaign: "Campaign") -> int:
        """How many tasks `expand` yields, without building them."""
        ...

    def warm_up(self, task: Any) -> None:
        """Prepare the driver before ``task`` (the first) reaches a worker, e.g. compile a kernel."""
        ...

    def runs_study(self, campaign: "Campaign") -> bool:
        """True if the campaign runs as an Optuna study (designs asked as it goes), not a task list."""
        ...

    def run_study(self, campaign: "Campaign", summary: Any, *, resume: bool, executor: str,
                  address: str | None, progress: Any, flush: Any) -> None:
        """Run the kind's study into the store the engine created (only when `runs_study`):
        finished work counted in ``summary``, each batch of (task_id, tables) given to ``flush``."""
        ...

    def config_extras(self, campaign: "Campaign") -> dict[str, Any]:
        """The kind's entries of `Campaign.resolved_config` (part of the config hash)."""
        ...

    def describe_archs(self, campaign: "Campaign") -> str:
        """The architectures in a few words ("1,233 design(s) of eyeriss_like")."""
        ...

    def describe_run(self, campaign: "Campaign") -> str:
        """What `sweep run` says it runs, in a line (networks x architectures x mappers x objectives)."""
        ...


@dataclass(frozen=True)
class Campaign:
    """A validated campaign. ``architectures`` is the resolved `Architectures` of its kind: the
    systolic hardware point set (columns) or the loop-nest / multi-NPU accelerators (or an
    architecture-search design space). ``plan`` is the kind (`sweep.kinds`): how the campaign
    expands to tasks, counts them, warms up and runs."""

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
    plan: KindPlan = field(repr=False, compare=False)  # the kind: "systolic" (DeepOpt allocation),
    # "loopnest" or "npu" (layer mapping), "archsearch" (a loop-nest template grid)
    description: str = ""
    search: Any = None                 # archsearch: the [search] table (`SearchSpec`)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    workload: Any = None               # the [workload] serving mix (`costmodel.llm.ServingMix`)
    system: Any = None                 # the [system] table: the chips' links for split steps (`System`)

    @property
    def kind(self) -> str:
        """The kind's name, as recorded in the manifest (``config.kind``)."""
        return self.plan.name

    def resolved_config(self) -> dict[str, Any]:
        """Everything that determines the results, as JSON-able data (networks in full)."""
        return {
            "name": self.name,
            "networks": [network_json(n, inputs=self.kind not in _NO_INPUT_SIZE) for n in self.networks],
            "objectives": list(self.objectives),
            "seeds": list(self.seeds),
            "architectures": self.architectures.describe(),
            "mappers": [self._mapper_config(m) for m in self.mappers],
            "systolic": self.systolic,
            "chunk_points": self.run.chunk_points,
            "units_per_task": self.run.units_per_task,
            "kind": self.kind,
            **self.plan.config_extras(self),
            **({"workload": self.workload.to_dict()} if self.workload is not None else {}),
            **({"system": self.system.to_dict()} if self.system is not None else {}),
        }

    def _mapper_config(self, spec) -> dict[str, Any]:
        """A mapper's entry of `resolved_config`: name and parameters, and where the campaign minimises
        latency with a mapper that breaks latency ties by energy (`mappers.base.Mapper.latency_ties`)
        that rule's version, so a directory written before it is not resumed into (its other
        campaigns' hashes are what they were)."""
        from mappers import get_mapper
        out: dict[str, Any] = {"name": spec.name, "params": spec.params}
        ties = getattr(get_mapper(spec.name), "latency_ties", 0)
        if ties and "latency" in self.objectives:
            out["latency_ties"] = ties
        return out

    def config_hash(self) -> str:
        """sha256 of `resolved_config` (stable JSON)."""
        return stable_hash(self.resolved_config())


#: Kinds whose models do not read a layer's unpadded input size (``in_rows`` / ``in_cols``, read
#: by the loop-nest model only): their config hashes and task ids leave it out.
_NO_INPUT_SIZE = ("systolic", "npu")


def network_json(net: Network, inputs: bool = True) -> dict[str, Any]:
    """A network in full as JSON-able data (name, every layer's fields, repeats): part of config
    hashes and task ids; ``inputs=False`` leaves out the layers' unpadded input size
    (`Layer.hash_fields`)."""
    out: dict[str, Any] = {"name": net.name,
                           "layers": [{"name": l.name, **l.hash_fields(inputs)} for l in net.layers],
                           "repeats": list(net.repeats)}
    if net.vector_ops:  # transformer steps only: a CNN's config hash is what it was
        out["vector_ops"] = [v.to_dict() for v in net.vector_ops]
        out["vector_repeats"] = list(net.vector_repeats)
    if net.workload:
        out["workload"] = dict(net.workload)
    return out


def parse_name_output(data: dict[str, Any], output: str | Path | None, bad: Bad) -> tuple[Any, Any]:
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


def parse_objectives(data: dict[str, Any], kind: str, allowed: tuple[str, ...], default: tuple[str, ...],
                     bad: Bad) -> list:
    """``objectives``: a non-empty list of the ``allowed`` objectives of a campaign of ``kind``
    (default ``default``; DeepOpt's PMs for systolic campaigns, one loop-nest / multi-NPU objective
    otherwise)."""
    objectives = data.get("objectives", list(default))
    if not isinstance(objectives, list) or not objectives:
        bad("objectives", objectives, f"expected a non-empty list of {list(allowed)}")
        return []
    for i, o in enumerate(objectives):
        if o not in allowed:
            bad(f"objectives[{i}]", o, f"unknown objective for {kind} architectures; known: {list(allowed)}")
    if len(set(map(str, objectives))) != len(objectives):
        bad("objectives", objectives, "duplicate entries")
    return objectives


def parse_seeds(seeds: Any, bad: Bad) -> list[int]:
    """``seeds``: the seeds of stochastic mappers (default [0]), each by the one seed rule
    (`sweep.config.validation.check_seeds`: 0 <= seed <= 2**32 - 1)."""
    return seeds if check_seeds(seeds, "seeds", bad) else [0]


def parse_mappers(raw_m: Any, kind: str | None, maps: str | None, base_dir: Path, bad: Bad) -> list[MapperSpec]:
    """``[[mappers]]``: each a mapper of the architectures the campaign's ``kind`` maps (mapper kind
    ``maps``; None: the kind is unknown, only names and parameters are checked) with its parameters."""
    if not isinstance(raw_m, list) or not raw_m:
        bad("mappers", raw_m, "required: a non-empty array of tables, e.g. [[mappers]] name = \"deepopt\"")
        return []
    specs = (_parse_mapper(m, f"mappers[{i}]", kind, maps, base_dir, bad) for i, m in enumerate(raw_m))
    return [s for s in specs if s is not None]


def _parse_mapper(m: Any, key: str, kind: str | None, maps: str | None, base_dir: Path,
                  bad: Bad) -> MapperSpec | None:
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
    if maps is not None and mapper_kind(mname) != maps:
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
    if "seed" in params and not any(pk == "seed" for pk, _, _ in pprobs):
        check_seed(params["seed"], f"{key}.params.seed", bad)
    return MapperSpec(mname, resolved)


def mapper_names(raw_m: Any) -> list[str]:
    """The mapper names a campaign lists (for ``report.baseline``), in order, each once."""
    names = [m.get("name") for m in raw_m if isinstance(m, dict)] if isinstance(raw_m, list) else []
    return list(dict.fromkeys(n for n in names if isinstance(n, str)))


def network_names(raw: Any, networks: list[Network]) -> list[str]:
    """The network names of a campaign (for ``report.network``): zoo names and loaded files."""
    names = [n for n in raw if isinstance(n, str)] if isinstance(raw, list) else []
    return list(dict.fromkeys(names + [n.name for n in networks]))


def parse_run(run: Any, bad: Bad) -> RunOptions:
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


def parse_systolic(sys_: Any, bad: Bad) -> dict[str, Any]:
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
