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

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sweep.common import fmt
from sweep.reports.html import COLOURS, Page, short, write_page
from sweep.reports.html.axes import category_axis, gapped, layer_labels, log_axis
from sweep.reports.loopnest import read
from sweep.reports.summary import _first_line

__all__ = ["add_comparison", "add_unfinished", "build", "layers_figure", "unfinished_problems"]

_UNITS = {"energy": "pJ", "latency": "cycles", "edp": "pJ x cycles", "latency_bytes": "cycles x bytes"}
#: The objectives whose ticks carry their unit (`tick_text`); the others' unit is on the axis title.
_TICK_UNITS = {"energy": "pJ", "latency": "cycles"}


def _hover(r: pd.Series, obj: str, base: str | None) -> str:
    rep = int(r["repeat"])
    lines = [f"{r['layer']} (layer {int(r['layer_index'])}, x{rep}): {r['label']}",
             f"best {obj} {short(r['value'])} {_UNITS.get(obj, '')} per execution".rstrip(),
             f"energy {short(r['energy_pj'])} pJ, latency {short(r['latency_cycles'])} cycles per execution",
             f"x {rep} executions: energy {short(r['energy_pj'] * rep)} pJ, latency "
             f"{short(r['latency_cycles'] * rep)} cycles in the network",
             f"search {short(r['search_s'], 3)} s, {short(r['evaluations'])} evaluations, {int(r['seeds'])} seed(s)"]
    ratio = r.get("vs_baseline")
    if base is not None and ratio is not None and ratio == ratio:
        lines.append(f"{base} / this: {ratio:.3f}x")
    return "<br>".join(lines)


def layers_figure(g: pd.DataFrame, mappers: list[str], title: str, obj: str, base: str | None) -> Any:
    """The two-panel figure of one (network, arch, objective) group ``g`` of ``rep["layers"]``:
    one trace per mapper label of ``mappers`` present over every layer of ``g``, a marker per
    layer the mapper has a result for and a gap in its line at the others (`gapped`)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(2, 1, shared_xaxes=True, vertical_spacing=0.06)
    order = g.drop_duplicates("layer_index").sort_values("layer_index")
    names = layer_labels(order)
    for i, lab in enumerate(mappers):
        m = g[g["label"] == lab].sort_values("layer_index")
        if m.empty:
            continue
        x = layer_labels(m)
        text = gapped(names, x, [_hover(r, obj, base) for _, r in m.iterrows()])
        for row, col in ((1, "value"), (2, "search_s")):
            fig.add_trace(go.Scatter(x=names, y=gapped(names, x, m[col].tolist()), mode="lines+markers", name=lab,
                                     legendgroup=lab, line={"color": COLOURS[i % len(COLOURS)]}, connectgaps=False,
                                     showlegend=row == 1, text=text, hovertemplate="%{text}<extra></extra>"),
                          row=row, col=1)
    unit, plain = _UNITS.get(obj, ""), obj in _TICK_UNITS
    log_axis(fig, "y", _TICK_UNITS.get(obj, ""), row=1, col=1,
             title_text=f"best {obj} per execution" + (f" ({unit})" if unit and not plain else ""))
    log_axis(fig, "y", "s", row=2, col=1, title_text="search time")
    category_axis(fig, names)
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
    log_axis(fig, "y", row=1, col=2)
    fig.update_layout(barmode="group", height=440, template="plotly_white",
                      title=f"Per network vs {base} (SALSA Fig. 5 right; CoSA Figs. 6-7)")
    return fig


def unfinished_problems(rows: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per mapper (first met first), the problems of ``rows`` that have no finished row, no row of
    status "ok" with a finite value (every unit failed or was infeasible, or the search was
    skipped: `sweep report`'s "left out of the tables"): ``problems`` (how many), their ``rows``
    by status (an "ok" row without a finite value counts as "skipped") and the ``reason`` of the
    first such row: its error's first line, else why its search was skipped."""
    if rows.empty or "problem_id" not in rows:  # only whole-task failures: see the summary
        return {}
    status = rows["status"].astype(str)
    done = status.eq("ok") & np.isfinite(pd.to_numeric(rows["value"], errors="coerce").astype(float))
    left = rows[rows["problem_id"].notna() & ~rows["problem_id"].isin(set(rows.loc[done, "problem_id"]))]
    left = left.assign(status=status[left.index].where(status[left.index] != "ok", "skipped"))
    out = {}
    for mapper, g in left.groupby(left["mapper"].astype(str), sort=False):
        errors = g["error"].dropna().astype(str).str.strip() if "error" in g else pd.Series(dtype=str)
        errors = errors[errors != ""]
        out[mapper] = {"problems": int(g["problem_id"].nunique()),
                       "rows": {str(k): int(v) for k, v in g["status"].value_counts(sort=False).items()},
                       "reason": _first_line(errors.iloc[0]) if not errors.empty else _skip_reason(g.iloc[0])}
    return out


def _skip_reason(row: pd.Series) -> str:
    """Why the search of a row with status "ok" but no finite value was skipped (its ``extra``)."""
    try:
        extra = json.loads(row.get("extra") or "{}")
    except (TypeError, ValueError):
        extra = {}
    if isinstance(extra, dict) and {"space", "max_orderings"} <= set(extra):
        return f"search skipped: {extra['space']:,} orderings, more than max_orderings {extra['max_orderings']:,}"
    return "search skipped: no finite value"


def add_unfinished(page: Page, rows: pd.DataFrame) -> None:
    """A note naming the problems the figures leave out (`unfinished_problems`): per mapper how
    many, their rows by status and the first reason; nothing when every problem has a result."""
    left = unfinished_problems(rows)
    if not left:
        return
    page.text("left out of the figures, no finished row (every unit failed or was infeasible, or the search "
              "was skipped):", "note")
    page.items([f"{m}: {u['problems']:,} problem(s); rows {fmt.counts(u['rows'])}; first reason: {u['reason']}"
                for m, u in left.items()], "errors")


def add_comparison(page: Page, rep: dict[str, Any], rows: pd.DataFrame | None = None) -> None:
    """Add the per-layer figures of ``rep["layers"]`` and the per-network bars to ``page``
    (module docstring), after the problems they leave out (`add_unfinished` of the unit
    ``rows``, when given); a note when no layer has a finished row."""
    if rows is not None:
        add_unfinished(page, rows)
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
        StoreError: unreadable, or no result row stored yet.
        OSError: ``out_file`` cannot be written.
    """
    what = "LLM steps mapped" if (rep.get("llm") or {}).get("steps") else "loop-nest mappers compared"
    page = Page(f"{rep.get('campaign')}: {what}")
    page.summary(rep)
    add_comparison(page, rep, read(Path(directory))[0])
    from sweep.reports.loopnest import low_utilization_lines
    lines = low_utilization_lines(rep)
    if lines:
        page.heading("PE utilisation")
        page.text(lines[0], "note")
        page.items([x.strip() for x in lines[1:]], "errors")
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

    page.heading("LLM steps: time per token, tokens/s, energy per token")
    df = pd.DataFrame(steps)
    per = [r["ttft_s"] if r["phase"] == "prefill" else r["time_per_token_s"] for r in steps]
    def _n(v):
        return "-" if v is None or v != v else f"{int(v):,}"
    cells = [df["network"], [r.get("phase") or "-" for r in steps], [_n(r.get("batch")) for r in steps],
             [_n(r.get("seq") if r.get("phase") == "prefill" else r.get("context")) for r in steps],
             df["arch"], df["mapper"], [fmt.energy(v) for v in df["energy_pj"]],
             [fmt.seconds(v) for v in per], [fmt.sig(v) for v in df["tokens_per_s"]],
             [fmt.energy(_pj(v)) for v in df["energy_per_token_j"]],
             [fmt.bits(r.get("dram_bits")) for r in steps],
             [" / ".join("n/a" if r.get(f"dram_{k}_share") is None else f"{100 * r[f'dram_{k}_share']:.3g}%"
                         for k in ("weights", "kv_cache", "activations")) for r in steps],
             [_memory(r) for r in steps],
             ["-" if r.get("max_batch") is None else f"{r['max_batch']:,}" for r in steps],
             [r.get("precision") or "n/a" for r in steps]]
    table = go.Figure(go.Table(header={"values": ["step", "phase", "batch", "seq / context", "arch", "mapper",
                                                  "step energy", "TTFT / time per token",
                                                  "tokens/s", "energy per token", "DRAM per step",
                                                  "DRAM: weights / KV cache / activations", "memory",
                                                  "largest batch that fits" + _share(llm), "precisions"]},
                               cells={"values": cells, "height": 30},
                               columnwidth=[2.4, 0.8, 0.6, 0.9, 1, 1, 1, 1.3, 0.8, 1.1, 1, 1.9, 1, 1, 2.2]))
    table.update_layout(height=90 + 32 * len(steps), margin={"l": 10, "r": 10, "t": 10, "b": 10})
    page.figure(table, "llm-steps-table")
    fig = go.Figure()
    for phase, g in df.assign(per_token_s=per).groupby("phase", sort=False):
        fig.add_trace(go.Scatter(x=g["per_token_s"].tolist(), y=g["energy_per_token_j"].tolist(), mode="markers",
                                 name=str(phase), marker={"size": 9},
                                 text=[f"{r.network} on {r.arch}: {r.mapper}<br>{fmt.seconds(r.per_token_s)} per token, "
                                       f"{fmt.energy(_pj(r.energy_per_token_j))} per token" for r in g.itertuples()],
                                 hovertemplate="%{text}<extra></extra>"))
    log_axis(fig, "x", "s", title_text="time to first token (prefill) / time per output token (decode)")
    log_axis(fig, "y", "J", title_text="energy per token")
    fig.update_layout(height=420, template="plotly_white", title="energy per token against time per token")
    page.figure(fig, "llm-steps")


def _share(llm: dict[str, Any]) -> str:
    """`` (0.90 of the DRAM)``: the usable share the memory figures count (``gpu_memory_utilization``
    of `sweep.reports.llm.llm_steps`), "" when the report does not say."""
    u = llm.get("gpu_memory_utilization")
    return "" if u is None else f" ({u:.2f} of the DRAM, gpu_memory_utilization)"


def _memory(r: dict[str, Any]) -> str:
    """A step's DRAM footprint, or that it does not fit (`costmodel.capacity`)."""
    from costmodel.capacity import gb
    if r.get("does_not_fit"):
        return "does not fit"
    v = r.get("memory_bytes")
    return "n/a" if v is None or v != v else gb(v)


def _pj(joules: Any) -> float | None:
    """An energy in J as pJ (`sweep.common.fmt.energy`'s unit); None for None or NaN."""
    return None if joules is None or joules != joules else joules * 1e12
