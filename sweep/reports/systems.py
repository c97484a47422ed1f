"""The answer of an architecture search over systems of chips: for each model, the systems (a design
of the template, a split: tp x pp x ep chips) that serve it, their TTFT (its prefill step) and time per
output token (its decode steps: the slowest), the silicon they take (chips x the design's area), and
the cheapest that meets the campaign's service-level targets (``[report] slo = {ttft_s = ...,
time_per_token_s = ...}``), with the front of silicon against time per token.

Read from the totals of steps split over chips (`sweep.engine.design_tasks.SYSTEM_TOTALS`: ``chips``,
``collectives_s``, ``system_area_mm2``); a system is one (design, model, split); its figures are
`costmodel.system.serving.system_step`'s (nvlink3 between the chips, one micro-batch)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from sweep.common import fmt
from sweep.config.report_table import SLO_KEYS

__all__ = ["SLO_KEYS", "design_costs", "system_answers", "print_systems"]


def _split_of(name: str) -> tuple[str, str, int, int, int] | None:
    """(model, phase, tp, pp, ep) of a step's name; None for other networks."""
    from costmodel.transformer import parse_step_name
    parsed = parse_step_name(name, any_model=True)
    if parsed is None:
        return None
    model, p = parsed
    return model, p["phase"], int(p.get("tp") or 1), int(p.get("pp") or 1), int(p.get("ep") or 1)


def design_costs(archs: pd.DataFrame) -> dict[str, float]:
    """Each design's chip cost (USD, `costmodel.system.cost.chip_cost_usd` at 20 nm: the die from its area,
    the package, its DRAM at the kind's price per GB), from the search's ``archs`` table (``design_id``,
    ``arch`` JSON); designs whose DRAM is a plain level are costed without DRAM."""
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


def system_answers(totals: pd.DataFrame, slo: dict[str, float] | None = None,
                   costs: dict[str, float] | None = None) -> dict[str, Any]:
    """``{"slo": {...}, "models": {model: {"systems": [rows], "cheapest": row or None, "front":
    [rows]}}}`` from an architecture search's totals (one row per design x step): per (design, model,
    split) a row with ``design_id``, ``split`` ("tp 8 x pp 2"), ``chips``, ``area_mm2`` (the design's),
    ``system_area_mm2``, ``ttft_s``, ``time_per_token_s``, ``collectives_share`` (of the time per token),
    ``tokens_per_s_per_mm2`` (decode), ``meets`` (every target of ``slo`` met; True without targets);
    sorted by silicon then time per token; with ``costs`` (USD per chip of each design, `design_costs`)
    also ``cost_usd`` (chips x the chip's) and ``tokens_per_s_per_usd``, and ``cheapest_usd`` (the
    least cost that meets the targets). ``cheapest``: the least silicon that meets the targets;
    ``front``: the systems no other beats in both silicon and time per token. {} when no step is split."""
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
    ok["split"] = [f"tp {k[2]} x pp {k[3]}" + (f" x ep {k[4]}" if k[4] > 1 else "") for k in keys]
    slo = dict(slo or {})
    out: dict[str, Any] = {"slo": slo, "models": {}}
    for model, g in ok.groupby("model", sort=False):
        rows = []
        for (design, split), s in g.groupby(["design_id", "split"], sort=False):
            pre, dec = s[s["phase"] == "prefill"], s[s["phase"] == "decode"]
            tpot = float(dec["time_per_token_s"].max()) if len(dec) else None
            worst = dec.loc[dec["time_per_token_s"].idxmax()] if len(dec) else None
            row = {"design_id": design, "split": split, "chips": int(s["chips"].iloc[0]),
                   "area_mm2": float(s["area_mm2"].iloc[0]), "system_area_mm2": float(s["system_area_mm2"].iloc[0]),
                   "ttft_s": float(pre["ttft_s"].max()) if len(pre) else None, "time_per_token_s": tpot,
                   "collectives_share": (float(worst["collectives_s"]) / tpot if worst is not None and tpot else None),
                   "tokens_per_s_per_mm2": float(worst["tokens_per_s_per_mm2"]) if worst is not None else None}
            row["meets"] = all(row.get(k) is not None and row[k] <= v for k, v in slo.items())
            if costs and design in costs:
                row["cost_usd"] = row["chips"] * costs[design]
                tps = row["tokens_per_s_per_mm2"] * row["system_area_mm2"] if row["tokens_per_s_per_mm2"] else None
                row["tokens_per_s_per_usd"] = tps / row["cost_usd"] if tps else None
            rows.append(row)
        rows.sort(key=lambda r: (r["system_area_mm2"], r["time_per_token_s"] or math.inf))
        front, best = [], math.inf
        for r in rows:
            if r["time_per_token_s"] is not None and r["time_per_token_s"] < best:
                front.append(r)
                best = r["time_per_token_s"]
        out["models"][model] = {"systems": rows, "front": front,
                                "cheapest": next((r for r in rows if r["meets"]), None)}
        if costs:
            met = [r for r in rows if r["meets"] and r.get("cost_usd") is not None]
            out["models"][model]["cheapest_usd"] = min(met, key=lambda r: r["cost_usd"]) if met else None
    return out


def print_systems(ans: dict[str, Any], console, top: int = 10) -> None:
    """The answer as text: per model the cheapest system that meets the targets, and the front."""
    if not ans:
        return
    from rich.table import Table
    slo = ans["slo"]
    targets = ", ".join(f"{k} <= {fmt.seconds(v)}" for k, v in slo.items()) or "none set ([report] slo)"
    for model, m in ans["models"].items():
        c = m["cheapest"]
        head = (f"{model}: cheapest system meeting the targets ({targets}): {c['chips']} chips of {c['design_id']} "
                f"({c['split']}), {fmt.area(c['system_area_mm2'])} of silicon, TTFT {fmt.seconds(c['ttft_s'])}, "
                f"time per output token {fmt.seconds(c['time_per_token_s'])}"
                if c else f"{model}: no system of the search meets the targets ({targets})")
        console.print(head, highlight=False, markup=False, soft_wrap=True)
        u = m.get("cheapest_usd")
        if u:
            console.print(f"{model}: the least cost meeting them (die at 20 nm, package, DRAM; costmodel/system/cost.py): "
                          f"{u['chips']} chips of {u['design_id']} ({u['split']}), ${u['cost_usd']:,.0f}, "
                          f"{fmt.sig(u['tokens_per_s_per_usd'])} tokens/s per $", highlight=False, markup=False,
                          soft_wrap=True)
        t = Table(title=f"{model}: the front of silicon against time per output token ({len(m['systems'])} systems)")
        for col in ("design", "split", "chips", "silicon", "cost", "TTFT", "time/token", "collectives", "tokens/s/mm^2",
                    "meets"):
            t.add_column(col, justify="left" if col in ("design", "split") else "right")
        for r in m["front"][:top]:
            t.add_row(str(r["design_id"]), r["split"], str(r["chips"]), fmt.area(r["system_area_mm2"]),
                      f"${r['cost_usd']:,.0f}" if r.get("cost_usd") is not None else "", fmt.seconds(r["ttft_s"]), fmt.seconds(r["time_per_token_s"]),
                      "" if r["collectives_share"] is None else f"{r['collectives_share']:.0%}",
                      fmt.sig(r["tokens_per_s_per_mm2"]), "yes" if r["meets"] else "no")
        fmt.print_wide(console, t)
