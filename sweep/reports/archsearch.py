"""`sweep report` of an architecture-search (``kind = "archsearch"``) result directory.

An architecture search maps every unique layer of several networks on many *designs* (a template
accelerator with named parameters changed, e.g. ``array.D1``); its ``totals`` table holds one
row per (design, network) with the network totals: energy (pJ), latency (cycles), EDP
(pJ x cycles, total energy x total latency) and the design's area (mm^2). Per network, lower is
better in every column:

* ``pareto_area_edp`` / ``pareto_energy_latency``: the non-dominated designs of (area, EDP) and
  of (energy, latency), sorted by area (`sweep.reports.pareto.pareto_front`);
* ``best_per_budget``: per area budget (``report.area_budgets``, default 6 budgets evenly spaced
  from the smallest to the largest area), the design of lowest EDP within the budget;
* ``parameter_effects``: per parameter and value, the designs, the best and median EDP, each
  also over the network's best EDP;
* ``top``: the ``report.top_k`` (default 10) best designs by the search's first objective;
* ``dataflows`` (campaigns with a ``dataflow`` axis, `sweep.reports.dataflow`): per dataflow the
  best design within each area budget, its Pareto front and its best and median EDP.

Every design on the (area, EDP) front of a network is written to ``DIR/designs/<design_id>.toml``
(an accelerator file `costmodel.loopnest.arch.load_accelerator` reads), and ``"designs"`` lists,
per network and front design, the file and the `sweep map` command that maps the network on it
with the campaign's mapper, objective, seed and parameters; with a ``dataflow`` axis so is the
best design of each dataflow per network (its entry has ``"why"``). Rows of a failed design
(status not "ok") and repeated (design, network) rows (the first kept) are left out.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from costmodel.importers import toml_out
from costmodel.loopnest.template import DATAFLOW
from sweep.common import fmt
from sweep.common.fmt import print_wide
from sweep.reports import dataflow
from sweep.reports.summary import (DOES_NOT_FIT, does_not_fit_mask, print_does_not_fit, print_failures, print_head,
                                   print_plots, read_rows, summary)
from sweep.reports.designs import (ENERGY_DYNAMIC, _py, _record, best_per_budget, design_clocks, design_failures,
                                   edp_unit, energy_basis, latency_edp_text, parameter_effects, pareto_designs,
                                   rank_columns, time_basis)
from sweep.reports.plots import category_ticks, figure, log_axis, save

__all__ = [
    "DESIGN_DIR",
    "VALUES",
    "best_per_budget",
    "build",
    "design_clocks",
    "design_table",
    "map_command",
    "network_arguments",
    "network_report",
    "parameter_effects",
    "pareto_designs",
    "show",
    "toml_literal",
    "top_designs",
    "write_design_files",
    "write_plots",
]

#: The per-network totals of a design: energy (pJ), latency (cycles), EDP (pJ x cycles), area (mm^2).
VALUES = ("energy_pj", "latency_cycles", "edp", "area_mm2")
_ALIASES = {"energy": "energy_pj", "latency": "latency_cycles", "area": "area_mm2"}
_SHOWN_ROWS = 15
#: Folder of the result directory the design files go to (the per-design totals are the
#: ``totals`` table, so this folder holds design files only).
DESIGN_DIR = "designs"


def _report_cfg(manifest: dict) -> dict:
    """The report options: ``config.report`` of the manifest, else its top-level ``report``."""
    cfg = manifest.get("config") or {}
    return cfg.get("report") or manifest.get("report") or {}


# -- tables ------------------------------------------------------------------------------------

def design_table(designs: pd.DataFrame, clocks: dict[str, float] | None = None) -> pd.DataFrame:
    """The usable rows of a ``totals`` table: one per (design_id, network), the first stored;
    status "ok" and finite energy (pJ), latency (cycles), EDP and area (mm^2) only; ``network``
    as plain strings. With each design's clock (MHz: the ``clock_mhz`` column where the search
    varies it, else ``clocks``, design_id -> MHz from the ``archs`` table, `design_clocks`):
    ``latency_s`` = cycles / clock and ``edp_js`` = energy (J) x latency_s. The columns designs
    are ranked by, ``rank_latency`` and ``rank_edp``, are those in seconds and J x s when the
    clocks differ (a cycle is not the same time on two designs), else cycles and pJ x cycles."""
    if designs.empty:
        return designs
    d = designs.drop_duplicates(["design_id", "network"], keep="first")
    d = d[d["status"].astype(str) == "ok"].copy()
    for c in VALUES:
        d[c] = pd.to_numeric(d[c], errors="coerce").astype(float)
    d = d[np.isfinite(d[list(VALUES)].to_numpy()).all(axis=1)]
    d["network"] = d["network"].astype(str)
    d["design_id"] = d["design_id"].astype(str)
    clock = pd.to_numeric(d["clock_mhz"], errors="coerce") if "clock_mhz" in d else \
        d["design_id"].map(clocks or {}).astype(float)
    d["latency_s"] = d["latency_cycles"] / (clock * 1e6)
    d["edp_js"] = d["energy_pj"] * 1e-12 * d["latency_s"]
    seconds = clock.notna().all() and clock.nunique() > 1
    d["rank_latency"] = d["latency_s"] if seconds else d["latency_cycles"]
    d["rank_edp"] = d["edp_js"] if seconds else d["edp"]
    return d.reset_index(drop=True)


def top_designs(df: pd.DataFrame, params: list[str], objective: str = "edp", k: int = 10) -> list[dict]:
    """The ``k`` designs of lowest ``objective`` (a column of `VALUES`, latency and EDP as ranked,
    `rank_columns`; ties: EDP, area, design_id)."""
    lat, edp = rank_columns(df)
    objective = {"latency_cycles": lat, "edp": edp}.get(objective, objective)
    keys = list(dict.fromkeys([objective, edp, "area_mm2", "design_id"]))
    return [_record(r, params) for _, r in df.sort_values(keys, kind="stable").head(k).iterrows()]


def network_report(df: pd.DataFrame, params: list[str], budgets: list[float] | None = None,
                   objective: str = "edp", top_k: int = 10) -> dict[str, Any]:
    """The report of one network's designs (see the module docstring), as JSON-able data."""
    if df.empty:
        return {"designs": 0, "pareto_area_edp": [], "pareto_energy_latency": [], "best_per_budget": [],
                "parameter_effects": {}, "top": []}
    lat, edp = rank_columns(df)
    return {
        "designs": int(len(df)), "best_edp": float(df[edp].min()),
        "pareto_area_edp": [_record(r, params) for _, r in pareto_designs(df, ("area_mm2", edp)).iterrows()],
        "pareto_energy_latency": [_record(r, params) for _, r in
                                  pareto_designs(df, ("energy_pj", lat)).iterrows()],
        "best_per_budget": best_per_budget(df, params, budgets),
        "parameter_effects": parameter_effects(df, params),
        "top": top_designs(df, params, objective, top_k),
    }


# -- commands ----------------------------------------------------------------------------------

def toml_literal(v: Any) -> str:
    """``v`` as one TOML value on one line, the way `sweep map --param KEY=VALUE` reads it (true/false,
    ints, ``repr`` of floats, strings in double quotes, arrays, inline tables; NumPy and pandas
    scalars as Python ones): `costmodel.importers.toml_out.value`, the one TOML writer."""
    return toml_out.value(_py(v))


def map_command(network: str | list[str], arch_file: str | Path, mapper: str, objective: str, seed: int,
                params: dict[str, Any]) -> str:
    """The shell command mapping ``network`` (zoo name or file path, or a list: the path of a
    config.json and its step's options) on ``arch_file``:
    ``sweep map --network N --arch F --mapper M --objective O --seed S --param k=v ...``, one
    ``--param`` per entry of ``params`` sorted by key (``seed`` and None values left out), every
    argument quoted with `shlex.quote`."""
    net = [str(network)] if isinstance(network, str) else [str(a) for a in network]
    args = ["sweep", "map", "--network", *net, "--arch", str(arch_file), "--mapper", str(mapper),
            "--objective", str(objective), "--seed", str(int(seed))]
    for k in sorted(params):
        if k != "seed" and params[k] is not None:
            args += ["--param", f"{k}={toml_literal(params[k])}"]
    return shlex.join(args)


def network_arguments(manifest: dict) -> dict[str, str | list[str]]:
    """Network name -> what `sweep map --network` takes: the zoo name, the absolute path of the
    campaign's network file (``{file = ...}`` resolved against ``base_dir``), or for a step of a
    config.json (``{config = ...}``) the file's path and the step's options (``--phase decode
    --batch 8 ...``)."""
    raw = (manifest.get("campaign") or {}).get("networks") or []
    names = [n.get("name") if isinstance(n, dict) else n for n in (manifest.get("config") or {}).get("networks", [])]
    base = Path(manifest.get("base_dir") or ".")
    out: dict[str, str | list[str]] = {}
    for i, item in enumerate(raw):
        if isinstance(item, str):
            out[item] = item
        elif isinstance(item, dict) and isinstance(item.get("file"), str):
            path = Path(item["file"])
            path = (path if path.is_absolute() else base / path).resolve()
            out[names[i] if len(names) == len(raw) else _file_network_name(path)] = str(path)
        elif isinstance(item, dict) and isinstance(item.get("config"), str):
            out.update(_config_steps(item["config"], base, [str(n) for n in names]))
    return out


def _config_steps(config: str, base: Path, names: list[str]) -> dict[str, list[str]]:
    """The campaign's steps of the model in ``config`` (their names start with its name) -> the
    file's path and each step's `sweep map` options."""
    from costmodel.transformer import parse_step_name
    from costmodel.transformer.hf import model_name
    path = Path(config)
    path = (path if path.is_absolute() else base / path).resolve()
    out = {}
    for name in names:
        parsed = parse_step_name(name, any_model=True)
        if parsed is None or parsed[0] != model_name(path):
            continue
        opts: list[str] = []
        for k, v in parsed[1].items():
            flag = "--" + k.replace("_", "-")
            opts += [flag] if v is True else [flag, str(v)]
        out[name] = [str(path), *opts]
    return out


def _file_network_name(path: Path) -> str:
    from costmodel.zoo import load_network_file
    try:
        return load_network_file(path).name
    except (OSError, ValueError):
        return path.stem


def _mapper_params(manifest: dict, mapper: str) -> dict[str, Any]:
    specs = (manifest.get("config") or {}).get("mappers") or [{}]
    spec = next((m for m in specs if m.get("name") == mapper), specs[0])
    return {k: v for k, v in (spec.get("params") or {}).items() if k != "seed" and v is not None}


# -- design files ------------------------------------------------------------------------------

_FILE_ORDER = ("name", "description", "mac_pj", "clock_mhz", "array", "precision", "spatial", "spatial_hint",
               "accumulator", "memory")


def _arch_dict(arch_json: str, design_id: str, template: str) -> dict[str, Any]:
    d = json.loads(arch_json)
    d["name"] = f"design_{design_id}"
    if d.get("description") is None:
        d["description"] = f"architecture-search design {design_id} of {template}"
    d = {k: d[k] for k in sorted(d, key=lambda k: (_FILE_ORDER.index(k) if k in _FILE_ORDER else 99, k))
         if d[k] is not None and d[k] != {}}  # the JSON's keys are sorted: a reader's order, no empty table
    d["memory"] = [{k: v for k, v in m.items() if v is not None} for m in d.get("memory", [])]
    return d


def write_design_files(directory: Path, manifest: dict, archs: pd.DataFrame, fronts: dict[str, list[str]],
                       values: dict[str, dict[str, Any]],
                       notes: dict[str, list[str]] | None = None) -> tuple[dict[str, str], list[str]]:
    """Write ``DIR/designs/<design_id>.toml`` for every design of ``fronts`` (network -> design
    ids) and of ``notes`` (design_id -> why it is written, one line each) from its ``arch`` JSON
    in ``archs``, with a header naming the campaign, the networks on whose front it is, the notes
    and its parameter ``values``; each checked by loading it and then renamed into place
    (atomic). Returns (design_id -> file, problems: designs without a stored or with an
    unloadable accelerator)."""
    from costmodel.loopnest.arch import load_accelerator

    notes = notes or {}
    nets_of: dict[str, list[str]] = {i: [] for i in notes}
    for net, ids in fronts.items():
        for i in ids:
            nets_of.setdefault(i, []).append(net)
    if not nets_of:
        return {}, []
    arch_of = {} if archs.empty else archs.drop_duplicates("design_id").set_index("design_id")["arch"].to_dict()
    template = str(((manifest.get("config") or {}).get("architectures") or {}).get("template", "?"))
    out_dir = directory / DESIGN_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    files, problems = {}, []
    for did, nets in nets_of.items():
        if did not in arch_of:
            problems.append(f"design {did}: no accelerator in the archs table")
            continue
        header = (f"Design {did} of the architecture search {manifest.get('name')!r} (template {template}),\n"
                  + (f"on the area-EDP Pareto front of: {', '.join(nets)}.\n" if nets else "")
                  + "".join(f"{n}.\n" for n in notes.get(did, []))
                  + "".join(f"{k} = {toml_literal(v)}\n" for k, v in values.get(did, {}).items())
                  + "Written by `sweep report`; map a network on it with `sweep map --arch <this file>`.")
        path = out_dir / f"{did}.toml"
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=out_dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(toml_out.dumps(_arch_dict(arch_of[did], did, template), header))
            load_accelerator(tmp)
            os.replace(tmp, path)
            files[did] = str(path)
        except (ValueError, TypeError, KeyError) as e:
            problems.append(f"design {did}: {e}")
        finally:
            Path(tmp).unlink(missing_ok=True)
    return files, problems


# -- build -------------------------------------------------------------------------------------

def build(directory: Path, manifest: dict, plots_dir: str | Path | None = None) -> dict[str, Any]:
    """The report of an architecture-search result directory as JSON-able data (module doc);
    writes the design files of the (area, EDP) fronts to ``DIR/designs`` and, with
    ``plots_dir``, the PNG plots (their paths under ``"plots"``).

    Raises:
        StoreError: unreadable, or no result row stored yet.
    """
    directory = Path(directory)
    rows, designs, archs = read_rows(directory, "totals", "archs")
    if "error" not in rows:
        rows = rows.assign(error=None)
    rep = summary(directory, manifest, rows)
    cfg = manifest.get("config") or {}
    space = cfg.get("architectures") or {}
    params = list(space.get("params") or [])
    search = cfg.get("search") or {}
    objective = (search.get("objectives") or ["edp"])[0]
    objective = _ALIASES.get(objective, objective if objective in VALUES else "edp")
    rcfg = _report_cfg(manifest)
    budgets = rcfg.get("area_budgets")
    top_k = int(rcfg.get("top_k", 10))
    rep.update(template=space.get("template"), params=params, search=search, top_objective=objective)
    df = design_table(designs, design_clocks(archs))
    rep["time_basis"], rep["energy_basis"] = time_basis(df), energy_basis(archs)
    if not designs.empty:
        d = designs.drop_duplicates(["design_id", "network"], keep="first")
        status = d["status"].astype(str).where(~does_not_fit_mask(d), DOES_NOT_FIT).value_counts()
        rep["design_rows"] = {k: int(status[k]) for k in sorted(status.index, key=lambda k: (k != "ok", k))}
        rep["designs_evaluated"] = int(d["design_id"].nunique())
        rep["design_failures"] = design_failures(d[d["status"].astype(str) != "pruned"])
        pruned = d.groupby("design_id")["status"].agg(lambda x: bool((x.astype(str) == "pruned").all()))
        if pruned.any():  # a grid pruned by bound (sweep.search.grid): what the tables cover
            rep["designs_pruned"] = int(pruned.sum())
            rep["designs_mapped"] = int((~pruned).sum())
    order = [n.get("name") for n in cfg.get("networks", []) if isinstance(n, dict)]
    nets = [n for n in order if n in set(df.get("network", []))]
    nets += [n for n in dict.fromkeys(df.get("network", [])) if n not in nets]
    per = {n: df[df["network"] == n] for n in nets}
    rep["networks"] = {n: network_report(per[n], params, budgets, objective, top_k) for n in nets}
    if DATAFLOW in params:
        for n in nets:
            rep["networks"][n]["dataflows"] = dataflow.dataflow_report(per[n], params, space, budgets)
    rep["designs"], rep["design_file_problems"] = _design_entries(directory, manifest, archs, rep["networks"], per,
                                                                  params)
    if plots_dir is not None:
        rep["plots"] = write_plots(rep, per, plots_dir)
    if "phase" in designs:  # transformer steps: which design for prefill, decode, the serving mix
        from sweep.reports.llm import llm_designs, step_precisions_text
        rep["precisions"] = step_precisions_text(_campaign_networks(directory, manifest))
        from sweep.engine.store import Store
        layer_rows = Store(directory).read("rows") if "loops" in rows else None
        llm = llm_designs(designs, layer_rows, archs, params, _campaign_networks(directory, manifest), plots_dir)
        if llm:
            rep["llm"] = llm
            rep["plots"] = rep.get("plots", []) + llm.get("plots", [])
        from sweep.reports.systems import design_costs, system_answers, write_systems_plots
        systems = system_answers(designs, rcfg.get("slo"), design_costs(archs) if len(archs) else None,
                                 [p for p in params if p in df and df[p].nunique() > 1])
        if systems:
            rep["systems"] = systems
            if plots_dir is not None:  # the answer's plot first
                rep["plots"] = write_systems_plots(systems, plots_dir) + rep.get("plots", [])
    return rep


def _campaign_networks(directory: Path, manifest: dict) -> list:
    """The campaign's networks, rebuilt from its manifest (the LLM answer needs each step's
    layers); [] if the stored campaign no longer parses."""
    from sweep.reports.llm import _campaign
    c, _ = _campaign(directory, manifest)
    return list(c.networks) if c is not None else []


def _design_entries(directory: Path, manifest: dict, archs: pd.DataFrame, reports: dict[str, dict],
                    per: dict[str, pd.DataFrame], params: list[str]) -> tuple[list[dict], list[str]]:
    """Write the design files of the (area, EDP) fronts and of the best design of each dataflow;
    one entry per (network, such design) with its file and `map_command` (and ``why`` for a
    dataflow's best design off the front)."""
    fronts = {n: [r["design_id"] for r in rep["pareto_area_edp"]] for n, rep in reports.items()}
    values = {r["design_id"]: r["params"] for rep in reports.values() for r in rep["pareto_area_edp"]}
    extra = dataflow.dataflow_designs(reports)          # network -> {design_id: why}
    notes: dict[str, list[str]] = {}
    for net, whys in extra.items():
        for i, why in whys.items():
            notes.setdefault(i, []).append(why)
            values.setdefault(i, _record(per[net][per[net]["design_id"] == i].iloc[0], params)["params"])
    if archs.empty or "arch" not in archs:
        archs = pd.DataFrame(columns=["design_id", "arch"])
    archs = archs.assign(design_id=archs["design_id"].astype(str))
    files, problems = write_design_files(directory.resolve(), manifest, archs, fronts, values, notes)
    cfg = manifest.get("config") or {}
    net_args = network_arguments(manifest)
    default_mapper = ((cfg.get("mappers") or [{}])[0]).get("name", "?")
    default_obj = (cfg.get("objectives") or ["edp"])[0]
    default_seed = (cfg.get("seeds") or [0])[0]
    out = []
    for net, ids in fronts.items():
        rows = per[net].drop_duplicates("design_id").set_index("design_id")
        whys = {i: w for i, w in extra.get(net, {}).items() if i not in ids}
        for did in ids + list(whys):
            r = rows.loc[did]
            mapper = str(r["mapper"]) if "mapper" in r.index and pd.notna(r["mapper"]) else default_mapper
            obj = str(r["objective"]) if "objective" in r.index and pd.notna(r["objective"]) else default_obj
            seed = int(r["seed"]) if "seed" in r.index and pd.notna(r["seed"]) else int(default_seed)
            file = files.get(did)
            out.append({"file": file, "network": net, "design_id": did, "energy_pj": float(r["energy_pj"]),
                        "latency_cycles": float(r["latency_cycles"]), "edp": float(r["edp"]),
                        **{k: float(r[k]) for k in ("latency_s", "edp_js") if k in r.index and pd.notna(r[k])},
                        "area_mm2": float(r["area_mm2"]),
                        # a serving mix is several steps (its own row of totals): no one command
                        "command": None if file is None or "/mix/" in net else map_command(
                            net_args.get(net, net), file, mapper, obj, seed, _mapper_params(manifest, mapper))}
                       | ({"why": whys[did]} if did in whys else {}))
    return out, problems


# -- plots -------------------------------------------------------------------------------------

def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def write_plots(rep: dict[str, Any], per: dict[str, pd.DataFrame], plots_dir: str | Path) -> list[str]:
    """Per network of at least 2 designs: area (mm^2) vs EDP of every design (grey) with the (area,
    EDP) Pareto front (red), per parameter of at least 2 values the best and median EDP over them,
    and with a dataflow axis `sweep.reports.dataflow.write_plot`. Returns the paths written."""
    plots_dir = Path(plots_dir)
    plots_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for net, nrep in rep.get("networks", {}).items():
        df = per[net]
        if len(df) < 2:  # one design: a plot of one dot says nothing the tables do not
            continue
        fig, ax = figure(figsize=(6.5, 4.2))
        edp, unit = ("edp_js", "J x s") if rep.get("time_basis") == "s" else ("edp", "pJ x cycles")
        ax.scatter(df["area_mm2"], df[edp], s=10, color="0.6", alpha=0.6, label=f"designs ({len(df)})")
        front = pd.DataFrame(nrep["pareto_area_edp"])
        ax.plot(front["area_mm2"], front[edp], color="red", marker="o", ms=4, lw=1.2, drawstyle="steps-post",
                label=f"Pareto front ({len(front)})")
        log_axis(ax, "y")
        ax.set_xlabel("area (mm$^2$)")
        ax.set_ylabel(f"EDP ({unit})")
        ax.legend(fontsize=8)
        written.append(save(fig, plots_dir / f"archsearch_{_safe(net)}_area_edp.png",
                            f"{net}: EDP over area of every design"))
        effects = {p: recs for p, recs in nrep["parameter_effects"].items() if len(recs) > 1}  # one value: one dot
        if effects:
            written.append(_effects_plot(net, effects, plots_dir / f"archsearch_{_safe(net)}_parameters.png", unit))
        f = dataflow.write_plot(net, nrep, df, plots_dir / f"archsearch_{_safe(net)}_dataflows.png")
        if f is not None:
            written.append(f)
    return written


def _effects_plot(net: str, effects: dict[str, list[dict]], path: Path, unit: str = "pJ x cycles") -> str:
    n = len(effects)
    cols = min(n, 3)
    rows = -(-n // cols)
    fig, axes = figure(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, (p, recs) in zip(axes.flat, effects.items()):
        x = range(len(recs))
        ax.plot(x, [r["best_edp"] for r in recs], marker="o", label="best")
        ax.plot(x, [r["median_edp"] for r in recs], marker=".", ls="--", label="median")
        log_axis(ax, "y")
        category_ticks(ax, [f"{r['value']:g}" if isinstance(r["value"], float) else str(r["value"]) for r in recs])
        ax.set_xlabel(p)
        ax.set_ylabel(f"EDP ({unit})")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    return save(fig, path, f"{net}: EDP per parameter value")


# -- show --------------------------------------------------------------------------------------

def _fmt_value(v: Any) -> str:
    return fmt.sig(v) if isinstance(v, float) else str(v)


def _fixed_params(params: list[str], n: dict[str, Any]) -> dict[str, Any]:
    """The parameters that take one value over the network's designs (parameter -> that value):
    their columns say nothing, a line above the tables does."""
    eff = n.get("parameter_effects") or {}
    return {p: eff[p][0]["value"] for p in params if len(eff.get(p) or []) == 1}


def _design_table(title: str, recs: list[dict], params: list[str], extra: list[tuple[str, str]] = (),
                  limit: int | None = None, basis: str = "cycles"):
    """Designs as a table: id, area (mm^2), energy, latency, EDP (pJ x cycles, or on the ``s``
    basis seconds and J x s) in engineering units, then the values of ``params``."""
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for c, _ in extra:
        t.add_column(c, justify="right", no_wrap=True)
    for c in ("design", "area mm^2", "energy", "latency", f"EDP {edp_unit(basis)}", *params):
        t.add_column(c, justify="left" if c == "design" else "right", no_wrap=True)
    shown = recs if limit is None else recs[:limit]
    for r in shown:
        lead = [str(r.get(k, "")) if not isinstance(r.get(k), float) else fmt.sig(r[k]) for _, k in extra]
        if r.get("design_id") is None:
            t.add_row(*lead, "(none fits)", *[""] * (4 + len(params)))
            continue
        t.add_row(*lead, r["design_id"], fmt.sig(r["area_mm2"]), fmt.energy(r["energy_pj"]),
                  *latency_edp_text(r, basis), *[_fmt_value(r["params"].get(p, "")) for p in params])
    if limit is not None and len(recs) > limit:
        t.caption = f"{len(recs) - limit} more design(s) in `sweep report --json`"
        t.caption_justify = "left"
    return t


def _effects_table(net: str, effects: dict[str, list[dict]], basis: str = "cycles"):
    from rich.table import Table

    t = Table(title=f"{net}: effect of each parameter (EDP in {edp_unit(basis)}; x: over the network's best design)",
              title_justify="left")
    for c in ("parameter", "value", "designs", "best EDP", "x best", "median EDP", "x median", "best design"):
        t.add_column(c, justify="left" if c in ("parameter", "best design") else "right", no_wrap=True)
    for p, recs in effects.items():
        for i, r in enumerate(recs):
            best, med = ((fmt.sig(r["best_edp"]), fmt.sig(r["median_edp"])) if basis == "s" else
                         (fmt.edp(r["best_edp"], unit=False), fmt.edp(r["median_edp"], unit=False)))
            t.add_row(p if i == 0 else "", _fmt_value(r["value"]), str(r["designs"]), best,
                      f"{r['best_vs_best']:.2f}", med, f"{r['median_vs_best']:.2f}", r["best_design_id"])
    return t


def _show_network(net: str, n: dict[str, Any], params: list[str], top_objective: str, console,
                  basis: str = "cycles") -> None:
    """One network's tables: fronts, best per budget, parameter effects, dataflows, top designs;
    the parameters that take one value named once above them instead of as columns."""
    fixed = _fixed_params(params, n)
    cols = [p for p in params if p not in fixed]
    if fixed:
        console.print(f"{net}: every design has " + ", ".join(f"{p} = {_fmt_value(v)}" for p, v in fixed.items()),
                      soft_wrap=True, highlight=False, markup=False)
    print_wide(console, _design_table(f"{net}: Pareto front of area and EDP ({len(n['pareto_area_edp'])} designs of "
                                      f"{n['designs']})", n["pareto_area_edp"], cols, limit=_SHOWN_ROWS, basis=basis))
    print_wide(console, _design_table(f"{net}: Pareto front of energy and latency", n["pareto_energy_latency"],
                                      cols, limit=_SHOWN_ROWS, basis=basis))
    print_wide(console, _design_table(f"{net}: best EDP within each area budget", n["best_per_budget"], cols,
                                      extra=[("budget mm^2", "budget_mm2"), ("fit", "feasible")], basis=basis))
    effects = {p: r for p, r in n["parameter_effects"].items()
               if p not in fixed and not (p == DATAFLOW and "dataflows" in n)}
    if effects:
        print_wide(console, _effects_table(net, effects, basis))
    dataflow.show_network(net, n, console, basis)
    print_wide(console, _design_table(f"{net}: top {len(n['top'])} designs by {top_objective}", n["top"], cols,
                                      basis=basis))


def show(rep: dict[str, Any], console) -> None:
    """Print ``rep`` (from `build`) as Rich tables: the head line and, over systems of chips, the answer
    (`sweep.reports.systems.print_systems`: the cheapest system meeting the targets, the front); the
    steps that do not fit a design's DRAM (counted, neutral) and what failed; then per network the Pareto
    fronts (at most 15 rows each), the best design per area budget, the parameter effects (the
    dataflow's in its own section, `sweep.reports.dataflow.show_network`) and the top designs,
    then the design files with their `sweep map` commands."""
    print_head(rep, console)
    for text, steps in (rep.get("precisions") or {}).items():
        console.print(f"precisions of {len(steps)} step(s) ({steps[0]}{', ...' if len(steps) > 1 else ''}): "
                      f"{text}", soft_wrap=True, highlight=False, markup=False)
    if rep.get("systems"):  # the answer first, then the detail
        from sweep.reports.systems import print_systems
        print_systems(rep["systems"], console)
    print_does_not_fit(rep, console)
    print_failures(rep, console)
    s = rep.get("search") or {}
    console.print(f"architecture search on {rep.get('template')}: parameters {fmt.words(rep.get('params', []))}; "
                  f"sampler {s.get('sampler')}, objective(s) {fmt.words(s.get('objectives') or [])}; "
                  f"{rep.get('designs_evaluated', 0)} design(s) evaluated, (design, network) rows: "
                  f"{fmt.counts(rep.get('design_rows', {}))}", soft_wrap=True, highlight=False, markup=False)
    if rep.get("designs_pruned"):
        console.print(f"  {rep['designs_mapped']:,} design(s) mapped, {rep['designs_pruned']:,} pruned by bound: each "
                      "beaten on every phase's figure and every step's time, against area, by a mapped design "
                      "(its rows say by which); the answer per phase (fronts, the best, the best per mm^2) is the "
                      "whole grid's, the per-network tables (EDP, energy) and the parameter effects are over the "
                      "mapped designs", soft_wrap=True, highlight=False, markup=False)
    for f in [f for f in rep.get("design_failures") or [] if not f["error"].startswith("does not fit")]:
        console.print(f"  {f['status']}: {f['network']}: {f['designs']} design(s), e.g. {f['design_id']}: {f['error']}",
                      soft_wrap=True, highlight=False, markup=False)
    if not rep.get("networks") and rep.get("failures"):
        console.print("no design finished on any network: no front, budget or parameter table (the failures "
                      "are listed above)", style="yellow", soft_wrap=True, highlight=False)
    params = rep.get("params", [])
    basis = rep.get("time_basis", "cycles")
    if basis == "s":
        console.print("the designs' clocks differ: designs are ranked by latency in seconds and EDP in J*s (the "
                      "cycles and pJ*cycles of each are in `sweep report --json`)", soft_wrap=True, highlight=False,
                      markup=False)
    if rep.get("networks"):
        console.print(ENERGY_DYNAMIC, soft_wrap=True, highlight=False, markup=False)
    for net, n in rep.get("networks", {}).items():
        _show_network(net, n, params, rep.get("top_objective", "edp"), console, basis)
    if rep.get("designs"):
        console.print("[bold]Design files of the area-EDP fronts[/]"
                      + (" and of each dataflow's best" if any(d.get("why") for d in rep["designs"]) else "")
                      + " (the command maps the network on the design):", soft_wrap=True)
    for d in rep.get("designs", []):
        edp = f"{fmt.sig(d['edp_js'])} J*s" if basis == "s" and d.get("edp_js") is not None else fmt.edp(d["edp"])
        console.print(f"{d['network']} / {d['design_id']}: area {fmt.area(d['area_mm2'])}, EDP {edp}"
                      + (f" ({d['why']})" if d.get("why") else "") + f" -> {d['file']}", highlight=False, markup=False, soft_wrap=True)
        if d.get("command"):
            console.print(f"  {d['command']}", highlight=False, markup=False, soft_wrap=True)
    for p in rep.get("design_file_problems", []):
        console.print(f"design file not written: {p}", style="red", highlight=False, markup=False, soft_wrap=True)
    if rep.get("llm"):
        from sweep.reports.llm import print_llm_designs
        print_llm_designs(rep, console)
    print_plots(rep, console)
