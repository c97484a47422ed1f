"""The static loop-order baseline of Flexer's evaluation (Min, Kwon, Egger, CGO 2023, section 5):
every viable tiling x every loop order of the tiled loops (oy, ox, c, k) x every stationary choice,
exhaustively; the best by the same metric as `mappers.npu.flexer`.

A schedule (`static_schedule`) executes the tCONVs in loop order; the innermost loop is unrolled
over the n cores: consecutive ops of one innermost-loop run are issued as sets of n (the last set of
a run may be smaller; the innermost loop is the innermost one with more than one tile, loops of one
tile being no loops at all -- so dataflows that differ only in such loops, or stationary choices
that end in the same region sizes, are one schedule, built once; when the innermost loop is c the set's ops form one accumulation chain and
serialise through their dependencies). Memory uses fixed regions per data type (IN, WT, OT), each
an array of slots of the type's largest tile size. Each region has as many slots as the largest
number of distinct tiles of its type one set touches; the buffer left over goes to the region of
the ``stationary`` type (**our choice**: the paper's baseline searches "different data stationary
models" without defining them; this parameterises it). Within a region a tile found resident is
reused; a missing one takes a free slot or the least recently used slot not used by the set
(a live partial sum is spilled first). Timing, DRAM channel, eager final write-back and all
bookkeeping are `mappers.npu.graph.Engine`'s, shared with flexer.
"""

from __future__ import annotations

import heapq
from typing import Any, Iterator, Mapping

from mappers.base import Param
from mappers.npu.tiled import TiledNPUMapper
from mappers.npu.graph import DATAFLOWS, DFG, IN, OT, WT, Cutoff, Engine

__all__ = ["StaticNPUMapper", "STATIC", "static_schedule", "static_plan", "STATIONARY", "effective_order"]

STATIONARY = ("IN", "WT", "OT")


_POS = {"oy": 0, "ox": 1, "c": 2, "k": 3}


def effective_order(g: DFG, dataflow: str) -> tuple[str, ...]:
    """The loops of ``dataflow`` (outermost first) that have more than one tile in ``g``: loops of
    one tile do not change the execution order, so dataflows with equal effective orders give the
    same schedule."""
    return tuple(d for d in dataflow.split("-") if g.counts[_POS[d]] > 1)


def _sets(g: DFG, dataflow: str, n: int) -> list[list[int]]:
    order = g.order(dataflow)
    eff = effective_order(g, dataflow)
    inner = g.counts[_POS[eff[-1]]] if eff else 1
    out: list[list[int]] = []
    for r in range(0, len(order), inner):
        run = order[r:r + inner]
        out.extend(run[i:i + n] for i in range(0, len(run), n))
    return out


def static_plan(g: DFG, dataflow: str, stationary: str = "WT", cores: int | None = None,
                capacity: int | None = None) -> tuple[list[list[int]], list[int], list[int]] | None:
    """(operation sets, slot bytes per type, slots per type) of a static schedule (module doc), or
    None if the minimal regions do not fit. Slots beyond a type's tile count are dropped (never
    used), so plans that differ only there give the same schedule."""
    n = cores or g.arch.cores
    cap = capacity or g.arch.buffer_bytes
    sets = _sets(g, dataflow, n)
    slot = [max((g.tile_size[t] for t in range(g.n_tiles) if g.tile_type[t] == ty), default=0)
            for ty in (IN, WT, OT)]
    nslots = [max(len({g.op_tiles[o][ty] for o in s}) for s in sets) for ty in (IN, WT, OT)]
    left = cap - sum(a * b for a, b in zip(slot, nslots))
    if left < 0:
        return None
    st = STATIONARY.index(stationary)
    nslots[st] += left // slot[st]
    ntiles = [sum(1 for t in g.tile_type if t == ty) for ty in (IN, WT, OT)]
    return sets, slot, [min(a, b) for a, b in zip(nslots, ntiles)]


def static_schedule(g: DFG, dataflow: str, stationary: str = "WT", cores: int | None = None,
                    capacity: int | None = None, plan=None, cutoff: Cutoff | None = None) -> Engine | None:
    """The loop-order schedule of ``g`` (module doc); None if the minimal regions do not fit or
    once ``cutoff`` shows it cannot win. ``plan``: a `static_plan` result to execute (computed if
    None)."""
    n = cores or g.arch.cores
    plan = plan or static_plan(g, dataflow, stationary, n, capacity)
    if plan is None:
        return None
    sets, slot, nslots = plan
    base, addr = [], 0
    for ty in range(3):
        base.append(addr)
        addr += slot[ty] * nslots[ty]
    # per region: slot -> [tile, avail, last_used_step]
    regions = [[[-1, 0, -1] for _ in range(nslots[ty])] for ty in range(3)]
    where: dict[int, int] = {}  # resident tile -> slot index in its region
    free = [list(range(k)) for k in nslots]  # heaps of free slot indices per region
    eng = Engine(g, n)
    for step, ops in enumerate(sets):
        pinned = {t for o in ops for t in g.tiles_of(o)}
        for o in ops:
            for t in g.tiles_of(o):
                ty = g.tile_type[t]
                if t in where:
                    regions[ty][where[t]][2] = step
                    continue
                reg = regions[ty]
                if free[ty]:  # the lowest free slot
                    i = heapq.heappop(free[ty])
                else:
                    i = min((i for i, s in enumerate(reg) if s[0] not in pinned), key=lambda i: (reg[i][2], i))
                    v = reg[i][0]
                    reg[i][1] = eng.evict(v)
                    del where[v]
                a = base[ty] + i * slot[ty]
                if ty == OT and eng.remaining[t] == g.uses[t]:
                    eng.alloc_out(t, a, reg[i][1])
                else:
                    eng.load(t, a, reg[i][1])
                reg[i][0], reg[i][2] = t, step
                where[t] = i
        for o in ops:
            eng.run_op(o)
            for t in eng.dead_after(o):
                i = where.pop(t)
                s = regions[g.tile_type[t]][i]
                s[0], s[1] = -1, eng.free_dead(t)
                heapq.heappush(free[g.tile_type[t]], i)
        if cutoff is not None and cutoff.exceeded(eng):
            return None
    return eng


class StaticNPUMapper(TiledNPUMapper):
    """Exhaustive static baseline: tilings x loop orders x stationary choices (module doc)."""

    name = "static"
    version = "1"
    params = TiledNPUMapper.common_params + (
        Param("dataflows", "list[str]", list(DATAFLOWS), "loop orders of the tiled loops, outermost first",
              choices=DATAFLOWS),
        Param("stationary", "list[str]", list(STATIONARY),
              "data types whose region gets the buffer left over (one schedule each)", choices=STATIONARY),
    )

    def schedules(self, g: DFG, params: Mapping[str, Any], cutoff: Cutoff | None = None
                  ) -> Iterator[tuple[str, Engine | None]]:
        seen, n = set(), g.arch.cores
        for df in params["dataflows"]:
            eff = effective_order(g, df)
            for s in params["stationary"]:
                plan = static_plan(g, df, s, n)
                key = (eff, None if plan is None else tuple(plan[2]))
                if key in seen:  # the same schedule as an earlier (dataflow, stationary)
                    continue
                seen.add(key)
                yield f"{df}/{s}", static_schedule(g, df, s, n, plan=plan, cutoff=cutoff)


STATIC = StaticNPUMapper()
