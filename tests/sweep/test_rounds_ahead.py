"""The rounds of a pruned grid with later rounds started ahead (`sweep.search.rounds`): driven as a
cluster drives them (several tasks in flight, results back in any order), the rounds finish in order
with the decisions of the rounds run one after the other (the oracle: each round decided on the
figures of every earlier round, `dominated` directly), and some rounds do start ahead."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from sweep.engine.executor import Later
from sweep.search.bounds import dominated
from sweep.search.rounds import Rounds


@dataclass(frozen=True)
class _Task:
    task_id: str
    designs: tuple


def _problem(seed: int, n: int = 240, dims: int = 3):
    """Bounds, areas and figures (each figure its bound times 1 to 1.6; some designs without one)."""
    r = np.random.default_rng(seed)
    area = r.uniform(1, 100, n)
    lower = r.uniform(1, 10, (n, dims)) * (1 + 2 / area[:, None])
    lower[r.random(n) < 0.1] = np.nan
    fig = lower * r.uniform(1.0, 1.6, (n, dims))
    fig[r.random(n) < 0.05] = np.nan        # mapped, but a step did not fit: no figure
    order = np.argsort(lower[:, 0] * area, kind="stable")
    return lower, area, fig, [order[s:s + 6] for s in range(0, n, 6)]


def _oracle(lower, area, fig, rounds):
    """Each round's mapped designs, the rounds one after the other."""
    mapped = np.zeros(len(area), dtype=bool)
    out = []
    for idx in rounds:
        m = np.flatnonzero(mapped)
        keep = [int(i) for i, x in zip(idx, dominated(lower[idx], area[idx], fig[m], area[m])) if not x]
        out.append(keep)
        mapped[keep] = True
    return out


def _drive(lower, area, fig, rounds, in_flight: int, seed: int):
    """Run the rounds with up to ``in_flight`` tasks pending, finishing a random pending one each time."""
    r = np.random.default_rng(seed)
    known = np.full_like(lower, np.nan)
    finished, started_ahead = [], []

    def finish(j, beaten, task_ids, results):
        assert set(results) == set(task_ids)
        keep = [int(i) for i, x in zip(rounds[j], beaten) if not x]
        known[keep] = fig[keep]
        finished.append((j, keep))
        return keep

    def tasks_of(keep):
        return [_Task(f"t{i}", (i,)) for i in keep]

    plan = Rounds(rounds, lower, area, tasks_of, set(), finish, known)
    pending: list = []
    exhausted = False
    while True:
        while not exhausted and len(pending) < in_flight:
            try:
                t = next(plan)
            except StopIteration:
                exhausted = True
                break
            except Later:
                break
            started_ahead.append(plan.ahead - 1 > plan.fin)
            pending.append(t)
        if not pending:
            break
        t = pending.pop(int(r.integers(len(pending))))
        plan.take(t, {}, None)
    assert plan.done()
    return finished, started_ahead


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("in_flight", [1, 3, 8])
def test_rounds_finish_in_order_with_the_sequential_decisions(seed, in_flight):
    lower, area, fig, rounds = _problem(seed)
    want = _oracle(lower, area, fig, rounds)
    finished, ahead = _drive(lower, area, fig, rounds, in_flight, seed)
    assert [j for j, _ in finished] == list(range(len(rounds)))
    assert [k for _, k in finished] == want
    if in_flight == 1:
        assert not any(ahead)        # one at a time: every round decided on finished rounds
    else:
        assert any(ahead)            # some round's tasks started while an earlier one ran


def test_a_round_decided_ahead_is_checked_against_the_figures():
    """Were the rule unsound (a figure below its bound), the decision taken ahead would differ from
    the figures' and the run stops instead of storing another grid's rows."""
    lower, area, fig, rounds = _problem(0)
    with pytest.raises(RuntimeError, match="decided ahead"):
        _drive(lower, area, lower * 0.5, rounds, 8, 0)   # figures below the bounds
