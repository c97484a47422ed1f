"""Architecture search with a dataflow axis, run in-process: each design mapped on its dataflow's
unrolling (fixed: the design's [spatial], each layer's unrolling known by hand; hint: searched by
the mapper), the same totals as mapping a hand-built accelerator, design files whose `sweep map`
reproduces the totals, and an Optuna search over the categorical axis."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from costmodel.loopnest.arch import load_accelerator
from costmodel.loopnest.hint import SpatialHint
from costmodel.loopnest.mapping import SpatialMapping
from costmodel.zoo import load_network_file
from sweep.kinds import load_campaign
from sweep.cli import app
from sweep.engine.runner import run_campaign
from sweep.engine.store import Store
from sweep.kinds import build_report
from sweep.commands.map_eval import map_network
from test_archsearch_engine import CAMPAIGN, PARAMS, TINY_NET, run_local

GRID = 'array.D1 = [7, 14]\ndataflow = ["ws", "flex"]\n'
DATAFLOWS = """
[architectures.dataflows.ws]
spatial = { D1 = [["C", 14]], D2 = [["K", 12]] }
[architectures.dataflows.flex]
spatial_hint = { D1 = ["K", "C"], D2 = ["OX", "OY", "K"] }
"""


def campaign(tmp_path, search: str = ""):
    """tiny_net on eyeriss_like: D1 in {7, 14} x dataflow in {ws, flex}; D2 = 12, 1 MiB buffer."""
    text = CAMPAIGN.format(net=TINY_NET.as_posix(), extra=search)
    head, rest = text.split("[architectures.grid]\n", 1)
    rest = rest.split("[[mappers]]", 1)[1]
    p = tmp_path / "df.toml"
    p.write_text(head + "[architectures.grid]\n" + GRID + DATAFLOWS + "[[mappers]]" + rest)
    return p


@pytest.fixture(scope="module")
def df_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dataflow")
    return run_local(campaign(tmp), tmp / "out")


def test_random_sampler_draws_dataflows(tmp_path):
    c = load_campaign(campaign(tmp_path, '[search]\nsampler = "random"\ntrials = 2\nseed = 1'), output=tmp_path / "o")
    from sweep.engine.design_tasks import selected
    want = {c.architectures.design_id(c.architectures.point(int(i))): c.architectures.point(int(i))["dataflow"]
            for i in selected(c)}
    run_campaign(c, executor="local")
    assert Store(tmp_path / "o").read("totals").set_index("design_id")["dataflow"].to_dict() == want


def test_rows_carry_the_dataflow_and_its_unrolling(df_run):
    c, store = df_run
    assert len(c.architectures) == 4 and c.architectures.dropped == {}
    rows, totals = store.read("rows"), store.read("totals")
    assert len(totals) == 4 and (totals["status"] == "ok").all() and len(rows) == 8
    assert sorted(zip(totals["array.D1"], totals["dataflow"])) == [(7, "flex"), (7, "ws"), (14, "flex"), (14, "ws")]
    ws = rows[rows["dataflow"] == "ws"].set_index(["array.D1", "layer"])["spatial"].map(json.loads)
    # ws = C 14 on D1 (7 on a 7-row array), K 12 on D2, each clipped to the layer:
    # conv_a (K 8, C 4): C 4, K 8 on both arrays; conv_b (K 16, C 8): C 7 or 8, K 12
    assert ws.to_dict() == {(7, "conv_a"): {"D1": [["C", 4]], "D2": [["K", 8]]},
                            (7, "conv_b"): {"D1": [["C", 7]], "D2": [["K", 12]]},
                            (14, "conv_a"): {"D1": [["C", 4]], "D2": [["K", 8]]},
                            (14, "conv_b"): {"D1": [["C", 8]], "D2": [["K", 12]]}}
    # flex: the mapper's choice, one dim per array dim from the hint, within the array
    for r in rows[rows["dataflow"] == "flex"].to_dict("records"):
        sp = json.loads(r["spatial"])
        assert set(sp) <= {"D1", "D2"} and all(len(v) <= 1 for v in sp.values())
        assert all(d in ("K", "C") for d, _ in sp.get("D1", [])) and all(d in ("OX", "OY", "K") for d, _ in sp.get("D2", []))
        assert all(f <= {"D1": r["array.D1"], "D2": 12}[a] for a, v in sp.items() for _, f in v)


def test_rerun_from_the_manifest_is_the_same_campaign(df_run, tmp_path):
    """The manifest's campaign (JSON, keys sorted: dataflows in another order) has the config
    hash, designs and task ids of the run; a resume runs nothing."""
    from sweep.engine.design_tasks import design_tasks
    from sweep.kinds import campaign_from_manifest
    c, store = df_run
    again = campaign_from_manifest(store.root, tmp_path / "again")
    assert again.config_hash() == c.config_hash()
    assert [t.task_id for t in design_tasks(again)] == [t.task_id for t in design_tasks(c)]
    assert run_campaign(c, executor="local", resume=True).tasks_run == 0


def test_totals_equal_mapping_the_hand_built_accelerators(df_run):
    """The design at D1 = 14 of each dataflow is eyeriss_like with that [spatial] / hint, by hand."""
    c, store = df_run
    totals = store.read("totals").set_index(["array.D1", "dataflow"])
    base = load_accelerator("eyeriss_like")
    net = load_network_file(TINY_NET)
    hands = {"ws": replace(base, spatial=SpatialMapping({"D1": (("C", 14),), "D2": (("K", 12),)}), spatial_hint=None),
             "flex": replace(base, spatial=SpatialMapping({}),
                             spatial_hint=SpatialHint({"D1": ("K", "C"), "D2": ("OX", "OY", "K")}))}
    for name, acc in hands.items():
        ref = map_network(net, acc, "salsa", "edp", 3, PARAMS)["total"]
        t = totals.loc[(14, name)]
        assert (t["energy_pj"], t["latency_cycles"], t["edp"]) == (ref["energy_pj"], ref["latency_cycles"], ref["edp"])


def test_report_per_dataflow_and_commands_reproduce(df_run):
    c, store = df_run
    rep = build_report(store.root)
    totals = store.read("totals").set_index("design_id")
    d = rep["networks"]["tiny_net"]["dataflows"]
    assert d["names"] == ["ws", "flex"] and d["kinds"] == {"ws": "fixed", "flex": "hint"}
    for e in d["effects"]:                 # 2 designs per dataflow; the best is the lowest EDP of its rows
        sub = totals[totals["dataflow"] == e["dataflow"]]
        assert e["designs"] == 2 and e["best_edp"] == sub["edp"].min() and e["best_design_id"] == sub["edp"].idxmin()
    files = {x["design_id"] for x in rep["designs"]}
    assert {e["best_design_id"] for e in d["effects"]} <= files      # every dataflow's best has a file
    for x in rep["designs"]:
        text = open(x["file"]).read()
        df = totals.loc[x["design_id"], "dataflow"]
        assert f'dataflow = "{df}"' in text and ("[spatial_hint]" in text) == (df == "flex")
        r = CliRunner().invoke(app, shlex.split(x["command"])[1:] + ["--json"])
        assert r.exit_code == 0, r.output
        got = json.loads(r.output)["total"]
        want = totals.loc[x["design_id"]]
        assert (got["energy_pj"], got["latency_cycles"], got["edp"]) == (want["energy_pj"], want["latency_cycles"], want["edp"])


@pytest.mark.parametrize("sampler, objectives", [("tpe", '["edp"]'), ("nsga2", '["edp", "area_mm2"]')])
def test_optuna_searches_the_dataflow_as_a_categorical(tmp_path, sampler, objectives):
    import optuna
    from test_archsearch_engine import _study
    search = f'[search]\nsampler = "{sampler}"\ntrials = 3\nseed = 4\nbatch = 2\nobjectives = {objectives}'
    c = load_campaign(campaign(tmp_path, search), output=tmp_path / "o")
    run_campaign(c, executor="local")
    trials = _study(tmp_path / "o").get_trials(deepcopy=False)
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    dist = trials[0].distributions["dataflow"]
    assert isinstance(dist, optuna.distributions.CategoricalDistribution) and dist.choices == ("ws", "flex")
    totals = Store(tmp_path / "o").read("totals").set_index("design_id")
    assert len(totals) == 3 and totals.index.is_unique
    for t in trials:       # every point is a valid design: its id is that of its parameters
        did = t.user_attrs["design_id"]
        assert did == c.architectures.design_id({"array.D1": t.params["array.D1"], "dataflow": t.params["dataflow"]})
        assert totals.loc[did, "dataflow"] == t.params["dataflow"] and t.values[0] == pytest.approx(totals.loc[did, "edp"], rel=1e-12)


@pytest.mark.slow
def test_ray_gives_the_rows_of_the_local_run(df_run, tmp_path, ray_session):
    """Designs with dataflows travel to Ray workers (the template's Dataflow objects pickled)."""
    import pandas as pd
    c, store = df_run
    cr = load_campaign(c.source, output=tmp_path / "ray")
    run_campaign(cr, executor="ray")
    drop = ["wall_s", "code_version", "config_hash"]
    for table, keys in (("totals", ["design_id"]), ("rows", ["design_id", "layer_index"])):
        a, b = (st.read(table).drop(columns=drop, errors="ignore").sort_values(keys).reset_index(drop=True)
                for st in (store, Store(tmp_path / "ray")))
        pd.testing.assert_frame_equal(a, b)
