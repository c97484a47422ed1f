"""A result directory as safe as a database's: each fault of the second fault round (crashed tasks,
two drivers, interrupted compactions, missing and foreign fragments, flipped bits, a full disk and a
read-only directory), disturbed and then compared with an undisturbed run of the same small campaign
(every table, as a plain ``pandas.read_parquet`` and as the store read it: `same_tables`). The crash
at every file-system operation is tests/sweep/engine/test_crash_points.py."""

from __future__ import annotations

import errno
import os
import shutil
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import sweep.engine.runner as runner_mod
from sweep.cli import app
from sweep.common.errors import StoreBusyError, StoreError, StoreIOError
from sweep.engine.runner import run_campaign
from sweep.engine.store import Store, fsops
from sweep.engine.store.check import check
from sweep.kinds import load_campaign
from paths import SCRIPTS

sys.path.insert(0, str(SCRIPTS))
from crash_points import same_tables  # noqa: E402
from synthetic_campaign import write_campaign  # noqa: E402

cli = CliRunner()


def _campaign(tmp: Path, name: str = "c", out: Path | None = None):
    """6 tiny tasks, one batch each (``rows`` and ``problems`` fragments)."""
    return load_campaign(write_campaign(tmp / name, 6, layers=6, samples=8, flush_rows=1, out=out))


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    c = _campaign(tmp_path_factory.mktemp("ref"))
    assert run_campaign(c, executor="local").tasks_failed == 0
    return Path(c.output)


def _run_args(c, resume=False) -> list[str]:
    return ["run", c.source, "--executor", "local", "--out", str(c.output)] + (["--resume"] if resume else [])


# -- 1. a crashed task is retried ---------------------------------------------------------------------
def test_a_crashed_task_is_run_again_by_resume(tmp_path, reference, monkeypatch):
    """The executor gives up on one task (as when its worker is killed at max_retries = 0): one error
    row per unit naming the problem and layer, its error "crashed: ..."; `--resume` runs it again (before: "0 task(s)
    run" and its rows missing for good) and the directory equals the undisturbed one."""
    c = _campaign(tmp_path)
    real = runner_mod.execute
    victim = {}

    def dies(task):
        if not victim:
            victim["id"] = task.task_id
            raise RuntimeError("worker process died (simulated)")
        return real(task)

    monkeypatch.setattr(runner_mod, "execute", dies)
    s = run_campaign(c, executor="local")
    assert s.tasks_failed == 1
    rows = Store(c.output).read("rows")
    err = rows[rows["status"] == "error"]
    assert set(err["task_id"]) == {victim["id"]} and err["error"].str.startswith("crashed: ").all()
    assert err["problem_id"].notna().all() and err["layer_shape"].notna().all() and (err["mapper"] == "random").all()
    monkeypatch.setattr(runner_mod, "execute", real)
    res = cli.invoke(app, _run_args(c, resume=True))
    assert res.exit_code == 0, res.output
    assert "1 task(s) whose worker crashed" in res.output and "1 task(s) run" in res.output
    assert same_tables(Path(c.output), reference) == ""


def test_a_resume_that_leaves_errors_exits_1(tmp_path, monkeypatch):
    """A unit whose code raises fails the same way on every resume: kept (its row names the
    problem), and `--resume` exits 1 saying so (before: exit 0)."""
    from mappers.loop_order.random import RandomMapper
    orig = RandomMapper.run

    def raises(self, problem, unit, params):
        if problem.layer.name == "l2":
            raise ValueError("no valid mapping (simulated)")
        return orig(self, problem, unit, params)

    monkeypatch.setattr(RandomMapper, "run", raises)
    c = _campaign(tmp_path)
    assert cli.invoke(app, _run_args(c)).exit_code == 1
    res = cli.invoke(app, _run_args(c, resume=True))
    assert res.exit_code == 1 and "1 task(s) of" in res.output and "whose code raised" in res.output, res.output


# -- 2. one writer -------------------------------------------------------------------------------------
def test_a_second_writer_is_refused_naming_the_first(tmp_path, reference):
    """While one command holds the directory, a second `sweep run --resume` is refused (exit 2, the
    holder's pid and host named) and writes nothing (before: it reran every task, duplicating rows)."""
    c = _campaign(tmp_path)
    run_campaign(c, executor="local")
    holder = Store(c.output)
    holder.acquire("sweep run (the first driver)")
    try:
        res = cli.invoke(app, _run_args(c, resume=True))
        assert res.exit_code == 2, res.output
        assert f"pid {os.getpid()}" in res.output and "the first driver" in res.output
        with pytest.raises(StoreBusyError):
            run_campaign(c, resume=True, executor="local")
        with pytest.raises(StoreBusyError):
            Store(c.output).compact()
    finally:
        holder.close()
    assert same_tables(Path(c.output), reference) == ""
    assert cli.invoke(app, _run_args(c, resume=True)).exit_code == 0   # free again


# -- 3. an interrupted compaction ----------------------------------------------------------------------
class _Crash(BaseException):
    """A crash inside the process (not caught by the code under test)."""


def _crash_at(op: str, nth: int = 1):
    seen = [0]

    def hook(o, path):
        if o == op:
            seen[0] += 1
            if seen[0] == nth:
                raise _Crash(f"{o} {path}")
    return hook


def test_a_compaction_killed_between_writes_and_deletes_is_finished_by_the_next_command(tmp_path, reference,
                                                                                       monkeypatch):
    """Killed at its first delete of an old fragment (merged ones in place), plain readers see every
    task twice; the next command (`sweep report`) finishes the commit first (before: duplicates until a
    second `sweep compact`)."""
    c = _campaign(tmp_path)
    run_campaign(c, executor="local")
    monkeypatch.setattr(fsops, "HOOK", _crash_at("unlink"))
    with pytest.raises(_Crash):
        Store(c.output).compact()
    monkeypatch.setattr(fsops, "HOOK", None)
    assert len(pd.read_parquet(Path(c.output) / "rows")) > 6   # the duplicates a crash leaves
    assert not check(c.output).intact
    assert cli.invoke(app, ["report", str(c.output)]).exit_code == 0
    assert same_tables(Path(c.output), reference) == ""
    assert len(Store(c.output).fragments()) == 1


def test_a_batch_killed_between_its_fragments_leaves_no_orphan(tmp_path, reference, monkeypatch):
    """Killed after a batch's ``problems`` fragment is in place and before its ``rows``: the next
    command leaves neither (before: 82 ``problems`` rows for 76 after the resume)."""
    c = _campaign(tmp_path)
    # renames: the manifest, the new catalog, then the first batch's problems fragment (3rd) and its
    # rows (4th: killed with the problems fragment in place, its rows not)
    monkeypatch.setattr(fsops, "HOOK", _crash_at("rename", 4))
    with pytest.raises(_Crash):
        run_campaign(c, executor="local")
    monkeypatch.setattr(fsops, "HOOK", None)
    assert cli.invoke(app, _run_args(c, resume=True)).exit_code == 0
    assert same_tables(Path(c.output), reference) == ""


# -- 4. missing and foreign fragments ------------------------------------------------------------------
def test_a_missing_fragment_is_reported_and_recomputed(tmp_path, reference):
    """One committed ``problems`` fragment deleted: the report fails naming it (before: a report
    short of its results that said every task stored), `sweep check` says so, and `--resume`
    recomputes its batch."""
    c = _campaign(tmp_path)
    run_campaign(c, executor="local")
    gone = Store(c.output).fragments("problems")[2]
    gone.unlink()
    res = cli.invoke(app, ["report", str(c.output)])
    assert res.exit_code == 2 and gone.name in res.output and "missing" in res.output, res.output
    found = check(c.output)
    assert not found.intact and found.damaged[0][0] == f"problems/{gone.name}" and found.rerun == 1
    res = cli.invoke(app, _run_args(c, resume=True))
    assert res.exit_code == 0 and "1 task(s) run" in res.output, res.output
    assert same_tables(Path(c.output), reference) == "" and check(c.output).intact


def test_a_foreign_fragment_is_never_read_and_moved_aside(tmp_path, reference):
    """A ``rows`` fragment of another configuration copied in: not read (before: merged, "7/6
    tasks"), named by the report and by `sweep check`, moved to .foreign/ by `--resume`."""
    other_c = load_campaign(write_campaign(tmp_path / "other2", 7, layers=7, samples=8, flush_rows=1))
    run_campaign(other_c, executor="local")
    c = _campaign(tmp_path)
    run_campaign(c, executor="local")
    stray = [f for f in Store(other_c.output).fragments() if not (Path(c.output) / "rows" / f.name).exists()][0]
    shutil.copy(stray, Path(c.output) / "rows" / stray.name)
    assert len(Store(c.output).read("rows")) == 6
    res = cli.invoke(app, ["report", str(c.output)])
    assert res.exit_code == 0 and "no run of this campaign wrote" in res.output and stray.name in res.output
    assert check(c.output).foreign == [f"rows/{stray.name}"]
    res = cli.invoke(app, _run_args(c, resume=True))
    assert res.exit_code == 0 and ".foreign" in res.output, res.output
    assert (Path(c.output) / ".foreign" / "rows" / stray.name).exists()
    assert same_tables(Path(c.output), reference) == "" and check(c.output).intact


# -- 5. corruption -------------------------------------------------------------------------------------
def _flip(path: Path, at: int) -> None:
    b = bytearray(path.read_bytes())
    b[at] ^= 0x10
    path.write_bytes(bytes(b))


def test_a_flipped_bit_is_an_error_never_a_changed_figure(tmp_path, reference):
    """A bit flipped at each of 24 places of a ``rows`` fragment: every read of the store refuses
    the file naming it (before: an energy changed and every command exited 0), `sweep check` says
    which, `sweep compact` refuses to copy it on, and `--resume` recomputes its batch."""
    c = _campaign(tmp_path)
    run_campaign(c, executor="local")
    frag = Store(c.output).fragments()[0]
    clean = frag.read_bytes()
    for at in range(4, len(clean) - 8, max(1, (len(clean) - 12) // 24)):
        _flip(frag, at)
        with pytest.raises(StoreError, match=frag.name):
            Store(c.output).read("rows")
        frag.write_bytes(clean)
    _flip(frag, len(clean) // 3)
    assert check(c.output).damaged[0][0] == f"rows/{frag.name}"
    with pytest.raises(StoreError, match="damaged"):
        Store(c.output).compact()
    assert cli.invoke(app, _run_args(c, resume=True)).exit_code == 0
    assert same_tables(Path(c.output), reference) == ""
    assert (Path(c.output) / ".damaged" / "rows" / frag.name).exists()


def test_fragments_carry_page_checksums(tmp_path):
    """Written with pyarrow's ``write_page_checksum``: a reader that verifies pages (here pyarrow
    with ``page_checksum_verification``, no catalog involved) refuses a flipped data byte."""
    c = _campaign(tmp_path)
    run_campaign(c, executor="local")
    frag = Store(c.output).fragments()[0]
    col = pq.ParquetFile(frag).metadata.row_group(0).column(0)
    start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
    _flip(frag, start + col.total_compressed_size - 2)
    with pytest.raises(OSError, match="CRC"):
        pq.read_table(frag, page_checksum_verification=True)


# -- 6. a full disk, a read-only directory -----------------------------------------------------------
def _enospc_at(op: str, nth: int):
    seen = [0]

    def hook(o, path):
        if o == op:
            seen[0] += 1
            if seen[0] == nth:
                raise OSError(errno.ENOSPC, "No space left on device", str(path))
    return hook


def test_a_full_disk_is_one_line_and_the_directory_stays_resumable(tmp_path, reference, monkeypatch):
    """ENOSPC at the second batch's commit: exit 1 with one line naming the path and the cause
    (before: a 100-line traceback); the batch committed stays; `--resume` completes the run."""
    c = _campaign(tmp_path)
    # writes: the write check, the manifest, the new catalog, 3 per batch (2 fragments, the commit line):
    # the 9th is the second batch's commit line
    monkeypatch.setattr(fsops, "HOOK", _enospc_at("write", 9))
    res = cli.invoke(app, _run_args(c))
    monkeypatch.setattr(fsops, "HOOK", None)
    assert res.exit_code == 1, res.output
    line = [ln for ln in res.output.splitlines() if "No space left on device" in ln]
    assert line and "Traceback" not in res.output and "resumed" in line[0]
    assert 0 < len(Store(c.output).stored_task_ids()) < 6
    assert cli.invoke(app, _run_args(c, resume=True)).exit_code == 0
    assert same_tables(Path(c.output), reference) == ""


def test_a_full_disk_at_the_manifest_does_not_lock_the_directory_out(tmp_path, reference, monkeypatch):
    """ENOSPC while the manifest is written leaves ``.tmp/manifest.json`` behind; the directory is
    then still taken as new by `run` (before: refused for good, "not a dse-sweep result directory")."""
    c = _campaign(tmp_path)
    monkeypatch.setattr(fsops, "HOOK", _enospc_at("write-half", 2))
    assert cli.invoke(app, _run_args(c)).exit_code == 1
    monkeypatch.setattr(fsops, "HOOK", None)
    assert (Path(c.output) / ".tmp" / "manifest.json").exists()
    res = cli.invoke(app, _run_args(c))
    assert res.exit_code == 0, res.output
    assert same_tables(Path(c.output), reference) == ""


def test_a_read_only_directory_fails_before_any_work(tmp_path, monkeypatch):
    """Every write refused (a read-only remount, as the file system says it): `--resume` of a
    half-done directory fails with exit 1 before it computes a task (before: 38 tasks computed for
    33 s, then the failure at the first write)."""
    c = _campaign(tmp_path)
    # writes: the write check, the manifest, the new catalog, 3 per batch: killed at the third
    # batch's first fragment, two committed
    monkeypatch.setattr(fsops, "HOOK", _crash_at("write", 10))
    with pytest.raises(_Crash):
        run_campaign(c, executor="local")
    monkeypatch.setattr(fsops, "HOOK", None)
    assert 0 < len(Store(c.output).stored_task_ids()) < 6
    ran = []
    real = runner_mod.execute
    monkeypatch.setattr(runner_mod, "execute", lambda t: ran.append(t) or real(t))

    def ro(op, path):
        raise OSError(errno.EROFS, "Read-only file system", str(path))
    monkeypatch.setattr(fsops, "HOOK", ro)
    with pytest.raises(StoreIOError, match="Read-only file system"):
        run_campaign(c, resume=True, executor="local")
    assert not ran


def test_a_committed_batch_not_yet_in_place_is_read_from_where_it_was_staged(tmp_path, monkeypatch):
    """Killed after a batch's commit line and before its fragments' renames: the store's readers see
    the batch at once (from ``.tmp``) while a writer is away, and the next command moves it into place."""
    c = _campaign(tmp_path)
    # renames: the manifest, the new catalog, then the first batch's fragments (3rd: killed before it)
    monkeypatch.setattr(fsops, "HOOK", _crash_at("rename", 3))
    with pytest.raises(_Crash):
        run_campaign(c, executor="local")
    monkeypatch.setattr(fsops, "HOOK", None)
    assert len(Store(c.output).read("rows")) == 1 and len(Store(c.output).read("problems")) == 1
    assert not (Path(c.output) / "rows").exists() or not any((Path(c.output) / "rows").iterdir())
    assert check(c.output).pending_commit
    assert cli.invoke(app, ["report", str(c.output)]).exit_code == 0
    assert len(pd.read_parquet(Path(c.output) / "rows")) == 1 and check(c.output).intact
