"""The systems answer on the interactive page of an architecture search over systems of chips
(``rep["systems"]``, `sweep.reports.systems.system_answers`), at the top of the page as `sweep
report` prints it first: a box with the answer (`sweep.reports.systems.answer_lines`: per model the
cheapest system that meets ``[report] slo``, or the nearest miss, and what a cost is), then per model
the front as a table with a "meets" column and the cheapest row marked
(`sweep.reports.systems.front_table`), and a figure of every system: silicon (chips x the design's
area, mm^2) against time per output token (s), coloured by the targets it meets, the front a step
line, the time-per-token target dashed, the cheapest that meets the targets ringed and named.
A model with fewer than 2 systems gets a sentence instead of a figure.
"""

from __future__ import annotations

from typing import Any

from sweep.common import fmt
from sweep.reports.html import Page
from sweep.reports.html.axes import log_axis
from sweep.reports.systems import SLO_LABELS, answer_lines, front_table, fronts

__all__ = ["add_systems", "front_figure"]

#: Point colour by the targets a system meets (the PNG's, `sweep.reports.systems`).
_CATEGORIES = (("meets the targets", "#2ca02c"), ("misses TTFT only", "#ff7f0e"),
               ("misses the time per output token", "#7f7f7f"))


def _category(r: dict[str, Any]) -> str:
    if r["meets"]:
        return _CATEGORIES[0][0]
    return _CATEGORIES[2][0] if "time_per_token_s" in r["misses"] else _CATEGORIES[1][0]


def _hover(r: dict[str, Any]) -> str:
    import html
    params = ", ".join(f"{k} = {v}" for k, v in r.get("params", {}).items())
    cost = f"<br>cost ${r['cost_usd']:,.0f} (to make, not a price)" if r.get("cost_usd") is not None else ""
    return (f"{r['chips']} x design {html.escape(r['design_id'])}, {html.escape(r['split'])}<br>{html.escape(params)}"
            f"<br>silicon {fmt.area(r['system_area_mm2'])}{cost}<br>TTFT {fmt.seconds(r.get('ttft_s'))}, "
            f"time per output token {fmt.seconds(r.get('time_per_token_s'))}<br>"
            + ("meets the targets" if r["meets"] else "misses " + ", ".join(SLO_LABELS.get(k, k) for k in r["misses"])))


def front_figure(model: str, m: dict[str, Any], slo: dict[str, float]) -> Any:
    """The figure of one model's systems (module docstring); ``m``: its entry of
    `sweep.reports.systems.system_answers`. Every system with a time per output token is one marker."""
    import plotly.graph_objects as go

    pts = [r for r in m["systems"] if r.get("time_per_token_s") is not None]
    fig = go.Figure()
    for label, colour in _CATEGORIES:
        g = [r for r in pts if _category(r) == label]
        if g:
            fig.add_trace(go.Scatter(x=[r["time_per_token_s"] for r in g], y=[r["system_area_mm2"] for r in g],
                                     mode="markers", name=f"{label} ({len(g)})", text=[_hover(r) for r in g],
                                     hovertemplate="%{text}<extra></extra>",
                                     marker={"color": colour, "size": 8, "opacity": 0.85}))
    for (label, colour), front in zip((("front of all systems", "black"), ("front of those meeting the targets",
                                                                         "#2ca02c")), fronts(m)):
        fig.add_trace(go.Scatter(x=[r["time_per_token_s"] for r in front], y=[r["system_area_mm2"] for r in front],
                                 mode="lines", line={"color": colour, "shape": "hv", "width": 1},
                                 name=f"{label} ({len(front)})", hoverinfo="skip"))
    c = m.get("cheapest")
    if c is not None:
        fig.add_trace(go.Scatter(x=[c["time_per_token_s"]], y=[c["system_area_mm2"]], mode="markers",
                                 name=f"cheapest meeting the targets: {c['chips']} x {c['design_id']}, {c['split']}",
                                 text=[_hover(c)], hovertemplate="%{text}<extra></extra>",
                                 marker={"size": 18, "color": "rgba(0,0,0,0)", "line": {"color": "red", "width": 2.5}}))
    if "time_per_token_s" in slo:  # a trace, not a shape: the axis range takes it in
        ys = [r["system_area_mm2"] for r in pts]
        fig.add_trace(go.Scatter(x=[slo["time_per_token_s"]] * 2, y=[min(ys), max(ys)], mode="lines",
                                 line={"color": "#2ca02c", "dash": "dash", "width": 1}, hoverinfo="skip",
                                 name=f"time per output token target ({fmt.seconds(slo['time_per_token_s'])})"))
    log_axis(fig, "x", "s", title_text="time per output token", max_ticks=5)
    log_axis(fig, "y", title_text="silicon: chips x the design's area (mm^2)")
    fig.update_layout(height=460, template="plotly_white", hovermode="closest",
                      title=f"{model}: silicon against time per output token ({len(pts)} systems)",
                      legend={"orientation": "h", "y": -0.2})
    return fig


def add_systems(page: Page, rep: dict[str, Any]) -> None:
    """The systems answer of ``rep`` on ``page`` (module docstring); nothing without ``rep["systems"]``."""
    ans = rep.get("systems") or {}
    if not ans:
        return
    page.answer(answer_lines(ans), "systems-answer")
    for model, m in ans["models"].items():
        title, rows, caption = front_table(model, m)
        page.heading(f"{model}: which system")
        page.table(["design", "split", "chips", "silicon", "cost", "TTFT", "time per output token", "collectives",
                    "tokens/s per mm^2", "meets", "named"],
                   [[r["design_id"], r["split"], str(r["chips"]), fmt.area(r["system_area_mm2"]),
                     f"${r['cost_usd']:,.0f}" if r.get("cost_usd") is not None else "",
                     fmt.seconds(r.get("ttft_s")), fmt.seconds(r.get("time_per_token_s")),
                     "" if r.get("collectives_share") is None else f"{r['collectives_share']:.0%}",
                     fmt.sig(r.get("tokens_per_s_per_mm2")) if r.get("tokens_per_s_per_mm2") is not None else "",
                     "yes" if r["meets"] else "no", r["mark"]] for r in rows],
                   title, "front", [bool(r["mark"]) for r in rows])
        if caption:
            page.text(caption, "note")
        if sum(r.get("time_per_token_s") is not None for r in m["systems"]) < 2:
            page.text(f"{model}: one system with a time per output token: no plot (its figures are in the table).",
                      "note")
            continue
        page.figure(front_figure(model, m, ans["slo"]), f"systems-{model}")
