"""A campaign of LLM steps reports as one (issue 43, item 8): its HTML is titled for LLM steps, not
"loop-nest mappers compared", and a one-mapper campaign is not told it lacks a baseline."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from sweep.cli import app
from sweep.engine.runner import run_campaign
from sweep.kinds.load import load_campaign

CAMPAIGN = """name = "llm_labels"
networks = [{ model = "gpt2", phase = "decode", batch = 1, context = 64, fusion = "fused" }]
objectives = ["latency"]
[architectures]
kind = "loopnest"
presets = ["llm_ws"]
[[mappers]]
name = "loma"
params = { lpf_limit = 3 }
"""


def test_an_llm_step_campaign_reads_as_one(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text(CAMPAIGN)
    run_campaign(load_campaign(p, output=tmp_path / "out"), executor="local")
    r = CliRunner().invoke(app, ["report", str(tmp_path / "out"), "--html", str(tmp_path / "r.html")])
    assert r.exit_code == 0, r.output
    assert "LLM steps" in r.output
    assert "no ratios to a baseline" not in r.output       # one mapper: nothing to compare
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<title>llm_labels: LLM steps mapped</title>" in page
    assert "loop-nest mappers compared" not in page
    # the step table names each step's phase, batch and context (issue 43, item 8)
    assert '"header":{"values":["step","phase","batch","seq / context",' in page
    assert '["decode"],["1"],["64"]' in page


def test_a_step_line_gives_the_clock_with_the_time_not_the_energy():
    r = CliRunner().invoke(app, ["map", "--network", "gpt2", "--phase", "decode", "--context", "64",
                                 "--arch", "llm_ws", "--mapper", "loma", "--param", "lpf_limit=3"])
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.startswith("decode at batch 1, context 64"))
    assert " at 1000 MHz; " in line and " per token; precisions" in line and "per token at" not in line


def test_each_step_is_reported_under_its_own_label_and_the_aggregates_say_which_steps():
    """Issue 43, item 3: a phase figure is a geometric mean over that phase's steps (the serving
    mix's too, batches unweighted); the report lists them and gives each step's own figure on the
    best designs. Hand case: prefill steps of 0.5 s (batch 1) and 8 s (the mix's batch 16): their
    TTFT geomean 2 s is neither; the per-step table keeps 0.5 s and 8 s apart."""
    import pandas as pd
    from rich.console import Console

    from sweep.reports.llm import design_figures, print_llm_designs, step_aggregates, step_figures
    rows = []
    for did, f in (("A", 1.0), ("B", 1.5)):
        rows += [{"design_id": did, "network": "m/prefill/b1/seq2048", "phase": "prefill", "status": "ok",
                  "ttft_s": 0.5 * f, "time_per_token_s": None, "tokens_per_s": None, "energy_per_token_j": None,
                  "batch": 1, "seq": 2048, "context": None, "area_mm2": 10.0},
                 {"design_id": did, "network": "m/prefill/b16/seq2048", "phase": "prefill", "status": "ok",
                  "ttft_s": 8.0 * f, "time_per_token_s": None, "tokens_per_s": None, "energy_per_token_j": None,
                  "batch": 16, "seq": 2048, "context": None, "area_mm2": 10.0}]
    t = pd.DataFrame(rows)
    assert design_figures(t, []).set_index("design_id")["ttft_s"]["A"] == pytest.approx(2.0)
    agg = step_aggregates(t)
    assert agg["ttft_s"]["steps"] == ["m/prefill/b1/seq2048", "m/prefill/b16/seq2048"]
    assert "geometric mean over 2 prefill step(s)" in agg["ttft_s"]["how"]
    steps = {s["step"]: s for s in step_figures(t, ["A", "B"])}
    assert steps["m/prefill/b1/seq2048"]["values"] == {"A": 0.5, "B": 0.75}
    assert steps["m/prefill/b16/seq2048"]["batch"] == 16
    console = Console(record=True, width=220)
    print_llm_designs({"llm": {"best": [{"for": "prefill", "design_id": "A", "area_mm2": 10.0, "ttft_s": 2.0}],
                               "aggregates": agg, "steps": list(steps.values())}, "params": []}, console)
    text = console.export_text()
    assert "ttft_s: geometric mean over 2 prefill step(s)" in text
    assert "500.0 ms" in text and "8.000 s" in text and "Each step on the best designs" in text
