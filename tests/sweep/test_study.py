"""The one study driver (`sweep.study`): the sampler registry, and its one orphan rule tested
with a real kill -- `sweep tune` and an NSGA-II architecture search, SIGKILLed while trials run
and resumed, end with the study an uninterrupted run gives (same trial numbers, parameters,
values, intermediate values, states, best trial) and the same rows."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from campaign_util import freeze_when, kill_group
from paths import REPO
from sweep import study as st
from sweep.kinds import load_campaign
from sweep.config.designspace import SAMPLERS as SEARCH_SAMPLERS
from sweep.config.tune_campaign import SAMPLERS as TUNE_SAMPLERS, load_tune_campaign
from sweep.engine.runner import run_campaign
from sweep.engine.store import Store
from sweep.tune.driver import read_trials, run_tune
from tests.tune_util import write_tune

ENV = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")


# -- the registry -------------------------------------------------------------------------------------
def test_one_registry_decides_the_sampler_names():
    assert SEARCH_SAMPLERS == st.sampler_names("archsearch") == ("grid", "random", "tpe", "nsga2")
    assert set(TUNE_SAMPLERS) == set(st.sampler_names("tune")) == {"tpe", "cmaes", "random"}
    assert [n for n in SEARCH_SAMPLERS if st.runs_study(n, "archsearch")] == ["tpe", "nsga2"]
    assert all(st.runs_study(n, "tune") for n in TUNE_SAMPLERS)
    assert not st.runs_study("nope", "archsearch")
    with pytest.raises(ValueError, match="sampler = 'grid': not an Optuna sampler"):
        st.make_sampler("grid", 0)


# -- kill, resume, compare (a SIGKILL at a point the driver reaches, then one within a round) ----------------------------------------------------------------------------
def _study_key(out: Path, name: str):
    """Everything a study decides, per trial, in trial order; and its best trial(s)."""
    study = st.load_study(out, name)
    trials = [(t.number, t.state.name, t.params, t.values, dict(t.intermediate_values),
               t.user_attrs.get("design_id"), t.user_attrs.get("full_params")) for t in study.trials]
    best = sorted(t.number for t in study.best_trials) if len(study.directions) > 1 else study.best_trial.number
    return trials, best


def _checkpoint_covers_running(out: Path, name: str) -> bool:
    """Checked with the driver stopped: the journal's lock is free, the checkpoint is written and
    lists every RUNNING trial (with all its parameters), and at least one trial is RUNNING: a
    kill here leaves orphans that the one rule finishes in place."""
    if os.path.lexists(out / "study.journal.lock") or os.path.lexists(out / f".{st.CHECKPOINT}.tmp"):
        return False
    try:
        steps = pickle.loads((out / st.CHECKPOINT).read_bytes())["steps"]
    except (OSError, EOFError, pickle.UnpicklingError):
        return False
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    storage = JournalStorage(JournalFileBackend(str(out / st.JOURNAL)))
    trials = storage.get_all_trials(storage.get_study_id_from_name(name), deepcopy=False)
    running = [t for t in trials if t.state.name == "RUNNING"]
    return bool(running) and all(t.number in steps and t.params for t in running)


def _kill_mid_study(cmd: list[str], started, out: Path, name: str) -> None:
    """Run ``cmd``; once ``started()`` holds, SIGKILL its process group at a point where trials are
    in flight (`_checkpoint_covers_running`). Fails if the run ended first."""
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        caught = freeze_when(proc, started, lambda: started() and _checkpoint_covers_running(out, name))
        if caught:
            os.killpg(proc.pid, signal.SIGKILL)
        rc = proc.wait(120)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    assert caught and rc == -signal.SIGKILL, f"the run ended (rc {rc}) before it could be killed mid-study"


def test_killed_tune_resumes_to_the_uninterrupted_study(tmp_path):
    n = 14
    ref = load_tune_campaign(write_tune(tmp_path, tmp_path / "ref", name="ref.toml", trials=n))
    run_tune(ref, executor="local", heldout=False)
    path = write_tune(tmp_path, tmp_path / "killed", name="killed.toml", trials=n)
    c = load_tune_campaign(path)
    out = Path(c.output)

    def started() -> bool:
        rows = out / "rows"
        return rows.is_dir() and 2 <= len(list(rows.glob("part-*.parquet"))) < n - 4
    _kill_mid_study([sys.executable, "-m", "sweep.cli", "tune", str(path), "--executor", "local"],
                    started, out, c.name)
    running = [t.number for t in st.load_study(out, c.name).trials if t.state.name == "RUNNING"]
    assert running
    s = run_tune(c, resume=True, executor="local", heldout=False)
    assert s.orphans == len(running)                       # adopted, none failed and re-enqueued
    assert _study_key(out, c.name) == _study_key(Path(ref.output), ref.name)
    cols = ["trial", "state", "value_gap", "params", "full_params", "layers_done", "layer_gaps", "requeued_from"]
    pd.testing.assert_frame_equal(read_trials(out)[cols], read_trials(ref.output)[cols])
    assert s.best["trial"] == run_tune(ref, resume=True, executor="local", heldout=False).best["trial"]


NSGA2 = """
name = "nsga2_kill"
networks = [{{file = "{net}"}}]
objectives = ["edp"]
seeds = [3]
[architectures]
kind = "loopnest"
template = "eyeriss_like"
[architectures.grid]
memory.sram_1M.size_kib = [128, 256, 1024]
array.D1 = [2, 4, 7, 14]
array.D2 = [3, 6, 12]
constraints = ["array.D1 * array.D2 <= 84 or memory.sram_1M.size_kib == 1024"]
[[mappers]]
name = "salsa"
params = {{chains = 1, iterations = 200, descent = false}}
[search]
sampler = "nsga2"
trials = 20
seed = 1
batch = 2
objectives = ["edp", "area_mm2"]
"""


def test_killed_nsga2_search_resumes_to_the_uninterrupted_study(tmp_path):
    path = tmp_path / "nsga2.toml"
    path.write_text(NSGA2.format(net=(REPO / "tests" / "data" / "tiny_net.csv").as_posix()))
    ref = load_campaign(path, output=tmp_path / "ref")
    run_campaign(ref, executor="local")
    out = tmp_path / "killed"

    def started() -> bool:
        return 4 <= len(Store(out).fragments("totals")) < 9
    _kill_mid_study([sys.executable, "-m", "sweep.cli", "run", str(path), "--executor", "local", "--out", str(out)],
                    started, out, ref.name)
    c = load_campaign(path, output=out)
    run_campaign(c, executor="local", resume=True)
    assert _study_key(out, c.name) == _study_key(tmp_path / "ref", ref.name)
    drop = ["wall_s", "solver_s", "code_version", "config_hash"]
    for table, keys in (("totals", ["design_id", "network"]), ("rows", ["design_id", "network", "layer_index"])):
        a, b = (Store(d).read(table).drop(columns=drop, errors="ignore").sort_values(keys).reset_index(drop=True)
                for d in (out, tmp_path / "ref"))
        pd.testing.assert_frame_equal(a, b)


#: Ctrl-C after these calls of `_advance` in `_staggered_tune`: 3 and 11 with both trials in flight at
#: the same layer, 7 and 8 with one of them already advanced in the interrupted round.
CALLS = [3, 7, 8, 11]


def _interrupt_after(monkeypatch, module, name: str, calls: int) -> None:
    """Make ``module.name`` raise KeyboardInterrupt (Ctrl-C) right after its ``calls``-th call."""
    real, n = getattr(module, name), [0]

    def wrapped(*args, **kwargs):
        out = real(*args, **kwargs)
        n[0] += 1
        if n[0] == calls:
            raise KeyboardInterrupt
        return out
    monkeypatch.setattr(module, name, wrapped)


def _staggered_tune(tmp_path, name: str):
    """The tiny tuning campaign pruning from the first layer on, so that the two trials in flight
    are at different layers (a pruned trial's slot is refilled with a new trial)."""
    path = write_tune(tmp_path, tmp_path / name, name=f"{name}.toml", trials=10)
    path.write_text(path.read_text().replace("[pruner]\nname = \"median\"\nn_startup_trials = 2",
                                             "[pruner]\nname = \"median\"\nn_startup_trials = 2\nn_warmup_steps = 0"))
    return load_tune_campaign(path)


@pytest.mark.parametrize("calls", CALLS)
def test_tune_interrupted_within_a_round_resumes_to_the_same_study(tmp_path, monkeypatch, calls):
    """Ctrl-C after the first trial of a round (2 in flight) was advanced, reported or told: the
    resumed driver runs the other trial's layer first, then the round goes on as it would have."""
    from sweep.engine.runner import Interrupted
    from sweep.tune import driver
    ref = _staggered_tune(tmp_path, "ref")
    run_tune(ref, executor="local", heldout=False)
    c = _staggered_tune(tmp_path, "int")
    with monkeypatch.context() as m:
        _interrupt_after(m, driver, "_advance", calls)
        with pytest.raises(Interrupted):
            run_tune(c, executor="local", heldout=False)
    assert any(t.state.name == "RUNNING" for t in st.load_study(c.output, c.name).trials)
    s = run_tune(c, resume=True, executor="local", heldout=False)
    assert s.orphans >= 1
    assert _study_key(Path(c.output), c.name) == _study_key(Path(ref.output), ref.name)


@pytest.mark.parametrize("sampler, calls", [("nsga2", 3), ("nsga2", 9), ("tpe", 5)])
def test_search_interrupted_within_a_round_resumes_to_the_same_study(tmp_path, monkeypatch, sampler, calls):
    """Ctrl-C after the first trial of a round (batch 2) was told: the resumed driver tells the
    other one (its design already stored, not mapped again), then asks on as it would have."""
    from sweep.engine.runner import Interrupted
    from sweep.search import driver
    path = tmp_path / "c.toml"
    path.write_text(NSGA2.format(net=(REPO / "tests" / "data" / "tiny_net.csv").as_posix())
                    .replace('"nsga2"', f'"{sampler}"').replace("iterations = 200", "iterations = 30"))
    ref = load_campaign(path, output=tmp_path / "ref")
    run_campaign(ref, executor="local")
    c = load_campaign(path, output=tmp_path / "int")
    with monkeypatch.context() as m:
        _interrupt_after(m, driver, "tell", calls)
        with pytest.raises(Interrupted):
            run_campaign(c, executor="local")
    assert any(t.state.name == "RUNNING" for t in st.load_study(c.output, c.name).trials)
    run_campaign(c, executor="local", resume=True)
    assert _study_key(tmp_path / "int", c.name) == _study_key(tmp_path / "ref", ref.name)


def test_a_study_seeded_at_the_top_of_the_seed_range_resumes(tmp_path):
    """The largest seed a campaign may give (`sweep.config.validation.SEED_MAX`, numpy's 2**32 - 1)
    plus the trials already in the study stays a seed numpy takes when the study is reopened."""
    import optuna

    from sweep.config.validation import SEED_MAX
    s = st.open_study(tmp_path, "top", 1, "tpe", SEED_MAX)
    s.tell(s.ask({"x": optuna.distributions.FloatDistribution(0, 1)}), 0.5)
    again = st.open_study(tmp_path, "top", 1, "tpe", SEED_MAX)   # seed SEED_MAX + 1: out of numpy's range before
    assert len(again.trials) == 1


def test_an_interrupted_search_counts_the_designs_stored_not_the_repeats_told(tmp_path, monkeypatch):
    """Issue 43, item 7: an NSGA-II search on a small grid interrupted after many suggestions said
    "137 task(s) stored by this run, 629 in all" with 137 designs stored: "in all" added the
    suggestions answered from storage (repeats). Both counts are the designs in the store."""
    from typer.testing import CliRunner

    from sweep.cli import app
    from sweep.search import driver
    path = tmp_path / "c.toml"
    path.write_text(NSGA2.format(net=(REPO / "tests" / "data" / "tiny_net.csv").as_posix())
                    .replace("iterations = 200", "iterations = 30").replace("trials = 20", "trials = 30"))
    out = tmp_path / "out"
    told = []
    real = driver.tell

    def tell(study, trial, space, known, i, objectives):   # Ctrl-C once repeats have been told
        real(study, trial, space, known, i, objectives)
        did = None if i is None else space.design_id(space.point(i))
        told.append(did)
        if len(told) > len(set(told)) + 3:
            raise KeyboardInterrupt
    monkeypatch.setattr(driver, "tell", tell)
    r = CliRunner().invoke(app, ["run", str(path), "--executor", "local", "--out", str(out)])
    assert r.exit_code == 130, r.output
    designs = Store(out).read("totals")["design_id"].nunique()
    assert len(told) > designs + 3          # suggestions answered from storage were told
    assert f"interrupted: {designs} task(s) stored by this run, {designs} of 30 in all, in" in r.output  # 30 trials


def test_a_resumed_search_reports_the_whole_study_not_its_last_session(tmp_path, monkeypatch):
    """Issue 43, item 7: a resumed NSGA-II search said "48 unvisited designs drawn instead" where
    the undisturbed run said 104 (only its own session's), and "86 row(s) infeasible" for the 302
    the directory holds. Unvisited designs are counted over the study; row counts say they are the
    session's."""
    from rich.console import Console

    from sweep.commands.text import print_run_outcome
    from sweep.engine.runner import Interrupted
    from sweep.search import driver
    path = tmp_path / "c.toml"
    path.write_text(NSGA2.format(net=(REPO / "tests" / "data" / "tiny_net.csv").as_posix())
                    .replace("iterations = 200", "iterations = 30").replace("trials = 20", "trials = 34"))
    ref = run_campaign(load_campaign(path, output=tmp_path / "ref"), executor="local").search
    # every one of the 34 designs: the sampler repeats itself and designs are drawn, twice before
    # the 170th suggestion (trials 150 and 151) and again after it
    drawn = [t.number for t in st.load_study(tmp_path / "ref", "nsga2_kill").trials if t.user_attrs.get("explore")]
    assert ref["explored"] == len(drawn) and min(drawn) < 170 < max(drawn)
    c = load_campaign(path, output=tmp_path / "int")
    with monkeypatch.context() as m:
        _interrupt_after(m, driver, "tell", 170)
        with pytest.raises(Interrupted):
            run_campaign(c, executor="local")
    s = run_campaign(c, executor="local", resume=True)
    assert s.resumed and s.search["designs"] == ref["designs"]
    assert s.search["explored"] == ref["explored"]
    assert f"{ref['explored']} unvisited designs drawn instead" in s.search["why_explored"]
    s.rows_by_status, s.first_reason = {"ok": 5, "infeasible": 3}, {"infeasible": "no mapping fits"}
    con = Console(record=True, width=200)
    print_run_outcome(s, con)
    assert "3 row(s) infeasible written by this run; the first: no mapping fits" in con.export_text()


def test_the_checkpoint_pickles_a_sampler_holding_a_lock():
    """Optuna 5.1's GA samplers (NSGA-II) hold a ``threading.Lock``, which plain pickle refuses
    ("cannot pickle '_thread.lock' object": every NSGA-II search failed at its first checkpoint);
    the checkpoint writes it as a new, unlocked lock, and the sampler draws on as before."""
    import pickle
    import threading

    import optuna
    from sweep.study import _pickled

    held = {"lock": threading.Lock(), "n": 3}
    held["lock"].acquire()
    with pytest.raises(TypeError):
        pickle.dumps(held)
    back = pickle.loads(_pickled(held))
    assert back["n"] == 3 and back["lock"].acquire(blocking=False)   # a fresh lock, not the held one
    sampler = optuna.samplers.NSGAIISampler(seed=3)
    again = pickle.loads(_pickled(sampler))
    assert type(again) is type(sampler)
