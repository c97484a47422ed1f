"""Loop-nest campaigns end to end: rows per work unit, executors agree, resume, report, CLI."""

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from sweep.kinds import load_campaign
from sweep.cli import app
from sweep.kinds import build_report
from sweep.engine.runner import Interrupted, run_campaign
from sweep.engine.store import Store
from paths import DATA

runner = CliRunner()

CAMPAIGN = """
name = "tiny_loops"
output = "{out}"
networks = [{{ file = "{net}" }}]
objectives = ["energy"]
seeds = [0, 1]

[architectures]
kind = "loopnest"
presets = ["eyeriss_like"]

[[mappers]]
name = "salsa"
params = {{ engine = "sa", iterations = 200, chains = 2, descent = false }}   # one unit per chain

[[mappers]]
name = "loma"

[[mappers]]
name = "random"
params = {{ patience = 50 }}

[run]
units_per_task = 3
"""
TIMING = ["wall_s", "task_id"]


def _write(tmp_path, out="out"):
    p = tmp_path / f"{out}.toml"
    p.write_text(CAMPAIGN.format(out=(tmp_path / out).as_posix(), net=(DATA / "tiny_net.csv").as_posix()))
    return p


def _rows(out):
    df = Store(out).read("rows").drop(columns=TIMING)
    return df.sort_values(["problem_id", "unit_index"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("loops")
    c = load_campaign(_write(tmp))
    s = run_campaign(c, executor="local")
    assert s.tasks_failed == 0
    return c


def test_units_and_problems(ref):
    rows = Store(ref.output).read("rows")
    probs = Store(ref.output).read("problems")
    # 2 unique layers x (salsa: 2 seeds x 2 chains + loma: 1 + random: 2 seeds x 1) units
    assert len(rows) == 2 * (2 * 2 + 1 + 2)
    assert (rows["status"] == "ok").all()
    # loma is deterministic: one problem per layer, not one per seed
    assert rows[rows["mapper"] == "loma"]["seed"].isna().all()
    # every (layer, mapper, seed) problem has an alias row naming the network and layer
    assert set(probs["layer"]) == {"conv_a", "conv_b"}
    assert set(probs["problem_id"]) == set(rows["problem_id"])
    assert probs.loc[probs["layer"] == "conv_b", "repeat"].eq(2).all()


def test_multi_chain_unit_history_is_stored_chain_after_chain():
    """A unit running several chains (salsa's lockstep / descent) stores its (chains, I + 1)
    history as one flat row list, chain after chain; ragged per-chain lists likewise."""
    import numpy as np
    from sweep.engine.layer_tasks import _flat_history

    assert _flat_history(np.array([[3.0, 2.0, 1.0], [6.0, 5.0, 4.0]])) == [3.0, 2.0, 1.0, 6.0, 5.0, 4.0]
    assert _flat_history([np.array([1.0, 0.5]), np.array([2.0])]) == [1.0, 0.5, 2.0]
    assert _flat_history(np.array([4.0, 3.0])) == [4.0, 3.0] and _flat_history(None) is None


def test_heuristics_never_beat_the_exhaustive_optimum(ref):
    rows = Store(ref.output).read("rows").merge(
        Store(ref.output).read("problems")[["problem_id", "layer"]], on="problem_id")
    for layer, g in rows.groupby("layer"):
        opt = g[g["mapper"] == "loma"]["value"].min()
        assert (g["value"] >= opt * (1 - 1e-12)).all(), layer


def test_ray_and_local_identical_but_timing(tmp_path, ref, ray_session):
    c = load_campaign(_write(tmp_path))
    run_campaign(c, executor="ray")
    pd.testing.assert_frame_equal(_rows(c.output), _rows(ref.output))


def test_interrupt_and_resume(tmp_path, ref):
    c = load_campaign(_write(tmp_path))

    def progress(done, total):
        if done >= 2:
            raise KeyboardInterrupt

    with pytest.raises(Interrupted):
        run_campaign(c, executor="local", progress=progress)
    run_campaign(c, executor="local", resume=True)
    pd.testing.assert_frame_equal(_rows(c.output), _rows(ref.output))
    assert len(Store(c.output).read("problems")) == len(Store(ref.output).read("problems"))


def test_report_reduces_units_to_problems(ref, tmp_path):
    rep = build_report(ref.output, tmp_path / "plots")
    rows = Store(ref.output).read("rows")
    layers = pd.DataFrame(rep["layers"])
    # one entry per mapper: the label is the mapper's name (issue 30: labels name what differs between entries)
    assert set(layers["label"]) == {"salsa", "loma", "random"}
    # salsa's per-layer value = mean over seeds of the best of its chains
    probs = Store(ref.output).read("problems")
    sal = rows[rows["mapper"] == "salsa"].merge(probs[["problem_id", "layer"]], on="problem_id")
    for layer, g in sal.groupby("layer"):
        want = g.groupby("seed")["value"].min().mean()
        got = layers[(layers["layer"] == layer) & (layers["label"].str.startswith("salsa"))]["value"].iloc[0]
        assert got == pytest.approx(want)
    nets = {r["mapper"]: r for r in rep["networks"]}
    assert nets["random"]["mean_reduction_vs_baseline"] == 0.0
    assert nets["loma"]["mean_reduction_vs_baseline"] >= 0.0  # exhaustive never worse than random
    for f in rep["plots"]:
        assert open(f, "rb").read(4) == b"\x89PNG"
    res = runner.invoke(app, ["report", str(ref.output)])
    assert res.exit_code == 0 and "SALSA Fig. 5" in res.output


def test_map_cli_json_matches_exhaustive(tmp_path):
    res = runner.invoke(app, ["map", "--dims", "K=8,C=4,OY=14,OX=14,FY=3,FX=3", "--arch", "eyeriss_like",
                              "--mapper", "loma", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    for k in ("energy_pj", "latency_cycles", "edp", "evaluations", "wall_s", "mapper", "engine", "mapping"):
        assert k in out
    assert out["edp"] == pytest.approx(out["energy_pj"] * out["latency_cycles"])
    # the printed mapping, evaluated by `sweep eval`, costs what `map` said
    mfile = tmp_path / "m.json"
    mfile.write_text(json.dumps(out["mapping"]))
    res = runner.invoke(app, ["eval", "--dims", "K=8,C=4,OY=14,OX=14,FY=3,FX=3", "--arch", "eyeriss_like",
                              "--mapping", str(mfile), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["energy_pj"] == pytest.approx(out["energy_pj"], rel=1e-12)


@pytest.mark.parametrize("args, fragment", [
    (["--dims", "K=8,Q=3", "--arch", "eyeriss_like", "--mapper", "loma"], "--dims = 'Q=3'"),
    (["--dims", "K=0", "--arch", "eyeriss_like", "--mapper", "loma"], "--dims K = 0"),
    (["--network", "resnet34", "--layer", "nope", "--arch", "eyeriss_like", "--mapper", "loma"], "--layer = 'nope'"),
    (["--network", "resnet99", "--layer", "0", "--arch", "eyeriss_like", "--mapper", "loma"], "--network = 'resnet99'"),
    (["--dims", "K=8", "--arch", "nope_like", "--mapper", "loma"], "--arch = 'nope_like'"),
    (["--dims", "K=8", "--arch", "eyeriss_like", "--mapper", "deepopt"], "--mapper = 'deepopt'"),
    (["--dims", "K=8", "--arch", "eyeriss_like", "--mapper", "salsa", "--param", "iterations=-5"], "--param iterations = -5"),
    (["--dims", "K=8", "--arch", "eyeriss_like", "--mapper", "salsa", "--param", "tempreature=1"], "--param tempreature = 1"),
])
def test_map_bad_input_exit_2(args, fragment):
    res = runner.invoke(app, ["map", *args])
    assert res.exit_code == 2, res.output
    assert fragment in res.output.replace("\n", " ")


def test_eval_bad_mapping_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"temporal": 3}')
    res = runner.invoke(app, ["eval", "--dims", "K=8", "--arch", "eyeriss_like", "--mapping", str(bad)])
    assert res.exit_code == 2 and "not a valid mapping" in res.output
    res = runner.invoke(app, ["eval", "--dims", "K=8", "--arch", "eyeriss_like", "--mapping", str(tmp_path / "none.json")])
    assert res.exit_code == 2 and "cannot read" in res.output


def test_loopnest_campaign_validation(tmp_path):
    p = _write(tmp_path)
    text = p.read_text()
    for old, new, frag in [
        ('presets = ["eyeriss_like"]', 'presets = ["eyeris"]', "architectures.presets[0] = 'eyeris'"),
        ('objectives = ["energy"]', 'objectives = ["ED"]', "objectives[0] = 'ED': unknown objective for loopnest"),
        ('name = "loma"', 'name = "deepopt"', "mappers[1].name = 'deepopt': maps systolic"),
        ('patience = 50', 'patience = 0', "mappers[2].params.patience = 0"),
    ]:
        p.write_text(text.replace(old, new))
        res = runner.invoke(app, ["validate", str(p)])
        assert res.exit_code == 2 and frag in res.output.replace("\n", " "), (frag, res.output)
