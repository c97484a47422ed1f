"""The systems answer of an architecture search over systems of chips comes first, in every form of
the report: the text report's first lines, the HTML page's top (a box, a table with a "meets" column,
the plot of silicon against time per output token) and the first PNG. A step that does not fit its
chips' DRAM is counted as "does not fit (memory)", never listed as an error; a front's title counts the
rows it shows and holds the cheapest system; no plot of one point; tick labels that do not overlap;
costs and energies with what they are.

A tiny real campaign (GPT-2 on a 16-column array with 64 MiB HBM stacks: one stack does not hold GPT-2's
124 MB of 8-bit weights, four chips of it do) is checked against an oracle read from its stored totals
(systems, silicon = tp x pp x ep chips x the design's area, the targets met); the front's logic against
a hand-made table."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from sweep import api
from sweep.cli import app
from sweep.engine.store import Store
from sweep.reports.summary import print_summary, summary
from sweep.reports.systems import system_answers

runner = CliRunner()
#: How the reports name a step that does not fit its chips' DRAM (`sweep.reports.summary.DOES_NOT_FIT`).
DOES_NOT_FIT = "does not fit (memory)"

#: A 16 x 16 weight-stationary chip (the llm_ws preset's memories and figures) whose HBM2E stack holds
#: 0.0625 GiB: GPT-2's 124.4 MB of 8-bit weights fit on 4 chips (tp 4), not on one of one stack.
TEMPLATE = """
name = "small_ws"
mac_pj = 0.3
clock_mhz = 1000.0
tech = "cacti22"
[array]
D1 = 16
D2 = 16
[precision]
W = 8
I = 8
O = 32
O_final = 8
[spatial]
D1 = [["C", 16]]
D2 = [["K", 16]]
[[memory]]
name = "weight_reg"
size_bits = 16
operands = ["W"]
read_pj = 0.25
write_pj = 0.25
word_bits = 8
private_to = "all"
[[memory]]
name = "accumulators"
size_bits = 16777216
operands = ["O"]
read_pj = 2022.4384
write_pj = 1640.5696
word_bits = 512
private_to = []
[[memory]]
name = "unified_buffer"
size_bits = 134217728
operands = ["I", "O"]
read_pj = 1329.7616
write_pj = 1252.2112
word_bits = 1024
shared_port = true
private_to = []
[dram]
kind = "hbm2e"
units = 1
gib_per_unit = 0.0625
[vector]
lanes = 128
lane_area_pes = 4.0
"""

SLO = {"ttft_s": 0.01, "time_per_token_s": 0.05}
CAMPAIGN = """
name = "tiny_systems"
output = "{out}"
networks = [
    {{ model = "gpt2", phase = "prefill", batch = 1, seq = 32, fusion = "unfused", tp = [1, 4] }},
    {{ model = "gpt2", phase = "decode", batch = 2, context = 64, fusion = "unfused", tp = [1, 4] }},
]
objectives = ["latency"]
seeds = [0]

[architectures]
kind = "loopnest"
template = "small_ws.toml"

[architectures.grid]
dram_units = [1, 4]
array.D2 = [8, 16]
constraints = ["dram_units == 1 or array.D2 == 16"]   # 3 designs: one of 4 stacks, two of 1

[search]
sampler = "grid"
objectives = ["time_per_token_s", "ttft_s"]

[[mappers]]
name = "loma"
params = {{ lpf_limit = 4 }}

[report]
slo = {{ ttft_s = {ttft}, time_per_token_s = {tpot} }}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("systems")
    (tmp / "small_ws.toml").write_text(TEMPLATE)
    (tmp / "c.toml").write_text(CAMPAIGN.format(out=(tmp / "out").as_posix(), ttft=SLO["ttft_s"],
                                                tpot=SLO["time_per_token_s"]))
    r = api.run_campaign(tmp / "c.toml", executor="local")
    assert r.ok
    return Path(r.output)


def _degree(name: str, key: str) -> int:
    m = re.search(rf"/{key}(\d+)", name)
    return int(m.group(1)) if m else 1


def oracle(directory: Path) -> dict:
    """From the stored totals alone: the systems (design, tp) whose prefill and decode both finished,
    their silicon (chips x the design's area), TTFT and time per output token, whether they meet
    `SLO`, the cheapest that does, the systems one of whose steps does not fit, the networks on
    which one design finished."""
    t = Store(directory).read("totals")
    t = t.assign(tp=[_degree(n, "tp") for n in t["network"]], phase=t["phase"].astype(str))
    ok = t[t["status"] == "ok"]
    systems = {}
    for (design, tp), g in ok.groupby(["design_id", "tp"]):
        pre, dec = g[g["phase"] == "prefill"], g[g["phase"] == "decode"]
        if len(pre) and len(dec):
            s = {"design_id": design, "chips": tp, "silicon": tp * float(g["area_mm2"].iloc[0]),
                 "ttft_s": float(pre["ttft_s"].iloc[0]), "time_per_token_s": float(dec["time_per_token_s"].iloc[0])}
            s["meets"] = s["ttft_s"] <= SLO["ttft_s"] and s["time_per_token_s"] <= SLO["time_per_token_s"]
            systems[(design, tp)] = s
    met = sorted((s for s in systems.values() if s["meets"]), key=lambda s: (s["silicon"], s["time_per_token_s"]))
    bad = t[(t["status"] == "infeasible") & t["error"].astype(str).str.startswith("does not fit")]
    per_net = ok.groupby("network").size()
    return {"systems": systems, "cheapest": met[0] if met else None,
            "unfit": {(d, tp) for d, tp in zip(bad["design_id"], bad["tp"])}, "unfit_rows": len(bad),
            "one_design": [str(n) for n, k in per_net.items() if k == 1]}


def test_the_campaign_has_what_the_answer_is_about(run):
    """The oracle's premises: a cheapest system, systems that do not fit, a step on one design only."""
    o = oracle(run)
    assert o["cheapest"] is not None and o["unfit"] and o["one_design"]
    assert any(not s["meets"] for s in o["systems"].values())


def test_the_answer_is_in_the_first_lines_of_the_text_report(run):
    o = oracle(run)
    c = o["cheapest"]
    res = runner.invoke(app, ["report", str(run)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("gpt2: cheapest system meeting the targets"))
    assert at < 10
    answer = lines[at]
    assert f"{c['chips']} chips of design {c['design_id']}" in answer and f"tp {c['chips']} x pp 1" in answer
    assert "TTFT" in answer and "time per output token" in answer and "output tokens/s" in answer
    first_detail = next(i for i, line in enumerate(lines) if "Pareto front of area and EDP" in line)
    assert at < first_detail
    # the systems that do not fit are counted beside the answer, and once more as one neutral line
    unfit = next(line for line in lines[:first_detail] if "other system(s) not costed" in line)
    assert unfit.startswith(f"gpt2: {len(o['unfit'])} other system(s)") and DOES_NOT_FIT in unfit
    assert not any("did not finish" in line for line in lines)


def _front_block(lines: list[str], model: str) -> tuple[re.Match, list[str]]:
    """The title of ``model``'s front table in ``lines`` and its body rows (Rich's box rows)."""
    i, m = next((i, m) for i, line in enumerate(lines) if (m := re.match(rf"{model}: (\d+) of (\d+) systems shown", line)))
    start = next(j for j in range(i, len(lines)) if lines[j].startswith("┡"))
    end = next(j for j in range(start, len(lines)) if lines[j].startswith("└"))
    return m, lines[start + 1:end]


def test_the_text_front_counts_its_rows_and_marks_the_cheapest(run):
    o = oracle(run)
    res = runner.invoke(app, ["report", str(run)])
    title, rows = _front_block(res.output.splitlines(), "gpt2")
    assert int(title.group(1)) == len(rows) and int(title.group(2)) == len(o["systems"])
    marked = [r for r in rows if "cheapest" in r]
    assert len(marked) == 1 and o["cheapest"]["design_id"] in marked[0] and "yes" in marked[0]
    meets = {r.split("│")[1].strip() + " " + r.split("│")[2].strip(): r.split("│")[10].strip() for r in rows}
    for (design, tp), s in o["systems"].items():
        key = f"{design} tp {tp} x pp 1"
        if key in meets:
            assert meets[key] == ("yes" if s["meets"] else "no")


def _row(design, name, chips, area, ttft=None, tpot=None, status="ok", error=""):
    phase = "prefill" if "/prefill/" in name else "decode"
    return {"design_id": design, "network": name, "status": status, "error": error, "phase": phase,
            "chips": chips, "area_mm2": area, "system_area_mm2": chips * area, "ttft_s": ttft,
            "time_per_token_s": tpot, "collectives_s": 0.0, "tokens_per_s": 100.0, "tokens_per_s_per_mm2": 1.0}


P, D = "gpt2/prefill/b2/seq64", "gpt2/decode/b2/ctx128"


def hand_totals() -> pd.DataFrame:
    """Designs c (5 mm^2), a (10), b (25), d (8). Targets TTFT <= 1 s, time per token <= 50 ms.
    c x1: 3 s, 10 ms (misses TTFT); a x1: 0.9 s, 80 ms; b x1: 1.5 s, 60 ms; d x1 does not fit;
    d x4 (32 mm^2): 0.95 s, 45 ms, meets: the cheapest; a x4 (40): 0.4 s, 30 ms; b x4 (100): 0.5 s, 20 ms.
    Front of all (silicon, time per token): c x1 alone (5 mm^2 and 10 ms: nothing is smaller or faster);
    front of those meeting: d x4, a x4, b x4. So the cheapest is off the front of all."""
    unfit = "does not fit: needs 300 MB: weights 248 MB; design_d has 256 MB"
    return pd.DataFrame([
        _row("c", P, 1, 5.0, ttft=3.0), _row("c", D, 1, 5.0, tpot=0.010),
        _row("a", P, 1, 10.0, ttft=0.9), _row("a", D, 1, 10.0, tpot=0.080),
        _row("b", P, 1, 25.0, ttft=1.5), _row("b", D, 1, 25.0, tpot=0.060),
        _row("d", P, 1, 8.0, status="infeasible", error=unfit), _row("d", D, 1, 8.0, status="infeasible", error=unfit),
        _row("d", P + "/tp4", 4, 8.0, ttft=0.95), _row("d", D + "/tp4", 4, 8.0, tpot=0.045),
        _row("a", P + "/tp4", 4, 10.0, ttft=0.4), _row("a", D + "/tp4", 4, 10.0, tpot=0.030),
        _row("b", P + "/tp4", 4, 25.0, ttft=0.5), _row("b", D + "/tp4", 4, 25.0, tpot=0.020),
    ])


def test_the_front_holds_the_cheapest_even_off_the_front_of_all():
    """Chip costs (USD) a 100, b 300, c 50, d 400: of the systems meeting the targets d x4 costs 1,600,
    a x4 400, b x4 1,200: the least cost is a x4, the least silicon d x4; both in the front, marked."""
    from sweep.reports.systems import front_table
    ans = system_answers(hand_totals(), {"ttft_s": 1.0, "time_per_token_s": 0.05}, {"a": 100, "b": 300, "c": 50, "d": 400})
    m = ans["models"]["gpt2"]
    assert (m["cheapest"]["design_id"], m["cheapest"]["chips"]) == ("d", 4)
    assert (m["cheapest_usd"]["design_id"], m["cheapest_usd"]["cost_usd"]) == ("a", 400)
    assert [(r["design_id"], r["chips"]) for r in m["front"]] == [("c", 1), ("d", 4), ("a", 4), ("b", 4)]
    assert m["does_not_fit"] == 1 and len(m["systems"]) == 6
    title, rows, caption = front_table("gpt2", m)
    assert title.startswith(f"gpt2: {len(rows)} of 6 systems shown") and caption == ""
    assert {(r["design_id"], r["chips"]): r["mark"] for r in rows if r["mark"]} == {("d", 4): "cheapest",
                                                                                      ("a", 4): "least cost"}
    assert [r["meets"] for r in rows] == [False, True, True, True]


def test_a_long_front_shows_its_count_and_keeps_the_cheapest():
    """Two rows shown at most: c x1 and d x4 first, the least-cost a x4 kept: 3 of 6 shown, 1 more."""
    from sweep.reports.systems import front_table
    m = system_answers(hand_totals(), {"ttft_s": 1.0, "time_per_token_s": 0.05},
                       {"a": 100, "b": 300, "c": 50, "d": 400})["models"]["gpt2"]
    title, rows, caption = front_table("gpt2", m, limit=2)
    assert [(r["design_id"], r["chips"]) for r in rows] == [("c", 1), ("d", 4), ("a", 4)]
    assert title.startswith("gpt2: 3 of 6 systems shown") and caption.startswith("1 more on the front")


def test_when_no_system_meets_the_answer_names_the_nearest_miss():
    """Time per token <= 5 ms, TTFT <= 1 s: none meets. Worst figure over its target: c x1 max(3.0, 2)
    = 3; a x1 16; b x1 12; d x4 9; a x4 6; b x4 4: the nearest miss is c x1."""
    from sweep.reports.systems import answer_lines
    ans = system_answers(hand_totals(), {"ttft_s": 1.0, "time_per_token_s": 0.005})
    m = ans["models"]["gpt2"]
    assert m["cheapest"] is None and (m["nearest_miss"]["design_id"], m["nearest_miss"]["chips"]) == ("c", 1)
    line = next(line for line in answer_lines(ans) if line.startswith("gpt2: no system"))
    assert "nearest miss: 1 chip of design c" in line and "TTFT 3.000 s (target 1.000 s, missed)" in line


def _unit_rows() -> pd.DataFrame:
    """3 finished rows, 2 rows of a step that does not fit a design's DRAM, 1 row whose code failed."""
    base = {"task_id": "t0", "mapper": "loma", "layer": "", "code_version": "x", "config_hash": "h"}
    unfit = "does not fit: needs 71 GB: weights 70.6 GB; design_x has 34.4 GB"
    return pd.DataFrame([{**base, "network": "n", "layer": "l", "status": "ok", "error": None}] * 3 + [
        {**base, "network": "big/prefill", "status": "infeasible", "error": unfit, "task_id": "t1"},
        {**base, "network": "big/decode", "status": "infeasible", "error": unfit, "task_id": "t1"},
        {**base, "network": "n", "layer": "l2", "status": "error", "error": "RuntimeError: boom\nTraceback", "task_id": "t2"}])


def test_does_not_fit_is_counted_apart_from_the_failures():
    rep = summary(Path("dir"), {"name": "c", "tasks": 3}, _unit_rows())
    assert rep["does_not_fit"] == {"rows": 2, "networks": {"big/prefill": 1, "big/decode": 1},
                                   "example": "needs 71 GB: weights 70.6 GB; design_x has 34.4 GB"}
    assert rep["failures"]["rows"] == 1 and [g["error"] for g in rep["failures"]["groups"]] == ["RuntimeError: boom"]
    assert [e["task_id"] for e in rep["errors"]] == ["t2"]
    from rich.console import Console
    out = io.StringIO()
    print_summary(rep, Console(file=out, force_terminal=True, color_system="standard", width=300))
    lines = out.getvalue().splitlines()
    unfit = [line for line in lines if DOES_NOT_FIT in line and "row(s) not mapped" in line]
    assert len(unfit) == 1 and "\x1b[31m" not in unfit[0]          # neutral, not red
    assert any("RuntimeError: boom" in line and "\x1b[31m" in line for line in lines)   # a real error stays red
    assert any("1 of 4 rows failed" in re.sub(r"\x1b\[[0-9;]*m", "", line) for line in lines)


def test_the_html_page_shows_does_not_fit_neutrally_and_errors_in_red():
    from sweep.reports.html import Page
    rep = summary(Path("dir"), {"name": "c", "tasks": 3}, _unit_rows())
    page = Page("t")
    page.summary(rep)
    html = "\n".join(page.blocks)
    note = re.search(r'<p class="note does-not-fit">(.*?)</p>', html).group(1)
    assert "2 (design, step) pair(s)" in note and "big/prefill: 1" in note
    errors = re.search(r'<ul class="errors">(.*?)</ul>', html).group(1)
    assert "RuntimeError: boom" in errors and "does not fit" not in errors
    assert "rows: ok 3, error 1, does not fit (memory) 2." in html


def figures(page: str) -> list[dict]:
    m = re.search(r'<script type="application/json" id="sweep-figures">(.*?)</script>', page, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


@pytest.fixture(scope="module")
def html_page(run, tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("page") / "report.html"
    res = runner.invoke(app, ["report", str(run), "--html", str(out)])
    assert res.exit_code == 0, res.output
    return out.read_text(encoding="utf-8")


def test_the_html_page_opens_with_the_answer_a_meets_column_and_the_front(run, html_page):
    o = oracle(run)
    c = o["cheapest"]
    box = re.search(r'<div class="answer" id="systems-answer">(.*?)</div>', html_page, re.S).group(1)
    assert f"gpt2: cheapest system meeting the targets: {c['chips']} chips of design {c['design_id']}" in box
    assert "not a price" in box
    table = re.search(r'<table class="front">(.*?)</table>', html_page, re.S).group(1)
    assert "<th>meets</th>" in table
    shown = re.findall(r"<tr( class=\"marked\")?><td>([0-9a-f]+)</td><td>tp (\d+)", table)
    assert int(re.search(r"<caption>gpt2: (\d+) of", table).group(1)) == len(shown)
    assert [(d, int(tp)) for m, d, tp in shown if m] == [(c["design_id"], c["chips"])]
    figs = figures(html_page)
    assert "systems-gpt2" in figs[0]["id"]     # the first figure of the page
    pts = [t for t in figs[0]["figure"]["data"] if t.get("mode") == "markers"]
    assert sum(len(t["x"]) for t in pts if not t["name"].startswith("cheapest")) == len(o["systems"])
    ring = next(t for t in pts if t["name"].startswith("cheapest"))
    assert (ring["x"], ring["y"]) == ([c["time_per_token_s"]], [pytest.approx(c["silicon"])])
    # the answer above the detail and above the count of what does not fit
    assert html_page.index('id="systems-answer"') < html_page.index('class="note does-not-fit"') \
        < html_page.index('class="figure" id="fig-1-')


def test_no_figure_of_one_point_and_no_does_not_fit_in_red(run, html_page):
    o = oracle(run)
    for f in figures(html_page):
        per_axis: dict[str, int] = {}
        for t in f["figure"]["data"]:
            if t.get("type", "scatter") == "scatter" and "markers" in t.get("mode", ""):
                per_axis[t.get("xaxis", "x")] = per_axis.get(t.get("xaxis", "x"), 0) + len(t["x"])
        assert all(n >= 2 for n in per_axis.values()), (f["id"], per_axis)
    for net in o["one_design"]:
        assert f"{net}: one design finished" in html_page
    errors = re.findall(r'<ul class="errors">(.*?)</ul>', html_page, re.S)
    assert not any("does not fit" in e for e in errors)
    assert f"rows: ok {int((Store(run).read('rows')['status'] == 'ok').sum())}, {DOES_NOT_FIT} {o['unfit_rows']}." \
        in html_page


def test_the_pngs_start_with_the_front_and_skip_one_point_plots(run, tmp_path):
    o = oracle(run)
    res = runner.invoke(app, ["report", str(run), "--plots", str(tmp_path / "plots")])
    assert res.exit_code == 0, res.output
    plots = [line.removeprefix("plot: ") for line in res.output.splitlines() if line.startswith("plot: ")]
    assert Path(plots[0]).name == "systems_gpt2_front.png" and Path(plots[0]).stat().st_size > 0
    for net in o["one_design"]:
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", net)
        assert not (tmp_path / "plots" / f"archsearch_{name}_area_edp.png").exists()


def test_latency_tick_labels_do_not_overlap():
    """Latency 1.45-2.4 Gcycles on the right panel of two (domain 0.55-1: 450 px of a 1,000 px plot):
    neighbouring labels at least half of each one's width apart at 7 px per character of Plotly's
    12 px font (the old ticks, 1.6 to 2.4 Gcycles every 0.2, put 2.2 and 2.4 Gcycles 70 px apart for
    77 px of text)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from sweep.reports.html.axes import log_axis
    fig = make_subplots(1, 2, horizontal_spacing=0.1)
    fig.add_trace(go.Scatter(x=[1.0, 2.0], y=[1.0, 2.0]), row=1, col=1)
    fig.add_trace(go.Scatter(x=[1.45e9, 2.4e9], y=[1.0, 2.0]), row=1, col=2)
    log_axis(fig, "x", "cycles", row=1, col=2)
    ax = fig.layout.xaxis2
    lo, hi = ax.range
    px = 1000 * (ax.domain[1] - ax.domain[0])
    at = [(math.log10(v) - lo) / (hi - lo) * px for v in ax.tickvals]
    assert len(at) >= 2
    for (a, ta), (b, tb) in zip(zip(at, ax.ticktext), zip(at[1:], ax.ticktext[1:])):
        assert b - a >= (len(ta) + len(tb)) / 2 * 7, (ax.ticktext, at)


def test_costs_and_energies_say_what_they_are(run, html_page):
    res = runner.invoke(app, ["report", str(run)])
    lines = res.output.splitlines()
    first_detail = next(i for i, line in enumerate(lines) if "Pareto front of area and EDP" in line)
    head = lines[:first_detail]
    assert any(line.startswith("cost: what the chips cost to make, not a price") for line in head[:12])
    assert any(line.startswith("energy: dynamic only") for line in head)
    assert "energy per token, dynamic only" in html_page and "(energy: dynamic only)" in html_page
