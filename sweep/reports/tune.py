"""`sweep report` on a `sweep tune` output directory.

Shows: the trials by state and the best schedule; the parameter importances of the study
(`optuna.importance.get_param_importances`, Optuna's default fANOVA evaluator, on the first
objective: the mean relative gap); the reference optima (exhaustive LOMA or long SA) with the best
cost any trial found per layer ("best ever seen"); and the held-out comparison, tuned vs default
schedule at the same budget: mean gap, rate of reaching the optimum and mean proposals to reach
it, per layer and overall (``heldout.parquet``, written by `sweep tune`). PNGs (Optuna's
matplotlib plots): ``optimization_history.png`` and ``param_importances.png``, plus
``heldout_gap.png`` (per held-out layer, mean gap of both schedules).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.markup import escape

from mappers.annealing import RESERVED
from sweep.common import fmt
from sweep.common.errors import StoreError
from sweep.reports.plots import figure, pyplot, save
from sweep.study import param_importances, plot_history, plot_importances

__all__ = ["build", "show"]


def _study(directory: Path, manifest: dict):
    from sweep.study import load_study
    return load_study(directory, manifest["config"]["name"], manifest.get("storage"))


def build(directory: Path, manifest: dict, plots_dir: str | Path | None = None) -> dict[str, Any]:
    """The report of a tuning directory (its ``manifest``) as JSON-able data; PNGs into
    ``plots_dir`` (default ``DIR/plots``), their paths under ``"plots"``.

    Raises:
        StoreError: no trial stored yet.
    """
    from sweep.tune.driver import HELDOUT, heldout_summary, read_references, read_trials
    cfg = manifest.get("config", {})
    trials = read_trials(directory)
    if trials.empty:
        raise StoreError(f"{directory}: holds no finished trial yet")
    study = _study(directory, manifest)
    rep: dict[str, Any] = {"campaign": manifest.get("name"), "directory": str(directory), "kind": "tune",
                           "mapper": cfg.get("mapper"), "budget": cfg.get("budget"), "seeds": cfg.get("seeds"),
                           "sampler": cfg.get("sampler"), "objectives": cfg.get("objectives"),
                           "trials": {k: int(v) for k, v in trials["state"].value_counts().items()},
                           "trial_seconds_mean": float(trials["wall_s"].dropna().mean())}
    done = trials[trials["state"] == "COMPLETE"]
    if not done.empty:
        b = done.sort_values(["value_gap", "trial"]).iloc[0]
        rep["best"] = {"trial": int(b["trial"]), "value_gap": float(b["value_gap"]),
                       "params": json.loads(b["params"]), "full_params": json.loads(b["full_params"]),
                       "layer_gaps": json.loads(b["layer_gaps"])}
        rep["history"] = [{"trial": int(t), "gap": float(v), "best_so_far": float(m)} for t, v, m in
                          zip(done["trial"], done["value_gap"], done["value_gap"].cummin())]
    best_file = directory / "best_params.toml"
    if best_file.exists():
        rep["best_params_toml"] = best_file.read_text()
    target = (lambda t: t.values[0]) if len(cfg.get("objectives", ["gap"])) > 1 else None
    rep["importances"] = param_importances(study, target)
    refs = read_references(directory)
    if not refs.empty:
        seen = _best_seen(trials)
        refs = refs.assign(best_seen=[min(r, seen.get(l, np.inf)) for l, r in zip(refs["layer"], refs["reference"])])
        rep["references"] = refs.to_dict("records")
    hp = directory / HELDOUT
    if hp.exists():
        rep["heldout"] = heldout_summary(pd.read_parquet(hp))
    plots = Path(plots_dir) if plots_dir is not None else directory / "plots"
    rep["plots"] = _plots(study, target, rep, plots)
    return rep


def _best_seen(trials: pd.DataFrame) -> dict[str, float]:
    """Per training layer, the smallest cost any trial found (pJ, cycles or pJ x cycles)."""
    seen: dict[str, float] = {}
    for detail in trials["layer_detail"]:
        for o in json.loads(detail):
            seen[o["layer"]] = min(seen.get(o["layer"], np.inf), min(o["values"]))
    return seen


def _plots(study, target, rep: dict, plots: Path) -> list[str]:
    plt = pyplot()
    from matplotlib.transforms import offset_copy
    plots.mkdir(parents=True, exist_ok=True)
    out = []
    # Optuna's plots switch matplotlib to its "ggplot" style: keep that from leaking out of here
    with plt.rc_context(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Optuna's matplotlib plots are marked experimental
        name = "mean relative gap" if target else "Objective Value"
        ax = plot_history(study, target, name)
        ax.set_yscale("symlog", linthresh=1e-4)
        out.append(save(ax.figure, plots / "optimization_history.png"))
        if rep.get("importances"):
            ax = plot_importances(study, target, name)
            for t in ax.texts:  # the value labels: a little off the bar ends and the y axis
                t.set_transform(offset_copy(t.get_transform(), fig=ax.figure, x=4, units="points"))
            out.append(save(ax.figure, plots / "param_importances.png"))
    h = rep.get("heldout")
    if h and {"tuned", "default"} <= set(h):
        layers = list(h["default"]["layers"])
        x = np.arange(len(layers))
        fig, ax = figure(figsize=(max(6, len(layers) * 0.9), 4))
        for i, k in enumerate(("default", "tuned")):
            ax.bar(x + (i - 0.5) * 0.4, [100 * h[k]["layers"][l]["mean_gap"] for l in layers], 0.4, label=k)
        ax.set_xticks(x, layers, rotation=30, ha="right", rotation_mode="anchor")
        ax.set_ylabel("mean gap to the optimum (%)")
        ax.set_title("held-out layers: tuned vs default schedule, same budget", fontsize=10)
        ax.legend()
        out.append(save(fig, plots / "heldout_gap.png"))
    return out


def show(rep: dict, console) -> None:
    """Print ``rep`` (from `build`) as Rich tables."""
    from rich.table import Table
    smp = rep.get("sampler") or {}
    sampler = (f"{smp.get('name')} (" + ", ".join(f"{k} {v}" for k, v in smp.items() if k != "name") + ")"
               if isinstance(smp, dict) else str(smp))
    console.print(f"[bold]{escape(str(rep['campaign']))}[/]: tuning {escape(str(rep['mapper']))} at {rep['budget']} "
                  f"proposals per layer and seed, seeds {fmt.words(rep.get('seeds') or [])}, sampler "
                  f"{escape(sampler)}; trials: "
                  f"{fmt.counts(rep['trials'])}, {rep['trial_seconds_mean']:.2f} s per trial", soft_wrap=True,
                  highlight=False)
    b = rep.get("best")
    if b:
        sched = ", ".join(f"{k} = {fmt.sig(v) if isinstance(v, float) else v}" for k, v in b["full_params"].items()
                          if k not in RESERVED)
        console.print(f"best trial {b['trial']}: mean gap {100 * b['value_gap']:.4f} %, schedule {sched}",
                      soft_wrap=True, highlight=False, markup=False)
        console.print("per training layer: " + ", ".join(f"{k} {100 * v:.4f} %" for k, v in b["layer_gaps"].items()),
                      soft_wrap=True, highlight=False, markup=False)
    if rep.get("importances"):
        console.print("parameter importances (fANOVA, mean gap): " +
                      ", ".join(f"{k} {v:.2f}" for k, v in rep["importances"].items()), soft_wrap=True,
                      highlight=False, markup=False)
    if rep.get("references"):
        t = Table(title="reference optima")
        for c in ("set", "layer", "method", "space", "reference", "best_seen", "wall_s"):
            t.add_column(c, justify="left" if c in ("set", "layer", "method") else "right")
        for r in rep["references"]:
            t.add_row(r["set"], r["layer"], r["method"], "-" if r["space"] is None or r["space"] != r["space"]
                      else f"{int(r['space']):,}", fmt.sig(r["reference"]), fmt.sig(r["best_seen"]),
                      f"{r['wall_s']:.1f}")
        console.print(t)
    h = rep.get("heldout")
    if h and {"tuned", "default"} <= set(h):
        t = Table(title=f"held-out layers, same budget, seeds {fmt.words(h['tuned']['seeds'])}")
        for c in ("layer", "default gap %", "tuned gap %", "default reach", "tuned reach",
                  "default evals to opt", "tuned evals to opt"):
            t.add_column(c, justify="left" if c == "layer" else "right")
        rows = [(l, h["default"]["layers"][l], h["tuned"]["layers"][l]) for l in h["default"]["layers"]]
        rows.append(("[bold]all (mean over layers)[/]",
                     {"mean_gap": h["default"]["mean_gap"], "reach": h["default"]["reach_rate"],
                      "to_opt": h["default"]["mean_evals_to_optimum"]},
                     {"mean_gap": h["tuned"]["mean_gap"], "reach": h["tuned"]["reach_rate"],
                      "to_opt": h["tuned"]["mean_evals_to_optimum"]}))
        for l, d, u in rows:
            t.add_row(l, f"{100 * d['mean_gap']:.4f}", f"{100 * u['mean_gap']:.4f}", f"{100 * d['reach']:.1f} %",
                      f"{100 * u['reach']:.1f} %", f"{d['to_opt']:.0f}", f"{u['to_opt']:.0f}")
        console.print(t)
    else:
        console.print("held-out comparison: not computed yet (it runs when the study reaches its trials)")
    if rep.get("best_params_toml"):
        console.print("best_params.toml:\n" + rep["best_params_toml"], highlight=False, markup=False)
    for p in rep.get("plots", []):
        console.print(f"plot: {p}")
