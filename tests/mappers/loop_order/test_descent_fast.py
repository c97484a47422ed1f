"""The final descent's array path (`mappers.loop_order.moves.neighbour_rows`, the hashed join test of
`descend_ends`) against the plain definitions: the neighbourhood as a dictionary of tuples (itself
checked against brute force in test_moves.py) and a descent written from `descend_ends`' docstring
with Python sets. Same orderings, same order, same evaluations, same result, for every seed."""

import numpy as np
import pytest

import mappers.loop_order.moves as mv
from mappers.loop_order.moves import descend_ends, neighbour_rows, neighbours


def test_neighbour_rows_equal_the_dictionary_path():
    rng = np.random.default_rng(11)
    for _ in range(1500):
        n, k = int(rng.integers(0, 24)), int(rng.integers(1, 7))
        o = rng.integers(0, k, size=n).tolist()
        rows, h = neighbour_rows(o)
        nb, ref = neighbours(o)
        assert rows.shape == ref.shape and (rows == ref).all()
        assert [tuple(r) for r in rows.tolist()] == nb
        assert (h == mv.row_hashes(ref)).all()


def test_a_hash_collision_takes_the_exact_path(monkeypatch):
    """Every row hashing alike must not merge distinct orderings."""
    calls = []
    real = mv.neighbours
    monkeypatch.setattr(mv, "_hash_weights", lambda n: np.zeros(n, dtype=np.uint64))
    monkeypatch.setattr(mv, "neighbours", lambda o: calls.append(o) or real(o))
    o = [0, 1, 2, 0, 1, 2, 2]
    rows, _ = mv.neighbour_rows(o)
    assert calls == [o]                                   # the dictionary path answered
    assert [tuple(r) for r in rows.tolist()] == real(o)[0]


def _reference_descend(f, cur, x, budget, rng, seen, weights, joined, trail):
    """One descent: (value, ordering, evaluations, reason)."""
    k = 0
    while True:
        nb, rows = neighbours(cur)
        if cur != trail[-1]:
            trail.append(cur)
        if joined(cur, x, nb):
            return x, cur, k, "joined"
        better = None
        for q in (nb[i] for i in mv._scan_order(rows, rng, weights)):
            if q not in seen:
                if k == budget:
                    return x, cur, k, "budget"
                seen[q] = f(list(q))
                k += 1
            if seen[q] < x * (1.0 - 1e-12):
                better = q
                break
        if better is None:
            return x, cur, k, "local"
        cur, x = better, seen[better]


def _reference_descend_ends(f, ends, budget, rng, seen, weights, log):
    """`descend_ends` from its docstring: tuples, a dictionary neighbourhood, set membership."""
    ends = sorted(ends, key=lambda e: e[1])
    best_v, best_o = (ends[0][1], ends[0][0]) if ends else (float("inf"), None)
    path, local, used = {}, [], 0

    def joined(cur, x, nb):
        return cur in path or any(mv._same(x, y) for y in local) or any(q in path and path[q] < x for q in nb)

    kept = []                          # ends not on the plateau of a better-ranked kept end
    for o, v in ends:
        if not kept or not mv._same(v, kept[-1][1]):
            kept.append((o, v))
    for o, v in kept:
        if used >= budget:
            break
        trail = [o]
        x, cur, k, why = _reference_descend(f, o, v, budget - used, rng, seen, weights, joined, trail)
        used, best_v, best_o = used + k, min(best_v, x), cur if x < best_v else best_o
        log.append((v, x, k, why))
        local += [x] if why == "local" else []
        path.update({q: seen.get(q, v) for q in trail if q not in path})
    return best_v, best_o, used


def _rugged(seed, n, types):
    """A cost with plateaus and many local optima: position x type weights plus pair terms, rounded
    to ``seed % 3`` decimals (coarse: wide plateaus, orderings of equal cost on different paths)."""
    r = np.random.default_rng(seed)
    c, pair = r.random((n, types)), r.random((types, types))

    def f(o):
        return round(10.0 + sum(c[i, t] for i, t in enumerate(o)) + sum(pair[a, b] for a, b in zip(o, o[1:])),
                     seed % 3)
    return f


def _case(seed):
    """Ends of random orderings (one repeated), a training set, surrogate on odd seeds, a budget."""
    r = np.random.default_rng(100 + seed)
    n, types = int(r.integers(5, 14)), int(r.integers(2, 5))
    f = _rugged(seed, n, types)
    base = r.integers(0, types, size=n)
    ends = []
    for _ in range(10):
        o = tuple(int(t) for t in r.permutation(base))
        ends.append((o, f(list(o))))
    ends.append(ends[0])
    train = {o: f(list(o)) for o in (tuple(int(t) for t in r.permutation(base)) for _ in range(200))}
    weights = mv.fit_surrogate(train, types) if seed % 2 else None
    return f, ends, train, weights, [25, 300, 10**9, 10**9][seed % 4]


SEEDS = range(30)


@pytest.mark.parametrize("seed", SEEDS)
def test_descend_ends_equals_the_reference_descent(seed):
    """With and without a surrogate, budgets that run out and budgets that do not: the same result,
    evaluations, log and ``seen`` (contents and insertion order)."""
    f, ends, train, weights, budget = _case(seed)
    seen_a, seen_b, log_a, log_b = dict(train), dict(train), [], []
    calls = []

    def many(qs):                       # evaluations ahead of the scan (on odd seeds)
        calls.append(len(qs))
        return [f(list(q)) for q in qs]
    got = descend_ends(f, ends, budget, np.random.default_rng(seed), seen_a, weights, log_a,
                       many if seed % 2 else None)
    want = _reference_descend_ends(f, ends, budget, np.random.default_rng(seed), seen_b, weights, log_b)
    assert got == want and log_a == log_b and list(seen_a.items()) == list(seen_b.items())
    assert not calls or seed % 2


def test_the_cases_reach_every_way_a_descent_ends():
    """The cases above exercise the joined test (both of its hash-checked parts), local optima,
    spent budgets and batches ahead of the scan at every width."""
    reasons, widths = set(), []

    def many(qs):
        widths.append(len(qs))
        return [f(list(q)) for q in qs]
    for seed in SEEDS:
        f, ends, train, weights, budget = _case(seed)
        log = []
        descend_ends(f, ends, budget, np.random.default_rng(seed), dict(train), weights, log, many)
        reasons |= {why for *_, why in log}
    assert reasons == {"joined", "local", "budget"}
    assert max(widths) == mv.AHEAD_MAX and min(widths) == 1   # batches grew; some found nothing left to add


@pytest.mark.parametrize("objective", ["energy", "latency"])
@pytest.mark.parametrize("layer", ["conv", "repeats", "gemm"])
def test_a_salsa_run_on_merged_arrays_equals_the_memo_dict_path(objective, layer, monkeypatch):
    """A default SALSA run (16 chains, the surrogate, the descent, latency ties by energy) whose
    chains ran compiled takes the chains' evaluations as arrays (`merged_evaluations`); with the
    arrays refused it merges the chains' memo dicts as before. Same result either way."""
    from costmodel.loopnest.arch import load_accelerator
    from costmodel.loopnest.kernel import JIT
    from costmodel.workload import Layer
    import mappers.loop_order.salsa as salsa
    from mappers.base import LayerProblem

    if not JIT:
        pytest.skip("numba is off: no compiled chain, no trace")
    shape = {"conv": Layer("c", K=128, C=64, OY=28, OX=28, FY=3, FX=3),
             "repeats": Layer("r", K=1024, C=3, OY=1, OX=14, FY=3, FX=1),
             "gemm": Layer("g", B=2048, K=4096, C=4096)}[layer]
    prob = LayerProblem(shape, load_accelerator("eyeriss_like"), None, objective)
    m = salsa.SalsaMapper()
    params = {"engine": "sa"}
    unit, = m.units(prob, params)
    merged = []
    real = salsa.merged_evaluations

    def spy(chains):
        got = real(chains)
        merged.append(got)
        return got
    monkeypatch.setattr(salsa, "merged_evaluations", spy)
    a = m.run(prob, unit, params)
    assert merged[0] is not None and len(merged[0][0]) > 1   # the arrays path ran
    monkeypatch.setattr(salsa, "merged_evaluations", lambda chains: None)
    b = m.run(prob, unit, params)
    assert a.value == b.value and a.detail == b.detail
    assert a.evaluations == b.evaluations and a.energy_pj == b.energy_pj and a.latency_cycles == b.latency_cycles
    assert {k: v for k, v in a.extra.items() if not k.endswith("_s")} == \
        {k: v for k, v in b.extra.items() if not k.endswith("_s")}


def test_merged_evaluations_are_the_merged_memo_dicts_in_order():
    """16 compiled chains of a conv layer: the arrays hold the items of the chains' memos merged by
    ``dict.update`` chain by chain (keys, values, order); a chain that ran in Python refuses them."""
    from costmodel.loopnest.arch import load_accelerator
    from costmodel.loopnest.kernel import JIT
    from costmodel.loopnest.ordering import OrderingEvaluator
    from costmodel.workload import Layer
    from mappers.loop_order.annealer import ChainResult, anneal, merged_evaluations

    if not JIT:
        pytest.skip("numba is off: no compiled chain, no trace")
    ev = OrderingEvaluator(Layer("c", K=128, C=64, OY=28, OX=28, FY=3, FX=3), load_accelerator("eyeriss_like"))
    chains = anneal(ev, "energy", [np.random.default_rng(s) for s in range(16)], 150, 0.0044, 0.9, "log",
                    "mixed", 0.32)
    o, v = merged_evaluations(chains)
    seen: dict = {}
    for r in chains:
        seen.update(r.memo())
    assert len(seen) < sum(len(r.trace[0]) for r in chains)            # chains met the same orderings
    assert list(zip(map(tuple, o.tolist()), v.tolist())) == list(seen.items())
    python_chain = ChainResult(1.0, None, 1.0, 1, 0, np.array([1.0]), {(0,): 1.0})
    assert merged_evaluations(chains + [python_chain]) is None


def test_the_surrogate_fit_counts_exactly():
    """The normal equations' counts X'X (a float32 product) are the exact integer counts: the weights
    equal, bit for bit, those of the counts accumulated one by one."""
    r = np.random.default_rng(5)
    o = r.integers(0, 4, size=(3000, 17))
    v = np.exp(r.normal(size=3000))
    v[::97] = np.inf                                       # invalid orderings are left out
    w = mv.fit_surrogate_rows(o, v, 4)
    ok = np.isfinite(v)
    m, n = o[ok].shape
    d = n * 4 + 1
    idx = np.hstack([np.arange(n) * 4 + o[ok], np.full((m, 1), n * 4)])
    a = np.zeros((d, d))
    for row in idx:
        a[np.ix_(row, row)] += 1.0
    b = np.bincount(idx.ravel(), weights=np.repeat(np.log(v[ok]), n + 1), minlength=d)
    want = np.linalg.solve(a + mv.SURROGATE_RIDGE * np.eye(d), b)[:-1].reshape(n, 4)
    assert np.array_equal(w, want)
