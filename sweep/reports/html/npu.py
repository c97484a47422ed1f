"""The interactive report of a multi-NPU (Flexer) campaign (`sweep report DIR --html FILE`).

The loop-nest comparison (`sweep.reports.html.loopnest.add_comparison`: every mapper's best
metric and search time per layer), the per-layer speed-up and data reduction of the mapper
(default ``flexer``) over the baseline (default ``static``) on every arch (Flexer Fig. 9), and
the Gantt chart `sweep.reports.npu` draws as a PNG: the mapper's best schedule of the layer of
largest speed-up of the report's network, rebuilt from the stored tiling and dataflow
(`mappers.npu.flexer.flexer_schedule`), one bar per tCONV on its core and per DRAM transfer
(load, spill, write-back), hovering shows what it is and its cycles.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from sweep.reports.html import COLOURS, Page, write_page
from sweep.reports.html.axes import category_axis, gapped, layer_labels
from sweep.reports.html.loopnest import add_comparison
from sweep.reports.loopnest import read
from sweep.reports.npu import _is_preset, _layer, npu_report

__all__ = ["build", "gantt_figure", "schedule_trace"]

#: The bar colour of each kind of schedule entry (as the PNG).
_KINDS = {"tCONV": "#1f77b4", "load": "#2ca02c", "spill": "#d62728", "writeback": "#ff7f0e"}


def schedule_trace(r: pd.Series, layer: Any, arch_name: str) -> tuple[list[tuple[str, int, int, str]], int, dict]:
    """The mapper's stored best schedule of ``layer`` (row ``r`` of `npu_report`'s frame: its
    ``extra`` tiling and dataflow, its ``params`` window) on the preset ``arch_name``, rebuilt:
    (trace: (resource, start, end, what) sorted by start, in cycles; latency in cycles of one
    instance; the stored extra).

    Raises:
        RuntimeError: the rebuilt latency x instances is not the stored latency (rows of another
            version of `mappers.npu.flexer`).
    """
    from costmodel.npu import Tiling, load_npu
    from mappers.npu.flexer import flexer_schedule
    from mappers.npu.graph import build_dfg

    ex = json.loads(r["extra"])
    dfg = build_dfg(layer, load_npu(arch_name), Tiling(*ex["tiling"]))
    eng = flexer_schedule(dfg, ex["dataflow"], int(json.loads(r["params"]).get("window", 6)))
    if eng.latency * layer.B * layer.G != r["latency_cycles"]:
        raise RuntimeError(f"rebuilt schedule of {r['layer']} has {eng.latency} cycles, the row "
                           f"{r['latency_cycles']}: rows written by another version of mappers.npu.flexer?")
    return eng.trace(), int(eng.latency), ex


def gantt_figure(trace: list[tuple[str, int, int, str]], title: str) -> Any:
    """Horizontal bars, one row per resource (cores, then ``dram``), one trace per kind of entry
    (`_KINDS`), x in cycles."""
    import plotly.graph_objects as go

    res = sorted({t[0] for t in trace}, key=lambda s: (s == "dram", s))
    fig = go.Figure()
    for kind, colour in _KINDS.items():
        sel = [t for t in trace if t[3].split(" ")[0].split("(")[0].rstrip("0123456789") == kind]
        if not sel:
            continue
        fig.add_trace(go.Bar(
            orientation="h", y=[t[0] for t in sel], x=[t[2] - t[1] for t in sel], base=[t[1] for t in sel],
            name=kind, marker={"color": colour, "line": {"width": 0}},
            text=[f"{t[3]}<br>{t[0]}: cycles {t[1]}-{t[2]}" for t in sel], textposition="none",
            hovertemplate="%{text}<extra></extra>"))
    fig.update_yaxes(categoryorder="array", categoryarray=res, autorange="reversed")
    fig.update_layout(barmode="overlay", bargap=0.25, template="plotly_white", xaxis_title="cycle",
                      height=160 + 40 * len(res), title=title)
    return fig


def _speedup_figure(g: pd.DataFrame, network: str, mapper: str, baseline: str) -> Any:
    """Fig. 9: per unique layer of ``network``, speed-up and data reduction on every arch."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(2, 1, shared_xaxes=True, vertical_spacing=0.06)
    order = g.drop_duplicates("layer_index").sort_values("layer_index")
    names = layer_labels(order)
    for i, (arch, ga) in enumerate(g.groupby("arch", sort=True)):
        ga = ga.sort_values("layer_index")
        x = layer_labels(ga)
        for row, col in ((1, "speedup"), (2, "data_reduction")):
            fig.add_trace(go.Scatter(x=names, y=gapped(names, x, ga[col].tolist()), mode="lines+markers",
                                     name=str(arch), legendgroup=str(arch), showlegend=row == 1, connectgaps=False,
                                     line={"color": COLOURS[i % len(COLOURS)]},
                                     hovertemplate=f"%{{x}} on {arch}<br>{col.replace('_', ' ')} %{{y:.3f}}x"
                                                   "<extra></extra>"), row=row, col=1)
    category_axis(fig, names)
    fig.update_yaxes(title_text="speed-up (x)", row=1, col=1)
    fig.update_yaxes(title_text="data reduction (x)", row=2, col=1)
    fig.update_layout(height=560, template="plotly_white",
                      title=f"{network}: {mapper} over the best {baseline} schedule per layer (Flexer Fig. 9)")
    return fig


def build(directory: Path, manifest: dict, out_file: str | Path, rep: dict[str, Any]) -> Path:
    """Write the interactive page of a multi-NPU directory (module docstring) from its report
    ``rep`` (`sweep.reports.npu.build`) to ``out_file``; returns the path.

    Raises:
        StoreError: unreadable, or no result row stored yet.
        RuntimeError: as `schedule_trace`.
        OSError: ``out_file`` cannot be written.
    """
    page = Page(f"{rep.get('campaign')}: multi-NPU schedules")
    page.summary(rep)
    rows, problems = read(Path(directory))
    add_comparison(page, rep, rows)
    cfg = manifest.get("report") or {}
    mapper, baseline = cfg.get("mapper", "flexer"), cfg.get("baseline", "static")
    _, m = npu_report(rows, problems, mapper, baseline)
    if m is None or m.empty:
        page.text(f"no layer has finished rows of both {mapper} and {baseline}: no speed-up, no schedule.", "note")
        return write_page(page, out_file)
    network = cfg.get("network") if cfg.get("network") in set(m["network"]) else m["network"].iloc[0]
    g = m[m["network"] == network]
    page.heading(f"{network}: {mapper} over {baseline}")
    page.figure(_speedup_figure(g, network, mapper, baseline), f"speedup-{network}")
    r = g.loc[g["speedup"].idxmax()]
    layers = {n["name"]: n["layers"] for n in (manifest.get("config") or {}).get("networks", [])}
    layer = _layer(layers, network, r["layer"])
    page.heading(f"{mapper} schedule of {network} {r['layer']} on {r['arch']}")
    if layer is None or not _is_preset(r["arch"]):
        page.text(f"no schedule: {r['arch']} is not a preset or the layer is not in the manifest.", "note")
    else:
        trace, latency, ex = schedule_trace(r, layer, str(r["arch"]))
        page.text(f"the layer of largest speed-up ({r['speedup']:.3f}x over {baseline}); tiling {ex['tiling']} "
                  f"(OY, OX, C, K tiles), dataflow {ex['dataflow']}, {latency} cycles per instance; zoom in "
                  "with a drag, double-click to zoom out.", "note")
        page.figure(gantt_figure(trace, f"{network} {r['layer']} on {r['arch']}: cores and the DRAM channel"),
                    "gantt")
    return write_page(page, out_file)
