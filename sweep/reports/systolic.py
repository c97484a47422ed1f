"""`sweep report` of a DeepOpt (``kind = "systolic"``) result directory: paper-style tables and
PNG plots of hardware-allocation results (Manasi & Sapatnekar, ASP-DAC 2021):

* ``optimal``: per network and PM the optimal allocation and its improvement over the worst
  allocation (Table 4, for every network), with the per-layer branch choices of the optimum;
* ``penalty_ED``: running network B on the E*D-optimal hardware of network A, in percent over B's
  own optimum (Table 5);
* ``fs_penalty``: fixed scheduling vs LOS per PM at one hardware point, by default Table 3's
  (J x K = 32 x 64, 16/32/8 KiB), computed afresh with the campaign's networks and model;
* plots: PM over area, and E vs D with its Pareto front.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from costmodel.workload import Layer, Network
from sweep.common import fmt
from sweep.common.fmt import print_wide
from sweep.reports.summary import print_plots, print_summary, read_rows, summary
from sweep.reports.plots import figure, log_axis, save

__all__ = ["TABLE3_POINT", "build", "show", "write_plots"]


#: DeepOpt Table 3's hardware: J x K = 32 x 64, fSRAM 16, iSRAM 32, pSRAM 8 KiB.
TABLE3_POINT = {"J": 32, "K": 64, "fsram_kib": 16, "isram_kib": 32, "psram_kib": 8}
_HW = ["J", "K", "fsram_kib", "isram_kib", "psram_kib"]


def _networks(manifest: dict) -> list[Network]:
    nets = []
    for n in manifest["config"]["networks"]:
        layers = tuple(Layer(**l) for l in n["layers"])
        nets.append(Network(n["name"], layers, tuple(n["repeats"])))
    return nets


def build(directory: Path, manifest: dict, plots_dir: str | Path | None = None) -> dict[str, Any]:
    """The report of a DeepOpt result directory as JSON-able data (module doc); with
    ``plots_dir``, also the PNG plots (their paths under ``"plots"``).

    Raises:
        StoreError: unreadable, or no result row stored yet.
    """
    rows, layers = read_rows(directory, "layers")
    rep = summary(directory, manifest, rows)
    ok = rows[rows["status"] == "ok"]
    if ok.empty or "pm_value" not in ok:
        return rep
    ok = ok[np.isfinite(ok["pm_value"])]
    rep["optimal"] = _optimal(ok, layers, _window(manifest))
    if "ED" in set(ok["pm"]):
        rep["penalty_ED"] = _penalty(ok, "ED")
    point = dict(TABLE3_POINT, **(manifest.get("report") or {}).get("fs_point", {}))
    rep["fs_penalty"] = _fs_penalty(manifest, point)
    if plots_dir is not None:
        rep["plots"] = write_plots(rows, plots_dir)
    return rep


def _best_index(g: pd.DataFrame) -> int:
    """Row label of the smallest PM; ties go to the smaller area, then the lower point index."""
    return g.sort_values(["pm_value", "area_mm2", "point"], kind="stable").index[0]


def _window(manifest: dict) -> tuple[float, float] | None:
    """DeepOpt's worst-case window: area within ``worst_case_window`` (default 10%) under the budget."""
    spec = manifest["config"]["architectures"].get("spec") or {}
    grid = spec.get("grid") if isinstance(spec, dict) else None
    budget = grid.get("area_budget_mm2") if isinstance(grid, dict) else None
    if budget is None:
        return None
    frac = float((manifest.get("report") or {}).get("worst_case_window", 0.10))
    return ((1.0 - frac) * float(budget), float(budget))


def _optimal(ok: pd.DataFrame, layers: pd.DataFrame, window: tuple[float, float] | None) -> list[dict]:
    out = []
    for (net, pm, mode), g in ok.groupby(["network", "pm", "network_pm"], sort=False, observed=True):
        best = g.loc[_best_index(g)]
        worst = g.loc[g["pm_value"].idxmax()]
        rec = {"network": net, "pm": pm, "network_pm": mode,
               **{k: int(best[k]) for k in _HW}, "area_mm2": float(best["area_mm2"]),
               "pm_value": float(best["pm_value"]), "energy_pj": float(best["energy_pj"]),
               "cycles": float(best["cycles"]), "points": len(g),
               "worst": {k: int(worst[k]) for k in _HW},
               "improvement_over_worst": float(worst["pm_value"] / best["pm_value"])}
        if window is not None:
            w = g[(g["area_mm2"] >= window[0]) & (g["area_mm2"] <= window[1])]
            if not w.empty:
                wb = w.loc[_best_index(w)]
                rec["window_mm2"] = list(window)
                rec["optimum_in_window"] = bool(wb["point"] == best["point"])
                rec["improvement_over_worst_in_window"] = float(w["pm_value"].max() / wb["pm_value"])
        if not layers.empty:
            sel = layers[(layers["network"] == net) & (layers["pm"] == pm)
                         & (layers["network_pm"] == mode) & (layers["point"] == best["point"])]
            if not sel.empty:
                counts = sel.groupby("branch")["repeat"].sum().sort_values(ascending=False)
                rec["branches"] = {str(k): int(v) for k, v in counts.items()}
                rec["layer_branches"] = sel["branch"].tolist()
        out.append(rec)
    return out


def _penalty(ok: pd.DataFrame, pm: str) -> dict[str, Any]:
    g = ok[ok["pm"] == pm]
    table = g.pivot_table(index="point", columns="network", values="pm_value", aggfunc="first")
    table = table.dropna()
    nets = [n for n in g["network"].unique() if n in table.columns]
    area = g.drop_duplicates("point").set_index("point")["area_mm2"].loc[table.index].to_numpy()
    pts = table.index.to_numpy()
    best_point = {n: pts[np.lexsort((pts, area, table[n].to_numpy()))[0]] for n in nets}
    matrix = {}
    for a in nets:
        p = best_point[a]
        matrix[a] = {b: float(100.0 * (table.loc[p, b] / table[b].min() - 1.0)) for b in nets}
    hw = g.drop_duplicates("point").set_index("point")
    return {"pm": pm, "networks": nets,
            "hardware": {a: {k: int(hw.loc[best_point[a], k]) for k in _HW} for a in nets},
            "percent": matrix}


def _fs_penalty(manifest: dict, point: dict) -> dict[str, Any]:
    from costmodel.systolic import BRANCHES, SystolicParams
    from mappers.systolic.deepopt import evaluate_per_image, fixed_scheduling, los

    cfg = manifest["config"]
    sp = replace(SystolicParams(), **cfg.get("systolic", {}))
    pms = cfg.get("objectives", ["E", "D", "ED", "E2D", "ED2"])
    out = {"point": point, "pms": pms, "networks": {}}
    for net in _networks(manifest):
        res = evaluate_per_image([l for l, _ in net], *([point[k]] for k in _HW), sp)
        reps = np.array(net.repeats)
        per = {}
        for b, name in enumerate(BRANCHES):
            per[name] = {}
        for pm in pms:
            v_los = los(res, reps, pm)[0][0]
            fs = fixed_scheduling(res, reps, pm)[0]
            for b, name in enumerate(BRANCHES):
                per[name][pm] = float(100.0 * (fs[b] / v_los - 1.0)) if np.isfinite(fs[b]) else None
        out["networks"][net.name] = per
    return out


def _fmt_pct(v) -> str:
    return "-" if v is None else (f"{v:,.1f}%" if abs(v) < 1e5 else "(large)")


def show(rep: dict[str, Any], console) -> None:
    """Print ``rep`` (from `build`) as Rich tables."""
    from rich.table import Table

    print_summary(rep, console)
    if "optimal" not in rep:
        if rep.get("failures"):
            console.print("no allocation table: no hardware point has a finished row (the failures are listed "
                          "above)", style="yellow", soft_wrap=True, highlight=False)
        print_plots(rep, console)
        return
    t = Table(title="Optimal hardware allocation per network and PM (DeepOpt Table 4)", title_justify="left")
    for c in ("network", "PM", "J", "K", "SRAM KiB f/i/p", "area mm^2", "energy E", "delay D",
              "x worst", "x worst in window"):
        t.add_column(c, justify="left" if c in ("network", "PM") else "right", no_wrap=True)
    for r in rep["optimal"]:
        win = r.get("improvement_over_worst_in_window")
        t.add_row(r["network"], r["pm"] + ("" if r["network_pm"] == "sum" else " (product)"),
                  str(r["J"]), str(r["K"]), f"{r['fsram_kib']}/{r['isram_kib']}/{r['psram_kib']}",
                  fmt.sig(r["area_mm2"]), fmt.energy(r["energy_pj"]), fmt.cycles(r["cycles"]),
                  f"{r['improvement_over_worst']:,.1f}", "-" if win is None else f"{win:,.1f}")
    print_wide(console, t)
    w = next((r["window_mm2"] for r in rep["optimal"] if "window_mm2" in r), None)
    if w:
        console.print(f"x worst: PM of the worst feasible point / optimum; in window: among points of "
                      f"{w[0]:.1f}-{w[1]:.1f} mm^2 (DeepOpt's 10% allowance under the budget)")
    t = Table(title="Branches chosen by LOS at the optimum (layers per branch)")
    t.add_column("network")
    t.add_column("PM")
    t.add_column("branches")
    for r in rep["optimal"]:
        t.add_row(r["network"], r["pm"], ", ".join(f"{k} {v}" for k, v in r.get("branches", {}).items()))
    console.print(t)
    if "penalty_ED" in rep:
        p = rep["penalty_ED"]
        t = Table(title=f"Penalty on {p['pm']} running a network (column) on another's optimal hardware (row) (Table 5)")
        t.add_column("optimal hardware of")
        t.add_column("J/K/f/i/p")
        for b in p["networks"]:
            t.add_column(b, justify="right")
        for a in p["networks"]:
            hw = p["hardware"][a]
            t.add_row(a, "/".join(str(hw[k]) for k in _HW), *[f"{p['percent'][a][b]:.2f}%" for b in p["networks"]])
        console.print(t)
    fs = rep.get("fs_penalty")
    if fs:
        pt = fs["point"]
        for net, per in fs["networks"].items():
            t = Table(title=f"{net}: penalty of fixed scheduling vs LOS at J x K = {pt['J']} x {pt['K']}, "
                            f"{pt['fsram_kib']}/{pt['isram_kib']}/{pt['psram_kib']} KiB (Table 3)")
            t.add_column("FS branch")
            for pm in fs["pms"]:
                t.add_column(pm, justify="right")
            for b, vals in per.items():
                t.add_row(b, *[_fmt_pct(vals[pm]) for pm in fs["pms"]])
            console.print(t)
    print_plots(rep, console)


def write_plots(rows: pd.DataFrame, plots_dir: str | Path) -> list[str]:
    """Write PNGs from result ``rows``: PM over area per network and PM, and E vs D with the
    Pareto front. Returns the paths written."""
    from mappers.systolic.deepopt import pareto_front

    ok = rows[(rows["status"] == "ok")]
    if ok.empty or "pm_value" not in ok:
        return []
    ok = ok[np.isfinite(ok["pm_value"])]
    plots_dir = Path(plots_dir)
    plots_dir.mkdir(parents=True, exist_ok=True)
    written = []
    nets = list(ok["network"].unique())
    pms = list(ok["pm"].unique())
    for pm in pms:
        fig, axes = figure(1, len(nets), figsize=(4 * len(nets), 3.6), squeeze=False)
        for ax, net in zip(axes[0], nets):
            g = ok[(ok["network"] == net) & (ok["pm"] == pm)]
            rel = g["pm_value"] / g["pm_value"].min()
            ax.plot(g["area_mm2"], rel, ls="none", marker=".", ms=1, alpha=0.3, rasterized=True)
            b = g.loc[g["pm_value"].idxmin()]
            ax.scatter([b["area_mm2"]], [1.0], color="red", s=30, zorder=3,
                       label=f"opt {int(b.J)}x{int(b.K)} {int(b.fsram_kib)}/{int(b.isram_kib)}/{int(b.psram_kib)}")
            log_axis(ax, "y")
            ax.set_xlabel("area (mm$^2$)")
            ax.set_ylabel(f"{pm} / optimum")
            ax.set_title(net, fontsize=9)
            ax.legend(fontsize=7)
        written.append(save(fig, plots_dir / f"pm_over_area_{pm}.png", f"Network {pm} over area (LOS)"))
    pm = "ED" if "ED" in pms else pms[0]
    fig, axes = figure(1, len(nets), figsize=(4 * len(nets), 3.6), squeeze=False)
    for ax, net in zip(axes[0], nets):
        g = ok[(ok["network"] == net) & (ok["pm"] == pm)]
        e = g["energy_pj"].to_numpy() / 1e6
        d = g["cycles"].to_numpy() / 1e6
        ax.plot(d, e, ls="none", marker=".", ms=1, alpha=0.25, rasterized=True, label="hardware points")
        front = pareto_front(np.stack([d, e], axis=1))
        ax.plot(d[front], e[front], color="red", lw=1.2, marker=".", label="Pareto front")
        log_axis(ax, "x", max_ticks=5)  # a few plain-number delay labels, none for minor ticks
        log_axis(ax, "y")
        ax.set_xlabel("delay (Mcycles)")
        ax.set_ylabel("energy (uJ)")
        ax.set_title(net, fontsize=9)
        ax.legend(fontsize=7)
    written.append(save(fig, plots_dir / "pareto_E_vs_D.png",
                        f"Energy vs delay of every hardware point (schedules optimal for {pm})"))
    return written
