"""Architecture-search runs: per-(design, layer) rows and per-(design, network) totals, the
reproduction of a design's totals by `sweep map`, resume, Ray = in-process, and the Optuna
samplers (trials, infeasible points, a persisted and resumable study)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from costmodel.loopnest.arch import load_accelerator
from costmodel.loopnest.template import ArchTemplate
from costmodel.zoo import load_network_file
from paths import REPO
from sweep.kinds import load_campaign
from sweep.cli import app
from sweep.engine.runner import Interrupted, run_campaign
from sweep.engine.store import Store
from sweep.kinds import build_report
from sweep.commands.map_eval import map_network

TINY_NET = REPO / "tests" / "data" / "tiny_net.csv"
CAMPAIGN = """
name = "as_engine"
networks = [{{file = "{net}"}}]
objectives = ["edp"]
seeds = [3]
[architectures]
kind = "loopnest"
template = "eyeriss_like"
[architectures.grid]
memory.sram_1M.size_kib = [256, 1024]    # not in sorted order: a manifest's JSON sorts the keys
array.D1 = [7, 14]
array.D2 = [6, 12]
constraints = ["array.D1 * array.D2 <= 84 or memory.sram_1M.size_kib == 1024"]
[[mappers]]
name = "salsa"
params = {{chains = 1, iterations = 60, descent = false}}
[run]
designs_per_task = 2
{extra}
"""
PARAMS = {"chains": 1, "iterations": 60, "descent": False}
runner = CliRunner()


def campaign(tmp_path: Path, extra: str = "", name: str = "c.toml"):
    p = tmp_path / name
    p.write_text(CAMPAIGN.format(net=TINY_NET.as_posix(), extra=extra))
    return p


def run_local(path: Path, out: Path):
    """Load the campaign ``path`` and run it in-process into ``out``: (campaign, store)."""
    c = load_campaign(path, output=out)
    run_campaign(c, executor="local")
    return c, Store(out)


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grid")
    return run_local(campaign(tmp), tmp / "out")


def test_grid_rows_and_totals_by_hand(grid_run):
    c, store = grid_run
    # 8 grid points; the constraint drops (14, 12, 256 KiB): 7 designs, 4 tasks of <= 2
    assert len(c.architectures) == 7 and c.architectures.dropped == {
        "constraints[0]: array.D1 * array.D2 <= 84 or memory.sram_1M.size_kib == 1024": 1}
    rows, totals, archs = store.read("rows"), store.read("totals"), store.read("archs")
    assert len(totals) == 7 and len(archs) == 7 and len(rows) == 7 * 2   # tiny_net: 2 unique layers
    assert (totals["status"] == "ok").all() and (rows["status"] == "ok").all()
    tmpl = ArchTemplate(load_accelerator("eyeriss_like"))
    for t in totals.itertuples():
        lay = rows[rows["design_id"] == t.design_id].sort_values("layer_index")
        assert lay["layer"].tolist() == ["conv_a", "conv_b"] and lay["repeat"].tolist() == [1, 2]
        e = lay["energy_pj"].iloc[0] * 1 + lay["energy_pj"].iloc[1] * 2      # conv_b runs twice
        lat = lay["latency_cycles"].iloc[0] * 1 + lay["latency_cycles"].iloc[1] * 2
        assert t.energy_pj == e and t.latency_cycles == lat and t.edp == e * lat
        vals = {n: getattr(t, "_%d" % (totals.columns.get_loc(n) + 1)) for n in c.architectures.names}
        assert t.area_mm2 == pytest.approx(tmpl.area_mm2(vals), rel=1e-12)
        assert (lay["seed"] == 3).all() and (lay["mapper"] == "salsa").all()


def test_template_point_equals_sweep_map_of_the_preset(grid_run):
    """The design at the template's own values is the preset: same totals as mapping the preset."""
    c, store = grid_run
    totals = store.read("totals")
    t = totals[(totals["array.D1"] == 14) & (totals["array.D2"] == 12) & (totals["memory.sram_1M.size_kib"] == 1024)]
    ref = map_network(load_network_file(TINY_NET), load_accelerator("eyeriss_like"), "salsa", "edp", 3, PARAMS)["total"]
    assert (t["energy_pj"].item(), t["latency_cycles"].item(), t["edp"].item()) == (
        ref["energy_pj"], ref["latency_cycles"], ref["edp"])


def test_report_commands_reproduce_the_totals(grid_run):
    c, store = grid_run
    rep = build_report(store.root)
    assert rep["designs"]
    totals = store.read("totals").set_index("design_id")
    for d in rep["designs"]:
        args = shlex.split(d["command"])
        assert args[:2] == ["sweep", "map"] and Path(d["file"]).is_file()
        r = runner.invoke(app, args[1:] + ["--json"])
        assert r.exit_code == 0, r.output
        got = json.loads(r.output)["total"]
        want = totals.loc[d["design_id"]]
        assert (got["energy_pj"], got["latency_cycles"], got["edp"]) == (
            want["energy_pj"], want["latency_cycles"], want["edp"]) == (d["energy_pj"], d["latency_cycles"], d["edp"])


def test_resume_of_a_complete_run_runs_nothing(grid_run, tmp_path):
    c, store = grid_run
    from sweep.kinds import campaign_from_manifest
    assert campaign_from_manifest(store.root, tmp_path / "again").config_hash() == c.config_hash()
    before = store.read("totals").sort_values("design_id").reset_index(drop=True)
    s = run_campaign(c, executor="local", resume=True)
    assert s.tasks_run == 0 and s.tasks_skipped == 4
    pd.testing.assert_frame_equal(before, store.read("totals").sort_values("design_id").reset_index(drop=True))


@pytest.mark.slow
def test_ray_gives_the_rows_of_the_local_run(grid_run, tmp_path, ray_session):
    c, store = grid_run
    cr = load_campaign(c.source, output=tmp_path / "ray")
    run_campaign(cr, executor="ray")
    drop = ["wall_s", "code_version", "config_hash", "task_id"]
    a = store.read("totals").drop(columns=drop, errors="ignore").sort_values("design_id").reset_index(drop=True)
    b = Store(tmp_path / "ray").read("totals").drop(columns=drop, errors="ignore").sort_values("design_id").reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)


def test_random_sampler_draws_distinct_designs(tmp_path):
    c = load_campaign(campaign(tmp_path, '[search]\nsampler = "random"\ntrials = 3\nseed = 5'), output=tmp_path / "o")
    from sweep.engine.design_tasks import selected
    idx = selected(c)
    assert len(set(idx.tolist())) == 3 and idx.tolist() == selected(c).tolist()
    run_campaign(c, executor="local")
    assert sorted(Store(tmp_path / "o").read("totals")["design_id"]) == sorted(
        c.architectures.design_id(c.architectures.point(int(i))) for i in idx)


def _study(out: Path):
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    return optuna.load_study(study_name="as_engine", storage=JournalStorage(JournalFileBackend(str(out / "study.journal"))))


@pytest.mark.parametrize("sampler, objectives", [("tpe", '["edp"]'), ("nsga2", '["edp", "area_mm2"]')])
def test_optuna_search_trials_and_infeasible_points(tmp_path, sampler, objectives):
    import optuna
    extra = f'[search]\nsampler = "{sampler}"\ntrials = 5\nseed = 1\nbatch = 3\nobjectives = {objectives}'
    c = load_campaign(campaign(tmp_path, extra), output=tmp_path / "o")
    run_campaign(c, executor="local")
    study = _study(tmp_path / "o")
    trials = study.get_trials(deepcopy=False)
    assert len(trials) >= 5 and all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    totals = Store(tmp_path / "o").read("totals")
    valid = {c.architectures.design_id(c.architectures.point(i)) for i in range(len(c.architectures))}
    seen = {t.user_attrs["design_id"] for t in trials if t.user_attrs["design_id"]}
    assert set(totals["design_id"]) == seen <= valid and len(seen) == 5     # the budget: 5 designs
    # the last round was asked only because fewer than 5 distinct designs had been evaluated
    assert len({t.user_attrs["design_id"] for t in trials[:-1] if t.user_attrs["design_id"]}) < 5
    assert totals["design_id"].is_unique
    by_id = totals.set_index("design_id")
    for t in trials:
        did = t.user_attrs["design_id"]
        if did is None:                                          # (14, 12, 256 KiB) is not valid
            assert (t.params["array.D1"], t.params["array.D2"], t.params["memory.sram_1M.size_kib"]) == (14, 12, 256)
            assert t.values[0] == np.inf
        else:
            assert t.values[0] == pytest.approx(by_id.loc[did, "edp"], rel=1e-12)   # one network: its EDP
            if len(t.values) == 2:
                assert t.values[1] == by_id.loc[did, "area_mm2"]


def test_optuna_search_resumes_after_an_interruption(tmp_path):
    extra = '[search]\nsampler = "tpe"\ntrials = 6\nseed = 2\nbatch = 2'
    c = load_campaign(campaign(tmp_path, extra), output=tmp_path / "o")

    def stop_at_three_designs(done, total):
        if done >= 3:
            raise KeyboardInterrupt
    with pytest.raises(Interrupted):
        run_campaign(c, executor="local", progress=stop_at_three_designs)
    first = set(Store(tmp_path / "o").read("totals")["design_id"])
    assert 3 <= len(first) < 6
    run_campaign(c, executor="local", resume=True)
    trials = _study(tmp_path / "o").trials
    totals = Store(tmp_path / "o").read("totals")
    assert first <= set(totals["design_id"]) and totals["design_id"].is_unique and len(totals) == 6
    assert {t.user_attrs["design_id"] for t in trials if t.user_attrs.get("design_id")} == set(totals["design_id"])


def test_grid_run_killed_halfway_resumes_to_the_same_rows(grid_run, tmp_path):
    c, store = grid_run
    ci = load_campaign(c.source, output=tmp_path / "k")

    def stop_after_two_tasks(done, total):
        if done >= 2:
            raise KeyboardInterrupt
    with pytest.raises(Interrupted):
        run_campaign(ci, executor="local", progress=stop_after_two_tasks)
    assert 0 < len(Store(tmp_path / "k").read("totals")) < 7
    s = run_campaign(ci, executor="local", resume=True)
    assert s.tasks_skipped >= 1
    drop = ["wall_s", "code_version", "config_hash"]
    for table, keys in (("totals", ["design_id", "network"]), ("rows", ["design_id", "network", "layer_index"])):
        a, b = (st.read(table).drop(columns=drop, errors="ignore").sort_values(keys).reset_index(drop=True)
                for st in (store, Store(tmp_path / "k")))
        pd.testing.assert_frame_equal(a, b)
