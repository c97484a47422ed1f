"""The interactive report of a DeepOpt campaign (`sweep report DIR --html FILE`): the plots
`sweep.reports.systolic` writes as PNGs, interactive.

* per PM, one panel per network: the PM of every hardware point over its area (mm^2), relative
  to the network's optimum (log axis), the optimum marked;
* per network: energy over delay (cycles) of every point under the schedules optimal for
  ED (or the first PM), with its Pareto front.

A panel of at most `ALL_POINTS` points draws each as a hoverable marker (J x K, the SRAMs in KiB,
area, PM, energy, cycles); a larger one (a full grid has ~70,000 points per network and PM)
draws the point cloud as a density map (points per cell) and, as markers, the points on the
Pareto front of that panel's two axes, the ones worth hovering.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sweep.common import fmt
from sweep.reports.html import Page, write_page
from sweep.reports.html.axes import log_axis, pad_axis
from sweep.reports.pareto import pareto_front

__all__ = ["ALL_POINTS", "add_cloud", "build"]

#: Panels with at most this many points draw every point as a marker.
ALL_POINTS = 2000
_HW = ("J", "K", "fsram_kib", "isram_kib", "psram_kib")


def _hover(g: pd.DataFrame, pm: str) -> list[str]:
    return [f"J x K = {int(r.J)} x {int(r.K)}, SRAM f/i/p {int(r.fsram_kib)}/{int(r.isram_kib)}/{int(r.psram_kib)} KiB"
            f"<br>area {fmt.area(r.area_mm2)}, {pm} {fmt.sig(r.pm_value)}<br>energy {fmt.energy(r.energy_pj)}, "
            f"delay {fmt.cycles(r.cycles)}" for r in g.itertuples()]


def add_cloud(fig: Any, g: pd.DataFrame, x: np.ndarray, y: np.ndarray, pm: str, col: int, name: str,
              show_legend: bool, xlog: bool = False) -> int:
    """Draw the points (``x``, ``y``: one per row of ``g``, y > 0 on a log axis, x > 0 too with
    ``xlog``) in panel ``col`` of ``fig`` (module docstring: every point, or a density map, its
    cells equal on those axes, and the Pareto front). Returns the number of markers drawn."""
    import plotly.graph_objects as go

    if len(g) <= ALL_POINTS:
        keep = np.arange(len(g))
    else:
        counts, xe, ye = np.histogram2d(np.log10(x) if xlog else x, np.log10(y), bins=(80, 60))
        xc = (xe[:-1] + xe[1:]) / 2
        fig.add_trace(go.Heatmap(z=np.where(counts.T > 0, counts.T, np.nan).tolist(),
                                 x=(10 ** xc if xlog else xc).tolist(), y=(10 ** ((ye[:-1] + ye[1:]) / 2)).tolist(),
                                 colorscale="Greys", showscale=False, zmin=0, name="points per cell",
                                 hovertemplate="%{z} point(s)<extra></extra>"), row=1, col=col)
        keep = np.sort(pareto_front(np.stack([x, y], axis=1)))
    fig.add_trace(go.Scatter(x=x[keep].tolist(), y=y[keep].tolist(), mode="markers", name=name, legendgroup=name,
                             showlegend=show_legend, marker={"size": 5, "color": "#1f77b4", "opacity": 0.6},
                             text=_hover(g.iloc[keep], pm), hovertemplate="%{text}<extra></extra>"), row=1, col=col)
    return len(keep)


def _panels(ok: pd.DataFrame, pm: str, nets: list[str], title: str, y_title: str, draw) -> Any:
    """One panel per network of the rows of ``pm``: ``draw(fig, g, col)`` fills panel ``col``
    with the network's rows ``g`` (index reset)."""
    from plotly.subplots import make_subplots

    fig = make_subplots(1, len(nets), subplot_titles=nets, horizontal_spacing=0.04)
    for col, net in enumerate(nets, 1):
        g = ok[(ok["network"] == net) & (ok["pm"] == pm)].reset_index(drop=True)
        if not g.empty:
            draw(fig, g, col)
    fig.update_yaxes(title_text=y_title, row=1, col=1)
    fig.update_layout(height=420, template="plotly_white", title=title, legend={"orientation": "h", "y": -0.25})
    return fig


def _pm_panel(fig: Any, g: pd.DataFrame, pm: str, col: int) -> None:
    """PM over area relative to the optimum, the optimum a red star."""
    import plotly.graph_objects as go

    rel = (g["pm_value"] / g["pm_value"].min()).to_numpy()
    add_cloud(fig, g, g["area_mm2"].to_numpy(), rel, pm, col,
              "Pareto front of area and PM" if len(g) > ALL_POINTS else "hardware points", col == 1)
    b = g.sort_values(["pm_value", "area_mm2", "point"], kind="stable").iloc[[0]]
    fig.add_trace(go.Scatter(x=b["area_mm2"].tolist(), y=[1.0], mode="markers", name="optimum", legendgroup="opt",
                             showlegend=col == 1, marker={"size": 11, "color": "red", "symbol": "star"},
                             text=["optimum<br>" + _hover(b, pm)[0]], hovertemplate="%{text}<extra></extra>"),
                  row=1, col=col)
    pad_axis(fig, "x", row=1, col=col, title_text="area (mm^2)")
    log_axis(fig, "y", row=1, col=col)


def _ed_panel(fig: Any, g: pd.DataFrame, pm: str, col: int) -> None:
    """Energy over delay (cycles; ticks in engineering units) with the Pareto front as a red step line."""
    import plotly.graph_objects as go

    d, e = g["cycles"].to_numpy(dtype=float), g["energy_pj"].to_numpy(dtype=float)
    add_cloud(fig, g, d, e, pm, col, "Pareto front" if len(g) > ALL_POINTS else "hardware points", col == 1,
              xlog=True)
    f = np.sort(pareto_front(np.stack([d, e], axis=1)))
    f = f[np.argsort(d[f], kind="stable")]
    fig.add_trace(go.Scatter(x=d[f].tolist(), y=e[f].tolist(), mode="lines", line={"color": "red", "shape": "hv"},
                             name="Pareto front line", legendgroup="front", showlegend=col == 1, hoverinfo="skip"),
                  row=1, col=col)
    log_axis(fig, "x", "cycles", row=1, col=col, title_text="delay")
    log_axis(fig, "y", "pJ", row=1, col=col)


def build(directory: Path, manifest: dict, out_file: str | Path, rep: dict[str, Any]) -> Path:
    """Write the interactive page of a DeepOpt directory (module docstring) from its report
    ``rep`` (`sweep.reports.systolic.build`) to ``out_file``; returns the path.

    Raises:
        StoreError: unreadable, or no result row stored yet.
        OSError: ``out_file`` cannot be written.
    """
    from sweep.reports.summary import read_rows

    (rows,) = read_rows(Path(directory))
    page = Page(f"{rep.get('campaign')}: DeepOpt hardware allocation")
    page.summary(rep)
    ok = rows[rows["status"] == "ok"] if "pm_value" in rows else rows.iloc[:0]
    ok = ok[np.isfinite(ok["pm_value"].astype(float))] if not ok.empty else ok
    if ok.empty:
        page.text("no finished hardware point: nothing to plot.", "note")
        return write_page(page, out_file)
    ok = ok.assign(network=ok["network"].astype(str), pm=ok["pm"].astype(str))
    nets, pms = list(dict.fromkeys(ok["network"])), list(dict.fromkeys(ok["pm"]))
    n_all, n_ok = rows["point"].nunique(), ok["point"].nunique()
    left = (f" of the {n_all:,} evaluated ({n_all - n_ok:,} infeasible on every network and PM: the reasons "
            "above)" if n_all > n_ok else "")
    page.text(f"{n_ok:,} hardware point(s){left}, {len(nets)} network(s), PMs {', '.join(pms)}; a panel shows the "
              "points feasible for its network and PM. Panels "
              f"with more than {ALL_POINTS:,} points show their density (grey) and, as markers, the points on "
              "their Pareto front; hover a marker for its hardware.", "note")
    for pm in pms:
        page.heading(f"{pm} over area")
        page.figure(_panels(ok, pm, nets, f"Network {pm} over area (LOS)", f"{pm} / optimum",
                            lambda fig, g, col, pm=pm: _pm_panel(fig, g, pm, col)), f"pm-{pm}")
    pm = "ED" if "ED" in pms else pms[0]
    page.heading("Energy vs delay")
    page.figure(_panels(ok, pm, nets, f"Energy vs delay of every hardware point (schedules optimal for {pm})",
                        "energy", lambda fig, g, col: _ed_panel(fig, g, pm, col)), "ed")
    return write_page(page, out_file)
