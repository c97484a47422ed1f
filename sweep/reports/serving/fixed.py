"""How a serving campaign's request answer differs from the fixed-batch answer on the same designs
(issue: "the report says how the request answer differs from the fixed-batch answer").

The request answer ranks designs by goodput per mm^2 (`sweep.engine.serving_tasks`: the highest
rate at which the SLO holds, per mm^2 of silicon). The fixed-batch answer is what an architecture
search over steps ranks them by (`sweep.search`, campaigns/llm_llama3_8b.toml): decode tokens per
second per mm^2 at a fixed batch and context, or a prefill's time per mm^2; here both read off each
design's own cost table (`costmodel.serving.table.fixed_steps`: the same mappings), so the two
answers differ only in what is asked, not in how a step is priced.

`compare` gives, per fixed-batch objective, its best design and where that design ranks by goodput
per mm^2, where the goodput winner ranks by it, how many of the ten best by goodput per mm^2 are
among its ten best, and Spearman's rank correlation between the two over the designs with both
figures (ties averaged; designs whose goodput is 0 take part: a fixed-batch search would still
rank them).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["compare", "FIXED_OBJECTIVES", "lines"]

#: The fixed-batch objectives set beside the goodput: (name, what it is, column, higher is better).
FIXED_OBJECTIVES = (
    ("decode", "decode tokens/s per mm^2 at batch 16, context 2,048", "fixed_tokens_per_s_per_mm2", True),
    ("prefill", "1 / (TTFT of a 2,048-token prompt alone x mm^2)", "fixed_prefill_per_s_mm2", True),
)
TOP = 10


def _frame(designs: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame([r for r in designs if r.get("status") == "ok" and r.get("goodput_per_mm2") is not None])
    if df.empty:
        return df
    if "fixed_prefill_s" in df and "system_area_mm2" in df:
        df["fixed_prefill_per_s_mm2"] = 1.0 / (df["fixed_prefill_s"].astype(float) * df["system_area_mm2"].astype(float))
    return df


def _rank(s: pd.Series) -> pd.Series:
    """1 = the best (the highest); ties share the best rank among them."""
    return s.astype(float).rank(ascending=False, method="min")


def compare(designs: list[dict[str, Any]]) -> dict[str, Any]:
    """The comparison (module docstring) of the report's design rows (`design_table`), per
    objective of `FIXED_OBJECTIVES` with a figure: ``best`` (its winner: design, setting, its figure,
    goodput per mm^2), ``best_goodput_rank`` (the winner's rank by goodput per mm^2, 1 = first),
    ``goodput_winner_rank`` (the goodput winner's rank by it), ``top_overlap`` (of the `TOP` best by
    goodput per mm^2, how many are among its `TOP` best), ``spearman`` (rank correlation), ``designs``
    (how many took part); {} when no design has both."""
    df = _frame(designs)
    if df.empty:
        return {}
    out: dict[str, Any] = {"goodput_winner": None, "objectives": {}}
    g = _rank(df["goodput_per_mm2"])
    win = int(g.astype(float).idxmin())
    out["goodput_winner"] = _who(df.loc[win], "goodput_per_mm2")
    for name, what, col, _ in FIXED_OBJECTIVES:
        if col not in df or df[col].isna().all():
            continue
        have = df[df[col].notna()]
        r = _rank(have[col])
        best = int(r.astype(float).idxmin())
        gr = _rank(have["goodput_per_mm2"])
        top_g = set(gr.nsmallest(TOP).index) if len(have) > TOP else set(have.index)
        top_f = set(r.nsmallest(TOP).index) if len(have) > TOP else set(have.index)
        out["objectives"][name] = {
            "what": what, "column": col, "designs": int(len(have)),
            "best": {**_who(have.loc[best], col), "goodput_per_mm2": float(have.loc[best, "goodput_per_mm2"])},
            "best_goodput_rank": int(gr.loc[best]),
            "goodput_winner_rank": int(r.loc[win]) if win in r.index else None,
            "top_overlap": len(top_g & top_f), "top": min(TOP, len(have)),
            "spearman": _spearman(have["goodput_per_mm2"], have[col]),
        }
    return out


def _spearman(a: pd.Series, b: pd.Series) -> float | None:
    """Spearman's rank correlation; None for fewer than 3 designs or a constant column (undefined)."""
    if len(a) < 3 or a.nunique() < 2 or b.nunique() < 2:
        return None
    return float(a.astype(float).corr(b.astype(float), method="spearman"))


def _who(r: pd.Series, col: str) -> dict[str, Any]:
    return {"design": r["design"], "design_params": r.get("design_params"), "setting": r.get("setting"),
            "value": float(r[col]), "fixed_prefill_s": _f(r.get("fixed_prefill_s")),
            "fixed_decode_s": _f(r.get("fixed_decode_s")), "goodput_rps": _f(r.get("goodput_rps")),
            "kv_cache_tokens": _f(r.get("kv_cache_tokens")), "system_area_mm2": _f(r.get("system_area_mm2"))}


def _f(v: Any) -> float | None:
    try:
        return None if v is None or pd.isna(v) else float(v)
    except (TypeError, ValueError):
        return None


def lines(cmp: dict[str, Any]) -> list[str]:
    """The comparison as sentences for people (empty without one)."""
    if not cmp or cmp.get("goodput_winner") is None:
        return []
    from sweep.common import fmt
    w = cmp["goodput_winner"]
    out = [f"request answer: most goodput per mm^2 is {_name(w)} ({fmt.sig(w['value'])} req/s per mm^2; TTFT alone "
           f"{fmt.seconds(w['fixed_prefill_s'])}, decode step at batch 16 {fmt.seconds(w['fixed_decode_s'])})"]
    for name, o in cmp["objectives"].items():
        b = o["best"]
        same = b["design"] == w["design"] and b.get("setting") == w.get("setting")
        head = f"fixed-batch answer, {o['what']}: "
        if same:
            out.append(head + f"the same design (of {o['designs']:,}); top {o['top']} shared: {o['top_overlap']}, "
                       f"Spearman {fmt.sig(o['spearman'])}")
            continue
        out.append(head + f"{_name(b)}, which ranks {o['best_goodput_rank']:,} of {o['designs']:,} by goodput per mm^2 "
                   f"({fmt.sig(b['goodput_per_mm2'])} req/s per mm^2; TTFT alone {fmt.seconds(b['fixed_prefill_s'])}, "
                   f"decode step {fmt.seconds(b['fixed_decode_s'])}); the goodput winner ranks "
                   f"{o['goodput_winner_rank']:,} by it; top {o['top']} shared: {o['top_overlap']}; Spearman "
                   f"{fmt.sig(o['spearman'])}")
    return out


def _name(r: dict[str, Any]) -> str:
    return str(r["design"]) + (f" ({r['design_params']})" if r.get("design_params") else "")
