"""What ``sweep run --resume`` mends before it runs anything, so that it recomputes exactly what the
directory lacks.

1. *Foreign* fragment files (in a table folder, listed by no commit: copied in from another
   configuration, or a hand edit) are moved to ``DIR/.foreign/<table>/``: never read, and no longer
   seen by a plain ``pandas.read_parquet(DIR/<table>)`` either.
2. *Damaged* groups (a committed fragment missing, or its bytes not the committed sha256) are dropped
   from the catalog and their remaining files moved to ``DIR/.damaged/<table>/``; their tasks are
   no longer stored, so the run computes them again.
3. Tasks that *crashed* (a worker process killed, out of memory, a lost node: the executor gave up
   on them: ``status`` "error" and an ``error`` that begins with ``crashed: ``) are taken out of their fragments, to be run
   again, as Ray Tune's ``restore(restart_errored=True)`` does for errored trials. Tasks whose code
   raised are kept: they fail the same way again (their rows name the problem and the error).

Each step is one commit (`sweep.engine.store.catalog.commit`), so a crash inside leaves the
directory as before or mended.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sweep.engine.store import fsops
from sweep.engine.store.catalog import Entry
from sweep.engine.store.core import parquet_bytes

__all__ = ["Mended", "repair", "CRASHED", "crashed_ids", "verify_entry"]

#: How the ``error`` of a task the executor gave up on begins (`sweep.engine.tasks.CRASHED`; the store
#: sits below the tasks, so the text is repeated here and a test holds them equal).
CRASHED = "crashed: "


def crashed_ids(t: pa.Table) -> set[str]:
    """task_ids of ``t`` (a ``rows`` table) with a crashed row (status "error", error `CRASHED` ...)."""
    if "status" not in t.column_names or "error" not in t.column_names:
        return set()
    hit = pc.and_(pc.equal(t.column("status"), "error"),
                  pc.fill_null(pc.starts_with(t.column("error"), CRASHED), False))
    return set(t.filter(hit).column("task_id").to_pylist())


@dataclass
class Mended:
    """What `repair` did: foreign files moved (paths relative to the directory), damaged fragments
    (relative path, why) whose groups were dropped, tasks dropped with them, crashed tasks taken
    out to be run again."""

    foreign: list[str] = field(default_factory=list)
    damaged: list[tuple[str, str]] = field(default_factory=list)
    dropped_tasks: int = 0
    crashed_tasks: int = 0

    def __bool__(self) -> bool:
        return bool(self.foreign or self.damaged or self.crashed_tasks)

    def lines(self, root: str) -> list[str]:
        """One line per kind of mend, for the run's output."""
        out = []
        if self.foreign:
            out.append(f"{len(self.foreign)} fragment(s) no run of this campaign wrote moved to {root}/.foreign "
                       f"(never read): {', '.join(self.foreign[:3])}{' ...' if len(self.foreign) > 3 else ''}")
        for rel, why in self.damaged:
            out.append(f"{rel}: {why}; its batch ({self.dropped_tasks:,} task(s) in all) is computed again")
        if self.crashed_tasks:
            out.append(f"{self.crashed_tasks:,} task(s) whose worker crashed (killed, out of memory, a lost node) "
                       "are run again")
        return out


def verify_entry(root: Path, e: Entry) -> str:
    """Why committed fragment ``e`` is damaged ("" if it is intact): missing, another size, another
    sha256 (a fragment of a directory written before the catalog, sha256 "", is not checked)."""
    path = root / e.rel
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return "missing (a committed fragment)"
    except OSError as err:
        return f"unreadable ({err.strerror})"
    if e.sha256 and (len(data) != e.bytes or hashlib.sha256(data).hexdigest() != e.sha256):
        return f"damaged (its content differs from what was committed: {len(data):,} bytes, committed {e.bytes:,})"
    return ""


def repair(store) -> Mended:
    """Mend ``store`` (a `sweep.engine.store.Store` whose writer lock is held) as the module
    docstring says, each step one commit.

    Raises:
        StoreIOError: the file system refused a write; the directory is as the last commit left it.
    """
    m = Mended()
    root = store.root
    for f in store.foreign():
        dst = root / ".foreign" / f.parent.name / f.name
        fsops.mkdir(dst.parent)
        fsops.replace(f, dst)
        m.foreign.append(f"{f.parent.name}/{f.name}")
    _drop_damaged(store, m)
    _retract_crashed(store, m)
    return m


def _drop_damaged(store, m: Mended) -> None:
    root, cat = store.root, store.catalog()
    bad: dict[str, list[Entry]] = {}
    for g, es in cat.groups.items():
        for e in es:
            why = verify_entry(root, e)
            if why:
                m.damaged.append((e.rel, why))
                bad[g] = es
    if not bad:
        return
    moves = []
    for es in bad.values():
        rows = [e for e in es if e.table == "rows" and (root / e.rel).exists() and not verify_entry(root, e)]
        m.dropped_tasks += sum(len(set(pq.read_table(root / e.rel, columns=["task_id"]).column(0).to_pylist()))
                               for e in rows)
        moves += [(e.rel, f".damaged/{e.rel}") for e in es if (root / e.rel).exists()]
    store._commit(cat.next(drop=set(bad)), moves)


def _retract_crashed(store, m: Mended) -> None:
    root, cat = store.root, store.catalog()
    crashed: set[str] = set()
    for e in cat.entries("rows"):
        if {"status", "error"} <= set(pq.read_schema(root / e.rel).names):
            crashed |= crashed_ids(store._load(e, ["task_id", "status", "error"]))
    if not crashed:
        return
    gone = pa.array(sorted(crashed), pa.string())
    drop, add, moves, remove = set(), {}, [], []
    for g, es in cat.groups.items():
        tables = {e.rel: store._load(e) for e in es}
        if not any(pc.any(pc.is_in(t.column("task_id"), gone)).as_py() for t in tables.values()):
            continue
        drop.add(g)
        remove += list(tables)
        kept = {rel: t.filter(pc.invert(pc.is_in(t.column("task_id"), gone))) for rel, t in tables.items()}
        ids = sorted({i for t in kept.values() for i in t.column("task_id").to_pylist()})
        if not ids:
            continue
        digest = hashlib.sha256(("kept\n" + "\n".join(ids)).encode()).hexdigest()[:32]
        new = []
        for e in es:
            t = kept[e.rel]
            if e.table != "rows" and not t.num_rows:
                continue
            src, dst, ent = store._stage(e.table, f"part-{digest}.parquet", parquet_bytes(t))
            moves.append((src, dst))
            new.append(ent)
        add[digest] = new
    store._commit(cat.next(drop=drop, add=add), moves, remove)
    m.crashed_tasks = len(crashed)
