"""The interactive report of a `sweep tune` directory (`sweep report DIR --html FILE`).

Optuna's own Plotly figures of the study (`sweep.study.history_figure`,
`sweep.study.importances_figure`: the optimisation history, one marker per complete trial, and
the parameter importances, fANOVA, on the first objective: the mean relative gap), the best
schedule, and, once `sweep tune` has run it, the held-out comparison (per held-out layer, the
mean gap of the tuned and the default schedule at the same budget), as `sweep.reports.tune`.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from mappers.annealing import RESERVED
from sweep.reports.html import Page, short, write_page
from sweep.reports.html.axes import log_axis
from sweep.reports.tune import _study
from sweep.study import history_figure, importances_figure

__all__ = ["build", "heldout_figure"]


def heldout_figure(h: dict[str, Any]) -> Any:
    """Bars: per held-out layer, the mean gap to the optimum (%) of the default and the tuned
    schedule (``rep["heldout"]`` of `sweep.reports.tune.build`)."""
    import plotly.graph_objects as go

    layers = list(h["default"]["layers"])
    fig = go.Figure([go.Bar(x=layers, y=[100 * h[k]["layers"][l]["mean_gap"] for l in layers], name=k,
                            hovertemplate=f"%{{x}}<br>{k}: %{{y:.4g}} %<extra></extra>")
                     for k in ("default", "tuned")])
    fig.update_layout(barmode="group", template="plotly_white", height=420, yaxis_title="mean gap to the optimum (%)",
                      title="held-out layers: tuned vs default schedule, same budget")
    return fig


def build(directory: Path, manifest: dict, out_file: str | Path, rep: dict[str, Any]) -> Path:
    """Write the interactive page of a tuning directory (module docstring) from its report
    ``rep`` (`sweep.reports.tune.build`) to ``out_file``; returns the path.

    Raises:
        StoreError: the study cannot be loaded.
        OSError: ``out_file`` cannot be written.
    """
    study = _study(Path(directory), manifest)
    multi = len((manifest.get("config") or {}).get("objectives") or ["gap"]) > 1
    target = (lambda t: t.values[0]) if multi else None
    name = "mean relative gap"
    sampler = rep.get("sampler")
    if isinstance(sampler, dict):
        sampler = f"{sampler.get('name')} (" + ", ".join(f"{k} {v}" for k, v in sampler.items() if k != "name") + ")"
    page = Page(f"{rep.get('campaign')}: tuning {rep.get('mapper')}")
    page.text(f"{rep.get('campaign')} in {rep.get('directory')}: {rep.get('mapper')} at {rep.get('budget')} "
              f"proposals per layer and seed, seeds {rep.get('seeds')}, sampler {sampler}; trials "
              + ", ".join(f"{k} {v}" for k, v in (rep.get("trials") or {}).items()) + ".")
    b = rep.get("best")
    if b:
        sched = {k: v for k, v in b["full_params"].items() if k not in RESERVED}
        page.text(f"best trial {b['trial']}: mean gap {100 * b['value_gap']:.4f} %, schedule "
                  + ", ".join(f"{k} = {short(v)}" for k, v in sched.items()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Optuna marks some plots experimental
        page.heading("Optimisation history")
        fig = history_figure(study, target, name)
        gaps = [h["gap"] for h in rep.get("history", [])]
        if gaps and min(gaps) > 0:  # else linear: a gap of 0 is the optimum
            log_axis(fig, "y")
        fig.update_layout(height=420)
        page.figure(fig, "history")
        page.heading("Parameter importances")
        if rep.get("importances"):
            page.figure(importances_figure(study, target, name), "importances")
        else:
            page.text("not computed: fewer than 2 complete trials, or one value per parameter.", "note")
    h = rep.get("heldout")
    page.heading("Held-out layers")
    if h and {"tuned", "default"} <= set(h):
        page.text(f"mean gap over the held-out layers: default {100 * h['default']['mean_gap']:.4f} %, tuned "
                  f"{100 * h['tuned']['mean_gap']:.4f} %; optimum reached: default "
                  f"{100 * h['default']['reach_rate']:.1f} %, tuned {100 * h['tuned']['reach_rate']:.1f} %.")
        page.figure(heldout_figure(h), "heldout")
    else:
        page.text("not computed yet (it runs when the study reaches its trials).", "note")
    return write_page(page, out_file)
