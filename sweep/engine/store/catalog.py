"""What a result directory holds for certain: the catalog of committed fragments, changed only
through a redo journal.

``DIR/fragments.json`` (the catalog) lists every fragment a command committed, in *groups*: the
fragments written together (one batch of tasks: one fragment per table; one compaction: the merged
fragments of every table), each fragment with its table, file name, sha256, size and rows. A
fragment file in a table folder that the catalog does not list is *foreign* (copied in, or left by
another configuration) and is never read; a listed file that is gone or whose bytes changed is
*damaged*, and its group's tasks are no longer stored.

Every change is one transaction, SQLite's rollback journal turned into a redo log:

1. the new files are written into ``DIR/.tmp`` and fsynced (`fsops.write`);
2. ``DIR/journal.json`` is written (through ``.tmp`` and a rename, then the directory fsynced): the
   moves into place, the files to remove and the whole next catalog. This is the commit point;
3. `apply`: the moves (renames), the catalog, the removals, each directory fsynced; the journal
   removed last.

Killed before 2, nothing changed (``.tmp`` is cleared by the next writer); killed after, the next
command of the project (`recover`: run, resume, report, compact, check) applies the journal again
before anything else. Every step of `apply` can be repeated, so a plain reader of ``DIR/<table>``
sees, once it has run, exactly the catalog's fragments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sweep.common.errors import StoreError
from sweep.common.ids import strict_json
from sweep.engine.store import fsops

__all__ = ["CATALOG", "JOURNAL", "TMP", "Entry", "Catalog", "commit", "recover", "pending"]

CATALOG = "fragments.json"
JOURNAL = "journal.json"
TMP = ".tmp"
FORMAT = "dse-sweep-fragments/1"


@dataclass(frozen=True)
class Entry:
    """One committed fragment: ``DIR/<table>/<name>``, its sha256 (hex), size in bytes and rows."""

    table: str
    name: str
    sha256: str
    bytes: int
    rows: int

    @property
    def rel(self) -> str:
        return f"{self.table}/{self.name}"

    def as_dict(self) -> dict:
        return {"table": self.table, "name": self.name, "sha256": self.sha256, "bytes": self.bytes, "rows": self.rows}


@dataclass
class Catalog:
    """The committed fragments by group (`groups`: group id -> its entries); ``seq`` counts commits.
    ``legacy``: the directory predates the catalog (written before it existed); then every
    fragment file counts as committed until a writer adopts them (`Store.adopt`)."""

    seq: int
    groups: dict[str, list[Entry]]
    legacy: bool = False

    @classmethod
    def load(cls, root: Path) -> "Catalog":
        """The catalog of ``root``; an empty legacy one if the directory has none.

        Raises:
            StoreError: the file is unreadable or not a catalog.
        """
        path = root / CATALOG
        try:
            raw = json.loads(path.read_text())
        except FileNotFoundError:
            return cls(0, {}, legacy=True)
        except (OSError, ValueError) as e:
            raise StoreError(f"{path}: unreadable fragment catalog ({e})") from None
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise StoreError(f"{path}: not a dse-sweep fragment catalog")
        groups = {g: [Entry(**e) for e in es] for g, es in raw["groups"].items()}
        return cls(int(raw["seq"]), groups)

    def as_dict(self) -> dict:
        return {"format": FORMAT, "seq": self.seq,
                "groups": {g: [e.as_dict() for e in es] for g, es in sorted(self.groups.items())}}

    def entries(self, table: str | None = None) -> list[Entry]:
        """Committed fragments (of ``table``), in file-name order (the order readers keep a task's
        first fragment in)."""
        out = [e for es in self.groups.values() for e in es if table is None or e.table == table]
        return sorted(out, key=lambda e: (e.table, e.name))

    def group_of(self) -> dict[str, str]:
        """``table/name`` -> group id."""
        return {e.rel: g for g, es in self.groups.items() for e in es}

    def tables(self) -> list[str]:
        return sorted({e.table for e in self.entries()})

    def next(self, drop: set[str] = frozenset(), add: dict[str, list[Entry]] | None = None) -> "Catalog":
        """The catalog after a commit that drops groups ``drop`` and adds groups ``add``."""
        groups = {g: es for g, es in self.groups.items() if g not in drop}
        groups.update(add or {})
        return Catalog(self.seq + 1, groups)


def commit(root: Path, new: Catalog, moves: list[tuple[str, str]] = (), remove: list[str] = ()) -> None:
    """Commit a transaction (module docstring): ``moves`` (source, destination) paths relative to
    ``root`` (sources already written and fsynced, normally in ``.tmp``), the ``new`` catalog, then
    ``remove`` (relative paths; a file the new catalog lists is kept).

    Raises:
        StoreIOError: the file system refused; before the journal is in place nothing changed,
            after it the next command finishes the transaction.
    """
    journal = {"seq": new.seq, "moves": [list(m) for m in moves], "remove": list(remove), "catalog": new.as_dict()}
    _write_atomic(root, JOURNAL, strict_json(journal, sort_keys=True).encode())
    apply(root, journal)


def _write_atomic(root: Path, name: str, data: bytes) -> None:
    tmp = root / TMP
    fsops.mkdir(tmp)
    fsops.write(tmp / name, data)
    fsops.replace(tmp / name, root / name)
    fsops.fsync_dir(root)


def apply(root: Path, journal: dict) -> None:
    """Carry out a committed journal (idempotent: a move whose source is gone was done).

    Raises:
        StoreIOError: the file system refused; the journal stays, to be applied again.
    """
    dirs: set[Path] = set()
    for src, dst in journal["moves"]:
        s, d = root / src, root / dst
        if s.exists():
            fsops.mkdir(d.parent)
            fsops.replace(s, d)
            dirs.add(d.parent)
    for d in sorted(dirs):
        fsops.fsync_dir(d)
    _write_atomic(root, CATALOG, strict_json(journal["catalog"], indent=0, sort_keys=True).encode())
    keep = {f"{e['table']}/{e['name']}" for es in journal["catalog"]["groups"].values() for e in es}
    dirs = set()
    for rel in journal["remove"]:
        if rel not in keep and (root / rel).exists():
            fsops.unlink(root / rel)
            dirs.add((root / rel).parent)
    for d in sorted(dirs):
        fsops.fsync_dir(d)
    fsops.unlink(root / JOURNAL)
    fsops.fsync_dir(root)


def pending(root: Path) -> dict | None:
    """The committed journal of ``root`` not yet applied, or None.

    Raises:
        StoreError: the journal is unreadable (it is written through a rename, so only a hand edit
            or a failing disk makes it so).
    """
    path = root / JOURNAL
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise StoreError(f"{path}: unreadable commit journal ({e}); `sweep check {root}` says what the "
                         "directory holds") from None


def recover(root: Path) -> bool:
    """Finish the transaction a killed command committed (`pending`), then clear ``.tmp`` (what an
    uncommitted one staged). Only under the writer lock. Returns whether a journal was applied.

    Raises:
        StoreError: an unreadable journal. StoreIOError: the file system refused.
    """
    journal = pending(root)
    if journal is not None:
        apply(root, journal)
    tmp = root / TMP
    if tmp.is_dir():
        for f in sorted(tmp.iterdir()):
            if f.is_file():
                fsops.unlink(f)
    return journal is not None
