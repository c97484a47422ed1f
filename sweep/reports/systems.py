"""The answer of an architecture search over systems of chips: for each model, the systems (a design
of the template, a split: tp x pp x ep chips) that serve it, their TTFT (its prefill step) and time per
output token (its decode steps: the slowest), the silicon they take (chips x the design's area), and
the cheapest that meets the campaign's service-level targets (``[report] slo = {ttft_s = ...,
time_per_token_s = ...}``), with the front of silicon against time per token.

Read from the totals of steps split over chips (`sweep.engine.design_tasks.SYSTEM_TOTALS`: ``chips``,
``collectives_s``, ``system_area_mm2``); a system is one (design, model, split); its figures are
`costmodel.system.serving.system_step`'s (nvlink3 between the chips, one micro-batch).

The answer comes first in every form of the report: `answer_lines` (text and the HTML page's box),
`print_systems` (the lines, then per model the front with a "meets" column, the cheapest marked),
`write_systems_plots` (a PNG per model: silicon against time per output token). A system one of
whose steps does not fit its chips' DRAM is counted (``does_not_fit``), not listed: an expected
result, not an error.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from sweep.common import fmt
from sweep.config.report_table import SLO_KEYS
from sweep.reports.summary import DOES_NOT_FIT, does_not_fit_mask

__all__ = ["COST_BASIS", "FRONT_ROWS", "SLO_KEYS", "SLO_LABELS", "answer_lines", "design_costs", "front_table",
           "fronts",
           "system_answers", "print_systems", "write_systems_plots"]

#: What a printed cost is (`costmodel.system.cost.chip_cost_usd`, the ttm-cas model of Ning et al.,
#: ISCA 2023, that LLMCompass uses).
COST_BASIS = ("cost: what the chips cost to make, not a price: each die of the modelled area at 20 nm (the "
              "wafer's price over its good dies), its package and its DRAM at October 2023 spot prices "
              "(costmodel/system/cost.py; no masks, design, test or margins)")
#: How the report names each target of ``[report] slo``.
SLO_LABELS = {"ttft_s": "TTFT", "time_per_token_s": "time per output token"}
#: Rows of a front printed at most (the cheapest systems always among them).
FRONT_ROWS = 20


def _split_of(name: str) -> tuple[str, str, int, int, int] | None:
    """(model, phase, tp, pp, ep) of a step's name; None for other networks."""
    from costmodel.transformer import parse_step_name
    parsed = parse_step_name(name, any_model=True)
    if parsed is None:
        return None
    model, p = parsed
    return model, p["phase"], int(p.get("tp") or 1), int(p.get("pp") or 1), int(p.get("ep") or 1)


def _split_text(k: tuple[str, str, int, int, int]) -> str:
    return f"tp {k[2]} x pp {k[3]}" + (f" x ep {k[4]}" if k[4] > 1 else "")


def design_costs(archs: pd.DataFrame) -> dict[str, float]:
    """Each design's chip cost (USD, `costmodel.system.cost.chip_cost_usd` at 20 nm: the die from its area,
    the package, its DRAM at the kind's price per GB; `COST_BASIS`), from the search's ``archs`` table
    (``design_id``, ``arch`` JSON); designs whose DRAM is a plain level are costed without DRAM."""
    import json

    from costmodel.loopnest.arch import accelerator_from_dict
    from costmodel.loopnest.physics import design_area_mm2
    from costmodel.system.cost import chip_cost_usd
    from costmodel.tech.dram import dram_capacity_bytes
    out = {}
    for _, r in archs.drop_duplicates("design_id").iterrows():
        acc = accelerator_from_dict(json.loads(r["arch"]))
        kind, units = acc.dram if getattr(acc, "dram", None) else (None, 0)
        size = dram_capacity_bytes(kind, units, getattr(acc, "dram_gib_per_unit", None)) if kind else 0
        out[r["design_id"]] = chip_cost_usd(design_area_mm2(acc), kind, size)
    return out


def _value(v: Any) -> Any:
    """A parameter value as JSON keeps it (NumPy scalars as Python ones)."""
    return v.item() if hasattr(v, "item") else v


def _system_row(design: str, split: str, s: pd.DataFrame, slo: dict[str, float], params: list[str]) -> dict[str, Any]:
    """One system's figures from its steps' totals ``s`` (its prefill and decode steps on one split)."""
    pre, dec = s[s["phase"] == "prefill"], s[s["phase"] == "decode"]
    tpot = float(dec["time_per_token_s"].max()) if len(dec) else None
    worst = dec.loc[dec["time_per_token_s"].idxmax()] if len(dec) else None
    num = lambda k: float(worst[k]) if worst is not None and k in worst.index and pd.notna(worst[k]) else None
    row: dict[str, Any] = {
           "design_id": str(design), "split": split, "chips": int(s["chips"].iloc[0]),
           "area_mm2": float(s["area_mm2"].iloc[0]), "system_area_mm2": float(s["system_area_mm2"].iloc[0]),
           "ttft_s": float(pre["ttft_s"].max()) if len(pre) else None, "time_per_token_s": tpot,
           "collectives_share": (float(worst["collectives_s"]) / tpot if worst is not None and tpot else None),
           "tokens_per_s": num("tokens_per_s"), "tokens_per_s_per_mm2": num("tokens_per_s_per_mm2"),
           "params": {p: _value(s[p].iloc[0]) for p in params if p in s}}
    row["misses"] = [k for k, v in slo.items() if row.get(k) is None or row[k] > v]
    row["meets"] = not row["misses"]
    return row


def _front(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows (sorted by silicon, then time per token) no other beats in both silicon and time per token."""
    front, best = [], math.inf
    for r in rows:
        if r["time_per_token_s"] is not None and r["time_per_token_s"] < best:
            front.append(r)
            best = r["time_per_token_s"]
    return front


def fronts(m: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the front of all of a model's systems, the front of those that meet the targets), each sorted by
    silicon (``m``: its entry of `system_answers`); the table's front is their union."""
    return _front(m["systems"]), _front([r for r in m["systems"] if r["meets"]])


def _nearest_miss(rows: list[dict[str, Any]], slo: dict[str, float]) -> dict[str, Any] | None:
    """The system closest to meeting every target: the least worst ratio of a figure to its target
    (ties: less silicon); None without targets or figures."""
    have = [r for r in rows if slo and all(r.get(k) is not None for k in slo)]
    if not have:
        return None
    return min(have, key=lambda r: (max(r[k] / v for k, v in slo.items()), r["system_area_mm2"]))


def _unfit_systems(totals: pd.DataFrame) -> dict[str, int]:
    """model -> how many (design, split) systems have a step that does not fit their chips' DRAM."""
    bad = totals[does_not_fit_mask(totals)]
    out: dict[str, set] = {}
    for design, name in zip(bad["design_id"].astype(str), bad["network"].astype(str)):
        k = _split_of(name)
        if k is not None:
            out.setdefault(k[0], set()).add((design, _split_text(k)))
    return {m: len(v) for m, v in out.items()}


def system_answers(totals: pd.DataFrame, slo: dict[str, float] | None = None,
                   costs: dict[str, float] | None = None, params: list[str] | None = None) -> dict[str, Any]:
    """``{"slo": {...}, "models": {model: {...}}}`` from an architecture search's totals (one row per
    design x step). Per model: ``systems``, one row per (design, split) whose steps finished, with
    ``design_id``, ``split`` ("tp 8 x pp 2"), ``chips``, ``area_mm2`` (the design's),
    ``system_area_mm2``, ``ttft_s``, ``time_per_token_s`` (s), ``collectives_share`` (of the time per
    token), ``tokens_per_s`` and ``tokens_per_s_per_mm2`` (decode, the system's), ``params`` (the
    values of ``params``, the search's parameters), ``misses`` (the targets of ``slo`` it misses) and
    ``meets`` (none missed; True without targets), sorted by silicon then time per token; with ``costs``
    (USD per chip of each design, `design_costs`) also ``cost_usd`` (chips x the chip's) and
    ``tokens_per_s_per_usd``. ``cheapest``: the least silicon that meets the targets (None: none does;
    then ``nearest_miss``, `_nearest_miss`); ``cheapest_usd``: the least cost that meets them (with
    ``costs``); ``front``: the systems no other beats in both silicon and time per token, among all and
    among those that meet the targets (so the cheapest is on it), the least-cost one added;
    ``does_not_fit``: systems not costed because a step does not fit their chips' DRAM. {} when no
    step is split."""
    if "chips" not in totals or totals["chips"].isna().all():
        return {}
    ok = totals[totals["status"] == "ok"].copy()
    one = ok["chips"].isna()  # a step on one chip (not split): its own figures
    ok.loc[one, "chips"] = 1
    ok.loc[one, "system_area_mm2"] = ok.loc[one, "area_mm2"]
    ok.loc[one, "collectives_s"] = 0.0
    keys = ok["network"].map(_split_of)
    ok = ok[keys.notna()]
    keys = keys[keys.notna()]
    ok["model"], ok["phase"] = [k[0] for k in keys], [k[1] for k in keys]
    ok["split"] = [_split_text(k) for k in keys]
    slo = dict(slo or {})
    unfit = _unfit_systems(totals)
    out: dict[str, Any] = {"slo": slo, "models": {}}
    for model, g in ok.groupby("model", sort=False):
        rows = [_system_row(d, sp, s, slo, list(params or []))
                for (d, sp), s in g.groupby(["design_id", "split"], sort=False)]
        for row in rows:
            if costs and row["design_id"] in costs:
                row["cost_usd"] = row["chips"] * costs[row["design_id"]]
                row["tokens_per_s_per_usd"] = row["tokens_per_s"] / row["cost_usd"] if row["tokens_per_s"] else None
        rows.sort(key=lambda r: (r["system_area_mm2"], r["time_per_token_s"] or math.inf, r["ttft_s"] or math.inf))
        met = [r for r in rows if r["meets"]]
        m: dict[str, Any] = {"systems": rows, "cheapest": met[0] if met else None,
                             "does_not_fit": unfit.get(model, 0)}
        if not met:
            m["nearest_miss"] = _nearest_miss(rows, slo)
        named = []
        if costs:
            priced = [r for r in met if r.get("cost_usd") is not None]
            m["cheapest_usd"] = min(priced, key=lambda r: r["cost_usd"]) if priced else None
            named = [m["cheapest_usd"]] if m["cheapest_usd"] else []
        on = {id(r) for r in _front(rows) + _front(met) + named}
        m["front"] = [r for r in rows if id(r) in on]
        out["models"][model] = m
    return out


def _targets(slo: dict[str, float]) -> str:
    """The targets in words, in `SLO_KEYS` order: ``TTFT <= 2.000 s, time per output token <= 50.00 ms``."""
    keys = sorted(slo, key=lambda k: SLO_KEYS.index(k) if k in SLO_KEYS else len(SLO_KEYS))
    return ", ".join(f"{SLO_LABELS.get(k, k)} <= {fmt.seconds(slo[k])}" for k in keys) or "none set ([report] slo)"


def _system_text(r: dict[str, Any], slo: dict[str, float]) -> str:
    """A system in words: chips, design and its parameters, split, its figures against the targets,
    its silicon and cost."""
    params = ", ".join(f"{k} = {v}" for k, v in r.get("params", {}).items())
    figs = []
    for k in ("ttft_s", "time_per_token_s"):
        target = f" (target {fmt.seconds(slo[k])}{', missed' if k in r.get('misses', []) else ''})" if k in slo else ""
        figs.append(f"{SLO_LABELS[k]} {fmt.seconds(r.get(k))}{target}")
    tps = f", {fmt.sig(r['tokens_per_s'])} output tokens/s" if r.get("tokens_per_s") else ""
    cost = f", cost ${r['cost_usd']:,.0f}" if r.get("cost_usd") is not None else ""
    chips = f"{r['chips']} chip{'s' if r['chips'] != 1 else ''}"
    return (f"{chips} of design {r['design_id']}" + (f" ({params})" if params else "") + f", {r['split']}: "
            + ", ".join(figs) + f"{tps}; silicon {fmt.area(r['system_area_mm2'])} ({r['chips']} x "
            f"{fmt.area(r['area_mm2'])}){cost}")


def answer_lines(ans: dict[str, Any]) -> list[str]:
    """The answer as plain lines, first in every form of the report: the targets; per model the
    cheapest system that meets them (least silicon) and, where another, the least-cost one; or that
    none meets them, with the nearest miss; the systems that do not fit; what a cost is."""
    if not ans:
        return []
    slo = ans["slo"]
    lines = [f"Which system: per model, the least silicon (chips x the design's area) that meets the targets "
             f"({_targets(slo)}; [report] slo)"]
    costed = False
    for model, m in ans["models"].items():
        c, u = m["cheapest"], m.get("cheapest_usd")
        if c:
            same = u is not None and u is c
            lines.append(f"{model}: cheapest system meeting the targets: {_system_text(c, slo)}"
                         + ("; also the least cost that meets them" if same else ""))
            if u is not None and not same:
                lines.append(f"{model}: the least cost meeting them: {_system_text(u, slo)}")
        else:
            near = m.get("nearest_miss")
            lines.append(f"{model}: no system of the search meets the targets ({_targets(slo)})"
                         + (f"; nearest miss: {_system_text(near, slo)}" if near else ""))
        if m.get("does_not_fit"):
            lines.append(f"{model}: {m['does_not_fit']} other system(s) not costed, {DOES_NOT_FIT}: a step's weights, "
                         "KV cache and activations per chip exceed the chip's DRAM (expected, not an error)")
        costed = costed or any(r.get("cost_usd") is not None for r in m["systems"])
    if costed:
        lines.append(COST_BASIS)
    return lines


def front_table(model: str, m: dict[str, Any], limit: int = FRONT_ROWS) -> tuple[str, list[dict[str, Any]], str]:
    """(title, rows shown, caption) of a model's front (``m``: `system_answers`'s): at most ``limit``
    rows, the cheapest and least-cost systems always among them; each row a copy with ``mark``
    ("cheapest", "least cost", both, or ""). The title counts the rows shown."""
    front = m["front"]
    named = [r for r in (m.get("cheapest"), m.get("cheapest_usd")) if r is not None]
    keep = {id(r) for r in front[:limit] + named}
    shown = [r for r in front if id(r) in keep]
    marks = []
    for r in shown:
        mark = [w for w, n in (("cheapest", m.get("cheapest")), ("least cost", m.get("cheapest_usd"))) if n is r]
        marks.append(dict(r, mark=" and ".join(mark)))
    title = (f"{model}: {len(shown)} of {len(m['systems'])} systems shown: the Pareto front of silicon against "
             "time per output token, among all systems and among those that meet the targets")
    caption = f"{len(front) - len(shown)} more on the front in `sweep report --json`" if len(front) > len(shown) else ""
    return title, marks, caption


def print_systems(ans: dict[str, Any], console, limit: int = FRONT_ROWS) -> None:
    """The answer as text (`answer_lines`), then per model its front (`front_table`): design, split,
    chips, silicon, cost, TTFT, time per output token, collectives' share, tokens/s/mm^2, meets, and
    which of them the answer names."""
    if not ans:
        return
    from rich.table import Table
    for line in answer_lines(ans):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    for model, m in ans["models"].items():
        title, rows, caption = front_table(model, m, limit)
        t = Table(title=title, title_justify="left", caption=caption or None, caption_justify="left")
        for col in ("design", "split", "chips", "silicon", "cost", "TTFT", "time/token", "collectives",
                    "tokens/s/mm^2", "meets", "named"):
            t.add_column(col, justify="left" if col in ("design", "split", "named") else "right")
        for r in rows:
            t.add_row(str(r["design_id"]), r["split"], str(r["chips"]), fmt.area(r["system_area_mm2"]),
                      f"${r['cost_usd']:,.0f}" if r.get("cost_usd") is not None else "", fmt.seconds(r["ttft_s"]),
                      fmt.seconds(r["time_per_token_s"]),
                      "" if r["collectives_share"] is None else f"{r['collectives_share']:.0%}",
                      fmt.sig(r["tokens_per_s_per_mm2"]), "yes" if r["meets"] else "no", r["mark"])
        fmt.print_wide(console, t)


def _category(r: dict[str, Any]) -> tuple[str, str]:
    """How a system's point is drawn, by the targets it misses: (label, colour)."""
    if r["meets"]:
        return "meets the targets", "#2ca02c"
    if "time_per_token_s" in r["misses"]:
        return "misses the time per output token", "#7f7f7f"
    return "misses TTFT only", "#ff7f0e"


def _safe(name: str) -> str:
    import re
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def write_systems_plots(ans: dict[str, Any], plots_dir: str | Path) -> list[str]:
    """Per model a PNG ``systems_<model>_front.png``: silicon (mm^2, log) against time per output token
    (s, log), a point per system coloured by the targets it meets, the front a step line, the
    time-per-token target dashed, the cheapest system that meets the targets circled and named. A model
    with fewer than 2 systems gets no plot (the text says its answer). Returns the paths written."""
    from sweep.reports.plots import figure, log_axis, save
    plots_dir = Path(plots_dir)
    written = []
    for model, m in (ans.get("models") or {}).items():
        pts = [r for r in m["systems"] if r["time_per_token_s"] is not None]
        if len(pts) < 2:
            continue
        plots_dir.mkdir(parents=True, exist_ok=True)
        fig, ax = figure(figsize=(9.0, 4.8))
        for label, colour in dict.fromkeys(_category(r) for r in pts):
            g = [r for r in pts if _category(r) == (label, colour)]
            ax.scatter([r["time_per_token_s"] for r in g], [r["system_area_mm2"] for r in g], s=22, color=colour,
                       alpha=0.8, label=f"{label} ({len(g)})")
        for (label, colour), front in zip((("front of all", "black"), ("front of those meeting", "#2ca02c")),
                                          fronts(m)):
            ax.plot([r["time_per_token_s"] for r in front], [r["system_area_mm2"] for r in front], color=colour,
                    lw=1, drawstyle="steps-post", label=f"{label} ({len(front)})")
        if "time_per_token_s" in ans["slo"]:
            ax.axvline(ans["slo"]["time_per_token_s"], color="#2ca02c", ls="--", lw=1, label="time per token target")
        c = m["cheapest"]
        if c is not None:
            ax.scatter([c["time_per_token_s"]], [c["system_area_mm2"]], s=160, facecolors="none", edgecolors="red",
                       linewidths=2, label=f"cheapest meeting: {c['chips']} x {c['design_id'][:8]}, {c['split']}")
        log_axis(ax, "both")
        ax.set_xlabel("time per output token (s)")
        ax.set_ylabel("silicon: chips x area (mm$^2$)")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        written.append(save(fig, plots_dir / f"systems_{_safe(model)}_front.png",
                            f"{model}: silicon against time per output token ({len(pts)} systems)"))
    return written
