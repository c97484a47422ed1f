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

__all__ = ["failures", "print_failures", "print_plots", "print_summary", "read_rows", "summary"]

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
    errors = rows[~rows["status"].isin(["ok", "pruned"])]   # pruned: a design left unmapped by bound, not a failure
    if not errors.empty:
        cols = [c for c in ("task_id", "error") if c in errors]
        rep["errors"] = errors[cols].drop_duplicates().head(20).to_dict("records")
        rep["failures"] = failures(rows, problems)
    return rep


#: Failure groups shown in a report; the rest are counted.
_SHOWN_FAILURES = 20


def _first_line(error: Any) -> str:
    """The message of a stored error (its first line: ``RuntimeError: solver exploded``), not
    the traceback after it."""
    text = "" if error is None or (isinstance(error, float) and error != error) else str(error)
    return next((line.strip() for line in text.splitlines() if line.strip()), "(no message)")


def failures(rows: pd.DataFrame, problems: pd.DataFrame | None = None) -> dict[str, Any]:
    """What did not finish among ``rows`` (status not "ok" nor "pruned": "error", the code failed;
    "infeasible", nothing valid found; "skipped", the mapper declined the search): ``rows`` and
    ``tasks`` counted, and ``groups``, one per (status, mapper, network, layer) in the order first
    met (network and layer None where a row does not say, e.g. a task that failed as a whole): its
    ``rows`` and its most common ``error`` (the reason; first line only; `sweep report --json`'s
    ``errors`` keep the tracebacks); where its rows give several reasons, ``more_reasons`` (the next
    two, with their rows) and ``other_reasons`` (how many more). At most 20 groups;
    ``more_groups`` counts the rest."""
    err = rows[~rows["status"].astype(str).isin(["ok", "pruned"])].copy()
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


def print_summary(rep: dict[str, Any], console) -> None:
    """Print the head of ``rep`` (`summary`): the campaign, the rows by status, the code and
    configuration, and what failed (count, first error per mapper and layer)."""
    console.print(f"[bold]{escape(str(rep['campaign']))}[/] in {escape(rep['directory'])} (code {rep['code_version']}): "
                  f"{rep['tasks_stored']}/{rep['tasks_expected']} tasks stored, rows: {counts(rep['rows'])}",
                  soft_wrap=True, highlight=False)
    if rep.get("row_code_versions"):
        console.print(f"rows from code {words(rep['row_code_versions'])}, config "
                      f"{words(h[:12] for h in rep['row_config_hashes'])} (manifest.json: the full "
                      f"resolved configuration; rerun with `sweep rerun {rep['directory']} --out NEW`)",
                      soft_wrap=True, highlight=False, markup=False)
    print_failures(rep, console)


def print_failures(rep: dict[str, Any], console) -> None:
    """The ``failures`` of ``rep``: how many rows and tasks failed and, per mapper and layer, the
    first error; nothing when every row is ok."""
    f = rep.get("failures")
    if not f:
        return
    status = {k: n for k, n in rep.get("rows", {}).items() if k != "pruned"}
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
