"""``sweep check DIR``: verify a result directory and say what ``--resume`` would do. Reads only.

Every committed fragment (`sweep.engine.store.catalog`) is checked three ways: present, its bytes
the committed sha256, and its Parquet pages their CRC-32 checksums (pyarrow's
``page_checksum_verification``); fragment files no commit wrote are *foreign*; the last commit not
fully applied (a killed command's) is *pending* (the next command finishes it). Then the tasks: stored, in a damaged
batch, crashed (run again by ``--resume``), raised (their code failed), and, for a campaign whose
task count is known up front, not stored yet.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sweep.engine.store.catalog import pending
from sweep.engine.store.core import Store
from sweep.engine.store.repair import crashed_ids, verify_entry

__all__ = ["Checked", "check"]


@dataclass
class Checked:
    """What `check` found. Paths relative to the directory; counts of tasks (task_ids)."""

    directory: str
    campaign: str
    source: str = "CAMPAIGN"
    fragments: int = 0
    damaged: list[tuple[str, str]] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    pending_commit: bool = False
    tasks_expected: int | None = None
    tasks_stored: int = 0
    tasks_in_damaged: int = 0
    tasks_crashed: int = 0
    tasks_raised: int = 0

    @property
    def intact(self) -> bool:
        """Nothing damaged, nothing foreign, no commit left half-applied."""
        return not (self.damaged or self.foreign or self.pending_commit)

    @property
    def rerun(self) -> int | None:
        """Tasks ``--resume`` would run (None: unknown, for a search that decides as it goes)."""
        if self.tasks_expected is None:
            return None
        return max(0, self.tasks_expected - self.tasks_stored + self.tasks_in_damaged + self.tasks_crashed)

    def as_dict(self) -> dict:
        return dict(asdict(self), intact=self.intact, rerun=self.rerun)

    def lines(self) -> list[str]:
        """The report, one finding per line."""
        out = [f"{self.directory}: campaign {self.campaign!r}, {self.fragments} committed fragment(s)"]
        out += [f"damaged: {rel}: {why}" for rel, why in self.damaged]
        out += [f"foreign: {rel} (no commit wrote it; never read; --resume moves it to .foreign/)"
                for rel in self.foreign]
        if self.pending_commit:
            out.append("pending: a command was killed while it committed; the next run, report or compact "
                       "finishes it")
        exp = f" of {self.tasks_expected:,}" if self.tasks_expected is not None else ""
        out.append(f"tasks: {self.tasks_stored:,}{exp} stored" +
                   (f", {self.tasks_in_damaged:,} in damaged batches" if self.tasks_in_damaged else "") +
                   (f", {self.tasks_crashed:,} crashed (run again by --resume)" if self.tasks_crashed else "") +
                   (f", {self.tasks_raised:,} whose code raised (status 'error')" if self.tasks_raised else ""))
        r = self.rerun
        out.append("intact" if self.intact else
                   f"NOT intact: `sweep run {self.source} --resume --out {self.directory}` mends it")
        if r is not None:
            out.append(f"--resume would run {r:,} task(s)" if r else "complete: --resume would run nothing")
        return out


def check(directory: str | Path) -> Checked:
    """Verify ``directory`` (module docstring); changes nothing.

    Raises:
        StoreError: not a dse-sweep result directory, or its catalog is unreadable.
    """
    store = Store(directory)
    m = store.manifest()
    root = store.root
    out = Checked(str(directory), str(m.get("name")), str(m.get("source") or "CAMPAIGN"), pending_commit=pending(root))
    cat = store.catalog()
    out.fragments = len(cat.entries())
    out.foreign = [f"{f.parent.name}/{f.name}" for f in store.foreign()]
    if "designs" not in m and isinstance(m.get("tasks"), int) and "storage" not in m:
        out.tasks_expected = int(m["tasks"])
    stored: set[str] = set()
    for g, es in sorted(cat.groups.items()):
        read = {e.rel: _read(root, e) for e in es}
        bad = [(rel, why) for rel, (why, _) in read.items() if why]
        out.damaged += bad
        for e in es:
            why, t = read[e.rel]
            if e.table != "rows" or why or t is None:
                continue
            ids = set(t.column("task_id").to_pylist())
            if bad:
                out.tasks_in_damaged += len(ids)
                continue
            stored |= ids
            if "status" in t.column_names:
                failed = set(t.filter(pc.equal(t.column("status"), "error")).column("task_id").to_pylist())
                crashed = crashed_ids(t)
                out.tasks_crashed += len(crashed)
                out.tasks_raised += len(failed - crashed)
    out.tasks_stored = len(stored) + out.tasks_in_damaged
    return out


def _read(root: Path, e) -> tuple[str, pa.Table | None]:
    """`verify_entry`, then the pages against their checksums: (why it is damaged or "", its table)."""
    why = verify_entry(root, e)
    if why:
        return why, None
    try:
        return "", pq.read_table(root / e.rel, page_checksum_verification=True)
    except (OSError, pa.ArrowException) as err:
        return f"unreadable ({err})", None
