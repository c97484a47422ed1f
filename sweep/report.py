"""`sweep report`: paper-style tables and PNG plots from a result directory.

For DeepOpt hardware-allocation results (Manasi & Sapatnekar, ASP-DAC 2021):

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
from sweep.errors import StoreError
from sweep.store import Store

__all__ = ["build_report", "print_report", "write_plots", "TABLE3_POINT"]

#: DeepOpt Table 3's hardware: J x K = 32 x 64, fSRAM 16, iSRAM 32, pSRAM 8 KiB.
TABLE3_POINT = {"J": 32, "K": 64, "fsram_kib": 16, "isram_kib": 32, "psram_kib": 8}
_HW = ["J", "K", "fsram_kib", "isram_kib", "psram_kib"]


def _networks(manifest: dict) -> list[Network]:
    nets = []
    for n in manifest["config"]["networks"]:
        layers = tuple(Layer(**l) for l in n["layers"])
        nets.append(Network(n["name"], layers, tuple(n["repeats"])))
    return nets


def _load(directory: Path) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    store = Store(directory)
    manifest = store.manifest()
    rows = store.read("rows")
    if rows.empty:
        raise StoreError(f"{directory}: holds no result rows yet")
    layers = store.read("layers")
    return manifest, rows, layers


def build_report(directory: str | Path) -> dict[str, Any]:
    """The report of a result directory as JSON-able data.

    Raises:
        StoreError: not a result directory, unreadable, or empty.
    """
    directory = Path(directory)
    manifest, rows, layers = _load(directory)
    status = rows["status"].value_counts().to_dict()
    rep: dict[str, Any] = {
        "campaign": manifest.get("name"), "directory": str(directory),
        "code_version": manifest.get("code_version"), "config_hash": manifest.get("config_hash"),
        "tasks_expected": manifest.get("tasks"), "tasks_stored": int(rows["task_id"].nunique()),
        "rows": {k: int(v) for k, v in status.items()},
    }
    errors = rows[rows["status"] != "ok"]
    if not errors.empty:
        rep["errors"] = errors[["task_id", "error"]].drop_duplicates().head(20).to_dict("records")
    ok = rows[rows["status"] == "ok"]
    if ok.empty or "pm_value" not in ok:
        return rep
    ok = ok[np.isfinite(ok["pm_value"])]
    rep["optimal"] = _optimal(ok, layers)
    if "ED" in set(ok["pm"]):
        rep["penalty_ED"] = _penalty(ok, "ED")
    point = dict(TABLE3_POINT, **(manifest.get("report") or {}).get("fs_point", {}))
    rep["fs_penalty"] = _fs_penalty(manifest, point)
    return rep


def _optimal(ok: pd.DataFrame, layers: pd.DataFrame) -> list[dict]:
    out = []
    for (net, pm, mode), g in ok.groupby(["network", "pm", "network_pm"], sort=False):
        best = g.loc[g["pm_value"].idxmin()]
        worst = g.loc[g["pm_value"].idxmax()]
        rec = {"network": net, "pm": pm, "network_pm": mode,
               **{k: int(best[k]) for k in _HW}, "area_mm2": float(best["area_mm2"]),
               "pm_value": float(best["pm_value"]), "energy_pj": float(best["energy_pj"]),
               "cycles": float(best["cycles"]), "points": int(len(g)),
               "worst": {k: int(worst[k]) for k in _HW},
               "improvement_over_worst": float(worst["pm_value"] / best["pm_value"])}
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
    nets = list(table.columns)
    best_point = table.idxmin()
    matrix = {}
    for a in nets:
        p = best_point[a]
        matrix[a] = {b: float(100.0 * (table.loc[p, b] / table[b].min() - 1.0)) for b in nets}
    hw = g.drop_duplicates("point").set_index("point")
    return {"pm": pm, "networks": nets,
            "hardware": {a: {k: int(hw.loc[best_point[a], k]) for k in _HW} for a in nets},
            "percent": matrix}


def _fs_penalty(manifest: dict, point: dict) -> dict[str, Any]:
    from costmodel.systolic import BRANCHES, SystolicParams, evaluate
    from mappers.deepopt import fixed_scheduling, los

    cfg = manifest["config"]
    sp = replace(SystolicParams(), **cfg.get("systolic", {}))
    pms = cfg.get("objectives", ["E", "D", "ED", "E2D", "ED2"])
    out = {"point": point, "pms": pms, "networks": {}}
    for net in _networks(manifest):
        res = evaluate([l for l, _ in net], *([point[k]] for k in _HW), sp)
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


def print_report(rep: dict[str, Any], console) -> None:
    """Print ``rep`` (from `build_report`) as Rich tables."""
    from rich.table import Table

    console.print(f"[bold]{rep['campaign']}[/] in {rep['directory']} (code {rep['code_version']}): "
                  f"{rep['tasks_stored']}/{rep['tasks_expected']} tasks stored, rows {rep['rows']}")
    for e in rep.get("errors", []):
        console.print(f"[red]task {e['task_id']}: {e['error']}[/]")
    if "optimal" not in rep:
        return
    t = Table(title="Optimal hardware allocation per network and PM (DeepOpt Table 4)")
    for c in ("network", "PM", "J", "K", "fSRAM", "iSRAM", "pSRAM", "area mm2", "E (uJ)",
              "D (Mcycles)", "improvement over worst", "branches at optimum"):
        t.add_column(c, justify="left" if c in ("network", "PM", "branches at optimum") else "right")
    for r in rep["optimal"]:
        br = ", ".join(f"{k} {v}" for k, v in r.get("branches", {}).items())
        t.add_row(r["network"], r["pm"] + ("" if r["network_pm"] == "sum" else " (product)"),
                  str(r["J"]), str(r["K"]), str(r["fsram_kib"]), str(r["isram_kib"]),
                  str(r["psram_kib"]), f"{r['area_mm2']:.2f}", f"{r['energy_pj'] / 1e6:,.1f}",
                  f"{r['cycles'] / 1e6:,.3f}", f"{r['improvement_over_worst']:,.1f}x", br)
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
    for p in rep.get("plots", []):
        console.print(f"plot: {p}")


def write_plots(directory: str | Path, plots_dir: str | Path) -> list[str]:
    """Write PNGs: PM over area per network, and E vs D with the Pareto front. Returns paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, rows, _ = _load(Path(directory))
    ok = rows[(rows["status"] == "ok")]
    if ok.empty or "pm_value" not in ok:
        return []
    ok = ok[np.isfinite(ok["pm_value"])]
    plots_dir = Path(plots_dir)
    plots_dir.mkdir(parents=True, exist_ok=True)
    written = []
    nets = list(dict.fromkeys(ok["network"]))
    pms = list(dict.fromkeys(ok["pm"]))
    for pm in pms:
        fig, axes = plt.subplots(1, len(nets), figsize=(4 * len(nets), 3.6), squeeze=False)
        for ax, net in zip(axes[0], nets):
            g = ok[(ok["network"] == net) & (ok["pm"] == pm)]
            rel = g["pm_value"] / g["pm_value"].min()
            ax.scatter(g["area_mm2"], rel, s=2, alpha=0.3, rasterized=True)
            b = g.loc[g["pm_value"].idxmin()]
            ax.scatter([b["area_mm2"]], [1.0], color="red", s=30, zorder=3,
                       label=f"opt {int(b.J)}x{int(b.K)} {int(b.fsram_kib)}/{int(b.isram_kib)}/{int(b.psram_kib)}")
            ax.set_yscale("log")
            ax.set_xlabel("area (mm$^2$)")
            ax.set_ylabel(f"{pm} / optimum")
            ax.set_title(net, fontsize=9)
            ax.legend(fontsize=7)
        fig.suptitle(f"Network {pm} over area (LOS)")
        fig.tight_layout()
        path = plots_dir / f"pm_over_area_{pm}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(str(path))
    pm = "ED" if "ED" in pms else pms[0]
    fig, axes = plt.subplots(1, len(nets), figsize=(4 * len(nets), 3.6), squeeze=False)
    for ax, net in zip(axes[0], nets):
        g = ok[(ok["network"] == net) & (ok["pm"] == pm)]
        e = g["energy_pj"].to_numpy() / 1e6
        d = g["cycles"].to_numpy() / 1e6
        ax.scatter(d, e, s=2, alpha=0.25, rasterized=True, label="hardware points")
        order = np.lexsort((e, d))
        front = order[np.concatenate([[True], e[order][1:] < np.minimum.accumulate(e[order])[:-1]])]
        ax.plot(d[front], e[front], color="red", lw=1.2, marker=".", label="Pareto front")
        ax.set_xlabel("delay (Mcycles)")
        ax.set_ylabel("energy (uJ)")
        ax.set_title(net, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(f"Energy vs delay of every hardware point (schedules optimal for {pm})")
    fig.tight_layout()
    path = plots_dir / f"pareto_E_vs_D.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(str(path))
    return written
