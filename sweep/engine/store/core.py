"""The Parquet result store of a campaign run.

Layout of an output directory::

    manifest.json                 campaign name, config hash, resolved configuration, code version
    fragments.log                 the committed fragments, a log of commits (`sweep.engine.store.catalog`)
    rows/part-<digest>.parquet    one row per result (task_id, status, ...)
    layers/part-<digest>.parquet  per-layer detail (optional, per mapper)
    .lock                         the writer lock (`sweep.engine.store.lock`)
    .tmp/                         files being written (never read)

A fragment holds the rows of a batch of whole tasks and is named after its content (the sha256 of
its sorted task_ids). A batch's fragments (one per table) are committed together
(`sweep.engine.store.catalog.commit`): a task is *stored* once its batch is in the catalog, and a
crash at any point leaves either the whole batch or none of it, for this store's readers and, once
the next command has finished the commit, for a plain ``pandas.read_parquet(DIR/<table>)``.
Fragments carry Parquet page checksums and their sha256 is in the catalog; every read checks
both, so a flipped bit is an error naming the file, never a changed figure.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sweep.common.errors import StoreError
from sweep.common.ids import strict_json
from sweep.engine.store import fsops
from sweep.engine.store.catalog import CATALOG, TMP, Catalog, Entry, commit, pending, recover
from sweep.engine.store.lock import LOCK, WriterLock

__all__ = ["Store", "code_version", "MANIFEST", "FORMAT"]

MANIFEST = "manifest.json"
FORMAT = "dse-sweep/1"
#: Seconds a commit waits for another writer of a shared directory (``sweep tune``'s drivers).
COMMIT_WAIT_S = 60.0
#: What a directory may hold besides results and still count as new (a run killed before its
#: manifest was in place).
_NOT_RESULTS = {TMP, LOCK}


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


def parquet_bytes(table: pa.Table) -> bytes:
    """``table`` as the bytes of a zstd Parquet file with page checksums (CRC-32 per page)."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", write_page_checksum=True)
    return sink.getvalue().to_pybytes()


class Store:
    """A campaign's output directory (see the module docstring)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._lock = WriterLock(self.root)
        self._cat: Catalog | None = None
        self._cat_key: tuple | None = None

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

    def check_new_or_resumable(self, config_hash: str, resume: bool, busy: bool = True) -> None:
        """Refuse to write into a directory that holds something else, or (``busy``) that another
        command is writing. Writes nothing.

        Raises:
            StoreError: the directory holds another campaign's results, foreign files (no
                manifest: not a result directory), or results while ``resume`` is False; the
                message names the directory and what to pass instead.
            StoreBusyError: another command holds its writer lock (pid, host, command named).
        """
        if not self.root.exists():
            return
        if not self.root.is_dir():
            raise StoreError(f"{self.root}: exists and is not a directory")
        entries = [p for p in self.root.iterdir() if p.name not in _NOT_RESULTS]
        if busy:
            self.check_not_busy()
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

    def check_not_busy(self) -> None:
        """Raise `StoreBusyError` if another process holds the directory's writer lock."""
        if not self._lock.is_free():
            self._lock.acquire()   # raises, naming the holder

    def check_writable(self) -> None:
        """Refuse an output directory this process cannot write, before anything starts (a
        progress bar, Ray): the directory if it exists, else the nearest existing folder above it,
        must be a directory this process may create files in: ``os.access`` (its permissions, a
        read-only file system), then a directory made there and removed at once (a virtual file
        system such as /proc refuses it; nothing stays). In an existing result directory, every
        folder a commit writes into (the tables', ``.tmp``) is checked too.

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
        folders = [probe] + ([d for d in self.root.iterdir() if d.is_dir() and not d.name.startswith(".")] +
                             [d for d in (self.root / TMP,) if d.is_dir()] if probe == self.root.absolute() else [])
        for d in folders:
            why = _unwritable(d)
            if why:
                where = what if d == probe else f"cannot write into {d}"
                raise StoreError(f"{self.root}: {where} ({why}); choose another --out")

    def create(self, manifest: dict) -> bool:
        """Create the directory and, under its writer lock (this object's, if it holds it: `acquire`;
        else taken for the call), finish what a killed command committed, check that a file can be
        written there, write the manifest (if absent) and the catalog (adopting the fragments of a
        directory written before the catalog existed).

        Returns:
            whether this call wrote the manifest (False: the directory had one).

        Raises:
            StoreError: the directory cannot be created there (a read-only or virtual file
                system, a missing permission); nothing is written.
            StoreBusyError: another command holds the lock.
            StoreIOError: a write failed (no space): the directory is as before.
        """
        self.mkdir()
        with self._writing():
            probe = self.root / TMP / "write-check"   # a full or read-only disk fails here, before any work
            fsops.mkdir(probe.parent)
            fsops.write(probe, b"dse-sweep")
            fsops.unlink(probe)
            path = self.root / MANIFEST
            wrote = not path.exists()
            if wrote:
                m = dict(manifest, format=FORMAT, code_version=code_version())
                fsops.write(self.root / TMP / MANIFEST, strict_json(m, indent=1, sort_keys=True).encode())
                fsops.replace(self.root / TMP / MANIFEST, path)
                fsops.fsync_dir(self.root)
            self.adopt()
        return wrote

    def mkdir(self) -> None:
        """Create the directory (and its parents) if missing.

        Raises:
            StoreError: it cannot be created there (a read-only or virtual file system, a missing
                permission).
        """
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"{self.root}: cannot create the output directory ({e.strerror or e}); "
                             "choose another --out") from None

    def acquire(self, command: str | None = None) -> None:
        """Take the writer lock for this object's life (until `close`), then finish a commit a
        killed command left (`sweep.engine.store.catalog.recover`).

        Raises:
            StoreBusyError: another process holds it. StoreIOError: the directory is not writable.
        """
        if command:
            self._lock.command = command
        if self._lock.acquire():
            self._recover()

    def close(self) -> None:
        """Release the writer lock (if held)."""
        self._lock.release()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Hold the writer lock for one commit: the lock this object holds, or taken for the commit
        and let go after it (waiting up to `COMMIT_WAIT_S` for another writer of a shared
        directory)."""
        took = self._lock.acquire(wait_s=COMMIT_WAIT_S)
        try:
            if took:
                self._recover()
            yield
        finally:
            if took:
                self._lock.release()

    def _recover(self) -> None:
        recover(self.root)
        self._cat = None

    def recover_if_free(self) -> bool:
        """A reader's first step (``sweep report``): if no command is writing the directory, finish
        a commit a killed one left, so that plain readers see each task's rows once. Returns whether
        there was one to finish."""
        if not (self.root / CATALOG).exists() or not self._lock.is_free() or not pending(self.root):
            return False
        try:
            with self._writing():
                return True
        except StoreError:
            return False

    # -- the catalog -----------------------------------------------------------------------
    def catalog(self) -> Catalog:
        """The committed fragments (read once per commit)."""
        try:
            st = os.stat(self.root / CATALOG)
            key = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            key = None
        if self._cat is None or key is None or key != self._cat_key:   # another process may have committed
            cat = Catalog.load(self.root)
            if cat.legacy:   # every fragment file counts (a directory written before the catalog)
                cat.groups = _legacy_groups(self.root)
            self._cat, self._cat_key = cat, key
        return self._cat

    def _commit(self, new: Catalog, moves=(), remove=()) -> None:
        cat = commit(self.root, self.catalog(), new, list(moves), list(remove))
        st = os.stat(self.root / CATALOG)
        self._cat, self._cat_key = cat, (st.st_ino, st.st_mtime_ns, st.st_size)

    def adopt(self) -> None:
        """Write the catalog of a directory that has none (new, or written before it existed: its
        fragment files, hashed as they are, become committed). Under the writer lock."""
        if not (self.root / CATALOG).exists():
            with self._writing():
                old = self.catalog()
                groups = {g: [_entry(self.root / e.rel, e.table) for e in es] for g, es in old.groups.items()}
                self._commit(Catalog(1, groups))

    def _stage(self, table: str, name: str, data: bytes) -> tuple[str, str, Entry]:
        """Write a fragment's bytes into ``.tmp`` (fsynced); its move and catalog entry."""
        fsops.mkdir(self.root / TMP)
        tmp = f"{TMP}/{self.catalog().seq + 1}-{table}-{name}"   # (this commit's: never an earlier one's)
        fsops.write(self.root / tmp, data)
        rows = pq.read_metadata(pa.BufferReader(data)).num_rows
        return tmp, f"{table}/{name}", Entry(table, name, hashlib.sha256(data).hexdigest(), len(data), rows)

    # -- writing ---------------------------------------------------------------------------
    def write_batch(self, results: Iterable[tuple[str, dict[str, pa.Table]]],
                    stamp: dict[str, str] | None = None) -> int:
        """Commit the tables of a batch of finished tasks, one fragment per table, as one group.

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
            StoreIOError: the file system refused a write (no space, read-only): nothing of the
                batch is committed, the directory is as the last commit left it.
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
        n_rows, staged = 0, []
        with self._writing():
            cat = self.catalog()
            if digest in cat.groups or any(e.name == f"part-{digest}.parquet" for e in cat.entries()):
                digest = f"{digest}-{cat.seq + 1}"   # the same tasks again (after their group was dropped)
            for name in names:
                tables = [tabs[name] for _, tabs in results if name in tabs and (name == "rows" or tabs[name].num_rows)]
                if not tables:
                    continue
                table = pa.concat_tables(tables, promote_options="default")
                if name == "rows" and stamp:
                    for k, v in stamp.items():
                        table = table.append_column(k, pa.array([v] * table.num_rows, pa.string()))
                staged.append(self._stage(name, f"part-{digest}.parquet", parquet_bytes(table)))
                if name == "rows":
                    n_rows = table.num_rows
            self._commit(cat.next(add={digest: [e for _, _, e in staged]}), [(s, d) for s, d, _ in staged])
        return n_rows

    # -- compaction ------------------------------------------------------------------------
    def compact(self, target_rows: int = 2_000_000, min_fragments: int = 2) -> dict[str, tuple[int, int]]:
        """Merge each table's fragments into as few as possible (about ``target_rows`` rows each),
        keeping exactly the rows `read` returns (one copy per task_id), in one commit: the merged
        fragments and every uncompacted one become one group, the old files are removed after the
        commit. Every fragment read is checked (sha256, page checksums) first, so a damaged one
        is refused, not copied on. Killed at any point, the directory holds the old fragments or,
        once the next command has finished the commit, the merged ones.

        Returns:
            table name -> (fragments before, fragments after), for tables that were compacted.

        Raises:
            StoreError: a fragment is missing or damaged (named; `sweep check`).
            StoreIOError: a write failed: nothing changed.
        """
        self.manifest()
        with self._writing():
            cat = self.catalog()
            stored = self.stored_task_ids()
            done, keep, moves, remove = {}, [], [], []
            for name in sorted(cat.tables(), key=lambda n: n == "rows"):
                old = cat.entries(name)
                if len(old) < min_fragments:
                    keep += old
                    continue
                new = self._merge(name, old, stored, target_rows)
                moves += [(s, d) for s, d, _ in new]
                keep += [e for _, _, e in new]
                remove += [e.rel for e in old]
                done[name] = (len(old), len(new))
            if done:
                gid = "merged-" + hashlib.sha256("\n".join(sorted(e.rel for e in keep)).encode()).hexdigest()[:24]
                self._commit(Catalog(cat.seq + 1, {gid: keep}), moves, remove)
        return done

    def _merge(self, name: str, old: list[Entry], stored: set[str], target_rows: int) -> list:
        """The staged merged fragments of table ``name`` (its committed fragments ``old``)."""
        new, group, n, seen = [], [], 0, set()
        for e in old:
            t = self._load(e)
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
                new.append(self._stage_merged(name, group))
                group, n = [], 0
        if group or not new:
            new.append(self._stage_merged(name, group))
        return new

    def _stage_merged(self, name: str, group: list[pa.Table]):
        table = pa.concat_tables(group, promote_options="permissive")
        ids = pc.unique(table.column("task_id")).to_pylist()
        digest = hashlib.sha256(("merged\n" + "\n".join(sorted(ids))).encode()).hexdigest()[:32]
        return self._stage(name, f"part-{digest}.parquet", parquet_bytes(table))

    # -- one schema per table ----------------------------------------------------------------
    def unify_schemas(self) -> dict[str, int]:
        """Give every fragment of each table one schema, so that a plain reader of ``DIR/<table>``
        (`pandas.read_parquet`, `pyarrow.dataset`, DuckDB's ``read_parquet``), which takes the
        schema of one fragment, reads them all: the union of the fragments' columns in order of
        first appearance, a column null in one fragment and typed in another taking the type,
        an integer column another fragment holds as floats taking float64 (Arrow's permissive
        promotion). A task's fragment can lack columns (a failed task's row has task_id, status,
        mapper, error, traceback) or type a column null (every value None in its rows).

        Fragments whose schema differs are rewritten with the same rows (missing columns null)
        and the same names, in one commit. Tables whose columns cannot be promoted to one type (a
        string in one fragment, a number in another) are left as they are.

        Returns:
            table name -> fragments rewritten (tables with none left out).
        """
        done: dict[str, int] = {}
        with self._writing():
            cat = self.catalog()
            swap: dict[str, Entry] = {}
            moves = []
            for name in cat.tables():
                ents = cat.entries(name)
                schemas = [self._schema(e) for e in ents]
                if len(ents) < 2 or all(s.equals(schemas[0]) for s in schemas):
                    continue
                try:
                    target = pa.unify_schemas(schemas, promote_options="permissive")
                except (pa.ArrowInvalid, pa.ArrowTypeError):
                    continue
                for e, s in zip(ents, schemas):
                    if s.equals(target):
                        continue
                    t = self._load(e)
                    cols = [t.column(fl.name).cast(fl.type) if fl.name in t.column_names
                            else pa.nulls(t.num_rows, fl.type) for fl in target]
                    src, dst, new = self._stage(name, e.name, parquet_bytes(pa.Table.from_arrays(cols, schema=target)))
                    moves.append((src, dst))
                    swap[e.rel] = new
                    done[name] = done.get(name, 0) + 1
            if swap:
                groups = {g: [swap.get(e.rel, e) for e in es] for g, es in cat.groups.items()}
                self._commit(Catalog(cat.seq + 1, groups), moves)
        return done

    # -- reading ---------------------------------------------------------------------------
    def _schema(self, e: Entry) -> pa.Schema:
        try:
            return pq.read_schema(self.root / e.rel).remove_metadata()
        except (OSError, pa.ArrowException) as err:
            raise self._damaged(e, f"unreadable Parquet fragment ({err})") from None

    def _damaged(self, e: Entry, why: str) -> StoreError:
        return StoreError(f"{self.root / e.rel}: {why}; `sweep check {self.root}` lists what is damaged and "
                          "`sweep run ... --resume` recomputes its tasks")

    def _load(self, e: Entry, columns: list[str] | None = None) -> pa.Table:
        """A committed fragment's table, its bytes checked against the catalog (size, sha256) and
        its pages against their checksums.

        Raises:
            StoreError: the file is missing, changed, unreadable or not a dse-sweep fragment.
        """
        path = self.root / e.rel
        try:
            data = path.read_bytes()
        except FileNotFoundError:   # committed, still to be moved into place (a killed commit)?
            staged = {dst: src for src, dst in (self.catalog().last or {}).get("moves", [])}.get(e.rel)
            data = b""
            for p in ([self.root / staged, path] if staged else []):   # (moved meanwhile: read it there)
                try:
                    data = p.read_bytes()
                    break
                except OSError:
                    continue
            if not data:
                raise self._damaged(e, "missing (a committed fragment)") from None
        except OSError as err:
            raise self._damaged(e, f"unreadable ({err.strerror})") from None
        if e.sha256 and (len(data) != e.bytes or hashlib.sha256(data).hexdigest() != e.sha256):
            raise self._damaged(e, f"damaged: its content differs from what was committed ({len(data):,} bytes, "
                                   f"committed {e.bytes:,}; sha256 differs)")
        try:
            t = pq.read_table(pa.BufferReader(data), columns=columns, page_checksum_verification=True)
        except (OSError, pa.ArrowException) as err:
            raise self._damaged(e, f"unreadable Parquet fragment ({err})") from None
        if "task_id" not in t.column_names:
            raise self._damaged(e, "not a dse-sweep fragment (no task_id column)")
        return t

    def entries(self, table: str = "rows") -> list[Entry]:
        """The committed fragments of ``table`` (catalog entries), in name order."""
        return self.catalog().entries(table)

    def fragments(self, table: str = "rows") -> list[Path]:
        """The committed fragment files of ``table``, in name order."""
        return [self.root / e.rel for e in self.entries(table)]

    def foreign(self) -> list[Path]:
        """Fragment files in the table folders that no commit wrote (copied in, another
        configuration's): never read; ``--resume`` moves them to ``DIR/.foreign``."""
        known = {e.rel for e in self.catalog().entries()}
        return sorted(f for d in sorted(self.root.iterdir()) if d.is_dir() and not d.name.startswith(".")
                      for f in d.glob("part-*.parquet") if f"{d.name}/{f.name}" not in known)

    def stored_task_ids(self) -> set[str]:
        """task_ids whose batch is committed (in a ``rows`` fragment of the catalog).

        Raises:
            StoreError: a ``rows`` fragment is missing or damaged."""
        ids: set[str] = set()
        for e in self.entries("rows"):
            ids.update(self._load(e, ["task_id"]).column(0).to_pylist())
        return ids

    def read(self, table: str = "rows", columns: list[str] | None = None) -> pd.DataFrame:
        """All rows of ``table`` as a DataFrame, each task's rows from one fragment only.

        Rows of other tables count only for tasks whose ``rows`` fragment exists.

        Raises:
            StoreError: a fragment is missing, damaged or unreadable (named).
        """
        stored = self.stored_task_ids() if table != "rows" else None
        cols = None if columns is None else list(dict.fromkeys(["task_id"] + list(columns)))
        seen: set[str] = set()
        frames = []
        for e in self.entries(table):
            df = self._load(e, cols).to_pandas()
            ids = set(df["task_id"].unique())
            fresh = ids - seen
            if stored is not None:
                fresh &= stored
            if fresh != ids:
                df = df[df["task_id"].isin(fresh)]
            seen |= fresh
            frames.append(df if columns is None or "task_id" in columns else df.drop(columns="task_id"))
        if not frames:
            return pd.DataFrame()
        return pd.concat(frames, ignore_index=True)


def _unwritable(d: Path) -> str:
    """Why this process cannot create files in directory ``d`` ("" if it can)."""
    if not os.access(d, os.W_OK | os.X_OK):
        try:
            return "a read-only file system" if os.statvfs(d).f_flag & os.ST_RDONLY else "no write permission"
        except OSError:
            return "no write permission"
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".sweep-check-", dir=d))
    except OSError as e:
        return e.strerror or type(e).__name__
    return ""


def _legacy_groups(root: Path) -> dict[str, list[Entry]]:
    """The fragments of a directory without a catalog, grouped by file name (a batch's fragments
    share it), unhashed (sha256 "": not checked)."""
    groups: dict[str, list[Entry]] = {}
    if not root.is_dir():
        return groups
    for d in sorted(root.iterdir()):
        if d.is_dir() and not d.name.startswith("."):
            for f in sorted(d.glob("part-*.parquet")):
                groups.setdefault(f.stem, []).append(Entry(d.name, f.name, "", 0, 0))
    return groups


def _entry(path: Path, table: str) -> Entry:
    """The catalog entry of an existing fragment file (hashed as it is now)."""
    data = path.read_bytes()
    try:
        rows = pq.read_metadata(pa.BufferReader(data)).num_rows
    except (OSError, pa.ArrowException) as e:
        raise StoreError(f"{path}: unreadable Parquet fragment ({e})") from None
    return Entry(table, path.name, hashlib.sha256(data).hexdigest(), len(data), rows)
