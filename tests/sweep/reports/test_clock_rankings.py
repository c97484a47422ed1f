"""An architecture search whose designs differ in clock ranks them in seconds and J x s (issue 43,
item 1): a cycle of a 1,400 MHz design is half a 700 MHz one's, so cycles and pJ x cycles would
rank the slower design first. Hand case: design A at 700 MHz takes 1,855,000 cycles (2.65 ms),
design B at 1,400 MHz 3,472,000 cycles (2.48 ms), both 10 mJ and 50 mm^2: B is faster (in
seconds) and its EDP lower (10 mJ x 2.48 ms = 2.48e-5 J*s against 2.65e-5), though its cycles
are 1.87x A's."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from rich.console import Console

from sweep.reports.archsearch import _show_network, design_table, network_report
from sweep.reports.designs import time_basis


def _totals(clocks=(700.0, 1400.0), cycles=(1_855_000.0, 3_472_000.0)) -> pd.DataFrame:
    rows = []
    for did, mhz, cyc in zip(("A", "B"), clocks, cycles):
        rows.append({"design_id": did, "network": "llama3_8b/decode/b1/ctx4096", "status": "ok", "clock_mhz": mhz,
                     "energy_pj": 1e10, "latency_cycles": cyc, "edp": 1e10 * cyc, "area_mm2": 50.0})
    return pd.DataFrame(rows)


def test_designs_of_different_clocks_rank_in_seconds():
    df = design_table(_totals())
    assert time_basis(df) == "s"
    assert df.set_index("design_id")["latency_s"].to_dict() == pytest.approx({"A": 2.65e-3, "B": 2.48e-3})
    assert df.set_index("design_id")["edp_js"].to_dict() == pytest.approx({"A": 2.65e-5, "B": 2.48e-5})
    rep = network_report(df, ["clock_mhz"], objective="edp")
    assert [r["design_id"] for r in rep["pareto_area_edp"]] == ["B"]
    assert [r["design_id"] for r in rep["pareto_energy_latency"]] == ["B"]
    assert [r["design_id"] for r in rep["top"]] == ["B", "A"]
    assert rep["best_per_budget"][-1]["design_id"] == "B"
    effects = {r["value"]: r for r in rep["parameter_effects"]["clock_mhz"]}
    assert effects[1400.0]["best_vs_best"] == 1.0 and effects[700.0]["best_vs_best"] == pytest.approx(2.65 / 2.48)
    assert rep["best_edp"] == pytest.approx(2.48e-5)
    # the records keep the cycles beside the seconds
    b = rep["top"][0]
    assert b["latency_cycles"] == 3_472_000 and b["latency_s"] == pytest.approx(2.48e-3)
    console = Console(record=True, width=200)
    _show_network("llama3_8b/decode/b1/ctx4096", rep, ["clock_mhz"], "edp", console, "s")
    text = console.export_text()
    assert "EDP J*s" in text and "EDP in J*s" in text and "2.480 ms" in text and "pJ*cycles" not in text


def test_one_clock_ranks_in_cycles_as_before():
    """Designs of one clock: the same ranking either way; the report stays in cycles and pJ x cycles
    (seconds beside them in the records)."""
    df = design_table(_totals(clocks=(700.0, 700.0), cycles=(3_472_000.0, 1_855_000.0)))
    assert time_basis(df) == "cycles"
    rep = network_report(df, ["clock_mhz"], objective="edp")
    assert [r["design_id"] for r in rep["top"]] == ["B", "A"] and rep["best_edp"] == 1e10 * 1_855_000
    assert rep["top"][0]["latency_s"] == pytest.approx(1_855_000 / 700e6)


def test_the_clock_comes_from_the_archs_table_when_it_is_no_parameter():
    from sweep.reports.archsearch import design_clocks
    archs = pd.DataFrame({"design_id": ["A", "B"], "arch": [json.dumps({"clock_mhz": 700.0}),
                                                           json.dumps({"clock_mhz": 1400.0})]})
    df = design_table(_totals().drop(columns="clock_mhz"), design_clocks(archs))
    assert time_basis(df) == "s" and network_report(df, [])["top"][0]["design_id"] == "B"


def test_the_totals_store_seconds_beside_cycles(tmp_path):
    """A search over the clock (700 and 1,400 MHz on llm_ws, a tiny network): each ok totals row
    has latency_s = latency_cycles / clock and edp_js = energy (J) x latency_s, in the Parquet
    dataset a plain reader gets; the report ranks in seconds."""
    import pyarrow.dataset as ds

    from paths import REPO
    from sweep import api
    net = (REPO / "tests" / "data" / "tiny_net.csv").as_posix()
    camp = tmp_path / "c.toml"
    camp.write_text(f'name = "clk"\noutput = "{(tmp_path / "out").as_posix()}"\nnetworks = [{{file = "{net}"}}]\n'
                    'objectives = ["edp"]\n[architectures]\nkind = "loopnest"\ntemplate = "llm_ws"\n'
                    '[architectures.grid]\nclock_mhz = [700.0, 1400.0]\n"array.D1" = [64, 128]\n'
                    '[[mappers]]\nname = "loma"\nparams = { lpf_limit = 3 }\n[search]\nsampler = "grid"\n')
    run = api.run_campaign(camp, executor="local")
    t = ds.dataset(run.output / "totals").to_table().to_pandas()
    t = t[t["status"] == "ok"]
    assert len(t) == 4
    assert (t["latency_s"] - t["latency_cycles"] / (t["clock_mhz"] * 1e6)).abs().max() < 1e-15
    assert (t["edp_js"] - t["energy_pj"] * 1e-12 * t["latency_s"]).abs().max() < 1e-24
    from sweep.kinds import build_report
    rep = build_report(run.output)
    assert rep["time_basis"] == "s"
