"""Tables of an architecture search's designs shared by its report and its per-dataflow section
(`sweep.reports.archsearch`, `sweep.reports.dataflow`): a design as JSON-able data, the area-EDP
Pareto designs, the best design per area budget (mm^2) and each parameter's effect on EDP.
Rows are one network's designs (``design_id``, ``area_mm2``, ``energy_pj``, ``latency_cycles``,
``edp`` and the parameter columns; from `sweep.reports.archsearch.design_table` also ``latency_s``,
``edp_js`` and the columns designs are ranked by, ``rank_latency`` and ``rank_edp``: seconds and
J x s when the designs' clocks differ, else cycles and pJ x cycles, `rank_columns`)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from sweep.common import fmt
from sweep.reports.pareto import even_budgets, pareto_front

__all__ = ["ENERGY_DYNAMIC", "best_per_budget", "design_failures", "energy_basis", "parameter_effects", "pareto_designs",
           "rank_columns", "time_basis", "design_clocks", "latency_edp_text", "edp_unit"]

#: What a design's energy (``energy_pj`` of its totals, and so its EDP) includes: the model's per-access
#: energies (`sweep.engine.totals.ENERGY_BASIS`); static energy is never in it.
ENERGY_DYNAMIC = ("energy: dynamic only (the mappings' and vector operations' accesses and MACs at the model's "
                  "per-access figures: CACTI 22 nm SRAM, Horowitz 45 nm MACs, the DRAM kind's pJ/bit); no static "
                  "energy; EDP = that energy x the latency")


def rank_columns(df: pd.DataFrame) -> tuple[str, str]:
    """The (latency, EDP) columns designs are ranked by: ``rank_latency`` / ``rank_edp`` where the
    table has them (`sweep.reports.archsearch.design_table`), else ``latency_cycles`` / ``edp``."""
    return ("rank_latency", "rank_edp") if "rank_edp" in df else ("latency_cycles", "edp")


def time_basis(df: pd.DataFrame) -> str:
    """``s`` where the designs are ranked by seconds and J x s (`rank_columns`: their clocks
    differ), else ``cycles``."""
    return "s" if "rank_edp" in df and not df["rank_edp"].equals(df["edp"]) else "cycles"


def _py(v: Any) -> Any:
    """A numpy scalar as the Python scalar JSON writes (ints stay ints)."""
    if isinstance(v, np.generic):
        return v.item()
    return v


def _record(row: pd.Series, params: list[str]) -> dict[str, Any]:
    """A design's totals (with ``latency_s`` and ``edp_js`` where its clock is known) and parameter
    values as JSON-able data."""
    out = {"design_id": str(row["design_id"]), "area_mm2": float(row["area_mm2"]),
           "energy_pj": float(row["energy_pj"]), "latency_cycles": float(row["latency_cycles"]),
           "edp": float(row["edp"])}
    for k in ("latency_s", "edp_js"):
        if k in row.index and pd.notna(row[k]):
            out[k] = float(row[k])
    return {**out, "params": {p: _py(row[p]) for p in params if p in row.index}}


def pareto_designs(df: pd.DataFrame, columns: tuple[str, str] = ("area_mm2", "edp")) -> pd.DataFrame:
    """The rows of ``df`` (one network's designs) not dominated in ``columns`` (all minimised),
    sorted by area (mm^2), then by ``columns``, then design_id."""
    if df.empty:
        return df
    idx = pareto_front(df[list(columns)].to_numpy(dtype=float))
    keys = list(dict.fromkeys(["area_mm2", *columns, "design_id"]))
    return df.iloc[idx].sort_values(keys, kind="stable")


def best_per_budget(df: pd.DataFrame, params: list[str], budgets: list[float] | None = None) -> list[dict]:
    """Per area budget (mm^2; default `even_budgets` of the designs' areas, 6 of them), the design
    of lowest EDP (`rank_columns`) among those of area <= budget (ties: smaller area, then
    design_id), with the number of designs within the budget; ``design_id`` None when none fits."""
    budgets = even_budgets(df["area_mm2"], 6) if budgets is None else [float(b) for b in budgets]
    edp = rank_columns(df)[1]
    out = []
    for b in budgets:
        fit = df[df["area_mm2"] <= b]
        rec: dict[str, Any] = {"budget_mm2": float(b), "feasible": int(len(fit))}
        if fit.empty:
            rec["design_id"] = None
        else:
            best = fit.sort_values([edp, "area_mm2", "design_id"], kind="stable").iloc[0]
            rec.update(_record(best, params))
        out.append(rec)
    return out


def parameter_effects(df: pd.DataFrame, params: list[str]) -> dict[str, list[dict]]:
    """Per parameter and value (ascending): ``designs`` with that value, ``best_edp`` and
    ``median_edp`` (the `rank_columns` EDP: pJ x cycles, or J x s where clocks differ),
    ``best_vs_best`` and ``median_vs_best`` (over the best EDP of all of ``df``) and the
    ``best_design_id``."""
    if df.empty:
        return {}
    edp = rank_columns(df)[1]
    overall = float(df[edp].min())
    out: dict[str, list[dict]] = {}
    for p in params:
        if p not in df:
            continue
        recs = []
        for value, g in df.groupby(p, sort=True):
            best = g.sort_values([edp, "area_mm2", "design_id"], kind="stable").iloc[0]
            med = float(g[edp].median())
            recs.append({"value": _py(value), "designs": int(len(g)), "best_edp": float(best[edp]),
                         "median_edp": med, "best_vs_best": float(best[edp]) / overall,
                         "median_vs_best": med / overall, "best_design_id": str(best["design_id"])})
        out[p] = recs
    return out


def design_clocks(archs: pd.DataFrame) -> dict[str, float]:
    """design_id -> clock (MHz) from the ``archs`` table's accelerator JSON (designs whose JSON has
    no clock left out)."""
    if archs.empty or "arch" not in archs:
        return {}
    out = {}
    for did, a in archs.drop_duplicates("design_id")[["design_id", "arch"]].itertuples(index=False):
        mhz = json.loads(a).get("clock_mhz") if isinstance(a, str) else None
        if mhz:
            out[str(did)] = float(mhz)
    return out


def latency_edp_text(r: dict, basis: str) -> tuple[str, str]:
    """A design record's latency and EDP as printed: seconds and J x s on the ``s`` basis (designs
    of different clocks), cycles and pJ x cycles otherwise."""
    if basis == "s":
        return fmt.seconds(r.get("latency_s")), fmt.sig(r.get("edp_js"))
    return fmt.cycles(r["latency_cycles"]), fmt.edp(r["edp"], unit=False)


def edp_unit(basis: str) -> str:
    """The EDP unit of a report on ``basis`` (`time_basis`)."""
    return "J*s" if basis == "s" else "pJ*cycles"


def energy_basis(archs: pd.DataFrame) -> str:
    """What the energies per token and per request of a search's designs include: "dynamic only", or
    "dynamic + static" where a design's accelerator has an idle power (``[power] idle_w``, its static
    energy the idle power x the step's time x its chips, `sweep.engine.totals.static_energy`)."""
    powered = False
    if not archs.empty and "arch" in archs:
        powered = any(isinstance(a, str) and ((json.loads(a).get("power") or {}).get("idle_w") is not None)
                      for a in archs.drop_duplicates("design_id")["arch"])
    return ("dynamic + static (idle power x time) where a design states an idle power" if powered
            else "dynamic only (no static energy)")


def design_failures(d: pd.DataFrame) -> list[dict[str, Any]]:
    """Per (network, status) of the (design, network) rows that did not finish: how many designs,
    and the first one's ``error`` (e.g. a step that does not fit the design's DRAM: "does not fit:
    needs ..."), in the totals' order."""
    bad = d[d["status"].astype(str) != "ok"]
    out = []
    for (net, status), g in bad.groupby(["network", "status"], sort=False, observed=True):
        first = g.iloc[0]
        out.append({"network": str(net), "status": str(status), "designs": int(len(g)),
                    "design_id": str(first["design_id"]), "error": str(first.get("error") or "").split("\n")[0]})
    return out
