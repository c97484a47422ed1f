"""The data-flow graph of a tiled convolution and the timing engine shared by the Flexer list
scheduler (`mappers.npu.flexer`) and the static loop-order baseline (`mappers.npu.static`).

DFG (one tiling). tCONV operations over tile indices (oy, ox, c, k) -- ids in that canonical
lexicographic order. Data tiles:

* IN(oy, ox, c): input rows/columns of the output tile *with halo* (SY*(oy_t-1) + DY*(FY-1) + 1
  rows); halos overlapping between neighbouring tiles are loaded as part of each tile (tiles are
  independent blocks, no sub-tile sharing).
* WT(c, k): FY*FX*c_t*k_t weights.
* OT(oy, ox, k): the output tile. In the buffer it is held at partial-sum precision
  (``psum_bytes``) for its whole life; a spill/reload before the last c counts as PS traffic
  (psum bytes), the final write-back after the last c as OT traffic (``data_bytes``).

Accumulation chain: tCONV(oy, ox, c, k) for c > 0 reads the partial sum written by
tCONV(oy, ox, c-1, k) (in place, same block). The chain order over c is fixed ascending (addition
commutes, so this only removes symmetric duplicates of the schedule space).

Layers with B > 1 or G > 1: the DFG covers one (batch, group) instance; latency and bytes are
multiplied by B*G (instances executed back to back, nothing shared between them).

Engine: one DRAM channel (a busy-interval timeline; a transfer is placed in the earliest gap at or
after the time it may start -- so loads for the next operation set overlap compute), n cores (each
executes its ops in issue order), per-tile state (ready time, DRAM-valid time, last use, remaining
uses, dirty). Final outputs are written back eagerly right after their last tCONV (then their block
is free). Every buffer residency (tile, addr, size, start, valid_from, end) is logged so that
`validate` can check capacity at every instant.
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass, field
from typing import cast

from costmodel.npu import NPUArch, Tiling, conv_cycles, tile_bytes, transfer_cycles

__all__ = ["IN", "WT", "OT", "TYPE_NAMES", "DATAFLOWS", "DFG", "build_dfg", "Engine", "validate",
           "summarize", "lower_bound", "latency_lower_bound", "Cutoff", "metric_value"]

IN, WT, OT = 0, 1, 2
TYPE_NAMES = ("IN", "WT", "OT")
#: Loop orders of the tiled loops, outermost first ("oy-ox-c-k" = k innermost).
DATAFLOWS = tuple("-".join(p) for p in itertools.permutations(("oy", "ox", "c", "k")))


def _sizes(D: int, t: int) -> list[int]:
    return [min(t, D - i * t) for i in range(math.ceil(D / t))]


@dataclass
class DFG:
    """Tiles and tCONV ops of one tiling (see module doc). Lists are indexed by tile / op id."""

    layer: object
    arch: NPUArch
    tiling: Tiling
    counts: tuple[int, int, int, int]
    tile_type: list[int] = field(default_factory=list)
    tile_size: list[int] = field(default_factory=list)    # bytes held in the buffer
    tile_final: list[int] = field(default_factory=list)   # bytes of the final write-back (OT)
    tile_key: list[tuple] = field(default_factory=list)
    op_idx: list[tuple] = field(default_factory=list)     # (oy, ox, c, k)
    op_in: list[int] = field(default_factory=list)
    op_wt: list[int] = field(default_factory=list)
    op_out: list[int] = field(default_factory=list)
    op_pred: list[int] = field(default_factory=list)      # -1 = first of its chain
    op_succ: list[int] = field(default_factory=list)      # -1 = last of its chain
    op_cycles: list[int] = field(default_factory=list)
    uses: list[int] = field(default_factory=list)         # ops reading/writing each tile
    op_tiles: list[tuple[int, int, int]] = field(default_factory=list)  # (IN, WT, OT) tile of each op

    @property
    def n_ops(self) -> int:
        return len(self.op_idx)

    @property
    def n_tiles(self) -> int:
        return len(self.tile_type)

    def tiles_of(self, op: int) -> tuple[int, int, int]:
        return self.op_tiles[op]

    def order(self, dataflow: str) -> list[int]:
        """Op ids in the loop order ``dataflow`` (e.g. "oy-ox-c-k", outermost first)."""
        pos = {"oy": 0, "ox": 1, "c": 2, "k": 3}
        dims = [pos[d] for d in dataflow.split("-")]
        if sorted(dims) != [0, 1, 2, 3]:
            raise ValueError(f"bad dataflow {dataflow!r}: a permutation of oy-ox-c-k expected")
        return sorted(range(self.n_ops), key=lambda o: tuple(self.op_idx[o][d] for d in dims))


def build_dfg(layer, arch: NPUArch, tiling: Tiling) -> DFG:
    """The DFG of ``layer`` tiled by ``tiling`` on ``arch`` (one batch/group instance)."""
    L = layer
    sy, sx, sc, sk = (_sizes(L.OY, tiling.oy_t), _sizes(L.OX, tiling.ox_t), _sizes(L.C, tiling.c_t),
                      _sizes(L.K, tiling.k_t))
    g = DFG(L, arch, tiling, (len(sy), len(sx), len(sc), len(sk)))
    ids: dict[tuple, int] = {}

    def tile(key, typ, size, final):
        t = ids.get(key)
        if t is None:
            t = ids[key] = len(g.tile_type)
            g.tile_type.append(typ)
            g.tile_size.append(size)
            g.tile_final.append(final)
            g.tile_key.append(key)
            g.uses.append(0)
        return t

    for a, b, c, k in itertools.product(range(len(sy)), range(len(sx)), range(len(sc)), range(len(sk))):
        ib, wb, pb = tile_bytes(L, arch, sy[a], sx[b], sc[c], sk[k])
        ti = tile(("IN", a, b, c), IN, ib, ib)
        tw = tile(("WT", c, k), WT, wb, wb)
        to = tile(("OT", a, b, k), OT, pb, sy[a] * sx[b] * sk[k] * arch.data_bytes)
        op = len(g.op_idx)
        g.op_idx.append((a, b, c, k))
        g.op_in.append(ti)
        g.op_wt.append(tw)
        g.op_out.append(to)
        g.op_tiles.append((ti, tw, to))
        g.op_pred.append(op - len(sk) if c > 0 else -1)  # (a, b, c-1, k): k is the fastest index
        g.op_succ.append(op + len(sk) if c + 1 < len(sc) else -1)
        g.op_cycles.append(conv_cycles(L.FY, L.FX, sc[c], sk[k], sy[a] * sx[b], arch.rows, arch.cols))
        for t in (ti, tw, to):
            g.uses[t] += 1
    return g


def metric_value(metric: str, latency: float, nbytes: float) -> float:
    """The ranking metric of a schedule: "latency_bytes" (cycles x bytes, the paper's), "latency"
    (cycles) or "bytes"."""
    if metric == "latency_bytes":
        return float(latency) * float(nbytes)
    return float(latency) if metric == "latency" else float(nbytes)


def latency_lower_bound(g: DFG) -> int:
    """Cycles no schedule of ``g`` (one instance) can beat, the largest of: the busiest core's work
    (>= total tCONV cycles / n) between the first op's loads (>= the cheapest IN + WT load of any
    op) and the last op's write-back (the last op to finish ends a chain: >= the cheapest final
    write-back); the longest accumulation chain; the transfer time of the minimal bytes
    (every IN and WT tile loaded and every output written back once: sum of ``tile_final``)."""
    bw, n = g.arch.bandwidth, g.arch.cores
    chain: dict[int, int] = {}
    for o in range(g.n_ops):
        chain[g.op_out[o]] = chain.get(g.op_out[o], 0) + g.op_cycles[o]
    first = min(transfer_cycles(g.tile_size[g.op_in[o]], bw) + transfer_cycles(g.tile_size[g.op_wt[o]], bw)
                for o in range(g.n_ops))
    wb = min(transfer_cycles(g.tile_final[t], bw) for t in chain)
    return max(first + math.ceil(sum(g.op_cycles) / n) + wb, max(chain.values()),
               transfer_cycles(sum(g.tile_final), bw))


def lower_bound(g: DFG, metric: str, reps: int = 1) -> float:
    """A lower bound of ``metric`` over every schedule of ``g`` (any scheduler, any buffer), scaled
    like `summarize`: `latency_lower_bound` and the minimal bytes (every IN and WT tile loaded and
    every output written back once); lets the mappers skip tilings that cannot beat the best
    schedule found."""
    return metric_value(metric, latency_lower_bound(g) * reps, sum(g.tile_final) * reps)


@dataclass
class Cutoff:
    """Abandon a schedule as soon as it cannot beat ``value`` (branch and bound inside one schedule):
    the schedulers check `Engine.bound` after every operation set and return None once it exceeds
    ``value`` -- strictly, so a schedule that ties the best is always finished. ``value`` may be
    lowered between schedules; ``lat_floor`` is a latency lower bound of the whole graph (cycles,
    one instance). Units as `summarize` (scaled by ``reps``)."""

    metric: str
    reps: int = 1
    value: float = math.inf
    lat_floor: int = 0

    def exceeded(self, eng: "Engine") -> bool:
        return self.value < math.inf and eng.bound(self.metric, self.reps, self.lat_floor) > self.value


class Engine:
    """Timing and bookkeeping of one schedule: the DRAM channel, the cores, per-tile state and the
    logs that `validate` and `summarize` read. Allocation (addresses) is the caller's business."""

    def __init__(self, dfg: DFG, cores: int | None = None) -> None:
        self.g = dfg
        self.n = cores or dfg.arch.cores
        self.bw = dfg.arch.bandwidth
        self.ch_start: list[int] = []
        self.ch_end: list[int] = []
        self.core_free = [0] * self.n
        nt = dfg.n_tiles
        self.ready_at = [0] * nt      # data valid in the buffer
        self.dram_ready = [0] * nt    # DRAM copy valid (after a spill)
        self.last_use = [0] * nt      # end of the last op that used the tile
        self.remaining = list(dfg.uses)
        self.dirty = [False] * nt
        self.loads = [0] * nt         # DRAM -> buffer moves per tile
        self.writes = [0] * nt        # buffer -> DRAM moves per tile (PS spills + final write-back)
        self.bytes = {"IN": 0, "WT": 0, "OT": 0, "PS": 0}
        self.op_rec: list[tuple[int, int, int] | None] = [None] * dfg.n_ops   # (core, start, end)
        self.mem_rec: list[tuple] = []                         # (kind, tile, start, end)
        self.open_res: dict[int, list] = {}                    # tile -> [addr, size, start, valid_from]
        self.first_left = sum(dfg.tile_final)                  # bytes of first loads / final writes to come
        self.res_log: list[tuple] = []                         # (tile, addr, size, start, valid_from, end)
        self.end = 0

    # -- DRAM channel -------------------------------------------------------------------------
    def _channel(self, earliest: int, dur: int) -> tuple[int, int]:
        """Earliest [s, s+dur) on the channel with s >= earliest, not overlapping a transfer."""
        s = earliest
        i = bisect.bisect_right(self.ch_start, s) - 1
        if i >= 0 and self.ch_end[i] > s:
            s = self.ch_end[i]
        i = max(i + 1, 0)
        while i < len(self.ch_start) and self.ch_start[i] < s + dur:
            s = max(s, self.ch_end[i])
            i += 1
        if dur > 0:
            self.ch_start.insert(i, s)
            self.ch_end.insert(i, s + dur)
        self.end = max(self.end, s + dur)
        return s, s + dur

    # -- memory operations --------------------------------------------------------------------
    def load(self, t: int, addr: int, avail: int) -> None:
        """Bring tile t from DRAM into [addr, addr+size), free from time ``avail``."""
        g = self.g
        size = g.tile_size[t]
        s, e = self._channel(max(avail, self.dram_ready[t]), transfer_cycles(size, self.bw))
        kind = "PS" if g.tile_type[t] == OT else TYPE_NAMES[g.tile_type[t]]
        self.bytes[kind] += size
        if self.loads[t] == 0 and kind != "PS":
            self.first_left -= size
        self.loads[t] += 1
        self.ready_at[t] = e
        self.mem_rec.append(("load", t, s, e))
        self.open_res[t] = [addr, size, s, e]

    def alloc_out(self, t: int, addr: int, avail: int) -> None:
        """Reserve the block of a new output tile (first tCONV of its chain): no transfer."""
        self.ready_at[t] = avail
        self.open_res[t] = [addr, self.g.tile_size[t], avail, avail]

    def evict(self, t: int) -> int:
        """Remove tile t from the buffer (spill a live partial sum first); returns the time its
        space is free."""
        g = self.g
        rel = max(self.last_use[t], self.ready_at[t])
        if self.dirty[t] and self.remaining[t] > 0:
            size = g.tile_size[t]
            s, e = self._channel(rel, transfer_cycles(size, self.bw))
            self.bytes["PS"] += size
            self.writes[t] += 1
            self.dram_ready[t] = e
            self.mem_rec.append(("spill", t, s, e))
            self.dirty[t] = False
            rel = e
        self._close(t, rel)
        return rel

    def _close(self, t: int, rel: int) -> None:
        addr, size, s, v = self.open_res.pop(t)
        self.res_log.append((t, addr, size, s, v, max(rel, s)))

    # -- compute ------------------------------------------------------------------------------
    def run_op(self, op: int) -> int | None:
        """Run tCONV ``op`` on the earliest free core once its tiles are ready and its chain
        predecessor is done. Returns the time its output block is free if the op finished the
        output (after the eager write-back), else None. Frees nothing itself: the caller frees
        dead tiles (`dead_after`)."""
        g = self.g
        core = min(range(self.n), key=lambda c: (self.core_free[c], c))
        ti, tw, to = g.tiles_of(op)
        start = max(self.core_free[core], self.ready_at[ti], self.ready_at[tw], self.ready_at[to])
        p = g.op_pred[op]
        if p >= 0:
            # an op is issued only once its predecessor is done (the ready lists), so it has a record
            start = max(start, cast(tuple[int, int, int], self.op_rec[p])[2])
        end = start + g.op_cycles[op]
        self.core_free[core] = end
        self.op_rec[op] = (core, start, end)
        self.end = max(self.end, end)
        for t in (ti, tw, to):
            self.last_use[t] = max(self.last_use[t], end)
            self.remaining[t] -= 1
        self.ready_at[to] = end
        if g.op_succ[op] < 0:  # final output: eager write-back
            s, e = self._channel(end, transfer_cycles(g.tile_final[to], self.bw))
            self.bytes["OT"] += g.tile_final[to]
            self.first_left -= g.tile_final[to]
            self.writes[to] += 1
            self.mem_rec.append(("writeback", to, s, e))
            self.dirty[to] = False
            self.last_use[to] = e
            return e
        self.dirty[to] = True
        return None

    def dead_after(self, op: int) -> list[int]:
        """Tiles of ``op`` with no remaining use (to be freed by the caller via `free_dead`)."""
        return [t for t in set(self.g.tiles_of(op)) if self.remaining[t] == 0 and t in self.open_res]

    def free_dead(self, t: int) -> int:
        """Close the residency of a dead tile; returns when its space is free."""
        rel = max(self.last_use[t], self.ready_at[t])
        self._close(t, rel)
        return rel

    @property
    def latency(self) -> int:
        return self.end

    def bound(self, metric: str, reps: int = 1, lat_floor: int = 0) -> float:
        """A lower bound of the finished schedule's ``metric`` (as `summarize`): bytes >= moved so
        far + the first moves still to come; latency >= the current end, ``lat_floor`` and the
        channel time of those bytes (the one DRAM channel moves them one after another)."""
        nbytes = sum(self.bytes.values()) + self.first_left
        lat = max(self.end, lat_floor, transfer_cycles(nbytes, self.bw))
        return metric_value(metric, lat * reps, nbytes * reps)

    def transferred(self) -> int:
        return sum(self.bytes.values())

    def peak_buffer(self) -> int:
        """Peak of the summed sizes of resident tiles over time."""
        ev = []
        for _, _, size, s, _, e in self.res_log:
            if e > s:
                ev.append((s, size))
                ev.append((e, -size))
        ev.sort(key=lambda x: (x[0], x[1]))  # frees before allocations at equal times
        cur = peak = 0
        for _, d in ev:
            cur += d
            peak = max(peak, cur)
        return peak

    def trace(self) -> list[tuple[str, int, int, str]]:
        """(resource, start, end, what), sorted by start: resources "core<i>" and "dram"."""
        g = self.g
        recs = cast(list[tuple[int, int, int]], self.op_rec)  # a finished schedule: every op has run
        out = [(f"core{c}", s, e, f"tCONV{g.op_idx[o]}") for o, (c, s, e) in enumerate(recs)]
        for kind, t, s, e in self.mem_rec:
            typ = TYPE_NAMES[g.tile_type[t]]
            if typ == "OT" and kind != "writeback":
                typ = "PS"
            out.append(("dram", s, e, f"{kind} {typ}{g.tile_key[t][1:]}"))
        return sorted(out, key=lambda r: (r[1], r[0]))


def summarize(eng: Engine, metric: str, reps: int = 1) -> dict:
    """Latency, bytes (by type), the metric value, reload histograms and peak buffer of a finished
    schedule, scaled by ``reps`` (= B*G instances). Reloads: per data type, {moves: tiles} where moves
    counts DRAM->buffer loads for IN/WT and buffer->DRAM writes (PS spills + final) for OT tiles."""
    g = eng.g
    lat = eng.latency * reps
    by = {k: v * reps for k, v in eng.bytes.items()}
    tot = sum(by.values())
    val = metric_value(metric, lat, tot)
    rel: dict[str, dict[str, int]] = {"IN": {}, "WT": {}, "OT": {}}
    for t in range(g.n_tiles):
        typ = TYPE_NAMES[g.tile_type[t]]
        m = eng.writes[t] if typ == "OT" else eng.loads[t]
        rel[typ][str(m)] = rel[typ].get(str(m), 0) + 1
    return {"latency": lat, "transferred_bytes": tot, "bytes_by_type": by, "value": val, "reloads": rel,
            "peak_buffer_bytes": eng.peak_buffer()}


def validate(eng: Engine, capacity: int | None = None) -> list[str]:
    """Every violation of a finished schedule (empty list = valid): each op scheduled once, after its
    chain predecessor, with its three tiles resident and valid over [start, end]; core exclusivity;
    DRAM-channel exclusivity; buffer blocks inside [0, capacity) and never overlapping in address and
    time; summed residency never above capacity; a partial-sum reload after its spill."""
    g = eng.g
    cap = g.arch.buffer_bytes if capacity is None else capacity
    errs: list[str] = []
    by_tile: dict[int, list] = {}
    for r in eng.res_log:
        by_tile.setdefault(r[0], []).append(r)
    if eng.open_res:
        errs.append(f"tiles still resident at the end: {sorted(eng.open_res)[:5]}")
    for o in range(g.n_ops):
        rec = eng.op_rec[o]
        if rec is None:
            errs.append(f"op {o} not scheduled")
            continue
        c, s, e = rec
        p = g.op_pred[o]
        prec = eng.op_rec[p] if p >= 0 else None
        if prec is not None and prec[2] > s:
            errs.append(f"op {o} starts at {s} before its predecessor {p} ends at {prec[2]}")
        for t in g.tiles_of(o):
            if not any(rs <= s and v <= s and re_ >= e for _, _, _, rs, v, re_ in by_tile.get(t, [])):
                errs.append(f"op {o}: tile {g.tile_key[t]} not resident and valid over [{s}, {e}]")
    for name, iv in [(f"core{c}", sorted((s, e) for cc, s, e in filter(None, eng.op_rec) if cc == c))
                     for c in range(eng.n)] + [("dram", sorted((s, e) for _, _, s, e in eng.mem_rec))]:
        for (s0, e0), (s1, e1) in zip(iv, iv[1:]):
            if s1 < e0:
                errs.append(f"{name}: [{s0},{e0}) overlaps [{s1},{e1})")
    res = sorted((r for r in eng.res_log if r[5] > r[3]), key=lambda r: r[3])
    for t, a, size, s, v, e in res:
        if a < 0 or a + size > cap:
            errs.append(f"tile {g.tile_key[t]} at [{a},{a + size}) outside the buffer of {cap} B")
    for i, (t, a, size, s, v, e) in enumerate(res):  # address x time overlap (sorted by start)
        for t2, a2, size2, s2, v2, e2 in res[i + 1:]:
            if s2 >= e:
                break
            if a2 < a + size and a < a2 + size2:
                errs.append(f"tiles {g.tile_key[t]} and {g.tile_key[t2]} overlap in the buffer")
    if eng.peak_buffer() > cap:
        errs.append(f"peak buffer {eng.peak_buffer()} > capacity {cap}")
    spills: dict[int, list[int]] = {}
    for kind, t, s, e in sorted(eng.mem_rec, key=lambda r: r[2]):
        if kind == "spill":
            spills.setdefault(t, []).append(e)
        elif kind == "load" and g.tile_type[t] == OT:
            if not spills.get(t) or max(spills[t]) > s:
                errs.append(f"partial sum {g.tile_key[t]} reloaded at {s} before its spill ended")
    return errs
