"""The interactive report of a loop-nest campaign (`sweep report DIR --html FILE`): the per-layer
mapper comparison of `sweep.reports.loopnest` (SALSA Fig. 5, left).

Per (network, accelerator, objective), one figure of two panels sharing the layer axis: the best
value of every mapper configuration per unique layer (mean over seeds; pJ for energy, cycles for
latency, pJ x cycles for EDP) and its search time (s); one marker per (layer, mapper) in each,
hovering shows the value, energy, latency, the ratio to the baseline mapper and the evaluations.
Then, with a baseline mapper, the per-network geomean improvement and search speed-up bars
(CoSA Figs. 6-7, SALSA Fig. 5 right). The NPU page (`sweep.reports.html.npu`) starts with the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from sweep.reports.html import COLOURS, Page, short, write_page

__all__ = ["add_comparison", "build", "layers_figure"]

_UNITS = {"energy": "pJ", "latency": "cycles", "edp": "pJ x cycles", "latency_bytes": "cycles x bytes"}


def _hover(r: pd.Series, obj: str, base: str | None) -> str:
    lines = [f"{r['layer']} (layer {int(r['layer_index'])}, x{int(r['repeat'])}): {r['label']}",
             f"best {obj} {short(r['value'])} {_UNITS.get(obj, '')}".rstrip(),
             f"energy {short(r['energy_pj'])} pJ, latency {short(r['latency_cycles'])} cycles",
             f"search {short(r['search_s'], 3)} s, {short(r['evaluations'])} evaluations, {int(r['seeds'])} seed(s)"]
    ratio = r.get("vs_baseline")
    if base is not None and ratio is not None and ratio == ratio:
        lines.append(f"{base} / this: {ratio:.3f}x")
    return "<br>".join(lines)


def layers_figure(g: pd.DataFrame, mappers: list[str], title: str, obj: str, base: str | None) -> Any:
    """The two-panel figure of one (network, arch, objective) group ``g`` of ``rep["layers"]``:
    one trace per mapper label of ``mappers`` present, one marker per layer in each panel."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(2, 1, shared_xaxes=True, vertical_spacing=0.06)
    order = g.drop_duplicates("layer_index").sort_values("layer_index")
    names = [f"{int(i)} {n}" for i, n in zip(order["layer_index"], order["layer"])]
    pos = dict(zip(order["layer_index"], names))
    for i, lab in enumerate(mappers):
        m = g[g["label"] == lab].sort_values("layer_index")
        if m.empty:
            continue
        x = [pos[i] for i in m["layer_index"]]
        text = [_hover(r, obj, base) for _, r in m.iterrows()]
        for row, col in ((1, "value"), (2, "search_s")):
            fig.add_trace(go.Scatter(x=x, y=m[col].tolist(), mode="lines+markers", name=lab, legendgroup=lab,
                                     line={"color": COLOURS[i % len(COLOURS)]},
                                     showlegend=row == 1, text=text, hovertemplate="%{text}<extra></extra>"),
                          row=row, col=1)
    unit = f" ({_UNITS[obj]})" if obj in _UNITS else ""
    fig.update_yaxes(title_text=f"best {obj}{unit}", type="log", exponentformat="power", row=1, col=1)
    fig.update_yaxes(title_text="search time (s)", type="log", row=2, col=1)
    fig.update_xaxes(categoryorder="array", categoryarray=names)
    fig.update_xaxes(title_text="unique layer", row=2, col=1)
    fig.update_layout(height=620, template="plotly_white", title=title, hovermode="closest")
    return fig


def _networks_figure(nets: pd.DataFrame, base: str, mappers: list[str]) -> Any:
    """Per (network, objective) and mapper: geomean improvement and search speed-up over ``base``."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(1, 2, subplot_titles=("geomean improvement (x)", "search speed-up (x)"))
    x = (nets["network"] + " / " + nets["arch"] + " / " + nets["objective"]).tolist()
    nets = nets.assign(x=x)
    for lab, m in nets.groupby("mapper", sort=False):
        i = mappers.index(lab) if lab in mappers else len(mappers)
        for col, c in ((1, "geomean_improvement_vs_baseline"), (2, "speedup_vs_baseline")):
            fig.add_trace(go.Bar(x=m["x"].tolist(), y=m[c].tolist(), name=str(lab), legendgroup=str(lab),
                                 marker_color=COLOURS[i % len(COLOURS)],
                                 showlegend=col == 1, hovertemplate=f"%{{x}}<br>{lab}: %{{y:.3f}}x<extra></extra>"),
                          row=1, col=col)
    fig.update_yaxes(type="log", row=1, col=2)
    fig.update_layout(barmode="group", height=440, template="plotly_white",
                      title=f"Per network vs {base} (SALSA Fig. 5 right; CoSA Figs. 6-7)")
    return fig


def add_comparison(page: Page, rep: dict[str, Any]) -> None:
    """Add the per-layer figures of ``rep["layers"]`` and the per-network bars to ``page``
    (module docstring); a note when no layer has a finished row."""
    if not rep.get("layers"):
        page.text("no layer has a finished row: nothing to compare.", "note")
        return
    layers = pd.DataFrame(rep["layers"])
    base = rep.get("baseline")
    for (net, arch, obj), g in layers.groupby(["network", "arch", "objective"], sort=False):
        page.heading(f"{net} on {arch}: best {obj} per layer")
        title = f"{net} on {arch}: best {obj} and search time per layer and mapper (mean over seeds)"
        page.figure(layers_figure(g, list(rep.get("mappers", [])), title, str(obj), base), f"layers-{net}-{arch}-{obj}")
    if rep.get("networks") and base is not None:
        page.heading(f"Per network, against {base}")
        page.figure(_networks_figure(pd.DataFrame(rep["networks"]), base, list(rep.get("mappers", []))), "networks")


def build(directory: Path, manifest: dict, out_file: str | Path, rep: dict[str, Any]) -> Path:
    """Write the interactive page of a loop-nest directory (module docstring) from its report
    ``rep`` (`sweep.reports.loopnest.build`) to ``out_file``; returns the path.

    Raises:
        OSError: ``out_file`` cannot be written.
    """
    page = Page(f"{rep.get('campaign')}: loop-nest mappers compared")
    page.summary(rep)
    add_comparison(page, rep)
    add_llm_steps(page, rep)
    return write_page(page, out_file)


def add_llm_steps(page: Page, rep: dict[str, Any]) -> None:
    """The transformer steps of ``rep["llm"]`` (`sweep.reports.llm.llm_steps`): a table with the
    step's parameters and serving figures in engineering units, and energy per token against
    time per token (decode) or time to first token (prefill), one point per step and mapper."""
    llm = rep.get("llm") or {}
    if llm.get("note"):
        page.text(llm["note"], "note")
    steps = llm.get("steps") or []
    if not steps:
        return
    import plotly.graph_objects as go

    from sweep import fmt
    page.heading("LLM steps: time per token, tokens/s, energy per token")
    df = pd.DataFrame(steps)
    per = [r["ttft_s"] if r["phase"] == "prefill" else r["time_per_token_s"] for r in steps]
    cells = [df["network"], df["arch"], df["mapper"], [fmt.energy(v) for v in df["energy_pj"]],
             [fmt.seconds(v) for v in per], [fmt.sig(v) for v in df["tokens_per_s"]],
             [fmt.energy(None if v is None or v != v else v * 1e12) for v in df["energy_per_token_j"]],
             [fmt.bits(r.get("dram_bits")) for r in steps],
             [" / ".join("n/a" if r.get(f"dram_{k}_share") is None else f"{100 * r[f'dram_{k}_share']:.3g}%"
                         for k in ("weights", "kv_cache", "activations")) for r in steps]]
    table = go.Figure(go.Table(header={"values": ["step", "arch", "mapper", "step energy", "TTFT / time per token",
                                                  "tokens/s", "energy per token", "DRAM per step",
                                                  "DRAM: weights / KV cache / activations"]},
                               cells={"values": cells}))
    table.update_layout(height=80 + 28 * len(steps), margin={"l": 10, "r": 10, "t": 10, "b": 10})
    page.figure(table, "llm-steps-table")
    fig = go.Figure()
    for phase, g in df.assign(per_token_s=per).groupby("phase", sort=False):
        fig.add_trace(go.Scatter(x=g["per_token_s"], y=g["energy_per_token_j"], mode="markers", name=str(phase),
                                 text=g["network"] + " on " + g["arch"] + ": " + g["mapper"],
                                 hovertemplate="%{text}<br>%{x:.4s}s per token<br>%{y:.4s}J per token<extra></extra>"))
    fig.update_xaxes(type="log", title="time to first token (prefill) / time per output token (decode), s",
                     exponentformat="SI")
    fig.update_yaxes(type="log", title="energy per token, J", exponentformat="SI")
    fig.update_layout(height=420, title="energy per token against time per token")
    page.figure(fig, "llm-steps")
