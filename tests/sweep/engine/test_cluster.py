"""Joining a Ray cluster with Ray's defaults (issue 30, item 1): a `ray start` head with token
authentication on (Ray 2.5x: on as soon as a token exists, here in ``~/.ray/auth_token`` of a
temporary HOME) and a worker node; `sweep run --address` finds the token as Ray does and stores
its rows; a local run beside that live cluster, and one under a stale ``ray_current_cluster``,
start their own Ray; an address that cannot be joined is one line and exit 1, no traceback.
The nodes are stopped by their process groups (never `ray stop`)."""

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from sweep.engine import cluster
from sweep.engine.store import Store
from paths import SCRIPTS

sys.path.insert(0, str(SCRIPTS))
from ray_cluster import LocalCluster, free_port  # noqa: E402
from synthetic_campaign import write_campaign  # noqa: E402

TASKS = 4


def _env(home: Path, **extra) -> dict[str, str]:
    """Ray's defaults: no RAY_AUTH_* nor RAY_ADDRESS; HOME (where Ray looks for ~/.ray/auth_token) = ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH") and k != "RAY_ADDRESS"}
    return dict(env, HOME=str(home), RAY_USAGE_STATS_ENABLED="0", **extra)


def _sweep(campaign: Path, out: Path, env: dict[str, str], *args: str, timeout: float = 60):
    return subprocess.run([sys.executable, "-m", "sweep.cli", "run", str(campaign), "--out", str(out), *args],
                          capture_output=True, text=True, env=env, timeout=timeout)


def _ok(r, out: Path) -> set:
    assert r.returncode == 0, r.stdout + r.stderr
    rows = Store(out).read("rows")
    assert len(rows) == TASKS and (rows["status"] == "ok").all()
    return set(rows["task_id"])


def _one_error_line(r, *words: str) -> str:
    # beside the run's heading and its (empty) progress bar, one line
    err = [l for l in r.stderr.splitlines() if l.strip() and not l.startswith(("campaign ", "running "))]
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr and "InvalidAuthToken" not in r.stderr, r.stderr
    assert len(err) == 1 and err[0].startswith("error: "), r.stderr
    for w in words:
        assert w in err[0], err[0]
    return err[0]


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    (h / ".ray").mkdir(parents=True)
    return h


@pytest.mark.slow
def test_ray_start_defaults_address_and_local_beside(tmp_path, home):
    """A head started with Ray's defaults and a token in ~/.ray/auth_token (as any earlier local
    ray.init leaves) has token authentication on; the driver joins it with --address alone."""
    (home / ".ray" / "auth_token").write_text(secrets.token_hex(32))
    camp = write_campaign(tmp_path / "c", TASKS, layers=2, samples=8, num_cpus=1)
    env = _env(home)
    temp = Path(tempfile.mkdtemp(prefix="rt30_", dir="/tmp"))  # short: Ray's socket paths <= 107 bytes
    nodes = LocalCluster(temp, workers=1, env=env, worker_env=dict(env, RAY_AUTH_MODE="token"))
    t0 = time.time()
    with nodes:
        assert "Token authentication is enabled" in (temp / "node0.log").read_text()
        ids = _ok(_sweep(camp, tmp_path / "cluster", env, "--address", nodes.address), tmp_path / "cluster")
        # a local run beside the live cluster, which Ray's $RAY_TMPDIR/ray/ray_current_cluster names
        (temp / "ray").mkdir()
        shutil.copy(temp / "ray_current_cluster", temp / "ray" / "ray_current_cluster")
        beside = _sweep(camp, tmp_path / "local", dict(env, RAY_TMPDIR=str(temp)))
        assert _ok(beside, tmp_path / "local") == ids
        # a driver with another token: one line, exit 1
        bad = _sweep(camp, tmp_path / "bad", dict(env, RAY_AUTH_TOKEN=secrets.token_hex(32)),
                     "--address", nodes.address)
        _one_error_line(bad, "token", nodes.address)
    assert not nodes.processes()
    shutil.rmtree(temp, ignore_errors=True)
    assert time.time() - t0 < 120


@pytest.mark.slow
def test_local_run_ignores_stale_ray_current_cluster(tmp_path, home):
    """A `ray_current_cluster` naming a cluster that is gone: a run without --address starts its
    own Ray (it used to attach and fail: "num_cpus and num_gpus must not be provided")."""
    stale = Path(tempfile.mkdtemp(prefix="rt30s_", dir="/tmp"))  # short: Ray's socket paths
    try:
        (stale / "ray").mkdir()  # where Ray looks: $RAY_TMPDIR/ray/ray_current_cluster
        (stale / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{free_port()}")
        camp = write_campaign(tmp_path / "c", TASKS, layers=2, samples=8, num_cpus=1)
        r = _sweep(camp, tmp_path / "out", _env(home, RAY_TMPDIR=str(stale)), timeout=50)
        _ok(r, tmp_path / "out")
    finally:
        shutil.rmtree(stale, ignore_errors=True)


@pytest.mark.parametrize("address", ["127.0.0.1:{port}", "no-such-host.invalid:6379", "not-an-address"])
def test_bad_address_one_line(tmp_path, home, address):
    """Nothing listening, a name that does not resolve, no port: one line, exit 1, in seconds."""
    address = address.format(port=free_port())
    camp = write_campaign(tmp_path / "c", TASKS, layers=2, samples=8)
    t0 = time.time()
    r = _sweep(camp, tmp_path / "out", _env(home), "--address", address, timeout=30)
    _one_error_line(r, address.rpartition(":")[0] or address, "RAY_ADDRESS")
    assert time.time() - t0 < 20


def test_version_mismatch_is_one_line():
    e = cluster.connect_failed("10.0.0.1:6379", RuntimeError(
        "Version mismatch: The cluster was started with:\n    Ray: 2.59.0\n    Python: 3.11.7\n"
        "This process on node 10.0.0.2 was started with:\n    Ray: 2.60.0\n    Python: 3.11.7\n"))
    text = str(e)
    assert "\n" not in text and "Ray: 2.59.0" in text and "same Ray and Python versions" in text


@pytest.mark.parametrize("reply, words", [(None, "says nothing in 5 s"),
                                          (b"HTTP/1.0 400 Bad request\r\n\r\n", "not as a gRPC server")])
def test_port_that_is_not_a_gcs_is_one_line_in_seconds(tmp_path, home, reply, words):
    """A port that accepts and never answers (Ray's own client waits 40 s on it) or answers as
    something else: one line naming it, exit 1, within the 5 s probe (plus start-up)."""
    import socket
    import threading

    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    held = []

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            held.append(c)
            if reply is not None:
                c.recv(64)
                c.sendall(reply)
    threading.Thread(target=serve, daemon=True).start()
    try:
        camp = write_campaign(tmp_path / "c", TASKS, layers=2, samples=8)
        t0 = time.time()
        r = _sweep(camp, tmp_path / "out", _env(home), "--address", f"127.0.0.1:{port}", timeout=40)
        _one_error_line(r, f"127.0.0.1:{port}", words, "RAY_ADDRESS")
        assert time.time() - t0 < 25
    finally:
        srv.close()
        for c in held:
            c.close()
