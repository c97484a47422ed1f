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
inline ``params`` override the file's values.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from costmodel.workload import Network
from sweep.errors import CampaignError, Problem
from sweep.ids import stable_hash

__all__ = ["Campaign", "MapperSpec", "RunOptions", "load_campaign", "parse_campaign",
           "LOOPNEST_OBJECTIVES", "NPU_OBJECTIVES"]

#: Objectives of loop-nest campaigns: energy (pJ), latency (cycles), EDP (pJ x cycles).
LOOPNEST_OBJECTIVES = ("energy", "latency", "edp")
#: Objectives of multi-NPU (Flexer) campaigns: latency (cycles) x transferred bytes, latency, bytes.
NPU_OBJECTIVES = ("latency_bytes", "latency", "bytes")

_TOP_KEYS = {"name", "description", "output", "networks", "objectives", "seeds", "architectures",
             "mappers", "run", "systolic", "report"}
_RUN_KEYS = {"chunk_points": (int, 1, 10**7), "units_per_task": (int, 1, 10**5),
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
    max_in_flight: int | None = None   # default: 2 x Ray CPUs
    num_cpus: int | None = None        # local Ray only; default: all cores
    flush_rows: int = 500_000          # rows buffered before a Parquet fragment is written
    max_retries: int = 3               # Ray retries of a task whose worker died


@dataclass(frozen=True)
class Campaign:
    """A validated campaign. ``architectures`` is the resolved hardware point set (columns)."""

    name: str
    source: str
    output: Path
    networks: tuple[Network, ...]
    objectives: tuple[str, ...]
    seeds: tuple[int, ...]
    architectures: Any                 # costmodel.systolic.points.SystolicPoints
    mappers: tuple[MapperSpec, ...]
    systolic: dict[str, Any]
    run: RunOptions
    report: dict[str, Any]
    kind: str = "systolic"             # "systolic" (DeepOpt allocation) or "loopnest" (layer mapping)
    description: str = ""
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
    from sweep.campaigns.tune_campaign import is_tune_campaign

    p = Path(path)
    data = read_toml(p)
    if is_tune_campaign(data):
        raise CampaignError(str(p), [Problem("<file>", str(p), "a tuning campaign ([space] and [training] tables): "
                                             "run it with `sweep tune`")])
    return parse_campaign(data, source=str(p), base_dir=p.parent, output=output)


def read_toml(path: str | Path) -> dict[str, Any]:
    """The parsed TOML file ``path``.

    Raises:
        CampaignError: the file cannot be read or is not valid TOML (key ``<file>``).
    """
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise CampaignError(str(p), [Problem("<file>", str(p), f"cannot read: {e.strerror}")]) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise CampaignError(str(p), [Problem("<file>", str(p), f"not valid TOML: {e}")]) from None


def parse_campaign(data: dict[str, Any], source: str = "<campaign>", base_dir: Path | None = None,
                   output: str | Path | None = None) -> Campaign:
    """Validate parsed TOML ``data``; see `load_campaign`."""
    from sweep.campaigns.archspace import parse_architectures
    from sweep.campaigns.networks import parse_networks
    from mappers import MAPPER_NAMES, get_mapper, mapper_kind
    from mappers.base import check_params
    from mappers.systolic.deepopt import PMS

    base_dir = base_dir or Path(".")
    probs: list[Problem] = []

    def bad(key, value, msg):
        probs.append(Problem(key, value, msg))

    for k in data:
        if k not in _TOP_KEYS:
            bad(k, data[k], f"unknown key; known: {sorted(_TOP_KEYS)}")

    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        bad("name", name, "required: a non-empty string")
    out = output if output is not None else data.get("output")
    if out is None:
        out = f"results/{name}" if isinstance(name, str) and name.strip() else None
    if out is not None and not isinstance(out, (str, Path)):
        bad("output", out, "expected a path string")

    networks = parse_networks(data.get("networks"), base_dir, bad)

    arch_raw = data.get("architectures")
    kind = arch_raw.get("kind", "systolic") if isinstance(arch_raw, dict) else "systolic"
    allowed = {"systolic": list(PMS), "npu": list(NPU_OBJECTIVES)}.get(kind, list(LOOPNEST_OBJECTIVES))
    objectives = data.get("objectives", allowed if kind == "systolic" else [allowed[0]])
    if not isinstance(objectives, list) or not objectives:
        bad("objectives", objectives, f"expected a non-empty list of {allowed}")
        objectives = []
    else:
        for i, o in enumerate(objectives):
            if o not in allowed:
                bad(f"objectives[{i}]", o, f"unknown objective for {kind} architectures; known: {allowed}")
        if len(set(map(str, objectives))) != len(objectives):
            bad("objectives", objectives, "duplicate entries")

    seeds = data.get("seeds", [0])
    if not isinstance(seeds, list) or not seeds or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
        bad("seeds", seeds, "expected a non-empty list of integers >= 0")
        seeds = [0]

    systolic = data.get("systolic", {})
    systolic = _check_systolic(systolic, bad)

    archs = parse_architectures(data.get("architectures"), base_dir, bad)

    mappers: list[MapperSpec] = []
    raw_m = data.get("mappers")
    if not isinstance(raw_m, list) or not raw_m:
        bad("mappers", raw_m, "required: a non-empty array of tables, e.g. [[mappers]] name = \"deepopt\"")
        raw_m = []
    for i, m in enumerate(raw_m):
        key = f"mappers[{i}]"
        if not isinstance(m, dict):
            bad(key, m, "expected a table with 'name' and optional 'params'")
            continue
        for k in m:
            if k not in ("name", "params", "params_file"):
                bad(f"{key}.{k}", m[k], "unknown key; known: ['name', 'params', 'params_file']")
        mname = m.get("name")
        if mname not in MAPPER_NAMES:
            bad(f"{key}.name", mname, f"unknown mapper; known: {list(MAPPER_NAMES)}")
            continue
        if mapper_kind(mname) != kind:
            bad(f"{key}.name", mname, f"maps {mapper_kind(mname)} architectures, but the campaign's "
                f"architectures.kind is {kind!r}")
            continue
        params = m.get("params", {})
        if not isinstance(params, dict):
            bad(f"{key}.params", params, "expected a table")
            continue
        from_file = {}
        if "params_file" in m:
            from_file = _params_file(m["params_file"], mname, base_dir, f"{key}.params_file", bad)
            if from_file is None:
                continue
        resolved, pprobs = check_params(get_mapper(mname).params, {**from_file, **params})
        for pk, pv, msg in pprobs:
            where = f"{key}.params.{pk}" if pk in params else f"{key}.params_file[{m['params_file']}].{pk}"
            bad(where, pv, msg)
        mappers.append(MapperSpec(mname, resolved))

    run = _check_run(data.get("run", {}), bad)
    report = data.get("report", {})
    if not isinstance(report, dict):
        bad("report", report, "expected a table")
        report = {}

    if probs:
        raise CampaignError(source, probs)
    return Campaign(name=name, source=source, output=Path(out), networks=tuple(networks), kind=kind,
                    objectives=tuple(objectives), seeds=tuple(seeds), architectures=archs,
                    mappers=tuple(mappers), systolic=systolic, run=run, report=report,
                    description=str(data.get("description", "")), raw=data)


def _params_file(value: Any, mapper: str, base_dir: Path, key: str, bad) -> dict[str, Any] | None:
    """The ``[mappers.<mapper>]`` table of a ``params_file`` (e.g. `sweep tune`'s best_params.toml),
    resolved against the campaign's folder; None (and a problem reported) if unusable. Inline
    ``params`` are merged over it by the caller (inline wins)."""
    if not isinstance(value, str) or not value:
        bad(key, value, "expected a path to a TOML file with a [mappers.<name>] table")
        return None
    path = Path(value) if Path(value).is_absolute() else base_dir / value
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        bad(key, value, f"cannot read {path}: {e.strerror}")
        return None
    except tomllib.TOMLDecodeError as e:
        bad(key, value, f"{path} is not valid TOML: {e}")
        return None
    table = data.get("mappers", {}).get(mapper) if isinstance(data.get("mappers"), dict) else None
    if not isinstance(table, dict):
        bad(key, value, f"{path} has no [mappers.{mapper}] table")
        return None
    return dict(table)


def _check_run(run: Any, bad) -> RunOptions:
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


def _check_systolic(sys_: Any, bad) -> dict[str, Any]:
    from costmodel.systolic import SystolicParams
    import dataclasses
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
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
        else:
            ok = True
        if not ok:
            bad(f"systolic.{k}", v, f"expected {'a bool' if isinstance(d, bool) else 'a positive number'} (default {d!r})")
            continue
        out[k] = v
    return out
