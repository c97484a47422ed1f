"""Faults: a Ray worker process killed mid-task, a worker node removed mid-campaign, the head node
lost, a task that raises. Each run ends with exactly the rows of an undisturbed run (same task_ids, no duplicates,
same values; the measured wall_s / solver_s aside). The driver killed with SIGKILL mid-write and
resumed is tests/test_engine.py::test_sigkill_then_resume.
"""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from sweep.kinds import load_campaign
from sweep.engine.runner import run_campaign
from sweep.engine.store import Store
from paths import SCRIPTS

sys.path.insert(0, str(SCRIPTS))
from ray_cluster import MEASURED, LocalCluster, cluster_env, same_rows  # noqa: E402
from synthetic_campaign import write_campaign  # noqa: E402


def _rows(out) -> pd.DataFrame:
    df = Store(out).read("rows")
    assert not df.duplicated(["task_id", "problem_id", "unit_index"]).any()
    return df.drop(columns=[c for c in MEASURED if c in df]).sort_values(["problem_id", "unit_index"]).reset_index(drop=True)


def _campaign(tmp_path: Path, name: str, tasks: int = 48, units: int = 4, samples: int = 40_000):
    """A loop-nest campaign of tasks // units tasks of about 0.1-0.5 s each, flushed per task."""
    return write_campaign(tmp_path / name, tasks, layers=12, units_per_task=units, samples=samples,
                          flush_rows=1)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An undisturbed in-process run of the fault campaigns."""
    tmp = tmp_path_factory.mktemp("faults_ref")
    c = load_campaign(_campaign(tmp, "ref"))
    s = run_campaign(c, executor="local")
    assert s.tasks_failed == 0
    return c.output


def _proc_cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _busy_workers(raylet_marker: str) -> list[int]:
    """pids of Ray workers running a sweep task (process title ``ray::_timed``, the executor's remote function) whose
    raylet's command line contains ``raylet_marker`` (so only this test's Ray is touched)."""
    raylets = {p for p in os.listdir("/proc") if p.isdigit()
               and "raylet" in _proc_cmdline(p) and raylet_marker in _proc_cmdline(p)}
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or not _proc_cmdline(p).startswith("ray::_timed"):
            continue
        try:
            ppid = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            continue
        if ppid in raylets:
            out.append(int(p))
    return out


@pytest.mark.slow
def test_worker_process_killed_mid_task(tmp_path, reference, ray_session):
    """SIGKILL a Ray worker while it runs a task: Ray retries it, the rows are the undisturbed ones."""
    marker = ray_session._private.worker.global_worker.node.get_session_dir_path()
    c = load_campaign(_campaign(tmp_path, "kill"))
    killed: list[int] = []
    stop = threading.Event()

    def killer():
        deadline = time.time() + 60
        while not stop.is_set() and time.time() < deadline and len(killed) < 2:
            for pid in _busy_workers(marker):
                if pid not in killed:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    time.sleep(0.5)  # let Ray notice and resubmit before the next kill
                    break
            time.sleep(0.01)

    th = threading.Thread(target=killer, daemon=True)
    th.start()
    try:
        s = run_campaign(c, executor="ray")
    finally:
        stop.set()
        th.join()
    assert killed, "no busy worker process was found to kill"
    assert s.tasks_failed == 0
    pd.testing.assert_frame_equal(_rows(c.output), _rows(reference))


def _kill_node_mid_run(cl, node: int, cmd: list[str], env: dict, out: Path):
    """Run ``cmd`` (a `sweep run` on cluster ``cl``), SIGKILL node ``node`` (0: the head) once two
    fragments are stored, wait for the driver. Returns (process, its stderr, tasks stored at the kill,
    seconds from the kill to the driver's exit)."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None and len(Store(out).fragments()) < 2:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before the node could be removed"
        before = len(Store(out).stored_task_ids())
        cl.kill_node(node)
        t0 = time.time()
        _, err = proc.communicate(timeout=240)
        return proc, err, before, time.time() - t0
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow
def test_worker_node_removed_mid_campaign(tmp_path, reference):
    """A two-node cluster (head 1 CPU, worker node 1 CPU), the worker node SIGKILLed once some
    rows are stored: the campaign completes (Ray retries the lost tasks on the head) or, if the
    driver was attached to the lost node, `--resume` completes it; exactly the undisturbed rows."""
    path = _campaign(tmp_path, "node")
    out = tmp_path / "node_out"
    env = cluster_env()
    with LocalCluster(tmp_path.parent / f"rc{os.getpid()}", workers=1, head_cpus=1) as cl:
        cmd = [sys.executable, "-m", "sweep.cli", "run", str(path), "--address", cl.address, "--out", str(out)]
        proc, err, _, _ = _kill_node_mid_run(cl, 1, cmd, env, out)
        if proc.returncode != 0:  # the driver itself went down with the node
            res = subprocess.run(cmd + ["--resume"], env=env, capture_output=True, text=True, timeout=240)
            assert res.returncode == 0, (proc.returncode, err[-2000:], res.stderr[-2000:])
    rows = Store(out).read("rows")
    assert (rows["status"] == "ok").all(), (proc.returncode, err[-2000:], rows["error"].dropna().unique()[:3])
    ok, msg = same_rows(out, reference)
    assert ok, (msg, proc.returncode, err[-2000:])


@pytest.mark.slow
def test_head_node_lost_mid_campaign(tmp_path, reference):
    """The head node SIGKILLed (every process of it) once some rows are stored: the driver says in one
    line that the cluster was lost and how to resume, exits 1 within seconds (before: a 60 s hang, then
    only Ray's C++ log line), every result it had received is stored, and a local `--resume`
    completes exactly the undisturbed rows."""
    path = _campaign(tmp_path, "head")
    out = tmp_path / "head_out"
    env = cluster_env()
    with LocalCluster(tmp_path.parent / f"rh{os.getpid()}", workers=1, head_cpus=0) as cl:
        cmd = [sys.executable, "-m", "sweep.cli", "run", str(path), "--address", cl.address, "--out", str(out)]
        proc, err, before, took = _kill_node_mid_run(cl, 0, cmd, env, out)
    lines = [ln for ln in err.splitlines() if "was lost" in ln]
    assert proc.returncode == 1 and len(lines) == 1 and "resume with: sweep run" in lines[0], err[-2000:]
    assert "Traceback" not in err and took < 30, (took, err[-2000:])
    assert len(Store(out).stored_task_ids()) >= before
    res = subprocess.run(cmd[:5] + ["--executor", "local", "--out", str(out), "--resume"], env=env,
                         capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr[-2000:]
    ok, msg = same_rows(out, reference)
    assert ok, msg


def test_a_gcs_that_does_not_answer_is_seen():
    """The probe a waiting driver makes (`gcs_answers`): a listening port answers, a closed one not."""
    import socket
    from sweep.engine.cluster import gcs_answers
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    try:
        assert gcs_answers(f"127.0.0.1:{port}")
    finally:
        srv.close()
    assert not gcs_answers(f"127.0.0.1:{port}", timeout=0.5)


def test_failing_unit_becomes_error_row_and_the_rest_goes_on(tmp_path, monkeypatch, reference):
    """A solver failure on one problem: one row with status "error" and the exception, every
    other row as in the undisturbed run; the store stays resumable (the error row is stored)."""
    from mappers.loop_order.random import RandomMapper
    orig = RandomMapper.run
    bad_seed = {}

    def flaky(self, problem, unit, params):
        if problem.layer.name == "l3" and params["seed"] == 1:
            bad_seed["hit"] = True
            raise RuntimeError("solver failed: infeasible")
        return orig(self, problem, unit, params)

    monkeypatch.setattr(RandomMapper, "run", flaky)
    c = load_campaign(_campaign(tmp_path, "err"))
    s = run_campaign(c, executor="local")
    assert bad_seed and s.tasks_failed == 1
    rows, ref = _rows(c.output), _rows(reference)
    err = rows[rows["status"] == "error"]
    assert len(err) == 1 and "solver failed: infeasible" in err["error"].iloc[0]
    ok = rows[rows["status"] == "ok"]
    cols = ["problem_id", "unit_index", "value", "energy_pj", "latency_cycles", "evaluations"]
    pd.testing.assert_frame_equal(ok[cols].reset_index(drop=True),  # (None in the error row: floats)
                                  ref[~ref["problem_id"].isin(err["problem_id"])][cols].reset_index(drop=True),
                                  check_dtype=False)
    assert set(rows["task_id"]) == set(ref["task_id"])



#: A driver that starts a detached actor on each node of a `LocalCluster` (their worker processes
#: outlive it), prints their pids and exits.
_ACTORS = """
import os, sys, ray
ray.init(address=sys.argv[1], namespace="stop_test", log_to_driver=False)

@ray.remote(num_cpus=0)
class Pid:
    def pid(self):
        return os.getpid()

actors = [Pid.options(resources={r: 0.01}, lifetime="detached", name=r).remote() for r in ("head", "worker1")]
print(*ray.get([a.pid.remote() for a in actors]), flush=True)
"""


def _members(ids) -> list[tuple[int, str]]:
    """(pid, state) of every process whose process group or session is in ``ids`` (/proc)."""
    out = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            f = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(f[2]) in ids or int(f[3]) in ids:
            out.append((int(name), f[0]))
    return out


@pytest.mark.slow
def test_local_cluster_stop_leaves_no_process(tmp_path):
    """`LocalCluster.stop` returns only once every process of its nodes has exited: none is left
    in their process groups, nor in their sessions, where Ray's worker processes have process
    groups of their own -- here a detached actor on each node, whose graceful shutdown takes Ray
    about 30 s, so that a short ``timeout`` makes `stop` SIGKILL them."""
    cl = LocalCluster(tmp_path.parent / f"rs{os.getpid()}", workers=1, head_cpus=1).start()
    try:
        res = subprocess.run([sys.executable, "-c", _ACTORS, cl.address], env=cluster_env(),
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr[-2000:]
        actors = [int(x) for x in res.stdout.split()]
        groups = [p.pid for p in cl.nodes]
        running = {pid for pid, state in _members(groups) if state != "Z"}
        assert len(actors) == 2 and set(actors) <= running, (actors, running)
        assert {os.getpgid(a) for a in actors}.isdisjoint(groups)  # workers: groups of their own
    finally:
        t0 = time.monotonic()
        cl.stop(timeout=5)
        stop_s = time.monotonic() - t0
    # every process has exited: none is left, or only as a zombie (exited, not yet reaped by its
    # parent -- for an orphan, init, which in some containers never reaps)
    left = _members(groups)
    assert all(state == "Z" for _, state in left), (left, stop_s)
    for pid in groups + actors:
        try:
            os.killpg(pid, 0) if pid in groups else os.kill(pid, 0)
        except ProcessLookupError:
            continue
        assert left, f"{pid} still alive after stop"
    assert stop_s < 5 + 30
