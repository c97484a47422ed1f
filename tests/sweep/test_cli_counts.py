"""Counts and labels of `sweep run` agree with each other and with the store (user report: "a
finished pruned search says '123/200 tasks stored'; an interrupted run says '10 task(s) stored by
this run, 11 in all', then the resume says '10 already stored'; a progress bar counts '0/200
designs' where the summary says 400; a read-only --out shows a progress bar before its exit-2
error").

Units: a campaign's bar and lines count tasks; a grid pruned by bound counts designs (mapped or
pruned: every design is done one way or the other) and, beside them, its mapped tasks (a batch of
pruned designs' rows has a task_id but is no task of the grid's). Every expected count below is
read from the store itself (distinct task_ids and design_ids of the rows), never from the run.
"""

from __future__ import annotations

import json
import os
import re

import pandas as pd
import pytest
import tomli_w
from typer.testing import CliRunner

from campaign_util import write_tiny
from llm_grid_util import campaign
from sweep.cli import app
from sweep.engine.runner import run_campaign
from sweep.engine.store import Store
from sweep.kinds.load import load_campaign

runner = CliRunner()

#: 16 valid designs of the LLM template, one GPT-2 decode step (fusion given: the figures must not
#: depend on the attention default), two designs per task (8 tasks if none were pruned), one task per
#: round: rounds after the first prune the designs the mapped ones beat.
GRID = dict(array={"D1": [16, 32], "D2": [32]}, dram=["ddr5", "hbm3"], dram_units=[1, 2], clock_mhz=[700, 1400],
            vector={"lanes": [128]}, constraints=["memory.unified_buffer.word_bits == 8 * array.D1"],
            memory={"accumulators": {"size_kib": [64], "word_bits": [1024]},
                    "unified_buffer": {"size_kib": [256], "word_bits": [128, 256]}})


def _pruned_toml(tmp_path, out=None):
    data = campaign(**GRID)
    data["output"] = str(out or tmp_path / "out")
    data["networks"] = [{"model": "gpt2", "phase": "decode", "batch": 2, "context": 64, "fusion": "unfused"}]
    data["search"] = {"sampler": "grid", "objectives": ["time_per_token_s"], "batch": 1, "prune": "bound"}
    data["run"] = {"designs_per_task": 2}
    path = tmp_path / "grid.toml"
    path.write_bytes(tomli_w.dumps(data).encode())
    return path


def _clear_mappings():
    import sweep.engine.design_tasks as dt
    dt._MAPPINGS.clear()


def _from_store(out) -> dict:
    """What the store holds, counted from its rows alone."""
    rows = Store(out).read("rows", columns=["task_id", "status", "design_id"])
    pruned = rows["status"] == "pruned"
    return {"tasks": rows.loc[~pruned, "task_id"].nunique(), "designs": rows["design_id"].nunique(),
            "pruned": rows.loc[pruned, "design_id"].nunique(), "mapped": rows.loc[~pruned, "design_id"].nunique()}


def _text(r) -> str:
    return " ".join(r.output.split())


@pytest.fixture(scope="module")
def grid_done(tmp_path_factory):
    """The pruned grid run undisturbed (in-process), with every progress call."""
    tmp = tmp_path_factory.mktemp("grid")
    c = load_campaign(_pruned_toml(tmp, tmp / "ref"))
    calls: list = []
    _clear_mappings()
    s = run_campaign(c, executor="local", progress=lambda d, n: calls.append((d, n)))
    return c, s, calls


def test_a_pruned_grids_progress_counts_designs_from_its_first_call_to_its_last(grid_done):
    """Before: the first call was (0, 8): the grid's tasks, under the bar's "designs" label; the later
    ones (k, 16 designs)."""
    c, s, calls = grid_done
    got = _from_store(c.output)
    n = len(c.architectures)
    assert n == 16 and got["designs"] == n and got["mapped"] + got["pruned"] == n and got["pruned"] > 0
    assert {t for _, t in calls} == {n}                 # one unit, one total throughout
    assert calls[0][0] == 0 and calls[-1] == (n, n)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    assert (s.search["mapped"], s.search["pruned"], s.search["designs"]) == (got["mapped"], got["pruned"], n)
    assert s.tasks_run == got["tasks"] < c.plan.count(c)


def test_a_finished_pruned_grid_says_every_design_done_in_its_run_and_its_report(grid_done, tmp_path):
    """Before: `sweep report` said "30/32 tasks stored" of a finished pruned grid (the batches of
    pruned designs' rows counted as tasks, against every task of the unpruned grid)."""
    c, _, _ = grid_done
    got = _from_store(c.output)
    r = runner.invoke(app, ["report", str(c.output)])
    assert r.exit_code == 0, r.output
    n = got["designs"]
    assert (f"{n}/{n} designs done ({got['mapped']} mapped, {got['pruned']} pruned by the bound), "
            f"{got['tasks']}/{got['tasks']} tasks stored") in _text(r)
    js = json.loads(runner.invoke(app, ["report", str(c.output), "--json"]).output)
    assert js["tasks_stored"] == js["tasks_expected"] == got["tasks"]
    assert js["pruned_grid"] == {"designs": n, "done": n, "mapped": got["mapped"], "pruned": got["pruned"]}
    _clear_mappings()
    r = runner.invoke(app, ["run", str(_pruned_toml(tmp_path)), "--out", str(tmp_path / "o"), "--executor", "local"])
    assert r.exit_code == 0, r.output
    assert f"done: {n}/{n} designs ({got['mapped']} mapped, {got['pruned']} pruned by the bound): " in _text(r)


def _interrupt_at_write(monkeypatch, n: int):
    """Ctrl-C (KeyboardInterrupt) as the ``n``-th batch is about to be stored."""
    real = Store.write_batch
    calls = {"n": 0}

    def write(self, results, stamp=None):
        calls["n"] += 1
        if calls["n"] == n:
            raise KeyboardInterrupt
        return real(self, results, stamp)
    monkeypatch.setattr(Store, "write_batch", write)
    return lambda: monkeypatch.setattr(Store, "write_batch", real)


def test_an_interrupted_pruned_grid_counts_what_its_resume_finds_stored(grid_done, tmp_path, monkeypatch):
    """Before: "N task(s) stored by this run, N+1 in all" (a batch of pruned designs' rows counted as a
    task), then the resume said "N already stored"."""
    ref, _, _ = grid_done
    path, out = _pruned_toml(tmp_path), tmp_path / "o"
    restore = _interrupt_at_write(monkeypatch, 6)
    _clear_mappings()
    r = runner.invoke(app, ["run", str(path), "--out", str(out), "--executor", "local"])
    restore()
    assert r.exit_code == 130, r.output
    got = _from_store(out)
    assert got["pruned"] > 0 and got["tasks"] > 0      # both kinds of batch stored before the Ctrl-C
    done = got["mapped"] + got["pruned"]
    line = (f"interrupted: {done} of 16 designs done ({got['mapped']} mapped, {got['pruned']} pruned by the "
            f"bound), {got['tasks']} task(s) stored by this run, {got['tasks']} in all, in {out}; "
            f"resume with: sweep run {path} --resume --out {out}")
    assert line in _text(r)
    _clear_mappings()
    r = runner.invoke(app, ["run", str(path), "--out", str(out), "--executor", "local", "--resume"])
    assert r.exit_code == 0, r.output
    assert f"task(s) run, {got['tasks']} already stored, 0 failed" in _text(r)
    cols = ["task_id", "design_id", "network", "status", "energy_pj", "latency_cycles", "error"]
    a, b = (Store(o).read("rows")[cols].sort_values(cols[:3]).reset_index(drop=True) for o in (ref.output, out))
    pd.testing.assert_frame_equal(a, b)


def test_interrupted_twice_then_resumed_each_line_counts_what_the_store_holds(tmp_path, monkeypatch):
    """A campaign of 9 tasks, one per batch: interrupted, resumed and interrupted again, resumed to
    its end. Each interrupted line's counts are the store's, and its "in all" the next run's
    "already stored"."""
    path = write_tiny(tmp_path, out=tmp_path / "o")
    out = tmp_path / "o"
    hint = f"resume with: sweep run {path} --resume"
    restore = _interrupt_at_write(monkeypatch, 4)
    r = runner.invoke(app, ["run", str(path), "--executor", "local"])
    restore()
    first = len(Store(out).stored_task_ids())
    assert r.exit_code == 130 and 3 <= first < 9
    assert f"interrupted: {first} task(s) stored by this run, {first} of 9 in all, in {out}; {hint}" in _text(r)
    restore = _interrupt_at_write(monkeypatch, 3)
    r = runner.invoke(app, ["run", str(path), "--executor", "local", "--resume"])
    restore()
    second = len(Store(out).stored_task_ids())
    assert r.exit_code == 130 and first < second < 9
    assert (f"interrupted: {second - first} task(s) stored by this run, {second} of 9 in all, in {out}; "
            f"{hint}") in _text(r)
    r = runner.invoke(app, ["run", str(path), "--executor", "local", "--resume"])
    assert r.exit_code == 0, r.output
    assert f"done: {9 - second} task(s) run, {second} already stored, 0 failed" in _text(r)
    assert len(Store(out).stored_task_ids()) == 9


def _never_started(monkeypatch):
    import sweep.engine.executor as ex

    def refuse(self):
        raise AssertionError("the executor started")
    monkeypatch.setattr(ex.Executor, "__enter__", refuse)


@pytest.mark.parametrize("case", ["under-a-file", "virtual-fs", "read-only-fs"])
def test_an_unwritable_out_exits_2_before_any_bar_or_ray(tmp_path, monkeypatch, case):
    """Before: the "campaign ..." line and the progress bar, then the exit-2 error."""
    path = write_tiny(tmp_path)
    (tmp_path / "a_file").write_text("x")
    bad = {"under-a-file": str(tmp_path / "a_file" / "sub"), "virtual-fs": "/proc/dse_sweep_counts",
           "read-only-fs": str(tmp_path / "ro" / "out")}[case]
    why = {"under-a-file": f"{tmp_path / 'a_file'} is not a directory", "virtual-fs": "in /proc (",
           "read-only-fs": f"in {tmp_path} (a read-only file system)"}[case]
    if case == "read-only-fs":   # as a read-only mount answers: access() refuses, statvfs says ST_RDONLY
        real_access, real_statvfs = os.access, os.statvfs
        monkeypatch.setattr(os, "access", lambda p, m, **k: False if str(p) == str(tmp_path) else real_access(p, m))

        class _RO:
            f_flag = os.ST_RDONLY
        monkeypatch.setattr(os, "statvfs", lambda p: _RO() if str(p) == str(tmp_path) else real_statvfs(p))
    _never_started(monkeypatch)
    r = runner.invoke(app, ["run", str(path), "--out", bad])
    assert r.exit_code == 2, r.output
    text = _text(r)
    assert text.startswith(f"error: {bad}: ") and why in text and "choose another --out" in text
    assert "campaign tiny" not in text and "running" not in text and "Traceback" not in text
    assert not (tmp_path / "ro").exists() and (tmp_path / "a_file").read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a folder without write permission")
def test_a_folder_without_write_permission_exits_2_before_any_bar(tmp_path):
    path = write_tiny(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        r = runner.invoke(app, ["run", str(path), "--out", str(locked / "out"), "--executor", "local"])
    finally:
        locked.chmod(0o755)
    assert r.exit_code == 2 and "no write permission" in r.output and "running" not in r.output


def test_the_bar_of_an_interrupted_run_ends_where_its_line_does(tmp_path, monkeypatch):
    """The progress bar's last count is the interrupted line's "in all" (before: the bar could stop
    one task short of the count printed under it)."""
    path = write_tiny(tmp_path, out=tmp_path / "o")
    restore = _interrupt_at_write(monkeypatch, 4)
    r = runner.invoke(app, ["run", str(path), "--executor", "local"], env={"COLUMNS": "200"})
    restore()
    assert r.exit_code == 130
    bars = re.findall(r"running\b.*?(\d+)/(\d+) tasks", r.output)
    stored = len(Store(tmp_path / "o").stored_task_ids())
    assert f"interrupted: {stored} task(s) stored by this run, {stored} of 9 in all" in _text(r)
    assert bars and bars[-1] == (str(stored), "9"), r.output
