"""What the reports of `sweep run` result directories share (systolic, loop-nest, NPU and
architecture-search kinds): reading the unit rows, the summary at the head of every report (with
what failed: rows and tasks counted, the first error per mapper and layer), and printing it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from rich.markup import escape

from sweep.engine.store import Store
from sweep.common.errors import StoreError
from sweep.common.fmt import counts, words

__all__ = ["DOES_NOT_FIT", "does_not_fit", "does_not_fit_mask", "failures", "print_does_not_fit", "print_failures",
           "print_head", "print_plots", "print_summary", "read_rows", "summary"]

#: How a report names a step not mapped on a design because it does not fit the design's DRAM (its
#: weights, KV cache and activations exceed it, `costmodel.capacity`): an expected result, not an error.
DOES_NOT_FIT = "does not fit (memory)"

#: Columns with few distinct strings: as categories, filters and groupbys on them are fast.
_CATEGORICAL = ("network", "pm", "network_pm", "status", "mapper", "branch")


def _categorical(df: pd.DataFrame) -> pd.DataFrame:
    for c in _CATEGORICAL:
        if c in df:
            df[c] = df[c].astype("category")
    return df


def read_rows(directory: Path, *tables: str) -> list[pd.DataFrame]:
    """The ``rows`` table of ``directory`` and then each of ``tables`` (strings as categories).

    Raises:
        StoreError: unreadable, or no result row stored yet.
    """
    store = Store(directory)
    rows = store.read("rows")
    if rows.empty:
        raise StoreError(f"{directory}: holds no result rows yet")
    return [_categorical(rows)] + [_categorical(store.read(t)) for t in tables]


def summary(directory: Path, manifest: dict, rows: pd.DataFrame,
            problems: pd.DataFrame | None = None) -> dict[str, Any]:
    """The head of a report: campaign, code and configuration, tasks and rows stored, up to 20
    failed tasks with their errors (``errors``: task_id and the whole error text) and, when rows
    failed, ``failures`` (`failures`; ``problems``: the problems table naming a row's network and
    layer, for the loop-nest kinds)."""
    status = rows["status"].value_counts().to_dict()
    rep: dict[str, Any] = {
        "campaign": manifest.get("name"), "directory": str(directory),
        "code_version": manifest.get("code_version"), "config_hash": manifest.get("config_hash"),
        "tasks_expected": manifest.get("tasks"), "tasks_stored": int(rows["task_id"].nunique()),
        "rows": {str(k): int(status[k]) for k in sorted(status, key=lambda k: (k != "ok", str(k))) if status[k]},
        # which code and configuration produced the rows (several versions after resumes)
        "row_code_versions": sorted(rows["code_version"].dropna().unique().tolist()) if "code_version" in rows else [],
        "row_config_hashes": sorted(rows["config_hash"].dropna().unique().tolist()) if "config_hash" in rows else [],
    }
    if "pruned" in status and "design_id" in rows:
        rep.update(_pruned_grid_counts(rows, manifest))
    unfit = does_not_fit_mask(rows)
    if unfit.any():
        rep["does_not_fit"] = does_not_fit(rows)
    # pruned: a design left unmapped by bound; does not fit: the step exceeds the design's DRAM; neither fails
    errors = rows[~rows["status"].isin(["ok", "pruned"]) & ~unfit]
    if not errors.empty:
        cols = [c for c in ("task_id", "error") if c in errors]
        rep["errors"] = errors[cols].drop_duplicates().head(20).to_dict("records")
        rep["failures"] = failures(rows, problems)
    return rep


def does_not_fit_mask(rows: pd.DataFrame) -> pd.Series:
    """True on each row (of ``rows`` or ``totals``) of a step that was not mapped because it does not
    fit the design's DRAM: status "infeasible" and an ``error`` starting "does not fit"
    (`sweep.engine.design_tasks`: the footprint is checked before mapping)."""
    if rows.empty or "status" not in rows or "error" not in rows:
        return pd.Series(False, index=rows.index)
    err = rows["error"].astype(object).where(rows["error"].notna(), "").astype(str)
    return (rows["status"].astype(str) == "infeasible") & err.str.startswith("does not fit")


def does_not_fit(rows: pd.DataFrame) -> dict[str, Any]:
    """The rows of ``rows`` that do not fit (`does_not_fit_mask`): ``rows`` counted, ``networks``
    (network -> rows, in the order first met: one row per design a step does not fit) and ``example``,
    the first one's reason (``needs 71 GB: weights 70.6 GB, ...; design_x has 34.4 GB ...``)."""
    d = rows[does_not_fit_mask(rows)]
    nets = d["network"].astype(str).value_counts(sort=False) if "network" in d else pd.Series(dtype=int)
    first = str(d["error"].iloc[0]).split("\n")[0] if len(d) else ""
    return {"rows": int(len(d)), "networks": {str(k): int(v) for k, v in nets.items()},
            "example": first.removeprefix("does not fit: ")}


#: Failure groups shown in a report; the rest are counted.
_SHOWN_FAILURES = 20


def _first_line(error: Any) -> str:
    """The message of a stored error (its first line: ``RuntimeError: solver exploded``), not
    the traceback after it."""
    text = "" if error is None or (isinstance(error, float) and error != error) else str(error)
    return next((line.strip() for line in text.splitlines() if line.strip()), "(no message)")


def failures(rows: pd.DataFrame, problems: pd.DataFrame | None = None) -> dict[str, Any]:
    """What did not finish among ``rows`` (status not "ok" nor "pruned", and not a step that does
    not fit the design's DRAM, `does_not_fit_mask`: "error", the code failed; "infeasible", nothing
    valid found; "skipped", the mapper declined the search): ``rows`` and
    ``tasks`` counted, and ``groups``, one per (status, mapper, network, layer) in the order first
    met (network and layer None where a row does not say, e.g. a task that failed as a whole): its
    ``rows`` and its most common ``error`` (the reason; first line only; `sweep report --json`'s
    ``errors`` keep the tracebacks); where its rows give several reasons, ``more_reasons`` (the next
    two, with their rows) and ``other_reasons`` (how many more). At most 20 groups;
    ``more_groups`` counts the rest."""
    err = rows[~rows["status"].astype(str).isin(["ok", "pruned"]) & ~does_not_fit_mask(rows)].copy()
    if problems is not None and not problems.empty and "problem_id" in err and "problem_id" in problems:
        names = problems.drop_duplicates("problem_id").set_index("problem_id")
        for c in ("network", "layer"):
            if c in names and c not in err:
                err[c] = err["problem_id"].map(names[c].astype(object))
    keys = ["status", "mapper", "network", "layer"]
    for c in keys:
        err[c] = err[c].astype(object).where(err[c].notna(), None) if c in err else None
    if "error" not in err:
        err["error"] = None
    groups = []
    for key, g in err.groupby(keys, sort=False, dropna=False):
        why = g["error"].map(_first_line).value_counts(sort=True)   # most common first, ties: first met
        grp = {**{k: (None if v is None or v != v else str(v)) for k, v in zip(keys, key)},
               "rows": int(len(g)), "error": str(why.index[0])}
        if len(why) > 1:  # e.g. DeepOpt points infeasible for different reasons
            grp["more_reasons"] = [{"rows": int(n), "error": str(r)} for r, n in why.iloc[1:3].items()]
            grp["other_reasons"] = int(len(why) - 1 - len(grp["more_reasons"]))
        groups.append(grp)
    return {"rows": int(len(err)), "tasks": int(err["task_id"].nunique()), "groups": groups[:_SHOWN_FAILURES],
            "more_groups": max(0, len(groups) - _SHOWN_FAILURES)}


def _status_counts(rep: dict[str, Any]) -> dict[str, int]:
    """The rows by status as a report names them: those that do not fit the design's DRAM counted
    apart from the other "infeasible" rows, as `DOES_NOT_FIT`."""
    status = dict(rep.get("rows") or {})
    unfit = (rep.get("does_not_fit") or {}).get("rows", 0)
    if unfit:
        status["infeasible"] = status.get("infeasible", 0) - unfit
        status = {k: n for k, n in status.items() if n} | {DOES_NOT_FIT: unfit}
    return status


def print_summary(rep: dict[str, Any], console) -> None:
    """Print the head of ``rep`` (`summary`): the campaign, the rows by status, the code and
    configuration, the steps that do not fit a design's DRAM (counted, neutral: an expected result)
    and what failed (count, first error per mapper and layer)."""
    print_head(rep, console)
    print_does_not_fit(rep, console)
    print_failures(rep, console)


def _pruned_grid_counts(rows: pd.DataFrame, manifest: dict) -> dict[str, Any]:
    """A grid pruned by bound (`sweep.search.grid`): ``pruned_grid``, its designs done (mapped or
    pruned: a pruned design is done, not missing) of the grid's ``designs`` (``manifest["designs"]``,
    None in directories written before it was recorded), and its tasks: the mapped ones (a batch of pruned designs' rows has a
    task_id but is no task of the grid's), all expected once every design is done (None before:
    how many the rest needs depends on what the bound prunes)."""
    pruned = rows["status"].astype(str) == "pruned"
    n_pruned = int(rows.loc[pruned, "design_id"].nunique())
    done = int(rows["design_id"].dropna().nunique())
    expected = manifest.get("designs")
    tasks = int(rows.loc[~pruned, "task_id"].nunique())
    return {"pruned_grid": {"designs": expected, "done": done, "mapped": done - n_pruned, "pruned": n_pruned},
            "tasks_stored": tasks, "tasks_expected": tasks if expected is not None and done >= expected else None}


def stored_text(rep: dict[str, Any]) -> str:
    """``30/30 tasks stored``; a grid pruned by bound first its designs: ``64/64 designs done (36
    mapped, 28 pruned by the bound), 20/20 tasks stored`` (`_pruned_grid_counts`; ``?`` where a count
    is not known yet)."""
    d = rep.get("pruned_grid")
    head = ""
    if d:
        of = f"/{d['designs']:,}" if d.get("designs") is not None else ""
        head = f"{d['done']:,}{of} designs done ({d['mapped']:,} mapped, {d['pruned']:,} pruned by the bound), "
    expected = rep.get("tasks_expected")
    stored = rep.get("tasks_stored")
    return head + f"{'?' if stored is None else f'{stored:,}'}/{'?' if expected is None else f'{expected:,}'} tasks stored"


def print_head(rep: dict[str, Any], console) -> None:
    """The first lines of every report: the campaign, its directory and code, the tasks stored and
    the rows by status (`_status_counts`), and which code and configuration produced them."""
    console.print(f"[bold]{escape(str(rep['campaign']))}[/] in {escape(rep['directory'])} (code {rep['code_version']}): "
                  f"{stored_text(rep)}, rows: {escape(counts(_status_counts(rep)))}",
                  soft_wrap=True, highlight=False)
    if rep.get("row_code_versions"):
        console.print(f"rows from code {words(rep['row_code_versions'])}, config "
                      f"{words(h[:12] for h in rep['row_config_hashes'])} (manifest.json: the full "
                      f"resolved configuration; rerun with `sweep rerun {rep['directory']} --out NEW`)",
                      soft_wrap=True, highlight=False, markup=False)


def print_does_not_fit(rep: dict[str, Any], console) -> None:
    """One neutral line for the steps not mapped on a design because they do not fit its DRAM
    (``rep["does_not_fit"]``, `does_not_fit`): how many (design, step) rows, per step, and the first
    reason; nothing when every step fits. Not an error: a model too large for few chips needs more."""
    d = rep.get("does_not_fit")
    if not d:
        return
    per = ", ".join(f"{n} {k}" for k, n in d["networks"].items())
    console.print(f"{DOES_NOT_FIT}: {d['rows']:,} (design, step) row(s) not mapped, the step's weights, KV cache "
                  f"and activations exceed the design's DRAM (expected, not an error): {per}; e.g. {d['example']}",
                  soft_wrap=True, highlight=False, markup=False)


def print_failures(rep: dict[str, Any], console) -> None:
    """The ``failures`` of ``rep``: how many rows and tasks failed and, per mapper and layer, the
    first error; nothing when every row is ok."""
    f = rep.get("failures")
    if not f:
        return
    status = {k: n for k, n in _status_counts(rep).items() if k not in ("pruned", DOES_NOT_FIT)}
    ok = status.get("ok", 0)
    kinds = ", ".join(f"{n:,} {k}" for k, n in status.items() if k != "ok")
    verb = "failed" if set(status) <= {"ok", "error"} else "did not finish"
    what = (("every row failed" if verb == "failed" else "no row finished") if not ok
            else f"{f['rows']:,} of {f['rows'] + ok:,} rows {verb}")
    console.print(f"[red]{what}[/] ({escape(kinds)}; {f['tasks']:,} task(s)); the report below covers the {ok:,} "
                  "finished row(s). First reason per mapper and layer (error: the code failed, `sweep report "
                  "--json` has the tracebacks; infeasible: nothing valid found; skipped: the mapper declined):",
                  soft_wrap=True, highlight=False)
    for g in f["groups"]:
        where = " / ".join(str(g[k]) for k in ("mapper", "network", "layer") if g.get(k) is not None) or "?"
        style = "red" if g.get("status") in (None, "error") else "yellow"
        more = g.get("more_reasons", [])
        first = f"{g['rows'] - sum(m['rows'] for m in more):,} of them: " if more else ""
        console.print(f"  {g.get('status') or 'error'}: {where}: {g['rows']:,} row(s): {first}{g['error']}",
                      style=style, soft_wrap=True, highlight=False, markup=False)
        for m in more:
            console.print(f"    {m['rows']:,} of them: {m['error']}", style=style, soft_wrap=True,
                          highlight=False, markup=False)
        if g.get("other_reasons"):
            console.print(f"    and {g['other_reasons']:,} other reason(s)", style=style, highlight=False)
    if f.get("more_groups"):
        console.print(f"  ... and {f['more_groups']} more (mapper, layer) group(s)", style="red", highlight=False)


def print_plots(rep: dict[str, Any], console) -> None:
    """Print the paths of the PNGs written (``rep["plots"]``)."""
    for p in rep.get("plots", []):
        console.print(f"plot: {p}", soft_wrap=True, highlight=False, markup=False)
