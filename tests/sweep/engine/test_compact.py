"""Compaction of a result directory: same rows in fewer files, crash-safe at every step."""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from sweep.kinds import load_campaign
from sweep.cli import app
from sweep.engine.runner import run_campaign
from sweep.engine.store import Store

from campaign_util import freeze_when, kill_group, write_tiny

runner = CliRunner()
KEY = ["task_id", "network", "pm", "point"]


def _all(out):
    s = Store(out)
    rows = s.read("rows").sort_values(KEY).reset_index(drop=True)
    layers = s.read("layers").sort_values(["task_id", "network", "pm", "layer"]).reset_index(drop=True)
    return rows, layers


@pytest.fixture(scope="module")
def _original(tmp_path_factory):
    """The tiny campaign, one task per fragment (72 tasks, flushed after each): 72 + 72 files,
    left uncompacted (COMPACT_ABOVE raised for the run)."""
    import sweep.engine.runner as r
    tmp = tmp_path_factory.mktemp("compact")
    old, r.COMPACT_ABOVE = r.COMPACT_ABOVE, 10**9
    try:
        path = write_tiny(tmp, chunk=1, flush=1)
        run_campaign(load_campaign(path), executor="local")
    finally:
        r.COMPACT_ABOVE = old
    return path, tmp / "out"


@pytest.fixture
def many_fragments(_original, tmp_path):
    """A fresh copy of the module's uncompacted result directory, as its campaign."""
    path, out = _original
    shutil.copytree(out, tmp_path / "out")
    c = load_campaign(path, output=tmp_path / "out")
    assert len(Store(c.output).fragments()) == 72
    return c


def test_compact_keeps_rows_in_few_files(many_fragments):
    out = many_fragments.output
    before = _all(out)
    res = runner.invoke(app, ["compact", str(out)])
    assert res.exit_code == 0 and "rows: 72 -> 1" in res.output and "layers: 72 -> 1" in res.output
    after = _all(out)
    pd.testing.assert_frame_equal(after[0], before[0])
    pd.testing.assert_frame_equal(after[1], before[1])
    assert Store(out).stored_task_ids() == set(before[0]["task_id"])
    assert "nothing to compact" in " ".join(runner.invoke(app, ["compact", str(out)]).output.split())
    # a resume after compaction skips everything
    s = run_campaign(many_fragments, executor="local", resume=True)
    assert s.tasks_run == 0 and s.tasks_skipped == 72


@pytest.mark.parametrize("fail_at", ["before_rename", "before_delete", "mid_delete"])
def test_compaction_killed_midway_leaves_the_same_rows(many_fragments, monkeypatch, fail_at):
    """Stop the compaction at each step (an exception standing in for SIGKILL: nothing after
    it runs); the directory reads the same rows, and compacting again completes it."""
    out = many_fragments.output
    before = _all(out)
    calls = {"n": 0}

    class Killed(BaseException):
        pass

    if fail_at == "before_rename":
        real = os.replace
        monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(Killed()))
    else:
        from pathlib import Path
        real = Path.unlink

        def unlink(self, missing_ok=False):
            calls["n"] += 1
            if fail_at == "before_delete" or calls["n"] > 30:
                raise Killed()
            return real(self, missing_ok=missing_ok)
        monkeypatch.setattr(Path, "unlink", unlink)
    with pytest.raises(Killed):
        Store(out).compact()
    monkeypatch.undo()
    mid = _all(out)
    pd.testing.assert_frame_equal(mid[0], before[0])
    pd.testing.assert_frame_equal(mid[1], before[1])
    Store(out).compact()
    after = _all(out)
    pd.testing.assert_frame_equal(after[0], before[0])
    pd.testing.assert_frame_equal(after[1], before[1])
    assert len(Store(out).fragments()) == 1


def _compaction_state(out: Path) -> tuple[int, int, int]:
    """(merged fragments being written in .tmp, layers fragments, rows fragments)."""
    tmp = out / ".tmp"
    return (len(list(tmp.glob("*.parquet"))) if tmp.is_dir() else 0, len(Store(out).fragments("layers")),
            len(Store(out).fragments("rows")))


@pytest.mark.slow
def test_compaction_sigkilled_leaves_readable_dataset(_original, tmp_path):
    """A real SIGKILL of `sweep compact` in a subprocess once it has started writing (a merged
    fragment being written or in place) and before it has finished (rows fragments not yet
    merged and deleted): readable, same rows; compacting again completes it.

    The subprocess is stopped (SIGSTOP) at such a point, the state checked while it cannot
    change, then SIGKILLed. Compaction is quick (about 0.2 s of writing); if it finished before
    it could be stopped, again on a fresh copy (at most 3 attempts)."""
    _, original = _original
    for attempt in range(3):
        out = tmp_path / f"out{attempt}"
        shutil.copytree(original, out)
        before = _all(out)
        state = {}

        def mid_way() -> bool:    # polled, then checked again while the subprocess is stopped
            state["at_kill"] = s = _compaction_state(out)
            return s != (0, 72, 72) and s[2] > 1     # started, rows not yet all merged

        p = subprocess.Popen([sys.executable, "-m", "sweep.cli", "compact", str(out)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            caught = freeze_when(p, mid_way, timeout=60, poll=0.0005)
            if caught:
                os.killpg(p.pid, signal.SIGKILL)
            rc = p.wait(60)
        finally:
            if p.poll() is None:
                kill_group(p)
        if caught:
            break
        assert rc == 0 and _compaction_state(out) == (0, 1, 1)   # it finished before it was stopped
    else:
        pytest.fail("`sweep compact` finished before it could be stopped, 3 times")
    assert rc == -signal.SIGKILL                            # it died of the signal, mid-way
    assert _compaction_state(out) == state["at_kill"]      # as it was when stopped: nothing after
    mid = _all(out)
    pd.testing.assert_frame_equal(mid[0], before[0])
    pd.testing.assert_frame_equal(mid[1], before[1])
    Store(out).compact()
    assert _compaction_state(out) == (0, 1, 1)
    pd.testing.assert_frame_equal(_all(out)[0], before[0])
    pd.testing.assert_frame_equal(_all(out)[1], before[1])
