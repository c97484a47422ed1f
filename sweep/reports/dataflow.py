"""The dataflow sections of `sweep report` of an architecture search with a ``dataflow`` axis.

A campaign's ``[architectures.dataflows]`` (`sweep.config.designspace`) names fixed spatial
unrollings and hints; its grid parameter ``dataflow`` makes each design one of them, and the
``totals`` table holds the name in its ``dataflow`` column. Per network, lower is better in every
column (EDP in pJ x cycles, area in mm^2), and each network's report gains ``"dataflows"``:

* ``names``: the dataflows in the grid's order (those of the manifest's axis; names only seen in
  the totals after them, sorted); ``kinds``: name -> ``"fixed"`` (a spatial unrolling) or
  ``"hint"`` (searched per layer by the mapper), from the manifest's definitions;
* ``effects``: per dataflow with designs, the designs, the best and median EDP, each also over
  the network's best EDP, and the best design (`sweep.reports.archsearch.parameter_effects`), with
  its ``kind``;
* ``best_per_budget``: per dataflow, the design of lowest EDP within each area budget, with the
  network's budgets (`sweep.reports.archsearch.best_per_budget`: ``design_id`` None where none of
  the dataflow's designs fits);
* ``pareto_area_edp``: per dataflow, its designs not dominated in (area, EDP) by another design of
  the same dataflow, sorted by area.

The best design of each dataflow (lowest EDP) is written to ``DIR/designs`` like the front's
(`dataflow_designs`), so every dataflow has a design file and a `sweep map` command reproducing
its totals; the file carries the dataflow as the accelerator's ``[spatial]`` (fixed) or empty
``[spatial]`` plus ``[spatial_hint]`` (hint: `sweep map` searches it again, with the campaign's
mapper parameters). Without a ``dataflow`` column nothing here is added.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from costmodel.loopnest.template import DATAFLOW
from sweep.common import fmt
from sweep.common.fmt import print_wide
from sweep.reports.designs import _record, best_per_budget, parameter_effects, pareto_designs, rank_columns, time_basis
from sweep.reports.pareto import even_budgets

__all__ = ["dataflow_designs", "dataflow_names", "dataflow_report", "show_network", "write_plot"]


def dataflow_names(df: pd.DataFrame, space: dict) -> list[str]:
    """The dataflows of the report in order: the manifest's axis (``space["axes"]["dataflow"]``)
    first, then any other name in ``df[dataflow]``, sorted."""
    axis = [str(x) for x in ((space.get("axes") or {}).get(DATAFLOW) or [])]
    seen = sorted({str(x) for x in df[DATAFLOW]} - set(axis)) if DATAFLOW in df else []
    return axis + seen


def _kinds(space: dict, names: list[str]) -> dict[str, str]:
    defs = space.get("dataflows") or {}
    return {n: ("hint" if "spatial_hint" in (defs.get(n) or {}) else "fixed" if n in defs else "?") for n in names}


def dataflow_report(df: pd.DataFrame, params: list[str], space: dict,
                    budgets: list[float] | None = None) -> dict[str, Any]:
    """The ``"dataflows"`` section of one network's report (module docstring) from its design
    table ``df`` (`sweep.reports.archsearch.design_table` rows of one network, with a
    ``dataflow`` column); ``budgets`` in mm^2 (None: `even_budgets` of the network's areas, as
    the network's own table)."""
    names = dataflow_names(df, space)
    kinds = _kinds(space, names)
    budgets = even_budgets(df["area_mm2"], 6) if budgets is None else [float(b) for b in budgets]
    eff = {r["value"]: r for r in parameter_effects(df, [DATAFLOW]).get(DATAFLOW, [])}
    out: dict[str, Any] = {"names": names, "kinds": kinds, "effects": [], "best_per_budget": {},
                           "pareto_area_edp": {}}
    for n in names:
        sub = df[df[DATAFLOW].astype(str) == n]
        if n in eff:
            out["effects"].append({"dataflow": n, "kind": kinds[n], **{k: v for k, v in eff[n].items()
                                                                       if k != "value"}})
        out["best_per_budget"][n] = best_per_budget(sub, params, budgets)
        out["pareto_area_edp"][n] = [_record(r, params) for _, r in
                                     pareto_designs(sub, ("area_mm2", rank_columns(sub)[1])).iterrows()]
    return out


def dataflow_designs(reports: dict[str, dict]) -> dict[str, dict[str, str]]:
    """Network -> {design_id: why} for the best design of each dataflow (from the networks'
    ``dataflows`` effects): the designs written to ``DIR/designs`` besides the fronts'."""
    return {net: {e["best_design_id"]: f"best design of dataflow {e['dataflow']!r} on {net}"
                  for e in rep["dataflows"]["effects"]}
            for net, rep in reports.items() if "dataflows" in rep}


# -- show --------------------------------------------------------------------------------------

def _edp(r: dict, key: str, basis: str) -> str:
    """An EDP of a record on ``basis`` (J x s on ``s``, the record's ``edp_js``; else pJ x cycles)."""
    if basis == "s":
        return fmt.sig(r.get({"edp": "edp_js"}.get(key, key)))
    return fmt.edp(r[key], unit=False)


def show_network(net: str, rep: dict[str, Any], console, basis: str = "cycles") -> None:
    """Print a network's dataflow section: the best EDP (and design) of each dataflow within
    each area budget, then each dataflow's best and median EDP (pJ x cycles, or J x s on the
    ``s`` basis: designs of different clocks)."""
    from rich.table import Table

    d = rep.get("dataflows")
    if not d:
        return
    names = d["names"]
    unit = "J*s" if basis == "s" else "pJ*cycles"
    t = Table(title=f"{net}: best EDP per dataflow and area budget (EDP in {unit}, design)", title_justify="left")
    t.add_column("budget mm^2", justify="right", no_wrap=True)
    for n in names:
        t.add_column(f"{n} ({d['kinds'][n]})", justify="right", no_wrap=True)
    budgets = [r["budget_mm2"] for r in next(iter(d["best_per_budget"].values()), [])]
    for i, b in enumerate(budgets):
        cells = []
        for n in names:
            r = d["best_per_budget"][n][i]
            cells.append("-" if r.get("design_id") is None else f"{_edp(r, 'edp', basis)} ({r['design_id']})")
        t.add_row(fmt.sig(b), *cells)
    print_wide(console, t)
    t = Table(title=f"{net}: effect of the dataflow (EDP in {unit}; x: over the best)", title_justify="left")
    for c in ("dataflow", "kind", "designs", "best EDP", "x best", "median EDP", "x median", "best design"):
        t.add_column(c, justify="left" if c in ("dataflow", "kind", "best design") else "right", no_wrap=True)
    for r in d["effects"]:
        t.add_row(r["dataflow"], r["kind"], str(r["designs"]), _edp(r, "best_edp", basis),
                  f"{r['best_vs_best']:.2f}", _edp(r, "median_edp", basis), f"{r['median_vs_best']:.2f}",
                  r["best_design_id"])
    print_wide(console, t)


# -- plot --------------------------------------------------------------------------------------

def write_plot(net: str, rep: dict[str, Any], df: pd.DataFrame, path: str | Path) -> str | None:
    """One PNG of a network's dataflows: left, area (mm^2) vs EDP of every design coloured by
    dataflow with each dataflow's (area, EDP) front; right, each dataflow's best EDP within each
    area budget. Returns the path, or None without a dataflow section."""
    from sweep.reports.plots import figure, log_axis, save

    d = rep.get("dataflows")
    if not d or df.empty:
        return None
    fig, (ax, bx) = figure(1, 2, figsize=(11.0, 4.2))
    edp, unit = ("edp_js", "J x s") if time_basis(df) == "s" else ("edp", "pJ x cycles")
    for n in d["names"]:
        sub = df[df[DATAFLOW].astype(str) == n]
        if sub.empty:
            continue
        pts = ax.scatter(sub["area_mm2"], sub[edp], s=10, alpha=0.5, label=f"{n} ({len(sub)})")
        front = pd.DataFrame(d["pareto_area_edp"][n])
        ax.plot(front["area_mm2"], front[edp], color=pts.get_facecolor()[0][:3], lw=1.2, drawstyle="steps-post")
        best = [(r["budget_mm2"], r[edp]) for r in d["best_per_budget"][n] if r.get("design_id") is not None]
        if best:
            bx.plot(*zip(*best), marker="o", ms=4, drawstyle="steps-post", label=n)
    for a, x in ((ax, "area (mm$^2$)"), (bx, "area budget (mm$^2$)")):
        log_axis(a, "y")
        a.set_xlabel(x)
        a.set_ylabel(f"EDP ({unit})")
        a.legend(fontsize=8)
    ax.set_title("designs and each dataflow's Pareto front", fontsize=9)
    bx.set_title("best EDP within the budget", fontsize=9)
    return save(fig, Path(path), f"{net}: EDP over area per dataflow")
