"""Flexer: out-of-order list scheduling of a tiled layer on a multi-NPU (Min, Kwon, Egger,
"Flexer: Out-of-Order Scheduling for Multi-NPUs", CGO 2023), and the scaffolding shared with the
static loop-order baseline (`mappers.npu.static`).

Search (Algorithm 1, lines 2-11): every viable tiling (`costmodel.npu.tilings`) x every dataflow of
``params['dataflows']`` is scheduled; the best by ``metric`` (latency x transferred bytes by
default, as in the paper) is kept. Work units are contiguous chunks of the tiling list.

GetSchedule (Algorithm 1, lines 12-27; `flexer_schedule`). The DFG is `mappers.npu.graph`'s. A
tCONV is ready when its chain predecessor (previous c of the same output tile) is scheduled. The
ready queue is ordered by the op's position in the dataflow (loop order); that order is the
dataflow's only role (tie-breaks and the window below). Each step:

1. candidate sets: all combinations of ``min(n, window)`` ops among a window of ``window`` ready
   ops: first the ready ops of *open* accumulation chains (output tiles whose first tCONV is
   scheduled and last is not; rank order), then ops that open a new chain (rank order) -- but only
   while fewer than ``max_open`` chains are open, and a set may open at most ``max_open`` minus
   the open chains (**our choices**, issue 13: the paper enumerates all oCn sets of the whole ready
   queue, intractable in Python for thousands of ready ops; a window of the first ready ops in loop
   order never saw the open chains' next tCONVs and opened more chains than the buffer holds, so
   partial sums were spilled -- VGG16 conv3_2 on arch5 went from 0.64x to 1.13x the best static
   schedule's latency x bytes). ``max_open`` defaults to `open_chain_limit`: as many of the
   largest output tiles as fit beside the largest input and weight tile. ``window`` default 6
   (measured before the chain-first window: on every third unique ResNet-50 layer on arch5, window
   4 / 6 / 8 took 11 / 20 / 36 s and found the same best on 6 of 8 layers). If no set of that size
   can be placed, smaller sets are tried; if not even one op fits beside the pinned tiles, the
   buffer is flushed (every tile evicted, live partial sums spilled, the buffer one free block once
   the evictions are done) and the first window op placed alone.
2. pruning (section 4.2): sets with an identical *dataflow map* are skipped (the first in
   combination order is kept). The map is, per data type (IN, WT, OT), the sorted multiset of
   "ops sharing a tile" counts of reused (resident) tiles and of new tiles.
3. priority (section 4.3), lexicographic: highest memory benefit = reused bytes - sum over spilled
   tiles of size / min(n, remaining uses); then highest buffer utilisation after placement; then
   fewest memory-operation cycles (loads + partial-sum spills). Reused bytes (**our reading**):
   per op, each input tile (IN, WT, the partial sum for c > 0) that is resident before the set or
   brought in by an earlier op of the same set. Remaining ties: first set in combination order.
4. memory management (section 4.1, `mappers.npu.memory`): the set's missing tiles are placed
   largest first (**our choice**; ties in op order, IN, WT, OT of each op: placing a small input
   tile first split the dead block of a partial sum so that the next one no longer fit) by
   in-place replacement, best fit, then Algorithm 2 spilling; only the set's own tiles are pinned. Clean victims (IN, WT) are dropped; live partial sums are
   written back (PS traffic) and reloaded when needed. Dead tiles are freed right after their last
   use; final outputs are written back eagerly (OT traffic).
5. timing (`mappers.npu.graph.Engine`): transfers on the one DRAM channel in the earliest gap
   after their data/space is available; each op on the earliest-free core, after its tiles are
   loaded and its chain predecessor finished.

Branch and bound (`mappers.npu.tiled.TiledNPUMapper.run`, ``prune``): the tilings of a unit are scheduled in the
order of `flexer_graph.lower_bound` of the metric and the scan stops once the bound exceeds the
best value found, with ties broken by tiling then schedule index; inside a tiling, a schedule is
abandoned as soon as its partial bound (`flexer_graph.Cutoff`: latency so far x bytes moved so far
plus the first moves to come) exceeds the best value. The result equals the exhaustive pass
(tested); ``evaluations`` counts the schedules started, extra ``tilings_scheduled`` and
``schedules_cut`` what the bounds saved. Units should therefore be large
(``tilings_per_unit``); the engine's parallelism comes from layers x architectures.

Result (`TiledNPUMapper.run`): a `SearchResult` with engine "list", ``objective`` = ``value``'s
metric name ("latency_bytes" | "latency" | "bytes"; ``problem.objective`` is not used), energy NaN
(no energy model), ``latency_cycles`` and ``extra`` = transferred_bytes, bytes_by_type (IN, WT, OT,
PS), reloads (per type, {moves: tiles}), peak_buffer_bytes, tiling [oy_t, ox_t, c_t, k_t],
dataflow, metric, tilings (in the unit), tilings_scheduled, schedules_cut and, with ``keep_trace``, trace [(resource, start, end,
what)]. Flexer is *not* guaranteed to beat the static baseline (greedy list scheduling; a
different schedule space): `scripts/bench_flexer.py` reports the comparison.
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter
from typing import Any, Iterator, Mapping

from costmodel.npu import transfer_cycles
from mappers.base import Param
from mappers.npu.graph import (DATAFLOWS, DFG, OT, Cutoff, Engine, validate)
from mappers.npu.memory import new_map, place_tile, used_bytes
from mappers.npu.tiled import TiledNPUMapper

__all__ = ["FlexerMapper", "FLEXER", "flexer_schedule", "validate"]

DEFAULT_DATAFLOWS = ["oy-ox-c-k", "k-c-oy-ox", "c-k-oy-ox"]


class _State:
    """Scheduler state: the engine, the memory map and the resident tiles."""

    def __init__(self, g: DFG, n: int, capacity: int) -> None:
        self.g, self.n, self.cap = g, n, capacity
        self.eng = Engine(g, n)
        self.segs = new_map(capacity)
        self.resident: set[int] = set()

    def needed(self, ops) -> tuple[list[int], int]:
        """(tiles to place, in op order; reused bytes) of an operation set."""
        g = self.g
        need, seen, reused = [], set(), 0
        for op in ops:
            for t in g.tiles_of(op):
                if t in self.resident or t in seen:
                    reused += g.tile_size[t]
                else:
                    need.append(t)
                    seen.add(t)
        need.sort(key=lambda t: -g.tile_size[t])  # largest first: small tiles do not split big holes
        return need, reused

    def dataflow_map(self, ops) -> tuple:
        """Section 4.2's dataflow map of a set, as the sorted (class, ops sharing the tile) pairs of
        its tiles, class = 2 * data type + (tile not resident): equal maps = equivalent sets."""
        tt, res, tiles = self.g.tile_type, self.resident, self.g.op_tiles
        cnt = Counter([t for op in ops for t in tiles[op]])
        return tuple(sorted([(2 * tt[t] + (t not in res), c) for t, c in cnt.items()]))

    def priority(self, ops) -> tuple | None:
        """Priority tuple of a set (smaller = better), None if it cannot be placed."""
        g, eng = self.g, self.eng
        need, reused = self.needed(ops)
        pinned = {t for op in ops for t in g.tiles_of(op)}
        segs, spilled, memcyc = self.segs, 0.0, 0
        bw = g.arch.bandwidth
        for t in need:
            r = place_tile(segs, t, g.tile_size[t], pinned, eng.remaining)
            if r is None:
                return None
            segs, _, _, victims = r
            for v in victims:
                spilled += g.tile_size[v] / max(1, min(self.n, eng.remaining[v]))
                if eng.dirty[v]:
                    memcyc += transfer_cycles(g.tile_size[v], bw)
            if not self._is_new_output(t):
                memcyc += transfer_cycles(g.tile_size[t], bw)
        return (-(reused - spilled), -used_bytes(segs) / self.cap, memcyc)

    def _is_new_output(self, t: int) -> bool:
        return self.g.tile_type[t] == OT and self.eng.remaining[t] == self.g.uses[t]

    def _evict(self, t: int) -> int:
        self.resident.discard(t)
        return self.eng.evict(t)

    def commit(self, ops) -> list[int]:
        """Place, load and run the set; returns the ops that became ready."""
        g, eng = self.g, self.eng
        need, _ = self.needed(ops)
        pinned = {t for op in ops for t in g.tiles_of(op)}
        for t in need:
            r = place_tile(self.segs, t, g.tile_size[t], pinned, eng.remaining, evict=self._evict)
            assert r is not None, "commit of a set that does not fit"
            self.segs, addr, avail, _ = r
            if self._is_new_output(t):
                eng.alloc_out(t, addr, avail)
            else:
                eng.load(t, addr, avail)
            self.resident.add(t)
        woken = []
        for op in ops:
            eng.run_op(op)
            for t in eng.dead_after(op):
                self.free(t, eng.free_dead(t))
            if g.op_succ[op] >= 0:
                woken.append(g.op_succ[op])
        return woken

    def free(self, t: int, when: int) -> None:
        self.resident.discard(t)
        for i, (a, s, tt, av) in enumerate(self.segs):
            if tt == t:
                self.segs[i] = (a, s, -1, when)
                return

    def flush(self) -> None:
        """Evict every resident tile (spilling live partial sums) and make the buffer one free
        block, free once the last eviction is done -- so that any one tCONV fits, whatever the
        fragmentation left by the evicted tiles (`costmodel.npu.tilings` guarantees that one
        tCONV's tiles fit the buffer)."""
        free_at = 0
        for a, s, t, av in self.segs:
            free_at = max(free_at, self._evict(t) if t >= 0 else av)
        self.segs = new_map(self.cap)
        self.segs[0] = (0, self.cap, -1, free_at)


def open_chain_limit(g: DFG, capacity: int | None = None) -> int:
    """How many accumulation chains (output tiles with live partial sums) may be open at once: as
    many of the largest output tiles as fit beside the largest input and weight tile (at least
    one), so that an open chain's next tCONV can always run without spilling a partial sum."""
    cap = capacity or g.arch.buffer_bytes
    big = [max((g.tile_size[t] for t in range(g.n_tiles) if g.tile_type[t] == ty), default=0)
           for ty in (0, 1, OT)]
    return max(1, (cap - big[0] - big[1]) // max(1, big[2]))


def _window(ready: list[tuple[int, int]], g: DFG, width: int, fresh_ok: int) -> list[int]:
    """The candidate ops: the ready ops of open chains first (rank order), then at most
    ``fresh_ok`` ops that open a new chain (rank order), ``width`` ops in all."""
    cont = [o for _, o in ready if g.op_pred[o] >= 0][:width]
    if len(cont) < width and fresh_ok > 0:
        cont += [o for _, o in ready if g.op_pred[o] < 0][:width - len(cont)]
    return cont


def flexer_schedule(g: DFG, dataflow: str = "oy-ox-c-k", window: int = 6, cores: int | None = None,
                    capacity: int | None = None, cutoff: Cutoff | None = None,
                    max_open: int = 0) -> Engine | None:
    """Flexer's out-of-order list schedule of ``g`` (see module doc); returns the finished
    `Engine` (latency, bytes, trace, residencies), or None once ``cutoff`` shows it cannot win.
    ``max_open``: bound on the open accumulation chains (0 = `open_chain_limit`)."""
    n = cores or g.arch.cores
    st = _State(g, n, capacity or g.arch.buffer_bytes)
    limit = max_open if max_open > 0 else open_chain_limit(g, st.cap)
    opened = 0  # chains started and not finished
    rank = {op: i for i, op in enumerate(g.order(dataflow))}
    ready = sorted((rank[o], o) for o in range(g.n_ops) if g.op_pred[o] < 0)
    while ready:
        fresh_ok = limit - opened
        win = _window(ready, g, window, fresh_ok)
        chosen = None
        for k in range(min(n, len(win)), 0, -1):
            seen, best = set(), None
            for combo in itertools.combinations(win, k):
                if sum(1 for o in combo if g.op_pred[o] < 0 and g.op_succ[o] >= 0) > fresh_ok:
                    continue
                key = st.dataflow_map(combo)
                if key in seen:
                    continue
                seen.add(key)
                p = st.priority(combo)
                if p is not None and (best is None or p < best[0]):
                    best = (p, combo)
            if best is not None:
                chosen = best[1]
                break
        if chosen is None:
            st.flush()
            chosen = (win[0],)
        for o in chosen:
            ready.remove((rank[o], o))
            opened += (g.op_pred[o] < 0) - (g.op_succ[o] < 0)
        for o in st.commit(chosen):
            bisect.insort(ready, (rank[o], o))
        if cutoff is not None and cutoff.exceeded(st.eng):
            return None
    return st.eng


class FlexerMapper(TiledNPUMapper):
    """Flexer's OoO list scheduler over every viable tiling x dataflow (module doc)."""

    name = "flexer"
    version = "3"  # 2: flush leaves one free block; 3: open-chain bound, chain-first window, largest first
    params = TiledNPUMapper.common_params + (
        Param("dataflows", "list[str]", DEFAULT_DATAFLOWS,
              "loop orders (outermost first) that order the ready queue; one schedule per tiling each",
              choices=DATAFLOWS),
        Param("window", "int", 6, "candidate sets are combinations of the first `window` ready ops", low=1,
              high=64),
        Param("max_open", "int", 0, "most accumulation chains open at once (0: as many output tiles as "
              "fit beside the largest input and weight tile)", low=0),
    )

    def schedules(self, g: DFG, params: Mapping[str, Any], cutoff: Cutoff | None = None
                  ) -> Iterator[tuple[str, Engine | None]]:
        for df in params["dataflows"]:
            yield df, flexer_schedule(g, df, int(params["window"]), cutoff=cutoff,
                                      max_open=int(params["max_open"]))


FLEXER = FlexerMapper()
