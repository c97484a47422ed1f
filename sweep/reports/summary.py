"""What the reports of `sweep run` result directories share (systolic, loop-nest and NPU kinds):
reading the unit rows, the summary at the head of every report, and printing it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from sweep.engine.store import Store
from sweep.errors import StoreError

__all__ = ["print_plots", "print_summary", "read_rows", "summary"]

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


def summary(directory: Path, manifest: dict, rows: pd.DataFrame) -> dict[str, Any]:
    """The head of a report: campaign, code and configuration, tasks and rows stored, and up to
    20 failed tasks with their errors."""
    status = rows["status"].value_counts().to_dict()
    rep: dict[str, Any] = {
        "campaign": manifest.get("name"), "directory": str(directory),
        "code_version": manifest.get("code_version"), "config_hash": manifest.get("config_hash"),
        "tasks_expected": manifest.get("tasks"), "tasks_stored": int(rows["task_id"].nunique()),
        "rows": {k: int(v) for k, v in status.items()},
        # which code and configuration produced the rows (several versions after resumes)
        "row_code_versions": sorted(rows["code_version"].dropna().unique().tolist()) if "code_version" in rows else [],
        "row_config_hashes": sorted(rows["config_hash"].dropna().unique().tolist()) if "config_hash" in rows else [],
    }
    errors = rows[rows["status"] != "ok"]
    if not errors.empty:
        rep["errors"] = errors[["task_id", "error"]].drop_duplicates().head(20).to_dict("records")
    return rep


def print_summary(rep: dict[str, Any], console) -> None:
    """Print the head of ``rep`` (`summary`)."""
    console.print(f"[bold]{rep['campaign']}[/] in {rep['directory']} (code {rep['code_version']}): "
                  f"{rep['tasks_stored']}/{rep['tasks_expected']} tasks stored, rows {rep['rows']}")
    if rep.get("row_code_versions"):
        console.print(f"rows from code {', '.join(rep['row_code_versions'])}, config "
                      f"{', '.join(h[:12] for h in rep['row_config_hashes'])} (manifest.json: the full "
                      f"resolved configuration; rerun with `sweep rerun {rep['directory']} --out NEW`)")
    for e in rep.get("errors", []):
        console.print(f"[red]task {e['task_id']}: {e['error']}[/]")


def print_plots(rep: dict[str, Any], console) -> None:
    """Print the paths of the PNGs written (``rep["plots"]``)."""
    for p in rep.get("plots", []):
        console.print(f"plot: {p}")
