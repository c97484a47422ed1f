"""The interactive report of an architecture search (`sweep report DIR --html FILE`).

Per network, one figure of two panels: EDP (pJ x cycles) over area (mm^2) and energy (pJ) over
latency (cycles), every design a point (coloured by dataflow when the search has a ``dataflow``
axis; designs on that panel's Pareto front larger and outlined; the front itself a red step
line), hovering shows the design's parameters, area, energy, latency, EDP, id and the `sweep
map` command that reproduces its totals. Clicking a design shows its per-layer energy by memory
level (`sweep.reports.html.breakdown`: the stored mappings re-costed) in the figure below, and
its details with the command in a copyable block; the best-EDP design is shown first.

The commands are those `sweep report` prints for the Pareto designs
(`sweep.reports.archsearch.map_command` on a design file in ``DIR/designs``); the files of the
designs on no front, which `sweep report` does not write, are written here, each saying why.
A page address ending in ``#select=<network>/<design_id>`` selects that design on opening.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from costmodel.loopnest.template import DATAFLOW
from sweep.common import fmt
from sweep.reports.archsearch import (
    _mapper_params,
    design_table,
    map_command,
    network_arguments,
    pareto_designs,
    write_design_files,
)
from sweep.reports.designs import ENERGY_DYNAMIC, _record, design_clocks, rank_columns, time_basis
from sweep.reports.html import COLOURS, Page, short, write_page
from sweep.reports.html.axes import category_axis, log_axis, pad_axis
from sweep.reports.html.breakdown import UNSPLIT, level_breakdown
from sweep.reports.html.systems import add_systems
from sweep.reports.llm import best_columns
from sweep.reports.summary import read_rows

__all__ = ["build", "design_commands", "fronts_figure"]

#: The note of a design file written only for the interactive report.
_NOTE = "written by `sweep report --html` (the design is on no area-EDP front) for its reproducing command"


def design_commands(directory: Path, manifest: dict, archs: pd.DataFrame, df: pd.DataFrame,
                    rep: dict[str, Any]) -> tuple[dict[tuple[str, str], str], list[str]]:
    """(design_id, network) -> the `sweep map` command mapping the network on the design (as
    `sweep report` prints for its Pareto designs), for every design of ``df`` (`design_table`);
    design files `sweep report` did not write (``rep["designs"]``) are written to ``DIR/designs``
    first. Returns (commands, problems: designs without a loadable accelerator, no command)."""
    files = {d["design_id"]: d["file"] for d in rep.get("designs", []) if d.get("file")}
    params = list(rep.get("params", []))
    first = df.drop_duplicates("design_id")
    missing = first[~first["design_id"].isin(files)]
    values = {str(r["design_id"]): _record(r, params)["params"] for _, r in missing.iterrows()}
    if values:
        if archs.empty or "arch" not in archs:
            archs = pd.DataFrame(columns=["design_id", "arch"])
        new, problems = write_design_files(directory.resolve(), manifest, archs.assign(
            design_id=archs["design_id"].astype(str)), {}, values, {d: [_NOTE] for d in values})
        files.update(new)
    else:
        problems = []
    net_args = network_arguments(manifest)
    out = {}
    for r in df.itertuples():
        if r.design_id in files:
            out[(r.design_id, r.network)] = map_command(net_args.get(r.network, r.network), files[r.design_id],
                                                        str(r.mapper), str(r.objective), int(r.seed),
                                                        _mapper_params(manifest, str(r.mapper)))
    return out, problems


def _describe(r: dict[str, Any], fronts: list[str], command: str | None) -> list[str]:
    """A design as lines of plain text: id, totals with units (seconds and J x s beside the cycles
    where the design's clock is known), parameters, fronts, command."""
    secs = f" ({fmt.seconds(r['latency_s'])})" if r.get("latency_s") is not None else ""
    edp_js = f" = {fmt.sig(r['edp_js'])} J*s" if r.get("edp_js") is not None else ""
    lines = [f"design {r['design_id']}", f"area {fmt.area(r['area_mm2'])}, EDP {fmt.edp(r['edp'])}{edp_js}",
             f"energy {fmt.energy(r['energy_pj'])}, latency {fmt.cycles(r['latency_cycles'])}{secs} (energy: dynamic only)"]
    lines += [f"{k} = {short(v)}" for k, v in r["params"].items()]
    if fronts:
        lines.append("on the " + " and the ".join(fronts) + " Pareto front")
    lines.append(f"command: {command}" if command else "command: none (no design file: see `sweep report`)")
    return lines


def _hover(lines: list[str]) -> str:
    """Plain lines as Plotly hover text: HTML-escaped, the command broken before each option."""
    import html

    out = [html.escape(line) for line in lines[:-1]]
    out += [html.escape(part) for part in lines[-1].replace(" --", "\n  --").split("\n")]
    return "<br>".join(out)


def fronts_figure(net: str, d: pd.DataFrame, params: list[str], text: dict[str, list[str]]) -> Any:
    """The two-panel figure of one network's designs ``d`` (module docstring); ``text``: design_id
    -> its lines (`_describe`). Every design is one marker in each panel (customdata: its id)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(1, 2, subplot_titles=("EDP over area", "energy over latency"), horizontal_spacing=0.09)
    lat, edp = rank_columns(d)
    seconds = time_basis(d) == "s"  # designs of different clocks: seconds and J x s
    panels = (("area_mm2", edp), (lat, "energy_pj"))
    fronts = [set(pareto_designs(d, cols)["design_id"]) for cols in panels]
    groups = list(d.groupby(DATAFLOW, sort=True)) if DATAFLOW in params else [("designs", d)]
    for i, (name, g) in enumerate(groups):
        label = f"{DATAFLOW} {name}" if DATAFLOW in params else str(name)
        ids = g["design_id"].tolist()
        for col, ((x, y), front) in enumerate(zip(panels, fronts), 1):
            on = [did in front for did in ids]
            fig.add_trace(go.Scatter(
                x=g[x].tolist(), y=g[y].tolist(), mode="markers", name=f"{label} ({len(g)})", legendgroup=label,
                showlegend=col == 1, customdata=ids, text=[_hover(text[did]) for did in ids],
                hovertemplate="%{text}<extra></extra>",
                marker={"color": COLOURS[i % len(COLOURS)], "size": [10 if o else 6 for o in on], "opacity": 0.8,
                        "line": {"color": "black", "width": [1.5 if o else 0 for o in on]}}), row=1, col=col)
    for col, (x, y) in enumerate(panels, 1):
        f = pareto_designs(d, (x, y)).sort_values([x, y])
        fig.add_trace(go.Scatter(x=f[x].tolist(), y=f[y].tolist(), mode="lines", line={"color": "red", "shape": "hv"},
                                 name="Pareto front", legendgroup="front", showlegend=col == 1, hoverinfo="skip"),
                      row=1, col=col)
    pad_axis(fig, "x", row=1, col=1, title_text="area (mm^2)")
    log_axis(fig, "y", row=1, col=1, title_text="EDP (J x s)" if seconds else "EDP (pJ x cycles)")
    log_axis(fig, "x", "s" if seconds else "cycles", row=1, col=2, title_text="latency")
    log_axis(fig, "y", "pJ", row=1, col=2, title_text="energy")
    fig.update_layout(height=480, template="plotly_white", hovermode="closest", clickmode="event",
                      title=f"{net}: {len(d)} designs (click one for its energy per layer and memory level)",
                      legend={"orientation": "h", "y": -0.18})
    return fig


def _breakdown_figure(net: str, bd: dict[str, Any], did: str) -> Any:
    """Stacked bars: per layer of ``net``, the energy (pJ x repeats) of design ``did`` per level."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for level, values in zip(bd["levels"], bd["designs"][did]):
        fig.add_trace(go.Bar(x=bd["layers"], y=values, name=level,
                             hovertemplate=f"%{{x}}<br>{level}: %{{y:.4g}} pJ<extra></extra>"))
    category_axis(fig, bd["layers"], title_text=f"unique layer of {net}")
    fig.update_layout(barmode="stack", height=420, template="plotly_white", title=_breakdown_title(net, did),
                      yaxis_title="energy (pJ, x the layer's repeats)", yaxis_exponentformat="power")
    return fig


def _breakdown_title(net: str, did: str) -> str:
    return f"{net} on design {did}: energy per layer by memory level"


_SCRIPT = """
function sweepSelect(net, did) {
  var n = SWEEP_DATA.networks[net], vals = n.designs[did];
  if (!vals) { return; }
  Plotly.restyle(n.breakdown, {y: vals}, vals.map(function (_, i) { return i; }));
  Plotly.relayout(n.breakdown, {"title.text": n.title.replace("{id}", did)});
  var pre = document.getElementById(n.detail);
  pre.textContent = n.details[did]; pre.dataset.design = did;
  var gd = document.getElementById(n.fronts), at = n.points[did];
  var marks = (gd.layout.annotations || []).filter(function (a) { return a.name !== "selected"; });
  [["x", "y", at[0], Math.log10(at[1])], ["x2", "y2", Math.log10(at[2]), Math.log10(at[3])]].forEach(function (p) {
    marks.push({name: "selected", xref: p[0], yref: p[1], x: p[2], y: p[3], text: "selected", showarrow: true,
                arrowhead: 2, ax: 35, ay: -30, font: {color: "#d62728"}, arrowcolor: "#d62728"});
  });
  Plotly.relayout(gd, {annotations: marks});
}
window.sweepAfterDraw = function () {
  var nets = SWEEP_DATA.networks;
  Object.keys(nets).forEach(function (net) {
    document.getElementById(nets[net].fronts).on("plotly_click", function (ev) {
      if (ev && ev.points && ev.points.length) { sweepSelect(net, ev.points[0].customdata); }
    });
  });
  Object.keys(nets).forEach(function (net) { sweepSelect(net, nets[net].first); });
  var m = /^#select=(.+)\\/([0-9A-Za-z_-]+)$/.exec(decodeURIComponent(window.location.hash));
  if (m && nets[m[1]]) {
    document.getElementById(nets[m[1]].fronts).emit("plotly_click", {points: [{customdata: m[2]}]});
  }
};
"""


def build(directory: Path, manifest: dict, out_file: str | Path, rep: dict[str, Any]) -> Path:
    """Write the interactive page of an architecture-search directory (module docstring) from its
    report ``rep`` (`sweep.reports.archsearch.build`) to ``out_file``; returns the path.

    Raises:
        StoreError: unreadable, or no result row stored yet.
        OSError: ``out_file`` cannot be written.
    """
    rows, designs, archs = read_rows(Path(directory), "totals", "archs")
    df = design_table(designs, design_clocks(archs))
    params = list(rep.get("params", []))
    commands, problems = design_commands(Path(directory), manifest, archs, df, rep)
    bd = level_breakdown(rows, archs, manifest, set(zip(df["design_id"], df["network"])) if not df.empty else set())
    page = Page(f"{rep.get('campaign')}: architecture search on {rep.get('template')}")
    page.head(rep)
    for text, steps in (rep.get("precisions") or {}).items():
        page.text(f"precisions of {len(steps)} step(s) ({steps[0]}{', ...' if len(steps) > 1 else ''}): {text}", "note")
    add_systems(page, rep)  # the answer first, then the detail
    page.unfinished(rep)
    page.text(f"{rep.get('designs_evaluated', 0)} design(s) evaluated, parameters {', '.join(params)}; "
              "hover a design for its figures and the command reproducing them, click it for its energy per "
              "layer and memory level (the stored mappings re-costed by the reference model). " + ENERGY_DYNAMIC + ".",
              "note")
    if rep.get("designs_pruned"):
        page.text(f"{rep['designs_mapped']:,} design(s) mapped, {rep['designs_pruned']:,} pruned by bound (beaten on every "
                  "figure of the answer by a mapped design: the answer per phase is the whole grid's; the plots "
                  "below show the mapped designs).", "note")
    for p in problems:
        page.text(f"no command: {p}", "note")
    page.data["networks"] = {}
    for net in rep.get("networks", {}):
        d = df[df["network"] == net]
        if d.empty or net not in bd:
            continue
        if len(d) < 2:  # a plot of one point says nothing: the design in a sentence
            r = _record(d.iloc[0], params)
            page.text(f"{net}: one design finished, {r['design_id']}: area {fmt.area(r['area_mm2'])}, energy "
                      f"{fmt.energy(r['energy_pj'])}, latency {fmt.cycles(r['latency_cycles'])}, EDP {fmt.edp(r['edp'])} "
                      "(no plot of one point).", "note")
            continue
        lat, edp = rank_columns(d)
        fronts = [set(pareto_designs(d, c)["design_id"]) for c in (("area_mm2", edp), ("energy_pj", lat))]
        recs = {str(r["design_id"]): _record(r, params) for _, r in d.iterrows()}
        text = {did: _describe(r, [n for n, f in zip(("area-EDP", "energy-latency"), fronts) if did in f],
                               commands.get((did, net))) for did, r in recs.items()}
        page.heading(f"{net}: {len(d)} designs")
        fid = page.figure(fronts_figure(net, d, params, text), f"fronts-{net}")
        best = d.sort_values([edp, "area_mm2", "design_id"], kind="stable")["design_id"].iloc[0]
        n = bd[net]
        if n["unsplit"]:
            page.text(f"{n['unsplit']} (design, layer) mapping(s) could not be re-costed to their stored figures "
                      f"(another mapper's memory allocation): their energy is one bar, '{UNSPLIT}'.", "note")
        bid = page.figure(_breakdown_figure(net, n, best), f"breakdown-{net}")
        detail = f"detail-{len(page.figures)}"
        page.pre("\n".join(text[best]), detail)
        page.data["networks"][net] = {"fronts": fid, "breakdown": bid, "detail": detail, "first": best,
                                      "title": _breakdown_title(net, "{id}"), "designs": n["designs"],
                                      "points": {r["design_id"]: [r["area_mm2"], r[edp], r[lat], r["energy_pj"]]
                                                 for _, r in d.iterrows()},
                                      "details": {did: "\n".join(t) for did, t in text.items()}}
    add_llm_answer(page, rep)
    page.script = _SCRIPT
    return write_page(page, out_file)


#: The best-design table's label of each phase figure.
_FIGURE_LABEL = {"ttft_s": "TTFT", "time_per_token_s": "time per token"}


def _step_table(page: Page, steps: list[dict[str, Any]], best: list[dict[str, Any]]) -> None:
    """Each step under its own label on the best designs (`sweep.reports.llm.step_figures`): its
    phase, batch, seq (prefill) or context (decode), and its own TTFT or time per output token."""
    import plotly.graph_objects as go

    if not steps:
        return
    page.heading("Each step on the best designs: TTFT of a prefill step, time per output token of a decode step")
    cols_of = best_columns(best)
    header = ["step", "phase", "batch", "seq / context", "figure", *(h for _, h in cols_of)]
    cols = [[s["step"] for s in steps], [s["phase"] for s in steps], [str(s["batch"]) for s in steps],
            [str(s["seq"] if s["phase"] == "prefill" else s["context"]) for s in steps],
            ["TTFT" if s["phase"] == "prefill" else "time per output token" for s in steps],
            *([fmt.seconds(s["values"].get(d)) for s in steps] for d, _ in cols_of)]
    table = go.Figure(go.Table(header={"values": header}, cells={"values": cols}))
    table.update_layout(height=80 + 26 * len(steps), margin={"l": 10, "r": 10, "t": 10, "b": 10})
    page.figure(table, "llm-steps")


def add_llm_answer(page: Page, rep: dict[str, Any]) -> None:
    """The answer of a search over transformer steps (``rep["llm"]``, `sweep.reports.llm.llm_designs`):
    the best designs for prefill, decode and the serving mix side by side, which steps each phase
    figure aggregates and each step's own figure on them, and each one's roofline (attained MACs
    per cycle against MACs per DRAM byte, the roof drawn)."""
    import plotly.graph_objects as go

    from sweep.common import fmt
    llm = rep.get("llm") or {}
    best = llm.get("best") or []
    if not best:
        return
    page.heading("Which accelerator: the best design for prefill, decode and the serving mix")
    basis = rep.get("energy_basis") or "dynamic only (no static energy)"
    names = ["design", "area", *rep.get("params", []), "TTFT", "time per token", "tokens/s",
             f"energy per token, {basis}", "request latency", f"J per request, {basis}"]
    cols = [[b["design_id"], fmt.area(b["area_mm2"]), *(str(b.get(p)) for p in rep.get("params", [])),
             fmt.seconds(b.get("ttft_s")), fmt.seconds(b.get("time_per_token_s")), fmt.sig(b.get("tokens_per_s")),
             fmt.energy(None if b.get("energy_per_token_j") is None else b["energy_per_token_j"] * 1e12),
             fmt.seconds(b.get("request_latency_s")),
             fmt.energy(None if b.get("energy_per_request_j") is None else b["energy_per_request_j"] * 1e12)]
            for b in best]
    table = go.Figure(go.Table(header={"values": ["", *(f"best for {b['for']}" for b in best)]},
                               cells={"values": [names, *cols]}))
    table.update_layout(height=60 + 26 * len(names), margin={"l": 10, "r": 10, "t": 10, "b": 10})
    page.figure(table, "llm-best")
    for fig, agg in (llm.get("aggregates") or {}).items():
        page.text(f"{_FIGURE_LABEL.get(fig, fig)} above: {agg['how']}: {', '.join(agg['steps'])}", "note")
    _step_table(page, llm.get("steps") or [], best)
    for b in {r["design_id"]: r for r in llm.get("rooflines") or []}.values():  # one figure per design
        mine = [r for r in llm.get("rooflines") or [] if r["design_id"] == b["design_id"]]
        if not mine:
            continue
        fig = go.Figure()
        xs = [p["intensity"] for r in mine for p in r["points"] if p["intensity"] != float("inf")]
        lo, hi = min(xs + [1.0]) / 2, max(xs + [mine[0]["ridge"]]) * 2
        grid = [lo * (hi / lo) ** (i / 99) for i in range(100)]
        r0 = mine[0]
        fig.add_trace(go.Scatter(x=grid, y=[min(r0["peak_macs_per_cycle"], g * r0["dram_bytes_per_cycle"]) for g in grid],
                                 mode="lines", name=f"roof (ridge {r0['ridge']:.3g} MACs/B)", line={"color": "black"}))
        for r in mine:
            pts = [p for p in r["points"] if p["intensity"] != float("inf")]
            fig.add_trace(go.Scatter(x=[p["intensity"] for p in pts], y=[p["attained"] for p in pts], mode="markers",
                                     name=r["network"], text=[p["layer"] for p in pts],
                                     hovertemplate="%{text}: %{x:.4g} MACs/B, %{y:.4g} MACs/cycle<extra></extra>"))
        log_axis(fig, "x", title_text="operational intensity, MACs per DRAM byte")
        log_axis(fig, "y", title_text="attained MACs per cycle")
        fig.update_layout(height=420, template="plotly_white",
                          title=f"roofline of {b['design_id']}, the best design for {b['for']}")
        page.figure(fig, f"roofline-{b['design_id']}")
