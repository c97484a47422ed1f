"""The rounds of a grid pruned by bound (`sweep.search.grid`), with the tasks of later rounds run
ahead while a round's last tasks finish.

A round's decision (which of its designs are mapped, which pruned) is a function of the figures
of the designs mapped in earlier rounds (`sweep.search.bounds.dominated`). Waiting for a round to
end before starting the next left a worker idle whenever a round had fewer long tasks than
workers: on the bundled Llama-3-8B grid 230 of its 817 rounds map anything (the others hold only
pruned designs and designs whose steps fit no DRAM) and a worker was busy 72% of the rounds' time.

A later round's decision is often known already. Take round j while rounds fin .. j - 1 are not
finished (all before fin are):

* a design of round j dominated by the figures of the designs mapped before fin is pruned whatever
  rounds fin .. j - 1 give (more mapped designs only prune more);
* a design *not* dominated even if every design those rounds map had its lower bound as its figure
  is mapped whatever they give (a figure is never below its bound, and `dominated` prunes less when
  the mapped figures are higher or missing).

When every design of round j is one or the other, its tasks are those the finished rounds would
give (`_tasks` of the same designs): they start at once. Every round is still finished in order
with the decision taken on the actual figures, which must equal the one taken ahead (an internal
error otherwise), so what is mapped, pruned and stored is what the rounds one after the other give.
`Rounds` is the iterator of tasks `sweep.engine.executor.Executor.imap` reads (`Later` when no
round can be decided until a task finishes) and takes each result (`Rounds.take`).
"""

from __future__ import annotations

import time
from collections import deque

import numpy as np

from sweep.engine.executor import Later
from sweep.search.bounds import dominated

__all__ = ["Rounds", "LOOKAHEAD"]

#: Rounds decided at most ahead of the first unfinished one.
LOOKAHEAD = 32


class Rounds:
    """The rounds of a pruned grid as one stream of tasks (module docstring).

    Args:
        rounds: each round's design indices, in priority order.
        lower, area: the designs' bounds (n, dims) and areas (`sweep.search.bounds.DesignBounds`).
        tasks_of: ``tasks_of(keep)``: the `DesignTask` s of a round that maps the designs ``keep``
            (indices in priority order).
        stored_tasks: task ids stored before this run (not run again).
        finish: ``finish(j, beaten, tasks, results)``: round j is decided on the figures of the
            rounds before it (``beaten``: one bool per design of the round) and every task of it
            has a result (``results``: task id -> (task, tables, error) of the tasks run by this
            run); it stores the round and returns the indices of the designs it mapped, whose
            figures `figures` then holds.
        figures: (n, dims) array the caller fills with the mapped designs' figures (NaN where none).
    """

    def __init__(self, rounds, lower, area, tasks_of, stored_tasks, finish, figures):
        self.rounds, self.lower, self.area = rounds, lower, area
        self.tasks_of, self.stored_tasks, self.finish_round = tasks_of, stored_tasks, finish
        self.fig = figures
        self.mapped = np.zeros(len(area), dtype=bool)   # mapped in a finished round
        self.fin = 0                                   # rounds finished
        self.ahead = 0                                 # rounds decided (>= fin)
        self.keeps: list[list[int]] = []               # each decided round's mapped designs
        self.task_ids: list[list[str]] = []            # each decided round's task ids
        self.queue: deque = deque()
        self.results: dict[str, tuple] = {}            # results of tasks whose round is not finished
        self.in_flight = 0
        self.decide_s = 0.0

    def __iter__(self) -> "Rounds":
        return self

    def __next__(self):
        while True:
            self._finish_ready()
            if self.queue:
                self.in_flight += 1
                return self.queue.popleft()
            if self.ahead >= len(self.rounds):
                raise StopIteration
            if not self._decide(self.ahead):
                if self.in_flight == 0:   # every earlier round finished: it is decidable
                    raise RuntimeError(f"pruned grid: round {self.ahead} undecided with nothing running")
                raise Later

    def take(self, task, tables, error) -> None:
        """A task's result (in any order); the rounds it completes are finished (`finish`)."""
        self.in_flight -= 1
        self.results[task.task_id] = (task, tables, error)
        self._finish_ready()

    def done(self) -> bool:
        """Every round finished."""
        self._finish_ready()
        return self.fin == len(self.rounds)

    def unfinished_results(self) -> dict[str, tuple]:
        """The results held for rounds not finished (to store on an interruption: complete tasks)."""
        out, self.results = self.results, {}
        return out

    def _beaten(self, j: int) -> np.ndarray:
        idx = self.rounds[j]
        m = np.flatnonzero(self.mapped)
        return dominated(self.lower[idx], self.area[idx], self.fig[m], self.area[m])

    def _decide(self, j: int) -> bool:
        """Decide round j (exactly if every round before it is finished, else only if the module
        docstring's two tests settle every design) and queue its tasks; False if it cannot be."""
        t0 = time.perf_counter()
        try:
            idx = self.rounds[j]
            if j == self.fin:
                keep = [int(i) for i, x in zip(idx, self._beaten(j)) if not x]
            elif j - self.fin > LOOKAHEAD:
                return False
            else:
                keep = self._certain(j)
                if keep is None:
                    return False
            tasks = self.tasks_of(keep)
            self.keeps.append(keep)
            self.task_ids.append([t.task_id for t in tasks])
            self.queue.extend(t for t in tasks if t.task_id not in self.stored_tasks)
            self.ahead += 1
            return True
        finally:
            self.decide_s += time.perf_counter() - t0

    def _certain(self, j: int) -> list[int] | None:
        """Round j's mapped designs if the module docstring's tests settle each design, else None."""
        idx = self.rounds[j]
        m = np.flatnonzero(self.mapped)
        pruned = dominated(self.lower[idx], self.area[idx], self.fig[m], self.area[m])
        later = np.array([i for k in range(self.fin, j) for i in self.keeps[k]], dtype=np.int64)
        opt = np.concatenate([m, later])
        opt_fig = np.vstack([self.fig[m], self.lower[later]])
        kept = ~dominated(self.lower[idx], self.area[idx], opt_fig, self.area[opt])
        if not (pruned | kept).all():
            return None
        return [int(i) for i, x in zip(idx, kept) if x]

    def _finish_ready(self) -> None:
        """Finish, in order, the decided rounds whose every task has a result."""
        while self.fin < self.ahead and all(t in self.stored_tasks or t in self.results
                                            for t in self.task_ids[self.fin]):
            j = self.fin
            beaten = self._beaten(j)
            keep = [int(i) for i, x in zip(self.rounds[j], beaten) if not x]
            if keep != self.keeps[j]:
                raise RuntimeError(f"pruned grid: round {j} decided ahead as mapping {self.keeps[j]}, "
                                   f"on the figures {keep}")
            results = {t: self.results.pop(t) for t in self.task_ids[j] if t in self.results}
            for i in self.finish_round(j, beaten, self.task_ids[j], results):
                self.mapped[i] = True
            self.fin += 1
