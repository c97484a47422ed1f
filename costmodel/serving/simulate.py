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
    stats: dict[str, float | None] = field(default_factory=dict)


def refusals(requests: Requests, cfg: SchedulerConfig, num_blocks: int) -> tuple[np.ndarray, np.ndarray, list[str], int]:
    """(output tokens, cut at max_model_len; refused mask; reasons; how many were cut) of the
    requests (module docstring)."""
    n = len(requests)
    bs = cfg.block_size
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
            reason[i] = (f"needs {need_all[i]:,} KV blocks ({prompt[i] + output[i]:,} tokens of {bs}) and the cache "
                         f"has {num_blocks:,} ({num_blocks * bs:,} tokens)")
    return output, refused, reason, truncated


def simulate(requests: Requests, table: CostTable, cfg: SchedulerConfig, num_blocks: int,
             sink: Callable[[dict[str, np.ndarray]], None] | None = None, chunk: int = 65536,
             prefilled: np.ndarray | None = None) -> SimResult:
    """Serve ``requests`` (module docstring) with the compiled loop (`costmodel.serving.kernel`).

    Args:
        requests: arrivals and lengths.
        table: the iteration costs of the deployment.
        cfg: the scheduler's settings.
        num_blocks: KV blocks in the system (`costmodel.serving.scheduler.kv_blocks`).
        sink: called with each ``chunk`` of iteration columns as they fill (bounded memory for long
            traces); `SimResult.iterations` is then empty. None: every iteration in
            `SimResult.iterations`.
        chunk: iterations per segment.
        prefilled: bool (n,): requests that arrive with their prompt's K/V already cached and their
            first token sampled (a disaggregated decode pool, `costmodel.serving.disagg`): they
            start at their first decode; the first token's time is not theirs to set here.

    Returns:
        `SimResult`.

    Raises:
        ValueError: ``num_blocks`` < 1.
        RuntimeError: the loop stalled (no request can ever be scheduled: a bug, never expected).
    """
    from . import kernel
    if num_blocks < 1:
        raise ValueError(f"num_blocks = {num_blocks}: expected at least 1 KV block")
    n = len(requests)
    output, refused, reason, truncated = refusals(requests, cfg, num_blocks)
    host = table.host_s if cfg.host_s is None else cfg.host_s
    sizes = np.asarray(capture_sizes(cfg.max_num_seqs, cfg.max_num_batched_tokens) or [0], dtype=np.int64)
    gmode = {"vllm": 0, "eager": 1, "graph": 2}[cfg.graphs]
    cfgv = np.array([cfg.block_size, cfg.max_num_batched_tokens, cfg.max_num_seqs, cfg.long_prefill_token_threshold,
                     1 if cfg.chunked_prefill else 0, gmode, int(sizes[-1]), num_blocks], dtype=np.int64)
    num_tokens = requests.prompt.astype(np.int64).copy()
    z = lambda dt=np.int64: np.zeros(n, dt)  # noqa: E731
    computed, generated, blocks, preempt = z(), z(), z(), z()
    if prefilled is not None:
        pre = np.asarray(prefilled, bool)
        computed[pre] = num_tokens[pre]
        generated[pre] = 1
        num_tokens[pre] += 1
    scheduled, first, finish = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    energy = np.zeros(n)
    running, waitbuf, skipbuf = z(), z(), z()
    sched_ids = np.zeros(cfg.max_num_seqs + 1, np.int64)
    sched_q = np.zeros(cfg.max_num_seqs + 1, np.int64)
    st = np.array([0, 0, 0, num_blocks, 0, int(refused.sum()), 0], dtype=np.int64)
    tf = np.array([float(requests.arrival_s[0]) if n else 0.0, 0.0, 0.0, 0.0])
    tab_f = np.array([table.head_launches, table.attention_launches, table.launch_s, host, table.ep], dtype=np.float64)
    t_arrays = (table.tokens, table.dense_s, table.dense_j, table.dense_launches, table.seqs, table.head_s,
                table.head_j, table.contexts, table.decode_s, table.decode_j, table.chunk_q, table.chunk_p,
                table.density_s, table.density_j)
    parts: list[dict[str, np.ndarray]] = []
    while True:
        cols = {k: np.zeros(chunk, np.int64 if k in _INT_COLUMNS else np.float64) for k in ITERATION_COLUMNS}
        k, status = kernel.run_segment(
            requests.arrival_s.astype(np.float64), requests.prompt.astype(np.int64), output, refused,
            num_tokens, computed, generated, blocks, scheduled, first, finish, preempt, energy,
            running, waitbuf, skipbuf, sched_ids, sched_q, st, tf, cfgv, sizes, *t_arrays, tab_f,
            *(cols[c] for c in ITERATION_COLUMNS))
        seg = {c: v[:k] for c, v in cols.items()}
        seg["graph"] = np.asarray(_GRAPH, dtype=object)[seg["graph"]] if k else np.zeros(0, dtype=object)
        if k:
            if sink is not None:
                sink(seg)
            else:
                parts.append(seg)
        if status == 2:
            raise RuntimeError("serving stalled: no request can be scheduled and none will arrive")
        if status == 0:
            break
    if parts:
        iters = {c: np.concatenate([p[c] for p in parts]) for c in ITERATION_COLUMNS}
    else:
        iters = _columns({c: [] for c in ITERATION_COLUMNS})
    busy = float(tf[1])
    stats = {"busy_s": busy, "kv_utilization": float(tf[2]) / busy / num_blocks if busy else None,
             "mean_batch": float(tf[3]) / busy if busy else None}
    return SimResult(requests, scheduled, first, finish, preempt, energy, np.where(refused, 0, output), refused, reason,
                     iters, int(st[6]), truncated, num_blocks, float(tf[0]), stats)


_INT_COLUMNS = ("tokens", "prefill_tokens", "decode_tokens", "sequences", "running", "waiting", "kv_blocks_used", "graph")


def _columns(cols: dict[str, list]) -> dict[str, np.ndarray]:
    out = {k: np.asarray(v) for k, v in cols.items()}
    out["graph"] = np.asarray([_GRAPH[int(g)] for g in cols["graph"]], dtype=object)
    for k in ("tokens", "prefill_tokens", "decode_tokens", "sequences", "running", "waiting", "kv_blocks_used"):
        out[k] = out[k].astype(np.int64)
    for k in ("start_s", "duration_s", "energy_j", "launches"):
        out[k] = out[k].astype(np.float64)
    return out
