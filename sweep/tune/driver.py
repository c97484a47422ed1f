"""`sweep tune`: an Optuna study over an annealer's schedule, trials evaluated as Ray tasks.

What a trial is
---------------
Optuna's ask/tell interface (`optuna.Study.ask` / `tell`): the driver asks for a schedule (the
campaign's ``[space]``), completes it to the mapper's parameters at the fixed budget
(`sweep.tune.objective.derive_params`), evaluates it layer by layer on the training layers (all seeds of
a layer in one task, `sweep.tune.objective.evaluate_layer`), and tells the mean relative gap over the
layers (and, for a two-objective study, the mean proposals to reach ``reach_gap``). After each
layer the running mean gap is reported as the intermediate value of step k (layer k in campaign
order), so Optuna's pruner (MedianPruner by default) can stop a hopeless trial after a few layers.

Scheduling: round-synchronous, deterministic
--------------------------------------------
At most ``parallel`` trials are in flight; each round runs the next layer of every in-flight trial
as one task each (so at most ``parallel`` Ray tasks are pending, collected with `ray.wait`), then
reports / prunes / tells in trial-number order, then fills free slots with new trials. Since
results are processed in a fixed order, the study (its trials, parameters and values) is the same
with the Ray and the in-process executor and whatever order tasks finish in. Trials of one
budget take about the same time, so the rounds cost little parallelism.

Persistence, resume, several drivers
------------------------------------
The study is driven by `sweep.study.StudyDriver`: the journal ``OUT/study.journal`` (or the RDB at
the campaign's ``storage`` URL), the sampler, seeding, and the one rule for orphaned trials (see
`sweep.study`: a killed driver's trials in flight are finished in place, from the layer they
reached, by the next driver, which takes the killed driver's sampler checkpoint; so a resumed
study is the study an uninterrupted run gives). Ctrl-C / SIGTERM leaves the driver's trials
RUNNING for the next driver, then exits 130. The driver stops when the study holds ``trials``
finished (COMPLETE + PRUNED) trials and asks a new one only while finished + RUNNING (all drivers)
< ``trials``, so several drivers sharing one study (``sweep tune C --out SAME --resume`` on each; on
one machine or a shared filesystem) end with exactly ``trials`` finished trials.

Outputs (``OUT``)
-----------------
``manifest.json`` (`sweep.engine.store.Store`, ``config.kind = "tune"``: `sweep report` recognises a
tuning directory by it); ``rows/part-*.parquet``: one row per finished trial (task_id
``trial-<number>``, written once; rebuilt from the study if a driver died between tell and write);
``references.parquet``: the reference optimum of every training and held-out layer, computed once
(`sweep.tune.objective.reference_plan`); ``best_params.toml``: the best schedule as a campaign snippet
(``[mappers.salsa]``; use it with ``params_file``); ``heldout.parquet``: tuned vs default schedule
on the held-out layers and seeds at the same budget.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mappers.annealing import RESERVED
from sweep import study as st
from sweep.common.errors import ExecutionError
from sweep.engine.executor import Executor, ordered
from sweep.engine.runner import Interrupted  # Ctrl-C / SIGTERM; ``.summary`` is a `TuneSummary` here
from sweep.engine.signals import sigterm_as_interrupt
from sweep.engine.store import Store
from sweep.config.tune_campaign import TuneCampaign

__all__ = ["TuneSummary", "run_tune", "open_study", "read_trials", "read_references",
           "write_best_params", "STALE_S", "Interrupted"]

STALE_S = st.STALE_S
JOURNAL = st.JOURNAL
REFERENCES = "references.parquet"
HELDOUT = "heldout.parquet"
BEST = "best_params.toml"


@dataclass
class TuneSummary:
    """What `run_tune` did: finished trials in the study by state, orphans recovered (adopted to
    finish in place, or failed and re-enqueued: `sweep.study`), trials run by this driver, seconds (total and for the reference optima), best trial, held-out summary."""

    output: str
    complete: int = 0
    pruned: int = 0
    failed: int = 0
    orphans: int = 0
    run_here: int = 0
    seconds: float = 0.0
    reference_s: float = 0.0
    best: dict = field(default_factory=dict)
    heldout: dict = field(default_factory=dict)


# -- tasks (module level: Ray pickles them by reference) ------------------------------------------
def _eval_task(mapper: str, spec: tuple, params: dict, seeds: list, reference: float, reach_gap: float) -> dict:
    from sweep.tune.objective import evaluate_layer, layer_problem
    return evaluate_layer(mapper, layer_problem(*spec), params, seeds, reference, reach_gap, spec[1]).to_dict()


def _ref_task(mapper: str, spec: tuple, params: dict, unit) -> tuple[float, float]:
    from sweep.tune.objective import layer_problem, run_reference_unit
    r = run_reference_unit(mapper, layer_problem(*spec), params, unit)
    return float(r.value), float(r.wall_s)


def _apply(call: tuple) -> Any:
    """``call[0](*call[1:])``: one call of a list of (function, *args) tuples (see `ordered`)."""
    fn, *args = call
    return fn(*args)


# -- study ------------------------------------------------------------------------------------------
def _sampler_options(c: TuneCampaign) -> dict[str, Any]:
    s = c.sampler
    if s["name"] == "tpe":
        return {"n_startup_trials": s.get("n_startup_trials", 10), "constant_liar": True}
    if s["name"] == "cmaes":
        return {"n_startup_trials": s.get("n_startup_trials", 1), "warn_independent_sampling": False}
    return {}


def _pruner(c: TuneCampaign):
    p = c.pruner
    return st.make_pruner(p["name"], n_startup_trials=p.get("n_startup_trials", 5),
                          n_warmup_steps=p.get("n_warmup_steps", 1))


def open_study(c: TuneCampaign, out: Path, seed_offset: int | None = None):
    """Create or load the campaign's study (journal file in ``out`` unless ``c.storage``), its
    sampler seeded with ``sampler.seed + seed_offset`` (default: trials in the study)."""
    return st.open_study(out, c.name, len(c.objectives), c.sampler["name"], int(c.sampler["seed"]),
                         _sampler_options(c), storage=c.storage, pruner=_pruner(c), seed_offset=seed_offset)


def _suggest(trial, space) -> dict[str, Any]:
    out = {}
    for sp in space:
        if sp.kind == "categorical":
            out[sp.name] = trial.suggest_categorical(sp.name, list(sp.choices))
        elif sp.kind == "int":
            out[sp.name] = trial.suggest_int(sp.name, int(sp.low), int(sp.high), step=int(sp.step or 1), log=sp.log)
        else:
            out[sp.name] = trial.suggest_float(sp.name, sp.low, sp.high, log=sp.log)
    return out


# -- rows -------------------------------------------------------------------------------------------
def _trial_row(t, c: TuneCampaign) -> dict[str, Any]:
    layers = t.user_attrs.get("layers", [])
    wall = (t.datetime_complete - t.datetime_start).total_seconds() if t.datetime_complete and t.datetime_start else None
    vals = list(t.values) if t.values else [None] * len(c.objectives)
    row = {"task_id": f"trial-{t.number:06d}", "trial": t.number, "state": t.state.name,
           "value_gap": vals[0], "value_evals_to_reach": vals[1] if len(vals) > 1 else None,
           "params": json.dumps(t.params, sort_keys=True), "full_params": json.dumps(t.user_attrs.get("full_params")),
           "layers_done": len(layers),
           "layer_gaps": json.dumps({o["layer"]: float(np.mean(o["gaps"])) for o in layers}),
           "layer_detail": json.dumps(layers), "seeds": list(c.seeds), "wall_s": wall,
           "driver": t.user_attrs.get("driver"), "requeued_from": t.user_attrs.get("requeued_from"),
           "budget": c.budget}
    for sp in c.space:
        v = t.params.get(sp.name)
        row[f"param_{sp.name}"] = None if v is None else str(v) if sp.kind == "categorical" else float(v)
    return row


def _write_rows(store: Store, trials, c: TuneCampaign) -> None:
    stored = store.stored_task_ids()
    for t in trials:
        row = _trial_row(t, c)
        if row["task_id"] in stored:
            continue
        store.write_batch([(row["task_id"], {"rows": pa.Table.from_pylist([row])})])
    store.unify_schemas()  # a trial's row of None values types nothing: one schema for plain readers


def read_trials(out: str | Path) -> pd.DataFrame:
    """The trial rows of a tuning directory (one per finished trial), sorted by trial number."""
    df = Store(out).read("rows")
    return df.sort_values("trial").reset_index(drop=True) if not df.empty else df


def _atomic_parquet(df: pd.DataFrame, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp)
    os.replace(tmp, path)


def read_references(out: str | Path) -> pd.DataFrame:
    p = Path(out) / REFERENCES
    return pd.read_parquet(p) if p.exists() else pd.DataFrame()


def _references(c: TuneCampaign, out: Path, pool: Executor, limit: int) -> tuple[dict, float]:
    from sweep.tune.objective import layer_problem, reference_plan
    have = read_references(out)
    done = {} if have.empty else {(r.network, r.layer): r.reference for r in have.itertuples()}
    todo, calls, rows = [], [], [] if have.empty else have.to_dict("records")
    for kind, (net, layers) in (("training", c.training), ("heldout", c.heldout)):
        for lay in layers:
            if (net, lay) in done or (net, lay) in [t[1] for t in todo]:
                continue
            spec = (net, lay, c.arch, c.objective)
            r = c.reference
            method, space, units = reference_plan(c.mapper, layer_problem(*spec), r["max_orderings"], r["shards"],
                                                  r["fallback_chains"], r["fallback_iterations"])
            todo.append((kind, (net, lay), method, space, len(calls), len(units)))
            calls += [(_ref_task, m, spec, p, u) for m, p, u in units]
    t0 = time.perf_counter()
    if calls:
        res = ordered(pool, _apply, calls, limit)
        bad = [r for r in res if isinstance(r, Exception)]
        if bad:
            raise ExecutionError(f"reference optimum failed: {bad[0]!r}")
        for kind, (net, lay), method, space, i, n in todo:
            part = res[i:i + n]
            rows.append({"network": net, "layer": lay, "set": kind, "method": method,
                         "space": space, "reference": min(v for v, _ in part), "wall_s": sum(w for _, w in part)})
        _atomic_parquet(pd.DataFrame(rows), out / REFERENCES)
    refs = {(r["network"], r["layer"]): float(r["reference"]) for r in rows}
    return refs, time.perf_counter() - t0


# -- the driver ---------------------------------------------------------------------------------------
@dataclass
class _Active:
    params: dict
    outcomes: list = field(default_factory=list)


class _TuneObjective:
    """`sweep tune` as an objective of `sweep.study.StudyDriver`: a trial is a schedule; each
    round runs the next training layer of every trial in flight (one task each) and reports,
    prunes or tells in trial-number order (`_advance`); finished trials are written as rows."""

    def __init__(self, c: TuneCampaign, pool: Executor, refs: dict, store: Store, summary: TuneSummary,
                 n_target: int, par: int, beat, progress):
        self.c, self.pool, self.refs, self.store, self.summary = c, pool, refs, store, summary
        self.n_target, self.par, self.beat, self.progress = n_target, par, beat, progress
        self.fails_here = 0

    def _finished_running(self, study) -> tuple[int, int]:
        n = st.counts(study)
        return n.get("COMPLETE", 0) + n.get("PRUNED", 0), n.get("RUNNING", 0)

    def room(self, study, active) -> int:
        self.beat()
        fin, running = self._finished_running(study)
        if self.progress:
            self.progress(fin, self.n_target)
        return min(self.par - len(active), self.n_target - fin - running)

    def done(self, study) -> bool:
        return self._finished_running(study)[0] >= self.n_target

    def suggest(self, trial) -> _Active:
        from sweep.tune.objective import derive_params
        full = derive_params(self.c.mapper, _suggest(trial, self.c.space), self.c.fixed, self.c.budget)
        trial.set_user_attr("full_params", full)
        return _Active(full)

    def restore(self, ft) -> tuple[_Active, int]:
        from sweep.tune.objective import derive_params
        full = ft.user_attrs.get("full_params") or derive_params(self.c.mapper, dict(ft.params), self.c.fixed,
                                                                 self.c.budget)
        a = _Active(full, list(ft.user_attrs.get("layers", [])))
        return a, len(a.outcomes)

    def step(self, a) -> int:
        return len(a.state.outcomes)

    def run(self, active) -> list:
        c = self.c
        net, layers = c.training
        calls = [(_eval_task, c.mapper, (net, layers[len(a.state.outcomes)], c.arch, c.objective), a.state.params,
                  list(c.seeds), self.refs[(net, layers[len(a.state.outcomes)])], c.reach_gap) for a in active]
        return ordered(self.pool, _apply, calls, self.par)

    def advance(self, study, a, res):
        ft = _advance(study, a.trial, a.state, res, self.c)
        if ft is not None:
            self.summary.run_here += 1
            _write_rows(self.store, [ft], self.c)
            if ft.state.name == "FAIL":
                self.fails_here += 1
                if self.fails_here > self.n_target + 10:
                    raise ExecutionError(f"{self.fails_here} trials failed; last: {ft.user_attrs.get('error')}")
        return ft


def run_tune(c: TuneCampaign, *, trials: int | None = None, parallel: int | None = None, resume: bool = False,
             executor: str = "ray", address: str | None = None, num_cpus: int | None = None,
             progress: Callable[[int, int], None] | None = None, heldout: bool = True) -> TuneSummary:
    """Run (or resume, or join) the study of ``c`` until it has ``trials`` finished trials.

    Args:
        trials: finished (COMPLETE + PRUNED) trials to end with (default ``c.trials``).
        parallel: trials in flight at once (default ``c.parallel``).
        resume: continue an existing output directory of the same campaign (else it is refused).
        executor: "ray" (default; local Ray with ``num_cpus`` or the cluster at ``address``) or
            "local" (in-process; the same trials).
        progress: called as progress(finished, trials) after every round.
        heldout: evaluate tuned vs default schedules on the held-out layers at the end.

    Raises:
        StoreError: the output directory holds something else, or results without ``resume``.
        ExecutionError: a reference optimum failed, or every trial fails.
        Interrupted: Ctrl-C or SIGTERM (running trials left to the next driver; resumable).
    """
    t_start = time.perf_counter()
    n_target = int(trials or c.trials)
    par = int(parallel or c.parallel)
    out = Path(c.output)
    store = Store(out)
    store.check_new_or_resumable(c.config_hash(), resume, busy=False)   # (drivers share it: locked per commit)
    if not (out / "manifest.json").exists():  # (create clears OUT/.tmp: not while another driver writes)
        store.create({"name": c.name, "source": c.source, "config_hash": c.config_hash(), "config": c.resolved_config(),
                      "storage": c.storage})
    summary = TuneSummary(str(out))
    drv = st.StudyDriver(out, c.name, len(c.objectives), c.sampler["name"], int(c.sampler["seed"]),
                         _sampler_options(c), storage=c.storage, pruner=_pruner(c))
    study = drv.study
    summary.orphans = drv.requeued + len(drv.adopted)
    _write_rows(store, st.trials_of(study, "COMPLETE", "PRUNED", "FAIL"), c)
    try:
        with Executor(executor, address, num_cpus, max_retries=2, beat=drv.beat) as pool, sigterm_as_interrupt():
            refs, summary.reference_s = _references(c, out, pool, max(par, int(c.reference["shards"])))
            drv.run(_TuneObjective(c, pool, refs, store, summary, n_target, par, drv.beat, progress))
            n = st.counts(study)
            summary.complete, summary.pruned, summary.failed = n.get("COMPLETE", 0), n.get("PRUNED", 0), n.get("FAIL", 0)
            if progress:
                progress(summary.complete + summary.pruned, n_target)
            summary.best = write_best_params(study, c, out / BEST)
            if heldout and summary.best:
                summary.heldout = _heldout(c, out, pool, refs, summary.best, par)
    except KeyboardInterrupt:
        summary.seconds = time.perf_counter() - t_start
        raise Interrupted(summary) from None
    finally:
        drv.close()
    summary.seconds = time.perf_counter() - t_start
    return summary


def _advance(study, tr, a: _Active, res, c: TuneCampaign):
    """Record one layer's outcome of trial ``tr`` (its state ``a``); report, prune or tell.
    Returns the finished `FrozenTrial`, or None while the trial goes on."""
    if isinstance(res, Exception):
        tr.set_user_attr("error", f"{type(res).__name__}: {res}"[:2000])
        tr.set_user_attr("layers", a.outcomes)
        return study.tell(tr, state=st.TrialState.FAIL)
    a.outcomes.append({k: res[k] for k in ("layer", "seeds", "reference", "values", "gaps", "proposals",
                                           "evaluations", "to_reach", "wall_s")})
    gap = float(np.mean([np.mean(o["gaps"]) for o in a.outcomes]))
    tr.set_user_attr("layers", a.outcomes)
    if len(c.objectives) == 1:
        tr.report(gap, len(a.outcomes) - 1)
        if len(a.outcomes) < len(c.training[1]) and tr.should_prune():
            return study.tell(tr, state=st.TrialState.PRUNED)
    if len(a.outcomes) < len(c.training[1]):
        return None
    values = [gap]
    if len(c.objectives) > 1:
        values.append(float(np.mean([np.mean(o["to_reach"]) for o in a.outcomes])))
    return study.tell(tr, values)


def write_best_params(study, c: TuneCampaign, path: Path) -> dict:
    """Write the best complete trial's schedule as ``[mappers.<mapper>]`` TOML (for a campaign's
    ``params_file``); returns {"trial", "values", "params" (tuned), "full" (campaign params)}.
    Two objectives: the Pareto-optimal trial with the smallest gap. No complete trial: {}."""
    t = st.best_trial(study, len(c.objectives))
    if t is None:
        return {}
    full = {k: v for k, v in t.user_attrs["full_params"].items() if k not in RESERVED}
    full = {k: v for k, v in full.items() if v is not None}
    from costmodel.importers import toml_out
    lines = [f"Tuned by `sweep tune {c.source}` (study {c.name!r}, trial {t.number}): mean relative gap "
             f"{t.values[0]:.6g} on {c.training[0]} layers {list(c.training[1])}",
             f"at {c.budget} SA proposals per layer and seed (chains x iterations), seeds {list(c.seeds)}, "
             f"{c.arch}, objective {c.objective}.",
             "Use it in a campaign: [[mappers]] name = \"%s\" params_file = \"<this file>\"" % c.mapper]
    toml_out.write(path, {"mappers": {c.mapper: full}}, "\n".join(lines))
    return {"trial": t.number, "values": list(t.values), "params": dict(t.params), "full": full}


def _heldout(c: TuneCampaign, out: Path, pool: Executor, refs: dict, best: dict, par: int) -> dict:
    """Tuned (best trial) vs default schedule on the held-out layers and seeds, same budget;
    written to ``heldout.parquet`` (one row per config, layer, seed). Reused if the best trial
    has not changed."""
    from sweep.tune.objective import REACH_TOL, derive_params
    path = out / HELDOUT
    if path.exists():
        old = pd.read_parquet(path)
        if not old.empty and int(old["best_trial"].iloc[0]) == best["trial"]:
            return heldout_summary(old)
    configs = {"tuned": derive_params(c.mapper, best["params"], c.fixed, c.budget),
               "default": derive_params(c.mapper, c.defaults, c.fixed, c.budget)}
    net, layers = c.heldout
    calls, keys = [], []
    for name, params in configs.items():
        for lay in layers:
            calls.append((_eval_task, c.mapper, (net, lay, c.arch, c.objective), params, list(c.heldout_seeds),
                          refs[(net, lay)], 0.0))
            keys.append((name, lay))
    res = ordered(pool, _apply, calls, max(par, 1))
    rows = []
    for (name, lay), r in zip(keys, res):
        if isinstance(r, Exception):
            raise ExecutionError(f"held-out evaluation of {name} on {lay} failed: {r!r}")
        for i, s in enumerate(r["seeds"]):
            rows.append({"config": name, "network": net, "layer": lay, "seed": s, "value": r["values"][i],
                         "reference": r["reference"], "gap": r["gaps"][i], "reached": r["gaps"][i] <= REACH_TOL,
                         "proposals": r["proposals"][i], "evaluations": r["evaluations"][i],
                         "evals_to_optimum": r["to_reach"][i], "best_trial": best["trial"],
                         "params": json.dumps(configs[name], sort_keys=True)})
    df = pd.DataFrame(rows)
    _atomic_parquet(df, path)
    return heldout_summary(df)


def heldout_summary(df: pd.DataFrame) -> dict:
    """Per config: mean gap (mean over layers of the per-layer mean), reach rate, mean proposals
    to the optimum (censored at the budget), and per layer the same."""
    out = {}
    for name, g in df.groupby("config", sort=False):
        per = g.groupby("layer", sort=False).agg(mean_gap=("gap", "mean"), reach=("reached", "mean"),
                                                   to_opt=("evals_to_optimum", "mean"))
        out[name] = {"mean_gap": float(per["mean_gap"].mean()), "reach_rate": float(per["reach"].mean()),
                     "mean_evals_to_optimum": float(per["to_opt"].mean()),
                     "seeds": sorted(int(s) for s in g["seed"].unique()),
                     "layers": {k: {kk: float(vv) for kk, vv in v.items()} for k, v in per.to_dict("index").items()}}
    return out

