"""`sweep report DIR --html FILE`: the interactive page of each campaign kind, from tiny runs, read
back from the file (the figures' JSON): self-contained, the expected markers, the hover text and
commands of an architecture search's designs, its per-layer energy by memory level adding up to
the stored totals, and the exit 2 without Plotly. `test_html_browser.py` renders the pages."""

from __future__ import annotations

import builtins
import json
import re
import shlex
import sys
from pathlib import Path

import numpy as np
import plotly  # noqa: F401 - the `html` extra, part of `test`: missing, these tests fail, not skip
import pytest
from typer.testing import CliRunner

from campaign_util import write_tiny
from paths import DATA
from sweep.cli import app
from sweep.engine.runner import run_campaign
from sweep.engine.store import Store
from sweep.kinds import build_report, load_campaign
from tune_util import write_tune


TINY_NET = DATA / "tiny_net.csv"
runner = CliRunner()

#: tiny_net and alexnet on eyeriss_like: D1 in {7, 14} x 1 MiB buffer in {256, 1024} KiB x dataflow
#: in {ws (a fixed unrolling), rs (a hint, searched)}: 8 designs.
ARCHSEARCH = """
name = "as_html"
networks = [{{file = "{net}"}}, "alexnet"]
objectives = ["edp"]
seeds = [3]
[architectures]
kind = "loopnest"
template = "eyeriss_like"
[architectures.grid]
array.D1 = [7, 14]
memory.sram_1M.size_kib = [256, 1024]
dataflow = ["ws", "rs"]
[architectures.dataflows.ws]
spatial = {{ D1 = [["C", 4]], D2 = [["K", 8]] }}
[architectures.dataflows.rs]
spatial_hint = {{ D1 = ["OY"], D2 = ["FY", "K", "C"], max_dims = {{ D2 = 2 }} }}
[[mappers]]
name = "salsa"
params = {{ chains = 1, iterations = 60, descent = false }}
[run]
designs_per_task = 4
"""
LOOPNEST = """
name = "ln_html"
networks = [{{file = "{net}"}}]
objectives = ["energy"]
seeds = [0]
[architectures]
kind = "loopnest"
presets = ["eyeriss_like"]
[[mappers]]
name = "loma"
params = {{ lpf_limit = 3 }}
[[mappers]]
name = "random"
params = {{ patience = 50 }}
[report]
baseline = "random"
"""
NPU = """
name = "npu_html"
networks = [{{file = "{net}"}}]
objectives = ["latency_bytes"]
[architectures]
kind = "npu"
presets = ["arch5"]
[[mappers]]
name = "flexer"
params = {{ min_spatial = 7, min_channels = 4, max_ops = 256 }}
[[mappers]]
name = "static"
params = {{ min_spatial = 7, min_channels = 4, max_ops = 256 }}
"""


def run_text(tmp: Path, text: str) -> Path:
    """Run the campaign ``text`` (``{net}``: tiny_net's file) in-process; its result directory."""
    p = tmp / "c.toml"
    p.write_text(text.format(net=TINY_NET.as_posix()))
    c = load_campaign(p, output=tmp / "out")
    run_campaign(c, executor="local")
    return tmp / "out"


def run_kind(kind: str, tmp: Path) -> Path:
    """A finished tiny result directory of ``kind`` in ``tmp``."""
    if kind == "tune":
        from sweep.config.tune_campaign import load_tune_campaign
        from sweep.tune.driver import run_tune
        run_tune(load_tune_campaign(write_tune(tmp, tmp / "out", trials=4)), executor="local")
        return tmp / "out"
    if kind == "systolic":
        c = load_campaign(write_tiny(tmp))
        run_campaign(c, executor="local")
        return c.output
    return run_text(tmp, {"archsearch": ARCHSEARCH, "loopnest": LOOPNEST, "npu": NPU}[kind])


def write_html(directory: Path, out: Path) -> str:
    """`sweep report DIR --html OUT` through the CLI; the page's text."""
    res = runner.invoke(app, ["report", str(directory), "--html", str(out)])
    assert res.exit_code == 0, res.output
    assert f"interactive report: {out}" in res.output
    return out.read_text(encoding="utf-8")


def figures(page: str) -> list[dict]:
    """The figures embedded in a page, as written (id and Plotly JSON)."""
    m = re.search(r'<script type="application/json" id="sweep-figures">(.*?)</script>', page, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def page_data(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="sweep-data">(.*?)</script>', page, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def markers(figs: list[dict]) -> int:
    """Scatter markers in ``figs``: the points a browser draws as ``.scatterlayer .point`` (a
    None y is a gap in a mapper's line, no marker)."""
    return sum(sum(y is not None for y in t["y"]) for f in figs for t in f["figure"]["data"]
               if t.get("type") == "scatter" and "markers" in t.get("mode", "markers"))


KINDS = ("archsearch", "loopnest", "npu", "systolic", "tune")
#: Kinds whose page is tested beside the kind (a tiny run of them maps a cost table first).
PAGES_ELSEWHERE = {"serving": "tests/sweep/test_serving_campaign.py"}


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """kind -> (result directory, page text) for every kind, built once."""
    out = {}
    for kind in KINDS:
        tmp = tmp_path_factory.mktemp(kind)
        d = run_kind(kind, tmp)
        out[kind] = (d, write_html(d, tmp / "report.html"))
    return out


def expected_markers(kind: str, directory: Path) -> int:
    """The markers each page draws, counted from the stored rows (module docstrings of the pages)."""
    rows = Store(directory).read("rows")
    if kind == "archsearch":          # every (design, network) with finished totals, in 2 panels
        t = Store(directory).read("totals")
        return 2 * int(((t["status"] == "ok") & np.isfinite(t["edp"])).sum())
    if kind == "loopnest":            # tiny_net: 2 unique layers x 2 mappers, value and time panels
        return 2 * 2 * 2
    if kind == "npu":                 # the same, then per layer speed-up and data reduction on arch5
        return 2 * 2 * 2 + 2 * 2
    if kind == "systolic":            # per PM and network: every point + the optimum; E vs D: every point
        ok = rows[(rows["status"] == "ok") & np.isfinite(rows["pm_value"])]
        per = ok.groupby(["network", "pm"], observed=True).size()
        ed = ok[ok["pm"] == "ED"].groupby("network", observed=True).size()
        return int((per + 1).sum() + ed.sum())
    return int((rows["state"] == "COMPLETE").sum())   # tune: one marker per complete trial


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_writes_a_self_contained_page(pages, kind):
    directory, page = pages[kind]
    assert page.startswith("<!DOCTYPE html>") and 'id="render-status"' in page
    # plotly.js inline, nothing loaded from elsewhere: no <script src=...>, no CDN, no <link>
    assert not re.search(r"<script[^>]*\ssrc=", page) and "cdn.plot.ly" not in page.split("<body>")[1]
    assert "<link" not in page.split("</head>")[0]
    assert "Plotly.newPlot" in page and len(page) > 3_000_000   # plotly.js itself is ~4.8 MB
    figs = figures(page)
    assert figs and all(f"id=\"{f['id']}\"" in page for f in figs)
    assert markers(figs) == expected_markers(kind, directory) > 0


def test_archsearch_hover_and_commands_of_every_design(pages):
    directory, page = pages["archsearch"]
    t = Store(directory).read("totals")
    data = page_data(page)["networks"]
    assert set(data) == {"tiny_net", "alexnet"}
    fig = figures(page)[0]["figure"]
    ids = [i for tr in fig["data"] if tr.get("mode") == "markers" and tr["xaxis"] == "x" for i in tr["customdata"]]
    assert sorted(ids) == sorted(t[t["network"] == "tiny_net"]["design_id"])    # one marker per design
    # dataflow colours: one trace per dataflow in each panel, 4 designs each
    names = [tr["name"] for tr in fig["data"] if tr.get("mode") == "markers"]
    assert names == ["dataflow rs (4)"] * 2 + ["dataflow ws (4)"] * 2
    for net, n in data.items():
        for r in t[t["network"] == net].itertuples():
            text = n["details"][r.design_id]
            assert text.startswith(f"design {r.design_id}\n") and f"dataflow = {r.dataflow}" in text
            # the figures, in engineering units (4 significant digits)
            area, edp = re.search(r"area ([\d.]+) mm\^2, EDP ([\d.e+]+) pJ\*cycles", text).groups()
            assert float(area) == pytest.approx(r.area_mm2, rel=1e-3) and float(edp) == pytest.approx(r.edp, rel=1e-3)
            e, e_unit, lat, lat_unit = re.search(r"energy ([\d.]+) (pJ|nJ|uJ|mJ), latency ([\d.]+) (k|M|)cycles",
                                                 text).groups()
            assert float(e) * {"pJ": 1, "nJ": 1e3, "uJ": 1e6, "mJ": 1e9}[e_unit] == pytest.approx(r.energy_pj, rel=1e-3)
            assert float(lat) * {"k": 1e3, "M": 1e6, "": 1}[lat_unit] == pytest.approx(r.latency_cycles, rel=1e-3)
            assert e_unit == ("mJ" if net == "alexnet" else "uJ")       # alexnet ~12 mJ, tiny_net ~1 uJ
            command = text.split("command: ", 1)[1]
            assert command.startswith("sweep map --network ") and f"--seed {r.seed}" in command
            arch = shlex.split(command)[shlex.split(command).index("--arch") + 1]
            assert Path(arch) == (directory / "designs" / f"{r.design_id}.toml").resolve() and Path(arch).exists()


def test_archsearch_command_of_a_design_on_no_front_reproduces_its_totals(pages):
    """`sweep report` writes design files of the front designs only; the page's command of any
    other design works too (its file written by --html), giving the stored totals."""
    directory, page = pages["archsearch"]
    data = page_data(page)["networks"]["tiny_net"]
    written = {d["design_id"] for d in build_report(directory)["designs"]}   # what `sweep report` writes
    off = [d for d in data["details"] if d not in written]
    assert off and all("Pareto front" not in data["details"][d] for d in off)
    t = Store(directory).read("totals").set_index(["design_id", "network"])
    command = data["details"][off[0]].split("command: ", 1)[1]
    args = shlex.split(command)
    assert "written by `sweep report --html`" in Path(args[args.index("--arch") + 1]).read_text()
    res = runner.invoke(app, args[1:] + ["--json"])
    assert res.exit_code == 0, res.output
    total = json.loads(res.stdout)["total"]
    assert total["energy_pj"] == t.loc[(off[0], "tiny_net"), "energy_pj"]
    assert total["latency_cycles"] == t.loc[(off[0], "tiny_net"), "latency_cycles"]


def test_archsearch_energy_by_level_adds_up_to_the_stored_figures(pages):
    directory, page = pages["archsearch"]
    data = page_data(page)["networks"]
    rows, archs = Store(directory).read("rows"), Store(directory).read("archs")
    mac_pj = {r.design_id: json.loads(r.arch)["mac_pj"] for r in archs.itertuples()}
    t = Store(directory).read("totals").set_index(["design_id", "network"])
    bd = figures(page)[1]["figure"]
    levels = [tr["name"] for tr in bd["data"]]
    assert levels[-1] == "MAC" and {"dram", "sram_1M", "rf_16B"} <= set(levels)   # eyeriss_like's memories
    for net, n in data.items():
        for did, bars in n["designs"].items():
            # the bars of a design add up to its stored network energy (pJ; 7 significant digits)
            assert sum(map(sum, bars)) == pytest.approx(t.loc[(did, net), "energy_pj"], rel=1e-6)
            per_layer = rows[(rows["design_id"] == did) & (rows["network"] == net)].sort_values("layer_index")
            for li, r in enumerate(per_layer.itertuples()):
                assert sum(b[li] for b in bars) == pytest.approx(r.energy_pj * r.repeat, rel=1e-6)
    # by hand: tiny_net conv_a has 8*4*14*14*3*3 = 56,448 MACs, once; eyeriss_like's MAC is 0.5 pJ
    did = next(iter(data["tiny_net"]["designs"]))
    assert data["tiny_net"]["designs"][did][levels.index("MAC")][0] == pytest.approx(56_448 * mac_pj[did])
    assert mac_pj[did] == 0.5


def test_a_mapping_that_does_not_recost_keeps_its_energy_whole(pages):
    """A row whose stored loops do not give its stored cost (here: loops removed) is one bar
    "not split by level" of its stored energy, not a wrong split."""
    from sweep.reports.html.breakdown import UNSPLIT, level_breakdown

    directory, _ = pages["archsearch"]
    s = Store(directory)
    rows = s.read("rows")
    r0 = rows.index[(rows["network"] == "tiny_net") & (rows["layer_index"] == 1)][0]
    did = rows.loc[r0, "design_id"]
    rows.loc[r0, "loops"] = None
    bd = level_breakdown(rows, s.read("archs"), s.manifest())["tiny_net"]
    assert bd["unsplit"] == 1 and bd["levels"][-1] == UNSPLIT
    bars = bd["designs"][did]
    assert [b[1] for b in bars[:-1]] == [0.0] * (len(bars) - 1)        # conv_b: nothing split ...
    assert bars[-1][1] == pytest.approx(rows.loc[r0, "energy_pj"] * 2, rel=1e-6)   # ... its energy x 2 repeats
    assert bars[-1][0] == 0.0                                           # conv_a still split


def test_loopnest_mapper_keeps_one_colour_in_both_panels(pages):
    """Plotly gives each new trace the next colour: without one colour per mapper, a mapper's
    search-time line had another mapper's colour."""
    fig = figures(pages["loopnest"][1])[0]["figure"]
    by_name = {}
    for tr in fig["data"]:
        by_name.setdefault(tr["name"], set()).add(tr["line"]["color"])
    assert len(by_name) == 2 and all(len(c) == 1 for c in by_name.values())
    assert len(set().union(*by_name.values())) == 2


def test_npu_gantt_draws_every_entry_of_the_rebuilt_schedule(pages):
    directory, page = pages["npu"]
    gantt = figures(page)[-1]["figure"]
    kinds = {tr["name"]: len(tr["x"]) for tr in gantt["data"]}
    assert {"tCONV", "load", "writeback"} <= set(kinds)
    # cores: every tCONV on a core row; the DRAM channel holds the transfers
    assert all(y.startswith("core") for tr in gantt["data"] if tr["name"] == "tCONV" for y in tr["y"])
    assert all(y == "dram" for tr in gantt["data"] if tr["name"] != "tCONV" for y in tr["y"])
    assert all(w > 0 for tr in gantt["data"] for w in tr["x"])


def test_systolic_large_panel_draws_density_and_its_front(monkeypatch):
    """Above ALL_POINTS a panel shows a density map and only the Pareto-front points as markers
    (checked against a brute-force dominance count)."""
    import plotly.graph_objects as go
    import pandas as pd
    from plotly.subplots import make_subplots

    from sweep.reports.html import systolic

    monkeypatch.setattr(systolic, "ALL_POINTS", 10)
    rng = np.random.default_rng(0)
    x, y = rng.uniform(1, 16, 200), rng.uniform(1, 30, 200)
    g = pd.DataFrame({"J": 16, "K": 16, "fsram_kib": 16, "isram_kib": 16, "psram_kib": 8, "area_mm2": x,
                      "pm_value": y, "energy_pj": 1e6, "cycles": 1e6})
    front = sum(not any((x <= x[i]) & (y <= y[i]) & ((x < x[i]) | (y < y[i]))) for i in range(200))
    fig = make_subplots(1, 1)
    assert systolic.add_cloud(fig, g, x, y, "E", 1, "front", True) == front
    assert isinstance(fig.data[0], go.Heatmap) and sum(v for row in fig.data[0].z for v in row if v == v) == 200
    assert len(fig.data[1].x) == front


def test_without_plotly_html_exits_2_and_writes_nothing(pages, tmp_path, monkeypatch):
    directory, _ = pages["loopnest"]
    real = builtins.__import__

    def no_plotly(name, *a, **kw):
        if name == "plotly" or name.startswith("plotly."):
            raise ImportError(f"No module named {name!r}")
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_plotly)
    for m in [m for m in sys.modules if m == "plotly" or m.startswith("plotly.")]:
        monkeypatch.delitem(sys.modules, m)
    out = tmp_path / "r" / "report.html"
    res = runner.invoke(app, ["report", str(directory), "--html", str(out), "--plots", str(tmp_path / "p")])
    assert res.exit_code == 2
    assert 'error: --html needs Plotly: pip install -e ".[html]"' in res.output
    assert "Traceback" not in res.output
    assert not (tmp_path / "r").exists() and not (tmp_path / "p").exists()


def test_html_into_a_directory_exits_2(pages, tmp_path):
    directory, _ = pages["loopnest"]
    res = runner.invoke(app, ["report", str(directory), "--html", str(tmp_path)])
    assert res.exit_code == 2 and f"--html {tmp_path}: is a directory" in res.output


def test_json_stays_one_document_with_html(pages, tmp_path):
    directory, _ = pages["loopnest"]
    res = runner.invoke(app, ["report", str(directory), "--json", "--html", str(tmp_path / "r.html")])
    assert res.exit_code == 0
    assert json.loads(res.stdout)["campaign"] == "ln_html" and (tmp_path / "r.html").exists()
    assert "interactive report:" in res.stderr


def test_every_kind_names_its_page_builder():
    import importlib

    from sweep.kinds.registry import KINDS as REGISTRY
    assert set(REGISTRY) == set(KINDS) | set(PAGES_ELSEWHERE)
    for kind in REGISTRY.values():
        assert callable(importlib.import_module(kind.html_module).build)


def test_a_kind_without_a_page_exits_2(pages, tmp_path, monkeypatch):
    from sweep.kinds.registry import KINDS as REGISTRY

    directory, _ = pages["loopnest"]
    monkeypatch.setattr(REGISTRY["loopnest"], "html_module", "")
    res = runner.invoke(app, ["report", str(directory), "--html", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and "has no interactive report of loopnest results" in res.output
    assert not (tmp_path / "r.html").exists()
