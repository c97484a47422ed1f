"""`sweep report` of a loop-nest (``kind = "loopnest"``) result directory: SALSA-style comparisons.

From the unit rows and the problems table of a result directory:

* ``layers``: per (network, layer, arch, objective) the best value, energy (pJ), latency (cycles),
  evaluations and search time of every mapper configuration (mean over seeds);
* ``networks``: per network, objective and mapper the mean reduction (1 - mapper / baseline), the
  geomean improvement (baseline / mapper: CoSA's geomean speed-up for latency, the inverse of its
  normalised energy) and the search speed-up, relative to a baseline mapper (default ``random``),
  like SALSA's Fig. 5 (right) and CoSA's Figs. 6-7;
* plots: per-layer energy and search time of one network (Fig. 5, left), the per-network bars,
  and the distribution of the objective over the states visited for one layer (Fig. 4).

A problem's result is the best of its unit rows (ties to the lowest unit; under the latency
objective, for a mapper that breaks latency ties, `mappers.base.rank_key`, to the least energy
first); its search time is
the sum of the units' wall times (CPU seconds) and its evaluations the sum over units.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from sweep.common import fmt
from sweep.engine.store import Store
from sweep.common.fmt import print_wide
from sweep.reports.summary import print_plots, print_summary, read_rows, summary
from sweep.reports.plots import (
    category_ticks,
    figure,
    log_axis,
    rotate_xticklabels,
    save,
)

__all__ = [
    "assemble",
    "best_units",
    "build",
    "layer_report",
    "mapper_labels",
    "print_layer_report",
    "read",
    "show",
    "write_layer_plots",
]


def read(directory: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The unit rows and the problems table of a loop-nest (or NPU) result directory.

    Raises:
        StoreError: unreadable, or no result row stored yet.
    """
    (rows,) = read_rows(directory)
    return rows, Store(directory).read("problems")


def assemble(directory: Path, manifest: dict, rows: pd.DataFrame, problems: pd.DataFrame,
             plots_dir: str | Path | None = None) -> dict[str, Any]:
    """`summary` and `layer_report` of ``rows``; with ``plots_dir``, also the plots (their paths
    under ``"plots"``)."""
    cfg = manifest.get("report") or {}
    rep = summary(directory, manifest, rows, problems)
    rep.update(layer_report(rows, problems, cfg.get("baseline", "random")))
    rep["baseline_asked"] = "baseline" in cfg
    from sweep.reports.llm import llm_steps
    llm = llm_steps(Path(directory), manifest, rep.get("layers") or [], _problems(rows, problems))
    if llm["steps"] or llm["note"]:  # a campaign of transformer steps
        rep["llm"] = llm
    low = low_utilization(Path(directory), manifest, _problems(rows, problems))
    if low.get("rows") or low.get("note"):
        rep["low_utilization"] = low
    if plots_dir is not None and "problem_id" in problems:
        named = rows.merge(problems[["problem_id", "network", "layer_index"]], on="problem_id", how="left")
        rep["plots"] = write_layer_plots(rep, named, plots_dir, cfg.get("network"))
    return rep


def build(directory: Path, manifest: dict, plots_dir: str | Path | None = None) -> dict[str, Any]:
    """The report of a loop-nest result directory as JSON-able data (module doc).

    Raises:
        StoreError: unreadable, or no result row stored yet.
    """
    rows, problems = read(directory)
    return assemble(directory, manifest, rows, problems, plots_dir)


def show(rep: dict[str, Any], console) -> None:
    """Print ``rep`` (from `build`) as Rich tables."""
    print_summary(rep, console)
    print_layer_report(rep, console)
    from sweep.reports.llm import print_llm_steps
    print_llm_steps(rep, console)
    for line in low_utilization_lines(rep):
        console.print(line, style="yellow", soft_wrap=True, highlight=False, markup=False)
    print_plots(rep, console)


#: Below this share of the PEs busy on average, the report names the layer's best mapping.
LOW_UTILIZATION = 0.25
#: At most this many best mappings are rebuilt to check their PE utilisation.
_MAX_CHECKED = 5000


def low_utilization(directory: Path, manifest: dict, best: pd.DataFrame) -> dict[str, Any]:
    """The best mappings (``best``: `best_units`) that keep fewer than `LOW_UTILIZATION` of their
    accelerator's PEs busy on average: utilisation = MACs / (compute cycles x PEs) of the mapping
    rebuilt from its row (`costmodel.loopnest.reference.evaluate`'s breakdown, as ``sweep map``).

    Returns:
        ``{"threshold", "checked", "rows": [{network, layer, arch, mapper, utilization, busy_pes,
        pes, searched, hint}], "note"}``: ``searched`` whether the unrolling was searched (more
        than one ``spatial_candidates``, or a full-space mapper's ``mapping``), ``hint`` whether the accelerator has a
        ``[spatial_hint]`` to search under; ``note`` why nothing was checked (not a loop-nest
        campaign, more than 5,000 best mappings, the campaign no longer parses).
    """
    out: dict[str, Any] = {"threshold": LOW_UTILIZATION, "checked": 0, "rows": [], "note": ""}
    if best.empty or "loops" not in best:
        return out
    if len(best) > _MAX_CHECKED:
        return dict(out, note=f"PE utilisation not checked: {len(best):,} best mappings (more than {_MAX_CHECKED:,})")
    from costmodel.loopnest.arch import Accelerator
    from costmodel.loopnest.reference import evaluate
    from sweep.reports.llm import _campaign, _mapping
    campaign, why = _campaign(directory, manifest)
    if campaign is None:
        return dict(out, note=f"PE utilisation not checked: {why}")
    archs = dict(campaign.architectures.archs)
    nets = {n.name: list(n.unique()) for n in campaign.networks}
    for _, r in best.iterrows():
        acc, uniq = archs.get(r["arch"]), nets.get(r["network"])
        if not isinstance(acc, Accelerator) or uniq is None:
            continue
        layer = uniq[int(r["layer_index"])][0]
        try:
            rep = evaluate(layer, acc, _mapping(layer, acc, r))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        out["checked"] += 1
        u = float(rep.breakdown.get("utilization", 1.0)) if rep.valid else 1.0
        if u < LOW_UTILIZATION:
            cands = r.get("spatial_candidates")   # loop-order mappers: > 1 when the unrolling was searched
            searched = bool(cands == cands and cands is not None and cands > 1) or \
                bool(isinstance(r.get("mapping"), str) and r.get("mapping"))   # full-space mappers
            out["rows"].append({"network": r["network"], "layer": r["layer"], "arch": r["arch"],
                                "mapper": r["label"], "utilization": u, "busy_pes": u * acc.pe_count,
                                "pes": acc.pe_count, "searched": searched, "hint": acc.spatial_hint is not None})
    return out


def low_utilization_lines(rep: dict[str, Any]) -> list[str]:
    """`low_utilization` of ``rep`` in words: how many best mappings keep few PEs busy, the
    lowest, and what to try (the spatial search under the accelerator's hint); [] if none."""
    low = rep.get("low_utilization") or {}
    rows = low.get("rows") or []
    if not rows:
        return [low["note"]] if low.get("note") else []
    w = min(rows, key=lambda r: r["utilization"])
    lines = [f"{len(rows):,} of {low['checked']:,} best mappings keep fewer than {low['threshold']:.0%} of the PEs "
             f"busy (lowest: {w['network']} / {w['layer']} on {w['arch']} by {w['mapper']}, {w['utilization']:.1%}, "
             f"{w['busy_pes']:.1f} of {w['pes']:,} PEs on average)"]
    fixed = sorted({r["mapper"] for r in rows if r["hint"] and not r["searched"]})
    if fixed:
        lines.append(f"  {', '.join(fixed)} kept the accelerator's fixed [spatial] unrolling: try spatial = \"search\" "
                     "in the mapper's params (each layer's unrolling searched under the accelerator's [spatial_hint])")
    else:
        lines.append("  the unrollings were searched (or no [spatial_hint] allows another): the array is larger "
                     "than these layers can use")
    return lines


def mapper_labels(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Short names of a campaign's mapper configurations, keyed by their (mapper, params JSON).

    A mapper with one configuration is its name (``salsa``); a mapper with several is its name and
    every parameter whose value differs between them, seeds left out (``random(max_samples=200)``
    and ``random(max_samples=1000)``), so two entries never share a label. A parameter one entry
    leaves unset reads ``absent``.
    """
    entries: dict[str, dict[str, dict]] = {}  # mapper -> canonical params (no seed) -> params
    parsed: dict[tuple[str, str], tuple[str, dict]] = {}
    for m, pj in dict.fromkeys((str(m), str(pj)) for m, pj in pairs):
        params = {k: v for k, v in json.loads(pj).items() if k != "seed"}
        parsed[(m, pj)] = (m, params)
        entries.setdefault(m, {})[json.dumps(params, sort_keys=True)] = params
    differing: dict[str, list[str]] = {}
    for m, by_key in entries.items():
        configs = list(by_key.values())
        names = sorted({k for c in configs for k in c})
        differing[m] = [k for k in names if len({json.dumps(c.get(k), sort_keys=True) for c in configs}) > 1]
    return {pair: m + ("(" + ", ".join(f"{k}={_label_value(params.get(k))}" for k in differing[m]) + ")"
                       if differing[m] else "")
            for pair, (m, params) in parsed.items()}


def _label_value(v: Any) -> str:
    if v is None:
        return "absent"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, (list, tuple)):
        return "+".join(str(x) for x in v)
    return str(v)


def finished(rows: pd.DataFrame, problems: pd.DataFrame) -> bool:
    """Whether ``rows`` hold a finished unit row a report can use: some row "ok" with its figures
    (a run whose tasks all failed as a whole stores only ``task_id``, ``status``, ``mapper`` and
    ``error``) and a problems table naming the problems."""
    return "value" in rows and "problem_id" in rows and "problem_id" in problems and bool((rows["status"] == "ok").any())


def best_units(rows: pd.DataFrame, problems: pd.DataFrame) -> pd.DataFrame:
    """Per (network, layer) alias of each problem its best finished unit row (lowest value, ties
    to the lowest unit): ``label``, the figures, ``loops`` / ``spatial`` / ``mapping``, ``arch``,
    ``objective``, ``seed``, ``mapper``; empty if no row is finished."""
    return _problems(rows, problems)


def _problems(rows: pd.DataFrame, problems: pd.DataFrame) -> pd.DataFrame:
    if not finished(rows, problems):
        return pd.DataFrame()
    ok = rows[rows["status"] == "ok"].copy()
    ok["value"] = ok["value"].astype(float)
    ok = ok[np.isfinite(ok["value"])]  # skipped searches (e.g. loma over max_orderings) and failures
    # a mapper that breaks latency ties by energy (`mappers.base.rank_key`) is read the same way
    from mappers import MAPPER_NAMES, get_mapper
    names = ok["mapper"].astype(str)
    tie_mappers = [m for m in names.unique() if m in MAPPER_NAMES and get_mapper(m).latency_ties]
    ties = names.isin(tie_mappers).to_numpy()
    lat = (ok["objective"].astype(str) == "latency").to_numpy() if "objective" in ok else np.zeros(len(ok), bool)
    ok["_tie"] = np.where(ties & lat, ok["energy_pj"].astype(float), 0.0)
    ok = ok.sort_values(["problem_id", "value", "_tie", "unit_index"], kind="stable").drop(columns="_tie")
    best = ok.groupby("problem_id", sort=False).head(1).set_index("problem_id")
    agg = ok.groupby("problem_id").agg(evaluations=("evaluations", "sum"), search_s=("wall_s", "sum"),
                                       units=("unit_index", "count"))
    best = best.drop(columns=["evaluations"]).join(agg)
    configs = rows[["mapper", "params"]].dropna().drop_duplicates()
    labels = mapper_labels(zip(configs["mapper"], configs["params"]))
    best["label"] = [labels[(str(m), str(p))] for m, p in zip(best["mapper"], best["params"])]
    cols = ["label", "value", "energy_pj", "latency_cycles", "edp", "evaluations", "search_s",
            "engine", "units", "loops"] + [c for c in ("spatial", "spatial_candidates", "mapping") if c in best]
    return problems.drop(columns=["task_id", "mapper", "arch", "objective", "seed"], errors="ignore") \
        .join(best[cols + ["arch", "objective", "seed", "mapper"]], on="problem_id", how="inner")


def layer_report(rows: pd.DataFrame, problems: pd.DataFrame, baseline: str = "random") -> dict[str, Any]:
    """Per-layer and per-network tables as JSON-able data (see the module docstring), and
    ``unreported``: the problems with no finished row (every unit failed, or the search was
    skipped), counted per mapper, which the tables leave out."""
    df = _problems(rows, problems)
    missing = _unreported(rows, df)
    if df.empty:
        return {"layers": [], "networks": [], "unreported": missing}
    keys = ["network", "layer_index", "layer", "arch", "objective", "label"]
    per = df.groupby(keys, sort=False, observed=True).agg(
        value=("value", "mean"), energy_pj=("energy_pj", "mean"), latency_cycles=("latency_cycles", "mean"),
        evaluations=("evaluations", "mean"), search_s=("search_s", "mean"), seeds=("value", "count"),
        repeat=("repeat", "first")).reset_index()
    labels = list(dict.fromkeys(per["label"]))
    base = next((l for l in labels if l.split("(")[0] == baseline), None)
    if base is not None:  # per layer: baseline value / value (the speed-up for latency)
        key = ["network", "layer_index", "arch", "objective"]
        bv = per[per["label"] == base].set_index(key)["value"]
        per["vs_baseline"] = bv.reindex(pd.MultiIndex.from_frame(per[key])).to_numpy() / per["value"].to_numpy()
    layers = per.to_dict("records")
    nets = []
    if base is not None:
        piv_e = per.pivot_table(index=["network", "layer_index", "arch", "objective"], columns="label",
                                values="value", aggfunc="first", observed=True)
        piv_t = per.pivot_table(index=["network", "layer_index", "arch", "objective"], columns="label",
                                values="search_s", aggfunc="first", observed=True)
        winners = piv_e.idxmin(axis=1)  # the mapper with the best value per layer (ties: first)
        for (net, arch, obj), idx in piv_e.groupby(level=["network", "arch", "objective"]).groups.items():
            for lab in labels:
                if lab not in piv_e:
                    continue
                e = piv_e.loc[idx, lab]
                b = piv_e.loc[idx, base]
                t = piv_t.loc[idx, lab]
                tb = piv_t.loc[idx, base]
                m = e.notna() & b.notna()
                if not m.any():
                    continue
                nets.append({"network": net, "arch": arch, "objective": obj, "mapper": lab,
                             "baseline": base, "layers": int(m.sum()),
                             "mean_reduction_vs_baseline": float(np.mean(1.0 - e[m] / b[m])),
                             "geomean_improvement_vs_baseline": float(np.exp(np.mean(np.log(b[m] / e[m])))),
                             "speedup_vs_baseline": float(tb[m].sum() / max(t[m].sum(), 1e-12)),
                             "search_s": float(t[m].sum()),
                             "wins": int((winners.loc[idx] == lab).sum())})
    return {"baseline": base, "mappers": labels, "layers": layers, "networks": nets, "unreported": missing}


def _unreported(rows: pd.DataFrame, df: pd.DataFrame) -> dict[str, int]:
    """Mapper -> problems of ``rows`` absent from ``df`` (the finished problems of `_problems`)."""
    if "problem_id" not in rows:  # only whole-task failures: their problems are not even named
        return {}
    done = set(df.index if "problem_id" not in df else df["problem_id"]) if not df.empty else set()
    per = rows[rows["problem_id"].notna()].drop_duplicates("problem_id")
    per = per[~per["problem_id"].isin(done)]
    return {str(k): int(v) for k, v in per["mapper"].astype(str).value_counts(sort=False).items() if v}


def print_layer_report(rep: dict[str, Any], console) -> None:
    """Rich tables of `layer_report`."""
    from rich.table import Table

    labels = rep.get("mappers", [])
    _print_unreported(rep, console)
    if not rep.get("layers"):
        return
    layers = pd.DataFrame(rep["layers"])
    base = rep.get("baseline")
    for (net, arch, obj), g in layers.groupby(["network", "arch", "objective"], sort=False):
        ratio_note = f"(x: {base} / mapper) " if base else ""
        t = Table(title=f"{net} on {arch}: best {obj} per layer {ratio_note}/ time to solution (s)")
        t.add_column("layer")
        for lab in labels:
            t.add_column(lab, justify="right")
        for (li, lname), gl in g.groupby(["layer_index", "layer"], sort=True):
            cells = []
            for lab in labels:
                r = gl[gl["label"] == lab]
                ratio = r["vs_baseline"].iloc[0] if not r.empty and "vs_baseline" in r else float("nan")
                cells.append("-" if r.empty else f"{_value(r['value'].iloc[0], obj)}"
                             + (f" ({ratio:.2f}x)" if ratio == ratio else "") + f" / {r['search_s'].iloc[0]:.2f}s")
            t.add_row(str(lname), *cells)
        print_wide(console, t)
    if rep.get("networks"):
        t = Table(title=f"Per network and objective, vs {rep['baseline']}: mean reduction, geomean improvement "
                        f"(baseline / mapper; for latency the speed-up, CoSA Figs. 6-7), search speed-up (SALSA Fig. 5)")
        for c in ("network", "arch", "objective", "mapper", "layers", "best on", "mean reduction", "geomean x",
                  "search speed-up", "search s"):
            t.add_column(c, justify="right" if c not in ("network", "arch", "objective", "mapper") else "left")
        for r in rep["networks"]:
            t.add_row(r["network"], r["arch"], r["objective"], r["mapper"], str(r["layers"]), str(r.get("wins", "")),
                      f"{100 * r['mean_reduction_vs_baseline']:.1f}%",
                      f"{r['geomean_improvement_vs_baseline']:.2f}x", f"{r['speedup_vs_baseline']:.2f}x",
                      f"{r['search_s']:.2f}")
        console.print(t)


def _value(v: float, objective: str) -> str:
    """A best value in its unit: energy (pJ), latency (cycles), EDP (pJ x cycles), else 4 digits."""
    f = {"energy": fmt.energy, "latency": fmt.cycles, "edp": fmt.edp}.get(objective, fmt.sig)
    return f(v)


def _print_unreported(rep: dict[str, Any], console) -> None:
    """Say why problems are missing from the tables: no finished row at all, or per mapper the
    problems whose units all failed (or whose search was skipped)."""
    missing = rep.get("unreported") or {}
    if not rep.get("layers") and rep.get("failures"):
        console.print("no per-layer table: no problem has a finished row (the reasons are listed above)",
                      style="yellow", soft_wrap=True, highlight=False)
    elif missing:
        console.print("left out of the tables, no finished row (errors, infeasible or skipped: the reasons above): "
                      + ", ".join(f"{n} problem(s) of {m}" for m, n in missing.items()),
                      style="yellow", soft_wrap=True, highlight=False, markup=False)
    # a ratio needs two mappers: said when the campaign names a baseline or runs several mappers
    asked = rep.get("baseline_asked") or len(rep.get("mappers") or []) > 1
    if rep.get("layers") and rep.get("mappers") and not rep.get("baseline") and asked:
        console.print("no ratios to a baseline: the baseline mapper has no finished row or is not in the "
                      "campaign (`[report] baseline`)", style="yellow", soft_wrap=True, highlight=False, markup=False)


def write_layer_plots(rep: dict[str, Any], rows: pd.DataFrame, plots_dir: str | Path,
                      network: str | None = None) -> list[str]:
    """Fig. 5-like per-layer energy/time of ``network`` (default: the first), per-network bars,
    and, when histories were recorded, the distribution of visited states of one layer (Fig. 4)."""
    plots_dir = Path(plots_dir)
    plots_dir.mkdir(parents=True, exist_ok=True)
    written = []
    if not rep.get("layers"):
        return written
    layers = pd.DataFrame(rep["layers"])
    network = network or layers["network"].iloc[0]
    for obj, g in layers[layers["network"] == network].groupby("objective", sort=False):
        written.append(_layers_plot(rep, g, network, obj, plots_dir / f"layers_{network.replace('/', '_')}_{obj}.png"))
    if rep.get("networks"):
        written.append(_networks_plot(rep, plots_dir / "networks.png"))
    if "history" in rows and rows["history"].notna().any():
        h = rows[rows["history"].notna() & (rows["network"] == network)]
        if not h.empty:
            written.append(_visited_plot(h, network, plots_dir / "visited_distribution.png"))
    return written


def _layers_plot(rep: dict[str, Any], g: pd.DataFrame, network: str, obj: str, path: Path) -> str:
    """Per unique layer of ``network``: the best ``obj`` and the search time of every mapper."""
    fig, (ax1, ax2) = figure(2, 1, figsize=(11, 6), sharex=True)
    idx = sorted(g["layer_index"].unique())
    names = g.groupby("layer_index")["layer"].first().reindex(idx)
    for lab in rep["mappers"]:
        r = g[g["label"] == lab].groupby("layer_index").first().reindex(idx)
        ax1.plot(range(len(idx)), r["value"], marker="o", ms=3, label=lab)
        ax2.plot(range(len(idx)), r["search_s"], marker="o", ms=3, label=lab)
    log_axis(ax1, "y")
    log_axis(ax2, "y")
    ax1.set_ylabel(f"best {obj}")
    ax2.set_ylabel("search time (s)")
    category_ticks(ax2, list(names))
    ax2.set_xlabel(f"unique layer of {network}")
    ax1.legend(fontsize=7)
    return save(fig, path, f"{network}: per-layer {obj} and search time per mapper")


def _networks_plot(rep: dict[str, Any], path: Path) -> str:
    """Per network and objective: geomean improvement and search speed-up over the baseline."""
    nets = pd.DataFrame(rep["networks"])
    fig, (ax1, ax2) = figure(1, 2, figsize=(14, 5.5))
    nets = nets.assign(network=nets["network"] + " / " + nets["objective"])
    piv_r = nets.pivot_table(index="network", columns="mapper", values="geomean_improvement_vs_baseline")
    piv_s = nets.pivot_table(index="network", columns="mapper", values="speedup_vs_baseline")
    piv_r.plot.bar(ax=ax1, legend=False)
    piv_s.plot.bar(ax=ax2, legend=False)
    log_axis(ax2, "y")
    for ax in (ax1, ax2):
        rotate_xticklabels(ax, 30)
        ax.set_xlabel("network / objective")
    handles, labels = ax1.get_legend_handles_labels()
    ax2.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, title="mapper")
    ax1.set_ylabel("geomean improvement (x)")
    ax2.set_ylabel("search speed-up (x)")
    return save(fig, path, f"Per network vs {rep['baseline']} (SALSA Fig. 5 right; CoSA Figs. 6-7)")


def _visited_plot(h: pd.DataFrame, network: str, path: Path) -> str:
    """The layer of ``network`` with the most visited states: their objective per mapper and seed."""
    li = h.groupby("layer_index")["history"].apply(lambda v: sum(len(x) for x in v)).idxmax()
    hl = h[h["layer_index"] == li]
    fig, ax = figure(figsize=(7, 4))
    configs = h[["mapper", "params"]].drop_duplicates()
    labels = mapper_labels(zip(configs["mapper"], configs["params"]))
    for (m, p), gh in hl.groupby(["mapper", "params"], observed=True):
        vals = np.concatenate([np.asarray(v, dtype=float) for v in gh["history"]])
        vals = vals[np.isfinite(vals)]
        seed = json.loads(p).get("seed")
        if len(vals):
            ax.hist(vals, bins=60, alpha=0.5, label=labels[(str(m), str(p))] + ("" if seed is None else f" seed {seed}"))
    ax.set_xlabel("objective of visited mappings")
    ax.set_ylabel("count")
    ax.legend(fontsize=7)
    return save(fig, path, f"{network} layer {li}: distribution of visited mappings (SALSA Fig. 4)")
