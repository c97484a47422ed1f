"""The engine end to end on a small campaign: determinism, executors, store, resume, failures."""

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
from typer.testing import CliRunner

from sweep.campaigns.campaign import load_campaign
from sweep.cli import app
from sweep.engine.runner import Interrupted, run_campaign
from sweep.engine.store import Store
from sweep.engine.tasks import expand

from campaign_util import write_tiny

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
        if unit.budget["start"] == 16:
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


def _start_run_and_wait(tmp_path, fragments: int, **popen):
    """An undisturbed reference run, then `sweep run` in a subprocess, returned once it has
    written ``fragments`` rows fragments (or finished). Returns (ref campaign, proc, cmd, env, out)."""
    ref = load_campaign(write_tiny(tmp_path, out=tmp_path / "ref", chunk=1, name="ref.toml"))
    run_campaign(ref, executor="local")
    path = write_tiny(tmp_path, chunk=1)
    out = tmp_path / "out"
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    cmd = [sys.executable, "-m", "sweep.cli", "run", str(path), "--executor", "local"]
    proc = subprocess.Popen(cmd, env=env, **popen)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if (out / "rows").is_dir() and len(list((out / "rows").glob("part-*.parquet"))) >= fragments:
            break
        time.sleep(0.002)
    return ref, proc, cmd, env, out


def _resume_equals_reference(cmd, env, out, ref) -> None:
    res = subprocess.run(cmd + ["--resume"], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    pd.testing.assert_frame_equal(_rows(out), _rows(ref.output))


@pytest.mark.slow
def test_sigkill_then_resume(tmp_path):
    """SIGKILL the driver while it writes; --resume ends with exactly the undisturbed rows."""
    ref, proc, cmd, env, out = _start_run_and_wait(
        tmp_path, 3, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    killed = proc.poll() is None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    n = len(Store(out).stored_task_ids())
    assert n >= 3
    if killed:
        assert n < 72
    _resume_equals_reference(cmd, env, out, ref)


@pytest.mark.slow
def test_sigterm_stops_cleanly_and_resumes(tmp_path):
    """SIGTERM (schedulers, `kill`) stops like Ctrl-C: exit 130, stored tasks kept, resumable."""
    ref, proc, cmd, env, out = _start_run_and_wait(
        tmp_path, 2, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        if proc.returncode == 130:
            assert "--resume" in err
        else:  # finished before the signal arrived
            assert proc.returncode == 0
    else:
        proc.communicate()
    _resume_equals_reference(cmd, env, out, ref)
