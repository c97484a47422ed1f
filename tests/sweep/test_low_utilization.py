"""`sweep map` says when a mapping keeps few PEs busy (issue 30, item 6): a BERT layer on
eyeriss_like with its fixed row-stationary unrolling busies 4 of 168 PEs (its [spatial] is OX 14 |
FY 3 x K 4, and a matmul has OX = FY = 1: only K's 4 PEs work, 4 / 168 = 2.4%)."""

from __future__ import annotations

from typer.testing import CliRunner

from sweep.cli import app

runner = CliRunner()
BERT_Q = ["map", "--network", "bert_base", "--seq", "128", "--layer", "q_proj", "--arch", "eyeriss_like",
          "--mapper", "loma", "--param", "lpf_limit=6"]


def test_a_fixed_unrolling_that_busies_few_pes_is_named_with_the_fix():
    res = runner.invoke(app, BERT_Q, env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    assert "4.0 PEs on average" in res.output and "2.4%" in res.output  # 4 / 168 by hand
    assert "--param spatial=search" in res.output


def test_searched_unrolling_still_low_says_the_array_is_too_large():
    # under eyeriss_like's hint a matmul can use K x C on D2 (12 PEs) and nothing on D1: 12 / 168 = 7.1%
    res = runner.invoke(app, BERT_Q + ["--param", "spatial=search"], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    assert "12.0 PEs on average" in res.output and "larger than these layers can use" in res.output


def test_no_note_when_the_array_is_busy():
    res = runner.invoke(app, ["map", "--dims", "K=64,C=64,OY=14,OX=14,FY=3,FX=3", "--arch", "eyeriss_like",
                              "--mapper", "loma", "--param", "lpf_limit=5"], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    assert "PEs busy" not in res.output
