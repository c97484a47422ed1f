"""The interactive report of a serving campaign (`sweep report DIR --html FILE`): the goodput of
each design and scheduler setting against its silicon and its cost (hover: the design, the
setting, goodput per mm^2 and per $), the TTFT and TPOT percentiles against the offered rate with
the SLO drawn (one line per design and setting), and the winners, from the report
`sweep.reports.serving.campaign.build` made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sweep.reports.html import COLOURS, Page, short, write_page
from sweep.reports.serving import fixed
from sweep.reports.serving.campaign import PERCENTILE_COLUMNS, _is_shown, design_label, slo_text

__all__ = ["build"]


def _front_figure(rep: dict[str, Any], n_set: int) -> Any:
    """Goodput (req/s) against the system's area (mm^2) and its chips' cost (USD), a point per
    finished (design, setting)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    pts = [r for r in rep["designs"] if r.get("status") == "ok" and r.get("goodput_rps") is not None]
    fig = make_subplots(1, 2, horizontal_spacing=0.1)
    for col, key, title in ((1, "system_area_mm2", "silicon (mm^2)"), (2, "cost_usd", "chips' cost (USD)")):
        have = [r for r in pts if r.get(key)]
        fig.add_trace(go.Scatter(
            x=[r[key] for r in have], y=[r["goodput_rps"] for r in have], mode="markers", showlegend=False,
            marker={"color": COLOURS[0], "size": 9},
            text=[f"{design_label(r, n_set)}<br>goodput {short(r['goodput_rps'])} req/s<br>per mm^2 "
                  f"{short(r.get('goodput_per_mm2'))}, per $ {short(r.get('goodput_per_usd'))}" for r in have],
            hovertemplate="%{text}<extra></extra>"), row=1, col=col)
        fig.update_xaxes(title_text=title, row=1, col=col)
    fig.update_yaxes(title_text="goodput (req/s)", row=1, col=1)
    fig.update_layout(template="plotly_white", height=420, title=f"goodput under the SLO ({slo_text(rep['slo'])})")
    return fig


def _latency_figure(rep: dict[str, Any], n_set: int) -> Any:
    """TTFT and TPOT at P50 / P90 / P99 (s, log) against the offered rate (req/s)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    fig = make_subplots(2, 3, shared_xaxes=True, subplot_titles=[c.replace("_s", "").replace("_", " ").upper()
                                                                 for c in PERCENTILE_COLUMNS])
    groups: dict[str, list[dict]] = {}
    for r in rep["per_rate"]:
        if r["status"] == "ok" and _is_shown(rep, r):
            groups.setdefault(design_label(r, n_set), []).append(r)
    for i, (label, g) in enumerate(groups.items()):
        g = sorted(g, key=lambda r: r["rate"])
        for j, c in enumerate(PERCENTILE_COLUMNS):
            fig.add_trace(go.Scatter(x=[r["rate"] for r in g], y=[r[c] for r in g], mode="lines+markers",
                                     name=label, legendgroup=label, showlegend=j == 0,
                                     line={"color": COLOURS[i % len(COLOURS)]},
                                     hovertemplate=f"{label}<br>%{{x}} req/s: %{{y:.4g}} s<extra></extra>"),
                          row=j // 3 + 1, col=j % 3 + 1)
    for row, key in ((1, "ttft_s"), (2, "tpot_s")):
        target = rep["slo"].get(key)
        for col in (1, 2, 3):
            if target:
                fig.add_hline(y=target, line={"dash": "dash", "color": "black", "width": 1}, row=row, col=col)
            fig.update_yaxes(type="log", title_text="s" if col == 1 else None, row=row, col=col)
    fig.update_xaxes(title_text="offered rate (req/s)", row=2)
    fig.update_layout(template="plotly_white", height=620, title="latency against the offered rate (dashed: the SLO)")
    return fig


def build(directory: Path, manifest: dict, out_file: str | Path, rep: dict[str, Any]) -> Path:
    """Write the interactive page of a serving directory (module docstring) from its report ``rep``
    to ``out_file``; returns the path.

    Raises:
        OSError: ``out_file`` cannot be written.
    """
    page = Page(f"{rep.get('campaign')}: {rep.get('model')} served")
    page.summary(rep)
    n_set = len({r["setting"] for r in rep["designs"]})
    w = rep.get("winners") or {}
    lines = [f"most {what}: {design_label(r)} ({r['setting']}), {short(r[k])}" for k, what in
             (("goodput_rps", "goodput (req/s)"), ("goodput_per_mm2", "goodput per mm^2"),
              ("goodput_per_usd", "goodput per $")) if (r := w.get(k)) is not None]
    page.heading("goodput")
    if rep.get("goodput_searched") and lines:
        page.items(lines)
        page.figure(_front_figure(rep, n_set), "goodput")
    else:
        page.text("no goodput: not searched ([serving] goodput = false), or no design meets the SLO at any rate.",
                  "note")
    if cmp := fixed.lines(rep.get("fixed_batch") or {}):
        page.heading("the request answer and the fixed-batch answer")
        page.items(cmp)
    page.heading("latency per offered rate" + (f" (the {len(rep['shown'])} best by goodput per mm^2)"
                                               if len(rep.get("shown") or ()) < len(rep["designs"]) else ""))
    page.figure(_latency_figure(rep, n_set), "latency")
    return write_page(page, out_file)
