"""`sweep eval --mapping` takes what `sweep map --json` writes (issue 30, item 7): one layer's JSON,
or a whole network's with the layer picked by --layer; `--dims` takes paddings. README's commands
that feed one command's output to another are run here as written."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from typer.testing import CliRunner

from paths import REPO
from sweep.cli import app

runner = CliRunner()


def _readme_chain() -> list[list[str]]:
    """README's `sweep map ... --json > m.json` and the `sweep eval ... --mapping m.json` after it."""
    text = (REPO / "README.md").read_text()
    mp = re.search(r"^(sweep map --dims \S+ .*--json) > m\.json$", text, re.M)
    ev = re.search(r"^(sweep eval --dims \S+ .*--mapping m\.json)", text, re.M)
    assert mp and ev, "README's map -> eval example is gone"
    return [shlex.split(mp.group(1))[1:], shlex.split(ev.group(1))[1:]]


def test_readme_map_then_eval_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    map_args, eval_args = _readme_chain()
    res = runner.invoke(app, map_args)
    assert res.exit_code == 0, res.output
    (tmp_path / "m.json").write_text(res.stdout)
    ev = runner.invoke(app, eval_args + ["--json"])
    assert ev.exit_code == 0, ev.output
    assert json.loads(ev.stdout)["energy_pj"] == pytest.approx(json.loads(res.stdout)["energy_pj"], rel=1e-12)


def test_eval_takes_a_layer_of_a_whole_networks_json(tmp_path):
    net = runner.invoke(app, ["map", "--network", "resnet18", "--arch", "eyeriss_like", "--mapper", "loma",
                              "--param", "lpf_limit=4", "--json"])
    assert net.exit_code == 0, net.output
    f = tmp_path / "n.json"
    f.write_text(net.stdout)
    want = next(r for r in json.loads(net.stdout)["layers"] if r["layer"] == "layer2.0.conv1")
    ev = runner.invoke(app, ["eval", "--network", "resnet18", "--layer", "layer2.0.conv1", "--arch", "eyeriss_like",
                             "--mapping", str(f), "--json"])
    assert ev.exit_code == 0, ev.output
    assert json.loads(ev.stdout)["energy_pj"] == pytest.approx(want["energy_pj"], rel=1e-12)
    missing = runner.invoke(app, ["eval", "--network", "resnet34", "--layer", "layer3.1.conv1", "--arch",
                                  "eyeriss_like", "--mapping", str(f)])
    assert missing.exit_code == 2 and "--layer" in missing.output and "Traceback" not in missing.output


def test_dims_take_paddings():
    res = runner.invoke(app, ["map", "--dims", "K=8,C=4,OY=6,OX=6,FY=3,FX=3,PY=1,PX=1.5", "--arch", "eyeriss_like",
                              "--mapper", "random", "--param", "patience=5", "--json"])
    assert res.exit_code == 0, res.output
    bad = runner.invoke(app, ["map", "--dims", "K=8,C=4,PY=-1", "--arch", "eyeriss_like", "--mapper", "random"])
    assert bad.exit_code == 2 and "--dims PY" in bad.output


def test_dims_take_the_unpadded_input():
    """in_rows / in_cols: the same layer and search (seeded) moves fewer inputs: a 3x3 'same'
    convolution on a 6 x 6 input reads at most 6 x 6 x C of the 8 x 8 x C padded window."""
    from sweep.commands.map_eval import parse_dims
    layer = parse_dims("K=8,C=4,OY=6,OX=6,FY=3,FX=3,PY=1,PX=1,in_rows=6,in_cols=6")
    assert (layer.IY, layer.in_rows, layer.in_cols) == (8, 6, 6)
    args = ["--arch", "eyeriss_like", "--mapper", "loma", "--param", "lpf_limit=4", "--json"]
    padded = runner.invoke(app, ["map", "--dims", "K=8,C=4,OY=6,OX=6,FY=3,FX=3,PY=1,PX=1", *args])
    real = runner.invoke(app, ["map", "--dims", "K=8,C=4,OY=6,OX=6,FY=3,FX=3,PY=1,PX=1,in_rows=6,in_cols=6", *args])
    assert padded.exit_code == 0 and real.exit_code == 0, real.output
    assert json.loads(real.stdout)["energy_pj"] < json.loads(padded.stdout)["energy_pj"]
    bad = runner.invoke(app, ["map", "--dims", "K=8,C=4,in_rows=0", "--arch", "eyeriss_like", "--mapper", "random"])
    assert bad.exit_code == 2 and "--dims in_rows" in bad.output
