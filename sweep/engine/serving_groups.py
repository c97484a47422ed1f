"""A serving campaign's tasks under ``[serving] mappings = "shared"``: the designs of one *chip*
(`chip_view`: the same array and on-chip memories, any DRAM, clock or vector unit) in one task, so
that the chip's reference mappings (`sweep.serving.shared_mappings`) are searched once and re-costed
on every design of it.

`reference_designs` picks each chip's references among the campaign's designs: the one with the
slowest DRAM in bits per cycle (`dram_bits_per_cycle`) and the one with the fastest (one design when
they coincide; the first in the campaign's order on a tie). They are part of every task id of the
chip, so a grid that adds a slower or faster DRAM gives the chip's designs other tasks.

A `ServingGroup` holds `ServingTask`s of one chip and one scheduler setting (at most
`GROUP_DESIGNS`), runs them in order in one process and writes their rows under its own task id:
the same rows as each task alone (each member's figures are a function of its design, setting,
spec, seed and references), one fragment per group.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import pyarrow as pa

from sweep.common.ids import canonical_json, stable_hash

__all__ = ["chip_view", "dram_bits_per_cycle", "reference_designs", "ServingGroup", "serving_groups",
           "GROUP_DESIGNS"]

#: The most designs of one chip in one task (a chip with more is split; each part maps the
#: references unless its process already holds them).
GROUP_DESIGNS = 256

#: What a mapper reads of the outermost memory that a shared mapping re-costs (left out of `chip_view`).
_DRAM_FIGURES = ("read_pj", "write_pj", "word_bits", "read_bw", "write_bw")
#: What the accelerator description holds that no mapper reads, or that a shared mapping re-costs.
_NOT_CHIP = ("name", "description", "clock_mhz", "dram", "dram_gib_per_unit", "vector", "tech", "launch_overhead_us")


def chip_view(arch: dict[str, Any]) -> str:
    """The chip of an accelerator (``arch``: `Accelerator.to_dict`): canonical JSON of everything a
    mapper reads but the clock and the outermost memory's energies, word width and bandwidths (and
    what no mapper reads: the name, DRAM kind and capacity, vector unit, technology, launch cost).
    Designs of one chip differ only in what `sweep.serving.shared_mappings` re-costs."""
    d = {k: v for k, v in arch.items() if k not in _NOT_CHIP}
    mems = [dict(m) for m in arch.get("memory", [])]
    if mems:
        top = mems[-1]
        mems[-1] = {k: v for k, v in top.items() if k not in _DRAM_FIGURES}
    d["memory"] = mems
    return canonical_json(d)


def dram_bits_per_cycle(arch: dict[str, Any]) -> float:
    """The outermost memory's read bandwidth (bits per cycle of the accelerator's clock)."""
    mems = arch.get("memory", [])
    return float(mems[-1].get("read_bw", 0.0)) if mems else 0.0


def reference_designs(designs: Sequence[Any]) -> dict[str, tuple[Any, ...]]:
    """design_id -> the references of its chip (module docstring), as `ServingDesign`s: (slowest
    DRAM, fastest DRAM), or one design when they are the same."""
    chips: dict[str, list[Any]] = {}
    for d in designs:
        chips.setdefault(chip_view(json.loads(d.arch)), []).append(d)
    out: dict[str, tuple[Any, ...]] = {}
    for members in chips.values():
        bw = [dram_bits_per_cycle(json.loads(d.arch)) for d in members]
        lo = members[min(range(len(members)), key=lambda i: (bw[i], i))]
        hi = members[min(range(len(members)), key=lambda i: (-bw[i], i))]
        refs = (lo,) if lo.design_id == hi.design_id else (lo, hi)
        for d in members:
            out[d.design_id] = refs
    return out


@dataclass(frozen=True)
class ServingGroup:
    """`ServingTask`s of one chip and one scheduler setting run in one process (module docstring);
    ``task_id`` = sha256 of the members' task ids."""

    task_id: str
    members: tuple[Any, ...]          # sweep.engine.serving_tasks.ServingTask, each with its refs

    @property
    def mapper(self) -> str:
        return self.members[0].mapper

    @property
    def design(self) -> Any:
        """The first member's design (what the kind warms the kernel up on)."""
        return self.members[0].design

    @property
    def spec(self) -> Any:
        return self.members[0].spec

    def run(self) -> dict[str, pa.Table]:
        """Every member's ``rates`` and ``rows``, in order, under this group's task id."""
        parts: dict[str, list[pa.Table]] = {}
        for m in self.members:
            for name, t in m.run().items():
                parts.setdefault(name, []).append(t.set_column(0, "task_id", pa.array([self.task_id] * len(t),
                                                                                      pa.string())))
        return {name: pa.concat_tables(ts, promote_options="permissive") for name, ts in parts.items()}


def serving_groups(tasks: Sequence[Any], size: int | None = None) -> Iterator[ServingGroup]:
    """``tasks`` (`ServingTask`s with their refs) grouped by (chip references, setting), in the
    order each group's first task comes, each group cut into runs of at most ``size`` (None:
    `GROUP_DESIGNS`)."""
    size = GROUP_DESIGNS if size is None else size
    groups: dict[str, list[Any]] = {}
    for t in tasks:
        key = canonical_json({"refs": [r.design_id for r in t.refs], "setting": t.setting})
        groups.setdefault(key, []).append(t)
    for members in groups.values():
        for k in range(0, len(members), size):
            part = tuple(members[k:k + size])
            yield ServingGroup(stable_hash([m.task_id for m in part], 24), part)
