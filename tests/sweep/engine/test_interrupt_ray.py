"""Ctrl-C while Ray completes tasks: exit 130 with the resume command, no traceback, nothing the run
started left running (user report: one of four Ctrl-Cs during a search hit Ray's "Check failed ...
Tried to complete task that was not pending", exited 1 with no resume hint and left Ray's agents
running for 1.5 minutes; reproduced here 2 times in 21 with Ctrl-C 0.3-0.7 s after a run's first
fragment, on 2 cores). The first signal only raises a flag read between Ray calls; a second one
ends the process at once (`sweep.engine.signals`)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from campaign_util import write_tiny
from paths import REPO
from sweep.engine.executor import Executor, _RayProcesses
from sweep.engine.signals import interrupts_flagged, sigterm_as_interrupt
from sweep.engine.store import Store


class _FakeRay:
    """Stands in for `ray` in the executor: every `wait` finds the oldest call finished; the
    ``sig_at``-th `wait` is hit by SIGINT half way through (as Ctrl-C reaches a driver blocked in
    Ray), and records whether it ran to its end."""

    def __init__(self, sig_at: int):
        self.sig_at, self.waits, self.up, self.calls = sig_at, 0, False, []
        self.next_ref, self.done_refs = 0, []

    def is_initialized(self) -> bool:
        return self.up

    def init(self, **kw) -> None:
        self.up = True

    def remote(self, fn):
        return _Remote(self)

    def cluster_resources(self) -> dict:
        return {"CPU": 2}

    def wait(self, refs, num_returns=1, timeout=None):
        self.waits += 1
        self.calls.append("wait")
        if self.waits == self.sig_at:
            os.kill(os.getpid(), signal.SIGINT)   # delivered now; handlers run between bytecodes
            for _ in range(1000):                 # ... so a raising handler raises in this loop
                pass
        self.calls.append("wait returned")
        done = [r for r in refs if r == min(refs)]
        self.done_refs += [r for r in done if r not in self.done_refs]
        return done, [r for r in refs if r not in done]

    def get(self, ref):
        return ("result", ref), 0.0

    def cancel(self, ref, force=False) -> None:
        self.calls.append(("cancel", force))

    def shutdown(self) -> None:
        self.up = False
        self.calls.append("shutdown")


class _Remote:
    """The remote function: its calls get increasing refs (ints)."""

    def __init__(self, fake: _FakeRay):
        self.fake = fake

    def options(self, **kw):
        return self

    def remote(self, fn, item):
        self.fake.next_ref += 1
        return self.fake.next_ref


def test_a_ctrl_c_inside_a_ray_call_is_read_between_calls_and_nothing_is_cancelled(monkeypatch):
    """Before: KeyboardInterrupt raised inside `ray.wait` ("wait returned" missing), then
    ``ray.cancel(force=True)`` of every pending call: the race that aborted the driver."""
    fake = _FakeRay(sig_at=4)
    monkeypatch.setitem(sys.modules, "ray", fake)
    got = []
    with pytest.raises(KeyboardInterrupt):
        with Executor("ray", num_cpus=2, max_in_flight=3) as ex:
            for item, result, error in ex.imap(len, ["a", "bb", "ccc", "dddd", "eeeee", "ffffff", "g"]):
                got.append((item, result[1]))
    assert fake.calls.count("wait") == fake.calls.count("wait returned") >= 4   # no wait cut in half
    assert not [c for c in fake.calls if isinstance(c, tuple)]                 # no ray.cancel at all
    assert fake.calls[-1] == "shutdown"
    # every call found finished was handed to the caller (to store) before the interrupt, in order
    assert [ref for _, ref in got] == fake.done_refs and len(got) >= 4
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_first_signal_raises_a_flag_and_sigterm_acts_as_ctrl_c():
    with interrupts_flagged() as flag, sigterm_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):
            pass
        assert flag.signals == [signal.SIGTERM]   # recorded, not raised (before: KeyboardInterrupt)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_ctrl_c_ignored_by_the_shell_stays_ignored():
    """A job started in the background by a shell without job control ignores SIGINT (POSIX); the
    flag's handler does not turn it back on."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts_flagged() as flag:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):
                pass
            assert not flag and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


_SECOND = """
import os, signal, sys, time
from sweep.engine.signals import interrupts_flagged, set_forced_exit_note
set_forced_exit_note("interrupted again: resume with: sweep run x.toml --resume")
with interrupts_flagged() as flag:
    flag.at_forced_exit.append(lambda: open(sys.argv[1], "w").write("cleaned up"))
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)
    print("after the first", flush=True)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
print("not reached", flush=True)
"""


def test_a_second_ctrl_c_ends_the_process_at_once_with_130_after_cleaning_up(tmp_path):
    marker = tmp_path / "marker"
    r = subprocess.run([sys.executable, "-c", _SECOND, str(marker)], cwd=REPO, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 130, r.stderr
    assert r.stdout == "after the first\n" and "Traceback" not in r.stderr
    assert r.stderr.strip() == "interrupted again: resume with: sweep run x.toml --resume"
    assert marker.read_text() == "cleaned up"


def test_what_a_local_ray_started_is_ended_and_nothing_else(tmp_path):
    """`_RayProcesses` ends its roots' whole tree (a child that ignores SIGTERM, and its own child),
    and leaves another child of this process alone."""
    script = ("import signal, subprocess, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\ntime.sleep(60)\n")
    before = set(_children_of_me())
    root = subprocess.Popen([sys.executable, "-c", script])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        deadline = time.monotonic() + 30
        while len(_tree_of(root.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        tree = _tree_of(root.pid)
        assert len(tree) == 2
        procs = _RayProcesses()
        procs.roots = set(_children_of_me()) - before - {other.pid}
        t0 = time.monotonic()
        ended = procs.reap(grace_s=1.0)
        assert sorted(ended) == sorted(tree) and time.monotonic() - t0 < 10
        root.wait(10)
        assert not _alive(tree) and other.poll() is None
    finally:
        for p in (root, other):
            if p.poll() is None:
                p.kill()
                p.wait(10)


def _proc_stat() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, session id, state) of every process."""
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                f = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            out[int(d.name)] = (int(f[1]), int(f[3]), f[0])
    return out


def _children_of_me() -> list[int]:
    return [p for p, (pp, _, st) in _proc_stat().items() if pp == os.getpid() and st != "Z"]


def _tree_of(pid: int) -> list[int]:
    procs, out, todo = _proc_stat(), [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += [c for c, (pp, _, st) in procs.items() if pp == p and st != "Z"]
    return out


def _alive(pids) -> list[int]:
    procs = _proc_stat()
    return [p for p in pids if p in procs and procs[p][2] != "Z"]


def _in_session(sid: int) -> list[int]:
    """The live processes of session ``sid``: the run started in its own session, and every Ray
    process it starts (GCS, raylet, agents, workers: each worker in its own process group) keeps it."""
    return [p for p, (_, s, st) in _proc_stat().items() if s == sid and st not in ("Z", "X")]


def _rows(out) -> pd.DataFrame:
    return Store(out).read("rows").sort_values(["task_id", "network", "pm", "point"]).reset_index(drop=True)


def _start(cmd, env) -> subprocess.Popen:
    """A `sweep` command in its own session, Ctrl-C at its default (a shell started without job
    control would have it ignored)."""
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _sigint_while_completing(tmp_path, env, k: int, delay: float, second: float | None):
    """`sweep run` of 200 one-point tasks on a local Ray of 2 CPUs; SIGINT to its process group (as a
    terminal's Ctrl-C) ``delay`` s after its first fragment is stored (tasks complete every ~30 ms
    from then on), and again ``second`` s later if given. Returns (path, out, returncode, stderr,
    seconds from the signal to the exit, the session's processes 10 s after the exit)."""
    out = tmp_path / f"out{k}"
    path = write_tiny(tmp_path, out=out, chunk=1, name=f"c{k}.toml", jk_stop=32, extra="num_cpus = 2\n")
    p = _start([sys.executable, "-m", "sweep.cli", "run", str(path)], env)
    try:
        deadline = time.monotonic() + 120
        while not list(out.glob("rows/*.parquet")) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert p.poll() is None, f"the run ended before it could be interrupted: {p.stderr.read()[-2000:]}"
        time.sleep(delay)
        os.killpg(p.pid, signal.SIGINT)
        t0 = time.monotonic()
        if second is not None:
            time.sleep(second)
            try:
                os.killpg(p.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        err = p.communicate(timeout=120)[1]
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(30)
    deadline = time.monotonic() + 10
    while _in_session(p.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _in_session(p.pid)
    for pid in left:   # (never expected: the test fails below; do not leave them to other tests)
        os.kill(pid, signal.SIGKILL)
    return path, out, p.returncode, err, took, left


@pytest.mark.slow
def test_ctrl_c_while_ray_completes_tasks_exits_130_leaves_nothing_running_and_resumes(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}   # a Ray of its own, as a user's
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    ref = None
    for k, (delay, second) in enumerate([(0.1, None), (0.4, None), (0.7, None), (0.3, 0.3)]):
        path, out, rc, err, took, left = _sigint_while_completing(tmp_path, env, k, delay, second)
        assert rc == 130, err[-3000:]
        assert "Traceback" not in err and "Check failed" not in err, err[-3000:]
        assert f"resume with: sweep run {path} --resume" in err, err[-3000:]
        assert not left, f"processes of the run still running 10 s after it ended: {left}"
        stored = len(Store(out).stored_task_ids())
        if second is None:   # the first Ctrl-C: what finished is stored and counted, Ray stopped
            m = re.search(r"interrupted: (\d+) task\(s\) stored by this run, (\d+) of 200 in all", err)
            assert m and int(m[1]) == int(m[2]) == stored > 0, err[-3000:]
            assert took < 20
        else:                # the second: at once
            assert "interrupted again: stopped at once" in err and took < second + 5, err[-3000:]
        r = subprocess.run([sys.executable, "-m", "sweep.cli", "run", str(path), "--resume", "--executor", "local"],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        assert f"{200 - stored} task(s) run, {stored} already stored, 0 failed" in r.stderr
        if ref is None:   # an undisturbed run of the same campaign
            ref_out = tmp_path / "ref"
            ref_path = write_tiny(tmp_path, out=ref_out, chunk=1, name="ref.toml", jk_stop=32, extra="num_cpus = 2\n")
            r = subprocess.run([sys.executable, "-m", "sweep.cli", "run", str(ref_path), "--executor", "local"],
                               cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
            assert r.returncode == 0, r.stderr[-3000:]
            ref = _rows(ref_out)
        cols = [c for c in ref.columns if c not in ("wall_s", "code_version")]
        pd.testing.assert_frame_equal(_rows(out)[cols], ref[cols])
