"""What a result directory holds for certain: the log of committed fragments.

``DIR/fragments.log`` (the catalog) lists every fragment a command committed, in *groups*: the
fragments written together (one batch of tasks: one fragment per table; one compaction: the merged
fragments of every table), each fragment with its table, file name, sha256, size and rows. A
fragment file in a table folder that the catalog does not list is *foreign* (copied in, or left by
another configuration) and is never read; a listed file that is gone or whose bytes changed is
*damaged*, and its group's tasks are no longer stored.

The catalog is a redo log of JSON lines, one per commit: the groups it drops and adds, the files it
moves into place and the files it removes afterwards. Every change is one transaction:

1. the new files are written into ``DIR/.tmp`` (named after the commit's sequence number) and
   fsynced (`fsops.write`);
2. the commit's line is appended to the log and fsynced (the commit point; a line cut short by a
   crash is no commit, and the next writer truncates it away); a commit that replaces most of the
   catalog (a compaction) writes the whole catalog as one line to a new log renamed over the old;
3. `apply`: the moves (renames), then the removals, each folder fsynced.

Killed before 2, nothing changed (``.tmp`` is cleared by the next writer); killed after, the next
command of the project (`recover`: run, resume, report, compact) applies the last line again before
anything else. Every step of `apply` can be repeated, so a plain reader of ``DIR/<table>`` sees,
once it has run, exactly the catalog's fragments. A commit costs one append (not a rewrite of the
catalog), so a run of thousands of batches commits in constant time each.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sweep.common.errors import StoreError
from sweep.common.ids import strict_json
from sweep.engine.store import fsops

__all__ = ["CATALOG", "TMP", "Entry", "Catalog", "commit", "recover", "pending"]

CATALOG = "fragments.log"
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
    fragment file counts as committed until a writer adopts them (`Store.adopt`). ``last``: the last
    committed line (what `recover` applies again); ``torn``: the log ends in a line cut short (no
    commit), ``good_bytes`` long before it."""

    seq: int
    groups: dict[str, list[Entry]]
    legacy: bool = False
    last: dict | None = None
    torn: bool = False
    good_bytes: int = 0

    @classmethod
    def load(cls, root: Path) -> "Catalog":
        """The catalog of ``root``; an empty legacy one if the directory has none.

        Raises:
            StoreError: the log is unreadable or not a catalog (a complete line that does not parse).
        """
        path = root / CATALOG
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return cls(0, {}, legacy=True)
        except OSError as e:
            raise StoreError(f"{path}: unreadable fragment catalog ({e.strerror})") from None
        cat, pos = cls(0, {}), 0
        while pos < len(data):
            end = data.find(b"\n", pos)
            if end < 0:   # the last line cut short by a crash: no commit
                cat.torn = True
                break
            try:
                line = json.loads(data[pos:end])
                cat._apply(line, first=pos == 0)
            except (ValueError, KeyError, TypeError) as e:
                if end + 1 == len(data):   # the last line, torn inside a multi-byte write: no commit either
                    cat.torn = True
                    break
                raise StoreError(f"{path}: unreadable fragment catalog (line at byte {pos}: {e})") from None
            pos = end + 1
        cat.good_bytes = pos
        return cat

    def _apply(self, line: dict, first: bool) -> None:
        if first and line.get("format") != FORMAT:
            raise KeyError("format")
        if line.get("snapshot"):
            self.groups = {}
        for g in line.get("drop", ()):
            self.groups.pop(g, None)
        for g, es in line["add"].items():
            self.groups[g] = [Entry(**e) for e in es]
        self.seq, self.last = int(line["seq"]), line

    def entries(self, table: str | None = None) -> list[Entry]:
        """Committed fragments (of ``table``), in file-name order (the order readers keep a task's
        first fragment in)."""
        out = [e for es in self.groups.values() for e in es if table is None or e.table == table]
        return sorted(out, key=lambda e: (e.table, e.name))

    def tables(self) -> list[str]:
        return sorted({e.table for e in self.entries()})

    def next(self, drop: set[str] = frozenset(), add: dict[str, list[Entry]] | None = None) -> "Catalog":
        """The catalog after a commit that drops groups ``drop`` and adds groups ``add``."""
        groups = {g: es for g, es in self.groups.items() if g not in drop}
        groups.update(add or {})
        return Catalog(self.seq + 1, groups)


def _line(d: dict) -> bytes:
    return (strict_json(d, sort_keys=True) + "\n").encode()


def _delta(old: Catalog, new: Catalog) -> tuple[list[str], dict[str, list[Entry]]]:
    """The groups ``new`` drops from ``old`` (or changes) and the ones it adds (or changes)."""
    drop = sorted(g for g, es in old.groups.items() if new.groups.get(g) != es)
    add = {g: es for g, es in new.groups.items() if old.groups.get(g) != es}
    return drop, add


def commit(root: Path, old: Catalog, new: Catalog, moves: list[tuple[str, str]] = (),
           remove: list[str] = ()) -> Catalog:
    """Commit a transaction (module docstring) that turns catalog ``old`` into ``new``: ``moves``
    (source, destination) paths relative to ``root`` (sources already written and fsynced, in
    ``.tmp``), then ``remove`` (relative paths; a file ``new`` lists is kept). Returns ``new`` as the
    log now holds it.

    Raises:
        StoreIOError: the file system refused; before the commit point nothing changed, after it
            the next command finishes the transaction.
    """
    drop, add = _delta(old, new)
    body = {"seq": new.seq, "moves": [list(m) for m in moves], "remove": list(remove)}
    path = root / CATALOG
    if old.legacy or not path.exists() or len(drop) > len(new.groups):   # a new log: the whole catalog
        body.update(format=FORMAT, snapshot=True, add={g: [e.as_dict() for e in es] for g, es in sorted(new.groups.items())})
        fsops.mkdir(root / TMP)
        fsops.write(root / TMP / CATALOG, _line(body))
        fsops.replace(root / TMP / CATALOG, path)
        fsops.fsync_dir(root)
    else:
        body.update(drop=drop, add={g: [e.as_dict() for e in es] for g, es in sorted(add.items())})
        fsops.append(path, _line(body))
    new = Catalog(new.seq, dict(new.groups))
    apply(root, body, new)
    return new


def apply(root: Path, line: dict, cat: Catalog) -> None:
    """Carry out committed line ``line`` of catalog ``cat`` (idempotent: a move whose source is gone
    was done; a file ``cat`` lists is never removed).

    Raises:
        StoreIOError: the file system refused; the next command applies the line again.
    """
    dirs: set[Path] = set()
    for src, dst in line["moves"]:
        s, d = root / src, root / dst
        if s.exists():
            fsops.mkdir(d.parent)
            fsops.replace(s, d)
            dirs.add(d.parent)
    for d in sorted(dirs):
        fsops.fsync_dir(d)
    keep = {e.rel for e in cat.entries()}
    dirs = set()
    for rel in line["remove"]:
        if rel not in keep and (root / rel).exists():
            fsops.unlink(root / rel)
            dirs.add((root / rel).parent)
    for d in sorted(dirs):
        fsops.fsync_dir(d)


def pending(root: Path) -> bool:
    """Whether the last commit of ``root`` is not fully applied (a line cut short, a move or a
    removal still to do): what `recover` would finish.

    Raises:
        StoreError: the catalog is unreadable.
    """
    cat = Catalog.load(root)
    if cat.legacy:
        return False
    if cat.torn:
        return True
    keep = {e.rel for e in cat.entries()}
    last = cat.last or {"moves": [], "remove": []}
    return (any((root / s).exists() for s, _ in last["moves"]) or
            any(rel not in keep and (root / rel).exists() for rel in last["remove"]))


def recover(root: Path) -> bool:
    """Finish the commit a killed command left (its line applied again; a line cut short truncated
    away), then clear ``.tmp`` (what an uncommitted transaction staged). Only under the writer lock.
    Returns whether there was something to finish.

    Raises:
        StoreError: an unreadable catalog. StoreIOError: the file system refused.
    """
    cat = Catalog.load(root)
    if cat.legacy:
        return False
    was = pending(root)
    if cat.torn:
        fsops.truncate(root / CATALOG, cat.good_bytes)
    if cat.last is not None:
        apply(root, cat.last, cat)
    tmp = root / TMP
    if tmp.is_dir():
        for f in sorted(tmp.iterdir()):
            if f.is_file():
                fsops.unlink(f)
    return was
