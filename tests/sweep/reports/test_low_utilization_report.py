"""`sweep report` and the HTML page say when a best mapping keeps few PEs busy (issue 30, item 6),
as `sweep map` does: a 1x1 layer with OY = OX = 1 on eyeriss_like with its fixed unrolling (OX 14
| FY 3 x K 4) busies only K's 4 PEs, 4 / 168 = 2.4% by hand; searched under the hint (D2: two of
FY, K, C; D1: OX or OY), two of K and C on D2 busy 12 PEs, and 64 / 12 does not divide: the 12-wide
pair (K 4 x C 3, or 3 x 4, 6 x 2, 2 x 6) pads 64 to 66 on the dim split by 3 or 6, so on average
12 x 64 / 66 = 11.64 PEs work."""

from __future__ import annotations

from typer.testing import CliRunner

from sweep.cli import app

runner = CliRunner()

NET = """name,K,C,OY,OX,FY,FX,B,G,SY,SX,PY,PX,kind,repeat
fc,64,64,1,1,1,1,1,1,1,1,0,0,conv,1
conv,64,64,14,14,3,3,1,1,1,1,1,1,conv,1
"""

CAMPAIGN = """
name = "low_util"
output = "{out}"
networks = [{{ file = "{net}" }}]
objectives = ["energy"]
seeds = [0]

[architectures]
kind = "loopnest"
presets = ["eyeriss_like"]

[[mappers]]
name = "salsa"
params = {{ iterations = 100, chains = 1 }}

[[mappers]]
name = "salsa"
params = {{ iterations = 100, chains = 1, spatial = "search" }}
"""


def test_report_names_low_utilization_and_the_fix(tmp_path):
    net = tmp_path / "net.csv"
    net.write_text(NET)
    c = tmp_path / "c.toml"
    c.write_text(CAMPAIGN.format(out=(tmp_path / "out").as_posix(), net=net.as_posix()))
    assert runner.invoke(app, ["run", str(c), "--executor", "local"]).exit_code == 0
    res = runner.invoke(app, ["report", str(tmp_path / "out"), "--json"])
    assert res.exit_code == 0, res.output
    import json
    low = json.loads(res.stdout)["low_utilization"]
    assert low["checked"] == 4   # 2 layers x 2 mapper entries
    got = {(r["layer"], r["searched"]): round(r["busy_pes"], 6) for r in low["rows"]}
    assert got == {("fc", False): 4.0, ("fc", True): round(12 * 64 / 66, 6)}   # the 3x3 conv: > 25% busy
    text = runner.invoke(app, ["report", str(tmp_path / "out")], env={"COLUMNS": "250"}).output
    assert "2 of 4 best mappings keep fewer than 25% of the PEs busy" in text
    assert "2.4%" in text and "4.0 of 168 PEs" in text
    assert 'try spatial = "search"' in text
    html = tmp_path / "r.html"
    assert runner.invoke(app, ["report", str(tmp_path / "out"), "--html", str(html)]).exit_code == 0
    page = html.read_text()
    assert "PE utilisation" in page and "best mappings keep fewer than 25% of the PEs busy" in page
