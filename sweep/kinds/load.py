"""Campaign files (TOML) -> a validated `sweep.config.campaign.Campaign` driven by its kind.

`parse_campaign` checks every table and reports *every* problem it finds, each with its TOML key
path and value, in one `CampaignError`; nothing runs on an invalid campaign. The tables every kind
has are checked by `sweep.config.campaign`; the kind (`sweep.kinds.registry.detect`) parses its
own sections, checks them against each other and names its objectives and ``[report]`` keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sweep.config.campaign import (TOP_KEYS, Campaign, mapper_names, network_names, parse_mappers,
                                   parse_name_output, parse_objectives, parse_run, parse_seeds,
                                   parse_systolic)
from sweep.config.networks import mix_networks, parse_networks, parse_system, parse_workload
from sweep.config.report_table import parse_report
from sweep.config.validation import Findings, check_table, read_toml
from sweep.common.errors import CampaignError, Finding, StoreError
from sweep.kinds.registry import KINDS, detect, unknown_kind_message
from sweep.kinds.tune import TuneKind

__all__ = ["load_campaign", "parse_campaign", "load_any", "campaign_from_manifest"]


def load_campaign(path: str | Path, output: str | Path | None = None) -> Campaign:
    """Read and validate a campaign file (`sweep run`).

    Args:
        path: the TOML file. Relative file names inside it are resolved against its folder.
        output: overrides the file's ``output`` (the CLI's ``--out``).

    Raises:
        CampaignError: the file cannot be read or parsed, is a tuning campaign (run by `sweep tune`),
            or has problems (all are listed).
    """
    p = Path(path)
    return parse_campaign(read_toml(p), source=str(p), base_dir=p.parent, output=output)


def load_any(path: str | Path, output: str | Path | None = None) -> tuple[Any, Any]:
    """(the kind, the validated campaign) of any campaign file, a tuning campaign included
    (`sweep validate`).

    Raises:
        CampaignError: as `load_campaign` (or `sweep.config.tune_campaign.load_tune_campaign`).
    """
    p = Path(path)
    data = read_toml(p)
    kind = detect(data)
    if isinstance(kind, TuneKind):
        return kind, kind.load(p, output)
    c = parse_campaign(data, source=str(p), base_dir=p.parent, output=output)
    return c.plan, c


def parse_campaign(data: dict[str, Any], source: str = "<campaign>", base_dir: Path | None = None,
                   output: str | Path | None = None) -> Campaign:
    """Validate parsed TOML ``data``; see `load_campaign`. Every finding of every table is collected
    before the one `CampaignError` is raised."""
    base_dir = base_dir or Path(".")
    kind = detect(data)
    if isinstance(kind, TuneKind):
        raise CampaignError(source, [Finding("<file>", source, "a tuning campaign ([space] and [training] tables): "
                                             "run it with `sweep tune`")])
    findings = Findings()
    bad = findings.bad
    check_table(data, "", TOP_KEYS | set(kind.top_keys if kind is not None else ()), bad)
    name, out = parse_name_output(data, output, bad)
    own = kind is not None and not kind.common_tables   # its sections name what it maps
    # a [workload] mix brings its own steps: then `networks` may be left out
    networks = parse_networks(data.get("networks"), base_dir, bad) \
        if not own and ("networks" in data or "workload" not in data) else []
    workload = parse_workload(data.get("workload"), bad, base_dir)
    system = parse_system(data.get("system"), bad)
    if workload is not None:  # the mix's steps join the networks (once each; a namesake must be the same step)
        networks += mix_networks(workload, bad, networks)
    objectives = (parse_objectives(data, kind.name, kind.objectives, kind.objective_defaults(), bad)
                  if kind is not None else [])
    seeds = parse_seeds(data.get("seeds", [0]), bad)
    systolic = parse_systolic(data.get("systolic", {}), bad)
    archs = search = None
    if kind is not None:
        archs, search = kind.parse_sections(data, base_dir, objectives, seeds, bad)
    else:
        bad("architectures.kind", data["architectures"]["kind"], unknown_kind_message())
    mappers = [] if own else parse_mappers(data.get("mappers"), kind.name if kind else None,
                                           kind.mapper_kind if kind else None, base_dir, bad)
    if kind is not None:
        kind.check(networks, archs, mappers, bad)
        # a [workload] table that did not parse was reported already: not "add a [workload] table" too
        kind.check_search(search, networks, bad, workload if workload is not None else data.get("workload"))
    run = parse_run(data.get("run", {}), bad)
    known = kind.report_keys if kind is not None else tuple(sorted({k for c in KINDS.values() for k in c.report_keys}))
    report = parse_report(data.get("report", {}), kind.name if kind else "unknown", known,
                          network_names(data.get("networks"), networks), mapper_names(data.get("mappers")), bad)
    findings.raise_if_any(source)
    assert kind is not None  # an unknown kind is a finding
    return Campaign(name=name, source=source, output=Path(out), networks=tuple(networks), plan=kind,
                    objectives=tuple(objectives), seeds=tuple(seeds), architectures=archs,
                    mappers=tuple(mappers), systolic=systolic, run=run, report=report,
                    description=str(data.get("description", "")), raw=data, search=search, workload=workload,
                    system=system)


def campaign_from_manifest(directory: str | Path, output: str | Path) -> Campaign:
    """The campaign that produced the result directory ``directory``, to rerun into ``output``:
    the campaign file's parsed contents, stored in ``manifest.json``, validated again with file
    names relative to the original campaign file's folder.

    Raises:
        StoreError: not a result directory, no stored campaign (written by an older version, or a
            `sweep tune` directory), or the inputs changed since (a network or accelerator file,
            a preset, a mapper version: the resolved configuration's hash differs), so a rerun
            would not reproduce the rows.
    """
    from sweep.engine.store import Store  # (pandas: not at import)
    m = Store(directory).manifest()
    if not isinstance(m.get("campaign"), dict):
        raise StoreError(f"{Path(directory) / 'manifest.json'}: campaign = None: no stored campaign to rerun "
                         "(a `sweep tune` directory, or written before rows recorded their configuration)")
    source = str(m.get("source", "<manifest>"))
    c = parse_campaign(m["campaign"], source=f"{source} (from {directory}/manifest.json)",
                       base_dir=Path(m.get("base_dir") or Path(source).parent), output=output)
    if c.config_hash() != m.get("config_hash"):
        then, now = (m.get("config") or {}).get("loopnest_model"), c.resolved_config().get("loopnest_model")
        if then != now and now is not None:
            raise StoreError(f"{Path(directory) / 'manifest.json'}: loopnest_model = {then}: the loop-nest cost "
                             f"model changed since (now version {now}; costmodel/loopnest/reference.py says "
                             "what each version changed), so a rerun would not reproduce these rows; run the "
                             f"campaign file again ({source}) into a new directory for version-{now} rows")
        raise StoreError(f"{Path(directory) / 'manifest.json'}: config_hash = {str(m.get('config_hash'))[:12]}: "
                         f"the campaign now resolves to {c.config_hash()[:12]} (its network/accelerator files, "
                         "presets or mapper versions changed), so a rerun would not reproduce the rows")
    return c
