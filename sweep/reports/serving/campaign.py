"""`sweep report` of a serving campaign (kind ``serving``, `sweep.kinds.serving`): which design and
scheduler setting serves the most requests under the SLO, and how latency grows with the rate.

From the two tables of `sweep.engine.serving_tasks`:

* ``designs``: per (design, setting) the goodput (req/s: the highest rate at which at least the
  campaign's attainment of the requests meet both the TTFT and the TPOT target, DistServe's
  definition), the goodput per mm^2 of silicon and per US dollar of chips, the area (mm^2), the
  cost (USD), the KV cache (tokens) and the highest swept rate that meets the SLO; most goodput first;
* ``winners``: the (design, setting) of most goodput, of most goodput per mm^2 and per USD (None
  when none meets the SLO at any rate);
* ``per_rate``: per (design, setting, rate) TTFT and TPOT at P50 / P90 / P99 (s), output tokens/s,
  requests/s, the SLO attainment and whether it meets the target;
* plots (``--plots``): ``latency_vs_rate.png`` (TTFT and TPOT percentiles against the offered rate,
  one line per design and setting, the SLO drawn) and ``goodput_front.png`` (goodput against the
  system's area and its cost, the front of designs no other beats on both marked).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from sweep.common import fmt
from sweep.common.errors import StoreError
from sweep.engine.store import Store
from sweep.reports.serving import fixed
from sweep.reports.summary import print_plots, print_summary, summary

__all__ = ["build", "show", "read", "design_table", "rate_table", "winners", "write_plots", "design_label", "slo_text",
           "PERCENTILE_COLUMNS"]

#: The latency columns of the per-rate table (s).
PERCENTILE_COLUMNS = tuple(f"{k}_{p}_s" for k in ("ttft", "tpot") for p in ("p50", "p90", "p99"))
_DESIGN_KEYS = ("design", "design_params", "setting", "status", "error", "goodput_rps", "goodput_per_mm2",
                "goodput_per_usd", "goodput_missed_rps", "area_mm2", "chips", "system_area_mm2", "cost_usd",
                "kv_cache_tokens", "memory_gb", "weights_gb", "fixed_prefill_s", "fixed_decode_s",
                "fixed_decode_tokens_per_s", "fixed_tokens_per_s_per_mm2", "mapping_refs", "table_build_s")
_RATE_KEYS = ("design", "design_params", "setting", "rate", "status", *PERCENTILE_COLUMNS, "e2e_p90_s",
              "output_tokens_per_s", "requests_per_s", "slo_attainment", "meets_slo", "preemptions",
              "kv_cache_utilization", "mean_batch", "energy_per_request_j")


def _plain(v: Any) -> Any:
    v = v.item() if hasattr(v, "item") else v
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


def _records(df: pd.DataFrame, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    cols = [k for k in keys if k in df]
    return [{k: _plain(v) for k, v in r.items()} for r in df[cols].astype(object).to_dict("records")]


def read(directory: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(``rows``, ``rates``) of a serving result directory.

    Raises:
        StoreError: unreadable, or no row stored yet.
    """
    store = Store(directory)
    rows = store.read("rows")
    if rows.empty:
        raise StoreError(f"{directory}: holds no result rows yet")
    return rows, store.read("rates")


def _order(df: pd.DataFrame) -> pd.DataFrame:
    """Rows in a fixed order whatever order the tasks finished in: by design name, setting, rate."""
    return df.sort_values([c for c in ("design", "setting", "rate") if c in df], kind="stable")


def rate_table(rates: pd.DataFrame) -> list[dict[str, Any]]:
    """Per (design, setting, rate), in that order: the latencies and throughput (module docstring)."""
    return _records(_order(rates), _RATE_KEYS) if not rates.empty else []


def design_table(rows: pd.DataFrame, rates: pd.DataFrame) -> list[dict[str, Any]]:
    """Per (design, setting): the goodput figures and the design's (module docstring), with
    ``best_rate_meeting_slo`` (req/s; None: no swept rate meets it); most goodput first, then the
    highest such rate, then the design's name."""
    recs = _records(_order(rows), _DESIGN_KEYS)
    met: dict[tuple, float] = {}
    if not rates.empty and "meets_slo" in rates:
        ok = rates[(rates["status"] == "ok") & (rates["meets_slo"].astype(object) == True)]  # noqa: E712
        for (d, s), g in ok.groupby(["design", "setting"], sort=False):
            met[(d, s)] = float(g["rate"].max())
    for r in recs:
        r["best_rate_meeting_slo"] = met.get((r["design"], r["setting"]))
    return sorted(recs, key=lambda r: (-(r.get("goodput_rps") or -1.0), -(r["best_rate_meeting_slo"] or 0.0),
                                       str(r["design"]), str(r["setting"])))


#: At most this many (design, setting) rows in the printed tables and the per-design plots: the best
#: by goodput per mm^2 (`shown`); ``--json`` and the HTML page's front keep every one.
SHOWN = 12


def shown(designs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The (design, setting) pairs the tables and per-design plots show: all of them up to `SHOWN`,
    else the `SHOWN` best by goodput per mm^2 (then goodput), unfinished ones last."""
    if len(designs) <= SHOWN:
        return [(r["design"], r["setting"]) for r in designs]
    key = sorted(designs, key=lambda r: (-(r.get("goodput_per_mm2") or -1.0), -(r.get("goodput_rps") or -1.0),
                                         str(r["design"]), str(r["setting"])))
    return [(r["design"], r["setting"]) for r in key[:SHOWN]]


def _shown_rows(rep: dict[str, Any]) -> list[dict[str, Any]]:
    """The design rows the tables show: every one in the report's order, or the `shown` ones in
    theirs (the best by goodput per mm^2 first)."""
    if len(rep.get("shown") or ()) >= len(rep["designs"]):
        return rep["designs"]
    by = {(r["design"], r["setting"]): r for r in rep["designs"]}
    return [by[tuple(k)] for k in rep["shown"]]


def _is_shown(rep: dict[str, Any], r: dict[str, Any]) -> bool:
    return (r["design"], r["setting"]) in {tuple(x) for x in rep.get("shown") or ()} or not rep.get("shown")


def winners(designs: list[dict[str, Any]]) -> dict[str, dict[str, Any] | None]:
    """The (design, setting) of most ``goodput_rps``, ``goodput_per_mm2`` and ``goodput_per_usd``
    among the finished ones with a goodput above 0 (None: none)."""
    ok = [r for r in designs if r.get("status") == "ok" and (r.get("goodput_rps") or 0) > 0]
    out = {}
    for k in ("goodput_rps", "goodput_per_mm2", "goodput_per_usd"):
        have = [r for r in ok if r.get(k) is not None]
        out[k] = max(have, key=lambda r: r[k]) if have else None
    return out


def build(directory: Path, manifest: dict, plots_dir: str | Path | None = None) -> dict[str, Any]:
    """The report of a serving directory as JSON-able data (module docstring); with ``plots_dir``
    also the PNGs (their paths under ``plots``).

    Raises:
        StoreError: unreadable, or no row stored yet.
    """
    directory = Path(directory)
    rows, rates = read(directory)
    rep = summary(directory, manifest, rows)
    cfg = (manifest.get("config") or {}).get("serving") or {}
    designs = design_table(rows, rates)
    rep.update(kind="serving", model=(cfg.get("model") or {}).get("name"), slo=cfg.get("slo") or {},
               rates=cfg.get("rates") or [], goodput_searched=bool(cfg.get("goodput")), load=cfg.get("load") or {},
               deployment=cfg.get("deployment") or {}, designs=designs, winners=winners(designs),
               per_rate=rate_table(rates), plots=[])
    rep["precision"] = _precision(cfg)
    rep["fixed_batch"] = fixed.compare(designs)
    rep["shown"] = shown(designs)
    if plots_dir is not None:
        rep["plots"] = write_plots(rep, Path(plots_dir))
    return rep


def _precision(cfg: dict[str, Any]) -> str | None:
    """The served model's precisions in words (`costmodel.transformer.step.precision_text`: the bits
    and where each comes from) from the stored ``[serving]`` configuration; None without its shapes."""
    m = cfg.get("model") or {}
    if not m.get("shape"):
        return None
    from costmodel.transformer import TransformerConfig
    from costmodel.transformer.step import precision_record, precision_text, served_bits
    try:
        tc = TransformerConfig.from_shape(str(m.get("name")), dict(m["shape"]))
    except (TypeError, ValueError):  # shapes stored by an older version
        return None
    d = cfg.get("deployment") or {}
    given = tuple(d.get(k) for k in ("weight_bits", "act_bits", "kv_bits"))
    return precision_text(precision_record(tc, given, served_bits(tc, *given)))


def slo_text(slo: dict[str, Any]) -> str:
    targets = " and ".join(f"{n} <= {fmt.seconds(slo[k])}" for k, n in (("ttft_s", "TTFT"), ("tpot_s", "TPOT"))
                           if slo.get(k) is not None)
    return f"{targets or 'no target'} for >= {slo.get('attainment', 0.9):.0%} of the requests"


def show(rep: dict[str, Any], console) -> None:
    """Print ``rep`` (from `build`) as Rich tables."""
    from sweep.common.fmt import print_wide
    print_summary(rep, console)
    console.print(f"{rep['model']} served on {len({r['design'] for r in rep['designs']})} design(s); SLO: "
                  f"{slo_text(rep['slo'])}; offered rates {fmt.words(f'{r:g}' for r in rep['rates'])} req/s"
                  + (f"; precisions {rep['precision']}" if rep.get("precision") else ""),
                  soft_wrap=True, highlight=False, markup=False)
    print_wide(console, _design_rich(rep))
    if len(rep["shown"]) < len(rep["designs"]):
        console.print(f"(the {len(rep['shown'])} best by goodput per mm^2 of {len(rep['designs']):,} shown; every one: "
                      "--json, or pd.read_parquet(DIR/rows))", highlight=False, markup=False, soft_wrap=True)
    w = rep["winners"]
    if rep["goodput_searched"]:
        if w.get("goodput_rps") is None:
            console.print("no design and setting meets the SLO at any rate (goodput 0)", highlight=False, markup=False)
        for k, what in (("goodput_rps", "most goodput"), ("goodput_per_mm2", "most goodput per mm^2"),
                        ("goodput_per_usd", "most goodput per $")):
            r = w.get(k)
            if r is not None:
                console.print(f"winner, {what}: {design_label(r)} ({r['setting']}): {fmt.sig(r[k])} "
                              f"{_UNITS[k]}", highlight=False, markup=False, soft_wrap=True)
    for line in fixed.lines(rep.get("fixed_batch") or {}):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    print_wide(console, _rate_rich(rep))
    print_plots(rep, console)


_UNITS = {"goodput_rps": "req/s", "goodput_per_mm2": "req/s per mm^2", "goodput_per_usd": "req/s per $"}


def _design_rich(rep: dict[str, Any]):
    from rich.markup import escape
    from rich.table import Table
    t = Table(title=f"goodput per design and scheduler setting ({slo_text(rep['slo'])})", title_justify="left")
    for c in ("design", "setting", "goodput req/s", "per mm^2", "per $", "area mm^2", "chips", "cost $",
              "KV tokens", "best swept rate", "status"):
        t.add_column(c, justify="left" if c in ("design", "setting", "status") else "right", no_wrap=True)
    for r in _shown_rows(rep):
        status = r["status"] if r["status"] == "ok" else f"{r['status']}: {str(r.get('error') or '')[:70]}"
        t.add_row(escape(design_label(r)), escape(str(r["setting"])), fmt.sig(r.get("goodput_rps")),
                  fmt.sig(r.get("goodput_per_mm2")),
                  fmt.sig(r.get("goodput_per_usd")), fmt.sig(r.get("system_area_mm2")), str(r.get("chips") or ""),
                  fmt.sig(r.get("cost_usd")), f"{r['kv_cache_tokens']:,}" if r.get("kv_cache_tokens") else "n/a",
                  fmt.sig(r.get("best_rate_meeting_slo")), escape(status))
    if not rep["goodput_searched"]:
        t.caption = escape("goodput not searched ([serving] goodput = false): the best swept rate meeting the SLO "
                           "instead")
    return t


def _rate_rich(rep: dict[str, Any]):
    from rich.markup import escape
    from rich.table import Table
    t = Table(title="per offered rate: TTFT and time per output token (TPOT) percentiles, throughput, attainment",
              title_justify="left")
    for c in ("design", "setting", "rate", "TTFT P50", "P90", "P99", "TPOT P50", "P90", "P99", "out tok/s", "req/s",
              "attainment", "meets"):
        t.add_column(c, justify="left" if c in ("design", "setting") else "right", no_wrap=True)
    for r in (r for r in rep["per_rate"] if _is_shown(rep, r)):
        if r["status"] != "ok":
            t.add_row(escape(design_label(r)), escape(str(r["setting"])), fmt.sig(r["rate"]), *["n/a"] * 9,
                      r["status"])
            continue
        att = r.get("slo_attainment")
        t.add_row(escape(design_label(r)), escape(str(r["setting"])), fmt.sig(r["rate"]),
                  *[fmt.seconds(r[c]) for c in PERCENTILE_COLUMNS], fmt.sig(r["output_tokens_per_s"]),
                  fmt.sig(r["requests_per_s"]), "n/a" if att is None else f"{att:.1%}",
                  {True: "yes", False: "no"}.get(r.get("meets_slo"), "n/a"))
    return t


def design_label(r: dict[str, Any], settings: int = 1) -> str:
    """A design (and its setting when the campaign has several) as text: ``design_5c7d (array.D1=256)
    / max_num_seqs=128``."""
    name = str(r["design"]) + (f" ({r['design_params']})" if r.get("design_params") else "")
    return name if settings <= 1 else f"{name} / {r['setting']}"


def write_plots(rep: dict[str, Any], plots: Path) -> list[str]:
    """``latency_vs_rate.png`` and, with a goodput, ``goodput_front.png`` into ``plots`` (module
    docstring); the paths written."""
    from sweep.reports.plots import figure, log_axis, save
    plots.mkdir(parents=True, exist_ok=True)
    written = []
    ok = [r for r in rep["per_rate"] if r["status"] == "ok" and _is_shown(rep, r)]
    n_set = len({r["setting"] for r in rep["per_rate"]})
    if ok:
        fig, axes = figure(2, 3, figsize=(13, 6.4), sharex=True)
        groups: dict[str, list[dict]] = {}
        for r in ok:
            groups.setdefault(design_label(r, n_set), []).append(r)
        for row, (k, target, name) in enumerate((("ttft", rep["slo"].get("ttft_s"), "TTFT"),
                                                 ("tpot", rep["slo"].get("tpot_s"), "TPOT"))):
            for col, p in enumerate(("p50", "p90", "p99")):
                ax = axes[row][col]
                for label, g in groups.items():
                    g = sorted(g, key=lambda r: r["rate"])
                    ax.plot([r["rate"] for r in g], [r[f"{k}_{p}_s"] for r in g], marker="o", ms=3, lw=1.2,
                            label=label)
                if target:
                    ax.axhline(target, color="k", lw=0.9, ls="--")
                    ax.text(ax.get_xlim()[0], target, " SLO", va="bottom", fontsize=8)
                log_axis(ax, "y")
                ax.set_title(f"{name} {p.upper()}", fontsize=10)
                ax.set_ylabel(f"{name} (s)")
                if row == 1:
                    ax.set_xlabel("offered rate (req/s)")
        axes[0][2].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
        written.append(save(fig, plots / "latency_vs_rate.png",
                            title=f"{rep['model']}: latency against the offered rate (SLO: {slo_text(rep['slo'])})"))
    front = [r for r in rep["designs"] if r.get("status") == "ok" and r.get("goodput_rps") is not None]
    if front:
        written.append(_front_plot(rep, front, n_set, plots))
    return written


def _front_plot(rep: dict[str, Any], pts: list[dict[str, Any]], n_set: int, plots: Path) -> str:
    """``goodput_front.png``: goodput against silicon and against cost, a colour per design and a
    marker per setting, the front (no design has more goodput for less) as a staircase."""
    from sweep.reports.pareto import pareto_front
    from sweep.reports.plots import figure, save
    designs = list(dict.fromkeys(r["design"] for r in pts if _is_shown(rep, r)))
    settings = list(dict.fromkeys(r["setting"] for r in pts))
    markers = "osD^vP*X"
    fig, axes = figure(1, 2, figsize=(12, 4.4))
    for ax, key, xlabel in ((axes[0], "system_area_mm2", "silicon (mm^2: chips x area)"),
                            (axes[1], "cost_usd", "chips' cost (USD)")):
        have = [r for r in pts if r.get(key)]
        rest = [r for r in have if not _is_shown(rep, r)]    # past SHOWN designs: grey, unlabelled
        if rest:
            ax.scatter([r[key] for r in rest], [r["goodput_rps"] for r in rest], s=8, zorder=2, color="0.72",
                       label=f"{len(rest):,} more" if ax is axes[0] else None)
        for r in (r for r in have if _is_shown(rep, r)):
            ax.scatter(r[key], r["goodput_rps"], s=30, zorder=3, color=f"C{designs.index(r['design']) % 10}",
                       marker=markers[settings.index(r["setting"]) % len(markers)],
                       label=design_label(r, n_set) if ax is axes[0] else None)
        idx = pareto_front([[r[key], -r["goodput_rps"]] for r in have]).tolist() if have else []
        best = sorted((have[int(i)][key], have[int(i)]["goodput_rps"]) for i in idx)
        if best:
            ax.plot([b[0] for b in best], [b[1] for b in best], color="k", lw=0.8, drawstyle="steps-post", zorder=2)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("goodput (req/s)")
    fig.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 0.92))
    return save(fig, plots / "goodput_front.png",
                title=f"{rep['model']}: goodput under the SLO against silicon and cost (line: the front, no design "
                      "has more goodput for less)")
