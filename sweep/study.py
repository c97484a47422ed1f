"""The one Optuna study driver: storage, seeding, samplers, crash recovery, and the batched
ask -> run on the `Executor` -> tell loop that architecture search (`sweep.search.driver`) and
`sweep tune` (`sweep.tune.driver`) run as two objectives. No other library module imports optuna.

Samplers
--------
`SAMPLERS` is the one registry of sampler names: which campaign kinds accept each
(``archsearch``'s ``[search] sampler``, ``tune``'s ``[sampler] name``), whether it runs an Optuna
study there (``grid`` and archsearch's ``random`` are enumerations the engine does itself), and
whether it takes several objectives. Campaign validation, the CLI, the runner and the task counts
ask it (`sampler_names`, `runs_study`); `make_sampler` builds the Optuna sampler.

Storage and seeding
-------------------
A study lives in ``OUT/study.journal`` (`JOURNAL`: Optuna's `JournalStorage` with a
`JournalFileBackend`, file-locked appends), or in an RDB at a given storage URL. Its sampler is
seeded with ``seed + number of trials in the study`` when no checkpoint applies (so a fresh study
starts from ``seed``), else restored from the checkpoint (below).

Orphaned trials: the one rule
-----------------------------
Every trial carries the id of the driver that runs it (user attribute ``driver``); a driver keeps
a heartbeat file ``OUT/drivers/<id>.json``. A RUNNING trial whose driver's process is gone (same
host) or whose heartbeat is older than `STALE_S` is an **orphan** of a killed driver.

After asking a round of trials (their parameters all suggested) and before running it, a driver
writes the checkpoint ``OUT/study.sampler`` (`CHECKPOINT`, written atomically): the pickled sampler
(Optuna's way to resume a seeded sampler exactly, see its FAQ "How can I save and resume studies?")
and, for every trial in flight, how far it got (its step: the layers a tuning trial has done; 0 for a
design). A driver that opens a study whose checkpoint was written by a driver no longer alive takes
that sampler, and

* **an orphan listed in the checkpoint is finished in place**: adopted under its own number, with
  the parameters it has, and run on from the step it reached (a trial the killed driver had
  already advanced in its last round joins from the next round, so results are processed in the
  same order as without the kill); since evaluations are deterministic, it is told what it would
  have been told;
* **any other orphan** (asked after the last checkpoint, i.e. the driver died while asking, or
  of another driver sharing the study) is failed and its parameters, if it has any, enqueued
  again (`Study.enqueue_trial`), so no asked point is lost and no trial counts twice.

The checkpoint is a pickle, as Optuna's recipe has it: resume only output directories you trust.

So a study killed (SIGKILL, Ctrl-C, SIGTERM) while its trials run resumes to the study an
uninterrupted run gives: the same trial numbers, parameters, values and best trial. Ctrl-C and
SIGTERM leave the driver's trials RUNNING for that reason. The second branch is the exception:
a kill inside the few milliseconds of asking leaves FAIL trials behind and the rest of the study
may differ; several drivers on one study are never bit-reproducible.

The loop
--------
`StudyDriver.run` alternates rounds: ask ``objective.room()`` new trials (each suggested by
``objective.suggest``), write the checkpoint, run the round's work for every trial in flight on the
executor (``objective.run``), then hand the results to ``objective.advance`` in trial-number order
(report, prune, tell). Results are processed in a fixed order, so the study is the same whichever
executor ran the work and in whatever order tasks finished. See `Objective`.
"""

from __future__ import annotations

import json
import os
import io
import pickle
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol

__all__ = ["SAMPLERS", "SamplerInfo", "sampler_names", "runs_study", "make_sampler", "make_pruner",
           "set_feasible", "quiet_optuna", "open_study", "load_study", "StudyDriver", "Objective",
           "Active", "TrialState", "counts", "best_trial", "trials_of", "JOURNAL", "CHECKPOINT",
           "DRIVERS", "STALE_S"]

JOURNAL = "study.journal"
CHECKPOINT = "study.sampler"
DRIVERS = "drivers"
#: Seconds after which a RUNNING trial whose driver has not beaten its heartbeat is an orphan.
STALE_S = 120.0


# -- samplers ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SamplerInfo:
    """A sampler name: the campaign kinds that accept it (``uses``), those where it runs an Optuna
    study (``study_in``; elsewhere the engine enumerates the points itself), the Optuna class it
    builds (None: never a study), and whether it takes two objectives."""

    name: str
    uses: tuple[str, ...]
    study_in: tuple[str, ...]
    optuna_class: str | None
    multi_objective: bool
    help: str


SAMPLERS: dict[str, SamplerInfo] = {s.name: s for s in (
    SamplerInfo("grid", ("archsearch",), (), None, True, "every valid design, in order"),
    SamplerInfo("random", ("archsearch", "tune"), ("tune",), "RandomSampler", True,
                "archsearch: `trials` valid designs drawn without replacement; tune: Optuna's RandomSampler"),
    SamplerInfo("tpe", ("archsearch", "tune"), ("archsearch", "tune"), "TPESampler", True,
                "Optuna's tree-structured Parzen estimator"),
    SamplerInfo("nsga2", ("archsearch",), ("archsearch",), "NSGAIISampler", True, "Optuna's NSGA-II"),
    SamplerInfo("cmaes", ("tune",), ("tune",), "CmaEsSampler", False, "Optuna's CMA-ES"),
)}


def sampler_names(kind: str) -> tuple[str, ...]:
    """The sampler names a campaign of ``kind`` ("archsearch" | "tune") accepts, in `SAMPLERS` order."""
    return tuple(n for n, s in SAMPLERS.items() if kind in s.uses)


def runs_study(name: str, kind: str) -> bool:
    """True if sampler ``name`` in a campaign of ``kind`` is driven by an Optuna study."""
    s = SAMPLERS.get(name)
    return s is not None and kind in s.study_in


def quiet_optuna():
    """The optuna module, its logging set to warnings only."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def make_sampler(name: str, seed: int, *, constrained: bool = False, **options: Any):
    """The Optuna sampler ``name`` of `SAMPLERS` seeded with ``seed``, with the sampler's own
    keyword ``options`` (e.g. ``multivariate``, ``population_size``, ``n_startup_trials``).
    ``constrained``: trials may be infeasible (`set_feasible`); Optuna < 5 reads that through a
    ``constraints_func``.

    Raises:
        ValueError: ``name`` is not an Optuna sampler of `SAMPLERS`.
    """
    info = SAMPLERS.get(name)
    if info is None or info.optuna_class is None:
        raise ValueError(f"sampler = {name!r}: not an Optuna sampler; expected one of "
                         f"{[n for n, s in SAMPLERS.items() if s.optuna_class]}")
    optuna = quiet_optuna()
    if constrained and not hasattr(optuna.trial.Trial, "set_constraint"):  # pragma: no cover - Optuna < 5
        options["constraints_func"] = _constraint_attr
    return getattr(optuna.samplers, info.optuna_class)(seed=seed, **options)


def make_pruner(name: str, **options: Any):
    """Optuna's pruner: ``median`` (`MedianPruner` with ``options``) or ``none``."""
    optuna = quiet_optuna()
    return optuna.pruners.MedianPruner(**options) if name == "median" else optuna.pruners.NopPruner()


def _constraint_attr(trial) -> tuple[float]:
    """Optuna < 5: the constraint a trial recorded as a user attribute."""
    return tuple(trial.user_attrs.get("constraint", (0.0,)))


def set_feasible(trial, feasible: bool) -> None:
    """Record whether ``trial`` is feasible (an Optuna constraint: 0 feasible, 1 not)."""
    v = 0.0 if feasible else 1.0
    if hasattr(trial, "set_constraint"):
        trial.set_constraint("valid_design", v)
    else:  # pragma: no cover - Optuna < 5
        trial.set_user_attr("constraint", (v,))


class _States:
    """Optuna's `TrialState`, imported on first use (campaign parsing never imports optuna)."""

    def __getattr__(self, name: str):
        from optuna.trial import TrialState as S
        return getattr(S, name)


TrialState = _States()


# -- storage ----------------------------------------------------------------------------------------
def _storage(out: Path, url: str | None):
    if url:
        return url
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    return JournalStorage(JournalFileBackend(str(Path(out) / JOURNAL)))


def load_study(out: str | Path, name: str, storage: str | None = None):
    """The study ``name`` of an output directory, to read (no sampler state is touched)."""
    optuna = quiet_optuna()
    return optuna.load_study(study_name=name, storage=_storage(Path(out), storage))


def _read_checkpoint(out: Path, name: str) -> dict | None:
    """The checkpoint of study ``name`` in ``out`` if the driver that wrote it is gone, else None."""
    try:
        ck = pickle.loads((out / CHECKPOINT).read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None
    if not isinstance(ck, dict) or ck.get("study") != name or _driver_alive(out, ck.get("driver")):
        return None
    return ck


def open_study(out: str | Path, name: str, n_objectives: int, sampler: str, seed: int,
               options: Mapping[str, Any] | None = None, *, storage: str | None = None,
               pruner=None, seed_offset: int | None = None, checkpoint: dict | None = None):
    """Create or load study ``name`` (journal in ``out`` unless ``storage`` is an RDB URL), all
    objectives minimised. Its sampler: the ``checkpoint``'s if given, else ``sampler`` seeded with
    ``(seed + seed_offset) mod 2**32`` (default offset: the number of trials in the study; the
    modulus keeps a seed near the top of the allowed range inside numpy's), with ``options``
    (`make_sampler`)."""
    optuna = quiet_optuna()
    st = _storage(Path(out), storage)
    probe = optuna.create_study(storage=st, study_name=name, load_if_exists=True,
                                directions=["minimize"] * n_objectives)
    if checkpoint is not None:
        smp = checkpoint["sampler"]
    else:
        n = len(probe.trials) if seed_offset is None else seed_offset
        smp = make_sampler(sampler, (int(seed) + n) % 2**32, **dict(options or {}))  # (numpy's seed range)
    return optuna.load_study(study_name=name, storage=st, sampler=smp, pruner=pruner)


# -- drivers and their heartbeats --------------------------------------------------------------------
class _Heartbeat:
    """A driver's id and heartbeat file ``OUT/drivers/<id>.json`` (host, pid, time)."""

    def __init__(self, out: Path):
        self.id = uuid.uuid4().hex[:12]
        self.dir = out / DRIVERS
        self.path = self.dir / f"{self.id}.json"
        self.last = 0.0

    def __call__(self, force: bool = False) -> None:
        now = time.time()
        if force or now - self.last > 5:
            self.dir.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "time": now}))
            os.replace(tmp, self.path)
            self.last = now

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _driver_alive(out: Path, driver: str | None) -> bool:
    if not driver:
        return False
    try:
        hb = json.loads((out / DRIVERS / f"{driver}.json").read_text())
    except (OSError, ValueError):
        return False
    if time.time() - float(hb.get("time", 0)) > STALE_S:
        return False
    if hb.get("host") == socket.gethostname():
        try:
            os.kill(int(hb["pid"]), 0)
        except ProcessLookupError:
            return False
        except (PermissionError, OSError, ValueError, KeyError):
            return True
    return True


@dataclass
class Active:
    """A trial in flight: the Optuna `Trial` and what the objective keeps about it (``state``)."""

    trial: Any
    state: Any = None
    step: int = 0


class Objective(Protocol):
    """What `StudyDriver.run` asks of a search. Called in this order every round: `room` (how many
    new trials to ask now; it may also beat a heartbeat and report progress), `suggest` for each
    new trial, `step` for the checkpoint, `run` once for all trials in flight, `advance` for each
    in trial-number order; `done` when nothing is in flight and `room` is 0 (False: other
    drivers' trials are running; wait). `restore` rebuilds an adopted orphan's state."""

    def room(self, study, active: list[Active]) -> int: ...
    def done(self, study) -> bool: ...
    def suggest(self, trial) -> Any: ...
    def restore(self, trial) -> tuple[Any, int]: ...   # (state, step) of an orphan's FrozenTrial
    def step(self, a: Active) -> int: ...
    def run(self, active: list[Active]) -> list: ...
    def advance(self, study, a: Active, result) -> Any: ...


@dataclass
class StudyDriver:
    """One driver of a study (module docstring): opens it, recovers orphans (`requeued` failed and
    enqueued again, `adopted` to finish in place), and runs an `Objective` (`run`). Call `close`
    at the end (or use it as a context manager): it removes the heartbeat, so that trials it leaves
    RUNNING (Ctrl-C, SIGTERM) are orphans for the next driver at once."""

    out: Path
    name: str
    n_objectives: int
    sampler: str
    seed: int
    options: Mapping[str, Any] = field(default_factory=dict)
    storage: str | None = None
    pruner: Any = None
    study: Any = field(init=False)
    beat: _Heartbeat = field(init=False)
    adopted: list[tuple[Active, Any]] = field(init=False, default_factory=list)
    requeued: int = field(init=False, default=0)
    in_flight: list[Active] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        self.beat = _Heartbeat(self.out)
        self.beat(force=True)
        (self.out / ".gitignore").write_text(f"{DRIVERS}/\n")
        ck = _read_checkpoint(self.out, self.name)
        self.study = open_study(self.out, self.name, self.n_objectives, self.sampler, self.seed, self.options,
                                storage=self.storage, pruner=self.pruner, checkpoint=ck)
        self._recover((ck or {}).get("steps", {}))

    def __enter__(self) -> "StudyDriver":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.beat.remove()

    @property
    def id(self) -> str:
        return self.beat.id

    def _recover(self, steps: Mapping[int, int]) -> None:
        """The one orphan rule (module docstring): orphans the checkpoint lists are kept to adopt
        (`run` finishes them); others are failed and their parameters enqueued again."""
        optuna = quiet_optuna()
        orphans = [t for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
                   if not _driver_alive(self.out, t.user_attrs.get("driver"))]
        keep = [t for t in orphans if t.number in steps]
        for t in orphans:
            if t.number in steps:
                continue
            try:
                self.study.tell(t.number, state=TrialState.FAIL, skip_if_finished=True)
            except Exception:  # noqa: BLE001 - another driver finished it meanwhile
                continue
            if t.params:
                keep_attrs = {k: v for k, v in t.user_attrs.items() if k == "explore"}  # why it was asked
                self.study.enqueue_trial(dict(t.params), user_attrs={"requeued_from": t.number, **keep_attrs})
            self.requeued += 1
        real = self.study.sampler   # a Trial object built for an orphan must not sample anything
        self.study.sampler = optuna.samplers.RandomSampler(seed=0)
        try:
            for t in keep:   # (FrozenTrial._trial_id: the storage's id, what Trial takes)
                tr = optuna.trial.Trial(self.study, t._trial_id)
                tr.set_user_attr("driver", self.id)
                self.adopted.append((Active(tr, None, int(steps[t.number])), t))
        finally:
            self.study.sampler = real

    def _checkpoint(self, active: list[Active], objective: Objective) -> None:
        """Write the sampler's state and the steps of the trials in flight (``CHECKPOINT``), aside
        and renamed: what a resumed driver reloads to draw the trials an undisturbed one draws."""
        data = {"study": self.name, "driver": self.id, "sampler": self.study.sampler,
                "steps": {a.trial.number: objective.step(a) for a in active}}
        tmp = self.out / f".{CHECKPOINT}.tmp"
        tmp.write_bytes(_pickled(data))
        os.replace(tmp, self.out / CHECKPOINT)

    def run(self, objective: Objective) -> None:
        """Run ``objective`` until it has no room and nothing is in flight, first finishing the
        adopted orphans. On KeyboardInterrupt the trials in flight (``self.in_flight``) stay
        RUNNING: the next driver adopts them."""
        self.in_flight = []
        held: list[Active] = []
        for a, frozen in self.adopted:   # orphans: those the killed driver advanced wait for the next round
            a.state, now = objective.restore(frozen)
            (held if now > a.step else self.in_flight).append(a)
            a.step = now
        self.adopted = []
        resumed = bool(self.in_flight)
        while True:
            if not resumed:
                self.in_flight += held
                held = []
                for _ in range(max(0, objective.room(self.study, self.in_flight))):
                    tr = self.study.ask()
                    tr.set_user_attr("driver", self.id)
                    self.in_flight.append(Active(tr, objective.suggest(tr)))
                if not self.in_flight:
                    if objective.done(self.study):
                        return
                    time.sleep(1.0)  # other drivers' trials are running
                    continue
                self._checkpoint(self.in_flight, objective)
            resumed = False
            results = objective.run(self.in_flight)
            for a, res in sorted(zip(list(self.in_flight), results), key=lambda x: x[0].trial.number):
                if objective.advance(self.study, a, res) is not None:
                    self.in_flight.remove(a)


def counts(study) -> dict[str, int]:
    """Trials of ``study`` by state name (COMPLETE, PRUNED, RUNNING, FAIL, WAITING)."""
    n: dict[str, int] = {}
    for t in study.get_trials(deepcopy=False):
        n[t.state.name] = n.get(t.state.name, 0) + 1
    return n


def best_trial(study, n_objectives: int):
    """The COMPLETE trial with the smallest first value (two objectives: among the Pareto-optimal
    ones), ties to the lowest number; None if no trial is complete."""
    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not done:
        return None
    pool = study.best_trials if n_objectives > 1 else done
    return min(pool, key=lambda t: (t.values[0], t.number))


def trials_of(study, *states: str) -> list:
    """The trials of ``study`` in the named states (all if none)."""
    st = tuple(getattr(TrialState, s) for s in states) or None
    return study.get_trials(deepcopy=False, states=st)



def param_importances(study, target=None) -> dict[str, float] | None:
    """Optuna's parameter importances (its default fANOVA evaluator) of the complete trials,
    parameter -> share; None with fewer than 2 complete trials or when Optuna cannot compute them
    (e.g. a single distinct value). ``target`` picks the value of a multi-objective study."""
    optuna = quiet_optuna()
    from optuna.trial import TrialState
    if len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))) < 2:
        return None
    try:
        return {k: float(v) for k, v in optuna.importance.get_param_importances(study, target=target).items()}
    except (RuntimeError, ValueError):
        return None


def plot_history(study, target=None, target_name: str = "Objective Value"):
    """Optuna's optimisation-history plot (matplotlib Axes) of ``study``."""
    import optuna.visualization.matplotlib as ovm
    return ovm.plot_optimization_history(study, target=target, target_name=target_name)


def plot_importances(study, target=None, target_name: str = "Objective Value"):
    """Optuna's parameter-importance plot (matplotlib Axes) of ``study``."""
    import optuna.visualization.matplotlib as ovm
    return ovm.plot_param_importances(study, target=target, target_name=target_name)


def history_figure(study, target=None, target_name: str = "Objective Value"):
    """Optuna's optimisation-history plot of ``study`` as a Plotly figure (needs Plotly): one
    marker per complete trial and the best value so far (`sweep report --html`)."""
    import optuna.visualization as ov
    return ov.plot_optimization_history(study, target=target, target_name=target_name)


def importances_figure(study, target=None, target_name: str = "Objective Value"):
    """Optuna's parameter-importance plot of ``study`` as a Plotly figure (needs Plotly; its
    default fANOVA evaluator, as `param_importances`)."""
    import optuna.visualization as ov
    return ov.plot_param_importances(study, target=target, target_name=target_name)


_LOCK = type(threading.Lock())


class _Pickler(pickle.Pickler):
    """Pickles a lock as a new, unlocked one: a lock guards a process's threads and means nothing
    in another process (Optuna 5.1's GA samplers, NSGA-II among them, hold a ``threading.Lock``)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, _LOCK):
            return threading.Lock, ()
        return NotImplemented


def _pickled(data: Any) -> bytes:
    """``data`` pickled with `_Pickler` (bytes)."""
    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(data)
    return buf.getvalue()
