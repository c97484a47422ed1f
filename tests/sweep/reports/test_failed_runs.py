"""`sweep report` of a partly or wholly failed run, for every kind (issue 23, defect 1): exit 0, no
traceback, how many rows failed and the first error per mapper and layer, and the rest reported.

Runs fail by a mapper's `run` raising (in-process executor), or, for a task that fails as a whole
(the rows of `sweep.engine.tasks.error_table`: no value column at all, as in a campaign whose seed
overflowed the Parquet column), by the layer task itself raising. Every count below is from the
campaign's shape, by hand.
"""

import json
import re

import pytest
from typer.testing import CliRunner

from campaign_util import write_tiny
from mappers import get_mapper
from paths import DATA
from sweep.cli import app
from sweep.engine.runner import run_campaign
from sweep.kinds import load_campaign

runner = CliRunner()
BOOM = "RuntimeError: boom in the mapper"

LOOPS = """
name = "failing_loops"
networks = [{{ file = "{net}" }}]
objectives = ["energy"]
seeds = [0]
[architectures]
kind = "loopnest"
presets = ["eyeriss_like"]
[[mappers]]
name = "random"
params = {{ patience = 20 }}
[[mappers]]
name = "loma"
"""

NPU = """
name = "failing_npu"
networks = [{{ file = "{net}" }}]
objectives = ["latency_bytes"]
[architectures]
kind = "npu"
presets = ["arch1"]
[[mappers]]
name = "flexer"
params = {{ min_channels = 4, min_spatial = 7 }}
[[mappers]]
name = "static"
params = {{ min_channels = 4, min_spatial = 7, dataflows = ["oy-ox-c-k"] }}
[report]
baseline = "static"
"""

SEARCH = """
name = "failing_search"
networks = [{{ file = "{net}" }}]
objectives = ["edp"]
seeds = [3]
[architectures]
kind = "loopnest"
template = "eyeriss_like"
[architectures.grid]
memory.sram_1M.size_kib = [256, 1024]
array.D1 = [7, 14]
array.D2 = [6, 12]
constraints = ["array.D1 * array.D2 <= 84 or memory.sram_1M.size_kib == 1024"]
[[mappers]]
name = "salsa"
params = {{ chains = 1, iterations = 30, descent = false }}
"""


def _fail(monkeypatch, mapper: str, when=lambda problem, unit: True) -> None:
    """Make ``mapper``'s `run` raise `BOOM` for the units ``when`` picks."""
    cls = type(get_mapper(mapper))
    orig = cls.run

    def run(self, problem, unit, params):
        if when(problem, unit):
            raise RuntimeError(BOOM.split(": ", 1)[1])
        return orig(self, problem, unit, params)
    monkeypatch.setattr(cls, "run", run)


def _run(tmp_path, text: str) -> str:
    p = tmp_path / "c.toml"
    p.write_text(text.format(net=(DATA / "tiny_net.csv").as_posix()))
    c = load_campaign(p, output=tmp_path / "out")
    s = run_campaign(c, executor="local")
    assert s.tasks_failed > 0
    return str(c.output)


def _report(out: str) -> tuple[str, dict]:
    """The text report (one line per message, whitespace squeezed) and the JSON report."""
    res = runner.invoke(app, ["report", out])
    assert res.exit_code == 0, (res.output, res.exception)
    assert "Traceback" not in res.output and "KeyError" not in res.output
    js = runner.invoke(app, ["report", out, "--json"])
    assert js.exit_code == 0, js.output
    return re.sub(r"[ \t]+", " ", res.output), json.loads(js.output)


def test_loopnest_one_mapper_failed(tmp_path, monkeypatch):
    """random fails on both layers of tiny_net (1 unit each: 2 rows); loma's 2 rows are reported."""
    _fail(monkeypatch, "random")
    text, rep = _report(_run(tmp_path, LOOPS))
    assert rep["rows"] == {"ok": 2, "error": 2}
    f = rep["failures"]
    assert f["rows"] == 2
    assert [(g["mapper"], g["network"], g["layer"], g["rows"], g["error"]) for g in f["groups"]] == [
        ("random", "tiny_net", "conv_a", 1, BOOM), ("random", "tiny_net", "conv_b", 1, BOOM)]
    assert "2 of 4 rows failed" in text
    assert f"random / tiny_net / conv_a: 1 row(s): {BOOM}" in text
    assert "rows: 2 ok, 2 error" in text                  # not {'ok': 2, 'error': 2}
    assert "left out of the tables" in text and "2 problem(s) of random" in text
    assert [r["label"] for r in rep["layers"]] == ["loma", "loma"]
    assert rep["unreported"] == {"random": 2}
    assert re.search(r"conv_a .*\d+(\.\d+)? (pJ|nJ|uJ) / \d+\.\d\ds", text)   # loma's row in the table


def test_loopnest_every_task_failed_as_a_whole(tmp_path, monkeypatch):
    """Whole tasks fail (rows without any figure column): the report crashed with KeyError 'value'."""
    import sweep.engine.layer_tasks as lt

    def overflow(task):
        raise OverflowError("Python int too large to convert to C long")
    monkeypatch.setattr(lt, "execute_layers", overflow)
    out = _run(tmp_path, LOOPS)
    text, rep = _report(out)
    tasks = rep["tasks_expected"]
    units = rep["rows"]["error"]   # one row per unit of each failed task, naming its problem
    assert list(rep["rows"]) == ["error"] and units >= tasks and rep["failures"]["rows"] == units
    assert rep["failures"]["tasks"] == tasks
    assert {g["mapper"] for g in rep["failures"]["groups"]} == {"random", "loma"}   # the units' mappers
    assert rep["failures"]["groups"][0]["error"] == "OverflowError: Python int too large to convert to C long"
    assert "every row failed" in text and "no per-layer table" in text
    assert rep["layers"] == []


def test_npu_mapper_failed(tmp_path, monkeypatch):
    """flexer fails on both layers: static's table is reported, the comparison says why it is missing."""
    _fail(monkeypatch, "flexer")
    text, rep = _report(_run(tmp_path, NPU))
    assert rep["failures"]["rows"] == rep["rows"]["error"] > 0
    assert {g["mapper"] for g in rep["failures"]["groups"]} == {"flexer"}
    assert {g["layer"] for g in rep["failures"]["groups"]} == {"conv_a", "conv_b"}
    assert rep["npu_layers"] == [] and "no flexer vs static comparison" in text
    assert {r["label"].split("(")[0] for r in rep["layers"]} == {"static"}


def test_npu_every_task_failed_as_a_whole(tmp_path, monkeypatch):
    import sweep.engine.layer_tasks as lt
    monkeypatch.setattr(lt, "execute_layers", lambda task: 1 / 0)
    text, rep = _report(_run(tmp_path, NPU))
    assert "every row failed" in text and "ZeroDivisionError: division by zero" in text


@pytest.mark.parametrize("fail_start, failed_tasks", [(16, 1), (None, 9)])
def test_systolic_failed_tasks(tmp_path, monkeypatch, fail_start, failed_tasks):
    """The tiny DeepOpt campaign: 9 tasks of 8 points; one failing chunk (start 16) or all."""
    _fail(monkeypatch, "deepopt", lambda problem, unit: fail_start is None or unit.spec["start"] == fail_start)
    out = str(load_campaign(write_tiny(tmp_path)).output)
    s = run_campaign(load_campaign(write_tiny(tmp_path)), executor="local")
    assert s.tasks_failed == failed_tasks
    text, rep = _report(out)
    assert rep["failures"] == {"rows": failed_tasks, "tasks": failed_tasks, "more_groups": 0,
                               "groups": [{"status": "error", "mapper": "deepopt", "network": None, "layer": None,
                                           "rows": failed_tasks, "error": BOOM}]}
    assert f"deepopt: {failed_tasks} row(s): {BOOM}" in text
    if fail_start is None:
        assert "every row failed" in text and "optimal" not in rep
    else:  # 8 of 72 points x 2 networks x 3 PMs = 48 rows lost, the rest reported
        assert rep["rows"]["ok"] == (72 - 8) * 2 * 3 and len(rep["optimal"]) == 6


def test_archsearch_designs_failed(tmp_path, monkeypatch):
    """7 valid designs (3 at 256 KiB: 7x6, 7x12, 14x6; 4 at 1024 KiB); those with D1 = 7 (4 designs)
    fail on both tiny_net layers: 8 failed layer rows, 3 designs on the fronts."""
    _fail(monkeypatch, "salsa", lambda problem, unit: problem.arch.array["D1"] == 7)
    text, rep = _report(_run(tmp_path, SEARCH))
    f = rep["failures"]
    assert f["rows"] == 8 and rep["rows"] == {"ok": 6, "error": 8}
    assert {(g["mapper"], g["network"], g["layer"], g["rows"]) for g in f["groups"]} == {
        ("salsa", "tiny_net", "conv_a", 4), ("salsa", "tiny_net", "conv_b", 4)}
    assert rep["design_rows"] == {"ok": 3, "error": 4}
    assert rep["networks"]["tiny_net"]["designs"] == 3
    assert "8 of 14 rows failed" in text and f"salsa / tiny_net / conv_a: 4 row(s): {BOOM}" in text


def test_archsearch_every_design_failed(tmp_path, monkeypatch):
    _fail(monkeypatch, "salsa")
    text, rep = _report(_run(tmp_path, SEARCH))
    assert rep["rows"] == {"error": 14} and rep["design_rows"] == {"error": 7}
    assert rep["networks"] == {} and rep["designs"] == []
    assert "every row failed" in text and "no design finished" in text
