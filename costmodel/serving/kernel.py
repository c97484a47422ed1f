"""The event loop of `costmodel.serving.simulate`, compiled: the same rules, request by request,
on arrays (Numba; interpreted when Numba is off, ``DSE_SWEEP_NO_NUMBA=1``). `simulate` runs it;
``costmodel.serving.reference.simulate_reference`` states the rules in plain Python and the tests hold
the two equal on random loads, preemptions included.

State lives in arrays the caller owns (mutated in place), so a long trace runs in segments of at
most ``cap`` iterations, each segment's iteration columns handed on before the next (bounded
memory). ``st`` (int64): n_running, waiting head, waiting length, free blocks, next arrival, done,
iterations so far; ``tf`` (float64): now, busy time, blocks used x time, sequences x time.
"""

from __future__ import annotations

import math

import numpy as np

from costmodel.loopnest.kernel import numba_disabled

__all__ = ["run_segment", "JIT"]


def _jit(fn):
    if numba_disabled():
        return fn
    try:
        from numba import njit
    except ImportError:  # pragma: no cover
        return fn
    return njit(cache=True, error_model="numpy")(fn)


JIT = not numba_disabled()


@_jit
def _idx(x, xs):
    """(segment index, weight of its upper point) of x in the grid xs, the end segments extended."""
    n = len(xs)
    if n == 1:
        return 0, 0.0
    if x <= xs[0]:
        i = 0
    elif x >= xs[n - 1]:
        i = n - 2
    else:
        i = np.searchsorted(xs, x, side="right") - 1
    return i, (x - xs[i]) / (xs[i + 1] - xs[i])


@_jit
def _lin(x, xs, ys):
    """Piecewise-linear interpolation, the end segments extended."""
    if len(xs) == 1:
        return ys[0]
    i, w = _idx(x, xs)
    return ys[i] + w * (ys[i + 1] - ys[i])


@_jit
def _chunk(q, p, cq, cp, dens):
    """A chunk's attention: bilinear density x pairs (`costmodel.serving.table`)."""
    i, wi = _idx(q, cq)
    j, wj = _idx(p, cp)
    i1 = min(i + 1, len(cq) - 1)
    j1 = min(j + 1, len(cp) - 1)
    v = ((1 - wi) * (1 - wj) * dens[i, j] + wi * (1 - wj) * dens[i1, j] + (1 - wi) * wj * dens[i, j1]
         + wi * wj * dens[i1, j1])
    if v < 0:
        v = 0.0
    return v * (q * p + q * (q + 1) / 2)


# st: 0 n_running, 1 waiting head, 2 waiting length, 3 free blocks, 4 next arrival, 5 done, 6 iterations
@_jit
def _push_front(waitbuf, st, r):
    n = len(waitbuf)
    st[1] = (st[1] - 1) % n
    waitbuf[st[1]] = r
    st[2] += 1


@_jit
def _arrivals(arrival, refused, waitbuf, st, t):
    """Requests arrived by ``t`` join the waiting queue (refused ones never do)."""
    n = len(arrival)
    while st[4] < n and arrival[st[4]] <= t:
        if not refused[st[4]]:
            waitbuf[(st[1] + st[2]) % n] = st[4]
            st[2] += 1
        st[4] += 1


@_jit
def _running(num_tokens, computed, blocks, preempt, running, waitbuf, sched_ids, sched_q, st, cfg):
    """The running requests, in order (module docstring of `costmodel.serving.simulate`, step 2).
    Returns (scheduled, budget left, whether any was preempted)."""
    bs, budget, thr = cfg[0], cfg[1], cfg[3]
    preempted = False
    ns = 0
    i = 0
    while i < st[0] and budget > 0:
        r = running[i]
        new = min(num_tokens[r] - computed[r], budget)
        if thr > 0 and new > thr:
            new = thr
        ok = True
        while True:
            g = max((computed[r] + new + bs - 1) // bs - blocks[r], 0)
            if g <= st[3]:
                break
            st[0] -= 1                       # preempt the last running request
            v = running[st[0]]
            st[3] += blocks[v]
            blocks[v] = 0
            computed[v] = 0
            preempt[v] += 1
            _push_front(waitbuf, st, v)
            preempted = True
            if v == r:
                ok = False
                break
        if not ok:
            break
        blocks[r] += g
        st[3] -= g
        sched_ids[ns] = r
        sched_q[ns] = new
        ns += 1
        budget -= new
        i += 1
    return ns, budget, preempted


@_jit
def _waiting(num_tokens, computed, blocks, scheduled, running, waitbuf, skipbuf, sched_ids, sched_q, st, cfg, ns,
             budget, t):
    """The waiting requests, in queue order (step 3). Returns the scheduled count."""
    n = len(waitbuf)
    bs, max_seqs, thr, chunked = cfg[0], cfg[2], cfg[3], cfg[4]
    n_skip = 0
    while st[2] > 0 and budget > 0 and st[0] < max_seqs:
        r = waitbuf[st[1]]
        want = num_tokens[r] - computed[r]   # all its tokens (computed: 0, or its prompt when it came prefilled)
        if thr > 0 and want > thr:
            want = thr
        if chunked == 0 and want > budget:   # a whole prompt that does not fit waits; try the next
            st[1] = (st[1] + 1) % n
            st[2] -= 1
            skipbuf[n_skip] = r
            n_skip += 1
            continue
        want = min(want, budget)
        g = (computed[r] + want + bs - 1) // bs
        if g > st[3]:
            break
        st[1] = (st[1] + 1) % n
        st[2] -= 1
        blocks[r] = g
        st[3] -= g
        if math.isnan(scheduled[r]):
            scheduled[r] = t
        running[st[0]] = r
        st[0] += 1
        sched_ids[ns] = r
        sched_q[ns] = want
        ns += 1
        budget -= want
    for s in range(n_skip - 1, -1, -1):
        _push_front(waitbuf, st, skipbuf[s])
    return ns


@_jit
def _price(num_tokens, computed, generated, energy, sched_ids, sched_q, ns, cfg, graph_sizes, tokens, dense_s,
           dense_j, dense_l, seqs, head_s, head_j, contexts, dec_s, dec_j, cq, cp, dens_s, dens_j, tab_f):
    """The iteration's cost (step 4; `costmodel.serving.table.CostTable.iteration` with the launches
    as ``graphs`` says); each scheduled request's energy share added. Returns (duration s, energy J,
    launches, graph mode, tokens, decodes)."""
    gmode, top = cfg[5], cfg[6]
    head_l, att_l, launch_s, host_s, ep = tab_f[0], tab_f[1], tab_f[2], tab_f[3], tab_f[4]
    T = 0
    n_dec = 0
    for s in range(ns):
        r = sched_ids[s]
        T += sched_q[s]
        if sched_q[s] == 1 and generated[r] > 0 and computed[r] == num_tokens[r] - 1:
            n_dec += 1
    T_run = T
    if gmode == 0 and T <= top:
        T_run = graph_sizes[np.searchsorted(graph_sizes, T)]   # padded up to a capture size
    shared = _lin(T_run, tokens, dense_j) + _lin(ns, seqs, head_j)
    a_s = 0.0
    a_j = 0.0
    for s in range(ns):
        r = sched_ids[s]
        q = sched_q[s]
        p = computed[r]
        if q == 1:
            x_s = _lin(p + 1, contexts, dec_s)
            x_j = _lin(p + 1, contexts, dec_j)
        else:
            x_s = _chunk(q, p, cq, cp, dens_s)
            x_j = _chunk(q, p, cq, cp, dens_j)
        a_s += x_s
        a_j += x_j
        energy[r] += x_j + shared * q / T
    every = np.rint(_lin(T_run, tokens, dense_l)) + head_l + att_l
    if gmode == 2:                             # graph: no launch paid
        launches, mode = 0.0, 0
    elif gmode == 1 or T > top:                # eager
        launches, mode = every, 2
    elif n_dec == ns:                          # vllm: a decode-only batch replays its full graph
        launches, mode = 0.0, 0
    else:                                      # piecewise: attention launched outside the graph
        launches, mode = att_l, 1
    dur = _lin(T_run, tokens, dense_s) + _lin(ns, seqs, head_s) + a_s / ep + launches * launch_s + host_s
    return dur, shared + a_j, launches, mode, T, n_dec


@_jit
def _advance(num_tokens, computed, generated, blocks, first, finish, output, running, sched_ids, sched_q, ns, st,
             t_end):
    """The scheduled requests' tokens computed; those with every token computed sample one (the
    first: TTFT); those with their output done finish and free their blocks."""
    n_fin = 0
    for s in range(ns):
        r = sched_ids[s]
        computed[r] += sched_q[s]
        if computed[r] >= num_tokens[r]:
            generated[r] += 1
            num_tokens[r] += 1
            if math.isnan(first[r]):
                first[r] = t_end
            if generated[r] >= output[r]:
                finish[r] = t_end
                st[3] += blocks[r]
                blocks[r] = 0
                n_fin += 1
    if n_fin:
        m = 0
        for s in range(st[0]):
            r = running[s]
            if math.isnan(finish[r]):
                running[m] = r
                m += 1
        st[0] = m
        st[5] += n_fin


@_jit
def run_segment(arrival, prompt, output, refused,
                num_tokens, computed, generated, blocks, scheduled, first, finish, preempt, energy,
                running, waitbuf, skipbuf, sched_ids, sched_q, st, tf, cfg, graph_sizes,
                tokens, dense_s, dense_j, dense_l, seqs, head_s, head_j, contexts, dec_s, dec_j,
                cq, cp, dens_s, dens_j, tab_f,
                c_start, c_dur, c_tok, c_pre, c_dec, c_seq, c_run, c_wait, c_used, c_energy, c_launch, c_graph):
    """Run iterations until every request is done or ``len(c_start)`` iterations are recorded.
    Returns (iterations recorded, status: 0 done, 1 segment full, 2 stalled)."""
    n = len(arrival)
    num_blocks = cfg[7]
    k = 0
    status = 0
    while st[5] < n:
        if k >= len(c_start):
            status = 1
            break
        t = tf[0]
        _arrivals(arrival, refused, waitbuf, st, t)
        if st[0] == 0 and st[2] == 0:
            if st[4] >= n:
                break
            tf[0] = max(t, arrival[st[4]])
            continue
        ns, budget, preempted = _running(num_tokens, computed, blocks, preempt, running, waitbuf, sched_ids, sched_q,
                                         st, cfg)
        if not preempted:
            ns = _waiting(num_tokens, computed, blocks, scheduled, running, waitbuf, skipbuf, sched_ids, sched_q, st,
                          cfg, ns, budget, t)
        if ns == 0:
            if st[4] >= n:
                status = 2
                break
            tf[0] = max(t, arrival[st[4]])
            continue
        dur, e, launches, mode, T, n_dec = _price(num_tokens, computed, generated, energy, sched_ids, sched_q, ns, cfg,
                                                  graph_sizes, tokens, dense_s, dense_j, dense_l, seqs, head_s, head_j,
                                                  contexts, dec_s, dec_j, cq, cp, dens_s, dens_j, tab_f)
        used = num_blocks - st[3]
        c_run[k] = st[0]
        _advance(num_tokens, computed, generated, blocks, first, finish, output, running, sched_ids, sched_q, ns, st,
                 t + dur)
        c_start[k], c_dur[k], c_tok[k], c_pre[k], c_dec[k], c_seq[k] = t, dur, T, T - n_dec, n_dec, ns
        c_wait[k], c_used[k], c_energy[k], c_launch[k], c_graph[k] = st[2], used, e, launches, mode
        k += 1
        st[6] += 1
        tf[1] += dur
        tf[2] += dur * used
        tf[3] += dur * ns
        tf[0] = t + dur
    return k, status
