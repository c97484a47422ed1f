"""The Parquet result store of a campaign run.

Layout of an output directory::

    manifest.json             campaign name, config hash, resolved configuration, code version
    rows/part-<digest>.parquet    one row per result (task_id, status, ...)
    layers/part-<digest>.parquet  per-layer detail (optional, per mapper)
    .tmp/                     fragments being written (ignored when reading)

A fragment holds the rows of a batch of whole tasks and is named after its content (the sha256 of
its sorted task_ids), written to ``.tmp`` and renamed into place (atomic on POSIX), ``rows``
last. So a killed run (SIGINT or SIGKILL) leaves only complete fragments; a task is *stored* once
its ``rows`` fragment exists; readers keep, for every task_id, the rows of one fragment only, so a
retried or repeated task never duplicates a row; ``--resume`` skips stored task_ids.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Iterable

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sweep.common.errors import StoreError
from sweep.common.ids import strict_json

__all__ = ["Store", "code_version"]

MANIFEST = "manifest.json"
FORMAT = "dse-sweep/1"


@lru_cache(maxsize=1)
def code_version() -> str:
    """Package version plus, in a git checkout, the commit of the source tree and ``.dirty`` if
    tracked files differ from it: ``0.1.0+d0257fd`` or ``0.1.0+d0257fd.dirty``. Computed once
    per process."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        v = version("dse-sweep")
    except PackageNotFoundError:
        v = "unknown"
    here = Path(__file__).parent
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here,
                             capture_output=True, text=True, timeout=5).stdout.strip()
        dirty = sha and subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                       cwd=here, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = dirty = ""
    return f"{v}+{sha}{'.dirty' if dirty else ''}" if sha else v


class Store:
    """A campaign's output directory (see the module docstring)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    # -- opening ---------------------------------------------------------------------------
    def manifest(self) -> dict:
        """The manifest, or raise `StoreError` if the directory is not a dse-sweep store."""
        path = self.root / MANIFEST
        if not self.root.is_dir():
            raise StoreError(f"{self.root}: no such directory")
        try:
            m = json.loads(path.read_text())
        except FileNotFoundError:
            raise StoreError(f"{self.root}: not a dse-sweep result directory (no {MANIFEST})") from None
        except (OSError, json.JSONDecodeError) as e:
            raise StoreError(f"{path}: unreadable manifest ({e})") from None
        if not isinstance(m, dict) or m.get("format") != FORMAT:
            raise StoreError(f"{path}: not a dse-sweep manifest (format {m.get('format') if isinstance(m, dict) else m!r})")
        return m

    def check_new_or_resumable(self, config_hash: str, resume: bool) -> None:
        """Refuse to write into a directory that holds something else. Writes nothing.

        Raises:
            StoreError: the directory holds another campaign's results, foreign files (no
                manifest: not a result directory), or results while ``resume`` is False; the
                message names the directory and what to pass instead.
        """
        if not self.root.exists():
            return
        if not self.root.is_dir():
            raise StoreError(f"{self.root}: exists and is not a directory")
        entries = [p for p in self.root.iterdir()]
        if not entries:
            return
        if not (self.root / MANIFEST).exists():
            raise StoreError(f"{self.root}: not empty and not a dse-sweep result directory (no {MANIFEST}); "
                             "choose an empty or new folder as --out, or this campaign's result directory "
                             "with --resume to complete it")
        m = self.manifest()
        if m.get("config_hash") != config_hash:
            raise StoreError(f"{self.root}: holds results of another campaign or configuration "
                             f"({m.get('name')!r}, config {str(m.get('config_hash'))[:12]}); "
                             "choose another --out")
        if not resume:
            raise StoreError(f"{self.root}: already holds results of this campaign; "
                             "pass --resume to complete it, or choose another --out")

    def check_writable(self) -> None:
        """Refuse an output directory this process cannot write, before anything starts (a
        progress bar, Ray): the directory if it exists, else the nearest existing folder above it,
        must be a directory this process may create files in: ``os.access`` (its permissions, a
        read-only file system), then a directory made there and removed at once (a virtual file
        system such as /proc refuses it; nothing stays).

        Raises:
            StoreError: names the output path, the folder that cannot be written and why (not a
                directory, a read-only file system, no write permission, the system's reason).
        """
        probe = self.root.absolute()
        while not os.path.lexists(probe) and probe != probe.parent:
            probe = probe.parent
        what = ("cannot write into the output directory" if probe == self.root.absolute() else
                f"cannot create the output directory in {probe}")
        if not probe.is_dir():
            raise StoreError(f"{self.root}: cannot create the output directory: {probe} is not a directory; "
                             "choose another --out")
        why = ""
        if not os.access(probe, os.W_OK | os.X_OK):
            try:
                why = "a read-only file system" if os.statvfs(probe).f_flag & os.ST_RDONLY else "no write permission"
            except OSError:
                why = "no write permission"
        else:
            try:
                os.rmdir(tempfile.mkdtemp(prefix=".sweep-check-", dir=probe))
            except OSError as e:
                why = e.strerror or type(e).__name__
        if why:
            raise StoreError(f"{self.root}: {what} ({why}); choose another --out")

    def create(self, manifest: dict) -> None:
        """Create the directory and write the manifest (if absent).

        Raises:
            StoreError: the directory cannot be created there (a read-only or virtual file
                system, a missing permission); nothing is written.
        """
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"{self.root}: cannot create the output directory ({e.strerror or e}); "
                             "choose another --out") from None
        path = self.root / MANIFEST
        if not path.exists():
            m = dict(manifest, format=FORMAT, code_version=code_version())
            tmp = self._tmp_dir() / MANIFEST
            tmp.write_text(strict_json(m, indent=1, sort_keys=True))
            os.replace(tmp, path)
        shutil.rmtree(self.root / ".tmp", ignore_errors=True)

    def _tmp_dir(self) -> Path:
        d = self.root / ".tmp"
        d.mkdir(parents=True, exist_ok=True)
        return d

    # -- writing ---------------------------------------------------------------------------
    def write_batch(self, results: Iterable[tuple[str, dict[str, pa.Table]]],
                    stamp: dict[str, str] | None = None) -> int:
        """Write the tables of a batch of finished tasks as one fragment per table.

        Args:
            results: (task_id, {table name: Arrow table}) per task.
            stamp: constant string columns added to every ``rows`` row (the runner's
                ``code_version`` and ``config_hash``: which code and which resolved
                configuration, in ``manifest.json``, produced the row).

        Returns:
            rows written to the ``rows`` table.

        Raises:
            StoreError: ``stamp`` has a ``config_hash`` and the directory's manifest no longer
                has it (the directory was removed or now holds another campaign, e.g. a driver
                still running after its output was deleted and reused): nothing is written.
        """
        results = list(results)
        if not results:
            return 0
        if stamp and "config_hash" in stamp:
            try:
                now = self.manifest().get("config_hash")
            except StoreError:
                now = None
            if now != stamp["config_hash"]:
                raise StoreError(f"{self.root}: the directory no longer holds this campaign (manifest config "
                                 f"{str(now)[:12]}, this run {stamp['config_hash'][:12]}); not writing into it")
        digest = hashlib.sha256("\n".join(sorted(t for t, _ in results)).encode()).hexdigest()[:32]
        names = sorted({n for _, tabs in results for n in tabs}, key=lambda n: n == "rows")
        n_rows = 0
        for name in names:  # "rows" last: it marks the tasks as stored
            tables = [tabs[name] for _, tabs in results if name in tabs and tabs[name].num_rows]
            if name == "rows":
                tables = [tabs[name] for _, tabs in results if name in tabs]
            if not tables:
                continue
            table = pa.concat_tables(tables, promote_options="default")
            if name == "rows" and stamp:
                for k, v in stamp.items():
                    table = table.append_column(k, pa.array([v] * table.num_rows, pa.string()))
            d = self.root / name
            d.mkdir(exist_ok=True)
            tmp = self._tmp_dir() / f"{name}-{digest}.parquet"
            pq.write_table(table, tmp, compression="zstd")
            os.replace(tmp, d / f"part-{digest}.parquet")
            if name == "rows":
                n_rows = table.num_rows
        return n_rows

    # -- compaction ------------------------------------------------------------------------
    def compact(self, target_rows: int = 2_000_000, min_fragments: int = 2) -> dict[str, tuple[int, int]]:
        """Merge each table's fragments into as few as possible (about ``target_rows`` rows each),
        keeping exactly the rows `read` returns (one copy per task_id).

        Crash-safe like writing: each merged fragment is written to ``.tmp``, renamed into place
        (named after its content, so a repeated compaction writes the same file), and only when
        all of a table's merged fragments are in place are the old ones deleted, ``rows`` last.
        Killed at any point, the directory holds old and merged fragments with the same rows per
        task_id, and readers keep one copy; compacting again finishes the job. Do not compact a
        directory a run is writing into.

        Returns:
            table name -> (fragments before, fragments after), for tables that were compacted.
        """
        self.manifest()
        tables = sorted((p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")),
                        key=lambda n: n == "rows")
        stored = self.stored_task_ids()
        done = {}
        for name in tables:
            old = self.fragments(name)
            if len(old) < min_fragments:
                continue
            new, group, n, seen = [], [], 0, set()
            for f in old:
                t = self._read_fragment(f)
                ids = pc.unique(t.column("task_id")).to_pylist()
                fresh = set(ids) - seen
                if name != "rows":
                    fresh &= stored
                seen |= fresh
                if len(fresh) != len(ids):
                    t = t.filter(pc.is_in(t.column("task_id"), pa.array(sorted(fresh), pa.string())))
                group.append(t)
                n += t.num_rows
                if n >= target_rows:
                    new.append(self._write_merged(name, group))
                    group, n = [], 0
            if group:
                new.append(self._write_merged(name, group))
            for f in old:
                if f not in new:
                    f.unlink(missing_ok=True)
            done[name] = (len(old), len(new))
        return done

    def _read_fragment(self, f: Path) -> pa.Table:
        try:
            t = pq.read_table(f)
        except (OSError, pa.ArrowException) as e:
            raise StoreError(f"{f}: unreadable Parquet fragment ({e})") from None
        if "task_id" not in t.column_names:
            raise StoreError(f"{f}: not a dse-sweep fragment (no task_id column)")
        return t

    def _write_merged(self, name: str, group: list[pa.Table]) -> Path:
        table = pa.concat_tables(group, promote_options="permissive")
        ids = pc.unique(table.column("task_id")).to_pylist()
        digest = hashlib.sha256(("merged\n" + "\n".join(sorted(ids))).encode()).hexdigest()[:32]
        tmp = self._tmp_dir() / f"{name}-{digest}.parquet"
        pq.write_table(table, tmp, compression="zstd")
        path = self.root / name / f"part-{digest}.parquet"
        os.replace(tmp, path)
        return path

    # -- one schema per table ----------------------------------------------------------------
    def unify_schemas(self) -> dict[str, int]:
        """Give every fragment of each table one schema, so that a plain reader of ``DIR/<table>``
        (`pandas.read_parquet`, `pyarrow.dataset`, DuckDB's ``read_parquet``), which takes the
        schema of one fragment, reads them all: the union of the fragments' columns in order of
        first appearance, a column null in one fragment and typed in another taking the type,
        an integer column another fragment holds as floats taking float64 (Arrow's permissive
        promotion). A task's fragment can lack columns (a failed task's row has task_id, status,
        mapper, error, traceback) or type a column null (every value None in its rows).

        Fragments whose schema differs are rewritten in place with the same rows (missing
        columns null), each through ``.tmp`` and a rename: killed at any point, every fragment
        holds its rows and a later call finishes. Tables whose columns cannot be promoted to one
        type (a string in one fragment, a number in another) are left as they are.

        Returns:
            table name -> fragments rewritten (tables with none left out).
        """
        done = {}
        for name in sorted(p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")):
            frags = self.fragments(name)
            schemas = [pq.read_schema(f).remove_metadata() for f in frags]
            if len(frags) < 2 or all(s.equals(schemas[0]) for s in schemas):
                continue
            try:
                target = pa.unify_schemas(schemas, promote_options="permissive")
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                continue
            n = 0
            for f, s in zip(frags, schemas):
                if s.equals(target):
                    continue
                t = self._read_fragment(f)
                cols = [t.column(fl.name).cast(fl.type) if fl.name in t.column_names else pa.nulls(t.num_rows, fl.type)
                        for fl in target]
                tmp = self._tmp_dir() / f"{name}-{f.stem}.parquet"
                pq.write_table(pa.Table.from_arrays(cols, schema=target), tmp, compression="zstd")
                os.replace(tmp, f)
                n += 1
            done[name] = n
        return done

    # -- reading ---------------------------------------------------------------------------
    def fragments(self, table: str = "rows") -> list[Path]:
        """The complete fragments of ``table``, in name order."""
        d = self.root / table
        return sorted(d.glob("part-*.parquet")) if d.is_dir() else []

    def stored_task_ids(self) -> set[str]:
        """task_ids whose ``rows`` fragment is complete."""
        ids: set[str] = set()
        for f in self.fragments("rows"):
            try:
                ids.update(pq.read_table(f, columns=["task_id"]).column(0).to_pylist())
            except (OSError, pa.ArrowException) as e:
                raise StoreError(f"{f}: unreadable Parquet fragment ({e})") from None
        return ids

    def read(self, table: str = "rows", columns: list[str] | None = None) -> pd.DataFrame:
        """All rows of ``table`` as a DataFrame, each task's rows from one fragment only.

        Rows of other tables count only for tasks whose ``rows`` fragment exists.

        Raises:
            StoreError: a fragment is unreadable.
        """
        stored = self.stored_task_ids() if table != "rows" else None
        seen: set[str] = set()
        frames = []
        for f in self.fragments(table):
            try:
                t = pq.read_table(f, columns=columns)
            except (OSError, pa.ArrowException) as e:
                raise StoreError(f"{f}: unreadable Parquet fragment ({e})") from None
            df = t.to_pandas()
            if "task_id" not in df:
                raise StoreError(f"{f}: not a dse-sweep fragment (no task_id column)")
            ids = set(df["task_id"].unique())
            fresh = ids - seen
            if stored is not None:
                fresh &= stored
            if fresh != ids:
                df = df[df["task_id"].isin(fresh)]
            seen |= fresh
            frames.append(df)
        if not frames:
            return pd.DataFrame()
        return pd.concat(frames, ignore_index=True)
