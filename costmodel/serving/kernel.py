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
def _lin(x, xs, ys):
    """Piecewise-linear interpolation, the end segments extended."""
    n = len(xs)
    if n == 1:
        return ys[0]
    if x <= xs[0]:
        i = 0
    elif x >= xs[n - 1]:
        i = n - 2
    else:
        i = np.searchsorted(xs, x, side="right") - 1
    w = (x - xs[i]) / (xs[i + 1] - xs[i])
    return ys[i] + w * (ys[i + 1] - ys[i])


@_jit
def _idx(x, xs):
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
    bs, budget0, max_seqs, thr, chunked, gmode, top, num_blocks = (cfg[0], cfg[1], cfg[2], cfg[3], cfg[4], cfg[5],
                                                                   cfg[6], cfg[7])
    head_l, att_l, launch_s, host_s, ep = tab_f[0], tab_f[1], tab_f[2], tab_f[3], tab_f[4]
    n_run, w_head, w_len, free, nxt, done, n_iter = st[0], st[1], st[2], st[3], st[4], st[5], st[6]
    t, busy, used_t, seqs_t = tf[0], tf[1], tf[2], tf[3]
    cap = len(c_start)
    k = 0
    status = 0
    while done < n:
        if k >= cap:
            status = 1
            break
        while nxt < n and arrival[nxt] <= t:
            if not refused[nxt]:
                waitbuf[(w_head + w_len) % n] = nxt
                w_len += 1
            nxt += 1
        if n_run == 0 and w_len == 0:
            if nxt >= n:
                break
            if arrival[nxt] > t:
                t = arrival[nxt]
            continue
        budget = budget0
        preempted = False
        ns = 0
        i = 0
        while i < n_run and budget > 0:          # the running requests, in order
            r = running[i]
            new = num_tokens[r] - computed[r]
            if thr > 0 and new > thr:
                new = thr
            if new > budget:
                new = budget
            ok = True
            while True:
                g = (computed[r] + new + bs - 1) // bs - blocks[r]
                if g < 0:
                    g = 0
                if g <= free:
                    break
                n_run -= 1                        # preempt the last running request
                v = running[n_run]
                free += blocks[v]
                blocks[v] = 0
                computed[v] = 0
                preempt[v] += 1
                w_head = (w_head - 1) % n
                waitbuf[w_head] = v
                w_len += 1
                preempted = True
                if v == r:
                    ok = False
                    break
            if not ok:
                break
            blocks[r] += g
            free -= g
            sched_ids[ns] = r
            sched_q[ns] = new
            ns += 1
            budget -= new
            i += 1
        if not preempted:                         # the waiting requests
            n_skip = 0
            while w_len > 0 and budget > 0 and n_run < max_seqs:
                r = waitbuf[w_head]
                want = num_tokens[r]
                if thr > 0 and want > thr:
                    want = thr
                if chunked == 0 and want > budget:
                    w_head = (w_head + 1) % n
                    w_len -= 1
                    skipbuf[n_skip] = r
                    n_skip += 1
                    continue
                if want > budget:
                    want = budget
                g = (want + bs - 1) // bs
                if g > free:
                    break
                w_head = (w_head + 1) % n
                w_len -= 1
                blocks[r] = g
                free -= g
                computed[r] = 0
                if math.isnan(scheduled[r]):
                    scheduled[r] = t
                running[n_run] = r
                n_run += 1
                sched_ids[ns] = r
                sched_q[ns] = want
                ns += 1
                budget -= want
            for s in range(n_skip - 1, -1, -1):
                w_head = (w_head - 1) % n
                waitbuf[w_head] = skipbuf[s]
                w_len += 1
        if ns == 0:
            if nxt >= n:
                status = 2
                break
            if arrival[nxt] > t:
                t = arrival[nxt]
            continue
        # the iteration's cost
        T = 0
        n_dec = 0
        for s in range(ns):
            r = sched_ids[s]
            T += sched_q[s]
            if sched_q[s] == 1 and generated[r] > 0 and computed[r] == num_tokens[r] - 1:
                n_dec += 1
        T_run = T
        if gmode == 0 and T <= top:
            T_run = graph_sizes[np.searchsorted(graph_sizes, T)]
        ds = _lin(T_run, tokens, dense_s)
        dj = _lin(T_run, tokens, dense_j)
        dl = np.rint(_lin(T_run, tokens, dense_l))
        hs = _lin(ns, seqs, head_s)
        hj = _lin(ns, seqs, head_j)
        a_s = 0.0
        a_j_tot = 0.0
        shared = dj + hj
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
            a_j_tot += x_j
            energy[r] += x_j + shared * q / T
        every = dl + head_l + att_l
        if gmode == 2:                             # graph: none paid
            launches = 0.0
            mode = 0
        elif gmode == 1 or T > top:                # eager
            launches = every
            mode = 2
        elif n_dec == ns:                          # vllm: a decode-only batch replays its full graph
            launches = 0.0
            mode = 0
        else:                                      # piecewise: attention launched outside the graph
            launches = att_l
            mode = 1
        dur = ds + hs + a_s / ep + launches * launch_s + host_s
        t_end = t + dur
        used = num_blocks - free
        run_before = n_run
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
                    free += blocks[r]
                    blocks[r] = 0
                    n_fin += 1
        if n_fin:
            m = 0
            for s in range(n_run):
                r = running[s]
                if math.isnan(finish[r]):
                    running[m] = r
                    m += 1
            n_run = m
            done += n_fin
        c_start[k] = t
        c_dur[k] = dur
        c_tok[k] = T
        c_pre[k] = T - n_dec
        c_dec[k] = n_dec
        c_seq[k] = ns
        c_run[k] = run_before
        c_wait[k] = w_len
        c_used[k] = used
        c_energy[k] = shared + a_j_tot
        c_launch[k] = launches
        c_graph[k] = mode
        k += 1
        n_iter += 1
        busy += dur
        used_t += dur * used
        seqs_t += dur * ns
        t = t_end
    st[0], st[1], st[2], st[3], st[4], st[5], st[6] = n_run, w_head, w_len, free, nxt, done, n_iter
    tf[0], tf[1], tf[2], tf[3] = t, busy, used_t, seqs_t
    return k, status
