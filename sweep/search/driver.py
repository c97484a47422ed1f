"""Architecture search with an Optuna study (``[search] sampler = "tpe" | "nsga2"``).

Each trial is one design: Optuna suggests every grid parameter as a categorical over its axis
values (the ``dataflow`` axis over its names) (`sweep.study.make_sampler`: TPE or NSGA-II, seeded with ``search.seed``). A suggested
point that is not a valid design of the `DesignSpace` (an invalid combination, a failed
constraint, outside the area window) is told as infeasible (an Optuna constraint > 0, values
+inf) without mapping anything; a design evaluated before (in this run or a stored one) is told
its stored figures; a new design is mapped as one `sweep.engine.design_tasks.DesignTask` (a Ray
task, or in-process) and its rows stored exactly as a grid search stores them. So the result
directory has the same tables as a grid search, over the designs the study visited.

Budget: ``search.trials`` is the number of distinct valid designs to evaluate (what costs: each
is a design's layer mappings). A point outside the space or a design seen before costs nothing
and does not count. When `REPEAT_SHARE` of its last `REPEAT_WINDOW` suggestions were such points,
the next trials are unvisited designs drawn uniformly (seeded by ``search.seed`` and the trials told)
and enqueued in the study, so the budget is spent on new designs and the sampler learns from them
(``summary.search["explored"]``, printed by ``sweep run`` with why); the rule reads the told trials
and the study's waiting ones only, so a resumed study draws what the undisturbed one does. The
search stops, and says why, after ``MAX_ASKED x trials`` asked points.

Rounds: ``search.batch`` trials are asked, their new designs run in parallel, then all are told
in trial order. Given the seed and the batch, the study (its trials and values) is the same with
the Ray and the in-process executor and whatever order tasks finish in.

Persistence and resume: the study is driven by `sweep.study.StudyDriver` (the journal
``OUT/study.journal``, the sampler's checkpoint, the one rule for orphaned trials: see
`sweep.study`). ``--resume`` loads it, finishes the round a killed run left RUNNING in place (its
designs, if already stored, are not mapped again) and asks trials until ``search.trials`` distinct
designs are evaluated: the same study as an uninterrupted run.

The value of a design for an objective (`sweep.config.designspace.SEARCH_OBJECTIVES`): its
``area_mm2``, or the geometric mean over the campaign's networks of its network totals.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Callable

import numpy as np

from sweep import study as st
from sweep.config.designspace import STEP_OBJECTIVES
from sweep.engine.design_tasks import make_task
from sweep.engine.executor import Executor
from sweep.engine.store import Store
from sweep.engine.tasks import error_table, execute

__all__ = ["run_search", "design_value", "make_sampler", "sampler_options", "suggest", "tell", "JOURNAL",
           "MAX_ASKED"]

JOURNAL = st.JOURNAL
#: A search stops after asking this many times ``search.trials`` points, even if fewer distinct
#: designs were evaluated (a sampler stuck on invalid points or on designs it has seen).
MAX_ASKED = 10
#: When at least this share of a search's last `REPEAT_WINDOW` (or 4 x ``search.batch`` if more)
#: asked points were designs already evaluated or invalid points, its next trials are unvisited
#: designs drawn uniformly and enqueued (Optuna's ``enqueue_trial``: the sampler learns from them)
#: until it suggests new designs again: the sampler has converged on what it knows, and asking
#: more only repeats it (NSGA-II on the bundled LLM search asked 1,385 repeats for 179 designs
#: before this rule; with a stop instead, it stopped at 58 of its 240 designs).
REPEAT_SHARE = 0.95
REPEAT_WINDOW = 80


def design_value(totals: list[dict], objective: str) -> float:
    """The value of a design for ``objective`` from its per-network totals (dicts with
    ``area_mm2``, ``energy_pj``, ``latency_cycles``, ``edp`` and, for transformer steps, the
    `sweep.engine.design_tasks.STEP_TOTALS`): area, or the geometric mean over the networks (a
    step objective: over the steps that have it, e.g. ``ttft_s`` over the prefill steps); NaN if
    a network failed."""
    if objective == "area_mm2":
        return float(totals[0]["area_mm2"])
    if objective in STEP_OBJECTIVES:  # over the steps that have the figure (a phase's steps)
        if any(t.get("status", "ok") != "ok" for t in totals):
            return math.nan
        totals = [t for t in totals if t.get(objective) is not None]
        if not totals:
            return math.nan
    vals = np.asarray([t[objective] for t in totals], dtype=np.float64)
    if not np.all(np.isfinite(vals)) or np.any(vals <= 0):
        return math.nan
    return float(np.exp(np.mean(np.log(vals))))


def sampler_options(search) -> dict:
    """The Optuna sampler's options for a `SearchSpec`: ``tpe``: multivariate TPE; ``nsga2``:
    NSGA-II with a population of max(8, 2 x batch); infeasible trials carry a constraint."""
    if search.sampler == "tpe":
        return {"multivariate": True, "constrained": True}
    return {"population_size": max(8, search.batch * 2), "constrained": True}


def make_sampler(search, seed: int):
    """The Optuna sampler of a `SearchSpec` (`sampler_options`), seeded with ``seed``."""
    return st.make_sampler(search.sampler, seed, **sampler_options(search))


def suggest(trial, space) -> list:
    """The grid point a trial asks: every parameter of ``space`` as a categorical over its axis."""
    return [trial.suggest_categorical(n, list(space.axes[n])) for n in space.names]


def _stored_totals(store: Store) -> dict[str, list[dict]]:
    """design_id -> its per-network totals, from the stored ``totals`` table."""
    if not store.fragments("totals"):
        return {}
    df = store.read("totals")
    out: dict[str, list[dict]] = {}
    for rec in df.to_dict("records"):
        out.setdefault(rec["design_id"], []).append(rec)
    return out


class _DesignObjective:
    """Architecture search as an objective of `sweep.study.StudyDriver`: a trial is a grid point;
    a round maps the new valid designs of its trials, one `DesignTask` each, stores them as one
    batch, then tells every trial its design's figures (`tell`)."""

    def __init__(self, campaign, summary, ex: Executor, known: dict, flush, progress, told: list):
        self.c, self.space, self.s = campaign, campaign.architectures, campaign.search
        self.summary, self.ex, self.known, self.flush, self.progress = summary, ex, known, flush, progress
        self.asked = len(told)
        self.designs: set = set()
        self.repeats: list[bool] = []   # per told trial, in trial order: a repeat or an invalid point
        for t in sorted(told, key=lambda t: t.number):
            self._count(t.user_attrs["design_id"])
        self.stopped = ""
        self.explored, self.why, self._ids = 0, "", None

    def _count(self, did) -> None:
        self.repeats.append(did is None or did in self.designs)
        if did:
            self.designs.add(did)

    def room(self, study, active) -> int:
        if self.progress:
            self.progress(len(self.designs), self.s.trials)
        if len(self.designs) >= self.s.trials:
            return 0
        window = max(REPEAT_WINDOW, 4 * self.s.batch)
        last = self.repeats[-window:]
        if self.asked >= MAX_ASKED * self.s.trials:
            if not self.stopped:
                self.stopped = (f"the {self.s.sampler} study stopped at {len(self.designs):,} of {self.s.trials:,} "
                                f"designs after {self.asked:,} suggestions ({MAX_ASKED} x trials; "
                                f"{sum(self.repeats):,} of them repeats or invalid points). For every design: "
                                "sampler = \"grid\" with prune = \"bound\"")
            return 0
        k = min(self.s.batch, self.s.trials - len(self.designs))
        if len(last) == window and sum(last) >= REPEAT_SHARE * window:
            self._explore(study, k, sum(last), window)
        return k

    def _explore(self, study, k: int, repeats: int, window: int) -> None:
        """The sampler keeps suggesting what it has seen: the next ``k`` trials are unvisited valid
        designs drawn uniformly (seeded by the search's seed and the trials told so far, so a resumed
        study draws the same), enqueued so the sampler learns from them (module docstring)."""
        waiting = len(study.get_trials(deepcopy=False, states=(st.TrialState.WAITING,)))
        if waiting >= k:   # enqueued before an interruption: asked first, as they would have been
            return
        if self._ids is None:
            self._ids = [self.space.design_id(self.space.point(i)) for i in range(len(self.space))]
        free = [i for i, d in enumerate(self._ids) if d not in self.designs]
        rng = np.random.default_rng([self.s.seed, len(self.repeats)])
        pick = rng.choice(len(free), size=min(k - waiting, len(free)), replace=False)
        for j in sorted(int(x) for x in pick):
            study.enqueue_trial(dict(zip(self.space.names, self.space.point(free[j]).values())),
                                user_attrs={"explore": True})
        self.explored += len(pick)
        self.why = (f"{repeats} of its last {window} suggestions were designs already evaluated or invalid "
                    f"points: {self.explored:,} unvisited designs drawn instead")

    def done(self, study) -> bool:
        return True

    def suggest(self, trial):
        return self.space.index_of(suggest(trial, self.space))

    def restore(self, ft) -> tuple[int | None, int]:
        return self.space.index_of([ft.params[n] for n in self.space.names]), 0

    def step(self, a) -> int:
        return 0

    def run(self, active) -> list:
        idx = [a.state for a in active]
        space, known = self.space, self.known
        new = sorted({i for i in idx if i is not None and space.design_id(space.point(i)) not in known})
        batch: list = []
        try:
            for task, tables, error in self.ex.imap(execute, [make_task(self.c, [i]) for i in new]):
                if error is not None:
                    tables = {"rows": error_table(task, f"{type(error).__name__}: {error}", kind="crash")}
                batch.append((task.task_id, tables))
                if "totals" in tables:
                    for rec in tables["totals"].to_pylist():
                        known.setdefault(rec["design_id"], []).append(rec)
        except KeyboardInterrupt:   # the designs mapped by then are stored; the round's trials stay
            self.flush(batch)       # RUNNING, and --resume finishes it without mapping them again
            self.summary.tasks_run += len(batch)
            raise
        self.flush(batch)
        self.summary.tasks_run += len(batch)
        self.summary.tasks_skipped += sum(1 for i in idx if i is not None) - len(new)
        return idx

    def advance(self, study, a, i):
        tell(study, a.trial, self.space, self.known, i, self.s.objectives)
        self._count(None if i is None else self.space.design_id(self.space.point(i)))
        self.asked += 1
        return a.trial


def run_search(campaign, summary, *, resume: bool, executor: str, address: str | None,
               progress: Callable[[int, int], None] | None, flush: Callable[[list], None]) -> None:
    """Run the Optuna search of ``campaign`` (module docstring) into its output directory, whose
    store the caller (`sweep.engine.runner.run_campaign`) has created. Finished trials are
    counted in ``summary`` (tasks_run / tasks_skipped: designs mapped / already stored);
    ``flush(batch)`` stores a list of (task_id, tables) pairs.

    Raises:
        KeyboardInterrupt: Ctrl-C / SIGTERM; the study and the stored designs stay resumable.
    """
    out = Path(campaign.output)
    s = campaign.search
    known = _stored_totals(Store(out))
    with st.StudyDriver(out, campaign.name, len(s.objectives), s.sampler, s.seed, sampler_options(s)) as drv:
        told = [t for t in st.trials_of(drv.study, "COMPLETE", "FAIL") if "design_id" in t.user_attrs]
        t_ex = time.perf_counter()
        with Executor(executor, address, campaign.run.num_cpus, campaign.run.max_in_flight,
                      campaign.run.max_retries, beat=drv.beat) as ex:
            summary.executor_start_s = time.perf_counter() - t_ex   # starting (or joining) Ray
            obj = _DesignObjective(campaign, summary, ex, known, flush, progress, told)
            obj.explored = explored(drv.study)   # by earlier sessions of a resumed study
            drv.run(obj)
            why = obj.why or (f"{obj.explored:,} unvisited designs drawn instead" if obj.explored else "")
            summary.search = {"designs": len(obj.designs), "trials": s.trials, "asked": obj.asked,
                              "repeats": sum(obj.repeats), "stopped": obj.stopped, "explored": obj.explored,
                              "why_explored": why}


def explored(study) -> int:
    """The unvisited designs a search's study has enqueued in place of repeats (`REPEAT_SHARE`), in
    any state, a trial enqueued again after an interruption counted once."""
    return sum(1 for t in study.get_trials(deepcopy=False)
               if t.user_attrs.get("explore") and "requeued_from" not in t.user_attrs)


def tell(study, trial, space, known: dict, i: int | None, objectives) -> None:
    """Tell ``trial`` the values of valid design ``i`` from its per-network totals in ``known``
    (design_id -> list of dicts), infeasible if ``i`` is None, FAIL if a network failed."""
    if i is None:
        st.set_feasible(trial, False)
        trial.set_user_attr("design_id", None)
        study.tell(trial, [math.inf] * len(objectives))
        return
    did = space.design_id(space.point(i))
    totals = known.get(did)
    trial.set_user_attr("design_id", did)
    vals = [design_value(totals, o) for o in objectives] if totals else [math.nan]
    if any(not math.isfinite(v) for v in vals):
        study.tell(trial, state=st.TrialState.FAIL)
        return
    st.set_feasible(trial, True)
    study.tell(trial, vals)
