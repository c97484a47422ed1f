"""The event loop: requests served iteration by iteration under vLLM's V1 scheduler, priced by a
cost table. A pure function of the requests, the table and the settings: no mapping, no I/O.

Each iteration, at the time the previous one ended (or at the next arrival when idle), as
``Scheduler.schedule`` of vLLM v0.11.0 (v1/core/sched/scheduler.py) forms it:

1. requests that have arrived join the waiting queue (FCFS);
2. **running requests first**, in the order they were admitted: each asks for its tokens not yet
   computed (1 for a decode; the rest of its prompt, chunked, for a partial prefill), at most
   ``long_prefill_token_threshold`` if set, at most the budget left; the loop stops when the budget
   (``max_num_batched_tokens``) is spent. Its KV blocks grow to ceil((computed + new) /
   block_size) (v1/core/kv_cache_manager.py ``allocate_slots``); when the free blocks do not
   suffice, the **last running request is preempted** (``self.running.pop()``): its blocks freed,
   its computed tokens reset to 0, put at the head of the waiting queue (recompute: it will
   prefill its prompt and the tokens it generated again), until the request fits or preempts
   itself (then the loop stops);
3. **waiting requests next**, only if no request was preempted in this iteration, in queue order,
   while the budget lasts and fewer than ``max_num_seqs`` run: each asks for all its tokens (its
   prompt, or prompt + generated after a preemption), cut to the budget (chunked prefill; with it
   off, a prompt larger than the budget left waits and the next request is tried); admitted if its
   blocks fit, else the loop stops;
4. the iteration runs: its duration is the table's (`costmodel.serving.table.CostTable.iteration`,
   with the launches paid as ``graphs`` says and the host's time); at its end every scheduled
   request has its new tokens computed, and those whose every token is computed sample one more
   (the first: the time of the first token; vLLM samples partial chunks too and discards them);
   a request that has its ``output`` tokens finishes and frees its blocks.

A request is refused before it is queued, with its reason, when its prompt plus output (capped at
``max_model_len``) needs more blocks than the cache has: it could never run alone (vLLM checks at
start-up that ``max_model_len`` fits the cache instead; a prompt past ``max_model_len`` is refused
by the reader, `costmodel.serving.requests`). Output past ``max_model_len`` - prompt is cut there
(vLLM finishes such a request with reason "length"), counted in ``truncated``.

Deviations from vLLM, named: no prefix caching (vLLM v0.11.0 has it on: requests sharing a prefix
would compute it once; the traces carry no token ids to match); no speculative decoding; the
scheduler's own time is the table's ``host_s`` per iteration, not overlapped with the device
(vLLM v0.11.0's default ``async_scheduling = False``: the host works between iterations); a
request's output length is known (the trace's), where a real one stops at its end-of-sequence token.

Per request (arrays of the input's order): ``scheduled_s`` (first scheduled), ``first_token_s``,
``finish_s`` (NaN if refused), ``preemptions``, ``energy_j`` (its attention's energy plus its share,
by tokens, of each iteration's dense and head energy), ``status`` (``ok``, ``refused``), ``reason``;
per iteration: ``start_s``, ``duration_s``, ``tokens``, ``prefill_tokens``, ``decode_tokens``,
``sequences``, ``running``, ``waiting``, ``kv_blocks_used``, ``energy_j``, ``launches``,
``graph`` (``full``, ``piecewise``, ``eager``: how it ran).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .requests import Requests
from .scheduler import SchedulerConfig, capture_sizes
from .table import CostTable

__all__ = ["SimResult", "simulate", "ITERATION_COLUMNS"]

ITERATION_COLUMNS = ("start_s", "duration_s", "tokens", "prefill_tokens", "decode_tokens", "sequences", "running",
                     "waiting", "kv_blocks_used", "energy_j", "launches", "graph")
_GRAPH = ("full", "piecewise", "eager")


@dataclass
class SimResult:
    """What `simulate` returns (module docstring): per-request arrays, per-iteration columns (all
    iterations, unless a sink took them), and counts."""

    requests: Requests
    scheduled_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    preemptions: np.ndarray
    energy_j: np.ndarray
    output: np.ndarray            # tokens generated (the request's output, or cut at max_model_len)
    refused: np.ndarray           # bool
    reason: list[str]
    iterations: dict[str, np.ndarray]
    n_iterations: int
    truncated: int
    num_blocks: int
    end_s: float
    stats: dict[str, float] = field(default_factory=dict)


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


def simulate(requests: Requests, table: CostTable, cfg: SchedulerConfig, num_blocks: int,
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
    output = np.minimum(requests.output.astype(np.int64), np.maximum(cfg.max_model_len - prompt, 0))
    truncated = int(np.sum(output < requests.output))
    need_all = -(-(prompt + output) // bs)
    refused = (need_all > num_blocks) | (output < 1)
    reason = [""] * n
    for i in np.flatnonzero(refused):
        if output[i] < 1:
            reason[i] = (f"prompt of {prompt[i]:,} tokens leaves no room for output under max_model_len "
                         f"{cfg.max_model_len:,}")
        else:
            reason[i] = (f"needs {need_all[i]:,} KV blocks ({prompt[i] + output[i]:,} tokens of {bs}) and the cache has "
                         f"{num_blocks:,} ({num_blocks * bs:,} tokens)")
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


def _columns(cols: dict[str, list]) -> dict[str, np.ndarray]:
    out = {k: np.asarray(v) for k, v in cols.items()}
    out["graph"] = np.asarray([_GRAPH[int(g)] for g in cols["graph"]], dtype=object)
    for k in ("tokens", "prefill_tokens", "decode_tokens", "sequences", "running", "waiting", "kv_blocks_used"):
        out[k] = out[k].astype(np.int64)
    for k in ("start_s", "duration_s", "energy_j", "launches"):
        out[k] = out[k].astype(np.float64)
    return out
