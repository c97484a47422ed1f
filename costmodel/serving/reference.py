"""The event loop's rules in plain Python, one request at a time where vLLM's loop goes one at a
time: the readable statement of `costmodel.serving.simulate` (whose compiled twin,
`costmodel.serving.kernel`, the tests hold equal to this on random loads, preemptions included).
Slow (about 100 us an iteration); not used to serve."""

from __future__ import annotations

import math
from collections import deque
from typing import Callable

import numpy as np

from .requests import Requests
from .scheduler import SchedulerConfig, capture_sizes
from .simulate import _GRAPH, ITERATION_COLUMNS, SimResult, _columns, refusals
from .table import CostTable

__all__ = ["simulate_reference"]


def _launches(table: CostTable, T: int, dense_l: float, decode_only: bool, cfg: SchedulerConfig,
              top: int) -> tuple[float, int]:
    """(launches paid, graph mode index) of an iteration of T tokens (`GRAPH_MODES`)."""
    every = dense_l + table.head_launches + table.attention_launches
    if cfg.graphs == "graph":
        return 0.0, 0
    if cfg.graphs == "eager" or T > top:
        return every, 2
    if decode_only:
        return 0.0, 0
    return float(table.attention_launches), 1


def simulate_reference(requests: Requests, table: CostTable, cfg: SchedulerConfig, num_blocks: int,
             sink: Callable[[dict[str, np.ndarray]], None] | None = None, chunk: int = 65536) -> SimResult:
    """Serve ``requests`` (module docstring).

    Args:
        requests: arrivals and lengths.
        table: the iteration costs of the deployment.
        cfg: the scheduler's settings.
        num_blocks: KV blocks in the system (`costmodel.serving.scheduler.kv_blocks`).
        sink: called with each ``chunk`` of iteration columns as they fill (bounded memory for long
            traces); then `SimResult.iterations` holds only the last, unflushed ones... none: all
            are flushed at the end.
        chunk: iterations per flushed chunk.

    Returns:
        `SimResult`.

    Raises:
        ValueError: ``num_blocks`` < 1.
    """
    if num_blocks < 1:
        raise ValueError(f"num_blocks = {num_blocks}: expected at least 1 KV block")
    n = len(requests)
    bs, budget0, max_seqs = cfg.block_size, cfg.max_num_batched_tokens, cfg.max_num_seqs
    thr = cfg.long_prefill_token_threshold
    arrival = requests.arrival_s
    prompt = requests.prompt.astype(np.int64)
    output, refused, reason, truncated = refusals(requests, cfg, num_blocks)
    host = table.host_s if cfg.host_s is None else cfg.host_s
    graph_sizes = np.asarray(capture_sizes(max_seqs, budget0), dtype=np.int64)
    top = int(graph_sizes[-1]) if len(graph_sizes) else 0

    num_tokens = prompt.copy()        # tokens the request has (prompt + generated)
    computed = np.zeros(n, np.int64)  # tokens whose K/V are in the cache
    generated = np.zeros(n, np.int64)
    blocks = np.zeros(n, np.int64)
    scheduled_s = np.full(n, np.nan)
    first_s = np.full(n, np.nan)
    finish_s = np.full(n, np.nan)
    preempt = np.zeros(n, np.int64)
    energy = np.zeros(n)

    running = np.zeros(0, np.int64)   # admitted order
    waiting: deque[int] = deque()
    free = num_blocks
    nxt = 0
    t = float(arrival[0]) if n else 0.0
    cols: dict[str, list] = {k: [] for k in ITERATION_COLUMNS}
    n_iter = 0
    done = int(refused.sum())
    busy = used_t = seqs_t = 0.0   # time-weighted sums: busy time, blocks used, sequences

    def flush() -> None:
        if sink is not None and cols["start_s"]:
            sink(_columns(cols))
            for v in cols.values():
                v.clear()

    while done < n:
        while nxt < n and arrival[nxt] <= t:
            if not refused[nxt]:
                waiting.append(nxt)
            nxt += 1
        if not len(running) and not waiting:
            if nxt >= n:
                break
            t = max(t, float(arrival[nxt]))
            continue
        budget = budget0
        preempted = False
        # -- 2. the running requests ------------------------------------------------------------
        if len(running):
            want = num_tokens[running] - computed[running]
            if thr:
                want = np.minimum(want, thr)
            before = np.cumsum(want) - want
            q = np.clip(budget - before, 0, want)
            k = int(np.count_nonzero(before < budget))   # those the loop reaches with budget left
            q = q[:k]
            ids = running[:k]
            grow = np.maximum(-(-(computed[ids] + q) // bs) - blocks[ids], 0)
            if int(grow.sum()) <= free:
                blocks[ids] += grow
                free -= int(grow.sum())
                budget -= int(q.sum())
                sched_ids, sched_q = ids, q
            else:                         # preemptions: vLLM's loop, request by request
                run = list(running)
                s_ids, s_q = [], []
                i = 0
                while i < len(run) and budget > 0:
                    r = run[i]
                    new = int(num_tokens[r] - computed[r])
                    if thr:
                        new = min(new, thr)
                    new = min(new, budget)
                    ok = True
                    while True:
                        g = max(-(-(int(computed[r]) + new) // bs) - int(blocks[r]), 0)
                        if g <= free:
                            break
                        victim = run.pop()
                        free += int(blocks[victim])
                        blocks[victim] = 0
                        computed[victim] = 0
                        preempt[victim] += 1
                        waiting.appendleft(victim)
                        preempted = True
                        if victim == r:
                            ok = False
                            break
                    if not ok:
                        break
                    blocks[r] += g
                    free -= g
                    s_ids.append(r)
                    s_q.append(new)
                    budget -= new
                    i += 1
                # preempted victims were prepended one by one, the last popped first: vLLM prepends
                # each, so the earliest-admitted victim ends up at the head
                running = np.asarray(run, np.int64)
                sched_ids, sched_q = np.asarray(s_ids, np.int64), np.asarray(s_q, np.int64)
        else:
            sched_ids, sched_q = np.zeros(0, np.int64), np.zeros(0, np.int64)
        # -- 3. the waiting requests -------------------------------------------------------------
        new_ids: list[int] = []
        new_q: list[int] = []
        if not preempted and waiting:
            skipped: list[int] = []
            n_run = len(running)
            while waiting and budget > 0 and n_run < max_seqs:
                r = waiting[0]
                want_r = int(num_tokens[r])
                if thr:
                    want_r = min(want_r, thr)
                if not cfg.chunked_prefill and want_r > budget:
                    skipped.append(waiting.popleft())
                    continue
                want_r = min(want_r, budget)
                g = -(-want_r // bs)
                if g > free:
                    break
                waiting.popleft()
                blocks[r] = g
                free -= g
                computed[r] = 0
                if math.isnan(scheduled_s[r]):
                    scheduled_s[r] = t
                new_ids.append(r)
                new_q.append(want_r)
                budget -= want_r
                n_run += 1
            for r in reversed(skipped):
                waiting.appendleft(r)
            if new_ids:
                running = np.concatenate([running, np.asarray(new_ids, np.int64)])
        if new_ids:
            sched_ids = np.concatenate([sched_ids, np.asarray(new_ids, np.int64)])
            sched_q = np.concatenate([sched_q, np.asarray(new_q, np.int64)])
        if not len(sched_ids):
            # nothing could run (every running request waits on blocks held by none: cannot
            # happen with the refusal rule); wait for the next arrival
            if nxt >= n:
                raise RuntimeError("serving stalled: no request can be scheduled and none will arrive")
            t = max(t, float(arrival[nxt]))
            continue
        # -- 4. the iteration --------------------------------------------------------------------
        p = computed[sched_ids]
        T = int(sched_q.sum())
        is_dec = (sched_q == 1) & (generated[sched_ids] > 0) & (p == num_tokens[sched_ids] - 1)
        decode_only = bool(is_dec.all())
        T_run = T
        if cfg.graphs == "vllm" and T <= top:
            T_run = int(graph_sizes[np.searchsorted(graph_sizes, T)])   # padded up to a capture size
        ds, dj, dl = table.dense(T_run)
        hs, hj = table.head(len(sched_ids))
        a_s, a_j = table.attention(sched_q, p)
        launches, mode = _launches(table, T, dl, decode_only, cfg, top)
        dur = ds + hs + float(a_s.sum()) / table.ep + launches * table.launch_s + host
        shared = dj + hj
        energy[sched_ids] += a_j + shared * sched_q / T
        t_end = t + dur
        computed[sched_ids] += sched_q
        sampled = computed[sched_ids] >= num_tokens[sched_ids]
        s_ids = sched_ids[sampled]
        generated[s_ids] += 1
        num_tokens[s_ids] += 1
        first = s_ids[np.isnan(first_s[s_ids])]
        first_s[first] = t_end
        fin = s_ids[generated[s_ids] >= output[s_ids]]
        used, n_running = num_blocks - free, len(running)
        if len(fin):
            finish_s[fin] = t_end
            free += int(blocks[fin].sum())
            blocks[fin] = 0
            running = running[~np.isin(running, fin)]
            done += len(fin)
        n_dec = int(is_dec.sum())
        for k_, v in (("start_s", t), ("duration_s", dur), ("tokens", T), ("prefill_tokens", T - n_dec),
                      ("decode_tokens", n_dec), ("sequences", len(sched_ids)), ("running", n_running),
                      ("waiting", len(waiting)), ("kv_blocks_used", used), ("energy_j", shared + float(a_j.sum())),
                      ("launches", launches), ("graph", mode)):
            cols[k_].append(v)
        n_iter += 1
        busy += dur
        used_t += dur * used
        seqs_t += dur * len(sched_ids)
        if sink is not None and len(cols["start_s"]) >= chunk:
            flush()
        t = t_end
    iters = _columns(cols)
    if sink is not None:
        flush()
        iters = _columns({k: [] for k in ITERATION_COLUMNS})
    out = np.where(refused, 0, output)
    stats = {"busy_s": busy, "kv_utilization": used_t / busy / num_blocks if busy else None,
             "mean_batch": seqs_t / busy if busy else None}
    return SimResult(requests, scheduled_s, first_s, finish_s, preempt, energy, out, refused, reason, iters,
                     n_iter, truncated, num_blocks, t, stats)


