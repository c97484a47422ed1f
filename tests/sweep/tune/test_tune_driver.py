"""`sweep tune` end to end on a tiny campaign: trials, rows, best params, held-out table, report,
Ray == in-process, resume after a kill (orphaned RUNNING trial, SIGKILL), no trial counted twice.
The kill that resumes to the uninterrupted study is in tests/sweep/test_study.py."""

import json
import os
import signal
import subprocess
import sys
import tomllib

import pandas as pd
import pytest
from typer.testing import CliRunner

from sweep.cli import app
from sweep.common.errors import StoreError
from sweep.tune.driver import open_study, read_trials, run_tune
from sweep.config.tune_campaign import load_tune_campaign
from tests.tune_util import write_tune
from campaign_util import freeze_when, kill_group

COLS = ["trial", "state", "value_gap", "params", "layer_gaps", "layers_done"]


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tune_local")
    c = load_tune_campaign(write_tune(tmp, trials=6))
    s = run_tune(c, executor="local")
    return c, s


def _finished(rows):
    return rows[rows["state"].isin(["COMPLETE", "PRUNED"])]


def test_study_rows_best_params_and_heldout(local_run, tmp_path):
    c, s = local_run
    rows = read_trials(c.output)
    assert s.complete + s.pruned == 6 == len(_finished(rows))
    assert rows["trial"].is_unique and list(rows["trial"]) == sorted(rows["trial"])
    done = rows[rows["state"] == "COMPLETE"]
    for _, r in done.iterrows():
        detail = json.loads(r["layer_detail"])
        assert [o["layer"] for o in detail] == ["fc", "layer4.0.downsample"]
        assert all(p == 200 for o in detail for p in o["proposals"])       # the fixed budget, every seed
        assert r["value_gap"] == pytest.approx(sum(json.loads(r["layer_gaps"]).values()) / 2)
        assert list(r["seeds"]) == [0, 1]
    best = done.sort_values(["value_gap", "trial"]).iloc[0]
    assert s.best["trial"] == best["trial"]
    toml = tomllib.loads((c.output / "best_params.toml").read_text())["mappers"]["salsa"]
    assert toml["chains"] * toml["iterations"] == 200
    assert {k: toml[k] for k in ("t0", "rho", "chains")} == json.loads(best["params"])
    h = pd.read_parquet(c.output / "heldout.parquet")
    assert set(h["config"]) == {"tuned", "default"} and set(h["seed"]) == {100, 101}
    assert (h["proposals"] == 200).all() and (h["gap"] >= 0).all()
    assert set(s.heldout) == {"tuned", "default"}
    # a `sweep run` campaign takes the snippet through params_file
    from tests.sweep.config.test_tune_campaign import _run_campaign
    (tmp_path / "best.toml").write_text((c.output / "best_params.toml").read_text())
    m = _run_campaign(tmp_path, 'params_file = "best.toml"').mappers[0]
    assert m.params["t0"] == toml["t0"] and m.params["chains"] == toml["chains"]


def test_report_on_a_tuning_directory(local_run):
    c, _ = local_run
    res = CliRunner().invoke(app, ["report", str(c.output), "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    assert rep["kind"] == "tune" and rep["best"]["trial"] >= 0
    assert set(rep["heldout"]) == {"tuned", "default"}
    assert all(r["best_seen"] <= r["reference"] + 1e-9 for r in rep["references"])
    assert all(os.path.getsize(p) > 0 for p in rep["plots"])
    assert {os.path.basename(p) for p in rep["plots"]} >= {"optimization_history.png", "heldout_gap.png"}


def test_existing_output_needs_resume(local_run):
    c, _ = local_run
    with pytest.raises(StoreError, match="--resume"):
        run_tune(c, executor="local")
    res = CliRunner().invoke(app, ["tune", c.source, "--executor", "local"])
    assert res.exit_code == 2


def test_ray_gives_the_same_trials(local_run, tmp_path, ray_session):
    c, _ = local_run
    cr = load_tune_campaign(c.source, output=tmp_path / "ray")
    run_tune(cr, executor="ray")
    a, b = read_trials(c.output), read_trials(cr.output)
    pd.testing.assert_frame_equal(a[COLS], b[COLS])
    ha, hb = (pd.read_parquet(x / "heldout.parquet") for x in (c.output, cr.output))
    pd.testing.assert_frame_equal(ha, hb)


def test_resume_fails_and_requeues_an_orphan(tmp_path):
    c = load_tune_campaign(write_tune(tmp_path, trials=3))
    run_tune(c, executor="local", heldout=False)
    study = open_study(c, c.output)              # a driver that dies with a trial RUNNING
    orphan = study.ask()
    orphan.suggest_float("t0", 0.005, 0.5, log=True)
    orphan.suggest_float("rho", 0.98, 0.9999)
    orphan.suggest_categorical("chains", [1, 2, 4])
    orphan.set_user_attr("driver", "deadbeef0000")
    s = run_tune(c, trials=5, resume=True, executor="local", heldout=False)
    assert s.orphans == 1 and s.complete + s.pruned == 5
    rows = read_trials(c.output)
    assert rows["trial"].is_unique and len(_finished(rows)) == 5
    assert rows.set_index("trial").loc[orphan.number, "state"] == "FAIL"
    requeued = rows[rows["requeued_from"] == orphan.number]
    assert len(requeued) == 1 and json.loads(requeued["params"].iloc[0]) == orphan.params
    again = run_tune(c, trials=5, resume=True, executor="local", heldout=False)   # nothing left to do
    assert again.run_here == 0 and len(read_trials(c.output)) == len(rows)


def test_two_objectives(tmp_path):
    c = load_tune_campaign(write_tune(tmp_path, trials=3, pruner="none", sampler="random",
                                      objectives='["gap", "evals_to_reach"]'))
    s = run_tune(c, executor="local", heldout=False)
    rows = read_trials(c.output)
    assert (rows["state"] == "COMPLETE").sum() == 3 == s.complete
    assert rows["value_evals_to_reach"].between(0, 200).all()


@pytest.mark.parametrize("sampler", ["cmaes", "random"])
def test_other_samplers(tmp_path, sampler):
    c = load_tune_campaign(write_tune(tmp_path, trials=2, sampler=sampler))
    assert run_tune(c, executor="local", heldout=False).complete == 2


def _journal_trials(out, study_name: str):
    """The study's trials as its journal holds them, read without writing to it (`open_study`
    appends to the journal)."""
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    storage = JournalStorage(JournalFileBackend(str(out / "study.journal")))
    return storage.get_all_trials(storage.get_study_id_from_name(study_name), deepcopy=False)


#: Studies of the kill test: 12 trials (about 50 ms each here), and, only if a driver finished
#: half of its study before it could be stopped (a very loaded machine), 36.
KILL_TRIALS = (12, 36)


@pytest.mark.slow
def test_sigkill_then_resume_ends_with_exactly_the_trials(tmp_path):
    """SIGKILL `sweep tune` mid-study; --resume ends with exactly N finished trials, none twice.

    The driver is stopped (SIGSTOP) once 2 trial rows are stored, and SIGKILLed only at a
    point, checked while it is stopped, where fewer than N/2 trials are finished (rows and
    journal), at least one RUNNING trial has parameters (an orphan to re-enqueue) and the
    journal's lock is free (a lock left by the killed driver makes the next driver wait out
    Optuna's 30 s grace period); otherwise it is continued and stopped again a moment later.
    If the study got too far first, again with a longer study (`KILL_TRIALS`)."""
    from optuna.trial import TrialState
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    finished_states = (TrialState.COMPLETE, TrialState.PRUNED)
    for n in KILL_TRIALS:
        d = tmp_path / f"n{n}"
        d.mkdir()
        path = write_tune(d, trials=n)
        out = d / "out"
        name = load_tune_campaign(path).name
        cmd = [sys.executable, "-m", "sweep.cli", "tune", str(path), "--executor", "local"]
        at_kill = {}

        def rows_stored() -> int:
            rows_dir = out / "rows"
            return len(list(rows_dir.glob("part-*.parquet"))) if rows_dir.is_dir() else 0

        def ok() -> bool:                # checked while the driver is stopped
            if os.path.lexists(out / "study.journal.lock") or not 2 <= rows_stored() < n // 2:
                return False
            trials = _journal_trials(out, name)
            at_kill["rows"] = read_trials(out)
            at_kill["finished"] = sum(t.state in finished_states for t in trials)
            at_kill["running"] = {t.number: dict(t.params) for t in trials if t.state == TrialState.RUNNING}
            return at_kill["finished"] < n // 2 and any(at_kill["running"].values())

        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            caught = freeze_when(proc, lambda: 2 <= rows_stored() < n // 2, ok)
            if caught:
                os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait(120)
        finally:
            if proc.poll() is None:
                kill_group(proc)
        if caught:
            break
        assert rc == 0     # it ran to its end before it could be stopped in time
    else:
        pytest.fail(f"every study got too far before it could be stopped (trials {KILL_TRIALS})")
    assert rc == -signal.SIGKILL                      # it died of the signal, mid-study
    before = read_trials(out)
    pd.testing.assert_frame_equal(before, at_kill["rows"])     # nothing written after the signal
    assert 2 <= len(before) and len(_finished(before)) < n // 2
    orphans = at_kill["running"]                            # trial number -> parameters
    assert {t.number for t in _journal_trials(out, name) if t.state == TrialState.RUNNING} == set(orphans)
    res = subprocess.run(cmd + ["--resume"], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    rows = read_trials(out)
    assert rows["trial"].is_unique and len(_finished(rows)) == n
    c = load_tune_campaign(path)
    states = [t.state for t in open_study(c, c.output).trials]
    assert states.count(TrialState.COMPLETE) + states.count(TrialState.PRUNED) == n
    assert states.count(TrialState.RUNNING) == 0
    assert len(rows) == len(states)                         # every finished trial has exactly one row
    # the killed driver's RUNNING trials, by the one rule (`sweep.study`): those its last sampler
    # checkpoint lists finished in place (same number, same parameters); the others (asked after
    # it) failed, each with parameters (one asked but not yet suggested has none) re-enqueued once
    by_trial = rows.set_index("trial")
    failed = sorted(k for k in orphans if by_trial.loc[k, "state"] == "FAIL")
    for k in sorted(set(orphans) - set(failed)):
        assert by_trial.loc[k, "state"] in ("COMPLETE", "PRUNED") and json.loads(by_trial.loc[k, "params"]) == orphans[k]
    requeued = rows.dropna(subset=["requeued_from"])
    assert sorted(requeued["requeued_from"].astype(int)) == [k for k in failed if orphans[k]]
    for frm, params in zip(requeued["requeued_from"].astype(int), requeued["params"]):
        got = json.loads(params)
        assert {k: got[k] for k in orphans[frm]} == orphans[frm]
