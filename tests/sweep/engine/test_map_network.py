"""`sweep map --network N` without --layer (every unique layer, totals), ONNX networks in `map`,
`eval`, `list networks --file` and campaigns, and bad ONNX files at each entry point (exit 2, the
file and node named, nothing written)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from onnx import helper
from typer.testing import CliRunner

from sweep.cli import app

from onnx_util import mixed_model, model, repeated_model, save, weight
from paths import DATA

runner = CliRunner()


def _json(res) -> dict:
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.parametrize("arch, mapper", [("eyeriss_like", "loma"), ("arch5", "flexer")])
def test_whole_network_totals_equal_single_layers_times_repeats(tmp_path, arch, mapper):
    net = str(save(repeated_model(), tmp_path / "rep.onnx"))
    base = ["map", "--network", net, "--arch", arch, "--mapper", mapper, "--json"]
    whole = _json(runner.invoke(app, base))
    assert [(r["layer"], r["repeat"]) for r in whole["layers"]] == [("c1", 1), ("c2", 2), ("fc", 1)]
    energy = latency = 0.0
    for row in whole["layers"]:
        single = _json(runner.invoke(app, base + ["--layer", row["layer"]]))
        assert row["latency_cycles"] == single["latency_cycles"]
        assert row["energy_pj"] == single["energy_pj"]
        latency += single["latency_cycles"] * row["repeat"]
        energy = None if single["energy_pj"] is None else energy + single["energy_pj"] * row["repeat"]
    tot = whole["total"]
    assert tot["latency_cycles"] == pytest.approx(latency)
    if arch == "arch5":  # multi-NPU: no energy model, energy and EDP null
        assert energy is None and tot["energy_pj"] is None and tot["edp"] is None
    else:
        assert tot["energy_pj"] == pytest.approx(energy)
        assert tot["edp"] == pytest.approx(energy * latency)
    assert tot["executed_layers"] == 4 and tot["layers"] == 3


def test_whole_network_table_zoo_csv_file():
    res = runner.invoke(app, ["map", "--network", str(DATA / "tiny_net.csv"), "--arch", "eyeriss_like",
                              "--mapper", "loma"])
    assert res.exit_code == 0, res.output
    assert "conv_a" in res.stdout and "conv_b" in res.stdout and "total (x repeats)" in res.stdout
    assert "2 unique layer(s), 3 executed" in res.stdout


def test_onnx_layer_in_map_eval_and_list(tmp_path):
    net = str(save(mixed_model(), tmp_path / "mixed.onnx"))
    one = _json(runner.invoke(app, ["map", "--network", net, "--layer", "grouped", "--arch", "eyeriss_like",
                                    "--mapper", "loma", "--json"]))
    (tmp_path / "m.json").write_text(json.dumps(one["mapping"]))
    rep = _json(runner.invoke(app, ["eval", "--network", net, "--layer", "2", "--arch", "eyeriss_like",
                                    "--mapping", str(tmp_path / "m.json"), "--json"]))
    assert rep["energy_pj"] == pytest.approx(one["energy_pj"])
    doc = _json(runner.invoke(app, ["list", "networks", "--file", net, "--json"]))
    assert [(l["name"], l["op"], l["G"]) for l in doc["layers"]] == [
        ("conv_s", "Conv", 1), ("dw", "Conv", 8), ("grouped", "Conv", 4), ("fc", "Gemm", 1), ("mm", "MatMul", 1)]
    # each node not costed comes with its reason (a pooling has no vector op of its own)
    assert {"node": "pool", "op": "MaxPool", "reason": "no vector op for MaxPool"} in doc["ignored"]
    assert len(doc["ignored"]) == 4
    res = runner.invoke(app, ["list", "networks", "--file", net])
    assert res.exit_code == 0 and "4 node(s) not costed" in res.stdout and "MaxPool" in res.stdout


CAMPAIGN = """name = "onnx"
output = "{tmp}/out"
networks = [{{ file = "{file}" }}]
objectives = ["energy"]
seeds = [0]

[architectures]
kind = "loopnest"
presets = ["eyeriss_like"]

[[mappers]]
name = "loma"
"""


def test_campaign_onnx_network(tmp_path):
    save(repeated_model(), tmp_path / "rep.onnx")
    (tmp_path / "c.toml").write_text(CAMPAIGN.format(tmp=tmp_path.as_posix(), file="rep.onnx"))
    res = runner.invoke(app, ["validate", str(tmp_path / "c.toml")])
    assert res.exit_code == 0, res.output
    from sweep.config.networks import parse_networks
    nets = parse_networks([{"file": "rep.onnx"}], tmp_path, lambda *a: pytest.fail(str(a)))
    assert [l.name for l in nets[0].layers] == ["c1", "c2", "c3", "fc"]


def _bad_files(tmp_path: Path) -> dict[str, tuple[bytes, str]]:
    """name -> (file bytes, the fragment naming what is wrong)."""
    n = helper.make_node
    noweights = model([n("Conv", ["x", "w"], ["y"], name="noweights")], [("x", [1, 3, 8, 8]), ("w", None)],
                      [("y", None)])
    vol = model([n("Conv", ["x", "w"], ["y"], name="vol3d")], [("x", [1, 3, 8, 8, 8])], [("y", None)],
                [weight("w", (4, 3, 3, 3, 3))])
    return {"junk.onnx": (b"not an onnx model", "not an ONNX model"),
            "noweights.onnx": (noweights.SerializeToString(), "node 'noweights' (Conv): no shape for its weights"),
            "vol.onnx": (vol.SerializeToString(), "node 'vol3d' (Conv): a 3-D convolution")}


def _snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("name", ["junk.onnx", "noweights.onnx", "vol.onnx"])
def test_bad_onnx_exit_2_named_nothing_written(tmp_path, name):
    data, fragment = _bad_files(tmp_path)[name]
    f = tmp_path / name
    f.write_bytes(data)
    (tmp_path / "c.toml").write_text(CAMPAIGN.format(tmp=tmp_path.as_posix(), file=name))
    (tmp_path / "m.json").write_text("{}")
    cmds = [["list", "networks", "--file", str(f)],
            ["map", "--network", str(f), "--arch", "eyeriss_like", "--mapper", "loma"],
            ["map", "--network", str(f), "--layer", "0", "--arch", "eyeriss_like", "--mapper", "loma"],
            ["eval", "--network", str(f), "--layer", "0", "--arch", "eyeriss_like", "--mapping", str(tmp_path / "m.json")],
            ["validate", str(tmp_path / "c.toml")],
            ["run", str(tmp_path / "c.toml"), "--executor", "local"]]
    before = _snapshot(tmp_path)
    for cmd in cmds:
        res = runner.invoke(app, cmd)
        msg = re.sub(r"\s+", " ", res.output)
        assert res.exit_code == 2, (cmd, msg)
        assert name in msg and fragment in msg, (cmd, msg)
        assert _snapshot(tmp_path) == before, cmd
