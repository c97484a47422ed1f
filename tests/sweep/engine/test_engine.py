"""The engine end to end on a small campaign: determinism, executors, store, resume, failures."""

import os
import signal
import subprocess
import sys

import pandas as pd
import pytest
from typer.testing import CliRunner

from sweep.kinds import load_campaign
from sweep.cli import app
from sweep.engine.runner import Interrupted, run_campaign
from sweep.engine.store import Store
from sweep.engine.tasks import count_tasks, expand

from campaign_util import cont_group, freeze_when, kill_group, write_tiny

runner = CliRunner()
KEY = ["task_id", "network", "pm", "point"]


def _rows(out) -> pd.DataFrame:
    df = Store(out).read("rows")
    return df.sort_values(KEY).reset_index(drop=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An undisturbed local run of the tiny campaign."""
    tmp = tmp_path_factory.mktemp("ref")
    c = load_campaign(write_tiny(tmp))
    s = run_campaign(c, executor="local")
    assert s.tasks_run == 9 and s.tasks_failed == 0
    return _rows(c.output), Store(c.output).read("layers")


def test_task_ids_deterministic_and_distinct(tmp_path):
    c = load_campaign(write_tiny(tmp_path))
    a = [t.task_id for t in expand(c)]
    b = [t.task_id for t in expand(load_campaign(write_tiny(tmp_path)))]
    assert a == b and len(set(a)) == len(a) == 9
    # anything that changes results changes the ids
    c2 = load_campaign(write_tiny(tmp_path, extra="\n[systolic]\ndram_bw_bits_per_cycle = 64\n"))
    assert not set(a) & {t.task_id for t in expand(c2)}


def test_rows_cover_every_point_network_pm(reference):
    rows, layers = reference
    assert len(rows) == 72 * 2 * 3
    assert (rows["status"] == "ok").all()
    assert rows.groupby(["network", "pm"])["point"].nunique().eq(72).all()
    assert rows.duplicated(["network", "pm", "point"]).sum() == 0
    for col in ("J", "K", "fsram_kib", "isram_kib", "psram_kib", "area_mm2", "pm_value", "task_id"):
        assert col in rows
    # ED of the LOS schedule is the sum over layers of per-layer E*D, not E*D of the sums
    ed = rows[rows["pm"] == "ED"]
    assert (ed["pm_value"] <= ed["energy_pj"] * ed["cycles"] * (1 + 1e-12)).all()
    # per-layer detail of the best point of each chunk: AlexNet has 8 layers per (chunk, pm)
    alex = layers[(layers["network"] == "alexnet_deepopt")]
    assert len(alex) == 9 * 3 * 8


def test_local_and_ray_give_identical_rows(tmp_path, reference, ray_session):
    c = load_campaign(write_tiny(tmp_path, flush=1000))
    s = run_campaign(c, executor="ray")
    assert s.tasks_run == 9
    pd.testing.assert_frame_equal(_rows(c.output), reference[0])


def test_same_campaign_twice_identical(tmp_path, reference):
    c = load_campaign(write_tiny(tmp_path, flush=1000))
    run_campaign(c, executor="local")
    pd.testing.assert_frame_equal(_rows(c.output), reference[0])


def test_interrupt_then_resume_gives_exactly_the_rows(tmp_path, reference):
    c = load_campaign(write_tiny(tmp_path))

    def progress(done, total):
        if done >= 4:
            raise KeyboardInterrupt

    with pytest.raises(Interrupted) as ei:
        run_campaign(c, executor="local", progress=progress)
    stored = Store(c.output).stored_task_ids()
    assert 1 <= len(stored) < 9 and ei.value.summary.tasks_run == len(stored)
    s = run_campaign(c, executor="local", resume=True)
    assert s.tasks_skipped == len(stored) and s.tasks_run == 9 - len(stored)
    pd.testing.assert_frame_equal(_rows(c.output), reference[0])


def test_existing_output_needs_resume_and_foreign_dir_refused(tmp_path, reference):
    path = write_tiny(tmp_path)
    c = load_campaign(path)
    run_campaign(c, executor="local")
    before = sorted(p.name for p in (c.output / "rows").iterdir())
    res = runner.invoke(app, ["run", str(path), "--executor", "local"])
    assert res.exit_code == 2 and "--resume" in res.output
    assert sorted(p.name for p in (c.output / "rows").iterdir()) == before
    # another campaign's directory
    other = write_tiny(tmp_path, out=c.output, extra="\n[systolic]\nb_p = 16\n")
    res = runner.invoke(app, ["run", str(other), "--executor", "local", "--resume"])
    assert res.exit_code == 2 and "another campaign" in res.output
    # a foreign directory
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "data.txt").write_text("x")
    res = runner.invoke(app, ["run", str(path), "--executor", "local", "--out", str(foreign)])
    assert res.exit_code == 2 and "not a dse-sweep result directory" in res.output
    assert sorted(p.name for p in foreign.iterdir()) == ["data.txt"]
    res = runner.invoke(app, ["report", str(foreign)])
    assert res.exit_code == 2 and "not a dse-sweep result directory" in res.output


def test_failing_task_becomes_error_row(tmp_path, monkeypatch, reference):
    from mappers.systolic import deepopt
    orig = deepopt.DeepOptMapper.run

    def flaky(self, problem, unit, params):
        if unit.spec["start"] == 16:
            raise RuntimeError("solver exploded")
        return orig(self, problem, unit, params)

    monkeypatch.setattr(deepopt.DeepOptMapper, "run", flaky)
    c = load_campaign(write_tiny(tmp_path))
    s = run_campaign(c, executor="local")
    assert s.tasks_failed == 1 and s.tasks_run == 9
    rows = Store(c.output).read("rows")
    err = rows[rows["status"] == "error"]
    assert len(err) == 1 and "solver exploded" in err["error"].iloc[0]
    assert (rows["status"] == "ok").sum() == len(reference[0]) - 8 * 2 * 3


#: J/K range ends of the kill tests' campaigns, one point per task: the tiny grid (72 tasks of about
#: 30 ms), and, only if a run of it ended before it could be interrupted (a very loaded machine),
#: a larger grid (200 tasks).
KILL_GRIDS = (24, 32)


@pytest.fixture(scope="module")
def one_point_reference(tmp_path_factory):
    """jk_stop -> rows of an undisturbed in-process run of the tiny campaign at one point per
    task (computed on first use, shared by the kill tests)."""
    tmp = tmp_path_factory.mktemp("kill_ref")
    cache = {}

    def get(jk_stop: int) -> pd.DataFrame:
        if jk_stop not in cache:
            c = load_campaign(write_tiny(tmp, out=tmp / f"ref{jk_stop}", chunk=1, name=f"ref{jk_stop}.toml",
                                         jk_stop=jk_stop))
            s = run_campaign(c, executor="local")
            assert s.tasks_failed == 0 and s.tasks_run == s.tasks_total
            cache[jk_stop] = _rows(c.output)
        return cache[jk_stop]
    return get


def _run_and_interrupt(tmp_path, sig: int, after: int):
    """`sweep run` of a one-point-per-task campaign in a subprocess (its own session), stopped with
    SIGSTOP once it has stored at least ``after`` tasks; while it is stopped, the store is checked
    to hold at least ``after`` and fewer than half of the tasks; then ``sig`` is sent (to the
    process group for SIGKILL, to the driver otherwise), the group continued (SIGCONT) and the
    process reaped. So ``sig`` certainly reached a run in progress. If the run ended before it
    could be stopped there, the same with a longer campaign (`KILL_GRIDS`).

    Returns (cmd, env, out, jk_stop, total tasks, task_ids stored when signalled, returncode,
    stderr of the run)."""
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    for jk_stop in KILL_GRIDS:
        path = write_tiny(tmp_path, out=tmp_path / f"out{jk_stop}", chunk=1, name=f"run{jk_stop}.toml",
                          jk_stop=jk_stop)
        c = load_campaign(path)
        out, total = c.output, count_tasks(c)
        cmd = [sys.executable, "-m", "sweep.cli", "run", str(path), "--executor", "local"]
        log = tmp_path / f"run{jk_stop}.err"
        store = Store(out)
        frozen: set[str] = set()

        def ok() -> bool:
            frozen.clear()
            frozen.update(store.stored_task_ids())
            return after <= len(frozen) < total // 2

        with open(log, "w") as err:
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
            try:
                if freeze_when(proc, lambda: after <= len(store.fragments()) < total // 2, ok):
                    if sig == signal.SIGKILL:
                        os.killpg(proc.pid, sig)
                    else:
                        os.kill(proc.pid, sig)
                    cont_group(proc)
                    rc = proc.wait(120)
                    return cmd, env, out, jk_stop, total, frozen, rc, log.read_text()
                rc = proc.wait(120)   # it ran to its end before it could be stopped in time
            finally:
                if proc.poll() is None:
                    kill_group(proc)
        assert rc == 0, log.read_text()[-3000:]
    pytest.fail(f"every run ended before it could be interrupted (grids {KILL_GRIDS})")


def _resume_equals_reference(cmd, env, out, ref: pd.DataFrame) -> None:
    res = subprocess.run(cmd + ["--resume"], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    pd.testing.assert_frame_equal(_rows(out), ref)


@pytest.mark.slow
def test_sigkill_then_resume(tmp_path, one_point_reference):
    """SIGKILL the driver while it writes; --resume ends with exactly the undisturbed rows."""
    cmd, env, out, jk_stop, total, frozen, rc, err = _run_and_interrupt(tmp_path, signal.SIGKILL, 3)
    assert rc == -signal.SIGKILL, err[-3000:]          # it died of the signal, not of its own end
    stored = Store(out).stored_task_ids()
    assert stored == frozen and 3 <= len(stored) < total // 2   # nothing written after the signal
    ref = one_point_reference(jk_stop)
    assert ref["task_id"].nunique() == total
    _resume_equals_reference(cmd, env, out, ref)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_stops_cleanly_and_resumes(tmp_path, one_point_reference, sig):
    """SIGTERM (schedulers, `kill`) stops like Ctrl-C (SIGINT): exit 130, stored tasks kept,
    resumable."""
    cmd, env, out, jk_stop, total, frozen, rc, err = _run_and_interrupt(tmp_path, sig, 2)
    assert rc == 130, err[-3000:]
    assert "interrupted" in err and "--resume" in err
    stored = Store(out).stored_task_ids()
    # the tasks stored before the signal are kept; the one running may still have been stored
    assert frozen <= stored and len(stored) <= len(frozen) + 1 < total
    ref = one_point_reference(jk_stop)
    assert ref["task_id"].nunique() == total
    _resume_equals_reference(cmd, env, out, ref)
