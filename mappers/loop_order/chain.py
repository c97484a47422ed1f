"""SALSA's annealing chains compiled with the loop-nest kernel: moves, acceptance and bookkeeping
in one compiled loop that calls `costmodel.loopnest.kernel.evaluate_batch` on each proposal.

The same trajectory as the Python chains of `mappers.loop_order.annealer` (`_anneal_one`,
`_anneal_lockstep`), draw for draw: the proposals read the same pre-drawn buffers as `PairStream` /
`MoveStream` (`mappers.loop_order.moves`) with the same rejection rule, the acceptance is
`mappers.annealing.log_accept_arg` with the same floating-point operations, and the kernel gives
the same cost for an ordering whatever was evaluated before it. When a chain's buffer runs out the
loop returns and the caller extends it from the chain's Generator exactly as the stream would, then
resumes. A proposal the chain made before takes the cost recorded then (an exact memo, as the Python
chains' dict), so the evaluation counts agree too; the lockstep chains are evaluated one proposal at
a time (a batch call gives each row the same cost). ``tests/mappers/test_salsa_chain.py`` holds the two paths equal.

Numba caches compiled code per source file, keyed by that file's time stamp; a cached function does
not notice a change in a file it calls into. The chain is therefore compiled as a closure over a
hash of the kernel's source files (`KERNEL_SOURCES`): closure values are part of Numba's cache key,
so a changed kernel recompiles the chain.
"""

from __future__ import annotations

import math

from costmodel.loopnest import kernel as _kernel

__all__ = ["NORMALISE_CODE", "KERNEL_SOURCES", "run_chains", "compiled"]

#: `mappers.annealing.log_accept_arg`'s normalisations as the compiled loop's codes.
NORMALISE_CODE = {"initial": 0, "best": 1, "log": 2, "zigzag": 3}

#: the hash of the kernel's source files (`costmodel.loopnest.kernel.KERNEL_SOURCES`)
KERNEL_SOURCES = _kernel.KERNEL_SOURCES


def _accept_arg(v, vn, ref, t, norm):
    """`mappers.annealing.log_accept_arg` with the normalisation as its code (`NORMALISE_CODE`)."""
    if t <= 0.0:
        return math.inf if vn <= v else -math.inf
    if norm == 3:
        return (v / vn - 1.0) / t
    if norm == 2:
        return math.log(v / vn) / t
    return (v - vn) / (ref * t)


def _swap_draw(cur, p, buf, pos, end, pi, pj):
    """`PairStream.propose` into p from buf[pos:end] (pair indices into pi, pj). Returns the next
    position, or -1 if the buffer ran out first (p undefined)."""
    while pos < end:
        i = pi[buf[pos]]
        j = pj[buf[pos]]
        pos += 1
        if cur[i] != cur[j]:
            p[:] = cur
            p[i] = cur[j]
            p[j] = cur[i]
            return pos
    return -1


def _mixed_draw(cur, p, buf, pos, end, share, bmax):
    """`MoveStream.propose` into p from the uniforms buf[pos:end], four per draw. Returns the next
    position, or -1 if fewer than four remain before a proposal differs from cur."""
    n = cur.shape[0]
    while pos + 4 <= end:
        u0, u1, u2, u3 = buf[pos], buf[pos + 1], buf[pos + 2], buf[pos + 3]
        pos += 4
        if u0 < share:
            i, j = int(u1 * n), int(u2 * n)
            p[:] = cur
            p[i] = cur[j]
            p[j] = cur[i]
        elif u0 < share + (1.0 - share) / 2.0:
            length = 1 + int(u1 * min(bmax, n - 1))
            i = int(u2 * (n - length + 1))
            j = int(u3 * (n - length + 1))
            k = 0   # rest = cur without [i, i + length); p = rest[:j] + block + rest[j:]
            for q in range(n):
                if i <= q < i + length:
                    continue
                if k == j:
                    k += length
                p[k] = cur[q]
                k += 1
            for q in range(length):
                p[j + q] = cur[i + q]
        else:
            a, b = int(u1 * (n + 1)), int(u2 * (n + 1))
            i, j = min(a, b), max(a, b)
            p[:] = cur
            for q in range(i, j):
                p[q] = cur[i + j - 1 - q]
        for q in range(n):
            if p[q] != cur[q]:
                return pos
    return -1


def _slot(tab, r, props, p, n):
    """Chain r's memo (open addressing on the rows of props[:, r]): the index of p's earlier row
    in props (>= 0), else -(the free slot of tab[r] for it) - 1."""
    m = tab.shape[1]
    h = 0
    for q in range(n):
        h = h * 1000003 ^ p[q]
    h = h & (m - 1)
    while tab[r, h] >= 0:
        idx = tab[r, h]
        same = True
        for q in range(n):
            if props[idx, r, q] != p[q]:
                same = False
                break
        if same:
            return idx
        h = (h + 1) & (m - 1)
    return -h - 1


_jit, b = _kernel._jit, _kernel._borrow
accept, swap_draw, mixed_draw, slot = _jit(_accept_arg), _jit(_swap_draw), _jit(_mixed_draw), _jit(_slot)
evaluate_batch = _kernel.evaluate_batch


def _make_run_chains(sources: str):
    """The compiled loop, a closure over ``sources`` (`KERNEL_SOURCES`) alone: Numba's cache key
    holds a closure's values (pickled; a compiled function's pickle differs from process to
    process, so the helpers are globals)."""

    def run_chains(start, cur, v, ref, best_v, best_o, accepted, evals, hist, props, tab, log_u, temps, norm,
                   mixed, bufi, buff, pos, end, pi, pj, share, bmax, obj, row, out,
                   ft, lv, lvf, mem, memf, par, mac_e, wi, wf):
        """Iterations it = start // R .., chain r = start % R .. of R chains (cur (R, n) their states,
        v their costs, ref / best_v / best_o / accepted / evals their bookkeeping, updated in place):
        chain r proposes from its buffer row (bufi: pair indices, buff: uniforms if mixed; pos[r] ..
        end[r]); a proposal it made before (its memo ``tab``, rows of props) takes the cost recorded
        then, else the kernel costs it (objective row ``obj``) and evals[r] counts it; hist[it + 1, r]
        and props[it + 1, r] record it (row 0: the initial state); it is accepted as SALSA's eq. 3
        says. Returns -1 when done, else it * R + r: chain r's buffer ran out there (extend it and
        call again from that value)."""
        assert len(sources) > 0   # the closure's value: part of the cache key
        cur, v, ref, best_v, best_o, accepted, evals, hist, props, tab = b(cur), b(v), b(ref), b(best_v), b(best_o), \
            b(accepted), b(evals), b(hist), b(props), b(tab)   # borrowed (`costmodel.loopnest.borrow`)
        log_u, temps, bufi, buff, pos, end, pi, pj, row, out = b(log_u), b(temps), b(bufi), b(buff), b(pos), b(end), \
            b(pi), b(pj), b(row), b(out)
        R, n = cur.shape
        iters = temps.shape[0]
        if start == 0:
            for r in range(R):
                tab[r, -slot(tab, r, props, props[0, r], n) - 1] = 0
        p = row[0]
        for s in range(start, iters * R):
            it = s // R
            r = s - it * R
            if mixed:
                q = mixed_draw(cur[r], p, buff[r], pos[r], end[r], share, bmax)
            else:
                q = swap_draw(cur[r], p, bufi[r], pos[r], end[r], pi, pj)
            if q < 0:
                return s
            pos[r] = q
            f = slot(tab, r, props, p, n)
            if f >= 0:
                vn = hist[f, r]
            else:
                evaluate_batch(row, ft, lv, lvf, mem, memf, par, mac_e, out, wi, wf)
                vn = out[obj, 0]
                tab[r, -f - 1] = it + 1
                evals[r] += 1
            hist[it + 1, r] = vn
            props[it + 1, r, :] = p
            if not math.isinf(vn) and log_u[r, it] < accept(v[r], vn, ref[r], temps[it], norm):
                cur[r, :] = p
                v[r] = vn
                accepted[r] += 1
                if vn < best_v[r]:
                    best_v[r] = vn
                    best_o[r, :] = p
                    if norm == 1:
                        ref[r] = vn
        return -1

    return _jit(run_chains)


#: the compiled loop (`_make_run_chains`); interpreted when the kernel is
run_chains = _make_run_chains(KERNEL_SOURCES)


def compiled(ev) -> bool:
    """Whether ``ev`` runs the compiled kernel (an `OrderingEvaluator` with backend "numba"), so
    its chains can run in `run_chains` (else in Python: other evaluators, the interpreted kernel)."""
    return _kernel.JIT and getattr(ev, "_k", None) is _kernel and hasattr(ev, "_args")
