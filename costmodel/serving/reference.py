"""The event loop's rules in plain Python, one request at a time where vLLM's loop goes one at a
time: the readable statement of `costmodel.serving.simulate` (whose compiled twin,
`costmodel.serving.kernel`, the tests hold equal to this on random loads, preemptions included).
Slow (about 100 us an iteration); not used to serve."""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from .requests import Requests
from .scheduler import SchedulerConfig, capture_sizes
from .simulate import ITERATION_COLUMNS, SimResult, _columns, refusals
from .table import CostTable

__all__ = ["simulate_reference"]


class _Server:
    """One server's state: per-request arrays, the running list (admitted order), the waiting queue."""

    def __init__(self, requests: Requests, cfg: SchedulerConfig, num_blocks: int, prefilled=None):
        n = len(requests)
        self.cfg, self.num_blocks = cfg, num_blocks
        self.output, self.refused, self.reason, self.truncated = refusals(requests, cfg, num_blocks)
        self.num_tokens = requests.prompt.astype(np.int64).copy()   # prompt + generated
        self.computed = np.zeros(n, np.int64)                       # tokens whose K/V are cached
        self.generated = np.zeros(n, np.int64)
        self.blocks = np.zeros(n, np.int64)
        self.scheduled_s, self.first_s, self.finish_s = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
        self.preempt = np.zeros(n, np.int64)
        self.energy = np.zeros(n)
        self.running: list[int] = []
        self.waiting: deque[int] = deque()
        self.free = num_blocks
        if prefilled is not None:   # arrive with their prompt cached and first token sampled (a decode pool)
            pre = np.asarray(prefilled, bool)
            self.computed[pre] = self.num_tokens[pre]
            self.generated[pre] = 1
            self.num_tokens[pre] += 1

    def grow(self, r: int, new: int) -> int:
        """Blocks request ``r`` needs beyond those it holds to cache ``new`` more tokens."""
        return max(-(-(int(self.computed[r]) + new) // self.cfg.block_size) - int(self.blocks[r]), 0)

    def preempt_last(self) -> int:
        """Preempt the last running request: blocks freed, computed tokens reset, to the waiting head."""
        v = self.running.pop()
        self.free += int(self.blocks[v])
        self.blocks[v] = 0
        self.computed[v] = 0
        self.preempt[v] += 1
        self.waiting.appendleft(v)
        return v

    def schedule_running(self, budget: int) -> tuple[list[tuple[int, int]], int, bool]:
        """Step 2: (scheduled (request, tokens), budget left, whether any request was preempted)."""
        thr, preempted = self.cfg.long_prefill_token_threshold, False
        out: list[tuple[int, int]] = []
        i = 0
        while i < len(self.running) and budget > 0:
            r = self.running[i]
            new = int(self.num_tokens[r] - self.computed[r])
            new = min(new, thr) if thr else new
            new = min(new, budget)
            while self.grow(r, new) > self.free:
                preempted = True
                if self.preempt_last() == r:
                    return out, budget, True
            g = self.grow(r, new)
            self.blocks[r] += g
            self.free -= g
            out.append((r, new))
            budget -= new
            i += 1
        return out, budget, preempted

    def schedule_waiting(self, budget: int, t: float) -> list[tuple[int, int]]:
        """Step 3: the waiting requests admitted (request, tokens)."""
        thr = self.cfg.long_prefill_token_threshold
        out: list[tuple[int, int]] = []
        skipped: list[int] = []
        while self.waiting and budget > 0 and len(self.running) < self.cfg.max_num_seqs:
            r = self.waiting[0]
            want = int(self.num_tokens[r] - self.computed[r])   # computed: 0, or the prompt when it came prefilled
            want = min(want, thr) if thr else want
            if not self.cfg.chunked_prefill and want > budget:
                skipped.append(self.waiting.popleft())
                continue
            want = min(want, budget)
            g = -(-(int(self.computed[r]) + want) // self.cfg.block_size)
            if g > self.free:
                break
            self.waiting.popleft()
            self.blocks[r] = g
            self.free -= g
            if math.isnan(self.scheduled_s[r]):
                self.scheduled_s[r] = t
            self.running.append(r)
            out.append((r, want))
            budget -= want
        for r in reversed(skipped):
            self.waiting.appendleft(r)
        return out

    def advance(self, sched: list[tuple[int, int]], t_end: float) -> None:
        """Step 4's end: tokens computed, one sampled where every token is, finished requests out."""
        done = []
        for r, q in sched:
            self.computed[r] += q
            if self.computed[r] >= self.num_tokens[r]:
                self.generated[r] += 1
                self.num_tokens[r] += 1
                if math.isnan(self.first_s[r]):
                    self.first_s[r] = t_end
                if self.generated[r] >= self.output[r]:
                    self.finish_s[r] = t_end
                    self.free += int(self.blocks[r])
                    self.blocks[r] = 0
                    done.append(r)
        for r in done:
            self.running.remove(r)


def _launches(table: CostTable, T: int, dense_l: float, decode_only: bool, cfg: SchedulerConfig,
              top: int) -> tuple[float, int]:
    """(launches paid, graph mode: 0 full, 1 piecewise, 2 eager) of an iteration of T tokens."""
    if cfg.graphs == "graph":
        return 0.0, 0
    if cfg.graphs == "eager" or T > top:
        return dense_l + table.head_launches + table.attention_launches, 2
    if decode_only:
        return 0.0, 0
    return float(table.attention_launches), 1


def _price(srv: _Server, table: CostTable, sched: list[tuple[int, int]], sizes: list[int], host: float):
    """Step 4: (duration s, energy J, launches, mode, tokens, decodes) of the iteration; each
    request's energy share added."""
    ids = np.array([r for r, _ in sched], np.int64)
    q = np.array([k for _, k in sched], np.int64)
    p = srv.computed[ids]
    T = int(q.sum())
    is_dec = (q == 1) & (srv.generated[ids] > 0) & (p == srv.num_tokens[ids] - 1)
    top = sizes[-1] if sizes else 0
    T_run = next(c for c in sizes if c >= T) if srv.cfg.graphs == "vllm" and T <= top else T
    ds, dj, dl = table.dense(T_run)
    hs, hj = table.head(len(ids))
    a_s, a_j = table.attention(q, p)
    launches, mode = _launches(table, T, dl, bool(is_dec.all()), srv.cfg, top)
    srv.energy[ids] += a_j + (dj + hj) * q / T
    dur = ds + hs + float(a_s.sum()) / table.ep + launches * table.launch_s + host
    return dur, dj + hj + float(a_j.sum()), launches, mode, T, int(is_dec.sum())


def simulate_reference(requests: Requests, table: CostTable, cfg: SchedulerConfig, num_blocks: int,
                       prefilled=None) -> SimResult:
    """Serve ``requests`` by the rules of `costmodel.serving.simulate`, in plain Python
    (``prefilled`` as there).

    Raises:
        ValueError: ``num_blocks`` < 1.
        RuntimeError: the loop stalled (never expected).
    """
    if num_blocks < 1:
        raise ValueError(f"num_blocks = {num_blocks}: expected at least 1 KV block")
    n = len(requests)
    srv = _Server(requests, cfg, num_blocks, prefilled)
    host = table.host_s if cfg.host_s is None else cfg.host_s
    sizes = capture_sizes(cfg.max_num_seqs, cfg.max_num_batched_tokens)
    cols: dict[str, list] = {k: [] for k in ITERATION_COLUMNS}
    t = float(requests.arrival_s[0]) if n else 0.0
    nxt, busy, used_t, seqs_t = 0, 0.0, 0.0, 0.0
    while int(np.isfinite(srv.finish_s).sum() + srv.refused.sum()) < n:
        while nxt < n and requests.arrival_s[nxt] <= t:                 # 1. arrivals
            if not srv.refused[nxt]:
                srv.waiting.append(nxt)
            nxt += 1
        if not srv.running and not srv.waiting:
            t = max(t, float(requests.arrival_s[nxt]))
            continue
        sched, budget, preempted = srv.schedule_running(cfg.max_num_batched_tokens)   # 2.
        if not preempted:
            sched += srv.schedule_waiting(budget, t)                                   # 3.
        if not sched:
            if nxt >= n:
                raise RuntimeError("serving stalled: no request can be scheduled and none will arrive")
            t = max(t, float(requests.arrival_s[nxt]))
            continue
        dur, e, launches, mode, T, n_dec = _price(srv, table, sched, sizes, host)    # 4.
        used, n_running = num_blocks - srv.free, len(srv.running)
        srv.advance(sched, t + dur)
        for k, v in (("start_s", t), ("duration_s", dur), ("tokens", T), ("prefill_tokens", T - n_dec),
                     ("decode_tokens", n_dec), ("sequences", len(sched)), ("running", n_running),
                     ("waiting", len(srv.waiting)), ("kv_blocks_used", used), ("energy_j", e),
                     ("launches", launches), ("graph", mode)):
            cols[k].append(v)
        busy, used_t, seqs_t = busy + dur, used_t + dur * used, seqs_t + dur * len(sched)
        t += dur
    stats = {"busy_s": busy, "kv_utilization": used_t / busy / num_blocks if busy else None,
             "mean_batch": seqs_t / busy if busy else None}
    return SimResult(requests, srv.scheduled_s, srv.first_s, srv.finish_s, srv.preempt, srv.energy,
                     np.where(srv.refused, 0, srv.output), srv.refused, srv.reason, _columns(cols),
                     len(cols["start_s"]), srv.truncated, num_blocks, t, stats)
