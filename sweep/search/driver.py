"""Architecture search with an Optuna study (``[search] sampler = "tpe" | "nsga2"``).

Each trial is one design: Optuna suggests every grid parameter as a categorical over its axis
values (the ``dataflow`` axis over its names) (`optuna.samplers.TPESampler` or `NSGAIISampler`, seeded with ``search.seed``). A suggested
point that is not a valid design of the `DesignSpace` (an invalid combination, a failed
constraint, outside the area window) is told as infeasible (an Optuna constraint > 0, values
+inf) without mapping anything; a design evaluated before (in this run or a stored one) is told
its stored figures; a new design is mapped as one `sweep.engine.design_tasks.DesignTask` (a Ray
task, or in-process) and its rows stored exactly as a grid search stores them. So the result
directory has the same tables as a grid search, over the designs the study visited.

Budget: ``search.trials`` is the number of distinct valid designs to evaluate (what costs: each
is a design's layer mappings). A point outside the space or a design seen before costs nothing
and does not count; the search also stops after ``MAX_ASKED x trials`` asked points.

Rounds: ``search.batch`` trials are asked, their new designs run in parallel, then all are told
in trial order. Given the seed and the batch, the study (its trials and values) is the same with
the Ray and the in-process executor and whatever order tasks finish in.

Persistence and resume: the study lives in ``OUT/study.journal`` (Optuna's `JournalStorage`).
``--resume`` loads it and asks trials until ``search.trials`` distinct designs are evaluated; the sampler
is then seeded with ``search.seed + trials already in the study`` (so a resumed study does not
repeat its first random trials, and is not bit-identical to an uninterrupted one). A killed run
loses at most its round in flight; trials left RUNNING are marked FAIL on resume and do not count.

The value of a design for an objective (`sweep.campaigns.designspace.SEARCH_OBJECTIVES`): its
``area_mm2``, or the geometric mean over the campaign's networks of its network totals.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from sweep.engine.design_tasks import make_task
from sweep.engine.executor import Executor
from sweep.engine.store import Store, code_version
from sweep.engine.tasks import error_table, execute

__all__ = ["run_search", "design_value", "make_sampler", "suggest", "tell", "JOURNAL", "MAX_ASKED"]

JOURNAL = "study.journal"
#: A search stops after asking this many times ``search.trials`` points, even if fewer distinct
#: designs were evaluated (a sampler stuck on invalid points or on designs it has seen).
MAX_ASKED = 10


def design_value(totals: list[dict], objective: str) -> float:
    """The value of a design for ``objective`` from its per-network totals (dicts with
    ``area_mm2``, ``energy_pj``, ``latency_cycles``, ``edp``): area, or the geometric mean over the
    networks; NaN if a network failed."""
    if objective == "area_mm2":
        return float(totals[0]["area_mm2"])
    vals = np.asarray([t[objective] for t in totals], dtype=np.float64)
    if not np.all(np.isfinite(vals)) or np.any(vals <= 0):
        return math.nan
    return float(np.exp(np.mean(np.log(vals))))


def _quiet_optuna():
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def make_sampler(search, seed: int):
    """The Optuna sampler of a `SearchSpec` (``tpe``: multivariate TPE; ``nsga2``: NSGA-II with a
    population of max(8, 2 x batch)), seeded with ``seed``; infeasible trials carry a constraint."""
    optuna = _quiet_optuna()
    legacy = not hasattr(optuna.trial.Trial, "set_constraint")
    kw = {"constraints_func": _constraint_attr} if legacy else {}
    if search.sampler == "tpe":
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, **kw)
    return optuna.samplers.NSGAIISampler(seed=seed, population_size=max(8, search.batch * 2), **kw)


def suggest(trial, space) -> list:
    """The grid point a trial asks: every parameter of ``space`` as a categorical over its axis."""
    return [trial.suggest_categorical(n, list(space.axes[n])) for n in space.names]


def _open_study(campaign, out: Path):
    optuna = _quiet_optuna()
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    s = campaign.search
    storage = JournalStorage(JournalFileBackend(str(out / JOURNAL)))
    directions = ["minimize"] * len(s.objectives)
    probe = optuna.create_study(storage=storage, study_name=campaign.name, load_if_exists=True,
                                directions=directions)
    sampler = make_sampler(s, s.seed + len(probe.trials))
    return optuna.load_study(study_name=campaign.name, storage=storage, sampler=sampler)


def _constraint_attr(trial) -> tuple[float]:
    """Optuna < 5: the constraint a trial recorded as a user attribute."""
    return tuple(trial.user_attrs.get("constraint", (0.0,)))


def _set_feasible(trial, feasible: bool) -> None:
    v = 0.0 if feasible else 1.0
    if hasattr(trial, "set_constraint"):
        trial.set_constraint("valid_design", v)
    else:  # pragma: no cover - Optuna < 5
        trial.set_user_attr("constraint", (v,))


def _stored_totals(store: Store) -> dict[str, list[dict]]:
    """design_id -> its per-network totals, from the stored ``totals`` table."""
    if not store.fragments("totals"):
        return {}
    df = store.read("totals")
    out: dict[str, list[dict]] = {}
    for rec in df.to_dict("records"):
        out.setdefault(rec["design_id"], []).append(rec)
    return out


def _fail_running(study) -> None:
    import optuna
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        try:
            study.tell(t.number, state=optuna.trial.TrialState.FAIL)
        except (ValueError, RuntimeError):  # told by another driver meanwhile
            pass


def run_search(campaign, summary, *, resume: bool, executor: str, address: str | None,
               progress: Callable[[int, int], None] | None, flush: Callable[[list], None]) -> None:
    """Run the Optuna search of ``campaign`` (module docstring) into its output directory, whose
    store the caller (`sweep.engine.runner.run_campaign`) has created. Finished trials are
    counted in ``summary`` (tasks_run / tasks_skipped: designs mapped / already stored);
    ``flush(batch)`` stores a list of (task_id, tables) pairs.

    Raises:
        KeyboardInterrupt: Ctrl-C / SIGTERM; the study and the stored designs stay resumable.
    """
    import optuna
    out = Path(campaign.output)
    store = Store(out)
    space = campaign.architectures
    s = campaign.search
    study = _open_study(campaign, out)
    if resume:
        _fail_running(study)
    known = _stored_totals(store)
    told = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,
                                                                 optuna.trial.TrialState.FAIL))
            if "design_id" in t.user_attrs]
    asked = len(told)
    designs = {t.user_attrs["design_id"] for t in told if t.user_attrs["design_id"]}
    if progress:
        progress(len(designs), s.trials)
    with Executor(executor, address, campaign.run.num_cpus, campaign.run.max_in_flight,
                  campaign.run.max_retries) as ex:
        summary.executor_start_s = 0.0
        while len(designs) < s.trials and asked < MAX_ASKED * s.trials:
            trials = [study.ask() for _ in range(min(s.batch, s.trials - len(designs)))]
            points = [suggest(t, space) for t in trials]
            idx = [space.index_of(p) for p in points]
            new = sorted({i for i in idx if i is not None and space.design_id(space.point(i)) not in known})
            tasks = [make_task(campaign, [i]) for i in new]
            batch = []
            for task, tables, error in ex.imap(execute, tasks):
                if error is not None:
                    tables = {"rows": error_table(task, f"{type(error).__name__}: {error}")}
                batch.append((task.task_id, tables))
                if "totals" in tables:
                    for rec in tables["totals"].to_pylist():
                        known.setdefault(rec["design_id"], []).append(rec)
                summary.tasks_run += 1
            flush(batch)
            summary.tasks_skipped += sum(1 for i in idx if i is not None) - len(new)
            for t, i in zip(trials, idx):
                tell(study, t, space, known, i, s.objectives)
                if i is not None:
                    designs.add(space.design_id(space.point(i)))
            asked += len(trials)
            if progress:
                progress(len(designs), s.trials)


def tell(study, trial, space, known: dict, i: int | None, objectives) -> None:
    """Tell ``trial`` the values of valid design ``i`` from its per-network totals in ``known``
    (design_id -> list of dicts), infeasible if ``i`` is None, FAIL if a network failed."""
    import optuna
    if i is None:
        _set_feasible(trial, False)
        trial.set_user_attr("design_id", None)
        study.tell(trial, [math.inf] * len(objectives))
        return
    did = space.design_id(space.point(i))
    totals = known.get(did)
    trial.set_user_attr("design_id", did)
    vals = [design_value(totals, o) for o in objectives] if totals else [math.nan]
    if any(not math.isfinite(v) for v in vals):
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
        return
    _set_feasible(trial, True)
    study.tell(trial, vals)
