"""The interactive report, looked at (issue 30, item 9), checked on the figures' Plotly dicts:
log ticks labelled in full in the unit of the axis (no bare ``9``/``8``/``2`` minor labels, no
``350k`` on a ``uJ`` axis), axis ranges padded so that markers on the extremes are whole, a
mapper's line broken at the layers it has no result for, crowded layer names turned vertical,
and the problems `sweep report` lists as left out (skipped, error, infeasible) named on the
page. A browser test zooms an axis and reads the new ticks."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from sweep.reports.html import Page
from sweep.reports.html.axes import PAD, log_axis, tick_text

#: Unit of a tick label -> its factor to the axis's base unit (pJ, s, cycles).
_SCALE = {"pJ": 1, "nJ": 1e3, "uJ": 1e6, "mJ": 1e9, "J": 1e12, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1,
          "cycles": 1, "kcycles": 1e3, "Mcycles": 1e6, "Gcycles": 1e9, "": 1}


def value_of(text: str) -> float:
    """A tick label read back: ``350 uJ`` -> 3.5e8 (pJ), ``2 ms`` -> 0.002, ``1e+17`` -> 1e17."""
    m = re.fullmatch(r"(-?[\d.]+(?:e[+-]\d+)?)(?: (\w+))?", text)
    assert m, f"tick label {text!r} is not a number and a unit"
    return float(m.group(1)) * _SCALE[m.group(2) or ""]


def layers_frame(n: int = 31, skip: tuple[int, ...] = (4, 5, 6, 20)) -> pd.DataFrame:
    """``rep["layers"]`` rows of one (network, arch, objective): ``n`` MobileNetV2-like layers,
    mapper ``a`` on all, ``b`` on all but ``skip``; energies 20..300 uJ, search 1..3 ms."""
    rng = np.random.default_rng(0)
    rows = []
    for lab in ("a", "b"):
        for i in range(n):
            if lab == "b" and i in skip:
                continue
            rows.append({"network": "mobilenet_v2", "arch": "eyeriss_like", "objective": "energy", "label": lab,
                         "layer_index": i, "layer": f"block{i}_expand_project", "repeat": 1, "seeds": 1,
                         "value": float(rng.uniform(2e7, 3e8)), "energy_pj": 1.0, "latency_cycles": 1.0,
                         "evaluations": 10, "search_s": float(rng.uniform(1e-3, 3e-3)), "vs_baseline": 1.0})
    return pd.DataFrame(rows)


def axes_of(fig) -> dict[str, dict]:
    """The figure's layout axes (xaxis, yaxis2, ...) as dicts."""
    layout = fig.to_plotly_json()["layout"]
    return {k: v for k, v in layout.items() if re.fullmatch(r"[xy]axis\d*", k)}


def assert_log_ticks(ax: dict) -> None:
    """Ticks inside the range, each label the full value (read back in the unit of the axis's
    values, `value_of`: not Plotly's bare ``9`` for 0.9 or ``2`` for 20)."""
    assert ax["type"] == "log" and ax["tickmode"] == "array"
    vals, text = ax["tickvals"], ax["ticktext"]
    assert len(vals) >= 2 and len(text) == len(vals)
    lo, hi = ax["range"]
    assert all(lo <= math.log10(v) <= hi for v in vals)
    for v, t in zip(vals, text):
        assert value_of(t) == pytest.approx(v, rel=1e-9)


def assert_markers_whole(fig) -> None:
    """Every numeric axis with markers has a range padded `PAD` of its data span around them."""
    layout = fig.to_plotly_json()["layout"]
    for tr in fig.data:
        if tr.type != "scatter" or "markers" not in (tr.mode or "markers"):
            continue
        for axis in ("x", "y"):
            name = axis + "axis" + (getattr(tr, axis + "axis") or axis)[1:]
            ax = layout.get(name, {})
            if ax.get("type") == "category" or (axis == "x" and isinstance(tr.x[0], str)):
                continue
            assert "range" in ax, f"{name}: no range set, markers on its extremes are clipped"
            log = ax.get("type") == "log"
            vals = [math.log10(v) if log else v for v in getattr(tr, axis) if v is not None]
            lo, hi = ax["range"]
            margin = PAD * 0.99 * (max(vals) - min(vals))
            assert lo <= min(vals) - margin and max(vals) + margin <= hi, (name, lo, hi)


def test_tick_text_is_the_terminal_unit_without_trailing_zeros():
    assert tick_text(3.5e11, "pJ") == "350 mJ" and tick_text(2.5e6, "pJ") == "2.5 uJ"
    assert tick_text(0.002, "s") == "2 ms" and tick_text(1.5e6, "cycles") == "1.5 Mcycles"
    assert tick_text(950, "cycles") == "950 cycles" and tick_text(100, "cycles") == "100 cycles"
    assert tick_text(2e17) == "2e+17" and tick_text(0.9) == "0.9" and tick_text(0.0015) == "0.0015"
    assert tick_text(0.02, "J") == "20 mJ"


def test_loopnest_layer_axes_read_in_energy_and_seconds_not_minor_digits():
    from sweep.reports.html.loopnest import layers_figure

    fig = layers_figure(layers_frame(), ["a", "b"], "t", "energy", "a")
    axes = axes_of(fig)
    assert_log_ticks(axes["yaxis"])      # best energy: uJ, the value in pJ
    assert_log_ticks(axes["yaxis2"])     # search time: ms
    assert all(t.endswith("uJ") for t in axes["yaxis"]["ticktext"])
    assert all(t.endswith("ms") for t in axes["yaxis2"]["ticktext"])
    assert axes["yaxis"]["title"]["text"] == "best energy per execution"  # the unit is on the ticks
    hover = next(t for t in fig.data[0].text if t)  # a layer's energy per execution and x its repeats (issue 43, 8)
    assert "per execution" in hover and " executions: energy " in hover and "in the network" in hover
    assert_markers_whole(fig)


def test_edp_ticks_are_plain_numbers_with_the_unit_on_the_title():
    from sweep.reports.html.loopnest import layers_figure

    fig = layers_figure(layers_frame().assign(objective="edp", value=lambda d: d["value"] * 1e9), ["a", "b"],
                        "t", "edp", None)
    ax = axes_of(fig)["yaxis"]
    assert ax["title"]["text"] == "best edp per execution (pJ x cycles)"
    assert_log_ticks(ax)
    assert all(re.fullmatch(r"\d(\.\d+)?e\+\d\d", t) for t in ax["ticktext"]), ax["ticktext"]


def test_a_mapper_line_breaks_at_the_layers_it_skipped():
    from sweep.reports.html.loopnest import layers_figure

    fig = layers_figure(layers_frame(), ["a", "b"], "t", "energy", "a")
    names = axes_of(fig)["xaxis"]["categoryarray"]
    assert len(names) == 31
    for tr in fig.data:
        assert list(tr.x) == names and tr.connectgaps is False
        missing = [i for i, v in enumerate(tr.y) if v is None]
        assert missing == ([4, 5, 6, 20] if tr.name == "b" else [])
        assert all((t is None) == (v is None) for t, v in zip(tr.text, tr.y))


def test_many_layer_names_stand_vertical_few_upright():
    from sweep.reports.html.loopnest import layers_figure

    crowded = axes_of(layers_figure(layers_frame(), ["a", "b"], "t", "energy", "a"))
    assert crowded["xaxis"]["tickangle"] == -90 and crowded["xaxis2"]["tickangle"] == -90
    assert crowded["xaxis2"]["automargin"] is True
    few = axes_of(layers_figure(layers_frame(2, ()), ["a", "b"], "t", "energy", "a"))
    assert few["xaxis2"]["tickangle"] == 0


def test_networks_speedup_bars_have_full_log_labels():
    from sweep.reports.html.loopnest import _networks_figure

    nets = pd.DataFrame([{"network": "n", "arch": "a", "objective": "energy", "mapper": m,
                          "geomean_improvement_vs_baseline": 1.0, "speedup_vs_baseline": s}
                         for m, s in (("salsa", 0.68), ("random", 1.0), ("loma", 0.041))])
    assert_log_ticks(axes_of(_networks_figure(nets, "random", ["salsa", "random", "loma"]))["yaxis2"])


def systolic_rows(n: int = 300) -> pd.DataFrame:
    """Hardware points of one network and PM: energy 14..18 mJ, 0.7..7 Mcycles."""
    rng = np.random.default_rng(1)
    return pd.DataFrame({"J": 16, "K": 16, "fsram_kib": 16, "isram_kib": 16, "psram_kib": 8, "point": range(n),
                         "area_mm2": rng.uniform(2, 16, n), "pm_value": rng.uniform(1, 1.4, n),
                         "energy_pj": rng.uniform(1.4e10, 1.8e10, n), "cycles": 10 ** rng.uniform(5.85, 6.85, n),
                         "network": "alexnet", "pm": "ED"})


@pytest.mark.parametrize("big", [False, True])
def test_systolic_energy_ticks_agree_with_the_axis_unit_and_markers_are_whole(monkeypatch, big):
    """Energy was plotted in uJ with Plotly's SI ticks (``17.5k`` on "energy (uJ)"); now the
    values are pJ, every tick names its own unit, and the ranges are padded (with a density
    map, the Pareto-front markers sat half outside the bottom-left corner)."""
    from sweep.reports.html import systolic

    if big:
        monkeypatch.setattr(systolic, "ALL_POINTS", 50)
    g = systolic_rows()
    fig = systolic._panels(g, "ED", ["alexnet"], "t", "energy", lambda f, d, col: systolic._ed_panel(f, d, "ED", col))
    axes = axes_of(fig)
    assert axes["yaxis"]["title"]["text"] == "energy" and axes["xaxis"]["title"]["text"] == "delay"
    assert_log_ticks(axes["yaxis"])
    assert_log_ticks(axes["xaxis"])
    assert all(t.endswith(" mJ") for t in axes["yaxis"]["ticktext"])
    assert all(t.endswith("cycles") for t in axes["xaxis"]["ticktext"])
    assert_markers_whole(fig)
    pm = systolic._panels(g, "ED", ["alexnet"], "t", "ED / optimum", lambda f, d, col: systolic._pm_panel(f, d, "ED", col))
    assert_log_ticks(axes_of(pm)["yaxis"])
    assert_markers_whole(pm)


def test_archsearch_fronts_ticks_and_padding():
    from sweep.reports.html.archsearch import fronts_figure

    rng = np.random.default_rng(2)
    d = pd.DataFrame({"design_id": [f"d{i}" for i in range(8)], "area_mm2": rng.uniform(5, 13, 8),
                      "edp": rng.uniform(1.5e17, 6.5e17, 8), "energy_pj": rng.uniform(1.24e10, 1.45e10, 8),
                      "latency_cycles": rng.uniform(1.2e7, 5e7, 8)})
    fig = fronts_figure("resnet18", d, ["array.D1"], {f"d{i}": ["x", "command: sweep map"] for i in range(8)})
    axes = axes_of(fig)
    assert_log_ticks(axes["yaxis"])
    assert_log_ticks(axes["xaxis2"])
    assert_log_ticks(axes["yaxis2"])
    assert all(t.endswith(" mJ") for t in axes["yaxis2"]["ticktext"])
    assert_markers_whole(fig)


def test_log_axis_keeps_zoom_candidates_for_the_page_script():
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[2e7, 9e7, 3e8], mode="markers"))
    log_axis(fig, "y", "pJ")
    spec = fig.layout.meta["sweep_ticks"]["yaxis"]
    assert spec["initial"] == {"vals": list(fig.layout.yaxis.tickvals), "text": list(fig.layout.yaxis.ticktext)}
    assert len(spec["vals"]) == len(spec["mask"]) == len(spec["text"])
    assert all(value_of(t) == pytest.approx(v) for v, t in zip(spec["vals"], spec["text"]))
    assert {v for v, m in zip(spec["vals"], spec["mask"]) if m & 1} >= {1e7, 1e8}   # decades: in every set


# -- what the tables leave out, named on the page ----------------------------------------------------

SKIP = """
name = "ln_skip"
networks = [{{file = "{net}"}}]
objectives = ["energy"]
seeds = [0]
[architectures]
kind = "loopnest"
presets = ["eyeriss_like"]
[[mappers]]
name = "loma"
params = {{ max_orderings = 100 }}
[[mappers]]
name = "random"
params = {{ patience = 50 }}
[report]
baseline = "random"
"""


@pytest.fixture(scope="module")
def skipped(tmp_path_factory):
    """A tiny_net run whose loma skips conv_a (360 orderings > 100): (directory, page text)."""
    from test_html import run_text, write_html

    tmp = tmp_path_factory.mktemp("skip")
    d = run_text(tmp, SKIP)
    return d, write_html(d, tmp / "report.html")


def test_page_names_the_problems_a_mapper_skipped(skipped):
    """loma's conv_a row: status "ok" with no value (a skipped search), or, once the mapper says
    so, "infeasible" with its reason in ``error``: either way named, with its status and reason."""
    import html

    from sweep.engine.store import Store
    from sweep.kinds import build_report
    from test_html import figures

    directory, page = skipped
    assert build_report(directory)["unreported"] == {"loma": 1}
    rows = Store(directory).read("rows")
    r = rows[(rows["mapper"] == "loma") & ~np.isfinite(rows["value"].astype(float))].iloc[0]
    status = "skipped" if r["status"] == "ok" else r["status"]
    error = str(r["error"] or "").strip() if r["error"] == r["error"] else ""
    reason = error.splitlines()[0] if error else "search skipped: 360 orderings, more than max_orderings 100"
    assert "left out of the figures, no finished row" in page
    assert html.escape(f"loma: 1 problem(s); rows 1 {status}; first reason: {reason}") in page
    loma = [tr for tr in figures(page)[0]["figure"]["data"] if tr["name"] == "loma"]
    assert [tr["y"][0] for tr in loma] == [None, None] and all(tr["y"][1] is not None for tr in loma)


def test_error_and_infeasible_rows_count_as_unfinished_with_their_reason(skipped):
    from sweep.engine.store import Store
    from sweep.reports.html.loopnest import add_comparison, unfinished_problems

    directory, _ = skipped
    rows = Store(directory).read("rows")
    skip = rows.index[(rows["mapper"] == "loma") & ~np.isfinite(rows["value"].astype(float))]
    rows.loc[skip, ["status", "error"]] = ["ok", None]       # a skipped search as stored: ok, no value
    i = rows.index[(rows["mapper"] == "random")][0]
    rows.loc[i, ["status", "error"]] = ["infeasible", "no mapping fits the buffers\n(details)"]
    extra = rows.loc[[i]].assign(status="error", error="RuntimeError: solver exploded\nTraceback ...", unit_index=1)
    rows = pd.concat([rows, extra], ignore_index=True)
    left = unfinished_problems(rows)
    assert left["loma"] == {"problems": 1, "rows": {"skipped": 1},
                            "reason": "search skipped: 360 orderings, more than max_orderings 100"}
    assert left["random"] == {"problems": 1, "rows": {"infeasible": 1, "error": 1},
                              "reason": "no mapping fits the buffers"}
    page = Page("t")
    add_comparison(page, {}, rows)
    html = "\n".join(page.blocks)
    assert "random: 1 problem(s); rows 1 infeasible, 1 error; first reason: no mapping fits the buffers" in html
    assert "no layer has a finished row" in html


def test_summary_lists_what_did_not_finish_by_status():
    rep = {"campaign": "c", "directory": "d", "rows": {"ok": 5, "error": 1, "infeasible": 2},
           "failures": {"rows": 3, "tasks": 2, "more_groups": 0, "groups": [
               {"status": "infeasible", "mapper": "cosa", "network": "n", "layer": "conv1", "rows": 2,
                "error": "MIP <empty>"},
               {"status": "error", "mapper": "loma", "network": None, "layer": None, "rows": 1, "error": "boom"}]},
           "errors": [{"task_id": 7, "error": "boom"}]}
    page = Page("t")
    page.summary(rep)
    html = "\n".join(page.blocks)
    assert "3 of 8 rows did not finish (1 error, 2 infeasible; 2 task(s))" in html
    assert "<li>infeasible: cosa / n / conv1: 2 row(s): MIP &lt;empty&gt;</li>" in html
    assert "<li>error: loma: 1 row(s): boom</li>" in html


# -- in a browser: zooming re-ticks a log axis -------------------------------------------------------

_ZOOM = """
window.sweepAfterDraw = function () {
  var gd = document.getElementById(SWEEP_DATA.fig), out = document.getElementById("ticks"), seen = [];
  function grab() { seen.push((gd.layout.yaxis.ticktext || ["auto:" + gd.layout.yaxis.tickmode]).join("|")); }
  var steps = SWEEP_DATA.ranges.map(function (r) {
    return function () { return Plotly.relayout(gd, {"yaxis.range": r}); };
  });
  (function next(i) {
    if (i > 0) { grab(); }
    if (i === steps.length) { out.textContent = JSON.stringify(seen); out.dataset.done = "1"; return; }
    steps[i]().then(function () { setTimeout(function () { next(i + 1); }, 50); });
  })(0);
};
"""


@pytest.mark.slow
def test_zoom_picks_round_ticks_of_the_new_range_in_a_browser(tmp_path):
    import plotly.graph_objects as go

    from sweep.reports.html import write_page
    from test_html_browser import browse, console_errors

    fig = go.Figure(go.Scatter(x=list(range(5)), y=[2e7, 5e7, 1e8, 1e9, 3e10], mode="markers"))
    log_axis(fig, "y", "pJ")
    initial = list(fig.layout.yaxis.ticktext)
    page = Page("zoom")
    fid = page.figure(fig, "zoom")
    page.pre("", "ticks")
    # zoom to 1e8..1e9 pJ, to within a few percent (no round set: Plotly's own), back to the start
    page.data.update(fig=fid, ranges=[[8, 9], [8.0, 8.01], list(fig.layout.yaxis.range)])
    page.script = _ZOOM
    out = write_page(page, tmp_path / "zoom.html")
    res = browse(out, tmp_path, "--dump-dom")
    assert not console_errors(res.stderr)
    m = re.search(r'<pre id="ticks"[^>]*>([^<]*)</pre>', res.stdout)
    zoomed, deep, back = json.loads(m.group(1))
    assert zoomed.split("|") == ["100 uJ", "300 uJ", "1 mJ"]
    assert deep == "auto:auto"
    assert back.split("|") == initial


@pytest.mark.slow
def test_the_gaps_draw_no_marker_in_a_browser(skipped, tmp_path):
    """A None value is a break in the line, not a point: the browser draws the results only."""
    from test_html import figures, markers
    from test_html_browser import browse, console_errors, status

    _, page = skipped
    out = tmp_path / "report.html"
    out.write_text(page, encoding="utf-8")
    res = browse(out, tmp_path, "--dump-dom")
    assert not console_errors(res.stderr)
    s = status(res.stdout)
    assert s["done"] == "1" and s["errors"] == "0"
    assert int(s["points"]) == markers(figures(page)) == 2 * 2 + 2 * 1     # random on 2 layers, loma on 1
