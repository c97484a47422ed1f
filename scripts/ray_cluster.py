"""A local multi-node Ray cluster on this machine, a campaign run against it, and a check that
its rows equal an in-process run's; stops only what it started.

The cluster: a head node (``--num-cpus 1``, resource ``head``) and two worker nodes
(``--num-cpus 1`` each, resources ``worker1`` / ``worker2``), every node a ``ray start --block``
in its own session and process group, on free ports, with a temp dir outside the repository.
Stopping sends SIGTERM to those ``ray start`` processes (each stops its node's processes), SIGKILL
to whatever is left of their process groups after a timeout, and returns only once every process
of them -- and of their sessions, where the raylet puts its worker processes in process groups
of their own -- has exited; never ``ray stop``, which would stop every Ray on the machine, other
users' included.

    python scripts/ray_cluster.py [--campaign campaigns/X.toml] [--workers 2] [--keep DIR] [--cluster-only | --compare DIR]

Without ``--campaign`` it runs a small synthetic loop-nest campaign (scripts/synthetic_campaign.py).
The nodes run with Ray's defaults (`ray_defaults_env`: token authentication on when a token
exists, as for a user's ``ray start``; `LocalCluster`'s own default, for the tests, has none).
It runs ``sweep run CAMPAIGN --address ADDR --out DIR/cluster`` and ``sweep run CAMPAIGN
--executor local --out DIR/local`` and compares the rows (same task_ids, same values except the
measured ``wall_s`` / ``solver_s``). Exit 0 if equal.

`LocalCluster` is also used by tests/sweep/engine/test_faults.py (a worker node removed
mid-campaign; stopping leaves no process behind).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Measured columns, different in every run (a serving campaign's cost-table and simulation times too).
MEASURED = ["wall_s", "solver_s", "table_build_s", "sim_s"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster_env() -> dict[str, str]:
    """Environment of the nodes and of drivers joining them: no usage stats, and no token
    authentication (Ray >= 2.5x enables it for `ray start` clusters; a local test cluster on
    127.0.0.1 needs none, and drivers would otherwise need the token file)."""
    return dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")


def _ports() -> list[str]:
    """Explicit free ports for everything a node would otherwise take from a fixed default
    (so a second cluster on the machine does not collide with the first)."""
    return ["--node-manager-port", str(free_port()), "--object-manager-port", str(free_port()),
            "--dashboard-agent-listen-port", str(free_port()),
            "--dashboard-agent-grpc-port", str(free_port()), "--metrics-export-port", str(free_port()),
            "--runtime-env-agent-port", str(free_port())]


class LocalCluster:
    """Ray nodes started as process groups on this machine.

    Args:
        temp_dir: Ray's session files (keep it short: socket paths are limited to 107 bytes).
        workers: worker nodes, each with ``worker_cpus`` CPUs and resource ``worker<i>``.
        head_cpus: CPUs of the head node (0: tasks run on worker nodes only).
        env: environment of the nodes and of the driver counting them (default `cluster_env`:
            no token authentication; tests of Ray's defaults pass their own).
        worker_env: environment of the worker nodes (default ``env``; a worker joining a cluster
            with token authentication needs ``RAY_AUTH_MODE=token``: `ray start --address` never
            turns it on by itself).
    """

    def __init__(self, temp_dir: str | Path | None = None, workers: int = 2, head_cpus: int = 1,
                 worker_cpus: int = 1, object_store_mib: int = 100, env: dict[str, str] | None = None,
                 worker_env: dict[str, str] | None = None):
        self.env = dict(env) if env is not None else cluster_env()
        self.worker_env = dict(worker_env) if worker_env is not None else self.env
        self.temp_dir = Path(temp_dir or tempfile.mkdtemp(prefix="rc_", dir="/tmp"))
        self.workers, self.head_cpus, self.worker_cpus = workers, head_cpus, worker_cpus
        self.store_bytes = object_store_mib * 1024 * 1024
        self.nodes: list[subprocess.Popen] = []
        self.address = ""
        self._logs: list = []

    def _ray(self, *args) -> subprocess.Popen:
        env = dict(self.env if "--head" in args else self.worker_env)
        env.pop("RAY_ADDRESS", None)
        log = open(self.temp_dir / f"node{len(self._logs)}.log", "w")
        self._logs.append(log)
        p = subprocess.Popen(["ray", "start", "--block", "--disable-usage-stats",
                              "--object-store-memory", str(self.store_bytes), *_ports(), *args],
                             env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.nodes.append(p)
        return p

    def start(self, timeout: float = 90) -> "LocalCluster":
        """Start the head, then the worker nodes; return once all are alive in the cluster."""
        self.temp_dir.mkdir(parents=True, exist_ok=True)
        try:
            return self._start(timeout)
        except BaseException:
            self.stop()
            raise

    def _start(self, timeout: float) -> "LocalCluster":
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        self._ray("--head", "--node-ip-address", "127.0.0.1", "--port", str(port),
                  "--num-cpus", str(self.head_cpus), "--resources", '{"head": 1}',
                  "--include-dashboard", "false",
                  "--temp-dir", str(self.temp_dir))
        self.wait_nodes(1, timeout)
        for i in range(1, self.workers + 1):  # one at a time; on a loaded machine a node may
            for attempt in range(3):          # time out during startup: start it again
                p = self._ray("--address", self.address, "--node-ip-address", "127.0.0.1",
                              "--num-cpus", str(self.worker_cpus), "--resources", f'{{"worker{i}": 1}}')
                try:
                    self.wait_nodes(1 + i, timeout)
                    break
                except RuntimeError:
                    if attempt == 2 or p.poll() is None:
                        raise
                    self.nodes.remove(p)
                    _stop_nodes([p], 10)  # what the failed node left behind
        return self

    def alive_nodes(self) -> int:
        """Alive nodes as the GCS sees them (-1 if it cannot be asked yet)."""
        code = ("import ray,sys; from sweep.engine.cluster import use_available_token; use_available_token();"
                "ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False);"
                "print(sum(n['Alive'] for n in ray.nodes()))")
        try:
            r = subprocess.run([sys.executable, "-c", code, self.address], capture_output=True, text=True,
                               env=self.env, timeout=30)
            return int(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError, subprocess.TimeoutExpired):
            return -1

    def wait_nodes(self, n: int, timeout: float = 90) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            dead = [p.args for p in self.nodes if p.poll() is not None]
            if dead:
                raise RuntimeError(f"a Ray node exited: {dead}; see {self.temp_dir}/node*.log")
            if self.alive_nodes() >= n:
                return
            time.sleep(1)
        raise TimeoutError(f"{n} Ray node(s) not up after {timeout} s; see {self.temp_dir}/node*.log")

    def kill_node(self, i: int) -> None:
        """SIGKILL node ``i`` (0 = head) and every process of its group and session (its worker
        processes included): a machine lost. Returns without waiting for them to exit."""
        _kill_session(self.nodes[i], signal.SIGKILL)

    def stop(self, timeout: float = 30) -> None:
        """Stop the nodes this object started: SIGTERM to their ``ray start`` processes (workers
        first), then wait until every process of their process groups and sessions has exited;
        after ``timeout`` seconds SIGKILL what is left and wait again (at most 30 s more).

        Raises:
            RuntimeError: processes still alive after that (their pids in the message).
        """
        try:
            _stop_nodes(list(reversed(self.nodes)), timeout)
        finally:
            for log in self._logs:
                log.close()
            self._logs = []

    def processes(self) -> list[int]:
        """pids of the live processes of the nodes' sessions (zombies aside)."""
        return [pid for p in self.nodes for pid in session_processes(p.pid)]

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


def _killpg(p: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass


def session_processes(sid: int) -> list[int]:
    """pids of the live (not zombie) processes whose session or process group is ``sid``.

    A node started with ``start_new_session=True`` has session id = process group id = the pid
    of its ``ray start``; its raylet moves worker processes to process groups of their own, in
    the same session. Read from /proc (Linux); elsewhere: [sid] while ``os.killpg(sid, 0)``
    finds the group (zombies included), else []."""
    if not os.path.isdir("/proc/self"):
        try:
            os.killpg(sid, 0)
            return [sid]
        except ProcessLookupError:
            return []
        except PermissionError:
            return [sid]
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):  # exited meanwhile
            continue
        state, pgrp, session = fields[0], int(fields[2]), int(fields[3])
        if sid in (pgrp, session) and state not in (b"Z", b"X", b"x"):
            out.append(int(name))
    return out


def _kill_session(p: subprocess.Popen, sig: int) -> None:
    """Send ``sig`` to the process group of ``p`` and to every other process of its session."""
    _killpg(p, sig)
    for pid in session_processes(p.pid):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _wait_gone(nodes: list[subprocess.Popen], deadline: float) -> list[int]:
    """Reap the nodes' ``ray start`` processes and poll until no process of their sessions is
    left, or ``deadline`` (time.monotonic) passes. Returns the pids still alive."""
    while True:
        for p in nodes:
            p.poll()
        left = [pid for p in nodes for pid in session_processes(p.pid)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def _stop_nodes(nodes: list[subprocess.Popen], timeout: float) -> None:
    """Stop the nodes in this order and wait until all their sessions' processes have exited;
    after ``timeout`` s SIGKILL those left and wait up to 30 s more.

    A node's ``ray start --block`` gets SIGTERM alone: it stops its processes in Ray's order
    (raylet first) and exits, about 2 s in all. (SIGTERM to the whole group at once leaves a head
    node's GCS server and ``ray start`` hanging for tens of seconds.) A node whose ``ray start``
    is gone gets SIGTERM on every process of its session."""
    for p in nodes:
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        else:
            _kill_session(p, signal.SIGTERM)
    left = _wait_gone(nodes, time.monotonic() + timeout)
    if left:
        for p in nodes:
            _kill_session(p, signal.SIGKILL)
        left = _wait_gone(nodes, time.monotonic() + 30)
    if left:
        raise RuntimeError(f"Ray node processes still alive after SIGKILL: {left}")


def same_rows(a: Path, b: Path) -> tuple[bool, str]:
    """Rows of two result directories equal, sorted by task_id (measured columns dropped; columns
    compared by name, whatever order the fragments gave them), every table the campaign wrote."""
    import pandas as pd
    from sweep.engine.store import Store

    def load(d, table):
        df = Store(d).read(table)
        df = df.drop(columns=[c for c in MEASURED if c in df])
        keys = [c for c in ("task_id", "problem_id", "unit_index", "network", "pm", "point", "design", "setting", "rate")
                if c in df]
        return df.sort_values(keys).reset_index(drop=True)[sorted(df.columns)]
    tables = sorted(p.name for p in Path(a).iterdir() if p.is_dir() and not p.name.startswith(".") and any(p.glob("*.parquet")))
    x, y = load(a, "rows"), load(b, "rows")
    if set(x["task_id"]) != set(y["task_id"]):
        return False, f"task_ids differ: {len(set(x['task_id']) ^ set(y['task_id']))}"
    try:
        for t in tables:
            pd.testing.assert_frame_equal(load(a, t), load(b, t))
    except AssertionError as e:
        return False, f"{t}: {e}"
    return True, f"{len(x)} rows, {x['task_id'].nunique()} task_ids, identical (tables {', '.join(tables)})"


def ray_defaults_env() -> tuple[dict[str, str], dict[str, str]]:
    """Environments of the head (and the drivers) and of the worker nodes with Ray's defaults, as a
    user's `ray start` has them: no RAY_AUTH_MODE, so the head turns token authentication on when a
    token exists (``~/.ray/auth_token``, ``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH``), and the
    worker nodes then join with ``RAY_AUTH_MODE=token`` (a joining node never turns it on itself);
    the drivers (`sweep run --address`) find the token as Ray does."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    token = bool(env.get("RAY_AUTH_TOKEN") or env.get("RAY_AUTH_TOKEN_PATH")) or \
        (Path.home() / ".ray" / "auth_token").is_file()
    return env, (dict(env, RAY_AUTH_MODE="token") if token else env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--campaign", type=Path)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="output directories here (default: a temp dir)")
    ap.add_argument("--cluster-only", action="store_true",
                    help="only the cluster run (a campaign too large to run twice; rows not compared)")
    ap.add_argument("--compare", type=Path,
                    help="compare the cluster run with this result directory of the same campaign instead of "
                         "running it again in-process")
    a = ap.parse_args()
    work = a.keep or Path(tempfile.mkdtemp(prefix="ray_cluster_"))
    campaign = a.campaign
    if campaign is None:
        sys.path.insert(0, str(Path(__file__).parent))
        from synthetic_campaign import write_campaign
        campaign = write_campaign(work / "campaign", 400, layers=20, units_per_task=4)
    env, worker_env = ray_defaults_env()
    sweep = [sys.executable, "-m", "sweep.cli", "run", str(campaign)]
    with LocalCluster(workers=a.workers, env=env, worker_env=worker_env) as cl:
        print(f"cluster {cl.address}: {cl.alive_nodes()} nodes, temp dir {cl.temp_dir}", flush=True)
        t0 = time.time()
        subprocess.run(sweep + ["--address", cl.address, "--out", str(work / "cluster")], env=env, check=True)
        print(f"cluster run {time.time() - t0:.1f} s", flush=True)
    if a.cluster_only:
        return
    if a.compare is not None:   # a run of another session: its code stamp may differ, its rows may not
        MEASURED.extend(["code_version", "config_hash"])
        ok, msg = same_rows(work / "cluster", a.compare)
        print(("same rows: " if ok else "DIFFERENT rows: ") + msg)
        sys.exit(0 if ok else 1)
    t0 = time.time()
    subprocess.run(sweep + ["--executor", "local", "--out", str(work / "local")], env=env, check=True)
    print(f"local run {time.time() - t0:.1f} s")
    ok, msg = same_rows(work / "cluster", work / "local")
    print(("same rows: " if ok else "DIFFERENT rows: ") + msg)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
