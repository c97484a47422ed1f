"""A campaign of LLM steps reports as one (issue 43, item 8): its HTML is titled for LLM steps, not
"loop-nest mappers compared", and a one-mapper campaign is not told it lacks a baseline."""

from __future__ import annotations

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


def test_a_step_line_gives_the_clock_with_the_time_not_the_energy():
    r = CliRunner().invoke(app, ["map", "--network", "gpt2", "--phase", "decode", "--context", "64",
                                 "--arch", "llm_ws", "--mapper", "loma", "--param", "lpf_limit=3"])
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.startswith("decode at batch 1, context 64"))
    assert " at 1000 MHz; " in line and " per token; precisions" in line and "per token at" not in line
