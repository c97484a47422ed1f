"""The serving report's comparison of the request answer with the fixed-batch answer
(`sweep.reports.serving.fixed`) and its cap on the designs shown (`sweep.reports.serving.campaign.shown`),
on design rows made by hand so every rank is known."""

import pytest

from sweep.reports.serving import fixed
from sweep.reports.serving.campaign import SHOWN, shown


def _row(name, goodput_mm2, tok_mm2, prefill_s, area=10.0):
    return {"design": name, "design_params": "", "setting": "defaults", "status": "ok",
            "goodput_rps": goodput_mm2 * area, "goodput_per_mm2": goodput_mm2, "system_area_mm2": area,
            "fixed_tokens_per_s_per_mm2": tok_mm2, "fixed_prefill_s": prefill_s, "fixed_decode_s": 0.01,
            "kv_cache_tokens": 1000}


def test_opposite_orders_rank_each_winner_last():
    # goodput per mm^2 4 > 3 > 2 > 1; decode tokens/s per mm^2 the other way round
    rows = [_row(f"d{i}", g, t, 0.1) for i, (g, t) in enumerate([(4, 1), (3, 2), (2, 3), (1, 4)])]
    got = fixed.compare(rows)
    assert got["goodput_winner"]["design"] == "d0"
    dec = got["objectives"]["decode"]
    assert dec["best"]["design"] == "d3" and dec["best_goodput_rank"] == 4 and dec["goodput_winner_rank"] == 4
    assert dec["spearman"] == pytest.approx(-1.0) and dec["designs"] == 4 and dec["top"] == 4
    # equal prefill times and areas: every design ties first by 1 / (TTFT x mm^2)
    pre = got["objectives"]["prefill"]
    assert pre["goodput_winner_rank"] == 1 and pre["spearman"] is None   # undefined on a constant
    text = " ".join(fixed.lines(got))
    assert "d3" in text and "ranks 4 of 4 by goodput per mm^2" in text


def test_the_same_order_names_the_same_design():
    rows = [_row(f"d{i}", g, g * 10, 1.0 / g) for i, g in enumerate([1, 2, 3])]
    got = fixed.compare(rows)
    assert got["objectives"]["decode"]["spearman"] == pytest.approx(1.0)
    assert got["objectives"]["prefill"]["best"]["design"] == "d2"   # 1 / (TTFT x mm^2) = g / 10
    assert any("the same design" in line for line in fixed.lines(got))


def test_unfinished_designs_take_no_part_and_none_gives_nothing():
    rows = [_row("a", 2, 1, 0.1), {**_row("b", 5, 9, 0.1), "status": "infeasible", "goodput_per_mm2": None}]
    assert fixed.compare(rows)["objectives"]["decode"]["designs"] == 1
    assert fixed.compare([]) == {} and fixed.lines({}) == []


def test_many_designs_show_the_best_by_goodput_per_mm2():
    rows = [_row(f"d{i:02d}", (i * 7) % 30, 1, 0.1) for i in range(30)]
    got = shown(rows)
    assert len(got) == SHOWN
    want = sorted(rows, key=lambda r: -r["goodput_per_mm2"])[:SHOWN]
    assert [d for d, _ in got] == [r["design"] for r in want]
    assert shown(rows[:5]) == [(r["design"], "defaults") for r in rows[:5]]
